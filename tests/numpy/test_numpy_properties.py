"""Property tests of jaxon.numpy against NumPy: random ufuncs on random broadcasting shapes
and mixed dtypes, reductions with random axes, keepdims, `where` and `initial`, shape
manipulation with random arguments, and sorting. Each case runs eagerly and under jit.

Expected dtypes come from JAX's rules (the promotion table of test_promotion_table, then:
float functions compute ints and bools in float32, comparisons give bool, …), never from
the code under test. Shapes come from small fixed lists, because every new shape compiles
every op again and compilation dominates the run time.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon.numpy as jnp
from tests.conftest import tolerance
from tests.lax.test_lax_elementwise import check, loose, rand, wide
from tests.numpy.test_promotion_table import STRONG, _expected_result

f32, bf16, f16, i32, i8, u8, b1, c64 = (np.dtype(t) for t in (
    np.float32, jnp.bfloat16, np.float16, np.int32, np.int8, np.uint8, np.bool_, np.complex64))
NAME_OF = {np.dtype(t): n for n, t in STRONG.items()}

FLOATS, INTS = [f32, bf16, f16], [i32, i8, u8]
REALS = FLOATS + INTS + [b1]
ALL = REALS + [c64]


def _promoted(*dts: np.dtype) -> np.dtype:
  """The documented join of strong dtypes (x64 off)."""
  out = dts[0]
  for dt in dts[1:]:
    out = _expected_result(NAME_OF[out], NAME_OF[dt], False)[0]
  return out


def _result_dtype(kind: str, dt: np.dtype) -> np.dtype:
  """The dtype a ufunc of `kind` gives for inputs promoted to `dt`."""
  if kind == "bool":
    return b1
  if kind in ("inexact", "real_inexact") and dt.kind in "biu":
    return f32
  if kind in ("real", "real_inexact") and dt == c64:
    return f32
  if kind == "numeric" and dt == b1:
    return i32
  return dt


class Op:
  """A ufunc: its NumPy reference, result kind, input domain, accepted dtypes."""

  def __init__(self, name, kind="inexact", domain="real", dtypes=None, ref=None, tol=1.0):
    self.name, self.kind, self.domain, self.tol = name, kind, domain, tol
    self.dtypes = dtypes or (ALL if kind in ("inexact", "bool") else REALS)
    self.ref = ref or getattr(np, name)

  def __repr__(self):
    return self.name


UNARY = [
    *(Op(n, domain="pos", dtypes=FLOATS + INTS + [c64]) for n in ("sqrt", "log")),
    *(Op(n, domain="pos", dtypes=FLOATS + INTS, tol=4) for n in ("log2", "log10", "log1p")),
    *(Op(n, dtypes=FLOATS + INTS + [b1], tol=4) for n in ("cbrt", "exp2", "expm1", "sinh",
                                                         "cosh", "tanh", "arctan", "arcsinh")),
    *(Op(n, dtypes=ALL) for n in ("exp", "sin", "cos")),
    Op("tan", domain="unit", dtypes=FLOATS, tol=4),
    *(Op(n, domain="unit", dtypes=FLOATS, tol=4) for n in ("arcsin", "arccos", "arctanh")),
    Op("arccosh", domain="gt1", dtypes=FLOATS, tol=4),
    *(Op(n, dtypes=FLOATS + INTS) for n in ("deg2rad", "rad2deg", "degrees", "radians")),
    Op("sinc", dtypes=FLOATS, tol=4),
    *(Op(n, "same", dtypes=FLOATS + [i32, i8, c64]) for n in ("negative", "positive",
                                                              "square")),
    Op("abs", "real", dtypes=FLOATS + [i32, i8]),
    Op("absolute", "real", dtypes=[f32, c64]),
    Op("sign", "same", dtypes=FLOATS + [i32, i8]),
    *(Op(n, "same", dtypes=FLOATS) for n in ("floor", "ceil", "trunc", "rint", "fix")),
    Op("reciprocal", "same", domain="nonzero", dtypes=FLOATS + [c64]),
    *(Op(n, "bool", dtypes=FLOATS + [c64]) for n in ("isfinite", "isinf", "isnan")),
    Op("signbit", "bool", dtypes=FLOATS),
    Op("logical_not", "bool", dtypes=ALL),
    *(Op(n, "same", dtypes=INTS + [b1]) for n in ("bitwise_not", "invert")),
    *(Op(n, "real", dtypes=[f32, c64, i32]) for n in ("real", "imag")),
    Op("conj", "same", dtypes=[f32, c64, i32]),
    Op("angle", "real_inexact", dtypes=[f32, c64, i32]),
]

BINARY = [
    Op("add", "same", dtypes=ALL), Op("multiply", "same", dtypes=ALL),
    Op("subtract", "same", dtypes=FLOATS + INTS + [c64]),
    *(Op(n, domain="nonzero", dtypes=FLOATS + INTS + [c64]) for n in ("divide",
                                                                       "true_divide")),
    *(Op(n, "same", domain="nonzero", dtypes=FLOATS + INTS) for n in ("floor_divide",
                                                                       "remainder", "mod",
                                                                       "fmod")),
    Op("power", "same", domain="pos", dtypes=[f32, bf16, i32, u8], tol=4),
    Op("float_power", domain="pos", dtypes=[f32, i32], tol=4),
    *(Op(n, "same", dtypes=REALS) for n in ("maximum", "minimum", "fmax", "fmin")),
    *(Op(n, "bool", dtypes=ALL) for n in ("equal", "not_equal")),
    *(Op(n, "bool", dtypes=REALS) for n in ("less", "less_equal", "greater",
                                            "greater_equal")),
    *(Op(n, "bool", dtypes=ALL) for n in ("logical_and", "logical_or", "logical_xor")),
    *(Op(n, "same", dtypes=INTS + [b1]) for n in ("bitwise_and", "bitwise_or",
                                                  "bitwise_xor")),
    *(Op(n, "same", domain="shift", dtypes=INTS) for n in ("left_shift", "right_shift")),
    *(Op(n, dtypes=FLOATS + INTS, tol=4) for n in ("arctan2", "hypot", "logaddexp",
                                                   "logaddexp2", "copysign")),
    Op("heaviside", dtypes=FLOATS),
]

# Pairs of shapes that broadcast: equal, scalar, rank promotion, size-1 stretching, empty.
SHAPE_PAIRS = [((4,), (4,)), ((2, 3), ()), ((), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)),
               ((3, 1, 2), (4, 1)), ((0, 2), (2,))]


def _input(shape, dtype, domain, seed):
  if domain == "shift":
    return np.random.default_rng(seed).integers(0, 8, shape).astype(dtype)
  x = rand(shape, dtype, domain, seed)
  if domain == "real" and x.dtype.kind == "f" and x.size and seed % 3 == 0:
    x.reshape(-1)[0] = 0.0  # exercise signed zeros and boundaries
  return x


def _reference(op, args, dt, out):
  """NumPy's answer on the inputs converted to the promoted dtype `dt`: exact integer
  arithmetic when the result is integral, float64/complex128 otherwise."""
  args = [a.astype(dt) for a in args]
  if not (dt.kind in "biu" and out.kind in "biu"):
    args = [wide(a) if dt.kind not in "biu" else a.astype(np.float64) for a in args]
  if op.kind == "bool" and dt.kind in "biu":
    args = [a.astype(dt) for a in args]
  with np.errstate(all="ignore"):
    return np.asarray(op.ref(*args))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(UNARY), st.data())
def test_unary_ufuncs(op, data):
  dt = data.draw(st.sampled_from(op.dtypes))
  shape = data.draw(st.sampled_from([(), (5,), (2, 3), (0, 3)]))
  x = _input(shape, dt, op.domain, data.draw(st.integers(0, 50)))
  out = _result_dtype(op.kind, dt)
  expected = _reference(op, [x], dt, out)
  check(f"jnp.{op.name}", getattr(jnp, op.name), [x], expected, out,
        loose(out, op.tol) if out.kind in "fc" or out == bf16 else None)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(BINARY), st.data())
def test_binary_ufuncs(op, data):
  dx = data.draw(st.sampled_from(op.dtypes))
  dy = data.draw(st.sampled_from(op.dtypes))
  dt = _promoted(dx, dy)
  if dt not in op.dtypes:
    dt = data.draw(st.sampled_from(op.dtypes))
    dx = dy = dt
  sx, sy = data.draw(st.sampled_from(SHAPE_PAIRS))
  seed = data.draw(st.integers(0, 50))
  x = _input(sx, dx, "real" if op.domain in ("nonzero", "pos") else op.domain, seed)
  y = _input(sy, dy, op.domain, seed + 1)
  if op.name == "power" and dt.kind in "iu":
    x, y = np.clip(x, 0, 3).astype(dx), np.clip(y, 0, 3).astype(dy)
  out = _result_dtype(op.kind, dt)
  expected = _reference(op, [x, y], dt, out)
  check(f"jnp.{op.name}", getattr(jnp, op.name), [x, y], expected, out,
        loose(out, op.tol) if out.kind in "fc" or out == bf16 else None)


# ----------------------------------------------------------------------------- reductions

REDUCTION_SHAPES = [(5,), (2, 3), (2, 0, 3), (2, 3, 2)]


def _sum_dtype(dt):
  if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 4):
    return i32
  return np.dtype(np.uint32) if dt.kind == "u" else dt


REDUCTIONS = {  # name: (result dtype rule, needs a non-empty reduction, takes where)
    "sum": (_sum_dtype, False, True), "prod": (_sum_dtype, False, True),
    "max": (lambda dt: dt, True, True), "min": (lambda dt: dt, True, True),
    "mean": (lambda dt: f32 if dt.kind in "biu" else dt, True, True),
    "var": (lambda dt: f32 if dt.kind in "biu" else dt, True, True),
    "std": (lambda dt: f32 if dt.kind in "biu" else dt, True, True),
    "all": (lambda dt: b1, False, True), "any": (lambda dt: b1, False, True),
    "ptp": (lambda dt: dt, True, False), "nansum": (_sum_dtype, False, True),
    "nanmax": (lambda dt: dt, True, True), "nanmean": (lambda dt: dt, True, True),
    "count_nonzero": (lambda dt: i32, False, False),
}


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(REDUCTIONS)), st.data())
def test_reductions(name, data):
  dtype_rule, needs_items, takes_where = REDUCTIONS[name]
  dt = data.draw(st.sampled_from([f32, i32, u8, b1] if not name.startswith("nan") else [f32]))
  if dt == b1 and name in ("ptp", "var", "std"):
    dt = f32
  shape = data.draw(st.sampled_from(REDUCTION_SHAPES))
  ndim = len(shape)
  axis = data.draw(st.sampled_from([None, *range(-ndim, ndim)] + ([(0, -1)] if ndim > 1
                                                                  else [])))
  keepdims = data.draw(st.booleans())
  x = rand(shape, dt, seed=data.draw(st.integers(0, 50)))
  if name.startswith("nan") and x.size:
    x.reshape(-1)[::3] = np.nan
  kwargs = {"axis": axis, "keepdims": keepdims}
  if takes_where and data.draw(st.booleans()):
    kwargs["where"] = np.random.default_rng(1).random(shape[-1:]) > 0.3  # broadcasts
    if name in ("max", "min", "nanmax"):
      kwargs["initial"] = 0 if name != "min" else 100
  axes = range(ndim) if axis is None else np.atleast_1d(axis) % ndim
  reduced = int(np.prod([shape[a] for a in axes]))
  if needs_items and "initial" not in kwargs and (reduced == 0 or "where" in kwargs
                                                  and name in ("max", "min", "nanmax")):
    return
  ref_x = x.astype(np.float64) if dt.kind == "f" else x
  with np.errstate(all="ignore"):
    expected = np.asarray(getattr(np, name)(ref_x, **kwargs))
  out = dtype_rule(dt)
  check(f"jnp.{name}{kwargs}", lambda a: getattr(jnp, name)(a, **kwargs), [x], expected, out,
        loose(out, 4) if out.kind == "f" else None)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["argmax", "argmin", "cumsum", "cumprod", "nanargmax", "nancumsum"]),
       st.data())
def test_index_and_cumulative_reductions(name, data):
  shape = data.draw(st.sampled_from([(5,), (2, 3), (3, 1, 2)]))
  axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
  dt = data.draw(st.sampled_from([f32, i32] if "nan" not in name else [f32]))
  x = rand(shape, dt, seed=data.draw(st.integers(0, 50)))
  if "nan" in name:
    x.reshape(-1)[1::4] = np.nan
  ref_x = x.astype(np.float64) if dt == f32 else x
  if name == "nanargmax":  # JAX gives -1 for all-NaN slices, where NumPy raises
    all_nan = np.all(np.isnan(ref_x), axis=axis)
    expected = np.where(all_nan, -1, np.argmax(np.where(np.isnan(ref_x), -np.inf, ref_x),
                                               axis=axis))
  else:
    expected = getattr(np, name)(ref_x, axis=axis)
  out = i32 if "arg" in name else dt
  check(f"jnp.{name}", lambda a: getattr(jnp, name)(a, axis=axis), [x], expected, out,
        loose(out, 4) if out.kind == "f" else None)


# ----------------------------------------------------------------------------- shape manipulation

def _shape_cases(draw, x):
  """(description, jnp function of one array, NumPy function) with random arguments."""
  ndim = x.ndim
  axis = draw(st.integers(-ndim, ndim - 1))
  perm = tuple(draw(st.permutations(range(ndim))))
  shift = draw(st.integers(-7, 7))
  reps = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
  k = draw(st.integers(-3, 4))
  sections = draw(st.sampled_from([1, [1], [0, 2], [1, 1, 5]]))
  size = int(np.prod(x.shape))
  new_shape = draw(st.sampled_from([s for s in [(size,), (-1,), (1, size), (size, 1, -1),
                                                tuple(reversed(x.shape))]]))
  b_shape = draw(st.sampled_from([(2, *x.shape), (1, *x.shape), (3, 1, *x.shape)]))
  return {
      f"reshape {new_shape}": (lambda a: jnp.reshape(a, new_shape),
                               lambda a: np.reshape(a, new_shape)),
      f"reshape F {new_shape}": (lambda a: jnp.reshape(a, new_shape, order="F"),
                                 lambda a: np.reshape(a, new_shape, order="F")),
      f"transpose {perm}": (lambda a: jnp.transpose(a, perm), lambda a: np.transpose(a, perm)),
      f"moveaxis {axis}": (lambda a: jnp.moveaxis(a, axis, 0), lambda a: np.moveaxis(a, axis, 0)),
      f"swapaxes {axis}": (lambda a: jnp.swapaxes(a, axis, -1),
                           lambda a: np.swapaxes(a, axis, -1)),
      "squeeze": (jnp.squeeze, np.squeeze),
      f"expand_dims {axis}": (lambda a: jnp.expand_dims(a, (axis, 0)) if axis % ndim else
                              jnp.expand_dims(a, axis),
                              lambda a: np.expand_dims(a, (axis, 0)) if axis % ndim else
                              np.expand_dims(a, axis)),
      f"concatenate {axis}": (lambda a: jnp.concatenate([a, a * 2], axis),
                              lambda a: np.concatenate([a, a * 2], axis)),
      f"stack {axis}": (lambda a: jnp.stack([a, a + 1], axis), lambda a: np.stack([a, a + 1],
                                                                                  axis)),
      "hstack": (lambda a: jnp.hstack([a, a]), lambda a: np.hstack([a, a])),
      "vstack": (lambda a: jnp.vstack([a, a]), lambda a: np.vstack([a, a])),
      "dstack": (lambda a: jnp.dstack([a, a]), lambda a: np.dstack([a, a])),
      "column_stack": (lambda a: jnp.column_stack([a, a]), lambda a: np.column_stack([a, a])),
      f"array_split {sections} {axis}": (
          lambda a: tuple(jnp.array_split(a, sections, axis)),
          lambda a: tuple(np.array_split(a, sections, axis))),
      f"tile {reps}": (lambda a: jnp.tile(a, reps), lambda a: np.tile(a, reps)),
      f"repeat {reps[0]} {axis}": (lambda a: jnp.repeat(a, reps[0], axis),
                                   lambda a: np.repeat(a, reps[0], axis)),
      f"repeat per-entry {axis}": (
          lambda a: jnp.repeat(a, np.arange(a.shape[axis]) % 3, axis),
          lambda a: np.repeat(a, np.arange(a.shape[axis]) % 3, axis)),
      f"flip {axis}": (lambda a: jnp.flip(a, axis), lambda a: np.flip(a, axis)),
      "flip all": (jnp.flip, np.flip),
      f"roll {shift} {axis}": (lambda a: jnp.roll(a, shift, axis),
                               lambda a: np.roll(a, shift, axis)),
      f"roll {shift} flat": (lambda a: jnp.roll(a, shift), lambda a: np.roll(a, shift)),
      f"rot90 {k}": (lambda a: jnp.rot90(a, k, (0, -1)), lambda a: np.rot90(a, k, (0, -1))),
      f"broadcast_to {b_shape}": (lambda a: jnp.broadcast_to(a, b_shape),
                                  lambda a: np.broadcast_to(a, b_shape)),
  }


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([(4,), (2, 3), (1, 3, 2), (2, 1), (0, 3)]), st.data())
def test_shape_manipulation(shape, data):
  x = rand(shape, i32, seed=data.draw(st.integers(0, 50)))
  cases = _shape_cases(data.draw, x)
  name = data.draw(st.sampled_from(sorted(cases)))
  fn, ref = cases[name]
  if x.ndim < 2 and name.startswith(("rot90", "dstack")) and name != "dstack":
    return
  try:
    expected = ref(x)
  except (ValueError, IndexError, np.exceptions.AxisError):
    with pytest.raises((ValueError, IndexError, TypeError)):
      fn(x)
    return
  if isinstance(expected, tuple):
    got = fn(x)
    assert len(got) == len(expected), name
    for g, e in zip(got, expected):
      np.testing.assert_array_equal(np.asarray(g), e, err_msg=name)
      assert np.asarray(g).shape == e.shape, name
    return
  check(f"jnp {name}", fn, [x], np.asarray(expected), np.asarray(expected).dtype)


PAD_MODES = ["constant", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "maximum",
             "minimum", "mean", "median", "empty"]


@pytest.mark.parametrize("mode", PAD_MODES)
def test_pad(mode):
  _pad_cases(mode, "even")


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_reflect_odd(mode):
  _pad_cases(mode, reflect_type="odd")


def test_pad_reflect_odd_example():
  np.testing.assert_allclose(jnp.pad(np.arange(4.), 2, "reflect", reflect_type="odd"),
                             np.pad(np.arange(4.), 2, "reflect", reflect_type="odd"))


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([(4,), (2, 3)]), st.data())
def _pad_cases(mode, reflect_type, shape, data):
  x = rand(shape, f32, seed=data.draw(st.integers(0, 50)))
  widths = data.draw(st.sampled_from([1, (2, 0), ((1, 2),), [(0, 3)] * len(shape)]))
  kwargs = {}
  if mode in ("maximum", "minimum", "mean", "median"):
    kwargs["stat_length"] = data.draw(st.sampled_from([None, 1, 2, (1, 3)]))
  if mode in ("reflect", "symmetric"):
    kwargs["reflect_type"] = reflect_type
  if mode == "constant":
    kwargs["constant_values"] = data.draw(st.sampled_from([0, 1.5, (2, -1)]))
  if mode == "linear_ramp":
    kwargs["end_values"] = data.draw(st.sampled_from([0, (1, -2), [(1, -2)] * len(shape)]))
  kwargs = {k: v for k, v in kwargs.items() if v is not None}
  expected = np.pad(x.astype(np.float64), widths, mode=mode, **kwargs)
  fn = lambda a: jnp.pad(a, widths, mode=mode, **kwargs)  # noqa: E731
  if mode == "empty":  # the padding's values are unspecified
    assert fn(x).shape == expected.shape
    return
  check(f"jnp.pad {mode} {widths} {kwargs}", fn, [x], expected, f32, tolerance(f32))


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([(3,), (2, 3), (0, 3)]), st.sampled_from([i32, f32, bf16, b1]),
       st.data())
def test_split_family(shape, dt, data):
  x = rand(shape, dt, seed=3)
  n = data.draw(st.sampled_from([1, 3, [1, 2]]))
  for name in ("split", "array_split", "hsplit", "vsplit"):
    ndim_ok = name not in ("vsplit",) or x.ndim >= 2
    try:
      want = getattr(np, name)(x, n) if ndim_ok else None
    except ValueError:
      with pytest.raises(ValueError):
        getattr(jnp, name)(x, n)
      continue
    if want is None:
      continue
    got = getattr(jnp, name)(x, n)
    assert len(got) == len(want), name
    for g, w in zip(got, want):
      assert (g.shape, g.dtype) == (w.shape, w.dtype), name
      np.testing.assert_array_equal(np.asarray(g).astype(np.float64), w.astype(np.float64))


# ----------------------------------------------------------------------------- sorting

@settings(max_examples=25, deadline=None)
@given(st.sampled_from([(6,), (2, 5), (3, 1, 4), (0, 2)]), st.sampled_from([f32, i32, u8, b1,
                                                                           bf16]),
       st.data())
def test_sorting(shape, dt, data):
  x = rand(shape, dt, seed=data.draw(st.integers(0, 50)))
  if dt.kind == "f" or dt == bf16:
    x = np.round(x)  # duplicates, so stability matters
    if x.size:
      x.reshape(-1)[::5] = np.nan
  axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
  wide_x = x.astype(np.float64) if dt == bf16 else x
  check("jnp.sort", lambda a: jnp.sort(a, axis=axis), [x],
        np.sort(wide_x, axis=axis).astype(dt), dt)
  check("jnp.argsort", lambda a: jnp.argsort(a, axis=axis, stable=True), [x],
        np.argsort(wide_x, axis=axis, kind="stable"), i32)
  keys = (x.reshape(-1), rand((x.size,), i32, seed=1))
  if x.size:
    check("jnp.lexsort", lambda a, b: jnp.lexsort((a, b)), list(keys),
          np.lexsort((keys[0].astype(np.float64) if dt == bf16 else keys[0], keys[1])), i32)
