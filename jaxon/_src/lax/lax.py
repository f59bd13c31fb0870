"""Elementwise arithmetic, comparisons and bitwise operations, selection, iota, dtype
conversion and broadcasting. The transcendental functions (exp, log, sin, …, pow) are rows
of the same table in `transcendental.py`.

Every elementwise primitive is one row of a table: its name, the dtypes it accepts, its
StableHLO op; `_elementwise` builds the primitive, its abstract eval and its lowering.
Operands of an n-ary op have equal dtypes (no implicit promotion: that is jaxon.numpy's job)
and shapes that broadcast: rank-0 operands, and size-1 dimensions of equal-rank operands.
Rows whose lowering needs the avals or params (`round`, `integer_pow`, `sign`, …) register
their own rule right below the table, and each table is followed by its derivatives. Every
elementwise primitive batches by broadcasting (`batching.defbroadcasting`).
"""
from __future__ import annotations

import builtins
import enum
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import dimension_value, utils
from jaxon._src.lax.dot_algorithms import Accuracy, result_accuracy_attr
from jaxon._src.lax.sharding_constraint import apply_out_sharding, apply_sharding
from jaxon._src.xla import sharded
from jaxon._src.xla.array import (
    Array, copy_array, device_put_numpy, placements, scalar_constant)

# Dtype classes an operand may belong to (checked with dtypes.issubdtype).
_float = (np.floating,)
_complex = (np.complexfloating,)
_inexact = (np.inexact,)
_int = (np.integer,)
_signedint = (np.signedinteger,)
_num = (np.number,)
_any = (np.number, np.bool_)
_ordered = (np.integer, np.floating, np.bool_)
_int_or_bool = (np.integer, np.bool_)
_complex_elem = (np.float32, np.float64)  # the parts of complex64 / complex128

_REAL_OF_COMPLEX = {np.dtype(np.complex64): np.dtype(np.float32),
                    np.dtype(np.complex128): np.dtype(np.float64)}
_COMPLEX_OF_REAL = {v: k for k, v in _REAL_OF_COMPLEX.items()}


# ----------------------------------------------------------------------------- lowering helpers

def broadcast_to_out(ctx: mlir.LoweringRuleContext, args: Sequence[ir.Value]) -> list[ir.Value]:
  """Broadcasts rank-0 and size-1 operands of an elementwise op to the output shape."""
  out_shape = ctx.avals_out[0].shape
  result = []
  for x, aval in zip(args, ctx.avals_in):
    if aval.shape != out_shape:
      x = mlir.broadcast_in_dim(aval.update(shape=out_shape), x,
                                list(range(len(out_shape))) if aval.shape else [])
    result.append(x)
  return result


def _nary_lowering(op: Callable[..., ir.Value]) -> mlir.LoweringRule:
  """The rule of a primitive that is `op` of its broadcast operands; the transcendental
  functions' `accuracy` becomes the op's `result_accuracy` attribute."""
  def rule(ctx: mlir.LoweringRuleContext, *args: ir.Value, accuracy: Accuracy | None = None,
           **params: Any) -> list[ir.Value]:
    if accuracy is None:
      return [op(*broadcast_to_out(ctx, args))]
    return [op(*broadcast_to_out(ctx, args), result_accuracy=result_accuracy_attr(accuracy))]
  return rule


def compare_hlo(x: ir.Value, y: ir.Value, direction: str, dtype: np.dtype) -> ir.Value:
  """`stablehlo.compare` with the comparison type XLA needs for `dtype`."""
  if dtypes.is_inexact(dtype):
    kind = "FLOAT"
  elif dtypes.issubdtype(dtype, np.unsignedinteger) or dtype == np.bool_:
    kind = "UNSIGNED"
  else:
    kind = "SIGNED"
  return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get(kind))


# ----------------------------------------------------------------------------- AD helpers

def _const(x: Any, value: Any) -> Any:
  """`value` as a constant of `x`'s dtype, weakly typed when `x` is (so derivative rules
  keep the weak type of their operands, as `x * 2.0` does)."""
  aval = core.get_aval(x)
  if aval.weak_type:
    return scalar_constant(value, aval.dtype, weak_type=True)
  return np.array(value, aval.dtype)


def _broadcast_like(v: Any, *operands: Any) -> Any:
  """`v` broadcast to the shape an elementwise op of `operands` produces: the tangent of an
  operand the op broadcast must have the output's shape."""
  shape = utils.broadcasting_shape("broadcast", *map(core.get_aval, operands))
  if np.shape(v) == shape:
    return v
  return broadcast_in_dim(v, shape, range(len(shape)) if np.shape(v) else ())


def _unbroadcast(operand: Any, ct: Any) -> Any:
  """The cotangent of a linear operand that an elementwise op broadcast: `ct` summed back
  to the operand's shape. None for operands that are not linear (constants)."""
  if not ad.is_undefined_primal(operand):
    return None
  shape, ct_shape = operand.aval.shape, np.shape(ct)
  if shape == ct_shape:
    return ct
  from jaxon._src.lax import reductions  # reductions builds on this module
  axes = [i for i, d in enumerate(ct_shape) if not shape or shape[i] != d]
  summed = reductions.reduce_sum(ct, axes)
  return broadcast_in_dim(summed, shape, [i for i in range(len(shape)) if i not in axes])


def _replace_zero(x: Any) -> Any:
  return select(eq(x, _const(x, 0)), full_like(x, 1), x)


# ----------------------------------------------------------------------------- elementwise

def _strong(*avals: ShapedArray, **params: Any) -> bool:
  """Weak-type rule of ops whose output dtype does not come from a Python scalar (bool)."""
  return False


def _fixed_dtype(dtype: Any) -> Callable[..., np.dtype]:
  return lambda *avals, **params: np.dtype(dtype)


def _real_dtype(aval: ShapedArray, *avals: ShapedArray, **params: Any) -> np.dtype:
  return _REAL_OF_COMPLEX.get(aval.dtype, aval.dtype)


def _complex_dtype(aval: ShapedArray, *avals: ShapedArray, **params: Any) -> np.dtype:
  return _COMPLEX_OF_REAL.get(aval.dtype, aval.dtype)


def _elementwise(name: str, accepted: Sequence[Any], op: Callable[..., ir.Value] | None, *,
                 result_dtype: Callable[..., np.dtype] = utils.input_dtype,
                 weak_type_rule: Callable[..., bool] | None = None,
                 same_dtypes: bool = True) -> core.Primitive:
  """An elementwise primitive whose operands' dtypes are all subtypes of `accepted`.

  `op` builds the StableHLO result from the (broadcast) operand values; rows that pass
  None register a lowering rule of their own.
  """
  def shape_rule(*avals: ShapedArray, **params: Any) -> tuple[int, ...]:
    return utils.broadcasting_shape(name, *avals)

  def dtype_rule(*avals: ShapedArray, **params: Any) -> np.dtype:
    utils.check_dtypes(name, accepted, *avals)
    if same_dtypes:
      utils.check_same_dtypes(name, *avals)
    return result_dtype(*avals, **params)

  prim = utils.standard_primitive(name, shape_rule, dtype_rule, weak_type_rule)
  if op is not None:
    mlir.register_lowering(prim, _nary_lowering(op))
  batching.defbroadcasting(prim)
  return prim


# --- unary arithmetic and transcendental functions

neg_p = _elementwise("neg", _num, hlo.negate)
sign_p = _elementwise("sign", _num, None)
floor_p = _elementwise("floor", _float, hlo.floor)
ceil_p = _elementwise("ceil", _float, hlo.ceil)
round_p = _elementwise("round", _float, None)
is_finite_p = _elementwise("is_finite", _float, hlo.is_finite, result_dtype=_fixed_dtype(bool))
abs_p = _elementwise("abs", (*_signedint, *_inexact), hlo.abs, result_dtype=_real_dtype)
real_p = _elementwise("real", _complex, hlo.real, result_dtype=_real_dtype)
imag_p = _elementwise("imag", _complex, hlo.imag, result_dtype=_real_dtype)
conj_p = _elementwise("conj", (*_complex_elem, *_complex), None, result_dtype=_complex_dtype)


def _sign_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value) -> list[ir.Value]:
  """XLA's sign has no unsigned form: there it is `x != 0`."""
  aval = ctx.avals_in[0]
  if not dtypes.issubdtype(aval.dtype, np.unsignedinteger):
    return [hlo.sign(x)]
  zero, one = mlir.full_like_aval(0, aval), mlir.full_like_aval(1, aval)
  return [hlo.select(compare_hlo(x, zero, "EQ", aval.dtype), zero, one)]


class RoundingMethod(enum.IntEnum):
  """How `round` breaks ties: away from zero (C's `round`) or to the even neighbour
  (NumPy's `round`, IEEE's default)."""
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


def _round_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                    rounding_method: RoundingMethod) -> list[ir.Value]:
  if rounding_method == RoundingMethod.AWAY_FROM_ZERO:
    return [hlo.round_nearest_afz(x)]
  return [hlo.round_nearest_even(x)]



def _conj_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                   input_dtype: np.dtype) -> list[ir.Value]:
  """conj(a+bi) = a-bi; a real operand becomes complex with zero imaginary part."""
  aval = ctx.avals_in[0]
  if dtypes.is_complex(aval.dtype):
    return [hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))]
  return [hlo.complex(x, mlir.full_like_aval(0, aval))]


mlir.register_lowering(sign_p, _sign_lowering)
mlir.register_lowering(round_p, _round_lowering)
mlir.register_lowering(conj_p, _conj_lowering)


def neg(x: Any) -> Any:
  r"""Elementwise negation :math:`-x` (integers wrap around: `neg(INT_MIN) == INT_MIN`)."""
  return neg_p.bind(x)


def sign(x: Any) -> Any:
  r"""Elementwise sign: -1, 0 or 1 (NaN for NaN); :math:`x / |x|` for complex `x`."""
  return sign_p.bind(x)


def floor(x: Any) -> Any:
  r"""Elementwise floor :math:`\lfloor x \rfloor` of a floating-point array."""
  return floor_p.bind(x)


def ceil(x: Any) -> Any:
  r"""Elementwise ceiling :math:`\lceil x \rceil` of a floating-point array."""
  return ceil_p.bind(x)


def round(x: Any, rounding_method: RoundingMethod | int = RoundingMethod.AWAY_FROM_ZERO
          ) -> Any:
  r"""Rounds a floating-point array to integral values.

  Args:
    x: a floating-point array.
    rounding_method: how ties (x.5) round. The default, `AWAY_FROM_ZERO`, is C's `round`;
      `TO_NEAREST_EVEN` is NumPy's `round` (and `rint`).

  Example: `round(2.5)` is 3.0; `round(2.5, RoundingMethod.TO_NEAREST_EVEN)` is 2.0.
  """
  return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


def is_finite(x: Any) -> Any:
  r"""Elementwise test for finiteness (neither infinite nor NaN); bool output."""
  return is_finite_p.bind(x)


def abs(x: Any) -> Any:
  r"""Elementwise absolute value :math:`|x|`; complex input gives its real dtype."""
  return abs_p.bind(x)



def real(x: Any) -> Any:
  r"""Elementwise real part of a complex array."""
  return real_p.bind(x)


def imag(x: Any) -> Any:
  r"""Elementwise imaginary part of a complex array."""
  return imag_p.bind(x)


def conj(x: Any) -> Any:
  r"""Elementwise complex conjugate; a float32/float64 operand becomes complex."""
  return conj_p.bind(x, input_dtype=dtypes.dtype(x, canonicalize=True))


# Derivatives of the unary functions, each `g * f'(x)` (complex-analytic where complex).
def _abs_jvp(g: Any, ans: Any, x: Any) -> Any:
  """d|x| is sign(x) dx; for complex x it is Re(conj(x) dx) / |x| (0 at 0)."""
  if not dtypes.is_complex(dtypes.dtype(x)):
    return select(ge(x, _const(x, 0)), g, neg(g))
  return real(mul(g, div(conj(x), _replace_zero(convert_element_type(ans, dtypes.dtype(x))))))


def _conj_transpose(ct: Any, x: Any, *, input_dtype: np.dtype) -> list[Any]:
  return [conj(ct) if dtypes.is_complex(input_dtype) else real(ct)]


for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p):
  ad.defjvp(_p, None)
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])
ad.deflinear(real_p, lambda ct, x: [complex(ct, _const(ct, 0))])
ad.deflinear(imag_p, lambda ct, x: [complex(_const(ct, 0), neg(ct))])
ad.deflinear(conj_p, _conj_transpose)
# Where f' is written with f(x), the rule takes it from the output (`defjvp2`), as JAX's.
ad.defjvp2(abs_p, _abs_jvp)


# --- binary arithmetic

add_p = _elementwise("add", _num, hlo.add)
sub_p = _elementwise("sub", _num, hlo.subtract)
div_p = _elementwise("div", _num, hlo.divide)
rem_p = _elementwise("rem", (*_int, *_float), hlo.remainder)
max_p = _elementwise("max", _any, None)
min_p = _elementwise("min", _any, None)
nextafter_p = _elementwise("nextafter", _float, chlo.next_after)
complex_p = _elementwise("complex", _complex_elem, hlo.complex, result_dtype=_complex_dtype)




def _mul_dtype(x: ShapedArray, y: ShapedArray, *, out_dtype: np.dtype | None = None
               ) -> np.dtype:
  """With an `out_dtype` the operands may differ: both are converted to it."""
  if out_dtype is None:
    utils.check_same_dtypes("mul", x, y)
    return x.dtype
  return out_dtype


mul_p = _elementwise("mul", _num, None, result_dtype=_mul_dtype, same_dtypes=False)



def _minmax_lowering(op: Callable[..., ir.Value], direction: str) -> mlir.LoweringRule:
  """XLA's max/min of complex numbers: lexicographic on (real, imag), as NumPy orders them."""
  def rule(ctx: mlir.LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
    x, y = broadcast_to_out(ctx, [x, y])
    dtype = ctx.avals_in[0].dtype
    if not dtypes.is_complex(dtype):
      return [op(x, y)]
    rx, ry, ix, iy = hlo.real(x), hlo.real(y), hlo.imag(x), hlo.imag(y)
    pick_x = hlo.select(compare_hlo(rx, ry, "EQ", dtype), compare_hlo(ix, iy, direction, dtype),
                        compare_hlo(rx, ry, direction, dtype))
    return [hlo.select(pick_x, x, y)]
  return rule


def _mul_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, y: ir.Value, *,
                  out_dtype: np.dtype | None = None) -> list[ir.Value]:
  x, y = broadcast_to_out(ctx, [x, y])
  if out_dtype is not None:
    out_type = mlir.aval_to_ir_type(ctx.avals_out[0])
    x, y = (v if aval.dtype == out_dtype else hlo.convert(out_type, v)
            for v, aval in zip((x, y), ctx.avals_in))
  return [hlo.multiply(x, y)]


mlir.register_lowering(mul_p, _mul_lowering)
mlir.register_lowering(max_p, _minmax_lowering(hlo.maximum, "GT"))
mlir.register_lowering(min_p, _minmax_lowering(hlo.minimum, "LT"))


def add(x: Any, y: Any) -> Any:
  r"""Elementwise addition :math:`x + y`. Operands must have equal dtypes."""
  return add_p.bind(x, y)


def sub(x: Any, y: Any) -> Any:
  r"""Elementwise subtraction :math:`x - y`."""
  return sub_p.bind(x, y)


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
  r"""Elementwise multiplication :math:`x \times y`.

  With `out_dtype` the operands (which may then have different numeric dtypes) are
  converted to it and multiplied there: `mul(a_bf16, b_f32, out_dtype=jnp.float32)`.
  Without one they must have equal dtypes, and the primitive has no `out_dtype` param.
  """
  if out_dtype is None:
    return mul_p.bind(x, y)
  return mul_p.bind(x, y, out_dtype=dtypes.canonicalize_dtype(out_dtype))


def div(x: Any, y: Any) -> Any:
  r"""Elementwise division :math:`x / y`; integer division rounds towards zero (C's `/`,
  not Python's `//`)."""
  return div_p.bind(x, y)


def rem(x: Any, y: Any) -> Any:
  r"""Elementwise remainder of `div`: the result has the sign of `x` (C's `fmod`, not
  Python's `%`)."""
  return rem_p.bind(x, y)


def max(x: Any, y: Any) -> Any:
  r"""Elementwise maximum; NaN if either operand is NaN."""
  return max_p.bind(x, y)


def min(x: Any, y: Any) -> Any:
  r"""Elementwise minimum; NaN if either operand is NaN."""
  return min_p.bind(x, y)



def nextafter(x1: Any, x2: Any) -> Any:
  r"""The next representable value after `x1` in the direction of `x2`, elementwise."""
  return nextafter_p.bind(x1, x2)


def complex(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x + iy` from float32 (or float64) parts."""
  return complex_p.bind(x, y)




# Derivatives of the binary functions. A rule's result has the output's shape, so the
# tangent of an operand that was broadcast is broadcast too.
def _mul_transpose(ct: Any, x: Any, y: Any, *, out_dtype: np.dtype | None = None
                   ) -> list[Any]:
  """The linear operand's cotangent, computed in its own dtype when an `out_dtype` made
  the product's another."""
  if ad.is_undefined_primal(x):
    dtype = None if out_dtype is None else x.aval.dtype
    return [_unbroadcast(x, mul(ct, y, out_dtype=dtype)), None]
  dtype = None if out_dtype is None else y.aval.dtype
  return [None, _unbroadcast(y, mul(x, ct, out_dtype=dtype))]


def _minmax_jvp(g: Any, out: Any, x: Any, other: Any) -> Any:
  """The tangent of the operand that is the result; half of each where they tie."""
  picked = select(eq(x, out), full_like(out, 1), full_like(out, 0))
  ties = select(eq(other, out), full_like(out, 2), full_like(out, 1))
  return mul(g, div(picked, ties))



def _add_sub_jvp(op: Callable[[Any, Any], Any], neg_y: Callable[[Any], Any]) -> Callable:
  """`x ± y` is linear: the tangent is `ẋ ± ẏ`, and a symbolically zero tangent is skipped
  (never materialised as zeros, which a loop body would then carry as a residual)."""
  def jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    (x, y), (tx, ty) = primals, tangents
    out = op(x, y)
    if type(ty) is ad.Zero:
      return out, _broadcast_like(tx, x, y)
    if type(tx) is ad.Zero:
      return out, _broadcast_like(neg_y(ty), x, y)
    return out, op(tx, ty)
  return jvp


ad.primitive_jvps[add_p] = _add_sub_jvp(lambda x, y: add_p.bind(x, y), lambda t: t)
ad.primitive_jvps[sub_p] = _add_sub_jvp(lambda x, y: sub_p.bind(x, y), neg)
ad.primitive_transposes[add_p] = lambda ct, x, y: [_unbroadcast(x, ct), _unbroadcast(y, ct)]
ad.primitive_transposes[sub_p] = lambda ct, x, y: [_unbroadcast(x, ct),
                                                   _unbroadcast(y, neg(ct))]
ad.deflinear(complex_p, lambda ct, x, y: [_unbroadcast(x, real(ct)),
                                          _unbroadcast(y, neg(imag(ct)))])
ad.defjvp(mul_p, lambda g, x, y, out_dtype=None: mul(g, y, out_dtype=out_dtype),
          lambda g, x, y, out_dtype=None: mul(x, g, out_dtype=out_dtype))
ad.primitive_transposes[mul_p] = _mul_transpose
ad.defjvp(div_p, lambda g, x, y: div(g, y),
          lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))
ad.primitive_transposes[div_p] = lambda ct, x, y: [_unbroadcast(x, div(ct, y)), None]
ad.defjvp(rem_p, lambda g, x, y: _broadcast_like(g, x, y),
          lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))))
ad.defjvp2(max_p, _minmax_jvp, lambda g, out, x, y: _minmax_jvp(g, out, y, x))
ad.defjvp2(min_p, _minmax_jvp, lambda g, out, x, y: _minmax_jvp(g, out, y, x))
# nextafter(x1, x2) is x1 moved by one ulp: derivative 1 in x1 and 0 in x2 (almost everywhere).
ad.defjvp(nextafter_p, lambda g, x1, x2: _broadcast_like(g, x1, x2), None)


# --- integer_pow: x**y for a constant integer y, by repeated squaring

def _integer_pow_dtype(x: ShapedArray, *, y: int) -> np.dtype:
  if y < 0 and dtypes.is_integer(x.dtype):
    raise TypeError(f"Integers cannot be raised to negative powers, got "
                    f"integer_pow({x.str_short()}, {y}).")
  return x.dtype


integer_pow_p = _elementwise("integer_pow", _num, None, result_dtype=_integer_pow_dtype)


def _integer_pow_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, y: int
                          ) -> list[ir.Value]:
  """About log2(|y|) squarings and as many multiplies; a negative y takes a reciprocal."""
  aval = ctx.avals_in[0]
  acc, square, n = None, x, builtins.abs(y)
  while n:
    if n & 1:
      acc = square if acc is None else hlo.multiply(acc, square)
    n >>= 1
    if n:
      square = hlo.multiply(square, square)
  if acc is None:
    acc = mlir.full_like_aval(1, aval)
  return [hlo.divide(mlir.full_like_aval(1, aval), acc) if y < 0 else acc]


mlir.register_lowering(integer_pow_p, _integer_pow_lowering)
ad.defjvp(integer_pow_p, lambda g, x, *, y: full_like(g, 0) if y == 0 else mul(
    g, mul(_const(x, y), integer_pow(x, y - 1))))


def integer_pow(x: Any, y: int) -> Any:
  r"""Elementwise power :math:`x^y` for a constant Python integer `y` (the jaxpr keeps `y`
  as a param). Integer `x` needs `y >= 0`; `y < 0` means :math:`1 / x^{|y|}`."""
  try:
    y = operator.index(y)
  except TypeError:
    raise TypeError(f"integer_pow exponent y must be a Python int, got {y!r} of type "
                    f"{type(y).__name__}; use lax.pow for array exponents.") from None
  return integer_pow_p.bind(x, y=y)


# --- comparisons: bool outputs, IEEE semantics for NaN (every comparison but `ne` is False).
# The result is weakly typed when both operands are (`2 < 3.0`), as in JAX; a weak bool
# promotes like a bool.

def _comparison(name: str, accepted: Sequence[Any], direction: str) -> core.Primitive:
  prim = _elementwise(name, accepted, None, result_dtype=_fixed_dtype(bool))

  def lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
    if mlir.element_dims(ctx.avals_in[0]):
      return [_compare_elements(ctx, x, y, direction)]
    return [compare_hlo(*broadcast_to_out(ctx, [x, y]), direction, ctx.avals_in[0].dtype)]
  mlir.register_lowering(prim, lowering)
  ad.defjvp(prim, None, None)
  return prim


def _compare_elements(ctx: mlir.LoweringRuleContext, x: ir.Value, y: ir.Value,
                      direction: str) -> ir.Value:
  """`eq` or `ne` of extended-dtype elements (keys) given as their physical data: two
  elements are equal when all their words are."""
  out_aval = ctx.avals_out[0]
  words = core.physical_aval(ctx.avals_in[0].update(shape=out_aval.shape))
  element_dims = list(range(out_aval.ndim, words.ndim))
  operands = []
  for v, aval in zip((x, y), ctx.avals_in):
    if aval.shape != out_aval.shape:
      v = hlo.broadcast_in_dim(mlir.aval_to_ir_type(words), v,
                               [*(range(out_aval.ndim) if aval.shape else ()), *element_dims])
    operands.append(v)
  word_results = compare_hlo(*operands, direction, words.dtype)
  scalar = mlir.aval_to_ir_type(out_aval.update(shape=()))
  reduce = hlo.ReduceOp([mlir.aval_to_ir_type(out_aval)], [word_results],
                        [mlir.ir_constant(np.bool_(direction == "EQ"))], element_dims)
  block = reduce.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):  # eq: all words equal; ne: any word differs
    hlo.return_([(hlo.and_ if direction == "EQ" else hlo.or_)(*block.arguments)])
  return reduce.result


eq_p = _comparison("eq", (*_any, dtypes.prng_key), "EQ")
ne_p = _comparison("ne", (*_any, dtypes.prng_key), "NE")
lt_p = _comparison("lt", _ordered, "LT")
le_p = _comparison("le", _ordered, "LE")
gt_p = _comparison("gt", _ordered, "GT")
ge_p = _comparison("ge", _ordered, "GE")


def eq(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x = y` (bool)."""
  return eq_p.bind(x, y)


def ne(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x \neq y` (bool; True where either operand is NaN)."""
  return ne_p.bind(x, y)


def lt(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x < y` (bool)."""
  return lt_p.bind(x, y)


def le(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x \leq y` (bool)."""
  return le_p.bind(x, y)


def gt(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x > y` (bool)."""
  return gt_p.bind(x, y)


def ge(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x \geq y` (bool)."""
  return ge_p.bind(x, y)


# --- bitwise operations: logical on bools, bit by bit on integers

not_p = _elementwise("not", _int_or_bool, hlo.not_)
and_p = _elementwise("and", _int_or_bool, hlo.and_)
or_p = _elementwise("or", _int_or_bool, hlo.or_)
xor_p = _elementwise("xor", _int_or_bool, hlo.xor)
shift_left_p = _elementwise("shift_left", _int, hlo.shift_left)
shift_right_logical_p = _elementwise("shift_right_logical", _int, hlo.shift_right_logical)
shift_right_arithmetic_p = _elementwise("shift_right_arithmetic", _int,
                                        hlo.shift_right_arithmetic)
population_count_p = _elementwise("population_count", _int, hlo.popcnt)
clz_p = _elementwise("clz", _int, hlo.count_leading_zeros)


def bitwise_not(x: Any) -> Any:
  r"""Elementwise NOT: logical for bool, bitwise (:math:`\sim x`) for integers."""
  return not_p.bind(x)


def bitwise_and(x: Any, y: Any) -> Any:
  r"""Elementwise AND: logical for bool, bitwise for integers."""
  return and_p.bind(x, y)


def bitwise_or(x: Any, y: Any) -> Any:
  r"""Elementwise OR: logical for bool, bitwise for integers."""
  return or_p.bind(x, y)


def bitwise_xor(x: Any, y: Any) -> Any:
  r"""Elementwise exclusive OR: logical for bool, bitwise for integers."""
  return xor_p.bind(x, y)


def shift_left(x: Any, y: Any) -> Any:
  r"""Elementwise :math:`x \ll y`; shifting by the bit width or more gives 0."""
  return shift_left_p.bind(x, y)


def shift_right_logical(x: Any, y: Any) -> Any:
  r"""Elementwise right shift filling with zeros (the bits read as unsigned)."""
  return shift_right_logical_p.bind(x, y)


def shift_right_arithmetic(x: Any, y: Any) -> Any:
  r"""Elementwise right shift filling with the sign bit (floor division by :math:`2^y`)."""
  return shift_right_arithmetic_p.bind(x, y)


def population_count(x: Any) -> Any:
  r"""Elementwise number of set bits."""
  return population_count_p.bind(x)


def clz(x: Any) -> Any:
  r"""Elementwise number of leading zero bits."""
  return clz_p.bind(x)


# ----------------------------------------------------------------------------- select_n

def _select_n_shape_rule(which: ShapedArray, *cases: ShapedArray) -> tuple[int, ...]:
  if not cases:
    raise TypeError("select_n must have at least one case")
  if any(case.shape != cases[0].shape for case in cases[1:]):
    raise TypeError(f"select_n cases must have the same shapes, got "
                    f"[{', '.join(str(c.shape) for c in cases)}].")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError(f"select_n `which` must be scalar or have the same shape as cases, got "
                    f"`which` shape {which.shape} but case shape {cases[0].shape}.")
  return cases[0].shape


def _select_n_dtype_rule(which: ShapedArray, *cases: ShapedArray) -> np.dtype:
  utils.check_same_dtypes("select_n", *cases)
  if which.dtype not in (np.dtype(bool), np.dtype(np.int32)):
    raise TypeError(f"select_n `which` must be boolean or int32, got {which.str_short()}.")
  if which.dtype == np.bool_ and len(cases) > 2:
    raise TypeError(f"select_n with a boolean `which` takes at most two cases, got "
                    f"{len(cases)}.")
  return cases[0].dtype


def _select_n_weak_type_rule(which: ShapedArray, *cases: ShapedArray) -> bool:
  return all(case.weak_type for case in cases)


select_n_p = utils.standard_primitive("select_n", _select_n_shape_rule, _select_n_dtype_rule,
                                      _select_n_weak_type_rule)


def _select_n_lowering(ctx: mlir.LoweringRuleContext, which: ir.Value, *cases: ir.Value
                       ) -> list[ir.Value]:
  """A balanced tree of `stablehlo.select`s, each testing `which < mid`. For an extended
  dtype (keys), `which` is broadcast over the element's physical dimensions."""
  which_aval = ctx.avals_in[0]
  if which_aval.shape and mlir.element_dims(ctx.avals_in[1]):
    which_aval = which_aval.update(shape=core.physical_aval(ctx.avals_in[1]).shape)
    which = hlo.broadcast_in_dim(mlir.aval_to_ir_type(which_aval), which,
                                 list(range(len(ctx.avals_in[0].shape))))

  def tree(lo: int, hi: int) -> ir.Value:
    if hi - lo == 1:
      return cases[lo]
    if which_aval.dtype == np.bool_:
      return hlo.select(which, cases[1], cases[0])
    mid = (lo + hi) // 2
    pred = compare_hlo(which, mlir.full_like_aval(mid, which_aval), "LT", which_aval.dtype)
    return hlo.select(pred, tree(lo, mid), tree(mid, hi))
  return [tree(0, len(cases))]


mlir.register_lowering(select_n_p, _select_n_lowering)


def _select_n_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
  which, *cases = primals
  out = select_n_p.bind(which, *cases)
  if all(type(t) is ad.Zero for t in tangents[1:]):
    return out, ad.Zero(core.get_aval(out).to_tangent_aval())
  return out, select_n_p.bind(which, *map(ad.instantiate_zeros, tangents[1:]))


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list[Any]:
  """Each linear case gets `ct` where it was picked and zeros elsewhere."""
  zeros = full_like(ct, 0)
  return [None] + [
      select_n_p.bind(which, *(ct if j == i else zeros for j in range(len(cases))))
      if ad.is_undefined_primal(case) else None for i, case in enumerate(cases)]


def _select_n_batch_rule(vals: Sequence[Any], dims: Sequence[int | None]) -> tuple[Any, int]:
  """Batch dimensions to the front; a `which` that is scalar per example stays scalar if
  unmapped, else is broadcast to the cases' shape."""
  (which, *cases), (which_dim, *_) = vals, dims
  size = _batch_size(vals, dims)
  cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, dims[1:])]
  if which_dim is batching.not_mapped and not np.shape(which):
    return select_n_p.bind(which, *cases), 0
  which = batching.bdim_at_front(which, which_dim, size)
  if np.ndim(which) < np.ndim(cases[0]):
    which = broadcast_in_dim(which, np.shape(cases[0]), (0,))
  return select_n_p.bind(which, *cases), 0


def _batch_size(vals: Sequence[Any], dims: Sequence[int | None]) -> int:
  return next(np.shape(v)[d] for v, d in zip(vals, dims) if d is not batching.not_mapped)


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _select_n_batch_rule


def select_n(which: Any, *cases: Any) -> Any:
  """Picks, elementwise, `cases[which]`.

  Args:
    which: bool (then at most two cases: False picks `cases[0]`, True `cases[1]`) or int32
      (out-of-range indices give unspecified results); a scalar, or the cases' shape.
    *cases: arrays of one shape and dtype.

  Example: `select_n(x > 0, zeros, x)` is `relu(x)`.
  """
  return select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
  """`on_true` where the bool `pred` holds, `on_false` elsewhere (note the order:
  `select_n(pred, on_false, on_true)`)."""
  return select_n_p.bind(pred, on_false, on_true)


# ----------------------------------------------------------------------------- clamp

def _clamp_shape_rule(min: ShapedArray, operand: ShapedArray, max: ShapedArray
                      ) -> tuple[int, ...]:
  for name, bound in (("min", min), ("max", max)):
    if bound.shape and bound.shape != operand.shape:
      raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == (), "
                      f"got {name} shape {bound.shape} and operand shape {operand.shape}.")
  return operand.shape


def _clamp_dtype_rule(min: ShapedArray, operand: ShapedArray, max: ShapedArray) -> np.dtype:
  utils.check_dtypes("clamp", _ordered, min, operand, max)
  utils.check_same_dtypes("clamp", min, operand, max)
  return operand.dtype


clamp_p = utils.standard_primitive("clamp", _clamp_shape_rule, _clamp_dtype_rule)
mlir.register_lowering(clamp_p, lambda ctx, lo, x, hi: [hlo.clamp(lo, x, hi)])


def _clamp_batch_rule(vals: Sequence[Any], dims: Sequence[int | None]) -> tuple[Any, int]:
  """Batch dimensions to the front; unmapped scalar bounds stay scalars, mapped ones are
  broadcast to the operand's shape."""
  size = _batch_size(vals, dims)
  x = batching.bdim_at_front(vals[1], dims[1], size)
  lo, hi = (b if d is batching.not_mapped and not np.shape(b) else
            _broadcast_bound(batching.bdim_at_front(b, d, size), np.shape(x))
            for b, d in ((vals[0], dims[0]), (vals[2], dims[2])))
  return clamp_p.bind(lo, x, hi), 0


def _broadcast_bound(bound: Any, shape: tuple[int, ...]) -> Any:
  return bound if np.shape(bound) == shape else broadcast_in_dim(bound, shape, (0,))


def _clamp_jvp_operand(g: Any, lo: Any, x: Any, hi: Any) -> Any:
  return select(bitwise_and(gt(x, lo), lt(x, hi)), g, full_like(g, 0))


def _clamp_jvp_bound(g: Any, lo: Any, x: Any, hi: Any, *, is_min: bool) -> Any:
  """A bound's tangent flows where the bound is the result."""
  active = lt(x, lo) if is_min else gt(x, hi)
  return select(active, _broadcast_like(g, x), full_like(x, 0))


ad.defjvp(clamp_p, lambda g, lo, x, hi: _clamp_jvp_bound(g, lo, x, hi, is_min=True),
          _clamp_jvp_operand,
          lambda g, lo, x, hi: _clamp_jvp_bound(g, lo, x, hi, is_min=False))
batching.primitive_batchers[clamp_p] = _clamp_batch_rule


def clamp(min: Any, x: Any, max: Any) -> Any:
  r"""Elementwise :math:`\min(\max(x, min), max)`; `min` and `max` are scalars or have
  `x`'s shape, and all three share one dtype."""
  return clamp_p.bind(min, x, max)


# ----------------------------------------------------------------------------- bitcast_convert_type

def _bitcast_shape_rule(operand: ShapedArray, *, new_dtype: np.dtype) -> tuple[int, ...]:
  """Equal widths keep the shape; a narrower target adds a minor dimension of the width
  ratio, and a wider one consumes it."""
  old_size, new_size = operand.dtype.itemsize, new_dtype.itemsize
  if old_size == new_size:
    return operand.shape
  if old_size > new_size:
    return (*operand.shape, old_size // new_size)
  ratio = new_size // old_size
  if not operand.shape or operand.shape[-1] != ratio:
    raise TypeError(f"bitcast_convert_type from {operand.dtype.name} to {new_dtype.name} "
                    f"needs an operand whose last dimension is {ratio}, got shape "
                    f"{operand.shape}.")
  return operand.shape[:-1]


def _bitcast_dtype_rule(operand: ShapedArray, *, new_dtype: np.dtype) -> np.dtype:
  if dtypes.is_extended(operand.dtype) or dtypes.is_extended(new_dtype):
    raise ValueError(f"bitcast_convert_type does not reinterpret {operand.dtype} values as "
                     f"{new_dtype}: keys have no bits to reinterpret (use key_data).")
  for dt in (operand.dtype, new_dtype):
    if (dt == np.bool_ or dtypes.is_complex(dt)) and operand.dtype != new_dtype:
      raise TypeError(f"bitcast_convert_type does not convert {dt.name} values (from "
                      f"{operand.dtype.name} to {new_dtype.name}): bool and complex have "
                      "no single bit layout to reinterpret.")
  return new_dtype


bitcast_convert_type_p = utils.standard_primitive(
    "bitcast_convert_type", _bitcast_shape_rule, _bitcast_dtype_rule, _strong)
mlir.register_lowering(bitcast_convert_type_p, lambda ctx, x, *, new_dtype: [
    hlo.bitcast_convert(mlir.aval_to_ir_type(ctx.avals_out[0]), x)])
ad.defjvp(bitcast_convert_type_p, None)  # reinterpreted bits carry no derivative
batching.primitive_batchers[bitcast_convert_type_p] = lambda vals, dims, *, new_dtype: (
    bitcast_convert_type_p.bind(batching.moveaxis(vals[0], dims[0], 0), new_dtype=new_dtype),
    0)  # the batch dimension must not be the minor one, which a width change adds or removes


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
  """Reinterprets the bits of `operand` as `new_dtype` (no numeric conversion).

  Example: `bitcast_convert_type(jnp.float32(1.0), jnp.int32)` is 0x3f800000. From a wider
  to a narrower type a new last dimension holds the pieces (float32 → uint8 adds a
  dimension of 4); the reverse removes it.
  """
  return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize_dtype(new_dtype))


# ----------------------------------------------------------------------------- iota

def _iota_shape_rule(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int,
                     sharding: Any) -> tuple[int, ...]:
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota dimension must be between 0 and len(shape) - 1, got "
                     f"dimension={dimension} for shape {shape}.")
  return shape


def _iota_dtype_rule(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int,
                     sharding: Any) -> np.dtype:
  if not dtypes.issubdtype(dtype, np.number):
    raise TypeError(f"iota does not accept dtype {dtype.name}; it accepts numeric dtypes.")
  return dtype


iota_p = utils.standard_primitive("iota", _iota_shape_rule, _iota_dtype_rule, _strong)
mlir.register_lowering(iota_p, lambda ctx, *, dtype, shape, dimension, sharding: [
    mlir.iota(ctx.avals_out[0], dimension)])


def iota(dtype: Any, size: int, *, sharding: Any = None) -> Any:
  """`[0, 1, …, size - 1]` as a 1-D array of `dtype`, generated on the device (laid out
  as `sharding`, JAX's `out_sharding`, if given)."""
  return broadcasted_iota(dtype, (size,), 0, out_sharding=sharding)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *,
                     out_sharding: Any = None) -> Any:
  """An array of `shape` whose value at each index is that index's coordinate along
  `dimension` (`broadcasted_iota(int32, (2, 3), 1)` is `[[0, 1, 2], [0, 1, 2]]`), laid out
  as `out_sharding` (see `sharding_constraint.apply_out_sharding`)."""
  if out_sharding is not None:
    return apply_out_sharding(broadcasted_iota(dtype, shape, dimension), out_sharding,
                              "broadcasted_iota")
  dimension = core.concrete_or_error(
      operator.index, dimension, "The dimension argument of broadcasted_iota must be concrete.")
  return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype),
                     shape=utils.canonicalize_shape(shape, "of iota"), dimension=dimension,
                     sharding=None)


# ----------------------------------------------------------------------------- convert_element_type

def _convert_element_type_dtype_rule(operand: ShapedArray, *, new_dtype: np.dtype,
                                     weak_type: bool) -> np.dtype:
  if operand.dtype != new_dtype and (dtypes.is_extended(operand.dtype)
                                     or dtypes.is_extended(new_dtype)):
    raise ValueError(f"Cannot convert_element_type from {operand.dtype} to {new_dtype}")
  return new_dtype


convert_element_type_p = utils.standard_primitive(
    "convert_element_type", lambda operand, **_: operand.shape,
    _convert_element_type_dtype_rule,
    lambda operand, *, new_dtype, weak_type: weak_type)


def _convert_element_type_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                                   new_dtype: np.dtype, weak_type: bool) -> list[ir.Value]:
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if aval_in.dtype == aval_out.dtype:
    return [operand]
  if dtypes.is_complex(aval_in.dtype) and not dtypes.is_complex(new_dtype):
    operand = hlo.real(operand)
  if new_dtype == np.bool_ and aval_in.dtype != np.bool_:
    zero = mlir.full_like_aval(0, aval_in.update(dtype=aval_in.dtype if not dtypes.is_complex(
        aval_in.dtype) else aval_out.dtype))
    return [compare_hlo(operand, zero, "NE", aval_in.dtype)]
  return [hlo.convert(mlir.aval_to_ir_type(aval_out), operand)]


mlir.register_lowering(convert_element_type_p, _convert_element_type_lowering)


def _convert_element_type_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
                              new_dtype: np.dtype, weak_type: bool) -> tuple[Any, Any]:
  """Tangents convert along between inexact types; to integers or bool nothing flows."""
  (x,), (t,) = primals, tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
  if type(t) is ad.Zero or not dtypes.is_inexact(new_dtype):
    return out, ad.Zero(core.get_aval(out).to_tangent_aval())
  return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_transpose(ct: Any, operand: Any, *, new_dtype: np.dtype,
                                    weak_type: bool) -> list[Any]:
  aval = operand.aval
  return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


ad.primitive_jvps[convert_element_type_p] = _convert_element_type_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_element_type_transpose
batching.defvectorized(convert_element_type_p)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
  """Converts `operand` to `new_dtype` (the result is strongly typed). A Python or NumPy
  value gives an Array too, as in JAX (the private form keeps it on the host)."""
  out = _convert_element_type(operand, new_dtype, weak_type=False)
  return out if isinstance(out, (core.Tracer, Array)) else device_put_numpy(out)


def _convert_element_type(operand: Any, new_dtype: Any = None, weak_type: bool = False) -> Any:
  """Converts `operand` to `new_dtype` with the given weak type.

  Python and NumPy scalars are converted on the host, so constants stay constants (and
  print inline in jaxprs); converting an array to its own type is a no-op.
  """
  old_dtype = dtypes.dtype(operand, canonicalize=True)
  new_dtype = old_dtype if new_dtype is None else dtypes.canonicalize_dtype(new_dtype)
  weak_type = bool(weak_type)
  if isinstance(operand, (core.Tracer, Array)):
    if old_dtype == new_dtype and operand.aval.weak_type == weak_type:
      return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type)
  if core.is_symbolic_dim(operand):  # `jnp.full((b,), b)` in shape-polymorphic code
    return _convert_element_type(dimension_value.dimension_as_value(operand), new_dtype,
                                 weak_type)
  host = np.asarray(operand)
  if dtypes.is_complex(host.dtype) and not dtypes.is_complex(new_dtype):
    host = host.real
  value = host.astype(new_dtype)
  if weak_type:
    return device_put_numpy(value, weak_type=True)
  return value


# ----------------------------------------------------------------------------- broadcast_in_dim

def _broadcast_in_dim_shape_rule(operand: ShapedArray, *, shape: tuple[int, ...],
                                 broadcast_dimensions: tuple[int, ...],
                                 sharding: Any) -> tuple[int, ...]:
  if len(broadcast_dimensions) != operand.ndim:
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to operand "
                    f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim "
                    f"{operand.ndim}.")
  if len(set(broadcast_dimensions)) != len(broadcast_dimensions) or any(
      not 0 <= d < len(shape) for d in broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions {broadcast_dimensions} must be "
                    f"distinct dimensions of the result shape {shape}.")
  if list(broadcast_dimensions) != sorted(broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing; got "
                    f"{broadcast_dimensions}.")
  for i, d in enumerate(broadcast_dimensions):
    if operand.shape[i] not in (1, shape[d]):
      raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be equal "
                      f"to their corresponding dimensions in the target broadcast shape; got "
                      f"operand of shape {operand.shape}, target broadcast shape {shape}, "
                      f"broadcast_dimensions {broadcast_dimensions}.")
  return shape


broadcast_in_dim_p = utils.standard_primitive(
    "broadcast_in_dim", _broadcast_in_dim_shape_rule, utils.input_dtype)


def _broadcast_in_dim_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                               shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...],
                               sharding: Any) -> list[ir.Value]:
  out_aval = ctx.avals_out[0]
  element_dims = range(out_aval.ndim, out_aval.ndim + len(mlir.element_dims(out_aval)))
  return [mlir.broadcast_in_dim(out_aval, operand, [*broadcast_dimensions, *element_dims])]


mlir.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lowering)


def _broadcast_in_dim_transpose(ct: Any, operand: Any, *, shape: tuple[int, ...],
                                broadcast_dimensions: tuple[int, ...], sharding: Any
                                ) -> list[Any]:
  """Sums over the new dimensions and the stretched size-1 ones."""
  from jaxon._src.lax import reductions  # reductions builds on this module
  in_shape = operand.aval.shape
  kept = [i for i, d in enumerate(broadcast_dimensions) if in_shape[i] == shape[d]]
  summed_axes = [d for d in range(len(shape))
                 if d not in {broadcast_dimensions[i] for i in kept}]
  summed = reductions.reduce_sum(ct, summed_axes)
  return [broadcast_in_dim(summed, in_shape, kept)]


def _broadcast_in_dim_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                                 shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...],
                                 sharding: Any) -> tuple[Any, int]:
  x = batching.moveaxis(vals[0], dims[0], 0)
  return broadcast_in_dim_p.bind(
      x, shape=(np.shape(x)[0], *shape), sharding=None,
      broadcast_dimensions=(0, *(d + 1 for d in broadcast_dimensions))), 0


ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch_rule


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                     *, out_sharding: Any = None) -> Any:
  """Broadcasts `operand` to `shape`; operand dimension i becomes result dimension
  `broadcast_dimensions[i]`. The result is laid out as `out_sharding` (see
  `sharding_constraint.apply_out_sharding`)."""
  if out_sharding is not None:
    return apply_out_sharding(broadcast_in_dim(operand, shape, broadcast_dimensions),
                              out_sharding, "broadcast_in_dim")
  shape = utils.canonicalize_shape(shape, "of broadcast_in_dim")
  broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
  if np.shape(operand) == shape and broadcast_dimensions == tuple(range(len(shape))) and \
      isinstance(operand, (core.Tracer, Array)):
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape,
                                 broadcast_dimensions=broadcast_dimensions, sharding=None)


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
  """Adds leading dimensions of the given `sizes` (the result laid out as `out_sharding`)."""
  if out_sharding is not None:
    return apply_out_sharding(broadcast(operand, sizes), out_sharding, "broadcast")
  ndim = np.ndim(operand)
  return broadcast_in_dim(operand, tuple(sizes) + np.shape(operand),
                          tuple(range(len(sizes), len(sizes) + ndim)))


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *,
         sharding: Any = None) -> Any:
  """An array of `shape` filled with `fill_value`, placed as `sharding` (see
  `sharding_constraint.apply_sharding`)."""
  if sharding is not None:
    return apply_sharding(full(shape, fill_value, dtype), sharding, "full")
  shape = utils.canonicalize_shape(shape, "of full")
  if np.shape(fill_value):
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                    f"{np.shape(fill_value)}.")
  weak = dtype is None and dtypes.is_weakly_typed(fill_value)
  dtype = dtypes.canonicalize_dtype(dtype or dtypes.dtype(fill_value, canonicalize=True))
  if dtypes.is_extended(dtype):
    return dtype.full(shape, fill_value)
  value = _convert_element_type(fill_value, dtype, weak)
  if shape:
    return broadcast(value, shape)
  if isinstance(value, (core.Tracer, Array)):
    return value
  # A 0-d result needs no broadcast, but it gets a buffer of its own: the shared copy of
  # the constant would make two results one buffer, which `jit(donate_argnums=...)` cannot
  # donate twice (optax donates `zeros([])` state entries side by side).
  return copy_array(scalar_constant(value, dtype, weak))


def zeros_like_array(x: Any) -> Any:
  """Zeros of `x`'s shape and dtype (the seed's `lax.zeros_like_array`)."""
  aval = core.get_aval(x)
  return full(aval.shape, 0, aval.dtype)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Sequence[int] | None = None,
              sharding: Any = None) -> Any:
  """An array like `x` (its shape, dtype and weak type, unless `shape`/`dtype` say
  otherwise) filled with `fill_value`, placed as `sharding` (see `full`). Without one, the
  result of `x`'s shape and of a strong dtype is laid out as `x` is when `x` is an Array
  committed to devices (placed, or sharded), as JAX's: `zeros_like(params)` of sharded
  parameters is sharded alike."""
  if sharding is not None:
    return apply_sharding(full_like(x, fill_value, dtype, shape), sharding, "full_like")
  aval = core.get_aval(x)
  weak_type = dtype is None and aval.weak_type
  dtype = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
  shape = aval.shape if shape is None else utils.canonicalize_shape(shape, "of full_like")
  if dtypes.is_extended(dtype):
    out = dtype.full(shape, fill_value)
  else:
    out = broadcast(_convert_element_type(fill_value, dtype, weak_type), shape)
  if (type(x) is Array and placements.seen and not weak_type and shape == aval.shape
      and x._pending is None and sharded.is_placed(x)):  # (a pending Array is uncommitted)
    return apply_sharding(out, x.sharding, "full_like")
  return out


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
  """The shape NumPy broadcasting gives operands of `shapes` (ranks aligned on the right;
  each dimension equal or 1)."""
  shapes = [utils.canonicalize_shape(s, "of broadcast_shapes") for s in shapes]
  ndim = builtins.max((len(s) for s in shapes), default=0)
  padded = [(1,) * (ndim - len(s)) + s for s in shapes]
  out = []
  for sizes in zip(*padded):
    non_one = set(sizes) - {1}
    if len(non_one) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
    out.append(non_one.pop() if non_one else 1)
  return tuple(out)


def asarray(x: Any) -> Any:
  """`x` as a jaxon Array (tracers pass through): Python scalars stay weakly typed. For
  functions that return an input unchanged but must still return an array."""
  if isinstance(x, (core.Tracer, Array)):
    return x
  if not core.valid_jaxtype(x):
    raise TypeError(f"asarray: {type(x).__name__} {x!r} is not a valid jaxon array type")
  return device_put_numpy(np.asarray(x), dtypes.dtype(x, canonicalize=True),
                          weak_type=dtypes.is_weakly_typed(x))
