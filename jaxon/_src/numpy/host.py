"""The host-side corner of jaxon.numpy: printing (`array_repr`, `array_str`, print
options), arrays from host data (`frombuffer`, `fromstring`, `fromiter`, `from_dlpack`),
files (`load`, `save`, `savez`) and `iterable`.

These read or write host memory, so they run eagerly: NumPy does the work and the result
is put on the device. Print options are NumPy's own, since jaxon prints through NumPy.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src.devices import device_put
from jaxon._src.numpy import lax_numpy

printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
iterable = np.iterable
save = np.save
savez = np.savez


def array_repr(arr: Any, max_line_width: int | None = None, precision: int | None = None,
               suppress_small: bool | None = None) -> str:
  """NumPy's `repr` of the array's values (`array([1., 2.], dtype=float32)`)."""
  return np.array_repr(np.asarray(arr), max_line_width, precision, suppress_small)


def array_str(a: Any, max_line_width: int | None = None, precision: int | None = None,
              suppress_small: bool | None = None) -> str:
  """NumPy's `str` of the array's values (`[1. 2.]`)."""
  return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
  """An array of the bytes of `buffer` (a `bytes` object or anything with the buffer
  protocol) read as `dtype`: `count` items (-1: all) from byte `offset`.

  Example: `jnp.frombuffer(b'\\x01\\x02', dtype=jnp.uint8)` is `[1, 2]`.
  """
  return lax_numpy.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
  """An array of the numbers written in `string`, separated by `sep`.

  Example: `jnp.fromstring('1 2 3', dtype=int, sep=' ')` is `[1, 2, 3]`.
  """
  return lax_numpy.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def _impure(name: str) -> NotImplementedError:
  return NotImplementedError(
      f"jnp.{name}() is not provided, as in JAX: reading an iterator or a file is a side "
      f"effect, which a traced function performs once, at tracing, and never again. Read "
      f"the data first with jnp.asarray(np.{name}(...)), outside the transformed function.")


def fromiter(*args: Any, **kwargs: Any) -> Any:
  """Not provided (as in JAX): see `_impure`."""
  raise _impure("fromiter")


def fromfile(*args: Any, **kwargs: Any) -> Any:
  """Not provided (as in JAX): see `_impure`."""
  raise _impure("fromfile")


# The element types DLPack exchanges (JAX's list): no float8, no sub-byte integers.
_DLPACK_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, dtypes.bfloat16, np.float32, np.float64, np.complex64,
    np.complex128))


def is_supported_dtype(dtype: Any) -> bool:
  """Whether arrays of `dtype` can go through DLPack."""
  return np.dtype(dtype) in _DLPACK_DTYPES


def from_dlpack(external_array: Any, *, device: Any = None, copy: bool | None = None
                ) -> Any:
  """An array from an object that exports DLPack (`__dlpack__`), such as a NumPy array on
  the CPU. NumPy imports it (sharing memory unless `copy=True`) and the result is put on
  `device` (the default device if None), with the dtype canonicalized as for any host
  value (float64 becomes float32 without x64)."""
  x = external_array
  if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
    raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                    f"__dlpack_device__ methods; got {type(x).__name__}.")
  host = np.from_dlpack(x, copy=copy)
  out = lax_numpy.asarray(host)
  return out if device is None else device_put(out, device)


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
  """`numpy.load`, with a saved array coming back as a jaxon array. NumPy writes bfloat16
  as raw 2-byte records ('V2'), so those are read back as bfloat16."""
  out = np.load(file, *args, **kwargs)
  if not isinstance(out, np.ndarray):
    return out
  if out.dtype == np.dtype("V2"):
    out = out.view(dtypes.bfloat16)
  try:
    return lax_numpy.asarray(out)
  except TypeError:  # object arrays, structured dtypes: NumPy's value is the answer
    return out
