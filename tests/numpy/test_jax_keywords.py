"""Keyword arguments of JAX 0.10.2's jax.numpy that NumPy 2 has too or that JAX added:
`device=` on the creation functions, `mean=` on the variances, `weights=` on the quantiles,
and trim_zeros' `axis`, take_along_axis' `wrap_negative_indices`, modf's `out`, polyval's
`unroll`, ravel_multi_index's and argsort's `dtype`, digitize's `method`, and
`preferred_element_type` of jnp.linalg's matmul and tensordot. NumPy is the oracle where it
has the feature; elsewhere the expected values were recorded from JAX 0.10.2."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.sharding import Mesh, NamedSharding, PartitionSpec

TOL = dict(rtol=2e-6, atol=2e-6)


def _same(got, want, dtype=None):
  """Equal values (NaN where NaN), shape and, if given, dtype."""
  got = np.asarray(got)
  assert got.shape == np.shape(want), (got.shape, np.shape(want))
  if dtype is not None:
    assert got.dtype == np.dtype(dtype), got.dtype
  np.testing.assert_allclose(got, want, **TOL)


# ----------------------------------------------------------------------------- device=

_CREATORS = {
    "arange": lambda device: jnp.arange(1, 9, device=device),
    "array": lambda device: jnp.array([1., 2., 3., 4., 5., 6., 7., 8.], device=device),
    "asarray": lambda device: jnp.asarray(np.arange(8.), device=device),
    "empty": lambda device: jnp.empty(8, device=device),
    "empty_like": lambda device: jnp.empty_like(np.ones(8), device=device),
    "eye": lambda device: jnp.eye(8, device=device),
    "full": lambda device: jnp.full(8, 2., device=device),
    "full of an array": lambda device: jnp.full((8,), np.ones(1), device=device),
    "full_like": lambda device: jnp.full_like(np.ones(8), 3., device=device),
    "linspace": lambda device: jnp.linspace(0., 1., 8, device=device),
    "ones": lambda device: jnp.ones(8, device=device),
    "ones_like": lambda device: jnp.ones_like(np.ones(8), device=device),
    "zeros": lambda device: jnp.zeros(8, device=device),
    "zeros_like": lambda device: jnp.zeros_like(np.ones(8), device=device),
}


@pytest.mark.parametrize("name", _CREATORS)
def test_creation_device(name):
  make = _CREATORS[name]
  want = np.asarray(make(None))
  device = jaxon.devices()[3]
  out = make(device)
  assert out.devices() == {device} and out.committed, name
  _same(out, want)
  # JAX places nothing under jit (device_put of a tracer is the tracer)
  traced = jaxon.jit(lambda: make(device))()
  assert traced.devices() == {jaxon.devices()[0]}, name
  _same(traced, want)


def test_creation_device_sharding_and_errors():
  sharding = NamedSharding(Mesh(np.array(jaxon.devices()), ("x",)), PartitionSpec("x"))
  out = jnp.zeros(16, device=sharding)
  assert out.sharding == sharding
  _same(jaxon.jit(lambda: jnp.arange(16., device=sharding))(), np.arange(16.))
  values, step = jnp.linspace(0., 1., 5, retstep=True, device=jaxon.devices()[2])
  assert values.devices() == {jaxon.devices()[2]}  # the step stays put, as in JAX
  _same(step, 0.25)
  with pytest.raises(ValueError, match="jnp.ones: device must be a Device or a Sharding"):
    jnp.ones(3, device="cpu")


# ----------------------------------------------------------------------------- mean=

def test_variance_with_given_mean_matches_numpy():
  x = np.random.RandomState(0).standard_normal((3, 4)).astype(np.float32)
  x_nan = x.copy()
  x_nan[0, 1] = x_nan[2, 3] = np.nan
  for axis in (0, 1):
    mean = x.mean(axis, keepdims=True) + 0.25
    _same(jnp.var(x, axis, mean=mean), np.var(x, axis, mean=mean))
    _same(jnp.std(x, axis, ddof=1, keepdims=True, mean=mean),
          np.std(x, axis, ddof=1, keepdims=True, mean=mean))
    nan_mean = np.nanmean(x_nan, axis, keepdims=True)
    _same(jnp.nanvar(x_nan, axis, mean=nan_mean), np.nanvar(x_nan, axis, mean=nan_mean))
    _same(jnp.nanstd(x_nan, axis, mean=nan_mean), np.nanstd(x_nan, axis, mean=nan_mean))
  _same(jnp.nanstd(x_nan, mean=0.5), np.nanstd(x_nan, mean=0.5))
  _same(jnp.var(np.arange(4), mean=1), 1.5, np.float32)  # integers: float32, as JAX
  _same(jaxon.jit(lambda x, m: jnp.std(x, 0, mean=m))(x, x.mean(0, keepdims=True)),
        np.std(x, 0))
  # d/dm mean((x - m)^2) = -2 (mean(x) - m)
  _same(jaxon.grad(lambda m: jnp.var(x, mean=m))(1.), -2 * (x.mean() - 1))


def test_variance_mean_must_keep_the_rank():
  x = np.ones((3, 4), np.float32)
  # JAX subtracts with lax's rank-strict broadcasting: a (4,) mean is refused (NumPy takes it)
  with pytest.raises(TypeError, match="mean of shape"):
    jnp.var(x, 0, mean=np.ones(4, np.float32))
  with pytest.raises(TypeError, match="mean of shape"):
    jnp.nanstd(x, 1, mean=np.ones((2, 4), np.float32))
  with pytest.raises(TypeError, match="requires ndarray or scalar"):
    jnp.std(x, mean=[1., 2.])


# ----------------------------------------------------------------------------- weights=

_X = np.array([[3., 1., 4., 1.5], [5., 9., 2., 6.], [5., 3., 5., 8.]], np.float32)
_W = np.array([[1., 2., 0., 1.], [3., 1., 1., 1.], [1., 1., 1., 1.]], np.float32)
_Q = np.array([0., 0.1, 0.25, 0.5, 0.77, 1.], np.float32)


def test_weighted_quantiles_match_numpy():
  m = "inverted_cdf"
  q = _Q[1:]  # q = 0 can pick a value of weight 0 in JAX, never in NumPy (see below)
  for axis, w in [(None, _W), (0, _W[:, 1]), (1, _W), (1, _W[0])]:
    _same(jnp.quantile(_X, q, axis, weights=w, method=m),
          np.quantile(_X, q, axis, weights=w, method=m))
    _same(jnp.quantile(_X, _Q, axis, method=m), np.quantile(_X, _Q, axis, method=m))
  _same(jnp.percentile(_X, 100 * q, 1, weights=_W, method=m, keepdims=True),
        np.percentile(_X, 100 * q, 1, weights=_W, method=m, keepdims=True))
  x = _X.copy()
  x[0, 1] = np.nan
  x[2] = np.nan
  _same(jnp.nanquantile(x, q, 1, weights=_W, method=m),
        np.nanquantile(x, q, 1, weights=_W, method=m))
  _same(jaxon.jit(lambda x, w: jnp.nanpercentile(x, 100 * q, 0, weights=w, method=m))(x, _W),
        np.nanpercentile(x, 100 * q, 0, weights=_W, method=m))


def test_weighted_quantiles_as_jax():
  m = "inverted_cdf"
  # recorded from JAX 0.10.2: q = 0 takes the smallest value, of weight 0 in row 1 (NumPy
  # skips it: 5.)
  _same(jnp.quantile(_X, 0., 1, weights=_W[0], method=m), [1., 2., 3.])
  # recorded from JAX 0.10.2: weights in the order of a tuple axis
  _same(jnp.quantile(_X, np.array([0.3, 0.8], np.float32), (1, 0), weights=_W.T, method=m),
        [3., 6.])
  # recorded from JAX 0.10.2: a negative or NaN weight makes its slice NaN (NumPy raises);
  # zero weights throughout pick the smallest value
  negative, nan = _W.copy(), _W.copy()
  negative[1, 2] = -1.
  nan[2, 0] = np.nan
  _same(jnp.quantile(_X, 0.5, 1, weights=negative, method=m), [1., np.nan, 5.])
  _same(jnp.nanquantile(_X, 0.5, 1, weights=nan, method=m), [1., 5., np.nan])
  _same(jnp.quantile(_X, 0.5, 1, weights=0 * _W, method=m), [1., 2., 3.])
  # recorded from JAX 0.10.2: integers promote with the weights to float32
  _same(jnp.percentile(np.arange(5, dtype=np.int8), 50, weights=np.arange(5, dtype=np.int8),
                       method=m), 3., np.float32)
  # the gradient flows to the chosen value only, none to the weights
  grad_x, grad_w = jaxon.grad(lambda x, w: jnp.quantile(x, 0.5, weights=w, method=m),
                              (0, 1))(np.arange(1., 6.), np.array([1., 1., 1., 2., 1.]))
  _same(grad_x, [0., 0., 1., 0., 0.])
  _same(grad_w, np.zeros(5))


def test_weighted_quantile_errors():
  with pytest.raises(NotImplementedError, match="only method='inverted_cdf'"):
    jnp.quantile(_X, 0.5, weights=_W)
  with pytest.raises(ValueError, match="weights cannot be complex"):
    jnp.nanquantile(_X, 0.5, weights=_W.astype(np.complex64), method="inverted_cdf")
  with pytest.raises(ValueError, match="when axis is None"):
    jnp.percentile(_X, 50, weights=_W[0], method="inverted_cdf")
  with pytest.raises(ValueError, match="reduced axes"):
    jnp.quantile(_X, 0.5, 1, weights=_W[:, 0], method="inverted_cdf")
  with pytest.raises(TypeError, match="requires ndarray or scalar"):
    jnp.nanpercentile(_X, 50, weights=[1., 2.], method="inverted_cdf")


# ----------------------------------------------------------------------------- the rest

def test_trim_zeros_axis_matches_numpy():
  x = np.array([[0, 0, 0, 0], [0, 1, 0, 2], [0, 0, 3, 0], [0, 0, 0, 0]], np.int32)
  for trim in ("fb", "f", "b"):
    for axis in (None, 0, -1, (1, 0)):
      _same(jnp.trim_zeros(x, trim, axis), np.trim_zeros(x, trim, axis), np.int32)
  for axis in (None, 1):
    _same(jnp.trim_zeros(np.zeros((2, 3)), axis=axis), np.trim_zeros(np.zeros((2, 3)), axis=axis))
  with pytest.raises(np.exceptions.AxisError):
    jnp.trim_zeros(x, axis=2)


def test_take_along_axis_wrap_negative_indices():
  x = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32)
  i = np.array([[-1, 0, 3, -4]], np.int32)
  # recorded from JAX 0.10.2 (mode=None and 'fill' agree; -1 wraps before 'clip' clamps)
  wrapped_fill = [[3., 1., np.nan, np.nan], [6., 4., np.nan, np.nan]]
  for mode, wrap, want in [
      (None, None, wrapped_fill), ("fill", True, wrapped_fill),
      (None, False, [[np.nan, 1., np.nan, np.nan], [np.nan, 4., np.nan, np.nan]]),
      ("clip", None, [[3., 1., 3., 1.], [6., 4., 6., 4.]]),
      ("clip", False, [[1., 1., 3., 1.], [4., 4., 6., 4.]])]:
    _same(jnp.take_along_axis(x, i, 1, mode=mode, wrap_negative_indices=wrap), want)
  _same(jnp.take_along_axis(x.astype(np.int32), i, 1, wrap_negative_indices=False,
                            fill_value=7), [[7, 1, 7, 7], [7, 4, 7, 7]])


def test_modf_out():
  x = np.array([-2.5, 0.75], np.float32)
  for got, want in zip(jnp.modf(x, None), np.modf(x)):
    _same(got, want)
  with pytest.raises(NotImplementedError, match="'out' argument to jnp.modf"):
    jnp.modf(x, out=np.empty(2, np.float32))


def test_polyval_unroll():
  p, x = np.array([1., -2., 0.5, 3.], np.float32), np.linspace(-2., 2., 5, dtype=np.float32)
  for unroll in (0, 1, 3, True, False):
    _same(jnp.polyval(p, x, unroll=unroll), np.polyval(p, x))
  jaxpr = jaxon.make_jaxpr(lambda p, x: jnp.polyval(p, x, unroll=2))(p, x).jaxpr
  assert [e.params["unroll"] for e in jaxpr.eqns if e.primitive.name == "scan"] == [2]
  with pytest.raises(ValueError, match="unroll must be a bool or a non-negative int"):
    jnp.polyval(p, x, unroll=-1)
  with pytest.raises(TypeError, match="unroll must be"):
    jnp.polyval(p, x, unroll=1.5)


def test_ravel_multi_index_dtype():
  coords = (np.array([1, 2], np.int8), np.array([3, 0], np.int8))
  # recorded from JAX 0.10.2: the default is the coordinates' type, which must hold
  # every flat index
  _same(jnp.ravel_multi_index(coords, (3, 4)), [7, 8], np.int8)
  _same(jnp.ravel_multi_index(coords, (20, 20), dtype=np.int16), [23, 40], np.int16)
  _same(jnp.ravel_multi_index(coords, (3, 4), order="F", dtype=np.uint8), [10, 2], np.uint8)
  _same(jnp.ravel_multi_index((1, 3), (3, 4)), 7, np.int32)
  with pytest.raises(ValueError, match="int8 cannot hold the flat indices"):
    jnp.ravel_multi_index(coords, (20, 20))
  with pytest.raises(ValueError, match="dtype must be an integer type"):
    jnp.ravel_multi_index(coords, (3, 4), dtype=np.float32)


def test_argsort_dtype():
  x = np.array([3., 1., 2., 1.], np.float32)
  for dtype in (np.int8, np.uint16, np.float32):
    _same(jnp.argsort(x, dtype=dtype), np.argsort(x, stable=True), dtype)
  _same(jnp.argsort(x, descending=True, dtype=np.int16), [0, 2, 1, 3], np.int16)
  # recorded from JAX 0.10.2: too narrow a dtype wraps around
  _same(jnp.argsort(np.arange(300.)[::-1], dtype=np.int8)[:3], [43, 42, 41], np.int8)
  with pytest.raises(TypeError, match="dtype must be an integer, floating or complex"):
    jnp.argsort(x, dtype=bool)


def test_digitize_method():
  x = np.array([0.5, 1., 1.5, 2., 3.], np.float32)
  for bins in (np.array([1., 2.], np.float32), np.array([2., 1.], np.float32)):
    for method in ("scan", "scan_unrolled", "compare_all", "sort"):
      for right in (False, True):
        _same(jnp.digitize(x, bins, right, method=method), np.digitize(x, bins, right))
  with pytest.raises(ValueError, match="method must be one of"):
    jnp.digitize(x, np.array([1., 2.]), method="bisect")


def test_linalg_preferred_element_type():
  a = np.arange(-6, 6, dtype=np.int8).reshape(3, 4) * 20
  b = np.arange(8, dtype=np.int8).reshape(4, 2)
  want = a.astype(np.int32) @ b.astype(np.int32)
  _same(jnp.linalg.matmul(a, b, preferred_element_type=np.int32), want, np.int32)
  _same(jnp.linalg.tensordot(a, b, axes=1, preferred_element_type=np.float32), want,
        np.float32)
