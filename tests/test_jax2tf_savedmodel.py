"""A converted jaxon model in a SavedModel: it saves, reloads in a fresh process where jaxon
cannot be imported, serves and differentiates; reloaded here it goes back into jaxon
through call_tf, and its gradient there is the original model's."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="jax2tf needs TensorFlow: pip install jaxon[tf]")

import jaxon  # noqa: E402
import jaxon.numpy as jnp  # noqa: E402
from jaxon.experimental import jax2tf  # noqa: E402

PARAMS = {"w": np.array([[0.5, -1.0], [2.0, 0.25], [-0.3, 0.8]], np.float32),
          "b": np.array([0.1, -0.2], np.float32)}
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.2, 0.2, -2.0]], np.float32)


def model(params, x):
  return jnp.tanh(x @ params["w"] + params["b"])


def loss(params, x):
  return jnp.sum(model(params, x) ** 2)


class _Module(tf.Module):
  """The model's parameters as variables; `predict` and `loss_and_grads` take batches of
  any size (one polymorphic conversion)."""

  def __init__(self):
    super().__init__()
    self.params = tf.nest.map_structure(tf.Variable, PARAMS)
    signature = [tf.TensorSpec([None, 3], tf.float32)]
    self.predict = tf.function(self._predict, autograph=False, input_signature=signature)
    self.loss_and_grads = tf.function(self._loss_and_grads, autograph=False,
                                      jit_compile=True, input_signature=signature)

  def _predict(self, x):
    return jax2tf.convert(model, polymorphic_shapes=[None, "(b, ...)"])(self.params, x)

  def _loss_and_grads(self, x):
    with tf.GradientTape() as tape:
      y = self._predict(x)
      value = tf.reduce_sum(y ** 2)
    return value, tape.gradient(value, self.params)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("saved") / "model")
  tf.saved_model.save(_Module(), path,
                      options=tf.saved_model.SaveOptions(experimental_custom_gradients=True))
  return path


_SERVE_WITHOUT_JAXON = textwrap.dedent("""
    import importlib.abc, json, sys
    class BlockJaxon(importlib.abc.MetaPathFinder):
      def find_spec(self, name, path, target=None):
        if name == "jaxon" or name.startswith("jaxon."):
          raise ImportError(f"{name} is blocked in this process")
    sys.meta_path.insert(0, BlockJaxon())
    import numpy as np, tensorflow as tf
    m = tf.saved_model.load(sys.argv[1])
    served = []
    for x in json.loads(sys.argv[2]):
      x = tf.constant(np.asarray(x, np.float32))
      value, grads = m.loss_and_grads(x)
      served.append({"y": m.predict(x).numpy().tolist(), "loss": float(value),
                     "grads": {k: v.numpy().tolist() for k, v in grads.items()}})
    assert not any(k.startswith("jaxon") for k in sys.modules)
    print(json.dumps(served))
""")


def test_reload_in_a_process_without_jaxon_serves_every_batch_size(saved):
  batches = [np.random.default_rng(n).uniform(-2, 2, (n, 3)).astype(np.float32)
             for n in (1, 3, 17)]
  result = subprocess.run([sys.executable, "-c", _SERVE_WITHOUT_JAXON, saved,
                           json.dumps([x.tolist() for x in batches])],
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  for x, served in zip(batches, json.loads(result.stdout.strip().splitlines()[-1])):
    np.testing.assert_allclose(served["y"], model(PARAMS, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(served["loss"], loss(PARAMS, x), rtol=1e-5)
    grads = jaxon.grad(loss)(PARAMS, x)
    for k in PARAMS:
      np.testing.assert_allclose(served["grads"][k], grads[k], rtol=1e-5, atol=1e-6)


def test_round_trip_back_into_jaxon_through_call_tf(saved):
  """jaxon model -> jax2tf -> SavedModel -> TF -> call_tf -> jaxon.grad == the original's."""
  restored = tf.saved_model.load(saved)
  # The batch-polymorphic function's TF output shape is (None, 2): declared, as in JAX
  served = jax2tf.call_tf(restored.predict,
                          output_shape_dtype=jaxon.ShapeDtypeStruct((3, 2), np.float32))

  def served_loss(x):
    return jnp.sum(served(x) ** 2)
  for how in (lambda f: f, jaxon.jit):
    np.testing.assert_allclose(how(served)(X), model(PARAMS, X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(how(jaxon.grad(served_loss))(X),
                               jaxon.grad(loss, argnums=1)(PARAMS, X), rtol=1e-5, atol=1e-6)
