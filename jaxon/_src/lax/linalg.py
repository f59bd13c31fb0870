"""Linear-algebra primitives: Cholesky, triangular solve, LU, QR, SVD, and the Hermitian and
general eigendecompositions.

Every primitive works on the last two dimensions of its operands and treats the leading ones
as a batch, so batching a primitive only moves the mapped dimension to the front.

Lowering: `cholesky` and `triangular_solve` are native StableHLO ops. The others call the
LAPACK kernels jaxlib ships (registered by `jaxon._src.xla.lapack`) through typed-FFI custom
calls. LAPACK stores matrices column-major, so the custom calls give XLA column-major layouts
for their matrix operands and results, and XLA does any transposing. Where a kernel reports
failure (`info != 0`), its results become NaN, as in JAX.

Derivatives are the standard ones (each rule names its source): they are written with these
primitives, `dot_general` and elementwise ops, so they can be differentiated again and, being
linear in the tangents, transposed for reverse mode. Only `triangular_solve` needs a transpose
rule of its own (it is linear in its right-hand side).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import dot_general as lax_dot
from jaxon._src.lax import lax, reductions, shape_ops, slicing, utils
from jaxon._src.xla import lapack

_LAPACK_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


# ----------------------------------------------------------------------------- helpers

def _shape(x: Any) -> tuple[int, ...]:
  return core.get_aval(x).shape


def _dtype(x: Any) -> np.dtype:
  return core.get_aval(x).dtype


def _is_complex(x: Any) -> bool:
  return dtypes.is_complex(_dtype(x))


def _const(x: Any, value: Any) -> np.ndarray:
  return np.array(value, _dtype(x))


def _T(x: Any) -> Any:
  """Transposes the last two dimensions."""
  n = len(_shape(x))
  return shape_ops.transpose(x, (*range(n - 2), n - 1, n - 2))


def _H(x: Any) -> Any:
  """The conjugate transpose of the last two dimensions."""
  return lax.conj(_T(x)) if _is_complex(x) else _T(x)


def _matmul(a: Any, b: Any) -> Any:
  """Matrix product over the last two dimensions of operands with equal batch dimensions."""
  n = len(_shape(a))
  batch = tuple(range(n - 2))
  return lax_dot.dot_general(a, b, (((n - 1,), (n - 2,)), (batch, batch)),
                             precision=lax_dot.Precision.HIGHEST)


def _broadcast_matrix(m: np.ndarray, shape: tuple[int, ...]) -> Any:
  """A constant (r, c) matrix broadcast over the batch dimensions of `shape`."""
  return lax.broadcast_in_dim(m, shape, (len(shape) - 2, len(shape) - 1))


def _where_mask(mask: np.ndarray, x: Any, other: Any = 0) -> Any:
  """`x` where the constant (r, c) `mask` holds, `other` elsewhere."""
  shape = _shape(x)
  return lax.select(_broadcast_matrix(mask, shape), x, lax.full(shape, other, _dtype(x)))


def _tril(x: Any, k: int = 0) -> Any:
  """The lower triangle of the last two dimensions: entries with `col <= row + k`."""
  rows, cols = _shape(x)[-2:]
  return _where_mask(np.tri(rows, cols, k, dtype=bool), x)


def _triu(x: Any, k: int = 0) -> Any:
  """The upper triangle of the last two dimensions: entries with `col >= row + k`."""
  rows, cols = _shape(x)[-2:]
  return _where_mask(~np.tri(rows, cols, k - 1, dtype=bool), x)


def _eye_like(x: Any) -> Any:
  """Identity matrices of `x`'s shape (…, n, n) and dtype."""
  n = _shape(x)[-1]
  return _broadcast_matrix(np.eye(n, dtype=_dtype(x)), _shape(x))


def _diagonal(x: Any) -> Any:
  """The diagonal of the last two dimensions of square matrices: shape (…, n)."""
  n = _shape(x)[-1]
  return reductions.reduce_sum(_where_mask(np.eye(n, dtype=bool), x), [len(_shape(x)) - 1])


def _diag_matrix(v: Any) -> Any:
  """Square matrices (…, n, n) with `v` (…, n) on the diagonal."""
  shape = _shape(v) + _shape(v)[-1:]
  rows = lax.broadcast_in_dim(v, shape, (*range(len(shape) - 2), len(shape) - 2))
  return _where_mask(np.eye(shape[-1], dtype=bool), rows)


def _column_values(v: Any, shape: tuple[int, ...]) -> Any:
  """Matrices of `shape` (…, r, c) whose column j holds v[…, j]."""
  n = len(shape)
  return lax.broadcast_in_dim(v, shape, (*range(n - 2), n - 1))


def _reciprocal_gaps(w: Any) -> Any:
  """F[…, i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (without dividing by 0)."""
  cols = _column_values(w, _shape(w) + _shape(w)[-1:])
  eye = _eye_like(cols)
  return lax.sub(lax.integer_pow(lax.add(lax.sub(cols, _T(cols)), eye), -1), eye)


def _to_dtype(x: Any, dtype: Any) -> Any:
  return lax.convert_element_type(x, dtype) if _dtype(x) != np.dtype(dtype) else x


def _real_dtype(dtype: np.dtype) -> np.dtype:
  return np.finfo(dtype).dtype


def _complex_dtype(dtype: np.dtype) -> np.dtype:
  return np.result_type(dtype, np.complex64)


def _matrix_aval(name: str, aval: ShapedArray, square: bool = False) -> tuple[int, ...]:
  """Checks that `aval` holds (a batch of) matrices LAPACK can factor; returns its shape."""
  shape = aval.shape
  if len(shape) < 2 or (square and shape[-1] != shape[-2]):
    what = "square matrices (…, n, n)" if square else "matrices (…, m, n)"
    raise ValueError(f"{name} takes {what}, got an operand of type {aval.str_short()}.")
  utils.check_dtypes(name, _LAPACK_DTYPES, aval)
  return shape


def _batch_rule(prim: core.Primitive) -> Callable:
  """These primitives take leading batch dimensions: the mapped one moves to the front
  (operands it does not map are broadcast)."""
  def rule(vals: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple:
    size = next(_shape(v)[d] for v, d in zip(vals, dims) if d is not batching.not_mapped)
    out = prim.bind(*[batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)],
                    **params)
    return out, ([0] * len(out) if prim.multiple_results else 0)
  return rule


def _zero_tangent(x: Any) -> ad.Zero:
  return ad.Zero(core.get_aval(x).to_tangent_aval())


# ----------------------------------------------------------------------------- lowering helpers

def _emit(ctx: mlir.LoweringRuleContext, fun: Callable[..., Sequence[Any]],
          avals: Sequence[ShapedArray], *args: ir.Value) -> list[ir.Value]:
  """Emits `fun` (written with lax, returning a list) applied to `args` of `avals`."""
  return mlir.lower_fun(fun)(ctx.replace(avals_in=list(avals)), *args)


def _layout(aval: ShapedArray, matrix_ndim: int) -> ir.Attribute:
  """XLA's minor-to-major layout: column-major matrices, row-major everything else."""
  n = aval.ndim
  if n == matrix_ndim:
    dims = [n - 2, n - 1, *range(n - 3, -1, -1)]
  else:
    dims = list(range(n - 1, -1, -1))
  return ir.DenseIntElementsAttr.get(np.asarray(dims, np.int64), type=ir.IndexType.get())


def _lapack_call(routine: str, dtype: np.dtype, operands: Sequence[ir.Value],
                 operand_avals: Sequence[ShapedArray], result_avals: Sequence[ShapedArray],
                 **options: str | int) -> list[ir.Value]:
  """A typed-FFI custom call of jaxlib's LAPACK `routine` for `dtype`. `options` are the
  routine's one-letter arguments (`uplo="L"`, `mode="V"`), which travel as uint8 attributes,
  or integers (`low=1`), which travel as int32 ones."""
  matrix_ndim = max(a.ndim for a in operand_avals)
  u8 = ir.IntegerType.get_unsigned(8)
  op = hlo.CustomCallOp(
      [mlir.aval_to_ir_type(a) for a in result_avals], list(operands),
      call_target_name=lapack.kernel_name(routine, dtype), has_side_effect=False,
      api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
      backend_config=ir.DictAttr.get(
          {k: ir.IntegerAttr.get(u8, ord(v)) if isinstance(v, str) else
           ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v) for k, v in options.items()}),
      operand_layouts=ir.ArrayAttr.get([_layout(a, matrix_ndim) for a in operand_avals]),
      result_layouts=ir.ArrayAttr.get([_layout(a, matrix_ndim) for a in result_avals]))
  return list(op.results)


def _nan_unless_ok(info: Any, *outs: Any) -> list[Any]:
  """Each of `outs` (with the batch dimensions of `info`), NaN where `info` is nonzero."""
  ok = lax.eq(info, np.zeros((), np.int32))
  result = []
  for x in outs:
    shape = _shape(x)
    mask = lax.broadcast_in_dim(ok, shape, tuple(range(len(_shape(info)))))
    result.append(lax.select(mask, x, lax.full(shape, np.nan, _dtype(x))))
  return result


def _is_empty(aval: ShapedArray) -> bool:
  """Whether the matrices have no rows or no columns (LAPACK rejects leading dimension 0)."""
  return 0 in aval.shape[-2:]


def _empty_results(avals: Sequence[ShapedArray]) -> list[Any]:
  """A factorization of matrices with no rows or columns: identity matrices for the
  orthogonal factors (Q, U, Vᴴ), and empty or zero matrices for the rest."""
  outs = []
  for aval in avals:
    if aval.ndim >= 2 and aval.shape[-1] == aval.shape[-2]:
      eye = np.eye(aval.shape[-1], dtype=aval.dtype)
      outs.append(lax.broadcast_in_dim(eye, aval.shape, (aval.ndim - 2, aval.ndim - 1)))
    else:
      outs.append(lax.full(aval.shape, 0, aval.dtype))
  return outs


def _info_aval(shape: tuple[int, ...]) -> ShapedArray:
  return ShapedArray(shape[:-2], np.dtype(np.int32))


def _ir_tril(aval: ShapedArray, x: ir.Value) -> ir.Value:
  """The lower triangle of `x`, zero above it (stablehlo.cholesky leaves that undefined)."""
  n = aval.ndim
  index_type = mlir.aval_to_ir_type(ShapedArray(aval.shape, np.dtype(np.int32)))
  rows, cols = hlo.iota(index_type, n - 2), hlo.iota(index_type, n - 1)
  keep = lax.compare_hlo(rows, cols, "GE", np.dtype(np.int32))
  return hlo.select(keep, x, mlir.full_like_aval(0, aval))


def _ir_conj(aval: ShapedArray, x: ir.Value) -> ir.Value:
  if not dtypes.is_complex(aval.dtype):
    return x
  return hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))


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


def _cholesky_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
  """dL = L Φ(L⁻¹ dA L⁻ᴴ), Φ taking the lower triangle with a halved diagonal (Murray 2016,
  "Differentiation of the Cholesky decomposition", arXiv:1602.07527)."""
  (x,), (dx,) = primals, tangents
  l = cholesky_p.bind(x)
  dx_linv_h = triangular_solve(l, dx, left_side=False, lower=True, transpose_a=True,
                               conjugate_a=True)
  inner = triangular_solve(l, dx_linv_h, left_side=True, lower=True)
  phi = lax.sub(_tril(inner), lax.mul(_diag_matrix(_diagonal(inner)), _const(inner, 0.5)))
  return l, _matmul(l, phi)


mlir.register_lowering(cholesky_p, _cholesky_lowering)
ad.primitive_jvps[cholesky_p] = _cholesky_jvp
batching.primitive_batchers[cholesky_p] = _batch_rule(cholesky_p)


# ============================================================================= triangular_solve

def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
  """Solves op(a) x = b (`left_side`) or x op(a) = b for x, with a triangular.

  Args:
    a: triangular matrices (…, m, m); only the triangle `lower` selects is read (and not its
      diagonal when `unit_diagonal`, which takes it to be ones).
    b: right-hand sides with a's batch dimensions: (…, m, n) when `left_side`, else (…, n, m).
    transpose_a, conjugate_a: op(a) is a, aᵀ, conj(a) or aᴴ.

  Returns:
    x, of b's shape.

  Example: `triangular_solve(jnp.array([[2., 0.], [1., 1.]]), jnp.array([[2.], [3.]]),
  left_side=True, lower=True)` is `[[1.], [2.]]`.
  """
  conjugate_a = bool(conjugate_a) and _is_complex(a)
  return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                 transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                 unit_diagonal=bool(unit_diagonal))


def _triangular_solve_shape_rule(a: ShapedArray, b: ShapedArray, *, left_side: bool,
                                 **params: Any) -> tuple[int, ...]:
  _matrix_aval("triangular_solve", a, square=True)
  if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
    raise TypeError(f"triangular_solve needs a and b with the same batch dimensions, got a of "
                    f"type {a.str_short()} and b of type {b.str_short()}.")
  solved = b.shape[-2] if left_side else b.shape[-1]
  if solved != a.shape[-1]:
    side = "rows" if left_side else "columns"
    raise TypeError(f"triangular_solve with left_side={left_side} needs b's {side} to match "
                    f"a's size {a.shape[-1]}, got a of type {a.str_short()} and b of type "
                    f"{b.str_short()}.")
  return b.shape


def _triangular_solve_dtype_rule(a: ShapedArray, b: ShapedArray, **params: Any) -> np.dtype:
  utils.check_same_dtypes("triangular_solve", a, b)
  return b.dtype


triangular_solve_p = utils.standard_primitive(
    "triangular_solve", _triangular_solve_shape_rule, _triangular_solve_dtype_rule,
    lambda *avals, **params: False)


def _triangular_solve_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, b: ir.Value, *,
                               left_side: bool, lower: bool, transpose_a: bool,
                               conjugate_a: bool, unit_diagonal: bool) -> list[ir.Value]:
  """StableHLO has no "conjugate without transposing": that case conjugates `a` first."""
  if conjugate_a and not transpose_a:
    a = _ir_conj(ctx.avals_in[0], a)
  transpose = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
  return [hlo.triangular_solve(a, b, left_side, lower, unit_diagonal,
                               hlo.TransposeAttr.get(transpose))]


def _op_a(a: Any, *, lower: bool, transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
          ) -> Any:
  """op(a) as triangular_solve reads it: the selected triangle, transposed/conjugated."""
  a = _tril(a, -int(unit_diagonal)) if lower else _triu(a, int(unit_diagonal))
  a = _T(a) if transpose_a else a
  return lax.conj(a) if conjugate_a else a


def _triangular_solve_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
                          ) -> tuple[Any, Any]:
  """Linear in b; for a, d(op(a)⁻¹ b) = -op(a)⁻¹ op(da) x (x op(da) op(a)⁻¹ on the right)."""
  (a, b), (da, db) = primals, tangents
  x = triangular_solve_p.bind(a, b, **params)
  dx = ad.Zero(core.get_aval(x).to_tangent_aval())
  if type(db) is not ad.Zero:
    dx = triangular_solve_p.bind(a, db, **params)
  if type(da) is not ad.Zero:
    op_da = _op_a(da, lower=params["lower"], transpose_a=params["transpose_a"],
                  conjugate_a=params["conjugate_a"], unit_diagonal=params["unit_diagonal"])
    rhs = _matmul(op_da, x) if params["left_side"] else _matmul(x, op_da)
    dx = ad.add_tangents(dx, triangular_solve_p.bind(a, lax.neg(rhs), **params))
  return x, dx


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                                transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                                ) -> list[Any]:
  """b ↦ op(a)⁻¹ b is linear; its transpose is ct ↦ op(a)⁻ᵀ ct (transposed, not conjugated)."""
  if ad.is_undefined_primal(a):
    raise NotImplementedError("triangular_solve is not linear in its matrix a")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  return [None, triangular_solve_p.bind(
      a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
      conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


mlir.register_lowering(triangular_solve_p, _triangular_solve_lowering)
ad.primitive_jvps[triangular_solve_p] = _triangular_solve_jvp
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
batching.primitive_batchers[triangular_solve_p] = _batch_rule(triangular_solve_p)


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
                              [x_aval, pivots_aval, _info_aval(x_aval.shape)])
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
  l = lax.add(l, _broadcast_matrix(np.eye(m, dtype=_dtype(lu_)), (*batch, m, m)))
  u_rows = slicing.slice_in_dim(_triu(lu_), 0, k, axis=nb)
  u = shape_ops.pad(u_rows, zero, [(0, 0, 0)] * nb + [(0, n - k, 0), (0, 0, 0)])
  completion = np.diag(np.arange(n) >= k).astype(_dtype(lu_))
  return l, lax.add(u, _broadcast_matrix(completion, (*batch, n, n)))


def _permutation_matrix(perm: Any, dtype: Any) -> Any:
  """P with P[i, perm[i]] = 1, so that P @ x is x[perm]."""
  shape = (*_shape(perm), _shape(perm)[-1])
  n = len(shape)
  rows = lax.broadcast_in_dim(perm, shape, tuple(range(n - 1)))
  cols = lax.broadcasted_iota(np.int32, shape, n - 1)
  return lax.convert_element_type(lax.eq(rows, cols), dtype)


def _lu_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
  """With PA = LU: L⁻¹ P dA U⁻¹ = L⁻¹dL + dU U⁻¹, strictly lower plus upper, so
  dL = L tril₋₁(L⁻¹ P dA U⁻¹) and dU = triu(L⁻¹ P dA U⁻¹) U (de Hoog, Anderssen & Lukas 2011,
  "Differentiation of matrix functionals using triangular factorization")."""
  (x,), (dx,) = primals, tangents
  lu_, pivots, perm = lu_p.bind(x)
  l, u = _lu_factors(lu_)
  pdx = _matmul(_permutation_matrix(perm, _dtype(x)), dx)
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
    x = _matmul(_permutation_matrix(permutation, _dtype(b)), b)
    x = triangular_solve(lu_, x, left_side=True, **l_solve)
    return triangular_solve(lu_, x, left_side=True, **u_solve)
  # aᵀ = Uᵀ Lᵀ P: solve with Uᵀ, then Lᵀ, then undo the permutation.
  conj = trans == 2
  x = triangular_solve(lu_, b, left_side=True, transpose_a=True, conjugate_a=conj, **u_solve)
  x = triangular_solve(lu_, x, left_side=True, transpose_a=True, conjugate_a=conj, **l_solve)
  return _matmul(_T(_permutation_matrix(permutation, _dtype(b))), x)


# ============================================================================= QR

def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> tuple[Any, Any]:
  """QR decomposition x = Q R, Q with orthonormal columns, R upper triangular.

  Args:
    x: matrices (…, m, n).
    full_matrices: Q is (…, m, m) and R (…, m, n); otherwise, with k = min(m, n), Q is
      (…, m, k) and R (…, k, n).
    pivoting: column pivoting is not implemented; use_magma is accepted for JAX
      compatibility (it picks a GPU algorithm).

  Example: `qr(jnp.array([[3., 0.], [4., 5.]]))[1]` is `[[-5., -4.], [0., 3.]]`.
  """
  if pivoting:
    raise NotImplementedError("qr(pivoting=True) is not implemented in jaxon.")
  q, r = qr_p.bind(x, full_matrices=bool(full_matrices))
  return q, r


def _qr_abstract_eval(x: ShapedArray, *, full_matrices: bool) -> list[ShapedArray]:
  *batch, m, n = _matrix_aval("qr", x)
  k = m if full_matrices else min(m, n)
  return [ShapedArray((*batch, m, k), x.dtype), ShapedArray((*batch, k, n), x.dtype)]


qr_p = utils.standard_multi_result_primitive("qr", _qr_abstract_eval)


def _qr_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, full_matrices: bool
                 ) -> list[ir.Value]:
  """geqrf leaves R above the diagonal and Householder reflectors below; orgqr turns the
  reflectors into Q's first `q_cols` columns (with zero columns appended for a complete Q)."""
  x_aval = ctx.avals_in[0]
  q_aval, r_aval = ctx.avals_out
  if _is_empty(x_aval):
    return _emit(ctx, lambda: _empty_results(ctx.avals_out), [])
  *batch, m, n = x_aval.shape
  tau_aval = ShapedArray((*batch, min(m, n)), x_aval.dtype)
  packed, tau = _lapack_call("geqrf", x_aval.dtype, [x], [x_aval], [x_aval, tau_aval])
  q_cols, r_rows = q_aval.shape[-1], r_aval.shape[-2]

  def split(packed: Any) -> list[Any]:
    reflectors = _resize_last(packed, q_cols)
    return [reflectors, _triu(slicing.slice_in_dim(packed, 0, r_rows, axis=len(batch)))]

  reflectors, r = _emit(ctx, split, [x_aval], packed)
  q, = _lapack_call("orgqr", x_aval.dtype, [reflectors, tau], [q_aval, tau_aval], [q_aval])
  return [q, r]


def _resize_last(x: Any, size: int) -> Any:
  """`x` cut or zero-padded to `size` entries along its last dimension."""
  n = _shape(x)[-1]
  last = len(_shape(x)) - 1
  if size <= n:
    return slicing.slice_in_dim(x, 0, size, axis=last)
  return shape_ops.pad(x, _const(x, 0), [(0, 0, 0)] * last + [(0, size - n, 0)])


def _qr_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, full_matrices: bool
            ) -> tuple[list[Any], list[Any]]:
  """For m >= n (Townsend 2018, "Differentiating the QR decomposition"): with
  C = Qᴴ dA R⁻¹, dQ = Q (Ω - C) + dA R⁻¹ and dR = (C - Ω) R, Ω the skew-Hermitian matrix
  with C's strictly lower part. A wide A = Q [R₁ R₂] differentiates its square left block
  that way, and dR₂ = Qᴴ (dA₂ - dQ R₂)."""
  (x,), (dx,) = primals, tangents
  *_, m, n = _shape(x)
  if full_matrices and m > n:
    raise NotImplementedError("The derivative of qr(full_matrices=True) of a tall matrix is "
                              "not unique (Q's last m - n columns are arbitrary); use "
                              "full_matrices=False.")
  q, r = qr_p.bind(x, full_matrices=full_matrices)
  if m >= n:
    return [q, r], list(_qr_tall_jvp(q, r, dx))
  last = len(_shape(x)) - 1
  left = lambda a: slicing.slice_in_dim(a, 0, m, axis=last)
  right = lambda a: slicing.slice_in_dim(a, m, n, axis=last)
  dq, dr1 = _qr_tall_jvp(q, left(r), left(dx))
  dr2 = _matmul(_H(q), lax.sub(right(dx), _matmul(dq, right(r))))
  return [q, r], [dq, shape_ops.concatenate([dr1, dr2], last)]


def _qr_tall_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
  dx_rinv = triangular_solve(r, dx)
  c = _matmul(_H(q), dx_rinv)
  c_lower = _tril(c, -1)
  omega = lax.sub(c_lower, _H(c_lower))
  if _is_complex(c):  # the diagonal of Ω is C's imaginary diagonal (R's stays real)
    imag_diag = lax.complex(lax.full_like(lax.imag(c), 0), lax.imag(c))
    omega = lax.add(omega, _where_mask(np.eye(_shape(c)[-1], dtype=bool), imag_diag))
  dq = lax.add(_matmul(q, lax.sub(omega, c)), dx_rinv)
  dr = _matmul(lax.sub(c, omega), r)
  return dq, dr


mlir.register_lowering(qr_p, _qr_lowering, platform="cpu")
ad.primitive_jvps[qr_p] = _qr_jvp
batching.primitive_batchers[qr_p] = _batch_rule(qr_p)


# ============================================================================= eigh

def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None
         ) -> tuple[Any, Any]:
  """Eigendecomposition of Hermitian matrices: x v[:, i] = w[i] v[:, i].

  Args:
    x: Hermitian matrices (…, n, n); only the triangle `lower` selects is read unless
      `symmetrize_input`, which factors (x + xᴴ) / 2.
    sort_eigenvalues: LAPACK returns them in ascending order either way.

  Returns:
    (v, w): orthonormal eigenvectors as the columns of v (…, n, n), and the real eigenvalues
    w (…, n) in ascending order.

  Example: `eigh(jnp.array([[2., 1.], [1., 2.]]))[1]` is `[1., 3.]`.
  """
  if subset_by_index is not None:
    raise NotImplementedError("eigh(subset_by_index=...) is not implemented in jaxon.")
  _matrix_aval("eigh", core.get_aval(x), square=True)
  if symmetrize_input:
    x = symmetrize(x)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
  return v, w


def _eigh_abstract_eval(x: ShapedArray, **params: Any) -> list[ShapedArray]:
  shape = _matrix_aval("eigh", x, square=True)
  return [ShapedArray(shape, x.dtype), ShapedArray(shape[:-1], _real_dtype(x.dtype))]


eigh_p = utils.standard_multi_result_primitive("eigh", _eigh_abstract_eval)


def _eigh_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, lower: bool,
                   sort_eigenvalues: bool) -> list[ir.Value]:
  x_aval = ctx.avals_in[0]
  v_aval, w_aval = ctx.avals_out
  info_aval = _info_aval(x_aval.shape)
  v, w, info = _lapack_call("syevd", x_aval.dtype, [x], [x_aval], [v_aval, w_aval, info_aval],
                            uplo="L" if lower else "U", mode="V")
  return _emit(ctx, _nan_unless_ok, [info_aval, v_aval, w_aval], info, v, w)


def _eigh_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
              ) -> tuple[list[Any], list[Any]]:
  """With C = Vᴴ dA V: dw = Re diag(C) and dV = V (F ∘ C), F[i, j] = 1 / (w[j] - w[i]) off the
  diagonal and 0 on it (Giles 2008, "An extended collection of matrix derivative results")."""
  (x,), (dx,) = primals, tangents
  v, w = eigh_p.bind(x, **params)
  c = _matmul(_matmul(_H(v), dx), v)
  f = _to_dtype(_reciprocal_gaps(w), _dtype(x))
  dv = _matmul(v, lax.mul(f, c))
  dw = _diagonal(c)
  return [v, w], [dv, lax.real(dw) if _is_complex(dw) else dw]


mlir.register_lowering(eigh_p, _eigh_lowering, platform="cpu")
ad.primitive_jvps[eigh_p] = _eigh_jvp
batching.primitive_batchers[eigh_p] = _batch_rule(eigh_p)


# ============================================================================= SVD

def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None, algorithm: Any = None) -> Any:
  """Singular value decomposition x = U diag(s) Vᴴ.

  Args:
    x: matrices (…, m, n); k = min(m, n).
    full_matrices: U is (…, m, m) and Vᴴ (…, n, n); otherwise (…, m, k) and (…, k, n).
    compute_uv: when False only s is computed and returned.

  Returns:
    (u, s, vh), or s: the k real singular values in descending order.

  Example: `svd(jnp.array([[3., 0.], [0., -4.]]), compute_uv=False)` is `[4., 3.]`.
  """
  if subset_by_index is not None or algorithm is not None:
    raise NotImplementedError("svd(subset_by_index=..., algorithm=...) is not implemented "
                              "in jaxon.")
  outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
  if compute_uv:
    s, u, vh = outs
    return u, s, vh
  return outs[0]


def _svd_abstract_eval(x: ShapedArray, *, full_matrices: bool, compute_uv: bool
                       ) -> list[ShapedArray]:
  *batch, m, n = _matrix_aval("svd", x)
  k = min(m, n)
  s = ShapedArray((*batch, k), _real_dtype(x.dtype))
  if not compute_uv:
    return [s]
  return [s, ShapedArray((*batch, m, m if full_matrices else k), x.dtype),
          ShapedArray((*batch, n if full_matrices else k, n), x.dtype)]


svd_p = utils.standard_multi_result_primitive("svd", _svd_abstract_eval)


def _svd_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, full_matrices: bool,
                  compute_uv: bool) -> list[ir.Value]:
  """gesdd (divide and conquer); without `compute_uv` it still wants U and Vᴴ buffers."""
  x_aval = ctx.avals_in[0]
  if _is_empty(x_aval):
    return _emit(ctx, lambda: _empty_results(ctx.avals_out), [])
  _, u_aval, vt_aval = _svd_abstract_eval(x_aval, full_matrices=full_matrices,
                                          compute_uv=True)
  info_aval = _info_aval(x_aval.shape)
  mode = ("A" if full_matrices else "S") if compute_uv else "N"
  _, s, u, vt, info = _lapack_call(
      "gesdd", x_aval.dtype, [x], [x_aval],
      [x_aval, ctx.avals_out[0], u_aval, vt_aval, info_aval], mode=mode)
  outs = [s, u, vt] if compute_uv else [s]
  return _emit(ctx, _nan_unless_ok, [info_aval, *ctx.avals_out], info, *outs)


def _svd_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, full_matrices: bool,
             compute_uv: bool) -> tuple[list[Any], list[Any]]:
  """With k = min(m, n), S = diag(s) and C = Uᴴ dA V (k×k): ds = Re diag(C);
  dU = U (F ∘ (C S + S Cᴴ) + D) and dV = V (F ∘ (S C + Cᴴ S)), where
  F[i, j] = 1 / (s[j]² - s[i]²) off the diagonal and D = diag(i Im C) / s fixes the phases;
  the parts of dU (dV) outside U's (V's) span are (I - U Uᴴ) dA V / s ((I - V Vᴴ) dAᴴ U / s)
  (Townsend 2016, "Differentiating the singular value decomposition")."""
  (x,), (dx,) = primals, tangents
  if compute_uv and full_matrices:
    raise NotImplementedError("The derivative of svd(full_matrices=True) is not unique (the "
                              "extra singular vectors are arbitrary); use "
                              "full_matrices=False.")
  s, u, vt = svd_p.bind(x, full_matrices=False, compute_uv=True)
  v, ut = _H(vt), _H(u)
  c = _matmul(_matmul(ut, dx), v)
  ds = _diagonal(c)
  ds = lax.real(ds) if _is_complex(ds) else ds
  if not compute_uv:
    return [s], [ds]
  dtype = _dtype(x)
  s_cols = _column_values(_to_dtype(s, dtype), _shape(c))
  f = _to_dtype(_reciprocal_gaps(lax.mul(s, s)), dtype)
  c_s, s_c = lax.mul(c, s_cols), lax.mul(_T(s_cols), c)
  du_inner = lax.mul(f, lax.add(c_s, _H(c_s)))
  dv_inner = lax.mul(f, lax.add(s_c, _H(s_c)))
  if _is_complex(c):
    phases = _where_mask(np.eye(_shape(c)[-1], dtype=bool),
                         lax.mul(lax.sub(c, _H(c)), _const(c, 0.5)))
    du_inner = lax.add(du_inner, _divide_columns(phases, s))
  du = _matmul(u, du_inner)
  dv = _matmul(v, dv_inner)
  m, n_cols = _shape(x)[-2:]
  if m > n_cols:
    dx_v = _matmul(dx, v)
    du = lax.add(du, _divide_columns(lax.sub(dx_v, _matmul(u, _matmul(ut, dx_v))), s))
  if n_cols > m:
    dxh_u = _matmul(_H(dx), u)
    dv = lax.add(dv, _divide_columns(lax.sub(dxh_u, _matmul(v, _matmul(vt, dxh_u))), s))
  return [s, u, vt], [ds, du, _H(dv)]


def _divide_columns(x: Any, s: Any) -> Any:
  """x[…, :, j] / s[…, j]."""
  return lax.div(x, _column_values(_to_dtype(s, _dtype(x)), _shape(x)))


mlir.register_lowering(svd_p, _svd_lowering, platform="cpu")
ad.primitive_jvps[svd_p] = _svd_jvp
batching.primitive_batchers[svd_p] = _batch_rule(svd_p)


# ============================================================================= eig

def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, use_magma: bool | None = None) -> list[Any]:
  """Eigendecomposition of general square matrices (CPU only, through LAPACK's geev).

  Args:
    x: matrices (…, n, n).
    use_magma: accepted for JAX compatibility (it picks a GPU algorithm).

  Returns:
    [w, vl, vr] (the eigenvectors only when asked for): complex eigenvalues w (…, n), left
    eigenvectors vl with vlᴴ x = diag(w) vlᴴ, right ones vr with x vr = vr diag(w), each
    column of unit norm.

  Example: `eig(jnp.array([[0., -1.], [1., 0.]]))[0]` is `[1j, -1j]`.
  """
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors))


def _eig_abstract_eval(x: ShapedArray, *, compute_left_eigenvectors: bool,
                       compute_right_eigenvectors: bool) -> list[ShapedArray]:
  shape = _matrix_aval("eig", x, square=True)
  dtype = _complex_dtype(x.dtype)
  vectors = ShapedArray(shape, dtype)
  return [ShapedArray(shape[:-1], dtype),
          *[vectors] * (compute_left_eigenvectors + compute_right_eigenvectors)]


eig_p = utils.standard_multi_result_primitive("eig", _eig_abstract_eval)


def _eig_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                  compute_left_eigenvectors: bool, compute_right_eigenvectors: bool
                  ) -> list[ir.Value]:
  """geev of a real matrix returns the eigenvalues' real and imaginary parts apart."""
  x_aval = ctx.avals_in[0]
  w_aval = ShapedArray(x_aval.shape[:-1], _complex_dtype(x_aval.dtype))
  v_aval = ShapedArray(x_aval.shape, w_aval.dtype)
  info_aval = _info_aval(x_aval.shape)
  w_parts = [x_aval.update(shape=w_aval.shape)] * 2 if x_aval.dtype.kind == "f" else [w_aval]
  options = dict(compute_left="V" if compute_left_eigenvectors else "N",
                 compute_right="V" if compute_right_eigenvectors else "N")
  *w, vl, vr, info = _lapack_call("geev", x_aval.dtype, [x], [x_aval],
                                  [*w_parts, v_aval, v_aval, info_aval], **options)
  w = hlo.complex(*w) if len(w) == 2 else w[0]
  outs = [w] + [vl] * compute_left_eigenvectors + [vr] * compute_right_eigenvectors
  return _emit(ctx, _nan_unless_ok, [info_aval, *ctx.avals_out], info, *outs)


def _eig_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
             compute_left_eigenvectors: bool, compute_right_eigenvectors: bool
             ) -> tuple[list[Any], list[Any]]:
  """dw = diag(V⁻¹ dA V) for the right eigenvectors V (Boeddeker et al. 2017, "On the
  computation of complex-valued gradients", arXiv:1701.00392, eq. 4.60)."""
  if compute_left_eigenvectors or compute_right_eigenvectors:
    raise NotImplementedError("The derivatives of eigenvectors of eig are not implemented, "
                              "only those of its eigenvalues (compute_left_eigenvectors="
                              "compute_right_eigenvectors=False).")
  (x,), (dx,) = primals, tangents
  w, v = eig_p.bind(x, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
  lu_, _, perm = lu(v)
  dx_v = _matmul(_to_dtype(dx, _dtype(v)), v)
  return [w], [_diagonal(lu_solve(lu_, perm, dx_v))]


mlir.register_lowering(eig_p, _eig_lowering, platform="cpu")
ad.primitive_jvps[eig_p] = _eig_jvp
batching.primitive_batchers[eig_p] = _batch_rule(eig_p)
