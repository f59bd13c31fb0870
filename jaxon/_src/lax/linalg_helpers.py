"""Shared helpers of the linear-algebra primitives (`jaxon._src.lax.linalg` and the modules
beside it): matrix utilities written with lax (transposes, triangles, diagonals, products over
the last two dimensions), the operand checks and batching rule every primitive uses, and the
lowering helpers (typed-FFI LAPACK custom calls with column-major layouts, NaN where LAPACK
reports failure, results for empty matrices).
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
from jaxon._src.lax import lax, shape_ops, slicing, utils
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


def _iotas(shape: tuple[int, ...]) -> tuple[Any, Any]:
  """The row and column index of each entry of matrices of `shape`: masks are computed in
  the program from these, as JAX's are, not baked in as n² constants (which `jit` passes
  as arguments of every call)."""
  n = len(shape)
  return (lax.broadcasted_iota(np.int32, shape, n - 2),
          lax.broadcasted_iota(np.int32, shape, n - 1))


def _lower_mask(shape: tuple[int, ...], k: int = 0) -> Any:
  """Where `col <= row + k`, over the last two dimensions of `shape`."""
  rows, cols = _iotas(shape)
  return lax.ge(lax.add(rows, np.array(k, np.int32)) if k else rows, cols)


def _diagonal_mask(shape: tuple[int, ...]) -> Any:
  return lax.eq(*_iotas(shape))


def _identity(shape: tuple[int, ...], dtype: Any) -> Any:
  """Identity matrices of `shape` (…, rows, cols): ones where row == col."""
  return lax.convert_element_type(_diagonal_mask(shape), dtype)


def _where_mask(mask: Any, x: Any, other: Any = 0) -> Any:
  """`x` where the boolean `mask` (of x's shape) holds, `other` elsewhere."""
  shape = _shape(x)
  return lax.select(mask, x, lax.full(shape, other, _dtype(x)))


def _tril(x: Any, k: int = 0) -> Any:
  """The lower triangle of the last two dimensions: entries with `col <= row + k`."""
  return _where_mask(_lower_mask(_shape(x), k), x)


def _triu(x: Any, k: int = 0) -> Any:
  """The upper triangle of the last two dimensions: entries with `col >= row + k`."""
  return lax.select(_lower_mask(_shape(x), k - 1), lax.full(_shape(x), 0, _dtype(x)), x)


def _eye_like(x: Any) -> Any:
  """Identity matrices of `x`'s shape (…, n, n) and dtype."""
  return _identity(_shape(x), _dtype(x))


def _diagonal(x: Any) -> Any:
  """The diagonal of the last two dimensions of square matrices: shape (…, n), every
  (n + 1)th element of the flattened matrices (a slice, not a masked sum over n² elements)."""
  *batch, n, _ = _shape(x)
  flat = shape_ops.reshape(x, (*batch, n * n))
  ones = (1,) * len(batch)
  return slicing.slice(flat, (0,) * (len(batch) + 1), (*batch, n * n), (*ones, n + 1))


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
                 in_place: int | None = None, **options: str | bool | int) -> list[ir.Value]:
  """A typed-FFI custom call of jaxlib's LAPACK `routine` for `dtype`. `options` are the
  routine's one-letter arguments (`uplo="L"`, `mode="V"`), which travel as uint8 attributes,
  flags (`left=True`), which travel as booleans, or integers (`low=1`), as int32.
  `in_place`: the operand the routine overwrites with its first result, whose buffer XLA
  then reuses, as JAX's calls do (the kernel copies it otherwise)."""
  matrix_ndim = max(a.ndim for a in operand_avals)
  u8 = ir.IntegerType.get_unsigned(8)
  aliases = [] if in_place is None else [hlo.OutputOperandAlias.get(
      [] if len(result_avals) == 1 else [0], in_place, [])]
  op = hlo.CustomCallOp(
      [mlir.aval_to_ir_type(a) for a in result_avals], list(operands),
      call_target_name=lapack.kernel_name(routine, dtype), has_side_effect=False,
      api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
      backend_config=ir.DictAttr.get(
          {k: ir.IntegerAttr.get(u8, ord(v)) if isinstance(v, str) else
           ir.BoolAttr.get(v) if isinstance(v, bool) else
           ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v) for k, v in options.items()}),
      operand_layouts=ir.ArrayAttr.get([_layout(a, matrix_ndim) for a in operand_avals]),
      result_layouts=ir.ArrayAttr.get([_layout(a, matrix_ndim) for a in result_avals]),
      output_operand_aliases=ir.ArrayAttr.get(aliases))
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
