"""jaxon.scipy.stats.truncnorm: the normal distribution truncated to [a, b] (in standardised
units z = (x - loc) / scale).

Everything rests on the log of the normal mass between two points, log(Phi(b) - Phi(a)),
computed in whichever form does not cancel: as a difference of `log_ndtr`s in the tails (by
symmetry, always the left tail) and as log1p(-Phi(a) - Phi(-b)) when the interval straddles 0.
Truncation points with a >= b give NaN.
"""
from __future__ import annotations

from typing import Any

import jaxon.numpy as jnp
from jaxon._src.jit import jit
from jaxon._src.scipy import special
from jaxon._src.scipy.stats import norm
from jaxon._src.scipy.stats._util import (invalid_to_nan, log1mexp, outside_support, promote,
                                          standardize)


def _log_gauss_mass(a: Any, b: Any) -> Any:
  """log(Phi(b) - Phi(a)) for a <= b, accurate in both tails and in the middle."""
  right_tail = a > 0
  left_end = jnp.where(right_tail, -b, a)  # the right tail, mirrored onto the left
  right_end = jnp.where(right_tail, -a, b)
  log_right, log_left = special.log_ndtr(right_end), special.log_ndtr(left_end)
  tail = log_right + log1mexp(log_right - log_left)
  central = jnp.log1p(-special.ndtr(a) - special.ndtr(-b))
  return jnp.where((b <= 0) | right_tail, tail, central)


@jit
def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log-density: the normal log-density less the log mass of [a, b]; -inf outside.

  JAX implementation of `scipy.stats.truncnorm.logpdf`."""
  x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
  z = standardize(x, loc, scale)
  value = outside_support(norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b), (z < a) | (z > b))
  return invalid_to_nan(value, a >= b)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Density. JAX implementation of `scipy.stats.truncnorm.pdf`."""
  return jnp.exp(logpdf(x, a, b, loc, scale))


@jit
def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the distribution function, log(mass(a, z) / mass(a, b)); near 0 (above -0.1)
  it is taken as log1p(-sf) instead, which keeps the digits the ratio loses.

  JAX implementation of `scipy.stats.truncnorm.logcdf`."""
  x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
  z = standardize(x, loc, scale)
  inside = jnp.clip(z, a, b)
  log_mass = _log_gauss_mass(a, b)
  log_cdf = _log_gauss_mass(a, inside) - log_mass
  log_sf = _log_gauss_mass(inside, b) - log_mass
  value = jnp.select([z >= b, z <= a, log_cdf > -0.1],
                     [0.0, -jnp.inf, jnp.log1p(-jnp.exp(log_sf))], log_cdf)
  return invalid_to_nan(value, a >= b)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Distribution function. JAX implementation of `scipy.stats.truncnorm.cdf`."""
  return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the survival function, by reflection the logcdf of the mirrored distribution.

  JAX implementation of `scipy.stats.truncnorm.logsf`."""
  x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Survival function. JAX implementation of `scipy.stats.truncnorm.sf`."""
  return jnp.exp(logsf(x, a, b, loc, scale))
