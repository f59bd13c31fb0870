"""Elementwise lax primitives against NumPy/SciPy: each op × dtype eagerly and under jit, on
scalar, zero-size and broadcast shapes, with the abstract output checked against the
executed one; then special values, the ops with params, and the dtype/shape errors."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytest
import scipy.special

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon._src.dtypes import float0
from tests.conftest import tolerance

f32, f16, bf16, f64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(jnp.bfloat16), \
    np.dtype(np.float64)
i32, i8, u8, b1, c64 = (np.dtype(t) for t in (np.int32, np.int8, np.uint8, np.bool_,
                                               np.complex64))
FLOATS = [f32, f16, bf16]
INEXACT = [f32, bf16, c64]
INTS = [i32, i8, u8]
NUM = [f32, bf16, i32, u8, c64]


def rand(shape, dtype, domain="real", seed=0):
  """Random values of `dtype` from `domain`: 'real' (-3, 3), 'pos' (0.2, 3), 'unit'
  (-0.9, 0.9), 'gt1' (1.1, 3), 'nonzero' (|x| in (0.5, 3)); integers are small."""
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    low = 1 if domain in ("pos", "gt1") or (dtype.kind == "u" and domain == "nonzero") else (
        0 if dtype.kind == "u" else -5)
    x = rng.integers(low, 10 if dtype.kind == "u" else 6, shape)
    if domain == "nonzero":
      x = np.where(x == 0, 1, x)
    return x.astype(dtype)
  lo, hi = {"real": (-3, 3), "pos": (0.2, 3), "unit": (-0.9, 0.9), "gt1": (1.1, 3),
            "nonzero": (0.5, 3)}[domain]
  x = rng.uniform(lo, hi, shape)
  if domain == "nonzero":
    x = x * rng.choice([-1, 1], shape)
  if dtype.kind == "c":
    x = x + 1j * rng.uniform(-1.5, 1.5, shape)
  return x.astype(dtype)


def wide(x):
  """The value in the widest type of its kind, for computing references."""
  x = np.asarray(x)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def check(name, fun, args, expected, out_dtype, tol=None):
  """`fun(*args)` matches `expected` (values, shape, dtype `out_dtype`) eagerly and under
  jit, and abstract evaluation gives the same shape and dtype."""
  args = [jaxon.device_put(a) for a in args]
  out_dtype = np.dtype(out_dtype)
  expected = np.asarray(expected)
  tol = tolerance(out_dtype) if tol is None else tol
  aval = jaxon.make_jaxpr(fun)(*args).out_avals[0]
  where = f"{name} (inputs {', '.join(f'{a.dtype.name}{list(a.shape)}' for a in args)})"
  assert (aval.shape, aval.dtype) == (expected.shape, out_dtype), f"{where}: aval {aval}"
  for how, f in (("eager", fun), ("jit", jaxon.jit(fun))):
    out = f(*args)
    assert (out.shape, out.dtype) == (expected.shape, out_dtype), \
        f"{where} {how}: got {out.dtype}{list(out.shape)}"
    assert not out.weak_type, f"{where} {how}: strongly typed inputs gave a weak output"
    if out_dtype.kind in "biu":
      np.testing.assert_array_equal(np.asarray(out), expected.astype(out_dtype),
                                    err_msg=f"{where} {how}")
    else:
      np.testing.assert_allclose(wide(out), wide(expected.astype(out_dtype)), **tol,
                                 err_msg=f"{where} {how}", equal_nan=True)


def loose(dtype, factor):
  tol = tolerance(dtype)
  return {k: v * factor for k, v in tol.items()}


# ----------------------------------------------------------------------------- unary ops

class Unary(NamedTuple):
  name: str
  ref: object  # NumPy reference on wide values
  dtypes: list
  domain: str = "real"
  tol_factor: float = 1.0

  def __repr__(self):
    return self.name


def _unsigned_bits(fn):
  """An integer reference computed bit by bit on the unsigned view of each element."""
  def ref(x):
    bits = x.dtype.itemsize * 8
    unsigned = x.astype(f"u{x.dtype.itemsize}")
    return np.vectorize(lambda v: fn(int(v), bits), otypes=[np.int64])(unsigned)
  return ref


_popcount = _unsigned_bits(lambda v, bits: bin(v).count("1"))
_clz = _unsigned_bits(lambda v, bits: bits - v.bit_length())


UNARY = [
    Unary("neg", np.negative, NUM),
    Unary("sign", np.sign, [f32, bf16, i32, u8, c64]),
    Unary("floor", np.floor, FLOATS),
    Unary("ceil", np.ceil, FLOATS),
    Unary("is_finite", np.isfinite, FLOATS),
    Unary("abs", np.abs, [f32, bf16, i32, i8, c64]),
    Unary("exp", np.exp, INEXACT),
    Unary("exp2", np.exp2, INEXACT, tol_factor=4),
    Unary("log", np.log, INEXACT, "pos"),
    Unary("log1p", np.log1p, INEXACT, "pos"),
    Unary("expm1", np.expm1, INEXACT),
    Unary("sqrt", np.sqrt, INEXACT, "pos"),
    Unary("rsqrt", lambda x: 1 / np.sqrt(x), INEXACT, "pos"),
    Unary("cbrt", np.cbrt, FLOATS),
    Unary("logistic", lambda x: 1 / (1 + np.exp(-x)), INEXACT),
    Unary("sin", np.sin, INEXACT),
    Unary("cos", np.cos, INEXACT),
    Unary("tan", np.tan, INEXACT, "unit", tol_factor=4),
    Unary("asin", np.arcsin, INEXACT, "unit"),
    Unary("acos", np.arccos, [f32, bf16], "unit"),
    Unary("atan", np.arctan, INEXACT),
    Unary("sinh", np.sinh, INEXACT),
    Unary("cosh", np.cosh, INEXACT),
    Unary("tanh", np.tanh, INEXACT),
    Unary("asinh", np.arcsinh, [f32, bf16]),
    Unary("acosh", np.arccosh, [f32, bf16], "gt1"),
    Unary("atanh", np.arctanh, INEXACT, "unit"),
    Unary("lgamma", scipy.special.gammaln, FLOATS, "pos", tol_factor=4),
    Unary("digamma", scipy.special.digamma, FLOATS, "pos", tol_factor=10),
    Unary("erf", scipy.special.erf, FLOATS),
    Unary("erfc", scipy.special.erfc, FLOATS, tol_factor=4),
    Unary("erf_inv", scipy.special.erfinv, FLOATS, "unit", tol_factor=4),
    Unary("real", np.real, [c64]),
    Unary("imag", np.imag, [c64]),
    Unary("conj", lambda x: np.conj(x).astype(np.complex128), [f32, c64]),
    Unary("bitwise_not", np.invert, [i32, u8, b1]),
    Unary("population_count", _popcount, INTS),
    Unary("clz", _clz, INTS),
]

SHAPES = [(), (0,), (2, 3)]


def _unary_out_dtype(name, dtype):
  if name == "is_finite":
    return b1
  if name in ("abs", "real", "imag") and dtype == c64:
    return f32
  if name == "conj":
    return c64
  return dtype


def _unary_cases(ops):
  return [pytest.param(op, dt, id=f"{op.name}-{dt.name}") for op in ops for dt in op.dtypes]


def _run_unary(op, dtype):
  out_dtype = _unary_out_dtype(op.name, dtype)
  fn = getattr(lax, op.name)
  for shape in SHAPES:
    x = rand(shape, dtype, op.domain)
    exact = np.dtype(dtype).kind in "biu"
    expected = op.ref(x if exact else wide(x))
    check(op.name, fn, [x], expected, out_dtype, loose(out_dtype, op.tol_factor))


@pytest.mark.parametrize("op,dtype", _unary_cases(UNARY))
def test_unary(op, dtype):
  _run_unary(op, dtype)


X64_UNARY = ["neg", "abs", "exp", "log", "sin", "tanh", "sqrt", "cbrt", "lgamma", "erf_inv",
             "floor"]


@pytest.mark.parametrize("op", [op for op in UNARY if op.name in X64_UNARY], ids=repr)
def test_unary_float64(op, x64):
  _run_unary(op._replace(tol_factor=op.tol_factor * 1e3), f64)


# ----------------------------------------------------------------------------- binary ops

class Binary(NamedTuple):
  name: str
  ref: object
  dtypes: list
  domain: tuple = ("real", "real")
  tol_factor: float = 1.0

  def __repr__(self):
    return self.name


def _trunc_div(x, y):
  if x.dtype.kind in "iu":
    return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)
  return x / y


def _bits(x):
  return x.dtype.itemsize * 8


def _shift_right_logical(x, y):
  unsigned = x.view(f"u{x.dtype.itemsize}")
  return (unsigned >> y.astype(unsigned.dtype)).view(x.dtype)


BINARY = [
    Binary("add", np.add, NUM),
    Binary("sub", np.subtract, NUM),
    Binary("mul", np.multiply, NUM),
    Binary("div", _trunc_div, [f32, bf16, i32, u8, c64], ("real", "nonzero")),
    Binary("rem", np.fmod, [f32, bf16, i32, u8], ("real", "nonzero")),
    Binary("max", np.maximum, [f32, bf16, i32, u8, b1]),
    Binary("min", np.minimum, [f32, bf16, i32, u8, b1]),
    Binary("atan2", np.arctan2, [f32, bf16]),
    Binary("nextafter", np.nextafter, [f32]),
    Binary("complex", lambda x, y: x + 1j * y, [f32]),
    Binary("pow", np.power, [f32, bf16, c64], ("pos", "real"), tol_factor=4),
    Binary("eq", np.equal, [f32, i32, b1, c64]),
    Binary("ne", np.not_equal, [f32, i32, b1, c64]),
    Binary("lt", np.less, [f32, i32, u8, b1]),
    Binary("le", np.less_equal, [f32, i32, u8]),
    Binary("gt", np.greater, [f32, i32, u8]),
    Binary("ge", np.greater_equal, [f32, bf16, i32, u8]),
    Binary("bitwise_and", np.bitwise_and, [i32, u8, b1]),
    Binary("bitwise_or", np.bitwise_or, [i32, u8, b1]),
    Binary("bitwise_xor", np.bitwise_xor, [i32, u8, b1]),
    Binary("shift_left", lambda x, y: x << y.astype(x.dtype), INTS, ("real", "shift")),
    Binary("shift_right_arithmetic", lambda x, y: x >> y.astype(x.dtype), INTS,
           ("real", "shift")),
    Binary("shift_right_logical", _shift_right_logical, INTS, ("real", "shift")),
]

# Operand shapes: both scalars, array with scalar, size-1 dimensions on both sides, zero-size.
SHAPE_PAIRS = [((), ()), ((2, 3), ()), ((2, 1), (1, 3)), ((0, 3), (1, 3))]


def _binary_out_dtype(name, dtype):
  if name in ("eq", "ne", "lt", "le", "gt", "ge"):
    return b1
  return c64 if name == "complex" else dtype


def _binary_operand(shape, dtype, domain, seed):
  if domain == "shift":
    return np.random.default_rng(seed).integers(0, _bits(np.empty(0, dtype)), shape).astype(
        dtype)
  return rand(shape, dtype, domain, seed)


def _run_binary(op, dtype):
  out_dtype = _binary_out_dtype(op.name, dtype)
  for xs, ys in SHAPE_PAIRS:
    x = _binary_operand(xs, dtype, op.domain[0], 1)
    y = _binary_operand(ys, dtype, op.domain[1], 2)
    if op.name in ("eq", "ne", "lt") and x.size and y.size:
      y = np.where(np.arange(np.broadcast(x, y).size).reshape(np.broadcast(x, y).shape) % 2,
                   y, x)  # make some operands equal
    exact = np.dtype(dtype).kind in "biu"
    expected = op.ref(x, y) if exact else op.ref(wide(x), wide(y))
    if op.name == "nextafter":
      expected = np.nextafter(x, y)
    check(op.name, getattr(lax, op.name), [x, y], expected, out_dtype,
          loose(out_dtype, op.tol_factor))


@pytest.mark.parametrize("op,dtype", [pytest.param(op, dt, id=f"{op.name}-{dt.name}")
                                      for op in BINARY for dt in op.dtypes])
def test_binary(op, dtype):
  _run_binary(op, dtype)


@pytest.mark.parametrize("op", [op for op in BINARY if op.name in (
    "add", "div", "rem", "pow", "atan2", "lt", "max")], ids=repr)
def test_binary_float64(op, x64):
  _run_binary(op._replace(tol_factor=op.tol_factor * 1e2), f64)


# ----------------------------------------------------------------------------- special values

NAN, INF = float("nan"), float("inf")
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5], np.float32)


@pytest.mark.parametrize("name,ref", [
    ("is_finite", np.isfinite), ("sign", np.sign), ("floor", np.floor), ("abs", np.abs),
    ("exp", np.exp), ("sqrt", np.sqrt), ("erf", scipy.special.erf),
    ("logistic", lambda x: scipy.special.expit(x))], ids=lambda v: getattr(v, "__name__", v))
def test_unary_special_values(name, ref):
  with np.errstate(invalid="ignore"):
    expected = ref(SPECIAL.astype(np.float64))
  check(name, getattr(lax, name), [SPECIAL], expected, b1 if name == "is_finite" else f32)


@pytest.mark.parametrize("name,ref", [
    ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("ge", np.greater_equal),
    ("max", np.maximum), ("min", np.minimum), ("add", np.add)], ids=str)
def test_binary_special_values(name, ref):
  """NaN compares unequal to everything (`ne` True, the rest False); max/min propagate it."""
  x, y = SPECIAL[:, None], SPECIAL[None, :]
  with np.errstate(invalid="ignore"):
    expected = ref(x, y)
  check(name, getattr(lax, name), [x, y], expected, expected.dtype)


def test_complex_max_min_are_lexicographic():
  x = np.array([1 + 2j, 1 + 3j, 2 + 0j, -1 - 1j], np.complex64)
  y = np.array([1 + 3j, 1 + 2j, 1 + 5j, -1 - 1j], np.complex64)
  check("max", lax.max, [x, y], np.array([1 + 3j, 1 + 3j, 2, -1 - 1j]), c64)
  check("min", lax.min, [x, y], np.array([1 + 2j, 1 + 2j, 1 + 5j, -1 - 1j]), c64)


def test_integer_edge_cases():
  i8_min = np.array([-128, 127, 0], np.int8)
  check("neg", lax.neg, [i8_min], np.array([-128, -127, 0], np.int8), i8)
  check("sign", lax.sign, [np.array([0, 3, 255], np.uint8)], np.array([0, 1, 1]), u8)
  shifts = np.array([8, 9, 31], np.uint8)
  check("shift_left", lax.shift_left, [np.array([1, 1, 1], np.uint8), shifts], [0, 0, 0], u8)


# ------------------------------------------------------- round, integer_pow, iota, …

ROUND_INPUTS = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, 0.0], np.float32)


@pytest.mark.parametrize("method,expected", [
    (lax.RoundingMethod.AWAY_FROM_ZERO, [1, 2, 3, -1, -2, 2, -3, 0]),
    (lax.RoundingMethod.TO_NEAREST_EVEN, [0, 2, 2, -0, -2, 2, -3, 0]),
    (1, [0, 2, 2, -0, -2, 2, -3, 0])], ids=["away", "even", "int-even"])
@pytest.mark.parametrize("dtype", [f32, bf16], ids=str)
def test_round(method, expected, dtype):
  check("round", lambda x: lax.round(x, method), [ROUND_INPUTS.astype(dtype)],
        np.array(expected), dtype)


def test_round_jaxpr_has_rounding_method():
  jaxpr = jaxon.make_jaxpr(lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN))(1.0)
  assert jaxpr.jaxpr.eqns[0].params == {"rounding_method": lax.RoundingMethod.TO_NEAREST_EVEN}


@pytest.mark.parametrize("y", [0, 1, 2, 3, 7, -1, -3])
@pytest.mark.parametrize("dtype", [f32, i32, c64], ids=str)
def test_integer_pow(y, dtype):
  if y < 0 and dtype == i32:
    pytest.skip("negative powers of integers are an error (tested below)")
  x = rand((2, 3), dtype, "nonzero")
  check(f"integer_pow[y={y}]", lambda x: lax.integer_pow(x, y), [x],
        np.power(x if dtype == i32 else wide(x), y), dtype, loose(dtype, 4))


def test_integer_pow_jaxpr():
  assert str(jaxon.make_jaxpr(lambda x: lax.integer_pow(x, 3))(1.0)) == (
      "{ lambda ; a:f32[]. let b:f32[] = integer_pow[y=3] a in (b,) }")


def test_pow_integer_exponent():
  x = rand((2, 3), f32, "pos")
  y = np.array([[0, 1, -2], [3, 2, -1]], np.int32)
  check("pow", lax.pow, [x, y], np.power(wide(x), y), f32)


@pytest.mark.parametrize("dtype", [i32, f32, u8, bf16], ids=str)
def test_iota(dtype):
  check("iota", lambda: lax.iota(dtype, 5), [], np.arange(5), dtype)
  check("iota", lambda: lax.iota(dtype, 0), [], np.arange(0), dtype)
  check("broadcasted_iota", lambda: lax.broadcasted_iota(dtype, (2, 3), 1), [],
        np.broadcast_to(np.arange(3), (2, 3)), dtype)
  check("broadcasted_iota", lambda: lax.broadcasted_iota(dtype, (2, 3), 0), [],
        np.broadcast_to(np.arange(2)[:, None], (2, 3)), dtype)


def test_iota_jaxpr():
  text = str(jaxon.make_jaxpr(lambda: lax.iota(np.int32, 3))())
  assert "iota[dimension=0 dtype=int32 shape=(3,) sharding=None]" in text


@pytest.mark.parametrize("which_dtype", [b1, i32], ids=str)
@pytest.mark.parametrize("which_shape", [(), (2, 3)], ids=str)
def test_select_n(which_dtype, which_shape):
  rng = np.random.default_rng(0)
  ncases = 2 if which_dtype == b1 else 3
  cases = [rand((2, 3), f32, seed=i) for i in range(ncases)]
  which = rng.integers(0, ncases, which_shape).astype(which_dtype)
  expected = np.choose(np.broadcast_to(which.astype(int), (2, 3)), cases)
  check("select_n", lax.select_n, [which, *cases], expected, f32)


def test_select_n_many_cases_and_select():
  cases = [np.full((4,), i, np.int32) for i in range(5)]
  which = np.array([4, 0, 2, 3], np.int32)
  check("select_n", lax.select_n, [which, *cases], which, i32)
  check("select_n", lax.select_n, [which[:0], *(c[:0] for c in cases)], which[:0], i32)
  pred = np.array([True, False, True, False])
  check("select", lax.select, [pred, cases[1], cases[2]], [1, 2, 1, 2], i32)


@pytest.mark.parametrize("dtype", [f32, i32, u8], ids=str)
@pytest.mark.parametrize("bound_shape", [(), (2, 3)], ids=str)
def test_clamp(dtype, bound_shape):
  x = rand((2, 3), dtype)
  lo, hi = np.full(bound_shape, 1, dtype), np.full(bound_shape, 3, dtype)
  check("clamp", lax.clamp, [lo, x, hi], np.clip(x, 1, 3), dtype)


@pytest.mark.parametrize("from_dtype,to_dtype,shape,expected_shape", [
    (f32, i32, (2, 3), (2, 3)), (f32, u8, (2,), (2, 4)), (u8, f32, (3, 4), (3,)),
    (i32, f32, (), ()), (bf16, np.dtype(np.int16), (0,), (0,))], ids=str)
def test_bitcast_convert_type(from_dtype, to_dtype, shape, expected_shape):
  x = rand(shape, from_dtype)
  expected = x.view(to_dtype).reshape(expected_shape)
  check("bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, to_dtype), [x],
        expected, to_dtype)


def test_full_like_and_broadcast_shapes():
  check("full_like", lambda x: lax.full_like(x, 2), [np.zeros((2, 0), np.int32)],
        np.zeros((2, 0)), i32)
  check("full_like", lambda x: lax.full_like(x, 2.5, np.float32, (3,)),
        [np.zeros((2,), np.int32)], np.full((3,), 2.5), f32)
  assert lax.full_like(1.0, 3).weak_type
  assert lax.broadcast_shapes((2, 1), (3,), ()) == (2, 3)


# ----------------------------------------------------------------------------- weak types

def test_weak_types():
  """Python scalars are weak, and so is a result computed only from them, comparisons and
  is_finite included (their bools are weak then, as in JAX 0.10.2)."""
  assert lax.add(1.0, 2.0).weak_type and lax.sin(1.0).weak_type
  assert lax.integer_pow(2, 3).weak_type
  assert not lax.add(np.float32(1), 2.0).weak_type
  assert lax.eq(1.0, 2.0).weak_type and lax.is_finite(1.0).weak_type
  assert not lax.eq(np.float32(1), 2.0).weak_type
  assert lax.select_n(True, 1.0, 2.0).weak_type
  assert not lax.select_n(True, np.float32(1), np.float32(2)).weak_type
  x = jnp.ones(3, jnp.bfloat16)
  assert lax.mul(x, jnp.asarray(2.0).astype(jnp.bfloat16)).dtype == jnp.bfloat16


# ----------------------------------------------------------------------------- errors

ERRORS = [
    ("sin-int", lambda: lax.sin(np.int32(1)), TypeError, "sin does not accept dtype int32"),
    ("floor-complex", lambda: lax.floor(np.complex64(1)), TypeError,
     "floor does not accept dtype complex64"),
    ("abs-uint", lambda: lax.abs(np.uint8(1)), TypeError, "abs does not accept dtype uint8"),
    ("add-bool", lambda: lax.add(True, False), TypeError, "add does not accept dtype bool"),
    ("add-mixed", lambda: lax.add(np.float32(1), np.int32(1)), TypeError,
     "lax.add requires arguments to have the same dtypes, got f32.*i32"),
    ("add-shapes", lambda: lax.add(np.ones(3, np.float32), np.ones(4, np.float32)), TypeError,
     r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)"),
    ("mul-ranks", lambda: lax.mul(np.ones((2, 3), np.float32), np.ones(3, np.float32)),
     TypeError, "mul: arrays must have the same number of dimensions"),
    ("lt-complex", lambda: lax.lt(np.complex64(1), np.complex64(1)), TypeError,
     "lt does not accept dtype complex64"),
    ("and-float", lambda: lax.bitwise_and(1.0, 2.0), TypeError,
     "and does not accept dtype float32"),
    ("shift-bool", lambda: lax.shift_left(True, True), TypeError,
     "shift_left does not accept dtype bool"),
    ("rem-complex", lambda: lax.rem(np.complex64(1), np.complex64(1)), TypeError,
     "rem does not accept dtype complex64"),
    ("pow-int-base", lambda: lax.pow(np.int32(2), np.int32(2)), TypeError,
     r"first argument to pow must have an inexact dtype.*pow\(i32\[\], i32\[\]\)"),
    ("pow-mixed-floats", lambda: lax.pow(np.float32(2), np.float16(2)), TypeError,
     "pow must have an inexact dtype"),
    ("complex-f16", lambda: lax.complex(np.float16(1), np.float16(1)), TypeError,
     "complex does not accept dtype float16"),
    ("integer_pow-neg-int", lambda: lax.integer_pow(np.int32(2), -1), TypeError,
     r"Integers cannot be raised to negative powers, got integer_pow\(i32\[\], -1\)"),
    ("integer_pow-float-y", lambda: lax.integer_pow(2.0, 1.5), TypeError,
     "integer_pow exponent y must be a Python int, got 1.5"),
    ("round-bad-method", lambda: lax.round(1.0, 7), ValueError, "7 is not a valid"),
    ("select_n-no-cases", lambda: lax.select_n(True), TypeError,
     "select_n must have at least one case"),
    ("select_n-shapes", lambda: lax.select_n(True, np.ones(2), np.ones(3)), TypeError,
     r"select_n cases must have the same shapes, got \[\(2,\), \(3,\)\]"),
    ("select_n-which-shape", lambda: lax.select_n(np.ones(3, bool), np.ones(2), np.ones(2)),
     TypeError, r"`which` shape \(3,\) but case shape \(2,\)"),
    ("select_n-which-dtype", lambda: lax.select_n(np.float32(0), 1.0, 2.0), TypeError,
     r"`which` must be boolean or int32, got f32\[\]"),
    ("select_n-bool-3", lambda: lax.select_n(True, 1.0, 2.0, 3.0), TypeError,
     "boolean `which` takes at most two cases, got 3"),
    ("select_n-dtypes", lambda: lax.select_n(True, np.float32(1), np.int32(2)), TypeError,
     "lax.select_n requires arguments to have the same dtypes"),
    ("clamp-shape", lambda: lax.clamp(np.zeros(2, np.float32), np.zeros(3, np.float32), 1.0),
     TypeError, r"clamp requires min.shape == operand.shape or min.shape == \(\), got min "
     r"shape \(2,\) and operand shape \(3,\)"),
    ("clamp-dtype", lambda: lax.clamp(np.int32(0), np.float32(1), np.float32(2)), TypeError,
     "lax.clamp requires arguments to have the same dtypes"),
    ("bitcast-ratio", lambda: lax.bitcast_convert_type(np.zeros(3, np.uint8), np.float32),
     TypeError, r"uint8 to float32 needs an operand whose last dimension is 4, got shape "
     r"\(3,\)"),
    ("bitcast-bool", lambda: lax.bitcast_convert_type(np.zeros(3, bool), np.uint8), TypeError,
     "bitcast_convert_type does not convert bool"),
    ("iota-bool", lambda: lax.iota(np.bool_, 3), TypeError, "iota does not accept dtype bool"),
    ("iota-dimension", lambda: lax.broadcasted_iota(np.int32, (2, 3), 2), ValueError,
     r"got dimension=2 for shape \(2, 3\)"),
    ("iota-negative", lambda: lax.iota(np.int32, -1), TypeError,
     r"non-negative sizes; the shape of iota is \(-1,\)"),
    ("broadcast_shapes", lambda: lax.broadcast_shapes((2, 3), (4,)), ValueError,
     r"Incompatible shapes for broadcasting: shapes=\[\(2, 3\), \(4,\)\]"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(*e[1:], id=e[0]) for e in ERRORS])
def test_errors(fn, exc, match):
  with pytest.raises(exc, match=match):
    fn()


def test_errors_at_trace_time():
  """Dtype errors surface while tracing, before anything is compiled."""
  with pytest.raises(TypeError, match="sin does not accept dtype int32"):
    jaxon.make_jaxpr(lax.sin)(np.arange(3, dtype=np.int32))


def test_no_64bit_leak_without_x64():
  assert lax.iota(np.int64, 2).dtype == i32
  assert lax.bitcast_convert_type(np.float32(1), np.int64).dtype == i32
  assert math.isclose(float(lax.exp2(np.float32(3))), 8.0, rel_tol=1e-6)


# ----------------------------------------------------------------------------- derivatives

def _numeric_jvp(fn, args, tangents, eps):
  plus = fn(*(a + eps * t for a, t in zip(args, tangents)))
  minus = fn(*(a - eps * t for a, t in zip(args, tangents)))
  return (wide(plus) - wide(minus)) / (2 * eps)


def _check_derivatives(name, fn, args, rtol=1e-6, eps=1e-6):
  """Forward mode against central differences, and reverse mode against forward mode by
  the identity Re sum(vjp(ct) * t) == Re sum(ct * jvp(t)) (JAX's convention: a transpose,
  no conjugation), in float64."""
  tangents = [rand(np.shape(a), np.asarray(a).dtype, seed=10 + i) for i, a in enumerate(args)]
  out, jvp_out = jaxon.jvp(fn, args, tangents)
  np.testing.assert_allclose(wide(jvp_out), _numeric_jvp(fn, args, tangents, eps), rtol=rtol,
                             atol=rtol, err_msg=f"jvp of {name}")
  _, f_vjp = jaxon.vjp(fn, *args)
  ct = rand(np.shape(out), np.asarray(out).dtype, seed=20)
  cts_in = f_vjp(ct)
  lhs = sum(np.sum(wide(c) * wide(t)) for c, t in zip(cts_in, tangents))
  np.testing.assert_allclose(np.real(lhs), np.real(np.sum(wide(ct) * wide(jvp_out))),
                             rtol=rtol * 1e-3, err_msg=f"vjp of {name}")


DIFFERENTIABLE_UNARY = [op for op in UNARY if op.name not in (
    "sign", "floor", "ceil", "is_finite", "digamma", "bitwise_not", "population_count", "clz",
    "real", "imag", "conj")]


@pytest.mark.parametrize("op", DIFFERENTIABLE_UNARY, ids=repr)
def test_unary_derivatives(op, x64):
  _check_derivatives(op.name, getattr(lax, op.name), [rand((4,), f64, op.domain)])


@pytest.mark.parametrize("name", ["exp", "log", "sin", "sqrt", "tanh", "abs", "real", "imag",
                                  "conj", "neg"])
def test_complex_derivatives(name, x64):
  fn = getattr(lax, name)
  if name in ("abs", "real", "imag"):  # real outputs: not holomorphic, test reverse mode only
    z = rand((3,), np.complex128, "pos")
    _, f_vjp = jaxon.vjp(fn, z)
    expected = {"abs": np.conj(z) / np.abs(z), "real": np.ones(3), "imag": -1j * np.ones(3)}[
        name]
    np.testing.assert_allclose(wide(f_vjp(np.ones(3))[0]), expected, rtol=1e-12)
  elif name == "conj":
    z = rand((3,), np.complex128)
    np.testing.assert_allclose(wide(jaxon.jvp(fn, (z,), (z,))[1]), np.conj(z))
  else:
    _check_derivatives(name, fn, [rand((3,), np.complex128, "pos")], rtol=1e-6)


DIFFERENTIABLE_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "pow",
                         "complex"]


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1), (1, 3)), ((), (3,))], ids=str)
@pytest.mark.parametrize("name", DIFFERENTIABLE_BINARY)
def test_binary_derivatives(name, shapes, x64):
  domain = ("pos", "real") if name == "pow" else ("real", "nonzero")
  args = [rand(s, f64, d, seed=i) for i, (s, d) in enumerate(zip(shapes, domain))]
  _check_derivatives(name, getattr(lax, name), args)


def test_other_derivatives(x64):
  x = rand((2, 3), f64)
  _check_derivatives("integer_pow", lambda x: lax.integer_pow(x, 3), [x])
  _check_derivatives("integer_pow", lambda x: lax.integer_pow(x, -2), [x])
  _check_derivatives("pow-int", lambda x: lax.pow(x, np.int64(3)), [x])
  _check_derivatives("clamp", lambda lo, x, hi: lax.clamp(lo, x, hi),
                     [np.float64(-1.0), x, np.full((2, 3), 1.5)])
  _check_derivatives("select_n", lambda a, b: lax.select_n(x > 0, a, b), [x, -2 * x])
  _check_derivatives("select_n", lambda a: lax.select_n(np.int32(1), x, a, x), [x])
  _check_derivatives("broadcast_in_dim", lambda a: lax.broadcast_in_dim(a, (2, 4, 3), (0, 2)),
                     [x[:, :1]])
  _check_derivatives("convert_element_type",  # linear: a wide step keeps rounding small
                     lambda a: lax.convert_element_type(a, np.float32), [x], 1e-4, eps=1e-2)
  _check_derivatives("convert_element_type",
                     lambda a: lax.convert_element_type(a, np.complex128), [x])
  assert float(jaxon.grad(lambda x: lax.max(x, 1.0))(1.0)) == 0.5  # ties split the tangent
  assert float(jaxon.grad(lambda x: lax.pow(x, 0.0))(0.0)) == 0.0
  assert float(jaxon.grad(lambda x: lax.abs(x))(0.0)) == 1.0


def test_zero_derivatives():
  """Piecewise-constant functions have zero tangents; bool outputs have float0 ones."""
  x = np.array([0.5, 1.5], np.float32)
  for fn in (lax.floor, lax.round, lax.sign):
    _, t = jaxon.jvp(fn, (x,), (np.ones(2, np.float32),))
    np.testing.assert_array_equal(np.asarray(t), [0, 0], err_msg=str(fn))
  _, t = jaxon.jvp(lambda x: lax.lt(x, 1.0), (x,), (np.ones(2, np.float32),))
  assert np.asarray(t).dtype == float0


# ----------------------------------------------------------------------------- vmap

def _check_vmap(name, fn, args, in_axes):
  size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
  expected = np.stack([np.asarray(fn(*(a if d is None else np.take(a, i, d)
                                        for a, d in zip(args, in_axes)))) for i in range(size)])
  for how, f in (("eager", jaxon.vmap(fn, in_axes)), ("jit", jaxon.jit(jaxon.vmap(fn, in_axes)))):
    np.testing.assert_array_equal(np.asarray(f(*args)), expected,
                                  err_msg=f"vmap of {name}, in_axes {in_axes} ({how})")


VMAP_CASES = [
    ("sin", lax.sin, [((3, 4), f32)], (1,)),
    ("integer_pow", lambda x: lax.integer_pow(x, 3), [((3, 4), i32)], (0,)),
    ("round", lambda x: lax.round(x, 1), [((3,), f32)], (0,)),
    ("add-unmapped", lax.add, [((3, 2), f32), ((2,), f32)], (0, None)),
    ("mul-axes", lax.mul, [((3, 2), f32), ((2, 3), f32)], (0, 1)),
    ("sub-scalar", lax.sub, [((3,), f32), ((2, 2), f32)], (0, None)),
    ("lt-size1", lax.lt, [((3, 1, 2), f32), ((1, 2), f32)], (0, None)),
    ("select_n-scalar-which", lax.select_n, [((3,), b1), ((3, 2), f32), ((2,), f32)],
     (0, 0, None)),
    ("select_n-unmapped-which", lax.select_n, [((), b1), ((2, 3), f32), ((3, 2), f32)],
     (None, 1, 0)),
    ("select_n-int", lax.select_n, [((2, 3), i32), ((3,), i32), ((3,), i32), ((3,), i32)],
     (0, None, None, None)),
    ("clamp-scalars", lax.clamp, [((), f32), ((4, 2), f32), ((), f32)], (None, 0, None)),
    ("clamp-mapped-bound", lax.clamp, [((4,), f32), ((4, 2), f32), ((), f32)], (0, 0, None)),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)), [((3, 4), f32)], (1,)),
    ("convert", lambda x: lax.convert_element_type(x, np.int32), [((3, 2), f32)], (1,)),
    ("bitcast", lambda x: lax.bitcast_convert_type(x, np.uint8), [((2, 3), f32)], (1,)),
]


@pytest.mark.parametrize("name,fn,specs,in_axes", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap(name, fn, specs, in_axes):
  args = [rand(s, dt, "pos" if dt == i32 and name.startswith("select_n") else "real", seed=i)
          for i, (s, dt) in enumerate(specs)]
  if name == "select_n-int":
    args[0] = np.asarray(args[0]) % 3
  _check_vmap(name, fn, args, in_axes)
