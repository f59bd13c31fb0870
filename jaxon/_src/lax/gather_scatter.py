"""XLA's general `gather` and the `scatter` family.

`gather` and `scatter` are described by *dimension numbers* (in `slicing_common`), which say
how the dimensions of the operand, the index array and the result relate.

Derivatives: gather and scatter-add are linear in their array operands and transpose to each
other; scatter (which overwrites) transposes to a gather of the cotangent and a scatter of
zeros; scatter-mul, -min and -max differentiate by their own rules. Index arrays are
integers: they get no tangent and no cotangent. Batching moves the batch dimension into the
dimension numbers: a batched operand read with shared indices gains a window dimension;
batched indices gain an index batch dimension, paired with the operand's batch dimension as
a *batching* dimension when the operand is batched too.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, reductions, shape_ops, utils
from jaxon._src.lax.slicing_common import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, batched_dnums,
    canonical_dnums, check_batching_dims, check_dims, check_index_array, check_index_map,
    clamp_indices, in_bounds_mask, index_upper_bounds, index_vector_last, inserted,
    linear_jvp, operand_weak_type, static_ints, unbatched_rank, window_operand_dims,
    with_batch_dim, zero_cotangents)

# ----------------------------------------------------------------------------- gather

def _gather_fill_value(dtype: np.dtype) -> Any:
  """What FILL_OR_DROP returns out of bounds by default: NaN, or the most extreme integer
  (the minimum for signed types, the maximum for unsigned ones), or True."""
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.issubdtype(dtype, np.signedinteger):
    return int(dtypes.iinfo(dtype).min)
  if dtypes.issubdtype(dtype, np.unsignedinteger):
    return int(dtypes.iinfo(dtype).max)
  return True


_NAN = float("nan")


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
  """XLA's gather: one window of `slice_sizes` from `operand` per index vector.

  Prefer NumPy-style indexing (`x[idx]`), which builds the dimension numbers for you.

  Args:
    operand: the array to read from.
    start_indices: integer array whose last dimension holds the start index vectors.
    dimension_numbers: a `GatherDimensionNumbers`.
    slice_sizes: the window size in each operand dimension.
    unique_indices: a promise that windows do not overlap (not checked).
    indices_are_sorted: a promise that the indices are sorted (not checked).
    mode: out-of-bounds behaviour (default 'promise_in_bounds', which XLA clamps);
      'clip' clamps, 'fill'/'drop' return `fill_value` for windows that do not fit.
    fill_value: the value of out-of-bounds windows in 'fill' mode; defaults to NaN for
      inexact types, the minimum of signed and the maximum of unsigned integers, True.

  Example:
    >>> x = jnp.array([10, 11, 12])
    >>> dnums = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
    ...                                    start_index_map=(0,))
    >>> lax.gather(x, jnp.array([[2], [0]]), dnums, slice_sizes=(1,))
    Array([12, 10], dtype=int32)
  """
  dnums = canonical_dnums(dimension_numbers, GatherDimensionNumbers, "gather")
  mode = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
                                    else mode)
  if mode == GatherScatterMode.FILL_OR_DROP:
    dtype = dtypes.dtype(operand, canonicalize=True)
    if dtypes.is_extended(dtype):  # keys are filled word by word
      dtype = dtype.element_dtype
    fill_value = _gather_fill_value(dtype) if fill_value is None else fill_value
    # astype wraps an out-of-range integer around, as JAX's conversion does
    fill_value = np.asarray(core.concrete_or_error(None, fill_value, "gather fill_value")
                            ).astype(dtype).item()
    if fill_value != fill_value:  # one NaN object, so equal params hit the compile cache
      fill_value = _NAN
  else:
    fill_value = None
  return gather_p.bind(operand, start_indices, dimension_numbers=dnums,
                       slice_sizes=static_ints("gather", slice_sizes, "slice_sizes"),
                       unique_indices=bool(unique_indices),
                       indices_are_sorted=bool(indices_are_sorted), mode=mode,
                       fill_value=fill_value)


def _gather_shape_rule(operand: ShapedArray, indices: ShapedArray, *,
                       dimension_numbers: GatherDimensionNumbers,
                       slice_sizes: tuple[int, ...], **_: Any) -> tuple[int, ...]:
  dn = dimension_numbers
  check_index_array("gather", indices)
  out_rank = len(dn.offset_dims) + indices.ndim - 1
  check_dims("gather", "offset_dims", dn.offset_dims, out_rank)
  check_dims("gather", "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim)
  check_batching_dims("gather", operand, indices, dn.operand_batching_dims,
                       dn.start_indices_batching_dims, "start_indices_batching_dims")
  if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims):
    raise TypeError(f"gather collapsed_slice_dims={dn.collapsed_slice_dims} and "
                    f"operand_batching_dims={dn.operand_batching_dims} must be disjoint.")
  check_index_map("gather", "start_index_map", dn.start_index_map, operand, indices,
                   dn.operand_batching_dims)
  window_dims = window_operand_dims(operand.ndim, dn.collapsed_slice_dims,
                                     dn.operand_batching_dims)
  if len(window_dims) != len(dn.offset_dims):
    raise TypeError(f"gather needs one offset_dim per operand dimension that is neither "
                    f"collapsed nor batching: operand of shape {operand.shape} has "
                    f"{len(window_dims)}, got offset_dims={dn.offset_dims}.")
  if len(slice_sizes) != operand.ndim or any(
      not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
    raise TypeError(f"gather slice_sizes must have one entry per operand dimension with "
                    f"0 <= size <= dimension, got slice_sizes={slice_sizes} for operand of "
                    f"shape {operand.shape}.")
  for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
    if slice_sizes[d] > 1:
      raise TypeError(f"gather can only collapse or batch operand dimensions of slice size "
                      f"1, but slice_sizes[{d}]={slice_sizes[d]} (slice_sizes={slice_sizes}).")
  offsets = iter([slice_sizes[d] for d in window_dims])
  batch = iter(indices.shape[:-1])
  return tuple(next(offsets) if d in dn.offset_dims else next(batch) for d in range(out_rank))


gather_p = utils.standard_primitive("gather", _gather_shape_rule, utils.input_dtype,
                                    operand_weak_type)


def _gather_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, indices: ir.Value, *,
                     dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple[int, ...],
                     unique_indices: bool, indices_are_sorted: bool, mode: GatherScatterMode,
                     fill_value: Any) -> list[ir.Value]:
  dn = dimension_numbers
  operand_aval, indices_aval = ctx.avals_in
  out_aval = ctx.avals_out[0]
  upper = index_upper_bounds(operand_aval.shape, slice_sizes, dn.start_index_map)
  if mode == GatherScatterMode.CLIP:
    indices = clamp_indices(indices, indices_aval, upper)
  element = mlir.element_dims(operand_aval)  # an extended dtype's: whole windows of it
  element_out_dims = range(out_aval.ndim, out_aval.ndim + len(element))
  hlo_dnums = hlo.GatherDimensionNumbers.get(
      offset_dims=[*dn.offset_dims, *element_out_dims],
      collapsed_slice_dims=list(dn.collapsed_slice_dims),
      operand_batching_dims=list(dn.operand_batching_dims),
      start_indices_batching_dims=list(dn.start_indices_batching_dims),
      start_index_map=list(dn.start_index_map), index_vector_dim=indices_aval.ndim - 1)
  out = hlo.gather(operand, indices, hlo_dnums, [*slice_sizes, *element],
                   indices_are_sorted=ir.BoolAttr.get(indices_are_sorted))
  if mode != GatherScatterMode.FILL_OR_DROP:
    return [out]
  mask = in_bounds_mask(indices, indices_aval, upper)
  batch_dims = [d for d in range(out_aval.ndim) if d not in dn.offset_dims]
  out_aval = core.physical_aval(out_aval)
  mask = hlo.broadcast_in_dim(mlir.aval_to_ir_type(out_aval.update(dtype=np.bool_)), mask,
                              batch_dims)
  return [hlo.select(mask, out, mlir.full_like_aval(fill_value, out_aval))]


mlir.register_lowering(gather_p, _gather_lowering)


def _gather_jvp(g: Any, operand: Any, indices: Any, *, dimension_numbers: GatherDimensionNumbers,
                slice_sizes: tuple[int, ...], unique_indices: bool, indices_are_sorted: bool,
                mode: GatherScatterMode, fill_value: Any) -> Any:
  """The same gather of the tangent; windows filled out of bounds have tangent 0."""
  return gather(g, indices, dimension_numbers, slice_sizes, unique_indices=unique_indices,
                indices_are_sorted=indices_are_sorted, mode=mode, fill_value=0)


def _gather_transpose(ct: Any, operand: Any, indices: Any, *,
                      dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple[int, ...],
                      unique_indices: bool, indices_are_sorted: bool, mode: GatherScatterMode,
                      fill_value: Any) -> list[Any]:
  """Each window of `ct` added back where it was read (windows read twice get both);
  out-of-bounds windows, dropped by the scatter, contribute nothing."""
  if type(ct) is ad.Zero:
    return zero_cotangents(operand, indices)
  # The two kinds of dimension numbers list the same dimensions in the same order.
  dnums = ScatterDimensionNumbers(*dimension_numbers)
  zeros = ad.zeros_like_aval(operand.aval)
  return [scatter_add(zeros, indices, ct, dnums, indices_are_sorted=indices_are_sorted,
                      unique_indices=unique_indices, mode=mode), None]


def gather_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                      dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple[int, ...],
                      **params: Any) -> tuple[Any, int]:
  (operand, indices), (operand_bdim, indices_bdim) = vals, dims
  indices, indices_bdim = index_vector_last(indices, indices_bdim)
  dnums, out_bdim = batched_dnums(dimension_numbers, operand_bdim, indices_bdim,
                                   unbatched_rank(indices, indices_bdim))
  if operand_bdim is not batching.not_mapped:
    # A batching dimension's slice is one element, or none when the batch is empty (as JAX).
    size = np.shape(operand)[operand_bdim]
    window = size if indices_bdim is batching.not_mapped else min(size, 1)
    slice_sizes = inserted(slice_sizes, operand_bdim, window)
  return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                       **params), out_bdim


ad.defjvp(gather_p, _gather_jvp, None)
ad.primitive_transposes[gather_p] = _gather_transpose
batching.primitive_batchers[gather_p] = gather_batch_rule


def _scatter_shape_rule(name: str, operand: ShapedArray, indices: ShapedArray,
                        updates: ShapedArray, *, dimension_numbers: ScatterDimensionNumbers,
                        **_: Any) -> tuple[int, ...]:
  dn = dimension_numbers
  check_index_array(name, indices)
  check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim)
  check_dims(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim)
  check_batching_dims(name, operand, indices, dn.operand_batching_dims,
                       dn.scatter_indices_batching_dims, "scatter_indices_batching_dims")
  if set(dn.inserted_window_dims) & set(dn.operand_batching_dims):
    raise TypeError(f"{name} inserted_window_dims={dn.inserted_window_dims} and "
                    f"operand_batching_dims={dn.operand_batching_dims} must be disjoint.")
  check_index_map(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                   operand, indices, dn.operand_batching_dims)
  window_dims = window_operand_dims(operand.ndim, dn.inserted_window_dims,
                                     dn.operand_batching_dims)
  if len(window_dims) != len(dn.update_window_dims):
    raise TypeError(f"{name} needs one update_window_dim per operand dimension that is "
                    f"neither inserted nor batching: operand of shape {operand.shape} has "
                    f"{len(window_dims)}, got update_window_dims={dn.update_window_dims}.")
  update_batch = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  if [updates.shape[d] for d in update_batch] != list(indices.shape[:-1]) or any(
      updates.shape[u] > operand.shape[o] for u, o in zip(dn.update_window_dims, window_dims)):
    raise TypeError(f"{name} updates of shape {updates.shape} do not match: its scatter "
                    f"dimensions must equal the index batch shape {indices.shape[:-1]} and "
                    f"its window dimensions {dn.update_window_dims} must fit in operand of "
                    f"shape {operand.shape}.")
  return operand.shape


def _scatter_dtype_rule(name: str, operand: ShapedArray, indices: ShapedArray,
                        updates: ShapedArray, **_: Any) -> np.dtype:
  utils.check_same_dtypes(name, operand, updates)
  return operand.dtype


def _scatter_window(operand: ShapedArray, updates: ShapedArray,
                    dn: ScatterDimensionNumbers) -> list[int]:
  """The window size in each operand dimension (1 where updates have no dimension)."""
  window = [1] * operand.ndim
  window_dims = window_operand_dims(operand.ndim, dn.inserted_window_dims,
                                     dn.operand_batching_dims)
  for o, u in zip(window_dims, dn.update_window_dims):
    window[o] = updates.shape[u]
  return window


def _scatter_lowering(combine: Callable[[ir.Value, ir.Value], ir.Value]) -> mlir.LoweringRule:
  """`stablehlo.scatter` whose update computation is `combine(old, update)`, or for
  scatter_apply the scalar jaxpr it was given."""
  def rule(ctx: mlir.LoweringRuleContext, operand: ir.Value, indices: ir.Value,
           updates: ir.Value, *, dimension_numbers: ScatterDimensionNumbers,
           indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
           update_jaxpr: core.Jaxpr | None = None, update_consts: tuple = ()
           ) -> list[ir.Value]:
    dn = dimension_numbers
    operand_aval, indices_aval, updates_aval = ctx.avals_in
    if mode == GatherScatterMode.CLIP:
      window = _scatter_window(operand_aval, updates_aval, dn)
      upper = index_upper_bounds(operand_aval.shape, window, dn.scatter_dims_to_operand_dims)
      indices = clamp_indices(indices, indices_aval, upper)
    element = mlir.element_dims(operand_aval)  # an extended dtype's, updated whole
    element_update_dims = range(updates_aval.ndim, updates_aval.ndim + len(element))
    hlo_dnums = hlo.ScatterDimensionNumbers.get(
        update_window_dims=[*dn.update_window_dims, *element_update_dims],
        inserted_window_dims=list(dn.inserted_window_dims),
        input_batching_dims=list(dn.operand_batching_dims),
        scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
        scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
        index_vector_dim=indices_aval.ndim - 1)
    op = hlo.ScatterOp([mlir.aval_to_ir_type(ctx.avals_out[0])], [operand], indices, [updates],
                       hlo_dnums, indices_are_sorted=ir.BoolAttr.get(indices_are_sorted),
                       unique_indices=ir.BoolAttr.get(unique_indices))
    scalar = mlir.aval_to_ir_type(core.physical_aval(operand_aval).update(shape=()))
    block = op.update_computation.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
      if update_jaxpr is None:
        hlo.return_([combine(*block.arguments)])
      else:
        hlo.return_(mlir.closed_jaxpr_subcomp(
            ctx.module_context, core.ClosedJaxpr(update_jaxpr, update_consts), block.arguments))
    return op.results
  return rule


def _scatter_primitive(name: str, combine: Callable[[ir.Value, ir.Value], ir.Value]
                       ) -> core.Primitive:
  prim = utils.standard_primitive(name, functools.partial(_scatter_shape_rule, name),
                                  functools.partial(_scatter_dtype_rule, name),
                                  operand_weak_type)
  mlir.register_lowering(prim, _scatter_lowering(combine))
  return prim


scatter_p = _scatter_primitive("scatter", lambda old, new: new)
scatter_add_p = _scatter_primitive("scatter-add", hlo.add)
scatter_sub_p = _scatter_primitive("scatter-sub", hlo.subtract)
scatter_mul_p = _scatter_primitive("scatter-mul", hlo.multiply)
scatter_min_p = _scatter_primitive("scatter-min", hlo.minimum)
scatter_max_p = _scatter_primitive("scatter-max", hlo.maximum)


# scatter's region params (as JAX's): the scalar jaxpr of scatter_apply, or None
SET_REGION = {"update_jaxpr": None, "update_consts": ()}


def _scatter_bind(prim: core.Primitive, operand: Any, scatter_indices: Any, updates: Any,
                  dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                  unique_indices: bool, mode: str | GatherScatterMode | None,
                  **region: Any) -> Any:
  dnums = canonical_dnums(dimension_numbers, ScatterDimensionNumbers, prim.name)
  if prim is scatter_p:
    region = region or SET_REGION
  return prim.bind(operand, scatter_indices, updates, dimension_numbers=dnums,
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode),
                   **region)


def _scatter_function(prim: core.Primitive, how: str) -> Callable[..., Any]:
  def fn(operand: Any, scatter_indices: Any, updates: Any,
         dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
         unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter_bind(prim, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)
  fn.__name__ = fn.__qualname__ = prim.name.replace("-", "_")
  fn.__doc__ = f"""XLA's scatter, where each update {how}.

  Prefer `x.at[idx]` (NumPy-style indexing), which builds the dimension numbers for you.

  Args:
    operand: the array to update (a new array is returned).
    scatter_indices: integer array whose last dimension holds the start index vectors.
    updates: one window per index vector, with `operand`'s dtype.
    dimension_numbers: a `ScatterDimensionNumbers`.
    indices_are_sorted: a promise that the indices are sorted (not checked).
    unique_indices: a promise that windows do not overlap (not checked).
    mode: out-of-bounds behaviour: 'clip' clamps indices so windows fit; 'fill', 'drop'
      and None (the default) drop windows that do not fit; 'promise_in_bounds' leaves it
      to XLA (which drops them).
  """
  return fn


scatter = _scatter_function(scatter_p, "replaces the operand's values (repeated indices "
                            "apply in an unspecified order)")
scatter_add = _scatter_function(scatter_add_p, "is added to the operand")
scatter_sub = _scatter_function(scatter_sub_p, "is subtracted from the operand")
scatter_mul = _scatter_function(scatter_mul_p, "multiplies the operand")
scatter_min = _scatter_function(scatter_min_p, "is combined with the operand by minimum")
scatter_max = _scatter_function(scatter_max_p, "is combined with the operand by maximum")


@dataclasses.dataclass(frozen=True)
class _OldValueOnly:
  """scatter_apply's update computation: `func` of the operand's value, the update
  ignored. It hashes as `func`, so applying one function again reuses its jaxpr (and the
  compiled program)."""
  func: Callable[[Any], Any]

  def __call__(self, old: Any, update: Any) -> Any:
    return self.func(old)


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                  ) -> Any:
  """XLA's scatter where each element a window covers becomes `func` of its value.

  `func` maps a scalar of `operand`'s dtype to one of the same dtype; it is traced once, on
  scalars, and runs inside the scatter (so it cannot close over traced values). An element
  covered by several windows gets `func` applied once per window. Prefer
  `x.at[idx].apply(func)`, which builds the dimension numbers for you.

  Args:
    operand: the array to update (a new array is returned).
    scatter_indices: integer array whose last dimension holds the start index vectors.
    func: the scalar function to apply.
    dimension_numbers: a `ScatterDimensionNumbers`.
    update_shape: the shape the updates of an equivalent `scatter` would have.
    indices_are_sorted, unique_indices, mode: as for `scatter`. Derivatives need
      `unique_indices=True` (a promise that no element is covered twice).
  """
  dtype = core.get_aval(operand).dtype
  if dtypes.issubdtype(dtype, dtypes.extended):
    raise TypeError(f"scatter_apply needs an array of numbers, got an operand of dtype "
                    f"{dtype}.")
  closed = reductions.computation_jaxpr(_OldValueOnly(func), tree_util.tree_structure(0),
                                        (ShapedArray((), dtype),), "scatter_apply function")
  unused = lax.full(tuple(update_shape), 0, dtype)
  return _scatter_bind(scatter_p, operand, scatter_indices, unused, dimension_numbers,
                       indices_are_sorted, unique_indices, mode, update_jaxpr=closed.jaxpr,
                       update_consts=tuple(closed.consts))


# ----------------------------------------------------------------------------- scatter rules

def _read_windows(x: Any, indices: Any, updates_aval: ShapedArray,
                  dimension_numbers: ScatterDimensionNumbers, *, mode: GatherScatterMode,
                  indices_are_sorted: bool, unique_indices: bool, **region: Any) -> Any:
  """The gather that reads, shaped like the updates, the windows of `x` (shaped like the
  operand) that the scatter with these indices (and any `region`) writes; 0 where a window
  is dropped."""
  x_aval = core.get_aval(x)
  return gather(x, indices, GatherDimensionNumbers(*dimension_numbers),
                _scatter_window(x_aval, updates_aval, dimension_numbers),
                indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                mode=mode, fill_value=0)


def _scatter_linear_transpose(prim: core.Primitive) -> Callable[..., list[Any]]:
  """The transpose of scatter-add, scatter-sub and (with unique indices) scatter: the
  operand's cotangent is `ct`, minus what the scatter overwrote; the updates' are the
  windows of `ct` they landed in (negated for scatter-sub)."""
  def transpose(ct: Any, operand: Any, indices: Any, updates: Any, **params: Any
                ) -> list[Any]:
    if params.get("update_jaxpr") is not None:
      raise NotImplementedError("scatter_apply is not linear: it has no transpose.")
    if prim is scatter_p and not params["unique_indices"]:
      raise NotImplementedError("scatter is transposed only with unique indices (its JVP "
                                "with possibly repeated indices uses scatter-add).")
    if type(ct) is ad.Zero:
      return zero_cotangents(operand, indices, updates)
    updates_aval = shape_ops._aval(updates)
    ct_operand = ct_updates = None
    if ad.is_undefined_primal(operand):
      ct_operand = ct if prim is not scatter_p else scatter_p.bind(
          ct, indices, ad.zeros_like_aval(updates_aval), **params)
    if ad.is_undefined_primal(updates):
      ct_updates = _read_windows(ct, indices, updates_aval, **params)
      ct_updates = lax.neg(ct_updates) if prim is scatter_sub_p else ct_updates
    return [ct_operand, None, ct_updates]
  return transpose


def _scatter_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
                 update_jaxpr: core.Jaxpr | None = None, update_consts: tuple = (),
                 **params: Any) -> tuple[Any, Any]:
  """With unique indices scatter is linear in (operand, updates). Otherwise which of the
  updates to one element wins is up to XLA, so both outputs are rebuilt from one choice:
  each update's id (1 + its index vector's number) is scattered, the ids read back say
  which update elements won, and the outputs are the operand where nothing landed plus a
  scatter-add of the winners alone."""
  if update_jaxpr is not None:
    return _scatter_apply_jvp(primals, tangents, update_jaxpr, update_consts, **params)
  if params["unique_indices"]:
    return _scatter_unique_jvp(primals, tangents, **SET_REGION, **params)
  operand, indices, updates = primals
  updates_aval = core.get_aval(updates)
  dn = params["dimension_numbers"]
  scatter_dims = [d for d in range(updates_aval.ndim) if d not in dn.update_window_dims]
  batch_shape = [updates_aval.shape[d] for d in scatter_dims]
  ids = shape_ops.reshape(lax.iota(np.int32, math.prod(batch_shape)), batch_shape)
  ids = lax.add(lax.broadcast_in_dim(ids, updates_aval.shape, scatter_dims), np.int32(1))
  landed = scatter_p.bind(lax.full(np.shape(operand), 0, np.int32), indices, ids,
                          **SET_REGION, **params)
  untouched = lax.eq(landed, np.int32(0))
  won = lax.eq(_read_windows(landed, indices, updates_aval, **params), ids)

  def winners(x: Any, y: Any) -> Any:
    kept = lax.select(untouched, x, lax.full_like(x, 0))
    return scatter_add_p.bind(kept, indices, lax.select(won, y, lax.full_like(y, 0)),
                              **params)
  t_operand, t_updates = ad.instantiate_zeros(tangents[0]), ad.instantiate_zeros(tangents[2])
  return winners(operand, updates), winners(t_operand, t_updates)


def _scatter_mul_jvp_updates(g: Any, operand: Any, indices: Any, updates: Any, **params: Any
                             ) -> Any:
  """The operand times the tangent of the product of the updates landing at each element:
  each update's tangent times the product of the others there (just the tangent when
  indices are unique)."""
  if not params["unique_indices"]:
    g = lax.mul(g, _product_of_others(operand, indices, updates, **params))
  return lax.mul(operand, scatter_add_p.bind(lax.full_like(operand, 0), indices, g, **params))


def _product_of_others(operand: Any, indices: Any, updates: Any, **params: Any) -> Any:
  """For each update element, the product of the other updates landing on its element:
  the product of all over itself where it is not zero; for a zero, the product of the
  non-zeros if it is the only zero there, else 0. (Where two or more updates to one
  element are exactly zero, derivatives of order two and up miss their cross terms.)"""
  def per_update(prim: core.Primitive, start: Any, y: Any) -> Any:
    combined = prim.bind(lax.full_like(operand, start), indices, y, **params)
    return _read_windows(combined, indices, core.get_aval(updates), **params)
  zero, one = lax.full_like(updates, 0), lax.full_like(updates, 1)
  is_zero = lax.eq(updates, zero)
  nonzero = lax.select(is_zero, one, updates)
  zero_count = per_update(scatter_add_p, 0, lax.select(is_zero, one, zero))
  only_zero = lax.select(lax.eq(zero_count, one), per_update(scatter_mul_p, 1, nonzero), zero)
  return lax.select(is_zero, only_zero, lax.div(per_update(scatter_mul_p, 1, updates), nonzero))


def _scatter_mul_transpose(ct: Any, operand: Any, indices: Any, updates: Any, **params: Any
                           ) -> list[Any]:
  """scatter-mul is linear in the operand alone: its cotangent is scaled the same way."""
  if ad.is_undefined_primal(updates):
    raise NotImplementedError("scatter-mul is not linear in its updates.")
  if type(ct) is ad.Zero:
    return zero_cotangents(operand, indices, updates)
  return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


def _scatter_extremum_jvp(prim: core.Primitive) -> Callable[..., tuple[Any, Any]]:
  """The tangent of the value that ends up in each element: the operand's or an update's.
  Ties share it equally, as they do in `lax.max`."""
  def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple[Any, Any]:
    operand, indices, updates = primals
    out = prim.bind(*primals, **params)
    dtype = core.get_aval(out).dtype
    t_operand, t_updates = ad.instantiate_zeros(tangents[0]), ad.instantiate_zeros(tangents[2])
    operand_won = lax.convert_element_type(lax.eq(operand, out), dtype)
    updates_won = lax.convert_element_type(
        lax.eq(updates, _read_windows(out, indices, core.get_aval(updates), **params)), dtype)
    zeros = lax.full_like(out, 0)
    winners = lax.add(operand_won, scatter_add_p.bind(zeros, indices, updates_won, **params))
    total = lax.add(lax.mul(operand_won, t_operand),
                    scatter_add_p.bind(zeros, indices, lax.mul(updates_won, t_updates),
                                       **params))
    return out, lax.div(total, winners)
  return jvp


def scatter_batch_rule(prim: core.Primitive, vals: Sequence[Any], dims: Sequence[int | None],
                       *, dimension_numbers: ScatterDimensionNumbers, **params: Any
                       ) -> tuple[Any, int]:
  """The operand is always batched (each example writes its own copy); the updates get
  their batch dimension where the batched dimension numbers want it."""
  (operand, indices, updates), (operand_bdim, indices_bdim, updates_bdim) = vals, dims
  size = lax._batch_size(vals, dims)
  if operand_bdim is batching.not_mapped:
    operand, operand_bdim = with_batch_dim(operand, operand_bdim, size, 0), 0
  indices, indices_bdim = index_vector_last(indices, indices_bdim)
  dnums, updates_pos = batched_dnums(dimension_numbers, operand_bdim, indices_bdim,
                                      unbatched_rank(indices, indices_bdim))
  updates = with_batch_dim(updates, updates_bdim, size, updates_pos)
  return prim.bind(operand, indices, updates, dimension_numbers=dnums, **params), operand_bdim


def _scatter_apply_jvp(primals: Sequence[Any], tangents: Sequence[Any],
                       update_jaxpr: core.Jaxpr, update_consts: tuple, **params: Any
                       ) -> tuple[Any, Any]:
  """Where no element is covered twice, the output's tangent is the operand's with each
  covered element replaced by `func`'s tangent there (`func` run elementwise, batched over
  the windows). Where elements repeat, `func` applies to its own result in an order XLA
  picks; that case is refused (JAX refuses every JVP of scatter_apply)."""
  operand, indices, updates = primals
  region = {"update_jaxpr": update_jaxpr, "update_consts": update_consts}
  out = scatter_p.bind(*primals, **region, **params)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero(core.get_aval(out).to_tangent_aval())
  if not params["unique_indices"]:
    raise NotImplementedError(
        "scatter_apply (x.at[idx].apply(func)) is differentiable only with "
        "unique_indices=True: where an index repeats, func is applied again to its own "
        "result. Pass unique_indices=True if no element is indexed twice.")
  updates_aval = core.get_aval(updates)
  n = math.prod(updates_aval.shape)
  flat = lambda x: shape_ops.reshape(x, (n,))
  old = flat(_read_windows(operand, indices, updates_aval, **params))
  t_old = flat(_read_windows(tangents[0], indices, updates_aval, **params))
  zero_update = ad.Zero(ShapedArray((), updates_aval.dtype).to_tangent_aval())

  def func_tangent(x: Any, update: Any, t: Any) -> list[Any]:
    _, (t_new,) = ad.jvp_flat(
        lambda *args: core.eval_jaxpr(update_jaxpr, update_consts, *args),
        [x, update], [t, zero_update])
    return [ad.instantiate_zeros(t_new)]
  (t_new,), (dim,) = batching.batch_flat(func_tangent, [old, flat(updates), t_old],
                                         [0, 0, 0], n, None)
  t_new = shape_ops.reshape(batching.bdim_at_front(t_new, dim, n), updates_aval.shape)
  return out, scatter_p.bind(tangents[0], indices, t_new, **SET_REGION, **params)


_scatter_unique_jvp = linear_jvp(scatter_p, (0, 2))
ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.primitive_jvps[scatter_add_p] = linear_jvp(scatter_add_p, (0, 2))
ad.primitive_jvps[scatter_sub_p] = linear_jvp(scatter_sub_p, (0, 2))
ad.defjvp(scatter_mul_p, lambda g, operand, indices, updates, **params: scatter_mul_p.bind(
    g, indices, updates, **params), None, _scatter_mul_jvp_updates)
ad.primitive_jvps[scatter_min_p] = _scatter_extremum_jvp(scatter_min_p)
ad.primitive_jvps[scatter_max_p] = _scatter_extremum_jvp(scatter_max_p)
for _p in (scatter_p, scatter_add_p, scatter_sub_p):
  ad.primitive_transposes[_p] = _scatter_linear_transpose(_p)
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose
for _p in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
           scatter_max_p):
  batching.primitive_batchers[_p] = functools.partial(scatter_batch_rule, _p)
