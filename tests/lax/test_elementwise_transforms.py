"""The generic rule harness over the elementwise primitives of lax.py: every differentiable
one through `check_transforms` (derivatives to order 2 in both modes against finite
differences, jit of jvp/vjp, vmap along several axes), with inputs inside its domain and
away from its kinks; the non-differentiable ones (comparisons, bitwise and integer ops,
conversions to integers) through `check_vmap`, and their tangents are float0 zeros."""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

import jaxon
from jaxon import lax
from jaxon._src.dtypes import float0
from tests.transform_util import check_transforms, check_vmap
from tests.util import check_grads

f32, f64, c64, c128 = (np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                              np.complex128))
i32, u8, b1 = np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.bool_)


def rand(shape: tuple[int, ...], dtype: np.dtype, domain: str, seed: int) -> np.ndarray:
  """Values of `domain`:
  'real' (-2, 2); 'nonzero' |x| in (0.3, 2); 'pos' (0.5, 3); 'unit' (-0.8, 0.8);
  'gt1' (1.2, 3); 'small' (-1.2, 1.2); 'frac' x.2-x.4 or x.6-x.8 (away from the jumps of
  floor, ceil and round); complex dtypes add an imaginary part in (-1, 1)."""
  rng = np.random.RandomState(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.rand(*shape) > 0.5
  if dtype.kind in "iu":
    return rng.randint(0 if dtype.kind == "u" else -8, 9, shape).astype(dtype)
  if domain == "frac":
    x = rng.randint(-3, 3, shape) + rng.choice([0.3, 0.7], shape) + rng.uniform(-.1, .1, shape)
  else:
    lo, hi = {"real": (-2, 2), "nonzero": (0.3, 2), "pos": (0.5, 3), "unit": (-0.8, 0.8),
              "gt1": (1.2, 3), "small": (-1.2, 1.2)}[domain]
    x = rng.uniform(lo, hi, shape)
    if domain == "nonzero":
      x = x * rng.choice([-1, 1], shape)
  if dtype.kind == "c":
    x = x + 1j * rng.uniform(-1, 1, shape)
  return np.asarray(x, dtype)


class Op(NamedTuple):
  """One row: a function of the primitive, each argument's domain, and the complex dtype
  to check it with as well (None when it is real-only or not complex-differentiable)."""
  name: str
  fn: Callable
  domains: tuple[str, ...]
  complex_ok: bool = False


def _unary(name: str, domain: str = "real", complex_ok: bool = False) -> Op:
  return Op(name, getattr(lax, name), (domain,), complex_ok)


UNARY = [
    _unary("neg", complex_ok=True), _unary("sign", "nonzero"), _unary("floor", "frac"),
    _unary("ceil", "frac"), _unary("round", "frac"),
    Op("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), ("frac",)),
    _unary("abs", "nonzero", complex_ok=True), _unary("exp", complex_ok=True),
    _unary("exp2", complex_ok=True), _unary("log", "pos", complex_ok=True),
    _unary("log1p", "pos", complex_ok=True), _unary("expm1", complex_ok=True),
    _unary("sqrt", "pos", complex_ok=True), _unary("rsqrt", "pos", complex_ok=True),
    _unary("cbrt", "nonzero"), _unary("logistic", complex_ok=True),
    _unary("sin", complex_ok=True), _unary("cos", complex_ok=True),
    _unary("tan", "small", complex_ok=True), _unary("asin", "unit", complex_ok=True),
    _unary("acos", "unit", complex_ok=True), _unary("atan", "unit", complex_ok=True),
    _unary("sinh", complex_ok=True), _unary("cosh", complex_ok=True),
    _unary("tanh", complex_ok=True), _unary("asinh", complex_ok=True),
    _unary("acosh", "gt1", complex_ok=True), _unary("atanh", "unit", complex_ok=True),
    _unary("lgamma", "pos"), _unary("digamma", "pos"), _unary("erf"), _unary("erfc"),
    _unary("erf_inv", "unit"),
    Op("polygamma_1", lambda x: lax.polygamma(np.asarray(1, x.dtype), x), ("pos",)),
    Op("polygamma_2", lambda x: lax.polygamma(np.asarray(2, x.dtype), x), ("pos",)),
    Op("integer_pow_3", lambda x: lax.integer_pow(x, 3), ("real",), True),
    Op("integer_pow_-2", lambda x: lax.integer_pow(x, -2), ("nonzero",), True),
    Op("integer_pow_0", lambda x: lax.integer_pow(x, 0), ("real",)),
    Op("integer_pow_1", lambda x: lax.integer_pow(x, 1), ("real",)),
]

BINARY = [
    Op("add", lax.add, ("real", "real"), True), Op("sub", lax.sub, ("real", "real"), True),
    Op("mul", lax.mul, ("real", "real"), True), Op("div", lax.div, ("real", "nonzero"), True),
    Op("rem", lax.rem, ("frac", "gt1")), Op("max", lax.max, ("real", "real")),
    Op("min", lax.min, ("real", "real")), Op("atan2", lax.atan2, ("nonzero", "nonzero")),
    Op("pow", lax.pow, ("pos", "real"), True), Op("nextafter", lax.nextafter, ("real", "real")),
    Op("complex", lax.complex, ("real", "real")),
]


def _args(op: Op, shapes: tuple[tuple[int, ...], ...], dtype: np.dtype) -> list[np.ndarray]:
  return [rand(s, dtype, d, seed) for seed, (s, d) in enumerate(zip(shapes, op.domains))]


# Each primitive gets the whole harness at one array shape; the cheaper derivative checks
# cover scalars, float64 and complex inputs (compiling is what the harness spends its time on).

@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_unary(op):
  check_transforms(op.fn, _args(op, ((2, 3),), f32))


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_unary_scalar(op):
  check_grads(op.fn, _args(op, ((),), f32), order=2)


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_unary_f64(op, x64):
  check_grads(op.fn, _args(op, ((3,),), f64), order=1)


@pytest.mark.parametrize("op", [op for op in UNARY if op.complex_ok], ids=lambda op: op.name)
def test_unary_complex(op):
  check_grads(op.fn, _args(op, ((3,),), c64), order=1)


# A scalar operand, and size-1 dimensions that broadcast (both need the cotangent summed).
@pytest.mark.parametrize("shapes", [((), (3,)), ((2, 1), (1, 3))], ids=str)
@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_binary(op, shapes):
  check_transforms(op.fn, _args(op, shapes, f32))


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_binary_same_shapes(op):
  check_grads(op.fn, _args(op, ((2, 3), (2, 3)), f32), order=2)


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_binary_f64(op, x64):
  check_grads(op.fn, _args(op, ((3,), ()), f64), order=1)


@pytest.mark.parametrize("op", [op for op in BINARY if op.complex_ok], ids=lambda op: op.name)
def test_binary_complex(op):
  check_grads(op.fn, _args(op, ((3,), (3,)), c64), order=1)


def test_complex_parts():
  """real, imag and conj of complex inputs (not holomorphic: reverse mode checks them by
  the adjoint identity, forward mode by finite differences)."""
  z = rand((2, 3), c64, "real", 0)
  for fn in (lax.real, lax.imag, lax.conj, lambda z: lax.mul(lax.conj(z), z)):
    check_transforms(fn, [z])
  check_transforms(lax.conj, [rand((3,), f32, "real", 1)])  # real in, complex out


def test_pow_integer_exponent():
  x, n = rand((2, 3), f32, "pos", 0), np.array([[0, 1, 2], [3, -1, -2]], np.int32)
  check_transforms(lambda x: lax.pow(x, n), [x])
  check_vmap(lax.pow, [x, n])


@pytest.mark.parametrize("bound_shape", [(), (2, 3)], ids=str)
def test_clamp(bound_shape):
  lo = np.full(bound_shape, -0.5, np.float32) + rand(bound_shape, f32, "unit", 3) * 0.1
  hi = np.full(bound_shape, 0.5, np.float32) + rand(bound_shape, f32, "unit", 4) * 0.1
  x = np.array([[-1.5, -0.2, 0.1], [0.3, 1.2, -0.8]], np.float32)
  check_transforms(lax.clamp, [lo, x, hi])


def test_select_n():
  which_bool = rand((2, 3), b1, "", 0)
  which_int = np.array([[0, 1, 2], [2, 1, 0]], np.int32)
  a, b, c = (rand((2, 3), f32, "real", i) for i in range(3))
  check_transforms(lambda a, b: lax.select_n(which_bool, a, b), [a, b])
  check_transforms(lambda a, b, c: lax.select_n(which_int, a, b, c), [a, b, c])
  check_transforms(lambda a, b: lax.select_n(np.bool_(True), a, b), [a, b])
  check_vmap(lax.select_n, [which_int, a, b, c])
  check_vmap(lax.select_n, [np.bool_(False), a, b])


def test_convert_element_type():
  x = rand((2, 3), f32, "real", 0)
  check_transforms(lambda x: lax.convert_element_type(x, np.complex64), [x])
  check_transforms(lambda x: lax.mul(x, lax.convert_element_type(x, np.float32)), [x])


def test_convert_element_type_f64(x64):
  x = rand((2, 3), f64, "real", 0)
  check_transforms(lambda x: lax.convert_element_type(x, np.float32), [x],
                   grad_tol=dict(atol=1e-4, rtol=1e-4, eps=1e-2))
  check_transforms(lambda x: lax.convert_element_type(x, np.complex128), [x])


# ----------------------------------------------------------------------------- non-differentiable

NON_DIFFERENTIABLE = [
    ("eq", lax.eq, (f32, f32)), ("ne", lax.ne, (i32, i32)), ("lt", lax.lt, (f32, f32)),
    ("le", lax.le, (i32, i32)), ("gt", lax.gt, (u8, u8)), ("ge", lax.ge, (f32, f32)),
    ("is_finite", lax.is_finite, (f32,)), ("not", lax.bitwise_not, (i32,)),
    ("not_bool", lax.bitwise_not, (b1,)), ("and", lax.bitwise_and, (i32, i32)),
    ("or", lax.bitwise_or, (b1, b1)), ("xor", lax.bitwise_xor, (u8, u8)),
    ("shift_left", lax.shift_left, (i32, i32)),
    ("shift_right_logical", lax.shift_right_logical, (i32, i32)),
    ("shift_right_arithmetic", lax.shift_right_arithmetic, (i32, i32)),
    ("population_count", lax.population_count, (i32,)), ("clz", lax.clz, (u8,)),
    ("add_int", lax.add, (i32, i32)), ("mul_int", lax.mul, (i32, i32)),
    ("max_int", lax.max, (i32, i32)), ("neg_int", lax.neg, (i32,)),
    ("abs_int", lax.abs, (i32,)), ("sign_int", lax.sign, (i32,)),
    ("integer_pow_int", lambda x: lax.integer_pow(x, 2), (i32,)),
    ("clamp_int", lambda x: lax.clamp(np.int32(-2), x, np.int32(3)), (i32,)),
    ("to_int", lambda x: lax.convert_element_type(x, np.int32), (f32,)),
    ("to_bool", lambda x: lax.convert_element_type(x, np.bool_), (f32,)),
    ("bitcast", lambda x: lax.bitcast_convert_type(x, np.int32), (f32,)),
    ("bitcast_narrow", lambda x: lax.bitcast_convert_type(x, np.uint8), (f32,)),
]


@pytest.mark.parametrize("shape", [(), (2, 3)], ids=str)
@pytest.mark.parametrize("name,fn,dtypes", NON_DIFFERENTIABLE,
                         ids=[c[0] for c in NON_DIFFERENTIABLE])
def test_non_differentiable_vmap(name, fn, dtypes, shape):
  args = [rand(shape, dt, "real", i) for i, dt in enumerate(dtypes)]
  if name.startswith("shift"):
    args[1] = np.abs(args[1]) % 8
  check_vmap(fn, args)


@pytest.mark.parametrize("name,fn", [("lt", lambda x: lax.lt(x, 1.0)),
                                     ("to_int", lambda x: lax.convert_element_type(x, np.int32)),
                                     ("is_finite", lax.is_finite),
                                     ("bitcast", lambda x: lax.bitcast_convert_type(x, np.int32))])
def test_integer_outputs_have_float0_tangents(name, fn):
  x = rand((2, 3), f32, "real", 0)
  out, t = jaxon.jvp(fn, (x,), (np.ones_like(x),))
  assert np.asarray(t).dtype == float0 and np.shape(t) == np.shape(out), name


def test_polygamma_order_is_not_differentiable():
  with pytest.raises(ValueError, match="order m"):
    jaxon.grad(lambda m: lax.polygamma(m, np.float32(2.0)))(np.float32(1.0))


@pytest.mark.parametrize("name,fn,dtype", [
    ("exp", lax.exp, f32), ("exp2", lax.exp2, f32), ("expm1", lax.expm1, f32),
    ("sqrt", lax.sqrt, f32), ("rsqrt", lax.rsqrt, f32), ("cbrt", lax.cbrt, f32),
    ("logistic", lax.logistic, f32), ("tan", lax.tan, f32), ("tanh", lax.tanh, f32),
    ("erf_inv", lax.erf_inv, f32), ("abs", lax.abs, c64),
    ("max", lambda x: lax.max(x, 1.0), f32), ("min", lambda x: lax.min(x, 1.0), f32),
    ("pow", lambda x: lax.pow(2.0, x), f32), ("bessel_i0e", lax.bessel_i0e, f32),
    ("bessel_i1e", lax.bessel_i1e, f32)])
def test_derivative_taken_from_the_output_binds_the_function_once(name, fn, dtype):
  """As JAX's rules (`defjvp2`), a derivative written with f(x) reuses the output: the JVP's
  jaxpr binds f once, so reverse mode and eager gradients compute it once too."""
  x = np.ones(3, dtype)
  jaxpr = jaxon.make_jaxpr(lambda x, t: jaxon.jvp(fn, (x,), (t,)))(x, x).jaxpr
  assert [e.primitive.name for e in jaxpr.eqns].count(name) == 1, str(jaxpr)
