"""jaxon.scipy.linalg: SciPy's linear algebra, built on `jaxon.lax.linalg` and
`jaxon.numpy.linalg`.

SciPy's `overwrite_*` and `check_finite` arguments are accepted and ignored (arrays are
immutable, and checking values would need them on the host). Leading axes of matrix
arguments are batch axes, as in `jaxon.numpy.linalg`.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src.lax import lax, shape_ops
from jaxon._src.lax import linalg as lax_linalg
from jaxon._src.lax.control_flow import conditionals
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.numpy import (creation, lax_numpy, linear, misc, reductions, shape, sorting,
                              ufuncs, util)
from jaxon._src.numpy.vectorize import vectorize
from jaxon._src.numpy import linalg as jnp_linalg


def _inexact(fun_name: str, *args: Any) -> list[Any]:
  return [lax_numpy.asarray(x) for x in util.promote_args_inexact(
      f"jax.scipy.linalg.{fun_name}", *args)]


def _square(fun_name: str, a: Any) -> Any:
  a, = _inexact(fun_name, a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"jax.scipy.linalg.{fun_name} takes square matrices (…, n, n), got an "
                     f"array of shape {a.shape}.")
  return a


def _solve_shapes(fun_name: str, a: Any, b: Any) -> tuple[Any, Any, bool]:
  """`a` (…, n, n) and right-hand sides `b` as matrices (…, n, k) with broadcast batch axes;
  also whether `b` was a vector (…, n), whose result drops the added axis."""
  a, b = _inexact(fun_name, a, b)
  vector = b.ndim == a.ndim - 1
  if vector:
    b = b[..., None]
  if a.ndim < 2 or a.shape[-1] != a.shape[-2] or b.ndim < 2 or b.shape[-2] != a.shape[-1]:
    raise ValueError(f"jax.scipy.linalg.{fun_name}: expected a of shape (…, n, n) and b of "
                     f"shape (…, n) or (…, n, k), got {a.shape} and {b.shape}.")
  batch = lax.broadcast_shapes(a.shape[:-2], b.shape[:-2])
  return (shape.broadcast_to(a, batch + a.shape[-2:]),
          shape.broadcast_to(b, batch + b.shape[-2:]), vector)


def _trans_flags(trans: int | str) -> tuple[bool, bool]:
  """SciPy's `trans` (0/'N', 1/'T', 2/'C') as (transpose, conjugate)."""
  flags = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
           2: (True, True), "C": (True, True)}
  if trans not in flags:
    raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}.")
  return flags[trans]


# ----------------------------------------------------------------------------- Cholesky

def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
  """The Cholesky factor of Hermitian positive-definite matrices: upper U with a = Uᴴ U by
  default, lower L with a = L Lᴴ when `lower`.

  Example: `cholesky(jnp.array([[4., 2.], [2., 2.]]))` is `[[2., 1.], [0., 1.]]`.
  """
  l = _hermitian_cholesky(_square("cholesky", a), lower)
  return l if lower else _adjoint(l)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
  """(c, lower): the Cholesky factor to pass to `cho_solve` (the other triangle is zero)."""
  return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
  """Solves a x = b given `cho_factor(a)`.

  Example: `cho_solve(cho_factor(a), b)` equals `solve(a, b)` for positive-definite a.
  """
  c, lower = c_and_lower
  c, b, vector = _solve_shapes("cho_solve", c, b)
  # a = L Lᴴ (or Uᴴ U): solve with the factor that comes first, then with its adjoint.
  y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)
  x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                                  conjugate_a=lower)
  return x[..., 0] if vector else x


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True) -> Any:
  """Solves op(a) x = b for triangular a (only its `lower` or upper triangle is read).

  Args:
    a: triangular matrices (…, n, n).
    b: (…, n) or (…, n, k).
    trans: op(a) is a (0 or 'N'), aᵀ (1 or 'T') or aᴴ (2 or 'C').
    unit_diagonal: take a's diagonal to be ones.

  Example: `solve_triangular(jnp.array([[2., 0.], [1., 1.]]), jnp.array([2., 3.]),
  lower=True)` is `[1., 2.]`.
  """
  transpose_a, conjugate_a = _trans_flags(trans)
  a, b, vector = _solve_shapes("solve_triangular", a, b)
  x = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose_a,
                                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  return x[..., 0] if vector else x


# ----------------------------------------------------------------------------- LU

def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True,
       p_indices: bool = False) -> tuple[Any, ...]:
  """LU decomposition with partial pivoting, a = P L U.

  Args:
    a: matrices (…, m, n); k = min(m, n).
    permute_l: return (P L, U) instead of (P, L, U).
    p_indices: return P as row indices (a = L[P] U) rather than a permutation matrix.

  Returns:
    (P, L, U) with L (…, m, k) unit lower triangular and U (…, k, n) upper triangular, or
    (P L, U).

  Example: `lu(jnp.array([[1., 2.], [3., 4.]]))[0]` is `[[0., 1.], [1., 0.]]`.
  """
  a, = _inexact("lu", a)
  if a.ndim < 2:
    raise ValueError(f"jax.scipy.linalg.lu takes matrices (…, m, n), got shape {a.shape}.")
  packed, _, perm = lax_linalg.lu(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  l = ufuncs.add(creation.tril(packed[..., :, :k], -1), creation.eye(m, k, dtype=a.dtype))
  u = creation.triu(packed[..., :k, :])
  inverse_perm = sorting.argsort(perm, axis=-1)
  if permute_l:
    return linear.matmul(_rows_from(inverse_perm, a.dtype), l), u
  p = inverse_perm if p_indices else _rows_from(inverse_perm, a.dtype)
  return p, l, u


def _rows_from(indices: Any, dtype: Any) -> Any:
  """The matrix P with P @ x = x[indices]."""
  cols = lax.broadcasted_iota(np.int32, indices.shape + indices.shape[-1:], indices.ndim)
  return lax.convert_element_type(ufuncs.equal(indices[..., None], cols), dtype)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True
              ) -> tuple[Any, Any]:
  """(lu, piv): L and U packed in one matrix, and LAPACK's row interchanges (row i was
  swapped with row piv[i]), for `lu_solve`."""
  a, = _inexact("lu_factor", a)
  packed, pivots, _ = lax_linalg.lu(a)
  return packed, pivots


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
  """Solves a x = b (trans 0), aᵀ x = b (1) or aᴴ x = b (2) given `lu_factor(a)`."""
  packed, pivots = lu_and_piv
  if trans not in (0, 1, 2):
    raise ValueError(f"jax.scipy.linalg.lu_solve: trans must be 0, 1 or 2, got {trans!r}.")
  packed, b, vector = _solve_shapes("lu_solve", packed, b)
  perm = lax_linalg.lu_pivots_to_permutation(
      shape.broadcast_to(pivots, packed.shape[:-2] + pivots.shape[-1:]), packed.shape[-1])
  x = lax_linalg.lu_solve(packed, perm, b, trans)
  return x[..., 0] if vector else x


# ----------------------------------------------------------------------------- NumPy's, SciPy-style

def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
  """The inverse of square matrices."""
  return jnp_linalg.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
  """The determinant of square matrices."""
  return jnp_linalg.det(a)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
  """Solves a x = b. `assume_a="pos"` (positive definite) uses the Cholesky factor of the
  `lower` (or upper) triangle; "gen", "sym" and "her" use LU with partial pivoting.

  Example: `solve(jnp.array([[2., 0.], [0., 4.]]), jnp.array([2., 4.]))` is `[1., 1.]`.
  """
  if assume_a not in ("gen", "sym", "her", "pos"):
    raise ValueError(f"jax.scipy.linalg.solve: unknown assume_a={assume_a!r}; use 'gen', "
                     "'sym', 'her' or 'pos'.")
  if assume_a != "pos":
    return jnp_linalg.solve(a, b)
  a, b, vector = _solve_shapes("solve", a, b)
  x = cho_solve((_hermitian_cholesky(a, lower), True), b)
  return x[..., 0] if vector else x


def _hermitian_cholesky(a: Any, lower: bool) -> Any:
  """The lower Cholesky factor of `_hermitian(a, lower)`. That matrix is Hermitian as built,
  so the factorization does not symmetrize it again (three more full-size operations, with
  a transpose: batched `cho_factor` of f32[16,32,32] took 1.4 times JAX's time)."""
  return lax_linalg.cholesky(_hermitian(a, lower), symmetrize_input=False)


def _hermitian(a: Any, lower: bool) -> Any:
  """The Hermitian matrix with a's lower (or upper) triangle: SciPy reads only that one."""
  if lower:
    return ufuncs.add(creation.tril(a), _adjoint(creation.tril(a, -1)))
  return ufuncs.add(creation.triu(a), _adjoint(creation.triu(a, 1)))


def _adjoint(x: Any) -> Any:
  return ufuncs.conj(shape.matrix_transpose(x))


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True,
         subset_by_index: Any = None, subset_by_value: Any = None, driver: Any = None
         ) -> Any:
  """Eigenvalues (ascending) and eigenvectors of Hermitian matrices, or of the generalized
  problem a v = w b v for positive-definite b (type 1).

  Returns:
    w, or (w, v) with the eigenvectors as v's columns (b-orthonormal when b is given).

  Example: `eigh(jnp.array([[2., 1.], [1., 2.]]), eigvals_only=True)` is `[1., 3.]`.
  """
  if eigvals is not None or subset_by_index is not None or subset_by_value is not None:
    raise NotImplementedError("jax.scipy.linalg.eigh: selecting a subset of the eigenvalues "
                              "is not implemented.")
  a = _hermitian(_square("eigh", a), lower)
  if b is None:
    v, w = lax_linalg.eigh(a, symmetrize_input=False)  # Hermitian as built
  else:
    v, w = _generalized_eigh(a, b, lower, type)
  return w if eigvals_only else (w, v)


def _generalized_eigh(a: Any, b: Any, lower: bool, kind: int) -> tuple[Any, Any]:
  """With b = L Lᴴ, a v = w b v becomes (L⁻¹ a L⁻ᴴ) y = w y with v = L⁻ᴴ y."""
  if kind != 1:
    raise NotImplementedError(f"jax.scipy.linalg.eigh: generalized problems of type {kind} "
                              "are not implemented (type 1 is).")
  a, b = _inexact("eigh", a, b)
  l = _hermitian_cholesky(b, lower)
  half = lax_linalg.triangular_solve(l, a, left_side=True, lower=True)
  c = lax_linalg.triangular_solve(l, half, left_side=False, lower=True, transpose_a=True,
                                  conjugate_a=True)
  y, w = lax_linalg.eigh(c)
  v = lax_linalg.triangular_solve(l, y, left_side=True, lower=True, transpose_a=True,
                                  conjugate_a=True)
  return v, w


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        overwrite_a: bool = False, check_finite: bool = True, lapack_driver: str = "gesdd"
        ) -> Any:
  """Singular value decomposition a = U diag(s) Vh: (U, s, Vh), or s (descending)."""
  result = jnp_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
  return tuple(result) if compute_uv else result


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> tuple[Any, ...]:
  """QR decomposition a = Q R, or with `pivoting` a[…, P] = Q R (P chosen so that R's
  diagonal does not increase in magnitude).

  Args:
    mode: "full" gives Q (…, m, m) and R (…, m, n); "economic" Q (…, m, k) and R (…, k, n);
      "r" gives `(R,)` with the full R.
    pivoting: also return the int32 column permutation P (…, n): `(Q, R, P)`, or `(R, P)`
      for mode "r".
  """
  a, = _inexact("qr", a)
  if mode not in ("full", "economic", "r"):
    raise ValueError(f"jax.scipy.linalg.qr: unsupported mode {mode!r}; use 'full', "
                     "'economic' or 'r'.")
  q, r, *perm = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
  return (r, *perm) if mode == "r" else (q, r, *perm)


def block_diag(*arrs: Any) -> Any:
  """The block-diagonal matrix of the given blocks (scalars are 1×1, vectors 1×n rows).

  Example: `block_diag(jnp.ones((1, 1)), 2 * jnp.ones((2, 2)))` is 3×3.
  """
  if not arrs:
    return lax_numpy.zeros((1, 0))
  util.check_arraylike("jax.scipy.linalg.block_diag", *arrs)
  blocks = [lax_numpy.asarray(x) for x in util.promote_dtypes(*arrs)]
  blocks = [shape.reshape(x, (1, -1)) if x.ndim < 2 else x for x in blocks]
  if any(x.ndim != 2 for x in blocks):
    raise ValueError(f"jax.scipy.linalg.block_diag takes arrays of at most 2 dimensions, got "
                     f"shapes {[x.shape for x in blocks]}.")
  width = sum(x.shape[1] for x in blocks)
  rows, left = [], 0
  for x in blocks:
    right = width - left - x.shape[1]
    rows.append(shape_ops.pad(x, np.zeros((), x.dtype), [(0, 0, 0), (left, right, 0)]))
    left += x.shape[1]
  return shape.concatenate(rows, axis=0)


# ----------------------------------------------------------------------------- special matrices

def _vectors(fun_name: str, *xs: Any) -> list[Any]:
  """Arrays of one dtype with at least one axis: the last one is the vector, leading axes
  are batch axes (scalars are 1-vectors)."""
  util.check_arraylike(f"jax.scipy.linalg.{fun_name}", *xs)
  return [shape.atleast_1d(lax_numpy.asarray(x)) for x in util.promote_dtypes(*xs)]


def _broadcast_batch_vectors(*xs: Any) -> list[Any]:
  batch = lax.broadcast_shapes(*[x.shape[:-1] for x in xs])
  return [shape.broadcast_to(x, batch + x.shape[-1:]) for x in xs]


def toeplitz(c: Any, r: Any = None) -> Any:
  """The Toeplitz matrix with first column `c` and first row `r` (T[i, j] = c[i - j] below
  the diagonal, r[j - i] above; r[0] is ignored). Without `r`, r = conj(c): a Hermitian
  matrix for real c[0]. Leading axes of `c` and `r` are broadcast batch axes.

  Example: `toeplitz(jnp.array([1, 2, 3]), jnp.array([1, 4]))` is `[[1, 4], [2, 1], [3, 2]]`.
  """
  if r is None:
    c, = _vectors("toeplitz", c)
    r = ufuncs.conj(c)
  else:
    c, r = _vectors("toeplitz", c, r)
  m, n = c.shape[-1], r.shape[-1]
  c, r = _broadcast_batch_vectors(c, r)
  # c reversed then r[1:]: T[i, j] sits at (m - 1) - i + j.
  values = shape.concatenate([shape.flip(c, -1), r[..., 1:]], axis=-1)
  return values[..., (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]]


def hankel(c: Any, r: Any = None) -> Any:
  """The Hankel matrix with first column `c` and last row `r` (H[i, j] = c[i + j] while
  i + j < m, then r[i + j - m + 1]; r[0] is ignored). Without `r`, zeros below the
  anti-diagonal. Leading axes are batch axes (SciPy 1.19's behaviour; older SciPy ravels).

  Example: `hankel(jnp.array([1, 2, 3]))` is `[[1, 2, 3], [2, 3, 0], [3, 0, 0]]`.
  """
  if r is None:
    c, = _vectors("hankel", c)
    r = lax_numpy.zeros_like(c)
  else:
    c, r = _vectors("hankel", c, r)
  m, n = c.shape[-1], r.shape[-1]
  c, r = _broadcast_batch_vectors(c, r)
  values = shape.concatenate([c, r[..., 1:]], axis=-1)
  return values[..., np.arange(m)[:, None] + np.arange(n)[None, :]]


def circulant(c: Any) -> Any:
  """The circulant matrix with first column `c`: C[i, j] = c[(i - j) mod n]. Leading axes
  are batch axes.

  Example: `circulant(jnp.array([1, 2, 3]))` is `[[1, 3, 2], [2, 1, 3], [3, 2, 1]]`.
  """
  c, = _vectors("circulant", c)
  n = c.shape[-1]
  return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def companion(a: Any) -> Any:
  """The companion matrix of the polynomial with coefficients `a` (highest degree first,
  a[0] != 0): first row -a[1:] / a[0], ones on the subdiagonal. Its eigenvalues are the
  polynomial's roots. Leading axes are batch axes.

  Example: `companion(jnp.array([1., -3., 2.]))` is `[[3., -2.], [1., 0.]]`.
  """
  a, = _inexact("companion", a)
  if a.ndim < 1 or a.shape[-1] < 2:
    raise ValueError("jax.scipy.linalg.companion: the length of a must be at least 2, got "
                     f"shape {a.shape}.")
  n = a.shape[-1] - 1
  first_row = -a[..., 1:] / a[..., :1]
  below = shape.broadcast_to(creation.eye(n - 1, n, dtype=a.dtype), a.shape[:-1] + (n - 1, n))
  return shape.concatenate([first_row[..., None, :], below], axis=-2)


def hilbert(n: int) -> Any:
  """The n×n Hilbert matrix, H[i, j] = 1 / (i + j + 1), in the default float dtype.

  Example: `hilbert(2)` is `[[1., .5], [.5, 1/3]]`.
  """
  i = np.arange(n)
  return lax_numpy.asarray(1.0 / (i[:, None] + i[None, :] + 1.0),
                           dtype=lax_numpy.zeros(()).dtype)


def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None) -> tuple[Any, Any]:
  """The polar decomposition: a = u p (side "right") or a = p u (side "left"), u with
  orthonormal columns (rows for wide a) and p Hermitian positive semidefinite.

  Computed from the SVD a = U S Vh as u = U Vh, p = Vh^H S Vh (or U S U^H) whatever the
  `method` ("qdwh" or "svd"); `eps` and `max_iterations`, which tune QDWH, are ignored.

  Example: `polar(jnp.array([[2., 0.], [0., -3.]]))` is `([[1, 0], [0, -1]], [[2, 0], [0, 3]])`.
  """
  if side not in ("right", "left"):
    raise ValueError(f"jax.scipy.linalg.polar: side must be 'right' or 'left', got {side!r}.")
  if method not in ("qdwh", "svd"):
    raise ValueError(f"jax.scipy.linalg.polar: unknown method {method!r}.")
  a, = _inexact("polar", a)
  u_svd, s, vh = jnp_linalg.svd(a, full_matrices=False)
  unitary = u_svd @ vh
  factor = vh if side == "right" else _adjoint(u_svd)
  s = s.astype(a.dtype)[..., :, None]
  return unitary, _adjoint(factor) @ (s * factor)


# ----------------------------------------------------------------------------- expm

# Padé coefficients b_0 … b_m of the [m/m] approximant of exp (Higham 2005, "The scaling and
# squaring method for the matrix exponential revisited"), and the 1-norms up to which each
# degree is accurate to the unit roundoff of float64 and float32.
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
_THETAS = {  # precision in bits: (degrees, largest norm for each degree but the last,
    #                               norm the matrix is scaled down to)
    64: ((3, 5, 7, 9, 13), (1.495585217958292e-2, 2.539398330063230e-1,
                           9.504178996162932e-1, 2.097847961257068e0), 5.371920351148152),
    32: ((3, 5, 7), (4.258730016922831e-1, 1.880152677804762e0), 3.925724783138660),
}


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
  """The matrix exponential, by Padé approximation with scaling and squaring (Higham 2005).

  A is scaled by 2⁻ˢ until its 1-norm is small enough for the Padé degree the norm selects
  (`lax.switch`), and the result squared s times (a `scan` of `cond`s, so only the needed
  squarings run). When more than `max_squarings` squarings would be needed the result is
  NaN. Batches of matrices are vectorized, so each picks its own degree.

  Example: `expm(jnp.zeros((2, 2)))` is the identity.
  """
  A = _square("expm", A)
  if A.ndim > 2:
    return vectorize(functools.partial(expm, upper_triangular=upper_triangular,
                                       max_squarings=max_squarings),
                     signature="(n,n)->(n,n)")(A)
  degrees, thetas, max_norm = _THETAS[np.finfo(A.dtype).bits]
  norm1 = reductions.max(reductions.sum(ufuncs.abs(A), axis=0))
  squarings = ufuncs.maximum(0, ufuncs.floor(ufuncs.log2(norm1 / max_norm)))
  A = A / ufuncs.power(2., squarings.astype(A.dtype))
  degree = misc.digitize(norm1, np.asarray(thetas, norm1.dtype))
  u, v = conditionals.switch(degree, [functools.partial(_pade, m) for m in degrees], A)
  p, q = u + v, v - u

  def square_all(p: Any, q: Any) -> Any:
    r = solve_triangular(q, p) if upper_triangular else jnp_linalg.solve(q, p)
    def square(r: Any, i: Any) -> tuple[Any, None]:
      return conditionals.cond(i < squarings, lambda r: linear.matmul(r, r), lambda r: r,
                               r), None
    return scan(square, r, np.arange(max_squarings, dtype=squarings.dtype))[0]
  return conditionals.cond(squarings > max_squarings,
                           lambda p, q: lax_numpy.full_like(p, np.nan), square_all, p, q)


def _pade(m: int, A: Any) -> tuple[Any, Any]:
  """(U, V) of the [m/m] approximant (V - U)⁻¹ (V + U), U holding the odd powers of A and
  V the even ones; sums run from the highest power down, as JAX's do."""
  b = _PADE[m]
  evens = [creation.eye(A.shape[-1], dtype=A.dtype), linear.matmul(A, A)]  # A⁰, A², A⁴, …
  while len(evens) <= (m // 2 if m < 13 else 3):
    evens.append(linear.matmul(evens[-1], evens[1]))

  def combine(coefficients: Sequence[float], powers: Sequence[Any], *first: Any) -> Any:
    terms = [c * x for c, x in zip(coefficients, powers)][::-1]
    return functools.reduce(ufuncs.add, [*first, *terms])

  if m < 13:
    return linear.matmul(A, combine(b[1::2], evens)), combine(b[0::2], evens)
  # degree 13 groups powers as Higham does, so that A⁸ … A¹² are never formed
  a2, a4, a6 = evens[1:]
  u = combine(b[1:9:2], evens, linear.matmul(a6, combine(b[9::2], [a2, a4, a6])))
  v = combine(b[0:8:2], evens, linear.matmul(a6, combine(b[8::2], [a2, a4, a6])))
  return linear.matmul(A, u), v
