"""Special-function primitives: the exponentially scaled Bessel functions `bessel_i0e` and
`bessel_i1e`, the regularized incomplete gamma functions `igamma` (P) and `igammac` (Q)
with `igamma_grad_a` (dP/da), the regularized incomplete beta function
`regularized_incomplete_beta`, and the Hurwitz zeta function `zeta`.

They are primitives, not compositions, so that their derivatives are the exact formulas
rather than derivatives of an approximation. `bessel_i1e` and `zeta` lower to CHLO ops;
the others lower to lax compositions (`mlir.lower_fun`).

`igamma`, `igammac`, `igamma_grad_a` and `regularized_incomplete_beta` (`betainc`) follow
Cephes' algorithms, as XLA and JAX do: a series or a continued fraction stepped in a
`while_loop` until every element has converged, so their values match JAX's. `bessel_i0e`
is Cephes' Chebyshev expansion.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir.dialects import chlo

from jaxon._src import core, dtypes
from jaxon._src.interpreters import ad, mlir
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, reductions, utils
from jaxon._src.lax.control_flow.while_loop import while_loop

_float = (np.floating,)


def _const(x: Any, value: Any) -> np.ndarray:
  return np.array(value, dtypes.dtype(x, canonicalize=True))


def _eps(x: Any) -> np.ndarray:
  return _const(x, np.finfo(dtypes.dtype(x)).eps)


def _broadcast_all(*args: Any) -> list[Any]:
  """The operands of an elementwise lowering at the output's shape (the loops' carries
  have the output's shape)."""
  shape = utils.broadcasting_shape("special", *map(core.get_aval, args))
  return [lax.broadcast_in_dim(x, shape, range(len(shape)) if np.shape(x) else ())
          for x in args]


# ----------------------------------------------------------------------------- primitives

def _special(name: str) -> core.Primitive:
  """An elementwise primitive on floats (operands of one dtype, broadcasting as lax does);
  its lowering is registered below."""
  return lax._elementwise(name, _float, None)


bessel_i0e_p = _special("bessel_i0e")
bessel_i1e_p = _special("bessel_i1e")
igamma_p = _special("igamma")
igammac_p = _special("igammac")
igamma_grad_a_p = _special("igamma_grad_a")
zeta_p = _special("zeta")
regularized_incomplete_beta_p = _special("regularized_incomplete_beta")


def bessel_i0e(x: Any) -> Any:
  r"""Exponentially scaled modified Bessel function of order 0,
  :math:`e^{-|x|} I_0(x)` (finite where :math:`I_0` overflows)."""
  return bessel_i0e_p.bind(x)


def bessel_i1e(x: Any) -> Any:
  r"""Exponentially scaled modified Bessel function of order 1, :math:`e^{-|x|} I_1(x)`."""
  return bessel_i1e_p.bind(x)


def igamma(a: Any, x: Any) -> Any:
  r"""Regularized lower incomplete gamma function
  :math:`P(a, x) = \frac{1}{\Gamma(a)} \int_0^x t^{a-1} e^{-t} dt` (SciPy's `gammainc`).

  NaN where `a < 0` or `x < 0`; `P(0, x) = 1` for `x > 0`. Differentiable in `x` to any
  order and once in `a` (see `igamma_grad_a`)."""
  return igamma_p.bind(a, x)


def igammac(a: Any, x: Any) -> Any:
  r"""Regularized upper incomplete gamma function :math:`Q(a, x) = 1 - P(a, x)`, computed
  directly so it keeps its relative accuracy where `P` is close to 1."""
  return igammac_p.bind(a, x)


def igamma_grad_a(a: Any, x: Any) -> Any:
  r""":math:`\partial P(a, x) / \partial a`."""
  return igamma_grad_a_p.bind(a, x)


def betainc(a: Any, b: Any, x: Any) -> Any:
  r"""Regularized incomplete beta function
  :math:`I_x(a, b) = \frac{1}{B(a, b)} \int_0^x t^{a-1} (1-t)^{b-1} dt`, by a continued
  fraction iterated to convergence. Differentiable in `x` only (as in JAX)."""
  return regularized_incomplete_beta_p.bind(a, b, x)


def zeta(x: Any, q: Any) -> Any:
  r"""Hurwitz zeta function :math:`\zeta(x, q) = \sum_{k \ge 0} (q + k)^{-x}`
  (differentiable in `q`)."""
  return zeta_p.bind(x, q)


# ----------------------------------------------------------------------------- bessel_i0e

# Cephes' Chebyshev expansions of e^{-x} I0(x) on [0, 8] (in x/2 - 2) and of
# e^{-x} I0(x) sqrt(x) on (8, inf) (in 32/x - 2), highest order first; single precision
# uses the last 18 and 7 coefficients.
_I0E_SMALL = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_LARGE = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)


def _chebyshev(t: Any, coefficients: Sequence[float]) -> Any:
  """sum_k c_k T_k(t/2) with the first term halved (Cephes' `chbevl`), by Clenshaw's
  recurrence."""
  b0 = b1 = b2 = lax.full_like(t, 0)
  for c in coefficients:
    b0, b1, b2 = lax.add(lax.sub(lax.mul(t, b0), b1), lax.full_like(t, c)), b0, b1
  return lax.mul(_const(t, 0.5), lax.sub(b0, b2))


def _i0e_impl(x: Any) -> Any:
  dtype = dtypes.dtype(x)
  if dtype.itemsize < 4:  # the coefficients need single precision at least
    return lax.convert_element_type(_i0e_impl(lax.convert_element_type(x, np.float32)), dtype)
  small, large = (_I0E_SMALL, _I0E_LARGE) if dtype == np.float64 else (_I0E_SMALL[-18:],
                                                                       _I0E_LARGE[-7:])
  x = lax.abs(x)
  near = _chebyshev(lax.sub(lax.mul(_const(x, 0.5), x), _const(x, 2)), small)
  far = lax.div(_chebyshev(lax.sub(lax.div(_const(x, 32), x), _const(x, 2)), large),
                transcendental.sqrt(x))
  return lax.select(lax.le(x, _const(x, 8)), near, far)


def _i1e_jvp(g: Any, i1e: Any, x: Any) -> Any:
  """i1e' = i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2 (taken for |x| <= eps,
  where the formula cancels badly)."""
  tiny = lax.le(lax.abs(x), _eps(x))
  safe_x = lax.select(tiny, lax.full_like(x, 1), x)
  slope = lax.sub(bessel_i0e(safe_x), lax.mul(i1e, lax.add(
      lax.sign(safe_x), lax.div(_const(x, 1), safe_x))))
  return lax.mul(g, lax.select(tiny, lax.full_like(x, 0.5), slope))


mlir.register_lowering(bessel_i0e_p, mlir.lower_fun(_i0e_impl, multiple_results=False))
mlir.register_lowering(bessel_i1e_p, lambda ctx, x: [chlo.bessel_i1e(x)])
ad.defjvp2(bessel_i0e_p, lambda g, i0e, x: lax.mul(
    g, lax.sub(bessel_i1e(x), lax.mul(lax.sign(x), i0e))))
ad.defjvp2(bessel_i1e_p, _i1e_jvp)


# ----------------------------------------------------------------------------- igamma
# Cephes' algorithms, as XLA's and JAX's: the power series of P for x < a or x < 1, the
# continued fraction of Q elsewhere, each iterated in a `while_loop` until every element has
# converged. Both carry the derivative of their sum with respect to a, which gives
# `igamma_grad_a` (and converges with its own criterion, so a value and its derivative may
# take different numbers of steps).

def _any(pred: Any) -> Any:
  return reductions.reduce_or(pred, tuple(range(np.ndim(pred))))


def _frozen(enabled: Any, new: list[Any], old: list[Any]) -> list[Any]:
  """`new` where an element is still iterating, `old` where it has stopped."""
  return [lax.select(enabled, n, o) for n, o in zip(new, old)]


def _p_series(a: Any, x: Any, enabled: Any, derivative: bool) -> tuple[Any, Any]:
  """(S, dS/da) for S = sum_k x^k / ((a+1)…(a+k)), so P = S x^a e^{-x} / Gamma(a + 1)."""
  def body(state: list[Any]) -> list[Any]:
    enabled, r, c, total, dc_da, dtotal_da = state
    r = lax.add(r, _const(r, 1))
    x_over_r = lax.div(x, r)
    dc_da = lax.sub(lax.mul(dc_da, x_over_r), lax.div(lax.mul(c, x), lax.mul(r, r)))
    dtotal_da = lax.add(dtotal_da, dc_da)
    c = lax.mul(c, x_over_r)
    total = lax.add(total, c)
    error = lax.abs(lax.div(dc_da, dtotal_da)) if derivative else lax.div(c, total)
    going = lax.bitwise_and(enabled, lax.gt(error, _eps(a)))
    return [going, *_frozen(enabled, [r, c, total, dc_da, dtotal_da], state[1:])]

  one, zero = lax.full_like(a, 1), lax.full_like(a, 0)
  state = while_loop(lambda s: _any(s[0]), body, [enabled, a, one, one, zero, zero])
  return state[3], state[5]


def _q_continued_fraction(a: Any, x: Any, enabled: Any, derivative: bool) -> tuple[Any, Any]:
  """(F, dF/da) for Legendre's continued fraction F with Q = F x^a e^{-x} / Gamma(a),
  through its convergents p_k / q_k (rescaled when they grow past 1/eps); at most 2000
  steps."""
  eps = _eps(a)

  def body(state: list[Any]) -> list[Any]:
    (enabled, c, ans, t, y, z, p1, q1, p2, q2, dp1, dq1, dp2, dq2, dans) = state
    c = lax.add(c, _const(c, 1))
    y = lax.add(y, _const(y, 1))
    z = lax.add(z, _const(z, 2))
    yc = lax.mul(y, c)
    p = lax.sub(lax.mul(p1, z), lax.mul(p2, yc))
    q = lax.sub(lax.mul(q1, z), lax.mul(q2, yc))
    q_nonzero = lax.ne(q, _const(q, 0))
    r = lax.div(p, q)
    t = lax.select(q_nonzero, lax.abs(lax.div(lax.sub(ans, r), r)), lax.full_like(r, 1))
    ans = lax.select(q_nonzero, r, ans)
    dp = lax.add(lax.sub(lax.sub(lax.mul(dp1, z), p1), lax.mul(dp2, yc)), lax.mul(p2, c))
    dq = lax.add(lax.sub(lax.sub(lax.mul(dq1, z), q1), lax.mul(dq2, yc)), lax.mul(q2, c))
    new_dans = lax.select(q_nonzero, lax.div(lax.sub(dp, lax.mul(ans, dq)), q), dans)
    dans_change = lax.select(q_nonzero, lax.abs(lax.sub(new_dans, dans)), lax.full_like(dans, 1))
    rescale = lax.gt(lax.abs(p), lax.div(_const(p, 1), eps))
    p2, p1, q2, q1, dp2, dq2, dp1, dq1 = (
        lax.select(rescale, lax.mul(v, eps), v) for v in (p1, p, q1, q, dp1, dq1, dp, dq))
    going = lax.bitwise_and(enabled, lax.gt(dans_change if derivative else t, eps))
    return [going, c, *_frozen(enabled, [ans, t, y, z, p1, q1, p2, q2, dp1, dq1, dp2, dq2,
                                         new_dans], state[2:])]

  y = lax.sub(_const(a, 1), a)
  z = lax.add(lax.add(x, y), _const(x, 1))
  p1, q1 = lax.add(x, _const(x, 1)), lax.mul(z, x)
  ans = lax.div(p1, q1)
  zero = lax.full_like(x, 0)
  dq1 = lax.neg(x)
  dans = lax.div(lax.sub(zero, lax.mul(ans, dq1)), q1)
  state = [enabled, _const(x, 0), ans, lax.full_like(x, 1), y, z, p1, q1,
           lax.full_like(x, 1), x, zero, dq1, zero, zero, dans]
  state = while_loop(lambda s: lax.bitwise_and(lax.lt(s[1], _const(x, 2000)), _any(s[0])),
                     body, state)
  return state[2], state[14]


class _IgammaInputs:
  """What P, Q and dP/da share: the domain, the prefactor x^a e^{-x} / Gamma(a), and
  whether it underflows (then no iteration is needed: the answer is an edge value)."""

  def __init__(self, a: Any, x: Any):
    zero = _const(x, 0)
    self.is_nan = lax.bitwise_or(lax.ne(a, a), lax.ne(x, x))
    self.x_is_zero = lax.eq(x, zero)
    self.x_is_inf = lax.eq(x, _const(x, np.inf))
    self.a_is_zero = lax.eq(a, zero)
    log_ax = lax.sub(lax.sub(lax.mul(a, transcendental.log(x)), x), transcendental.lgamma(a))
    self.underflow = lax.lt(log_ax, _const(x, -np.log(np.finfo(dtypes.dtype(x)).max)))
    self.ax = transcendental.exp(log_ax)


def _any_of(*masks: Any) -> Any:
  return functools.reduce(lax.bitwise_or, masks)


def _igamma_domain_error(a: Any, x: Any, s: _IgammaInputs) -> Any:
  zero = _const(x, 0)
  return _any_of(lax.lt(x, zero), lax.lt(a, zero), lax.bitwise_and(s.a_is_zero, s.x_is_zero),
                 s.is_nan)


def _igamma_impl(a: Any, x: Any) -> Any:
  s = _IgammaInputs(a, x)
  domain_error = _igamma_domain_error(a, x, s)
  use_cf = lax.bitwise_and(lax.ge(x, _const(x, 1)), lax.gt(x, a))
  enabled = lax.bitwise_not(_any_of(s.x_is_zero, domain_error, s.underflow, s.x_is_inf))
  cf, _ = _q_continued_fraction(a, x, lax.bitwise_and(enabled, use_cf), False)
  series, _ = _p_series(a, x, lax.bitwise_and(enabled, lax.bitwise_not(use_cf)), False)
  out = lax.select(use_cf, lax.sub(_const(a, 1), lax.mul(cf, s.ax)),
                   lax.div(lax.mul(series, s.ax), a))
  out = lax.select(s.x_is_zero, lax.full_like(a, 0), out)
  out = lax.select(s.x_is_inf, lax.full_like(a, 1), out)
  return lax.select(domain_error, lax.full_like(a, np.nan), out)


def _igammac_impl(a: Any, x: Any) -> Any:
  s = _IgammaInputs(a, x)
  domain_error = _igamma_domain_error(a, x, s)
  use_series = lax.bitwise_or(lax.lt(x, _const(x, 1)), lax.lt(x, a))
  enabled = lax.bitwise_not(_any_of(domain_error, s.underflow, s.x_is_inf, s.a_is_zero))
  series, _ = _p_series(a, x, lax.bitwise_and(enabled, use_series), False)
  cf, _ = _q_continued_fraction(a, x, lax.bitwise_and(enabled, lax.bitwise_not(use_series)),
                                False)
  out = lax.select(use_series, lax.sub(_const(a, 1), lax.div(lax.mul(series, s.ax), a)),
                   lax.mul(cf, s.ax))
  out = lax.select(lax.bitwise_or(s.x_is_inf, s.a_is_zero), lax.full_like(a, 0), out)
  return lax.select(domain_error, lax.full_like(a, np.nan), out)


def _igamma_grad_a_impl(a: Any, x: Any) -> Any:
  """d/da of P = S ax / a (series) or 1 - F ax (continued fraction), with
  d log(ax) / da = log x - digamma(a)."""
  s = _IgammaInputs(a, x)
  zero = _const(x, 0)
  domain_error = lax.bitwise_or(lax.lt(x, zero), lax.le(a, zero))
  use_cf = lax.bitwise_and(lax.gt(x, _const(x, 1)), lax.gt(x, a))
  enabled = lax.bitwise_not(_any_of(s.x_is_zero, domain_error, s.underflow, s.is_nan))
  log_x = transcendental.log(x)
  cf, dcf_da = _q_continued_fraction(a, x, lax.bitwise_and(enabled, use_cf), True)
  series, dseries_da = _p_series(a, x, lax.bitwise_and(enabled, lax.bitwise_not(use_cf)), True)
  cf_grad = lax.mul(s.ax, lax.add(lax.mul(cf, lax.sub(log_x, transcendental.digamma(a))), dcf_da))
  digamma_a1 = transcendental.digamma(lax.add(a, _const(a, 1)))
  series_grad = lax.div(lax.mul(s.ax, lax.add(
      lax.mul(series, lax.sub(log_x, digamma_a1)), dseries_da)), a)
  out = lax.select(use_cf, lax.neg(cf_grad), series_grad)
  out = lax.select(s.x_is_zero, lax.full_like(a, 0), out)
  return lax.select(lax.bitwise_or(domain_error, s.is_nan), lax.full_like(a, np.nan), out)


def _density(a: Any, x: Any) -> Any:
  """dP/dx = x^(a-1) e^{-x} / Gamma(a)."""
  log_power = lax.mul(lax.sub(a, _const(a, 1)), transcendental.log(x))
  return transcendental.exp(lax.sub(lax.add(lax.neg(x), log_power), transcendental.lgamma(a)))


def _igamma_grad_a_jvp_a(g: Any, a: Any, x: Any) -> Any:
  raise NotImplementedError("igamma_grad_a (the derivative of igamma / gammainc with "
                            "respect to a) is not differentiable with respect to a: "
                            "second derivatives in a are not implemented.")


def _igamma_grad_a_jvp_x(g: Any, a: Any, x: Any) -> Any:
  """d/dx dP/da = d/da dP/dx = dP/dx (log x - digamma(a))."""
  return lax.mul(g, lax.mul(_density(a, x),
                            lax.sub(transcendental.log(x), transcendental.digamma(a))))


def _lower_upcast(impl: Callable[..., Any]) -> mlir.LoweringRule:
  """A lowering from a lax composition on operands of one shape, computed in float32 for
  the 16-bit float types (their precision is too small for the iterations' tests)."""
  def at_full_precision(*args: Any) -> Any:
    args = _broadcast_all(*args)
    dtype = dtypes.dtype(args[0])
    if dtype.itemsize >= 4:
      return impl(*args)
    return lax.convert_element_type(
        impl(*(lax.convert_element_type(x, np.float32) for x in args)), dtype)
  return mlir.lower_fun(at_full_precision, multiple_results=False)


mlir.register_lowering(igamma_p, _lower_upcast(_igamma_impl))
mlir.register_lowering(igammac_p, _lower_upcast(_igammac_impl))
mlir.register_lowering(igamma_grad_a_p, _lower_upcast(_igamma_grad_a_impl))
ad.defjvp(igamma_p, lambda g, a, x: lax.mul(g, igamma_grad_a(a, x)),
          lambda g, a, x: lax.mul(g, _density(a, x)))
ad.defjvp(igammac_p, lambda g, a, x: lax.neg(lax.mul(g, igamma_grad_a(a, x))),
          lambda g, a, x: lax.neg(lax.mul(g, _density(a, x))))
ad.defjvp(igamma_grad_a_p, _igamma_grad_a_jvp_a, _igamma_grad_a_jvp_x)


# ----------------------------------------------------------------------------- betainc

def _betainc_numerator(k: Any, a: Any, b: Any, x: Any) -> Any:
  """The k-th partial numerator of the continued fraction of I_x(a, b) (DLMF 8.17.23):
  1 for k = 1, then alternately -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) (k even) and
  m(b-m)x / ((a+2m-1)(a+2m)) (k odd), m = (k-1) // 2."""
  k = lax.broadcast_in_dim(k, np.shape(a), ())
  int_one, int_two = lax.full_like(k, 1), lax.full_like(k, 2)
  m_int = lax.div(lax.sub(k, int_one), int_two)
  m = lax.convert_element_type(m_int, dtypes.dtype(a))
  one, two = lax.full_like(a, 1), lax.full_like(a, 2)
  a_2m = lax.add(a, lax.mul(two, m))
  first_even = lax.div(lax.mul(lax.neg(lax.add(a, b)), x), lax.add(a, one))
  even = lax.div(lax.mul(lax.mul(lax.neg(lax.add(a, m)), lax.add(lax.add(a, b), m)), x),
                 lax.mul(a_2m, lax.add(a_2m, one)))
  even = lax.select(lax.eq(m_int, lax.full_like(k, 0)), first_even, even)
  odd = lax.div(lax.mul(lax.mul(m, lax.sub(b, m)), x), lax.mul(lax.sub(a_2m, one), a_2m))
  numerator = lax.select(lax.eq(lax.rem(k, int_two), lax.full_like(k, 0)), even, odd)
  return lax.select(lax.eq(k, int_one), one, numerator)


def _betainc_continued_fraction(a: Any, b: Any, x: Any) -> Any:
  """The continued fraction 1 / (1 + d_2 / (1 + d_3 / …)) by the modified Lentz method,
  stepped until every element's last factor is within eps / 2 of 1 (at most 200 steps in
  single precision, 600 in double)."""
  dtype = dtypes.dtype(a)
  tiny = _const(a, np.finfo(dtype).eps / 2)
  steps = 600 if dtype == np.float64 else 200

  def not_tiny(v: Any) -> Any:
    return lax.select(lax.lt(lax.abs(v), tiny), lax.full_like(v, tiny), v)

  def body(state: list[Any]) -> list[Any]:
    k, _, c, d, h = state
    numerator = _betainc_numerator(k, a, b, x)
    one = lax.full_like(a, 1)
    c = not_tiny(lax.add(one, lax.div(numerator, c)))
    d = lax.div(_const(a, 1), not_tiny(lax.add(one, lax.mul(numerator, d))))
    delta = lax.mul(c, d)
    unconverged = _any(lax.ge(lax.abs(lax.sub(delta, _const(a, 1))), tiny))
    return [lax.add(k, np.int32(1)), unconverged, c, d, lax.mul(h, delta)]

  start = lax.full_like(a, tiny)
  state = [np.int32(1), np.bool_(True), start, lax.full_like(a, 0), start]
  state = while_loop(lambda s: lax.bitwise_and(lax.lt(s[0], np.int32(steps)), s[1]), body,
                     state)
  return state[4]
# ----------------------------------------------------------------------------- zeta

def _zeta_jvp_x(g: Any, x: Any, q: Any) -> Any:
  raise NotImplementedError("zeta is not differentiable with respect to its first "
                            "argument x (only with respect to q).")


mlir.register_lowering(zeta_p, lambda ctx, x, q: [chlo.zeta(*lax.broadcast_to_out(ctx, [x, q]))])
ad.defjvp(zeta_p, _zeta_jvp_x, lambda g, x, q: lax.mul(
    g, lax.mul(lax.neg(x), zeta(lax.add(x, _const(x, 1)), q))))


def _betainc_impl(a: Any, b: Any, x: Any) -> Any:
  """I_x(a, b) = x^a (1-x)^b / (a B(a, b)) times the continued fraction, which converges
  fast for x < (a+1)/(a+b+2); elsewhere through I_x(a, b) = 1 - I_{1-x}(b, a)."""
  zero, one = lax.full_like(a, 0), lax.full_like(a, 1)
  inf = lax.full_like(a, np.inf)
  a_is_zero = lax.bitwise_or(lax.eq(a, zero), lax.eq(b, inf))  # the limits I = 1 or 0
  b_is_zero = lax.bitwise_or(lax.eq(b, zero), lax.eq(a, inf))
  x_is_zero, x_is_one = lax.eq(x, zero), lax.eq(x, one)
  is_zero = lax.bitwise_or(lax.bitwise_and(b_is_zero, lax.bitwise_not(x_is_one)),
                           lax.bitwise_and(a_is_zero, x_is_zero))
  is_one = lax.bitwise_or(lax.bitwise_and(a_is_zero, lax.bitwise_not(x_is_zero)),
                          lax.bitwise_and(b_is_zero, x_is_one))
  is_nan = _any_of(lax.lt(a, zero), lax.lt(b, zero), lax.lt(x, zero), lax.gt(x, one),
                   lax.bitwise_and(a_is_zero, b_is_zero),
                   lax.ne(a, a), lax.ne(b, b), lax.ne(x, x))

  direct = lax.lt(x, lax.div(lax.add(a, one), lax.add(lax.add(a, b), lax.full_like(b, 2))))
  a, b = lax.select(direct, a, b), lax.select(direct, b, a)
  x = lax.select(direct, x, lax.sub(one, x))
  fraction = _betainc_continued_fraction(a, b, x)
  # For tiny a, a Gamma(a) = Gamma(a + 1) -> 1 replaces the division by a.
  log_beta_but_a = lax.sub(transcendental.lgamma(b), transcendental.lgamma(lax.add(a, b)))
  log_beta = lax.add(transcendental.lgamma(a), log_beta_but_a)
  log1m_x = transcendental.log1p(lax.neg(x))
  factor = lax.select(
      lax.lt(a, _const(a, np.finfo(dtypes.dtype(a)).tiny * 2)),
      transcendental.exp(lax.sub(lax.mul(log1m_x, b), log_beta_but_a)),
      lax.div(transcendental.exp(lax.sub(
          lax.add(lax.mul(transcendental.log(x), a), lax.mul(log1m_x, b)), log_beta)), a))
  out = lax.mul(fraction, factor)
  out = lax.select(direct, out, lax.sub(one, out))
  out = lax.select(is_zero, zero, out)
  out = lax.select(is_one, one, out)
  return lax.select(is_nan, lax.full_like(a, np.nan), out)


def _betainc_jvp_ab(g: Any, a: Any, b: Any, x: Any) -> Any:
  raise ValueError("betainc (regularized_incomplete_beta) is differentiable only with "
                   "respect to x, not a or b (as in JAX).")


def _betainc_jvp_x(g: Any, a: Any, b: Any, x: Any) -> Any:
  """dI/dx = x^(a-1) (1-x)^(b-1) / B(a, b)."""
  one = _const(a, 1)
  log_beta = lax.sub(lax.add(transcendental.lgamma(a), transcendental.lgamma(b)),
                     transcendental.lgamma(lax.add(a, b)))
  log_density = lax.add(lax.mul(lax.sub(b, one), transcendental.log1p(lax.neg(x))),
                        lax.mul(lax.sub(a, one), transcendental.log(x)))
  return lax.mul(transcendental.exp(lax.sub(log_density, log_beta)), g)


mlir.register_lowering(regularized_incomplete_beta_p, _lower_upcast(_betainc_impl))
ad.defjvp(regularized_incomplete_beta_p, _betainc_jvp_ab, _betainc_jvp_ab, _betainc_jvp_x)
