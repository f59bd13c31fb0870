"""Sorting in jaxon.numpy: sort, argsort, lexsort, sort_complex, partition, argpartition.

The order is NumPy's (NaNs last, see `lax.sort`). `descending=True` reverses it, NaNs
first; a stable descending sort still keeps equal elements in their input order.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import lax, shape_ops
from jaxon._src.lax import sorting as lax_sorting
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import util
from jaxon._src.xla.eager_plans import memoize_eager_operations


def _array_and_axis(fun_name: str, a: Any, axis: int | None, kind: Any, order: Any
                    ) -> tuple[Any, int]:
  """`a` flattened when `axis` is None, and the canonical axis; rejects the NumPy arguments
  jaxon does not support."""
  util.check_arraylike(fun_name, a)
  if order is not None:
    raise TypeError(f"'order' argument to {fun_name} is not supported (jaxon arrays have no "
                    "structured dtypes).")
  if kind is not None:  # NumPy's algorithm choice: XLA picks its own
    raise TypeError(f"'kind' argument to {fun_name} is not supported, got kind={kind!r}. Use "
                    "stable=True or stable=False to specify sort stability.")
  if axis is None:
    return shape_ops.reshape(a, (np.size(a),)), 0
  return a, lax_utils.canonicalize_axis(axis, np.ndim(a))


@memoize_eager_operations
def sort(a: Any, axis: int | None = -1, *, kind: Any = None, order: None = None,
         stable: bool = True, descending: bool = False) -> Any:
  """The elements of `a` sorted along `axis` (all of them, flattened, when `axis` is None).

  Example: `sort(jnp.array([3., nan, 1.]))` is `[1., 3., nan]`.
  """
  a, axis = _array_and_axis("sort", a, axis, kind, order)
  out = lax_sorting.sort(a, dimension=axis, is_stable=stable)
  return shape_ops.rev(out, (axis,)) if descending else out


@memoize_eager_operations
def argsort(a: Any, axis: int | None = -1, *, kind: Any = None, order: None = None,
            stable: bool = True, descending: bool = False, dtype: Any = None) -> Any:
  """The indices that sort `a` along `axis` (of the flattened array when `axis` is None).
  `dtype` is theirs (the default integer by default): a narrower one saves memory, and
  wraps around, as JAX's, if it cannot hold the length.

  Example: `argsort(jnp.array([3., 1., 2.]))` is `[1, 2, 0]`.
  """
  a, axis = _array_and_axis("argsort", a, axis, kind, order)
  indices = lax.broadcasted_iota(_index_dtype(dtype), np.shape(a), axis)
  if not descending:
    return lax_sorting.sort_key_val(a, indices, dimension=axis, is_stable=stable)[1]
  # Sorting the reversed array ascending and reversing the result puts equal keys back in
  # input order, which is what a stable descending sort promises.
  reverse = lambda x: shape_ops.rev(x, (axis,))
  _, indices = lax_sorting.sort_key_val(reverse(a), reverse(indices), dimension=axis,
                                        is_stable=stable)
  return reverse(indices)


def _index_dtype(dtype: Any) -> np.dtype:
  if dtype is None:
    return dtypes.default_int_dtype()
  dtypes.check_user_dtype_supported(dtype, "argsort")
  dtype = dtypes.canonicalize_dtype(dtype)
  if not (dtypes.is_integer(dtype) or dtypes.is_inexact(dtype)):  # as lax.iota's, in JAX
    raise TypeError(f"jnp.argsort: dtype must be an integer, floating or complex type, got "
                    f"{dtype}.")
  return dtype


def lexsort(keys: Sequence[Any], axis: int = -1) -> Any:
  """Indices that sort by several keys: the last key is the primary one, the one before it
  breaks ties, and so on (NumPy's convention). The sort is stable.

  Example: `lexsort((jnp.array([1, 0, 2]), jnp.array([0, 0, 1])))` is `[1, 0, 2]`.
  """
  keys = tuple(keys)
  if not keys:
    raise TypeError("lexsort needs at least one key.")
  util.check_arraylike("lexsort", *keys)
  shapes = {np.shape(k) for k in keys}
  if len(shapes) != 1:
    raise ValueError(f"lexsort keys must all have the same shape, got "
                     f"{[np.shape(k) for k in keys]}.")
  shape = shapes.pop()
  if not shape:
    raise TypeError("lexsort keys must be arrays of rank >= 1, got scalars.")
  axis = lax_utils.canonicalize_axis(axis, len(shape))
  indices = lax.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
  keys = [lax._convert_element_type(k, None, False) for k in reversed(keys)]
  return lax_sorting.sort((*keys, indices), dimension=axis, num_keys=len(keys))[-1]


def sort_complex(a: Any) -> Any:
  """`a` sorted along its last axis by real part, then imaginary part, as a complex array."""
  a, axis = _array_and_axis("sort_complex", a, -1, None, None)
  out = lax_sorting.sort(a, dimension=axis)
  return lax.convert_element_type(out, dtypes.promote_types(out.dtype, np.complex64))


def _kth(fun_name: str, kth: Any, size: int) -> None:
  """Checks `kth` (static, in [-size, size)); NumPy accepts several at once."""
  kths = np.atleast_1d(core.concrete_or_error(
      np.asarray, kth, f"The kth argument of jnp.{fun_name} must be static."))
  if not dtypes.is_integer(kths.dtype):
    raise TypeError(f"jnp.{fun_name}: kth must be integers, got {kth!r}.")
  bad = [int(k) for k in kths if not -size <= k < size]
  if bad:
    raise ValueError(f"jnp.{fun_name}: kth(={bad[0]}) out of bounds for an axis of size "
                     f"{size}.")


def _selection_kth(fun_name: str, a: Any, kth: Any, axis: int) -> int | None:
  """The one `kth` (in [0, size)) by which `a` is partitioned with `top_k`s, as JAX does;
  None where it is sorted instead: several `kth`s, or booleans and complex numbers, which
  `_reversed_order` cannot turn around."""
  size = np.shape(a)[axis]
  _kth(fun_name, kth, size)
  if np.ndim(kth) or not (dtypes.is_integer(a.dtype) or dtypes.is_float(a.dtype)):
    return None
  return int(kth) % size


def _reversed_order(x: Any) -> Any:
  """x with its order reversed, exactly and reversibly: negated floats (a NaN turns with its
  sign bit, as XLA's total order sees it), complemented integers (no overflow at the most
  negative one, where negation would wrap)."""
  return lax.neg(x) if dtypes.is_float(x.dtype) else lax.bitwise_not(x)


def partition(a: Any, kth: int | Sequence[int], axis: int | None = -1) -> Any:
  """`a` rearranged along `axis` so that the entry at `kth` is the one a sort puts there,
  with nothing larger before it and nothing smaller after it (NaNs count as largest; one
  whose sign bit is set, as smallest, in XLA's total order).

  NumPy leaves the order within each side unspecified. For one `kth` of a real array the
  kth + 1 smallest entries come first in ascending order, then the others in descending
  order, chosen by two `top_k`s, JAX's arrangement, in less time than a sort (f32[4096]:
  a sort took 1.6 times JAX's time). Several `kth`s, booleans and complex numbers are
  sorted.

  Example: `partition(jnp.array([3, 4, 2, 1]), 2)` is `[1, 2, 3, 4]`.
  """
  a, axis = _array_and_axis("partition", a, axis, None, None)
  kth = _selection_kth("partition", a, kth, axis)
  if kth is None:
    return lax_sorting.sort(a, dimension=axis)
  smallest, _ = lax_sorting.top_k(_reversed_order(a), kth + 1, axis=axis)
  largest, _ = lax_sorting.top_k(a, np.shape(a)[axis] - kth - 1, axis=axis)
  return shape_ops.concatenate([_reversed_order(smallest), largest], axis)


def argpartition(a: Any, kth: int | Sequence[int], axis: int | None = -1) -> Any:
  """Indices that partition `a` along `axis` (see `partition`). For one `kth` of a real
  array, as JAX: those of the kth + 1 smallest entries in ascending order of the entries,
  then the others in ascending order of the indices (not `partition`'s arrangement of that
  side); otherwise the indices that sort `a`."""
  from jaxon._src.numpy import searching  # searching builds on this module
  a, axis = _array_and_axis("argpartition", a, axis, None, None)
  kth = _selection_kth("argpartition", a, kth, axis)
  if kth is None:
    return argsort(a, axis=axis)
  _, smallest = lax_sorting.top_k(_reversed_order(a), kth + 1, axis=axis)
  # top_k takes equal entries in index order: of ones with zeros where the smallest are,
  # it takes the others' indices in ascending order. (float32: XLA's CPU top_k of int32
  # is a full sort, which made argpartition of f32[4096] 1.7 times JAX's time.)
  others = searching.put_along_axis(lax.full(np.shape(a), 1, np.float32), smallest, 0, axis,
                                    inplace=False)
  _, rest = lax_sorting.top_k(others, np.shape(a)[axis] - kth - 1, axis=axis)
  return shape_ops.concatenate([smallest, rest], axis)
