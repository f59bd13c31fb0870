"""The basic array constructors of jaxon.numpy: `array`, `asarray`, `full`, `zeros`, `ones`,
their `*_like` twins, `empty`, `copy`, and the shape queries `shape`, `ndim`, `size`.

Other jnp modules (indexing, creation) build on these, so this module imports only lax
and, for the `device=` arguments, device placement.
Weak types follow JAX: `array(1.0)` and `full(3, 1.0)` are weakly typed like the Python
scalar they come from (they adopt the dtype of the arrays they meet); an explicit `dtype`
makes the result strong. jaxon arrays are immutable, so `copy` arguments only decide
whether the input object itself may be returned.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import core, dtypes, sharding_impls, tree_util
from jaxon._src.devices import device_put
from jaxon._src.lax import lax, shape_ops
from jaxon._src.numpy import util
from jaxon._src.xla import client
from jaxon._src.xla.array import Array, copy_array, device_put_numpy

_OBJECT_DTYPE = np.dtype(object)


def _is_traced_or_array(x: Any) -> bool:
  """Arrays, tracers, and symbolic dimensions (traced values in shape-polymorphic code)."""
  return isinstance(x, (core.Tracer, Array)) or core.is_symbolic_dim(x)


def place(fun_name: str, out: Any, device: Any, out_sharding: Any = None) -> Any:
  """`out` committed to `device` (a Device or a Sharding; None leaves it where it was
  made). Under a trace `device_put` hands the tracer back (a NamedSharding becomes a
  sharding constraint), so inside `jit` the result stays where the program puts it, as
  JAX's creation functions ignore `device` there. `out_sharding` is JAX's keyword of that
  name (see `explicit_sharding.apply_out_sharding`)."""
  if out_sharding is not None:
    if device is not None:
      raise ValueError(f"jnp.{fun_name}: pass device or out_sharding, not both.")
    return util.out_sharded(out, out_sharding, fun_name)
  if device is None:
    return out
  if not isinstance(device, (client.Device, sharding_impls.Sharding)):
    raise ValueError(f"jnp.{fun_name}: device must be a Device or a Sharding, got "
                     f"{device!r}.")
  return device_put(out, device)


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = None,
          ndmin: int = 0, *, device: Any = None,
          out_sharding: Any = None) -> Any:
  """Creates an array from an array, a NumPy value, a scalar, or nested lists/tuples of
  those (which may contain traced values).

  Args:
    object: the value to convert.
    dtype: the result's dtype (canonicalized: float64 becomes float32 without x64); by
      default the value's own, with Python scalars weakly typed.
    copy: whether an Array argument gets a buffer of its own (arrays are immutable, so
      only deletion and donation can tell).
    order: accepted for NumPy compatibility.
    ndmin: the minimum rank; size-1 dimensions are prepended to reach it.
    device: a Device or a Sharding to commit the result to.

  Example: `jnp.array([[1, 2], [3, 4]], jnp.float32)` is a 2x2 float32 array.
  """
  weak_type = dtype is None and dtypes.is_weakly_typed(object)
  if dtype is not None:
    dtypes.check_user_dtype_supported(dtype, "array")
    dtype = dtypes.canonicalize_dtype(dtype)
  if _is_traced_or_array(object):
    out = lax._convert_element_type(object, dtype, weak_type)
    if copy and out is object and type(object) is Array:
      # a new buffer, so deleting (or donating) the copy leaves the original alive
      out = copy_array(object)
  elif any(_is_traced_or_array(x) for x in tree_util.tree_leaves(object)):
    out = _stack_nested(object, dtype)
  else:
    host = _host_array(object, dtype)
    if dtype is None and not isinstance(object, (np.ndarray, np.generic)):
      _check_python_int_range(host)
    out = device_put_numpy(host, weak_type=weak_type)
  if ndmin > np.ndim(out):
    out = lax.broadcast_in_dim(out, (1,) * (ndmin - np.ndim(out)) + np.shape(out),
                               range(ndmin - np.ndim(out), ndmin))
  return place("array", out, device, out_sharding)


def _host_array(object: Any, dtype: Any) -> np.ndarray:
  """`object` (no arrays or tracers inside) as a NumPy array. Where NumPy falls back to an
  object array, JAX's rules decide: None is rejected, and Python scalars too big for int64
  take the dtype JAX gives them (`[1.5, 2**70]` is float32; `2**70` overflows)."""
  host = np.array(object, dtype=dtype)
  if host.dtype != _OBJECT_DTYPE:
    return host
  leaves = tree_util.tree_leaves(object, is_leaf=lambda x: x is None)
  if any(x is None for x in leaves):
    raise ValueError(f"None is not a valid value for jnp.array, got {object!r}.")
  if dtype is None and leaves and all(dtypes.is_python_scalar(x) for x in leaves):
    if any(type(x) is int for x in leaves) and dtypes.result_type(*leaves).kind in "iu":
      _raise_python_int_overflow(max(leaves, key=abs), dtypes.default_int_dtype())
    host = np.array(object, dtype=dtypes.result_type(*leaves))
  if host.dtype == _OBJECT_DTYPE:
    raise TypeError(f"jnp.array cannot convert {type(object).__name__} of mixed or ragged "
                    "contents to an array")
  return host


def _raise_python_int_overflow(value: int, target: np.dtype) -> None:
  raise OverflowError(f"Python int {value} too large to convert to {target.name}")


def _check_python_int_range(host: np.ndarray) -> None:
  """Python ints that do not fit the default integer type (int32 without x64) raise, as in
  JAX, instead of wrapping around."""
  if host.dtype.kind not in "iu" or not host.size:
    return
  target = dtypes.default_int_dtype()
  info = np.iinfo(target)
  for value in (host.min(), host.max()):
    if not info.min <= int(value) <= info.max:
      _raise_python_int_overflow(int(value), target)


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


def asarray(a: Any, dtype: Any = None, order: str | None = None, copy: bool | None = None,
            *, device: Any = None,
            out_sharding: Any = None) -> Any:
  """Like `array`; an Array that already has the dtype (and placement) is returned as it
  is."""
  return array(a, dtype=dtype, copy=bool(copy), order=order, device=device,
               out_sharding=out_sharding)


def copy(a: Any, order: str | None = None) -> Any:
  """A copy of `a` as an array (immutable arrays never need one; for NumPy code)."""
  return array(a, copy=True, order=order)


def _creation_dtype(dtype: Any, fun_name: str = "zeros") -> np.dtype:
  dtypes.check_user_dtype_supported(dtype, fun_name)
  return dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
  """An array of `shape` filled with `fill_value` (a scalar, or an array broadcast to
  `shape`); the dtype is `fill_value`'s unless `dtype` is given. `device` (a Device or a
  Sharding) is where the result is committed.

  Example: `jnp.full((2, 3), 7, jnp.int8)`.
  """
  if np.ndim(fill_value) == 0:
    out = lax.full(shape, fill_value, dtype)
  else:
    out = _broadcast_to(asarray(fill_value, dtype), shape)
  return place("full", out, device, out_sharding)


def _broadcast_to(x: Any, shape: Any) -> Any:
  shape = tuple(shape) if np.ndim(shape) else (int(shape),)
  x_shape = np.shape(x)
  try:
    fits = lax.broadcast_shapes(x_shape, shape) == shape
  except ValueError:
    fits = False
  if not fits:
    raise ValueError(f"fill_value of shape {x_shape} cannot be broadcast to shape {shape}")
  return lax.broadcast_in_dim(x, shape, range(len(shape) - len(x_shape), len(shape)))


def zeros(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
  """An array of zeros (float32 by default)."""
  return place("zeros", lax.full(shape, 0, _creation_dtype(dtype)), device, out_sharding)


def ones(shape: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
  """An array of ones (float32 by default)."""
  return place("ones", lax.full(shape, 1, _creation_dtype(dtype, "ones")), device,
               out_sharding)


def empty(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
  """`zeros`: XLA has no uninitialized memory to hand out."""
  return place("empty", lax.full(shape, 0, _creation_dtype(dtype, "empty")), device,
               out_sharding)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None, out_sharding: Any = None) -> Any:
  """An array with `a`'s shape and dtype (weak type included) unless `shape` or `dtype`
  say otherwise, filled with `fill_value` (a scalar or an array broadcast to the shape).
  The result is committed to `device` if given; else a scalar fill is laid out as a
  committed `a` is (see `lax.full_like`), as JAX's."""
  if np.ndim(fill_value) == 0:
    out = lax.full_like(a, fill_value, dtype, shape)
  else:
    aval = core.get_aval(a)
    out = _broadcast_to(asarray(fill_value, aval.dtype if dtype is None else dtype),
                        aval.shape if shape is None else shape)
  return place("full_like", out, device, out_sharding)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
               out_sharding: Any = None) -> Any:
  return place("zeros_like", lax.full_like(a, 0, dtype, shape), device, out_sharding)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
              out_sharding: Any = None) -> Any:
  return place("ones_like", lax.full_like(a, 1, dtype, shape), device, out_sharding)


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *,
               device: Any = None) -> Any:
  """`zeros_like`: XLA has no uninitialized memory to hand out."""
  return place("empty_like", lax.full_like(prototype, 0, dtype, shape), device)


def shape(a: Any) -> tuple[int, ...]:
  return np.shape(a) if not _is_traced_or_array(a) else a.shape


def ndim(a: Any) -> int:
  return len(shape(a))


def size(a: Any, axis: int | None = None) -> int:
  s = shape(a)
  return int(np.prod(s)) if axis is None else s[axis]
