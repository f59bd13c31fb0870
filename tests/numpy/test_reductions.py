"""jaxon.numpy reductions against NumPy: values from NumPy, dtypes by JAX's rules (32-bit
defaults, small integers summed as the default integer, integer means as floats). Each case
runs eagerly and under jit, and the abstract evaluation must agree with the result."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from tests.util import BF16, BOOL, F16, F32, F64, I32, I64, U8, check


def rand(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == BOOL:
    return rng.random(shape) > 0.3
  if dtype.kind in "iu":
    return rng.integers(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)
  return rng.uniform(-2, 2, shape).astype(dtype)


def with_nans(shape, seed=0):
  """Random floats with NaN sprinkled in, and the first row along axis 0 all NaN."""
  x = rand(shape, F32, seed)
  x[np.random.default_rng(seed + 1).random(shape) < 0.3] = np.nan
  if x.ndim:
    x[0] = np.nan
  return x


def numpy_result(oracle, *args, **kwargs):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    return oracle(*args, **kwargs)



def name_of(dtype):
  return np.dtype(dtype).name


# ----------------------------------------------------------------------------- result dtypes

def int_dtype():
  return I64 if jaxon.config.jax_enable_x64 else I32


def float_dtype():
  return F64 if jaxon.config.jax_enable_x64 else F32


def accumulator(dtype):
  """sum/prod: bools and narrower integers accumulate as the default (unsigned) integer."""
  if dtype == BOOL:
    return int_dtype()
  if dtype.kind == "u" and dtype.itemsize < int_dtype().itemsize:
    return np.dtype(np.uint64) if jaxon.config.jax_enable_x64 else np.dtype(np.uint32)
  if dtype.kind == "i" and dtype.itemsize < int_dtype().itemsize:
    return int_dtype()
  return dtype


def inexact(dtype):
  """Bools and integers of up to 32 bits reduce in float32 even with x64 (JAX 0.10.2)."""
  if dtype.kind == "f" or dtype == BF16:
    return dtype
  return float_dtype() if dtype.itemsize == 8 else F32


SAME, BOOLEAN, INDEX = (lambda d: d), (lambda d: BOOL), (lambda d: int_dtype())


# ----------------------------------------------------------------------------- over axes

# name: (jnp function(x, axis, keepdims), NumPy oracle(x, axis, keepdims), result dtype,
#        input dtypes)
def _over_axes(name, oracle=None, dtype_rule=SAME, dtypes=(F32, I32)):
  jnp_fn = getattr(jnp, name)
  np_fn = oracle or getattr(np, name)
  return name, (lambda x, axis, keepdims: jnp_fn(x, axis=axis, keepdims=keepdims),
                lambda x, axis, keepdims: np_fn(x, axis=axis, keepdims=keepdims),
                dtype_rule, dtypes)


def _quantile(fn_name, q, dtypes=(F32,)):
  jnp_fn, np_fn = getattr(jnp, fn_name), getattr(np, fn_name)
  return f"{fn_name}_{q}", (
      lambda x, axis, keepdims: jnp_fn(x, np.asarray(q, np.float32), axis=axis,
                                       keepdims=keepdims),
      lambda x, axis, keepdims: np_fn(x, q, axis=axis, keepdims=keepdims), inexact, dtypes)


OVER_AXES = dict([
    _over_axes("sum", dtype_rule=accumulator, dtypes=(F32, I32, U8, BOOL)),
    _over_axes("prod", dtype_rule=accumulator, dtypes=(F32, I32, BOOL)),
    _over_axes("max", dtypes=(F32, I32, U8, BOOL)),
    _over_axes("min", dtypes=(F32, I32, BOOL)),
    _over_axes("amax"), _over_axes("amin", dtypes=(U8,)),
    _over_axes("mean", dtype_rule=inexact, dtypes=(F32, I32, U8, BOOL)),
    _over_axes("var", dtype_rule=inexact), _over_axes("std", dtype_rule=inexact),
    _over_axes("all", dtype_rule=BOOLEAN, dtypes=(F32, I32, BOOL)),
    _over_axes("any", dtype_rule=BOOLEAN, dtypes=(F32, U8, BOOL)),
    _over_axes("ptp"), _over_axes("count_nonzero", dtype_rule=INDEX, dtypes=(F32, BOOL)),
    _over_axes("nansum", dtype_rule=accumulator), _over_axes("nanprod", dtype_rule=accumulator),
    _over_axes("nanmax"), _over_axes("nanmin"), _over_axes("nanmean", dtype_rule=inexact),
    _over_axes("nanvar", dtype_rule=inexact), _over_axes("nanstd", dtype_rule=inexact),
    _over_axes("median", dtype_rule=inexact),
    _over_axes("average", lambda x, axis, keepdims: np.average(x, axis, keepdims=keepdims),
               dtype_rule=inexact),
    _quantile("quantile", 0.3, (F32, I32)), _quantile("quantile", [0.0, 0.5, 1.0]),
    _quantile("percentile", [10, 75]),
])
AXES = [((2, 3, 4), None, False), ((2, 3, 4), 1, True), ((2, 3, 4), (0, -1), False),
        ((), None, False)]
OVER_AXES_CASES = [(name, dtype, *axes) for name, (*_, dts) in OVER_AXES.items()
                   for dtype in dts for axes in AXES]


@pytest.mark.parametrize("name,dtype,shape,axis,keepdims", OVER_AXES_CASES,
                         ids=[f"{c[0]}-{name_of(c[1])}-{c[2]}-axis{c[3]}-keep{c[4]}"
                              for c in OVER_AXES_CASES])
def test_reduction(name, dtype, shape, axis, keepdims):
  fn, oracle, dtype_rule, _ = OVER_AXES[name]
  x = rand(shape, dtype)
  expected = np.asarray(numpy_result(oracle, x, axis, keepdims)).astype(dtype_rule(x.dtype))
  check(f"jnp.{name}", lambda x: fn(x, axis, keepdims), [x], expected)


X64_CASES = [(name, dtype) for name in ("sum", "prod", "max", "mean", "var", "all")
             for dtype in (F64, I32, U8)] + [("median", F64), ("std", F64), ("nanmean", F64)]


@pytest.mark.parametrize("name,dtype", X64_CASES, ids=[f"{n}-{name_of(d)}" for n, d in X64_CASES])
def test_reduction_x64(x64, name, dtype):
  fn, oracle, dtype_rule, _ = OVER_AXES[name]
  x = rand((3, 4), dtype)
  expected = np.asarray(numpy_result(oracle, x, 0, False)).astype(dtype_rule(x.dtype))
  check(f"jnp.{name}", lambda x: fn(x, 0, False), [x], expected)


@pytest.mark.parametrize("name", ["sum", "max", "min", "mean", "var", "std", "median",
                                  "quantile_0.3", "nansum", "nanmax", "nanmin", "nanmean",
                                  "nanvar", "nanstd", "all", "any", "prod"])
def test_reduction_with_nans(name):
  """NaN propagates through the plain reductions; the nan* ones skip it (and give NaN for
  an all-NaN slice, as NumPy does with a warning)."""
  fn, oracle, _, _ = OVER_AXES[name]
  x = with_nans((3, 5))
  for axis in (0, 1):
    expected = np.asarray(numpy_result(oracle, x, axis, False))
    expected = expected.astype(BOOL if name in ("all", "any") else F32)
    check(f"jnp.{name}(axis={axis})", lambda x, axis=axis: fn(x, axis, False), [x], expected)


@pytest.mark.parametrize("name", ["sum", "prod", "all", "any", "mean", "var", "count_nonzero",
                                  "nansum", "nanmean"])
def test_reduction_of_empty_axes(name):
  fn, oracle, dtype_rule, _ = OVER_AXES[name]
  x = rand((3, 0), F32)
  for axis in (0, 1, None):
    expected = np.asarray(numpy_result(oracle, x, axis, False)).astype(dtype_rule(x.dtype))
    check(f"jnp.{name}(axis={axis})", lambda x, axis=axis: fn(x, axis, False), [x], expected)


@pytest.mark.parametrize("dtype", [F32, I32, BOOL], ids=name_of)
def test_max_min_of_empty_with_initial(dtype):
  x = rand((0, 3), dtype)
  initial = np.array(1, dtype).item()
  check("jnp.max", lambda x: jnp.max(x, 0, initial=initial), [x],
        np.max(x, 0, initial=initial))
  check("jnp.min", lambda x: jnp.min(x, 0, initial=initial), [x],
        np.min(x, 0, initial=initial))


# ----------------------------------------------------------------------------- where, initial

WHERE_CASES = [
    ("sum", {}, accumulator), ("prod", {}, accumulator), ("max", {"initial": -1}, SAME),
    ("min", {"initial": 3}, SAME), ("mean", {}, inexact), ("var", {}, inexact),
    ("std", {"ddof": 1}, inexact), ("all", {}, BOOLEAN), ("any", {}, BOOLEAN),
    ("nansum", {}, accumulator), ("nanmean", {}, inexact), ("nanmax", {"initial": -5}, SAME),
]


@pytest.mark.parametrize("name,kwargs,dtype_rule", WHERE_CASES, ids=[c[0] for c in WHERE_CASES])
@pytest.mark.parametrize("dtype", [F32, I32], ids=name_of)
def test_where(name, kwargs, dtype_rule, dtype):
  """`where` masks elements out; a mask of lower rank broadcasts against the array."""
  x = rand((3, 4), dtype)
  for mask in (rand((3, 4), BOOL, seed=5), np.array([True, False, True, True])):
    expected = np.asarray(numpy_result(getattr(np, name), x, axis=1, where=mask, **kwargs))
    check(f"jnp.{name}(where=...)",
          lambda x, m: getattr(jnp, name)(x, axis=1, where=m, **kwargs), [x, mask],
          expected.astype(dtype_rule(x.dtype)))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "nansum", "nanprod"])
def test_initial(name):
  x = rand((3, 4), F32)
  expected = np.asarray(getattr(np, name)(x, axis=0, initial=1.5), F32)
  check(f"jnp.{name}(initial=1.5)", lambda x: getattr(jnp, name)(x, axis=0, initial=1.5), [x],
        expected)


DTYPE_ARG_CASES = [
    ("sum", I32, F32), ("sum", F32, I32), ("prod", U8, U8), ("mean", I32, F16),
    ("mean", U8, F32), ("var", I32, F32), ("cumsum", BOOL, BOOL), ("cumsum", I32, F32),
    ("nansum", F32, F16), ("cumprod", U8, I32),
]


@pytest.mark.parametrize("name,in_dtype,dtype", DTYPE_ARG_CASES,
                         ids=[f"{n}-{name_of(a)}-to-{name_of(b)}" for n, a, b in DTYPE_ARG_CASES])
def test_dtype_argument(name, in_dtype, dtype):
  x = rand((2, 3), in_dtype)
  expected = np.asarray(getattr(np, name)(x, axis=1, dtype=dtype))
  check(f"jnp.{name}(dtype={dtype.name})",
        lambda x: getattr(jnp, name)(x, axis=1, dtype=dtype), [x], expected)


def test_promote_integers_false_keeps_the_dtype():
  x = np.full(300, 1, np.uint8)
  check("jnp.sum", lambda x: jnp.sum(x, promote_integers=False), [x], np.uint8(300 % 256))
  check("jnp.sum", jnp.sum, [x], np.uint32(300))


@pytest.mark.parametrize("dtype", [BF16, F16], ids=name_of)
def test_half_precision_accumulates_in_float32(dtype):
  """1000 ones sum to 1000 exactly; accumulating in bfloat16 would stall at 256."""
  x = np.ones(1000, dtype)
  check("jnp.sum", jnp.sum, [x], np.array(1000, dtype))
  check("jnp.mean", jnp.mean, [x], np.array(1, dtype))
  check("jnp.var", jnp.var, [x], np.array(0, dtype))


def test_reductions_of_python_scalars_are_strongly_typed():
  """As in JAX 0.10.2: a reduction's result is strong even when its input is weak."""
  for fn in (jnp.sum, jnp.max, jnp.mean, jnp.prod):
    aval = jaxon.make_jaxpr(fn)(2.0).out_avals[0]
    assert (aval.dtype, aval.weak_type) == (F32, False), f"jnp.{fn.__name__}(2.0): {aval}"


def test_var_ddof_and_correction():
  x = rand((4, 5), F32)
  check("jnp.var(ddof=1)", lambda x: jnp.var(x, 0, ddof=1), [x], np.var(x, 0, ddof=1))
  check("jnp.var(correction=2)", lambda x: jnp.var(x, 1, correction=2), [x],
        np.var(x, 1, ddof=2))
  # N - ddof = 0: NaN in JAX (NumPy says inf)
  check("jnp.std(ddof=4)", lambda x: jnp.std(x, 0, ddof=4), [x], np.full(5, np.nan, F32))
  x = with_nans((4, 5))
  check("jnp.nanvar(ddof=1)", lambda x: jnp.nanvar(x, 1, ddof=1), [x],
        numpy_result(np.nanvar, x, 1, ddof=1).astype(F32))


def test_var_of_complex_is_real():
  x = (rand((3, 4), F32) + 1j * rand((3, 4), F32, seed=1)).astype(np.complex64)
  check("jnp.var", lambda x: jnp.var(x, 1), [x], np.var(x, 1).astype(F32))


# ----------------------------------------------------------------------------- argmax, argmin

ARG_FUNCTIONS = ["argmax", "argmin", "nanargmax", "nanargmin"]
ARG_AXES = [((3, 4), None, False), ((3, 4), 1, True), ((2, 3, 4), -2, False),
            ((2, 3, 4), None, True), ((), None, False)]
ARG_CASES = [(name, dtype, *axes) for name in ARG_FUNCTIONS for dtype in (F32, I32, BOOL)
             for axes in ARG_AXES]


@pytest.mark.parametrize("name,dtype,shape,axis,keepdims", ARG_CASES,
                         ids=[f"{c[0]}-{name_of(c[1])}-{c[2]}-axis{c[3]}-keep{c[4]}"
                              for c in ARG_CASES])
def test_arg_reduction(name, dtype, shape, axis, keepdims):
  x = rand(shape, dtype, seed=2)
  expected = getattr(np, name)(x, axis=axis, keepdims=keepdims).astype(int_dtype())
  check(f"jnp.{name}", lambda x: getattr(jnp, name)(x, axis=axis, keepdims=keepdims), [x],
        expected)


def test_arg_reduction_nans():
  """argmax/argmin return the first NaN; the nan* versions skip NaN and return -1 for an
  all-NaN slice (JAX's choice; NumPy raises)."""
  x = with_nans((4, 5), seed=3)
  for name in ARG_FUNCTIONS:
    expected = np.array([-1 if name.startswith("nan") and np.isnan(column).all()
                         else getattr(np, name)(column) for column in x.T], np.int32)
    check(f"jnp.{name}", lambda x, name=name: getattr(jnp, name)(x, axis=0), [x], expected)


def test_arg_reduction_x64(x64):
  x = rand((3, 4), F64)
  check("jnp.argmax", lambda x: jnp.argmax(x, 1), [x], np.argmax(x, 1))


# ----------------------------------------------------------------------------- cumulative

CUMULATIVE = ["cumsum", "cumprod", "nancumsum", "nancumprod"]
CUMULATIVE_AXES = [((2, 3), None), ((2, 3), 0), ((2, 3, 2), -1), ((), None), ((0, 2), 1)]
CUMULATIVE_CASES = [(name, dtype, *axes) for name in CUMULATIVE for dtype in (F32, I32, U8, BOOL)
                    for axes in CUMULATIVE_AXES]


@pytest.mark.parametrize("name,dtype,shape,axis", CUMULATIVE_CASES,
                         ids=[f"{c[0]}-{name_of(c[1])}-{c[2]}-axis{c[3]}"
                              for c in CUMULATIVE_CASES])
def test_cumulative(name, dtype, shape, axis):
  """As JAX: the input's dtype (wrapping like it), bools counted as the default int."""
  x = rand(shape, dtype, seed=1)
  result_dtype = np.int32 if x.dtype == np.bool_ else x.dtype
  expected = getattr(np, name)(x, axis=axis).astype(result_dtype)
  check(f"jnp.{name}", lambda x: getattr(jnp, name)(x, axis=axis), [x], expected)


def test_nan_cumulative():
  x = with_nans((3, 4))
  for name in CUMULATIVE:
    check(f"jnp.{name}", lambda x, name=name: getattr(jnp, name)(x, axis=1), [x],
          getattr(np, name)(x, axis=1))


CUMULATIVE_API_CASES = [
    ("cumulative_sum", (5,), None, False), ("cumulative_sum", (2, 3), 1, True),
    ("cumulative_sum", (2, 3), -2, True), ("cumulative_prod", (4,), None, True),
    ("cumulative_prod", (3, 2), 0, False), ("cumulative_sum", (0, 2), 0, True),
]


@pytest.mark.parametrize("name,shape,axis,include_initial", CUMULATIVE_API_CASES,
                         ids=[str(c) for c in CUMULATIVE_API_CASES])
def test_cumulative_array_api(name, shape, axis, include_initial):
  x = rand(shape, I32, seed=4)
  kwargs = dict(axis=axis, include_initial=include_initial)
  check(f"jnp.{name}", lambda x: getattr(jnp, name)(x, **kwargs), [x],
        getattr(np, name)(x, **kwargs).astype(I32))


# ----------------------------------------------------------------------------- average, quantiles

def test_average_weights():
  x, w = rand((3, 4), F32), rand((3, 4), F32, seed=1) + 3
  check("jnp.average", lambda x, w: jnp.average(x, 1, weights=w), [x, w],
        np.average(x, 1, weights=w))
  w1 = np.array([1.0, 2.0, 0.5], np.float32)
  check("jnp.average(1-D weights)", lambda x, w: jnp.average(x, 0, w, keepdims=True), [x, w1],
        np.average(x, 0, w1, keepdims=True))
  check("jnp.average(returned)", lambda x, w: jnp.average(x, 0, w1, returned=True), [x, w1],
        tuple(np.asarray(r, F32) for r in np.average(x, 0, w1, returned=True)))
  xi = rand((3, 4), I32)
  check("jnp.average(returned, unweighted)", lambda x: jnp.average(x, returned=True), [xi],
        tuple(np.asarray(r, F32) for r in np.average(xi, returned=True)))


QUANTILE_METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("shape,axis", [((7,), None), ((4, 6), 1), ((3, 2, 4), (0, 2))],
                         ids=str)
def test_quantile_methods(method, shape, axis):
  x = rand(shape, F32, seed=6)
  q = np.linspace(0, 1, 9).astype(np.float32)
  check(f"jnp.quantile(method={method})",
        lambda x, q: jnp.quantile(x, q, axis=axis, method=method), [x, q],
        np.quantile(x, q, axis=axis, method=method).astype(F32))


def test_quantile_traced_q():
  x = rand((10,), F32)
  q = np.float32(0.37)
  check("jnp.quantile(traced q)", jnp.quantile, [x, q], np.quantile(x, q).astype(F32))
  check("jnp.percentile(traced q)", jnp.percentile, [x, np.float32(37)],
        np.percentile(x, 37).astype(F32))


def test_median_of_empty_is_nan():
  x = np.zeros((0, 3), np.float32)
  check("jnp.median", lambda x: jnp.median(x, 0), [x], numpy_result(np.median, x, 0))


# ----------------------------------------------------------------------------- methods

METHOD_CASES = [("sum", {"axis": 0}), ("prod", {}), ("max", {"axis": 1, "keepdims": True}),
                ("min", {}), ("mean", {"axis": -1}),
                ("var", {"ddof": 1}), ("std", {}),
                ("all", {}), ("any", {"axis": 0}), ("argmax", {}), ("argmin", {"axis": 1}),
                ("ptp", {"axis": 0}), ("cumsum", {"axis": 1}), ("cumprod", {})]


@pytest.mark.parametrize("name,kwargs", METHOD_CASES,
                         ids=[c.values[0] if hasattr(c, "values") else c[0]
                              for c in METHOD_CASES])
def test_array_methods(name, kwargs):
  x = rand((3, 4), F32)
  expected = np.asarray(getattr(np, name)(x, **kwargs))
  expected = expected.astype({"arg": I32, "all": BOOL, "any": BOOL}.get(name[:3], F32))
  check(f"Array.{name}", lambda x: getattr(x, name)(**kwargs), [jnp.asarray(x)], expected)


# ----------------------------------------------------------------------------- errors

_X = np.ones((2, 3), np.float32)
ERRORS = [
    (lambda: jnp.sum(_X, out=_X), NotImplementedError, "The 'out' argument to jnp.sum"),
    (lambda: jnp.argmax(_X, out=_X), NotImplementedError, "The 'out' argument to jnp.argmax"),
    (lambda: jnp.cumsum(_X, out=_X), NotImplementedError, "The 'out' argument to jnp.cumsum"),
    (lambda: jnp.mean(_X, axis=2), ValueError,
     "jnp.mean: axis 2 is out of bounds for array of dimension 2"),
    (lambda: jnp.sum(_X, axis=(1, -1)), ValueError, r"duplicate value in 'axis': \(1, -1\)"),
    (lambda: jnp.sum(_X, axis=1.0), TypeError, r"axis must be None, an int or a tuple"),
    (lambda: jnp.max(np.zeros((2, 0)), axis=1), ValueError,
     "zero-size array to reduction operation max which has no identity"),
    (lambda: jnp.min(_X, where=_X > 0), ValueError,
     "reduction operation min does not have an identity, so to use a where mask"),
    (lambda: jnp.sum(_X, where=np.ones((3, 2), bool)), ValueError,
     "Incompatible shapes for broadcasting"),
    (lambda: jnp.sum(_X, initial=np.ones(2)), ValueError, "initial must be a scalar"),
    (lambda: jnp.argmin(np.zeros((2, 0)), axis=1), ValueError,
     "attempt to get argmin of an empty sequence"),
    (lambda: jnp.argmax(_X, axis=(0, 1)), TypeError, "axis must be an int or None"),
    (lambda: jnp.var(_X, ddof=1, correction=1), ValueError,
     "ddof and correction can't be provided simultaneously"),
    (lambda: jnp.var(_X.astype(np.complex64), dtype=np.float32), ValueError,
     "jnp.var of complex values"),
    (lambda: jnp.quantile(_X, 0.5, method="bogus"), ValueError,
     "jnp.quantile: method must be one of"),
    (lambda: jnp.quantile(_X, 1.5), ValueError, r"quantiles must be in the range \[0, 1\]"),
    (lambda: jnp.percentile(_X, -1), ValueError, r"quantiles must be in the range \[0, 100\]"),
    (lambda: jnp.quantile(_X, 0.5, interpolation="linear"), TypeError, "renamed 'method'"),
    (lambda: jnp.cumulative_sum(_X), ValueError,
     r"axis must be given for arrays of more than one dimension, got shape \(2, 3\)"),
    (lambda: jnp.cumulative_prod(np.float32(1)), ValueError, "the input must be non-scalar"),
    (lambda: jnp.average(_X, weights=np.ones(3)), ValueError, "axis must be specified"),
    (lambda: jnp.average(_X, axis=1, weights=np.ones((1, 3))), ValueError,
     "1D weights expected"),
    (lambda: jnp.average(_X, axis=0, weights=np.ones(3)), ValueError,
     "length of weights 3 is not compatible with axis 0"),
    (lambda: jnp.sum([1, 2]), TypeError, "jnp.sum requires ndarray or scalar arguments"),
    (lambda: jnp.ptp(np.ones(3, bool)), TypeError, "sub does not accept dtype bool"),
]


@pytest.mark.parametrize("fn,error,match", ERRORS, ids=[m[:40] for _, _, m in ERRORS])
def test_errors(fn, error, match):
  with pytest.raises(error, match=match):
    fn()


# ----------------------------------------------------------------------------- hypothesis

@st.composite
def arrays_and_axes(draw, allow_empty=True):
  shape = tuple(draw(st.lists(st.integers(0 if allow_empty else 1, 3), max_size=3)))
  axes = draw(st.one_of(st.none(), st.lists(st.integers(-len(shape), len(shape) - 1),
                                            unique_by=lambda a: a % len(shape),
                                            max_size=len(shape)).map(tuple))
              if shape else st.none())
  keepdims = draw(st.booleans())
  return rand(shape, F32, seed=draw(st.integers(0, 100))), axes, keepdims


@pytest.mark.parametrize("name", ["sum", "mean", "max"])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_hypothesis(name, data):
  x, axis, keepdims = data.draw(arrays_and_axes(allow_empty=name != "max"))
  expected = np.asarray(numpy_result(getattr(np, name), x, axis=axis, keepdims=keepdims), F32)
  check(f"jnp.{name}", lambda x: getattr(jnp, name)(x, axis=axis, keepdims=keepdims), [x],
        expected)
