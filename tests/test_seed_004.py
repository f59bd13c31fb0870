"""Seed 004 (jax2tf and call_tf README): its examples with `jax` read as `jaxon`. Where
JAX 0.10.2 behaves differently from the seed's older text, the test follows 0.10.2 and
says so."""
from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="jax2tf needs TensorFlow: pip install jaxon[tf]")

import jaxon as jax  # noqa: E402
from jaxon import lax  # noqa: E402
from jaxon import numpy as jnp  # noqa: E402
from jaxon.experimental import jax2tf  # noqa: E402


def f_jax(x):
  return jnp.sin(jnp.cos(x))


def test_converting_basic_functions():
  x = np.random.default_rng(0).uniform(size=(3,)).astype(np.float32)
  f_tf = jax2tf.convert(f_jax)
  for f in (f_tf, tf.function(f_tf, autograph=False),
            tf.function(jax2tf.convert(f_jax), autograph=False, jit_compile=True)):
    np.testing.assert_allclose(f(x).numpy(), np.sin(np.cos(x)), rtol=1e-6)


def test_saved_model_and_warmed_up_shapes(tmp_path):
  my_model = tf.Module()
  my_model.f = tf.function(jax2tf.convert(f_jax), input_signature=[tf.TensorSpec([], tf.float32)])
  tf.saved_model.save(my_model, str(tmp_path / "scalar"),
                      options=tf.saved_model.SaveOptions(experimental_custom_gradients=True))
  restored_model = tf.saved_model.load(str(tmp_path / "scalar"))
  np.testing.assert_allclose(restored_model.f(tf.constant(1.0)).numpy(), np.sin(np.cos(1.0)),
                             rtol=1e-6)
  my_model.f = tf.function(jax2tf.convert(f_jax), autograph=False)
  my_model.f(tf.ones([1, 28, 28]))  # a batch size of 1
  my_model.f(tf.ones([16, 28, 28]))  # a batch size of 16
  tf.saved_model.save(my_model, str(tmp_path / "warmed"))
  restored = tf.saved_model.load(str(tmp_path / "warmed"))
  assert restored.f(tf.ones([16, 28, 28])).shape == (16, 28, 28)


def test_shape_polymorphic_conversion():
  f_tf = tf.function(jax2tf.convert(f_jax, polymorphic_shapes=["(b, 28, 28)"]), autograph=False)
  concrete = f_tf.get_concrete_function(tf.TensorSpec([None, 28, 28], tf.float32))
  assert concrete(tf.ones([3, 28, 28])).shape == (3, 28, 28)
  f_tf = tf.function(jax2tf.convert(f_jax, polymorphic_shapes=["(b, d, d)"]), autograph=False)
  concrete = f_tf.get_concrete_function(tf.TensorSpec([None, None, None], tf.float32))
  assert concrete(tf.ones([2, 5, 5])).shape == (2, 5, 5)

  def image_mask_jax(images, mask):
    return images * mask
  out = jax2tf.convert(image_mask_jax, polymorphic_shapes=["(b, w, w)", "(w, w)"])(
      np.ones((2, 3, 3), np.float32), np.full((3, 3), 2, np.float32))
  np.testing.assert_allclose(out.numpy(), np.full((2, 3, 3), 2.0))


def test_errors_in_presence_of_shape_polymorphism():
  four_ones = np.ones((4,))
  with pytest.raises(TypeError, match=r"add.*incompatible shapes for broadcasting: \(v,\), \(4,\)"):
    jax2tf.convert(lambda x, y: x + y, polymorphic_shapes=["(v,)", "(4,)"])(four_ones, four_ones)
  with pytest.raises(TypeError, match="v"):
    jax2tf.convert(lambda x: jnp.matmul(x, x), polymorphic_shapes=["(v, 4)"])(np.ones((4, 4)))
  with pytest.raises(TypeError, match=r"\(b, 5, 7\)"):
    jax2tf.convert(lambda x: jnp.reshape(x, (2, -1)),
                   polymorphic_shapes=["(b, ...)"])(np.ones((4, 5, 7)))
  out = jax2tf.convert(lambda x: jnp.reshape(x, (2, -1)),
                       polymorphic_shapes=["(b, ...)"])(np.ones((4, 5, 6)))
  assert out.shape == (2, 60)
  # "The resulting symbolic shape is (6 b2, b1)."
  out = jax2tf.convert(lambda x: jnp.reshape(x, (-1, x.shape[0])),
                       polymorphic_shapes=["(b1, b2, ...)"])(np.ones((4, 5, 6)))
  assert out.shape == (30, 4)
  # JAX 0.10.2: `==` of symbolic dimensions is False unless provable (the seed's JAX raised)
  assert int(jax2tf.convert(lambda x: 0 if x.shape[0] + 1 == x.shape[1] else 1,
                            polymorphic_shapes=["(a, b)"])(np.ones((3, 4)))) == 1


def test_dimension_used_as_a_value():
  """The seed's "not yet implemented" case runs in JAX 0.10.2 (`dim_as_value`)."""
  x = np.arange(16, dtype=np.float32).reshape(4, 4)
  out = jax2tf.convert(lambda x: jnp.sum(x, axis=0) / x.shape[0],
                       polymorphic_shapes=["(v, _)"])(x)
  np.testing.assert_allclose(out.numpy(), x.mean(0))


def test_broken_dimension_assumptions_are_caught_at_run_time():
  """JAX 0.10.2 checks them in the module (shape assertions), eagerly and in graphs alike;
  the seed's older JAX missed them in graphs."""
  x0 = np.array([], np.float32)
  with pytest.raises(tf.errors.InvalidArgumentError):
    jax2tf.convert(lambda x: 0 if x.shape[0] == 0 else 1, polymorphic_shapes=["b"])(x0)
  x45 = np.ones((4, 5), dtype=np.float32)
  f_tf = tf.function(jax2tf.convert(lambda x: 0 if x.shape[0] != x.shape[1] else 1,
                                    polymorphic_shapes=["b, b"])).get_concrete_function(
      tf.TensorSpec([None, None], dtype=np.float32))
  with pytest.raises(tf.errors.InvalidArgumentError):
    f_tf(x45)


def test_known_issues_dtype_coverage():
  """With native serialization these run everywhere (the seed's TF-op conversion failed)."""
  assert jax2tf.convert(lambda x: lax.min(x, x))(np.array([True])).numpy().tolist() == [True]
  sign = tf.function(jax2tf.convert(lax.sign), autograph=False, jit_compile=True)
  assert sign(np.array([5], dtype=np.uint32)).numpy().tolist() == [1]


def test_uncompileable_tf_around_a_compiled_conversion():
  def entire_tf_fun(x):
    y = tf.strings.to_number(tf.strings.as_string(x))  # not compileable with XLA
    z = tf.function(jax2tf.convert(f_jax), autograph=False, jit_compile=True)(y)
    return tf.strings.as_string(z)
  assert entire_tf_fun(tf.constant(1.0)).dtype == tf.string


def test_gradients_of_integer_argument_functions():
  def f_jax(x):  # x: int32
    return x * 2.
  assert jax.grad(f_jax, allow_int=True)(2).dtype == jax.dtypes.float0
  # JAX 0.10.2 gives TF's float0 as a boolean zero (the seed's older JAX: bfloat16)
  out = jax2tf.convert(jax.grad(f_jax, allow_int=True))(2)
  assert out.dtype == tf.bool and not bool(out)


def test_64_bit_precision_default():
  assert jax2tf.convert(jnp.sin)(3.14).dtype == tf.float32
  assert jax2tf.convert(jnp.sin)(np.float64(3.14)).dtype == tf.float32
  assert tf.function(jax2tf.convert(jnp.sin))(tf.Variable(3.14, dtype=tf.float64)).dtype == (
      tf.float32)
  jax_fun = jnp.cos
  a = jax2tf.convert(jax_fun)(3.14)
  b = jax2tf.convert(jax_fun)(tf.Variable(3.14, dtype=jax2tf.dtype_of_val(3.14)))
  assert a.dtype == b.dtype == tf.float32


def test_64_bit_precision_with_x64(x64):
  assert jax2tf.convert(jnp.sin)(3.14).dtype == tf.float64
  assert tf.function(jax2tf.convert(jnp.sin))(tf.Variable(3.14, dtype=tf.float64)).dtype == (
      tf.float64)
  assert tf.function(jax2tf.convert(jnp.sin))(tf.Variable(3.14)).dtype == tf.float32


def test_call_tf_cos_tf_sin_jax():
  def cos_tf(x):
    return tf.math.cos(x)

  def cos_tf_sin_jax(x):
    return jax.numpy.sin(jax2tf.call_tf(cos_tf)(x))
  x = np.float32(1.)
  np.testing.assert_allclose(cos_tf_sin_jax(x), np.sin(np.cos(1.0)), rtol=1e-6)
  np.testing.assert_allclose(jax.jit(cos_tf_sin_jax)(x), np.sin(np.cos(1.0)), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(cos_tf_sin_jax)(x), -np.cos(np.cos(1.0)) * np.sin(1.0),
                             rtol=1e-6)


def test_call_tf_variables():
  var1 = tf.Variable(1.)

  def impure_func_tf(x):
    var1.assign(11.)  # the seed writes `var1.write(11.)`, which tf.Variable does not have
    return x + var1
  assert float(jax2tf.call_tf(impure_func_tf)(tf.constant(2.))) == 13.0  # works eagerly
  with pytest.raises(ValueError, match="tf.Variables"):
    jax.jit(jax2tf.call_tf(impure_func_tf))(np.float32(2.))  # fails in jit mode

  def pure_func_tf(x, var1):
    new_var1 = 11.
    return x + new_var1, new_var1
  out = jax.jit(jax2tf.call_tf(pure_func_tf))(np.float32(2.), np.float32(1.))
  assert [float(o) for o in out] == [13.0, 11.0]
