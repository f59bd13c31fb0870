"""jaxon.scipy.linalg against SciPy, eagerly and under jit; vmap against a loop; errors.
Derivatives are in test_grads.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import jaxon
from jaxon.scipy import linalg
from tests.linalg.linalg_util import close, eager_and_jit, hpd, rand
from tests.transform_util import check_vmap
from tests.util import check_grads

F32 = np.dtype(np.float32)
A = rand((3, 3)) + 3 * np.eye(3, dtype=np.float32)
B = rand((3, 2), seed=1)
SPD = hpd((3, 3), seed=2)


def _check(f, scipy_f, *args, what=""):
  out = eager_and_jit(f, *args)
  for o, e in zip(jaxon.tree_leaves(out), jaxon.tree_leaves(scipy_f(*args))):
    close(o, np.asarray(e).astype(np.asarray(o).dtype), F32, what)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_and_cho_solve(lower):
  one_triangle = np.tril(SPD) if lower else np.triu(SPD)  # SciPy reads only that one
  _check(lambda a: linalg.cholesky(a, lower=lower),
         lambda a: scipy.linalg.cholesky(a, lower=lower), one_triangle, what="cholesky")
  for b in (B, B[:, 0]):
    _check(lambda a, b: linalg.cho_solve(linalg.cho_factor(a, lower=lower), b),
           lambda a, b: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=lower), b),
           one_triangle, b, what="cho_solve")
    _check(lambda a, b: linalg.solve(a, b, assume_a="pos", lower=lower),
           lambda a, b: scipy.linalg.solve(a, b, assume_a="pos", lower=lower),
           one_triangle, b, what="solve(assume_a='pos')")


def test_cholesky_factors_the_triangle_it_reads_without_symmetrizing_again():
  """The Hermitian matrix built from one triangle goes to `cholesky` as it is: no second
  (x + xᴴ) / 2, whose division the jaxpr would show."""
  jaxpr = jaxon.make_jaxpr(lambda a: linalg.cho_factor(a, lower=True)[0])(SPD)
  assert "cholesky" in str(jaxpr) and " div " not in str(jaxpr)


@pytest.mark.parametrize("trans", [0, "T", 2])
@pytest.mark.parametrize("lower", [True, False])
def test_solve_triangular(trans, lower):
  for b in (B, B[:, 0]):
    _check(lambda a, b: linalg.solve_triangular(a, b, trans=trans, lower=lower,
                                                unit_diagonal=lower),
           lambda a, b: scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower,
                                                      unit_diagonal=lower),
           A, b, what=f"solve_triangular(trans={trans}, lower={lower})")


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_lu(shape):
  x = rand(shape, seed=3)
  _check(linalg.lu, scipy.linalg.lu, x, what="lu")
  _check(lambda x: linalg.lu(x, permute_l=True), lambda x: scipy.linalg.lu(x, permute_l=True),
         x, what="lu(permute_l=True)")
  p, _, _ = linalg.lu(x, p_indices=True)
  np.testing.assert_array_equal(p, scipy.linalg.lu(x, p_indices=True)[0])


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_factor_and_solve(trans):
  _check(linalg.lu_factor, scipy.linalg.lu_factor, A, what="lu_factor")
  for b in (B, B[:, 0]):
    _check(lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b, trans=trans),
           lambda a, b: scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b, trans=trans),
           A, b, what=f"lu_solve(trans={trans})")


def test_numpy_style_functions():
  _check(linalg.inv, scipy.linalg.inv, A, what="inv")
  _check(linalg.det, scipy.linalg.det, A, what="det")
  _check(linalg.solve, scipy.linalg.solve, A, B, what="solve")
  _check(lambda a: linalg.svd(a, compute_uv=False),
         lambda a: scipy.linalg.svd(a, compute_uv=False), A, what="svd")
  u, s, vh = linalg.svd(A)
  close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), A, F32, "svd U s Vh")


@pytest.mark.parametrize("pivoting", [False, True])
@pytest.mark.parametrize("mode", ["full", "economic", "r"])
def test_qr(mode, pivoting):
  x = rand((4, 3), seed=4)
  out = linalg.qr(x, mode=mode, pivoting=pivoting)
  expected = scipy.linalg.qr(x, mode=mode, pivoting=pivoting)
  assert len(out) == len(expected)
  for o, e in zip(out, expected):  # unique up to the signs of Q's columns and R's rows
    close(np.abs(o), np.abs(e), F32, f"qr(mode={mode}, pivoting={pivoting})")


@pytest.mark.parametrize("lower", [True, False])
def test_eigh(lower):
  sym = A + A.T
  one_triangle = np.tril(sym) if lower else np.triu(sym)
  _check(lambda a: linalg.eigh(a, lower=lower, eigvals_only=True),
         lambda a: scipy.linalg.eigh(a, lower=lower, eigvals_only=True), one_triangle,
         what="eigh")
  w, v = map(np.asarray, eager_and_jit(lambda a, b: linalg.eigh(a, b, lower=lower),
                                       one_triangle, SPD))
  close(w, scipy.linalg.eigh(sym, SPD, eigvals_only=True), F32, "generalized eigh values")
  close(sym @ v, SPD @ v * w, F32, "generalized eigh: A v = w B v")


def test_block_diag():
  args = (np.ones((2, 2), np.float32), np.float32(3.), np.arange(3, dtype=np.float32),
          np.zeros((1, 0), np.float32))
  _check(linalg.block_diag, scipy.linalg.block_diag, *args, what="block_diag")


def test_expm():
  # one batch of matrices whose norms need each Padé degree, and up to 4 squarings
  scales = np.array([0.01, 0.3, 1., 5., 20.], np.float32)[:, None, None]
  general = rand((5, 3, 3), seed=5) * scales
  for f, x in ((linalg.expm, general),
               (lambda x: linalg.expm(x, upper_triangular=True), np.triu(general))):
    expected = scipy.linalg.expm(x.astype(np.float64))
    out = np.asarray(jaxon.jit(f)(x))  # (eagerly in test_vmap)
    size = np.abs(expected).max(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(out / size, expected / size, rtol=1e-4, atol=1e-4)


def test_expm_beyond_max_squarings_is_nan():
  assert np.isnan(np.asarray(linalg.expm(A * 1e6, max_squarings=4))).all()


VMAP_CASES = [
    ("expm", linalg.expm, (A,)),
    ("cho_solve", lambda a, b: linalg.cho_solve((a, True), b), (np.linalg.cholesky(SPD), B)),
    ("lu_solve", lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b), (A, B)),
]


@pytest.mark.parametrize("name,f,args", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap(name, f, args):
  check_vmap(f, args, axes=(-1,), tol=dict(rtol=1e-4, atol=1e-4))


def test_errors():
  with pytest.raises(ValueError, match="trans must be"):
    linalg.solve_triangular(A, B, trans=3)
  with pytest.raises(ValueError, match="assume_a"):
    linalg.solve(A, B, assume_a="banded")
  with pytest.raises(ValueError, match=r"b of shape \(…, n\)"):
    linalg.cho_solve((A, True), np.ones(4, np.float32))
  with pytest.raises(NotImplementedError, match="type 2"):
    linalg.eigh(A, SPD, type=2)


# ----------------------------------------------------------------------------- special matrices

C3 = np.array([1.0, 2.0, -3.0], np.float32)
R4 = np.array([9.0, 4.0, 5.0, -6.0], np.float32)
SPECIAL_MATRIX_CASES = [
    ("toeplitz c, r", linalg.toeplitz, scipy.linalg.toeplitz, (C3, R4)),
    ("toeplitz c", linalg.toeplitz, scipy.linalg.toeplitz, (C3,)),
    ("toeplitz complex", linalg.toeplitz, scipy.linalg.toeplitz,
     (np.array([1 + 1j, 2 - 1j, 3], np.complex64),)),
    ("toeplitz batch", linalg.toeplitz, scipy.linalg.toeplitz,
     (rand((2, 3)), rand((1, 4), seed=1))),
    ("toeplitz scalar", linalg.toeplitz, scipy.linalg.toeplitz, (np.float32(5),)),
    ("hankel c, r", linalg.hankel, scipy.linalg.hankel, (C3, R4)),
    ("hankel c", linalg.hankel, scipy.linalg.hankel, (C3,)),
    ("circulant", linalg.circulant, scipy.linalg.circulant, (C3,)),
    ("circulant batch", linalg.circulant, scipy.linalg.circulant, (rand((2, 4)),)),
    ("companion", linalg.companion, scipy.linalg.companion, (np.float32([2, -3, 1, 4]),)),
    ("companion batch", linalg.companion, scipy.linalg.companion, (rand((2, 3)) + 3,)),
]


@pytest.mark.parametrize("name,f,scipy_f,args", SPECIAL_MATRIX_CASES,
                         ids=[c[0] for c in SPECIAL_MATRIX_CASES])
def test_special_matrices(name, f, scipy_f, args):
  _check(f, scipy_f, *args, what=name)


def test_special_matrices_keep_integer_dtypes_and_hilbert():
  c = np.array([1, 2, 3], np.int32)
  for f in (linalg.toeplitz, linalg.hankel, linalg.circulant):
    out = f(c)
    assert out.dtype == np.int32, f"{f.__name__} of int32 gave {out.dtype}"
    np.testing.assert_array_equal(out, getattr(scipy.linalg, f.__name__)(c))
  assert linalg.companion(c).dtype == np.float32
  close(linalg.hilbert(4), scipy.linalg.hilbert(4), F32, "hilbert(4)")
  assert linalg.hilbert(0).shape == (0, 0)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
@pytest.mark.parametrize("side", ["right", "left"])
def test_polar(shape, side):
  a = rand(shape, seed=3)
  _check(lambda a: linalg.polar(a, side), lambda a: scipy.linalg.polar(a, side), a,
         what=f"polar {shape} {side}")
  _check(lambda a: linalg.polar(a, side, method="svd"), lambda a: scipy.linalg.polar(a, side),
         a, what=f"polar {shape} {side} svd")


def test_special_matrices_transforms(x64):
  c, r = np.array([1.0, 2.0, -3.0]), np.array([9.0, 4.0, 5.0, -6.0])
  check_grads(linalg.toeplitz, (c, r), order=1)
  check_grads(linalg.hankel, (c, r), order=1)
  check_grads(linalg.circulant, (c,), order=1)
  check_grads(linalg.companion, (np.array([2.0, -3.0, 1.0]),), order=2)
  a = rand((3, 3), np.float64, seed=4) + 3 * np.eye(3)
  check_grads(lambda a: linalg.polar(a)[1], (a,), order=1, rtol=1e-4, atol=1e-6)
  check_vmap(linalg.toeplitz, (rand((2, 3)), rand((2, 4), seed=1)), axes=(0,))


def test_special_matrix_errors():
  with pytest.raises(ValueError, match="at least 2"):
    linalg.companion(np.float32([1]))
  with pytest.raises(ValueError, match="side"):
    linalg.polar(A, "up")
  with pytest.raises(ValueError, match="method"):
    linalg.polar(A, method="newton")
