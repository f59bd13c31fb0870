"""Slicing primitives: `slice`, `dynamic_slice` and `dynamic_update_slice` (XLA's general
`gather` and `scatter` are in `gather_scatter`).

`slice` takes static bounds. `dynamic_slice` and `dynamic_update_slice` take their start
indices as scalar operands and, like XLA, clamp them so the window fits inside the operand
(an index past the end reads or writes the last window instead of failing).

Derivatives: all three are linear in their array operands, so transposes undo each other
(slice ↔ pad, dynamic_slice ↔ dynamic_update_slice). Start indices are integers: they get no
tangent and no cotangent. Batching a shared start adds a full window along the batch
dimension; `dynamic_slice` and `dynamic_update_slice` with batched start indices become a
gather and a scatter.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, shape_ops, utils
from jaxon._src.lax.gather_scatter import (
    SET_REGION, gather_batch_rule, scatter_batch_rule, scatter_p)
from jaxon._src.lax.slicing_common import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, inserted, linear_jvp,
    operand_weak_type, static_ints, with_batch_dim, zero_cotangents)
from jaxon._src.xla.array import Array


# ----------------------------------------------------------------------------- slice

def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
  """The sub-array `operand[start:limit:stride]` in every dimension, with static bounds.

  Args:
    operand: the array to slice.
    start_indices: the first index of each dimension (`0 <= start <= limit`).
    limit_indices: one past the last index of each dimension (`limit <= shape`).
    strides: the step of each dimension (positive), or None for all ones.

  Example:
    >>> lax.slice(jnp.arange(10), (1,), (8,), (3,))
    Array([1, 4, 7], dtype=int32)
  """
  start = static_ints("slice", start_indices, "start_indices")
  limit = static_ints("slice", limit_indices, "limit_indices")
  stride = None if strides is None else static_ints("slice", strides, "strides")
  if stride is not None and all(s == 1 for s in stride):
    stride = None
  return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=stride)


def _slice_shape_rule(operand: ShapedArray, *, start_indices: tuple[int, ...],
                      limit_indices: tuple[int, ...], strides: tuple[int, ...] | None
                      ) -> tuple[int, ...]:
  strides = strides or (1,) * operand.ndim
  for what, values in (("start_indices", start_indices), ("limit_indices", limit_indices),
                       ("strides", strides)):
    if len(values) != operand.ndim:
      raise TypeError(f"slice {what} must have length equal to the number of dimensions "
                      f"of the operand, got {what}={values} for operand of shape "
                      f"{operand.shape}.")
  if any(s <= 0 for s in strides):
    raise TypeError(f"slice strides must be positive, got {strides}")
  if any(not 0 <= lo <= hi <= d
         for lo, hi, d in zip(start_indices, limit_indices, operand.shape)):
    raise TypeError(f"slice bounds must satisfy 0 <= start <= limit <= shape in every "
                    f"dimension, got start_indices={start_indices}, "
                    f"limit_indices={limit_indices} for operand of shape {operand.shape}.")
  return tuple((hi - lo + s - 1) // s
               for lo, hi, s in zip(start_indices, limit_indices, strides))


slice_p = utils.standard_primitive("slice", _slice_shape_rule, utils.input_dtype,
                                   operand_weak_type)


def _slice_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                    start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                    strides: tuple[int, ...] | None) -> list[ir.Value]:
  strides = strides or (1,) * len(start_indices)
  element = mlir.element_dims(ctx.avals_in[0])  # an extended dtype's, taken whole
  if not core.is_constant_shape((*start_indices, *limit_indices)):  # symbolic bounds
    return [hlo.real_dynamic_slice(
        mlir.aval_to_ir_type(ctx.avals_out[0]), operand,
        mlir.shape_tensor([*start_indices, *(0 for _ in element)]),
        mlir.shape_tensor([*limit_indices, *element]),
        mlir.shape_tensor([*strides, *(1 for _ in element)]))]
  return [hlo.slice(operand, [*start_indices, *(0 for _ in element)],
                    [*limit_indices, *element], [*strides, *(1 for _ in element)])]


mlir.register_lowering(slice_p, _slice_lowering)


def _slice_transpose(ct: Any, operand: Any, *, start_indices: tuple[int, ...],
                     limit_indices: tuple[int, ...], strides: tuple[int, ...] | None
                     ) -> list[Any]:
  """The cotangent goes back where its elements were taken from: zeros padded before,
  after and (for strides) between them."""
  if type(ct) is ad.Zero:
    return zero_cotangents(operand)
  shape = operand.aval.shape
  strides = strides or (1,) * len(shape)
  config = []
  for lo, size, stride, n in zip(start_indices, shape, strides, np.shape(ct)):
    last_taken = lo + (n - 1) * stride if n else lo - 1
    config.append((lo, size - last_taken - 1, stride - 1))
  return [shape_ops.pad(ct, np.zeros((), core.get_aval(ct).dtype), config)]


def _slice_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                      start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                      strides: tuple[int, ...] | None) -> tuple[Any, int]:
  (x,), (bdim,) = vals, dims
  strides = None if strides is None else inserted(strides, bdim, 1)
  return slice_p.bind(x, start_indices=inserted(start_indices, bdim, 0),
                      limit_indices=inserted(limit_indices, bdim, np.shape(x)[bdim]),
                      strides=strides), bdim


ad.deflinear(slice_p, _slice_transpose)
batching.primitive_batchers[slice_p] = _slice_batch_rule


def _dim(d: Any) -> Any:
  return d if core.is_symbolic_dim(d) else int(d)


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
  """`operand[start:limit:stride]` along `axis` only; None and negative bounds count as in
  Python slices (None is the start or the end, negative counts from the end)."""
  shape = np.shape(operand)
  axis = utils.canonicalize_axis(int(axis), len(shape))
  size = shape[axis]
  start = 0 if start_index is None else _dim(start_index)
  limit = size if limit_index is None else _dim(limit_index)
  start, limit = (start + size if start < 0 else start), (limit + size if limit < 0 else limit)
  starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
  starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
  return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
  """The entry `index` along `axis` (negative counts from the end); without `keepdims` the
  axis is dropped. A static index must be in bounds (IndexError otherwise)."""
  shape = np.shape(operand)
  axis = utils.canonicalize_axis(int(axis), len(shape))
  index, size = int(index), shape[axis]
  wrapped = index + size if index < 0 else index
  if not 0 <= wrapped < size:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
  result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return result if keepdims else shape_ops.squeeze(result, (axis,))


# ----------------------------------------------------------------------------- start indices

def _is_static_int(x: Any) -> bool:
  return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def normalize_index(index: Any, size: int) -> Any:
  """`index + size` where `index` is negative: NumPy's counting from the end.

  Static indices are normalized in Python; traced ones with `lt` and `select_n`, which
  leaves unsigned indices alone."""
  if _is_static_int(index):
    return index + size if index < 0 else index
  dtype = dtypes.dtype(index)
  if not dtypes.issubdtype(dtype, np.signedinteger):
    return index
  size_ = lax._convert_element_type(size, dtype)
  zero = lax._convert_element_type(0, dtype)
  return lax.select_n(lax.lt(index, zero), index, lax.add(index, size_))


def _index_dtype(name: str, indices: Sequence[Any]) -> np.dtype:
  """The one integer dtype all start indices are converted to (XLA wants them equal)."""
  for pos, i in enumerate(indices):
    if not dtypes.is_integer(dtypes.dtype(i)) or np.ndim(i) != 0:
      aval = core.get_aval(i)
      raise TypeError(f"{name} start indices must be scalars of integer type, got "
                      f"{aval.str_short()} at position {pos}.")
  if not indices:
    return dtypes.canonicalize_dtype(np.int32)
  return dtypes.canonicalize_dtype(dtypes.result_type(*indices))


def _dynamic_start_indices(name: str, operand_shape: tuple[int, ...], start_indices: Any,
                           allow_negative_indices: bool | Sequence[bool]) -> list[Any]:
  """The start indices as a list of scalars of one dtype, negative ones normalized."""
  if isinstance(start_indices, (Array, core.Tracer, np.ndarray)):
    if np.ndim(start_indices) != 1:
      raise TypeError(f"{name} start_indices must be a sequence of scalars or a 1D array, "
                      f"got an array of shape {np.shape(start_indices)}.")
    start_indices = [start_indices[i] for i in range(np.shape(start_indices)[0])]
  start_indices = list(start_indices)
  if len(start_indices) != len(operand_shape):
    raise ValueError(f"Length of {name} start_indices must match the number of operand "
                     f"dimensions ({len(start_indices)} vs {len(operand_shape)}): operand "
                     f"has shape {operand_shape}.")
  dtype = _index_dtype(name, start_indices)
  allow = allow_negative_indices
  allow = [allow] * len(start_indices) if isinstance(allow, bool) else list(allow)
  return [lax._convert_element_type(normalize_index(i, d) if ok else i, dtype)
          for i, d, ok in zip(start_indices, operand_shape, allow)]


def _check_start_avals(name: str, operand: ShapedArray, starts: Sequence[ShapedArray]) -> None:
  if len(starts) != operand.ndim:
    raise TypeError(f"{name} takes one start index per operand dimension: got "
                    f"{len(starts)} for operand of shape {operand.shape}.")
  if any(s.shape or not dtypes.is_integer(s.dtype) for s in starts):
    types = ", ".join(s.str_short() for s in starts)
    raise TypeError(f"{name} start indices must be integer scalars, got {types}.")
  if len({s.dtype for s in starts}) > 1:
    types = ", ".join(s.str_short() for s in starts)
    raise TypeError(f"{name} start indices must all have the same dtype, got {types}.")


# ----------------------------------------------------------------------------- dynamic_slice

def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
  """The window of static `slice_sizes` starting at traced `start_indices`.

  Start indices are clamped so the window fits (XLA's semantics): with `x = arange(5)`,
  `dynamic_slice(x, (4,), (2,))` is `[3, 4]`. Negative indices count from the end unless
  `allow_negative_indices` is False.

  Args:
    operand: the array to slice.
    start_indices: one integer scalar per dimension, or a 1D integer array.
    slice_sizes: the static size of the window in each dimension.
    allow_negative_indices: whether negative start indices count from the end (one flag, or
      one per dimension).
  """
  shape = np.shape(operand)
  starts = _dynamic_start_indices("dynamic_slice", shape, start_indices,
                                  allow_negative_indices)
  sizes = static_ints("dynamic_slice", slice_sizes, "slice_sizes")
  return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


def _dynamic_slice_shape_rule(operand: ShapedArray, *starts: ShapedArray,
                              slice_sizes: tuple[int, ...]) -> tuple[int, ...]:
  _check_start_avals("dynamic_slice", operand, starts)
  if len(slice_sizes) != operand.ndim or any(
      not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
    raise TypeError(f"dynamic_slice slice_sizes must have one entry per operand dimension "
                    f"with 0 <= size <= dimension, got slice_sizes={slice_sizes} for operand "
                    f"of shape {operand.shape}.")
  return slice_sizes


dynamic_slice_p = utils.standard_primitive("dynamic_slice", _dynamic_slice_shape_rule,
                                           utils.input_dtype, operand_weak_type)


def _dynamic_slice_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value,
                            *starts: ir.Value, slice_sizes: tuple[int, ...]) -> list[ir.Value]:
  if not slice_sizes:  # a scalar is its own slice (and `sizes = []` does not parse back)
    return [operand]
  element = mlir.element_dims(ctx.avals_in[0])  # an extended dtype's, taken whole
  return [hlo.dynamic_slice(operand, [*starts, *_zero_starts(ctx.avals_in[1:], element)],
                            [*slice_sizes, *element])]


def _zero_starts(start_avals: Sequence[ShapedArray], element: tuple[int, ...]
                 ) -> list[ir.Value]:
  """Start indices 0 for the element dimensions of an extended dtype."""
  dtype = start_avals[0].dtype if start_avals else np.dtype(np.int32)
  return [mlir.ir_constant(np.zeros((), dtype)) for _ in element]


mlir.register_lowering(dynamic_slice_p, _dynamic_slice_lowering)


def _dynamic_slice_transpose(ct: Any, operand: Any, *starts: Any,
                             slice_sizes: tuple[int, ...]) -> list[Any]:
  """The cotangent written into zeros at the same (equally clamped) start indices."""
  if type(ct) is ad.Zero:
    return zero_cotangents(operand, *starts)
  zeros = ad.zeros_like_aval(operand.aval)
  return [dynamic_update_slice_p.bind(zeros, ct, *starts), *[None] * len(starts)]


def _dynamic_slice_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                              slice_sizes: tuple[int, ...]) -> tuple[Any, int]:
  """With shared start indices: one more dynamic_slice dimension, taken whole. With
  per-example start indices: a gather of one window per example."""
  (x, *starts), (x_bdim, *start_bdims) = vals, dims
  if all(d is batching.not_mapped for d in start_bdims):
    starts = inserted(starts, x_bdim, np.zeros((), _start_dtype(starts)))
    sizes = inserted(slice_sizes, x_bdim, np.shape(x)[x_bdim])
    return dynamic_slice_p.bind(x, *starts, slice_sizes=sizes), x_bdim
  everything = tuple(range(len(starts)))
  dnums = GatherDimensionNumbers(offset_dims=everything, collapsed_slice_dims=(),
                                 start_index_map=everything)
  return gather_batch_rule(
      [x, _stacked_starts(starts, start_bdims, lax._batch_size(vals, dims))], [x_bdim, 0],
      dimension_numbers=dnums, slice_sizes=slice_sizes, unique_indices=False,
      indices_are_sorted=False, mode=GatherScatterMode.CLIP, fill_value=None)


def _start_dtype(starts: Sequence[Any]) -> np.dtype:
  return core.get_aval(starts[0]).dtype if starts else dtypes.canonicalize_dtype(np.int32)


def _stacked_starts(starts: Sequence[Any], bdims: Sequence[int | None], size: int) -> Any:
  """Batched scalar start indices as one (batch, len(starts)) index array: the index
  vectors of the gather or scatter that stands in for a batched dynamic slice."""
  columns = [lax.broadcast_in_dim(batching.bdim_at_front(s, d, size), (size, 1), (0,))
             for s, d in zip(starts, bdims)]
  return columns[0] if len(columns) == 1 else shape_ops.concatenate(columns, 1)


ad.defjvp(dynamic_slice_p, lambda g, operand, *starts, slice_sizes: dynamic_slice_p.bind(
    g, *starts, slice_sizes=slice_sizes))
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose
batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch_rule


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
  """`dynamic_slice` along `axis` only: the whole of every other dimension."""
  shape = np.shape(operand)
  axis = utils.canonicalize_axis(int(axis), len(shape))
  starts: list[Any] = [0] * len(shape)
  sizes = list(shape)
  starts[axis], sizes[axis] = start_index, int(slice_size)
  allow = [False] * len(shape)
  allow[axis] = allow_negative_indices
  return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
  """The entry at traced `index` along `axis` (clamped); without `keepdims` the axis is
  dropped."""
  result = dynamic_slice_in_dim(operand, index, 1, axis,
                                allow_negative_indices=allow_negative_indices)
  if keepdims:
    return result
  return shape_ops.squeeze(result, (utils.canonicalize_axis(int(axis), np.ndim(operand)),))


# ----------------------------------------------------------------------------- dynamic_update_slice

def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
  """`operand` with the window at `start_indices` replaced by `update`.

  Start indices are clamped so `update` fits inside `operand` (XLA's semantics); negative
  ones count from the end unless `allow_negative_indices` is False. `update` must have the
  operand's dtype and rank.

  Example:
    >>> lax.dynamic_update_slice(jnp.zeros(5), jnp.ones(2), (4,))
    Array([0., 0., 0., 1., 1.], dtype=float32)
  """
  shape = np.shape(operand)
  starts = _dynamic_start_indices("dynamic_update_slice", shape, start_indices,
                                  allow_negative_indices)
  return dynamic_update_slice_p.bind(operand, update, *starts)


def _dynamic_update_slice_shape_rule(operand: ShapedArray, update: ShapedArray,
                                     *starts: ShapedArray) -> tuple[int, ...]:
  _check_start_avals("dynamic_update_slice", operand, starts)
  if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
    raise TypeError(f"dynamic_update_slice update must have the operand's rank and fit "
                    f"inside it, got update of shape {update.shape} for operand of shape "
                    f"{operand.shape}.")
  return operand.shape


def _dynamic_update_slice_dtype_rule(operand: ShapedArray, update: ShapedArray,
                                     *starts: ShapedArray) -> np.dtype:
  utils.check_same_dtypes("dynamic_update_slice", operand, update)
  return operand.dtype


dynamic_update_slice_p = utils.standard_primitive(
    "dynamic_update_slice", _dynamic_update_slice_shape_rule, _dynamic_update_slice_dtype_rule,
    operand_weak_type)


def _dynamic_update_slice_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value,
                                   update: ir.Value, *starts: ir.Value) -> list[ir.Value]:
  element = mlir.element_dims(ctx.avals_in[0])
  return [hlo.dynamic_update_slice(operand, update,
                                   [*starts, *_zero_starts(ctx.avals_in[2:], element)])]


mlir.register_lowering(dynamic_update_slice_p, _dynamic_update_slice_lowering)


def _dynamic_update_slice_transpose(ct: Any, operand: Any, update: Any, *starts: Any
                                    ) -> list[Any]:
  """The operand's cotangent is `ct` with the overwritten window zeroed; the update's is
  that window of `ct`."""
  if type(ct) is ad.Zero:
    return zero_cotangents(operand, update, *starts)
  update_aval = shape_ops._aval(update)
  ct_operand = ct_update = None
  if ad.is_undefined_primal(operand):
    zeros = ad.zeros_like_aval(update_aval)
    ct_operand = dynamic_update_slice_p.bind(ct, zeros, *starts)
  if ad.is_undefined_primal(update):
    ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape)
  return [ct_operand, ct_update, *[None] * len(starts)]


def _dynamic_update_slice_batch_rule(vals: Sequence[Any], dims: Sequence[int | None]
                                     ) -> tuple[Any, int]:
  """With shared start indices: one more dimension, updated whole (operand and update get
  their batch dimensions at the same place). With per-example start indices: a scatter of
  one window per example."""
  (x, update, *starts), (x_bdim, update_bdim, *start_bdims) = vals, dims
  size = lax._batch_size(vals, dims)
  if all(d is batching.not_mapped for d in start_bdims):
    bdim = update_bdim if x_bdim is batching.not_mapped else x_bdim
    x = with_batch_dim(x, x_bdim, size, bdim)
    update = with_batch_dim(update, update_bdim, size, bdim)
    starts = inserted(starts, bdim, np.zeros((), _start_dtype(starts)))
    return dynamic_update_slice_p.bind(x, update, *starts), bdim
  everything = tuple(range(len(starts)))
  dnums = ScatterDimensionNumbers(update_window_dims=everything, inserted_window_dims=(),
                                  scatter_dims_to_operand_dims=everything)
  return scatter_batch_rule(
      scatter_p, [x, _stacked_starts(starts, start_bdims, size), update],
      [x_bdim, 0, update_bdim], dimension_numbers=dnums, indices_are_sorted=True,
      unique_indices=True, mode=GatherScatterMode.CLIP, **SET_REGION)


ad.primitive_jvps[dynamic_update_slice_p] = linear_jvp(dynamic_update_slice_p, (0, 1))
ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose
batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch_rule


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
  """`dynamic_update_slice` at `start_index` along `axis`, zero along every other one."""
  ndim = np.ndim(operand)
  axis = utils.canonicalize_axis(int(axis), ndim)
  starts: list[Any] = [0] * ndim
  starts[axis] = start_index
  allow = [False] * ndim
  allow[axis] = allow_negative_indices
  return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
  """Replaces the entry at `index` along `axis`; `update` may lack that axis."""
  ndim = np.ndim(operand)
  axis = utils.canonicalize_axis(int(axis), ndim)
  if np.ndim(update) == ndim - 1:
    update = shape_ops.expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)
