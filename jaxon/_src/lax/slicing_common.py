"""What the slicing primitives share: `GatherScatterMode`, the gather and scatter dimension
numbers with their checks and their batching, index bounds in lowerings, and small rule
helpers (`slice`, `dynamic_slice` and `dynamic_update_slice` in `slicing` use them too).

The index array's last dimension is always the index vector (one start index per entry of
the index map); its other dimensions are *batch* dimensions.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, shape_ops

# ----------------------------------------------------------------------------- shared rules
# (slice, dynamic_slice and dynamic_update_slice in `slicing` use them too)

def operand_weak_type(operand: ShapedArray, *avals: ShapedArray, **params: Any) -> bool:
  """Slicing results are weakly typed when the sliced operand is; indices do not matter."""
  return operand.weak_type


def static_ints(name: str, values: Sequence[Any], what: str) -> tuple[int, ...]:
  try:
    return tuple(v if core.is_symbolic_dim(v) else int(core.concrete_or_error(
        int, v, f"The {what} argument of {name} must be static.")) for v in values)
  except TypeError as e:
    if isinstance(e, core.ConcretizationTypeError):
      raise
    raise TypeError(f"{name} {what} must be a sequence of integers, got {values!r}") from e


def zero_cotangents(*args: Any) -> list[Any]:
  """The cotangents of a linear primitive whose output cotangent is a symbolic zero."""
  return [ad.Zero(a.aval) if ad.is_undefined_primal(a) else None for a in args]


def linear_jvp(prim: core.Primitive, linear: tuple[int, ...]) -> Callable[..., Any]:
  """The JVP of a primitive linear jointly in the operands at positions `linear`, the
  others (integer indices) held fixed: the primitive applied to those tangents."""
  def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple[Any, Any]:
    out = prim.bind(*primals, **params)
    if all(type(tangents[i]) is ad.Zero for i in linear):
      return out, ad.Zero(core.get_aval(out).to_tangent_aval())
    args = [ad.instantiate_zeros(tangents[i]) if i in linear else p
            for i, p in enumerate(primals)]
    return out, prim.bind(*args, **params)
  return jvp


def with_batch_dim(x: Any, bdim: int | None, size: int, pos: int) -> Any:
  """`x` with its batch dimension at `pos`, broadcast to `size` if it has none."""
  if bdim is batching.not_mapped:
    shape = list(np.shape(x))
    shape.insert(pos, size)
    return lax.broadcast_in_dim(x, shape, [d for d in range(len(shape)) if d != pos])
  return batching.moveaxis(x, bdim, pos)


def inserted(values: Sequence[Any], pos: int, value: Any) -> tuple[Any, ...]:
  values = list(values)
  values.insert(pos, value)
  return tuple(values)


# ----------------------------------------------------------------------------- modes

class GatherScatterMode(enum.Enum):
  """What gather and scatter do with out-of-bounds indices.

  - CLIP: indices are clamped so the whole window is in bounds.
  - FILL_OR_DROP: a gathered window that is partly out of bounds is filled with the fill
    value; a scattered window that is partly out of bounds is dropped.
  - PROMISE_IN_BOUNDS: the caller promises indices are in bounds; XLA then clamps gathers
    and drops scatters.
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()

  @staticmethod
  def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
    """Parses 'clip', 'fill' or 'drop', 'promise_in_bounds', or None (FILL_OR_DROP)."""
    if isinstance(s, GatherScatterMode):
      return s
    mode = _MODE_NAMES.get(s) if s is None or isinstance(s, str) else None
    if mode is None:
      raise ValueError(f"Unknown gather mode {s!r}: expected one of 'clip', 'fill', 'drop', "
                       f"'promise_in_bounds' or a GatherScatterMode.")
    return mode


_MODE_NAMES = {None: GatherScatterMode.FILL_OR_DROP, "fill": GatherScatterMode.FILL_OR_DROP,
               "drop": GatherScatterMode.FILL_OR_DROP, "clip": GatherScatterMode.CLIP,
               "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS}


# ----------------------------------------------------------------------------- dimension numbers

class GatherDimensionNumbers(NamedTuple):
  """How the dimensions of a gather's operand, indices and output relate.

  Attributes:
    offset_dims: the output dimensions that index into a gathered window (ascending).
    collapsed_slice_dims: operand dimensions of window size 1 that the output drops
      (ascending).
    start_index_map: for each entry of the index vector, the operand dimension it starts.
    operand_batching_dims: operand dimensions that pair with `start_indices_batching_dims`
      (each output batch element reads its own operand slice along them).
    start_indices_batching_dims: the index batch dimensions paired with those.

  The index vector is always the last dimension of the indices; the output's non-offset
  dimensions are the indices' other dimensions, in order.
  """
  offset_dims: tuple[int, ...]
  collapsed_slice_dims: tuple[int, ...]
  start_index_map: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  start_indices_batching_dims: tuple[int, ...] = ()


def canonical_dnums(dnums: Any, cls: type, name: str) -> Any:
  """The dimension numbers with every field a tuple of ints (so they are hashable)."""
  if not isinstance(dnums, cls):
    raise TypeError(f"{name} dimension_numbers must be a {cls.__name__}, got "
                    f"{type(dnums).__name__}: {dnums!r}")
  return cls(*(tuple(int(d) for d in field) for field in dnums))


class ScatterDimensionNumbers(NamedTuple):
  """How the dimensions of a scatter's operand, indices and updates relate (the mirror
  image of `GatherDimensionNumbers`).

  Attributes:
    update_window_dims: the dimensions of `updates` that index into a window (ascending).
    inserted_window_dims: operand dimensions of window size 1 that `updates` lacks
      (ascending).
    scatter_dims_to_operand_dims: for each entry of the index vector, the operand dimension
      it starts.
    operand_batching_dims: operand dimensions paired with `scatter_indices_batching_dims`.
    scatter_indices_batching_dims: the index batch dimensions paired with those.
  """
  update_window_dims: tuple[int, ...]
  inserted_window_dims: tuple[int, ...]
  scatter_dims_to_operand_dims: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  scatter_indices_batching_dims: tuple[int, ...] = ()


# ----------------------------------------------------------------------------- dimension checks

def check_dims(name: str, what: str, dims: tuple[int, ...], rank: int, *,
                sorted_: bool = True) -> None:
  """`dims` must be distinct dimensions in [0, rank), in ascending order if `sorted_`."""
  if any(not 0 <= d < rank for d in dims):
    raise TypeError(f"{name} {what} must be in the range [0, {rank}), got {what}={dims}.")
  if len(set(dims)) != len(dims):
    raise TypeError(f"{name} {what} must not repeat a dimension, got {what}={dims}.")
  if sorted_ and list(dims) != sorted(dims):
    raise TypeError(f"{name} {what} must be sorted, got {what}={dims}.")


def check_index_array(name: str, indices: ShapedArray) -> None:
  if not dtypes.is_integer(indices.dtype):
    raise TypeError(f"{name} indices must have an integer type, got {indices.str_short()}.")
  if indices.ndim < 1:
    raise TypeError(f"{name} indices must have at least one dimension (the last is the "
                    f"index vector), got {indices.str_short()}.")


def check_batching_dims(name: str, operand: ShapedArray, indices: ShapedArray,
                         operand_batching_dims: tuple[int, ...],
                         indices_batching_dims: tuple[int, ...], indices_what: str) -> None:
  """Operand batching dims pair up with index batch dims of the same sizes."""
  check_dims(name, "operand_batching_dims", operand_batching_dims, operand.ndim)
  check_dims(name, indices_what, indices_batching_dims, indices.ndim - 1, sorted_=False)
  if len(operand_batching_dims) != len(indices_batching_dims) or any(
      operand.shape[o] != indices.shape[i]
      for o, i in zip(operand_batching_dims, indices_batching_dims)):
    raise TypeError(f"{name} operand_batching_dims={operand_batching_dims} and "
                    f"{indices_what}={indices_batching_dims} must pair up dimensions of "
                    f"equal size, got operand of shape {operand.shape} and indices of shape "
                    f"{indices.shape}.")


def check_index_map(name: str, what: str, index_map: tuple[int, ...], operand: ShapedArray,
                     indices: ShapedArray, operand_batching_dims: tuple[int, ...]) -> None:
  """One operand dimension per entry of the index vector, none of them a batching dim."""
  if len(index_map) != indices.shape[-1]:
    raise TypeError(f"{name} {what} must have one entry per element of the index vector "
                    f"(the last dimension of indices), got {what}={index_map} for indices "
                    f"of shape {indices.shape}.")
  check_dims(name, what, index_map, operand.ndim, sorted_=False)
  if set(index_map) & set(operand_batching_dims):
    raise TypeError(f"{name} {what}={index_map} must not contain operand_batching_dims="
                    f"{operand_batching_dims}.")


def window_operand_dims(ndim: int, *excluded: tuple[int, ...]) -> list[int]:
  """The operand dimensions that keep a dimension in the window (not collapsed/batched)."""
  dropped = set().union(*excluded)
  return [d for d in range(ndim) if d not in dropped]


# ----------------------------------------------------------------------------- index bounds

def index_upper_bounds(operand_shape: Sequence[int], window: Sequence[int],
                        index_map: Sequence[int]) -> list[int]:
  """The largest in-bounds start index of each entry of the index vector."""
  return [operand_shape[d] - window[d] for d in index_map]


def _broadcast_along_last(ctx_aval: ShapedArray, values: Sequence[int]) -> ir.Value:
  """A constant of the index array's shape holding `values` along its last dimension."""
  const = mlir.ir_constant(np.array(values, ctx_aval.dtype).reshape(len(values)))
  return hlo.broadcast_in_dim(mlir.aval_to_ir_type(ctx_aval), const, [ctx_aval.ndim - 1])


def clamp_indices(indices: ir.Value, aval: ShapedArray, upper: Sequence[int]) -> ir.Value:
  lower = _broadcast_along_last(aval, [0] * len(upper))
  return hlo.clamp(lower, indices, _broadcast_along_last(aval, upper))


def in_bounds_mask(indices: ir.Value, aval: ShapedArray, upper: Sequence[int]) -> ir.Value:
  """A boolean per index vector (shape `aval.shape[:-1]`): every entry in bounds."""
  ge = lax.compare_hlo(indices, _broadcast_along_last(aval, [0] * len(upper)), "GE", aval.dtype)
  le = lax.compare_hlo(indices, _broadcast_along_last(aval, upper), "LE", aval.dtype)
  ok = hlo.and_(ge, le)
  pred = ShapedArray((), np.bool_)
  op = hlo.ReduceOp([mlir.aval_to_ir_type(pred.update(shape=aval.shape[:-1]))], [ok],
                    [mlir.ir_constant(np.array(True))],
                    ir.DenseI64ArrayAttr.get([aval.ndim - 1]))
  scalar = mlir.aval_to_ir_type(pred)
  block = op.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([hlo.and_(*block.arguments)])
  return op.result


# ----------------------------------------------------------------------------- batched dnums

def unbatched_rank(x: Any, bdim: int | None) -> int:
  return np.ndim(x) - (bdim is not batching.not_mapped)


def index_vector_last(indices: Any, bdim: int | None) -> tuple[Any, int | None]:
  """Batched indices whose batch dimension is not the last (the index vector's place)."""
  if bdim is not batching.not_mapped and bdim == np.ndim(indices) - 1:
    return batching.moveaxis(indices, bdim, 0), 0
  return indices, bdim


def batched_dnums(dnums: Any, operand_bdim: int | None, indices_bdim: int | None,
                   indices_rank: int) -> tuple[Any, int]:
  """The dimension numbers of a gather or scatter whose operand and/or indices gained a
  batch dimension, and where that dimension is in the gather's result (the scatter's
  updates), called the *values* here.

  Gather and scatter dimension numbers list the same things in the same order: the
  values' window dimensions, the operand dimensions without a window, the index map, the
  operand batching dimensions and the index batching dimensions. With shared indices the
  operand's batch dimension is read whole, as a new window dimension; with batched indices
  it is an index batch dimension, paired with the operand's as a batching dimension when
  the operand is batched too.
  """
  window, collapsed, index_map, operand_batching, indices_batching = dnums
  if operand_bdim is not batching.not_mapped:
    collapsed, index_map, operand_batching = (shape_ops._shift_past(d, operand_bdim)
                                              for d in (collapsed, index_map, operand_batching))
  if indices_bdim is batching.not_mapped:
    # The k-th window dimension of the operand is the k-th window dimension of the values.
    k = operand_bdim - sum(d < operand_bdim for d in collapsed + operand_batching)
    pos = window[k - 1] + 1 if k else 0
    window = tuple(sorted(shape_ops._shift_past(window, pos) + (pos,)))
  else:
    # The k-th index batch dimension is the k-th non-window dimension of the values.
    values_rank = len(window) + indices_rank - 1
    pos = ([d for d in range(values_rank) if d not in window] + [values_rank])[indices_bdim]
    window = shape_ops._shift_past(window, pos)
    indices_batching = shape_ops._shift_past(indices_batching, indices_bdim)
    if operand_bdim is not batching.not_mapped:
      k = sum(d < operand_bdim for d in operand_batching)
      operand_batching = inserted(operand_batching, k, operand_bdim)
      indices_batching = inserted(indices_batching, k, indices_bdim)
  return type(dnums)(window, collapsed, index_map, operand_batching, indices_batching), pos
