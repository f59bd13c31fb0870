"""Elementwise functions of jaxon.numpy (NumPy's ufuncs) written with lax.

Each function promotes its arguments' dtypes by JAX's lattice (Python scalars are weak: they
take the other operand's dtype), broadcasts their ranks NumPy-style, then applies lax ops,
which take operands of one dtype and equal ranks. Three promotions are used, as in JAX:
`_promote_args` (the common dtype), `_promote_args_inexact` (then to a float, for `sin`,
`divide`, …) and `_promote_args_numeric` (bool becomes int32, for arithmetic NumPy does
not define on bools).
"""
from __future__ import annotations

import functools
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.config import config
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, numeric_extra
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.numpy import shape, util
from jaxon._src.xla.array import Array
from jaxon._src.xla.eager_plans import memoize_eager_operations

_Promote = Callable[..., list[Any]]


# ----------------------------------------------------------------------------- promotion

def _promote_shapes(fun_name: str, *args: Any) -> list[Any]:
  """Gives the non-scalar operands one rank by prepending size-1 dimensions; lax then
  broadcasts rank-0 operands and size-1 dimensions itself."""
  if len(args) < 2:
    return list(args)
  if len(args) == 2 and type(args[0]) is Array and type(args[1]) is Array:
    s0, s1 = args[0].aval.shape, args[1].aval.shape
    if s0 == s1 or not s0 or not s1:  # the usual eager case: nothing to do
      return list(args)
  shapes = []
  for x in args:  # a plain loop: on every op, where a comprehension would be one more call
    shapes.append(x.aval.shape if type(x) is Array else np.shape(x))
  if len(set(shapes) - {()}) <= 1:  # the common case: nothing to do, nothing to check
    return list(args)
  if len({len(s) for s in shapes} - {0}) <= 1:  # equal ranks: lax checks them (a TypeError)
    return list(args)
  if config.jax_numpy_rank_promotion != "allow":
    _rank_promotion_warning_or_error(fun_name, shapes)
  out_shape = lax.broadcast_shapes(*shapes)  # JAX's ValueError where they do not broadcast
  ndim = len(out_shape)
  return [x if len(s) in (0, ndim) else
          lax.broadcast_in_dim(x, (1,) * (ndim - len(s)) + s, range(ndim - len(s), ndim))
          for x, s in zip(args, shapes)]


def _rank_promotion_warning_or_error(fun_name: str, shapes: list[tuple[int, ...]]) -> None:
  """`jax_numpy_rank_promotion='warn'` or `'raise'`: broadcasting that adds dimensions to
  an operand (not a scalar) is reported, as in JAX."""
  shapes_text = " ".join(map(str, shapes))
  if config.jax_numpy_rank_promotion == "warn":
    warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes "
                  f"{shapes_text}. Set the jax_numpy_rank_promotion config option to 'allow' "
                  "to disable this warning; for more information, see "
                  "https://docs.jax.dev/en/latest/rank_promotion_warning.html.", stacklevel=2)
  else:
    raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes "
                     f"{shapes_text} and with the config option jax_numpy_rank_promotion="
                     "'raise'. For more information, see "
                     "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")


def _promote_args(fun_name: str, *args: Any) -> list[Any]:
  return _promote_shapes(fun_name, *util.promote_args(fun_name, *args))


def _promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
  promoted = util.promote_args_inexact(fun_name, *args)
  return _promote_shapes(fun_name, *promoted) if len(promoted) > 1 else promoted


def _promote_args_numeric(fun_name: str, *args: Any) -> list[Any]:
  util.check_arraylike(fun_name, *args)
  to_dtype, weak_type = dtypes.result_type(*args, return_weak_type_flag=True)
  if to_dtype == np.bool_:
    to_dtype = np.dtype(np.int32)
  return _promote_shapes(fun_name, *util.convert_all(args, to_dtype, weak_type))


def _dtype(x: Any) -> np.dtype:
  if type(x) is Array:  # the usual case, one call shorter
    return dtypes.canonicalize_dtype(x.aval.dtype)
  return dtypes.dtype(x, canonicalize=True)


def _const(x: Any, value: Any) -> Any:
  """`value` as a constant of `x`'s dtype, to combine with `x` in lax ops; weakly typed
  when `x` is, so that functions of Python scalars stay weak, as in JAX."""
  return lax._const(x, value)


def _strong_const(x: Any, value: Any) -> np.ndarray:
  """`value` as a strongly typed constant of `x`'s dtype: where JAX's implementation uses
  one, the function of a Python scalar is strongly typed (log10(3.0), isinf(3.0))."""
  return np.array(value, _dtype(x))


def _is_int_or_bool(x: Any) -> bool:
  return dtypes.is_integer(_dtype(x)) or dtypes.is_bool(_dtype(x))


def _to_bool(x: Any) -> Any:
  return x if _dtype(x) == np.bool_ else lax.ne(x, _const(x, 0))


# ----------------------------------------------------------------------------- the tables

def _ufunc(name: str, nin: int, promote: _Promote, lax_fn: Callable[..., Any], doc: str
           ) -> Callable[..., Any]:
  """A ufunc that promotes its `nin` arguments with `promote`, then applies `lax_fn`."""
  if nin == 1:
    def fn(x: Any, /) -> Any:
      return lax_fn(*promote(name, x))
  else:
    def fn(x1: Any, x2: Any, /) -> Any:
      return lax_fn(*promote(name, x1, x2))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"{doc}\n\nJAX implementation of `numpy.{name}`."
  return memoize_eager_operations(fn)


_P, _PI = _promote_args, _promote_args_inexact

sqrt = _ufunc("sqrt", 1, _PI, transcendental.sqrt, "Elementwise non-negative square root.")
cbrt = _ufunc("cbrt", 1, _PI, transcendental.cbrt, "Elementwise real cube root.")
exp = _ufunc("exp", 1, _PI, transcendental.exp, "Elementwise exponential e**x.")
exp2 = _ufunc("exp2", 1, _PI, transcendental.exp2, "Elementwise 2**x.")
expm1 = _ufunc("expm1", 1, _PI, transcendental.expm1, "Elementwise exp(x) - 1, accurate near 0.")
log = _ufunc("log", 1, _PI, transcendental.log, "Elementwise natural logarithm.")
log1p = _ufunc("log1p", 1, _PI, transcendental.log1p, "Elementwise log(1 + x), accurate near 0.")
sin = _ufunc("sin", 1, _PI, transcendental.sin, "Elementwise sine.")
cos = _ufunc("cos", 1, _PI, transcendental.cos, "Elementwise cosine.")
tan = _ufunc("tan", 1, _PI, transcendental.tan, "Elementwise tangent.")
arcsin = _ufunc("arcsin", 1, _PI, transcendental.asin, "Elementwise inverse sine.")
arccos = _ufunc("arccos", 1, _PI, transcendental.acos, "Elementwise inverse cosine.")
arctan = _ufunc("arctan", 1, _PI, transcendental.atan, "Elementwise inverse tangent.")
sinh = _ufunc("sinh", 1, _PI, transcendental.sinh, "Elementwise hyperbolic sine.")
cosh = _ufunc("cosh", 1, _PI, transcendental.cosh, "Elementwise hyperbolic cosine.")
tanh = _ufunc("tanh", 1, _PI, transcendental.tanh, "Elementwise hyperbolic tangent.")
arcsinh = _ufunc("arcsinh", 1, _PI, transcendental.asinh, "Elementwise inverse hyperbolic sine.")
arccosh = _ufunc("arccosh", 1, _PI, transcendental.acosh, "Elementwise inverse hyperbolic cosine.")
arctanh = _ufunc("arctanh", 1, _PI, transcendental.atanh, "Elementwise inverse hyperbolic tangent.")
negative = _ufunc("negative", 1, _P, lax.neg, "Elementwise -x (integers wrap around).")
sign = _ufunc("sign", 1, _P, lax.sign, "Elementwise sign: -1, 0 or 1; x/|x| for complex x.")
bitwise_not = _ufunc("bitwise_not", 1, _P, lax.bitwise_not,
                     "Elementwise NOT: bitwise for integers, logical for bools.")
subtract = _ufunc("subtract", 2, _P, lax.sub, "Elementwise x1 - x2.")
maximum = _ufunc("maximum", 2, _P, lax.max,
                 "Elementwise maximum, propagating NaNs (see `fmax` to ignore them).")
minimum = _ufunc("minimum", 2, _P, lax.min,
                 "Elementwise minimum, propagating NaNs (see `fmin` to ignore them).")
equal = _ufunc("equal", 2, _P, lax.eq, "Elementwise x1 == x2 (False where either is NaN).")
not_equal = _ufunc("not_equal", 2, _P, lax.ne,
                   "Elementwise x1 != x2 (True where either is NaN).")
bitwise_and = _ufunc("bitwise_and", 2, _P, lax.bitwise_and,
                     "Elementwise AND: bitwise for integers, logical for bools.")
bitwise_or = _ufunc("bitwise_or", 2, _P, lax.bitwise_or,
                    "Elementwise OR: bitwise for integers, logical for bools.")
bitwise_xor = _ufunc("bitwise_xor", 2, _P, lax.bitwise_xor,
                     "Elementwise XOR: bitwise for integers, logical for bools.")
true_divide = _ufunc("true_divide", 2, _PI, lax.div,
                     "Elementwise x1 / x2 in floating point (integers divide as floats).")
arctan2 = _ufunc("arctan2", 2, _PI, transcendental.atan2,
                 "Elementwise angle of the point (x2, x1): arctan(x1 / x2) in the right "
                 "quadrant.")
nextafter = _ufunc("nextafter", 2, _PI, lax.nextafter,
                   "The next floating-point value after x1 towards x2, elementwise.")
float_power = _ufunc("float_power", 2, _PI, transcendental.pow,
                     "Elementwise x1 ** x2 computed in floating point.")

divide = true_divide
invert = bitwise_not
bitwise_invert = bitwise_not
asin, acos, atan, atan2 = arcsin, arccos, arctan, arctan2
asinh, acosh, atanh = arcsinh, arccosh, arctanh


def _ordered_comparison(name: str, lax_fn: Callable[[Any, Any], Any], symbol: str
                        ) -> Callable[[Any, Any], Any]:
  """Complex numbers compare lexicographically on (real, imag), as in NumPy."""
  def fn(x1: Any, x2: Any, /) -> Any:
    x1, x2 = _promote_args(name, x1, x2)
    if not dtypes.is_complex(_dtype(x1)):
      return lax_fn(x1, x2)
    rx, ry = lax.real(x1), lax.real(x2)
    return lax.select(lax.eq(rx, ry), lax_fn(lax.imag(x1), lax.imag(x2)), lax_fn(rx, ry))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = (f"Elementwise x1 {symbol} x2 (False where either is NaN).\n\n"
                f"JAX implementation of `numpy.{name}`.")
  return memoize_eager_operations(fn)


less = _ordered_comparison("less", lax.lt, "<")
less_equal = _ordered_comparison("less_equal", lax.le, "<=")
greater = _ordered_comparison("greater", lax.gt, ">")
greater_equal = _ordered_comparison("greater_equal", lax.ge, ">=")


# ----------------------------------------------------------------------------- arithmetic

@memoize_eager_operations
def add(x1: Any, x2: Any, /) -> Any:
  """Elementwise x1 + x2; for bools, logical OR (as in NumPy)."""
  x1, x2 = _promote_args("add", x1, x2)
  return lax.bitwise_or(x1, x2) if _dtype(x1) == np.bool_ else lax.add(x1, x2)


@memoize_eager_operations
def multiply(x1: Any, x2: Any, /) -> Any:
  """Elementwise x1 * x2; for bools, logical AND (as in NumPy)."""
  x1, x2 = _promote_args("multiply", x1, x2)
  return lax.bitwise_and(x1, x2) if _dtype(x1) == np.bool_ else lax.mul(x1, x2)


def positive(x: Any, /) -> Any:
  """Elementwise +x: `x` itself."""
  (x,) = _promote_args("positive", x)
  return lax.asarray(x)


@memoize_eager_operations
def abs(x: Any, /) -> Any:
  """Elementwise absolute value; complex input gives its real dtype, bools and unsigned
  integers are returned unchanged."""
  (x,) = _promote_args("abs", x)
  if _dtype(x) == np.bool_ or dtypes.issubdtype(_dtype(x), np.unsignedinteger):
    return lax.asarray(x)
  return lax.abs(x)


absolute = abs


@memoize_eager_operations
def square(x: Any, /) -> Any:
  """Elementwise x * x (bools square as int32)."""
  (x,) = _promote_args_numeric("square", x)
  return numeric_extra.square(x)


@memoize_eager_operations
def reciprocal(x: Any, /) -> Any:
  """Elementwise 1 / x in floating point."""
  (x,) = _promote_args_inexact("reciprocal", x)
  return lax.integer_pow(x, -1)


def _log_base(name: str, base: float) -> Callable[[Any], Any]:
  def fn(x: Any, /) -> Any:
    (x,) = _promote_args_inexact(name, x)
    return lax.div(transcendental.log(x), transcendental.log(_strong_const(x, base)))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"Elementwise base-{base:g} logarithm.\n\nJAX implementation of `numpy.{name}`."
  return fn


log2 = _log_base("log2", 2)
log10 = _log_base("log10", 10)


def _float_divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
  """Python's float `divmod`: the remainder takes the divisor's sign, and the quotient is
  rounded so that `quotient * x2 + remainder == x1` as closely as floats allow."""
  mod = lax.rem(x1, x2)
  div = lax.div(lax.sub(x1, mod), x2)
  fix = lax.bitwise_and(lax.ne(mod, _const(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
  mod = lax.select(fix, lax.add(mod, x2), mod)
  div = lax.select(fix, lax.sub(div, _const(div, 1)), div)
  return lax.round(div), mod


def floor_divide(x1: Any, x2: Any, /) -> Any:
  """Elementwise x1 // x2, rounding towards negative infinity (Python's semantics, unlike
  `lax.div`, which truncates)."""
  x1, x2 = _promote_args_numeric("floor_divide", x1, x2)
  dtype = _dtype(x1)
  if dtypes.issubdtype(dtype, np.unsignedinteger):
    return lax.div(x1, x2)
  if dtypes.is_integer(dtype):
    quotient = lax.div(x1, x2)
    inexact = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)),
                              lax.ne(lax.rem(x1, x2), _const(x1, 0)))
    return where(inexact, lax.sub(quotient, _const(quotient, 1)), quotient)
  if dtypes.is_complex(dtype):
    raise TypeError(f"floor_divide does not support complex inputs, got {dtype.name}")
  return _float_divmod(x1, x2)[0]


def remainder(x1: Any, x2: Any, /) -> Any:
  """Elementwise x1 % x2 with the sign of the divisor (Python's `%`; `fmod` keeps the
  dividend's sign). An integer remainder by zero is 0, as in NumPy."""
  x1, x2 = _promote_args_numeric("remainder", x1, x2)
  if dtypes.is_complex(_dtype(x1)):
    raise TypeError(f"remainder does not support complex inputs, got {_dtype(x1).name}")
  if dtypes.is_integer(_dtype(x2)):
    x2 = where(lax.eq(x2, _const(x2, 0)), _const(x2, 1), x2)
  zero = _const(x1, 0)
  trunc_mod = lax.rem(x1, x2)
  wrong_sign = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                               lax.ne(trunc_mod, zero))
  return lax.select(wrong_sign, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


def fmod(x1: Any, x2: Any, /) -> Any:
  """Elementwise C remainder of x1 / x2, with the sign of the dividend; an integer remainder
  by zero is 0, as in NumPy."""
  x1, x2 = _promote_args_numeric("fmod", x1, x2)
  if dtypes.is_integer(_dtype(x2)):
    x2 = where(lax.eq(x2, _const(x2, 0)), _const(x2, 1), x2)
  return lax.rem(x1, x2)


@memoize_eager_operations
def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:
  """`(floor_divide(x1, x2), remainder(x1, x2))`, elementwise."""
  x1, x2 = _promote_args_numeric("divmod", x1, x2)
  if dtypes.is_integer(_dtype(x1)):
    return floor_divide(x1, x2), remainder(x1, x2)
  return _float_divmod(x1, x2)


@memoize_eager_operations
def power(x1: Any, x2: Any, /) -> Any:
  """Elementwise x1 ** x2.

  A Python (or NumPy) integer exponent gives `lax.integer_pow`, exact for any base dtype
  (`x ** 2` is `x * x`); integer arrays use binary exponentiation; otherwise `transcendental.pow` in
  the promoted dtype. Integers raised to negative integers are an error.
  """
  util.check_arraylike("power", x1, x2)
  if isinstance(x2, (int, np.integer)) and not isinstance(x2, (bool, np.bool_)):
    (x1,) = _promote_args_numeric("power", x1)
    return lax.integer_pow(x1, operator.index(x2))
  x1, x2 = _promote_args_numeric("power", x1, x2)
  if not dtypes.is_integer(_dtype(x1)):
    return transcendental.pow(x1, x2)
  return _integer_power(x1, x2)


pow = power


def _integer_power(x1: Any, x2: Any) -> Any:
  """Binary exponentiation over the exponent's bits: enough of them for any result that
  does not overflow (x1 in {-1, 0, 1} only needs the lowest)."""
  zero, one = _const(x2, 0), _const(x2, 1)
  acc = where(lax.bitwise_and(lax.eq(x1, _const(x1, 0)), lax.ne(x2, zero)),
              _const(x1, 0), _const(x1, 1))
  for _ in range((_dtype(x1).itemsize * 8).bit_length()):
    acc = where(lax.ne(lax.bitwise_and(x2, one), zero), lax.mul(acc, x1), acc)
    x1 = lax.mul(x1, x1)
    x2 = lax.shift_right_logical(x2, one)
  return acc


def fmax(x1: Any, x2: Any) -> Any:
  """Elementwise maximum that ignores a NaN when the other operand is a number."""
  x1, x2 = _promote_args("fmax", x1, x2)
  return where(lax.bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1: Any, x2: Any) -> Any:
  """Elementwise minimum that ignores a NaN when the other operand is a number."""
  x1, x2 = _promote_args("fmin", x1, x2)
  return where(lax.bitwise_or(less(x1, x2), isnan(x2)), x1, x2)


# ----------------------------------------------------------------------------- rounding

def floor(x: Any, /) -> Any:
  """Elementwise floor; integers and bools are returned unchanged."""
  util.check_arraylike("floor", x)
  return lax.asarray(x) if _is_int_or_bool(x) else lax.floor(x)


def ceil(x: Any, /) -> Any:
  """Elementwise ceiling; integers and bools are returned unchanged."""
  util.check_arraylike("ceil", x)
  return lax.asarray(x) if _is_int_or_bool(x) else lax.ceil(x)


def trunc(x: Any) -> Any:
  """Elementwise rounding towards zero; integers are returned unchanged."""
  util.check_arraylike("trunc", x)
  if _is_int_or_bool(x):
    return lax.asarray(x)
  return where(lax.lt(x, _const(x, 0)), ceil(x), floor(x))


def fix(x: Any, out: None = None) -> Any:
  """Elementwise rounding towards zero (NumPy's older name for `trunc`)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.fix is not supported.")
  util.check_arraylike("fix", x)
  if _is_int_or_bool(x):
    return lax.asarray(x)
  return where(lax.ge(x, _const(x, 0)), floor(x), ceil(x))


def rint(x: Any, /) -> Any:
  """Elementwise rounding to the nearest integer, ties to even (in floating point).
  Integers and bools become (strongly typed) floats of the default width, as in JAX."""
  util.check_arraylike("rint", x)
  if _is_int_or_bool(x):
    return lax.convert_element_type(x, dtypes.default_float_dtype())
  (x,) = _promote_args_inexact("rint", x)
  if dtypes.is_complex(_dtype(x)):
    return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


@memoize_eager_operations
def round(a: Any, decimals: int = 0, out: None = None) -> Any:
  """Rounds to `decimals` decimal places, ties to even (NumPy's `round`).

  Args:
    a: an array; integers are returned unchanged (for `decimals >= 0`).
    decimals: a Python int; negative values round to tens, hundreds, …
  Rounding scales by 10**decimals, so results can be off by an ulp where the scaled value
  is inexact (float16 is computed in float32 to limit that).
  """
  util.check_arraylike("round", a)
  decimals = core.concrete_or_error(None, decimals, "'decimals' argument of jnp.round")
  try:
    decimals = operator.index(decimals)
  except TypeError:
    raise TypeError(f"jnp.round: decimals must be an int, got {decimals!r} of type "
                    f"{type(decimals).__name__}.") from None
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
  dtype = _dtype(a)
  if _is_int_or_bool(a):
    if decimals < 0:
      raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return lax.asarray(a)
  if dtypes.is_complex(dtype):
    return lax.complex(_round_float(lax.real(a), decimals),
                       _round_float(lax.imag(a), decimals))
  return _round_float(a, decimals)


def _round_float(x: Any, decimals: int) -> Any:
  if decimals == 0:
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
  dtype = _dtype(x)
  if dtype == np.float16:
    x = lax.convert_element_type(x, np.float32)
  factor = _const(x, 10.0 ** decimals)
  out = lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
  return lax.convert_element_type(out, dtype) if dtype == np.float16 else out


around = round


# ----------------------------------------------------------------------------- predicates

def _elementwise_test(name: str, float_test: Callable[[Any], Any], if_exact: bool | None,
                      combine: Callable[[Any, Any], Any], doc: str) -> Callable[[Any], Any]:
  """A bool test of a float, applied to both parts of a complex number (joined with
  `combine`); integers and bools give the constant `if_exact` (the test itself when None:
  its result is weakly typed for a Python int, as JAX's isnan)."""
  def fn(x: Any, /) -> Any:
    util.check_arraylike(name, x)
    dtype = _dtype(x)
    if dtypes.is_complex(dtype):
      return combine(float_test(lax.real(x)), float_test(lax.imag(x)))
    if dtypes.is_float(dtype) or if_exact is None:
      return float_test(x)
    return lax.full_like(x, if_exact, dtype=np.bool_)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"{doc}\n\nJAX implementation of `numpy.{name}`."
  return memoize_eager_operations(fn)


isfinite = _elementwise_test("isfinite", lax.is_finite, True, lax.bitwise_and,
                             "Elementwise test for finite values (not infinite, not NaN).")
isinf = _elementwise_test("isinf", lambda x: lax.eq(lax.abs(x), _strong_const(x, np.inf)),
                          False, lax.bitwise_or,
                          "Elementwise test for positive or negative infinity.")
isnan = _elementwise_test("isnan", lambda x: lax.ne(x, x), None, lax.bitwise_or,
                          "Elementwise test for NaN.")


def signbit(x: Any, /) -> Any:
  """Elementwise test of the sign bit: True for negative numbers, and also for -0.0 and
  NaNs with the sign bit set, which `x < 0` misses."""
  (x,) = _promote_args("signbit", x)
  dtype = _dtype(x)
  if dtypes.is_integer(dtype):
    return lax.lt(x, _strong_const(x, 0))
  if dtype == np.bool_:
    return lax.full_like(x, False, dtype=np.bool_)
  if not dtypes.is_float(dtype):
    raise ValueError(f"signbit is not defined for {dtype.name} (it needs a real dtype)")
  bits = lax.bitcast_convert_type(x, np.dtype(f"int{dtype.itemsize * 8}"))
  return lax.lt(bits, _const(bits, 0))


# ----------------------------------------------------------------------------- comparisons, logic

def _logical(name: str, lax_fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
  def fn(x1: Any, x2: Any, /) -> Any:
    return lax_fn(*map(_to_bool, _promote_args(name, x1, x2)))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = (f"Elementwise logical {name.split('_')[1].upper()} of the truth values (nonzero "
                f"is True).\n\nJAX implementation of `numpy.{name}`.")
  return fn


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x: Any, /) -> Any:
  """Elementwise logical NOT of the truth value (nonzero is True)."""
  (x,) = _promote_args("logical_not", x)
  return lax.bitwise_not(_to_bool(x))


def left_shift(x1: Any, x2: Any, /) -> Any:
  """Elementwise x1 << x2 for integers."""
  x1, x2 = _promote_args_numeric("left_shift", x1, x2)
  return lax.shift_left(x1, x2)


def right_shift(x1: Any, x2: Any, /) -> Any:
  """Elementwise x1 >> x2: arithmetic (sign-filling) for signed integers, logical for
  unsigned ones."""
  x1, x2 = _promote_args_numeric("right_shift", x1, x2)
  if dtypes.issubdtype(_dtype(x1), np.unsignedinteger):
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


# ----------------------------------------------------------------------------- complex numbers

def real(val: Any, /) -> Any:
  """Elementwise real part (the value itself for real dtypes)."""
  (val,) = _promote_args("real", val)
  return lax.real(val) if dtypes.is_complex(_dtype(val)) else lax.asarray(val)


def imag(val: Any, /) -> Any:
  """Elementwise imaginary part (zeros for real dtypes)."""
  (val,) = _promote_args("imag", val)
  return lax.imag(val) if dtypes.is_complex(_dtype(val)) else lax.full_like(val, 0)


def conjugate(x: Any, /) -> Any:
  """Elementwise complex conjugate (the value itself for real dtypes)."""
  (x,) = _promote_args("conjugate", x)
  return lax.conj(x) if dtypes.is_complex(_dtype(x)) else lax.asarray(x)


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
  """Elementwise angle of a complex number in (-pi, pi], in radians (degrees if `deg`);
  0 or pi for real numbers."""
  (z,) = _promote_args_inexact("angle", z)
  result = transcendental.atan2(imag(z), real(z))
  return degrees(result) if deg else result


# ----------------------------------------------------------------------------- composite functions

def _scale(name: str, factor: float, doc: str) -> Callable[[Any], Any]:
  def fn(x: Any, /) -> Any:
    (x,) = _promote_args_inexact(name, x)
    return lax.mul(x, _const(x, factor))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"{doc}\n\nJAX implementation of `numpy.{name}`."
  return memoize_eager_operations(fn)


deg2rad = _scale("deg2rad", np.pi / 180, "Converts angles from degrees to radians.")
rad2deg = _scale("rad2deg", 180 / np.pi, "Converts angles from radians to degrees.")
radians = _scale("radians", np.pi / 180, "Converts angles from degrees to radians.")
degrees = _scale("degrees", 180 / np.pi, "Converts angles from radians to degrees.")


def _check_real(name: str, *args: Any) -> None:
  if any(dtypes.is_complex(_dtype(x)) for x in args):
    raise TypeError(f"{name} does not support complex-valued inputs, got "
                    f"{', '.join(_dtype(x).name for x in args)}")


@memoize_eager_operations
def hypot(x1: Any, x2: Any, /) -> Any:
  """Elementwise sqrt(x1**2 + x2**2), without overflow or underflow in the squares."""
  x1, x2 = _promote_args_inexact("hypot", x1, x2)
  _check_real("hypot", x1, x2)
  x1, x2 = lax.abs(x1), lax.abs(x2)
  big, small = lax.max(x1, x2), lax.min(x1, x2)
  safe_big = where(lax.eq(big, _const(big, 0)), _const(big, 1), big)
  ratio = lax.div(small, safe_big)
  out = lax.mul(big, transcendental.sqrt(lax.add(_const(big, 1), lax.mul(ratio, ratio))))
  out = where(lax.eq(big, _const(big, 0)), big, out)
  is_inf = lax.bitwise_or(isinf(x1), isinf(x2))
  return where(is_inf, _const(out, np.inf), out)


def _replace_posinf(x: Any) -> Any:
  """x with +inf entries replaced by 0."""
  return lax.select(lax.eq(x, lax._const(x, np.inf)), lax.full_like(x, 0), x)


def _logaddexp_complex(x1: Any, x2: Any, exp_fn: Callable[[Any], Any],
                       log_scale: float | None) -> Any:
  """Complex log_b(b**x1 + b**x2) as big + log_b(1 + b**(small - big)), where big is the
  larger operand in lax.max's (lexicographic) order, with the imaginary part brought back
  into [-pi, pi] (times log_b(e)): a principal value, as JAX's."""
  big = lax.max(x1, x2)
  small_minus_big = lax.sub(lax.add(x1, x2), lax.mul(lax._const(big, 2), big))
  tail = transcendental.log1p(exp_fn(small_minus_big))
  if log_scale is not None:
    tail = lax.mul(lax._const(tail, log_scale), tail)
  out = lax.add(big, tail)
  half_period = np.pi * (1 if log_scale is None else log_scale)
  angle = lax.add(lax.imag(out), lax._const(lax.imag(out), half_period))
  period = lax._const(angle, 2 * half_period)
  wrapped = lax.rem(angle, period)  # rem keeps the sign of `angle`: shift negatives up
  wrapped = lax.select(lax.lt(wrapped, lax._const(wrapped, 0)), lax.add(wrapped, period),
                       wrapped)
  return lax.complex(lax.real(out), lax.sub(wrapped, lax._const(wrapped, half_period)))


def _logaddexp(name: str, exp_fn: Callable[[Any], Any], log_scale: float | None,
               doc: str) -> Callable[[Any, Any], Any]:
  """log_b(b**x1 + b**x2) as max(x1, x2) + log_b(1 + b**-|x1 - x2|) (no overflow), where
  b = exp(1 / log_scale) (e when `log_scale` is None), with JAX's custom JVP rule.

  The formula alone differentiates the kinks of max and abs at ties to 1 and 0 instead of
  1/2 and 1/2 (softplus'(0) would be 0). The rule's weights b**(xi - out) are the softmax
  weights, with +inf read as 0 in both exponents so that an infinite input or result gives
  weights from the finite ones instead of inf - inf (JAX's choice, kept for equal values).
  Where x1 - x2 is NaN (a NaN input, or infinities of one sign) the result is x1 + x2.
  Complex inputs take `_logaddexp_complex`.
  """
  @custom_jvp
  def impl(x1: Any, x2: Any) -> Any:
    if dtypes.is_complex(_dtype(x1)):
      return _logaddexp_complex(x1, x2, exp_fn, log_scale)
    delta = lax.sub(x1, x2)
    tail = transcendental.log1p(exp_fn(lax.neg(lax.abs(delta))))
    if log_scale is not None:
      tail = lax.mul(lax._const(tail, log_scale), tail)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2), lax.add(lax.max(x1, x2), tail))

  @impl.defjvp
  def impl_jvp(primals: tuple[Any, Any], tangents: tuple[Any, Any]) -> tuple[Any, Any]:
    (x1, x2), (t1, t2) = primals, tangents
    out = impl(x1, x2)
    finite_out = _replace_posinf(out)
    weight1, weight2 = (exp_fn(lax.sub(_replace_posinf(x), finite_out)) for x in (x1, x2))
    return out, lax.add(lax.mul(t1, weight1), lax.mul(t2, weight2))

  def fn(x1: Any, x2: Any, /) -> Any:
    x1, x2 = _promote_args_inexact(name, x1, x2)
    return impl(x1, x2)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"{doc}\n\nJAX implementation of `numpy.{name}`."
  return memoize_eager_operations(fn)


logaddexp = _logaddexp("logaddexp", transcendental.exp, None,
                       "Elementwise log(exp(x1) + exp(x2)), without overflow.")
logaddexp2 = _logaddexp("logaddexp2", transcendental.exp2, 1 / np.log(2),
                        "Elementwise log2(2**x1 + 2**x2), without overflow.")


@memoize_eager_operations
def sinc(x: Any, /) -> Any:
  """Elementwise normalized sinc, sin(pi x) / (pi x), with sinc(0) = 1.

  sin(z)/z is NaN at z = 0, and so is each of its derivatives; there the value comes from
  `_sin_over_z_taylor`, whose custom JVP gives the Taylor coefficients, so that derivatives
  of every order at 0 are sinc's own (-pi**2 / 3 for the second), as in JAX.
  """
  (x,) = _promote_args_inexact("sinc", x)
  is_zero = lax.eq(x, lax._const(x, 0))
  pi_x = lax.mul(lax._const(x, np.pi), x)
  safe_pi_x = where(is_zero, lax._const(x, 1), pi_x)
  return where(is_zero, _sin_over_z_taylor(0, pi_x),
               lax.div(transcendental.sin(safe_pi_x), safe_pi_x))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _sin_over_z_taylor(k: int, z: Any) -> Any:
  """The k-th derivative of sin(z)/z at z = 0, shaped like z: (-1)**(k/2) / (k + 1) for
  even k, 0 for odd k; differentiating it gives the (k+1)-th, to any order."""
  return lax.full_like(z, (-1) ** (k // 2) / (k + 1) if k % 2 == 0 else 0)


@_sin_over_z_taylor.defjvp
def _sin_over_z_taylor_jvp(k: int, primals: tuple[Any], tangents: tuple[Any]
                           ) -> tuple[Any, Any]:
  (z,), (t,) = primals, tangents
  return _sin_over_z_taylor(k, z), lax.mul(_sin_over_z_taylor(k + 1, z), t)


@memoize_eager_operations
def heaviside(x1: Any, x2: Any, /) -> Any:
  """Elementwise Heaviside step: 0 for x1 < 0, 1 for x1 > 0, x2 where x1 == 0, and NaN
  where x1 is NaN."""
  x1, x2 = _promote_args_inexact("heaviside", x1, x2)
  zero, one = _const(x1, 0), _const(x1, 1)
  step = where(lax.gt(x1, zero), one, where(lax.lt(x1, zero), zero, x1))
  return where(lax.eq(x1, zero), x2, step)


def copysign(x1: Any, x2: Any, /) -> Any:
  """Elementwise |x1| with the sign bit of x2 (so -0.0 and negative NaNs count as
  negative)."""
  x1, x2 = _promote_args_inexact("copysign", x1, x2)
  _check_real("copysign", x1, x2)
  magnitude = lax.abs(x1)
  return where(signbit(x2), lax.neg(magnitude), magnitude)


# ----------------------------------------------------------------------------- where, clip

def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None) -> Any:
  """Elementwise `x` where `condition` holds (is nonzero), else `y`.

  The three arguments broadcast together; `x` and `y` promote to a common dtype. With
  `condition` alone it is `nonzero(condition, size=size, fill_value=fill_value)`.

  Example: `where(x > 0, x, 0.0)` keeps `x`'s dtype and zeroes its negative entries.
  """
  if x is None and y is None:
    from jaxon._src.numpy import searching  # searching is built on this module
    return searching.nonzero(condition, size=size, fill_value=fill_value)
  if x is None or y is None:
    raise ValueError("Either both or neither of the x and y arguments should be provided "
                     "to jnp.where.")
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value apply only to the one-argument jnp.where.")
  return _select(condition, x, y)


@memoize_eager_operations
def _select(condition: Any, x: Any, y: Any) -> Any:
  """`where` of three arguments (that of one reads its values: it is not memoized)."""
  util.check_arraylike("where", condition, x, y)
  x, y = util.promote_dtypes(x, y)
  condition, x, y = shape.broadcast_arrays(_to_bool(condition), x, y)
  return lax.select_n(condition, y, x)


@memoize_eager_operations
def clip(arr: Any, /, min: Any = None, max: Any = None) -> Any:
  """Limits `arr` to [min, max] elementwise; either bound may be None (unbounded), and
  bounds broadcast against `arr`. NaNs propagate."""
  util.check_arraylike("clip", arr)
  if min is not None:
    arr = maximum(min, arr)
  if max is not None:
    arr = minimum(max, arr)
  return lax.asarray(arr)

