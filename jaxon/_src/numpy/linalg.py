"""jaxon.numpy.linalg: NumPy's linear algebra, built on the decompositions of
`jaxon.lax.linalg`.

Matrix arguments are stacks: the last two axes hold the matrices and leading axes are batch
axes, which broadcast between operands as in NumPy. Integer inputs are promoted to floating
point. Everything is jittable, vmappable and differentiable where the underlying
decomposition is (singular values and eigenvalues need to be distinct for the derivatives of
singular and eigen vectors; inverses and log-determinants need nonsingular matrices, while
`det`'s derivative, as JAX's, is finite at singular ones).
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import dtypes
from jaxon._src.lax import lax
from jaxon._src.lax import linalg as lax_linalg
from jaxon._src.lax import linalg_lapack as lax_linalg_lapack
from jaxon._src.lax import reductions as lax_reductions
from jaxon._src.lax import sorting as lax_sorting
from jaxon._src.lax import utils as lax_utils
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.lax.dot_general import Precision, PrecisionLike
from jaxon._src.numpy import (creation, lax_numpy, linear, products, reductions, searching,
                              shape, ufuncs, util)
from jaxon._src.xla.eager_plans import memoize_eager_operations


class EighResult(NamedTuple):
  eigenvalues: Any
  eigenvectors: Any


class EigResult(NamedTuple):
  eigenvalues: Any
  eigenvectors: Any


class QRResult(NamedTuple):
  Q: Any
  R: Any


class SlogdetResult(NamedTuple):
  sign: Any
  logabsdet: Any


class SVDResult(NamedTuple):
  U: Any
  S: Any
  Vh: Any


# ----------------------------------------------------------------------------- helpers

def _inexact(fun_name: str, *args: Any) -> list[Any]:
  """The arguments as jaxon arrays of their common inexact dtype."""
  return [lax_numpy.asarray(x) for x in util.promote_args_inexact(f"jnp.linalg.{fun_name}",
                                                                  *args)]


def _matrices(fun_name: str, a: Any, square: bool = False) -> Any:
  """`a` as an inexact array of (stacked) matrices, square ones when asked."""
  a, = _inexact(fun_name, a)
  if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
    what = "square matrices (…, n, n)" if square else "matrices (…, m, n)"
    raise ValueError(f"jnp.linalg.{fun_name} takes {what}, got an array of shape "
                     f"{a.shape}.")
  return a


def _H(x: Any) -> Any:
  """Conjugate transpose of the last two axes."""
  return ufuncs.conj(shape.matrix_transpose(x))


def _broadcast_batch(*arrays_and_cores: tuple[Any, int]) -> list[Any]:
  """Broadcasts the leading (batch) axes of arrays whose last `core` axes are their own."""
  batch = lax.broadcast_shapes(*[x.shape[:x.ndim - core] for x, core in arrays_and_cores])
  return [shape.broadcast_to(x, batch + x.shape[x.ndim - core:]) for x, core in
          arrays_and_cores]


def _eye_like(a: Any) -> Any:
  """Identity matrices shaped and typed like the square stack `a`."""
  return shape.broadcast_to(creation.eye(a.shape[-1], dtype=a.dtype), a.shape)


def _diagonal(a: Any) -> Any:
  return creation.diagonal(a, axis1=-2, axis2=-1)


def _real_dtype(dtype: Any) -> np.dtype:
  return np.finfo(dtype).dtype


# ----------------------------------------------------------------------------- decompositions

@memoize_eager_operations
def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
  """The Cholesky factor of Hermitian positive-definite matrices: L with a = L Lᴴ (lower),
  or U = Lᴴ with a = Uᴴ U when `upper`. NaN where `a` is not positive definite.

  Example: `jnp.linalg.cholesky(jnp.array([[4., 2.], [2., 2.]]))` is `[[2., 0.], [1., 1.]]`.
  """
  a = _matrices("cholesky", a, square=True)
  l = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(l) if upper else l


@memoize_eager_operations
def qr(a: Any, mode: str = "reduced") -> Any:
  """QR decomposition a = Q R.

  Args:
    a: matrices (…, m, n); k = min(m, n).
    mode: "reduced" gives Q (…, m, k) and R (…, k, n); "complete" Q (…, m, m) and R
      (…, m, n); "r" only the reduced R; "raw" LAPACK's compact form `(h, tau)` as NumPy
      gives it: h (…, n, m) is transposed, with R in its lower triangle and the Householder
      vectors above it, and tau (…, k) holds the reflectors' scales.

  Returns:
    QRResult(Q, R), R for mode "r", or (h, tau) for mode "raw".

  Example: `jnp.linalg.qr(jnp.eye(2)).R` is the identity up to signs.
  """
  a = _matrices("qr", a)
  if mode not in ("reduced", "complete", "r", "raw"):
    raise ValueError(f"jnp.linalg.qr: unsupported mode {mode!r}; use 'reduced', 'complete', "
                     "'r' or 'raw'.")
  if mode == "raw":
    h, tau = lax_linalg_lapack.geqrf(a)
    return QRResult(shape.matrix_transpose(h), tau)
  q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
  return r if mode == "r" else QRResult(q, r)


@memoize_eager_operations
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None) -> Any:
  """Singular value decomposition a = U diag(S) Vh.

  Args:
    a: matrices (…, m, n); k = min(m, n).
    full_matrices: U is (…, m, m) and Vh (…, n, n); otherwise (…, m, k) and (…, k, n).
    compute_uv: when False only the singular values are returned.
    hermitian: `a` is Hermitian; its eigendecomposition gives the SVD.

  Returns:
    SVDResult(U, S, Vh), or S: the singular values in descending order.

  Example: `jnp.linalg.svd(jnp.array([[3., 0.], [0., -4.]])).S` is `[4., 3.]`.
  """
  a = _matrices("svd", a)
  if subset_by_index is not None:
    raise NotImplementedError("jnp.linalg.svd(subset_by_index=...) is not implemented.")
  if hermitian:
    return _hermitian_svd(a, compute_uv)
  if not compute_uv:
    return lax_linalg.svd(a, compute_uv=False)
  return SVDResult(*lax_linalg.svd(a, full_matrices=full_matrices))


def _hermitian_svd(a: Any, compute_uv: bool) -> Any:
  """For Hermitian a = V diag(w) Vᴴ: S = |w| (descending), U = V, Vh = (V sign(w))ᴴ."""
  if a.shape[-1] != a.shape[-2]:
    raise ValueError(f"jnp.linalg.svd(hermitian=True) takes square matrices, got shape "
                     f"{a.shape}.")
  v, w = lax_linalg.eigh(a)
  order = lax.broadcasted_iota(np.int32, w.shape, w.ndim - 1)
  neg_s, sign, order = lax_sorting.sort((ufuncs.negative(ufuncs.abs(w)), ufuncs.sign(w), order),
                                        num_keys=1)
  s = ufuncs.negative(neg_s)
  if not compute_uv:
    return s
  u = linear.matmul(v, _column_selector(order, v.dtype))
  return SVDResult(u, s, _H(ufuncs.multiply(u, lax.convert_element_type(
      sign[..., None, :], u.dtype))))


def _column_selector(order: Any, dtype: Any) -> Any:
  """S with x @ S = x[..., order] (a one-hot matrix per batch element)."""
  rows = lax.broadcasted_iota(np.int32, order.shape + order.shape[-1:], order.ndim - 1)
  return lax.convert_element_type(ufuncs.equal(rows, order[..., None, :]), dtype)


def svdvals(x: Any, /) -> Any:
  """The singular values of matrices, in descending order."""
  return svd(x, compute_uv=False)


@memoize_eager_operations
def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
  """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of Hermitian matrices.

  Args:
    a: Hermitian matrices (…, n, n).
    UPLO: "L" or "U", the triangle read when `symmetrize_input` is False.
    symmetrize_input: decompose (a + aᴴ) / 2, which keeps derivatives Hermitian.

  Example: `jnp.linalg.eigh(jnp.array([[2., 1.], [1., 2.]])).eigenvalues` is `[1., 3.]`.
  """
  a = _matrices("eigh", a, square=True)
  v, w = lax_linalg.eigh(a, lower=_lower("eigh", UPLO), symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def _lower(fun_name: str, UPLO: str | None) -> bool:
  if UPLO not in (None, "L", "U"):
    raise ValueError(f"jnp.linalg.{fun_name}: UPLO must be 'L' or 'U', got {UPLO!r}.")
  return UPLO != "U"


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
  """The eigenvalues of Hermitian matrices, ascending."""
  return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a: Any) -> EigResult:
  """Eigenvalues and right eigenvectors (unit columns) of general square matrices; both are
  complex. Only the eigenvalues are differentiable.

  Example: `jnp.linalg.eig(jnp.array([[0., -1.], [1., 0.]])).eigenvalues` is `[1j, -1j]`.
  """
  a = _matrices("eig", a, square=True)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a: Any) -> Any:
  """The (complex) eigenvalues of general square matrices."""
  a = _matrices("eigvals", a, square=True)
  return lax_linalg.eig(a, compute_left_eigenvectors=False,
                        compute_right_eigenvectors=False)[0]


# ----------------------------------------------------------------------------- determinants
#
# As in JAX: det of 2x2 and 3x3 matrices is the explicit sum of products, differentiated as
# written; larger ones go through slogdet with a custom JVP built on the adjugate, which
# stays finite for singular matrices (the derivative of det at a matrix of rank n - 1 is a
# nonzero rank-one matrix; below that it is 0), where differentiating the LU factors gives
# NaN. slogdet has a custom JVP too: d log|det a| = tr(a⁻¹ da), with the sign's tangent 0
# for real matrices (the sign is piecewise constant).

# (column of row 0, column of row 1, ...), sign: the terms of Leibniz's formula, in JAX's
# order (the order of the sum decides the rounding).
_LEIBNIZ_TERMS = {
    2: [((0, 1), 1), ((1, 0), -1)],
    3: [((0, 1, 2), 1), ((1, 2, 0), 1), ((2, 0, 1), 1),
        ((2, 1, 0), -1), ((0, 2, 1), -1), ((1, 0, 2), -1)],
}


def _leibniz_det(a: Any) -> Any:
  """The determinant of 2x2 or 3x3 matrices as the signed sum of products of entries."""
  total = None
  for columns, sign in _LEIBNIZ_TERMS[a.shape[-1]]:
    term = a[..., 0, columns[0]]
    for row, column in enumerate(columns[1:], 1):
      term = ufuncs.multiply(term, a[..., row, column])
    if total is None:
      total = term
    else:
      total = ufuncs.add(total, term) if sign > 0 else ufuncs.subtract(total, term)
  return total


def _permutation_sign(pivots: Any, dtype: Any) -> Any:
  """±1 in `dtype`: -1 when LAPACK swapped rows an odd number of times."""
  swapped = lax.ne(pivots, lax.broadcasted_iota(np.int32, pivots.shape, pivots.ndim - 1))
  swaps = lax_reductions.reduce_sum(lax.convert_element_type(swapped, np.int32),
                                    [pivots.ndim - 1])
  odd = lax.convert_element_type(lax.rem(swaps, np.int32(2)), dtype)
  return lax.sub(np.ones((), dtype), lax.mul(np.full((), 2, dtype), odd))


@memoize_eager_operations
def det(a: Any) -> Any:
  """The determinant of square matrices.

  Example: `jnp.linalg.det(jnp.array([[1., 2.], [3., 4.]]))` is `-2.`.
  """
  a = _matrices("det", a, square=True)
  if a.shape[-1] in _LEIBNIZ_TERMS:
    return _leibniz_det(a)
  return _det(a)


@custom_jvp
def _det(a: Any) -> Any:
  sign, logdet = slogdet(a)
  return ufuncs.multiply(sign, ufuncs.exp(logdet).astype(sign.dtype))


@_det.defjvp
def _det_jvp(primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
  (a,), (da,) = primals, tangents
  det_a, adjugate_da = _cofactor_solve(a, da)
  return det_a, creation.trace(adjugate_da, axis1=-2, axis2=-1)


def _cofactor_solve(a: Any, b: Any) -> tuple[Any, Any]:
  """det(a) and adj(a) b (= det(a) a⁻¹ b where a is invertible), finite for singular `a`.

  With a[perm] = L U, adj(a) b = det(a) U⁻¹ L⁻¹ b[perm]. Scaling all but the last entry of
  L⁻¹ b[perm] by det(a) and setting U's last diagonal entry to 1 / (product of the others,
  with the permutation's sign) gives the same result without dividing by det(a), so it holds
  at rank n - 1 too, where u_nn = 0. Below rank n - 1 the adjugate is 0; the modified U is
  then still singular, which the back substitution of a vector of ones detects.
  """
  if a.shape[-1] == 1:
    return a[..., 0, 0], b
  lu, pivots, permutation = lax_linalg.lu(a)
  lu, b = _broadcast_batch((lu, 2), (b, 2))
  batch = lu.shape[:-2]
  permutation = shape.broadcast_to(permutation, (*batch, a.shape[-1]))
  sign = shape.broadcast_to(_permutation_sign(pivots, a.dtype), batch)
  partial_det = ufuncs.multiply(reductions.cumprod(_diagonal(lu), axis=-1), sign[..., None])
  lu = lu.at[..., -1, -1].set(ufuncs.divide(1, partial_det[..., -2]))
  probe = lax_linalg.triangular_solve(lu, lax_numpy.ones((*batch, a.shape[-1], 1), a.dtype),
                                      left_side=True, lower=False)
  low_rank = reductions.any(ufuncs.logical_not(ufuncs.isfinite(probe)), axis=(-2, -1))
  low_rank = low_rank[..., None, None]
  x = ufuncs.where(low_rank, 0, b)
  x = searching.take_along_axis(x, permutation[..., :, None], axis=-2)
  x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
  x = shape.concatenate([ufuncs.multiply(x[..., :-1, :], partial_det[..., -1, None, None]),
                         x[..., -1:, :]], axis=-2)
  x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
  return partial_det[..., -1], ufuncs.where(low_rank, 0, x)


@memoize_eager_operations
def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
  """The sign (a unit complex number for complex input) and the log of the absolute value of
  the determinant: det = sign · exp(logabsdet), without overflow. (0, -inf) when singular.

  Example: `jnp.linalg.slogdet(jnp.array([[1., 2.], [3., 4.]]))` is `(-1., log 2)`.
  """
  a = _matrices("slogdet", a, square=True)
  if method not in (None, "lu"):
    raise ValueError(f"jnp.linalg.slogdet: unsupported method {method!r}; jaxon has 'lu'.")
  small = a.shape[-1] in (1, 2)
  return SlogdetResult(*(_slogdet_small(a) if small else _slogdet_lu(a)))


@custom_jvp
def _slogdet_small(a: Any) -> tuple[Any, Any]:
  """slogdet of 1x1 and 2x2 matrices from the explicit determinant (no LU)."""
  det_a = a[..., 0, 0] if a.shape[-1] == 1 else _leibniz_det(a)
  return ufuncs.sign(det_a), ufuncs.real(ufuncs.log(ufuncs.abs(det_a)))


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
  (a,), (da,) = primals, tangents
  sign, logabsdet = _slogdet_small(a)
  if a.shape[-1] == 1:
    dlog = ufuncs.divide(da[..., 0, 0], a[..., 0, 0])
  else:  # the derivative of a00 a11 - a01 a10 along da, over the determinant
    ddet = (da[..., 0, 0] * a[..., 1, 1] - da[..., 0, 1] * a[..., 1, 0]
            - da[..., 1, 0] * a[..., 0, 1] + da[..., 1, 1] * a[..., 0, 0])
    dlog = ufuncs.divide(ddet, _leibniz_det(a))
  return _slogdet_outputs(a, sign, logabsdet, dlog)


@custom_jvp
def _slogdet_lu(a: Any) -> tuple[Any, Any]:
  lu, pivots, _ = lax_linalg.lu(a)
  diag = _diagonal(lu)
  abs_diag = ufuncs.abs(diag)
  singular = reductions.any(ufuncs.equal(abs_diag, 0), axis=-1)
  phases = ufuncs.divide(diag, ufuncs.where(singular[..., None], 1, abs_diag).astype(a.dtype))
  sign = ufuncs.multiply(reductions.prod(phases, axis=-1), _permutation_sign(pivots, a.dtype))
  logdet = reductions.sum(ufuncs.log(abs_diag), axis=-1)
  return (ufuncs.where(singular, 0, sign).astype(a.dtype),
          ufuncs.where(singular, -np.inf, logdet).astype(abs_diag.dtype))


@_slogdet_lu.defjvp
def _slogdet_lu_jvp(primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
  (a,), (da,) = primals, tangents
  sign, logabsdet = _slogdet_lu(a)
  dlog = creation.trace(solve(a, da), axis1=-2, axis2=-1)
  return _slogdet_outputs(a, sign, logabsdet, dlog)


def _slogdet_outputs(a: Any, sign: Any, logabsdet: Any, dlog: Any
                     ) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
  """Primal and tangent outputs of slogdet from d log(det a) = `dlog`: its real part is the
  tangent of log|det a|; for complex `a` its imaginary part turns the sign (d sign =
  i Im(dlog) sign); a real sign is piecewise constant."""
  if dtypes.is_complex(a.dtype):
    dsign = ufuncs.multiply(ufuncs.subtract(dlog, ufuncs.real(dlog).astype(dlog.dtype)), sign)
    dlog = ufuncs.real(dlog)
  else:
    dsign = lax_numpy.zeros_like(sign)
  return (sign, logabsdet), (dsign, dlog)


# ----------------------------------------------------------------------------- solving

@memoize_eager_operations
def solve(a: Any, b: Any) -> Any:
  """Solves a x = b for x, by LU decomposition with partial pivoting.

  Args:
    a: square matrices (…, n, n).
    b: a vector (n,) (for every matrix of `a`), or matrices (…, n, k) whose batch axes
      broadcast against `a`'s (NumPy 2's rule).

  Example: `jnp.linalg.solve(jnp.array([[2., 0.], [0., 4.]]), jnp.array([2., 4.]))` is
  `[1., 1.]`.
  """
  a = _matrices("solve", a, square=True)
  a, b = _inexact("solve", a, b)
  vector = b.ndim == 1
  if vector:
    b = b[:, None]
  if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
    raise ValueError(f"jnp.linalg.solve: b must have shape ({a.shape[-1]},) or "
                     f"(…, {a.shape[-1]}, k) to match a of shape {a.shape}, got {b.shape}.")
  a, b = _broadcast_batch((a, 2), (b, 2))
  lu, _, perm = lax_linalg.lu(a)
  x = _solved_by_lu(a, lu, perm, b)
  return x[..., 0] if vector else x


@custom_jvp
def _solved_by_lu(a: Any, lu: Any, perm: Any, b: Any) -> Any:
  """a⁻¹ b, from `lu(a)`'s factors. Its derivative, a⁻¹ (db - da x), solves with the same
  factors, as JAX's (`custom_linear_solve`): differentiating the factorization costs
  several times more (`grad` of a solve of f32[8,8]: 25 µs against 6). The rule ignores
  the factors' tangents, which `da` accounts for. The factors still have them (no
  stop_gradient), and the rule solves with `lu_solve` itself, not this function: higher
  derivatives, and those of reverse mode's transpose, differentiate the factorization.
  (A rule calling its own function would also be saved with programs, by `export`, once
  for each level of derivative it keeps.)"""
  return lax_linalg.lu_solve(lu, perm, b)


@_solved_by_lu.defjvp
def _solved_by_lu_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
  a, lu, perm, b = primals
  da, _, _, db = tangents
  x = lax_linalg.lu_solve(lu, perm, b)
  da_x = linear.matmul(da, x, precision=Precision.HIGHEST)
  return x, lax_linalg.lu_solve(lu, perm, ufuncs.subtract(db, da_x))


@memoize_eager_operations
def inv(a: Any) -> Any:
  """The inverse of square matrices (by solving a x = I).

  Example: `jnp.linalg.inv(jnp.array([[2., 0.], [0., 4.]]))` is `[[.5, 0.], [0., .25]]`.
  """
  a = _matrices("inv", a, square=True)
  return solve(a, _eye_like(a))


def lstsq(a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False
          ) -> tuple[Any, Any, Any, Any]:
  """The least-squares solution x minimising ||b - a x||₂, through the SVD of `a`.

  Args:
    a: a matrix (m, n).
    b: a vector (m,) or matrix (m, k).
    rcond: singular values below `rcond` times the largest count as zero; by default
      machine epsilon times max(m, n).
    numpy_resid: return NumPy's empty residuals when rank < n or m <= n (not jittable);
      otherwise the squared residual norms are always returned.

  Returns:
    (x, residuals, rank, s): s holds the singular values of `a`.
  """
  a, b = _inexact("lstsq", a, b)
  if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
    raise ValueError(f"jnp.linalg.lstsq takes a matrix a (m, n) and b (m,) or (m, k), got "
                     f"shapes {a.shape} and {b.shape}.")
  vector = b.ndim == 1
  if vector:
    b = b[:, None]
  m, n = a.shape
  if rcond is None:
    rcond = np.finfo(a.dtype).eps * max(m, n)
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  keep = ufuncs.greater_equal(s, ufuncs.multiply(lax_numpy.asarray(rcond, s.dtype), s[0]))
  rank = reductions.sum(keep, dtype=dtypes.default_int_dtype())
  s_inv = ufuncs.where(keep, 1 / ufuncs.where(keep, s, 1), 0).astype(a.dtype)
  x = linear.matmul(_H(vh), s_inv[:, None] * linear.matmul(_H(u), b))
  if numpy_resid and (int(rank) < n or m <= n):
    resid = lax_numpy.zeros((0,), _real_dtype(a.dtype))
  else:
    resid = reductions.sum(ufuncs.square(ufuncs.abs(b - linear.matmul(a, x))), axis=0)
  return (x[:, 0] if vector else x), resid, rank, s


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
  """The Moore-Penrose pseudo-inverse, from the SVD: singular values at or below `rtol`
  times the largest are treated as zero (default 10 · max(m, n) · eps).

  Its custom JVP (JAX's) is Golub and Pereyra's formula for the derivative of the
  pseudo-inverse, which needs no singular vectors, so it stays finite where singular values
  repeat or vanish (rank-deficient `a`), unlike differentiating through the SVD.

  Example: `jnp.linalg.pinv(jnp.array([[2., 0.], [0., 0.]]))` is `[[.5, 0.], [0., 0.]]`.
  """
  a = _matrices("pinv", a)
  return _pinv(a, rcond if rtol is None else rtol, bool(hermitian))


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _pinv(a: Any, rtol: Any, hermitian: bool) -> Any:
  if rtol is None:
    rtol = 10. * max(a.shape[-2:]) * np.finfo(a.dtype).eps
  u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
  cutoff = ufuncs.multiply(lax_numpy.asarray(rtol, s.dtype)[..., None],
                           reductions.max(s, axis=-1, keepdims=True))
  s = ufuncs.where(s > cutoff, s, np.inf).astype(u.dtype)
  return linear.matmul(_H(vh), ufuncs.divide(_H(u), s[..., None]))


@_pinv.defjvp
def _pinv_jvp(rtol: Any, hermitian: bool, primals: tuple[Any], tangents: tuple[Any]
              ) -> tuple[Any, Any]:
  """dp = -p da p + (p pᴴ) daᴴ (1 - a p) + (1 - p a) daᴴ (pᴴ p), for p = pinv(a) (Golub and
  Pereyra, 1973), with the triple products grouped so that the inner one is the smaller
  (left to right for tall `a`, right to left for wide)."""
  (a,), (da,) = primals, tangents
  p = _pinv(a, rtol, hermitian)
  if hermitian:  # the Hermitian SVD reads the Hermitian part of `a`, so the JVP must too
    a, da = lax_linalg.symmetrize(a), lax_linalg.symmetrize(da)
  mm = linear.matmul
  tall = a.shape[-2] >= a.shape[-1]

  def triple(x: Any, y: Any, z: Any) -> Any:
    return mm(mm(x, y), z) if tall else mm(x, mm(y, z))
  s = triple(p, _H(p), _H(da))
  t = triple(_H(da), _H(p), p)
  dp = ufuncs.negative(triple(p, da, p)) + s - triple(s, a, p) + t - triple(p, a, t)
  return p, dp


def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Any:
  """The x with tensordot(a, x, x.ndim) = b, where x's shape is a's trailing axes (after
  moving `axes` of `a` to the end)."""
  a, b = _inexact("tensorsolve", a, b)
  if axes is not None:
    axes = [lax_utils.canonicalize_axis(ax, a.ndim) for ax in axes]
    a = shape.moveaxis(a, axes, range(a.ndim - len(axes), a.ndim))
  x_shape = a.shape[b.ndim:]
  size = math.prod(x_shape)
  if math.prod(a.shape[:b.ndim]) != size or a.shape[:b.ndim] != b.shape:
    raise ValueError(f"jnp.linalg.tensorsolve: a's leading axes {a.shape[:b.ndim]} must be "
                     f"b's shape {b.shape} and hold as many elements as its trailing axes "
                     f"{x_shape}.")
  x = solve(shape.reshape(a, (size, size)), shape.ravel(b))
  return shape.reshape(x, x_shape)


def tensorinv(a: Any, ind: int = 2) -> Any:
  """The inverse of `a` for `tensordot` over its first `ind` axes: the result has shape
  a.shape[ind:] + a.shape[:ind]."""
  a, = _inexact("tensorinv", a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"jnp.linalg.tensorinv: ind must be a positive integer, got {ind}.")
  rows, cols = math.prod(a.shape[:ind]), math.prod(a.shape[ind:])
  if rows != cols:
    raise ValueError(f"jnp.linalg.tensorinv: a's first {ind} axes {a.shape[:ind]} must hold "
                     f"as many elements as the others {a.shape[ind:]}.")
  return shape.reshape(inv(shape.reshape(a, (rows, cols))), a.shape[ind:] + a.shape[:ind])


# ----------------------------------------------------------------------------- products

def matrix_power(a: Any, n: int) -> Any:
  """`a` to the integer power n by repeated squaring (n < 0 inverts first; n = 0 gives
  identity matrices).

  Example: `jnp.linalg.matrix_power(jnp.array([[1., 1.], [0., 1.]]), 3)` is
  `[[1., 3.], [0., 1.]]`.
  """
  util.check_arraylike("jnp.linalg.matrix_power", a)
  a = lax_numpy.asarray(a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"jnp.linalg.matrix_power takes square matrices (…, n, n), got shape "
                     f"{a.shape}.")
  try:
    n = operator.index(n)
  except TypeError:
    raise TypeError(f"jnp.linalg.matrix_power: the exponent must be an integer, got "
                    f"{n!r}.") from None
  if n < 0:
    a, n = inv(a), -n
  result = None
  while n:
    if n & 1:
      result = a if result is None else linear.matmul(result, a)
    n >>= 1
    if n:
      a = linear.matmul(a, a)
  return _eye_like(a) if result is None else result


def multi_dot(arrays: Sequence[Any], *, precision: PrecisionLike = None) -> Any:
  """The product of a chain of matrices, multiplied in the cheapest order. The first array
  may be a vector (a row) and the last one too (a column); the others are matrices.

  Example: `jnp.linalg.multi_dot([jnp.ones(3), jnp.eye(3), jnp.ones(3)])` is `3.`.
  """
  arrays = [lax_numpy.asarray(x) for x in arrays]
  if len(arrays) < 2:
    raise ValueError("jnp.linalg.multi_dot needs at least two arrays.")
  if len(arrays) == 2:
    return linear.dot(*arrays, precision=precision)
  first_vector, last_vector = arrays[0].ndim == 1, arrays[-1].ndim == 1
  if first_vector:
    arrays[0] = arrays[0][None, :]
  if last_vector:
    arrays[-1] = arrays[-1][:, None]
  if any(x.ndim != 2 for x in arrays):
    raise ValueError(f"jnp.linalg.multi_dot takes matrices (and vectors at the ends), got "
                     f"shapes {[x.shape for x in arrays]}.")
  split = _chain_order([arrays[0].shape[0]] + [x.shape[1] for x in arrays])

  def product(i: int, j: int) -> Any:
    if i == j:
      return arrays[i]
    k = split[i][j]
    return linear.dot(product(i, k), product(k + 1, j), precision=precision)

  out = product(0, len(arrays) - 1)
  if first_vector:
    out = out[0]
  return out[..., 0] if last_vector else out


def _chain_order(dims: Sequence[int]) -> list[list[int]]:
  """The matrix-chain dynamic programme: split[i][j] is where the cheapest product of
  matrices i..j (matrix t being dims[t] × dims[t+1]) splits."""
  n = len(dims) - 1
  cost = [[0] * n for _ in range(n)]
  split = [[0] * n for _ in range(n)]
  for length in range(1, n):
    for i in range(n - length):
      j = i + length
      cost[i][j], split[i][j] = min(
          (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
          for k in range(i, j))
  return split


def matrix_rank(M: Any, rtol: Any = None, *, tol: Any = None, hermitian: bool = False
                ) -> Any:
  """The number of singular values above `tol` (absolute), or above `rtol` times the
  largest one (default max(m, n) · eps).

  Example: `jnp.linalg.matrix_rank(jnp.ones((3, 3)))` is `1`.
  """
  M, = _inexact("matrix_rank", M)
  if M.ndim < 2:
    return lax.convert_element_type(reductions.any(ufuncs.not_equal(M, 0)),
                                    dtypes.default_int_dtype())
  s = svd(M, compute_uv=False, hermitian=hermitian)
  if tol is None:
    if rtol is None:
      rtol = max(M.shape[-2:]) * np.finfo(s.dtype).eps
    tol = ufuncs.multiply(reductions.max(s, axis=-1),
                          lax_numpy.asarray(rtol, s.dtype))
  tol = lax_numpy.asarray(tol, s.dtype)
  return reductions.count_nonzero(ufuncs.greater(s, tol[..., None]), axis=-1)


@memoize_eager_operations
def outer(x1: Any, x2: Any, /) -> Any:
  """The outer product of two vectors."""
  util.check_arraylike("jnp.linalg.outer", x1, x2)
  if np.ndim(x1) != 1 or np.ndim(x2) != 1:
    raise ValueError(f"jnp.linalg.outer takes two vectors, got shapes {np.shape(x1)} and "
                     f"{np.shape(x2)}.")
  return linear.outer(x1, x2)


@memoize_eager_operations
def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
  """The cross product of 3-vectors along `axis` (other axes broadcast)."""
  x1, x2 = (lax_numpy.asarray(x) for x in util.promote_args("jnp.linalg.cross", x1, x2))
  if x1.shape[axis] != 3 or x2.shape[axis] != 3:
    raise ValueError(f"jnp.linalg.cross takes 3-vectors along axis {axis}, got shapes "
                     f"{x1.shape} and {x2.shape}.")
  a, b = (shape.moveaxis(x, axis, -1) for x in (x1, x2))
  a0, a1, a2 = (a[..., i] for i in range(3))
  b0, b1, b2 = (b[..., i] for i in range(3))
  out = shape.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
  return shape.moveaxis(out, -1, axis)


@memoize_eager_operations
def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
  """The sums along diagonal `offset` of the matrices in the last two axes."""
  return creation.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


@memoize_eager_operations
def diagonal(x: Any, /, *, offset: int = 0) -> Any:
  """Diagonal `offset` of the matrices in the last two axes."""
  return creation.diagonal(x, offset, axis1=-2, axis2=-1)


vecdot = products.vecdot


def matmul(x1: Any, x2: Any, /, *, precision: PrecisionLike = None,
           preferred_element_type: Any = None) -> Any:
  return linear.matmul(x1, x2, precision=precision,
                       preferred_element_type=preferred_element_type)


def matrix_transpose(x: Any, /) -> Any:
  return shape.matrix_transpose(x)


def tensordot(x1: Any, x2: Any, /, *, axes: int | Sequence[Any] = 2,
              precision: PrecisionLike = None, preferred_element_type: Any = None,
              out_sharding: Any = None) -> Any:
  return linear.tensordot(x1, x2, axes, precision=precision,
                          preferred_element_type=preferred_element_type,
                          out_sharding=out_sharding)


# ----------------------------------------------------------------------------- norms

@memoize_eager_operations
def norm(x: Any, ord: Any = None, axis: int | tuple[int, ...] | None = None,
         keepdims: bool = False) -> Any:
  """Vector or matrix norms, as NumPy's `norm`.

  Args:
    x: an array.
    ord: the norm's order. Vectors: None or 2 (Euclidean), inf, -inf, 0 (number of nonzero
      entries), any other p (Σ|x|ᵖ)^(1/p). Matrices: None or "fro" (Frobenius), "nuc"
      (sum of singular values), 1, -1 (max/min column sums), inf, -inf (max/min row sums),
      2, -2 (largest/smallest singular value).
    axis: an axis (vector norms) or two (matrix norms); None takes all of a 1-D or 2-D `x`
      (or, with ord None, the Euclidean norm of `x` flattened).
    keepdims: keep the reduced axes with size 1.

  Example: `jnp.linalg.norm(jnp.array([3., 4.]))` is `5.`.
  """
  x, = _inexact("norm", x)
  if axis is None:
    if ord is None:
      return _euclidean(x, tuple(range(x.ndim)), keepdims)
    if x.ndim not in (1, 2):
      raise ValueError(f"jnp.linalg.norm: improper number of dimensions {x.ndim} for ord="
                       f"{ord!r}; give axis, or ord=None for the flattened Euclidean norm.")
    axis = tuple(range(x.ndim))
  axes = tuple(lax_utils.canonicalize_axis(operator.index(ax), x.ndim)
               for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
  if len(axes) == 1:
    return _vector_norm(x, ord, axes[0], keepdims)
  if len(axes) == 2:
    if axes[0] == axes[1]:
      raise ValueError(f"jnp.linalg.norm: duplicate axes {axis} for a matrix norm.")
    return _matrix_norm(x, ord, axes, keepdims)
  raise ValueError(f"jnp.linalg.norm: improper number of axes {axis}; give one (vector "
                   "norms) or two (matrix norms).")


def _euclidean(x: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
  return ufuncs.sqrt(reductions.sum(ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x))),
                                    axis=axes, keepdims=keepdims))


def _vector_norm(x: Any, ord: Any, axis: int, keepdims: bool) -> Any:
  if ord is None or (not isinstance(ord, str) and ord == 2):
    return _euclidean(x, (axis,), keepdims)
  if isinstance(ord, str):
    raise ValueError(f"jnp.linalg.norm: invalid order {ord!r} for a vector norm.")
  abs_x = ufuncs.abs(x)
  if ord == np.inf:
    return reductions.max(abs_x, axis=axis, keepdims=keepdims)
  if ord == -np.inf:
    return reductions.min(abs_x, axis=axis, keepdims=keepdims)
  if ord == 0:
    return reductions.sum(ufuncs.not_equal(x, 0), axis=axis, keepdims=keepdims,
                          dtype=abs_x.dtype)
  if ord == 1:
    return reductions.sum(abs_x, axis=axis, keepdims=keepdims)
  p = lax_numpy.asarray(ord, abs_x.dtype)
  total = reductions.sum(ufuncs.power(abs_x, p), axis=axis, keepdims=keepdims)
  return ufuncs.power(total, ufuncs.reciprocal(p))


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, int], keepdims: bool) -> Any:
  row_axis, col_axis = axes
  if ord is None or ord == "fro":
    return _euclidean(x, axes, keepdims)
  if ord in ("nuc", 2, -2):
    s = svd(shape.moveaxis(x, axes, (-2, -1)), compute_uv=False)
    reduce = {"nuc": reductions.sum, 2: reductions.max, -2: reductions.min}[ord]
    y = reduce(s, axis=-1)
    return shape.expand_dims(y, axes) if keepdims else y
  if isinstance(ord, str) or ord not in (1, -1, np.inf, -np.inf):
    raise ValueError(f"jnp.linalg.norm: invalid order {ord!r} for a matrix norm.")
  # 1-norms sum down the columns, inf-norms along the rows, then take the max (or min).
  summed, other = (row_axis, col_axis) if ord in (1, -1) else (col_axis, row_axis)
  sums = reductions.sum(ufuncs.abs(x), axis=summed, keepdims=keepdims)
  if not keepdims and other > summed:
    other -= 1
  reduce = reductions.max if ord > 0 else reductions.min
  return reduce(sums, axis=other, keepdims=keepdims)


def vector_norm(x: Any, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: Any = 2) -> Any:
  """Vector norms over `axis` (all axes if None, several axes flattened together)."""
  x, = _inexact("vector_norm", x)
  axes = tuple(range(x.ndim)) if axis is None else (
      axis if isinstance(axis, (tuple, list)) else (axis,))
  axes = tuple(lax_utils.canonicalize_axis(operator.index(ax), x.ndim) for ax in axes)
  kept = [d for i, d in enumerate(x.shape) if i not in axes]
  flat = shape.reshape(shape.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim)),
                       (*kept, math.prod(x.shape[i] for i in axes)))
  out = _vector_norm(flat, ord, flat.ndim - 1, False)
  return shape.expand_dims(out, axes) if keepdims else out


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
  """Matrix norms of the matrices in the last two axes."""
  return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def cond(x: Any, p: Any = None) -> Any:
  """The condition number of matrices: ‖x‖ₚ ‖x⁻¹‖ₚ, as NumPy's `cond`.

  Args:
    x: matrices (…, m, n); square unless p is None, 2 or -2.
    p: None or 2 (largest over smallest singular value), -2 (smallest over largest), or
      any matrix norm order of `norm` ("fro", "nuc", 1, -1, inf, -inf).

  Returns:
    The condition numbers (…,), real; inf for singular matrices without NaN entries.

  Example: `jnp.linalg.cond(jnp.array([[1., 0.], [0., 4.]]))` is `4.`.
  """
  x = _matrices("cond", x)
  if p is None or (not isinstance(p, str) and p in (2, -2)):
    s = svd(x, compute_uv=False)
    largest, smallest = s[..., 0], s[..., -1]
    r = smallest / largest if p == -2 else largest / smallest
  else:
    if x.shape[-1] != x.shape[-2]:
      raise ValueError(f"jnp.linalg.cond with p={p!r} takes square matrices (…, n, n), got "
                       f"an array of shape {x.shape}.")
    r = norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
  # A singular matrix gives 0/0 or inf·0; its condition number is inf (as in NumPy).
  finite_input = ~reductions.any(ufuncs.isnan(x), axis=(-2, -1))
  return ufuncs.where(ufuncs.isnan(r) & finite_input, np.inf, r)
