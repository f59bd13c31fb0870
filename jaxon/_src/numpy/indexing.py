"""NumPy-style indexing of jaxon arrays: `x[idx]`, and the functional updates
`x.at[idx].set(y)`, `.add(y)`, … that stand in for NumPy's in-place `x[idx] = y`.

An index is parsed once into one entry per indexed dimension (`_parse_index`). Reads whose
index holds only integers, slices, `None` and `...` lower to the cheap primitives, as in JAX:
`slice`, `rev` for negative steps, `dynamic_slice` for traced integers, then `squeeze` and
`expand_dims`. An index with integer arrays or boolean masks becomes one `gather`, and every
update one `scatter`, both built from the same `_IndexPlan`.

Out-of-bounds indices follow JAX rather than NumPy: reads clamp to the nearest valid index
(a static Python int too, unless the `jax_check_static_indices` flag is on), updates out of
bounds are dropped; `.at[idx]`'s `mode=` argument chooses otherwise. Boolean masks must be
concrete: the number of elements they select decides the shape of the result.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import core, dtypes, tree_util
from jaxon._src.config import config
from jaxon._src.errors import JAXIndexError
from jaxon._src.lax import gather_scatter, lax, shape_ops, slicing
from jaxon._src.lax.gather_scatter import GatherScatterMode
from jaxon._src.numpy import lax_numpy, ufuncs, util
from jaxon._src.xla.array import Array

config.define("jax_check_static_indices", False,
              "Raise IndexError for out-of-bounds static integer indices instead of clamping.",
              trace_context=True)

_ARRAYS = (Array, core.Tracer)


class NonConcreteBooleanIndexError(JAXIndexError):
  """A boolean mask that is traced (its values unknown) was used as an index."""

  def __init__(self, tracer: core.Tracer):
    super().__init__(
        f"Array boolean indices must be concrete; got {tracer.aval.str_short()}.\n"
        "A boolean mask selects as many elements as it has True entries, so under jit, "
        "where the mask's values are unknown, the result would have no static shape. "
        "Keep the shape instead: `jnp.where(mask, x, 0)` in place of `x[mask]`, "
        "`jnp.where(mask, y, x)` in place of `x.at[mask].set(y)`; or get a static number "
        "of indices with `jnp.nonzero(mask, size=n, fill_value=...)`.")


# ----------------------------------------------------------------------------- parsing

class _Slice(NamedTuple):
  """A static slice, as `slice.indices` normalizes it for the dimension's size."""
  start: int
  stop: int
  step: int

  @property
  def size(self) -> int:
    if not core.is_constant_shape((self.start, self.stop)):  # symbolic: step > 0, in order
      return (self.stop - self.start + self.step - 1) // self.step
    return len(range(self.start, self.stop, self.step))


def _symbolic_slice_indices(start: int | None, stop: int | None, step: int | None,
                            size: Any) -> tuple[Any, Any, int]:
  """`slice.indices` for a symbolic dimension `size` (shape-polymorphic export): a bound
  whose clamping depends on the dimension's value is a `min`/`max` dimension, as JAX's
  (`x[:5]` has `min(b, 5)` rows)."""
  step = 1 if step is None else step
  if step <= 0:
    raise IndexError("slicing a symbolic dimension takes a positive step")

  def bound(v: int | None, default: Any) -> Any:
    if v is None:
      return default
    if v < 0:
      return core.max_dim(0, v + size)
    return core.min_dim(size, v)
  return bound(start, 0), bound(stop, size), step


class _Int(NamedTuple):
  """A scalar integer index: a Python int (static) or a 0-d integer array (dynamic)."""
  value: Any

  @property
  def static(self) -> bool:
    return isinstance(self.value, int)


class _IntArray(NamedTuple):
  """An integer index array (NumPy's advanced indexing); NumPy values stay on the host."""
  value: Any


class _BoolScalar(NamedTuple):
  """A scalar boolean index: indexes no dimension, adds one of size 1 (True) or 0 (False)."""
  value: bool


class _NewAxis:
  """`None` in an index: a new dimension of size 1."""


class _Mask(NamedTuple):
  """A concrete boolean mask, before it is turned into one integer array per dimension."""
  value: np.ndarray


_NEWAXIS = _NewAxis()
_Entry = _Slice | _Int | _IntArray | _BoolScalar | _NewAxis


def _as_tuple(idx: Any) -> tuple:
  """The index as a tuple; like JAX, a list at the top level is an error (NumPy's meaning
  for it was ambiguous)."""
  if isinstance(idx, tuple):
    return idx
  if isinstance(idx, list):
    raise TypeError("Using a non-tuple sequence for multidimensional indexing is not allowed; "
                    "use `arr[tuple(seq)]` for one index per dimension, or `arr[array(seq)]` "
                    "to index with an integer array.")
  return (idx,)


def _bad_indexer(pos: int, item: Any, dtype: Any) -> TypeError:
  return TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                   f"{np.dtype(dtype).name} at position {pos}, indexer value {item!r}.")


def _static_bound(v: Any) -> int | None:
  """A slice bound as a Python int: traced bounds would make the result's size unknown."""
  if v is None or core.is_symbolic_dim(v):
    return v
  if isinstance(v, core.Tracer):
    value = v.to_concrete_value()
    if value is None:
      raise IndexError("Array slice indices must have static start/stop/step to be used "
                       "with NumPy indexing syntax; a traced value cannot set the size of "
                       "the result. To index a statically sized window at a dynamic "
                       "position, use lax.dynamic_slice or lax.dynamic_update_slice.")
    v = value
  try:
    return operator.index(np.asarray(v) if type(v) is Array else v)
  except TypeError:
    raise TypeError(f"slice indices must be integers or None, got {v!r}") from None


def _classify_array(pos: int, item: Any) -> Any:
  """An array-like index item as `_Int`, `_IntArray`, `_BoolScalar` or `_Mask`."""
  dtype = item.dtype
  if dtype == np.bool_:
    value = item
    if isinstance(item, core.Tracer):
      value = item.to_concrete_value()
      if value is None:
        raise NonConcreteBooleanIndexError(item)
    value = np.asarray(value)
    return _BoolScalar(bool(value)) if value.ndim == 0 else _Mask(value)
  if not dtypes.is_integer(dtype):
    raise _bad_indexer(pos, item, dtype)
  if np.ndim(item) == 0:
    return _Int(int(item) if isinstance(item, (np.ndarray, np.generic)) else item)
  return _IntArray(item)


def _classify(pos: int, item: Any) -> Any:
  """One raw index item as an entry; slices, Ellipsis and masks stay unresolved until the
  dimensions they index are known (`_resolve`)."""
  if item is None:
    return _NEWAXIS
  if item is Ellipsis or isinstance(item, slice):
    return item
  if isinstance(item, (bool, np.bool_)):
    return _BoolScalar(bool(item))
  if isinstance(item, (int, np.integer)):
    if type(item) is int:
      util.check_python_int(item)
    return _Int(int(item))
  if isinstance(item, (list, tuple)):
    leaves = tree_util.tree_leaves(item)
    if any(isinstance(x, _ARRAYS) for x in leaves):
      item = lax_numpy.array(item)
    else:
      item = np.asarray(item) if leaves else np.zeros((0,), np.int32)
  if isinstance(item, (*_ARRAYS, np.ndarray, np.generic)):
    return _classify_array(pos, item)
  if isinstance(item, str):
    raise TypeError(f"jaxon does not support string indexing; got index {item!r} at "
                    f"position {pos}.")
  raise _bad_indexer(pos, item, np.result_type(type(item)) if isinstance(
      item, (float, complex)) else np.object_)


def _consumed(item: Any) -> int:
  """How many dimensions of the indexed array an item indexes."""
  if isinstance(item, _Mask):
    return item.value.ndim
  return 1 if isinstance(item, (slice, _Int, _IntArray)) else 0


def _parse_index(idx: Any, shape: tuple[int, ...]) -> list[_Entry]:
  """One entry per item of the index: Ellipsis expanded, trailing dimensions filled with
  full slices, slices normalized, masks turned into integer arrays."""
  items = [_classify(pos, item) for pos, item in enumerate(_as_tuple(idx))]
  n_ellipsis = sum(item is Ellipsis for item in items)
  if n_ellipsis > 1:
    raise IndexError("An index can only have a single ellipsis ('...').")
  consumed = sum(map(_consumed, items))
  if consumed > len(shape):
    raise IndexError(f"Too many indices: {len(shape)}-dimensional array indexed with "
                     f"{consumed} regular indices.")
  fill = [slice(None)] * (len(shape) - consumed)
  if n_ellipsis:
    at = items.index(Ellipsis)
    items[at:at + 1] = fill
  else:
    items += fill
  return _resolve(items, shape)


def _resolve(items: list[Any], shape: tuple[int, ...]) -> list[_Entry]:
  """Slices normalized for their dimension's size, masks as integer arrays, static ints
  checked."""
  entries: list[_Entry] = []
  axis = 0
  for item in items:
    if isinstance(item, slice):
      bounds = (_static_bound(item.start), _static_bound(item.stop), _static_bound(item.step))
      symbolic = not core.is_constant_shape((shape[axis], *bounds))
      entries.append(_Slice(*_symbolic_slice_indices(*bounds, shape[axis])) if symbolic
                     else _Slice(*slice(*bounds).indices(shape[axis])))
    elif isinstance(item, _Mask):
      entries += _mask_entries(item.value, shape[axis:axis + item.value.ndim], axis)
    else:
      if isinstance(item, _Int) and item.static:
        _check_static_int(item.value, shape[axis], axis)
      entries.append(item)
    axis += _consumed(item)
  return entries


def _mask_entries(mask: np.ndarray, shape: tuple[int, ...], axis: int) -> list[_IntArray]:
  if mask.shape != shape:
    raise IndexError(f"boolean index did not match shape of indexed array in index {axis}: "
                     f"got mask of shape {mask.shape}, indexed dimensions have shape {shape}.")
  return [_IntArray(i) for i in np.nonzero(mask)]


def _check_static_int(i: int, size: int, axis: int) -> None:
  """Out of bounds raises only with the flag on, or for an empty dimension (where no index
  is valid); otherwise reads clamp and updates drop."""
  if size == 0 or (config.jax_check_static_indices and not -size <= i < size):
    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")


def _is_advanced(entry: _Entry) -> bool:
  return isinstance(entry, (_IntArray, _BoolScalar))


# ----------------------------------------------------------------------------- basic reads

def _slice_window(s: _Slice) -> tuple[int, int, int, bool]:
  """(start, limit, stride, reversed) of a `lax.slice` (plus `rev`) that takes `s`."""
  if s.size == 0:
    return 0, 0, 1, False
  if s.step > 0:
    return s.start, s.start + (s.size - 1) * s.step + 1, s.step, False
  last = s.start + (s.size - 1) * s.step
  return last, s.start + 1, -s.step, True


def _basic_read(x: Any, entries: list[_Entry]) -> Any:
  """`x[idx]` for an index of ints, slices and None: slice, rev, dynamic_slice for traced
  ints, then squeeze and expand_dims."""
  shape = np.shape(x)
  starts, limits, strides = [], [], []
  reversed_dims, squeezed, new_axes, dynamic = [], [], [], {}
  axis = out_pos = 0
  for e in entries:
    if e is _NEWAXIS:
      new_axes.append(out_pos)
      out_pos += 1
      continue
    size = shape[axis]
    if isinstance(e, _Slice):
      lo, hi, stride, rev = _slice_window(e)
      reversed_dims += [axis] if rev else []
      out_pos += 1
    elif e.static:
      i = min(max(slicing.normalize_index(e.value, size), 0), size - 1)
      lo, hi, stride = i, i + 1, 1
      squeezed.append(axis)
    else:
      if size == 0:
        raise IndexError(f"index is out of bounds for axis {axis} with size 0")
      lo, hi, stride = 0, size, 1
      dynamic[axis] = e.value
      squeezed.append(axis)
    starts.append(lo)
    limits.append(hi)
    strides.append(stride)
    axis += 1
  y = x
  if starts != [0] * len(shape) or limits != list(shape) or strides != [1] * len(shape):
    y = slicing.slice(y, starts, limits, strides)
  if reversed_dims:
    y = shape_ops.rev(y, reversed_dims)
  if dynamic:
    y = slicing.dynamic_slice(y, [dynamic.get(a, 0) for a in range(len(shape))],
                              [1 if a in dynamic else d for a, d in enumerate(np.shape(y))])
  if squeezed:
    y = shape_ops.squeeze(y, squeezed)
  if new_axes:
    y = shape_ops.expand_dims(y, new_axes)
  return y


# ----------------------------------------------------------------------------- gather/scatter plan

class _IndexPlan(NamedTuple):
  """The gather reading `x[idx]` (equally, the scatter writing it).

  `indices` has shape `batch_shape + (k,)`; the result, of shape `out_shape`, has the window
  dimensions at `offset_dims` and the batch dimensions elsewhere, in order. Batch dimensions
  come from the advanced indices (broadcast together), strided slices and `None`s.
  """
  indices: Any
  offset_dims: tuple[int, ...]
  collapsed_dims: tuple[int, ...]
  start_index_map: tuple[int, ...]
  slice_sizes: tuple[int, ...]
  out_shape: tuple[int, ...]
  unique: bool

  def gather_dnums(self) -> gather_scatter.GatherDimensionNumbers:
    return gather_scatter.GatherDimensionNumbers(self.offset_dims, self.collapsed_dims,
                                                 self.start_index_map)

  def scatter_dnums(self) -> gather_scatter.ScatterDimensionNumbers:
    return gather_scatter.ScatterDimensionNumbers(self.offset_dims, self.collapsed_dims,
                                                  self.start_index_map)


def _index_dtype(shape: tuple[int, ...]) -> np.dtype:
  big = any(d >= 2 ** 31 for d in shape)
  return dtypes.canonicalize_dtype(np.int64 if big else np.int32)


def _advanced_layout(entries: list[_Entry]) -> tuple[tuple[int, ...], bool]:
  """The broadcast shape of the advanced indices, and whether they are adjacent (then
  their dimensions replace them in place; otherwise they go first, as in NumPy). Integer
  scalars count as advanced indices when there are any; a `None` between them separates
  them, as a slice does."""
  shapes = [np.shape(e.value) if isinstance(e, _IntArray) else (int(e.value),)
            for e in entries if _is_advanced(e)]
  try:
    adv_shape = np.broadcast_shapes(*shapes)
  except ValueError:
    raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                     f"with shapes {' '.join(map(str, shapes))}") from None
  positions = [i for i, e in enumerate(entries) if _is_advanced(e) or isinstance(e, _Int)]
  return adv_shape, positions == list(range(positions[0], positions[-1] + 1))


class _PlanBuilder:
  """Collects a gather's dimension numbers from the index entries, in output order."""

  def __init__(self, shape: tuple[int, ...]):
    self.shape = shape
    self.batch_shape: list[int] = []
    self.columns: list[tuple[Any, tuple[int, ...], int]] = []  # (index, batch dims, size)
    self.offset_dims: list[int] = []
    self.collapsed: list[int] = []
    self.index_map: list[int] = []
    self.slice_sizes = list(shape)

  def batch(self, sizes: Sequence[int]) -> tuple[int, ...]:
    """New batch dimensions of the given sizes; returns their positions among the batch."""
    self.batch_shape.extend(sizes)
    return tuple(range(len(self.batch_shape) - len(sizes), len(self.batch_shape)))

  def window(self, axis: int, start: int, size: int) -> None:
    """Output dimension `axis[start:start + size]` (an offset dimension)."""
    self.offset_dims.append(len(self.batch_shape) + len(self.offset_dims))
    self.slice_sizes[axis] = size
    if start and size:
      self.columns.append((np.array(start), (), self.shape[axis]))
      self.index_map.append(axis)

  def point(self, axis: int, index: Any, batch_dims: tuple[int, ...]) -> None:
    """`axis` indexed by `index`, whose dimensions are the batch dimensions `batch_dims`."""
    self.columns.append((index, batch_dims, self.shape[axis]))
    self.collapsed.append(axis)
    self.index_map.append(axis)
    self.slice_sizes[axis] = 1

  def build(self, unique: bool) -> _IndexPlan:
    batch = iter(self.batch_shape)
    window = iter(n for d, n in enumerate(self.slice_sizes) if d not in self.collapsed)
    out_shape = tuple(next(window) if d in self.offset_dims else next(batch)
                      for d in range(len(self.batch_shape) + len(self.offset_dims)))
    empty_axes = [d for d in self.collapsed if self.shape[d] == 0]
    if empty_axes:
      if math.prod(out_shape):
        raise IndexError(f"index is out of bounds for axis {empty_axes[0]} with size 0")
      return _IndexPlan(None, (), (), (), (), out_shape, True)
    indices = _stack_columns(self.columns, tuple(self.batch_shape), _index_dtype(self.shape))
    return _IndexPlan(indices, tuple(self.offset_dims), tuple(self.collapsed),
                      tuple(self.index_map), tuple(self.slice_sizes), out_shape, unique)


def _index_plan(shape: tuple[int, ...], entries: list[_Entry]) -> _IndexPlan:
  """The gather/scatter for `entries`. Step-1 slices become window dimensions; strided
  slices, integers and integer arrays become index columns. Its `indices` are None when
  the result is empty because an integer-indexed dimension is (XLA cannot express that)."""
  plan = _PlanBuilder(shape)
  has_advanced = any(map(_is_advanced, entries))
  adv_shape, adjacent = _advanced_layout(entries) if has_advanced else ((), True)
  adv_dims = plan.batch(adv_shape) if has_advanced and not adjacent else None
  axis = 0
  for e in entries:
    if e is _NEWAXIS:
      plan.batch([1])
      continue
    if isinstance(e, _Slice) and (e.step == 1 or e.size == 0):
      plan.window(axis, e.start, e.size)
    elif isinstance(e, _Slice):
      plan.point(axis, np.arange(e.start, e.stop, e.step), plan.batch([e.size]))
    elif has_advanced:
      adv_dims = plan.batch(adv_shape) if adv_dims is None else adv_dims
      if isinstance(e, _BoolScalar):
        continue
      plan.point(axis, e.value, adv_dims[len(adv_dims) - np.ndim(e.value):])
    else:
      plan.point(axis, e.value, ())
    axis += 1
  return plan.build(unique=not has_advanced)


def _stack_columns(columns: list[tuple[Any, tuple[int, ...], int]],
                   batch_shape: tuple[int, ...], dtype: np.dtype) -> Any:
  """The gather's index array: each column normalized (negative indices count from the
  end), converted to `dtype`, broadcast over its batch dimensions and stacked along a new
  last dimension. When every column is a host value the result is a NumPy constant."""
  target = (*batch_shape, 1)
  parts = [_column(value, dims, size, target, dtype) for value, dims, size in columns]
  if all(isinstance(p, np.ndarray) for p in parts):
    return np.concatenate(parts, axis=-1) if parts else np.zeros((*batch_shape, 0), dtype)
  return parts[0] if len(parts) == 1 else shape_ops.concatenate(parts, len(batch_shape))


def _column(value: Any, dims: tuple[int, ...], size: int, target: tuple[int, ...],
            dtype: np.dtype) -> Any:
  if isinstance(value, _ARRAYS):
    if value.dtype.itemsize < dtype.itemsize:  # so that `value + size` cannot overflow
      value = lax.convert_element_type(value, dtype)
    value = lax.convert_element_type(slicing.normalize_index(value, size), dtype)
    return lax.broadcast_in_dim(value, target, dims)
  host = np.asarray(value).astype(np.int64)
  info = np.iinfo(dtype)
  host = np.clip(np.where(host < 0, host + size, host), info.min, info.max).astype(dtype)
  placed = [1] * len(target)
  for d, n in zip(dims, host.shape):
    placed[d] = n
  return np.ascontiguousarray(np.broadcast_to(host.reshape(placed), target))


# ----------------------------------------------------------------------------- reads and updates

def _parse_mode(mode: Any) -> GatherScatterMode | None:
  return None if mode is None else GatherScatterMode.from_any(mode)


def rewriting_take(arr: Any, idx: Any, *, indices_are_sorted: bool = False,
                   unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
                   fill_value: Any = None) -> Any:
  """`arr[idx]`: slices for basic indices, one gather for integer arrays and masks."""
  shape = np.shape(arr)
  entries = _parse_index(idx, shape)
  mode = _parse_mode(mode)
  if not any(map(_is_advanced, entries)) and mode != GatherScatterMode.FILL_OR_DROP:
    return _basic_read(arr, entries)
  plan = _index_plan(shape, entries)
  if plan.indices is None:
    return lax.full(plan.out_shape, 0, dtypes.dtype(arr))
  return gather_scatter.gather(arr, plan.indices, plan.gather_dnums(), plan.slice_sizes,
                               unique_indices=unique_indices or plan.unique,
                               indices_are_sorted=indices_are_sorted or plan.unique, mode=mode,
                               fill_value=fill_value)


def getitem(arr: Any, idx: Any) -> Any:
  """`arr[idx]` with NumPy's indexing rules; out-of-bounds reads clamp (see the module
  docstring)."""
  return rewriting_take(arr, idx)


def _updates(values: Any, aval: core.ShapedArray, shape: tuple[int, ...]) -> Any:
  """The update values in the indexed array's dtype, broadcast to the indexed shape."""
  if isinstance(values, (list, tuple)):
    values = lax_numpy.asarray(values)
  if not (isinstance(values, (*_ARRAYS, np.ndarray, np.generic, int, float, complex, bool))):
    raise TypeError(f"Index update values must be arrays or scalars, got "
                    f"{type(values).__name__}.")
  if type(values) is int:
    util.check_python_int(values)
  values = lax._convert_element_type(values, aval.dtype, aval.weak_type)
  vshape = np.shape(values)
  lead = len(shape) - len(vshape)
  if lead < 0 or any(d not in (1, s) for d, s in zip(vshape, shape[lead:])):
    raise ValueError(f"shape mismatch: value array of shape {vshape} could not be broadcast "
                     f"to indexing result of shape {shape}")
  if vshape == shape and isinstance(values, _ARRAYS):
    return values
  return lax.broadcast_in_dim(values, shape, range(lead, len(shape)))


def _scatter_update(x: Any, idx: Any, values: Any, scatter_fn: Callable[..., Any],
                    indices_are_sorted: bool, unique_indices: bool,
                    mode: str | GatherScatterMode | None) -> Any:
  """`x` with `scatter_fn` applied at `x[idx]` (the functional form of `x[idx] op= y`)."""
  x = x if isinstance(x, _ARRAYS) else lax_numpy.asarray(x)
  plan = _index_plan(x.shape, _parse_index(idx, x.shape))
  updates = _updates(values, core.get_aval(x), plan.out_shape)
  if plan.indices is None:
    return x
  return scatter_fn(x, plan.indices, updates, plan.scatter_dnums(),
                    indices_are_sorted=indices_are_sorted or plan.unique,
                    unique_indices=unique_indices or plan.unique, mode=mode)


# ----------------------------------------------------------------------------- x.at[idx]

def _update_method(scatter_fn: Callable[..., Any], statement: str) -> Callable[..., Any]:
  def method(self: _IndexUpdateRef, values: Any, *, indices_are_sorted: bool = False,
             unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    return _scatter_update(self.array, self.index, values, scatter_fn, indices_are_sorted,
                           unique_indices, mode)
  method.__doc__ = f"""The pure equivalent of ``{statement}``: a new array, ``x`` unchanged.

    Every occurrence of a repeated index applies (unlike NumPy's in-place statement, which
    keeps only the last); out-of-bounds updates are dropped unless `mode` is 'clip'.
    `indices_are_sorted` and `unique_indices` are unchecked promises that may speed it up.
    """
  return method


class _IndexUpdateRef:
  """`x.at[idx]`: the elements of `x` that its methods read or update."""

  __slots__ = ("array", "index")

  def __init__(self, array: Any, index: Any):
    self.array = array
    self.index = index

  def __repr__(self) -> str:
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
          mode: str | GatherScatterMode | None = None, fill_value: Any = None) -> Any:
    """``x[idx]``, with control of out-of-bounds indices: `mode` 'fill' returns
    `fill_value` (default NaN, or the extreme integer, or True) for them, 'clip' clamps."""
    return rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=mode, fill_value=fill_value)

  set = _update_method(gather_scatter.scatter, "x[idx] = y")
  add = _update_method(gather_scatter.scatter_add, "x[idx] += y")
  subtract = _update_method(gather_scatter.scatter_sub, "x[idx] -= y")
  multiply = _update_method(gather_scatter.scatter_mul, "x[idx] *= y")
  mul = multiply
  min = _update_method(gather_scatter.scatter_min, "x[idx] = minimum(x[idx], y)")
  max = _update_method(gather_scatter.scatter_max, "x[idx] = maximum(x[idx], y)")

  def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None
            ) -> Any:
    """``func`` applied to the elements at ``idx``: a new array, ``x`` unchanged.

    ``func`` is a scalar function from ``x``'s dtype to itself (traced once, on scalars:
    it may not close over traced values). An element indexed twice gets ``func`` twice.
    Derivatives need ``unique_indices=True``, a promise that no element repeats.
    """
    def scatter_fn(x: Any, indices: Any, updates: Any, dnums: Any, **kw: Any) -> Any:
      return gather_scatter.scatter_apply(x, indices, func, dnums,
                                          update_shape=np.shape(updates), **kw)
    return _scatter_update(self.array, self.index, lax_numpy.zeros((), self.array.dtype),
                           scatter_fn, indices_are_sorted, unique_indices, mode)

  def _factors(self, values: Any, **kw: Any) -> Any:
    """Ones, multiplied by `values` at `idx` (repeated indices multiply together)."""
    return self.__class__(lax_numpy.ones_like(self.array), self.index).multiply(values, **kw)

  def divide(self, values: Any, **kw: Any) -> Any:
    """The pure equivalent of ``x[idx] /= y`` (true division: the result is inexact)."""
    return ufuncs.divide(self.array, self._factors(values, **kw))

  def power(self, values: Any, **kw: Any) -> Any:
    """The pure equivalent of ``x[idx] **= y``."""
    return ufuncs.power(self.array, self._factors(values, **kw))


class _IndexUpdateHelper:
  """`x.at`: index it (`x.at[idx]`) to read or update elements of the immutable `x`.

  Example:
    >>> x = jnp.zeros(4)
    >>> x.at[1].set(5.0)
    Array([0., 5., 0., 0.], dtype=float32)
    >>> x.at[jnp.array([0, 0, 2])].add(1.0)
    Array([2., 0., 1., 0.], dtype=float32)
  """

  __slots__ = ("array",)

  def __init__(self, array: Any):
    self.array = array

  def __getitem__(self, index: Any) -> _IndexUpdateRef:
    return _IndexUpdateRef(self.array, index)

  def __repr__(self) -> str:
    return f"_IndexUpdateHelper({self.array!r})"


# ----------------------------------------------------------------------------- jaxon.ops

def _ops_function(name: str, scatter_fn: Callable[..., Any], statement: str
                  ) -> Callable[..., Any]:
  def fn(x: Any, idx: Any, y: Any, indices_are_sorted: bool = False,
         unique_indices: bool = False) -> Any:
    return _scatter_update(x, idx, y, scatter_fn, indices_are_sorted, unique_indices, None)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = (f"The pure equivalent of ``{statement}`` (early JAX's API; "
                f"`x.at[idx]` is the modern spelling).")
  return fn


index = index_exp = np.index_exp
s_ = np.s_
index_update = _ops_function("index_update", gather_scatter.scatter, "x[idx] = y")
index_add = _ops_function("index_add", gather_scatter.scatter_add, "x[idx] += y")
index_mul = _ops_function("index_mul", gather_scatter.scatter_mul, "x[idx] *= y")
index_min = _ops_function("index_min", gather_scatter.scatter_min, "x[idx] = minimum(x[idx], y)")
index_max = _ops_function("index_max", gather_scatter.scatter_max, "x[idx] = maximum(x[idx], y)")
