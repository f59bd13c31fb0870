"""lax reductions against NumPy: over axes (reduce_sum … reduce_xor), argmax/argmin,
cumulative (cumsum … cumlogsumexp) and generic (lax.reduce). Each case runs eagerly and
under jit, and the abstract evaluation must agree with the result."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from tests.util import BF16, BOOL, F16, F32, F64, I32, I64, U8, check


def rand(shape, dtype, seed=0):
  """Small values, so that integer sums and products stay exact."""
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == BOOL:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    return rng.integers(0 if dtype.kind == "u" else -3, 4, shape).astype(dtype)
  return rng.uniform(-2, 2, shape).astype(dtype)



def name_of(dtype):
  return np.dtype(dtype).name


def lowest(dtype):
  dtype = np.dtype(dtype)
  return -np.inf if dtype.kind == "f" or dtype == BF16 else (
      False if dtype == BOOL else np.iinfo(dtype).min)


def highest(dtype):
  dtype = np.dtype(dtype)
  return np.inf if dtype.kind == "f" or dtype == BF16 else (
      True if dtype == BOOL else np.iinfo(dtype).max)


# ----------------------------------------------------------------------------- over axes

def _exact(ufunc):
  """A NumPy reduction in float64 for floats (then rounded), in the dtype for integers."""
  def oracle(x, axes):
    if x.dtype.kind in "iub":
      return ufunc.reduce(x, axis=axes, dtype=x.dtype)
    return ufunc.reduce(x.astype(F64), axis=axes).astype(x.dtype)
  return oracle


def _logical_or_bitwise(logical, bitwise):
  return lambda x, axes: (logical if x.dtype == BOOL else bitwise).reduce(x, axis=axes)


# name: (lax function, NumPy oracle, dtypes)
AXIS_REDUCTIONS = {
    "reduce_sum": (lax.reduce_sum, _exact(np.add), [F32, I32, U8, BF16]),
    "reduce_prod": (lax.reduce_prod, _exact(np.multiply), [F32, I32, U8, F16]),
    "reduce_max": (lax.reduce_max, lambda x, axes: np.max(x, axes, initial=lowest(x.dtype)),
                   [F32, I32, U8, BOOL, BF16]),
    "reduce_min": (lax.reduce_min, lambda x, axes: np.min(x, axes, initial=highest(x.dtype)),
                   [F32, I32, U8, BOOL]),
    "reduce_and": (lax.reduce_and, _logical_or_bitwise(np.logical_and, np.bitwise_and),
                   [BOOL, I32, U8]),
    "reduce_or": (lax.reduce_or, _logical_or_bitwise(np.logical_or, np.bitwise_or),
                  [BOOL, I32, U8]),
    "reduce_xor": (lax.reduce_xor, _logical_or_bitwise(np.logical_xor, np.bitwise_xor),
                   [BOOL, I32]),
}
AXES_CASES = [((), ()), ((5,), (0,)), ((0,), (0,)), ((2, 3), ()), ((2, 3), (1,)),
              ((2, 0, 3), (0, 2)), ((2, 3, 4), (2, 0)), ((3, 4, 2), (-1,))]
AXIS_CASES = [(name, dtype, shape, axes) for name, (_, _, dts) in AXIS_REDUCTIONS.items()
              for dtype in dts for shape, axes in AXES_CASES]


@pytest.mark.parametrize("name,dtype,shape,axes", AXIS_CASES,
                         ids=[f"{n}-{name_of(d)}-{s}-{a}" for n, d, s, a in AXIS_CASES])
def test_axis_reduction(name, dtype, shape, axes):
  lax_fn, oracle, _ = AXIS_REDUCTIONS[name]
  x = rand(shape, dtype)
  check(name, lambda x: lax_fn(x, axes), [x],
        np.asarray(oracle(x, tuple(a % len(shape) for a in axes))).astype(dtype))


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("dtype", [F64, I64], ids=name_of)
def test_axis_reduction_x64(x64, name, dtype):
  lax_fn, oracle, _ = AXIS_REDUCTIONS[name]
  x = rand((3, 4), dtype)
  check(name, lambda x: lax_fn(x, (1,)), [x], np.asarray(oracle(x, (1,))).astype(dtype))


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
def test_axis_reduction_propagates_nan(name):
  x = np.array([[1.0, np.nan, 2.0], [3.0, 4.0, -np.inf]], np.float32)
  lax_fn, oracle, _ = AXIS_REDUCTIONS[name]
  check(name, lambda x: lax_fn(x, (1,)), [x], np.asarray(oracle(x, (1,))).astype(F32))


def test_reduction_keeps_weak_type_and_prints_axes():
  jaxpr = jaxon.make_jaxpr(lambda x: lax.reduce_max(x, (0,)))(np.ones(3, np.float32))
  assert "reduce_max[axes=(0,)]" in str(jaxpr)
  assert jaxon.make_jaxpr(lambda x: lax.reduce_sum(x, ()))(1.0).out_avals[0].weak_type


AXIS_ERRORS = [
    (lambda: lax.reduce_sum(np.ones(3, bool), (0,)), TypeError,
     "reduce_sum does not accept dtype bool"),
    (lambda: lax.reduce_and(np.ones(3, np.float32), (0,)), TypeError,
     "reduce_and does not accept dtype float32"),
    (lambda: lax.cummax(np.ones(3, np.bool_)), TypeError, "cummax does not accept dtype bool"),
    (lambda: lax.reduce_sum(np.ones((2, 3), np.float32), (2,)), ValueError,
     r"axes \(2,\) are out of bounds for an operand of shape \(2, 3\)"),
    (lambda: lax.reduce_min(np.ones((2, 3), np.float32), (1, -1)), ValueError,
     r"duplicate value in reduction axes \(1, 1\)"),
]


@pytest.mark.parametrize("fn,error,match", AXIS_ERRORS, ids=[m for _, _, m in AXIS_ERRORS])
def test_axis_reduction_errors(fn, error, match):
  with pytest.raises(error, match=match):
    fn()


# ----------------------------------------------------------------------------- argmax, argmin

ARG_CASES = [
    ("ties", np.array([1, 3, 3, 2], np.float32), 0),
    ("nan_first_wins", np.array([1, np.nan, 5, np.nan], np.float32), 0),
    ("nan_at_start", np.array([np.nan, 1, 5], np.float32), 0),
    ("infinities", np.array([-np.inf, -np.inf, np.inf, np.inf], np.float32), 0),
    ("all_lowest", np.array([-np.inf, -np.inf], np.float32), 0),
    ("rows", np.array([[1, 5, 5], [7, 7, 0], [np.nan, 0, np.nan]], np.float32), 1),
    ("columns", np.array([[1, 5, 5], [7, 7, 0], [2, 0, 9]], np.float32), 0),
    ("int_extremes", np.array([np.iinfo(np.int32).min, 0, np.iinfo(np.int32).max], np.int32),
     0),
    ("uint8", np.array([[3, 0, 255, 255], [0, 0, 1, 0]], np.uint8), 1),
    ("bool", np.array([[False, True, True], [False, False, False]]), 1),
    ("bfloat16", np.array([0.5, -1, 2, 2], jnp.bfloat16), 0),
    ("3d_middle", rand((2, 5, 3), np.int32, seed=3), 1),
    ("3d_negative_axis", rand((2, 3, 4), np.float32, seed=4), -1),
]


@pytest.mark.parametrize("which", ["argmax", "argmin"])
@pytest.mark.parametrize("case,x,axis", ARG_CASES, ids=[c[0] for c in ARG_CASES])
@pytest.mark.parametrize("index_dtype", [np.int32, np.uint8], ids=name_of)
def test_argmax_argmin(which, case, x, axis, index_dtype):
  """NumPy's rules: the first of equal extrema, and the first NaN if there is one."""
  expected = getattr(np, which)(x.astype(np.float32) if x.dtype == BF16 else x, axis=axis)
  check(f"{which}[{case}]", lambda x: getattr(lax, which)(x, axis, index_dtype), [x],
        expected.astype(index_dtype))


def test_argmax_x64(x64):
  x = np.array([[1.5, -2.0, 7.0], [np.nan, 1.0, np.nan]])
  check("argmax", lambda x: lax.argmax(x, 1, np.int64), [x], np.argmax(x, 1))


ARG_ERRORS = [
    (lambda: lax.argmax(np.zeros((2, 0), np.float32), 1, np.int32), ValueError,
     r"argmax requires a non-empty reduced dimension: operand shape \(2, 0\), axis 1"),
    (lambda: lax.argmin(np.zeros(3, np.float32), 0, np.float32), TypeError,
     "argmin: index_dtype must be an integer type, got float32"),
    (lambda: lax.argmax(np.zeros(3, np.complex64), 0, np.int32), TypeError,
     "argmax does not accept dtype complex64"),
    (lambda: lax.argmax(np.zeros((2, 3), np.float32), 2, np.int32), ValueError,
     r"argmax: reduction axes \(2,\) are out of bounds"),
]


@pytest.mark.parametrize("fn,error,match", ARG_ERRORS, ids=[m[:40] for _, _, m in ARG_ERRORS])
def test_argmax_argmin_errors(fn, error, match):
  with pytest.raises(error, match=match):
    fn()


# ----------------------------------------------------------------------------- cumulative

def _logaddexp_accumulate(x, axis):
  with np.errstate(invalid="ignore"):
    return np.logaddexp.accumulate(x.astype(F64), axis=axis)


# name: (NumPy accumulation, dtypes)
CUMULATIVE = {
    "cumsum": (np.add.accumulate, [F32, I32, U8]),
    "cumprod": (np.multiply.accumulate, [F32, I32]),
    "cummax": (np.maximum.accumulate, [F32, I32, U8]),  # not bool, as in JAX
    "cummin": (np.minimum.accumulate, [F32, U8, I32]),
    "cumlogsumexp": (_logaddexp_accumulate, [F32]),
}
CUMULATIVE_SHAPES = [((5,), 0), ((0,), 0), ((2, 0), 0), ((3, 4), 0), ((3, 4), -1),
                     ((2, 3, 4), 1)]
CUMULATIVE_CASES = [(name, dtype, shape, axis, reverse)
                    for name, (_, dts) in CUMULATIVE.items() for dtype in dts
                    for shape, axis in CUMULATIVE_SHAPES for reverse in (False, True)]


def _cumulative_oracle(name, x, axis, reverse):
  accumulate = CUMULATIVE[name][0]
  if x.size == 0:
    return x
  flip = (lambda y: np.flip(y, axis)) if reverse else (lambda y: y)
  wide = x.astype(F64) if x.dtype.kind == "f" or x.dtype == BF16 else x
  return flip(accumulate(flip(wide), axis=axis)).astype(x.dtype)


@pytest.mark.parametrize(
    "name,dtype,shape,axis,reverse", CUMULATIVE_CASES,
    ids=[f"{n}-{name_of(d)}-{s}-axis{a}-{'rev' if r else 'fwd'}"
         for n, d, s, a, r in CUMULATIVE_CASES])
def test_cumulative(name, dtype, shape, axis, reverse):
  x = rand(shape, dtype)
  check(name, lambda x: getattr(lax, name)(x, axis=axis, reverse=reverse), [x],
        _cumulative_oracle(name, x, axis, reverse))


@pytest.mark.parametrize("name", ["cumsum", "cummax", "cumlogsumexp"])
def test_cumulative_bfloat16(name):
  x = rand((3, 4), BF16)
  check(name, lambda x: getattr(lax, name)(x, axis=1), [x], _cumulative_oracle(name, x, 1, False))


@pytest.mark.parametrize("name", ["cumsum", "cummax", "cumlogsumexp"])
def test_cumulative_x64(x64, name):
  x = rand((4, 3), F64)
  check(name, lambda x: getattr(lax, name)(x, axis=0, reverse=True), [x],
        _cumulative_oracle(name, x, 0, True))


def test_cumulative_special_values():
  x = np.array([-np.inf, -np.inf, 0.0, np.inf, 1.0, np.nan, 2.0], np.float32)
  check("cumlogsumexp", lax.cumlogsumexp, [x],
        np.array([-np.inf, -np.inf, 0, np.inf, np.inf, np.nan, np.nan], np.float32))
  check("cummax", lax.cummax, [x],
        np.array([-np.inf, -np.inf, 0, np.inf, np.inf, np.nan, np.nan], np.float32))


CUMULATIVE_ERRORS = [
    (lambda: lax.cumsum(np.ones(3, bool)), TypeError, "cumsum does not accept dtype bool"),
    (lambda: lax.cumlogsumexp(np.ones(3, np.int32)), TypeError,
     "cumlogsumexp does not accept dtype int32"),
    (lambda: lax.cumprod(np.ones((2, 3), np.float32), axis=2), ValueError,
     r"cumprod: axis 2 is out of bounds for an operand of shape \(2, 3\)"),
    (lambda: lax.cummax(np.float32(1)), ValueError, r"cummax: axis 0 is out of bounds"),
]


@pytest.mark.parametrize("fn,error,match", CUMULATIVE_ERRORS,
                         ids=[m[:30] for _, _, m in CUMULATIVE_ERRORS])
def test_cumulative_errors(fn, error, match):
  with pytest.raises(error, match=match):
    fn()


# ----------------------------------------------------------------------------- lax.reduce

MONOID_REDUCE_CASES = [
    ("add", lax.add, 0.0, F32, "reduce_sum"), ("mul", lax.mul, 1, I32, "reduce_prod"),
    ("max", lax.max, -np.inf, F32, "reduce_max"), ("min", lax.min, True, BOOL, "reduce_min"),
    ("and", lax.bitwise_and, -1, I32, "reduce_and"), ("or", lax.bitwise_or, False, BOOL,
                                                       "reduce_or"),
    ("xor", lax.bitwise_xor, 0, U8, "reduce_xor"),
]


@pytest.mark.parametrize("name,computation,init,dtype,primitive", MONOID_REDUCE_CASES,
                         ids=[c[0] for c in MONOID_REDUCE_CASES])
def test_reduce_recognizes_monoids(name, computation, init, dtype, primitive):
  x = rand((3, 4), dtype)
  fun = lambda x: lax.reduce(x, init, computation, (1,))
  assert f"{primitive}[axes=(1,)]" in str(jaxon.make_jaxpr(fun)(x))
  check(f"reduce[{name}]", fun, [x], getattr(lax, primitive)(x, (1,)))


GENERIC_REDUCE_CASES = [
    # a computation that is not a lax function is traced into the body of `reduce`
    ("lambda_add", lambda a, b: lax.add(a, b), 0.0, lambda x: x.sum(0)),
    # an init value that is not the identity: max is idempotent, so that is well defined
    ("max_from_half", lax.max, 0.5, lambda x: np.maximum(x.max(0), 0.5)),
]


@pytest.mark.parametrize("name,computation,init,oracle", GENERIC_REDUCE_CASES,
                         ids=[c[0] for c in GENERIC_REDUCE_CASES])
def test_reduce_generic_computation(name, computation, init, oracle):
  x = rand((3, 4), F32)
  fun = lambda x: lax.reduce(x, init, computation, (0,))
  jaxpr = str(jaxon.make_jaxpr(fun)(x))
  assert "reduce[" in jaxpr and "dimensions=(0,)" in jaxpr, jaxpr
  check(f"reduce[{name}]", fun, [x], oracle(x).astype(F32))


def test_reduce_variadic_argmax_style():
  """A pytree of operands: the max of each row with the value from a second operand."""
  x = np.array([[1, 9, 3], [7, 2, 8]], np.float32)
  idx = np.broadcast_to(np.arange(3, dtype=np.int32), x.shape).copy()

  def pick_larger(a, b):
    take_a = lax.ge(a[0], b[0])
    return (lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1]))
  fun = lambda x, i: lax.reduce((x, i), (-np.inf, np.int32(0)), pick_larger, (1,))
  check("reduce[variadic]", fun, [x, idx], (np.array([9, 8], np.float32),
                                            np.array([1, 2], np.int32)))


REDUCE_ERRORS = [
    (lambda: lax.reduce((np.ones(3), np.ones(3)), 0.0, lax.add, (0,)), ValueError,
     "operands and init_values must have the same structure"),
    (lambda: lax.reduce((np.ones(3, np.float32), np.ones(4, np.float32)), (0.0, 0.0),
                        lambda a, b: (lax.add(a[0], b[0]), lax.add(a[1], b[1])), (0,)),
     ValueError, r"reduce operands must have the same shape, got f32\[3\], f32\[4\]"),
    (lambda: lax.reduce(np.ones(3, np.float32), 0.0,
                        lambda a, b: lax.convert_element_type(a, np.int32), (0,)), TypeError,
     r"must return scalars of the operands' dtypes \['f32\[\]'\], got \['i32\[\]'\]"),
    (lambda: lax.reduce(np.ones(3, np.float32), 0.0, lambda a, b: (a, b), (0,)), TypeError,
     "must return the operands' structure"),
    (lambda: lax.reduce(np.ones(3, np.float32), 0.0, lax.add, (1,)), ValueError,
     "out of bounds"),
]


@pytest.mark.parametrize("fn,error,match", REDUCE_ERRORS,
                         ids=[m[:30] for _, _, m in REDUCE_ERRORS])
def test_reduce_errors(fn, error, match):
  with pytest.raises(error, match=match):
    fn()
