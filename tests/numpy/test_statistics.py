"""jnp's NaN-ignoring quantiles, cov/corrcoef, histogram2d/histogramdd, trapezoid and
unwrap against NumPy, eagerly and under jit; second-order gradients and vmap against a loop
for the differentiable ones."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from tests.transform_util import check_vmap
from tests.util import check_grads

TOL = dict(rtol=2e-5, atol=2e-5)


def _rand(shape, seed=0, dtype=np.float32):
  return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def _leaves(x):
  if isinstance(x, (tuple, list)):
    return [leaf for e in x for leaf in _leaves(e)]
  return [x]


def _same(got, want, what, **tol):
  got, want = _leaves(got), _leaves(want)
  assert len(got) == len(want), what
  for g, w in zip(got, want):
    g, w = np.asarray(g), np.asarray(w)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    np.testing.assert_allclose(g, w, err_msg=what, **(tol or TOL))


def _with_nans(shape, seed):
  x = _rand(shape, seed)
  rng = np.random.RandomState(seed + 1)
  x[rng.rand(*shape) < 0.3] = np.nan
  if x.ndim > 1:
    x[0] = np.nan  # a slice with no numbers
  return x


# ----------------------------------------------------------------------------- NaN quantiles

@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(5,), (3, 4), (2, 3, 4)]), st.data())
def test_nan_quantiles_match_numpy(shape, data):
  x = _with_nans(shape, data.draw(st.integers(0, 20)))
  axis = data.draw(st.sampled_from([None, 0, -1, (0, -1)]))
  if isinstance(axis, tuple) and len(shape) < 2:
    axis = None
  keepdims = data.draw(st.booleans())
  method = data.draw(st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]))
  q = data.draw(st.sampled_from([0.25, np.array([0., 0.5, 1.], np.float32)]))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
    want = [np.nanquantile(x, q, axis=axis, method=method, keepdims=keepdims),
            np.nanpercentile(x, q * 100, axis=axis, method=method, keepdims=keepdims),
            np.nanmedian(x, axis=axis, keepdims=keepdims)]

  def fn(a):
    return [jnp.nanquantile(a, q, axis=axis, method=method, keepdims=keepdims),
            jnp.nanpercentile(a, q * 100, axis=axis, method=method, keepdims=keepdims),
            jnp.nanmedian(a, axis=axis, keepdims=keepdims)]
  what = f"nan quantiles {shape} axis={axis} {method} keepdims={keepdims}"
  _same(jaxon.jit(fn)(x), want, what, rtol=1e-5, atol=1e-5)


def test_nan_quantiles_eager_and_dtypes():
  x = _with_nans((3, 4), 0)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    _same(jnp.nanmedian(x, axis=1), np.nanmedian(x, axis=1), "nanmedian eager")
  ints = np.arange(10, dtype=np.int32).reshape(2, 5)
  got = jnp.nanquantile(ints, 0.3, axis=1)
  assert got.dtype == np.float32
  _same(got, np.nanquantile(ints, 0.3, axis=1), "nanquantile ints")
  _same(jnp.nanpercentile(ints, 30), np.nanpercentile(ints, 30), "nanpercentile ints")


def test_nan_quantile_errors():
  with pytest.raises(ValueError, match=r"\[0, 100\]"):
    jnp.nanpercentile(np.ones(3), 101)
  with pytest.raises(ValueError, match="method"):
    jnp.nanquantile(np.ones(3), 0.5, method="bogus")


def test_nan_quantile_transforms():
  x = _rand((3, 4))
  x[1, 2] = np.nan
  fn = lambda a: jnp.nanquantile(a, np.array([0.3, 0.8], np.float32), axis=1)  # noqa: E731
  check_grads(jaxon.jit(lambda a: fn(jnp.where(jnp.isnan(a), 0, a))), [_rand((3, 4))],
              order=2, modes=("rev",))
  check_vmap(lambda a: [fn(a), jnp.nanmedian(a, axis=0)], [x], axes=(1,))


# ----------------------------------------------------------------------------- cov, corrcoef

COV_CASES = [
    dict(), dict(bias=True), dict(ddof=2), dict(rowvar=False),
    dict(fweights=np.array([1, 2, 0, 3, 1])), dict(aweights=np.array([.5, 1., 2., .1, 1.])),
    dict(fweights=np.array([1, 2, 0, 3, 1]), aweights=np.array([.5, 1., 2., .1, 1.])),
    dict(fweights=np.array([1, 2, 0, 3, 1]), aweights=np.array([.5, 1., 2., .1, 1.]), ddof=0),
]


@pytest.mark.parametrize("kwargs", COV_CASES, ids=lambda k: ",".join(k) or "default")
def test_cov_matches_numpy(kwargs):
  m, y = _rand((3, 5), 1), _rand((2, 5), 2)
  if kwargs.get("rowvar") is False:
    m, y = m.T, y.T
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    want = [np.cov(m, **kwargs), np.cov(m, y, **kwargs)]
  fn = lambda a, b: [jnp.cov(a, **kwargs), jnp.cov(a, b, **kwargs)]  # noqa: E731
  _same(jaxon.jit(fn)(m, y), want, f"cov {kwargs}")


def test_cov_shapes_and_corrcoef():
  m = _rand((3, 5), 3)
  c = (m + 1j * _rand((3, 5), 4)).astype(np.complex64)
  cases = [(jnp.cov(m[0]), np.cov(m[0])), (jnp.cov(m[0], m[1]), np.cov(m[0], m[1])),
           (jnp.cov(c), np.cov(c)), (jnp.corrcoef(m), np.corrcoef(m)),
           (jnp.corrcoef(m[0], m[2]), np.corrcoef(m[0], m[2])),
           (jnp.corrcoef(m[0]), np.corrcoef(m[0])), (jnp.corrcoef(c), np.corrcoef(c)),
           (jnp.cov(np.arange(6).reshape(2, 3)), np.cov(np.arange(6).reshape(2, 3)))]
  for i, (got, want) in enumerate(cases):
    _same(got, want, f"case {i}")
  assert jnp.cov(np.zeros((0, 3))).shape == (0, 0)
  assert jnp.cov(m).dtype == np.float32
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # zero degrees of freedom: 1 / 0
    _same(jnp.cov(m[0], ddof=5), np.cov(m[0], ddof=5), "ddof = n")
    _same(jnp.cov(m[:1], rowvar=False), np.cov(m[:1], rowvar=False), "one observation")


def test_cov_x64(x64):
  m = _rand((2, 6), 5, np.float64)
  got = jnp.cov(m, aweights=np.arange(1., 7.))
  assert got.dtype == np.float64
  _same(got, np.cov(m, aweights=np.arange(1., 7.)), "cov f64", rtol=1e-12, atol=1e-12)


COV_ERRORS = [
    (lambda: jnp.cov(np.ones((2, 2, 2))), ValueError, "at most 2"),
    (lambda: jnp.cov(np.ones((2, 3)), fweights=np.array([1., 1.5, 1.])), TypeError, "integer"),
    (lambda: jnp.cov(np.ones((2, 3)), aweights=np.array([1., -1., 1.])), ValueError,
     "negative"),
    (lambda: jnp.cov(np.ones((2, 3)), aweights=np.ones(4)), ValueError, "one weight per"),
    (lambda: jnp.cov(np.ones((2, 3)), np.ones((2, 4))), ValueError, "observations"),
]


@pytest.mark.parametrize("thunk,exc,match", COV_ERRORS)
def test_cov_errors(thunk, exc, match):
  with pytest.raises(exc, match=match):
    thunk()


def test_cov_corrcoef_transforms():
  m = _rand((2, 4), 6)
  w = np.array([1., 2., .5, 1.5], np.float32)
  check_grads(jaxon.jit(lambda a, w: jnp.cov(a, aweights=w)), [m, w], order=2,
              modes=("rev",), atol=2e-2, rtol=2e-2)
  check_grads(jaxon.jit(jnp.corrcoef), [m], order=2, modes=("rev",), atol=2e-2, rtol=2e-2)
  check_vmap(lambda a: jnp.corrcoef(a) + jnp.cov(a, aweights=w), [m], axes=(-1,))


# ----------------------------------------------------------------------------- histograms

HISTDD_CASES = [dict(), dict(bins=4), dict(bins=(2, 3, 4)),
                dict(bins=[np.array([-1., 0., 1.]), 3, np.array([-2., 0., 2.])]),
                dict(bins=3, range=[(-1., 1.), None, (0., 2.)]), dict(bins=3, density=True),
                dict(bins=2, weights=np.linspace(0., 1., 20))]


@pytest.mark.parametrize("kwargs", HISTDD_CASES, ids=lambda k: ",".join(k) or "default")
def test_histogramdd_matches_numpy(kwargs):
  sample = _rand((20, 3), 7)
  sample[3] = [1., 0., 2.]  # on right edges of the given bins: counted in the last bin
  _same(jnp.histogramdd(sample, **kwargs), np.histogramdd(sample, **kwargs),
        f"histogramdd {kwargs}")


@pytest.mark.parametrize("bins", [10, 3, (2, 4), [-2., -1., 0., 1., 2.],
                                  [3, np.array([-3., 0., 3.])]], ids=str)
def test_histogram2d_matches_numpy(bins):
  x, y = _rand((15,), 8), _rand((15,), 9)
  for density in (None, True):
    _same(jnp.histogram2d(x, y, bins, density=density),
          np.histogram2d(x, y, bins, density=density), f"histogram2d {bins} {density}")


def test_histograms_under_jit_and_vmap():
  sample = _rand((12, 2), 10)
  edges = [np.array([-2., 0., 2.], np.float32), np.array([-1., 0., 1.], np.float32)]
  fn = lambda s, w: jnp.histogramdd(s, edges, weights=w)[0]  # noqa: E731
  w = np.linspace(0, 1, 12).astype(np.float32)
  _same(jaxon.jit(fn)(sample, w), np.histogramdd(sample, edges, weights=w)[0], "jit")
  check_vmap(fn, [sample, w], axes=(0,))
  check_grads(jaxon.jit(lambda w: fn(sample, w)), [w], order=2, modes=("rev",))


def test_histogram_errors():
  with pytest.raises(ValueError, match="one weight"):
    jnp.histogramdd(np.ones((4, 2)), weights=np.ones(3))
  with pytest.raises(ValueError, match="bin specification per dimension"):
    jnp.histogramdd(np.ones((4, 2)), bins=[2, 3, 4])
  with pytest.raises(ValueError, match="range"):
    jnp.histogramdd(np.ones((4, 2)), range=[(0, 1)])


# ----------------------------------------------------------------------------- trapezoid, unwrap

def test_trapezoid_matches_numpy():
  y = _rand((3, 4), 11)
  x1 = np.sort(_rand((4,), 12))
  x0 = np.cumsum(np.abs(_rand((3, 4), 13)), axis=0)
  cases = [((y,), {}), ((y,), dict(dx=0.5, axis=0)), ((y, x1), {}), ((y, x0), dict(axis=0)),
           ((np.arange(5),), {}), ((y[0], x1), {})]
  for args, kwargs in cases:
    _same(jnp.trapezoid(*args, **kwargs), np.trapezoid(*args, **kwargs),
          f"trapezoid {[np.shape(a) for a in args]} {kwargs}")
  check_grads(jaxon.jit(lambda y, x: jnp.trapezoid(y, x)), [y, x1], order=2,
              modes=("fwd", "rev"))
  check_vmap(lambda y, x: jnp.trapezoid(y, x), [y, x1], axes=(0,))


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([(6,), (3, 5)]), st.integers(0, 30),
       st.sampled_from([dict(), dict(axis=0), dict(discont=4.0), dict(period=5.0),
                        dict(period=3.0, discont=1.0)]))
def test_unwrap_matches_numpy(shape, seed, kwargs):
  p = np.cumsum(_rand(shape, seed) * 2.5, axis=-1).astype(np.float32)
  if kwargs.get("axis") == 0 and len(shape) == 1:
    kwargs = {}
  _same(jaxon.jit(lambda a: jnp.unwrap(a, **kwargs))(p), np.unwrap(p, **kwargs),
        f"unwrap {kwargs}", rtol=1e-5, atol=1e-4)


def test_unwrap_eager_transforms_errors():
  p = np.array([0., 3., 6.5, 1., -4.], np.float32)
  _same(jnp.unwrap(p), np.unwrap(p), "unwrap eager")
  _same(jnp.unwrap(np.array([0, 4, 9])), np.unwrap(np.array([0, 4, 9])), "unwrap ints")
  assert jnp.unwrap(np.zeros((2, 0))).shape == (2, 0)
  with pytest.raises(TypeError, match="complex"):
    jnp.unwrap(np.ones(3, np.complex64))
  check_grads(jaxon.jit(jnp.unwrap), [p], order=2, modes=("rev",))
  check_vmap(jnp.unwrap, [np.stack([p, p + 1])], axes=(1,))
