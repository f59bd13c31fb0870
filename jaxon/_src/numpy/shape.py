"""Shape manipulation in jaxon.numpy: NumPy's functions that reshape, reorder, join, split
and repeat arrays, written with the lax shape primitives (`pad` is in padding.py).

Shapes, axes, counts and shifts decide the shapes of the results, so they must be
static: Python values or concrete arrays (a traced one raises ConcretizationTypeError). Array
arguments may be jaxon arrays, tracers, NumPy values or Python scalars (which stay weakly
typed, as in JAX).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import gather_scatter, lax, shape_ops, slicing, structural
from jaxon._src.lax import reductions as lax_reductions
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
            copy: bool | None = None, out_sharding: Any = None) -> Any:
  """Gives `a` a new shape with the same number of elements; one entry of `shape` may be -1
  (inferred). `order='C'` reads elements row-major, `'F'` column-major.

  Example: `jnp.reshape(jnp.arange(6), (2, -1))` has shape (2, 3).
  """
  a = _ensure_array("reshape", a)
  if shape is None:
    raise TypeError("jnp.reshape() requires a shape argument.")
  out = _reshape_in_order(a, _infer_shape(a.shape, shape), order)
  return out if out_sharding is None else util.out_sharded(out, out_sharding, "reshape")


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
def ravel(a: Any, order: str = "C", *, out_sharding: Any = None) -> Any:
  """The elements of `a` as a 1-D array (row-major for `order='C'`)."""
  a = _ensure_array("ravel", a)
  if order == "K":
    raise NotImplementedError("jnp.ravel(order='K') is not supported: jaxon arrays have no "
                              "memory layout to follow; use 'C' or 'F'.")
  out = _reshape_in_order(a, (a.size,), order)
  return out if out_sharding is None else util.out_sharded(out, out_sharding, "ravel")


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
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
    out.append(non_one.pop() if non_one else 1)
  return tuple(out)


def broadcast_to(array: Any, shape: int | Sequence[int], *, out_sharding: Any = None) -> Any:
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
  out = array if array.shape == shape else lax.broadcast_in_dim(array, shape,
                                                                 range(lead, len(shape)))
  return out if out_sharding is None else util.out_sharded(out, out_sharding, "broadcast_to")


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
def roll(a: Any, shift: int | Sequence[int] | Any, axis: Axis = None) -> Any:
  """Shifts elements along `axis` by `shift` positions, wrapping around (over the
  flattened array when `axis` is None). A traced `shift` (under `jit`) rolls by a dynamic
  slice of the axis laid twice end to end, as JAX does.

  Example: `jnp.roll(jnp.arange(5), 2)` is `[3, 4, 0, 1, 2]`.
  """
  a = _ensure_array("roll", a)
  if axis is None:
    return reshape(roll(ravel(a), shift if isinstance(shift, core.Tracer) else
                        int(_static_ints("roll", "shift", shift).sum()), 0), a.shape)
  axes = _static_ints("roll", "axis", axis)
  shifts = shift if isinstance(shift, core.Tracer) else _static_ints("roll", "shift", shift)
  if np.ndim(shifts) > 1 or axes.ndim > 1:
    raise ValueError(f"jnp.roll: shift and axis must be ints or 1-D sequences, got shapes "
                     f"{np.shape(shifts)} and {axes.shape}.")
  axes = [lax_utils.canonicalize_axis(int(ax), a.ndim) for ax in np.ravel(axes)]
  if isinstance(shifts, core.Tracer):
    return _roll_traced(a, shifts, axes)
  total = [0] * a.ndim
  for s, ax in zip(*(b.ravel() for b in np.broadcast_arrays(shifts, axes))):
    total[ax] += int(s)
  for ax, s in enumerate(total):
    a = _roll_axis(a, s, ax)
  return a


def _roll_traced(a: Any, shifts: Any, axes: Sequence[int]) -> Any:
  """Each axis (in turn, as often as it is named) rolled by its traced shift."""
  count = max(np.size(shifts), len(axes))
  if np.size(shifts) not in (1, count) or len(axes) not in (1, count):
    raise ValueError(f"jnp.roll: shift of shape {np.shape(shifts)} and axis {tuple(axes)} "
                     "do not broadcast together.")
  shifts = lax.convert_element_type(shape_ops.reshape(shifts, (np.size(shifts),)), np.int32)
  for j in range(count):
    ax = axes[j % len(axes)]
    n = a.shape[ax]
    if n == 0:
      continue
    s = slicing.index_in_dim(shifts, j % np.size(shifts), keepdims=False)
    s = lax.rem(lax.add(lax.rem(s, np.int32(n)), np.int32(n)), np.int32(n))  # floor modulo
    twice = shape_ops.concatenate([a, a], ax)
    a = slicing.dynamic_slice_in_dim(twice, lax.sub(np.int32(n), s), n, axis=ax)
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
           total_repeat_length: int | None = None, out_sharding: Any = None) -> Any:
  """Repeats each element of `a` along `axis` (of the flattened array when None): all
  `repeats` times (an int), or element i `repeats[i]` times. `total_repeat_length`, when
  given, fixes the length of the result (cut short, or its last element repeated to reach
  it), and `repeats` may then be traced (under `jit`); without it, `repeats` must be static.

  Example: `jnp.repeat(jnp.array([1, 2]), [1, 3])` is `[1, 2, 2, 2]`.
  """
  if out_sharding is not None:
    return util.out_sharded(repeat(a, repeats, axis, total_repeat_length=total_repeat_length),
                            out_sharding, "repeat")
  a = _ensure_array("repeat", a)
  if axis is None:
    a, axis = ravel(a), 0
  axis = lax_utils.canonicalize_axis(axis, a.ndim)
  n = a.shape[axis]
  if total_repeat_length is None:
    if isinstance(repeats, core.Tracer):
      core.concrete_or_error(None, repeats, "The repeats of jnp.repeat decide the length of "
                             "its result: pass them static, or pass a static "
                             "total_repeat_length.")
    counts = _static_ints("repeat", "repeats", repeats)
    total = None
  else:
    counts = repeats if isinstance(repeats, core.Tracer) else _static_ints(
        "repeat", "repeats", repeats)
    total = int(core.concrete_or_error(int, total_repeat_length,
                                       "total_repeat_length of jnp.repeat must be static."))
    if total < 0:
      raise ValueError(f"jnp.repeat: total_repeat_length must be non-negative, got {total}.")
  if np.ndim(counts) > 1 or (np.ndim(counts) == 1 and np.size(counts) not in (1, n)):
    raise ValueError(f"jnp.repeat: repeats must be an int or a 1-D sequence of length 1 or "
                     f"{n} (the size of axis {axis} of shape {a.shape}), got shape "
                     f"{np.shape(counts)}.")
  if isinstance(counts, np.ndarray) and np.any(counts < 0):
    raise ValueError(f"jnp.repeat: repeats may not contain negative values, got {repeats!r}.")
  if total is None:
    if counts.size == 1:
      return _repeat_uniform(a, int(counts.ravel()[0]), axis)
    total = int(counts.sum())
  if total and not n:
    raise ValueError("jnp.repeat: cannot reach total_repeat_length from an empty axis.")
  return _repeat_by_index(a, counts, total, axis)


def _repeat_by_index(a: Any, counts: Any, total: int, axis: int) -> Any:
  """`total` elements along `axis`, element i taken `counts[i]` times (cut short, or the
  last one repeated, to reach `total`), as JAX builds them: each output element takes the
  index of the last block that began at or before it, a running sum of the marks made
  where the blocks begin. The marks are made on the host for static counts (a constant
  index for one gather: JAX's XLA folds its own program to that) and in the program for
  traced ones. The program does not grow with the number of elements (a slice per element
  made a concatenation of thousands)."""
  n = a.shape[axis]
  if not total:
    return slicing.slice_in_dim(a, 0, 0, axis=axis)
  if isinstance(counts, np.ndarray):
    begins = np.cumsum(np.concatenate([[0], np.broadcast_to(counts, (n,))[:-1]]))
    marks = np.bincount(begins[begins < total], minlength=total)
    index = (np.cumsum(marks) - 1).astype(np.int32)
  else:
    counts = lax.broadcast_in_dim(lax.convert_element_type(
        shape_ops.reshape(counts, (np.size(counts),)), np.int32), (n,), (0,))
    zero = lax.full((1,), 0, np.int32)
    begins = lax_reductions.cumsum(
        shape_ops.concatenate([zero, slicing.slice_in_dim(counts, 0, n - 1)], 0))
    marks = gather_scatter.scatter_add(
        lax.full((total,), 0, np.int32), shape_ops.expand_dims(begins, (1,)),
        lax.full((n,), 1, np.int32),
        gather_scatter.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                               scatter_dims_to_operand_dims=(0,)),
        mode=gather_scatter.GatherScatterMode.FILL_OR_DROP)  # blocks past `total` are cut
    index = lax.sub(lax_reductions.cumsum(marks), np.int32(1))
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=tuple(d for d in range(a.ndim) if d != axis), collapsed_slice_dims=(axis,),
      start_index_map=(axis,))
  slice_sizes = tuple(1 if d == axis else size for d, size in enumerate(a.shape))
  return gather_scatter.gather(a, shape_ops.expand_dims(index, (1,)), dnums, slice_sizes,
                               mode=gather_scatter.GatherScatterMode.PROMISE_IN_BOUNDS)


def _repeat_uniform(a: Any, count: int, axis: int) -> Any:
  """Every element `count` times: broadcast a new axis after `axis`, merge the two."""
  shape = a.shape[:axis + 1] + (count,) + a.shape[axis + 1:]
  dims = [i for i in range(a.ndim + 1) if i != axis + 1]
  return shape_ops.collapse(lax.broadcast_in_dim(a, shape, dims), axis, axis + 2)


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


def method_reshape(self: Any, *shape: Any, order: str = "C", out_sharding: Any = None
                   ) -> Any:
  """`x.reshape(2, 3)` or `x.reshape((2, 3))`."""
  if not shape:
    raise TypeError("reshape() requires a shape argument, e.g. x.reshape(2, 3).")
  return reshape(self, _varargs(shape), order, out_sharding=out_sharding)


def method_transpose(self: Any, *axes: Any) -> Any:
  """`x.transpose()`, `x.transpose(1, 0)` or `x.transpose((1, 0))`."""
  return transpose(self, _varargs(axes) if axes else None)
