"""Continuous distributions with shape parameters: beta, chi2, gamma, pareto, t (each with
loc and scale), and gennorm, vonmises, wrapcauchy (shape only, as JAX's). Public modules
`jaxon.scipy.stats.<name>` re-export the `<name>_*` functions under SciPy's names.

Densities are written with `xlogy`/`xlog1py` so that a zero exponent times log(0) is 0 (the
density at the support's edge is finite when the exponent vanishes); distribution functions
are the regularized incomplete beta and gamma functions.
"""
from __future__ import annotations

import math
from typing import Any

import jaxon.numpy as jnp
from jaxon._src.scipy import special
from jaxon._src.scipy.stats._util import (LOG_2PI, invalid_to_nan, outside_support,
                                          probability_out_of_range, promote, standardize)

# ----------------------------------------------------------------------------- beta


def beta_logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Beta log-density, (a-1) log y + (b-1) log(1-y) - log B(a, b) - log(scale) on
  [loc, loc + scale]; NaN unless a, b, scale > 0.

  JAX implementation of `scipy.stats.beta.logpdf`."""
  x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
  y = standardize(x, loc, scale)
  log_kernel = special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y)
  value = outside_support(log_kernel - special.betaln(a, b) - jnp.log(scale),
                          (x < loc) | (x > loc + scale))
  return invalid_to_nan(value, (a <= 0) | (b <= 0) | (scale <= 0))


def beta_pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Beta density. JAX implementation of `scipy.stats.beta.pdf`."""
  return jnp.exp(beta_logpdf(x, a, b, loc, scale))


def _beta_y(name: str, x: Any, a: Any, b: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
  x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
  return jnp.clip(standardize(x, loc, scale), 0, 1), a, b


def beta_cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Beta distribution function, I_y(a, b). JAX implementation of `scipy.stats.beta.cdf`."""
  y, a, b = _beta_y("beta.cdf", x, a, b, loc, scale)
  return special.betainc(a, b, y)


def beta_logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the beta distribution function. JAX implementation of
  `scipy.stats.beta.logcdf`."""
  return jnp.log(beta_cdf(x, a, b, loc, scale))


def beta_sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Beta survival function, I_{1-y}(b, a) (not 1 - cdf, which loses the right tail).

  JAX implementation of `scipy.stats.beta.sf`."""
  y, a, b = _beta_y("beta.sf", x, a, b, loc, scale)
  return special.betainc(b, a, 1 - y)


def beta_logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the beta survival function. JAX implementation of `scipy.stats.beta.logsf`."""
  return jnp.log(beta_sf(x, a, b, loc, scale))

# ----------------------------------------------------------------------------- gamma, chi2
# chi2(df) is gamma(a = df / 2, scale = 2 scale).


def gamma_logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Gamma log-density, (a-1) log y - y - log Gamma(a) - log(scale) for x >= loc.

  JAX implementation of `scipy.stats.gamma.logpdf`."""
  x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
  inside = x >= loc
  y = jnp.where(inside, standardize(x, loc, scale), 1)  # keeps gradients finite outside
  log_probs = special.xlogy(a - 1, y) - y - special.gammaln(a) - jnp.log(scale)
  return outside_support(log_probs, ~inside)


def gamma_pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Gamma density. JAX implementation of `scipy.stats.gamma.pdf`."""
  return jnp.exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Gamma distribution function, P(a, y). JAX implementation of `scipy.stats.gamma.cdf`."""
  x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
  return special.gammainc(a, jnp.maximum(standardize(x, loc, scale), 0))


def gamma_logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the gamma distribution function. JAX implementation of
  `scipy.stats.gamma.logcdf`."""
  return jnp.log(gamma_cdf(x, a, loc, scale))


def gamma_sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Gamma survival function, Q(a, y) (1 left of loc).

  JAX implementation of `scipy.stats.gamma.sf`."""
  x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
  y = standardize(x, loc, scale)
  return jnp.where(y < 0, 1, special.gammaincc(a, jnp.maximum(y, 0)))


def gamma_logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the gamma survival function. JAX implementation of
  `scipy.stats.gamma.logsf`."""
  return jnp.log(gamma_sf(x, a, loc, scale))


def chi2_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Chi-squared log-density with `df` degrees of freedom.

  JAX implementation of `scipy.stats.chi2.logpdf`."""
  x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
  return gamma_logpdf(x, df / 2, loc, 2 * scale)


def chi2_pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Chi-squared density. JAX implementation of `scipy.stats.chi2.pdf`."""
  return jnp.exp(chi2_logpdf(x, df, loc, scale))


def chi2_cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Chi-squared distribution function. JAX implementation of `scipy.stats.chi2.cdf`."""
  x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
  return gamma_cdf(x, df / 2, loc, 2 * scale)


def chi2_logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the chi-squared distribution function. JAX implementation of
  `scipy.stats.chi2.logcdf`."""
  return jnp.log(chi2_cdf(x, df, loc, scale))


def chi2_sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Chi-squared survival function. JAX implementation of `scipy.stats.chi2.sf`."""
  x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
  return gamma_sf(x, df / 2, loc, 2 * scale)


def chi2_logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the chi-squared survival function. JAX implementation of
  `scipy.stats.chi2.logsf`."""
  return jnp.log(chi2_sf(x, df, loc, scale))

# ----------------------------------------------------------------------------- pareto


def _pareto_y(name: str, x: Any, b: Any, loc: Any, scale: Any) -> tuple[Any, ...]:
  x, b, loc, scale = promote(name, x, b, loc, scale)
  return standardize(x, loc, scale), b, scale, x < loc + scale


def pareto_logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Pareto log-density, log(b / scale) - (b + 1) log y for y >= 1.

  JAX implementation of `scipy.stats.pareto.logpdf`."""
  y, b, scale, below = _pareto_y("pareto.logpdf", x, b, loc, scale)
  return outside_support(jnp.log(b / scale) - (b + 1) * jnp.log(y), below)


def pareto_pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Pareto density. JAX implementation of `scipy.stats.pareto.pdf`."""
  return jnp.exp(pareto_logpdf(x, b, loc, scale))


def pareto_logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the Pareto survival function, -b log y.

  JAX implementation of `scipy.stats.pareto.logsf`."""
  y, b, _, below = _pareto_y("pareto.logsf", x, b, loc, scale)
  return outside_support(-b * jnp.log(y), below, 0.0)


def pareto_sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Pareto survival function. JAX implementation of `scipy.stats.pareto.sf`."""
  return jnp.exp(pareto_logsf(x, b, loc, scale))


def pareto_cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Pareto distribution function, 1 - y^-b.

  JAX implementation of `scipy.stats.pareto.cdf`."""
  y, b, _, below = _pareto_y("pareto.cdf", x, b, loc, scale)
  return outside_support(-jnp.expm1(-b * jnp.log(y)), below, 0.0)


def pareto_logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Log of the Pareto distribution function, log1p(-y^-b).

  JAX implementation of `scipy.stats.pareto.logcdf`."""
  y, b, _, below = _pareto_y("pareto.logcdf", x, b, loc, scale)
  return outside_support(jnp.log1p(-jnp.power(y, -b)), below)


def pareto_ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Pareto quantile function, loc + scale (1 - q)^(-1/b); NaN outside [0, 1].

  JAX implementation of `scipy.stats.pareto.ppf`."""
  q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
  return invalid_to_nan(loc + scale * jnp.power(1 - q, -1 / b), probability_out_of_range(q))

# ----------------------------------------------------------------------------- t


def t_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Student's t log-density with `df` degrees of freedom.

  JAX implementation of `scipy.stats.t.logpdf`."""
  x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
  z = standardize(x, loc, scale)
  half_df_plus_half = df / 2 + 0.5
  log_norm = (special.gammaln(df / 2) - special.gammaln(half_df_plus_half)
              + 0.5 * jnp.log(math.pi * df * scale * scale))
  return -(log_norm + half_df_plus_half * jnp.log1p(z * z / df))


def t_pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
  """Student's t density. JAX implementation of `scipy.stats.t.pdf`."""
  return jnp.exp(t_logpdf(x, df, loc, scale))

# ----------------------------------------------------------------------------- gennorm


def gennorm_logpdf(x: Any, beta: Any) -> Any:
  """Generalized normal log-density, log(beta / 2) - log Gamma(1 / beta) - |x|^beta.

  JAX implementation of `scipy.stats.gennorm.logpdf`."""
  x, beta = promote("gennorm.logpdf", x, beta)
  return jnp.log(beta / 2) - special.gammaln(1 / beta) - jnp.power(jnp.abs(x), beta)


def gennorm_pdf(x: Any, beta: Any) -> Any:
  """Generalized normal density. JAX implementation of `scipy.stats.gennorm.pdf`."""
  return jnp.exp(gennorm_logpdf(x, beta))


def gennorm_cdf(x: Any, beta: Any) -> Any:
  """Generalized normal distribution function, (1 + sign(x) P(1/beta, |x|^beta)) / 2.

  JAX implementation of `scipy.stats.gennorm.cdf`."""
  x, beta = promote("gennorm.cdf", x, beta)
  return 0.5 * (1 + jnp.sign(x) * special.gammainc(1 / beta, jnp.power(jnp.abs(x), beta)))

# ----------------------------------------------------------------------------- circular


def vonmises_logpdf(x: Any, kappa: Any) -> Any:
  """Von Mises log-density, kappa (cos x - 1) - log(2 pi i0e(kappa)); NaN unless kappa > 0.

  Written with the scaled Bessel function i0e = exp(-kappa) i0 so that large kappa does
  not overflow. JAX implementation of `scipy.stats.vonmises.logpdf`."""
  x, kappa = promote("vonmises.logpdf", x, kappa)
  value = kappa * (jnp.cos(x) - 1) - LOG_2PI - jnp.log(special.i0e(kappa))
  return invalid_to_nan(value, ~(kappa > 0))


def vonmises_pdf(x: Any, kappa: Any) -> Any:
  """Von Mises density. JAX implementation of `scipy.stats.vonmises.pdf`."""
  return jnp.exp(vonmises_logpdf(x, kappa))


def wrapcauchy_logpdf(x: Any, c: Any) -> Any:
  """Wrapped Cauchy log-density on [0, 2 pi], log((1 - c^2) / (2 pi (1 + c^2 - 2 c cos x)));
  NaN unless 0 < c < 1.

  JAX implementation of `scipy.stats.wrapcauchy.logpdf`."""
  x, c = promote("wrapcauchy.logpdf", x, c)
  value = jnp.log1p(-c * c) - LOG_2PI - jnp.log(1 + c * c - 2 * c * jnp.cos(x))
  value = outside_support(value, (x < 0) | (x > 2 * math.pi))
  return invalid_to_nan(value, ~((c > 0) & (c < 1)))


def wrapcauchy_pdf(x: Any, c: Any) -> Any:
  """Wrapped Cauchy density. JAX implementation of `scipy.stats.wrapcauchy.pdf`."""
  return jnp.exp(wrapcauchy_logpdf(x, c))
