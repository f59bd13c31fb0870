"""jaxon.numpy's elementwise functions and array operators against NumPy: values eagerly and
under jit, JAX's dtype promotion (weak Python scalars, int → float32 for float functions,
bool → int32 for arithmetic), NumPy broadcasting, special values and errors."""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jaxon
import jaxon.numpy as jnp
from tests.lax.test_lax_elementwise import check, loose, rand, wide

f32, bf16, f16, f64 = np.dtype(np.float32), np.dtype(jnp.bfloat16), np.dtype(np.float16), \
    np.dtype(np.float64)
i32, i8, u8, b1, c64 = (np.dtype(t) for t in (np.int32, np.int8, np.uint8, np.bool_,
                                               np.complex64))


def out_dtype(kind, dtype):
  """The result dtype JAX gives: 'same', 'bool', 'inexact' (ints and bools compute in
  float32), 'real' (complex → its real part's dtype), 'numeric' (bool → int32)."""
  dtype = np.dtype(dtype)
  if kind == "bool":
    return b1
  if kind == "inexact" and dtype.kind in "biu":
    return f32
  if kind == "real" and dtype == c64:
    return f32
  if kind == "real" and dtype.kind in "biu":
    return f32
  if kind == "numeric" and dtype == b1:
    return i32
  return dtype


def ref_input(x, out_kind):
  """The input as the reference should see it: bools as int32 for numeric results, exact
  integers for integer results, everything else widened to float64/complex128."""
  if x.dtype == b1 and out_kind == "numeric":
    return x.astype(np.int32)
  if x.dtype.kind in "biu" and out_kind not in ("inexact", "real"):
    return x
  return wide(x)


# ----------------------------------------------------------------------------- unary ufuncs

class Ufunc(NamedTuple):
  name: str
  ref: object
  dtypes: list
  out: str = "same"
  domain: str = "real"
  tol_factor: float = 1.0

  def __repr__(self):
    return self.name


UNARY = [
    Ufunc("sqrt", np.sqrt, [f32, i32, b1, c64], "inexact", "pos"),
    Ufunc("cbrt", np.cbrt, [f32, i32], "inexact"),
    Ufunc("exp", np.exp, [f32, bf16, i32], "inexact"),
    Ufunc("exp2", np.exp2, [f32, u8], "inexact", tol_factor=4),
    Ufunc("expm1", np.expm1, [f32], "inexact"),
    Ufunc("log", np.log, [f32, u8, c64], "inexact", "pos"),
    Ufunc("log2", np.log2, [f32, i32], "inexact", "pos", 4),
    Ufunc("log10", np.log10, [f32, bf16], "inexact", "pos", 4),
    Ufunc("log1p", np.log1p, [f32], "inexact", "pos"),
    Ufunc("sin", np.sin, [f32, i32, c64], "inexact"),
    Ufunc("cos", np.cos, [f32, bf16], "inexact"),
    Ufunc("tan", np.tan, [f32], "inexact", "unit", 4),
    Ufunc("arcsin", np.arcsin, [f32], "inexact", "unit"),
    Ufunc("arccos", np.arccos, [f32], "inexact", "unit"),
    Ufunc("arctan", np.arctan, [f32, i32], "inexact"),
    Ufunc("sinh", np.sinh, [f32], "inexact"),
    Ufunc("cosh", np.cosh, [f32], "inexact"),
    Ufunc("tanh", np.tanh, [f32, i32], "inexact"),
    Ufunc("arcsinh", np.arcsinh, [f32], "inexact"),
    Ufunc("arccosh", np.arccosh, [f32], "inexact", "gt1"),
    Ufunc("arctanh", np.arctanh, [f32], "inexact", "unit"),
    Ufunc("negative", np.negative, [f32, i32, u8, c64]),
    Ufunc("positive", np.positive, [f32, i32]),
    Ufunc("abs", np.abs, [f32, bf16, i32, u8, b1, c64], "real_if_complex"),
    Ufunc("absolute", np.absolute, [i8]),
    Ufunc("sign", np.sign, [f32, i32, c64]),
    Ufunc("square", np.square, [f32, i32, b1, c64], "numeric"),
    Ufunc("reciprocal", np.reciprocal, [f32, i32], "inexact", "nonzero"),
    Ufunc("floor", np.floor, [f32, bf16, i32]),
    Ufunc("ceil", np.ceil, [f32, i32]),
    Ufunc("trunc", np.trunc, [f32, i32, b1]),
    Ufunc("fix", np.fix, [f32, i32]),
    Ufunc("rint", np.rint, [f32, bf16, i32, c64], "inexact"),
    Ufunc("round", np.round, [f32, i32, c64]),
    Ufunc("around", np.round, [bf16]),
    Ufunc("isfinite", np.isfinite, [f32, i32, c64], "bool"),
    Ufunc("isinf", np.isinf, [f32, i32, c64], "bool"),
    Ufunc("isnan", np.isnan, [f32, b1, c64], "bool"),
    Ufunc("signbit", np.signbit, [f32, bf16, f16, i32, b1], "bool"),
    Ufunc("logical_not", np.logical_not, [f32, i32, b1], "bool"),
    Ufunc("bitwise_not", np.bitwise_not, [i32, u8, b1]),
    Ufunc("invert", np.invert, [i8]),
    Ufunc("real", np.real, [f32, c64], "real_if_complex"),
    Ufunc("imag", np.imag, [f32, c64], "real_if_complex"),
    Ufunc("conj", np.conj, [f32, c64]),
    Ufunc("conjugate", np.conjugate, [c64]),
    Ufunc("angle", np.angle, [f32, i32, c64], "real"),
    Ufunc("deg2rad", np.deg2rad, [f32, i32], "inexact"),
    Ufunc("rad2deg", np.rad2deg, [f32], "inexact"),
    Ufunc("degrees", np.degrees, [i32], "inexact"),
    Ufunc("radians", np.radians, [f32], "inexact"),
    Ufunc("sinc", np.sinc, [f32, i32], "inexact", tol_factor=4),
]

SHAPES = [(), (0,), (2, 3)]


def _out(kind, dtype):
  return out_dtype("real" if dtype == c64 else "same", dtype) if kind == "real_if_complex" \
      else out_dtype(kind, dtype)


@pytest.mark.parametrize("op,dtype", [pytest.param(op, dt, id=f"{op.name}-{dt.name}")
                                      for op in UNARY for dt in op.dtypes])
def test_unary(op, dtype):
  result_dtype = _out(op.out, dtype)
  for shape in SHAPES:
    x = rand(shape, dtype, op.domain)
    with np.errstate(all="ignore"):
      expected = op.ref(ref_input(x, op.out))
    check(f"jnp.{op.name}", getattr(jnp, op.name), [x], expected, result_dtype,
          loose(result_dtype, op.tol_factor))


# ----------------------------------------------------------------------------- binary ufuncs

BINARY = [
    Ufunc("add", np.add, [f32, i32, u8, b1, c64]),
    Ufunc("subtract", np.subtract, [f32, bf16, i32, u8, c64]),
    Ufunc("multiply", np.multiply, [f32, i32, b1, c64]),
    Ufunc("divide", np.divide, [f32, i32, c64], "inexact", "nonzero"),
    Ufunc("true_divide", np.true_divide, [u8], "inexact", "nonzero"),
    Ufunc("floor_divide", np.floor_divide, [f32, bf16, i32, u8], "same", "nonzero"),
    Ufunc("remainder", np.remainder, [f32, i32, u8], "same", "nonzero"),
    Ufunc("mod", np.mod, [i8], "same", "nonzero"),
    Ufunc("fmod", np.fmod, [f32, i32], "same", "nonzero"),
    Ufunc("power", np.power, [f32, i32], "same", "pos", 4),
    Ufunc("float_power", np.float_power, [f32, i32], "inexact", "pos", 4),
    Ufunc("maximum", np.maximum, [f32, i32, b1]),
    Ufunc("minimum", np.minimum, [f32, u8]),
    Ufunc("fmax", np.fmax, [f32]),
    Ufunc("fmin", np.fmin, [f32, i32]),
    Ufunc("equal", np.equal, [f32, i32, c64], "bool"),
    Ufunc("not_equal", np.not_equal, [f32, b1], "bool"),
    Ufunc("less", np.less, [f32, i32, c64], "bool"),
    Ufunc("less_equal", np.less_equal, [f32, u8], "bool"),
    Ufunc("greater", np.greater, [f32, c64], "bool"),
    Ufunc("greater_equal", np.greater_equal, [i32, b1], "bool"),
    Ufunc("logical_and", np.logical_and, [f32, i32, b1], "bool"),
    Ufunc("logical_or", np.logical_or, [f32, b1], "bool"),
    Ufunc("logical_xor", np.logical_xor, [i32, b1], "bool"),
    Ufunc("bitwise_and", np.bitwise_and, [i32, u8, b1]),
    Ufunc("bitwise_or", np.bitwise_or, [i32, b1]),
    Ufunc("bitwise_xor", np.bitwise_xor, [u8, b1]),
    Ufunc("left_shift", np.left_shift, [i32, u8], "same", "shift"),
    Ufunc("right_shift", np.right_shift, [i32, u8], "same", "shift"),
    Ufunc("arctan2", np.arctan2, [f32, i32], "inexact"),
    Ufunc("hypot", np.hypot, [f32, i32], "inexact"),
    Ufunc("logaddexp", np.logaddexp, [f32], "inexact"),
    Ufunc("logaddexp2", np.logaddexp2, [f32], "inexact", tol_factor=4),
    Ufunc("copysign", np.copysign, [f32, i32], "inexact"),
    Ufunc("heaviside", np.heaviside, [f32], "inexact"),
    Ufunc("nextafter", np.nextafter, [f32], "inexact"),
]

# Both scalars; array and scalar; rank promotion (3,) with (2, 1); zero-size.
SHAPE_PAIRS = [((), ()), ((2, 3), ()), ((3,), (2, 1)), ((0,), (2, 1))]


def _operand(shape, dtype, domain, seed):
  if domain == "shift":
    return np.random.default_rng(seed).integers(0, dtype.itemsize * 8, shape).astype(dtype)
  return rand(shape, dtype, domain if seed == 2 else "real", seed)


def _reference(op, x, y, result_dtype):
  if op.name == "nextafter":
    return np.nextafter(x, y)
  if x.dtype.kind not in "biu" or result_dtype.kind not in "biu":
    x, y = wide(x), wide(y)
  with np.errstate(all="ignore"):
    return op.ref(x, y)


@pytest.mark.parametrize("op,dtype", [pytest.param(op, dt, id=f"{op.name}-{dt.name}")
                                      for op in BINARY for dt in op.dtypes])
def test_binary(op, dtype):
  result_dtype = out_dtype(op.out, dtype)
  for xs, ys in SHAPE_PAIRS:
    x, y = _operand(xs, dtype, op.domain, 1), _operand(ys, dtype, op.domain, 2)
    if op.name == "power" and dtype == f32:
      x = np.abs(x)
    check(f"jnp.{op.name}", getattr(jnp, op.name), [x, y], _reference(op, x, y, result_dtype),
          result_dtype, loose(result_dtype, op.tol_factor))


# ----------------------------------------------------------------------------- promotion

PROMOTIONS = [  # (x, y, expected dtype, expected weak type): JAX's lattice, not NumPy's
    (np.ones(2, np.uint8), np.ones(2, np.int8), np.dtype(np.int16), False),
    (np.ones(2, np.uint8), 1, u8, False),
    (np.ones(2, np.int8), 1.5, f32, True),  # i8 and a weak float join at f*
    (np.ones(2, jnp.bfloat16), 2.0, bf16, False),
    (np.ones(2, jnp.bfloat16), np.ones(2, np.float16), f32, False),
    (np.ones(2, np.int32), np.ones(2, np.float32), f32, False),
    (np.ones(2, np.bool_), 1, i32, True),
    (np.ones(2, np.float32), 1j, c64, False),
    (2, 3, i32, True),
    (2, 3.0, f32, True),
]


@pytest.mark.parametrize("x,y,dtype,weak", PROMOTIONS,
                         ids=[f"{np.result_type(x).name}+{type(y).__name__}"
                              for x, y, *_ in PROMOTIONS])
def test_add_promotion(x, y, dtype, weak):
  for how, f in (("eager", jnp.add), ("jit", jaxon.jit(jnp.add))):
    out = f(x, y)
    assert (out.dtype, out.weak_type) == (np.dtype(dtype), weak), f"add {how}: {out.aval}"
    np.testing.assert_allclose(np.asarray(out).astype(np.complex128),
                               np.add(np.asarray(x), y).astype(np.complex128))


def test_int_and_bool_promote_to_float32_in_float_functions():
  assert jnp.sin(np.int8(1)).dtype == f32
  assert jnp.divide(np.int32(1), np.int32(2)).dtype == f32
  assert jnp.sqrt(True).dtype == f32 and jnp.sqrt(True).weak_type is False
  assert jnp.sqrt(4).weak_type and float(jnp.sqrt(4)) == 2.0
  assert jnp.exp(np.ones(2, jnp.bfloat16)).dtype == bf16


_HYPOTHESIS_DTYPES = [b1, u8, i8, i32, f16, f32]
_HYPOTHESIS_OPS = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "less",
                   "true_divide"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_HYPOTHESIS_OPS), st.sampled_from(_HYPOTHESIS_DTYPES),
       st.sampled_from(_HYPOTHESIS_DTYPES),
       hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       st.integers(0, 2**16))
def test_binary_promotion_and_broadcasting_property(name, dx, dy, shapes, seed):
  """Any dtype pair and broadcastable shapes: JAX's promoted dtype, NumPy's result shape,
  and NumPy's values computed in that dtype."""
  (sx, sy), out_shape = shapes.input_shapes, shapes.result_shape
  dtype = jnp.promote_types(dx, dy)
  if name == "subtract" and dtype == b1:
    return  # NumPy does not subtract bools either
  x, y = rand(sx, dx, seed=seed), rand(sy, dy, "nonzero", seed=seed + 1)
  out = getattr(jnp, name)(x, y)
  expected_dtype = b1 if name in ("equal", "less") else (
      f32 if name == "true_divide" and dtype.kind in "biu" else dtype)
  assert (out.shape, out.dtype) == (out_shape, expected_dtype), f"{name}({dx}, {dy})"
  with np.errstate(all="ignore"):
    expected = getattr(np, name)(x.astype(dtype), y.astype(dtype))
  if expected_dtype.kind == "f":
    np.testing.assert_allclose(wide(out), wide(expected.astype(expected_dtype)),
                               rtol=2e-3 if expected_dtype == f16 else 1e-6)
  else:
    np.testing.assert_array_equal(np.asarray(out), expected.astype(expected_dtype))


# ----------------------------------------------------------------------------- semantics

NAN, INF = float("nan"), float("inf")


def test_floor_divide_and_remainder_signs():
  """Python's rounding towards -inf and divisor-signed remainders, for ints and floats."""
  a = np.array([7, -7, 7, -7, 6, -6, 0], np.int32)
  b = np.array([2, 2, -2, -2, 3, -3, 5], np.int32)
  for dtype in (i32, f32):
    x, y = a.astype(dtype), b.astype(dtype)
    check("floor_divide", jnp.floor_divide, [x, y], np.floor_divide(x, y), dtype)
    check("remainder", jnp.remainder, [x, y], np.remainder(x, y), dtype)
    check("fmod", jnp.fmod, [x, y], np.fmod(x, y), dtype)
    q, r = jnp.divmod(x, y)
    np.testing.assert_array_equal(q, np.floor_divide(x, y))
    np.testing.assert_array_equal(r, np.remainder(x, y))


def test_integer_remainder_by_zero_is_zero():
  x = np.array([5, -5], np.int32)
  check("remainder", jnp.remainder, [x, np.zeros(2, np.int32)], [0, 0], i32)
  check("fmod", jnp.fmod, [x, np.zeros(2, np.int32)], [0, 0], i32)


def test_power_with_python_int_exponent_is_integer_pow():
  x = np.arange(-3, 4, dtype=np.float32)
  assert "integer_pow[y=3]" in str(jaxon.make_jaxpr(lambda x: jnp.power(x, 3))(x))
  assert "integer_pow[y=2]" in str(jaxon.make_jaxpr(lambda x: x ** 2)(x))
  check("power", lambda x: jnp.power(x, -2), [x[x != 0]], np.power(x[x != 0], -2.0), f32)
  check("power", lambda x: x ** 0, [x], np.ones(7), f32)
  check("power", lambda x: jnp.power(x, np.int64(3)), [x.astype(np.int32)],
        np.power(x.astype(np.int32), 3), i32)
  check("power", lambda x: jnp.power(x, 2), [np.array([True, False])], [1, 0], i32)


def test_integer_power_arrays():
  x = np.array([2, -3, 0, 0, 1, -1, 5], np.int32)
  y = np.array([10, 3, 0, 4, 30, 7, 0], np.int32)
  check("power", jnp.power, [x, y], np.power(x, y), i32)
  check("power", jnp.power, [x.astype(np.uint8) % 4, y.astype(np.uint8) % 4],
        np.power(x.astype(np.uint8) % 4, y.astype(np.uint8) % 4), u8)


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", [f32, f16], ids=str)
def test_round_decimals(decimals, dtype):
  x = np.array([1.2345, -2.5, 0.5, 1.5, 123.456, -0.051], dtype)
  expected = np.round(x.astype(np.float64), decimals)
  check(f"round({decimals})", lambda x: jnp.round(x, decimals), [x], expected, dtype,
        loose(dtype, 10))


def test_round_integers_and_errors():
  check("round", lambda x: jnp.round(x, 2), [np.arange(3, dtype=np.int32)], np.arange(3), i32)
  with pytest.raises(NotImplementedError, match="decimals < 0"):
    jnp.round(np.int32(15), -1)
  with pytest.raises(TypeError):
    jnp.round(1.5, 1.5)


SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, 2.5], np.float32)


@pytest.mark.parametrize("name", ["isfinite", "isinf", "isnan", "signbit", "rint", "trunc",
                                  "fix", "sign", "sinc", "floor", "ceil"])
@pytest.mark.parametrize("dtype", [f32, bf16], ids=str)
def test_special_values(name, dtype):
  x = SPECIAL.astype(dtype)
  with np.errstate(all="ignore"):
    expected = getattr(np, name)(x.astype(np.float64))
  check(f"jnp.{name}", getattr(jnp, name), [x], expected,
        b1 if expected.dtype == np.bool_ else dtype)


def test_complex_special_values():
  z = np.array([complex(NAN, 0), complex(0, INF), 1 + 2j, complex(-INF, NAN)], np.complex64)
  for name in ("isfinite", "isinf", "isnan"):
    check(f"jnp.{name}", getattr(jnp, name), [z], getattr(np, name)(z), b1)


@pytest.mark.parametrize("name", ["fmax", "fmin", "maximum", "minimum", "logaddexp",
                                  "logaddexp2", "hypot", "copysign", "heaviside",
                                  "nextafter", "arctan2", "equal", "not_equal", "less"])
def test_binary_special_values(name):
  x, y = SPECIAL[:, None], SPECIAL[None, :]
  with np.errstate(all="ignore"):
    expected = getattr(np, name)(x, y)
  check(f"jnp.{name}", getattr(jnp, name), [x, y], expected,
        b1 if expected.dtype == np.bool_ else f32)


def test_hypot_does_not_overflow():
  x = np.array([3e30, 1e-30, 0.0], np.float32)
  check("hypot", jnp.hypot, [x, x * 4 / 3], np.hypot(x.astype(np.float64),
                                                      x.astype(np.float64) * 4 / 3), f32)


def test_logical_and_shift_semantics():
  x = np.array([0, 1, -2, 3], np.int32)
  y = np.array([0.0, 0.0, 2.5, -1.0], np.float32)
  check("logical_and", jnp.logical_and, [x, y], np.logical_and(x, y), b1)
  check("right_shift", jnp.right_shift, [np.array([-8, 8], np.int32), np.int32(1)],
        [-4, 4], i32)
  check("right_shift", jnp.right_shift, [np.array([200, 8], np.uint8), np.uint8(1)],
        [100, 4], u8)


def test_angle_and_complex_parts():
  z = np.array([1 + 1j, -1 + 0j, -2j], np.complex64)
  check("angle", lambda z: jnp.angle(z, deg=True), [z], np.angle(z, deg=True), f32)
  check("real", jnp.real, [np.float32(2.0)], 2.0, f32)
  check("imag", jnp.imag, [np.arange(3, dtype=np.int32)], np.zeros(3), i32)


def test_clip():
  x = np.array([-3.0, -0.5, 0.5, 3.0, NAN], np.float32)
  check("clip", lambda x: jnp.clip(x, -1, 1), [x], np.clip(x, -1, 1), f32)
  check("clip", lambda x: jnp.clip(x, max=0.0), [x], np.clip(x, None, 0.0), f32)
  check("clip", lambda x: jnp.clip(x, np.array([0.0, 1.0, 0.0, 1.0, 0.0], np.float32)), [x],
        np.maximum(x, [0.0, 1.0, 0.0, 1.0, 0.0]), f32)
  check("clip", lambda x: jnp.clip(x), [x[:3].astype(np.int32)], [-3, 0, 0], i32)
  assert jnp.clip(np.uint8(200), 0, 100).dtype == u8


@pytest.mark.parametrize("cond_shape,x_shape,y_shape", [
    ((), (), ()), ((3,), (2, 3), ()), ((2, 1), (3,), (2, 3)), ((0,), (), (1,))], ids=str)
def test_where(cond_shape, x_shape, y_shape):
  cond = rand(cond_shape, b1)
  x, y = rand(x_shape, f32, seed=1), rand(y_shape, i32, seed=2)
  check("where", jnp.where, [cond, x, y], np.where(cond, x, y), f32)


def test_where_nonbool_condition_and_weak_scalars():
  x = np.array([0, 2, -1], np.int32)
  check("where", lambda x: jnp.where(x, x, 7), [x], np.where(x, x, 7), i32)
  out = jnp.where(True, 1.0, 2)
  assert out.dtype == f32 and out.weak_type
  assert jnp.where(np.ones(2, bool), np.ones(2, jnp.bfloat16), 0.0).dtype == bf16


# ----------------------------------------------------------------------------- operators

BINARY_OPERATORS = [
    ("+", operator.add, np.add), ("-", operator.sub, np.subtract),
    ("*", operator.mul, np.multiply), ("/", operator.truediv, np.true_divide),
    ("//", operator.floordiv, np.floor_divide), ("%", operator.mod, np.remainder),
    ("**", operator.pow, np.power), ("&", operator.and_, np.bitwise_and),
    ("|", operator.or_, np.bitwise_or), ("^", operator.xor, np.bitwise_xor),
    ("<<", operator.lshift, np.left_shift), (">>", operator.rshift, np.right_shift),
    ("==", operator.eq, np.equal), ("!=", operator.ne, np.not_equal),
    ("<", operator.lt, np.less), ("<=", operator.le, np.less_equal),
    (">", operator.gt, np.greater), (">=", operator.ge, np.greater_equal),
]


@pytest.mark.parametrize("symbol,op,ref", BINARY_OPERATORS, ids=[s for s, *_ in
                                                                   BINARY_OPERATORS])
def test_binary_operators(symbol, op, ref):
  """Array with array, array with a Python scalar on either side, and with a NumPy array."""
  x = jnp.array(np.array([1, 5, 7, 2], np.int32))
  y = np.array([1, 2, 3, 2], np.int32)
  for lhs, rhs in ((x, jnp.array(y)), (x, 2), (3, x), (x, y)):
    out = op(lhs, rhs)
    expected = ref(np.asarray(lhs), np.asarray(rhs))
    assert isinstance(out, jaxon.Array), f"{symbol}: {type(out)}"
    np.testing.assert_allclose(np.asarray(out), expected, err_msg=f"x {symbol} y")
    assert out.dtype == (b1 if expected.dtype == np.bool_ else
                         f32 if symbol == "/" else i32), f"{symbol}: {out.dtype}"


def test_divmod_and_unary_operators():
  x = jnp.array(np.array([-3.5, 0.0, 2.0], np.float32))
  q, r = divmod(x, 2.0)
  np.testing.assert_array_equal(q, [-2.0, 0.0, 1.0])
  np.testing.assert_array_equal(r, [0.5, 0.0, 0.0])
  np.testing.assert_array_equal(-x, [3.5, -0.0, -2.0])
  np.testing.assert_array_equal(+x, x)
  np.testing.assert_array_equal(abs(x), [3.5, 0.0, 2.0])
  np.testing.assert_array_equal(~jnp.array(np.array([0, -1], np.int32)), [-1, 0])
  np.testing.assert_array_equal(2 ** jnp.array(np.array([0, 3], np.int32)), [1, 8])


def test_operators_under_jit_and_methods():
  @jaxon.jit
  def f(x, y):
    return (x * 2 + y) ** 2 // 3 % 5, x < y, -x, abs(y), x.conj(), x.real, x.round()

  x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
  out = f(x, y)
  np.testing.assert_allclose(out[0], ((x * 2 + y) ** 2 // 3) % 5)
  np.testing.assert_array_equal(out[1], x < y)
  assert "integer_pow[y=2]" in str(jaxon.make_jaxpr(f)(x, y))


def test_comparison_with_unknown_operands():
  x = jnp.array(np.array([1, 2], np.int32))
  assert (x == None) is False  # noqa: E711  (Python's identity fallback)
  assert (x != "a") is True
  with pytest.raises(TypeError):
    _ = x < "a"
  with pytest.raises(TypeError):
    _ = x + [1, 2]


# ----------------------------------------------------------------------------- errors

ERRORS = [
    ("list-arg", lambda: jnp.add([1, 2], 1), TypeError,
     "add requires ndarray or scalar arguments, got list at position 0"),
    ("shapes", lambda: jnp.add(np.ones(3), np.ones((2, 4))), ValueError,
     r"Incompatible shapes for broadcasting: shapes=\[\(3,\), \(2, 4\)\]"),
    ("shapes-same-rank", lambda: jnp.add(np.ones(3), np.ones(4)), TypeError,
     r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)"),
    ("bitwise-float", lambda: jnp.bitwise_and(1.0, 2.0), TypeError,
     "and does not accept dtype float32"),
    ("shift-float", lambda: jnp.left_shift(np.float32(1), 1), TypeError,
     "shift_left does not accept dtype float32"),
    ("subtract-bool", lambda: jnp.subtract(True, False), TypeError,
     "sub does not accept dtype bool"),
    ("negative-bool", lambda: jnp.negative(np.array([True])), TypeError,
     "neg does not accept dtype bool"),
    ("int-negative-power", lambda: jnp.power(np.int32(2), -1), TypeError,
     "Integers cannot be raised to negative powers"),
    ("floor_divide-complex", lambda: jnp.floor_divide(1j, 2j), TypeError,
     "floor_divide does not support complex inputs"),
    ("hypot-complex", lambda: jnp.hypot(1j, 1.0), TypeError,
     "hypot does not support complex-valued inputs"),
    ("copysign-complex", lambda: jnp.copysign(1j, 1.0), TypeError,
     "copysign does not support complex-valued inputs"),
    ("signbit-complex", lambda: jnp.signbit(1j), ValueError,
     "signbit is not defined for complex64"),
    ("where-one-arg-0d", lambda: jnp.where(True), ValueError, "0d arrays"),
    ("where-x-only", lambda: jnp.where(True, 1.0), ValueError,
     "Either both or neither of the x and y arguments"),
    ("where-shapes", lambda: jnp.where(np.ones(3, bool), np.ones(2), 0.0), ValueError,
     "Incompatible shapes for broadcasting"),
    ("round-traced-decimals", lambda: jaxon.jit(jnp.round)(1.5, 1), jaxon.ConcretizationTypeError,
     "decimals"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(*e[1:], id=e[0]) for e in ERRORS])
def test_errors(fn, exc, match):
  with pytest.raises(exc, match=match):
    fn()


def test_x64_float_functions(x64):
  x = np.linspace(0.1, 3, 5)
  check("jnp.log10", jnp.log10, [x], np.log10(x), f64)
  check("jnp.floor_divide", jnp.floor_divide, [x, -0.7], np.floor_divide(x, -0.7), f64)
  assert jnp.add(np.int64(2**40), 1).dtype == np.int64


# ----------------------------------------------------------------------------- transformations

DIFFERENTIABLE = [
    ("logaddexp", jnp.logaddexp, 2), ("logaddexp2", jnp.logaddexp2, 2),
    ("hypot", jnp.hypot, 2), ("copysign", jnp.copysign, 2), ("fmax", jnp.fmax, 2),
    ("arctan2", jnp.arctan2, 2), ("power", jnp.power, 2), ("float_power", jnp.float_power, 2),
    ("remainder", jnp.remainder, 2), ("where", lambda x, y: jnp.where(x > 0, x, y), 2),
    ("clip", lambda x: jnp.clip(x, -0.5, 0.5), 1), ("sinc", jnp.sinc, 1),
    ("square", jnp.square, 1), ("reciprocal", jnp.reciprocal, 1), ("log10", jnp.log10, 1),
    ("deg2rad", jnp.deg2rad, 1), ("x**3", lambda x: x ** 3, 1), ("abs", jnp.abs, 1),
]


@pytest.mark.parametrize("name,fn,nargs", DIFFERENTIABLE, ids=[d[0] for d in DIFFERENTIABLE])
def test_jvp_of_ufuncs(name, fn, nargs, x64):
  """Composite ufuncs differentiate through their lax ops: forward mode against central
  differences in float64."""
  args = [rand((5,), f64, "pos" if name in ("power", "float_power") else "nonzero", seed=i)
          for i in range(nargs)]
  tangents = [rand((5,), f64, seed=10 + i) for i in range(nargs)]
  _, out_t = jaxon.jvp(fn, args, tangents)
  eps = 1e-6
  plus = fn(*(a + eps * t for a, t in zip(args, tangents)))
  minus = fn(*(a - eps * t for a, t in zip(args, tangents)))
  np.testing.assert_allclose(np.asarray(out_t), (np.asarray(plus) - np.asarray(minus)) / (2 * eps),
                             rtol=1e-6, atol=1e-6, err_msg=f"jvp of jnp.{name}")


def test_vmap_of_ufuncs():
  x, y = rand((3, 4), f32, seed=1), rand((4,), f32, "nonzero", seed=2)
  for fn in (jnp.floor_divide, jnp.hypot, lambda a, b: jnp.where(a > 0, a, b)):
    out = jaxon.vmap(fn, (0, None))(x, y)
    np.testing.assert_allclose(np.asarray(out), np.stack([fn(r, y) for r in x]), rtol=1e-6)
  out = jaxon.vmap(lambda s: jnp.clip(x, s, 1.0))(np.array([-1.0, 0.0], np.float32))
  np.testing.assert_array_equal(np.asarray(out), [np.clip(x, -1, 1), np.clip(x, 0, 1)])
