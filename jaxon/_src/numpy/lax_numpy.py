"""Array creation and manipulation in jaxon.numpy."""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import core, dtypes, tree_util
from jaxon._src.lax import lax, shape_ops
from jaxon._src.xla.array import Array, device_put_numpy


def _is_traced_or_array(x: Any) -> bool:
  return isinstance(x, (core.Tracer, Array))


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = None,
          ndmin: int = 0) -> Any:
  """Creates an array (strongly typed) from an array, a NumPy value, a scalar, or nested
  lists/tuples of those (which may contain traced values)."""
  if dtype is not None:
    dtype = dtypes.canonicalize_dtype(dtype)
  if _is_traced_or_array(object):
    out = lax._convert_element_type(object, dtype, weak_type=False)
  else:
    leaves = tree_util.tree_leaves(object)
    if any(_is_traced_or_array(x) for x in leaves):
      out = _stack_nested(object, dtype)
    else:
      host = np.array(object, dtype=dtype)
      if host.dtype == object_dtype:
        raise TypeError(f"jnp.array cannot convert {type(object).__name__} of mixed or "
                        "ragged contents to an array")
      out = device_put_numpy(host)
  if ndmin > np.ndim(out):
    out = lax.broadcast_in_dim(out, (1,) * (ndmin - np.ndim(out)) + np.shape(out),
                               range(ndmin - np.ndim(out), ndmin))
  return out


object_dtype = np.dtype(object)


def _stack_nested(object: Any, dtype: Any) -> Any:
  """`array([tracer, 1.0, …])`: converts each element, then stacks along a new axis."""
  if isinstance(object, (list, tuple)):
    elems = [_stack_nested(x, dtype) for x in object]
    if dtype is None:
      dtype = dtypes.result_type(*elems)
    elems = [lax._convert_element_type(e, dtype, False) for e in elems]
    shape = np.shape(elems[0])
    rows = [lax.broadcast_in_dim(e, (1, *shape), range(1, len(shape) + 1)) for e in elems]
    return shape_ops.concatenate(rows, 0)
  return array(object, dtype)


def asarray(a: Any, dtype: Any = None, order: str | None = None, copy: bool | None = None
            ) -> Any:
  """Like `array`, without copying an Array that already has the dtype."""
  return array(a, dtype=dtype, copy=bool(copy), order=order)


def _creation_dtype(dtype: Any) -> np.dtype:
  return dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
  """An array of `shape` filled with `fill_value`."""
  if dtype is None:
    dtype = dtypes.dtype(fill_value, canonicalize=True)
  return lax.full(shape, fill_value, dtypes.canonicalize_dtype(dtype))


def zeros(shape: Any, dtype: Any = None) -> Any:
  """An array of zeros (float32 by default)."""
  return lax.full(shape, 0, _creation_dtype(dtype))


def ones(shape: Any, dtype: Any = None) -> Any:
  """An array of ones (float32 by default)."""
  return lax.full(shape, 1, _creation_dtype(dtype))


def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
  aval = core.get_aval(a)
  return lax.full(aval.shape if shape is None else shape, 0, dtype or aval.dtype)


def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
  aval = core.get_aval(a)
  return lax.full(aval.shape if shape is None else shape, 1, dtype or aval.dtype)


def shape(a: Any) -> tuple[int, ...]:
  return np.shape(a) if not _is_traced_or_array(a) else a.shape


def ndim(a: Any) -> int:
  return len(shape(a))


def size(a: Any, axis: int | None = None) -> int:
  s = shape(a)
  return int(np.prod(s)) if axis is None else s[axis]
