"""jaxon.random's integer and index samplers: geometric, randint, choice, permutation,
shuffle and categorical.

As in JAX, randint of an 8- or 16-bit dtype draws 32-bit integers (clipped bounds) and
converts them, which keeps the modulo bias small; choice and categorical with weights
use the Gumbel top-k trick; permutation sorts by random 32-bit keys.
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src.lax.sharding_constraint import takes_out_sharding
from jaxon._src import core, dtypes
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, shape_ops, slicing, sorting
from jaxon._src.numpy import creation, lax_numpy, reductions, searching, ufuncs
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy import util as np_util
from jaxon._src.random import (
    UINT_DTYPES,
    Array,
    KeyArray,
    Shape,
    _broadcast_to_rank,
    _check_key,
    _check_shape,
    _jit,
    _random_bits,
    _result_shape,
    _sampler_args,
    _shape,
    _split,
)
from jaxon._src.random_continuous import gumbel, uniform

@takes_out_sharding
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
  log_one_minus_p = jnp_shape.broadcast_to(transcendental.log1p(lax.neg(p)), shape)
  trials = lax.floor(lax.div(transcendental.log(u), log_one_minus_p)) + 1
  return lax.convert_element_type(trials, dtype)


@takes_out_sharding
def randint(key: KeyArray, shape: Shape, minval: Any, maxval: Any, dtype: Any = int) -> Array:
  """Uniform integers in [minval, maxval).

  Bounds outside `dtype`'s range are clipped to it (so `randint(key, s, 0, 256, uint8)`
  covers all of uint8). Like JAX, it draws twice the bits of `dtype` (of int32 for 8- and
  16-bit dtypes, whose draws are then converted) to make the modulo bias small.

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
  info = dtypes.iinfo(dtype)
  if info.bits >= 32:
    return _randint(key, shape, minval, maxval, dtype)
  int32 = np.dtype(np.int32)
  minval = ufuncs.clip(lax_numpy.asarray(minval).astype(int32), info.min, info.max)
  maxval = ufuncs.clip(lax_numpy.asarray(maxval).astype(int32), info.min, info.max + 1)
  return lax.convert_element_type(_randint(key, shape, minval, maxval, int32), dtype)


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
  higher_bits = _random_bits(k1, nbits, shape)
  lower_bits = _random_bits(k2, nbits, shape)
  unsigned = np.dtype(UINT_DTYPES[nbits])
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


@takes_out_sharding
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
    sort_keys = _random_bits(subkey, 32, np.shape(x))
    _, x = sorting.sort_key_val(sort_keys, x, axis)
  return x


@takes_out_sharding
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
