"""The factorizations: Cholesky (LAPACK's potrf on the CPU, StableHLO's native op elsewhere),
LU with partial pivoting (with `lu_pivots_to_permutation` and `lu_solve`) and QR (LAPACK's
getrf, geqrf and orgqr).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import gather_scatter, lax, reductions, shape_ops, slicing, sorting, utils
from jaxon._src.lax.linalg_helpers import (_H, _batch_rule, _const, _diagonal_mask, _dtype,
                                           _emit, _empty_results, _identity, _info_aval,
                                           _iotas, _ir_tril, _is_complex, _is_empty,
                                           _lapack_call, _matmul, _matrix_aval, _nan_unless_ok,
                                           _shape, _T, _tril, _triu, _where_mask,
                                           _zero_tangent)
from jaxon._src.lax.linalg_triangular import triangular_solve


# ============================================================================= cholesky

def symmetrize(x: Any) -> Any:
  """(x + xᴴ) / 2: the Hermitian part, so only a Hermitian input reaches a factorization
  (and derivatives stay Hermitian)."""
  return lax.div(lax.add(x, _H(x)), _const(x, 2))


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
  """The lower-triangular Cholesky factor L of Hermitian positive-definite matrices, x = L Lᴴ.

  Args:
    x: matrices of shape (…, n, n), float32/64 or complex64/128.
    symmetrize_input: factor (x + xᴴ) / 2, so the derivative sees a Hermitian input.

  Returns:
    L, zero above the diagonal; NaN on and below it where x is not positive definite.

  Example: `cholesky(jnp.array([[4., 2.], [2., 2.]]))` is `[[2., 0.], [1., 1.]]`.
  """
  _matrix_aval("cholesky", core.get_aval(x), square=True)
  if symmetrize_input:
    x = symmetrize(x)
  return cholesky_p.bind(x)


cholesky_p = utils.standard_primitive(
    "cholesky", lambda x: _matrix_aval("cholesky", x, square=True), utils.input_dtype,
    lambda x: False)


def _cholesky_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value) -> list[ir.Value]:
  """XLA's Cholesky leaves the upper triangle undefined (and makes every entry NaN when the
  matrix is not positive definite): the result keeps the lower triangle."""
  return [_ir_tril(ctx.avals_in[0], hlo.cholesky(x, lower=True))]


def _cholesky_cpu_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value) -> list[ir.Value]:
  """potrf, as JAX lowers it on the CPU: XLA expands its own op into loops (7x slower at
  8x8, 14x at 64x64). Where potrf fails the whole matrix is NaN before the upper triangle
  is zeroed, as with XLA's op. Empty matrices, which LAPACK rejects, take the native op."""
  aval = ctx.avals_in[0]
  if _is_empty(aval):
    return _cholesky_lowering(ctx, x)
  info_aval = _info_aval(aval.shape)
  factor, info = _lapack_call("potrf", aval.dtype, [x], [aval], [aval, info_aval],
                              in_place=0, uplo="L")
  factor, = _emit(ctx, _nan_unless_ok, [info_aval, aval], info, factor)
  return [_ir_tril(aval, factor)]


def _cholesky_tangent(l: Any, dx: Any) -> Any:
  """dL = L Φ(L⁻¹ dA L⁻ᴴ) for A = L Lᴴ, Φ taking the lower triangle with a halved diagonal
  (Murray 2016, "Differentiation of the Cholesky decomposition", arXiv:1602.07527)."""
  dx_linv_h = triangular_solve(l, dx, left_side=False, lower=True, transpose_a=True,
                               conjugate_a=True)
  inner = triangular_solve(l, dx_linv_h, left_side=True, lower=True)
  lower = _tril(inner)
  phi = lax.select(_diagonal_mask(_shape(inner)), lax.mul(lower, _const(inner, 0.5)), lower)
  return _matmul(l, phi)


def _cholesky_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
  (x,), (dx,) = primals, tangents
  l = cholesky_p.bind(x)
  return l, _cholesky_tangent(l, dx)


mlir.register_lowering(cholesky_p, _cholesky_lowering)
mlir.register_lowering(cholesky_p, _cholesky_cpu_lowering, platform="cpu")
ad.primitive_jvps[cholesky_p] = _cholesky_jvp
batching.primitive_batchers[cholesky_p] = _batch_rule(cholesky_p)


# ============================================================================= LU

def lu(x: Any) -> tuple[Any, Any, Any]:
  """LU decomposition with partial pivoting: x[perm] = L U.

  Args:
    x: matrices (…, m, n).

  Returns:
    (lu, pivots, permutation): `lu` (…, m, n) holds U on and above its diagonal and the
    strictly lower part of the unit-diagonal L below; `pivots` (…, min(m, n)) int32 says that
    row i was swapped with row pivots[i] at step i (LAPACK's ipiv, from 0); `permutation`
    (…, m) int32 is those swaps applied to range(m).

  Example: `lu(jnp.array([[1., 2.], [3., 4.]]))[2]` is `[1, 0]`.
  """
  return tuple(lu_p.bind(x))


def _lu_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
  *batch, m, n = _matrix_aval("lu", x)
  int32 = np.dtype(np.int32)
  return [ShapedArray(x.shape, x.dtype), ShapedArray((*batch, min(m, n)), int32),
          ShapedArray((*batch, m), int32)]


lu_p = utils.standard_multi_result_primitive("lu", _lu_abstract_eval)


def _lu_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value) -> list[ir.Value]:
  x_aval = ctx.avals_in[0]
  _, pivots_aval, perm_aval = ctx.avals_out
  if _is_empty(x_aval):
    start = hlo.iota(mlir.aval_to_ir_type(perm_aval), perm_aval.ndim - 1)
    return [x, mlir.full_like_aval(0, pivots_aval), start]
  lu_, ipiv, _ = _lapack_call("getrf", x_aval.dtype, [x], [x_aval],
                              [x_aval, pivots_aval, _info_aval(x_aval.shape)], in_place=0)
  pivots = hlo.subtract(ipiv, mlir.full_like_aval(1, pivots_aval))  # LAPACK counts from 1
  perm, = _pivots_to_permutation_lowering(
      ctx.replace(avals_in=[pivots_aval], avals_out=[perm_aval]), pivots,
      permutation_size=perm_aval.shape[-1])
  return [lu_, pivots, perm]


def _lu_factors(lu_: Any) -> tuple[Any, Any]:
  """L (…, m, m) and U (…, n, n) from a packed (…, m, n) LU, completed to square matrices by
  identity blocks so that both are invertible."""
  *batch, m, n = _shape(lu_)
  k = min(m, n)
  zero = _const(lu_, 0)
  nb = len(batch)
  l_cols = slicing.slice_in_dim(_tril(lu_, -1), 0, k, axis=nb + 1)
  l = shape_ops.pad(l_cols, zero, [(0, 0, 0)] * (nb + 1) + [(0, m - k, 0)])
  l = lax.add(l, _identity((*batch, m, m), _dtype(lu_)))
  u_rows = slicing.slice_in_dim(_triu(lu_), 0, k, axis=nb)
  u = shape_ops.pad(u_rows, zero, [(0, 0, 0)] * nb + [(0, n - k, 0), (0, 0, 0)])
  if k == n:
    return l, u
  rows, cols = _iotas((*batch, n, n))
  completion = lax.convert_element_type(  # ones on the diagonal from row k on
      lax.bitwise_and(lax.eq(rows, cols), lax.ge(rows, np.array(k, np.int32))), _dtype(lu_))
  return l, lax.add(u, completion)


def _permute_rows(x: Any, perm: Any) -> Any:
  """x[..., perm, :] (row i of the result is row perm[i] of x), as a gather: exact for every
  value, where a product with a permutation matrix turns an infinity into NaNs in other
  rows and -0. into 0."""
  *batch, m, k = _shape(x)
  if m == 0:
    return x
  nb = len(batch)
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=(nb + 1,), collapsed_slice_dims=(nb,), start_index_map=(nb,),
      operand_batching_dims=tuple(range(nb)), start_indices_batching_dims=tuple(range(nb)))
  return gather_scatter.gather(x, shape_ops.expand_dims(perm, (nb + 1,)), dnums,
                               (*[1] * nb, 1, k), unique_indices=True)


def _inverse_permutation(perm: Any) -> Any:
  n = len(_shape(perm))
  iota = lax.broadcasted_iota(_dtype(perm), _shape(perm), n - 1)
  return sorting.sort_key_val(perm, iota, dimension=n - 1)[1]


def _lu_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
  """With PA = LU: L⁻¹ P dA U⁻¹ = L⁻¹dL + dU U⁻¹, strictly lower plus upper, so
  dL = L tril₋₁(L⁻¹ P dA U⁻¹) and dU = triu(L⁻¹ P dA U⁻¹) U (de Hoog, Anderssen & Lukas 2011,
  "Differentiation of matrix functionals using triangular factorization")."""
  (x,), (dx,) = primals, tangents
  lu_, pivots, perm = lu_p.bind(x)
  l, u = _lu_factors(lu_)
  pdx = _permute_rows(dx, perm)
  l_inv_pdx = triangular_solve(l, pdx, left_side=True, lower=True, unit_diagonal=True)
  inner = triangular_solve(u, l_inv_pdx, left_side=False, lower=False)
  dl = _matmul(l, _tril(inner, -1))
  du = _matmul(_triu(inner), u)
  return [lu_, pivots, perm], [lax.add(dl, du), _zero_tangent(pivots), _zero_tangent(perm)]


mlir.register_lowering(lu_p, _lu_lowering, platform="cpu")
ad.primitive_jvps[lu_p] = _lu_jvp
batching.primitive_batchers[lu_p] = _batch_rule(lu_p)


# --- the row permutation LAPACK's pivots describe

def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
  """The permutation of range(permutation_size) that applying the row swaps `pivots` (…, k)
  in order produces, as `lu` returns it.

  Example: `lu_pivots_to_permutation(jnp.array([2, 2], jnp.int32), 3)` is `[2, 0, 1]`.
  """
  return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def _pivots_to_permutation_shape_rule(pivots: ShapedArray, *, permutation_size: int
                                      ) -> tuple[int, ...]:
  utils.check_dtypes("lu_pivots_to_permutation", (np.int32,), pivots)
  if pivots.ndim < 1 or pivots.shape[-1] > permutation_size:
    raise TypeError(f"lu_pivots_to_permutation needs pivots (…, k) with k <= "
                    f"permutation_size={permutation_size}, got {pivots.str_short()}.")
  return (*pivots.shape[:-1], permutation_size)


lu_pivots_to_permutation_p = utils.standard_primitive(
    "lu_pivots_to_permutation", _pivots_to_permutation_shape_rule, utils.input_dtype,
    lambda *avals, **params: False)


def _swap_step(i: Any, perm: Any, pivots: Any) -> list[Any]:
  """Loop body: swaps perm[…, i] with perm[…, pivots[…, i]]."""
  axis = len(_shape(perm)) - 1
  j = slicing.dynamic_slice_in_dim(pivots, i, 1, axis)
  perm_i = slicing.dynamic_slice_in_dim(perm, i, 1, axis)
  at_j = lax.eq(lax.broadcasted_iota(np.int32, _shape(perm), axis),
                lax.broadcast_in_dim(j, _shape(perm), tuple(range(axis + 1))))
  perm_j = reductions.reduce_sum(lax.select(at_j, perm, lax.full_like(perm, 0)), [axis])
  perm = lax.select(at_j, lax.broadcast_in_dim(perm_i, _shape(perm), tuple(range(axis + 1))),
                    perm)
  perm_j = shape_ops.expand_dims(perm_j, (axis,))
  return [lax.add(i, np.int32(1)), slicing.dynamic_update_slice_in_dim(perm, perm_j, i, axis),
          pivots]


def _pivots_to_permutation_lowering(ctx: mlir.LoweringRuleContext, pivots: ir.Value, *,
                                    permutation_size: int) -> list[ir.Value]:
  """A `stablehlo.while` over the k swaps (the program's size does not grow with k)."""
  pivots_aval, perm_aval = ctx.avals_in[0], ctx.avals_out[0]
  counter_aval = ShapedArray((), np.dtype(np.int32))
  avals = [counter_aval, perm_aval, pivots_aval]
  types = [mlir.aval_to_ir_type(a) for a in avals]
  start = hlo.iota(types[1], perm_aval.ndim - 1)
  if 0 in pivots_aval.shape:
    return [start]
  loop = hlo.WhileOp(types, [mlir.ir_constant(np.int32(0)), start, pivots])
  cond = loop.cond.blocks.append(*types)
  with ir.InsertionPoint(cond):
    k = mlir.ir_constant(np.int32(pivots_aval.shape[-1]))
    hlo.return_([lax.compare_hlo(cond.arguments[0], k, "LT", np.dtype(np.int32))])
  body = loop.body.blocks.append(*types)
  with ir.InsertionPoint(body):
    hlo.return_(_emit(ctx, _swap_step, avals, *body.arguments))
  return [loop.results[1]]


mlir.register_lowering(lu_pivots_to_permutation_p, _pivots_to_permutation_lowering)
batching.primitive_batchers[lu_pivots_to_permutation_p] = _batch_rule(
    lu_pivots_to_permutation_p)


def lu_solve(lu_: Any, permutation: Any, b: Any, trans: int = 0) -> Any:
  """Solves a x = b (trans=0), aᵀ x = b (1) or aᴴ x = b (2) for x given `lu(a)`'s packed
  factors and permutation; `b` (…, m, k) has the factors' batch dimensions."""
  l_solve = dict(lower=True, unit_diagonal=True)
  u_solve = dict(lower=False)
  if trans == 0:
    x = _permute_rows(b, permutation)
    x = triangular_solve(lu_, x, left_side=True, **l_solve)
    return triangular_solve(lu_, x, left_side=True, **u_solve)
  # aᵀ = Uᵀ Lᵀ P: solve with Uᵀ, then Lᵀ, then undo the permutation.
  conj = trans == 2
  x = triangular_solve(lu_, b, left_side=True, transpose_a=True, conjugate_a=conj, **u_solve)
  x = triangular_solve(lu_, x, left_side=True, transpose_a=True, conjugate_a=conj, **l_solve)
  return _permute_rows(x, _inverse_permutation(permutation))

# ============================================================================= QR

def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> tuple[Any, ...]:
  """QR decomposition x = Q R, Q with orthonormal columns, R upper triangular.

  Args:
    x: matrices (…, m, n).
    pivoting: pivot columns (LAPACK's geqp3), so that R's diagonal does not increase in
      magnitude (rank-revealing): x[…, p] = Q R, and the int32 permutation p (…, n) is
      returned third.
    full_matrices: Q is (…, m, m) and R (…, m, n); otherwise, with k = min(m, n), Q is
      (…, m, k) and R (…, k, n).
    use_magma: accepted for JAX compatibility (it picks a GPU algorithm).

  Example: `qr(jnp.array([[3., 0.], [4., 5.]]))[1]` is `[[-5., -4.], [0., 3.]]`.
  """
  return tuple(qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices)))


def _qr_abstract_eval(x: ShapedArray, *, full_matrices: bool, pivoting: bool = False
                      ) -> list[ShapedArray]:
  *batch, m, n = _matrix_aval("qr", x)
  k = m if full_matrices else min(m, n)
  q_r = [ShapedArray((*batch, m, k), x.dtype), ShapedArray((*batch, k, n), x.dtype)]
  return q_r + [ShapedArray((*batch, n), np.dtype(np.int32))] * pivoting


qr_p = utils.standard_multi_result_primitive("qr", _qr_abstract_eval)


def _qr_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, pivoting: bool = False,
                 full_matrices: bool) -> list[ir.Value]:
  """geqrf (geqp3 when pivoting) leaves R above the diagonal and Householder reflectors
  below; orgqr turns the reflectors into Q's first `q_cols` columns (with zero columns
  appended for a complete Q)."""
  x_aval = ctx.avals_in[0]
  q_aval, r_aval = ctx.avals_out[:2]
  *batch, m, n = x_aval.shape
  if _is_empty(x_aval):
    perm = [lax.broadcasted_iota(np.int32, (*batch, n), len(batch))] * pivoting
    return _emit(ctx, lambda: _empty_results(ctx.avals_out[:2]) + perm, [])
  tau_aval = ShapedArray((*batch, min(m, n)), x_aval.dtype)
  if pivoting:
    perm_aval = ctx.avals_out[2]
    free, = _emit(ctx, lambda: [lax.full(perm_aval.shape, 0, np.int32)], [])
    packed, jpvt, tau = _lapack_call("geqp3", x_aval.dtype, [x, free], [x_aval, perm_aval],
                                     [x_aval, perm_aval, tau_aval], in_place=0)
    perm = _emit(ctx, lambda j: [lax.sub(j, np.int32(1))], [perm_aval], jpvt)  # 0-based
  else:
    packed, tau = _lapack_call("geqrf", x_aval.dtype, [x], [x_aval], [x_aval, tau_aval],
                               in_place=0)
    perm = []
  q_cols, r_rows = q_aval.shape[-1], r_aval.shape[-2]

  def split(packed: Any) -> list[Any]:
    reflectors = _resize_last(packed, q_cols)
    return [reflectors, _triu(slicing.slice_in_dim(packed, 0, r_rows, axis=len(batch)))]

  reflectors, r = _emit(ctx, split, [x_aval], packed)
  q, = _lapack_call("orgqr", x_aval.dtype, [reflectors, tau], [q_aval, tau_aval], [q_aval],
                    in_place=0)
  return [q, r, *perm]


def _resize_last(x: Any, size: int) -> Any:
  """`x` cut or zero-padded to `size` entries along its last dimension."""
  n = _shape(x)[-1]
  last = len(_shape(x)) - 1
  if size <= n:
    return slicing.slice_in_dim(x, 0, size, axis=last)
  return shape_ops.pad(x, _const(x, 0), [(0, 0, 0)] * last + [(0, size - n, 0)])


def _qr_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, full_matrices: bool,
            pivoting: bool = False) -> tuple[list[Any], list[Any]]:
  """For m >= n (Townsend 2018, "Differentiating the QR decomposition"): with
  C = Qᴴ dA R⁻¹, dQ = Q (Ω - C) + dA R⁻¹ and dR = (C - Ω) R, Ω the skew-Hermitian matrix
  with C's strictly lower part. A wide A = Q [R₁ R₂] differentiates its square left block
  that way, and dR₂ = Qᴴ (dA₂ - dQ R₂). A complete Q of a tall A gets its last m - n
  columns' tangent from `_qr_complement_jvp`. Pivoting permutes dA's columns as A's (the
  permutation is piecewise constant: its tangent is zero)."""
  (x,), (dx,) = primals, tangents
  *_, m, n = _shape(x)
  q, r, *perm = outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices)
  last = len(_shape(x)) - 1
  if pivoting:
    dx = _T(_permute_rows(_T(dx), perm[0]))
  perm_tangent = [_zero_tangent(p) for p in perm]
  if m < n:
    left = lambda a: slicing.slice_in_dim(a, 0, m, axis=last)
    right = lambda a: slicing.slice_in_dim(a, m, n, axis=last)
    dq, dr1 = _qr_tall_jvp(q, left(r), left(dx))
    dr2 = _matmul(_H(q), lax.sub(right(dx), _matmul(dq, right(r))))
    return outs, [dq, shape_ops.concatenate([dr1, dr2], last), *perm_tangent]
  if not full_matrices or m == n:
    return outs, [*_qr_tall_jvp(q, r, dx), *perm_tangent]
  rows = lambda a, start, stop: slicing.slice_in_dim(a, start, stop, axis=last - 1)
  cols = lambda a, start, stop: slicing.slice_in_dim(a, start, stop, axis=last)
  q_thin, q_rest = cols(q, 0, n), cols(q, n, m)
  dq_thin, dr_top = _qr_tall_jvp(q_thin, rows(r, 0, n), dx)
  dq_rest = _qr_complement_jvp(q_thin, q_rest, dq_thin)
  dr = shape_ops.concatenate([dr_top, lax.full_like(rows(r, n, m), 0)], last - 1)
  return outs, [shape_ops.concatenate([dq_thin, dq_rest], last), dr, *perm_tangent]


def _qr_complement_jvp(q_thin: Any, q_rest: Any, dq_thin: Any) -> Any:
  """The tangent of the last m - n columns Q₂ of a complete Q = [Q₁ Q₂] whose Q₁ (m, n) is
  the thin factor, as LAPACK's reflectors complete it (arXiv:2409.13374, eqs. 32-33, which
  JAX uses too). With Q₁'s
  top (n, n) block Q₁₁ and bottom block Q₁₂ (and likewise for dQ₁): Z = Q₁₂ (Q₁₁ - I)⁻¹ and
  dQ₂ = dQ₁ Zᴴ - (Q₁ + Q₂ Z) (dQ₁₂ - Z dQ₁₁)ᴴ."""
  *_, m, n = _shape(q_thin)
  rows = lambda a, start, stop: slicing.slice_in_dim(a, start, stop, axis=len(_shape(a)) - 2)
  q11, q12 = rows(q_thin, 0, n), rows(q_thin, n, m)
  dq11, dq12 = rows(dq_thin, 0, n), rows(dq_thin, n, m)
  shifted = lax.sub(q11, _identity(_shape(q11), _dtype(q11)))
  lu_, _, permutation = lu(shifted)
  z_h = lu_solve(lu_, permutation, _H(q12), trans=2)  # (Q₁₁ - I)ᴴ Zᴴ = Q₁₂ᴴ
  z = _H(z_h)
  return lax.sub(_matmul(dq_thin, z_h),
                 _matmul(lax.add(q_thin, _matmul(q_rest, z)),
                         _H(lax.sub(dq12, _matmul(z, dq11)))))


def _qr_tall_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
  dx_rinv = triangular_solve(r, dx)
  c = _matmul(_H(q), dx_rinv)
  c_lower = _tril(c, -1)
  omega = lax.sub(c_lower, _H(c_lower))
  if _is_complex(c):  # the diagonal of Ω is C's imaginary diagonal (R's stays real)
    imag_diag = lax.complex(lax.full_like(lax.imag(c), 0), lax.imag(c))
    omega = lax.add(omega, _where_mask(_diagonal_mask(_shape(c)), imag_diag))
  dq = lax.add(_matmul(q, lax.sub(omega, c)), dx_rinv)
  dr = _matmul(lax.sub(c, omega), r)
  return dq, dr


mlir.register_lowering(qr_p, _qr_lowering, platform="cpu")
ad.primitive_jvps[qr_p] = _qr_jvp
batching.primitive_batchers[qr_p] = _batch_rule(qr_p)
