"""Location-scale families without shape parameters: cauchy, expon, laplace, logistic,
uniform, gumbel_l and gumbel_r (each public module `jaxon.scipy.stats.<name>` re-exports the
`<name>_*` functions here under SciPy's names).

Each function standardises z = (x - loc) / scale; tails are computed in the form that keeps
precision (expm1/log1p, expit, survival functions by symmetry rather than 1 - cdf).
"""
from __future__ import annotations

import math
from typing import Any

import jaxon.numpy as jnp
from jaxon._src.scipy import special
from jaxon._src.scipy.stats._util import (invalid_to_nan, log1mexp, outside_support,
                                          probability_out_of_range, promote, standardize)

# ----------------------------------------------------------------------------- cauchy


def cauchy_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Cauchy log-density, -log(pi scale) - log1p(z^2).

  JAX implementation of `scipy.stats.cauchy.logpdf`."""
  x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
  z = standardize(x, loc, scale)
  return -(jnp.log(math.pi * scale) + jnp.log1p(z * z))


def cauchy_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Cauchy density. JAX implementation of `scipy.stats.cauchy.pdf`."""
  return jnp.exp(cauchy_logpdf(x, loc, scale))


def cauchy_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Cauchy distribution function, 1/2 + arctan(z) / pi.

  JAX implementation of `scipy.stats.cauchy.cdf`."""
  x, loc, scale = promote("cauchy.cdf", x, loc, scale)
  return 0.5 + jnp.arctan(standardize(x, loc, scale)) / math.pi


def cauchy_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the Cauchy distribution function. JAX implementation of
  `scipy.stats.cauchy.logcdf`."""
  return jnp.log(cauchy_cdf(x, loc, scale))


def cauchy_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Cauchy survival function, by symmetry cdf(-z) (accurate in the right tail).

  JAX implementation of `scipy.stats.cauchy.sf`."""
  x, loc, scale = promote("cauchy.sf", x, loc, scale)
  return cauchy_cdf(-x, -loc, scale)


def cauchy_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the Cauchy survival function. JAX implementation of
  `scipy.stats.cauchy.logsf`."""
  x, loc, scale = promote("cauchy.logsf", x, loc, scale)
  return cauchy_logcdf(-x, -loc, scale)


def cauchy_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Cauchy quantile function, loc + scale tan(pi (q - 1/2)).

  JAX implementation of `scipy.stats.cauchy.ppf`."""
  q, loc, scale = promote("cauchy.ppf", q, loc, scale)
  return loc + scale * jnp.tan(math.pi * q - math.pi / 2)


def cauchy_isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Cauchy inverse survival function, loc + scale tan(pi (1/2 - q)).

  JAX implementation of `scipy.stats.cauchy.isf`."""
  q, loc, scale = promote("cauchy.isf", q, loc, scale)
  return loc + scale * jnp.tan(math.pi / 2 - math.pi * q)

# ----------------------------------------------------------------------------- expon


def _expon_z(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
  x, loc, scale = promote(f"expon.{name}", x, loc, scale)
  return standardize(x, loc, scale), x < loc, scale


def expon_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Exponential log-density, -z - log(scale) for x >= loc.

  JAX implementation of `scipy.stats.expon.logpdf`."""
  z, below, scale = _expon_z("logpdf", x, loc, scale)
  return outside_support(-z - jnp.log(scale), below)


def expon_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Exponential density. JAX implementation of `scipy.stats.expon.pdf`."""
  return jnp.exp(expon_logpdf(x, loc, scale))


def expon_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Exponential distribution function, -expm1(-z) (accurate near loc).

  JAX implementation of `scipy.stats.expon.cdf`."""
  z, below, _ = _expon_z("cdf", x, loc, scale)
  return outside_support(-jnp.expm1(-z), below, 0.0)


def expon_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the exponential distribution function, log(1 - exp(-z)) in its stable form.

  JAX implementation of `scipy.stats.expon.logcdf`."""
  z, below, _ = _expon_z("logcdf", x, loc, scale)
  return outside_support(log1mexp(jnp.where(below, 1, z)), below)


def expon_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the exponential survival function, -z.

  JAX implementation of `scipy.stats.expon.logsf`."""
  z, below, _ = _expon_z("logsf", x, loc, scale)
  return outside_support(-z, below, 0.0)


def expon_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Exponential survival function. JAX implementation of `scipy.stats.expon.sf`."""
  return jnp.exp(expon_logsf(x, loc, scale))


def expon_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Exponential quantile function, loc - scale log1p(-q); NaN outside [0, 1].

  JAX implementation of `scipy.stats.expon.ppf`."""
  q, loc, scale = promote("expon.ppf", q, loc, scale)
  return invalid_to_nan(loc - scale * jnp.log1p(-q), probability_out_of_range(q))

# ----------------------------------------------------------------------------- laplace


def laplace_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Laplace log-density, -|z| - log(2 scale).

  JAX implementation of `scipy.stats.laplace.logpdf`."""
  x, loc, scale = promote("laplace.logpdf", x, loc, scale)
  return -(jnp.abs(standardize(x, loc, scale)) + jnp.log(2 * scale))


def laplace_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Laplace density. JAX implementation of `scipy.stats.laplace.pdf`."""
  return jnp.exp(laplace_logpdf(x, loc, scale))


def laplace_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Laplace distribution function, exp(z) / 2 left of loc and 1 - exp(-z) / 2 right of it.

  JAX implementation of `scipy.stats.laplace.cdf`."""
  x, loc, scale = promote("laplace.cdf", x, loc, scale)
  z = standardize(x, loc, scale)
  return jnp.where(z <= 0, 0.5 * jnp.exp(z), 1 - 0.5 * jnp.exp(-z))

# ----------------------------------------------------------------------------- logistic


def logistic_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Logistic log-density, -2 logaddexp(z/2, -z/2) - log(scale) (no overflow for large |z|).

  JAX implementation of `scipy.stats.logistic.logpdf`."""
  x, loc, scale = promote("logistic.logpdf", x, loc, scale)
  half_z = standardize(x, loc, scale) / 2
  return -2 * jnp.logaddexp(half_z, -half_z) - jnp.log(scale)


def logistic_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Logistic density. JAX implementation of `scipy.stats.logistic.pdf`."""
  return jnp.exp(logistic_logpdf(x, loc, scale))


def logistic_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Logistic distribution function, expit(z). JAX implementation of
  `scipy.stats.logistic.cdf`."""
  x, loc, scale = promote("logistic.cdf", x, loc, scale)
  return special.expit(standardize(x, loc, scale))


def logistic_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Logistic survival function, expit(-z). JAX implementation of
  `scipy.stats.logistic.sf`."""
  x, loc, scale = promote("logistic.sf", x, loc, scale)
  return special.expit(-standardize(x, loc, scale))


def logistic_ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Logistic quantile function, loc + scale logit(q).

  JAX implementation of `scipy.stats.logistic.ppf` (JAX names the argument `x`)."""
  x, loc, scale = promote("logistic.ppf", x, loc, scale)
  return loc + scale * special.logit(x)


def logistic_isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Logistic inverse survival function, loc - scale logit(q).

  JAX implementation of `scipy.stats.logistic.isf` (JAX names the argument `x`)."""
  x, loc, scale = promote("logistic.isf", x, loc, scale)
  return loc - scale * special.logit(x)

# ----------------------------------------------------------------------------- uniform


def uniform_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Uniform log-density on [loc, loc + scale], -log(scale).

  JAX implementation of `scipy.stats.uniform.logpdf`."""
  x, loc, scale = promote("uniform.logpdf", x, loc, scale)
  return outside_support(-jnp.log(scale), (x < loc) | (x > loc + scale))


def uniform_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Uniform density. JAX implementation of `scipy.stats.uniform.pdf`."""
  return jnp.exp(uniform_logpdf(x, loc, scale))


def uniform_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Uniform distribution function, z clipped to [0, 1] (0 at NaN, as JAX's).

  JAX implementation of `scipy.stats.uniform.cdf`."""
  x, loc, scale = promote("uniform.cdf", x, loc, scale)
  inside = (x >= loc) & (x <= loc + scale)
  return jnp.select([x < loc, x > loc + scale, inside], [0.0, 1.0, standardize(x, loc, scale)])


def uniform_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Uniform quantile function, loc + scale q; NaN outside [0, 1].

  JAX implementation of `scipy.stats.uniform.ppf`."""
  q, loc, scale = promote("uniform.ppf", q, loc, scale)
  return invalid_to_nan(loc + scale * q, probability_out_of_range(q))

# ----------------------------------------------------------------------------- gumbel
# gumbel_l(x) is gumbel_r(-x); both return NaN for scale <= 0 and (as JAX's) ppf is NaN at
# q = 0 and q = 1 rather than -inf / inf.


def _gumbel_z(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
  x, loc, scale = promote(name, x, loc, scale)
  return standardize(x, loc, scale), scale <= 0, scale


def gumbel_l_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Left-skewed Gumbel log-density, z - exp(z) - log(scale).

  JAX implementation of `scipy.stats.gumbel_l.logpdf`."""
  z, bad, scale = _gumbel_z("gumbel_l.logpdf", x, loc, scale)
  return invalid_to_nan(z - jnp.exp(z) - jnp.log(scale), bad)


def gumbel_l_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Left-skewed Gumbel density. JAX implementation of `scipy.stats.gumbel_l.pdf`."""
  return jnp.exp(gumbel_l_logpdf(x, loc, scale))


def gumbel_l_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the left-skewed Gumbel distribution function, log(1 - exp(-exp(z))).

  JAX implementation of `scipy.stats.gumbel_l.logcdf`."""
  z, bad, _ = _gumbel_z("gumbel_l.logcdf", x, loc, scale)
  return invalid_to_nan(log1mexp(jnp.exp(z)), bad)


def gumbel_l_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Left-skewed Gumbel distribution function. JAX implementation of
  `scipy.stats.gumbel_l.cdf`."""
  return jnp.exp(gumbel_l_logcdf(x, loc, scale))


def gumbel_l_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the left-skewed Gumbel survival function, -exp(z).

  JAX implementation of `scipy.stats.gumbel_l.logsf`."""
  z, bad, _ = _gumbel_z("gumbel_l.logsf", x, loc, scale)
  return invalid_to_nan(-jnp.exp(z), bad)


def gumbel_l_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Left-skewed Gumbel survival function. JAX implementation of
  `scipy.stats.gumbel_l.sf`."""
  return jnp.exp(gumbel_l_logsf(x, loc, scale))


def gumbel_l_ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Left-skewed Gumbel quantile function, loc + scale log(-log1p(-p)); NaN unless 0 < p < 1.

  JAX implementation of `scipy.stats.gumbel_l.ppf`."""
  p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
  return invalid_to_nan(loc + scale * jnp.log(-jnp.log1p(-p)), ~((p > 0) & (p < 1)))


def gumbel_r_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Right-skewed Gumbel log-density, -z - exp(-z) - log(scale).

  JAX implementation of `scipy.stats.gumbel_r.logpdf`."""
  z, bad, scale = _gumbel_z("gumbel_r.logpdf", x, loc, scale)
  return invalid_to_nan(-z - jnp.exp(-z) - jnp.log(scale), bad)


def gumbel_r_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Right-skewed Gumbel density. JAX implementation of `scipy.stats.gumbel_r.pdf`."""
  return jnp.exp(gumbel_r_logpdf(x, loc, scale))


def gumbel_r_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the right-skewed Gumbel distribution function, -exp(-z).

  JAX implementation of `scipy.stats.gumbel_r.logcdf`."""
  z, bad, _ = _gumbel_z("gumbel_r.logcdf", x, loc, scale)
  return invalid_to_nan(-jnp.exp(-z), bad)


def gumbel_r_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Right-skewed Gumbel distribution function. JAX implementation of
  `scipy.stats.gumbel_r.cdf`."""
  return jnp.exp(gumbel_r_logcdf(x, loc, scale))


def gumbel_r_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Right-skewed Gumbel survival function, -expm1(-exp(-z)) (accurate in the right tail).

  JAX implementation of `scipy.stats.gumbel_r.sf`."""
  z, bad, _ = _gumbel_z("gumbel_r.sf", x, loc, scale)
  return invalid_to_nan(-jnp.expm1(-jnp.exp(-z)), bad)


def gumbel_r_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the right-skewed Gumbel survival function, log(1 - exp(-exp(-z))).

  JAX implementation of `scipy.stats.gumbel_r.logsf`."""
  z, bad, _ = _gumbel_z("gumbel_r.logsf", x, loc, scale)
  return invalid_to_nan(log1mexp(jnp.exp(-z)), bad)


def gumbel_r_ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Right-skewed Gumbel quantile function, loc - scale log(-log p); NaN unless 0 < p < 1.

  JAX implementation of `scipy.stats.gumbel_r.ppf`."""
  p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
  return invalid_to_nan(loc - scale * jnp.log(-jnp.log(p)), ~((p > 0) & (p < 1)))
