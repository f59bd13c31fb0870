"""Searching and selection in jaxon.numpy: `searchsorted`, `nonzero`, `take`,
`take_along_axis`, `compress`, `insert`, `delete`, … (`unique` and the set operations are in
setops.py, on the helpers here).

Data-dependent shapes. `nonzero`, `unique`, the set operations, `compress` and `extract`
return as many entries as the data says, which a traced input does not tell. These
functions take `size=`: the result then has exactly `size` entries, cut short or padded
with `fill_value`, and traces like any other. Without it, the function runs at the
largest possible size and the result is cut to the number of matches, which is read back
from the device: possible eagerly, not under `jit`, `vmap` or `grad` (an error then names
`size=`).

Compilation. As in JAX, the functions with many steps run as one compiled program (a
nested `jit`), so an eager call compiles once per input shape rather than once per
primitive, and under a transformation they appear as one `pjit` equation.

Order. Searching orders values as NumPy's sort does (see
`lax.sort`): NaNs after every number, complex numbers by real then imaginary part.
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import api, core, dtypes
from jaxon._src.lax import gather_scatter, lax, shape_ops, slicing
from jaxon._src.lax.control_flow import loops
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import indexing, lax_numpy, reductions, shape, sorting, ufuncs, util
from jaxon._src.xla.array import Array
from jaxon._src.xla.eager_plans import memoize_eager_operations


def _int_dtype() -> np.dtype:
  return dtypes.default_int_dtype()


def _iota(n: int) -> Any:
  return lax.iota(_int_dtype(), n)


# ----------------------------------------------------------------------------- sizes

def _checked_size(fun_name: str, size: Any) -> int:
  size = core.concrete_or_error(
      operator.index, size, f"The size argument of jnp.{fun_name} must be a static integer.")
  if size < 0:
    raise ValueError(f"jnp.{fun_name}: size must be non-negative, got size={size}.")
  return size


def _run_sized(fun_name: str, sized: Callable[..., Any], *args: Any, size: Any,
               max_size: int, sized_axes: int | tuple[int | None, ...] = 0,
               **static: Any) -> Any:
  """`sized(*args, size=size, **static)`, a compiled function returning (result, number of
  matches) whose result has `size` entries along `sized_axes` (one axis for every output,
  or one per output; None for outputs of fixed shape).

  Without `size`, it runs at the largest possible size, `max_size` (so one compiled
  program serves every input of a shape), and the result is cut to the number of matches,
  which must be concrete: under a transformation this raises, naming `size=` as the fix.
  """
  if size is not None:
    return sized(*args, size=_checked_size(fun_name, size), **static)[0]
  result, count = sized(*args, size=max_size, **static)
  count = core.concrete_or_error(
      int, count,
      f"The size argument of jnp.{fun_name} must be statically specified to use "
      f"jnp.{fun_name} within JAX transformations: the length of its result depends on the "
      f"values of its input. Pass size=<int> (and optionally fill_value=) to get a result "
      f"of fixed length.")
  if not isinstance(result, tuple):
    return _cut(result, count, sized_axes)
  axes = sized_axes if isinstance(sized_axes, tuple) else (sized_axes,) * len(result)
  return tuple(_cut(x, count, axis) for x, axis in zip(result, axes))


def _cut(x: Any, count: int, axis: int | None) -> Any:
  if axis is None or x.shape[axis] == count:
    return x
  return slicing.slice_in_dim(x, 0, count, axis=axis)


def _count_true(mask: Any) -> Any:
  return reductions.sum(mask, dtype=_int_dtype())


def _first_true(mask: Any, size: int) -> tuple[Any, Any, Any]:
  """The positions of the first `size` True entries of the 1-D `mask`, in order; which of
  them are real (the rest, past the number of True entries, hold 0); and that number.

  In linear time, as JAX finds them (a stable sort by `not mask` took 5 times JAX's time
  for 4096 entries): `seen[i]`, the number of True entries up to i, is j for every i
  between the jth True entry and the next; counting the entries of each `seen` value and
  summing the counts up gives, for each j, the position of the (j + 1)th True entry.
  """
  count = _count_true(mask)
  if mask.shape[0] == 0 or size == 0:
    return lax.full((size,), 0, _int_dtype()), lax.full((size,), False, np.bool_), count
  seen = reductions.cumsum(mask, dtype=_int_dtype())
  per_value = lax.full((size,), 0, _int_dtype()).at[seen].add(1, mode="drop")
  order = reductions.cumsum(per_value, dtype=_int_dtype())
  valid = lax.lt(_iota(size), count)
  return lax.select(valid, order, lax.full_like(order, 0)), valid, count


def _fill(x: Any, valid: Any, fill_value: Any) -> Any:
  """`x` with its entries past the valid ones (along axis 0) set to `fill_value`."""
  valid = lax.broadcast_in_dim(valid, np.shape(x), (0,))
  return lax.select(valid, x, _full(np.shape(x), fill_value, x.dtype))


def _full(shape_: tuple[int, ...], fill_value: Any, dtype: Any) -> Any:
  """`lax.full` for a fill value that may be traced."""
  fill = lax._convert_element_type(lax_numpy.asarray(fill_value), dtype)
  return shape.broadcast_to(fill, shape_)


def _as_array(fun_name: str, x: Any) -> Any:
  return shape._ensure_array(fun_name, x)


# ----------------------------------------------------------------------------- nonzero

def nonzero(a: Any, *, size: int | None = None,
            fill_value: Any | Sequence[Any] | None = None) -> tuple[Any, ...]:
  """The indices of the nonzero entries of `a`, one integer array per dimension.

  Args:
    a: an array of rank at least 1.
    size: the static length of each result (required under jit); extra matches are
      dropped, missing ones padded.
    fill_value: the padding, one value or one per dimension (default 0).

  Example: `nonzero(jnp.array([0, 3, 0, 5]))` is `(Array([1, 3]),)`;
  with `size=3, fill_value=-1` it is `(Array([1, 3, -1]),)`.
  """
  return _nonzero("nonzero", a, size, fill_value)


def _nonzero(fun_name: str, a: Any, size: Any, fill_value: Any) -> tuple[Any, ...]:
  """`nonzero`, with errors naming the function the user called."""
  a = _as_array(fun_name, a)
  if a.ndim == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                     "jnp.atleast_1d(scalar).nonzero() instead.")
  fills = _per_dimension(fun_name, fill_value, a.ndim)
  return _run_sized(fun_name, _nonzero_sized, a, fills, size=size, max_size=a.size)


@functools.partial(api.jit, static_argnames="size")
def _nonzero_sized(a: Any, fills: tuple[Any, ...], *, size: int) -> tuple[Any, Any]:
  positions, valid, count = _first_true(ufuncs._to_bool(shape.ravel(a)), size)
  coords = _unravel(positions, a.shape)
  return tuple(_fill(c, valid, f) for c, f in zip(coords, fills)), count


def _per_dimension(fun_name: str, fill_value: Any, ndim: int) -> tuple[Any, ...]:
  if fill_value is None:
    return (0,) * ndim
  if isinstance(fill_value, (tuple, list)):
    if len(fill_value) != ndim:
      raise ValueError(f"jnp.{fun_name}: fill_value must be a scalar or a tuple of length "
                       f"{ndim} (one per dimension), got {fill_value!r}.")
    return tuple(fill_value)
  if np.ndim(fill_value) != 0:
    raise ValueError(f"jnp.{fun_name}: fill_value must be a scalar or a tuple, got shape "
                     f"{np.shape(fill_value)}.")
  return (fill_value,) * ndim


def _unravel(flat: Any, shape_: tuple[int, ...]) -> list[Any]:
  """The coordinates in an array of `shape_` of each C-order flat position in `flat`."""
  coords = []
  for size in reversed(shape_):
    coords.append(lax.rem(flat, np.array(size, flat.dtype)))
    flat = lax.div(flat, np.array(size, flat.dtype))
  return coords[::-1]


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
  """The indices of the nonzero entries of the flattened `a` (`size=` as in `nonzero`)."""
  return _nonzero("flatnonzero", shape.ravel(_as_array("flatnonzero", a)), size, fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
  """The indices of the nonzero entries of `a` as the rows of an (N, a.ndim) array.

  Example: `argwhere(jnp.array([[0, 1], [2, 0]]))` is `[[0, 1], [1, 0]]`.
  """
  a = _as_array("argwhere", a)
  coords = _nonzero("argwhere", shape.atleast_1d(a), size, fill_value)
  out = shape.stack(coords, axis=1)
  return out[:, :0] if a.ndim == 0 else out


# ----------------------------------------------------------------------------- searchsorted

def _isnan(x: Any) -> Any:
  return lax.ne(x, x)


def _less(x: Any, y: Any) -> Any:
  """`x < y` in the order of NumPy's sort: NaNs after every number, complex numbers by
  real part, then imaginary part. `x` and `y` have one dtype and broadcastable shapes."""
  x, y = shape.broadcast_arrays(x, y)
  dt = np.dtype(x.dtype)
  if dtypes.is_complex(dt):
    xr, yr, xi, yi = lax.real(x), lax.real(y), lax.imag(x), lax.imag(y)
    same_real = lax.bitwise_or(lax.eq(xr, yr), lax.bitwise_and(_isnan(xr), _isnan(yr)))
    return lax.bitwise_or(_less(xr, yr), lax.bitwise_and(same_real, _less(xi, yi)))
  if dtypes.is_inexact(dt):
    nan_after = lax.bitwise_and(_isnan(y), lax.bitwise_not(_isnan(x)))
    return lax.bitwise_or(lax.lt(x, y), nan_after)
  if dt == np.bool_:
    return lax.bitwise_and(lax.bitwise_not(x), y)
  return lax.lt(x, y)


def _goes_after(element: Any, query: Any, right: bool) -> Any:
  """Whether `query`'s insertion point lies after `element`: `element < query` for
  side='left', `element <= query` for side='right'."""
  if right:
    return lax.bitwise_not(_less(query, element))
  return _less(element, query)


def _search_scan(a: Any, v: Any, right: bool, unrolled: bool = False) -> Any:
  """Binary search: each step halves every query's interval [lo, hi] holding its insertion
  point, so ceil(log2(n + 1)) steps reach it. A loop, as JAX's 'scan' is (`unrolled`:
  'scan_unrolled', each step written out): unrolled steps let XLA fuse each gather with
  whatever computed `a`, which is then computed again for every query at every step."""
  n = a.shape[0]

  def step(_: Any, bounds: tuple[Any, Any]) -> tuple[Any, Any]:
    lo, hi = bounds
    mid = lax.div(lax.add(lo, hi), np.array(2, np.int32))
    after = _goes_after(take(a, mid, mode="clip"), v, right)
    # When lo == hi the search is over: mid == hi, so neither bound moves.
    lo = lax.select(lax.bitwise_and(after, lax.lt(mid, hi)),
                    lax.add(mid, np.array(1, np.int32)), lo)
    return lo, lax.select(after, hi, mid)
  bounds = (lax.full(v.shape, 0, np.int32), lax.full(v.shape, n, np.int32))
  if not unrolled:
    return loops.fori_loop(0, n.bit_length(), step, bounds)[0]
  for i in range(n.bit_length()):
    bounds = step(i, bounds)
  return bounds[0]


def _search_compare_all(a: Any, v: Any, right: bool) -> Any:
  """Counts, for each query, the elements it goes after: O(len(a)) work per query, but a
  single fused comparison (fast for short `a`)."""
  after = _goes_after(lax.broadcast_in_dim(a, (1,) * v.ndim + a.shape, (v.ndim,)),
                      shape.expand_dims(v, -1), right)
  return reductions.sum(after, axis=-1, dtype=np.int32)


def _search_sort(a: Any, v: Any, right: bool) -> Any:
  """A query's position in a stable sort of `a` and the queries together, less the number
  of queries before it. Queries go first for side='left' (before equal elements of `a`),
  last for side='right'."""
  queries = shape.ravel(v)
  k, n = queries.shape[0], a.shape[0]
  def rank(x: Any) -> Any:  # each entry's position in the stable sort of x
    order = sorting.argsort(x)  # the inverse permutation of `order`, by a scatter, not a sort
    return lax.full(order.shape, 0, order.dtype).at[order].set(_iota(order.shape[0]))
  if right:
    in_both = slicing.slice_in_dim(rank(shape_ops.concatenate([a, queries], 0)), n, n + k)
  else:
    in_both = slicing.slice_in_dim(rank(shape_ops.concatenate([queries, a], 0)), 0, k)
  out = lax.sub(in_both, rank(queries))
  return shape.reshape(lax.convert_element_type(out, np.int32), v.shape)


_SEARCH_METHODS = {"scan": _search_scan,
                   "scan_unrolled": functools.partial(_search_scan, unrolled=True),
                   "compare_all": _search_compare_all, "sort": _search_sort}


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
  """Where to insert each value of `v` into the sorted 1-D `a` to keep it sorted.

  Args:
    a: a one-dimensional array sorted ascending (in NumPy's order: NaNs last), or any 1-D
      array when `sorter` is given.
    v: the values to place; the result has its shape.
    side: 'left' gives the first valid position (before equal elements), 'right' the last.
    sorter: optional indices that sort `a` (as from `argsort`).
    method: 'scan' (the default, a loop) or 'scan_unrolled' (its steps written out) search
      by bisection in ceil(log2(len(a) + 1)) steps; 'compare_all' compares each value with every
      element (fast for short `a`); 'sort' sorts `a` and `v` together (fast for many
      values).

  Returns:
    int32 indices of `v`'s shape.

  Example: `searchsorted(jnp.array([1, 2, 2, 3]), 2)` is 1; with `side='right'` it is 3.
  """
  util.check_arraylike("searchsorted", a, v)
  if np.ndim(a) != 1:
    raise ValueError(f"jnp.searchsorted: a must be one-dimensional, got shape {np.shape(a)}.")
  if side not in ("left", "right"):
    raise ValueError(f"jnp.searchsorted: side must be 'left' or 'right', got {side!r}.")
  if method not in _SEARCH_METHODS:
    raise ValueError(f"jnp.searchsorted: method must be one of {sorted(_SEARCH_METHODS)}, "
                     f"got {method!r}.")
  a, v = util.promote_dtypes(_as_array("searchsorted", a), _as_array("searchsorted", v))
  return _searchsorted(a, v, sorter, right=side == "right", method=method)


@functools.partial(api.jit, static_argnames=("right", "method"))
def _searchsorted(a: Any, v: Any, sorter: Any, *, right: bool, method: str) -> Any:
  if sorter is not None:
    a = take(a, sorter)
  if a.shape[0] == 0:
    return lax.full(v.shape, 0, np.int32)
  return _SEARCH_METHODS[method](a, v, right)

# ----------------------------------------------------------------------------- take and friends

def _check_integer_indices(fun_name: str, indices: Any) -> None:
  if not dtypes.is_integer(indices.dtype):
    raise TypeError(f"jnp.{fun_name}: indices must be integers, got {indices.dtype.name}.")


def _index_mode(fun_name: str, indices: Any, n: int, mode: str | None) -> tuple[Any, str]:
  """Indices and gather mode for NumPy's take modes: 'fill' (JAX's default: out-of-bounds
  reads give `fill_value`), 'clip' (clamped to [0, n-1], so -1 reads entry 0, as in
  NumPy) and 'wrap' (taken modulo n)."""
  _check_integer_indices(fun_name, indices)
  if mode is None or mode == "fill":
    return indices, "fill"
  if mode == "clip":
    return ufuncs.clip(indices, 0, max(n - 1, 0)), "promise_in_bounds"
  if mode == "wrap":
    return ufuncs.remainder(indices, max(n, 1)), "promise_in_bounds"
  if mode == "raise":
    raise NotImplementedError(f"The 'raise' mode of jnp.{fun_name} is not supported: "
                              "checking indices would need their values. Use 'fill', "
                              "'clip' or 'wrap'.")
  raise ValueError(f"jnp.{fun_name}: invalid mode {mode!r}; expected 'fill', 'clip' or "
                   "'wrap'.")


@memoize_eager_operations
def take(a: Any, indices: Any, axis: int | None = None, out: None = None,
         mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value: Any = None) -> Any:
  """The entries of `a` at `indices` along `axis` (of the flattened `a` if None).

  The result's shape is `a.shape[:axis] + indices.shape + a.shape[axis + 1:]`. Negative
  indices count from the end. Out of bounds, `mode` decides: 'fill' (the default) gives
  `fill_value` (NaN for inexact types, the most negative signed integer, the largest
  unsigned one, True); 'clip' clamps; 'wrap' wraps around.

  Example: `take(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]), axis=1)` is
  `[[2, 2], [4, 4]]`.
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
  a = _as_array("take", a)
  indices = _as_array("take", indices)
  if axis is None:
    a, axis = shape.ravel(a), 0
  axis = lax_utils.canonicalize_axis(axis, a.ndim)
  indices, gather_mode = _index_mode("take", indices, a.shape[axis], mode)
  return indexing.rewriting_take(a, (slice(None),) * axis + (indices,),
                                 unique_indices=unique_indices,
                                 indices_are_sorted=indices_are_sorted, mode=gather_mode,
                                 fill_value=fill_value)


def _along_axis(fun_name: str, arr: Any, indices: Any, axis: int | None
                ) -> tuple[Any, Any, int]:
  """`arr`, `indices` and the axis for take/put_along_axis: flattened when `axis` is None,
  same rank, canonical axis."""
  arr, indices = _as_array(fun_name, arr), _as_array(fun_name, indices)
  if axis is None:
    if indices.ndim != 1:
      raise ValueError(f"jnp.{fun_name}: when axis=None, indices must be one-dimensional, "
                       f"got shape {indices.shape}.")
    arr, axis = shape.ravel(arr), 0
  if arr.ndim != indices.ndim:
    raise ValueError(f"jnp.{fun_name}: indices and arr must have the same number of "
                     f"dimensions, got shapes {indices.shape} and {arr.shape}.")
  return arr, indices, lax_utils.canonicalize_axis(axis, arr.ndim)


def _replace(shape_: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
  return (*shape_[:axis], size, *shape_[axis + 1:])


def _normalized(indices: Any, n: int) -> Any:
  """Negative indices counted from the end (the gather and scatter take them as given)."""
  return ufuncs.where(lax.lt(indices, lax.full_like(indices, 0)),
                      lax.add(indices, lax.full_like(indices, n)), indices)


def _batched_dnums(ndim: int, axis: int) -> tuple[int, ...]:
  return tuple(d for d in range(ndim) if d != axis)


@memoize_eager_operations
def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: str | None = None,
                    fill_value: Any = None, *, wrap_negative_indices: bool | None = None
                    ) -> Any:
  """`arr` read at `indices` along `axis`, pairing every other dimension of the two (which
  broadcast against each other): `out[i, j] = arr[i, indices[i, j]]` for axis=1.

  Example: `take_along_axis(x, argsort(x, axis=1), axis=1)` is `sort(x, axis=1)`.
  Negative indices count from the end unless `wrap_negative_indices` is False (None
  means True); then, and for indices still out of bounds, `mode` applies as in `take`
  (so, as in JAX, -1 reads the last entry with mode='clip' unless wrapping is off).
  """
  arr, indices, axis = _along_axis("take_along_axis", arr, indices, axis)
  n = arr.shape[axis]
  batch = lax.broadcast_shapes(_replace(arr.shape, axis, 1), _replace(indices.shape, axis, 1))
  arr = shape.broadcast_to(arr, _replace(batch, axis, n))
  indices = shape.broadcast_to(indices, _replace(batch, axis, indices.shape[axis]))
  _check_integer_indices("take_along_axis", indices)
  if wrap_negative_indices is None or wrap_negative_indices:
    indices = _normalized(indices, n)
  indices, gather_mode = _index_mode("take_along_axis", indices, n, mode)
  if math.prod(indices.shape) == 0 or n == 0:
    if math.prod(indices.shape) and gather_mode != "fill":
      raise IndexError(f"jnp.take_along_axis: cannot take from an empty axis {axis}.")
    fill = gather_scatter._gather_fill_value(arr.dtype) if fill_value is None else fill_value
    return lax.full(indices.shape, fill, arr.dtype)
  others = _batched_dnums(arr.ndim, axis)
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
      operand_batching_dims=others, start_indices_batching_dims=others)
  return gather_scatter.gather(arr, shape.expand_dims(indices, -1), dnums,
                               slice_sizes=(1,) * arr.ndim, mode=gather_mode, fill_value=fill_value)


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None,
                   inplace: bool = True, *, mode: str | None = None) -> Any:
  """A copy of `arr` with `values` written at `indices` along `axis` (the inverse of
  `take_along_axis`). JAX arrays are immutable, so `inplace=False` must be passed.
  Out-of-bounds indices are dropped ('fill', the default), clamped or wrapped (`mode`)."""
  if inplace:
    raise ValueError("jnp.put_along_axis cannot update an array in place (jaxon arrays are "
                     "immutable): pass inplace=False and use the returned array.")
  arr, indices, axis = _along_axis("put_along_axis", arr, indices, axis)
  n = arr.shape[axis]
  try:
    indices = shape.broadcast_to(indices, _replace(arr.shape, axis, indices.shape[axis]))
  except ValueError:
    raise ValueError(f"jnp.put_along_axis: indices of shape {indices.shape} do not broadcast "
                     f"against arr of shape {arr.shape} outside axis {axis}.") from None
  indices, scatter_mode = _index_mode("put_along_axis", indices, n, mode)
  values = shape.broadcast_to(lax._convert_element_type(_as_array("put_along_axis", values),
                                                        arr.dtype), indices.shape)
  if math.prod(indices.shape) == 0:
    return arr
  others = _batched_dnums(arr.ndim, axis)
  dnums = gather_scatter.ScatterDimensionNumbers(
      update_window_dims=(), inserted_window_dims=(axis,), scatter_dims_to_operand_dims=(axis,),
      operand_batching_dims=others, scatter_indices_batching_dims=others)
  return gather_scatter.scatter(arr, shape.expand_dims(_normalized(indices, n), -1), values, dnums,
                                mode=scatter_mode)


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:
  """The slices of `a` along `axis` (entries of the flattened `a` if None) where the 1-D
  `condition` is nonzero. A shorter `condition` counts as False past its end.

  `size=` fixes the number of slices (required under jit), padding with `fill_value`.

  Example: `compress(jnp.array([True, False, True]), jnp.array([1, 2, 3]))` is `[1, 3]`.
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  condition, a = _as_array("compress", condition), _as_array("compress", a)
  if condition.ndim != 1:
    raise ValueError(f"jnp.compress: condition must be one-dimensional, got shape "
                     f"{condition.shape}.")
  if axis is None:
    a, axis = shape.ravel(a), 0
  axis = lax_utils.canonicalize_axis(axis, a.ndim)
  n = a.shape[axis]
  if size is None and not isinstance(condition, core.Tracer):  # a constant mask: count now,
    size = int(np.count_nonzero(np.asarray(condition)[:n]))  # so jit needs no size=
  condition = ufuncs._to_bool(condition)
  if condition.shape[0] > n:
    extra = core.concrete_or_error(np.asarray, condition[n:],
                                   "jnp.compress: condition is longer than the axis.")
    if extra.any():
      raise ValueError(f"jnp.compress: condition has True entries past the end of axis "
                       f"{axis} (of size {n}).")
    condition = condition[:n]
  return _run_sized("compress", _compress_sized, condition, a, fill_value, size=size,
                    max_size=condition.shape[0], sized_axes=axis, axis=axis)


@functools.partial(api.jit, static_argnames=("size", "axis"))
def _compress_sized(condition: Any, a: Any, fill_value: Any, *, size: int, axis: int
                    ) -> tuple[Any, Any]:
  positions, valid, count = _first_true(condition, size)
  if a.shape[axis] == 0:
    return _full(_replace(a.shape, axis, size), fill_value, a.dtype), count
  taken = shape.moveaxis(take(a, positions, axis=axis, mode="clip"), axis, 0)
  return shape.moveaxis(_fill(taken, valid, fill_value), 0, axis), count


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
  """The entries of `arr` where `condition` is nonzero, both flattened (`size=` as in
  `compress`)."""
  condition, arr = _as_array("extract", condition), _as_array("extract", arr)
  return compress(shape.ravel(condition), shape.ravel(arr), size=size, fill_value=fill_value)


def choose(a: Any, choices: Sequence[Any], out: None = None, mode: str = "raise") -> Any:
  """Elementwise `choices[a]`: `a` and the choices broadcast together.

  `mode` handles indices outside [0, len(choices)): 'raise' (needs a concrete `a`),
  'wrap' (modulo) or 'clip' (clamped).

  Example: `choose(jnp.array([0, 1, 0]), [jnp.zeros(3), jnp.ones(3)])` is `[0., 1., 0.]`.
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  a = _as_array("choose", a)
  if not dtypes.is_integer(a.dtype):
    raise TypeError(f"jnp.choose: a must be integers, got {a.dtype.name}.")
  choices = [_as_array("choose", c) for c in choices]
  n = len(choices)
  if n == 0:
    raise ValueError("jnp.choose: choices must not be empty.")
  if mode == "raise":
    host = core.concrete_or_error(
        np.asarray, a, "jnp.choose with mode='raise' needs a concrete a, to check it; under "
        "jit use mode='wrap' or mode='clip'.")
    if np.any((host < 0) | (host >= n)):
      raise ValueError(f"jnp.choose: invalid entry in choice array (choices has {n} arrays).")
  elif mode == "wrap":
    a = ufuncs.remainder(a, n)
  elif mode == "clip":
    a = ufuncs.clip(a, 0, n - 1)
  else:
    raise ValueError(f"jnp.choose: invalid mode {mode!r}; expected 'raise', 'wrap' or 'clip'.")
  a, *choices = shape.broadcast_arrays(a, *util.promote_dtypes(*choices))
  return lax.select_n(lax.convert_element_type(a, np.int32), *choices)


# ----------------------------------------------------------------------------- append, insert, …

def append(arr: Any, values: Any, axis: int | None = None) -> Any:
  """`values` appended to `arr` along `axis` (both flattened when `axis` is None)."""
  arr, values = _as_array("append", arr), _as_array("append", values)
  if axis is None:
    return shape.concatenate([shape.ravel(arr), shape.ravel(values)], 0)
  return shape.concatenate([arr, values], axis)


def _insertion_indices(obj: Any, n: int) -> Any:
  """`insert`'s `obj` as an integer array of rank 0 or 1."""
  if isinstance(obj, slice):
    return np.arange(*obj.indices(n))
  indices = obj if isinstance(obj, (core.Tracer, Array)) else np.asarray(obj)
  if np.ndim(indices) > 1:
    raise ValueError("jnp.insert: obj must be a slice, a one-dimensional array or a scalar.")
  if not dtypes.is_integer(indices.dtype):
    if np.size(indices) == 0 and isinstance(indices, np.ndarray):
      return indices.astype(np.int64)
    raise ValueError(f"jnp.insert: index array must be integer typed, got "
                     f"{indices.dtype.name}.")
  return indices


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
  """`values` inserted into `arr` before the indices `obj` along `axis` (of the flattened
  `arr` if None). Indices may be traced; they are clipped to [-n, n].

  Example: `insert(jnp.array([1, 2, 3]), 1, 9)` is `[1, 9, 2, 3]`.
  """
  a = _as_array("insert", arr)
  if axis is None:
    a, axis = shape.ravel(a), 0
  axis = lax_utils.canonicalize_axis(axis, a.ndim)
  indices = _insertion_indices(obj, a.shape[axis])
  return _insert(a, indices, _as_array("insert", values), axis=axis)


@functools.partial(api.jit, static_argnames="axis")
def _insert(a: Any, indices: Any, values: Any, *, axis: int) -> Any:
  n = a.shape[axis]
  values = lax_numpy.array(values, dtype=a.dtype, ndmin=a.ndim)
  if np.ndim(indices) == 0:
    values = shape.moveaxis(values, 0, axis)
    indices = shape.broadcast_to(indices, (values.shape[axis],))
  k = lax.broadcast_shapes(np.shape(indices), (values.shape[axis],))[0]
  values = shape.broadcast_to(values, _replace(a.shape, axis, k))
  indices = ufuncs.clip(_normalized(lax_numpy.asarray(indices, _int_dtype()), n), 0, n)
  indices = shape.broadcast_to(indices, (k,))
  # Value t lands at its index plus the number of values placed before it (a stable sort
  # of the indices orders them); element j moves right by the number of indices <= j.
  order = sorting.argsort(indices)
  value_pos = lax.add(indices, sorting.argsort(order))
  moves = searchsorted(take(indices, order, mode="clip"), _iota(n), side="right")
  arr_pos = lax.add(_iota(n), lax.convert_element_type(moves, _int_dtype()))
  source = sorting.argsort(shape_ops.concatenate([arr_pos, value_pos], 0))
  return take(shape.concatenate([a, values], axis), source, axis=axis, mode="clip")


def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Any:
  """`arr` without the entries at `obj` (an index, a slice, indices or a boolean mask)
  along `axis` (of the flattened `arr` if None).

  `obj` must be concrete, since it sets the result's length, unless
  `assume_unique_indices=True` promises distinct in-bounds indices: then they may be
  traced.

  Example: `delete(jnp.array([1, 2, 3, 4]), [0, 2])` is `[2, 4]`.
  """
  a = _as_array("delete", arr)
  if axis is None:
    a, axis = shape.ravel(a), 0
  axis = lax_utils.canonicalize_axis(axis, a.ndim)
  n = a.shape[axis]
  if assume_unique_indices and not isinstance(obj, slice):
    obj = _as_array("delete", obj)
    if not dtypes.is_integer(obj.dtype):
      raise TypeError(f"jnp.delete: indices must be integers, got {obj.dtype.name}.")
    return _delete_unique(a, obj, axis=axis)
  if not isinstance(obj, slice):
    obj = core.concrete_or_error(
        np.asarray, obj, "jnp.delete: obj must be concrete (it decides the length of the "
        "result). For traced indices pass assume_unique_indices=True.")
    if obj.size == 0:  # an empty list is an empty float array to NumPy
      obj = obj.astype(np.int64)
  return take(a, np.delete(np.arange(n), obj), axis=axis, mode="clip")


@functools.partial(api.jit, static_argnames="axis")
def _delete_unique(a: Any, obj: Any, *, axis: int) -> Any:
  """Deletes the distinct indices `obj`: with the deleted ones sorted as s_0 < s_1 < …,
  kept entry j is j plus the number of k with s_k - k <= j."""
  n = a.shape[axis]
  deleted = sorting.sort(_normalized(lax.convert_element_type(shape.ravel(obj), _int_dtype()),
                                     n))
  shifted = lax.sub(deleted, _iota(deleted.shape[0]))
  kept = _iota(n - deleted.shape[0])
  passed = lax.ge(shape.expand_dims(kept, 0), shape.expand_dims(shifted, 1))
  kept = lax.add(kept, reductions.sum(passed, axis=0, dtype=_int_dtype()))
  return take(a, kept, axis=axis, mode="clip")


def resize(a: Any, new_shape: int | Sequence[int]) -> Any:
  """An array of `new_shape` filled with `a`'s entries repeated in order (zeros if `a` is
  empty)."""
  a = _as_array("resize", a)
  new_shape = tuple(int(d) for d in np.atleast_1d(shape._static_ints("resize", "new_shape",
                                                                     new_shape)))
  if any(d < 0 for d in new_shape):
    raise ValueError(f"jnp.resize: all elements of new_shape must be non-negative, got "
                     f"{new_shape}.")
  total = math.prod(new_shape)
  if a.size == 0 or total == 0:
    return lax.full(new_shape, 0, a.dtype)
  flat = shape.ravel(a)
  repeated = shape_ops.concatenate([flat] * -(-total // a.size), 0)
  return shape.reshape(slicing.slice_in_dim(repeated, 0, total), new_shape)


def trim_zeros(filt: Any, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Any:
  """`filt` cut along each axis of `axis` (all of them if None) to the smallest box that
  holds its nonzero entries, on the front ('f' in `trim`) and back ('b') sides; an
  all-zero `filt` becomes empty along those axes. The input must be concrete: the
  result's shape depends on its values."""
  filt = _as_array("trim_zeros", filt)
  axes = reductions._canonical_axes("trim_zeros", axis, filt.ndim)
  trim = trim.lower()
  if not axes or ("f" not in trim and "b" not in trim):
    return filt
  host = core.concrete_or_error(np.asarray, filt, "jnp.trim_zeros needs a concrete input: the "
                                "shape of its result depends on the values.")
  nonzero_at = np.nonzero(host)
  if nonzero_at[0].size == 0:
    return filt[tuple(slice(0, 0) if i in axes else slice(None) for i in range(filt.ndim))]
  def cut(i: int) -> slice:
    if i not in axes:
      return slice(None)
    return slice(int(nonzero_at[i].min()) if "f" in trim else None,
                 int(nonzero_at[i].max()) + 1 if "b" in trim else None)
  return filt[tuple(cut(i) for i in range(filt.ndim))]


# ----------------------------------------------------------------------------- flat indices

def _dims(fun_name: str, shape_: Any) -> tuple[int, ...]:
  return tuple(int(d) for d in np.atleast_1d(shape._static_ints(fun_name, "shape", shape_)))


def unravel_index(indices: Any, shape: int | Sequence[int]) -> tuple[Any, ...]:
  """The coordinates in an array of `shape` of C-order flat `indices`.

  Unlike NumPy, negative indices count from the end and out-of-bounds ones are clipped
  (JAX's behaviour: no error can be raised for traced values).

  Example: `unravel_index(5, (2, 3))` is `(1, 2)`.
  """
  indices = _as_array("unravel_index", indices)
  if not dtypes.is_integer(indices.dtype):
    raise TypeError(f"jnp.unravel_index: indices must be integers, got "
                    f"{indices.dtype.name}.")
  dims = _dims("unravel_index", shape)
  total = math.prod(dims)
  if total == 0:
    raise ValueError(f"jnp.unravel_index: cannot unravel into the empty shape {dims}.")
  clipped = ufuncs.clip(indices, -total, total - 1)
  flat = _normalized(clipped, total)
  return tuple(_unravel(flat, dims))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
  """The flat indices (C or Fortran order) of the coordinates `multi_index` in an array
  of shape `dims`.

  `mode` handles coordinates out of bounds: 'raise' (needs concrete coordinates), 'wrap'
  or 'clip'. `dtype` is the result's, an integer type that must hold every flat index
  (as in JAX, int8 coordinates into a 20x20 array raise rather than wrap around); by
  default the coordinates' promoted type.

  Example: `ravel_multi_index((jnp.array([1]), jnp.array([2])), (2, 3))` is `[5]`.
  """
  dims = _dims("ravel_multi_index", dims)
  if not dims:
    raise ValueError("jnp.ravel_multi_index: dims must have at least one dimension.")
  multi_index = [_as_array("ravel_multi_index", i) for i in multi_index]
  if len(multi_index) != len(dims):
    raise ValueError(f"jnp.ravel_multi_index: got {len(multi_index)} coordinate arrays for "
                     f"{len(dims)} dimensions.")
  if any(not dtypes.is_integer(i.dtype) for i in multi_index):
    raise TypeError("jnp.ravel_multi_index: only integer coordinate arrays are supported.")
  dtype = _flat_index_dtype(dtype, dims, multi_index)
  if mode == "raise":
    for i, d in zip(multi_index, dims):
      host = core.concrete_or_error(
          np.asarray, i, "jnp.ravel_multi_index with mode='raise' needs concrete "
          "coordinates, to check them; under jit use mode='wrap' or mode='clip'.")
      if np.any((host < 0) | (host >= d)):
        raise ValueError("jnp.ravel_multi_index: invalid entry in coordinates array.")
  elif mode == "wrap":
    multi_index = [ufuncs.remainder(i, d) for i, d in zip(multi_index, dims)]
  elif mode == "clip":
    multi_index = [ufuncs.clip(i, 0, d - 1) for i, d in zip(multi_index, dims)]
  else:
    raise ValueError(f"jnp.ravel_multi_index: invalid mode {mode!r}; expected 'raise', "
                     "'wrap' or 'clip'.")
  if order not in ("C", "F"):
    raise ValueError(f"jnp.ravel_multi_index: order must be 'C' or 'F', got {order!r}.")
  strides = _strides(dims if order == "C" else dims[::-1])
  strides = strides if order == "C" else strides[::-1]
  multi_index = [lax.convert_element_type(i, dtype) for i in multi_index]
  return sum((ufuncs.multiply(i, s) for i, s in zip(multi_index[1:], strides[1:])),
             start=ufuncs.multiply(multi_index[0], strides[0]))


def _flat_index_dtype(dtype: Any, dims: tuple[int, ...], multi_index: list[Any]) -> np.dtype:
  if dtype is None:
    dtype = dtypes.result_type(int, *multi_index)
  else:
    dtypes.check_user_dtype_supported(dtype, "ravel_multi_index")
    dtype = dtypes.canonicalize_dtype(dtype)
  if not dtypes.is_integer(dtype):
    raise ValueError(f"jnp.ravel_multi_index: dtype must be an integer type, got {dtype}.")
  if math.prod(dims) - 1 > np.iinfo(dtype).max:
    raise ValueError(f"jnp.ravel_multi_index: dtype {dtype} cannot hold the flat indices of "
                     f"an array of shape {dims}; pass a wider one as dtype= (e.g. "
                     f"np.min_scalar_type({math.prod(dims) - 1})).")
  return dtype


def _strides(dims: tuple[int, ...]) -> list[int]:
  """C-order strides (in elements) of `dims`."""
  return [math.prod(dims[i + 1:]) for i in range(len(dims))]
