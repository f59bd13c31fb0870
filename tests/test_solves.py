"""lax.custom_root and lax.custom_linear_solve: implicit derivatives under jvp, grad, vmap
and jit, compared with closed forms and with differentiating jnp.linalg.solve."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax

RNG = np.random.default_rng(0)
_M = RNG.normal(size=(3, 3)).astype(np.float32)
SPD = _M @ _M.T + 3 * np.eye(3, dtype=np.float32)
GENERAL = _M + 3 * np.eye(3, dtype=np.float32)
B = RNG.normal(size=3).astype(np.float32)


def newton_sqrt(x):
  def solve(f, y0):
    return lax.fori_loop(0, 20, lambda _, y: y - f(y) / (2 * y), y0)
  return lax.custom_root(lambda y: y ** 2 - x, 1.0, solve, lambda g, y: y / g(1.0))


def test_custom_root_derivative_is_implicit():
  xs = jnp.array([1.0, 4.0, 9.0])
  grads = jaxon.jit(jaxon.vmap(jaxon.grad(newton_sqrt)))(xs)
  np.testing.assert_allclose(grads, 1 / (2 * np.sqrt(xs)), rtol=1e-6)
  _, tangent = jaxon.jvp(newton_sqrt, (4.0,), (1.0,))
  np.testing.assert_allclose(tangent, 0.25, rtol=1e-6)


def test_custom_root_has_aux():
  def sqrt_and_steps(x):
    def solve(f, y0):
      return lax.fori_loop(0, 20, lambda _, y: y - f(y) / (2 * y), y0), jnp.int32(20)
    return lax.custom_root(lambda y: y ** 2 - x, 1.0, solve, lambda g, y: y / g(1.0),
                           has_aux=True)
  root, steps = sqrt_and_steps(4.0)
  assert float(root) == 2.0 and int(steps) == 20
  np.testing.assert_allclose(jaxon.grad(lambda x: sqrt_and_steps(x)[0])(4.0), 0.25)


def _solve_with(a):
  return lambda matvec, b: jnp.linalg.solve(a, b)


def symmetric_solve(a, b):
  return lax.custom_linear_solve(lambda x: a @ x, b, _solve_with(a), symmetric=True)


def general_solve(a, b):
  return lax.custom_linear_solve(lambda x: a @ x, b, _solve_with(a), _solve_with(a.T))


@pytest.mark.parametrize("solve, a", [(symmetric_solve, SPD), (general_solve, GENERAL)],
                         ids=["symmetric", "general"])
def test_custom_linear_solve_gradients_match_linalg_solve(solve, a):
  def loss(fn):
    return jaxon.jit(jaxon.grad(lambda a, b: jnp.sum(fn(a, b) ** 2), (0, 1)))
  got, want = loss(solve)(a, B), loss(jnp.linalg.solve)(a, B)
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
  # d(A^{-1} b) along dA = ones is -A^{-1} (ones @ x).
  t_got = jaxon.jit(lambda a: jaxon.jvp(lambda a: solve(a, B), (a,), (jnp.ones_like(a),))[1])(a)
  x = np.linalg.solve(a, B)
  t_want = -np.linalg.solve(a, np.ones_like(a) @ x)
  np.testing.assert_allclose(t_got, t_want, rtol=1e-5, atol=1e-6)


def test_custom_linear_solve_vmap():
  """Batched operator and right-hand side, then only the right-hand side."""
  a_batch, b_batch = np.stack([GENERAL, 2 * GENERAL]), np.stack([B, -B])
  x, grads = jaxon.jit(jaxon.vmap(jaxon.value_and_grad(
      lambda a, b: jnp.sum(general_solve(a, b)), (0, 1))))(a_batch, b_batch)
  db = np.linalg.solve(np.swapaxes(a_batch, 1, 2), np.ones((2, 3, 1)))[..., 0]
  xs = np.linalg.solve(a_batch, b_batch[..., None])[..., 0]
  np.testing.assert_allclose(x, xs.sum(-1), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(grads[1], db, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(grads[0], -db[:, :, None] * xs[:, None, :], rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(jaxon.vmap(general_solve, (None, 0))(GENERAL, b_batch),
                             xs[[0, 0]] * np.array([[1], [-1]]), rtol=1e-5)


def test_custom_linear_solve_pytree_and_errors():
  def matvec(x):
    return {"u": 2.0 * x["u"], "w": 4.0 * x["w"]}

  def solve(mv, b):
    return {"u": b["u"] / 2.0, "w": b["w"] / 4.0}
  b = {"u": jnp.ones(2), "w": jnp.ones(())}
  x = lax.custom_linear_solve(matvec, b, solve, symmetric=True)
  np.testing.assert_allclose(x["u"], [0.5, 0.5])
  no_transpose = lambda b: jnp.sum(lax.custom_linear_solve(lambda x: 2.0 * x, b,  # noqa: E731
                                                           lambda mv, b: b / 2.0))
  with pytest.raises(TypeError, match="transpose_solve required"):
    jaxon.grad(no_transpose)(jnp.ones(2))
  with pytest.raises(TypeError, match="output pytree structure must match"):
    lax.custom_linear_solve(lambda x: [x], jnp.ones(2), lambda mv, b: b)
