"""Derivatives against finite differences (forward and reverse mode, to order 2, in float64
and complex128): of jaxon.lax.linalg's decompositions, then of jaxon.numpy.linalg and
jaxon.scipy.linalg. Points are where the functions are differentiable: nonsingular matrices,
distinct eigen/singular values, and eigen/singular vectors only through functions that do
not depend on their phases.

They share one module so that they share x64 mode, which is switched once per module (it
clears the compile caches), and the programs compiled for their common shapes.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
import jaxon.scipy.linalg as jsl
from jaxon.lax import linalg
from tests.linalg.linalg_util import close, hpd, rand
from tests.transform_util import check_jit_transforms
from tests.util import check_grads

pytestmark = pytest.mark.usefixtures("x64_module")


# ----------------------------------------------------------------------------- jaxon.lax.linalg

def _gauge_free_svd(x):
  u, s, vh = linalg.svd(x, full_matrices=False)
  return s, u @ vh, jnp.abs(u)


def _gauge_free_eigh(x):
  v, w = linalg.eigh(x)
  return w, jnp.abs(v), (v * w[..., None, :]) @ jnp.conj(v).mT


# (name, function, its arguments in a given dtype); the shapes are shared between cases so
# that they reuse compiled programs.
GRAD_CASES = [
    ("cholesky", linalg.cholesky, lambda d: (hpd((3, 3), d, 10),)),
    ("triangular_solve", lambda a, b: linalg.triangular_solve(
        a, b, left_side=True, lower=True, transpose_a=True, conjugate_a=True),
     lambda d: (rand((3, 3), d) + 4 * np.eye(3, dtype=d), rand((3, 4), d, 1))),
    ("triangular_solve_right_unit", lambda a, b: linalg.triangular_solve(
        a, b, left_side=False, lower=False, unit_diagonal=True),
     lambda d: (rand((3, 3), d), rand((4, 3), d, 1))),
    ("lu", lambda x: linalg.lu(x)[0], lambda d: (rand((3, 3), d, 2),)),
    ("lu_wide", lambda x: linalg.lu(x)[0], lambda d: (rand((3, 4), d, 2),)),
    ("qr", linalg.qr, lambda d: (rand((3, 3), d, 3),)),
    ("qr_tall", lambda x: linalg.qr(x, full_matrices=False), lambda d: (rand((4, 3), d, 3),)),
    ("qr_wide", linalg.qr, lambda d: (rand((3, 4), d, 3),)),
    ("qr_full_tall", linalg.qr, lambda d: (rand((4, 3), d, 3),)),
    ("qr_pivoting", lambda x: linalg.qr(x, pivoting=True)[:2], lambda d: (rand((4, 3), d, 3),)),
    ("qr_pivoting_wide", lambda x: linalg.qr(x, pivoting=True)[:2],
     lambda d: (rand((3, 4), d, 3),)),
    ("svd_tall", _gauge_free_svd, lambda d: (rand((4, 3), d, 4),)),
    ("svd_wide", _gauge_free_svd, lambda d: (rand((3, 4), d, 4),)),
    ("svd_values", lambda x: linalg.svd(x, compute_uv=False), lambda d: (rand((3, 3), d, 4),)),
    ("eigh", _gauge_free_eigh, lambda d: (rand((3, 3), d, 5),)),
]


# Complex inputs for the rules with conjugates or phase corrections (LU's rule has neither);
# the shape variants are checked in float64 only.
LAX_CASES = [(*case, np.float64) for case in GRAD_CASES] + [
    (*case, np.complex128) for case in GRAD_CASES
    if case[0] in ("cholesky", "triangular_solve", "qr", "qr_full_tall", "svd_tall", "eigh")]


@pytest.mark.parametrize("name,f,make_args,dtype", LAX_CASES,
                         ids=[f"{c[0]}-{np.dtype(c[3]).name}" for c in LAX_CASES])
def test_lax_grads(name, f, make_args, dtype):
  check_grads(f, make_args(dtype), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name,f,make_args", GRAD_CASES[:2],
                         ids=[c[0] for c in GRAD_CASES[:2]])
def test_float32_grads_and_jit_of_transformations(name, f, make_args):
  args = make_args(np.float32)
  check_grads(f, args, order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  check_jit_transforms(f, args, tol=dict(rtol=1e-4, atol=1e-4))


def test_eigvals_grad():
  x = rand((3, 3), np.float64, 11) + np.diag([0., 2., 4.])
  check_grads(lambda x: linalg.eig(x, compute_left_eigenvectors=False,
                                   compute_right_eigenvectors=False)[0], (x,), order=1)


def test_eig_eigenvector_grad_is_not_implemented():
  with pytest.raises(NotImplementedError, match="eigenvectors"):
    jaxon.jvp(lambda x: linalg.eig(x)[1], (np.eye(2),), (np.eye(2),))


def test_full_matrices_svd_grad_is_not_implemented():
  tall = rand((4, 3), np.float64)
  with pytest.raises(NotImplementedError, match="full_matrices=False"):
    jaxon.jvp(lambda x: linalg.svd(x)[0], (tall,), (tall,))


# JAX 0.10.2, x64: jax.jvp(lambda x: lax.linalg.qr(x, pivoting=True)[:2], (M,), (T,))
QR_M = np.array([[1, 2, 3], [4, 5, 6.5], [7, 8.5, 9], [1, 0, 2]])
QR_T = np.array([[0.5, -1, 0.25], [1, 0, -0.5], [0., 2, 1], [-1, 0.5, 0]])
QR_DQ = np.array([
    [-0.00915653525620201, -0.6762234766739854, 0.36562913078170967, -0.9199287039764783],
    [0.06940103546117052, -0.026199042011556428, -0.9830289924957261, -0.3387526135490725],
    [-0.048887252612511985, 0.1253197875199325, 0.6877561736370631, 0.38361517220307373],
    [0.00817407439180264, 0.2877908149153104, -0.32931341898780264, 0.3362229383355504]])
QR_DR = np.array([[-0.556858817941555, -1.4575789384228848, -0.579612611561044],
                  [0., 0.31270119929820817, 0.8413984387611444],
                  [0., 0., 2.02265722760842], [0., 0., 0.]])


def test_pivoted_complete_qr_jvp_matches_jax():
  """The tangent of a complete Q's last columns follows LAPACK's completion, as JAX's."""
  _, (dq, dr) = jaxon.jvp(lambda x: linalg.qr(x, pivoting=True)[:2], (QR_M,), (QR_T,))
  np.testing.assert_allclose(dq, QR_DQ, atol=1e-12)
  np.testing.assert_allclose(dr, QR_DR, atol=1e-12)


def test_triangular_solve_transpose_in_rhs():
  a = np.tril(rand((3, 3))) + 3 * np.eye(3)
  f = lambda b: linalg.triangular_solve(a, b, left_side=True, lower=True)
  ct = rand((3, 2), np.float64, 3)
  transposed, = jaxon.linear_transpose(f, rand((3, 2), np.float64))(ct)
  close(transposed, np.linalg.solve(a.T, ct), np.float64, "transpose of triangular_solve")


# ----------------------------------------------------------------------------- jnp, jax.scipy

# Shared shapes (3×3 matrices, 3×2 right-hand sides) let the cases reuse compiled programs.
A = rand((3, 3), np.float64) + 3 * np.eye(3)
B = rand((3, 2), np.float64, 1)
SPD = hpd((3, 3), np.float64, 2)
SYM = A + A.T
TALL = rand((4, 3), np.float64, 3)


def _jnp_svd_phase_free(x):
  u, s, vh = jnp.linalg.svd(x, full_matrices=False)
  return s, u @ vh


def _jnp_eigh_phase_free(x):
  w, v = jnp.linalg.eigh(x)
  return w, jnp.abs(v)


# (name, function, arguments, order): order 2 for the main functions, 1 for their variants and
# for eigvals (its second derivative needs eigenvector derivatives of general matrices, which
# jaxon, like JAX, does not define).
LIBRARY_CASES = [
    # jnp.linalg
    ("det", jnp.linalg.det, (A,), 2),
    ("slogdet", lambda x: jnp.linalg.slogdet(x).logabsdet, (A,), 2),
    ("inv", jnp.linalg.inv, (A,), 2),
    ("solve", jnp.linalg.solve, (A, B), 2),
    ("solve_vector", jnp.linalg.solve, (A, B[:, 0]), 1),
    ("norm_vector", lambda x: [jnp.linalg.norm(x, ord, axis=0) for ord in (None, 1, 3, np.inf)],
     (A,), 1),
    ("norm_matrix", lambda x: [jnp.linalg.norm(x, ord) for ord in ("fro", 2, -2, 1, np.inf)],
     (A,), 1),
    ("norm_nuclear", lambda x: jnp.linalg.norm(x, "nuc"), (TALL,), 2),
    ("cholesky", lambda x: jnp.linalg.cholesky(x, upper=True), (SPD,), 2),
    ("qr", lambda x: tuple(jnp.linalg.qr(x)), (TALL,), 2),
    ("svd", _jnp_svd_phase_free, (TALL,), 2),
    ("eigh", _jnp_eigh_phase_free, (SYM,), 2),
    ("eigvalsh", jnp.linalg.eigvalsh, (SYM,), 2),
    ("eigvals", jnp.linalg.eigvals, (A + np.diag([0., 3., 6.]),), 1),
    ("pinv", jnp.linalg.pinv, (TALL,), 1),
    ("lstsq", lambda a, b: jnp.linalg.lstsq(a, b)[0], (TALL, rand((4, 2), np.float64, 4)), 1),
    ("matrix_power", lambda x: jnp.linalg.matrix_power(x, 3), (A,), 2),
    ("matrix_power_negative", lambda x: jnp.linalg.matrix_power(x, -2), (A,), 1),
    ("multi_dot", lambda a, b, c: jnp.linalg.multi_dot([a, b, c]), (B.T, A, B), 1),
    ("cross", jnp.linalg.cross, (A, SYM), 2),
    # jax.scipy.linalg
    ("expm", jsl.expm, (A,), 1),  # more in tests/linalg/test_expm.py
    ("cho_solve", lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b), (SPD, B), 1),
    ("solve_triangular", lambda a, b: jsl.solve_triangular(a, b, trans="T", lower=True),
     (A, B), 1),
    ("lu", lambda x: jsl.lu(x)[1:], (A,), 1),
    ("lu_solve", lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b, trans=1), (A, B), 1),
    ("solve_pos", lambda a, b: jsl.solve(a, b, assume_a="pos"), (SPD, B), 1),
    ("eigh_generalized", lambda a, b: jsl.eigh(a, b, eigvals_only=True), (SYM, SPD), 1),
    ("block_diag", jsl.block_diag, (A, B), 1),
]


@pytest.mark.parametrize("name,f,args,order", LIBRARY_CASES, ids=[c[0] for c in LIBRARY_CASES])
def test_library_grads(name, f, args, order):
  check_grads(f, args, order=order, modes=("fwd", "rev"))


def test_solve_gradient_reuses_the_factorization():
  """As JAX's `custom_linear_solve`: one LU, two triangular solves forward and two for the
  transpose, none to differentiate the factors."""
  text = str(jaxon.make_jaxpr(jaxon.grad(lambda a, b: jnp.linalg.solve(a, b).sum()))(A, B))
  assert text.count(" lu ") == 1 and text.count("triangular_solve[") == 4, text
