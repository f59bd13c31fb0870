"""The samplers of jaxon.random that JAX draws in loops: gamma by Marsaglia and Tsang's
rejection method and everything built on it (`loggamma`, `beta`, `dirichlet`, `t`,
`chisquare`, `f`, `generalized_normal`, `ball`), `poisson` (Knuth's product of uniforms,
Hormann's transformed rejection), `binomial` (inversion by geometric jumps, BTRS rejection)
and `multinomial` (a `scan` of conditional binomials).

Each loop draws from keys split exactly as JAX splits them and computes with the same
operations in the same order, so the same key gives JAX's numbers bit for bit, in both
layouts of `jax_threefry_partitionable`. A rejection loop runs until every element of the
batch is accepted: under `vmap` (and in `random_gamma`'s lowering, which vmaps over the
elements) finished elements keep their values while the others draw again.

Gamma samples are differentiable in `a` by implicit reparameterization: `random_gamma_p`'s
JVP is d sample / d a = -(dF/da) / (dF/dx) at the sample, `lax.random_gamma_grad`.
"""
from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

from jaxon._src.lax.sharding_constraint import takes_out_sharding
from jaxon._src import api, core, dtypes, prng_keys
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, reductions, shape_ops
from jaxon._src.lax.control_flow.loops import map as lax_map
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.random_gamma_grad import random_gamma_grad
from jaxon._src.nn.functions import softmax
from jaxon._src.numpy import lax_numpy, ufuncs
from jaxon._src.numpy import reductions as jnp_reductions
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy import util as np_util
from jaxon._src.random import (
    Array,
    KeyArray,
    Shape,
    _check_key,
    _check_shape,
    _dtype,
    _jit,
    _result_shape,
    _shape,
    _split,
)
from jaxon._src.random_continuous import exponential, normal, rademacher, uniform
from jaxon._src.xla import deferred

# ----------------------------------------------------------------------------- helpers


def _check_safe_to_cast(name: str, dtype: np.dtype, *args: Any) -> None:
  """JAX refuses parameters that `dtype` cannot hold without loss (a float32 array for a
  float16 sampler); weakly typed Python scalars always fit."""
  for arg in args:
    if dtypes.result_type(arg, dtype) != dtype:
      raise dtypes.TypePromotionError(
          f"In arguments to {name}, cannot safely cast argument of type "
          f"{dtypes.dtype(arg, canonicalize=True)} to {dtype}")


def _float_args(name: str, key: Any, shape: Any, dtype: Any, *params: Any, cast_check: bool
                ) -> tuple[Array, tuple[int, ...] | None, np.dtype]:
  """The checked key, shape and float dtype of a sampler with float parameters; the
  parameters must broadcast to `shape` (None: their broadcast shape)."""
  key = _check_key(name, key)
  dtype = _dtype(name, float if dtype is None else dtype, np.floating, "a float")
  if shape is not None:
    shape = _shape(name, shape)
    _check_shape(name, shape, *(np.shape(p) for p in params))
  if cast_check:
    _check_safe_to_cast(name, dtype, *params)
  return key, shape, dtype


def _isnan(x: Any) -> Any:
  return lax.ne(x, x)


# ----------------------------------------------------------------------------- random_gamma_p


def _gamma_one(key: KeyArray, alpha: Any, log_space: bool) -> Any:
  """One Gamma(alpha) sample by Marsaglia and Tsang's method ("A simple method for
  generating gamma variables", 2000): for d = alpha - 1/3, d (1 + c x)^3 with x standard
  normal is accepted by a squeeze test or the exact log test. alpha < 1 samples
  Gamma(alpha + 1) and multiplies by u^(1/alpha) (added in log space for `loggamma`, where
  the product would underflow)."""
  dtype = dtypes.dtype(alpha)
  zero, one, two, minus_one = (np.array(v, dtype) for v in (0, 1, 2, -1))
  boost_mask = lax.ge(alpha, one)
  alpha_orig = alpha
  alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(alpha, np.array(1. / 3., dtype))
  c = lax.div(np.array(1. / 3., dtype), transcendental.sqrt(d))

  def rejected(state: tuple) -> Any:
    _, x_sq, v, u = state
    squeeze = lax.ge(u, lax.sub(one, lax.mul(np.array(0.0331, dtype), lax.mul(x_sq, x_sq))))
    exact = lax.ge(transcendental.log(u), lax.add(
        lax.mul(x_sq, np.array(0.5, dtype)),
        lax.mul(d, lax.add(lax.sub(one, v), transcendental.log(v)))))
    return lax.bitwise_and(squeeze, exact)

  def draw_positive_v(state: tuple) -> tuple:
    key, subkey = _split(state[0])
    x = normal(subkey, (), dtype)
    return key, x, lax.add(one, lax.mul(x, c))

  def propose(state: tuple) -> tuple:
    key, x_key, u_key = _split(state[0], 3)
    _, x, v = while_loop(lambda s: lax.le(s[2], zero), draw_positive_v, (x_key, zero, minus_one))
    u = uniform(u_key, (), dtype)
    return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

  key, subkey = _split(key)
  _, _, v, _ = while_loop(rejected, propose, (key, zero, one, two))  # starts rejected
  if log_space:
    log_u = lax.neg(exponential(subkey, (), dtype))  # log(1 - u), as exponential draws it
    log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_u, zero)), zero,
                           lax.mul(log_u, lax.div(one, alpha_orig)))
    return lax.add(lax.add(transcendental.log(d), transcendental.log(v)), log_boost)
  u = lax.sub(one, uniform(subkey, (), dtype))
  boost = lax.select(boost_mask, one, transcendental.pow(u, lax.div(one, alpha_orig)))
  return lax.mul(lax.mul(d, v), boost)


def _gamma_impl(key: KeyArray, a: Any, *, log_space: bool) -> Any:
  """Each key (one, or a batch of them matching a's leading dimensions) is split into one
  key per element of its slice of `a`; the elements are sampled under `vmap`."""
  split_count = math.prod(a.shape[key.ndim:])
  keys = prng_keys.random_split(shape_ops.reshape(key, (key.size,)), (split_count,))
  samples = api.vmap(lambda k, alpha: _gamma_one(k, alpha, log_space))(
      shape_ops.reshape(keys, (a.size,)), shape_ops.reshape(a, (a.size,)))
  return shape_ops.reshape(samples, a.shape)


def _random_gamma_abstract_eval(key: core.ShapedArray, a: core.ShapedArray, *,
                                log_space: bool) -> core.ShapedArray:
  if not prng_keys.is_key_dtype(key.dtype) or key.shape != a.shape[:key.ndim]:
    raise TypeError(f"random_gamma: key must be an array of PRNG keys whose shape leads "
                    f"a's, got key {key.str_short()} and a {a.str_short()}.")
  return core.ShapedArray(a.shape, a.dtype)


def _gamma_grad(sample: Any, a: Any, log_space: bool) -> Any:
  """d sample / d a, element by element in a `map` (JAX's CPU path). A log-space sample
  needs d exp(s) / da / exp(s), with exp(s) kept from underflowing to 0."""
  samples = shape_ops.reshape(sample, (sample.size,))
  alphas = shape_ops.reshape(a, (a.size,))
  if log_space:
    samples = transcendental.exp(samples)
    tiny = lax.full_like(samples, dtypes.finfo(samples.dtype).tiny)
    samples = lax.select(lax.eq(samples, lax.full_like(samples, 0)), tiny, samples)
    grads = lax_map(lambda args: lax.div(random_gamma_grad(*args), args[1]), (alphas, samples))
  else:
    grads = lax_map(lambda args: random_gamma_grad(*args), (alphas, samples))
  return shape_ops.reshape(grads, np.shape(a))


def _random_gamma_jvp(primals: tuple, tangents: tuple, *, log_space: bool) -> tuple:
  key, a = primals
  sample = random_gamma_p.bind(key, a, log_space=log_space)
  a_dot = tangents[1]
  if type(a_dot) is ad.Zero:
    return sample, ad.Zero(core.get_aval(sample).to_tangent_aval())
  return sample, lax.mul(a_dot, _gamma_grad(sample, a, log_space))


def _random_gamma_batch(vals: tuple, dims: tuple, *, log_space: bool) -> tuple:
  """Key and `a` with the batch dimension first: the key's batch dimensions then lead a's,
  which `_gamma_impl` handles."""
  size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  key, a = (batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims))
  return random_gamma_p.bind(key, a, log_space=log_space), 0


random_gamma_p = core.Primitive("random_gamma")
random_gamma_p.def_impl(functools.partial(deferred.apply_primitive, random_gamma_p))
random_gamma_p.def_abstract_eval(_random_gamma_abstract_eval)
mlir.register_lowering(random_gamma_p, mlir.lower_fun(_gamma_impl, multiple_results=False))
ad.primitive_jvps[random_gamma_p] = _random_gamma_jvp
batching.primitive_batchers[random_gamma_p] = _random_gamma_batch

# ----------------------------------------------------------------------------- gamma family


@takes_out_sharding
def gamma(key: KeyArray, a: Any, shape: Shape | None = None, dtype: Any = None) -> Array:
  """Gamma(a, 1) samples (density x^(a-1) e^-x / Gamma(a)); divide by a rate or multiply
  by a scale for other Gamma distributions.

  Differentiable in `a` (implicit reparameterization: the derivative of the sample at a
  fixed quantile).

  Args:
    key: a PRNG key.
    a: the shape parameter, > 0 (an array broadcast to `shape`).
    shape: the shape of the result; default `a`'s shape.
    dtype: a float dtype (default float32, float64 with 64-bit types on).

  Example:
    >>> gamma(PRNGKey(0), 2., (3,)).shape
    (3,)
  """
  key, shape, dtype = _float_args("gamma", key, shape, dtype, cast_check=False)
  return _gamma(key, a, shape, dtype, False)


@takes_out_sharding
def loggamma(key: KeyArray, a: Any, shape: Shape | None = None, dtype: Any = None) -> Array:
  """log of Gamma(a, 1) samples, computed in log space: exp(loggamma(...)) equals
  gamma(...) with the same key, but stays accurate for small `a`, whose samples often
  underflow to 0.

  Example:
    >>> loggamma(PRNGKey(0), 0.01, (3,)).shape
    (3,)
  """
  key, shape, dtype = _float_args("loggamma", key, shape, dtype, cast_check=False)
  return _gamma(key, a, shape, dtype, True)


@_jit(2, 3, 4)
def _gamma(key: KeyArray, a: Any, shape: tuple[int, ...] | None, dtype: np.dtype,
           log_space: bool) -> Array:
  shape = _result_shape("gamma", shape, a)
  a = lax.convert_element_type(a, dtype)
  if np.shape(a) != shape:
    a = jnp_shape.broadcast_to(a, shape)
  return random_gamma_p.bind(key, a, log_space=log_space)


@takes_out_sharding
def beta(key: KeyArray, a: Any, b: Any, shape: Shape | None = None, dtype: Any = None
         ) -> Array:
  """Beta(a, b) samples: G_a / (G_a + G_b) for independent Gamma samples, formed from
  their logs so that small parameters do not give 0 / 0.

  Example:
    >>> beta(PRNGKey(0), 2., 3., (3,)).shape
    (3,)
  """
  key, shape, dtype = _float_args("beta", key, shape, dtype, a, b, cast_check=True)
  return _beta(key, a, b, shape, dtype)


@_jit(3, 4)
def _beta(key: KeyArray, a: Any, b: Any, shape: tuple[int, ...] | None, dtype: np.dtype
          ) -> Array:
  shape = _result_shape("beta", shape, a, b)
  key_a, key_b = _split(key)
  a, b = (jnp_shape.broadcast_to(lax.convert_element_type(v, dtype), shape) for v in (a, b))
  log_gamma_a = loggamma(key_a, a, shape, dtype)
  log_gamma_b = loggamma(key_b, b, shape, dtype)
  log_max = lax.max(log_gamma_a, log_gamma_b)
  gamma_a_scaled = ufuncs.exp(log_gamma_a - log_max)
  gamma_b_scaled = ufuncs.exp(log_gamma_b - log_max)
  return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


@takes_out_sharding
def dirichlet(key: KeyArray, alpha: Any, shape: Shape | None = None, dtype: Any = None
              ) -> Array:
  """Dirichlet(alpha) samples (points of the simplex): normalized Gamma(alpha_i) samples,
  taken as a softmax of their logs.

  Args:
    key: a PRNG key.
    alpha: the concentrations, shape (..., n).
    shape: the batch shape of the result (broadcast with alpha.shape[:-1]); the result has
      shape shape + (n,). Default alpha.shape[:-1].
    dtype: a float dtype.

  Example:
    >>> dirichlet(PRNGKey(0), jnp.array([1., 2., 3.]), (4,)).shape
    (4, 3)
  """
  key = _check_key("dirichlet", key)
  dtype = _dtype("dirichlet", float if dtype is None else dtype, np.floating, "a float")
  return _dirichlet(key, alpha, None if shape is None else _shape("dirichlet", shape), dtype)


@_jit(2, 3)
def _dirichlet(key: KeyArray, alpha: Any, shape: tuple[int, ...] | None, dtype: np.dtype
               ) -> Array:
  if np.ndim(alpha) < 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
  if shape is None:
    shape = np.shape(alpha)[:-1]
  else:
    _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
  alpha = lax.convert_element_type(alpha, dtype)
  return softmax(loggamma(key, alpha, shape + np.shape(alpha)[-1:], dtype), -1)


@takes_out_sharding
def t(key: KeyArray, df: Any, shape: Shape | None = None, dtype: Any = None) -> Array:
  """Student's t samples with `df` degrees of freedom: z sqrt((df/2) / G), z standard
  normal and G Gamma(df/2).

  Example:
    >>> t(PRNGKey(0), 3., (3,)).shape
    (3,)
  """
  key, shape, dtype = _float_args("t", key, shape, dtype, df, cast_check=True)
  return _t(key, df, shape, dtype)


@_jit(2, 3)
def _t(key: KeyArray, df: Any, shape: tuple[int, ...] | None, dtype: np.dtype) -> Array:
  shape = _result_shape("t", shape, df)
  df = lax.convert_element_type(df, dtype)
  key_n, key_g = _split(key)
  n = normal(key_n, shape, dtype)
  half_df = lax.div(df, np.array(2, dtype))
  g = gamma(key_g, half_df, shape, dtype)
  return n * ufuncs.sqrt(half_df / g)


@takes_out_sharding
def chisquare(key: KeyArray, df: Any, shape: Shape | None = None, dtype: Any = None
              ) -> Array:
  """Chi-square samples with `df` degrees of freedom: twice Gamma(df/2), drawn in log
  space.

  Example:
    >>> chisquare(PRNGKey(0), 3., (3,)).shape
    (3,)
  """
  key, shape, dtype = _float_args("chisquare", key, shape, dtype, df, cast_check=True)
  return _chisquare(key, df, _result_shape("chisquare", shape, df), dtype)


@_jit(2, 3)
def _chisquare(key: KeyArray, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  two = np.array(2, dtype)
  half_df = lax.div(lax.convert_element_type(df, dtype), two)
  return lax.mul(ufuncs.exp(loggamma(key, half_df, shape, dtype)), two)


@takes_out_sharding
def f(key: KeyArray, dfnum: Any, dfden: Any, shape: Shape | None = None, dtype: Any = None
      ) -> Array:
  """F-distribution samples: (X1 / dfnum) / (X2 / dfden) for chi-square samples X1, X2.

  As in JAX, `dfnum` and `dfden` must have the rank of the result (lax division).

  Example:
    >>> f(PRNGKey(0), 2., 5., (3,)).shape
    (3,)
  """
  key, shape, dtype = _float_args("f", key, shape, dtype, dfnum, dfden, cast_check=True)
  return _f(key, dfnum, dfden, _result_shape("f", shape, dfnum, dfden), dtype)


@_jit(3, 4)
def _f(key: KeyArray, dfnum: Any, dfden: Any, shape: tuple[int, ...], dtype: np.dtype
       ) -> Array:
  dfnum, dfden = (lax.convert_element_type(v, dtype) for v in (dfnum, dfden))
  key_dfd, key_dfn = _split(key)
  chi2_dfn = chisquare(key_dfn, dfnum, shape, dtype)
  chi2_dfd = chisquare(key_dfd, dfden, shape, dtype)
  return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


@takes_out_sharding
def generalized_normal(key: KeyArray, p: Any, shape: Shape = (), dtype: Any = None) -> Array:
  """Samples of density proportional to exp(-|x|^p): a random sign times G^(1/p), G
  Gamma(1/p).

  Example:
    >>> generalized_normal(PRNGKey(0), 1.5, (3,)).shape
    (3,)
  """
  key = _check_key("generalized_normal", key)
  dtype = _dtype("generalized_normal", float if dtype is None else dtype, np.floating,
                 "a float")
  return _generalized_normal(key, p, _shape("generalized_normal", shape), dtype)


@_jit(2, 3)
def _generalized_normal(key: KeyArray, p: Any, shape: tuple[int, ...], dtype: np.dtype
                        ) -> Array:
  gamma_key, sign_key = _split(key)
  g = gamma(gamma_key, 1 / p, shape, dtype)
  return rademacher(sign_key, shape, dtype) * g ** (1 / p)


@takes_out_sharding
def ball(key: KeyArray, d: int, p: Any = 2, shape: Shape = (), dtype: Any = None) -> Array:
  """Points uniform in the unit Lp ball of dimension `d` (Barthe, Guedon, Mendelson and
  Naor, 2005): generalized normal coordinates divided by (sum |g|^p + e)^(1/p), e
  exponential.

  Returns:
    An array of shape (*shape, d).

  Example:
    >>> ball(PRNGKey(0), 3, shape=(5,)).shape
    (5, 3)
  """
  key = _check_key("ball", key)
  dtype = _dtype("ball", float if dtype is None else dtype, np.floating, "a float")
  d = core.concrete_or_error(operator.index, d, "The error occurred in jaxon.random.ball()")
  return _ball(key, p, d, _shape("ball", shape), dtype)


@_jit(2, 3, 4)
def _ball(key: KeyArray, p: Any, d: int, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  norm_key, exp_key = _split(key)
  g = generalized_normal(norm_key, p, (*shape, d), dtype)
  e = exponential(exp_key, shape, dtype)
  radius = (jnp_reductions.sum(ufuncs.abs(g) ** p, -1) + e) ** (1 / p)
  return g / radius[..., None]


# ----------------------------------------------------------------------------- poisson


@takes_out_sharding
def poisson(key: KeyArray, lam: Any, shape: Shape | None = None, dtype: Any = None) -> Array:
  """Poisson(lam) counts: Knuth's product of uniforms for lam < 10, Hormann's transformed
  rejection (PTRS) above, as TensorFlow and NumPy do. lam is computed in float32.

  Args:
    key: a PRNG key.
    lam: the rate, >= 0 (an array broadcast to `shape`).
    shape: the shape of the result; default `lam`'s shape.
    dtype: an integer dtype (default int32, int64 with 64-bit types on).

  Example:
    >>> poisson(PRNGKey(0), 3., (3,)).dtype
    dtype('int32')
  """
  key = _check_key("poisson", key)
  dtype = _dtype("poisson", int if dtype is None else dtype, np.integer, "an int")
  shape = np.shape(lam) if shape is None else _shape("poisson", shape)
  lam = lax.convert_element_type(jnp_shape.broadcast_to(lam, shape), np.float32)
  return _poisson(key, lam, shape, dtype)


def _loop_limit(dtype: np.dtype) -> Any:
  """JAX's bound on a sampler's iterations: the largest value of the output dtype (the
  loop counter is compared in that dtype)."""
  info = dtypes.iinfo(dtype) if dtypes.issubdtype(dtype, np.integer) else dtypes.finfo(dtype)
  return np.array(info.max, dtype)[()]


@_jit(2, 3)
def _poisson(key: KeyArray, lam: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  """Both algorithms run on every element (with harmless rates where the other one is
  used) and a select picks; lam = 0 gives 0."""
  use_knuth = _isnan(lam) | (lam < 10)
  lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
  lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
  max_iters = _loop_limit(dtype)
  result = lax.select(use_knuth, _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                      _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
  return lax.select(lam == 0, lax_numpy.zeros_like(result), result)


def _poisson_knuth(key: KeyArray, lam: Array, shape: tuple[int, ...], dtype: np.dtype,
                   max_iters: Any) -> Array:
  """The number of uniforms whose product stays above e^-lam, minus one."""
  def body(carry: tuple) -> tuple:
    i, k, key, log_prod = carry
    key, subkey = _split(key)
    k = lax.select(log_prod > -lam, k + 1, k)
    u = uniform(subkey, shape, np.float32)
    return i + 1, k, key, log_prod + ufuncs.log(u)

  def going(carry: tuple) -> Any:
    i, _, _, log_prod = carry
    return reductions.reduce_or(log_prod > -lam, tuple(range(len(shape)))) & (i < max_iters)

  k_init = lax.full_like(lam, 0, dtype, shape)
  log_prod_init = lax.full_like(lam, 0, np.float32, shape)
  k = while_loop(going, body, (0, k_init, key, log_prod_init))[1]
  return (k - 1).astype(dtype)


def _poisson_rejection(key: KeyArray, lam: Array, shape: tuple[int, ...], dtype: np.dtype,
                       max_iters: Any) -> Array:
  """Hormann's PTRS ("The transformed rejection method for generating Poisson random
  variables", 1993): a hat function of u, v uniform, with a cheap acceptance region."""
  log_lam = transcendental.log(lam)
  b = 0.931 + 2.53 * transcendental.sqrt(lam)
  a = -0.059 + 0.02483 * b
  inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
  v_r = 0.9277 - 3.6224 / (b - 2)

  def body(carry: tuple) -> tuple:
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _split(key, 3)
    u = uniform(subkey_0, shape, lam.dtype) - 0.5
    v = uniform(subkey_1, shape, lam.dtype)
    u_shifted = 0.5 - abs(u)
    k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
    s = transcendental.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
    log_pmf = -lam + k * log_lam - transcendental.lgamma(k + 1)
    accept_fast = (u_shifted >= 0.07) & (v <= v_r)
    reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
    accept = accept_fast | (~reject & (s <= log_pmf))
    return i + 1, lax.select(accept, k, k_out), accepted | accept, key

  k_init = lax.full_like(lam, -1, lam.dtype, shape)
  accepted = lax.full_like(lam, False, np.dtype(bool), shape)
  k = while_loop(_any_rejected(shape, max_iters), body, (0, k_init, accepted, key))[1]
  return k.astype(dtype)


def _any_rejected(shape: tuple[int, ...], max_iters: Any) -> Any:
  """The condition of a rejection loop whose carry is (i, samples, accepted, key)."""
  def going(carry: tuple) -> Any:
    i, _, accepted, _ = carry
    return reductions.reduce_or(~accepted, tuple(range(len(shape)))) & (i < max_iters)
  return going


# ----------------------------------------------------------------------------- binomial


def binomial(key: KeyArray, n: Any, p: Any, shape: Shape | None = None, dtype: Any = None
             ) -> Array:
  """Binomial(n, p) counts (as floats): inversion by geometric jumps where n min(p, 1-p)
  <= 10, the BTRS transformed rejection (Hormann, 1993) above, as TensorFlow does.

  NaN or negative n, and p outside [0, 1] or NaN, give NaN; n = inf gives inf; a
  fractional n counts floor(n) trials.

  Args:
    key: a PRNG key.
    n: the number of trials (broadcast to `shape`).
    p: the success probability (broadcast to `shape`).
    shape: the shape of the result; default the broadcast shape of `n` and `p`.
    dtype: a float dtype.

  Example:
    >>> binomial(PRNGKey(0), 10., 0.3, (3,)).shape
    (3,)
  """
  key = _check_key("binomial", key)
  np_util.check_arraylike("binomial", n, p)
  dtype = _dtype("binomial", float if dtype is None else dtype, np.floating, "a float")
  return _binomial(key, n, p, None if shape is None else _shape("binomial", shape), dtype)


@_jit(3, 4)
def _binomial(key: KeyArray, count: Any, prob: Any, shape: tuple[int, ...] | None,
              dtype: np.dtype) -> Array:
  """Both algorithms are drawn for q = min(p, 1 - p) (counts of the rarer outcome,
  mirrored back for p >= 1/2), with harmless parameters where the other one is used."""
  shape = _result_shape("binomial", shape, count, prob)
  (prob,) = np_util.promote_args_inexact("binomial", prob)
  count = jnp_shape.broadcast_to(lax.convert_element_type(count, prob.dtype), shape)
  prob = jnp_shape.broadcast_to(prob, shape)
  p_lt_half = prob < 0.5
  q = lax.select(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = _isnan(count) | (count < 0.0)
  count_inf = ufuncs.isinf(count)
  q_is_nan = _isnan(q)
  q_l_0 = q < 0.0
  q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = ufuncs.floor(count)
  count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
  count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
  q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
  max_iters = _loop_limit(dtype)
  samples = lax.select(use_inversion,
                       _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
                       _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = lax.select(invalid, lax_numpy.full_like(samples, np.nan, dtype), samples)
  samples = lax.select(count_inf & ~invalid, lax_numpy.full_like(samples, np.inf, dtype),
                       samples)
  return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                    count.astype(dtype) - samples)


def _binomial_inversion(key: KeyArray, count: Array, prob: Array, shape: tuple[int, ...],
                        dtype: np.dtype, max_iters: Any) -> Array:
  """The number of geometric(prob) waiting times that fit in `count` trials."""
  log1minusprob = ufuncs.log1p(-prob)

  def body(carry: tuple) -> tuple:
    i, num_geom, geom_sum, key = carry
    subkey, key = _split(key)  # JAX's order: the first key is drawn from
    num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = uniform(subkey, shape, prob.dtype)
    geom = ufuncs.ceil(ufuncs.log(u) / log1minusprob)
    return i + 1, num_geom_out, geom_sum + geom, key

  def going(carry: tuple) -> Any:
    i, _, geom_sum, _ = carry
    return reductions.reduce_or(geom_sum <= count, tuple(range(len(shape)))) & (i < max_iters)

  zeros = lax.full_like(prob, 0, prob.dtype, shape)
  k = while_loop(going, body, (0, zeros, zeros, key))[1]
  return (k - 1).astype(dtype)


def _btrs(key: KeyArray, count: Array, prob: Array, shape: tuple[int, ...], dtype: np.dtype,
          max_iters: Any) -> Array:
  """BTRS: a hat function of u, v uniform around the mode m, accepted by a cheap region
  or by the log-pmf ratio to the mode, with Stirling's series for the factorials."""
  stddev = ufuncs.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = ufuncs.floor((count + 1) * prob)

  def body(carry: tuple) -> tuple:
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _split(key, 3)
    u = uniform(subkey_0, shape, prob.dtype)
    v = uniform(subkey_1, shape, prob.dtype)
    u = u - 0.5
    us = 0.5 - ufuncs.abs(u)
    accept_fast = (us >= 0.07) & (v <= v_r)
    k = ufuncs.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = ufuncs.log(v * alpha / (a / (us * us) + b))
    upper_bound = ((m + 0.5) * ufuncs.log((m + 1) / (r * (count - m + 1)))
                   + (count + 1) * ufuncs.log((count - m + 1) / (count - k + 1))
                   + (k + 0.5) * ufuncs.log(r * (count - k + 1) / (k + 1))
                   + _stirling_approx_tail(m)
                   + _stirling_approx_tail(count - m)
                   - _stirling_approx_tail(k)
                   - _stirling_approx_tail(count - k))
    accept = accept_fast | (~reject & (v <= upper_bound))
    return i + 1, lax.select(accept, k, k_out), accepted | accept, key

  k_init = lax.full_like(prob, -1, prob.dtype, shape)
  carry = (0, k_init, lax_numpy.full(shape, False, bool), key)
  return while_loop(_any_rejected(shape, max_iters), body, carry)[1].astype(dtype)


# log(k!) - Stirling's approximation (k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2, k = 0..9.
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k: Array) -> Array:
  """The error of Stirling's approximation of log(k!): tabulated for k <= 9, else the
  first terms of its asymptotic series."""
  table = lax_numpy.asarray(np.array(_STIRLING_TAIL, k.dtype))
  use_table = k <= 9
  k = lax.clamp(np.array(0.0, k.dtype), k, np.array(9.0, k.dtype))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  return lax.select(use_table, table[lax_numpy.asarray(ufuncs.floor(k), dtype="int32")],
                    approx)


# ----------------------------------------------------------------------------- multinomial


def multinomial(key: KeyArray, n: Any, p: Any, *, shape: Shape | None = None,
                dtype: Any = None, unroll: int | bool = 1) -> Array:
  """Multinomial(n, p) counts (as floats), one outcome after another: the count of
  outcome i is Binomial(remaining trials, p_i / (p_i + ... + p_k)).

  Args:
    key: a PRNG key.
    n: the number of trials (broadcast to p.shape[:-1]).
    p: the outcome probabilities, outcomes along the last axis.
    shape: the shape of the result, outcomes last (as JAX's code reads it); default
      p.shape.
    dtype: a float dtype (default float32, float64 with 64-bit types on).
    unroll: how many steps of the scan over outcomes to unroll (the values do not change).

  Example:
    >>> multinomial(PRNGKey(0), 10., jnp.array([0.2, 0.8])).shape
    (2,)
  """
  key = _check_key("multinomial", key)
  np_util.check_arraylike("multinomial", n, p)
  dtype = _dtype("multinomial", float if dtype is None else dtype, np.floating, "a float")
  n, p = np_util.promote_args_inexact("multinomial", n, p)
  shape = p.shape if shape is None else _shape("multinomial", shape)
  n = jnp_shape.broadcast_to(n, shape[:-1])
  p = jnp_shape.broadcast_to(p, shape)
  return _multinomial(key, n, p, dtype, unroll)


@_jit(3, 4)
def _multinomial(key: KeyArray, n: Array, p: Array, dtype: np.dtype, unroll: int | bool
                 ) -> Array:
  def draw(remainder: Array, ratio_key: tuple) -> tuple:
    ratio, key = ratio_key
    count = binomial(key, remainder, ufuncs.clip(ratio, 0, 1), dtype=remainder.dtype)
    return remainder - count, count

  p = jnp_shape.moveaxis(p, -1, 0)
  remaining_probs = reductions.cumsum(p, 0, reverse=True)
  ratios = p / ufuncs.where(remaining_probs == 0, 1, remaining_probs)
  keys = prng_keys.random_split(key, (ratios.shape[0],))
  _, counts = scan(draw, n, (ratios, keys), unroll=unroll)
  return jnp_shape.moveaxis(counts, 0, -1).astype(dtype)
