"""Special-function primitives: the exponentially scaled Bessel functions `bessel_i0e` and
`bessel_i1e`, the regularized incomplete gamma functions `igamma` (P) and `igammac` (Q)
with `igamma_grad_a` (dP/da), and the Hurwitz zeta function `zeta`.

They are primitives, not compositions, so that their derivatives are the exact formulas
rather than derivatives of an approximation. `bessel_i1e` and `zeta` lower to CHLO ops;
the others lower to lax compositions (`mlir.lower_fun`).

jaxon has no `while_loop` yet, so the series and continued fractions of those compositions
have a fixed number of terms. Two facts shape how they are summed: XLA compiles a long
chain of dependent elementwise ops slowly (about a second for several hundred), and
`lgamma` is expensive to evaluate. So a series is cut into blocks (`_blocked_series`): the
first term of every block comes in closed form, side by side along a new axis, and a short
recurrence runs within the blocks; a continued fraction is evaluated from its tail with a
fixed depth (`_continued_fraction`). `igamma` keeps double-precision accuracy for `a` up to
about 1000 (single precision is limited, as usual, by the prefactor x^a e^{-x} / Gamma(a)
for large `a`) and costs an intermediate array of 8 (16 in double precision) entries per
element.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from jaxlib.mlir.dialects import chlo

from jaxon._src import core, dtypes
from jaxon._src.interpreters import ad, mlir
from jaxon._src.lax import lax, reductions, utils

_float = (np.floating,)
_BLOCK = 16  # terms per block of a blocked series


def _const(x: Any, value: Any) -> np.ndarray:
  return np.array(value, dtypes.dtype(x, canonicalize=True))


def _is_double(x: Any) -> bool:
  return dtypes.dtype(x) == np.float64


def _broadcast_all(*args: Any) -> list[Any]:
  """The operands of an elementwise lowering at the output's shape (lax broadcasts rank-0
  and size-1 operands itself, but a blocked series adds an axis)."""
  shape = utils.broadcasting_shape("special", *map(core.get_aval, args))
  return [lax.broadcast_in_dim(x, shape, range(len(shape)) if np.shape(x) else ())
          for x in args]


def _with_block_axis(x: Any, blocks: int) -> Any:
  """`x` with a trailing axis of `blocks` copies."""
  shape = np.shape(x)
  return lax.broadcast_in_dim(x, (*shape, blocks), range(len(shape)))


def _block_starts(x: Any, blocks: int) -> Any:
  """The index of each block's first term, [0, _BLOCK, 2 _BLOCK, …], in `x`'s dtype."""
  shape = (*np.shape(x), blocks)
  k = lax.broadcasted_iota(dtypes.dtype(x), shape, len(shape) - 1)
  return lax.mul(k, _const(x, _BLOCK))


def _blocked_series(log_first: Any, ratio: Callable[[int], Any]) -> Any:
  """sum over blocks b and j < _BLOCK of t_{b,j}, where t_{b,0} = exp(log_first[..., b])
  and t_{b,j+1} = t_{b,j} * ratio(j) (`ratio(j)` has one entry per block)."""
  term = lax.exp(log_first)
  total = term
  for j in range(_BLOCK - 1):
    term = lax.mul(term, ratio(j))
    total = lax.add(total, term)
  return reductions.reduce_sum(total, (len(np.shape(total)) - 1,))


def _continued_fraction(a_k: Callable[[int], Any], b_k: Callable[[int], Any], depth: int
                        ) -> Any:
  """a_1 / (b_1 + a_2 / (b_2 + … + a_depth / b_depth)), evaluated from the innermost
  fraction outwards (exactly the depth-th convergent; no rescaling is needed)."""
  tail = b_k(depth)
  for k in range(depth - 1, 0, -1):
    tail = lax.add(b_k(k), lax.div(a_k(k + 1), tail))
  return lax.div(a_k(1), tail)


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


def zeta(x: Any, q: Any) -> Any:
  r"""Hurwitz zeta function :math:`\zeta(x, q) = \sum_{k \ge 0} (q + k)^{-x}`
  (differentiable in `q`)."""
  return zeta_p.bind(x, q)


# ----------------------------------------------------------------------------- bessel_i0e

def _i0e_series(x: Any) -> Any:
  """e^{-|x|} sum_k (x^2/4)^k / (k!)^2: all terms positive, so accurate wherever they fit
  (|x| up to the asymptotic region's threshold). The factorials are host constants."""
  blocks = 4 if _is_double(x) else 2
  quarter_x2 = lax.mul(_const(x, 0.25), lax.mul(x, x))
  is_zero = lax.eq(quarter_x2, _const(x, 0))
  q = _with_block_axis(lax.select(is_zero, lax.full_like(x, 1), quarter_x2), blocks)
  starts = np.arange(blocks) * _BLOCK
  log_factorials = np.array([2 * math.lgamma(k + 1) for k in starts])
  shape = np.shape(q)

  def per_block(values: np.ndarray) -> Any:
    return lax.broadcast_in_dim(values.astype(dtypes.dtype(x)), shape, (len(shape) - 1,))
  log_first = lax.sub(lax.mul(per_block(starts.astype(float)), lax.log(q)),
                      per_block(log_factorials))
  log_first = lax.sub(log_first, _with_block_axis(lax.abs(x), blocks))
  total = _blocked_series(log_first, lambda j: lax.mul(q, per_block(1.0 / (starts + j + 1) ** 2)))
  return lax.select(is_zero, lax.full_like(x, 1), total)


def _i0e_asymptotic(x: Any) -> Any:
  """(2 pi |x|)^{-1/2} sum_k c_k |x|^{-k}, c_k = ((2k-1)!!)^2 / (k! 8^k), for large |x|."""
  n = 20 if _is_double(x) else 8
  coefficients = [1.0]
  for k in range(1, n + 1):
    coefficients.append(coefficients[-1] * (2 * k - 1) ** 2 / (8 * k))
  ax = lax.abs(x)
  inv = lax.div(_const(x, 1), ax)
  total = lax.full_like(x, coefficients[-1])
  for c in reversed(coefficients[:-1]):
    total = lax.add(lax.mul(total, inv), _const(x, c))
  return lax.mul(total, lax.rsqrt(lax.mul(_const(x, 2 * np.pi), ax)))


def _i0e_impl(x: Any) -> Any:
  threshold = _const(x, 20.0 if _is_double(x) else 10.0)
  large = lax.gt(lax.abs(x), threshold)
  safe_small = lax.select(large, lax.full_like(x, 0), x)
  safe_large = lax.select(large, x, lax.full_like(x, threshold))
  return lax.select(large, _i0e_asymptotic(safe_large), _i0e_series(safe_small))


def _i1e_jvp(g: Any, x: Any) -> Any:
  """i1e' = i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2."""
  is_zero = lax.eq(x, _const(x, 0))
  safe_x = lax.select(is_zero, lax.full_like(x, 1), x)
  over_x = lax.select(is_zero, lax.full_like(x, 0.5), lax.div(bessel_i1e(x), safe_x))
  slope = lax.sub(lax.sub(bessel_i0e(x), lax.mul(bessel_i1e(x), lax.sign(x))), over_x)
  return lax.mul(g, slope)


mlir.register_lowering(bessel_i0e_p, mlir.lower_fun(_i0e_impl, multiple_results=False))
mlir.register_lowering(bessel_i1e_p, lambda ctx, x: [chlo.bessel_i1e(x)])
ad.defjvp(bessel_i0e_p, lambda g, x: lax.mul(
    g, lax.sub(bessel_i1e(x), lax.mul(lax.sign(x), bessel_i0e(x)))))
ad.defjvp(bessel_i1e_p, _i1e_jvp)


# ----------------------------------------------------------------------------- igamma

def _log_prefactor(a: Any, x: Any) -> Any:
  """log(x^a e^{-x} / Gamma(a))."""
  return lax.sub(lax.sub(lax.mul(a, lax.log(x)), x), lax.lgamma(a))


def _p_series(a: Any, x: Any) -> Any:
  """P(a, x) = sum_k x^(a+k) e^{-x} / Gamma(a + k + 1): converges fast for x < a + 1."""
  blocks = 16 if _is_double(a) else 8
  a_b, x_b = _with_block_axis(a, blocks), _with_block_axis(x, blocks)
  a_start = lax.add(a_b, _block_starts(a, blocks))
  log_first = lax.sub(lax.sub(lax.mul(a_start, lax.log(x_b)), x_b),
                      lax.lgamma(lax.add(a_start, _const(a, 1))))
  return _blocked_series(log_first, lambda j: lax.div(x_b, lax.add(a_start, _const(a, j + 1))))


def _q_continued_fraction(a: Any, x: Any) -> Any:
  """Q(a, x) = x^a e^{-x} / Gamma(a) / (x + 1 - a + K), K the continued fraction with
  a_k = -k (k - a), b_k = x + 2k + 1 - a (Legendre's): converges fast for x > a + 1."""
  x_minus_a = lax.sub(x, a)
  fraction = _continued_fraction(
      lambda k: lax.mul(_const(a, -k), lax.sub(_const(a, k), a)),
      lambda k: lax.add(x_minus_a, _const(a, 2 * k + 1)), 64 if _is_double(a) else 32)
  denominator = lax.add(lax.add(x_minus_a, _const(x, 1)), fraction)
  return lax.div(lax.exp(_log_prefactor(a, x)), denominator)


def _igamma_pair(a: Any, x: Any) -> tuple[Any, Any]:
  """(P, Q) from the series or the continued fraction, whichever converges, with SciPy's
  values at the edges: NaN outside a >= 0, x >= 0 (and at a = x = 0), P = 0 at x = 0,
  P = 1 at x = inf or a = 0."""
  a, x = _broadcast_all(a, x)
  zero, one = lax.full_like(x, 0), lax.full_like(x, 1)
  use_cf = lax.gt(x, lax.add(a, _const(a, 1)))
  # Each method sees only the inputs it is used for (and harmless ones elsewhere).
  a_s = lax.select(use_cf, one, a)
  x_s = lax.select(lax.bitwise_or(use_cf, lax.le(x, zero)), lax.full_like(x, 0.5), x)
  a_c = lax.select(use_cf, a, one)
  x_c = lax.select(lax.bitwise_and(use_cf, lax.is_finite(x)), x, lax.full_like(x, 3))
  p_series, q_cf = _p_series(a_s, x_s), _q_continued_fraction(a_c, x_c)
  p = lax.select(use_cf, lax.sub(one, q_cf), p_series)
  q = lax.select(use_cf, q_cf, lax.sub(one, p_series))
  nan = lax.full_like(x, np.nan)
  edges = [  # later entries win
      (lax.eq(x, zero), zero, one),
      (lax.bitwise_and(lax.eq(a, zero), lax.gt(x, zero)), one, zero),
      (lax.eq(x, lax.full_like(x, np.inf)), one, zero),
      (lax.bitwise_or(lax.lt(a, zero), lax.lt(x, zero)), nan, nan),
      (lax.bitwise_and(lax.eq(a, zero), lax.eq(x, zero)), nan, nan),
      (lax.bitwise_or(lax.ne(a, a), lax.ne(x, x)), nan, nan),
  ]
  for mask, p_edge, q_edge in edges:
    p, q = lax.select(mask, p_edge, p), lax.select(mask, q_edge, q)
  return p, q


def _igamma_grad_a_impl(a: Any, x: Any) -> Any:
  """dP/da by forward-mode differentiation of the series and the continued fraction (the
  truncated sums converge together with their derivatives)."""
  _, (tangent,) = ad.jvp_flat(lambda a: [_igamma_pair(a, x)[0]], [a], [lax.full_like(a, 1)])
  return tangent


def _density(a: Any, x: Any) -> Any:
  """dP/dx = x^(a-1) e^{-x} / Gamma(a)."""
  return lax.exp(lax.sub(lax.sub(lax.mul(lax.sub(a, _const(a, 1)), lax.log(x)), x),
                         lax.lgamma(a)))


def _igamma_grad_a_jvp_a(g: Any, a: Any, x: Any) -> Any:
  raise NotImplementedError("igamma_grad_a (the derivative of igamma / gammainc with "
                            "respect to a) is not differentiable with respect to a: "
                            "second derivatives in a are not implemented.")


def _igamma_grad_a_jvp_x(g: Any, a: Any, x: Any) -> Any:
  """d/dx dP/da = d/da dP/dx = dP/dx (log x - digamma(a))."""
  return lax.mul(g, lax.mul(_density(a, x), lax.sub(lax.log(x), lax.digamma(a))))


mlir.register_lowering(igamma_p, mlir.lower_fun(lambda a, x: _igamma_pair(a, x)[0], False))
mlir.register_lowering(igammac_p, mlir.lower_fun(lambda a, x: _igamma_pair(a, x)[1], False))
mlir.register_lowering(igamma_grad_a_p, mlir.lower_fun(_igamma_grad_a_impl, False))
ad.defjvp(igamma_p, lambda g, a, x: lax.mul(g, igamma_grad_a(a, x)),
          lambda g, a, x: lax.mul(g, _density(a, x)))
ad.defjvp(igammac_p, lambda g, a, x: lax.neg(lax.mul(g, igamma_grad_a(a, x))),
          lambda g, a, x: lax.neg(lax.mul(g, _density(a, x))))
ad.defjvp(igamma_grad_a_p, _igamma_grad_a_jvp_a, _igamma_grad_a_jvp_x)


# ----------------------------------------------------------------------------- zeta

def _zeta_jvp_x(g: Any, x: Any, q: Any) -> Any:
  raise NotImplementedError("zeta is not differentiable with respect to its first "
                            "argument x (only with respect to q).")


mlir.register_lowering(zeta_p, lambda ctx, x, q: [chlo.zeta(*lax.broadcast_to_out(ctx, [x, q]))])
ad.defjvp(zeta_p, _zeta_jvp_x, lambda g, x, q: lax.mul(
    g, lax.mul(lax.neg(x), zeta(lax.add(x, _const(x, 1)), q))))
