"""`Array`: a value that lives on the device, computed by an XLA executable.

An Array wraps jaxlib's C++ buffer (`ArrayImpl`) together with its abstract value. Data
reaches the host only when asked (`np.asarray`, `print`, `.item()`, `float()`); on the CPU
the host view is zero-copy and cached. Operators and methods (`+`, `[]`, `.sum()`) are
installed by `jaxon.numpy`, the layer that defines them for tracers too.
"""
from __future__ import annotations

import operator
import threading
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np
from jaxlib import _jax

from jaxon._src import config_guards, core, dtypes
from jaxon._src.config import x64_enabled
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.xla import client


def _host_view(buf: _jax.ArrayImpl, aval: ShapedArray | None = None) -> np.ndarray:
  """A zero-copy NumPy view of a CPU buffer. jaxlib's own conversion tries to import `jax`
  on every call when it is not installed, and the failed import costs 150 µs or more; the
  buffer protocol gives the same view (holding the buffer the same way) in about 10 µs. It
  covers NumPy's own dtypes; bfloat16 and the float8 types take jaxlib's path. A buffer
  over several devices (of `aval`) is assembled from its blocks; so is one with a single
  block here and others on other processes' devices (which raises, as in JAX)."""
  try:
    return np.asarray(memoryview(buf))
  except BufferError:
    if (aval is not None and buf._sharding is not client.default_sharding()
        and (len(buf._arrays) > 1
             or not buf._sharding._internal_device_list.is_fully_addressable)):
      return _layout.host_value(buf, aval)
    return buf._single_device_array_to_np_array_did_copy()[0]


class _ValueReads(threading.local):
  """The Arrays whose values (`Array._value`, the one way to the host data) the thread
  reads while an eager plan is recorded (`eager_plans.py`); None at other times."""
  arrays: list | None = None


value_reads = _ValueReads()


class _Placements:
  """Whether an Array placed off the default device may exist: set once the first layout
  other than the default device's is made (`sharded.runtime_sharding`). Until then an
  eager operation runs its executable on the default device without asking where its
  operands are; after, it asks first, since running one there on an operand elsewhere
  fails with an error that XLA also logs."""
  seen = False


placements = _Placements()


def note_placed() -> None:
  placements.seen = True


def on_the_default_device(bufs: Iterable[_jax.ArrayImpl]) -> bool:
  return {*map(_placement_of, bufs)} <= {client.default_sharding()}


_placement_of = operator.attrgetter("_sharding")


class _ArrayMeta(type):
  """Makes `isinstance(x, jaxon.Array)` true of tracers of arrays too, as JAX's `Array` is
  (libraries test it to accept traced values). An exact Array never reaches
  `__instancecheck__`: Python answers `type(x) is cls` first, so hot paths pay nothing;
  code that needs a concrete Array tests `type(x) is Array`."""

  def __instancecheck__(cls, obj: Any) -> bool:
    return type.__instancecheck__(cls, obj) or (
        isinstance(obj, core.Tracer) and isinstance(obj.aval, ShapedArray))


class Array(metaclass=_ArrayMeta):
  """An array on the device: the result of every jaxon computation.

  An eager operation's result may be *pending* (see `deferred.py`): it has its aval but
  not yet its buffer, and `_pending` says which recorded operation computes it. Reading
  `_buf` (which every use of the data does) runs the pending operations first.
  """

  # `_dispatch_leaf`: what jaxlib's C++ jit sees of the Array (see `xla/cpp_dispatch.py`),
  # made on first use.
  __slots__ = ("aval", "_buf", "_npy", "_pending", "_dispatch_leaf", "__weakref__")
  __array_priority__ = 100

  def __init__(self, aval: ShapedArray, buf: _jax.ArrayImpl):
    self.aval = aval
    self._buf = buf
    self._npy = None
    self._pending = None

  @classmethod
  def pending(cls, aval: ShapedArray, pending: tuple) -> Array:
    self = object.__new__(cls)
    self.aval = aval
    self._npy = None
    self._pending = pending
    return self

  def _set_buffer(self, buf: _jax.ArrayImpl) -> None:
    self._buf = buf
    self._pending = None

  def __getattr__(self, name: str) -> Any:
    """Only reached for `_buf` of a pending Array and for `_dispatch_leaf` not yet made
    (slots that are set never get here)."""
    if name == "_buf" and self._pending is not None:
      _materialize(self)
      return self._buf
    if name == "_dispatch_leaf":
      # The device buffer, for jaxlib's signature. A key Array's buffer holds its physical
      # data, whose signature another Array could have: it is wrapped with its key type.
      dtype = self.aval.dtype
      self._dispatch_leaf = (self._buf if isinstance(dtype, np.dtype)
                             else KeyData(self._buf, dtype))
      return self._dispatch_leaf
    raise AttributeError(f"'Array' object has no attribute {name!r}")

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)
  itemsize = property(lambda self: self.aval.dtype.itemsize)
  nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

  @property
  def _value(self) -> np.ndarray:
    """The host copy (a read-only zero-copy view on the CPU), fetched once. For an
    extended dtype (keys), the physical data: uint32 with the element shape appended. An
    Array spread over several devices is assembled from its blocks."""
    if value_reads.arrays is not None:
      value_reads.arrays.append(self)
    if self._npy is None:
      _sync_point()
      self._check_if_deleted()
      value = _host_view(self._buf, self.aval)
      value.flags.writeable = False
      self._npy = value
    return self._npy

  def _numpy_value(self) -> np.ndarray:
    """The host copy, refused for keys: their data is reached through `key_data`."""
    if dtypes.is_extended(self.aval.dtype):
      raise TypeError(f"A jaxon array with dtype {self.aval.dtype} (PRNG keys) cannot be "
                      "converted to a NumPy array. Use jaxon.random.key_data(arr) if you "
                      "wish to extract the underlying integer array.")
    return self._value

  def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    value = self._numpy_value()
    if dtype is not None and np.dtype(dtype) != value.dtype:
      return value.astype(dtype)
    return value.copy() if copy else value

  def block_until_ready(self) -> Array:
    _sync_point()
    self._buf.block_until_ready()
    return self

  def is_ready(self) -> bool:
    return self._buf.is_ready()

  def copy_to_host_async(self) -> None:
    self._buf._copy_single_device_array_to_host_async()

  def delete(self) -> None:
    _flush()  # pending operations may read this Array
    self._buf.delete()
    self._npy = None

  def is_deleted(self) -> bool:
    return self._buf.is_deleted()

  def _check_if_deleted(self) -> None:
    if self._buf.is_deleted():
      raise RuntimeError(f"Array has been deleted with shape="
                         f"{self.aval.str_short(short_dtypes=False)}.")

  # Where the data is: the layout module (`sharding_impls`, above this layer) answers.
  sharding = property(lambda self: _layout.sharding_of(self))
  is_fully_addressable = property(lambda self: self.sharding.is_fully_addressable)
  is_fully_replicated = property(lambda self: self.sharding.is_fully_replicated)
  committed = property(lambda self: self._buf._sharding is not client.default_sharding())

  def devices(self) -> set[client.Device]:
    return set(self.sharding.device_set)

  def platform(self) -> str:
    """The platform of the devices the Array is on ('cpu', 'gpu')."""
    return next(iter(self.sharding.device_set)).platform

  @property
  def device(self) -> client.Device:
    devices = self.sharding._device_assignment
    if len(devices) != 1:
      raise ValueError("Length of devices is greater than 1. Please use `.devices()`.")
    return devices[0]

  @property
  def addressable_shards(self) -> list[Shard]:
    """Each block of the Array on a device of this process, with its index in the whole
    (an Array on one device is its own only shard)."""
    return _layout.shards_of(self)

  global_shards = addressable_shards

  def addressable_data(self, index: int) -> Array:
    shards = self.addressable_shards
    if not -len(shards) <= index < len(shards):
      count = "one shard" if len(shards) == 1 else f"{len(shards)} addressable shards"
      raise IndexError(f"addressable_data: index {index} out of range: the Array has {count}.")
    return shards[index].data

  def on_device_size_in_bytes(self) -> int:
    return self._buf.on_device_size_in_bytes()

  def unsafe_buffer_pointer(self) -> int:
    return self._buf.unsafe_buffer_pointer()

  def item(self, *args: Any) -> Any:
    return self._numpy_value().item(*args)

  def tolist(self) -> Any:
    return self._numpy_value().tolist()

  def __len__(self) -> int:
    if not self.aval.shape:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]

  def _scalar(self, kind: type, what: str) -> Any:
    if self.size != 1:
      raise TypeError(f"only length-1 arrays can be converted to Python scalars with "
                      f"{what}(); this array has shape {self.shape}")
    return kind(self._numpy_value().reshape(()))

  def __bool__(self) -> bool:
    if dtypes.is_extended(self.aval.dtype):
      raise TypeError("key array cannot be converted to boolean.")
    if self.size != 1:
      raise ValueError(f"The truth value of an array with shape {self.shape} is ambiguous. "
                       "Use a.any() or a.all().")
    return bool(self._value.reshape(()))

  def __int__(self) -> int:
    return self._scalar(int, "int")

  def __float__(self) -> float:
    return self._scalar(float, "float")

  def __complex__(self) -> complex:
    return self._scalar(complex, "complex")

  def __index__(self) -> int:
    if not dtypes.is_integer(self.dtype) or self.shape:
      raise TypeError(f"only integer scalar arrays can be converted to a scalar index, got "
                      f"{self.aval.str_short()}")
    return int(self._value)

  def __hash__(self) -> int:
    raise TypeError("unhashable type: 'Array'. Arrays are mutable-looking values; to use one "
                    "as a static argument or dict key, convert it with .item() or tuple().")

  def __setitem__(self, idx: Any, value: Any) -> None:
    raise TypeError("jaxon arrays are immutable and do not support in-place item "
                    "assignment. Instead of x[idx] = y, use x = x.at[idx].set(y).")

  def __repr__(self) -> str:
    if dtypes.is_extended(self.aval.dtype):
      return self._extended_str()
    prefix = "Array("
    weak = ", weak_type=True" if self.weak_type else ""
    dtype_str = f"dtype={self.dtype.name}{weak})"
    line_width = np.get_printoptions()["linewidth"]
    if self.size == 0:
      body = f"[], shape={self.shape}"
    else:
      body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ",
                             max_line_width=line_width)
    # JAX's layout, quirk included: when the dtype does not fit on the last line it still
    # goes there, after a prefix-wide gap.
    last_line = len(body) - body.rfind("\n") + 1
    sep = " " * len(prefix) if last_line + len(dtype_str) + 1 > line_width else " "
    return f"{prefix}{body},{sep}{dtype_str}"

  def _extended_str(self) -> str:
    """JAX's form for keys, which `str` shares: the logical shape and dtype, then the
    physical data ("Array((2,), dtype=key<fry>) overlaying:" and the uint32 words)."""
    return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._value}"

  def __str__(self) -> str:
    if dtypes.is_extended(self.aval.dtype):
      return self._extended_str()
    return str(self._value)

  def __format__(self, spec: str) -> str:
    if dtypes.is_extended(self.aval.dtype):
      return format(self._extended_str(), spec)
    return format(self._value.reshape(()) if self.ndim == 0 else self._value, spec)

  def __reduce__(self) -> tuple:
    if dtypes.is_extended(self.aval.dtype):  # keys: their physical data and their aval
      return (_reconstruct_extended, (np.asarray(self._value), self.aval))
    return (_reconstruct, (np.asarray(self._value), self.weak_type))

  def __dlpack__(self, *args: Any, **kw: Any) -> Any:
    return self._value.__dlpack__(*args, **kw)

  def __dlpack_device__(self) -> tuple[int, int]:
    return self._value.__dlpack_device__()


class KeyData:
  """A key Array's buffer as jaxlib's C++ jit sees it: a node whose data is the key type,
  which the call's signature compares."""

  __slots__ = ("buf", "dtype")

  def __init__(self, buf: _jax.ArrayImpl, dtype: Any):
    self.buf, self.dtype = buf, dtype


class Shard(NamedTuple):
  """A piece of an Array on one device, as `Array.addressable_shards` lists them."""
  device: Any
  index: tuple[slice, ...]
  replica_id: int
  data: Array


def _unset(*args: Any) -> None:
  raise RuntimeError("jaxon's deferred eager dispatch is not loaded")


class _NoLayout:
  """Stands in until the sharding layer installs itself (importing jaxon does)."""
  sharding_of = shards_of = host_value = staticmethod(_unset)


_layout: Any = _NoLayout


def set_layout(layout: Any) -> None:
  """Installs what answers where an Array's data is (`sharding_of`, `shards_of`,
  `host_value`): the sharding layer, above this module."""
  global _layout
  _layout = layout


_materialize: Any = _unset
_flush: Any = _unset
_sync_point: Any = _unset


def set_materializer(materialize: Any, flush: Any, sync_point: Any) -> None:
  """Installs the eager dispatcher's hooks: it lives above this module (it compiles).
  `sync_point` is told of each host read and wait, where eager code's windows end."""
  global _materialize, _flush, _sync_point
  _materialize, _flush, _sync_point = materialize, flush, sync_point


def copy_array(x: Array) -> Array:
  """`x` in a device buffer of its own, laid out where `x` is (for keys, a copy of their
  physical data). The copy keeps the buffer's C++ sharding object, so one on the default
  device is still recognised as there."""
  x._check_if_deleted()  # (jaxlib's copy of a deleted buffer crashes the process)
  buf = x._buf
  copy, = _jax.batched_copy_array_to_devices_with_sharding(
      [buf], [buf._sharding._internal_device_list], [buf._sharding],
      [_jax.ArrayCopySemantics.ALWAYS_COPY])
  return Array(x.aval, copy)


def _reconstruct(value: np.ndarray, weak_type: bool) -> Array:
  return device_put_numpy(value, weak_type=weak_type)


def _reconstruct_extended(physical: np.ndarray, aval: ShapedArray) -> Array:
  return Array(intern_aval(aval), device_put_numpy(physical)._buf)


def device_put_numpy(value: Any, dtype: Any = None, weak_type: bool = False,
                     copy: bool = True) -> Array:
  """Places a NumPy value on the device as an Array of the canonical dtype."""
  dtype = dtypes.canonicalize_dtype(value.dtype if dtype is None else dtype)
  host = np.asarray(value, dtype=dtype)
  aval = intern_aval(ShapedArray(host.shape, dtype, weak_type))
  config_guards.check_host_to_device(aval, client.local_devices()[0])
  semantics = (_jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL if copy
               else _jax.HostBufferSemantics.ZERO_COPY)
  buf = _jax.batched_device_put(aval, client.default_sharding(), [host],
                                [client.local_devices()[0]], True, False, semantics,
                                enable_x64=x64_enabled())
  return Array(aval, buf)


# Device copies of scalar constants, keyed by their bytes, dtype and weak type: the bytes
# (not the Python value) keep 0.0 and -0.0 apart, and let NaNs hit. Bounded by starting over.
_scalar_constants: dict[tuple[bytes, np.dtype, bool], Array] = {}
_MAX_SCALAR_CONSTANTS = 1024


def scalar_constant(value: Any, dtype: np.dtype, weak_type: bool) -> Array:
  """A 0-d Array holding `value` (a Python or NumPy scalar) converted to the canonical
  `dtype` as `lax.convert_element_type` converts constants (NumPy's casting, the real part
  of a complex); the same Array is returned again for the same constant.

  Eager code like `x * 2.0` would otherwise copy the scalar to the device on every
  operation, which costs more than the operation itself. Sharing is safe because Arrays
  are immutable; one that was deleted is replaced.
  """
  # Python ints and nonzero floats are their own keys (0.0 == -0.0, which differ).
  quick = type(value) in (int, float) and value != 0
  if quick:
    arr = _python_scalar_constants.get((value, type(value), dtype, weak_type))
    if arr is not None and not arr._buf.is_deleted():
      return arr
  host = np.asarray(value)
  if host.dtype.kind == "c" and dtype.kind != "c":
    host = host.real
  host = host.astype(dtype)
  key = (host.tobytes(), dtype, weak_type)
  arr = _scalar_constants.get(key)
  if arr is None or arr._buf.is_deleted():
    if len(_scalar_constants) >= _MAX_SCALAR_CONSTANTS:
      _scalar_constants.clear()
    with config_guards.explicit_transfer():  # cached, so guarding it would be erratic
      arr = _scalar_constants[key] = device_put_numpy(host, dtype, weak_type)
  if quick:
    if len(_python_scalar_constants) >= _MAX_SCALAR_CONSTANTS:  # NaNs are new keys each
      _python_scalar_constants.clear()
    _python_scalar_constants[(value, type(value), dtype, weak_type)] = arr
  return arr


_python_scalar_constants: dict[tuple[Any, type, np.dtype, bool], Array] = {}


# One ShapedArray object per distinct aval, for the Arrays of the runtime: cache keys made
# of avals (eager dispatch, jit signatures) then compare equal by identity, which Python
# checks before calling ShapedArray.__eq__. Bounded by starting over.
_interned_avals: dict[ShapedArray, ShapedArray] = {}
_MAX_INTERNED_AVALS = 4096


def intern_aval(aval: ShapedArray) -> ShapedArray:
  if len(_interned_avals) >= _MAX_INTERNED_AVALS:
    _interned_avals.clear()
  return _interned_avals.setdefault(aval, aval)


core.register_aval_handler(Array, lambda x: x.aval)
pe.register_literal_type(Array)
