"""jaxon.random's samplers of real values, each a transform of one or two uniform (or
normal) draws: uniform, normal, truncated_normal, exponential, laplace, logistic, cauchy,
maxwell, gumbel, double_sided_maxwell, lognormal, pareto, rayleigh, triangular, wald,
weibull_min, multivariate_normal, orthogonal; and the two-valued draws bernoulli (a
threshold of a uniform draw) and rademacher (a random sign, which double_sided_maxwell
needs).

Each draws its bits with `random_bits` from the key it is given and transforms them with
JAX's operations in JAX's order, so a key gives JAX's numbers bit for bit for every dtype a
sampler accepts (float16, bfloat16, float32; float64 with 64-bit types on).
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src.lax.sharding_constraint import takes_out_sharding
from jaxon._src import core, dtypes
from jaxon._src.interpreters.ad import stop_gradient
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, shape_ops
from jaxon._src.numpy import linalg, ufuncs
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy import util as np_util
from jaxon._src.numpy.einsum import einsum
from jaxon._src.random import (
    UINT_DTYPES,
    Array,
    KeyArray,
    Shape,
    _broadcast_to_rank,
    _check_key,
    _check_shape,
    _dtype,
    _jit,
    _random_bits,
    _result_shape,
    _sampler_args,
    _shape,
    _split,
)

# ----------------------------------------------------------------------------- uniform, normal


@takes_out_sharding
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
  uint_dtype = UINT_DTYPES[nbits]
  random_bits = lax.convert_element_type(_random_bits(key, rng_bits, shape),
                                         uint_dtype)
  float_bits = lax.bitwise_or(
      lax.shift_right_logical(random_bits, np.array(rng_bits - nmant, uint_dtype)),
      np.array(1.0, dtype).view(uint_dtype))
  floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.array(1.0, dtype))
  scaled = lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval)
  return lax.max(minval, shape_ops.reshape(scaled, shape))


@takes_out_sharding
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
  return lax.mul(np.array(np.sqrt(2), dtype), transcendental.erf_inv(u))


@takes_out_sharding
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
  u = uniform(key, shape, dtype, transcendental.erf(lower / sqrt2),
              transcendental.erf(upper / sqrt2))
  out = sqrt2 * transcendental.erf_inv(u)
  # Rounding (or u landing on its lower bound) could reach a bound: clamp inside.
  return ufuncs.clip(out, lax.nextafter(stop_gradient(lower), np.array(np.inf, dtype)),
                     lax.nextafter(stop_gradient(upper), np.array(-np.inf, dtype)))


# ----------------------------------------------------------------------------- two-valued


@takes_out_sharding
def bernoulli(key: KeyArray, p: Any = np.float32(0.5), shape: Shape | None = None,
              mode: str = "low") -> Array:
  """Booleans that are True with probability `p`.

  Args:
    key: a PRNG key.
    p: the probability (a float, or an array broadcast to `shape`).
    shape: the shape of the result; default `p`'s shape.
    mode: "low" compares one uniform sample with `p`, which is wrong for `p` below the
      sample's resolution (~1e-7 in float32); "high" adds a second sample scaled below
      the first's last bit (twice the cost), as JAX's.

  Example:
    >>> bernoulli(PRNGKey(0), 0.3, (4,)).dtype
    dtype('bool')
  """
  key = _check_key("bernoulli", key)
  dtype = dtypes.dtype(p, canonicalize=True)
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  if mode not in ("high", "low"):
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  shape = None if shape is None else _shape("bernoulli", shape)
  return _bernoulli(key, lax.convert_element_type(p, dtype), shape, mode)


@_jit(2, 3)
def _bernoulli(key: KeyArray, p: Array, shape: tuple[int, ...] | None, mode: str) -> Array:
  shape, dtype = _result_shape("bernoulli", shape, p), dtypes.dtype(p)
  if mode == "low":
    return uniform(key, shape, dtype) < p
  coarse, fine = uniform(key, (2, *shape), dtype)
  return fine * (2.0 ** -dtypes.finfo(dtype).nmant) < p - coarse


@takes_out_sharding
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
  return takes_out_sharding(sampler)


def _tiny(dtype: np.dtype) -> Any:
  return dtypes.finfo(dtype).tiny


def _exponential(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  u = uniform(key, shape, dtype)
  return lax.neg(transcendental.log1p(lax.neg(u)))  # 1 - u is in (0, 1], where log is finite


exponential = _float_sampler("exponential", _exponential, """\
  Exponential samples of rate 1: -log(1 - u).

  Example:
    >>> exponential(PRNGKey(0), (3,)).shape
    (3,)
  """)


def _laplace(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  u = uniform(key, shape, dtype, minval=-1. + dtypes.finfo(dtype).epsneg, maxval=1.)
  return lax.mul(lax.sign(u), transcendental.log1p(lax.neg(lax.abs(u))))


laplace = _float_sampler("laplace", _laplace, """\
  Laplace samples of scale 1: sign(u) log(1 - |u|), u in (-1, 1).

  Example:
    >>> laplace(PRNGKey(0), (3,)).shape
    (3,)
  """)


def _logistic(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  x = uniform(key, shape, dtype, minval=_tiny(dtype), maxval=1.)
  # JAX's form: not log(x / (1 - x))
  return lax.sub(transcendental.log(x), transcendental.log1p(lax.neg(x)))


logistic = _float_sampler("logistic", _logistic, """\
  Standard logistic samples: log(u) - log(1 - u).

  Example:
    >>> logistic(PRNGKey(0), (3,)).shape
    (3,)
  """)


def _cauchy(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  u = uniform(key, shape, dtype, minval=dtypes.finfo(dtype).eps, maxval=1.)
  return transcendental.tan(lax.mul(np.array(np.pi, dtype), lax.sub(u, np.array(0.5, dtype))))


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


@takes_out_sharding
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
  bits = _random_bits(key, 32, (2,) + shape)
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


@takes_out_sharding
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
  return transcendental.exp(ufuncs.multiply(normal(key, shape, dtype), sigma))


@takes_out_sharding
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
  return transcendental.exp(ufuncs.divide(exponential(key, shape, dtype), b))


@takes_out_sharding
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
  return lax.mul(scale, transcendental.sqrt(lax.mul(transcendental.log(u), np.array(-2, dtype))))


@takes_out_sharding
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


@takes_out_sharding
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
  sqrt_term = transcendental.sqrt(4 * mean * y + mean_sq * lax.integer_pow(y, 2))
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


@takes_out_sharding
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


@takes_out_sharding
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
