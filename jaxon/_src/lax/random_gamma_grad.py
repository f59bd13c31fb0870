"""`random_gamma_grad`: the derivative of a Gamma(a, 1) sample with respect to `a`.

A sample x = F^-1(u; a) drawn by inverting the CDF F = P(a, x) (the regularized lower
incomplete gamma function) moves with `a` as dx/da = -(dP/da) / (dP/dx) at fixed u: the
implicit reparameterization gradient `jaxon.random.gamma` differentiates with. As in JAX
(and XLA's `RandomGammaGrad`), dP/da comes from the same series or continued fraction that
evaluate P (`special.py`), stepped until the derivative converges, and the division by the
density dP/dx = x^(a-1) e^-x / Gamma(a) is folded in analytically, so the prefactor
x^a e^-x / Gamma(a), which underflows for large `a`, never appears.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, utils
from jaxon._src.lax.special import _p_series, _q_continued_fraction


def random_gamma_grad(a: Any, x: Any) -> Any:
  """d x / d a for a sample `x` of Gamma(a, 1), elementwise (a, x broadcast together).

  float16 and bfloat16 are computed in float32 (the series needs its precision), as JAX
  does. Where a <= 0, x < 0 or either is NaN the result is NaN; at x = 0 it is 0.

  Example:
    >>> random_gamma_grad(jnp.float32(2.), jnp.float32(1.5))
  """
  a, x = lax.asarray(a), lax.asarray(x)
  utils.check_dtypes("random_gamma_grad", (np.floating,), *map(core.get_aval, (a, x)))
  shape = lax.broadcast_shapes(a.shape, x.shape)
  a, x = (lax.broadcast_in_dim(v, shape, range(len(shape) - v.ndim, len(shape)))
          for v in (a, x))
  dtype = a.dtype
  if dtype in (dtypes.bfloat16, np.float16):
    a, x = (lax.convert_element_type(v, np.float32) for v in (a, x))
  return lax.convert_element_type(_sample_derivative(a, x), dtype)


def _sample_derivative(a: Any, x: Any) -> Any:
  """With log(ax) = a log x - x - lgamma(a): the series S gives P = S ax / a, the
  continued fraction F gives P = 1 - F ax, and dividing their a-derivatives by the density
  ax / x leaves -(dS/da + S dlog(ax)/da) x / a and (dF/da + F dlog(ax)/da) x."""
  zero = lax.full_like(x, 0)
  is_nan = lax.bitwise_or(lax.ne(a, a), lax.ne(x, x))
  x_is_zero = lax.eq(x, zero)
  domain_error = lax.bitwise_or(lax.lt(x, zero), lax.le(a, lax.full_like(a, 0)))
  use_cf = lax.bitwise_and(lax.gt(x, lax.full_like(x, 1)), lax.gt(x, a))
  log_ax = lax.sub(lax.sub(lax.mul(a, transcendental.log(x)), x), transcendental.lgamma(a))
  underflow = lax.lt(log_ax, np.array(-np.log(dtypes.finfo(a.dtype).max), a.dtype))
  enabled = lax.bitwise_not(lax.bitwise_or(lax.bitwise_or(lax.bitwise_or(
      x_is_zero, domain_error), underflow), is_nan))
  log_x = transcendental.log(x)
  cf, dcf_da = _q_continued_fraction(a, x, lax.bitwise_and(enabled, use_cf), True)
  series, dseries_da = _p_series(a, x, lax.bitwise_and(enabled, lax.bitwise_not(use_cf)),
                                 True)
  cf_grad = lax.mul(lax.add(dcf_da, lax.mul(cf, lax.sub(log_x, transcendental.digamma(a)))), x)
  dlog_ax_series = lax.sub(log_x, transcendental.digamma(lax.add(a, np.array(1, a.dtype))))
  series_grad = lax.div(lax.mul(lax.neg(lax.add(dseries_da, lax.mul(series, dlog_ax_series))),
                                x), a)
  out = lax.select(use_cf, cf_grad, series_grad)
  out = lax.select(x_is_zero, lax.full_like(out, 0), out)
  return lax.select(lax.bitwise_or(domain_error, is_nan), lax.full_like(a, np.nan), out)
