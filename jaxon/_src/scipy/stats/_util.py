"""Helpers shared by the jaxon.scipy.stats distributions.

Distributions follow JAX's conventions, which are SciPy's except where a jittable function
cannot branch on data: out-of-support points give -inf log-density (0 density) and invalid
parameters give NaN, both chosen with `where` so that every branch is computed and the
result stays differentiable where it is finite.
"""
from __future__ import annotations

import math
from typing import Any

import jaxon.numpy as jnp
from jaxon._src.numpy.ufuncs import _promote_args_inexact

LOG_2PI = math.log(2 * math.pi)


def promote(fun_name: str, *args: Any) -> list[Any]:
  """Promotes to one inexact dtype and broadcasts ranks, naming `fun_name` in errors."""
  return _promote_args_inexact(fun_name, *args)


def standardize(x: Any, loc: Any, scale: Any) -> Any:
  """(x - loc) / scale, the argument every location-scale family is a function of."""
  return (x - loc) / scale


def log1mexp(t: Any) -> Any:
  """log(1 - exp(-t)) for t >= 0, switching at log 2 between the two forms that keep
  precision (expm1 for small t, log1p for large t)."""
  return jnp.where(t < math.log(2), jnp.log(-jnp.expm1(-t)), jnp.log1p(-jnp.exp(-t)))


def outside_support(value: Any, condition: Any, fill: float = -math.inf) -> Any:
  """`value` with `fill` (-inf, as for a log-density outside the support) where `condition`."""
  return jnp.where(condition, fill, value)


def invalid_to_nan(value: Any, condition: Any) -> Any:
  """`value` with NaN where the distribution's parameters are invalid."""
  return jnp.where(condition, math.nan, value)


def probability_out_of_range(q: Any) -> Any:
  """True where a quantile function's argument is NaN or outside [0, 1]."""
  return jnp.isnan(q) | (q < 0) | (q > 1)
