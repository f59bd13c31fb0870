"""jaxon.scipy.sparse.linalg: cg, bicgstab and gmres against NumPy and SciPy, and their
implicit derivatives against differentiating jnp.linalg.solve."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as osp_sparse

import jaxon
import jaxon.numpy as jnp
from jaxon.scipy.sparse.linalg import bicgstab, cg, gmres

RNG = np.random.default_rng(0)
N = 6
_M = RNG.normal(size=(N, N)).astype(np.float32)
SPD = _M @ _M.T + N * np.eye(N, dtype=np.float32)
GENERAL = _M + N * np.eye(N, dtype=np.float32)
B = RNG.normal(size=N).astype(np.float32)

SOLVERS = {
    "cg": (cg, SPD),
    "bicgstab": (bicgstab, GENERAL),
    "gmres-batched": (lambda *a, **k: gmres(*a, solve_method="batched", **k), GENERAL),
    "gmres-incremental": (lambda *a, **k: gmres(*a, solve_method="incremental", **k),
                          GENERAL),
}


def _solution_and_grads(a, b):
  """x = A^{-1} b and the gradients of sum(sin(x)): db = A^{-T} cos(x), dA = -db x^T."""
  x = np.linalg.solve(a.astype(np.float64), b)
  db = np.linalg.solve(a.T.astype(np.float64), np.cos(x))
  return x, (-np.outer(db, x), db)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_solution_and_gradient(name):
  solver, a = SOLVERS[name]

  def loss(a, b):
    x = solver(lambda v: a @ v, b, tol=1e-6)[0]
    return jnp.sum(jnp.sin(x)), x
  (_, x), grads = jaxon.jit(jaxon.value_and_grad(loss, (0, 1), has_aux=True))(a, B)
  x_want, grads_want = _solution_and_grads(a, B)
  np.testing.assert_allclose(x, x_want, rtol=2e-4, atol=2e-5, err_msg=name)
  for g, w in zip(grads, grads_want):
    np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=name)


def test_cg_iterates_match_scipy():
  """A few iterations (no convergence): JAX's algorithm is SciPy's, step for step."""
  b64, a64 = B.astype(np.float64), SPD.astype(np.float64)
  for maxiter in (1, 3):
    want, _ = osp_sparse.cg(a64, b64, maxiter=maxiter)
    got, info = cg(SPD, B, maxiter=maxiter)
    assert info is None
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_pytree_preconditioner_and_vmap():
  def matvec(x):
    return {"u": 3.0 * x["u"] + x["w"], "w": x["u"] + 4.0 * x["w"]}
  b = {"u": B[:3], "w": B[3:]}
  x, _ = cg(matvec, b, x0={"u": jnp.ones(3), "w": jnp.zeros(3)})
  dense = np.block([[3 * np.eye(3), np.eye(3)], [np.eye(3), 4 * np.eye(3)]])
  want = np.linalg.solve(dense, B)
  np.testing.assert_allclose(np.concatenate([x["u"], x["w"]]), want, rtol=1e-5, atol=1e-6)
  jacobi = np.diag(1 / np.diag(SPD)).astype(np.float32)
  x_pre = jaxon.jit(lambda b: cg(SPD, b, M=jacobi)[0])(B)
  np.testing.assert_allclose(x_pre, np.linalg.solve(SPD, B), rtol=1e-4, atol=1e-5)
  xs = jaxon.jit(jaxon.vmap(lambda b: bicgstab(GENERAL, b)[0]))(np.stack([B, 2 * B]))
  np.testing.assert_allclose(xs[1], 2 * np.linalg.solve(GENERAL, B), rtol=1e-4, atol=1e-5)


def test_errors():
  with pytest.raises(ValueError, match="matching tree structure"):
    cg(SPD, B, x0=[B])
  with pytest.raises(ValueError, match="square matrix"):
    cg(np.ones((2, 3), np.float32), B)
  with pytest.raises(ValueError, match="invalid solve_method"):
    gmres(GENERAL, B, solve_method="qr")
