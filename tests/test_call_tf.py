"""jax2tf.call_tf: TensorFlow functions called from jaxon eagerly, under jit (compiled into
jaxon's XLA program) and under grad (through TF's gradient), on pytrees."""
from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="call_tf needs TensorFlow: pip install jaxon[tf]")

import jaxon  # noqa: E402
import jaxon.numpy as jnp  # noqa: E402
from jaxon.experimental import jax2tf  # noqa: E402


def _tf_model(x, d):
  return {"a": tf.math.sin(x) * d["s"], "b": (tf.reduce_sum(d["m"] ** 2),
                                              tf.shape(x, out_type=tf.int32)[0])}


X = np.array([0.3, -1.2, 2.0], np.float32)
D = {"s": np.float32(1.5), "m": np.array([[1., 2.], [3., 4.]], np.float32)}
WANT = {"a": np.sin(X) * 1.5, "b": (np.float32(30.0), np.int32(3))}


def _loss(x, d):
  out = jax2tf.call_tf(_tf_model)(x, d)
  return jnp.sum(jnp.cos(out["a"])) + out["b"][0] * out["b"][1]


def _check_tree(got, want):
  got_leaves, want_leaves = jaxon.tree_leaves(got), jaxon.tree_leaves(want)
  assert jaxon.tree_structure(got) == jaxon.tree_structure(want)
  for g, w in zip(got_leaves, want_leaves):
    assert g.dtype == np.asarray(w).dtype
    np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_values_and_pytrees(how):
  f = jax2tf.call_tf(_tf_model)
  _check_tree((f if how == "eager" else jaxon.jit(f))(X, D), WANT)


def test_jit_embeds_the_tf_program():
  """Under jit the TF function's computation is part of jaxon's module (no callback)."""
  text = jaxon.jit(jax2tf.call_tf(tf.math.cos)).lower(X).as_text()
  assert "stablehlo.cosine" in text and "call_tf_" in text and "custom_call" not in text


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_grad_through_tf_gradient(how):
  grad = jaxon.grad(_loss, argnums=(0, 1))
  gx, gd = (grad if how == "eager" else jaxon.jit(grad))(X, D)
  s, m = D["s"], D["m"]
  np.testing.assert_allclose(gx, -np.sin(np.sin(X) * s) * np.cos(X) * s, rtol=1e-5)
  np.testing.assert_allclose(gd["s"], np.sum(-np.sin(np.sin(X) * s) * np.sin(X)), rtol=1e-5)
  np.testing.assert_allclose(gd["m"], 2 * m * 3, rtol=1e-6)


def test_second_order_and_tf_custom_gradient():
  @tf.custom_gradient
  def doubled_grad_sin(x):
    return tf.sin(x), lambda dy: 2 * dy * tf.cos(x)
  f = jax2tf.call_tf(doubled_grad_sin)
  np.testing.assert_allclose(jaxon.grad(f)(0.5), 2 * np.cos(0.5), rtol=1e-6)
  sin = jax2tf.call_tf(tf.math.sin)
  np.testing.assert_allclose(jaxon.grad(jaxon.grad(sin))(0.5), -np.sin(0.5), rtol=1e-6)
  np.testing.assert_allclose(jaxon.jit(jaxon.grad(jaxon.grad(sin)))(0.5), -np.sin(0.5),
                             rtol=1e-6)


def test_integer_arguments_get_float0_cotangents():
  f = jax2tf.call_tf(lambda x, n: x * tf.cast(n, tf.float32))
  gx, gn = jaxon.grad(lambda x, n: jnp.sum(f(x, n)), argnums=(0, 1), allow_int=True)(
      X, np.int32(4))
  np.testing.assert_allclose(gx, np.full(3, 4.0), rtol=1e-6)
  assert gn.dtype == jaxon.dtypes.float0


def test_captured_variable_and_inside_control_flow():
  v = tf.Variable(np.float32(3.0))
  f = jax2tf.call_tf(lambda x: x * v)

  def body(c, x):
    return c + f(x), ()
  total, _ = jaxon.jit(lambda xs: jaxon.lax.scan(body, np.float32(0), xs))(X)
  np.testing.assert_allclose(total, 3 * X.sum(), rtol=1e-6)
  np.testing.assert_allclose(f(X), 3 * X, rtol=1e-6)


def test_64_bit_results_narrow_like_jaxon():
  f = jax2tf.call_tf(lambda x: tf.cast(x, tf.float64) * 2)
  for g in (f, jaxon.jit(f)):
    out = g(X)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 2 * X, rtol=1e-6)


def test_uncompilable_function_errors_under_jit_but_runs_eagerly():
  f = jax2tf.call_tf(lambda x: tf.strings.length(tf.strings.as_string(x)))
  assert f(X).shape == (3,)  # TF eager mode runs anything
  with pytest.raises(ValueError, match="Error compiling TensorFlow function.*as_string|"
                                       "Error compiling TensorFlow function(.|\n)*AsString"):
    jaxon.jit(f)(X)


def test_errors():
  with pytest.raises(ValueError, match="dynamic shape"):
    jaxon.jit(jax2tf.call_tf(lambda x: tf.boolean_mask(x, x > 0)))(X)
  with pytest.raises(ValueError, match="do not match the declared output_shape_dtype"):
    jax2tf.call_tf(tf.math.sin, output_shape_dtype=jaxon.ShapeDtypeStruct((2,), np.float32))(X)
  with pytest.raises(NotImplementedError, match="vmap"):
    jaxon.vmap(jax2tf.call_tf(tf.math.sin))(X)
  with pytest.raises(NotImplementedError, match="call_tf_graph"):
    jax2tf.call_tf(tf.math.sin, call_tf_graph=True)


def _tf_inner(x):
  return tf.math.sin(x) * 2.0


def _jaxon_around_tf(x):
  return jnp.cos(jax2tf.call_tf(_tf_inner)(x) * x).sum()


def test_call_tf_inside_convert_embeds_the_tf_function():
  """A converted function that calls TF (JAX supports it): the TF function is compiled into
  the exported module, in TF eager, `tf.function` and `jit_compile=True`, and TF gradients
  go through jaxon's VJP, which goes through TF's gradient."""
  converted = jax2tf.convert(_jaxon_around_tf)
  want = float(_jaxon_around_tf(X))
  want_grad = np.asarray(jaxon.grad(_jaxon_around_tf)(X))
  np.testing.assert_allclose(want_grad, -np.sin(2 * np.sin(X) * X)
                             * (2 * np.cos(X) * X + 2 * np.sin(X)), rtol=1e-5)
  for run in (converted, tf.function(converted, autograph=False),
              tf.function(converted, autograph=False, jit_compile=True)):
    x = tf.Variable(X)
    with tf.GradientTape() as tape:
      y = run(x)
    np.testing.assert_allclose(float(y), want, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(y, x), want_grad, rtol=1e-5)
