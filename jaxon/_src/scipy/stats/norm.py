"""jaxon.scipy.stats.norm: the normal distribution with location `loc` and scale `scale`.

Every function standardises z = (x - loc) / scale and defers to the special functions,
which are accurate in the tails (`log_ndtr`, `ndtri`); the survival functions use the
symmetry sf(x) = cdf(-z) rather than 1 - cdf(x).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax
from jaxon._src.numpy.ufuncs import _promote_args_inexact
from jaxon._src.scipy import special


def _const(x: Any, value: Any) -> np.ndarray:
  return np.array(value, dtypes.dtype(x, canonicalize=True))


def _standardize(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any]:
  x, loc, scale = _promote_args_inexact(f"norm.{name}", x, loc, scale)
  return lax.div(lax.sub(x, loc), scale), scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the probability density, -z^2 / 2 - log(scale) - log(2 pi) / 2.

  JAX implementation of `scipy.stats.norm.logpdf`."""
  z, scale = _standardize("logpdf", x, loc, scale)
  log_norm = lax.add(transcendental.log(scale), _const(z, 0.5 * math.log(2 * math.pi)))
  return lax.sub(lax.mul(_const(z, -0.5), lax.mul(z, z)), log_norm)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Probability density.

  JAX implementation of `scipy.stats.norm.pdf`."""
  return transcendental.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Cumulative distribution function.

  JAX implementation of `scipy.stats.norm.cdf`."""
  return special.ndtr(_standardize("cdf", x, loc, scale)[0])


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the cumulative distribution function (accurate far into the left tail).

  JAX implementation of `scipy.stats.norm.logcdf`."""
  return special.log_ndtr(_standardize("logcdf", x, loc, scale)[0])


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Survival function 1 - cdf, computed as cdf(-z) (accurate in the right tail).

  JAX implementation of `scipy.stats.norm.sf`."""
  return special.ndtr(lax.neg(_standardize("sf", x, loc, scale)[0]))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the survival function.

  JAX implementation of `scipy.stats.norm.logsf`."""
  return special.log_ndtr(lax.neg(_standardize("logsf", x, loc, scale)[0]))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Percent point function, the inverse of `cdf`: loc + scale ndtri(q).

  JAX implementation of `scipy.stats.norm.ppf`."""
  q, loc, scale = _promote_args_inexact("norm.ppf", q, loc, scale)
  return lax.add(lax.mul(special.ndtri(q), scale), loc)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Inverse survival function, the inverse of `sf`: loc - scale ndtri(q).

  JAX implementation of `scipy.stats.norm.isf`."""
  q, loc, scale = _promote_args_inexact("norm.isf", q, loc, scale)
  return lax.sub(loc, lax.mul(special.ndtri(q), scale))
