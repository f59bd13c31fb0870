"""Linear-algebra primitives that expose LAPACK's intermediate forms: the compact Householder
QR (`geqrf`, and `geqp3` with column pivoting) and the product of its reflectors
(`householder_product`), the Hessenberg and tridiagonal reductions, the Schur decomposition,
and the tridiagonal solve.

They follow `jaxon._src.lax.linalg` (whose helpers they use): leading dimensions are batch
dimensions, each lowers to one of jaxlib's LAPACK custom calls (CPU only), and a kernel that
reports failure (`info != 0`) gives NaN results, as in JAX. Only `tridiagonal_solve` is
differentiable, as in JAX: the others return representations (reflectors, Schur vectors)
that are not unique, so JAX defines no derivative for them either.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, shape_ops, slicing, utils
from jaxon._src.lax.linalg_helpers import (_batch_rule, _dtype, _emit, _info_aval, _lapack_call,
                                           _matrix_aval, _nan_unless_ok, _real_dtype, _shape)


def _register(prim: core.Primitive, lowering: Callable) -> None:
  """These primitives lower to LAPACK on the CPU and batch by moving the batch to the front."""
  mlir.register_lowering(prim, lowering, platform="cpu")
  batching.primitive_batchers[prim] = _batch_rule(prim)


def _checked(ctx: mlir.LoweringRuleContext, info: ir.Value, *outs: ir.Value) -> list[ir.Value]:
  """`outs` (of `ctx.avals_out`, the first a matrix), NaN where the kernel's `info` is
  nonzero."""
  info_aval = _info_aval(ctx.avals_out[0].shape)
  return _emit(ctx, _nan_unless_ok, [info_aval, *ctx.avals_out], info, *outs)


# ============================================================================= geqrf

def geqrf(a: Any) -> tuple[Any, Any]:
  """LAPACK's compact QR decomposition, for callers that want the reflectors themselves
  (`jnp.linalg.qr(mode="raw")`, or applying Q without forming it).

  Args:
    a: matrices (…, m, n), float32/64 or complex64/128.

  Returns:
    (r, taus): R on and above the diagonal of r (…, m, n), the Householder vectors below it
    (their leading 1 implied), and the reflectors' scales taus (…, min(m, n)):
    Q = H₀ H₁ …, Hᵢ = I - taus[i] vᵢ vᵢᴴ.

  Example: `householder_product(*geqrf(a))` is the Q of `qr(a, full_matrices=False)` (m ≥ n).
  """
  r, taus = geqrf_p.bind(a)
  return r, taus


def _geqrf_abstract_eval(a: ShapedArray) -> list[ShapedArray]:
  *batch, m, n = _matrix_aval("geqrf", a)
  return [a, ShapedArray((*batch, min(m, n)), a.dtype)]


geqrf_p = utils.standard_multi_result_primitive("geqrf", _geqrf_abstract_eval)


def _geqrf_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value) -> list[ir.Value]:
  """LAPACK rejects empty matrices: those have nothing to factor and no reflectors."""
  a_aval, taus_aval = ctx.avals_out
  if 0 in a_aval.shape[-2:]:
    return [a, *_emit(ctx, lambda: [lax.full(taus_aval.shape, 0, taus_aval.dtype)], [])]
  return _lapack_call("geqrf", a_aval.dtype, [a], [a_aval], ctx.avals_out, in_place=0)


_register(geqrf_p, _geqrf_lowering)


def geqp3(a: Any, jpvt: Any) -> tuple[Any, Any, Any]:
  """LAPACK's compact QR decomposition with column pivoting, a[…, p] = Q R, the columns
  chosen greedily so that R's diagonal does not increase in magnitude.

  Args:
    a: matrices (…, m, n), float32/64 or complex64/128.
    jpvt: int32 (…, n): a nonzero entry j moves column j to the front before the free
      columns (0) are pivoted; all zeros leaves every column free.

  Returns:
    (r, jpvt, taus) as `geqrf`'s (r, taus), with jpvt the permutation p, 1-based as LAPACK
    gives it (`qr(a, pivoting=True)` returns it 0-based).
  """
  r, jpvt, taus = geqp3_p.bind(a, jpvt)
  return r, jpvt, taus


def _geqp3_abstract_eval(a: ShapedArray, jpvt: ShapedArray) -> list[ShapedArray]:
  *batch, m, n = _matrix_aval("geqp3", a)
  utils.check_dtypes("geqp3", (np.int32,), jpvt)
  if jpvt.shape != (*batch, n):
    raise ValueError(f"geqp3 needs jpvt of shape {(*batch, n)} for a of type "
                     f"{a.str_short()}, got {jpvt.str_short()}.")
  return [a, jpvt, ShapedArray((*batch, min(m, n)), a.dtype)]


geqp3_p = utils.standard_multi_result_primitive("geqp3", _geqp3_abstract_eval)


def _geqp3_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, jpvt: ir.Value
                    ) -> list[ir.Value]:
  """An empty matrix keeps its columns in order (LAPACK rejects it)."""
  a_aval, jpvt_aval, taus_aval = ctx.avals_out
  if 0 in a_aval.shape[-2:]:
    in_order = lambda: [lax.add(lax.broadcasted_iota(np.int32, jpvt_aval.shape,
                                                     jpvt_aval.ndim - 1), np.int32(1)),
                        lax.full(taus_aval.shape, 0, taus_aval.dtype)]
    return [a, *_emit(ctx, in_order, [])]
  return _lapack_call("geqp3", a_aval.dtype, [a, jpvt], ctx.avals_in, ctx.avals_out,
                      in_place=0)


_register(geqp3_p, _geqp3_lowering)


# ============================================================================= householder_product

def householder_product(a: Any, taus: Any) -> Any:
  """The matrix with orthonormal columns H₀ H₁ … H_{k-1} (first n columns), from the
  reflectors that `geqrf`, `hessenberg` or `tridiagonal` leave below a diagonal.

  Args:
    a: (…, m, n) with m ≥ n, reflector i in column i below the diagonal.
    taus: (…, k) with k ≤ n, the reflectors' scales.

  Example: `householder_product(*geqrf(a))` is the Q of `qr(a, full_matrices=False)`.
  """
  return householder_product_p.bind(a, taus)


def _householder_product_shape(a: ShapedArray, taus: ShapedArray, **_: Any) -> tuple[int, ...]:
  *batch, m, n = _matrix_aval("householder_product", a)
  if m < n:
    raise ValueError("householder_product needs a with at least as many rows as columns, got "
                     f"{a.str_short()}.")
  if taus.shape[:-1] != tuple(batch) or taus.ndim != a.ndim - 1 or taus.shape[-1] > n:
    raise ValueError(f"householder_product needs taus of shape (…, k) with k ≤ {n} and a's "
                     f"batch dimensions, got a of type {a.str_short()} and taus of type "
                     f"{taus.str_short()}.")
  utils.check_same_dtypes("householder_product", a, taus)
  return a.shape


householder_product_p = utils.standard_primitive(
    "householder_product", _householder_product_shape, utils.input_dtype,
    lambda *avals: False)


def _householder_product_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, taus: ir.Value
                                  ) -> list[ir.Value]:
  a_aval, taus_aval = ctx.avals_in
  if 0 in a_aval.shape[-2:]:
    return [a]
  return _lapack_call("orgqr", a_aval.dtype, [a, taus], [a_aval, taus_aval], ctx.avals_out,
                      in_place=0)


_register(householder_product_p, _householder_product_lowering)


# ============================================================================= hessenberg

def hessenberg(a: Any) -> tuple[Any, Any]:
  """Reduction to upper Hessenberg form a = Q H Qᴴ, the first step of an eigenvalue or
  Schur computation.

  Returns:
    (h, taus): H on and above the first subdiagonal of h (…, n, n), the reflectors below it
    (Q = H₁ … H_{n-1}, taus (…, n - 1)).
  """
  h, taus = hessenberg_p.bind(a)
  return h, taus


def _hessenberg_abstract_eval(a: ShapedArray) -> list[ShapedArray]:
  *batch, n, _ = _matrix_aval("hessenberg", a, square=True)
  return [a, ShapedArray((*batch, max(n - 1, 0)), a.dtype)]


hessenberg_p = utils.standard_multi_result_primitive("hessenberg", _hessenberg_abstract_eval)


def _hessenberg_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value) -> list[ir.Value]:
  """gehrd reduces rows and columns low…high (1-based): all of them."""
  a_aval = ctx.avals_in[0]
  h, taus, info = _lapack_call("gehrd", a_aval.dtype, [a], [a_aval],
                               [*ctx.avals_out, _info_aval(a_aval.shape)],
                               low=1, high=a_aval.shape[-1])
  return _checked(ctx, info, h, taus)


_register(hessenberg_p, _hessenberg_lowering)


# ============================================================================= tridiagonal

def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
  """Reduction of Hermitian matrices to real symmetric tridiagonal form a = Q T Qᴴ (only the
  `lower` or upper triangle is read), the first step of a Hermitian eigensolver.

  Returns:
    (a, d, e, taus): T's diagonal d (…, n) and off-diagonal e (…, n - 1), both real; `a`
    holds them too, with the reflectors beyond the off-diagonal, and taus (…, n - 1) their
    scales.
  """
  arr, d, e, taus = tridiagonal_p.bind(a, lower=bool(lower))
  return arr, d, e, taus


def _tridiagonal_abstract_eval(a: ShapedArray, *, lower: bool) -> list[ShapedArray]:
  *batch, n, _ = _matrix_aval("tridiagonal", a, square=True)
  if n == 0:
    raise ValueError(f"tridiagonal needs a non-empty square matrix, got {a.str_short()}.")
  real = _real_dtype(a.dtype)
  return [a, ShapedArray((*batch, n), real), ShapedArray((*batch, n - 1), real),
          ShapedArray((*batch, n - 1), a.dtype)]


tridiagonal_p = utils.standard_multi_result_primitive("tridiagonal", _tridiagonal_abstract_eval)


def _tridiagonal_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, *, lower: bool
                          ) -> list[ir.Value]:
  a_aval = ctx.avals_in[0]
  *outs, info = _lapack_call("sytrd", a_aval.dtype, [a], [a_aval],
                             [*ctx.avals_out, _info_aval(a_aval.shape)],
                             uplo="L" if lower else "U")
  return _checked(ctx, info, *outs)


_register(tridiagonal_p, _tridiagonal_lowering)


# ============================================================================= schur

def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Callable[..., Any] | None = None) -> Any:
  """Schur decomposition x = Q T Qᴴ, Q unitary: the stable route to matrix functions
  (`sqrtm`, `funm`) of non-normal matrices.

  Args:
    x: square matrices (…, n, n).
    compute_schur_vectors: also return Q.
    sort_eig_vals, select_callable: LAPACK's eigenvalue ordering; not implemented (as in JAX).

  Returns:
    (T, Q), or T: for real x, T is quasi-upper-triangular (2×2 diagonal blocks hold complex
    conjugate eigenvalue pairs); for complex x it is upper triangular.
  """
  if sort_eig_vals:
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
  outs = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors))
  return outs if compute_schur_vectors else outs[0]


def _schur_abstract_eval(x: ShapedArray, *, compute_schur_vectors: bool) -> list[ShapedArray]:
  _matrix_aval("schur", x, square=True)
  return [x] * (1 + compute_schur_vectors)


schur_p = utils.standard_multi_result_primitive("schur", _schur_abstract_eval)


def _schur_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, compute_schur_vectors: bool
                    ) -> list[ir.Value]:
  """gees also returns the eigenvalues (real and imaginary parts apart for real x) and the
  number of selected ones, which are dropped."""
  x_aval = ctx.avals_in[0]
  w_aval = ShapedArray(x_aval.shape[:-1], x_aval.dtype)
  info_aval = _info_aval(x_aval.shape)
  w_parts = [w_aval] * (1 if dtypes.is_complex(x_aval.dtype) else 2)
  t, q, *_, info = _lapack_call("gees", x_aval.dtype, [x], [x_aval],
                                [x_aval, x_aval, *w_parts, info_aval, info_aval],
                                mode="V" if compute_schur_vectors else "N", sort="N")
  return _checked(ctx, info, *[t, q][:len(ctx.avals_out)])


_register(schur_p, _schur_lowering)


# ============================================================================= tridiagonal_solve

def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False
                      ) -> Any:
  """Solves A x = b for tridiagonal A in O(n) (LAPACK gtsv, partial pivoting).

  Args:
    dl, d, du: (…, m) the sub-, main and superdiagonal: dl[i] = A[i, i-1] (dl[0] = 0),
      d[i] = A[i, i], du[i] = A[i, i+1] (du[m-1] = 0).
    b: right-hand sides (…, m, k).
    perturb_singular: perturbing tiny pivots is not implemented.

  Example: `tridiagonal_solve(dl, d, du, b)` equals `solve(A, b)` for the A they describe.
  """
  if perturb_singular:
    raise NotImplementedError("tridiagonal_solve(perturb_singular=True) is not implemented "
                              "in jaxon.")
  return tridiagonal_solve_p.bind(dl, d, du, b)


def _tridiagonal_solve_shape(dl: ShapedArray, d: ShapedArray, du: ShapedArray,
                             b: ShapedArray) -> tuple[int, ...]:
  utils.check_dtypes("tridiagonal_solve", (np.floating, np.complexfloating), dl, d, du, b)
  utils.check_same_dtypes("tridiagonal_solve", dl, d, du, b)
  if dl.shape != d.shape or du.shape != d.shape:
    raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                    f"shape, got {dl.str_short()}, {d.str_short()} and {du.str_short()}.")
  if b.shape[:-1] != d.shape:
    raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b equal "
                    f"the dimensions of the diagonal arguments, got b of type {b.str_short()} "
                    f"and diagonals of type {d.str_short()}.")
  return b.shape


tridiagonal_solve_p = utils.standard_primitive(
    "tridiagonal_solve", _tridiagonal_solve_shape, lambda *avals: avals[-1].dtype,
    lambda *avals: False)


def _tridiagonal_solve_lowering(ctx: mlir.LoweringRuleContext, *operands: ir.Value
                                ) -> list[ir.Value]:
  """gtsv overwrites the diagonals with its factorization and b with the solution."""
  b_aval = ctx.avals_in[-1]
  *_, x, info = _lapack_call("gtsv", b_aval.dtype, operands, ctx.avals_in,
                             [*ctx.avals_in, _info_aval(b_aval.shape)])
  return _checked(ctx, info, x)


def _tridiagonal_matmul(dl: Any, d: Any, du: Any, x: Any) -> Any:
  """A x for the tridiagonal A of (dl, d, du), with x (…, m, k)."""
  rows = len(_shape(x)) - 2
  col = lambda v: lax.broadcast_in_dim(v, _shape(x), tuple(range(rows + 1)))
  zero_row = lax.full((*_shape(x)[:-2], 1, _shape(x)[-1]), 0, _dtype(x))
  m = _shape(x)[-2]
  above = shape_ops.concatenate([zero_row, slicing.slice_in_dim(x, 0, m - 1, axis=rows)], rows)
  below = shape_ops.concatenate([slicing.slice_in_dim(x, 1, m, axis=rows), zero_row], rows)
  return lax.add(lax.mul(col(d), x), lax.add(lax.mul(col(dl), above), lax.mul(col(du), below)))


def _tridiagonal_solve_jvp(primals: Sequence[Any], tangents: Sequence[Any]
                           ) -> tuple[Any, Any]:
  """x = A⁻¹ b is linear in b; for the diagonals, dx = A⁻¹ (db - dA x)."""
  *diags, b = primals
  *diag_dots, db = tangents
  x = tridiagonal_solve_p.bind(*diags, b)
  rhs = db
  if any(type(t) is not ad.Zero for t in diag_dots):
    da_x = _tridiagonal_matmul(*[ad.instantiate_zeros(t) for t in diag_dots], x)
    rhs = ad.add_tangents(db, lax.neg(da_x))
  if type(rhs) is ad.Zero:
    return x, rhs
  return x, tridiagonal_solve_p.bind(*diags, rhs)


def _tridiagonal_solve_transpose(ct: Any, dl: Any, d: Any, du: Any, b: Any) -> list[Any]:
  """Aᵀ is tridiagonal with the off-diagonals swapped (and shifted by one entry)."""
  if any(ad.is_undefined_primal(v) for v in (dl, d, du)):
    raise NotImplementedError("tridiagonal_solve is not linear in its diagonals")
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  last = len(_shape(d)) - 1
  m = _shape(d)[-1]
  zero = lax.full((*_shape(d)[:-1], 1), 0, _dtype(d))
  dl_t = shape_ops.concatenate([zero, slicing.slice_in_dim(du, 0, m - 1, axis=last)], last)
  du_t = shape_ops.concatenate([slicing.slice_in_dim(dl, 1, m, axis=last), zero], last)
  return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct)]


_register(tridiagonal_solve_p, _tridiagonal_solve_lowering)
ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose
