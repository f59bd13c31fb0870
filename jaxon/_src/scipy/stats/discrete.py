"""Discrete distributions: bernoulli, binom, betabinom, geom, nbinom and poisson. Public
modules `jaxon.scipy.stats.<name>` re-export the `<name>_*` functions under SciPy's names.

Mass functions are written in log space with `gammaln`/`betaln` for the combinatorial factor
and `xlogy`/`xlog1py` so that p = 0 or p = 1 gives exact 0 / -inf; `k` is a float array
(after promotion) and, as in JAX, only poisson and betabinom look at its integrality.
"""
from __future__ import annotations

import math
from typing import Any

import jaxon.numpy as jnp
from jaxon._src.jit import jit
from jaxon._src.scipy import special
from jaxon._src.scipy.stats._util import invalid_to_nan, outside_support, promote

# ----------------------------------------------------------------------------- bernoulli


def bernoulli_logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
  """Bernoulli log-mass, log(1 - p) at k = loc and log p at k = loc + 1.

  JAX implementation of `scipy.stats.bernoulli.logpmf`."""
  k, p, loc = promote("bernoulli.logpmf", k, p, loc)
  y = k - loc
  return outside_support(special.xlogy(y, p) + special.xlog1py(1 - y, -p), (y < 0) | (y > 1))


def bernoulli_pmf(k: Any, p: Any, loc: Any = 0) -> Any:
  """Bernoulli mass. JAX implementation of `scipy.stats.bernoulli.pmf`."""
  return jnp.exp(bernoulli_logpmf(k, p, loc))


def _bernoulli_invalid(value: Any, p: Any) -> Any:
  return jnp.isnan(value) | jnp.isnan(p) | (p < 0) | (p > 1)


def bernoulli_cdf(k: Any, p: Any) -> Any:
  """Bernoulli distribution function: 0 below 0, 1 - p on [0, 1), 1 from 1; NaN for p
  outside [0, 1].

  JAX implementation of `scipy.stats.bernoulli.cdf`."""
  k, p = promote("bernoulli.cdf", k, p)
  return invalid_to_nan(jnp.where(k < 0, 0, jnp.where(k < 1, 1 - p, 1)),
                        _bernoulli_invalid(k, p))


def bernoulli_ppf(q: Any, p: Any) -> Any:
  """Bernoulli quantile function: 0 for q <= 1 - p, else 1; NaN for q or p outside [0, 1].

  JAX implementation of `scipy.stats.bernoulli.ppf`."""
  q, p = promote("bernoulli.ppf", q, p)
  return invalid_to_nan(jnp.where(q <= 1 - p, 0, 1),
                        _bernoulli_invalid(q, p) | (q < 0) | (q > 1))

# ----------------------------------------------------------------------------- binomials


def _log_binomial_coefficient(n: Any, k: Any) -> Any:
  """log C(n, k) for real n and k, -log(n + 1) - log B(n - k + 1, k + 1)."""
  return -jnp.log1p(n) - special.betaln(n - k + 1, k + 1)


def binom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
  """Binomial log-mass, log C(n, y) + y log p + (n - y) log(1 - p) for y = k - loc in
  [0, n]; exactly 0 where the mass is certain (n = 0, or p in {0, 1} at the matching end).

  JAX implementation of `scipy.stats.binom.logpmf`."""
  k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
  y = k - loc
  log_linear = special.xlogy(y, p) + special.xlog1py(n - y, -p)
  log_comb = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
  certain = ((y == 0) & (n == 0)) | (log_linear == 0)
  log_probs = jnp.where(certain, 0, log_comb + log_linear)
  return outside_support(log_probs, (y < 0) | (y >= n + 1))


def binom_pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
  """Binomial mass. JAX implementation of `scipy.stats.binom.pmf`."""
  return jnp.exp(binom_logpmf(k, n, p, loc))


@jit
def betabinom_logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
  """Beta-binomial log-mass, log C(n, y) + log B(y + a, n - y + b) - log B(a, b) for
  y = floor(k) - loc in [0, n]; NaN for n < 0 or a, b <= 0.

  JAX implementation of `scipy.stats.betabinom.logpmf`."""
  k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
  y = jnp.floor(k) - loc
  log_probs = (_log_binomial_coefficient(n, y) + special.betaln(y + a, n - y + b)
               - special.betaln(a, b))
  log_probs = jnp.where((y == 0) & (n == 0), 0, log_probs)
  log_probs = outside_support(log_probs, (y < -loc) | (y > n) | (y + a <= 0))
  return invalid_to_nan(log_probs, (n < 0) | (a <= 0) | (b <= 0))


def betabinom_pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
  """Beta-binomial mass. JAX implementation of `scipy.stats.betabinom.pmf`."""
  return jnp.exp(betabinom_logpmf(k, n, a, b, loc))


def nbinom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
  """Negative binomial log-mass (failures y = k - loc before the n-th success),
  log Gamma(y + n) - log Gamma(n) - log y! + n log p + y log(1 - p).

  JAX implementation of `scipy.stats.nbinom.logpmf`."""
  k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
  y = k - loc
  log_comb = special.gammaln(y + n) - special.gammaln(n) - special.gammaln(y + 1)
  log_probs = log_comb + special.xlogy(n, p) + special.xlog1py(y, -p)
  return outside_support(log_probs, k < loc)


def nbinom_pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
  """Negative binomial mass. JAX implementation of `scipy.stats.nbinom.pmf`."""
  return jnp.exp(nbinom_logpmf(k, n, p, loc))


def geom_logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
  """Geometric log-mass (trials y = k - loc up to the first success),
  (y - 1) log(1 - p) + log p for y >= 1.

  JAX implementation of `scipy.stats.geom.logpmf`."""
  k, p, loc = promote("geom.logpmf", k, p, loc)
  y = k - loc
  return outside_support(special.xlog1py(y - 1, -p) + jnp.log(p), y <= 0)


def geom_pmf(k: Any, p: Any, loc: Any = 0) -> Any:
  """Geometric mass. JAX implementation of `scipy.stats.geom.pmf`."""
  return jnp.exp(geom_logpmf(k, p, loc))

# ----------------------------------------------------------------------------- poisson


def poisson_logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
  """Poisson log-mass, y log mu - log y! - mu for integral y = k - loc >= 0.

  JAX implementation of `scipy.stats.poisson.logpmf`."""
  k, mu, loc = promote("poisson.logpmf", k, mu, loc)
  y = k - loc
  log_probs = special.xlogy(y, mu) - special.gammaln(y + 1) - mu
  return outside_support(log_probs, (y < 0) | (jnp.round(k) != k))


def poisson_pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
  """Poisson mass. JAX implementation of `scipy.stats.poisson.pmf`."""
  return jnp.exp(poisson_logpmf(k, mu, loc))


def poisson_cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
  """Poisson distribution function, Q(floor(y) + 1, mu).

  JAX implementation of `scipy.stats.poisson.cdf`."""
  k, mu, loc = promote("poisson.cdf", k, mu, loc)
  y = k - loc
  return outside_support(special.gammaincc(jnp.floor(y) + 1, mu), y < 0, 0.0)


# Below this mean the entropy is summed over the mass function (terms beyond
# mu + 10 sqrt(mu) + 20 are below the float64 resolution); above it, the asymptotic series.
_ENTROPY_SUM_MAX_MU = 100.0
_ENTROPY_SUM_TERMS = 250


def _poisson_entropy_by_sum(mu: Any) -> Any:
  k = jnp.arange(_ENTROPY_SUM_TERMS, dtype=mu.dtype)[:, None]
  masses = poisson_pmf(k, mu[None, :])
  masses = jnp.where(k < jnp.ceil(mu + 10 * jnp.sqrt(mu) + 20)[None, :], masses, 0)
  return jnp.sum(special.entr(masses), axis=0)


def _poisson_entropy_asymptotic(mu: Any) -> Any:
  """log(2 pi e mu) / 2 - 1/(12 mu) - 1/(24 mu^2) - 19/(360 mu^3), the large-mu expansion."""
  inv = 1 / mu
  return (0.5 * jnp.log(2 * math.pi * math.e * mu)
          - inv * (1 / 12 + inv * (1 / 24 + inv * (19 / 360))))


@jit
def poisson_entropy(mu: Any, loc: Any = 0) -> Any:
  """Entropy of the Poisson distribution with mean `mu` (`loc` only shifts the support, so
  it only broadcasts the result's shape); 0 at mu = 0.

  JAX implementation of `scipy.stats.poisson.entropy`."""
  mu, loc = promote("poisson.entropy", mu, loc)
  shape = jnp.broadcast_shapes(jnp.shape(mu), jnp.shape(loc))
  flat = jnp.ravel(mu)
  small = jnp.where(flat < _ENTROPY_SUM_MAX_MU, flat, 1)
  large = jnp.where(flat < _ENTROPY_SUM_MAX_MU, _ENTROPY_SUM_MAX_MU, flat)
  entropy = jnp.where(flat < _ENTROPY_SUM_MAX_MU, _poisson_entropy_by_sum(small),
                      _poisson_entropy_asymptotic(large))
  entropy = jnp.where(flat == 0, 0, entropy)
  return jnp.broadcast_to(entropy.reshape(jnp.shape(mu)), shape)
