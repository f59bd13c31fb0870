"""jaxon.scipy.special: SciPy's special functions, written with lax and jaxon.numpy.

Functions that XLA (or `jaxon._src.lax.special`) provides as primitives are thin wrappers
that promote their arguments to a float dtype. The rest are compositions whose gradients
stay finite where the function is finite: every `where` whose unused branch could produce
inf or NaN feeds that branch a harmless input instead (otherwise the zero cotangent of the
unused branch times an infinite derivative would poison the gradient with NaN).

jaxon has no `custom_jvp` yet, so `xlogy` and `xlog1py` get their derivative at x = 0 from
the way they are written (see `xlogy`), not from a rule.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax
from jaxon._src.lax import special as lax_special
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.numpy import misc, reductions, shape, ufuncs
from jaxon._src.numpy.ufunc_api import max_shifted_exp_sum
from jaxon._src.numpy.ufuncs import _promote_args_inexact
from jaxon._src.xla.eager_plans import memoize_eager_operations

_LOG_2PI = math.log(2 * math.pi)


def _const(x: Any, value: Any) -> np.ndarray:
  return np.array(value, dtypes.dtype(x, canonicalize=True))


def _is_double(x: Any) -> bool:
  return dtypes.dtype(x) == np.float64


def _promote_and_broadcast(name: str, *args: Any) -> list[Any]:
  """Float operands of one dtype and one shape (for compositions that `select`)."""
  return shape.broadcast_arrays(*_promote_args_inexact(name, *args))


def _unary(name: str, lax_fn: Any, doc: str) -> Any:
  def fn(x: Any) -> Any:
    (x,) = _promote_args_inexact(name, x)
    return lax_fn(x)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"{doc}\n\nJAX implementation of `scipy.special.{name}`."
  return fn


# ----------------------------------------------------------------------------- primitives

gammaln = _unary("gammaln", transcendental.lgamma,
                 "Log of the absolute value of the gamma function.")
erf = _unary("erf", transcendental.erf, "The error function.")
erfc = _unary("erfc", transcendental.erfc, "The complementary error function 1 - erf(x).")
erfinv = _unary("erfinv", transcendental.erf_inv, "The inverse of the error function on (-1, 1).")
expit = _unary("expit", transcendental.logistic, "The logistic sigmoid 1 / (1 + exp(-x)).")
i0e = _unary("i0e", lax_special.bessel_i0e,
             "Exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x).")
i1e = _unary("i1e", lax_special.bessel_i1e,
             "Exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x).")


def digamma(x: Any) -> Any:
  """The digamma function, d/dx log Gamma(x); -inf at +0 and inf at -0 as in SciPy (XLA
  gives NaN at both).

  JAX implementation of `scipy.special.digamma`."""
  (x,) = _promote_args_inexact("digamma", x)
  at_zero = lax.eq(x, _const(x, 0))
  safe_x = lax.select(at_zero, lax.full_like(x, 1), x)
  return lax.select(at_zero, lax.div(_const(x, -1), x), transcendental.digamma(safe_x))


def i0(x: Any) -> Any:
  """Modified Bessel function of order 0, I0(x) = exp(|x|) i0e(x).

  JAX implementation of `scipy.special.i0`."""
  (x,) = _promote_args_inexact("i0", x)
  return lax.mul(transcendental.exp(lax.abs(x)), lax_special.bessel_i0e(x))


def i1(x: Any) -> Any:
  """Modified Bessel function of order 1, I1(x) = exp(|x|) i1e(x).

  JAX implementation of `scipy.special.i1`."""
  (x,) = _promote_args_inexact("i1", x)
  return lax.mul(transcendental.exp(lax.abs(x)), lax_special.bessel_i1e(x))


def gammainc(a: Any, x: Any) -> Any:
  """Regularized lower incomplete gamma function P(a, x).

  Differentiable in `x` to any order and once in `a`. JAX implementation of
  `scipy.special.gammainc`."""
  a, x = _promote_args_inexact("gammainc", a, x)
  return lax_special.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Any:
  """Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

  JAX implementation of `scipy.special.gammaincc`."""
  a, x = _promote_args_inexact("gammaincc", a, x)
  return lax_special.igammac(a, x)


def betainc(a: Any, b: Any, x: Any) -> Any:
  """Regularized incomplete beta function I_x(a, b), by a continued fraction iterated to
  convergence (`lax.betainc`).

  Differentiable in `x` only, as in JAX. JAX implementation of `scipy.special.betainc`."""
  a, b, x = _promote_args_inexact("betainc", a, b, x)
  if dtypes.issubdtype(dtypes.dtype(x), np.complexfloating):
    raise ValueError("betainc does not support complex-valued inputs.")
  return lax_special.betainc(a, b, x)


def zeta(x: Any, q: Any = None) -> Any:
  """Hurwitz zeta function sum_k (k + q)^(-x); the Riemann zeta function when `q` is None.

  Differentiable in `q`. JAX implementation of `scipy.special.zeta`."""
  if q is None:
    q = 1.0
  x, q = _promote_args_inexact("zeta", x, q)
  return lax_special.zeta(x, q)


def polygamma(n: Any, x: Any) -> Any:
  """The n-th derivative of the digamma function (n a non-negative integer).

  JAX implementation of `scipy.special.polygamma`."""
  n, x = _promote_args_inexact("polygamma", n, x)
  return transcendental.polygamma(n, x)


# ----------------------------------------------------------------------------- gamma family

def _gamma_sign(x: Any) -> Any:
  """The sign of Gamma(x): 1 for x > 0, alternating between the poles below 0, NaN at the
  negative poles (Gamma has no sign there) and the sign of the zero at 0 (Gamma(±0) = ±inf)."""
  floor_x = lax.floor(x)
  odd_interval = lax.eq(lax.rem(floor_x, _const(x, 2)), _const(x, -1))
  negative = lax.select(odd_interval, lax.full_like(x, -1), lax.full_like(x, 1))
  sign = lax.select(lax.gt(x, _const(x, 0)), lax.full_like(x, 1), negative)
  sign = lax.select(lax.eq(x, _const(x, 0)), lax.sign(lax.div(_const(x, 1), x)), sign)
  pole = lax.bitwise_and(lax.lt(x, _const(x, 0)), lax.eq(x, floor_x))
  return lax.select(pole, lax.full_like(x, np.nan), sign)


def gammasgn(x: Any) -> Any:
  """The sign of the gamma function: 1 for x > 0, alternating between the poles below 0,
  ±1 at ±0, NaN at the poles, at -inf and at NaN.

  JAX implementation of `scipy.special.gammasgn`."""
  (x,) = _promote_args_inexact("gammasgn", x)
  return lax.select(lax.ne(x, x), x, _gamma_sign(x))


def gamma(x: Any) -> Any:
  """The gamma function, sign(Gamma(x)) exp(gammaln(x)) (NaN at the poles -1, -2, …).

  JAX implementation of `scipy.special.gamma`."""
  (x,) = _promote_args_inexact("gamma", x)
  return lax.mul(_gamma_sign(x), transcendental.exp(transcendental.lgamma(x)))


def betaln(a: Any, b: Any) -> Any:
  """Log of the absolute value of the beta function, gammaln(a) + gammaln(b) -
  gammaln(a + b).

  JAX implementation of `scipy.special.betaln`."""
  a, b = _promote_args_inexact("betaln", a, b)
  return lax.sub(lax.add(transcendental.lgamma(a), transcendental.lgamma(b)),
                 transcendental.lgamma(lax.add(a, b)))


def beta(a: Any, b: Any) -> Any:
  """The beta function Gamma(a) Gamma(b) / Gamma(a + b).

  JAX implementation of `scipy.special.beta`."""
  a, b = _promote_args_inexact("beta", a, b)
  sign = lax.mul(lax.mul(_gamma_sign(a), _gamma_sign(b)), _gamma_sign(lax.add(a, b)))
  return lax.mul(sign, transcendental.exp(betaln(a, b)))


def multigammaln(a: Any, d: int) -> Any:
  """Log of the multivariate gamma function of dimension `d`:
  d (d - 1) / 4 log(pi) + sum_{j < d} gammaln(a - j / 2).

  JAX implementation of `scipy.special.multigammaln`."""
  d = int(d)
  if d < 1:
    raise ValueError(f"multigammaln: d must be a positive integer, got {d}.")
  (a,) = _promote_args_inexact("multigammaln", a)
  total = lax.full_like(a, d * (d - 1) / 4 * math.log(math.pi))
  for j in range(d):
    total = lax.add(total, transcendental.lgamma(lax.sub(a, _const(a, j / 2))))
  return total


def loggamma(x: Any) -> Any:
  """The principal branch of log Gamma(x) for real x: gammaln(x) for x > 0, NaN for x < 0
  (where Gamma changes sign, so its real log is undefined), inf at 0.

  Complex arguments are not supported. JAX implementation of `scipy.special.loggamma`."""
  if dtypes.issubdtype(dtypes.dtype(x), np.complexfloating):
    raise TypeError("jax.scipy.special.loggamma: complex arguments are not supported.")
  (x,) = _promote_args_inexact("loggamma", x)
  negative = lax.lt(x, _const(x, 0))
  safe_x = lax.select(negative, lax.full_like(x, 1), x)
  return lax.select(negative, lax.full_like(x, np.nan), transcendental.lgamma(safe_x))


def factorial(n: Any, exact: bool = False) -> Any:
  """n! = Gamma(n + 1) for n >= 0 (real n allowed), 0 for n < 0.

  `exact=True` (integer arithmetic) is not supported. JAX implementation of
  `scipy.special.factorial`."""
  if exact:
    raise NotImplementedError("jax.scipy.special.factorial: exact=True is not supported.")
  (n,) = _promote_args_inexact("factorial", n)
  negative = lax.lt(n, _const(n, 0))
  safe_n = lax.select(negative, lax.full_like(n, 0), n)
  return lax.select(negative, lax.full_like(n, 0), gamma(lax.add(safe_n, _const(n, 1))))


def comb(N: Any, k: Any, *, exact: bool = False, repetition: bool = False) -> Any:
  """The number of combinations of N things taken k at a time, Gamma(N + 1) /
  (Gamma(k + 1) Gamma(N - k + 1)), for real 0 <= k <= N and 0 elsewhere. With
  `repetition`, combinations with repetition: comb(N + k - 1, k) (SciPy's generalized
  binomial coefficients for N < 0 are not reproduced: those give 0).

  `exact=True` (integer arithmetic) is not supported. JAX implementation of
  `scipy.special.comb`."""
  if exact:
    raise NotImplementedError("jax.scipy.special.comb: exact=True is not supported.")
  N, k = _promote_and_broadcast("comb", N, k)
  if repetition:  # comb(N + k - 1, k), but 1 for k = 0 even when N = 0
    empty = lax.bitwise_and(lax.eq(k, _const(k, 0)), lax.ge(N, _const(N, 0)))
    return lax.select(empty, lax.full_like(N, 1),
                      comb(lax.sub(lax.add(N, k), _const(N, 1)), k))
  zero = _const(N, 0)
  valid = lax.bitwise_and(lax.bitwise_and(lax.ge(k, zero), lax.ge(N, zero)), lax.le(k, N))
  safe_N = lax.select(valid, N, lax.full_like(N, 1))
  safe_k = lax.select(valid, k, lax.full_like(k, 0))
  one = _const(N, 1)
  log_comb = lax.sub(transcendental.lgamma(lax.add(safe_N, one)), lax.add(
      transcendental.lgamma(lax.add(safe_k, one)),
      transcendental.lgamma(lax.add(lax.sub(safe_N, safe_k), one))))
  return lax.select(valid, transcendental.exp(log_comb), lax.full_like(N, 0))


def poch(z: Any, m: Any) -> Any:
  """The Pochhammer symbol (rising factorial) Gamma(z + m) / Gamma(z); 1 where m == 0.

  JAX implementation of `scipy.special.poch`."""
  z, m = _promote_and_broadcast("poch", z, m)
  z_plus_m = lax.add(z, m)
  sign = lax.mul(_gamma_sign(z_plus_m), _gamma_sign(z))
  value = lax.mul(sign, transcendental.exp(
      lax.sub(transcendental.lgamma(z_plus_m), transcendental.lgamma(z))))
  return lax.select(lax.eq(m, _const(m, 0)), lax.full_like(z, 1), value)


# ----------------------------------------------------------------------------- logs

def _finite_positive(y: Any) -> Any:
  return lax.bitwise_and(lax.gt(y, _const(y, 0)), lax.lt(y, _const(y, np.inf)))


def xlogy(x: Any, y: Any) -> Any:
  """x * log(y), taken as 0 where x == 0 (unless y is NaN).

  JAX's custom derivatives: d/dx = log(y), d/dy = x / y (so at x = y = 0 they are -inf
  and NaN, as in JAX).

  JAX implementation of `scipy.special.xlogy`."""
  return _xlogy(*_promote_and_broadcast("xlogy", x, y))


@custom_jvp
def _xlogy(x: Any, y: Any) -> Any:
  keep = lax.bitwise_or(lax.ne(x, _const(x, 0)), lax.ne(y, y))
  return lax.select(keep, lax.mul(x, transcendental.log(y)), lax.full_like(x, 0))


@_xlogy.defjvp
def _xlogy_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
  (x, y), (dx, dy) = primals, tangents
  return _xlogy(x, y), lax.add(lax.mul(dx, transcendental.log(y)), lax.div(lax.mul(dy, x), y))


def xlog1py(x: Any, y: Any) -> Any:
  """x * log1p(y), taken as 0 where x == 0 (unless y is NaN); derivatives as JAX's
  (d/dx = log1p(y), d/dy = x / (1 + y)).

  JAX implementation of `scipy.special.xlog1py`."""
  return _xlog1py(*_promote_and_broadcast("xlog1py", x, y))


@custom_jvp
def _xlog1py(x: Any, y: Any) -> Any:
  keep = lax.bitwise_or(lax.ne(x, _const(x, 0)), lax.ne(y, y))
  return lax.select(keep, lax.mul(x, transcendental.log1p(y)), lax.full_like(x, 0))


@_xlog1py.defjvp
def _xlog1py_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
  (x, y), (dx, dy) = primals, tangents
  return _xlog1py(x, y), lax.add(lax.mul(dx, transcendental.log1p(y)),
                                 lax.div(lax.mul(dy, x), lax.add(y, _const(y, 1))))


@custom_jvp
def _xlogx(x: Any) -> Any:
  return _xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
  (x,), (dx,) = primals, tangents
  return _xlogx(x), lax.mul(dx, lax.add(transcendental.log(x), _const(x, 1)))


def entr(x: Any) -> Any:
  """Elementwise entropy -x log(x): 0 at x = 0, -inf for x < 0; its derivative is
  -(log x + 1), +inf at 0, as JAX's rule gives.

  JAX implementation of `scipy.special.entr`."""
  (x,) = _promote_args_inexact("entr", x)
  return lax.select(lax.lt(x, _const(x, 0)), lax.full_like(x, -np.inf), lax.neg(_xlogx(x)))


def rel_entr(p: Any, q: Any) -> Any:
  """Elementwise relative entropy p log(p / q): 0 where p == 0 and q >= 0, inf where
  p < 0 or q <= 0 otherwise.

  JAX implementation of `scipy.special.rel_entr`."""
  x, y = _promote_and_broadcast("rel_entr", p, q)
  both_positive = lax.bitwise_and(lax.gt(x, _const(x, 0)), lax.gt(y, _const(y, 0)))
  safe_x = lax.select(both_positive, x, lax.full_like(x, 1))
  safe_y = lax.select(both_positive, y, lax.full_like(y, 1))
  value = lax.mul(safe_x, transcendental.log(lax.div(safe_x, safe_y)))
  zero = lax.bitwise_and(lax.eq(x, _const(x, 0)), lax.ge(y, _const(y, 0)))
  edge = lax.select(zero, lax.full_like(x, 0), lax.full_like(x, np.inf))
  return lax.select(both_positive, value, edge)


def kl_div(p: Any, q: Any) -> Any:
  """Elementwise Kullback-Leibler divergence p log(p / q) - p + q: q where p == 0 and
  q >= 0, inf where p < 0 or q <= 0 otherwise.

  JAX implementation of `scipy.special.kl_div`."""
  x, y = _promote_and_broadcast("kl_div", p, q)
  return lax.add(rel_entr(x, y), lax.sub(y, x))


def boxcox(x: Any, lmbda: Any) -> Any:
  """The Box-Cox transformation (x^lmbda - 1) / lmbda, log(x) at lmbda = 0.

  JAX implementation of `scipy.special.boxcox`."""
  x, lmbda = _promote_and_broadcast("boxcox", x, lmbda)
  return _boxcox_of_log(transcendental.log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
  """The Box-Cox transformation of 1 + x, accurate for small x.

  JAX implementation of `scipy.special.boxcox1p`."""
  x, lmbda = _promote_and_broadcast("boxcox1p", x, lmbda)
  return _boxcox_of_log(transcendental.log1p(x), lmbda)


def _boxcox_of_log(log_x: Any, lmbda: Any) -> Any:
  """expm1(lmbda log x) / lmbda, or log x where |lmbda| is below 1e-19 as in SciPy (the
  division then gets lmbda = 1, so its unused branch cannot put NaN in gradients)."""
  tiny = lax.lt(lax.abs(lmbda), _const(lmbda, 1e-19))
  safe_lmbda = lax.select(tiny, lax.full_like(lmbda, 1), lmbda)
  return lax.select(tiny, log_x,
                    lax.div(transcendental.expm1(lax.mul(safe_lmbda, log_x)), safe_lmbda))


def logit(x: Any) -> Any:
  """The inverse of `expit`, log(x / (1 - x)).

  JAX implementation of `scipy.special.logit`."""
  (x,) = _promote_args_inexact("logit", x)
  return transcendental.log(lax.div(x, lax.sub(_const(x, 1), x)))


# ----------------------------------------------------------------------------- logsumexp

@memoize_eager_operations
def logsumexp(a: Any, axis: int | Sequence[int] | None = None, b: Any = None,
              keepdims: bool = False, return_sign: bool = False, where: Any = None) -> Any:
  """log(sum(b * exp(a))) over `axis`, computed without overflow.

  Args:
    a: the input.
    axis: the axes to reduce (default: all).
    b: optional weights, broadcasting against `a`; entries where b == 0 are skipped.
    keepdims: keep the reduced axes with size 1.
    return_sign: also return the sign of the sum (then the result is log|sum|).
    where: optional mask of the entries that count.

  Returns:
    The log of the sum, or `(log|sum|, sign)` with `return_sign`. Without `return_sign`,
    a negative sum gives NaN.

  The maximum is subtracted before exponentiating and added back as a constant to
  differentiation, so the gradient is the softmax of `a`. Where the maximum is not finite
  it is not subtracted, as in JAX: a slice of -inf gives -inf, one holding +inf gives +inf,
  and their gradients are NaN (0 / 0 and inf / inf), JAX's values. Masked-out entries
  (`where`) read as 0, so they add nothing to the gradient.

  JAX implementation of `scipy.special.logsumexp`.
  """
  if where is not None:
    a = ufuncs.where(where, a, 0)
  if b is not None:
    a, b = _promote_args_inexact("logsumexp", a, b)
    a = ufuncs.where(lax.ne(b, _const(b, 0)), a, _const(a, -np.inf))
  else:
    (a,) = _promote_args_inexact("logsumexp", a)
  complex_input = dtypes.issubdtype(a.dtype, np.complexfloating)
  axes = reductions._canonical_axes("logsumexp", axis, np.ndim(a))
  total, a_max = max_shifted_exp_sum(a, axes, where, b)
  sign = ufuncs.sign(total)
  if return_sign or not complex_input:
    total = ufuncs.abs(total)
  out = ufuncs.add(ufuncs.log(total), a_max.astype(total.dtype))
  if not keepdims:
    out, sign = shape.squeeze(out, axes), shape.squeeze(sign, axes)
  if return_sign:
    return out, sign
  if b is not None and not complex_input:
    out = ufuncs.where(lax.lt(sign, _const(sign, 0)), _const(out, np.nan), out)
  return out


@memoize_eager_operations
def softmax(x: Any, axis: int | Sequence[int] | None = None) -> Any:
  """exp(x) / sum(exp(x)) over `axis` (default: all).

  JAX implementation of `scipy.special.softmax`."""
  return ufuncs.exp(log_softmax(x, axis))


@memoize_eager_operations
def log_softmax(x: Any, axis: int | Sequence[int] | None = None) -> Any:
  """x - logsumexp(x) over `axis` (default: all).

  JAX implementation of `scipy.special.log_softmax`."""
  (x,) = _promote_args_inexact("log_softmax", x)
  return ufuncs.subtract(x, logsumexp(x, axis, keepdims=True))


# ----------------------------------------------------------------------------- normal distribution

def ndtr(x: Any) -> Any:
  """The standard normal CDF, erfc(-x / sqrt(2)) / 2 (accurate in both tails).

  JAX implementation of `scipy.special.ndtr`."""
  (x,) = _promote_args_inexact("ndtr", x)
  return _ndtr(x)


def _ndtr(x: Any) -> Any:
  return lax.mul(_const(x, 0.5), transcendental.erfc(lax.mul(x, _const(x, -math.sqrt(0.5)))))


def log_ndtr(x: Any, series_order: int = 3) -> Any:
  """The log of the standard normal CDF, accurate far into both tails.

  Three regions: for x > 0, log1p(-ndtr(-x)) (ndtr(x) itself rounds to 1); down to -20
  (-10 in single precision), log(ndtr(x)); below, the asymptotic series
  log ndtr(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_{n=1}^{series_order}
  (-1)^n (2n-1)!! / x^(2n)).

  JAX implementation of `scipy.special.log_ndtr`."""
  if not 0 <= int(series_order) <= 30:
    raise ValueError(f"log_ndtr: series_order must be between 0 and 30, got {series_order}.")
  (x,) = _promote_args_inexact("log_ndtr", x)
  lower = -20.0 if _is_double(x) else -10.0
  positive = lax.gt(x, _const(x, 0))
  in_lower = lax.lt(x, _const(x, lower))
  x_positive = lax.select(positive, x, lax.full_like(x, 1))
  x_lower = lax.select(in_lower, x, lax.full_like(x, lower))
  x_middle = lax.select(lax.bitwise_or(positive, in_lower), lax.full_like(x, -1), x)
  positive_value = transcendental.log1p(lax.neg(_ndtr(lax.neg(x_positive))))
  middle_value = transcendental.log(_ndtr(x_middle))
  lower_value = _log_ndtr_asymptotic(x_lower, int(series_order))
  return lax.select(positive, positive_value, lax.select(in_lower, lower_value, middle_value))


def _log_ndtr_asymptotic(x: Any, order: int) -> Any:
  x2 = lax.mul(x, x)
  inv_x2 = lax.div(_const(x, 1), x2)
  series, power, double_factorial = lax.full_like(x, 1), lax.full_like(x, 1), 1
  for n in range(1, order + 1):
    double_factorial *= 2 * n - 1
    power = lax.mul(power, inv_x2)
    series = lax.add(series, lax.mul(_const(x, (-1) ** n * double_factorial), power))
  log_pdf_part = lax.sub(lax.mul(_const(x, -0.5), x2), transcendental.log(lax.neg(x)))
  return lax.add(lax.sub(log_pdf_part, _const(x, 0.5 * _LOG_2PI)), transcendental.log(series))


def ndtri(p: Any) -> Any:
  """The inverse of `ndtr`: the x with ndtr(x) = p (-inf at 0, inf at 1, NaN outside).

  Cephes' piecewise rational approximation (S. Moshier), as JAX computes it, so values
  agree with JAX's bit for bit: one rational function of (p - 1/2)^2 in the middle, and two
  of 1/z, z = sqrt(-2 log q), in the tails (q = min(p, 1 - p)). Its derivative is the
  approximation's. Only float32 and float64 are accepted, as in JAX.

  JAX implementation of `scipy.special.ndtri`."""
  dtype = dtypes.dtype(p)
  if dtype not in (np.float32, np.float64):
    raise TypeError(f"ndtri: p must be float32 or float64 (Cephes' coefficients), got "
                    f"{dtype}; convert it first, e.g. p.astype(jnp.float32).")
  p = lax._convert_element_type(p, dtype)
  upper = lax.gt(p, _const(p, -np.expm1(-2.0)))
  q = lax.select(upper, lax.sub(_const(p, 1.0), p), p)  # the upper tail, mirrored
  q = lax.select(lax.eq(q, _const(p, 0.0)), lax.full_like(q, 0.5), q)
  w = lax.sub(q, _const(p, 0.5))
  ww = lax.mul(w, w)
  middle = lax.add(w, lax.mul(lax.mul(w, ww), _rational(_NDTRI_MIDDLE, ww)))
  middle = lax.mul(middle, _const(p, -np.sqrt(2.0 * np.pi)))
  z = transcendental.sqrt(lax.mul(_const(p, -2.0), transcendental.log(q)))
  leading = lax.sub(z, lax.div(transcendental.log(z), z))
  inverse_z = lax.div(_const(p, 1.0), z)
  far = lax.sub(leading, lax.div(_rational(_NDTRI_FAR_TAIL, inverse_z), z))
  near = lax.sub(leading, lax.div(_rational(_NDTRI_NEAR_TAIL, inverse_z), z))
  tail = lax.select(lax.ge(z, _const(p, 8.0)), far, near)
  x = lax.select(lax.gt(q, _const(p, np.exp(-2.0))), middle, tail)
  x = lax.select(upper, x, lax.neg(x))
  x = lax.select(lax.eq(p, _const(p, 1.0)), lax.full_like(x, np.inf), x)
  return lax.select(lax.eq(p, _const(p, 0.0)), lax.full_like(x, -np.inf), x)


def _rational(coefficients: tuple[list[float], list[float]], x: Any) -> Any:
  """P(x) / Q(x), each by Horner's rule from the highest degree (jnp.polyval's order)."""
  numerator, denominator = (misc.polyval(np.array(c, dtypes.dtype(x)), x)
                            for c in coefficients)
  return lax.div(numerator, denominator)


# Cephes ndtri's coefficients: for |p - 1/2| < 1/2 - e^-2 in (p - 1/2)^2, and for the tails
# in 1/z with z < 8 (near) and z >= 8 (far).
_NDTRI_MIDDLE = (
    [-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
     1.39312609387279679503e1, -1.23916583867381258016e0],
    [1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
     -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
     1.59056225126211695515e1, -1.18331621121330003142e0])
_NDTRI_NEAR_TAIL = (
    [4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
     4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
     -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4],
    [1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
     1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
     -3.80806407691578277194e-2, -9.33259480895457427372e-4])
_NDTRI_FAR_TAIL = (
    [3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
     1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
     3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9],
    [1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
     2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
     2.89247864745380683936e-6, 6.79019408009981274425e-9])
