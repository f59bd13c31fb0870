"""The transcendental elementwise functions: exponentials and logarithms, powers, roots,
trigonometric and hyperbolic functions and their inverses, the logistic sigmoid, and the
gamma and error function families.

They are rows of `lax.py`'s elementwise table like the arithmetic there, built by the same
`_elementwise`, and differentiate through its arithmetic. Most take JAX's `accuracy=`:
a `Tolerance` or an `AccuracyMode` that becomes the StableHLO op's `result_accuracy`, which
the primitive carries as a param only when one is given (see `_bind_with_accuracy`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, mlir
from jaxon._src.lax.dot_algorithms import Accuracy, AccuracyMode, Tolerance, result_accuracy_attr
from jaxon._src.lax.lax import (
    _broadcast_like, _const, _elementwise, _float, _inexact, _num, _replace_zero, add,
    broadcast_to_out, convert_element_type, div, eq, full_like, integer_pow, mul, neg, select,
    sub)

# ----------------------------------------------------------------------------- primitives

exp_p = _elementwise("exp", _inexact, hlo.exponential)
exp2_p = _elementwise("exp2", _inexact, None)
log_p = _elementwise("log", _inexact, hlo.log)
log1p_p = _elementwise("log1p", _inexact, hlo.log_plus_one)
expm1_p = _elementwise("expm1", _inexact, hlo.exponential_minus_one)
sqrt_p = _elementwise("sqrt", _inexact, hlo.sqrt)
rsqrt_p = _elementwise("rsqrt", _inexact, hlo.rsqrt)
cbrt_p = _elementwise("cbrt", _float, hlo.cbrt)
logistic_p = _elementwise("logistic", _inexact, None)
sin_p = _elementwise("sin", _inexact, None)
cos_p = _elementwise("cos", _inexact, None)
tan_p = _elementwise("tan", _inexact, None)
asin_p = _elementwise("asin", _inexact, chlo.asin)
acos_p = _elementwise("acos", _inexact, chlo.acos)
atan_p = _elementwise("atan", _inexact, chlo.atan)
sinh_p = _elementwise("sinh", _inexact, chlo.sinh)
cosh_p = _elementwise("cosh", _inexact, chlo.cosh)
tanh_p = _elementwise("tanh", _inexact, hlo.tanh)
asinh_p = _elementwise("asinh", _inexact, chlo.asinh)
acosh_p = _elementwise("acosh", _inexact, chlo.acosh)
atanh_p = _elementwise("atanh", _inexact, chlo.atanh)
lgamma_p = _elementwise("lgamma", _float, chlo.lgamma)
digamma_p = _elementwise("digamma", _float, chlo.digamma)
erf_p = _elementwise("erf", _float, chlo.erf)
erfc_p = _elementwise("erfc", _float, chlo.erfc)
erf_inv_p = _elementwise("erf_inv", _float, chlo.erf_inv)
atan2_p = _elementwise("atan2", _inexact, hlo.atan2)
polygamma_p = _elementwise("polygamma", _float, chlo.polygamma)


def _pow_dtype(x: ShapedArray, y: ShapedArray) -> np.dtype:
  """An inexact base; the exponent is an integer or has the base's dtype."""
  if not dtypes.is_inexact(x.dtype) or not (
      dtypes.is_integer(y.dtype) or y.dtype == x.dtype):
    raise TypeError(f"the first argument to pow must have an inexact dtype (float or "
                    f"complex), and the second argument must have an integer dtype or the "
                    f"first's dtype, but got pow({x.str_short()}, {y.str_short()}).")
  return x.dtype


pow_p = _elementwise("pow", _num, None, result_dtype=_pow_dtype, same_dtypes=False)


def _exp2_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                   accuracy: Accuracy | None = None) -> list[ir.Value]:
  """2**x as e**(x log 2): StableHLO has no exp2. The accuracy asked for is the
  exponential's."""
  scaled = hlo.multiply(mlir.full_like_aval(np.log(2), ctx.avals_in[0]), x)
  if accuracy is None:
    return [hlo.exponential(scaled)]
  return [hlo.exponential(scaled, result_accuracy=result_accuracy_attr(accuracy))]


def _sinusoid_lowering(op: Callable[..., ir.Value]) -> mlir.LoweringRule:
  """sin and cos. JAX computes those of complex numbers from real sines, cosines and
  `expm1`s that are not given the accuracy, so a complex operand's op goes without the
  attribute here too: its results stay those of the plain function, as JAX's do."""
  def rule(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
           accuracy: Accuracy | None = None) -> list[ir.Value]:
    if accuracy is None or dtypes.is_complex(ctx.avals_in[0].dtype):
      return [op(x)]
    return [op(x, result_accuracy=result_accuracy_attr(accuracy))]
  return rule


def _tan_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                  accuracy: Accuracy | None = None) -> list[ir.Value]:
  """CHLO's tan has no `result_accuracy`: with an accuracy it is StableHLO's, as JAX
  lowers it."""
  if accuracy is None:
    return [chlo.tan(x)]
  return [hlo.tan(x, result_accuracy=result_accuracy_attr(accuracy))]


def _logistic_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                       accuracy: Accuracy | None = None) -> list[ir.Value]:
  """The accuracy only chooses the derivative's formula: JAX lowers logistic as
  1 / (1 + exp(-x)) without the attribute, so XLA's choice of implementation, and with it
  the result, is the plain function's."""
  return [hlo.logistic(x)]


def _pow_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
  """An integer exponent is converted to the base's dtype (StableHLO's power wants one)."""
  x_aval, y_aval = ctx.avals_in
  if y_aval.dtype != x_aval.dtype:
    y_aval = y_aval.update(dtype=x_aval.dtype)
    y = hlo.convert(mlir.aval_to_ir_type(y_aval), y)
    ctx = ctx.replace(avals_in=[x_aval, y_aval])
  return [hlo.power(*broadcast_to_out(ctx, [x, y]))]


mlir.register_lowering(exp2_p, _exp2_lowering)
mlir.register_lowering(sin_p, _sinusoid_lowering(hlo.sine))
mlir.register_lowering(cos_p, _sinusoid_lowering(hlo.cosine))
mlir.register_lowering(tan_p, _tan_lowering)
mlir.register_lowering(logistic_p, _logistic_lowering)
mlir.register_lowering(pow_p, _pow_lowering)


# ----------------------------------------------------------------------------- functions

def _bind_with_accuracy(prim: core.Primitive, x: Any, accuracy: Accuracy | None) -> Any:
  """Without an accuracy the primitive has no `accuracy` param at all (JAX's is None, and
  hidden when printed), so jaxprs, programs and caches are those of the plain function."""
  if accuracy is None:
    return prim.bind(x)
  if not isinstance(accuracy, (Tolerance, AccuracyMode)):
    raise TypeError(f"{prim.name}: accuracy must be None, a lax.Tolerance or a "
                    f"lax.AccuracyMode, got {accuracy!r}.")
  return prim.bind(x, accuracy=accuracy)


def exp(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise exponential :math:`e^x`.

  `accuracy` asks the compiler for an implementation by the error it may make: a
  `Tolerance` (atol/rtol/ulps) or `AccuracyMode.HIGHEST`/`DEFAULT`, which becomes the
  StableHLO op's `result_accuracy` (XLA on CPU computes the float32 values of the plain
  function either way). With HIGHEST, the derivatives of expm1, tanh and logistic take
  formulas that keep their precision where the plain ones cancel. The other transcendental
  functions (exp2, log, log1p, expm1, tanh, logistic, sin, cos, tan, sqrt, rsqrt, cbrt)
  take it too.
  """
  return _bind_with_accuracy(exp_p, x, accuracy)


def exp2(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise base-2 exponential :math:`2^x`."""
  return _bind_with_accuracy(exp2_p, x, accuracy)


def log(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise natural logarithm :math:`\log x`."""
  return _bind_with_accuracy(log_p, x, accuracy)


def log1p(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise :math:`\log(1 + x)`, accurate for small `x` where `log(1 + x)` is not."""
  return _bind_with_accuracy(log1p_p, x, accuracy)


def expm1(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise :math:`e^x - 1`, accurate for small `x` where `exp(x) - 1` is not."""
  return _bind_with_accuracy(expm1_p, x, accuracy)


def sqrt(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise square root :math:`\sqrt{x}`."""
  return _bind_with_accuracy(sqrt_p, x, accuracy)


def rsqrt(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise reciprocal square root :math:`1/\sqrt{x}` (one op, not two)."""
  return _bind_with_accuracy(rsqrt_p, x, accuracy)


def cbrt(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise real cube root :math:`\sqrt[3]{x}` (negative for negative `x`)."""
  return _bind_with_accuracy(cbrt_p, x, accuracy)


def logistic(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise logistic sigmoid :math:`1 / (1 + e^{-x})`, without overflow for large
  negative `x`."""
  return _bind_with_accuracy(logistic_p, x, accuracy)


def sin(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise sine :math:`\sin x`."""
  return _bind_with_accuracy(sin_p, x, accuracy)


def cos(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise cosine :math:`\cos x`."""
  return _bind_with_accuracy(cos_p, x, accuracy)


def tan(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise tangent :math:`\tan x`."""
  return _bind_with_accuracy(tan_p, x, accuracy)


def asin(x: Any) -> Any:
  r"""Elementwise arc sine :math:`\arcsin x`."""
  return asin_p.bind(x)


def acos(x: Any) -> Any:
  r"""Elementwise arc cosine :math:`\arccos x`."""
  return acos_p.bind(x)


def atan(x: Any) -> Any:
  r"""Elementwise arc tangent :math:`\arctan x`."""
  return atan_p.bind(x)


def sinh(x: Any) -> Any:
  r"""Elementwise hyperbolic sine :math:`\sinh x`."""
  return sinh_p.bind(x)


def cosh(x: Any) -> Any:
  r"""Elementwise hyperbolic cosine :math:`\cosh x`."""
  return cosh_p.bind(x)


def tanh(x: Any, *, accuracy: Accuracy | None = None) -> Any:
  r"""Elementwise hyperbolic tangent :math:`\tanh x`."""
  return _bind_with_accuracy(tanh_p, x, accuracy)


def asinh(x: Any) -> Any:
  r"""Elementwise inverse hyperbolic sine :math:`\operatorname{asinh} x`."""
  return asinh_p.bind(x)


def acosh(x: Any) -> Any:
  r"""Elementwise inverse hyperbolic cosine :math:`\operatorname{acosh} x`."""
  return acosh_p.bind(x)


def atanh(x: Any) -> Any:
  r"""Elementwise inverse hyperbolic tangent :math:`\operatorname{atanh} x`."""
  return atanh_p.bind(x)


def lgamma(x: Any) -> Any:
  r"""Elementwise log of the absolute value of the gamma function, :math:`\log|\Gamma(x)|`."""
  return lgamma_p.bind(x)


def digamma(x: Any) -> Any:
  r"""Elementwise digamma function :math:`\psi(x) = \Gamma'(x) / \Gamma(x)`."""
  return digamma_p.bind(x)


def erf(x: Any) -> Any:
  r"""Elementwise error function :math:`\frac{2}{\sqrt\pi}\int_0^x e^{-t^2} dt`."""
  return erf_p.bind(x)


def erfc(x: Any) -> Any:
  r"""Elementwise complementary error function :math:`1 - \operatorname{erf}(x)`, accurate
  where `erf(x)` is close to 1."""
  return erfc_p.bind(x)


def erf_inv(x: Any) -> Any:
  r"""Elementwise inverse of `erf` on (-1, 1) (±inf at ±1)."""
  return erf_inv_p.bind(x)


def atan2(x: Any, y: Any) -> Any:
  r"""Elementwise four-quadrant arc tangent of `x / y` (the angle of the point (y, x))."""
  return atan2_p.bind(x, y)


def polygamma(m: Any, x: Any) -> Any:
  r"""Elementwise polygamma function :math:`\psi^{(m)}(x)`, the m-th derivative of digamma;
  `m` is a non-negative integer value of `x`'s float dtype."""
  return polygamma_p.bind(m, x)


def pow(x: Any, y: Any) -> Any:
  r"""Elementwise power :math:`x^y` of an inexact base; the exponent is an integer array or
  has the base's dtype. For a constant integer exponent `integer_pow` is exact and faster."""
  return pow_p.bind(x, y)


# ----------------------------------------------------------------------------- derivatives

# The transcendental functions' rules take their `accuracy` (absent: None). sin and cos ask
# the same accuracy of each other; with HIGHEST, expm1, tanh and logistic use formulas that
# do not lose precision where f(x) is near 1 or -1 (`ans + 1`, `1 - ans**2`, `1 - ans`
# cancel), as JAX's rules do.
def _expm1_jvp(g: Any, ans: Any, x: Any, *, accuracy: Accuracy | None = None) -> Any:
  if accuracy is AccuracyMode.HIGHEST:
    return mul(g, exp(x, accuracy=accuracy))
  return mul(g, add(ans, _const(ans, 1)))


def _tanh_jvp(g: Any, ans: Any, x: Any, *, accuracy: Accuracy | None = None) -> Any:
  """1 - tanh(x)**2 is 4 logistic(2x) logistic(-2x)."""
  if accuracy is AccuracyMode.HIGHEST:
    return mul(g, mul(_const(x, 4), mul(logistic(mul(_const(x, 2), x), accuracy=accuracy),
                                        logistic(mul(_const(x, -2), x), accuracy=accuracy))))
  return mul(add(g, mul(g, ans)), sub(_const(x, 1), ans))


def _logistic_jvp(g: Any, ans: Any, x: Any, *, accuracy: Accuracy | None = None) -> Any:
  """1 - logistic(x) is logistic(-x) (JAX's rule does not pass the accuracy to it)."""
  if accuracy is AccuracyMode.HIGHEST:
    return mul(g, mul(ans, logistic(neg(x))))
  return mul(g, mul(ans, sub(_const(ans, 1), ans)))


def _polygamma_jvp_order(g: Any, m: Any, x: Any) -> Any:
  raise ValueError("polygamma is not differentiable with respect to its order m (an "
                   "integer); differentiate with respect to x only.")


def _pow_jvp_base(g: Any, x: Any, y: Any) -> Any:
  """y x^(y-1) dx, taken as 0 where y == 0 (even at x == 0)."""
  y_like_x = convert_element_type(y, dtypes.dtype(x)) if dtypes.is_integer(
      dtypes.dtype(y)) else y
  jac = mul(_replace_zero(y_like_x), pow(x, sub(y, _const(y, 1))))
  is_zero = _broadcast_like(eq(y, _const(y, 0)), x, y)
  return mul(g, select(is_zero, full_like(jac, 0), jac))


# Where f' is written with f(x), the rule takes it from the output (`defjvp2`), as JAX's.
ad.defjvp2(exp_p, lambda g, ans, x, accuracy=None: mul(g, ans))
ad.defjvp2(exp2_p, lambda g, ans, x, accuracy=None: mul(_const(x, np.log(2)), mul(g, ans)))
ad.defjvp(log_p, lambda g, x, accuracy=None: div(g, x))
ad.defjvp(log1p_p, lambda g, x, accuracy=None: div(g, add(x, _const(x, 1))))
ad.defjvp2(expm1_p, _expm1_jvp)
ad.defjvp2(sqrt_p, lambda g, ans, x, accuracy=None: mul(g, div(_const(x, 0.5), ans)))
ad.defjvp2(rsqrt_p, lambda g, ans, x, accuracy=None: mul(g, mul(_const(x, -0.5), div(ans, x))))
ad.defjvp2(cbrt_p, lambda g, ans, x, accuracy=None: mul(
    g, mul(_const(x, 1 / 3), integer_pow(ans, -2))))
ad.defjvp2(logistic_p, _logistic_jvp)
ad.defjvp(sin_p, lambda g, x, accuracy=None: mul(g, cos(x, accuracy=accuracy)))
ad.defjvp(cos_p, lambda g, x, accuracy=None: neg(mul(g, sin(x, accuracy=accuracy))))
ad.defjvp2(tan_p, lambda g, ans, x, accuracy=None: mul(
    g, add(_const(x, 1), integer_pow(ans, 2))))
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), mul(x, x)))))
ad.defjvp(acos_p, lambda g, x: neg(mul(g, rsqrt(sub(_const(x, 1), mul(x, x))))))
ad.defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), mul(x, x))))
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
ad.defjvp2(tanh_p, _tanh_jvp)
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(mul(x, x), _const(x, 1)))))
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(mul(sub(x, _const(x, 1)), add(x, _const(x, 1))))))
ad.defjvp(atanh_p, lambda g, x: div(g, sub(_const(x, 1), mul(x, x))))
ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))
ad.defjvp(erf_p, lambda g, x: mul(g, mul(_const(x, 2 / np.sqrt(np.pi)), exp(neg(mul(x, x))))))
ad.defjvp(erfc_p, lambda g, x: mul(g, mul(_const(x, -2 / np.sqrt(np.pi)), exp(neg(mul(x, x))))))
ad.defjvp2(erf_inv_p, lambda g, ans, x: mul(_const(x, np.sqrt(np.pi) / 2),
                                              mul(g, exp(integer_pow(ans, 2)))))
ad.defjvp(digamma_p, lambda g, x: mul(g, polygamma(_const(x, 1), x)))
ad.defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
          lambda g, x, y: mul(g, div(neg(x), add(mul(x, x), mul(y, y)))))
ad.defjvp2(pow_p, lambda g, ans, x, y: _pow_jvp_base(g, x, y),
           lambda g, ans, x, y: mul(g, mul(log(_replace_zero(x)), ans)))
ad.defjvp(polygamma_p, _polygamma_jvp_order,
          lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))
