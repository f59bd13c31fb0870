"""jaxon.random's keys and raw bits, and the argument handling every sampler shares.

Two kinds of keys are accepted everywhere, as in JAX:

* typed key arrays, `key(seed)`: dtype `key<fry>`, any shape (`split(key(0), 4)` has shape
  (4,)), printed as `Array((), dtype=key<fry>) overlaying: [0 0]` (see `prng_keys.py`);
* raw keys, `PRNGKey(seed)`: their uint32 data, shape (..., 2).

Every function turns a raw key into a typed one (`random_wrap` in a jaxpr) and works on
typed keys; `split` and `fold_in` give raw keys back for raw keys. Functions never update a
key: `split` and `fold_in` derive new ones. The samplers (`random_continuous.py`,
`random_discrete.py`, `random_loops.py`) turn `random_bits` into their distributions with
JAX's transforms, so a key gives JAX's numbers bit for bit, in both bit layouts of the
flag `jax_threefry_partitionable`.

The samplers are compiled per shape and dtype with `jit`, as JAX does, so eager calls run
one executable; the key operations are single primitives.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src.lax.sharding_constraint import takes_out_sharding
from jaxon._src import api, core, dtypes, prng_keys
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import lax_numpy

Array = Any
KeyArray = Any
Shape = Sequence[int]

UINT_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

# ----------------------------------------------------------------------------- helpers


def _jit(*static_argnums: int) -> Callable[[Callable], Callable]:
  """`jit` with `static_argnums`, as a decorator (jit's cache already keys on the flags
  that change what a sampler traces to: the bit layout, 64-bit mode)."""
  return functools.partial(api.jit, static_argnums=static_argnums)


def _is_typed_key(x: Any) -> bool:
  aval = getattr(x, "aval", None)
  return aval is not None and prng_keys.is_key_dtype(aval.dtype)


def _check_prng_key(name: str, key: Any, allow_batched: bool = False
                    ) -> tuple[KeyArray, bool]:
  """(`key` as a typed key array, whether it came as raw key data), after checking it; a
  batch of keys only if `allow_batched`."""
  if _is_typed_key(key):
    typed, wrapped = key, False
  else:
    if not isinstance(key, (core.Tracer, np.ndarray)) and not hasattr(key, "aval"):
      raise TypeError(f"{name}: `key` must be a PRNG key, a key array of jaxon.random.key "
                      f"or the uint32 key data of jaxon.random.PRNGKey; got "
                      f"{type(key).__name__}.")
    aval = core.get_aval(key)
    try:
      prng_keys.check_key_data(aval, prng_keys.threefry_prng_impl)
    except TypeError as e:
      raise TypeError(f"{name}: `key` must be a PRNG key, a key array of jaxon.random.key "
                      f"or the uint32 key data of jaxon.random.PRNGKey; got an array of "
                      f"type {aval.str_short()}. {e}") from None
    typed, wrapped = prng_keys.random_wrap(key, prng_keys.threefry_prng_impl), True
  if not allow_batched and typed.ndim:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{np.shape(key)} != (). Use jaxon.vmap for batching.")
  return typed, wrapped


def _check_key(name: str, key: Any) -> KeyArray:
  """A single key (typed or raw) as a typed key: what every sampler works on."""
  return _check_prng_key(name, key)[0]


def _return_keys(wrapped: bool, keys: KeyArray) -> KeyArray:
  """Keys in the kind the caller gave: raw key data for raw keys."""
  return prng_keys.random_unwrap(keys) if wrapped else keys


def _shape(name: str, shape: Any, arg: str = "shape") -> tuple[int, ...]:
  """A tuple of non-negative Python ints, from an int or a sequence of ints."""
  if lax_utils.is_plain_shape(shape):
    return shape
  dims = (shape,) if isinstance(shape, (int, np.integer)) or np.ndim(shape) == 0 else shape
  context = f"The `{arg}` argument of jaxon.random.{name} must be concrete (static)."
  try:
    out = tuple(core.concrete_or_error(operator.index, d, context) for d in dims)
  except core.ConcretizationTypeError:
    raise
  except TypeError:
    raise TypeError(f"{name}: `{arg}` must be a sequence of concrete integers, got "
                    f"{shape!r}.") from None
  if any(d < 0 for d in out):
    raise ValueError(f"{name}: `{arg}` must have non-negative sizes, got {out}.")
  return out


def _dtype(name: str, dtype: Any, kind: type, what: str) -> np.dtype:
  """`dtype` canonicalized (64-bit types need x64), after checking it is of `kind`."""
  dt = dtypes.canonicalize_dtype(dtype)
  if not dtypes.issubdtype(dt, kind):
    raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt.name}.")
  return dt


def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: Shape) -> None:
  """Parameters must broadcast to exactly the requested `shape`."""
  if not any(param_shapes):  # scalars, the usual parameters, broadcast to every shape
    return
  try:
    result = lax.broadcast_shapes(shape, *param_shapes)
  except ValueError:
    result = None
  if result != shape:
    raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                     f"argument, and the result of broadcasting the shapes must equal the "
                     f"shape argument, but got {'no result' if result is None else result} "
                     f"from parameter shapes {list(param_shapes)} for shape argument {shape}.")


def _result_shape(name: str, shape: tuple[int, ...] | None, *params: Any) -> tuple[int, ...]:
  """`shape` after checking that the parameters broadcast to it; by default, the
  parameters' broadcast shape."""
  param_shapes = [np.shape(p) for p in params]
  if shape is None:
    return lax.broadcast_shapes(*param_shapes)
  _check_shape(name, shape, *param_shapes)
  return shape


def _sampler_args(name: str, key: Any, shape: Any, dtype: Any, kind: type = np.floating,
                  what: str = "a float") -> tuple[KeyArray, tuple[int, ...] | None, np.dtype]:
  """The checked key, shape (None stays None: the parameters' shape) and dtype of a
  sampler's public call."""
  key = _check_key(name, key)
  dtype = _dtype(name, dtype, kind, what)
  return key, None if shape is None else _shape(name, shape), dtype


def _broadcast_to_rank(x: Any, rank: int) -> Any:
  x_shape = np.shape(x)
  return shape_ops.reshape(x, (1,) * (rank - len(x_shape)) + x_shape)


def _split(key: KeyArray, num: int = 2) -> list[KeyArray]:
  """`num` keys from the typed key `key`, as separate key arrays."""
  keys = prng_keys.random_split(key, (num,))
  return [slicing.index_in_dim(keys, i, keepdims=False) for i in range(num)]


def _random_bits(key: KeyArray, bit_width: int, shape: tuple[int, ...]) -> Array:
  return prng_keys.random_bits(key, bit_width, shape)


# ----------------------------------------------------------------------------- keys


def _seed_key(name: str, seed: Any, impl: Any) -> KeyArray:
  """A typed key from an integer seed (JAX's `key` and `PRNGKey`)."""
  impl = prng_keys.resolve_impl(impl)
  if _is_typed_key(seed):
    raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape "
                    f"{np.shape(seed)} != (). Use jaxon.vmap for batching (a PRNG key seed "
                    f"must be a scalar).")
  if isinstance(seed, int):
    seed = np.int64(seed)  # with 64-bit types off, wraps to its low 32 bits
  seed = lax_numpy.asarray(seed)
  if not dtypes.is_integer(seed.dtype):
    raise TypeError(f"PRNG key seed must be an integer; got {seed.aval.str_short()}.")
  return prng_keys.random_seed(seed, impl)


def _impl_or_dtype(name: str, impl: Any, dtype: Any) -> Any:
  """JAX's newer `dtype=` (a key dtype, or a PRNG's name) stands for `impl`."""
  if dtype is None:
    return impl
  if impl is not None:
    raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to "
                     f"jax.random.{name}")
  return dtype


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> KeyArray:
  """A typed PRNG key (shape (), dtype key<fry>) from an integer seed.

  Args:
    seed: a Python or NumPy integer, or an integer scalar array (may be traced). Python ints
      go through int64 first, so with 64-bit types off a seed wraps to its low 32 bits.
    impl: None or "threefry2x32".
    dtype: the keys' dtype (`key_dtype()`) or its PRNG's name, instead of `impl`.

  Example:
    >>> key(0)
    Array((), dtype=key<fry>) overlaying:
    [0 0]
  """
  return _seed_key("key", seed, _impl_or_dtype("key", impl, dtype))


def PRNGKey(seed: Any, *, impl: Any = None) -> KeyArray:  # noqa: N802 (JAX's name)
  """A raw PRNG key (uint32[2]) from an integer seed: the data of `key(seed)`, the seed's
  bits 32-63 and 0-31 (the first word is 0 for 32-bit seeds).

  Example:
    >>> PRNGKey(0)
    Array([0, 0], dtype=uint32)
  """
  return prng_keys.random_unwrap(_seed_key("PRNGKey", seed, impl))


def key_data(keys: KeyArray) -> Array:
  """The uint32 data of `keys`, shape (*keys.shape, 2); raw keys are their own data."""
  return prng_keys.random_unwrap(_check_prng_key("key_data", keys, allow_batched=True)[0])


def wrap_key_data(key_bits_array: Array, *, impl: Any = None, dtype: Any = None
                  ) -> KeyArray:
  """Typed keys from their uint32 data (shape (..., 2)): the inverse of `key_data`, with
  the keys' PRNG given by `impl` or by their `dtype` (`key_data(k)` and `k.dtype`)."""
  impl = prng_keys.resolve_impl(_impl_or_dtype("wrap_key_data", impl, dtype))
  if _is_typed_key(key_bits_array):
    raise TypeError("wrap_key_data takes uint32 key data, but was given typed PRNG keys; "
                    "they are already wrapped (key_data unwraps them).")
  data = lax_numpy.asarray(key_bits_array)
  prng_keys.check_key_data(data.aval, impl)
  return prng_keys.random_wrap(data, impl)


def key_impl(keys: KeyArray) -> str:
  """The name of the PRNG of `keys` ("threefry2x32", the default, for raw keys)."""
  if _is_typed_key(keys):
    return keys.dtype.impl.name
  _check_prng_key("key_impl", keys, allow_batched=True)
  return prng_keys.threefry_prng_impl.name


def key_dtype(impl_spec: Any = None) -> prng_keys.KeyTy:
  """The dtype of typed keys of the PRNG `impl_spec` (None: the default, threefry2x32),
  e.g. to declare a key input with `ShapeDtypeStruct((), key_dtype())`.

  Example:
    >>> key_dtype()
    key<fry>
  """
  return prng_keys.KeyTy(prng_keys.resolve_impl(impl_spec))


def clone(key: KeyArray) -> KeyArray:
  """A copy of `key` (the identity: JAX's clone only matters for its key-reuse checker)."""
  keys, wrapped = _check_prng_key("clone", key, allow_batched=True)
  return _return_keys(wrapped, prng_keys.random_clone(keys))


def split(key: KeyArray, num: int | Shape = 2) -> KeyArray:
  """New keys derived from `key`, statistically independent of it and of each other.

  Args:
    key: a PRNG key (typed or raw).
    num: how many keys, or the shape of the array of keys.

  Returns:
    Keys of shape (num,) (or `num`): typed keys for a typed key, raw key data (shape
    (num, 2)) for a raw key.

  Example:
    >>> k1, k2 = split(key(0))
  """
  typed, wrapped = _check_prng_key("split", key)
  return _return_keys(wrapped, prng_keys.random_split(typed, _shape("split", num, "num")))


def fold_in(key: KeyArray, data: Any) -> KeyArray:
  """A new key from `key` and the integer `data` (taken as uint32): a way to derive keys
  from step numbers or indices.

  Example:
    >>> step_key = fold_in(key(0), 7)
  """
  typed, wrapped = _check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                    f"{np.shape(data)}. Use jaxon.vmap for batching.")
  if isinstance(data, int):
    data = np.asarray(data, np.uint32)  # OverflowError outside [0, 2**32)
  return _return_keys(wrapped, prng_keys.random_fold_in(typed, data))


@takes_out_sharding
def bits(key: KeyArray, shape: Shape = (), dtype: Any = None) -> Array:
  """Uniformly random unsigned integers (all bits random).

  Args:
    key: a PRNG key.
    shape: the shape of the result.
    dtype: an unsigned integer dtype; default uint32 (uint64 with 64-bit types on).

  Example:
    >>> bits(key(0), (2,)).dtype
    dtype('uint32')
  """
  key = _check_key("bits", key)
  dtype = _dtype("bits", np.uint64 if dtype is None else dtype, np.unsignedinteger,
                 "an unsigned int")
  return _random_bits(key, dtype.itemsize * 8, _shape("bits", shape))
