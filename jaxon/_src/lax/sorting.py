"""Sorting: `sort` (of one array, or of several arrays by the first `num_keys` of them),
`sort_key_val`, and `top_k`.

Keys are ordered totally, as NumPy orders them: NaNs sort after every other value (and are
equal to each other), -0.0 equals 0.0, complex numbers compare by real then imaginary part,
False < True. Several keys compare lexicographically. Stable sorts keep equal keys in their
input order.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import gather_scatter, lax, shape_ops, utils

# ----------------------------------------------------------------------------- user functions


def sort(operand: Any | Sequence[Any], dimension: int = -1, is_stable: bool = True,
         num_keys: int = 1) -> Any:
  """Sorts along `dimension`.

  Args:
    operand: an array, or a sequence of arrays of one shape that are permuted together.
    dimension: the dimension to sort along.
    is_stable: whether equal keys keep their input order.
    num_keys: how many of the leading operands are keys, compared lexicographically.

  Returns:
    The sorted array, or a tuple of the sorted arrays when `operand` is a sequence.

  Example: `sort((keys, values), num_keys=1)` orders `values` by `keys`.
  """
  if isinstance(operand, (tuple, list)):
    if not 1 <= num_keys <= len(operand):
      raise ValueError(f"sort num_keys={num_keys} must be between 1 and the number of "
                       f"operands, {len(operand)}.")
    return tuple(_bind_sort(operand, dimension, is_stable, num_keys))
  if num_keys != 1:
    raise ValueError(f"sort of a single operand takes num_keys=1, got {num_keys}.")
  return _bind_sort([operand], dimension, is_stable, 1)[0]


def _bind_sort(operands: Sequence[Any], dimension: int, is_stable: bool, num_keys: int
               ) -> list[Any]:
  ndim = np.ndim(operands[0])
  if ndim == 0:
    raise TypeError(f"sort requires operands of rank >= 1, got shape {np.shape(operands[0])}.")
  return sort_p.bind(*operands, dimension=utils.canonicalize_axis(dimension, ndim, "dimension"),
                     is_stable=bool(is_stable), num_keys=int(num_keys))


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True
                 ) -> tuple[Any, Any]:
  """Sorts `keys` along `dimension` and permutes `values` the same way."""
  return sort((keys, values), dimension, is_stable, num_keys=1)


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
  """The `k` largest entries along `axis` and their int32 indices, largest first.

  Equal entries come in index order; NaNs count as larger than every number.

  Example: `top_k(jnp.array([9., 3., 6., 4., 10.]), 3)` is `([10., 9., 6.], [4, 0, 2])`.
  """
  ndim = np.ndim(operand)
  if ndim == 0:
    raise TypeError(f"top_k requires an operand of rank >= 1, got shape {np.shape(operand)}.")
  k = int(core.concrete_or_error(int, k, "The k argument of top_k must be concrete."))
  values, indices = top_k_p.bind(operand, k=k, axis=utils.canonicalize_axis(axis, ndim))
  return values, indices


# ----------------------------------------------------------------------------- comparators

def _less_than(a: ir.Value, b: ir.Value, dtype: np.dtype) -> ir.Value:
  """`a < b` in the total order of the module docstring, on scalar tensors."""
  if dtypes.is_complex(dtype):
    part = np.dtype(dtypes.finfo(dtype).dtype)
    a_re, b_re = hlo.real(a), hlo.real(b)
    return hlo.or_(_less_than(a_re, b_re, part), hlo.and_(
        _equal(a_re, b_re, part), _less_than(hlo.imag(a), hlo.imag(b), part)))
  lt = lax.compare_hlo(a, b, "LT", dtype)
  if not dtypes.is_float(dtype):
    return lt
  return hlo.or_(lt, hlo.and_(_isnan(b, dtype), hlo.not_(_isnan(a, dtype))))


def _equal(a: ir.Value, b: ir.Value, dtype: np.dtype) -> ir.Value:
  """`a == b` in the total order: NaNs equal each other."""
  if dtypes.is_complex(dtype):
    part = np.dtype(dtypes.finfo(dtype).dtype)
    return hlo.and_(_equal(hlo.real(a), hlo.real(b), part),
                    _equal(hlo.imag(a), hlo.imag(b), part))
  eq = lax.compare_hlo(a, b, "EQ", dtype)
  if not dtypes.is_float(dtype):
    return eq
  return hlo.or_(eq, hlo.and_(_isnan(a, dtype), _isnan(b, dtype)))


def _isnan(x: ir.Value, dtype: np.dtype) -> ir.Value:
  return lax.compare_hlo(x, x, "NE", dtype)


def _lexicographic_less_than(lhs: Sequence[ir.Value], rhs: Sequence[ir.Value],
                             key_dtypes: Sequence[np.dtype]) -> ir.Value:
  """lhs < rhs comparing the first key, then the next key where it ties, and so on."""
  result = _less_than(lhs[-1], rhs[-1], key_dtypes[-1])
  for a, b, dtype in reversed(list(zip(lhs[:-1], rhs[:-1], key_dtypes[:-1]))):
    result = hlo.or_(_less_than(a, b, dtype), hlo.and_(_equal(a, b, dtype), result))
  return result


def _sort_op(operands: Sequence[ir.Value], avals: Sequence[ShapedArray], dimension: int,
             is_stable: bool, num_keys: int, descending: bool = False) -> hlo.SortOp:
  """`stablehlo.sort` whose comparator orders by the first `num_keys` operands."""
  op = hlo.SortOp([mlir.aval_to_ir_type(a) for a in avals], list(operands),
                  dimension=dimension, is_stable=is_stable)
  scalars = [mlir.aval_to_ir_type(a.update(shape=())) for a in avals]
  block = op.comparator.blocks.append(*[t for t in scalars for _ in range(2)])
  with ir.InsertionPoint(block):
    firsts, seconds = block.arguments[0::2], block.arguments[1::2]
    if descending:
      firsts, seconds = seconds, firsts
    key_dtypes = [a.dtype for a in avals[:num_keys]]
    hlo.return_([_lexicographic_less_than(firsts[:num_keys], seconds[:num_keys], key_dtypes)])
  return op


# ----------------------------------------------------------------------------- sort

def _sort_abstract_eval(*operands: ShapedArray, dimension: int, is_stable: bool,
                        num_keys: int) -> list[ShapedArray]:
  shapes = {a.shape for a in operands}
  if len(shapes) != 1:
    raise TypeError(f"sort requires all operands to have the same shape, got "
                    f"{', '.join(a.str_short() for a in operands)}.")
  utils.check_dtypes("sort", (np.number, np.bool_), *operands)
  return list(operands)


sort_p = utils.standard_multi_result_primitive("sort", _sort_abstract_eval)


def _sort_lowering(ctx: mlir.LoweringRuleContext, *operands: ir.Value, dimension: int,
                   is_stable: bool, num_keys: int) -> Sequence[ir.Value]:
  return _sort_op(operands, ctx.avals_in, dimension, is_stable, num_keys).results


mlir.register_lowering(sort_p, _sort_lowering)


def _sort_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, dimension: int,
              is_stable: bool, num_keys: int) -> tuple[list[Any], list[Any]]:
  """Tangents move with their primals: the sort also permutes an iota, and each tangent is
  gathered by that permutation."""
  iota = lax.broadcasted_iota(np.int32, np.shape(primals[0]), dimension)
  *sorted_primals, permutation = sort_p.bind(*primals, iota, dimension=dimension,
                                             is_stable=is_stable, num_keys=num_keys)
  return sorted_primals, [t if type(t) is ad.Zero else _take_along(t, permutation, dimension)
                          for t in tangents]


def _take_along(x: Any, indices: Any, axis: int) -> Any:
  """`x[..., indices[..., j, ...], ...]` along `axis`: a gather in which every other
  dimension pairs the operand with the indices (both have the same sizes there)."""
  ndim = np.ndim(x)
  others = tuple(d for d in range(ndim) if d != axis)
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
      operand_batching_dims=others, start_indices_batching_dims=others)
  return gather_scatter.gather(x, shape_ops.expand_dims(indices, (ndim,)), dnums, (1,) * ndim,
                               unique_indices=True,
                               mode=gather_scatter.GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *, dimension: int,
                     is_stable: bool, num_keys: int) -> tuple[list[Any], list[int]]:
  """Operands must share one shape: mapped ones get the first mapped operand's batch
  dimension, unmapped ones are broadcast along it; the sort dimension shifts past it."""
  bdim, size = next((d, np.shape(v)[d]) for v, d in zip(vals, dims)
                    if d is not batching.not_mapped)
  operands = []
  for v, d in zip(vals, dims):
    if d is batching.not_mapped:
      shape = list(np.shape(v))
      shape.insert(bdim, size)
      v = lax.broadcast_in_dim(v, shape, [i for i in range(len(shape)) if i != bdim])
    else:
      v = batching.moveaxis(v, d, bdim)
    operands.append(v)
  out = sort_p.bind(*operands, dimension=dimension + (bdim <= dimension),
                    is_stable=is_stable, num_keys=num_keys)
  return out, [bdim] * len(out)


ad.primitive_jvps[sort_p] = _sort_jvp
batching.primitive_batchers[sort_p] = _sort_batch_rule


# ----------------------------------------------------------------------------- top_k

def _top_k_abstract_eval(operand: ShapedArray, *, k: int, axis: int) -> list[ShapedArray]:
  utils.check_dtypes("top_k", (np.integer, np.floating, np.bool_), operand)
  if k < 0:
    raise ValueError(f"top_k k must be nonnegative, got k={k}.")
  if k > operand.shape[axis]:
    raise ValueError(f"top_k k must be no larger than the size {operand.shape[axis]} of axis "
                     f"{axis} of operand {operand.str_short()}, got k={k}.")
  shape = operand.shape[:axis] + (k,) + operand.shape[axis + 1:]
  return [operand.update(shape=shape), ShapedArray(shape, np.int32)]


top_k_p = utils.standard_multi_result_primitive("top_k", _top_k_abstract_eval)


def _top_k_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *, k: int, axis: int
                    ) -> list[ir.Value]:
  """CHLO's `top_k` over the last axis (another axis is swapped with it, and back), as JAX
  lowers it: XLA's CPU backend selects the top k of float32 without sorting the whole axis
  (50 times faster than a sort of 4096 values), and sorts other types itself."""
  last = ctx.avals_in[0].ndim - 1
  perm = list(range(last + 1))
  perm[axis], perm[last] = last, axis
  if axis != last:
    operand = hlo.transpose(operand, ir.DenseI64ArrayAttr.get(perm))
  results = chlo.top_k(operand, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), k))
  if axis == last:
    return list(results)
  return [hlo.transpose(x, ir.DenseI64ArrayAttr.get(perm)) for x in results]


mlir.register_lowering(top_k_p, _top_k_lowering)


def _top_k_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, k: int, axis: int
               ) -> tuple[list[Any], list[Any]]:
  """The values' tangent is the operand's tangent at the returned indices; the indices are
  integers (a float0 zero tangent)."""
  (operand,), (tangent,) = primals, tangents
  values, indices = top_k_p.bind(operand, k=k, axis=axis)
  index_tangent = ad.Zero(core.get_aval(indices).to_tangent_aval())
  if type(tangent) is ad.Zero:
    return [values, indices], [ad.Zero(core.get_aval(values).to_tangent_aval()), index_tangent]
  return [values, indices], [_take_along(tangent, indices, axis), index_tangent]


def _top_k_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *, k: int, axis: int
                      ) -> tuple[list[Any], list[int]]:
  """`top_k` takes any axis, so the batch dimension stays where it is."""
  (operand,), (bdim,) = vals, dims
  return top_k_p.bind(operand, k=k, axis=axis + (bdim <= axis)), [bdim, bdim]


ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch_rule
