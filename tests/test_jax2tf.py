"""jax2tf.convert: jaxon programs run by TensorFlow (eagerly, in tf.function, compiled with
jit_compile=True) give jaxon's values, and TF gradients through tf.GradientTape give
jaxon.grad's (they are jaxon's VJP, converted)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="jax2tf needs TensorFlow: pip install jaxon[tf]")

import jaxon  # noqa: E402
import jaxon.numpy as jnp  # noqa: E402
from jaxon import lax  # noqa: E402
from jaxon.experimental import jax2tf  # noqa: E402

MODES = ("eager", "function", "jit_compile")


def _rng_tree(shapes, seed=0):
  rng = np.random.default_rng(seed)
  return jaxon.tree_util.tree_map(
      lambda s: rng.uniform(-1, 1, s).astype(np.float32), shapes,
      is_leaf=lambda s: isinstance(s, tuple))


def _loss_jaxon(f):
  """A scalar of all of f's float outputs, nonlinear so every output's cotangent differs."""
  def loss(*args):
    return sum(jnp.sum(jnp.sin(o)) for o in jaxon.tree_leaves(f(*args)))
  return loss


def _tf_value_and_grad(f_tf, args, mode):
  """f_tf's outputs and the gradient of `_loss_jaxon`'s TF twin wrt every argument leaf."""
  def run(*args):
    leaves = tf.nest.flatten(args)
    with tf.GradientTape() as tape:
      tape.watch(leaves)
      out = f_tf(*args)
      loss = tf.add_n([tf.reduce_sum(tf.sin(o)) for o in tf.nest.flatten(out)])
    return out, tape.gradient(loss, leaves)
  if mode != "eager":
    run = tf.function(run, autograph=False, jit_compile=mode == "jit_compile")
  args = tf.nest.map_structure(tf.constant, args)
  return run(*args)


def _mlp(params, x):
  h = jnp.tanh(x @ params["w1"] + params["b1"])
  return h @ params["w2"] + params["b2"]


def _cnn(params, x):
  y = lax.conv_general_dilated(x, params["k"], (1, 1), "SAME",
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))
  y = jaxon.nn.relu(y + params["b"])
  return jnp.mean(y, axis=(1, 2)) @ params["w"]


def _rnn(params, xs):
  def step(h, x):
    h = jnp.tanh(h @ params["wh"] + x @ params["wx"])
    return h, jnp.sum(h)
  h, ys = lax.scan(step, jnp.zeros((2, 3)), xs)
  return h, ys


def _cond(params, x):
  return lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * params["a"],
                  lambda v: jnp.cos(v) - params["a"], x)


@jaxon.custom_vjp
def _clip_gradient(x):
  return x


_clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -0.1, 0.1),))


def _custom_vjp(params, x):
  return jnp.sum(_clip_gradient(x * params["a"]) ** 2, axis=-1)


def _vmapped(params, xs):
  return jaxon.vmap(lambda x: jnp.dot(params["m"], jnp.sin(x)))(xs)


MODELS = {
    "mlp": (_mlp, {"w1": (3, 4), "b1": (4,), "w2": (4, 2), "b2": (2,)}, (5, 3)),
    "cnn": (_cnn, {"k": (3, 3, 1, 2), "b": (2,), "w": (2, 3)}, (2, 5, 5, 1)),
    "scan_rnn": (_rnn, {"wh": (3, 3), "wx": (2, 3)}, (4, 2, 2)),
    "cond": (_cond, {"a": ()}, (3,)),
    "custom_vjp": (_custom_vjp, {"a": ()}, (2, 3)),
    "vmap": (_vmapped, {"m": (2, 3)}, (4, 3)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("model", list(MODELS))
def test_converted_matches_jaxon(model, mode):
  fun, param_shapes, x_shape = MODELS[model]
  params, x = _rng_tree(param_shapes, seed=1), _rng_tree(x_shape, seed=2)
  if model == "cond" and mode == "eager":
    x = -x  # the other branch
  out, grads = _tf_value_and_grad(jax2tf.convert(fun), (params, x), mode)
  want_out = fun(params, x)
  for got, want in zip(tf.nest.flatten(out), jaxon.tree_leaves(want_out)):
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-6)
  want_grads = jaxon.grad(_loss_jaxon(fun), argnums=(0, 1))(params, x)
  for got, want in zip(grads, jaxon.tree_leaves(want_grads)):
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-6)


def test_custom_vjp_rule_is_what_tf_differentiates():
  """The clipped gradient is not the true one: TF sees jaxon's custom rule."""
  x = tf.constant([[3.0, -2.0, 0.01]])
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = jax2tf.convert(_custom_vjp)({"a": np.float32(1)}, x)
  np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[0.1, -0.1, 0.02]], rtol=1e-6)


def test_pytree_results_and_integer_outputs():
  def f(x, scale):
    return {"y": jnp.sin(x) * scale, "n": (jnp.sum(x > 0), x.shape[0])}
  out = jax2tf.convert(f)(np.array([1., -2., 3.], np.float32), scale=np.float32(2))
  assert out["n"][0].dtype == tf.int32 and int(out["n"][0]) == 2 and int(out["n"][1]) == 3
  np.testing.assert_allclose(out["y"].numpy(), 2 * np.sin([1., -2., 3.]), rtol=1e-6)
  x = tf.constant([1., -2., 3.])
  with tf.GradientTape() as tape:  # the integer outputs' cotangents are float0 to jaxon
    tape.watch(x)
    out = jax2tf.convert(f)(x, np.float32(2))
    loss = tf.reduce_sum(out["y"]) + tf.cast(out["n"][0], tf.float32)
  np.testing.assert_allclose(tape.gradient(loss, x).numpy(), 2 * np.cos([1., -2., 3.]),
                             rtol=1e-6)


def test_higher_order_tf_gradient():
  x = tf.constant(0.7)
  with tf.GradientTape() as outer:
    outer.watch(x)
    with tf.GradientTape() as inner:
      inner.watch(x)
      y = jax2tf.convert(jnp.sin)(x)
    dy = inner.gradient(y, x)
  np.testing.assert_allclose(outer.gradient(dy, x).numpy(), -np.sin(0.7), rtol=1e-6)


def test_with_gradient_false_makes_gradients_an_error():
  f_tf = jax2tf.convert(jnp.sin, with_gradient=False)
  x = tf.constant(1.0)
  np.testing.assert_allclose(f_tf(x).numpy(), np.sin(1.0), rtol=1e-6)
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = f_tf(x)
  with pytest.raises(LookupError, match="does not support gradients"):
    tape.gradient(y, x)


def test_dtypes_follow_jaxon_rules():
  """64-bit inputs narrow when x64 is off; Python scalars are float32, as in JAX."""
  assert jax2tf.dtype_of_val(3.14) == tf.float32
  assert jax2tf.dtype_of_val(np.float64(3.14)) == tf.float32
  assert jax2tf.dtype_of_val(tf.constant(1, tf.int64)) == tf.int32
  assert jax2tf.convert(jnp.sin)(np.float64(3.14)).dtype == tf.float32
  assert tf.function(jax2tf.convert(jnp.sin), autograph=False)(
      tf.Variable(3.14, dtype=tf.float64)).dtype == tf.float32


def test_linear_algebra_lowers_natively_or_names_the_primitive():
  a = np.array([[4., 2.], [2., 3.]], np.float32)
  chol = jax2tf.convert(jnp.linalg.cholesky)
  for mode in ("eager", "jit_compile"):
    f = chol if mode == "eager" else tf.function(chol, autograph=False, jit_compile=True)
    np.testing.assert_allclose(f(a).numpy(), np.linalg.cholesky(a), rtol=1e-6)
  tri = jax2tf.convert(lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True,
                                                                lower=True))
  np.testing.assert_allclose(tri(np.tril(a), np.eye(2, dtype=np.float32)).numpy(),
                             np.linalg.inv(np.tril(a)), rtol=1e-6)
  with pytest.raises(NotImplementedError, match="primitive 'lu'.*TensorFlow"):
    jax2tf.convert(jnp.linalg.solve)(a, np.ones(2, np.float32))
  with pytest.raises(NotImplementedError, match="primitive 'eigh'"):
    jax2tf.convert(jnp.linalg.eigh)(a)
  # jaxon itself still lowers them through LAPACK afterwards
  np.testing.assert_allclose(jnp.linalg.solve(a, np.ones(2, np.float32)),
                             np.linalg.solve(a, np.ones(2)), rtol=1e-6)


def test_bad_arguments():
  with pytest.raises(ValueError, match="native_serialization_platforms"):
    jax2tf.convert(jnp.sin, native_serialization_platforms=("gpu",))
  with pytest.raises(TypeError, match="should be NumPy array, scalar, tf.Variable"):
    jax2tf.convert(jnp.sin)("a string")
  with pytest.raises(ValueError, match="outside all JAX transformations"):
    jaxon.jit(lambda x: jax2tf.convert(jnp.sin)(x))(1.0)
  with pytest.warns(DeprecationWarning, match="enable_xla"):
    jax2tf.convert(jnp.sin, enable_xla=True)


def test_import_jaxon_does_not_import_tensorflow():
  code = ("import sys, jaxon, jaxon.numpy, jaxon.experimental;"
          "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
  subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_polymorphic_batch_one_graph_many_sizes():
  w = np.arange(6, dtype=np.float32).reshape(3, 2) / 6
  f_tf = tf.function(jax2tf.convert(lambda x: jnp.tanh(x @ w), polymorphic_shapes=["(b, ...)"]),
                     autograph=False, jit_compile=True)
  concrete = f_tf.get_concrete_function(tf.TensorSpec([None, 3], tf.float32))
  for n in (1, 3, 17):
    x = np.linspace(-1, 1, 3 * n, dtype=np.float32).reshape(n, 3)
    np.testing.assert_allclose(concrete(x).numpy(), np.tanh(x @ w), rtol=1e-5, atol=1e-6)


def test_polymorphic_dimension_relations_are_checked():
  f = jax2tf.convert(lambda x: jnp.sum(x[:, :x.shape[0]], axis=1), polymorphic_shapes=["(b, 2*b)"])
  concrete = tf.function(f, autograph=False).get_concrete_function(
      tf.TensorSpec([None, None], tf.float32))
  np.testing.assert_allclose(concrete(tf.ones((2, 4))).numpy(), [2.0, 2.0])
  with pytest.raises(tf.errors.InvalidArgumentError, match="args\\[0\\].shape\\[1\\]"):
    concrete(tf.ones((2, 5)))
  with pytest.raises(ValueError, match="pass polymorphic_shapes"):
    tf.function(jax2tf.convert(jnp.sin), autograph=False).get_concrete_function(
        tf.TensorSpec([None], tf.float32))
