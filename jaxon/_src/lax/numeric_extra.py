"""Elementwise primitives beyond lax.py's core set: `square`, `reduce_precision`, `mulhi` and
the total-order comparisons (`eq_to`, `le_to`, `lt_to`) that sort comparators use.

They reuse lax.py's elementwise machinery (shape/dtype checks, weak types, broadcasting
batching); only their lowerings and derivative rules are their own.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax

# ----------------------------------------------------------------------------- square

square_p = lax._elementwise("square", (np.integer, np.inexact), None)


def _square_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value) -> list[ir.Value]:
  """Integers multiply; floats use chlo.square, which XLA expands exactly as x * x."""
  if dtypes.is_integer(ctx.avals_in[0].dtype):
    return [hlo.multiply(x, x)]
  return [chlo.square(x)]


mlir.register_lowering(square_p, _square_lowering)
ad.defjvp(square_p, lambda g, x: lax.mul(g, lax.mul(lax._const(x, 2), x)))


def square(x: Any) -> Any:
  r"""Elementwise square :math:`x^2` (one `square` equation in the jaxpr)."""
  return square_p.bind(x)


def reciprocal(x: Any) -> Any:
  r"""Elementwise reciprocal :math:`1 / x`, as `integer_pow(x, -1)` (so integers raise)."""
  return lax.integer_pow(x, -1)


# ----------------------------------------------------------------------------- reduce_precision

def _reduce_precision_dtype(x: core.ShapedArray, *, exponent_bits: int,
                            mantissa_bits: int) -> np.dtype:
  if exponent_bits < 1:
    raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
  if mantissa_bits < 0:
    raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got "
                     f"{mantissa_bits}")
  return x.dtype


reduce_precision_p = lax._elementwise("reduce_precision", (np.floating,), None,
                                      result_dtype=_reduce_precision_dtype)
batching.defvectorized(reduce_precision_p)


def _reduce_precision_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                               exponent_bits: int, mantissa_bits: int) -> list[ir.Value]:
  return [hlo.reduce_precision(x, exponent_bits, mantissa_bits)]


mlir.register_lowering(reduce_precision_p, _reduce_precision_lowering)
# Rounding is treated as linear (as JAX does): tangents and cotangents are rounded alike.
ad.deflinear(reduce_precision_p,
             lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
  """Rounds floats to the nearest value of a narrower format with `exponent_bits` exponent
  and `mantissa_bits` mantissa bits, keeping the dtype (XLA's ReducePrecision): e.g.
  (5, 10) emulates float16 and (8, 7) bfloat16 inside float32 arithmetic."""
  exponent_bits = core.concrete_or_error(
      operator.index, exponent_bits, "exponent_bits argument of lax.reduce_precision")
  mantissa_bits = core.concrete_or_error(
      operator.index, mantissa_bits, "mantissa_bits argument of lax.reduce_precision")
  return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                 mantissa_bits=mantissa_bits)


# ----------------------------------------------------------------------------- mulhi

mulhi_p = lax._elementwise("mulhi", (np.integer,), chlo.mulhi)
ad.defjvp(mulhi_p, None, None)  # integer-valued: no tangent


def mulhi(x: Any, y: Any, /) -> Any:
  r"""The upper N bits of the 2N-bit product of N-bit integers `x` and `y` (signed or
  unsigned by their dtype), elementwise."""
  return mulhi_p.bind(x, y)


# ----------------------------------------------------------------------------- total order

def _total_order_comparison(name: str, accepted: tuple, direction: str) -> core.Primitive:
  """A comparison under IEEE totalOrder for floats (-NaN < -inf < ... < -0 < +0 < ... <
  +inf < NaN), so sorting is a strict weak order even with NaNs and signed zeros."""
  prim = lax._elementwise(name, accepted, None, result_dtype=lambda *a, **p: np.dtype(bool))

  def lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
    x, y = lax.broadcast_to_out(ctx, [x, y])
    dtype = ctx.avals_in[0].dtype
    if not dtypes.is_inexact(dtype):
      return [lax.compare_hlo(x, y, direction, dtype)]
    return [hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                        compare_type=hlo.ComparisonTypeAttr.get("TOTALORDER"))]
  mlir.register_lowering(prim, lowering)
  ad.defjvp(prim, None, None)
  return prim


eq_to_p = _total_order_comparison("eq_to", (np.number, np.bool_), "EQ")
le_to_p = _total_order_comparison("le_to", (np.integer, np.floating, np.bool_), "LE")
lt_to_p = _total_order_comparison("lt_to", (np.integer, np.floating, np.bool_), "LT")
