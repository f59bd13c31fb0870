"""jaxon.random: JAX's functional pseudo-random numbers, bit for bit.

A key is a uint32 array of shape (2,), as `PRNGKey(seed)` makes it (JAX's "raw" keys).
Functions never update a key: `split` and `fold_in` derive new ones. Every sampler turns
`threefry_random_bits` (see `prng.py`) into its distribution with the same transforms as
JAX, so the same key gives JAX's numbers, in both bit layouts of the flag
`jax_threefry_partitionable`.

Typed key arrays (`jax.random.key` returning a `key<fry>` dtype) are not supported: `key`
returns the same raw uint32[2] key as `PRNGKey`, `key_data` returns raw keys unchanged and
`wrap_key_data` only checks its argument. The numbers are the same as JAX's for typed keys,
whose data is exactly these words.

The samplers are compiled per shape and dtype with `jit`, as JAX does, so eager calls run
one executable. jaxon's jit cache does not see configuration flags, so these internal jits
take the flags that change what is traced as a static argument (`_jit`).

The samplers JAX draws in loops (`gamma` and the distributions built on it, `poisson`,
`binomial`, `multinomial`) are in `random_loops.py`.
"""
from __future__ import annotations

import functools
import math
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import api, core, dtypes, prng
from jaxon._src.interpreters.ad import stop_gradient
from jaxon._src.lax import lax, shape_ops, slicing, sorting
from jaxon._src.numpy import creation, lax_numpy, linalg, reductions, searching, ufuncs
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy import util as np_util
from jaxon._src.numpy.einsum import einsum

Array = Any
KeyArray = Any
Shape = Sequence[int]

_UINT_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

# ----------------------------------------------------------------------------- helpers


def _jit(*static_argnums: int) -> Callable[[Callable], Callable]:
  """`jit` with `static_argnums`, as a decorator (jit's cache already keys on the flags
  that change what a sampler traces to: the bit layout, 64-bit mode)."""
  return functools.partial(api.jit, static_argnums=static_argnums)


def _check_key(name: str, key: Any, batched: bool = False) -> Array:
  """`key` as an array, after checking that it is a key (a stack of keys if `batched`)."""
  if not isinstance(key, (core.Tracer, np.ndarray)) and not hasattr(key, "aval"):
    raise TypeError(f"{name}: `key` must be a PRNG key, a uint32 array of shape (2,) made by "
                    f"jaxon.random.PRNGKey(seed) or split(key); got {type(key).__name__}.")
  aval = core.get_aval(key)
  if aval.dtype != np.uint32 or aval.shape[-1:] != (2,):
    raise TypeError(f"{name}: `key` must be a PRNG key, a uint32 array of shape (2,) made by "
                    f"jaxon.random.PRNGKey(seed) or split(key); got an array of type "
                    f"{aval.str_short()}.")
  if not batched and aval.ndim != 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{aval.shape[:-1]} != (). Use jaxon.vmap for batching.")
  return lax.asarray(key)


def _shape(name: str, shape: Any, arg: str = "shape") -> tuple[int, ...]:
  """A tuple of non-negative Python ints, from an int or a sequence of ints."""
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
                  what: str = "a float") -> tuple[Array, tuple[int, ...] | None, np.dtype]:
  """The checked key, shape (None stays None: the parameters' shape) and dtype of a
  sampler's public call."""
  key = _check_key(name, key)
  dtype = _dtype(name, dtype, kind, what)
  return key, None if shape is None else _shape(name, shape), dtype


def _broadcast_to_rank(x: Any, rank: int) -> Any:
  x_shape = np.shape(x)
  return shape_ops.reshape(x, (1,) * (rank - len(x_shape)) + x_shape)


def _split(key: KeyArray, num: int = 2) -> list[KeyArray]:
  keys = prng.threefry_split(key, (num,))
  return [slicing.index_in_dim(keys, i, keepdims=False) for i in range(num)]


def _check_impl(impl: Any) -> None:
  if impl not in (None, "threefry2x32"):
    raise ValueError(f"`impl` must be None or 'threefry2x32' (the only PRNG jaxon "
                     f"implements), got {impl!r}.")


# ----------------------------------------------------------------------------- keys


def PRNGKey(seed: Any, *, impl: Any = None) -> KeyArray:  # noqa: N802 (JAX's name)
  """A PRNG key (uint32[2]) from an integer seed.

  Args:
    seed: a Python or NumPy integer, or an integer scalar array (may be traced). Python ints
      go through int64 first, so with 64-bit types off a seed wraps to its low 32 bits.
    impl: None or "threefry2x32".

  Returns:
    The key: the seed's bits 32-63 and 0-31 (the first word is 0 for 32-bit seeds).

  Example:
    >>> PRNGKey(0)
    Array([0, 0], dtype=uint32)
  """
  _check_impl(impl)
  if isinstance(seed, int):
    seed = np.int64(seed)
  return prng.threefry_seed(lax_numpy.asarray(seed))


def key(seed: Any, *, impl: Any = None) -> KeyArray:
  """A PRNG key from an integer seed. jaxon has no typed key arrays: this returns the raw
  uint32[2] key of `PRNGKey(seed)`, whose numbers equal those of JAX's typed key."""
  return PRNGKey(seed, impl=impl)


def key_data(keys: KeyArray) -> Array:
  """The uint32 data of `keys`: raw keys are their own data."""
  return _check_key("key_data", keys, batched=True)


def wrap_key_data(key_bits_array: Array, *, impl: Any = None) -> KeyArray:
  """Keys from their uint32 data (shape (..., 2)); raw keys are their own data."""
  _check_impl(impl)
  return _check_key("wrap_key_data", key_bits_array, batched=True)


def clone(key: KeyArray) -> KeyArray:
  """`key` itself: JAX's clone only matters for its key-reuse checker."""
  return key


@_jit(1)
def _split_keys(key: KeyArray, shape: tuple[int, ...]) -> KeyArray:
  return prng.threefry_split(key, shape)


def split(key: KeyArray, num: int | Shape = 2) -> KeyArray:
  """New keys derived from `key`, statistically independent of it and of each other.

  Args:
    key: a PRNG key.
    num: how many keys, or the shape of the array of keys.

  Returns:
    A uint32 array of shape (num, 2) (or (*num, 2)).

  Example:
    >>> key, subkey = split(PRNGKey(0))
  """
  key = _check_key("split", key)
  return _split_keys(key, _shape("split", num, "num"))


@_jit()
def _fold_in(key: KeyArray, data: Array) -> KeyArray:
  return prng.threefry_fold_in(key, data)


def fold_in(key: KeyArray, data: Any) -> KeyArray:
  """A new key from `key` and the integer `data` (taken as uint32): a way to derive keys
  from step numbers or indices.

  Example:
    >>> step_key = fold_in(PRNGKey(0), 7)
  """
  key = _check_key("fold_in", key)
  if np.ndim(data):
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                    f"{np.shape(data)}. Use jaxon.vmap for batching.")
  if isinstance(data, int):
    data = np.asarray(data, np.uint32)  # OverflowError outside [0, 2**32)
  return _fold_in(key, lax.convert_element_type(data, np.uint32))


@_jit(1, 2)
def _bits(key: KeyArray, bit_width: int, shape: tuple[int, ...]) -> Array:
  return prng.threefry_random_bits(key, bit_width, shape)


def bits(key: KeyArray, shape: Shape = (), dtype: Any = None) -> Array:
  """Uniformly random unsigned integers (all bits random).

  Args:
    key: a PRNG key.
    shape: the shape of the result.
    dtype: an unsigned integer dtype; default uint32 (uint64 with 64-bit types on).

  Example:
    >>> bits(PRNGKey(0), (2,)).dtype
    dtype('uint32')
  """
  key = _check_key("bits", key)
  dtype = _dtype("bits", np.uint64 if dtype is None else dtype, np.unsignedinteger,
                 "an unsigned int")
  return _bits(key, dtype.itemsize * 8, _shape("bits", shape))


# ----------------------------------------------------------------------------- uniform, normal


def uniform(key: KeyArray, shape: Shape = (), dtype: Any = float, minval: Any = 0.,
            maxval: Any = 1.) -> Array:
  """Uniform floats in [minval, maxval).

  Args:
    key: a PRNG key.
    shape: the shape of the result; `minval` and `maxval` broadcast to it.
    dtype: a float dtype (default float32, float64 with 64-bit types on).
    minval, maxval: the bounds (differentiable).

  Example:
    >>> uniform(PRNGKey(0), (2,), minval=-1., maxval=1.).shape
    (2,)
  """
  key = _check_key("uniform", key)
  shape = _shape("uniform", shape)
  dtype = _dtype("uniform", dtype, np.floating, "a float")
  _check_shape("uniform", shape, np.shape(minval), np.shape(maxval))
  return _uniform(key, shape, dtype, minval, maxval)


@_jit(1, 2)
def _uniform(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype, minval: Any,
             maxval: Any) -> Array:
  """Random mantissa bits under the exponent of 1.0 give a float in [1, 2); minus 1,
  scaled and shifted, that is [minval, maxval) (the max guards against rounding below)."""
  minval = _broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
  maxval = _broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(shape))
  finfo = dtypes.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  rng_bits = 8 if nmant < 8 else nbits
  uint_dtype = _UINT_DTYPES[nbits]
  random_bits = lax.convert_element_type(prng.threefry_random_bits(key, rng_bits, shape),
                                         uint_dtype)
  float_bits = lax.bitwise_or(
      lax.shift_right_logical(random_bits, np.array(rng_bits - nmant, uint_dtype)),
      np.array(1.0, dtype).view(uint_dtype))
  floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.array(1.0, dtype))
  scaled = lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval)
  return lax.max(minval, shape_ops.reshape(scaled, shape))


def normal(key: KeyArray, shape: Shape = (), dtype: Any = float) -> Array:
  """Standard normal samples (complex dtypes: real and imaginary parts of variance 1/2).

  Example:
    >>> normal(PRNGKey(0), (3,))  # with jax_threefry_partitionable on (the default)
    Array([ 1.6226422 ,  2.0252647 , -0.43359444], dtype=float32)
  """
  key = _check_key("normal", key)
  dtype = _dtype("normal", dtype, np.inexact, "a float or complex")
  return _normal(key, _shape("normal", shape), dtype)


@_jit(1, 2)
def _normal(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  if not dtypes.issubdtype(dtype, np.complexfloating):
    return _normal_real(key, shape, dtype)
  real_dtype = np.finfo(dtype).dtype
  key_re, key_im = _split(key)
  re, im = (_normal_real(k, shape, real_dtype).astype(dtype) for k in (key_re, key_im))
  return (re + 1j * im) / np.array(np.sqrt(2), dtype)


@_jit(1, 2)
def _normal_real(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  """The inverse CDF of a uniform draw in (-1, 1): sqrt(2) erfinv(u)."""
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  u = uniform(key, shape, dtype, lo, np.array(1., dtype))
  return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def truncated_normal(key: KeyArray, lower: Any, upper: Any, shape: Shape | None = None,
                     dtype: Any = float) -> Array:
  """Standard normal samples conditioned on (lower, upper).

  Args:
    key: a PRNG key.
    lower, upper: the bounds (arrays broadcast to `shape`).
    shape: the shape of the result; default the broadcast shape of the bounds.
    dtype: a float dtype.

  Example:
    >>> x = truncated_normal(PRNGKey(0), -1., 1., (100,))  # all within (-1, 1)
  """
  key = _check_key("truncated_normal", key)
  dtype = _dtype("truncated_normal", dtype, np.floating, "a float")
  shape = None if shape is None else _shape("truncated_normal", shape)
  return _truncated_normal(key, lower, upper, shape, dtype)


@_jit(3, 4)
def _truncated_normal(key: KeyArray, lower: Any, upper: Any, shape: tuple[int, ...] | None,
                      dtype: np.dtype) -> Array:
  shape = _result_shape("truncated_normal", shape, lower, upper)
  sqrt2 = np.array(np.sqrt(2), dtype)
  lower = lax.convert_element_type(lower, dtype)
  upper = lax.convert_element_type(upper, dtype)
  u = uniform(key, shape, dtype, lax.erf(lower / sqrt2), lax.erf(upper / sqrt2))
  out = sqrt2 * lax.erf_inv(u)
  # Rounding (or u landing on its lower bound) could reach a bound: clamp inside.
  return ufuncs.clip(out, lax.nextafter(stop_gradient(lower), np.array(np.inf, dtype)),
                     lax.nextafter(stop_gradient(upper), np.array(-np.inf, dtype)))


# ----------------------------------------------------------------------------- discrete


def bernoulli(key: KeyArray, p: Any = np.float32(0.5), shape: Shape | None = None) -> Array:
  """Booleans that are True with probability `p`.

  Args:
    key: a PRNG key.
    p: the probability (a float, or an array broadcast to `shape`).
    shape: the shape of the result; default `p`'s shape.

  Example:
    >>> bernoulli(PRNGKey(0), 0.3, (4,)).dtype
    dtype('bool')
  """
  key = _check_key("bernoulli", key)
  dtype = dtypes.dtype(p, canonicalize=True)
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  shape = None if shape is None else _shape("bernoulli", shape)
  return _bernoulli(key, lax.convert_element_type(p, dtype), shape)


@_jit(2)
def _bernoulli(key: KeyArray, p: Array, shape: tuple[int, ...] | None) -> Array:
  return uniform(key, _result_shape("bernoulli", shape, p), dtypes.dtype(p)) < p


def rademacher(key: KeyArray, shape: Shape = (), dtype: Any = int) -> Array:
  """-1 or +1 with equal probability.

  Example:
    >>> rademacher(PRNGKey(0), (3,)).dtype
    dtype('int32')
  """
  key = _check_key("rademacher", key)
  dtype = dtypes.canonicalize_dtype(dtype)
  return _rademacher(key, _shape("rademacher", shape), dtype)


@_jit(1, 2)
def _rademacher(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  samples = bernoulli(key, 0.5, shape).astype(dtype)
  return (2 * samples - 1).astype(dtype)


def geometric(key: KeyArray, p: Any, shape: Shape | None = None, dtype: Any = int) -> Array:
  """The number of Bernoulli(p) trials up to and including the first success (1, 2, ...).

  Args:
    key: a PRNG key.
    p: the success probability (an array broadcast to `shape`).
    shape: the shape of the result; default `p`'s shape.
    dtype: an integer dtype (default int32, int64 with 64-bit types on).

  Example:
    >>> geometric(PRNGKey(0), 0.5, (3,)).dtype
    dtype('int32')
  """
  return _geometric(*_sampler_args("geometric", key, shape, dtype, np.integer, "an int"), p)


@_jit(1, 2)
def _geometric(key: KeyArray, shape: tuple[int, ...] | None, dtype: np.dtype, p: Any
               ) -> Array:
  """Inverse CDF: floor(log(u) / log(1 - p)) + 1."""
  shape = _result_shape("geometric", shape, p)
  (p,) = np_util.promote_args_inexact("geometric", p)
  u = uniform(key, shape, p.dtype)
  log_one_minus_p = jnp_shape.broadcast_to(lax.log1p(lax.neg(p)), shape)
  trials = lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1
  return lax.convert_element_type(trials, dtype)


def randint(key: KeyArray, shape: Shape, minval: Any, maxval: Any, dtype: Any = int) -> Array:
  """Uniform integers in [minval, maxval).

  Bounds outside `dtype`'s range are clipped to it (so `randint(key, s, 0, 256, uint8)`
  covers all of uint8). Like JAX, it draws twice the bits of `dtype` to make the modulo
  bias small.

  Example:
    >>> randint(PRNGKey(0), (3,), 0, 10).dtype
    dtype('int32')
  """
  key = _check_key("randint", key)
  dtype = dtypes.canonicalize_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype.name}.")
  shape = _shape("randint", shape)
  np_util.check_arraylike("randint", minval, maxval)
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  return _randint(key, shape, minval, maxval, dtype)


def _convert_and_clip_integer(val: Array, dtype: np.dtype) -> Array:
  """`val` converted to `dtype`, clipped to the range both dtypes can hold."""
  val_dtype = dtypes.canonicalize_dtype(val.dtype)
  val = val.astype(val_dtype)
  lo = max(dtypes.iinfo(dtype).min, dtypes.iinfo(val_dtype).min)
  hi = min(dtypes.iinfo(dtype).max, dtypes.iinfo(val_dtype).max)
  return lax.clamp(np.array(lo, val_dtype), val, np.array(hi, val_dtype)).astype(dtype)


@_jit(1, 4)
def _randint(key: KeyArray, shape: tuple[int, ...], minval: Any, maxval: Any,
             dtype: np.dtype) -> Array:
  minval, maxval = (lax_numpy.asarray(v) for v in (minval, maxval))
  minval, maxval = (v if dtypes.issubdtype(v.dtype, np.integer)
                    else v.astype(dtypes.default_int_dtype()) for v in (minval, maxval))
  # A maxval beyond dtype's range means "up to and including dtype's maximum".
  maxval_out_of_range = lax.gt(maxval, _convert_and_clip_integer(
      lax_numpy.asarray(np.array(dtypes.iinfo(dtype).max, dtype)), maxval.dtype))
  minval = _broadcast_to_rank(_convert_and_clip_integer(minval, dtype), len(shape))
  maxval = _broadcast_to_rank(_convert_and_clip_integer(maxval, dtype), len(shape))
  nbits = dtypes.iinfo(dtype).bits
  k1, k2 = _split(key)
  higher_bits = prng.threefry_random_bits(k1, nbits, shape)
  lower_bits = prng.threefry_random_bits(k2, nbits, shape)
  unsigned = np.dtype(_UINT_DTYPES[nbits])
  span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
  span = ufuncs.where(lax.le(maxval, minval), np.array(1, unsigned), span)  # minval wins
  span = ufuncs.where(ufuncs.logical_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, np.array(1, unsigned)), span)  # may wrap to 0: no-op rem
  # (higher * 2**nbits + lower) % span, with 2**nbits % span squared from 2**(nbits/2).
  multiplier = lax.rem(np.array(2 ** (nbits // 2), unsigned), span)
  multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
  offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier), lax.rem(lower_bits, span))
  offset = lax.rem(offset, span)
  return lax.add(minval, lax.convert_element_type(offset, dtype))


def choice(key: KeyArray, a: Any, shape: Shape = (), replace: bool = True, p: Any = None,
           axis: int = 0, *, mode: str | None = None) -> Array:
  """Random entries of `a` (or of arange(a) for an int `a`) along `axis`.

  Args:
    key: a PRNG key.
    a: an array, or an int n meaning arange(n).
    shape: the shape of the draws.
    replace: draw with replacement.
    p: optional probabilities of the entries (1-D, `a.shape[axis]` long).
    axis: the axis of `a` to draw along.
    mode: the Gumbel sampling mode for `p` without replacement (see `gumbel`).

  Example:
    >>> choice(PRNGKey(0), 5, (3,), replace=False)  # three distinct ints in [0, 5)
  """
  key = _check_key("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError(f"shape argument of jaxon.random.choice must be a sequence, got {shape}")
  shape = _shape("choice", shape)
  np_util.check_arraylike("choice", a)
  arr = lax_numpy.asarray(a)
  if arr.ndim == 0:
    n_inputs = core.concrete_or_error(operator.index, a,
                                      "The error occurred in jaxon.random.choice()")
  else:
    axis = _canonicalize_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  n_draws = math.prod(shape)
  if n_draws == 0:
    return lax_numpy.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                     f"{n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(key, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else searching.take(arr, ind, axis)
    else:
      permuted = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
      result = slicing.slice_in_dim(permuted, 0, n_draws, axis=axis)
  else:
    result = _choice_weighted(key, arr, shape, replace, p, axis, n_inputs, n_draws, mode)
  return result.reshape(shape if arr.ndim == 0 else
                        arr.shape[:axis] + tuple(shape) + arr.shape[axis + 1:])


def _choice_weighted(key: KeyArray, arr: Array, shape: tuple[int, ...], replace: bool,
                     p: Any, axis: int, n_inputs: int, n_draws: int, mode: str | None
                     ) -> Array:
  """With replacement: inverse CDF of the cumulative weights. Without: the Gumbel top-k
  trick (the k largest of log p + Gumbel noise are a weighted draw without replacement)."""
  np_util.check_arraylike("choice", p)
  (p_arr,) = np_util.promote_args_inexact("choice", p)
  if p_arr.shape != (n_inputs,):
    raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. "
                     f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
  if replace:
    p_cuml = reductions.cumsum(p_arr)
    total = slicing.index_in_dim(p_cuml, -1, keepdims=False)
    r = total * (1 - uniform(key, shape, dtype=p_cuml.dtype))
    ind = searching.searchsorted(p_cuml, r).astype(int)
  else:
    g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + ufuncs.log(p_arr)
    ind = sorting.top_k(g, n_draws)[1].astype(int)
  return ind if arr.ndim == 0 else searching.take(arr, ind, axis)


def _canonicalize_axis(axis: int, ndim: int) -> int:
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
  return axis % ndim


def permutation(key: KeyArray, x: Any, axis: int = 0, independent: bool = False) -> Array:
  """A random permutation of arange(x) for an int `x`, else of `x` along `axis`.

  Args:
    key: a PRNG key.
    x: an int or an array.
    axis: the axis to permute.
    independent: permute each slice along `axis` independently (instead of permuting
      whole slices).

  Example:
    >>> permutation(PRNGKey(0), 5).shape
    (5,)
  """
  key = _check_key("permutation", key)
  np_util.check_arraylike("permutation", x)
  axis = _canonicalize_axis(axis, np.ndim(x) or 1)
  if not np.ndim(x):
    if not dtypes.issubdtype(dtypes.dtype(x), np.integer):
      raise TypeError("x must be an integer or at least 1-dimensional")
    n = core.concrete_or_error(operator.index, x,
                               "argument x of jaxon.random.permutation()")
    return _shuffle(key, creation.arange(n), axis)
  if independent or np.ndim(x) == 1:
    return _shuffle(key, x, axis)
  ind = _shuffle(key, creation.arange(np.shape(x)[axis]), 0)
  return searching.take(x, ind, axis, unique_indices=True)


def shuffle(key: KeyArray, x: Any, axis: int = 0) -> Array:
  """Deprecated in JAX: `permutation(key, x, axis, independent=True)`."""
  warnings.warn("jaxon.random.shuffle is deprecated; use jaxon.random.permutation with "
                "independent=True.", FutureWarning, stacklevel=2)
  key = _check_key("shuffle", key)
  return _shuffle(key, x, _canonicalize_axis(axis, max(np.ndim(x), 1)))


@_jit(2)
def _shuffle(key: KeyArray, x: Array, axis: int) -> Array:
  """Sorts by random 32-bit keys, repeated until collisions of sort keys are unlikely:
  the number of rounds makes the chance of a tie about size**3 / 2**(32 rounds)."""
  exponent = 3
  uint32max = np.iinfo(np.uint32).max
  size = math.prod(np.shape(x))
  num_rounds = int(np.ceil(exponent * np.log(max(1, size)) / np.log(uint32max)))
  for _ in range(num_rounds):
    key, subkey = _split(key)
    sort_keys = prng.threefry_random_bits(subkey, 32, np.shape(x))
    _, x = sorting.sort_key_val(sort_keys, x, axis)
  return x


def categorical(key: KeyArray, logits: Any, axis: int = -1, shape: Shape | None = None,
                replace: bool = True, mode: str | None = None) -> Array:
  """Category indices drawn with probabilities softmax(logits) along `axis`.

  Args:
    key: a PRNG key.
    logits: unnormalized log probabilities.
    axis: the axis of the categories.
    shape: the shape of the result (ending with the batch shape of `logits`); default the
      batch shape.
    replace: draw with replacement (else distinct categories per batch entry).
    mode: the Gumbel sampling mode (see `gumbel`).

  Example:
    >>> categorical(PRNGKey(0), jnp.log(jnp.array([0.2, 0.8])), shape=(5,)).shape
    (5,)
  """
  key = _check_key("categorical", key)
  np_util.check_arraylike("categorical", logits)
  logits_arr = lax_numpy.asarray(logits)
  if logits_arr.ndim == 0:
    raise ValueError("categorical: `logits` must have at least one dimension.")
  axis = _canonicalize_axis(axis, logits_arr.ndim) - logits_arr.ndim
  batch_shape = tuple(np.delete(logits_arr.shape, axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = _shape("categorical", shape)
    _check_shape("categorical", shape, batch_shape)
  prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % logits_arr.ndim, logits_arr.shape[axis])
    noise = gumbel(key, (*prefix, *logits_shape), logits_arr.dtype, mode=mode)
    return reductions.argmax(noise + _expand_front(logits_arr, len(prefix)), axis=axis)
  logits_arr = logits_arr + gumbel(key, logits_arr.shape, logits_arr.dtype, mode=mode)
  k = math.prod(prefix)
  if k > logits_arr.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                     f"categories ({logits_arr.shape[axis]}).")
  _, indices = sorting.top_k(jnp_shape.moveaxis(logits_arr, axis, -1), k)
  return jnp_shape.moveaxis(indices, -1, 0).reshape(shape)


def _expand_front(x: Array, n: int) -> Array:
  return shape_ops.reshape(x, (1,) * n + np.shape(x))


# ----------------------------------------------------------------------------- continuous


def _float_sampler(name: str, fun: Callable, doc: str) -> Callable:
  """The public `name(key, shape=(), dtype=float)` of `fun(key, shape, dtype)`, which it
  compiles per shape and dtype."""
  jitted = _jit(1, 2)(fun)

  def sampler(key: KeyArray, shape: Shape = (), dtype: Any = float) -> Array:
    key = _check_key(name, key)
    dtype = _dtype(name, dtype, np.floating, "a float")
    return jitted(key, _shape(name, shape), dtype)
  sampler.__name__ = sampler.__qualname__ = name
  sampler.__doc__ = doc
  return sampler


def _tiny(dtype: np.dtype) -> Any:
  return dtypes.finfo(dtype).tiny


def _exponential(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  u = uniform(key, shape, dtype)
  return lax.neg(lax.log1p(lax.neg(u)))  # 1 - u is in (0, 1], where log is finite


exponential = _float_sampler("exponential", _exponential, """\
  Exponential samples of rate 1: -log(1 - u).

  Example:
    >>> exponential(PRNGKey(0), (3,)).shape
    (3,)
  """)


def _laplace(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  u = uniform(key, shape, dtype, minval=-1. + dtypes.finfo(dtype).epsneg, maxval=1.)
  return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


laplace = _float_sampler("laplace", _laplace, """\
  Laplace samples of scale 1: sign(u) log(1 - |u|), u in (-1, 1).

  Example:
    >>> laplace(PRNGKey(0), (3,)).shape
    (3,)
  """)


def _logistic(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  x = uniform(key, shape, dtype, minval=_tiny(dtype), maxval=1.)
  return lax.log(lax.div(x, lax.sub(np.array(1, dtype), x)))


logistic = _float_sampler("logistic", _logistic, """\
  Standard logistic samples: log(u / (1 - u)).

  Example:
    >>> logistic(PRNGKey(0), (3,)).shape
    (3,)
  """)


def _cauchy(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  u = uniform(key, shape, dtype, minval=dtypes.finfo(dtype).eps, maxval=1.)
  return lax.tan(lax.mul(np.array(np.pi, dtype), lax.sub(u, np.array(0.5, dtype))))


cauchy = _float_sampler("cauchy", _cauchy, """\
  Standard Cauchy samples: tan(pi (u - 1/2)).

  Example:
    >>> cauchy(PRNGKey(0), (3,)).shape
    (3,)
  """)


def _maxwell(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  return linalg.norm(normal(key, shape + (3,), dtype), axis=-1)


maxwell = _float_sampler("maxwell", _maxwell, """\
  Maxwell samples: the length of a 3-D standard normal vector.

  Example:
    >>> maxwell(PRNGKey(0), (3,)).shape
    (3,)
  """)


def gumbel(key: KeyArray, shape: Shape = (), dtype: Any = float, mode: str | None = None
           ) -> Array:
  """Standard Gumbel samples: -log(-log(u)).

  Args:
    key: a PRNG key.
    shape: the shape of the result.
    dtype: a float dtype.
    mode: how much of the upper tail float precision can reach. "low" (the default, as
      None): one uniform draw per sample, whose resolution caps float32 samples near 16.
      "high": two draws form u with twice the bits below 1/2 (samples up to about 32, at
      twice the cost). "highest": for float32, 64 random bits turned into u exactly, log1p
      near 0 and log near 1 (other dtypes use "high").

  Example:
    >>> gumbel(PRNGKey(0), (3,)).shape
    (3,)
  """
  key = _check_key("gumbel", key)
  dtype = _dtype("gumbel", dtype, np.floating, "a float")
  mode = "low" if mode is None else mode
  if mode not in ("highest", "high", "low"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return _gumbel(key, _shape("gumbel", shape), dtype, mode)


@_jit(1, 2, 3)
def _gumbel(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Array:
  info = dtypes.finfo(dtype)
  if mode == "highest" and dtype == np.float32:
    return _gumbel_highest(key, shape)
  if mode == "low":
    return -ufuncs.log(-ufuncs.log(uniform(key, shape, dtype, minval=info.tiny, maxval=1.)))
  draws = uniform(key, (2,) + shape, dtype)
  high, low = draws[0], draws[1]
  # Below 1/2, the second draw fills the bits the first one's exponent leaves out.
  x = ufuncs.where(high >= 0.5, high, high + 2 ** -info.nmant * low + info.tiny)
  return -ufuncs.log(-ufuncs.log1p(-x))


def _gumbel_highest(key: KeyArray, shape: tuple[int, ...]) -> Array:
  """u from 64 random bits as a fixed-point fraction; u >= 1/2 is replaced by 1 - u (the
  two's complement of the bits) so that the float keeps all leading bits, and log1p(-u) or
  log(1 - u) is taken accordingly."""
  bits = prng.threefry_random_bits(key, 32, (2,) + shape)
  neg = lax.bitwise_not(bits)
  lo_bits = neg[1]
  carry = lax.convert_element_type(lo_bits == np.uint32(2 ** 32 - 1), np.uint32)
  neg = neg + jnp_shape.stack([carry, lax.full_like(lo_bits, 1)])
  flip_mask = bits[0] < np.uint32(2 ** 31)
  x = _fixed_point_to_float32(ufuncs.where(flip_mask, bits, neg))
  return ufuncs.where(flip_mask, -ufuncs.log(-ufuncs.log1p(-x)), -ufuncs.log(-ufuncs.log(x)))


def _fixed_point_to_float32(bits: Array) -> Array:
  """The float32 nearest below the 64-bit fraction (hi, lo) = bits in (0, 1): the mantissa
  is the 24 bits after the leading one, the exponent counts the leading zeros."""
  finfo = dtypes.finfo(np.float32)
  hi, lo = bits[0], bits[1]
  hi_clz, lo_clz = lax.clz(hi), lax.clz(lo)
  hi_is_zero = hi_clz == 32
  mantissa = lax.bitwise_or(
      lax.shift_left(hi, hi_clz),
      ufuncs.where(hi_is_zero, lax.shift_left(lo, lo_clz),
                   lax.shift_right_logical(lo, finfo.bits - hi_clz)))
  mantissa = lax.shift_right_logical(mantissa, np.uint32(finfo.bits - finfo.nmant - 1))
  mantissa = lax.bitwise_and(mantissa, np.uint32((1 << finfo.nmant) - 1))
  exponent = lax.shift_left(-finfo.minexp - ufuncs.where(hi_is_zero, 32 + lo_clz, hi_clz),
                            np.uint32(finfo.nmant))
  exponent = lax.bitwise_and(exponent,
                             np.uint32((1 << (finfo.bits - 2)) - (1 << (finfo.nmant - 1))))
  return lax.bitcast_convert_type(lax.bitwise_or(exponent, mantissa), np.float32)


def double_sided_maxwell(key: KeyArray, loc: Any, scale: Any, shape: Shape = (),
                         dtype: Any = float) -> Array:
  """Samples of the double-sided Maxwell distribution: a Maxwell sample with a random
  sign, scaled by `scale` and shifted by `loc`.

  As in JAX, the result's shape is `shape` followed by the broadcast shape of `loc` and
  `scale` (or just the latter when `shape` is empty).

  Example:
    >>> double_sided_maxwell(PRNGKey(0), 0., 1., (3,)).shape
    (3,)
  """
  key = _check_key("double_sided_maxwell", key)
  dtype = _dtype("double_sided_maxwell", dtype, np.floating, "a float")
  shape = _shape("double_sided_maxwell", shape)
  return _double_sided_maxwell(key, loc, scale, shape, dtype)


@_jit(3, 4)
def _double_sided_maxwell(key: KeyArray, loc: Any, scale: Any, shape: tuple[int, ...],
                          dtype: np.dtype) -> Array:
  params_shape = lax.broadcast_shapes(np.shape(loc), np.shape(scale))
  shape = (shape or params_shape) + params_shape  # JAX's shapes, params' appended
  maxwell_key, rademacher_key = _split(key)
  maxwell_rvs = maxwell(maxwell_key, shape, dtype)
  random_sign = rademacher(rademacher_key, shape, dtype)
  return random_sign * maxwell_rvs * scale + loc


# ----------------------------------------------------------------------------- transforms


def lognormal(key: KeyArray, sigma: Any = np.float32(1), shape: Shape | None = None,
              dtype: Any = float) -> Array:
  """Log-normal samples: exp(sigma z), z standard normal.

  Args:
    key: a PRNG key.
    sigma: the standard deviation of the underlying normal (broadcast to `shape`).
    shape: the shape of the result; default `sigma`'s shape.
    dtype: a float dtype.

  Example:
    >>> lognormal(PRNGKey(0), 0.5, (3,)).shape
    (3,)
  """
  return _lognormal(*_sampler_args("lognormal", key, shape, dtype), sigma)


@_jit(1, 2)
def _lognormal(key: KeyArray, shape: tuple[int, ...] | None, dtype: np.dtype, sigma: Any
               ) -> Array:
  shape = _result_shape("lognormal", shape, sigma)
  sigma = lax.convert_element_type(sigma, dtype)
  return lax.exp(ufuncs.multiply(normal(key, shape, dtype), sigma))


def pareto(key: KeyArray, b: Any, shape: Shape | None = None, dtype: Any = float) -> Array:
  """Pareto samples of shape `b` and scale 1 (P(X > x) = x^-b for x >= 1): exp(e / b), e
  standard exponential.

  Args:
    key: a PRNG key.
    b: the shape parameter (broadcast to `shape`).
    shape: the shape of the result; default `b`'s shape.
    dtype: a float dtype.

  Example:
    >>> pareto(PRNGKey(0), 3., (2,)).shape
    (2,)
  """
  return _pareto(*_sampler_args("pareto", key, shape, dtype), b)


@_jit(1, 2)
def _pareto(key: KeyArray, shape: tuple[int, ...] | None, dtype: np.dtype, b: Any) -> Array:
  shape = _result_shape("pareto", shape, b)
  b = lax.convert_element_type(b, dtype)
  return lax.exp(ufuncs.divide(exponential(key, shape, dtype), b))


def rayleigh(key: KeyArray, scale: Any, shape: Shape | None = None, dtype: Any = float
             ) -> Array:
  """Rayleigh samples: scale sqrt(-2 log u), u uniform in [0, 1).

  Args:
    key: a PRNG key.
    scale: the scale (broadcast to `shape`).
    shape: the shape of the result; default `scale`'s shape.
    dtype: a float dtype.

  Example:
    >>> rayleigh(PRNGKey(0), 2., (3,)).shape
    (3,)
  """
  return _rayleigh(*_sampler_args("rayleigh", key, shape, dtype), scale)


@_jit(1, 2)
def _rayleigh(key: KeyArray, shape: tuple[int, ...] | None, dtype: np.dtype, scale: Any
              ) -> Array:
  shape = _result_shape("rayleigh", shape, scale)
  u = uniform(key, shape, dtype)
  scale = jnp_shape.broadcast_to(lax.convert_element_type(scale, dtype), shape)
  return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), np.array(-2, dtype))))


def triangular(key: KeyArray, left: Any, mode: Any, right: Any, shape: Shape | None = None,
               dtype: Any = float) -> Array:
  """Triangular samples on [left, right] peaking at `mode`, by the inverse CDF.

  Args:
    key: a PRNG key.
    left, mode, right: the bounds and the peak, left <= mode <= right (broadcast to
      `shape`).
    shape: the shape of the result; default the parameters' broadcast shape.
    dtype: a float dtype.

  Example:
    >>> triangular(PRNGKey(0), 0., 0.5, 1., (3,)).shape
    (3,)
  """
  return _triangular(*_sampler_args("triangular", key, shape, dtype), left, mode, right)


@_jit(1, 2)
def _triangular(key: KeyArray, shape: tuple[int, ...] | None, dtype: np.dtype, left: Any,
                mode: Any, right: Any) -> Array:
  """Below the peak's CDF value fc = (mode - left) / (right - left), the rising side's
  inverse CDF; above it, the falling side's."""
  shape = _result_shape("triangular", shape, left, mode, right)
  left, mode, right = (lax.convert_element_type(v, dtype) for v in (left, mode, right))
  width = right - left
  u = uniform(key, shape, dtype)
  rising = left + ufuncs.sqrt(u * width * (mode - left))
  falling = right - ufuncs.sqrt((1 - u) * width * (right - mode))
  return lax.select(u < (mode - left) / width, rising, falling)


def wald(key: KeyArray, mean: Any, shape: Shape | None = None, dtype: Any = float) -> Array:
  """Wald (inverse Gaussian) samples of mean `mean` and shape 1, by Michael, Schucany and
  Haas's transformation with one normal and one uniform draw.

  Args:
    key: a PRNG key.
    mean: the mean (broadcast to `shape`).
    shape: the shape of the result; default `mean`'s shape.
    dtype: a float dtype.

  Example:
    >>> wald(PRNGKey(0), 1., (3,)).shape
    (3,)
  """
  return _wald(*_sampler_args("wald", key, shape, dtype), mean)


@_jit(1, 2)
def _wald(key: KeyArray, shape: tuple[int, ...] | None, dtype: np.dtype, mean: Any) -> Array:
  """x, the smaller root of the quadratic whose roots x and mean^2 / x are equally likely
  images of a chi-square(1) draw y; a uniform draw picks x with probability
  mean / (mean + x)."""
  shape = _result_shape("wald", shape, mean)
  normal_key, uniform_key = _split(key)
  mean = jnp_shape.broadcast_to(lax.convert_element_type(mean, dtype), shape)
  y = lax.integer_pow(normal(normal_key, shape, dtype), 2)
  z = uniform(uniform_key, shape, dtype)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(4 * mean * y + mean_sq * lax.integer_pow(y, 2))
  x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
  return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def weibull_min(key: KeyArray, scale: Any, concentration: Any, shape: Shape = (),
                dtype: Any = float) -> Array:
  """Weibull samples, scale (-log(1 - u))^(1 / concentration).

  As in JAX, `scale` and `concentration` broadcast with `shape` (numpy broadcasting, not
  checked against it).

  Args:
    key: a PRNG key.
    scale: the scale.
    concentration: the shape parameter k (P(X > x) = exp(-(x / scale)^k)).
    shape: the shape of the uniform draws.
    dtype: a float dtype.

  Example:
    >>> weibull_min(PRNGKey(0), 1., 2., (3,)).shape
    (3,)
  """
  key, shape, dtype = _sampler_args("weibull_min", key, shape, dtype)
  return _weibull_min(key, shape, dtype, scale, concentration)


@_jit(1, 2)
def _weibull_min(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype, scale: Any,
                 concentration: Any) -> Array:
  u = uniform(key, shape, dtype)
  exponential_draw = ufuncs.negative(ufuncs.log1p(ufuncs.negative(u)))
  return ufuncs.power(exponential_draw, ufuncs.divide(1.0, concentration)) * scale


def multivariate_normal(key: KeyArray, mean: Any, cov: Any, shape: Shape | None = None,
                        dtype: Any = None, method: str = "cholesky") -> Array:
  """Multivariate normal samples: mean + factor @ z with factor factor^T = cov.

  Args:
    key: a PRNG key.
    mean: the mean, shape (..., n).
    cov: the covariance, shape (..., n, n).
    shape: the batch shape of the result (broadcast with the batch shapes of `mean` and
      `cov`); the result has shape shape + (n,).
    dtype: a float dtype; default `mean`'s (after promotion with `cov`).
    method: how to factor `cov`: "cholesky", "eigh" or "svd".

  Example:
    >>> multivariate_normal(PRNGKey(0), jnp.zeros(2), jnp.eye(2), (5,)).shape
    (5, 2)
  """
  key = _check_key("multivariate_normal", key)
  mean, cov = np_util.promote_args_inexact("multivariate_normal", mean, cov)
  if method not in ("svd", "eigh", "cholesky"):
    raise ValueError(f"method must be one of {{'svd', 'eigh', 'cholesky'}}, got {method!r}")
  dtype = _dtype("multivariate_normal", mean.dtype if dtype is None else dtype, np.floating,
                 "a float")
  shape = None if shape is None else _shape("multivariate_normal", shape)
  return _multivariate_normal(key, mean, cov, shape, dtype, method)


@_jit(3, 4, 5)
def _multivariate_normal(key: KeyArray, mean: Array, cov: Array, shape: tuple[int, ...] | None,
                         dtype: np.dtype, method: str) -> Array:
  if mean.ndim < 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{mean.ndim}")
  if cov.ndim < 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
  n = mean.shape[-1]
  if cov.shape[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                     f"got cov.shape == {cov.shape}.")
  if shape is None:
    shape = lax.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
  else:
    _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
  if method == "svd":
    u, s, _ = linalg.svd(cov)
    factor = u * ufuncs.sqrt(shape_ops.expand_dims(s, (s.ndim - 1,)))
  elif method == "eigh":
    w, v = linalg.eigh(cov)
    factor = v * ufuncs.sqrt(shape_ops.expand_dims(w, (w.ndim - 1,)))
  else:
    factor = linalg.cholesky(cov)
  samples = normal(key, shape + mean.shape[-1:], dtype)
  return mean + einsum("...ij,...j->...i", factor, samples)


def orthogonal(key: KeyArray, n: int, shape: Shape = (), dtype: Any = float,
               m: int | None = None) -> Array:
  """Random matrices with orthonormal columns (or rows), Haar-distributed.

  Args:
    key: a PRNG key.
    n: the number of rows.
    shape: the batch shape.
    dtype: a float or complex dtype.
    m: the number of columns (default n).

  Returns:
    An array of shape (*shape, n, m): orthonormal columns if n >= m, else rows.

  Example:
    >>> q = orthogonal(PRNGKey(0), 3)  # q.T @ q is the identity
  """
  key = _check_key("orthogonal", key)
  shape = _shape("orthogonal", shape)
  dtype = _dtype("orthogonal", dtype, np.inexact, "a float or complex")
  n = core.concrete_or_error(operator.index, n, "The error occurred in jaxon.random.orthogonal()")
  m = n if m is None else core.concrete_or_error(
      operator.index, m, "The error occurred in jaxon.random.orthogonal()")
  z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
  q, r = linalg.qr(z)
  d = linalg.diagonal(r)
  x = q * shape_ops.expand_dims(lax.div(d, ufuncs.abs(d).astype(d.dtype)), (d.ndim - 1,))
  return jnp_shape.swapaxes(x, -1, -2) if n < m else x
