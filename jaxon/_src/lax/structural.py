"""Primitives and helpers that cut, repeat and join arrays as whole blocks: `split`, `tile`,
`stack` and `unstack` (each one equation in a jaxpr, as in JAX), plus the small wrappers
`broadcast_like`, `broadcast_to_rank`, `empty`, `dtype`, `shape_as_value` and
`index_take`.

All four primitives are linear, so their JVP applies them to the tangents and reverse mode
needs only their transposes, which are each other: split <-> concatenate, stack <-> unstack,
and tile's is a sum over the repeats. They lower by composition (`mlir.lower_fun`) into
slices, reshapes, broadcasts and concatenations, which XLA fuses.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import gather_scatter, lax, reductions, shape_ops, slicing, utils
from jaxon._src.lax.dimension_value import dimension_as_value
from jaxon._src.lax.sharding_constraint import apply_out_sharding
from jaxon._src.xla import deferred


def _multi_result_primitive(name: str, abstract_eval: Any, lowering: Any) -> core.Primitive:
  prim = utils.standard_multi_result_primitive(name, abstract_eval)
  mlir.register_lowering(prim, mlir.lower_fun(lowering, multiple_results=True))
  return prim


def _instantiate_all(cts: Sequence[Any]) -> list[Any]:
  return [ad.instantiate_zeros(ct) for ct in cts]


# ----------------------------------------------------------------------------- split

def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> Sequence[Any]:
  """Splits `operand` along `axis` into `len(sizes)` consecutive pieces of those sizes.

  Example: `split(iota(5), (2, 3))` is `[[0, 1], [2, 3, 4]]`.
  """
  operand = lax.asarray(operand)
  sizes = tuple(s if core.is_symbolic_dim(s) else operator.index(s) for s in sizes)
  return split_p.bind(operand, sizes=sizes,
                      axis=utils.canonicalize_axis(axis, np.ndim(operand), "split axis"))


def _split_abstract_eval(operand: ShapedArray, *, sizes: tuple[int, ...], axis: int
                         ) -> list[ShapedArray]:
  if any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
  if operand.shape[axis] != sum(sizes):
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                     f"operand shape {list(operand.shape)}")
  shape = list(operand.shape)
  return [operand.update(shape=tuple(shape[:axis] + [s] + shape[axis + 1:])) for s in sizes]


def _split_by_slices(operand: Any, *, sizes: tuple[int, ...], axis: int) -> list[Any]:
  starts = np.cumsum((0,) + sizes)
  return [slicing.slice_in_dim(operand, int(start), int(start + size), axis=axis)
          for start, size in zip(starts, sizes)]


split_p = _multi_result_primitive("split", _split_abstract_eval, _split_by_slices)
ad.deflinear(split_p, lambda cts, operand, *, sizes, axis: [
    shape_ops.concatenate(_instantiate_all(cts), axis)])


def _split_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                      sizes: tuple[int, ...], axis: int) -> tuple[list[Any], list[int]]:
  (x,), (d,) = vals, dims
  outs = split_p.bind(x, sizes=sizes, axis=axis + (axis >= d))
  return outs, [d] * len(sizes)


batching.primitive_batchers[split_p] = _split_batch_rule


# ----------------------------------------------------------------------------- tile

def tile(operand: Any, reps: Sequence[int]) -> Any:
  """Repeats `operand` `reps[i]` times along each dimension i (`len(reps) == ndim`).

  Example: `tile([[1, 2]], (2, 2))` is `[[1, 2, 1, 2], [1, 2, 1, 2]]`.
  """
  return tile_p.bind(operand, reps=tuple(int(r) for r in reps))


def _tile_shape_rule(x: ShapedArray, *, reps: tuple[int, ...]) -> tuple[int, ...]:
  if x.ndim != len(reps):
    raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                    f"and x.ndim={x.ndim}.")
  if any(r < 0 for r in reps):
    raise TypeError(f"tile reps must be non-negative, got {reps}.")
  return tuple(d * r for d, r in zip(x.shape, reps))


def _tile_by_broadcast(x: Any, *, reps: tuple[int, ...]) -> Any:
  """(d0, d1) -> broadcast to (r0, d0, r1, d1) -> reshape to (r0*d0, r1*d1)."""
  shape = np.shape(x)
  interleaved = tuple(k for pair in zip(reps, shape) for k in pair)
  out = lax.broadcast_in_dim(x, interleaved, tuple(range(1, 2 * len(shape), 2)))
  return shape_ops.reshape(out, tuple(d * r for d, r in zip(shape, reps)))


tile_p = utils.standard_primitive("tile", _tile_shape_rule, utils.input_dtype)
mlir.register_lowering(tile_p, mlir.lower_fun(_tile_by_broadcast, multiple_results=False))


def _tile_transpose(ct: Any, operand: Any, *, reps: tuple[int, ...]) -> list[Any]:
  shape = operand.aval.shape
  pairs = shape_ops.reshape(ct, tuple(k for pair in zip(reps, shape) for k in pair))
  return [reductions.reduce_sum(pairs, tuple(range(0, 2 * len(shape), 2)))]


ad.deflinear(tile_p, _tile_transpose)
batching.primitive_batchers[tile_p] = lambda vals, dims, *, reps: (
    tile_p.bind(vals[0], reps=reps[:dims[0]] + (1,) + reps[dims[0]:]), dims[0])


# ----------------------------------------------------------------------------- stack / unstack

def stack(operands: Sequence[Any], axis: int = 0) -> Any:
  """Joins equally shaped arrays along a new dimension `axis` (one `stack` equation)."""
  arrays = [lax.asarray(op) for op in operands]
  if not arrays:
    raise ValueError("stack expects at least one operand, got 0.")
  axis = utils.canonicalize_axis(axis, np.ndim(arrays[0]) + 1, "stack axis")
  return stack_p.bind(*arrays, axis=axis)


def _stack_shape_rule(*operands: ShapedArray, axis: int) -> tuple[int, ...]:
  if not operands:
    raise ValueError("stack expects at least one operand, got 0.")
  if len({op.ndim for op in operands}) != 1:
    raise ValueError("Cannot stack arrays with different numbers of dimensions: got "
                     f"{', '.join(str(o.shape) for o in operands)}.")
  if len({op.shape for op in operands}) != 1:
    raise ValueError("All input arrays must have the same shape. Got "
                     f"{', '.join(str(o.shape) for o in operands)}.")
  shape = list(operands[0].shape)
  shape.insert(axis, len(operands))
  return tuple(shape)


def _stack_dtype_rule(*operands: ShapedArray, axis: int) -> np.dtype:
  utils.check_same_dtypes("stack", *operands)
  return operands[0].dtype


def _stack_by_concatenation(*xs: Any, axis: int) -> Any:
  return shape_ops.concatenate([shape_ops.expand_dims(x, (axis,)) for x in xs], axis)


stack_p = utils.standard_primitive("stack", _stack_shape_rule, _stack_dtype_rule)
mlir.register_lowering(stack_p,
                       mlir.lower_fun(_stack_by_concatenation, multiple_results=False))


def _stack_transpose(ct: Any, *operands: Any, axis: int) -> list[Any]:
  pieces = unstack_p.bind(ct, axis=axis)
  return [p if ad.is_undefined_primal(o) else None for p, o in zip(pieces, operands)]


ad.deflinear(stack_p, _stack_transpose)


def _stack_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *, axis: int
                      ) -> tuple[Any, int]:
  if dims[0] is not None and all(d == dims[0] for d in dims):
    d = dims[0]
    return stack_p.bind(*vals, axis=axis + (axis > d)), d + (axis <= d)
  size = next(np.shape(v)[d] for v, d in zip(vals, dims) if d is not None)
  vals = [lax.broadcast(v, (size,)) if d is None else batching.moveaxis(v, d, 0)
          for v, d in zip(vals, dims)]
  return stack_p.bind(*vals, axis=axis + 1), 0


batching.primitive_batchers[stack_p] = _stack_batch_rule


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
  """The slices of `x` along `axis`, that dimension removed (the inverse of `stack`)."""
  x = lax.asarray(x)
  if np.ndim(x) == 0:
    raise ValueError("unstack requires arrays with rank > 0, however a scalar array of "
                     "shape () was passed.")
  return tuple(unstack_p.bind(x, axis=utils.canonicalize_axis(axis, np.ndim(x),
                                                              "unstack axis")))


def _unstack_abstract_eval(x: ShapedArray, *, axis: int) -> list[ShapedArray]:
  if x.ndim == 0:
    raise ValueError("unstack requires arrays with rank > 0, however a scalar array of "
                     f"shape {x.shape} was passed.")
  shape = x.shape[:axis] + x.shape[axis + 1:]
  return [x.update(shape=shape)] * x.shape[axis]


def _unstack_by_slices(x: Any, *, axis: int) -> list[Any]:
  return [slicing.index_in_dim(x, i, axis, keepdims=False) for i in range(np.shape(x)[axis])]


unstack_p = _multi_result_primitive("unstack", _unstack_abstract_eval, _unstack_by_slices)
ad.deflinear(unstack_p, lambda cts, x, *, axis: [stack_p.bind(*_instantiate_all(cts),
                                                               axis=axis)])


def _unstack_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *, axis: int
                        ) -> tuple[list[Any], list[int]]:
  (x,), (d,) = vals, dims
  outs = unstack_p.bind(x, axis=axis + (axis >= d))
  return outs, [d - (axis < d)] * len(outs)


batching.primitive_batchers[unstack_p] = _unstack_batch_rule


# ----------------------------------------------------------------------------- wrappers

def broadcast_like(arr: Any, like_arr: Any) -> Any:
  """`arr` broadcast (NumPy rules: trailing dimensions align) to `like_arr`'s shape."""
  shape, arr_shape = np.shape(like_arr), np.shape(arr)
  if len(arr_shape) > len(shape) or any(
      a not in (1, s) for a, s in zip(arr_shape[::-1], shape[::-1])):
    raise ValueError(f"Incompatible types for broadcasting: input shape={arr_shape} and "
                     f"requested shape={shape} (the shape of like_arr).")
  if arr_shape == shape:
    return lax.asarray(arr)
  return lax.broadcast_in_dim(arr, shape, tuple(range(len(shape) - len(arr_shape),
                                                      len(shape))))


def broadcast_to_rank(x: Any, rank: int) -> Any:
  """`x` with leading size-1 dimensions added up to `rank` dimensions."""
  ndim = np.ndim(x)
  if ndim == rank:
    return lax.asarray(x)
  return lax.broadcast(x, (1,) * (rank - ndim))


def _empty_abstract_eval(*, shape: tuple[int, ...], dtype: np.dtype, out_sharding: Any
                         ) -> ShapedArray:
  return ShapedArray(shape, dtype)


empty_p = core.Primitive("empty")
empty_p.def_impl(functools.partial(deferred.apply_primitive, empty_p))
empty_p.def_abstract_eval(_empty_abstract_eval)
# XLA on CPU has no uninitialized allocation: the contents are zeros, as JAX's CPU lowering.
mlir.register_lowering(empty_p, lambda ctx, **params: [mlir.full_like_aval(0, ctx.avals_out[0])])


def empty(shape: Any, dtype: Any, *, out_sharding: Any = None) -> Any:
  """An array of `shape` and `dtype` whose contents are unspecified (zeros on CPU)."""
  if out_sharding is not None:
    return apply_out_sharding(empty(shape, dtype), out_sharding, "empty")
  return empty_p.bind(shape=utils.canonicalize_shape(shape, "of empty"),
                      dtype=dtypes.canonicalize_dtype(dtypes.dtype(dtype)), out_sharding=None)


def dtype(x: Any) -> np.dtype:
  """The dtype `x` has as a jaxon value: canonical, so a Python float or a NumPy float64
  is float32 unless 64-bit mode is on (as JAX's `lax.dtype`)."""
  return dtypes.canonicalize_dtype(dtypes.dtype(x))


def shape_as_value(shape: Sequence[Any]) -> Any:
  """`shape` as a 1-D signed integer array (a NumPy constant when every dimension is known;
  symbolic dimensions are computed in the program)."""
  dtype = np.int64 if any(type(d) is int and d > np.iinfo(np.int32).max for d in shape) \
      else np.int32
  if all(not core.is_symbolic_dim(d) for d in shape):
    return np.asarray(shape, dtype=dtype).reshape(len(shape))
  return shape_ops.concatenate([
      shape_ops.expand_dims(lax.convert_element_type(dimension_as_value(d), dtype), (0,))
      for d in shape], 0)


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
  """`src[idxs[0], idxs[1], ...]` along `axes`: one element (or window of the remaining
  dimensions) per index tuple. Indices wrap modulo each axis's size (Python-style negative
  indices), as in JAX."""
  idxs = [lax.asarray(i) for i in idxs]
  if len(idxs) != len(axes):
    raise ValueError(f"index_take needs one index array per axis, got {len(idxs)} index "
                     f"arrays for axes {tuple(axes)}.")
  indices = shape_ops.concatenate([shape_ops.expand_dims(i, (1,)) for i in idxs], 1)
  sizes = np.array([np.shape(src)[ax] for ax in axes], dtype=dtypes.dtype(indices))
  sizes = lax.broadcast_in_dim(sizes, np.shape(indices), (np.ndim(indices) - 1,))
  indices = lax.rem(lax.add(lax.rem(indices, sizes), sizes), sizes)  # floor modulo
  slice_sizes = [1 if ax in axes else d for ax, d in enumerate(np.shape(src))]
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=tuple(range(1, np.ndim(src) - len(axes) + 1)),
      collapsed_slice_dims=tuple(axes), start_index_map=tuple(axes))
  return gather_scatter.gather(src, indices, dnums, tuple(slice_sizes))
