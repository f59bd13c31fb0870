"""jaxon.experimental.ode.odeint against closed forms, finite differences and JAX's values."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.experimental.ode import odeint
from tests.util import check_grads

T = np.linspace(0.0, 2.0, 5, dtype=np.float32)


def decay(y, t, k):
  return -k * y


def oscillator(state, t, w):
  return {"x": state["v"], "v": -w ** 2 * state["x"]}


def test_decay_matches_closed_form_and_jax():
  ys = jaxon.jit(lambda y0, t, k: odeint(decay, y0, t, k))(1.5, T, 0.7)
  np.testing.assert_allclose(ys, 1.5 * np.exp(-0.7 * T), rtol=2e-6)
  # JAX 0.10.2 gives these exact float32 values.
  np.testing.assert_array_equal(
      ys, np.array([1.5, 1.0570327, 0.7448775, 0.5249067, 0.3698954], np.float32))


def test_oscillator_pytree_state():
  y0 = {"x": jnp.array(1.0), "v": jnp.array(0.0)}
  out = jaxon.jit(lambda y0, w: odeint(oscillator, y0, T, w))(y0, 2.0)
  assert set(out) == {"x", "v"} and out["x"].shape == (5,)
  np.testing.assert_allclose(out["x"], np.cos(2 * T), atol=1e-5)
  np.testing.assert_allclose(out["v"], -2 * np.sin(2 * T), atol=1e-5)


def test_gradients_match_closed_form():
  """y_i = y0 exp(-k (t_i - t_0)); the loss is sum_i y_i^2."""
  def loss(y0, t, k):
    return jnp.sum(odeint(decay, y0, t, k) ** 2)

  def exact(y0, t, k):
    return jnp.sum((y0 * jnp.exp(-k * (t - t[0]))) ** 2)
  got = jaxon.jit(jaxon.grad(loss, (0, 1, 2)))(1.5, T, 0.7)
  want = jaxon.grad(exact, (0, 1, 2))(1.5, T, 0.7)
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_gradient_of_closed_over_parameter():
  """A traced value the vector field closes over is hoisted by closure_convert."""
  def loss(k):
    return odeint(lambda y, t: -k * y, 1.0, T)[-1]
  np.testing.assert_allclose(jaxon.jit(jaxon.grad(loss))(0.7), -2.0 * np.exp(-1.4),
                             rtol=2e-5)


def test_check_grads_against_finite_differences(x64):
  t = np.array([0.0, 0.5, 1.0])

  def f(y0, t, k):
    return odeint(decay, y0, t, k, rtol=1e-10, atol=1e-10)
  check_grads(jaxon.jit(f), (np.array([1.0, -0.5]), t, 0.8), order=1, modes=["rev"],
              atol=1e-5, rtol=1e-5)


def test_vmap_over_parameter():
  ks = jnp.array([0.5, 1.0])
  ys = jaxon.jit(jaxon.vmap(lambda k: odeint(decay, 1.0, T, k)))(ks)
  np.testing.assert_allclose(ys, np.exp(-np.outer(ks, T)), rtol=2e-6)


def test_rejects_integer_times_and_non_array_args():
  with pytest.raises(TypeError, match="t must be an array of floats"):
    odeint(decay, 1.0, np.arange(3), 0.5)
  with pytest.raises(TypeError, match="must be arrays or scalars"):
    odeint(lambda y, t, s: -y, 1.0, T, "not an array")
