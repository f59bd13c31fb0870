"""`unique` and the set operations of jaxon.numpy (`isin`, `union1d`, `intersect1d`,
`setdiff1d`, `setxor1d`): sorts, run boundaries and searches of the sorted values.

They take `size=` and `fill_value=` as `nonzero` does (see searching.py): without `size`,
the result is cut to the number of values, read back from the device. Values are ordered as
NumPy's sort orders them: NaNs after every number, complex numbers by real then imaginary
part.
"""
from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import api, dtypes
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.lax import sorting as lax_sorting
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import reductions, shape, sorting, ufuncs, util
from jaxon._src.numpy.searching import (_as_array, _count_true, _fill, _first_true, _full,
                                        _int_dtype, _iota, _isnan, _run_sized, searchsorted,
                                        take)

# ----------------------------------------------------------------------------- unique

class _SortedRows(NamedTuple):
  """The rows of a 2-D array (or the entries of a 1-D one) in sorted order."""
  values: Any  # the sorted rows
  perm: Any    # for each sorted row, its index in the input (stable: first occurrences first)
  first: Any   # bool: the row differs from the one before it (starts a new unique value)


def _differs(x: Any, y: Any, equal_nan: bool) -> Any:
  ne = lax.ne(x, y)
  if equal_nan and dtypes.is_inexact(x.dtype):
    ne = lax.bitwise_and(ne, lax.bitwise_not(lax.bitwise_and(_isnan(x), _isnan(y))))
  return ne


def _sort_rows(x: Any, equal_nan: bool) -> _SortedRows:
  """Sorts the rows of `x` (ndim 1 or 2, at least one row) lexicographically."""
  n = x.shape[0]
  if x.ndim == 1:
    values, perm = lax_sorting.sort_key_val(x, _iota(n))
  elif x.shape[1] == 0:
    values, perm = x, _iota(n)
  else:
    columns = [slicing.index_in_dim(x, j, axis=1, keepdims=False) for j in range(x.shape[1])]
    *_, perm = lax_sorting.sort((*columns, _iota(n)), dimension=0, num_keys=len(columns))
    values = take(x, perm, axis=0, mode="clip")
  differs = _differs(values[1:], values[:-1], equal_nan)
  if x.ndim == 2:
    differs = reductions.any(differs, axis=1)
  first = shape_ops.concatenate([lax.full((1,), True, np.bool_), differs], 0)
  return _SortedRows(values, perm, first)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:
  """The sorted unique values of `ar` (of its flattened entries, or of its slices along
  `axis`), and optionally where they occur and how often.

  Args:
    ar: the array.
    return_index: also return the index of each unique value's first occurrence.
    return_inverse: also return, for each entry, the index of its unique value (shaped
      like `ar` when `axis` is None).
    return_counts: also return how many times each unique value occurs.
    axis: find unique slices along this axis instead of unique entries.
    equal_nan: count all NaNs as one value.
    size: the static number of unique values to return (required under jit); missing ones
      are padded with `fill_value`, their index with that of the smallest value, their
      count with 0.
    fill_value: the padding (default: the smallest value).
    sorted: accepted for NumPy compatibility; the result is always sorted.

  Example: `unique(jnp.array([3, 1, 3]), return_counts=True)` is `([1, 3], [1, 2])`.
  """
  del sorted
  arr = _as_array("unique", ar)
  flat = axis is None
  if flat:
    x, slice_shape, axis = shape.ravel(arr), (), 0
  else:
    axis = lax_utils.canonicalize_axis(axis, arr.ndim)
    moved = shape.moveaxis(arr, axis, 0)
    slice_shape = moved.shape[1:]
    x = shape.reshape(moved, (moved.shape[0], math.prod(slice_shape)))
  values, index, inverse, counts = _unique_rows("unique", x, equal_nan, size, fill_value)
  values = shape.moveaxis(shape.reshape(values, values.shape[:1] + slice_shape), 0, axis)
  if flat:
    inverse = shape.reshape(inverse, arr.shape)
  extras = (index, inverse, counts)
  chosen = [out for out, wanted in zip(extras, (return_index, return_inverse, return_counts))
            if wanted]
  return (values, *chosen) if chosen else values


def _unique_rows(fun_name: str, x: Any, equal_nan: bool, size: Any, fill_value: Any
                 ) -> tuple[Any, Any, Any, Any]:
  """Unique rows of `x` (1-D: entries): values, first indices, inverse and counts."""
  return _run_sized(fun_name, _unique_rows_sized, x, fill_value, size=size,
                    max_size=x.shape[0], sized_axes=(0, 0, None, 0),
                    equal_nan=equal_nan)


@functools.partial(api.jit, static_argnames=("size", "equal_nan"))
def _unique_rows_sized(x: Any, fill_value: Any, *, size: int, equal_nan: bool
                       ) -> tuple[tuple[Any, Any, Any, Any], Any]:
  n = x.shape[0]
  if n == 0:
    values = _full((size, *x.shape[1:]), 0 if fill_value is None else fill_value, x.dtype)
    empty = lax.full((size,), 0, _int_dtype())
    return (values, empty, lax.full((0,), 0, _int_dtype()), empty), _count_true(
        lax.full((0,), False, np.bool_))
  rows = _sort_rows(x, equal_nan)
  positions, valid, count = _first_true(rows.first, size)
  values = take(rows.values, positions, axis=0, mode="clip")
  if fill_value is not None:
    values = _fill(values, valid, fill_value)
  index = take(rows.perm, positions, mode="clip")
  group = lax.sub(reductions.cumsum(rows.first, dtype=_int_dtype()),
                  np.array(1, _int_dtype()))
  inverse = take(group, sorting.argsort(rows.perm), mode="clip")
  # Each count is the distance from a value's first row to the next value's first row.
  bounds, bound_valid, _ = _first_true(rows.first, size + 1)
  bounds = _fill(bounds, bound_valid, n)
  counts = lax.sub(bounds[1:], bounds[:-1])
  return (values, index, inverse, counts), count

class UniqueAllResult(NamedTuple):
  values: Any
  indices: Any
  inverse_indices: Any
  counts: Any


class UniqueCountsResult(NamedTuple):
  values: Any
  counts: Any


class UniqueInverseResult(NamedTuple):
  values: Any
  inverse_indices: Any


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None
               ) -> UniqueAllResult:
  """The array API's `unique` with everything: values, first indices, inverse indices
  (shaped like `x`) and counts. Every NaN counts as a distinct value."""
  out = unique(x, True, True, True, equal_nan=False, size=size, fill_value=fill_value)
  return UniqueAllResult(*out)


def unique_counts(x: Any, /, *, size: int | None = None, fill_value: Any = None
                  ) -> UniqueCountsResult:
  """The unique values of `x` and how often each occurs (NaNs distinct)."""
  out = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
  return UniqueCountsResult(*out)


def unique_inverse(x: Any, /, *, size: int | None = None, fill_value: Any = None
                   ) -> UniqueInverseResult:
  """The unique values of `x` and, shaped like `x`, the index of each entry's value."""
  out = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
  return UniqueInverseResult(*out)


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
  """The sorted unique values of `x` (NaNs distinct)."""
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# ----------------------------------------------------------------------------- set operations

def _flat_promoted(fun_name: str, *arrays: Any) -> list[Any]:
  util.check_arraylike(fun_name, *arrays)
  return [shape.ravel(x) for x in util.promote_dtypes(*(_as_array(fun_name, a)
                                                        for a in arrays))]


def _sorted_firsts(x: Any, assume_unique: bool) -> _SortedRows:
  """`x` (1-D) sorted, marking the first of each run of equal values (NaNs one run)."""
  if x.shape[0] == 0:
    return _SortedRows(x, _iota(0), lax.full((0,), True, np.bool_))
  rows = _sort_rows(x, equal_nan=True)
  if assume_unique:
    return rows._replace(first=lax.full_like(rows.first, True))
  return rows


def _select(values: Any, positions: Any, valid: Any, fill_value: Any) -> Any:
  """The entries of the 1-D `values` at `positions` (from `_first_true`), padded with
  `fill_value`; by default with the first entry selected (the smallest, for sorted
  `values`)."""
  if values.shape[0] == 0:
    return _full(positions.shape, 0 if fill_value is None else fill_value, values.dtype)
  if fill_value is None and positions.shape[0]:
    return take(values, _fill(positions, valid, positions[0]), mode="clip")
  out = take(values, positions, mode="clip")
  return out if fill_value is None else _fill(out, valid, fill_value)

def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
  """The sorted unique values in either array (both flattened)."""
  x1, x2 = _flat_promoted("union1d", ar1, ar2)
  both = shape_ops.concatenate([x1, x2], 0)
  return _unique_rows("union1d", both, True, size, fill_value)[0]


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
  """Elementwise: whether each entry of `element` equals some entry of `test_elements`.

  Args:
    element: the values to look up; the result has their shape.
    test_elements: the values to look for (any shape; flattened).
    assume_unique: accepted for NumPy compatibility.
    invert: return the negation (whether each entry is absent).
    method: 'compare_all' compares every pair; 'binary_search' and 'sort' sort
      `test_elements` and search it; 'auto' compares all pairs when that is cheap and
      searches otherwise.

  Example: `isin(jnp.array([1, 2, 3]), jnp.array([3, 1]))` is `[True, False, True]`.
  """
  del assume_unique
  if method not in ("auto", "compare_all", "binary_search", "sort"):
    raise ValueError(f"jnp.isin: method must be 'auto', 'compare_all', 'binary_search' or "
                     f"'sort', got {method!r}.")
  util.check_arraylike("isin", element, test_elements)
  element, test = util.promote_dtypes(_as_array("isin", element),
                                      _as_array("isin", test_elements))
  return _isin(element, test, invert=invert, method=method)


@functools.partial(api.jit, static_argnames=("invert", "method"))
def _isin(element: Any, test: Any, *, invert: bool, method: str) -> Any:
  found = _contains(shape.ravel(test), element, method)
  return lax.bitwise_not(found) if invert else found

def _contains(test: Any, element: Any, method: str) -> Any:
  """Whether each entry of `element` equals an entry of the 1-D `test` (NaN never does)."""
  if test.shape[0] == 0:
    return lax.full(element.shape, False, np.bool_)
  if method == "auto":
    method = _isin_method(element.size, test.shape[0])
  if method == "compare_all":
    pairs = ufuncs.equal(shape.expand_dims(element, -1), test)
    return reductions.any(pairs, axis=-1)
  search = "sort" if method == "sort" else "scan"
  ordered = sorting.sort(test)
  where = searchsorted(ordered, element, method=search)
  return ufuncs.equal(take(ordered, where, mode="clip"), element)


def _isin_method(n_elements: int, n_tests: int) -> str:
  """'compare_all' (JAX's 'auto') while comparing every pair is cheap, there are few
  elements to look up (sorting many test values then costs more than comparing with each)
  or few test values (a binary search takes as many steps over the elements as a compare of
  64 values), else a binary search of the sorted test values. Measured on the CPU (jit,
  int32), comparing all pairs / binary search / sorting both: 4096 elements among 4096
  tests, 1227 / 131 / 1469 us; 64 among 65536, 393 / 1932 / 7650 us; 65536 among 64,
  305 / 345 / 20662 us."""
  if n_elements * n_tests <= 2 ** 16 or n_elements <= 384 or n_tests <= 64:
    return "compare_all"
  return "binary_search"


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
  """The sorted unique values in both arrays (both flattened).

  With `return_indices=True`, also the index in each input of each value's first
  occurrence. `size=`/`fill_value=` as in `unique` (padding indices are 0).

  Example: `intersect1d(jnp.array([1, 3, 4, 3]), jnp.array([3, 1, 2, 1]))` is `[1, 3]`.
  """
  x1, x2 = _flat_promoted("intersect1d", ar1, ar2)
  return _run_sized("intersect1d", _intersect1d_sized, x1, x2, fill_value, size=size,
                    max_size=x1.shape[0], assume_unique=assume_unique,
                    return_indices=return_indices)


@functools.partial(api.jit, static_argnames=("size", "assume_unique", "return_indices"))
def _intersect1d_sized(x1: Any, x2: Any, fill_value: Any, *, size: int, assume_unique: bool,
                       return_indices: bool) -> tuple[Any, Any]:
  rows1, rows2 = _sorted_firsts(x1, assume_unique), _sorted_firsts(x2, assume_unique)
  keep = lax.bitwise_and(rows1.first, _contains(rows2.values, rows1.values, "sort"))
  positions, valid, count = _first_true(keep, size)
  values = _select(rows1.values, positions, valid, fill_value)
  if not return_indices:
    return values, count
  # A value's first occurrence in ar2 is the first of its run in the stable sort of ar2.
  first2 = (take(rows2.perm, searchsorted(rows2.values, rows1.values), mode="clip")
            if x2.shape[0] else rows1.perm)
  indices = [_select(perm, positions, valid, 0) for perm in (rows1.perm, first2)]
  return (values, *indices), count

def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
  """The unique values of `ar1` not in `ar2`, sorted (with `assume_unique=True`: the
  entries of `ar1` not in `ar2`, in `ar1`'s order)."""
  x1, x2 = _flat_promoted("setdiff1d", ar1, ar2)
  return _run_sized("setdiff1d", _setdiff1d_sized, x1, x2, fill_value, size=size,
                    max_size=x1.shape[0], assume_unique=assume_unique)


@functools.partial(api.jit, static_argnames=("size", "assume_unique"))
def _setdiff1d_sized(x1: Any, x2: Any, fill_value: Any, *, size: int, assume_unique: bool
                     ) -> tuple[Any, Any]:
  if assume_unique:
    values, first = x1, lax.full(x1.shape, True, np.bool_)
  else:
    values, _, first = _sorted_firsts(x1, False)
  absent = lax.bitwise_not(_contains(x2, values, "auto"))
  positions, valid, count = _first_true(lax.bitwise_and(first, absent), size)
  return _select(values, positions, valid, fill_value), count

def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
  """The sorted unique values in exactly one of the arrays. As in NumPy, NaN is never
  found in the other array, so a NaN in each input gives two NaNs."""
  x1, x2 = _flat_promoted("setxor1d", ar1, ar2)
  return _run_sized("setxor1d", _setxor1d_sized, x1, x2, fill_value, size=size,
                    max_size=x1.shape[0] + x2.shape[0],
                    assume_unique=assume_unique)


@functools.partial(api.jit, static_argnames=("size", "assume_unique"))
def _setxor1d_sized(x1: Any, x2: Any, fill_value: Any, *, size: int, assume_unique: bool
                    ) -> tuple[Any, Any]:
  rows1, rows2 = _sorted_firsts(x1, assume_unique), _sorted_firsts(x2, assume_unique)
  keep1 = lax.bitwise_and(rows1.first, lax.bitwise_not(_contains(x2, rows1.values, "auto")))
  keep2 = lax.bitwise_and(rows2.first, lax.bitwise_not(_contains(x1, rows2.values, "auto")))
  values = shape_ops.concatenate([rows1.values, rows2.values], 0)
  keep = shape_ops.concatenate([keep1, keep2], 0)
  if values.shape[0]:
    # Kept values first, each group sorted: the first `count` entries are the answer.
    dropped, values = lax_sorting.sort((lax.bitwise_not(keep), values), dimension=0,
                                       num_keys=2)
    keep = lax.bitwise_not(dropped)
  positions, valid, count = _first_true(keep, size)
  return _select(values, positions, valid, fill_value), count
