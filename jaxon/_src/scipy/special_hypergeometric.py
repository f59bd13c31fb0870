"""Hypergeometric functions of `jaxon.scipy.special` (`hyp1f1`, `hyp2f1`) and the
Bernoulli numbers.

The methods are JAX 0.10.2's, after Pearson, Olver and Porter (2014, arXiv:1407.7786):
Taylor series summed in `while_loop`s until a term falls below the dtype's epsilon
relative to the sum (at most 250 terms), an asymptotic series for 1F1 at |x| >= 100, and
for 2F1 near x = 1 the digamma transformation (Abramowitz and Stegun 15.3.10-12). Both are
`jnp.vectorize`d scalar functions, so each element takes its own branch.

Their derivatives are `custom_jvp` rules: in x the contiguous relation
d/dx pFq = (prod a / prod b) pFq(a + 1; b + 1), in each parameter the series of
d/da (a)_k = (a)_k (psi(a + k) - psi(a)) summed in a loop like the function's.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, dtypes
from jaxon._src.api import jit
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow.conditionals import cond
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.scipy.special import digamma, gamma
from jaxon._src.scipy.special_error import _real_only

_MAX_TERMS = 250


def _sum_series(first_term: Any, step: Callable[[Any], Any], x: Any,
                weight: Callable[[Any], Any] | None = None, total: Any = 1) -> Any:
  """total + sum_{k>=1} t_k w(k), with t_1 = first_term and t_{k+1} = t_k step(k), summed
  until a term is below epsilon relative to the sum or after 250 terms."""
  eps = np.finfo(dtypes.dtype(x)).eps

  def body(carry: tuple) -> tuple:
    total, k, term = carry
    total = total + (term if weight is None else term * weight(k))
    return total, k + 1, term * step(k)

  def keep_going(carry: tuple) -> Any:
    total, k, term = carry
    return (k < _MAX_TERMS) & (jnp.abs(term) / jnp.abs(total) > eps)

  total = jnp.asarray(total, dtypes.dtype(x))
  return while_loop(keep_going, body, (total, jnp.asarray(1, dtypes.dtype(x)), first_term))[0]


# ----------------------------------------------------------------------------- hyp1f1

def _hyp1f1_step(a: Any, b: Any, x: Any) -> Callable[[Any], Any]:
  return lambda k: (a + k) / (b + k) * x / (k + 1)


def _hyp1f1_series(a: Any, b: Any, x: Any) -> Any:
  return _sum_series(a / b * x, _hyp1f1_step(a, b, x), x)


def _hyp1f1_asymptotic(a: Any, b: Any, x: Any) -> Any:
  """Gamma(b)/Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / (k! x^k), for large x > 0."""
  series = _sum_series((b - a) * (1 - a) / x, lambda k: (b - a + k) * (1 - a + k) / (k + 1) / x,
                       x)
  return gamma(b) / gamma(a) * jnp.exp(x) * x ** (a - b) * series


@jit
@jnp.vectorize
def _hyp1f1_scalar(a: Any, b: Any, x: Any) -> Any:
  result = cond(jnp.abs(x) < 100, _hyp1f1_series, _hyp1f1_asymptotic, a, b, x)
  index = ((a == 0) * 1 + ((a == b) & (a != 0)) * 2 + ((b == 0) & (a != 0)) * 3).astype(np.int32)
  return lax.select_n(index, result, jnp.ones_like(x), jnp.exp(x), jnp.full_like(x, np.inf))


@jit
@jnp.vectorize
def _hyp1f1_da(a: Any, b: Any, x: Any) -> Any:
  return _sum_series(a / b * x, _hyp1f1_step(a, b, x), x,
                     lambda k: digamma(a + k) - digamma(a), total=0)


@jit
@jnp.vectorize
def _hyp1f1_db(a: Any, b: Any, x: Any) -> Any:
  return _sum_series(a / b * x, _hyp1f1_step(a, b, x), x,
                     lambda k: digamma(b) - digamma(b + k), total=0)


@custom_jvp
def _hyp1f1(a: Any, b: Any, x: Any) -> Any:
  return _hyp1f1_scalar(a, b, x)


_hyp1f1.defjvps(
    lambda g, y, a, b, x: _hyp1f1_da(a, b, x) * g,
    lambda g, y, a, b, x: _hyp1f1_db(a, b, x) * g,
    lambda g, y, a, b, x: a / b * _hyp1f1(a + 1, b + 1, x) * g)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
  """Kummer's confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k x^k / ((b)_k k!),
  behind the noncentral chi-square and the moments of many distributions. Real inputs only;
  1F1(0; 0; x) is 1 (SciPy gives inf), and large results lose accuracy in float32.

  JAX implementation of `scipy.special.hyp1f1`."""
  return _hyp1f1(*_real_only("hyp1f1", a, b, x))


# ----------------------------------------------------------------------------- hyp2f1

def _near_int(v: Any, eps: Any) -> Any:
  return jnp.abs(v - jnp.round(v)) < eps


def _hyp2f1_terminating(a: Any, b: Any, c: Any, x: Any) -> Any:
  """The polynomial 2F1 when a (or b) is a non-positive integer -m: m + 1 terms. Uses the
  parameter that ends the series first, unless c would hit a pole before it."""
  eps = np.finfo(dtypes.dtype(x)).eps * 50
  c_pole_first = (c % 1 == 0) & (c <= 0) & (c > b)
  swap = (b < a) & _near_int(b, eps) & ~c_pole_first
  a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
  m = jnp.abs(a)

  def body(carry: tuple) -> tuple:
    i, total, term = carry
    term = term * (-(m - i + 1) / (c + i - 1) * (b + i - 1) / i * x)
    return i + 1, total + term, term

  one = jnp.ones_like(x)
  return while_loop(lambda carry: carry[0] < m + 1, body, (one, one, one))[1]


def _hyp2f1_series(a: Any, b: Any, c: Any, x: Any) -> Any:
  return _sum_series(jnp.ones_like(x), lambda k: (a + k - 1) * (b + k - 1) / (c + k - 1) / k * x,
                     x, total=0)


def _hyp2f1_digamma_transform(a: Any, b: Any, c: Any, x: Any) -> Any:
  """2F1 for x near 1 when c - a - b is an integer (where the usual 1 - x transformation
  has canceling poles): A&S 15.3.10-12, a digamma series in 1 - x plus a finite sum."""
  eps = np.finfo(dtypes.dtype(x)).eps
  d = c - a - b
  s = 1 - x
  rd = jnp.round(d)
  e = jnp.where(rd >= 0, d, -d)
  d1 = jnp.where(rd >= 0, d, 0)
  d2 = jnp.where(rd >= 0, 0, d)
  ard = jnp.where(rd >= 0, rd, -rd).astype(np.int32)
  log_s = jnp.log(s)
  y = (digamma(jnp.ones_like(x)) + digamma(1 + e) - digamma(a + d1) - digamma(b + d1)
       - log_s) / gamma(e + 1)
  p = (a + d1) * (b + d1) * s / gamma(e + 2)

  def body(carry: tuple) -> tuple:
    t, p, _, y = carry
    r = digamma(1 + t) + digamma(1 + t + e) - digamma(a + t + d1) - digamma(b + t + d1) - log_s
    q = p * r
    p = p * (s * (a + t + d1) / (t + 1))
    p = p * ((b + t + d1) / (t + 1 + e))
    return t + 1, p, q, y + q

  def keep_going(carry: tuple) -> Any:
    t, _, q, y = carry
    return (t < _MAX_TERMS) & (jnp.abs(q) >= eps * jnp.abs(y))

  y = while_loop(keep_going, body, (jnp.ones_like(x), p, y, y))[3]

  def finite_sum(carry: tuple) -> tuple:
    i, t, p, y1 = carry
    p = p * (s * (a + t + d2) * (b + t + d2) / (1 - e + t)) / (t + 1)
    return i + 1, t + 1, p, y1 + p

  one = jnp.ones_like(x)
  y1 = while_loop(lambda carry: carry[0] < ard, finite_sum, (1, 0 * one, one, one))[3]
  gc = gamma(c)
  y1 = y1 * gamma(e) * gc / (gamma(a + d1) * gamma(b + d1))
  y_signed = y * gc / (gamma(a + d2) * gamma(b + d2))
  y_signed = jnp.where((ard & 1) != 0, -y_signed, y_signed)
  q = s ** rd
  mixed = jnp.where(rd > 0, y_signed * q + y1, y_signed + y1 * q)
  return jnp.where(rd == 0, y * gc / (gamma(a) * gamma(b)), mixed)


def _hyp2f1_any(a: Any, b: Any, c: Any, x: Any) -> Any:
  eps = np.finfo(dtypes.dtype(x)).eps * 50
  d = c - a - b
  terminates = ((a <= 0) & _near_int(a, eps)) | ((b <= 0) & _near_int(b, eps))
  index = jnp.where((x > 0.9) & ~terminates, jnp.where(_near_int(d, eps), 1, 0),
                    jnp.where(terminates, 2, 0)).astype(np.int32)
  return lax.select_n(index, _hyp2f1_series(a, b, c, x), _hyp2f1_digamma_transform(a, b, c, x),
                      _hyp2f1_terminating(a, b, c, x))


@jit
@jnp.vectorize
def _hyp2f1_scalar(a: Any, b: Any, c: Any, x: Any) -> Any:
  eps = np.finfo(dtypes.dtype(x)).eps * 50
  d = c - a - b
  s = 1 - x
  index = jnp.select(
      [(x == 0) | (((a == 0) | (b == 0)) & (c != 0)),
       (c == 0) | ((c < 0) & (c % 1 == 0)),
       (d <= -1) & ~(~_near_int(d, eps) & (s < 0)),
       (d <= 0) & (x == 1),
       (x < 1) & (b == c),
       (x < 1) & (a == c),
       x > 1,
       x == 1],
      [0, 1, 2, 1, 3, 4, 1, 5], 6).astype(np.int32)
  return lax.select_n(
      index, jnp.ones_like(x), jnp.full_like(x, np.inf),
      s ** d * _hyp2f1_any(c - a, c - b, c, x),  # Euler's transformation
      s ** -a, s ** -b,
      gamma(c) * gamma(d) / (gamma(c - a) * gamma(c - b)),  # Gauss's theorem at x = 1
      _hyp2f1_any(a, b, c, x))


def _hyp2f1_parameter_derivative(weight: Callable[..., Any]) -> Callable[..., Any]:
  @jit
  @jnp.vectorize
  def derivative(a: Any, b: Any, c: Any, x: Any) -> Any:
    return _sum_series(a * b / c * x, lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x, x,
                       lambda k: weight(a, b, c, k), total=0)
  return derivative


_hyp2f1_da = _hyp2f1_parameter_derivative(lambda a, b, c, k: digamma(a + k) - digamma(a))
_hyp2f1_db = _hyp2f1_parameter_derivative(lambda a, b, c, k: digamma(b + k) - digamma(b))
_hyp2f1_dc = _hyp2f1_parameter_derivative(lambda a, b, c, k: digamma(c) - digamma(c + k))


@custom_jvp
def _hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
  return _hyp2f1_scalar(a, b, c, x)


_hyp2f1.defjvps(
    lambda g, y, a, b, c, x: _hyp2f1_da(a, b, c, x) * g,
    lambda g, y, a, b, c, x: _hyp2f1_db(a, b, c, x) * g,
    lambda g, y, a, b, c, x: _hyp2f1_dc(a, b, c, x) * g,
    lambda g, y, a, b, c, x: a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x) * g)


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
  """Gauss's hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k x^k / ((c)_k k!),
  which contains the Legendre, Jacobi and incomplete beta functions as special cases. Real
  inputs; inf for x > 1 (no analytic continuation), and large results lose accuracy in
  float32.

  JAX implementation of `scipy.special.hyp2f1`."""
  return _hyp2f1(*_real_only("hyp2f1", a, b, c, x))


# ----------------------------------------------------------------------------- bernoulli

def bernoulli(n: int) -> Any:
  """The Bernoulli numbers B_0 ... B_n (with B_1 = -1/2), for Euler-Maclaurin and
  Taylor coefficients of tan and coth. Even ones from B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) /
  (2 pi)^(2k), the zeta sum cut at 50 terms (2^-50 is below float64's epsilon).

  JAX implementation of `scipy.special.bernoulli`; `n` must be a concrete integer."""
  n = core.concrete_or_error(operator.index, n, "The argument n of bernoulli")
  if n < 0:
    raise ValueError("n must be a non-negative integer.")
  first = jnp.array([1, -1 / 2, 1 / 6])
  if n < 3:
    return first[:n + 1]
  m = jnp.arange(4, n + 1, 2, dtype=first.dtype)
  factor = (1 / np.pi ** 2) * jnp.cumprod(-(m - 1) * m / 4 / np.pi ** 2)
  k = jnp.arange(2, 50, dtype=first.dtype)
  zeta_tail = jnp.sum(k[:, None] ** -m[None, :], axis=0)
  return jnp.zeros(n + 1).at[:3].set(first).at[4::2].set(factor * (1 + zeta_tail))
