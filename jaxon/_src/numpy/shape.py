"""Shape manipulation in jaxon.numpy: NumPy's functions that reshape, reorder, join, split,
repeat and pad arrays, written with the lax shape primitives.

Shapes, axes, counts, shifts and pad widths decide the shapes of the results, so they must be
static: Python values or concrete arrays (a traced one raises ConcretizationTypeError). Array
arguments may be jaxon arrays, tracers, NumPy values or Python scalars (which stay weakly
typed, as in JAX).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import api, core, dtypes
from jaxon._src.lax import lax, shape_ops, slicing, structural
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import util
from jaxon._src.xla.array import Array, device_put_numpy
from jaxon._src.xla.eager_plans import memoize_eager_operations

Axis = int | Sequence[int] | None


def _ensure_array(fun_name: str, x: Any) -> Any:
  """Arrays and tracers pass through; NumPy values and scalars go to the device (Python
  scalars weakly typed), so every function returns jaxon arrays."""
  util.check_arraylike(fun_name, x)
  if isinstance(x, (Array, core.Tracer)):
    return x
  return device_put_numpy(np.asarray(x), dtypes.dtype(x, canonicalize=True),
                          weak_type=dtypes.is_weakly_typed(x))


def _static_ints(fun_name: str, what: str, value: Any) -> np.ndarray:
  """`value` as a concrete integer NumPy array; a traced value cannot decide a shape."""
  context = (f"The {what} argument of jnp.{fun_name} must be static (it decides the shape "
             f"of the result).")

  def concrete(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
      return [concrete(e) for e in x]
    return core.concrete_or_error(None, x, context)
  arr = np.asarray(concrete(value))
  if arr.size and not (dtypes.is_integer(arr.dtype) or arr.dtype == np.bool_):
    raise TypeError(f"jnp.{fun_name}: {what} must be integers, got {value!r} of dtype "
                    f"{arr.dtype.name}.")
  return arr.astype(np.int64)


def _axes(axis: int | Sequence[int], ndim: int, fun_name: str,
          repeated_error: type[Exception] = ValueError) -> tuple[int, ...]:
  """Canonical, distinct axes from an int or a sequence of ints. Repeated axes raise
  `repeated_error`: JAX's class depends on the function (the primitive that rejects them)."""
  axes = tuple(int(a) for a in np.atleast_1d(_static_ints(fun_name, "axis", axis)))
  axes = tuple(lax_utils.canonicalize_axis(a, ndim) for a in axes)
  if len(set(axes)) != len(axes):
    raise repeated_error(f"jnp.{fun_name}: repeated axis in {axis!r}.")
  return axes


def _size_along(x: Any, size: int, axis: int) -> Any:
  """A size-1 `axis` of `x` broadcast to `size`."""
  shape = list(np.shape(x))
  shape[axis] = size
  return lax.broadcast_in_dim(x, shape, range(len(shape)))


# ----------------------------------------------------------------------------- reshape, ravel

def reshape(a: Any, shape: int | Sequence[int] | None = None, order: str = "C", *,
            copy: bool | None = None) -> Any:
  """Gives `a` a new shape with the same number of elements; one entry of `shape` may be -1
  (inferred). `order='C'` reads elements row-major, `'F'` column-major.

  Example: `jnp.reshape(jnp.arange(6), (2, -1))` has shape (2, 3).
  """
  a = _ensure_array("reshape", a)
  if shape is None:
    raise TypeError("jnp.reshape() requires a shape argument.")
  return _reshape_in_order(a, _infer_shape(a.shape, shape), order)


def _static_dims(fun_name: str, what: str, value: Any) -> tuple[Any, ...]:
  """`value` (an int or a sequence of them) as a shape: ints, and symbolic dimensions
  (shape-polymorphic export) as they are."""
  if isinstance(value, (tuple, list)) and any(map(core.is_symbolic_dim, value)):
    return tuple(d if core.is_symbolic_dim(d) else int(_static_ints(fun_name, what, d))
                 for d in value)
  return tuple(int(d) for d in np.atleast_1d(_static_ints(fun_name, what, value)))


def _infer_shape(old: tuple[int, ...], shape: int | Sequence[int]) -> tuple[int, ...]:
  new = _static_dims("reshape", "shape", shape)
  if new.count(-1) > 1:
    raise TypeError(f"jnp.reshape: can only specify one unknown dimension (-1), got {new}.")
  if any(d < -1 for d in new):
    raise TypeError(f"jnp.reshape: shape {new} has a negative size other than -1.")
  if -1 not in new:
    return new
  known = math.prod(d for d in new if d != -1)
  size = math.prod(old)
  if known == 0 or size % known:
    raise TypeError(f"cannot reshape array of shape {old} (size {size}) into shape {new}.")
  return tuple(size // known if d == -1 else d for d in new)


def _reshape_in_order(a: Any, shape: tuple[int, ...], order: str) -> Any:
  if order == "C":
    return shape_ops.reshape(a, shape)
  if order == "F":
    # Column-major reading is row-major reading of the reversed dimensions.
    flipped = shape_ops.reshape(a, shape[::-1], dimensions=range(a.ndim)[::-1])
    return shape_ops.transpose(flipped, range(len(shape))[::-1])
  if order == "A":
    raise NotImplementedError("jnp.reshape(order='A') is not supported: jaxon arrays have "
                              "no memory layout; use 'C' or 'F'.")
  raise ValueError(f"jnp.reshape: order must be 'C' or 'F', got {order!r}.")


@memoize_eager_operations
def ravel(a: Any, order: str = "C") -> Any:
  """The elements of `a` as a 1-D array (row-major for `order='C'`)."""
  a = _ensure_array("ravel", a)
  if order == "K":
    raise NotImplementedError("jnp.ravel(order='K') is not supported: jaxon arrays have no "
                              "memory layout to follow; use 'C' or 'F'.")
  return _reshape_in_order(a, (a.size,), order)


# ----------------------------------------------------------------------------- reordering axes

def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
  """Permutes the axes of `a` (reverses them when `axes` is None).

  Example: `jnp.transpose(x, (1, 0, 2))` swaps the first two axes.
  """
  a = _ensure_array("transpose", a)
  perm = range(a.ndim)[::-1] if axes is None else (
      lax_utils.canonicalize_axis(int(i), a.ndim) for i in axes)
  return shape_ops.transpose(a, tuple(perm))


def permute_dims(a: Any, /, axes: Sequence[int]) -> Any:
  """The Array API's name for `transpose` (axes required)."""
  return transpose(a, axes)


def matrix_transpose(x: Any, /) -> Any:
  """Swaps the last two axes (transposes a stack of matrices)."""
  x = _ensure_array("matrix_transpose", x)
  if x.ndim < 2:
    raise ValueError(f"matrix_transpose requires an array of at least 2 dimensions, got "
                     f"shape {x.shape}.")
  return swapaxes(x, -1, -2)


@memoize_eager_operations
def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
  """Interchanges two axes of `a`."""
  a = _ensure_array("swapaxes", a)
  perm = list(range(a.ndim))
  i, j = (lax_utils.canonicalize_axis(int(ax), a.ndim) for ax in (axis1, axis2))
  perm[i], perm[j] = perm[j], perm[i]
  return shape_ops.transpose(a, perm)


@memoize_eager_operations
def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
  """Moves axes `source` to positions `destination`; the other axes keep their order.

  Example: `jnp.moveaxis(x, 0, -1)` of shape (2, 3, 4) has shape (3, 4, 2).
  """
  a = _ensure_array("moveaxis", a)
  src = _axes(source, a.ndim, "moveaxis", TypeError)
  dst = _axes(destination, a.ndim, "moveaxis", TypeError)
  if len(src) != len(dst):
    raise ValueError(f"jnp.moveaxis: source and destination must have the same number of "
                     f"elements, got {source!r} and {destination!r}.")
  perm = [i for i in range(a.ndim) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return shape_ops.transpose(a, perm)


# ----------------------------------------------------------------------------- squeeze, expand_dims

def squeeze(a: Any, axis: Axis = None) -> Any:
  """Removes axes of size 1: all of them when `axis` is None, else those named (which must
  have size 1)."""
  a = _ensure_array("squeeze", a)
  axes = (tuple(i for i, d in enumerate(a.shape) if d == 1) if axis is None
          else _axes(axis, a.ndim, "squeeze"))
  return shape_ops.squeeze(a, axes)


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
  """Inserts size-1 axes at positions `axis` of the result.

  Example: `jnp.expand_dims(x, (0, -1))` of shape (3,) has shape (1, 3, 1).
  """
  a = _ensure_array("expand_dims", a)
  axes = tuple(int(i) for i in np.atleast_1d(_static_ints("expand_dims", "axis", axis)))
  return shape_ops.expand_dims(a, axes)


def _atleast_shape(shape: tuple[int, ...], ndim: int) -> tuple[int, ...]:
  """NumPy's `atleast_{1,2,3}d` shapes: (n,) becomes (1, n) and (1, n, 1); (m, n) becomes
  (m, n, 1)."""
  if len(shape) >= ndim:
    return shape
  if ndim == 3 and len(shape) == 2:
    return shape + (1,)
  if ndim == 3 and len(shape) == 1:
    return (1,) + shape + (1,)
  return (1,) * (ndim - len(shape)) + shape


def _atleast(fun_name: str, ndim: int, arys: tuple[Any, ...]) -> Any:
  arys = [_ensure_array(fun_name, a) for a in arys]
  out = [shape_ops.reshape(a, _atleast_shape(a.shape, ndim)) for a in arys]
  return out[0] if len(out) == 1 else out


def atleast_1d(*arys: Any) -> Any:
  """Each argument with at least one dimension (a list when given several)."""
  return _atleast("atleast_1d", 1, arys)


def atleast_2d(*arys: Any) -> Any:
  """Each argument with at least two dimensions: (n,) becomes (1, n)."""
  return _atleast("atleast_2d", 2, arys)


def atleast_3d(*arys: Any) -> Any:
  """Each argument with at least three dimensions: (n,) becomes (1, n, 1) and (m, n)
  becomes (m, n, 1)."""
  return _atleast("atleast_3d", 3, arys)


# ----------------------------------------------------------------------------- broadcasting

def broadcast_shapes(*shapes: int | Sequence[int]) -> tuple[int, ...]:
  """The shape that arrays of `shapes` broadcast to, by NumPy's rules."""
  shapes = [_static_dims("broadcast_shapes", "shape", s) for s in shapes]
  ndim = max((len(s) for s in shapes), default=0)
  out = []
  for sizes in zip(*((1,) * (ndim - len(s)) + s for s in shapes)):
    non_one = set(sizes) - {1}
    if len(non_one) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}.")
    out.append(non_one.pop() if non_one else 1)
  return tuple(out)


def broadcast_to(array: Any, shape: int | Sequence[int]) -> Any:
  """`array` broadcast to `shape` by NumPy's rules (leading axes added, size-1 axes
  stretched).

  Example: `jnp.broadcast_to(jnp.arange(3), (2, 3))` repeats the row twice.
  """
  array = _ensure_array("broadcast_to", array)
  shape = lax_utils.canonicalize_shape(shape, "of broadcast_to")
  lead = len(shape) - array.ndim
  if lead < 0 or any(s < 0 for s in shape) or any(
      d not in (1, s) for d, s in zip(array.shape, shape[lead:])):
    raise ValueError(f"Incompatible shapes for broadcasting: {array.shape} and requested "
                     f"shape {shape}.")
  if array.shape == shape:
    return array
  return lax.broadcast_in_dim(array, shape, range(lead, len(shape)))


def broadcast_arrays(*args: Any) -> list[Any]:
  """The arguments broadcast against each other to one shape."""
  args = [_ensure_array("broadcast_arrays", a) for a in args]
  shape = broadcast_shapes(*(a.shape for a in args))
  return [broadcast_to(a, shape) for a in args]


# ----------------------------------------------------------------------------- joining

def _is_array(x: Any) -> bool:
  return isinstance(x, (Array, core.Tracer, np.ndarray))


def _join_stacked(x: Any, axis: int) -> Any:
  """`concatenate(list(x), axis)` for an array `x`, without unstacking it: the leading
  axis moves next to `axis` and merges into it."""
  moved = moveaxis(x, 0, axis)
  return shape_ops.collapse(moved, axis, axis + 2)


def _promote_to(arrays: Sequence[Any], dtype: Any) -> list[Any]:
  if dtype is None:
    return util.promote_dtypes(*arrays)
  dtype = dtypes.canonicalize_dtype(dtype)
  return [lax._convert_element_type(a, dtype, False) for a in arrays]


@memoize_eager_operations
def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Any:
  """Joins arrays along an existing `axis` (flattening them first when `axis` is None),
  promoting them to a common dtype (or to `dtype`). A single array is treated as the
  sequence of its rows.

  Example: `jnp.concatenate([jnp.zeros((2, 1)), jnp.ones((2, 3))], axis=1)` has shape (2, 4).
  """
  if _is_array(arrays):
    x = _ensure_array("concatenate", arrays)
    if axis is None:
      return _promote_to([ravel(x)], dtype)[0]
    if x.ndim < 2:
      raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    joined = _join_stacked(x, lax_utils.canonicalize_axis(axis, x.ndim - 1))
    return _promote_to([joined], dtype)[0]
  arrays = [_ensure_array("concatenate", a) for a in arrays]
  if not arrays:
    raise ValueError("Need at least one array to concatenate.")
  if axis is None:
    arrays, axis = [ravel(a) for a in arrays], 0
  if arrays[0].ndim == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = lax_utils.canonicalize_axis(axis, arrays[0].ndim)
  return shape_ops.concatenate(_promote_to(arrays, dtype), axis)


def concat(arrays: Any, /, *, axis: int | None = 0) -> Any:
  """The Array API's name for `concatenate`."""
  return concatenate(arrays, axis=axis)


@memoize_eager_operations
def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Any:
  """Joins arrays of equal shape along a new `axis`.

  Example: `jnp.stack([x, y], axis=-1)` of two (3,) arrays has shape (3, 2).
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.stack is not supported: jaxon "
                              "arrays are immutable.")
  if _is_array(arrays):
    x = _ensure_array("stack", arrays)
    return _promote_to([moveaxis(x, 0, axis)], dtype)[0]
  arrays = [_ensure_array("stack", a) for a in arrays]
  if not arrays:
    raise ValueError("Need at least one array to stack.")
  shapes = {a.shape for a in arrays}
  if len(shapes) != 1:
    raise ValueError(f"All input arrays must have the same shape, got "
                     f"{', '.join(str(a.shape) for a in arrays)}.")
  axis = lax_utils.canonicalize_axis(axis, arrays[0].ndim + 1)
  expanded = [shape_ops.expand_dims(a, (axis,)) for a in arrays]
  return shape_ops.concatenate(_promote_to(expanded, dtype), axis)


def _column_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
  """`column_stack` turns scalars and 1-D arrays into columns."""
  return shape if len(shape) >= 2 else (math.prod(shape), 1)


def _join(fun_name: str, tup: Any, element_shape: Callable[[tuple[int, ...]], tuple],
          axis_of: Callable[[int], int], dtype: Any) -> Any:
  """hstack, vstack, dstack, column_stack: reshape each element, then concatenate along
  the axis that `axis_of(element ndim)` names. An array argument is its sequence of rows."""
  if _is_array(tup):
    x = _ensure_array(fun_name, tup)
    if x.ndim == 0:
      raise ValueError(f"jnp.{fun_name} requires a sequence of arrays, got a 0-d array.")
    shape = element_shape(x.shape[1:])
    joined = _join_stacked(shape_ops.reshape(x, (x.shape[0],) + shape), axis_of(len(shape)))
    return _promote_to([joined], dtype)[0]
  arrays = [_ensure_array(fun_name, a) for a in tup]
  if not arrays:
    raise ValueError(f"jnp.{fun_name} needs at least one array to join.")
  arrays = [shape_ops.reshape(a, element_shape(a.shape)) for a in arrays]
  return concatenate(arrays, axis_of(arrays[0].ndim), dtype)


@memoize_eager_operations
def hstack(tup: Any, dtype: Any = None) -> Any:
  """Joins arrays along their second axis (the first, for 1-D arrays)."""
  return _join("hstack", tup, lambda s: _atleast_shape(s, 1), lambda nd: 0 if nd == 1 else 1,
               dtype)


@memoize_eager_operations
def vstack(tup: Any, dtype: Any = None) -> Any:
  """Joins arrays row-wise (1-D arrays become rows)."""
  return _join("vstack", tup, lambda s: _atleast_shape(s, 2), lambda nd: 0, dtype)


@memoize_eager_operations
def dstack(tup: Any, dtype: Any = None) -> Any:
  """Joins arrays along the third axis (after making them at least 3-D)."""
  return _join("dstack", tup, lambda s: _atleast_shape(s, 3), lambda nd: 2, dtype)


@memoize_eager_operations
def column_stack(tup: Any) -> Any:
  """Joins 1-D arrays as the columns of a 2-D array (2-D arrays join as they are)."""
  return _join("column_stack", tup, _column_shape, lambda nd: 1, None)


# ----------------------------------------------------------------------------- splitting

def _split_bounds(fun_name: str, size: int, indices_or_sections: Any,
                  equal: bool) -> list[tuple[int, int]]:
  """(start, stop) of each piece; explicit indices follow Python slicing (clipped, and a
  piece whose stop comes before its start is empty)."""
  spec = _static_ints(fun_name, "indices_or_sections", indices_or_sections)
  if spec.ndim == 0:
    sections = int(spec)
    if sections <= 0:
      raise ValueError(f"jnp.{fun_name}: number of sections must be larger than 0, got "
                       f"{sections}.")
    if equal and size % sections:
      raise ValueError(f"jnp.{fun_name}: array split does not result in an equal division: "
                       f"an axis of size {size} into {sections} sections.")
    small, extra = divmod(size, sections)
    sizes = [small + 1] * extra + [small] * (sections - extra)
    edges = np.cumsum([0] + sizes).tolist()
    return list(zip(edges[:-1], edges[1:]))
  points = [None] + [int(i) for i in spec.ravel()] + [None]
  bounds = []
  for start, stop in zip(points[:-1], points[1:]):
    lo, hi, _ = slice(start, stop).indices(size)
    bounds.append((lo, max(lo, hi)))
  return bounds


def _split(fun_name: str, ary: Any, indices_or_sections: Any, axis: int,
           equal: bool) -> list[Any]:
  ary = _ensure_array(fun_name, ary)
  if ary.ndim == 0:
    raise ValueError(f"jnp.{fun_name} requires an array of at least 1 dimension, got a 0-d "
                     "array.")
  axis = lax_utils.canonicalize_axis(axis, ary.ndim)
  bounds = _split_bounds(fun_name, ary.shape[axis], indices_or_sections, equal)
  starts, stops = zip(*bounds)
  if starts[1:] == stops[:-1]:  # consecutive pieces, the usual split: one `split`, as JAX's
    return list(structural.split(ary, [hi - lo for lo, hi in bounds], axis))
  return [slicing.slice_in_dim(ary, lo, hi, axis=axis) for lo, hi in bounds]


@memoize_eager_operations
def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
  """Splits `ary` along `axis` into equal sections (an int) or at the given indices.

  Example: `jnp.split(jnp.arange(6), [2, 5])` gives pieces of sizes 2, 3 and 1.
  """
  return _split("split", ary, indices_or_sections, axis, equal=True)


@memoize_eager_operations
def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
  """Like `split`, but an int number of sections need not divide the axis: the first
  `size % sections` pieces get one extra element."""
  return _split("array_split", ary, indices_or_sections, axis, equal=False)


def _split_min_ndim(fun_name: str, ary: Any, min_ndim: int) -> Any:
  ary = _ensure_array(fun_name, ary)
  if ary.ndim < min_ndim:
    raise ValueError(f"jnp.{fun_name} only works on arrays of {min_ndim} or more dimensions, "
                     f"got shape {ary.shape}.")
  return ary


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
  """`split` along the second axis (the first, for 1-D arrays)."""
  ary = _split_min_ndim("hsplit", ary, 1)
  return _split("hsplit", ary, indices_or_sections, 1 if ary.ndim > 1 else 0, equal=True)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
  """`split` along the first axis of an array of at least 2 dimensions."""
  ary = _split_min_ndim("vsplit", ary, 2)
  return _split("vsplit", ary, indices_or_sections, 0, equal=True)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
  """`split` along the third axis of an array of at least 3 dimensions."""
  ary = _split_min_ndim("dsplit", ary, 3)
  return _split("dsplit", ary, indices_or_sections, 2, equal=True)


# ----------------------------------------------------------------------------- flipping, rotating

@memoize_eager_operations
def flip(m: Any, axis: Axis = None) -> Any:
  """Reverses the order of elements along `axis` (all axes when None)."""
  m = _ensure_array("flip", m)
  axes = tuple(range(m.ndim)) if axis is None else _axes(axis, m.ndim, "flip", TypeError)
  return shape_ops.rev(m, axes)


def fliplr(m: Any) -> Any:
  """Reverses the columns (axis 1) of an array of at least 2 dimensions."""
  m = _ensure_array("fliplr", m)
  if m.ndim < 2:
    raise ValueError(f"jnp.fliplr requires an array of at least 2 dimensions, got shape "
                     f"{m.shape}.")
  return shape_ops.rev(m, (1,))


def flipud(m: Any) -> Any:
  """Reverses the rows (axis 0) of an array of at least 1 dimension."""
  m = _ensure_array("flipud", m)
  if m.ndim < 1:
    raise ValueError("jnp.flipud requires an array of at least 1 dimension, got a 0-d array.")
  return shape_ops.rev(m, (0,))


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
  """Rotates `m` by 90 degrees `k` times, from the first of `axes` towards the second.

  Example: `jnp.rot90(jnp.array([[1, 2], [3, 4]]))` is `[[2, 4], [1, 3]]`.
  """
  m = _ensure_array("rot90", m)
  if len(axes) != 2:
    raise ValueError(f"jnp.rot90: len(axes) must be 2, got axes={axes!r}.")
  if m.ndim < 2:
    raise ValueError(f"jnp.rot90 requires an array of at least 2 dimensions, got shape "
                     f"{m.shape}.")
  ax0, ax1 = (lax_utils.canonicalize_axis(int(a), m.ndim) for a in axes)
  if ax0 == ax1:
    raise ValueError(f"jnp.rot90: axes must be different, got axes={axes!r}.")
  k = int(_static_ints("rot90", "k", k)) % 4
  if k == 0:
    return m
  if k == 2:
    return shape_ops.rev(m, (ax0, ax1))
  perm = list(range(m.ndim))
  perm[ax0], perm[ax1] = ax1, ax0
  if k == 1:
    return shape_ops.transpose(shape_ops.rev(m, (ax1,)), perm)
  return shape_ops.rev(shape_ops.transpose(m, perm), (ax1,))


@memoize_eager_operations
def roll(a: Any, shift: int | Sequence[int], axis: Axis = None) -> Any:
  """Shifts elements along `axis` by `shift` positions, wrapping around (over the
  flattened array when `axis` is None). Shifts must be static.

  Example: `jnp.roll(jnp.arange(5), 2)` is `[3, 4, 0, 1, 2]`.
  """
  a = _ensure_array("roll", a)
  shifts = _static_ints("roll", "shift", shift)
  if axis is None:
    return reshape(roll(ravel(a), int(shifts.sum()), 0), a.shape)
  axes = _static_ints("roll", "axis", axis)
  if shifts.ndim > 1 or axes.ndim > 1:
    raise ValueError(f"jnp.roll: shift and axis must be ints or 1-D sequences, got "
                     f"{shift!r} and {axis!r}.")
  total = [0] * a.ndim
  for s, ax in zip(*(b.ravel() for b in np.broadcast_arrays(shifts, axes))):
    total[lax_utils.canonicalize_axis(int(ax), a.ndim)] += int(s)
  for ax, s in enumerate(total):
    a = _roll_axis(a, s, ax)
  return a


def _roll_axis(a: Any, shift: int, axis: int) -> Any:
  n = a.shape[axis]
  shift = shift % n if n else 0
  if shift == 0:
    return a
  tail = slicing.slice_in_dim(a, n - shift, n, axis=axis)
  head = slicing.slice_in_dim(a, 0, n - shift, axis=axis)
  return shape_ops.concatenate([tail, head], axis)


# ----------------------------------------------------------------------------- repeating

@memoize_eager_operations
def tile(A: Any, reps: int | Sequence[int]) -> Any:
  """`A` repeated `reps[i]` times along axis i (leading axes added to match `reps`).

  Example: `jnp.tile(jnp.array([1, 2]), (2, 2))` is `[[1, 2, 1, 2], [1, 2, 1, 2]]`.
  """
  A = _ensure_array("tile", A)
  reps = tuple(int(r) for r in np.atleast_1d(_static_ints("tile", "reps", reps)))
  if any(r < 0 for r in reps):
    raise ValueError(f"jnp.tile: reps must be non-negative, got {reps}.")
  ndim = max(len(reps), A.ndim)
  shape = (1,) * (ndim - A.ndim) + A.shape
  reps = (1,) * (ndim - len(reps)) + reps
  # Broadcast to (r0, d0, r1, d1, …), then merge each (r, d) pair: one copy, no loops.
  interleaved = [n for r, d in zip(reps, shape) for n in (r, d)]
  dims = [2 * i + 1 for i in range(ndim - A.ndim, ndim)]
  tiled = lax.broadcast_in_dim(A, interleaved, dims)
  return shape_ops.reshape(tiled, tuple(r * d for r, d in zip(reps, shape)))


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
  """Repeats each element of `a` along `axis` (of the flattened array when None): all
  `repeats` times (an int), or element i `repeats[i]` times. `repeats` must be static;
  `total_repeat_length`, when given, truncates the result or repeats its last element to
  reach that length.

  Example: `jnp.repeat(jnp.array([1, 2]), [1, 3])` is `[1, 2, 2, 2]`.
  """
  a = _ensure_array("repeat", a)
  if axis is None:
    a, axis = ravel(a), 0
  axis = lax_utils.canonicalize_axis(axis, a.ndim)
  counts = _static_ints("repeat", "repeats", repeats)
  n = a.shape[axis]
  if counts.ndim > 1 or (counts.ndim == 1 and counts.size not in (1, n)):
    raise ValueError(f"jnp.repeat: repeats must be an int or a 1-D sequence of length 1 or "
                     f"{n} (the size of axis {axis} of shape {a.shape}), got shape "
                     f"{counts.shape}.")
  if np.any(counts < 0):
    raise ValueError(f"jnp.repeat: repeats may not contain negative values, got {repeats!r}.")
  if total_repeat_length is not None:
    counts = _fit_counts(np.broadcast_to(counts, (n,)), int(total_repeat_length))
  if counts.ndim == 0 or counts.size == 1:
    return _repeat_uniform(a, int(counts.ravel()[0]), axis)
  pieces = [_size_along(slicing.slice_in_dim(a, i, i + 1, axis=axis), int(c), axis)
            for i, c in enumerate(counts) if c]
  if not pieces:
    return slicing.slice_in_dim(a, 0, 0, axis=axis)
  return shape_ops.concatenate(pieces, axis)


def _fit_counts(counts: np.ndarray, total: int) -> np.ndarray:
  """Counts cut so that they sum to at most `total`, the last one grown to reach it."""
  if total < 0:
    raise ValueError(f"jnp.repeat: total_repeat_length must be non-negative, got {total}.")
  ends = np.minimum(np.cumsum(counts), total)
  fitted = np.diff(ends, prepend=0)
  if fitted.size:
    fitted[-1] += total - ends[-1]
  elif total:
    raise ValueError("jnp.repeat: cannot reach total_repeat_length from an empty axis.")
  return fitted


def _repeat_uniform(a: Any, count: int, axis: int) -> Any:
  """Every element `count` times: broadcast a new axis after `axis`, merge the two."""
  shape = a.shape[:axis + 1] + (count,) + a.shape[axis + 1:]
  dims = [i for i in range(a.ndim + 1) if i != axis + 1]
  return shape_ops.collapse(lax.broadcast_in_dim(a, shape, dims), axis, axis + 2)


# ----------------------------------------------------------------------------- padding

_STAT_MODES = ("maximum", "minimum", "mean", "median")
_PAD_KWARGS = {"constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "linear_ramp": {"end_values"}, **{m: {"stat_length"} for m in _STAT_MODES}}


@memoize_eager_operations
def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
  """Pads `array` with `pad_width` elements before and after each axis, as `numpy.pad`.

  `pad_width` is an int, a `(before, after)` pair, or one pair per axis. Modes:
    'constant': `constant_values` (a scalar or per-axis `(before, after)` values; default 0).
    'empty': zeros (NumPy leaves them undefined).
    'edge': repeats the edge element.
    'wrap': periodic.
    'reflect' / 'symmetric': mirror without / with repeating the edge; with
      `reflect_type='odd'` the mirror image is taken through the edge value (2 edge - x).
    'linear_ramp': runs linearly from `end_values` (default 0, same forms as
      `constant_values`) at the outer end to the edge element.
    'maximum', 'minimum', 'mean', 'median': the statistic of the `stat_length` elements
      nearest each end (an int, pair or per-axis pairs; default None, the whole axis).
      Integer arrays round the mean and median to the nearest even integer, as NumPy does.

  Axes are padded in order, so the corners of later axes use the padding of earlier ones.

  Example: `jnp.pad(jnp.array([1, 2, 3]), (2, 1), mode='reflect')` is `[3, 2, 1, 2, 3, 2]`.
  """
  array = _ensure_array("pad", array)
  widths = _pad_widths(pad_width, array.ndim)
  if callable(mode):
    raise NotImplementedError("jnp.pad: a callable mode is not supported; pass one of "
                              f"{', '.join(sorted(_PAD_KWARGS))}.")
  if mode not in _PAD_KWARGS:
    raise NotImplementedError(f"jnp.pad: mode {mode!r} is not supported; supported modes "
                              f"are {', '.join(sorted(_PAD_KWARGS))}.")
  unexpected = set(kwargs) - _PAD_KWARGS[mode]
  if unexpected:
    raise ValueError(f"jnp.pad: unsupported keyword arguments for mode {mode!r}: "
                     f"{sorted(unexpected)}.")
  if mode in ("constant", "empty"):
    return _pad_constant(array, widths, kwargs.get("constant_values", 0))
  if any(n == 0 and any(w) for n, w in zip(array.shape, widths)):
    axis = next(i for i, (n, w) in enumerate(zip(array.shape, widths)) if n == 0 and any(w))
    raise ValueError(f"jnp.pad: can't extend empty axis {axis} using modes other than "
                     f"'constant' or 'empty' (mode {mode!r}, shape {array.shape}).")
  if math.prod(array.shape) == 0:
    return _pad_constant(array, widths, 0)  # nothing to read the padding from, and no room
  options = _static_options(kwargs)
  if options is not None and core.is_eval_trace_current():
    return _pad_as_one_program(array, tuple(widths), mode, options)
  return _pad_axes(array, widths, mode, kwargs)


def _pad_axes(array: Any, widths: Sequence[tuple[int, int]], mode: str,
              kwargs: dict[str, Any]) -> Any:
  pad_axis = _axis_padder(array, mode, kwargs)
  for axis, (before, after) in enumerate(widths):
    array = pad_axis(array, axis, before, after)
  return array


@functools.partial(api.jit, static_argnums=(1, 2, 3))
def _pad_as_one_program(array: Any, widths: tuple[tuple[int, int], ...], mode: str,
                        options: tuple[tuple[str, Any], ...]) -> Any:
  """An eager pad, compiled whole as JAX's `_pad` is: XLA then fuses a ramp's float
  multiply-add as in JAX, and an integer ramp floors as JAX's does (op by op, jaxon keeps
  them apart, and a value just below an integer could floor differently)."""
  return _pad_axes(array, widths, mode, dict(options))


def _static_options(kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
  """The mode's options as a hashable tuple of Python values (NumPy arrays as nested
  tuples), or None if one is not concrete."""
  options = []
  for name, value in sorted(kwargs.items()):
    try:
      value = np.asarray(value).tolist() if not isinstance(value, (str, type(None))) else value
    except Exception:  # a tracer
      return None
    options.append((name, _nested_tuple(value)))
  return tuple(options)


def _nested_tuple(value: Any) -> Any:
  return tuple(map(_nested_tuple, value)) if isinstance(value, list) else value


def _pad_widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
  """One (before, after) pair per axis, broadcast as NumPy does."""
  widths = _static_ints("pad", "pad_width", pad_width)
  if np.any(widths < 0):
    raise ValueError(f"jnp.pad: pad_width can't contain negative values, got {pad_width!r}.")
  return _pairs(widths, ndim, "pad_width", pad_width)


def _pairs(values: np.ndarray, ndim: int, what: str, given: Any) -> list[tuple[Any, Any]]:
  """A scalar, a (before, after) pair or one pair per axis, as one pair per axis."""
  try:
    pairs = np.broadcast_to(values, (ndim, 2))
  except ValueError:
    raise ValueError(f"jnp.pad: {what} {given!r} does not broadcast to one (before, after) "
                     f"pair for each of the {ndim} axes.") from None
  return [(pair[0].item(), pair[1].item()) for pair in pairs]


def _pad_constant(array: Any, widths: list[tuple[int, int]], constant_values: Any) -> Any:
  if np.ndim(constant_values) == 0:
    value = lax._convert_element_type(constant_values, array.dtype, array.weak_type)
    return shape_ops.pad(array, value, [(b, a, 0) for b, a in widths])
  values = _per_axis_values(array, constant_values, "constant_values")
  for axis, ((before, after), (v_before, v_after)) in enumerate(zip(widths, values)):
    for lo, hi, v in ((before, 0, v_before), (0, after, v_after)):
      config = [(0, 0, 0)] * array.ndim
      config[axis] = (lo, hi, 0)
      array = shape_ops.pad(array, lax._convert_element_type(v, array.dtype,
                                                             array.weak_type), config)
  return array


def _per_axis_values(array: Any, values: Any, what: str) -> list[tuple[Any, Any]]:
  """`values` (a scalar, possibly traced, or static pairs) as one (before, after) pair per
  axis."""
  if np.ndim(values) == 0:
    return [(values, values)] * array.ndim
  static = core.concrete_or_error(
      np.asarray, values, f"jnp.pad: per-axis {what} must be static; a traced value is "
      "supported as a scalar.")
  return _pairs(static, array.ndim, what, values)


def _axis_padder(array: Any, mode: str, kwargs: dict[str, Any]) -> Callable[..., Any]:
  """The function `(x, axis, before, after) -> padded x` of `mode`, its options bound."""
  if mode in ("reflect", "symmetric"):
    odd = _reflect_type(array, kwargs.get("reflect_type", "even"))
    return lambda x, axis, before, after: _pad_periodic(x, axis, before, after, mode, odd)
  if mode == "wrap":
    return lambda x, axis, before, after: _pad_periodic(x, axis, before, after, mode, False)
  if mode == "edge":
    return lambda x, axis, before, after: _pad_with(x, axis, before, after, _edges(x, axis))
  if mode == "linear_ramp":
    ends = _per_axis_values(array, kwargs.get("end_values", 0), "end_values")
    return lambda x, axis, before, after: _pad_linear_ramp(x, axis, before, after, ends[axis])
  lengths = _stat_lengths(kwargs.get("stat_length"), array.ndim)

  def pad_stat(x: Any, axis: int, before: int, after: int) -> Any:
    if before == after == 0:
      return x
    return _pad_with(x, axis, before, after, _stats(x, axis, lengths[axis], mode))
  return pad_stat


def _reflect_type(array: Any, reflect_type: str) -> bool:
  """Whether `reflect_type` asks for odd reflection."""
  if reflect_type not in ("even", "odd"):
    raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}.")
  if reflect_type == "odd" and array.dtype == np.bool_:
    raise TypeError("jnp.pad: reflect_type='odd' computes 2 * edge - x, which booleans "
                    "don't support; convert the array to an integer type first.")
  return reflect_type == "odd"


def _edges(x: Any, axis: int) -> tuple[Any, Any]:
  """The first and last elements along `axis`, keeping it (size 1)."""
  n = x.shape[axis]
  return slicing.slice_in_dim(x, 0, 1, axis=axis), slicing.slice_in_dim(x, n - 1, n, axis=axis)


def _pad_with(x: Any, axis: int, before: int, after: int, fills: tuple[Any, Any]) -> Any:
  """`x` between `before` copies of fills[0] and `after` copies of fills[1] (each of size 1
  along `axis`)."""
  if before == after == 0:
    return x
  parts = [_size_along(fills[0], before, axis), x, _size_along(fills[1], after, axis)]
  return shape_ops.concatenate(parts, axis)


def _pad_periodic(x: Any, axis: int, before: int, after: int, mode: str, odd: bool) -> Any:
  """'wrap', 'reflect' and 'symmetric': the padded axis repeats a period (x and its mirror
  image for the mirroring modes). An odd mirror image (2 edge - x) also shifts each period
  by twice the rise from the first to the last element, as repeating the odd reflection
  about each new edge does."""
  n = x.shape[axis]
  if before == after == 0:
    return x
  if mode == "reflect" and n == 1:
    return _pad_with(x, axis, before, after, (x, x))
  first, last = _edges(x, axis) if odd else (None, None)
  # the mirror image's entry i is x[mirror_end - i]; 'reflect' leaves out both edges
  mirror_end, mirror_size = {"wrap": (0, 0), "symmetric": (n - 1, n),
                             "reflect": (n - 2, n - 2)}[mode]
  m = n + mirror_size

  def mirrored(start: int, stop: int) -> Any:
    """Entries start..stop of the mirror image: x[mirror_end - i] for each i."""
    part = shape_ops.rev(slicing.slice_in_dim(x, mirror_end + 1 - stop, mirror_end + 1 - start,
                                              axis=axis), (axis,))
    return lax.sub(lax.add(last, last), part) if odd else part

  if before + after <= 2 * m:
    out = shape_ops.concatenate(
        [mirrored(a, b) if in_mirror else slicing.slice_in_dim(x, a, b, axis=axis)
         for in_mirror, a, b in _period_runs(-before, n + after, n, m)], axis)
  else:  # many periods: tile one, and slice the padded range out of the tiles
    period = shape_ops.concatenate([x, mirrored(0, m - n)], axis) if m > n else x
    reps_before = -(-before // m)
    reps = [1] * x.ndim
    reps[axis] = reps_before - (-(n + after) // m)
    start = reps_before * m - before
    out = slicing.slice_in_dim(tile(period, reps), start, start + before + n + after, axis=axis)
  if not odd:
    return out
  shift = lax.sub(last, first)
  periods = np.arange(-before, n + after) // m
  steps = lax.broadcast_in_dim(periods.astype(x.dtype) * 2, out.shape, (axis,))
  return lax.add(out, lax.mul(steps, _size_along(shift, out.shape[axis], axis)))


def _period_runs(lo: int, hi: int, n: int, m: int) -> list[tuple[bool, int, int]]:
  """Positions lo..hi of a sequence of period m, whose first n entries are x and the rest its
  mirror image, as runs (in the mirror image?, start, stop) within x or the mirror image. A
  narrow pad is then a few slices, as JAX's: tiling a whole period and slicing it out costs
  2.5x as much in a compiled program."""
  runs = []
  while lo < hi:
    offset = lo % m
    in_mirror = offset >= n
    start = offset - n if in_mirror else offset
    stop = min((m - n) if in_mirror else n, start + hi - lo)
    runs.append((in_mirror, start, stop))
    lo += stop - start
  return runs


def _pad_linear_ramp(x: Any, axis: int, before: int, after: int, ends: tuple[Any, Any]
                     ) -> Any:
  """Ramps from each end value to the edge element, excluding the edge: NumPy's
  `linspace(end, edge, width, endpoint=False)`, floored for integer arrays."""
  compute = x.dtype if dtypes.is_inexact(x.dtype) else dtypes.default_float_dtype()
  ramps = []
  for edge, end, width, towards_edge in zip(_edges(x, axis), ends, (before, after),
                                            (True, False)):
    end = lax._convert_element_type(end, compute)
    step = lax.div(lax.sub(lax._convert_element_type(edge, compute), end),
                   lax._convert_element_type(max(width, 1), compute))
    index = np.arange(width) if towards_edge else np.arange(width - 1, -1, -1)
    shape = list(x.shape)
    shape[axis] = width
    ramp = lax.add(lax.mul(lax.broadcast_in_dim(index.astype(compute), shape, (axis,)),
                           _size_along(step, width, axis)), end)
    if dtypes.is_integer(x.dtype):
      ramp = lax.floor(ramp)
    ramps.append(lax._convert_element_type(ramp, x.dtype, x.weak_type))
  return shape_ops.concatenate([ramps[0], x, ramps[1]], axis)


def _stat_lengths(stat_length: Any, ndim: int) -> list[tuple[int | None, int | None]]:
  if stat_length is None:
    return [(None, None)] * ndim
  lengths = _static_ints("pad", "stat_length", stat_length)
  if np.any(lengths < 0):
    raise ValueError(f"jnp.pad: stat_length can't contain negative values, got "
                     f"{stat_length!r}.")
  return _pairs(lengths, ndim, "stat_length", stat_length)


def _stats(x: Any, axis: int, lengths: tuple[int | None, int | None], mode: str
           ) -> tuple[Any, Any]:
  """The statistic of the first and of the last `lengths` elements along `axis` (all of
  them for None), size 1 along `axis`, in x's dtype (rounded to even for integers)."""
  from jaxon._src.numpy import reductions  # reductions builds on this module
  reduce = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
            "median": reductions.median}[mode]
  n = x.shape[axis]
  lengths = tuple(n if length is None else min(length, n) for length in lengths)
  if 0 in lengths and mode in ("maximum", "minimum"):
    raise ValueError(f"jnp.pad: stat_length of 0 yields no value for padding mode {mode!r} "
                     f"(axis {axis}).")

  def stat(lo: int, hi: int) -> Any:
    value = reduce(slicing.slice_in_dim(x, lo, hi, axis=axis), axis=axis, keepdims=True)
    if not dtypes.is_inexact(x.dtype) and dtypes.is_inexact(value.dtype):
      value = lax.round(value, lax.RoundingMethod.TO_NEAREST_EVEN)
    return lax._convert_element_type(value, x.dtype, x.weak_type)
  before = stat(0, lengths[0])
  return before, (before if lengths == (n, n) else stat(n - lengths[1], n))


# ----------------------------------------------------------------------------- dtype conversion

def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
  """`x` converted to `dtype` (strongly typed). Complex to real keeps the real part; float
  to int rounds towards zero."""
  x = _ensure_array("astype", x)
  if device is not None:
    raise NotImplementedError("jnp.astype(device=...) is not supported yet.")
  return lax._convert_element_type(x, dtypes.canonicalize_dtype(dtype), weak_type=False)


# ----------------------------------------------------------------------------- Array methods
# NumPy's methods also take shapes and axes as separate arguments: `x.reshape(2, 3)`,
# `x.transpose(1, 0)`.

def _varargs(args: tuple[Any, ...]) -> Any:
  return args[0] if len(args) == 1 else args


def method_reshape(self: Any, *shape: Any, order: str = "C") -> Any:
  """`x.reshape(2, 3)` or `x.reshape((2, 3))`."""
  if not shape:
    raise TypeError("reshape() requires a shape argument, e.g. x.reshape(2, 3).")
  return reshape(self, _varargs(shape), order)


def method_transpose(self: Any, *axes: Any) -> Any:
  """`x.transpose()`, `x.transpose(1, 0)` or `x.transpose((1, 0))`."""
  return transpose(self, _varargs(axes) if axes else None)
