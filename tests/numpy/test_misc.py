"""jnp's numeric helpers against NumPy, eagerly and under jit: comparisons, cross, interp,
digitize, histogram, bincount, convolutions, polynomials, select/piecewise, differences,
gradient, frexp/ldexp/modf and gcd/lcm; second-order gradients for the differentiable
ones and vmap against a loop."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from jaxon._src import dtypes as jdtypes
from jaxon.errors import ConcretizationTypeError
from tests.transform_util import check_vmap
from tests.util import check_grads

SETTINGS = settings(max_examples=8, deadline=None)


def _rand(shape, seed=0, dtype=np.float32):
  return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def _leaves(x):
  return list(x) if isinstance(x, (tuple, list)) else [x]


def _same(got, want, what="", exact=False, **tol):
  for g, w in zip(_leaves(got), _leaves(want), strict=True):
    g, w = np.asarray(g), np.asarray(w)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    if exact:
      assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
      np.testing.assert_array_equal(g, w, err_msg=what)
    else:
      np.testing.assert_allclose(g.astype(np.float64) if g.dtype.kind != "c" else g, w,
                                 err_msg=what, **(tol or dict(rtol=2e-5, atol=2e-5)))


def _eager_and_jit(fn, args, want, what="", jitted=None, **kw):
  """`fn(*args)` and its jit equal `want`; hypothesis tests pass a module-level `jitted`
  (`jit(fn)`) so that examples of one shape share a compilation."""
  _same(fn(*args), want, f"{what} eager", **kw)
  _same((jitted or jaxon.jit(fn))(*args), want, f"{what} jit", **kw)


# Compiled once for all the examples of the hypothesis tests.
ISCLOSE = jaxon.jit(jnp.isclose, static_argnums=4)
INTERP = jaxon.jit(jnp.interp)
BINCOUNT = jaxon.jit(jnp.bincount, static_argnames=("minlength", "length"))
DIFF = jaxon.jit(jnp.diff, static_argnums=(1, 2))
LDEXP, GCD, LCM = jaxon.jit(jnp.ldexp), jaxon.jit(jnp.gcd), jaxon.jit(jnp.lcm)


# ----------------------------------------------------------------------------- comparisons

SPECIAL = [0.0, -0.0, 1.0, 1.0 + 1e-6, 1.1, np.inf, -np.inf, np.nan, 1e-9, -1e-9]


@SETTINGS
@given(a=st.lists(st.sampled_from(SPECIAL), min_size=6, max_size=6),
       b=st.lists(st.sampled_from(SPECIAL), min_size=6, max_size=6),
       equal_nan=st.booleans(), rtol=st.sampled_from([1e-5, 0.2]))
def test_isclose(a, b, equal_nan, rtol):
  a, b = np.float32(a)[:, None], np.float32(b)[None, :]
  _eager_and_jit(jnp.isclose, (a, b, rtol, 1e-8, equal_nan),
                 np.isclose(a, b, rtol=rtol, equal_nan=equal_nan), "isclose", ISCLOSE,
                 exact=True)
  want = np.allclose(a, b, rtol=rtol, equal_nan=equal_nan)
  assert bool(jnp.allclose(a, b, rtol=rtol, equal_nan=equal_nan)) == want


def test_isclose_integers_and_complex():
  assert bool(jnp.isclose(100, 101, rtol=0.01)) == np.isclose(100, 101, rtol=0.01)
  z = np.array([1 + 1j, 1 + 1.01j, np.inf + 0j], np.complex64)
  _same(jnp.isclose(z, z[0], rtol=0.02), np.isclose(z, z[0], rtol=0.02), exact=True)


def test_array_equal_equiv():
  x = np.array([1.0, np.nan, 3.0], np.float32)
  for a, b, kw in [(x, x, {}), (x, x, dict(equal_nan=True)), (x, x[:2], {}),
                   (np.arange(3), np.arange(3), {}), (np.arange(3), np.arange(3) + 1, {})]:
    assert bool(jnp.array_equal(a, b, **kw)) == np.array_equal(a, b, **kw), (a, b, kw)
  for a, b in [(np.ones((2, 3)), np.ones(3)), (np.ones((2, 3)), np.ones(2)),
               (np.arange(3), np.array([0, 1, 3]))]:
    assert bool(jnp.array_equiv(a, b)) == np.array_equiv(a, b)
  assert jaxon.jit(jnp.array_equal)(x, x).dtype == np.bool_


# ----------------------------------------------------------------------------- cross

# (shape of a, shape of b, keyword arguments, whether to check transformations too)
CROSS_CASES = [((4, 3), (4, 3), {}, True), ((3,), (2, 3), {}, False),
               ((4, 2), (4, 2), {}, True), ((4, 2), (4, 3), {}, False),
               ((3, 4), (3, 4), dict(axisa=0, axisb=0, axisc=0), False),
               ((3, 2), (2, 3), dict(axisa=0, axisc=0), False),
               ((2, 3, 2), (2, 3, 2), dict(axis=1), False)]


@pytest.mark.parametrize("sa,sb,kw,transforms", CROSS_CASES)
def test_cross(sa, sb, kw, transforms):
  a, b = _rand(sa), _rand(sb, 1)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2 on 2-vectors
    want = np.cross(a, b, **kw)
  fn = functools.partial(jnp.cross, **kw)
  _eager_and_jit(fn, (a, b), want, "cross")
  if transforms:
    check_grads(fn, (a, b), order=2)
    check_vmap(fn, (a, b), axes=(0,))
  with pytest.raises(ValueError, match="dimension must be 2 or 3"):
    jnp.cross(np.ones(4), np.ones(3))


# ----------------------------------------------------------------------------- interp & bins

@settings(max_examples=6, deadline=None)
@given(n=st.sampled_from([1, 5]), seed=st.integers(0, 1000), bounds=st.booleans())
def test_interp(n, seed, bounds):
  rng = np.random.RandomState(seed)
  xp = np.sort(rng.choice(np.arange(-10, 10), n, replace=False)).astype(np.float32) / 2
  fp = rng.standard_normal(n).astype(np.float32)
  x = np.concatenate([rng.uniform(-7, 7, 8), xp]).astype(np.float32)
  left, right = (-9.0, 9.0) if bounds else (None, None)
  _eager_and_jit(jnp.interp, (x, xp, fp, left, right),
                 np.interp(x, xp, fp, left, right), "interp", INTERP, rtol=1e-5, atol=1e-5)
  if n == 5 and not bounds:
    _eager_and_jit(jnp.interp, (x, xp, fp, None, None, 10.5),
                   np.interp(x, xp, fp, period=10.5), "periodic interp", INTERP, rtol=1e-5,
                   atol=1e-4)


def test_interp_transforms():
  xp = np.array([-1.0, 0.0, 0.5, 2.0], np.float32)
  fp = _rand(4)
  x = np.array([-2.0, -0.7, 0.2, 1.1, 3.0], np.float32)  # away from the kinks
  check_grads(lambda x, fp: jnp.interp(x, xp, fp), (x, fp), order=2, eps=1e-3)
  check_vmap(lambda x, fp: jnp.interp(x, xp, fp), (x, fp), axes=(0,))
  _same(jnp.interp(x, xp, fp, period=2.0), np.interp(x, xp, fp, period=2.0), "periodic")


@pytest.mark.parametrize("bins", [[-1.0, 0.0, 1.0], [1.0, 0.0, -1.0], [0.0, 0.0, 1.0], []])
@pytest.mark.parametrize("right", [False, True])
def test_digitize(bins, right):
  x = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0], np.float32)
  bins = np.array(bins, np.float32)
  _eager_and_jit(lambda x, b: jnp.digitize(x, b, right), (x, bins),
                 np.digitize(x, bins, right).astype(np.int32), "digitize", exact=True)


@pytest.mark.parametrize("bins,range_,density,weighted", [
    (10, None, None, False), (4, (-1.0, 1.0), True, False), (3, None, False, True),
    (np.array([-2.0, -0.5, 0.0, 3.0], np.float32), None, True, True), (5, (2.0, 2.0), None, False),
])
def test_histogram(bins, range_, density, weighted):
  a = _rand(40) * 1.5
  w = np.abs(_rand(40, 1)) if weighted else None
  want = np.histogram(a, bins, range_, density=density, weights=w)
  fn = lambda a, w: jnp.histogram(a, bins, range_, weights=w, density=density)
  _eager_and_jit(fn, (a, w), want, "histogram", rtol=1e-5, atol=1e-6)
  _same(jnp.histogram_bin_edges(a, bins, range_), np.histogram_bin_edges(a, bins, range_),
        "histogram_bin_edges", rtol=1e-6, atol=1e-6)


@SETTINGS
@given(x=st.lists(st.integers(0, 8), max_size=10), minlength=st.integers(0, 12),
       weighted=st.booleans())
def test_bincount(x, minlength, weighted):
  x = np.array(x, np.int32)
  w = _rand(len(x)) if weighted else None
  want = np.bincount(x, w, minlength).astype(np.float32 if weighted else np.int32)
  _same(jnp.bincount(x, w, minlength), want, "bincount", exact=not weighted)
  # Under jit: one shape for every example (x padded with zeros, weights with zeros).
  x = np.pad(x, (0, 10 - len(x)))
  w = None if w is None else np.pad(w, (0, 10 - len(w)))
  want = np.bincount(x, w, 12).astype(want.dtype)
  _same(BINCOUNT(x, w, length=12), want, "jit bincount", exact=not weighted)


def test_bincount_needs_length_under_jit():
  with pytest.raises(ConcretizationTypeError, match="length="):
    jaxon.jit(jnp.bincount)(np.array([1, 2]))
  with pytest.raises(TypeError, match="integer type"):
    jnp.bincount(np.array([1.0]))
  _same(jnp.bincount(np.array([0, 5, 1]), length=3), np.array([1, 1, 0], np.int32),
        "values past length are dropped", exact=True)


# ----------------------------------------------------------------------------- convolutions

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na,nv", [(5, 3), (3, 5), (4, 4), (1, 3), (6, 1)])
def test_convolve_correlate(mode, na, nv):
  a, v = _rand(na), _rand(nv, 1)
  for name in ("convolve", "correlate"):
    fn = functools.partial(getattr(jnp, name), mode=mode)
    _eager_and_jit(fn, (a, v), getattr(np, name)(a, v, mode), f"{name} {mode}",
                   rtol=1e-5, atol=1e-5)
  ac, vc = a + 1j * _rand(na, 2), v + 1j * _rand(nv, 3)
  _same(jnp.correlate(ac, vc, mode), np.correlate(ac, vc, mode), "complex correlate",
        rtol=1e-5, atol=1e-5)


def test_convolve_transforms():
  a, v = _rand(5), _rand(3, 1)
  for fn in (jnp.convolve, functools.partial(jnp.correlate, mode="same")):
    check_grads(fn, (a, v), order=2)
    check_vmap(fn, (a, v), axes=(0,))
  with pytest.raises(ValueError, match="one-dimensional"):
    jnp.convolve(np.ones((2, 2)), np.ones(2))
  with pytest.raises(ValueError, match="mode must be"):
    jnp.convolve(np.ones(2), np.ones(2), mode="middle")


# ----------------------------------------------------------------------------- polynomials

def test_polynomials():
  p, q, x = _rand(4), _rand(2, 1), _rand(6, 2)
  _eager_and_jit(jnp.polyval, (p, x), np.polyval(p, x), "polyval", rtol=1e-5, atol=1e-5)
  _eager_and_jit(jnp.polyadd, (p, q), np.polyadd(p, q), "polyadd")
  _eager_and_jit(jnp.polysub, (q, p), np.polysub(q, p), "polysub")
  _eager_and_jit(jnp.polymul, (p, q), np.polymul(p, q), "polymul")
  for m in range(6):
    _same(jnp.polyder(p, m), np.polyder(p, m), f"polyder m={m}")
  for m, k in [(1, None), (2, 3.0), (3, [1.0, 2.0, 3.0]), (0, None)]:
    _same(jnp.polyint(p, m, k), np.polyint(p, m, k), f"polyint m={m} k={k}")
  _same(jnp.polymul(np.array([0.0, 0.0, 1.0, 2.0]), q, trim_leading_zeros=True),
        np.polymul([1.0, 2.0], q), "polymul trimmed")
  _same(jnp.polyval(np.array([1, 2, 3]), 2), np.polyval([1, 2, 3], 2), "ints")


def test_polynomial_transforms():
  p, x = _rand(4), _rand(5, 1)
  for fn, args in [(jnp.polyval, (p, x)), (jnp.polymul, (p, x[:2])),
                   (lambda p: jnp.polyder(p, 2), (p,)),
                   (lambda p, k: jnp.polyint(p, 2, k), (p, x[:2]))]:
    check_grads(fn, args, order=2)
    check_vmap(fn, args, axes=(0,))


@pytest.mark.parametrize("N,increasing", [(None, False), (3, True), (1, False), (0, False)])
def test_vander(N, increasing):
  x = _rand(4)
  _eager_and_jit(lambda x: jnp.vander(x, N, increasing), (x,), np.vander(x, N, increasing),
                 "vander")
  _same(jnp.vander(np.array([2, 3]), 3), np.vander([2, 3], 3).astype(np.int32), "ints",
        exact=True)
  if N != 0:
    check_grads(lambda x: jnp.vander(x, N, increasing), (x,), order=2)


# ----------------------------------------------------------------------------- selection

def test_select_piecewise():
  x = _rand(10) * 2
  conds, choices = [x < -1, x > 0.5], [x, x ** 2]
  _eager_and_jit(lambda x: jnp.select([x < -1, x > 0.5], [x, x ** 2], -1.0), (x,),
                 np.select(conds, choices, -1.0), "select")
  _same(jnp.select([x > 0, x > 1], [1, 2]), np.select([x > 0, x > 1], [1, 2]).astype(np.int32),
        "select with overlapping conditions", exact=True)
  funcs = [lambda v: -v, 3.0, lambda v: v * 2]
  fn = lambda x: jnp.piecewise(x, [x < -1, x > 0.5], funcs)
  _eager_and_jit(fn, (x,), np.piecewise(x, [x < -1, x > 0.5], funcs), "piecewise")
  _same(jnp.piecewise(x, x < 0, [lambda v: -v]), np.piecewise(x, x < 0, [lambda v: -v]),
        "piecewise with one condition")
  xi = np.arange(-3, 4)
  _same(jnp.piecewise(xi, [xi < 0, xi > 0], [lambda v: v * 2, 1.7]),
        np.piecewise(xi, [xi < 0, xi > 0], [lambda v: v * 2, 1.7]).astype(np.int32),
        "piecewise keeps x's dtype", exact=True)
  x_smooth = np.array([-2.0, -0.3, 0.2, 1.4], np.float32)
  check_grads(fn, (x_smooth,), order=2)
  check_grads(lambda x: jnp.select([x < 0], [jnp.sin(x)], x ** 2), (x_smooth,), order=2)
  check_vmap(fn, (x_smooth,), axes=(0,))
  with pytest.raises(TypeError, match="boolean"):
    jnp.select([x], [x])
  with pytest.raises(ValueError, match="same length"):
    jnp.select([x > 0], [x, x])


# ----------------------------------------------------------------------------- differences

@SETTINGS
@given(shape=st.sampled_from([(5,), (3, 4), (0, 3)]), n=st.integers(0, 5),
       axis=st.integers(-1, 0), ends=st.sampled_from([None, "scalar", "array"]),
       dtype=st.sampled_from([np.float32, np.int32, np.bool_]))
def test_diff(shape, n, axis, ends, dtype):
  a = (_rand(shape) * 3).astype(dtype)
  edge_shape = list(shape)
  edge_shape[axis] = 2
  kw = {"scalar": dict(prepend=1, append=2),
        "array": dict(prepend=np.ones(edge_shape, dtype))}.get(ends, {})
  want = np.diff(a, n, axis, **kw)
  exact = dtype != np.float32  # NumPy computes float32 with an integer `prepend` in float64
  want = want.astype(jdtypes.canonicalize_dtype(want.dtype))
  _same(jnp.diff(a, n, axis, **kw), want, "diff", exact=exact)
  _same(DIFF(a, n, axis, **kw), want, "jit diff", exact=exact)


def test_diff_transforms():
  a = _rand((3, 4))
  check_grads(lambda a: jnp.diff(a, 2), (a,), order=2)
  check_grads(lambda a, p: jnp.diff(a, axis=0, prepend=p), (a, a[:1]), order=2)
  check_vmap(lambda a: jnp.diff(a, 1, 0), (a,), axes=(0, -1))
  _same(jnp.ediff1d(a, to_end=[1, 2], to_begin=3), np.ediff1d(a, to_end=[1, 2], to_begin=3),
        "ediff1d")
  _same(jnp.ediff1d(np.arange(4)), np.ediff1d(np.arange(4)).astype(np.int32), "ints",
        exact=True)
  with pytest.raises(ValueError, match="at least one-dimensional"):
    jnp.diff(np.float32(1))


@pytest.mark.parametrize("shape,args,kw", [
    ((6,), (), {}), ((4, 5), (), {}), ((4, 5), (2.0,), dict(edge_order=2)),
    ((4, 5), (0.5, 2.0), {}), ((4, 5), (), dict(axis=1)), ((3,), (), dict(edge_order=2)),
    ((4, 5), ("coords",), dict(axis=1)), ((4, 5), ("coords",), dict(axis=-1, edge_order=2)),
    ((2, 3, 4), (), dict(axis=(0, 2))),
])
def test_gradient(shape, args, kw):
  f = _rand(shape)
  coords = np.cumsum(np.abs(_rand(shape[-1], 1)) + 0.5).astype(np.float32)
  args = tuple(coords if a == "coords" else a for a in args)
  want = np.gradient(f, *args, **kw)
  fn = lambda f: jnp.gradient(f, *args, **kw)
  _eager_and_jit(fn, (f,), list(want) if isinstance(want, tuple) else want, "gradient",
                 rtol=1e-4, atol=1e-5)
  check_grads(lambda f: jnp.gradient(f, *args, **kw), (f,), order=1)
  with pytest.raises(ValueError, match="too small"):
    jnp.gradient(np.ones(2), edge_order=2)


# ----------------------------------------------------------------------------- float bits

# Normal numbers only: XLA on CPU flushes subnormals to zero.
FLOATS = [0.0, -0.0, 1.0, -3.0, 0.75, 8.0, 1e-30, 3e38, np.inf, -np.inf, np.nan, 1.5e-38]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
def test_frexp(dtype):
  x = np.array(FLOATS, np.float32).astype(dtype)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    x = x[np.isinf(x) == np.isinf(np.array(FLOATS))]  # drop values that overflow `dtype`
    x = x[(x == 0) | ~(np.abs(x.astype(np.float32)) < float(jnp.finfo(dtype).smallest_normal))]
  want_m, want_e = np.frexp(x.astype(np.float32))
  for name, (m, e) in (("eager", jnp.frexp(x)), ("jit", jaxon.jit(jnp.frexp)(x))):
    assert m.dtype == np.dtype(dtype), name
    _same(np.asarray(m).astype(np.float32), want_m, f"{name} mantissa", exact=True)
    _same(e, want_e.astype(np.int32), f"{name} exponent", exact=True)


def test_frexp_x64(x64):
  x = np.array([1e-300, 3e300, 5.0, -0.1, 0.0])
  _same(jnp.frexp(x), np.frexp(x), "frexp float64", exact=True)


@SETTINGS
@given(x=st.lists(st.sampled_from(FLOATS), min_size=6, max_size=6),
       e=st.lists(st.integers(-300, 300) | st.integers(-5, 5), min_size=6, max_size=6))
def test_ldexp(x, e):
  x, e = np.array(x, np.float32)[:, None], np.array(e, np.int32)[None, :]
  want = np.ldexp(x, e)
  normal = (want == 0) | ~(np.abs(want) < np.finfo(np.float32).smallest_normal)
  got = np.asarray(jnp.ldexp(x, e))
  np.testing.assert_array_equal(got[normal], want[normal])
  np.testing.assert_array_equal(np.asarray(LDEXP(x, e))[normal], want[normal])


def test_ldexp_grad_and_errors():
  x = _rand(4)
  e = np.array([0, 3, -2, 10], np.int32)
  check_grads(lambda x: jnp.ldexp(x, e), (x,), order=2)
  check_vmap(lambda x: jnp.ldexp(x, e), (x,), axes=(0,))
  assert jnp.ldexp(np.float16(1.5), 3).dtype == np.float16
  with pytest.raises(TypeError, match="integer"):
    jnp.ldexp(1.0, 2.0)


def test_modf():
  x = np.array([-2.5, 2.0, -2.0, np.inf, -np.inf, np.nan, 0.3, -0.0], np.float32)
  frac, whole = jnp.modf(x)
  want_frac, want_whole = np.modf(x)
  _same((frac, whole), (want_frac, want_whole), "modf", exact=True)
  np.testing.assert_array_equal(np.signbit(np.asarray(frac)), np.signbit(want_frac))
  check_grads(lambda x: jnp.modf(x)[0], (np.array([0.3, -1.7], np.float32),), order=2)


# ----------------------------------------------------------------------------- integers

@settings(max_examples=6, deadline=None)
@given(a=st.lists(st.integers(-300, 300), min_size=6, max_size=6),
       b=st.lists(st.integers(-300, 300) | st.just(0), min_size=6, max_size=6),
       dtype=st.sampled_from([np.int32, np.uint16]))
def test_gcd_lcm(a, b, dtype):
  a, b = np.array(a).astype(dtype)[:, None], np.array(b).astype(dtype)[None, :]
  _eager_and_jit(jnp.gcd, (a, b), np.gcd(a, b), "gcd", GCD, exact=True)
  _eager_and_jit(jnp.lcm, (a, b), np.lcm(a, b), "lcm", LCM, exact=True)


def test_gcd_worst_case_and_vmap():
  fib = np.array([1836311903, 701408733], np.int32)  # consecutive Fibonacci numbers
  _same(jnp.gcd(fib, fib[::-1] + np.int32(0)), np.gcd(fib, fib[::-1]), "Fibonacci",
        exact=True)
  _same(jnp.gcd(np.int32(1836311903), np.int32(1134903170)), np.int32(1), "Fibonacci",
        exact=True)
  check_vmap(jnp.gcd, (np.array([12, 18, 0], np.int32), np.array([8, 27, 5], np.int32)),
             axes=(0,))
  with pytest.raises(ValueError, match="integer"):
    jnp.gcd(1.0, 2.0)
