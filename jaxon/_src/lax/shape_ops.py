"""Primitives that rearrange an array's elements without computing new values: reshape,
transpose, squeeze, rev, concatenate and pad, plus the wrappers built on them
(`expand_dims`, `collapse`).

Each section reads: the user-facing function (argument normalization and checks) → the
primitive → its shape rule (with the errors a user sees at trace time) → its StableHLO
lowering → its transpose and batching rules. All of them keep the operand's dtype; the output
is weakly typed only when every input is. Parameters that name dimensions are stored
canonical (non-negative, as tuples), so equal programs hit the same compile cache entries and
print the same jaxprs.

Every primitive here is linear (pad jointly in its operand and padding value), so its JVP
applies it to the tangents (`ad.deflinear`) and reverse mode needs only the transpose, which
moves each cotangent element back to where its input element came from.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir, structural
from jaxon._src.lax import lax, reductions, utils
from jaxon._src.lax.sharding_constraint import apply_out_sharding
from jaxon._src.xla.array import Array


def _shape_primitive(name: str, shape_rule: Callable[..., tuple[int, ...]],
                     lowering: mlir.LoweringRule) -> core.Primitive:
  """A primitive whose output has the (first) operand's dtype."""
  prim = utils.standard_primitive(name, shape_rule, utils.input_dtype)
  mlir.register_lowering(prim, lowering)
  return prim


def _dims_tuple(dims: Sequence[int], ndim: int, name: str) -> tuple[int, ...]:
  """`dims` made non-negative (Python-style negative indexing) as a tuple of ints."""
  return tuple(utils.canonicalize_axis(int(d), ndim, name) for d in dims)


def _check_distinct_dims(name: str, dims: Sequence[int], shape: tuple[int, ...],
                         error: type[Exception] = ValueError) -> None:
  """`error` is JAX's class for the primitive: ValueError for squeeze, TypeError for rev."""
  if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
    raise error(f"{name} must be distinct dimensions of an operand of shape {shape} "
                f"(each in [0, {len(shape)})), got {tuple(dims)}.")


def _check_permutation(name: str, perm: Sequence[int], shape: tuple[int, ...]) -> None:
  if sorted(perm) != list(range(len(shape))):
    raise TypeError(f"{name} {tuple(perm)} is not a permutation of the dimensions of an "
                    f"operand of shape {shape}.")


def _element_dims(aval: ShapedArray) -> list[int]:
  """The physical dimensions an extended dtype (keys) appends after `aval`'s own, which
  permutations keep in place."""
  return list(range(aval.ndim, aval.ndim + len(mlir.element_dims(aval))))


def _is_concrete_array(x: Any) -> bool:
  """No-op shape changes return a concrete Array as is (a tracer still records the op)."""
  return type(x) is Array


def _aval(x: Any) -> ShapedArray:
  """The abstract value of a transpose rule's argument, linear (undefined) or not."""
  return x.aval if ad.is_undefined_primal(x) else core.get_aval(x)


def _shift_past(dims: Sequence[int], bdim: int) -> tuple[int, ...]:
  """Operand dimensions renumbered for an operand with a batch dimension at `bdim`."""
  return tuple(d + (d >= bdim) for d in dims)


# ----------------------------------------------------------------------------- reshape

def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
            *, out_sharding: Any = None) -> Any:
  """Reshapes `operand` to `new_sizes`, reading its elements in row-major order.

  Args:
    operand: the array to reshape.
    new_sizes: the result shape; its size must equal the operand's.
    dimensions: optional permutation of the operand's dimensions applied before the reshape
      (`reshape(transpose(operand, dimensions), new_sizes)` as one operation).
    out_sharding: how the result is laid out (see
      `sharding_constraint.apply_out_sharding`).

  Example: `reshape(iota(6), (2, 3))` is `[[0, 1, 2], [3, 4, 5]]`.
  """
  if out_sharding is not None:
    return apply_out_sharding(reshape(operand, new_sizes, dimensions), out_sharding,
                              "reshape")
  new_sizes = utils.canonicalize_shape(new_sizes, "of reshape")
  dims = None if dimensions is None else tuple(int(d) for d in dimensions)
  same_dims = dims is None or dims == tuple(range(np.ndim(operand)))
  if np.shape(operand) == new_sizes and same_dims and _is_concrete_array(operand):
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes,
                        dimensions=None if same_dims else dims, sharding=None)


def _reshape_shape_rule(operand: ShapedArray, *, new_sizes: tuple[int, ...],
                        dimensions: tuple[int, ...] | None, sharding: Any) -> tuple[int, ...]:
  if any(d < 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must all be non-negative, got {new_sizes}.")
  if math.prod(new_sizes) != operand.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} (of "
                    f"total size {math.prod(new_sizes)}) for shape {operand.shape} (of total "
                    f"size {operand.size}).")
  if dimensions is not None:
    _check_permutation("reshape dimensions", dimensions, operand.shape)
  return new_sizes


def _reshape_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                      new_sizes: tuple[int, ...], dimensions: tuple[int, ...] | None,
                      sharding: Any) -> list[ir.Value]:
  if dimensions is not None:
    operand = hlo.transpose(operand, list(dimensions) + _element_dims(ctx.avals_in[0]))
  return [mlir.reshape(ctx.avals_out[0], operand)]


reshape_p = _shape_primitive("reshape", _reshape_shape_rule, _reshape_lowering)


def _reshape_transpose(ct: Any, operand: Any, *, new_sizes: tuple[int, ...],
                       dimensions: tuple[int, ...] | None, sharding: Any) -> list[Any]:
  shape = _aval(operand).shape
  if dimensions is None:
    return [reshape(ct, shape)]
  permuted = reshape(ct, tuple(shape[d] for d in dimensions))
  return [transpose(permuted, tuple(np.argsort(dimensions)))]


def _reshape_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                        new_sizes: tuple[int, ...], dimensions: tuple[int, ...] | None,
                        sharding: Any) -> tuple[Any, int]:
  (x,), (bdim,) = vals, dims
  x = batching.moveaxis(x, bdim, 0)
  perm = None if dimensions is None else (0,) + tuple(d + 1 for d in dimensions)
  return reshape(x, (np.shape(x)[0],) + new_sizes, perm), 0


ad.deflinear(reshape_p, _reshape_transpose)
batching.primitive_batchers[reshape_p] = _reshape_batch_rule


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
  """Merges dimensions `[start_dimension, stop_dimension)` into one (row-major), e.g.
  shape (2, 3, 4) collapsed over [0, 2) becomes (6, 4). `stop_dimension=None` collapses
  through the last dimension; negative values count from the end."""
  shape = np.shape(operand)
  start = utils.canonicalize_axis(start_dimension, len(shape), "start_dimension")
  stop = len(shape) if stop_dimension is None else (
      utils.canonicalize_axis(stop_dimension, len(shape) + 1, "stop_dimension"))
  if start > stop:
    raise ValueError(f"collapse: start_dimension {start_dimension} must not come after "
                     f"stop_dimension {stop_dimension} (operand shape {shape}).")
  merged = math.prod(shape[start:stop])
  return reshape(operand, shape[:start] + (merged,) + shape[stop:])


# ----------------------------------------------------------------------------- transpose

def transpose(operand: Any, permutation: Sequence[int]) -> Any:
  """Permutes the dimensions of `operand`: result dimension i is operand dimension
  `permutation[i]`. Example: `transpose(x, (1, 0))` of a (2, 3) matrix is (3, 2)."""
  permutation = tuple(int(p) for p in permutation)
  if permutation == tuple(range(np.ndim(operand))) and _is_concrete_array(operand):
    return operand
  return transpose_p.bind(operand, permutation=permutation)


def _transpose_shape_rule(operand: ShapedArray, *, permutation: tuple[int, ...]
                          ) -> tuple[int, ...]:
  _check_permutation("transpose permutation", permutation, operand.shape)
  return tuple(operand.shape[p] for p in permutation)


def _transpose_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                        permutation: tuple[int, ...]) -> list[ir.Value]:
  return [hlo.transpose(operand, list(permutation) + _element_dims(ctx.avals_in[0]))]


transpose_p = _shape_primitive("transpose", _transpose_shape_rule, _transpose_lowering)


def _transpose_transpose(ct: Any, operand: Any, *, permutation: tuple[int, ...]) -> list[Any]:
  return [transpose(ct, tuple(np.argsort(permutation)))]


def _transpose_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                          permutation: tuple[int, ...]) -> tuple[Any, int]:
  (x,), (bdim,) = vals, dims
  return transpose(x, (bdim,) + _shift_past(permutation, bdim)), 0


ad.deflinear(transpose_p, _transpose_transpose)
batching.primitive_batchers[transpose_p] = _transpose_batch_rule


# ----------------------------------------------------------------------------- squeeze, expand_dims

def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
  """Removes the size-1 `dimensions` of `array` (negative values count from the end).
  Example: `squeeze(x, (0, 2))` of shape (1, 3, 1) has shape (3,)."""
  ndim = np.ndim(array)
  dimensions = tuple(sorted(_dims_tuple(dimensions, ndim, "squeeze dimension")))
  if not dimensions and _is_concrete_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dimensions)


def _squeeze_shape_rule(operand: ShapedArray, *, dimensions: tuple[int, ...]
                        ) -> tuple[int, ...]:
  _check_distinct_dims("squeeze dimensions", dimensions, operand.shape)
  if any(operand.shape[d] != 1 for d in dimensions):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one, "
                     f"got shape={operand.shape} and dimensions={dimensions}.")
  return tuple(d for i, d in enumerate(operand.shape) if i not in dimensions)


def _squeeze_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                      dimensions: tuple[int, ...]) -> list[ir.Value]:
  return [mlir.reshape(ctx.avals_out[0], operand)]


squeeze_p = _shape_primitive("squeeze", _squeeze_shape_rule, _squeeze_lowering)


def _squeeze_transpose(ct: Any, operand: Any, *, dimensions: tuple[int, ...]) -> list[Any]:
  return [reshape(ct, _aval(operand).shape)]


def _squeeze_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                        dimensions: tuple[int, ...]) -> tuple[Any, int]:
  (x,), (bdim,) = vals, dims
  return squeeze(batching.moveaxis(x, bdim, 0), tuple(d + 1 for d in dimensions)), 0


ad.deflinear(squeeze_p, _squeeze_transpose)
batching.primitive_batchers[squeeze_p] = _squeeze_batch_rule


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
  """Inserts size-1 dimensions at positions `dimensions` of the result (negative values
  count from the end of the result). Example: `expand_dims(x, (0, 2))` of shape (3,) has
  shape (1, 3, 1). Lowered as a `broadcast_in_dim`, as in JAX (there is no primitive)."""
  shape = np.shape(array)
  ndim_out = len(shape) + len(dimensions)
  dims = _dims_tuple(dimensions, ndim_out, "expand_dims dimension")
  if len(set(dims)) != len(dims):
    raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dimensions)} (for an operand "
                     f"of shape {shape}).")
  kept = [i for i in range(ndim_out) if i not in dims]
  out_shape = [1] * ndim_out
  for i, d in zip(kept, shape):
    out_shape[i] = d
  return lax.broadcast_in_dim(array, out_shape, kept)


# ----------------------------------------------------------------------------- rev

def rev(operand: Any, dimensions: Sequence[int]) -> Any:
  """Reverses the order of elements along each of `dimensions`.
  Example: `rev([[1, 2], [3, 4]], (1,))` is `[[2, 1], [4, 3]]`."""
  ndim = np.ndim(operand)
  # negative dimensions count from the end; the shape rule rejects the rest (a TypeError)
  dimensions = tuple(int(d) % ndim if -ndim <= int(d) < ndim else int(d) for d in dimensions)
  return rev_p.bind(operand, dimensions=dimensions)


def _rev_shape_rule(operand: ShapedArray, *, dimensions: tuple[int, ...]) -> tuple[int, ...]:
  _check_distinct_dims("rev dimensions", dimensions, operand.shape, TypeError)
  return operand.shape


def _rev_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                  dimensions: tuple[int, ...]) -> list[ir.Value]:
  return [hlo.reverse(operand, list(dimensions))]


rev_p = _shape_primitive("rev", _rev_shape_rule, _rev_lowering)


def _rev_transpose(ct: Any, operand: Any, *, dimensions: tuple[int, ...]) -> list[Any]:
  return [rev(ct, dimensions)]


def _rev_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                    dimensions: tuple[int, ...]) -> tuple[Any, int]:
  (x,), (bdim,) = vals, dims
  return rev(x, _shift_past(dimensions, bdim)), bdim


ad.deflinear(rev_p, _rev_transpose)
batching.primitive_batchers[rev_p] = _rev_batch_rule


# ----------------------------------------------------------------------------- concatenate

def concatenate(operands: Sequence[Any], dimension: int) -> Any:
  """Joins `operands` along `dimension`. They must have equal dtypes (lax does not
  promote) and equal shapes except along `dimension`.
  Example: `concatenate([ones((2, 1)), zeros((2, 3))], 1)` has shape (2, 4)."""
  operands = list(operands)
  if not operands:
    raise ValueError("concatenate requires a non-empty sequence of arrays.")
  if len(operands) == 1 and _is_concrete_array(operands[0]):
    return operands[0]
  ndim = np.ndim(operands[0])
  dimension = int(dimension)
  if ndim and -ndim <= dimension < 0:
    dimension += ndim
  return concatenate_p.bind(*operands, dimension=dimension)


def _concatenate_shape_rule(*operands: ShapedArray, dimension: int) -> tuple[int, ...]:
  utils.check_same_dtypes("concatenate", *operands)
  shapes = [op.shape for op in operands]
  if len({len(s) for s in shapes}) != 1:
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{', '.join(map(str, shapes))}.")
  if not 0 <= dimension < len(shapes[0]):
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                    f"{', '.join(map(str, shapes))}.")
  others = {s[:dimension] + s[dimension + 1:] for s in shapes}
  if len(others) != 1:
    raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions other "
                    f"than the one being concatenated: concatenating along dimension "
                    f"{dimension} for shapes {', '.join(map(str, shapes))}.")
  size = sum(s[dimension] for s in shapes)
  return shapes[0][:dimension] + (size,) + shapes[0][dimension + 1:]


def _concatenate_lowering(ctx: mlir.LoweringRuleContext, *operands: ir.Value,
                          dimension: int) -> list[ir.Value]:
  return [hlo.concatenate(list(operands), dimension)]


concatenate_p = _shape_primitive("concatenate", _concatenate_shape_rule,
                                 _concatenate_lowering)


def _concatenate_transpose(ct: Any, *operands: Any, dimension: int) -> list[Any]:
  """Each linear operand's cotangent is its stretch of `ct` along `dimension`."""
  from jaxon._src.lax import slicing  # slicing builds on this module
  edges = np.cumsum([0] + [_aval(op).shape[dimension] for op in operands]).tolist()
  return [slicing.slice_in_dim(ct, lo, hi, axis=dimension)
          if ad.is_undefined_primal(op) else None
          for op, lo, hi in zip(operands, edges[:-1], edges[1:])]


def _concatenate_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                            dimension: int) -> tuple[Any, int]:
  size = next(np.shape(v)[d] for v, d in zip(vals, dims) if d is not None)
  vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
  return concatenate(vals, dimension + 1), 0


ad.deflinear(concatenate_p, _concatenate_transpose)
batching.primitive_batchers[concatenate_p] = _concatenate_batch_rule


# ----------------------------------------------------------------------------- pad

def pad(operand: Any, padding_value: Any,
        padding_config: Sequence[tuple[int, int, int]]) -> Any:
  """Pads `operand` with `padding_value` (a scalar of the operand's dtype).

  `padding_config` has one `(low, high, interior)` triple per dimension: `low` and `high`
  elements are added before and after it, and `interior` between every two neighbouring
  elements. Negative `low`/`high` remove elements from that end instead.

  Example: `pad([1, 2, 3], 0, [(1, -1, 1)])` is `[0, 1, 0, 2, 0]`.
  """
  config = []
  for entry in padding_config:
    if len(entry) != 3:
      raise ValueError(f"padding_config entries must be (low, high, interior) triples, got "
                       f"{entry!r} in {tuple(padding_config)!r}.")
    config.append(tuple(p if core.is_symbolic_dim(p) else int(p) for p in entry))
  return pad_p.bind(operand, padding_value, padding_config=tuple(config))


def _dilated_size(size: int, interior: int) -> int:
  return 0 if size == 0 else size + (size - 1) * interior


def _pad_shape_rule(operand: ShapedArray, padding_value: ShapedArray, *,
                    padding_config: tuple[tuple[int, int, int], ...]) -> tuple[int, ...]:
  if padding_value.shape:
    raise ValueError(f"pad padding_value must be a scalar, got shape {padding_value.shape}.")
  if operand.dtype != padding_value.dtype:
    raise TypeError(f"pad operand and padding_value must have the same dtype, got "
                    f"{operand.str_short()} and {padding_value.str_short()}.")
  if len(padding_config) != operand.ndim:
    raise ValueError(f"length of padding_config must equal the number of axes of operand, "
                     f"got padding_config {padding_config} for operand shape {operand.shape}.")
  if any(interior < 0 for _, _, interior in padding_config):
    raise ValueError(f"interior padding in padding_config must be non-negative, got "
                     f"padding_config {padding_config}.")
  out = tuple(lo + hi + _dilated_size(d, interior)
              for d, (lo, hi, interior) in zip(operand.shape, padding_config))
  if any(d < 0 for d in out):
    raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                     f"{out}, for padding_config {padding_config} and operand shape "
                     f"{operand.shape}.")
  return out


def _pad_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, padding_value: ir.Value,
                  *, padding_config: tuple[tuple[int, int, int], ...]) -> list[ir.Value]:
  low, high, interior = ([entry[i] for entry in padding_config] for i in range(3))
  if not core.is_constant_shape((*low, *high)):  # symbolic padding (shape-polymorphic)
    return [hlo.dynamic_pad(mlir.aval_to_ir_type(ctx.avals_out[0]), operand, padding_value,
                            mlir.shape_tensor(low), mlir.shape_tensor(high),
                            mlir.shape_tensor(interior))]
  return [hlo.pad(operand, padding_value, low, high, interior)]


pad_p = _shape_primitive("pad", _pad_shape_rule, _pad_lowering)


def _pad_transpose(ct: Any, operand: Any, padding_value: Any, *,
                   padding_config: tuple[tuple[int, int, int], ...]) -> list[Any]:
  """The operand's cotangent is `ct` where the operand's elements landed (undo the edges,
  then take every (interior + 1)-th element); the padding value's is the sum of the rest."""
  from jaxon._src.lax import slicing  # slicing builds on this module
  zero = np.zeros((), _aval(ct).dtype)
  unpadded = pad(ct, zero, [(-lo, -hi, 0) for lo, hi, _ in padding_config])
  ndim = len(padding_config)
  ct_operand = slicing.slice(unpadded, (0,) * ndim, np.shape(unpadded),
                             [interior + 1 for _, _, interior in padding_config])
  ct_padding_value = None
  if ad.is_undefined_primal(padding_value):
    everything = tuple(range(ndim))
    ct_padding_value = lax.sub(reductions.reduce_sum(ct, everything),
                               reductions.reduce_sum(ct_operand, everything))
  return [ct_operand if ad.is_undefined_primal(operand) else None, ct_padding_value]


def _pad_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                    padding_config: tuple[tuple[int, int, int], ...]) -> tuple[Any, int]:
  (x, value), (x_bdim, value_bdim) = vals, dims
  if value_bdim is None:
    config = list(padding_config)
    config.insert(x_bdim, (0, 0, 0))
    return pad(x, value, config), x_bdim
  # One padding value per example: pad with anything, then select each example's value
  # wherever a mask padded the same way says "padding".
  x = batching.bdim_at_front(x, x_bdim, np.shape(value)[value_bdim])
  config = [(0, 0, 0), *padding_config]
  padded = pad(x, np.zeros((), core.get_aval(x).dtype), config)
  is_operand = pad(lax.full_like(x, True, np.bool_), np.bool_(False), config)
  values = lax.broadcast_in_dim(value, np.shape(padded), (0,))
  return lax.select(is_operand, padded, values), 0


ad.deflinear(pad_p, _pad_transpose)
batching.primitive_batchers[pad_p] = _pad_batch_rule


# The interpreters (one layer down) build zeros, broadcasts, transposes and sums with these.
structural.install(full_fn=lax.full, broadcast_in_dim_fn=lax.broadcast_in_dim,
                   transpose_fn=transpose, add_fn=lax.add, reduce_sum_fn=reductions.reduce_sum)
