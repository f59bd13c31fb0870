"""jaxon.scipy.stats's multivariate distributions, poisson.entropy, summary statistics
(mode, rankdata, sem) and gaussian_kde, against scipy.stats; JAX's error behaviour; vmap,
jit and grad through the pytree-registered gaussian_kde."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as osp_stats

import jaxon
from jaxon.scipy import stats

_RNG = np.random.RandomState(0)
_ALPHA = np.array([0.7, 2.0, 3.5])
_COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
_MEAN = np.array([0.1, -0.2, 0.3])


def test_dirichlet(x64):
  x = _RNG.dirichlet(_ALPHA, 4).T  # components along the first axis, as SciPy's
  full, implied, single, off_simplex = jaxon.jit(lambda x: (
      stats.dirichlet.logpdf(x, _ALPHA), stats.dirichlet.logpdf(x[:2], _ALPHA),
      stats.dirichlet.pdf(x[:, 0], _ALPHA),
      stats.dirichlet.logpdf(np.array([0.5, 0.6, 0.1]), _ALPHA)))(x)
  expected = osp_stats.dirichlet.logpdf(x, _ALPHA)
  np.testing.assert_allclose(full, expected, rtol=1e-12)
  np.testing.assert_allclose(implied, expected, rtol=1e-12)  # the last component implied
  np.testing.assert_allclose(single, np.exp(expected[0]), rtol=1e-12)
  assert off_simplex == -np.inf
  with pytest.raises(ValueError, match="one-dimensional"):
    stats.dirichlet.logpdf(x, _ALPHA[None])
  with pytest.raises(ValueError, match="one entry fewer"):
    stats.dirichlet.logpdf(x[:1], _ALPHA)


def test_multinomial(x64):
  p = np.array([0.2, 0.3, 0.5])
  counts = np.array([[1, 2, 3], [0, 0, 6], [2, 2, 1]])  # the last does not sum to n
  log_masses, mass = jaxon.jit(lambda c: (stats.multinomial.logpmf(c, 6, p),
                                          stats.multinomial.pmf(c[0], 6, p)))(counts)
  np.testing.assert_allclose(log_masses, osp_stats.multinomial.logpmf(counts, 6, p),
                             rtol=1e-12)
  np.testing.assert_allclose(mass, osp_stats.multinomial.pmf(counts[0], 6, p), rtol=1e-12)
  with pytest.raises(ValueError, match="integer type"):
    stats.multinomial.logpmf(counts.astype(float), 6, p)


def _normal_quantities(x, batched_cov):
  logpdf = stats.multivariate_normal.logpdf
  return (logpdf(x, _MEAN, _COV), logpdf(x, _MEAN, 0.7), logpdf(x[:2], _MEAN, batched_cov),
          stats.multivariate_normal.pdf(0.3, 0.1, 2.0),
          jaxon.grad(logpdf)(x[0], _MEAN, _COV))


def test_multivariate_normal(x64):
  x = _RNG.standard_normal((4, 3))
  batched_cov = np.stack([_COV, 2 * _COV])  # batches of covariances broadcast against x
  full, isotropic, batched, univariate, grad_x = jaxon.jit(_normal_quantities)(x, batched_cov)
  mvn = osp_stats.multivariate_normal
  np.testing.assert_allclose(full, mvn.logpdf(x, _MEAN, _COV), rtol=1e-12)
  np.testing.assert_allclose(isotropic, mvn.logpdf(x, _MEAN, 0.7 * np.eye(3)), rtol=1e-12)
  np.testing.assert_allclose(batched, [mvn.logpdf(x[i], _MEAN, batched_cov[i]) for i in (0, 1)],
                             rtol=1e-12)
  np.testing.assert_allclose(univariate, osp_stats.norm.pdf(0.3, 0.1, np.sqrt(2.0)),
                             rtol=1e-12)
  np.testing.assert_allclose(grad_x, -np.linalg.solve(_COV, x[0] - _MEAN), rtol=1e-12)
  with pytest.raises(ValueError, match="incompatible shapes"):
    stats.multivariate_normal.logpdf(x, _MEAN, np.eye(2))
  with pytest.raises(NotImplementedError, match="allow_singular"):
    stats.multivariate_normal.logpdf(x, _MEAN, _COV, allow_singular=True)


def test_poisson_entropy(x64):
  mu = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 50.0, 99.9, 100.0, 150.0, 1000.0])
  np.testing.assert_allclose(stats.poisson.entropy(mu), osp_stats.poisson.entropy(mu),
                             rtol=1e-8, atol=1e-14)
  assert stats.poisson.entropy(mu[:3, None], np.zeros(2)).shape == (3, 2)  # loc broadcasts


def test_mode():
  a = _RNG.randint(0, 4, (5, 6)).astype(np.float32)
  for axis, keepdims in [(1, False), (None, True)]:
    actual, expected = (stats.mode(a, axis=axis, keepdims=keepdims),
                        osp_stats.mode(a, axis=axis, keepdims=keepdims))
    np.testing.assert_array_equal(actual.mode, expected.mode, err_msg=f"axis={axis}")
    np.testing.assert_array_equal(actual.count, expected.count, err_msg=f"axis={axis}")
  # Values recorded from JAX 0.10.2: NaNs count as one value; an empty axis gives NaN, 0.
  nan_mode = stats.mode(np.array([1.0, np.nan, np.nan]))
  assert np.isnan(nan_mode.mode) and nan_mode.count == 2
  empty = stats.mode(np.zeros((0, 3), np.float32))
  assert np.all(np.isnan(empty.mode)) and empty.count.tolist() == [0.0, 0.0, 0.0]
  with pytest.raises(NotImplementedError, match="omit"):
    stats.mode(a, nan_policy="omit")
  with pytest.raises(ValueError, match="nan_policy"):
    stats.mode(a, nan_policy="ignore")


_RANK_METHODS = ["average", "min", "max", "dense", "ordinal"]


def test_rankdata():
  a = _RNG.randint(0, 4, (3, 5))
  by_row = jaxon.jit(lambda a: [stats.rankdata(a, m, axis=1) for m in _RANK_METHODS])(a)
  for method, ranks in zip(_RANK_METHODS, by_row):
    np.testing.assert_array_equal(ranks, osp_stats.rankdata(a, method, axis=1), err_msg=method)
  flat = stats.rankdata(a, "min")
  np.testing.assert_array_equal(flat, osp_stats.rankdata(a, "min"))
  assert flat.dtype == np.float32
  assert np.all(np.isnan(stats.rankdata(np.array([1.0, np.nan, 2.0]))))
  with pytest.raises(ValueError, match="unknown method"):
    stats.rankdata(a, "mean")


def test_sem():
  a = _RNG.standard_normal((4, 5)).astype(np.float32)
  for kwargs in [{}, {"axis": None}, {"axis": 1, "ddof": 0, "keepdims": True}]:
    np.testing.assert_allclose(stats.sem(a, **kwargs), osp_stats.sem(a, **kwargs), rtol=1e-5,
                               err_msg=str(kwargs))
  a[1, 2] = np.nan
  np.testing.assert_allclose(stats.sem(a, axis=1, nan_policy="omit"),
                             osp_stats.sem(a, axis=1, nan_policy="omit"), rtol=1e-5)
  with pytest.raises(ValueError, match="raise"):
    stats.sem(a, nan_policy="raise")


def _kde_quantities(data, weights, points, other_data, one_d_data):
  """Everything test_gaussian_kde compares, built and evaluated in one jitted call."""
  kde = stats.gaussian_kde(data, weights=weights)
  return {"evaluate": kde.evaluate(points), "logpdf": kde.logpdf(points),
          "integrate_gaussian": kde.integrate_gaussian(np.zeros(2), np.eye(2)),
          "integrate_kde": kde.integrate_kde(stats.gaussian_kde(other_data, "silverman")),
          "integrate_box_1d": stats.gaussian_kde(one_d_data, 0.5).integrate_box_1d(-0.5, 1.0)}


def test_gaussian_kde(x64):
  data, weights = _RNG.standard_normal((2, 7)), _RNG.uniform(0.2, 1, 7)
  points, other_data = _RNG.standard_normal((2, 3)), _RNG.standard_normal((2, 4))
  actual = jaxon.jit(_kde_quantities)(data, weights, points, other_data, data[0])
  reference = osp_stats.gaussian_kde(data, weights=weights)
  expected = {
      "evaluate": reference.evaluate(points), "logpdf": reference.logpdf(points),
      "integrate_gaussian": reference.integrate_gaussian(np.zeros(2), np.eye(2)),
      "integrate_kde": reference.integrate_kde(osp_stats.gaussian_kde(other_data, "silverman")),
      "integrate_box_1d": osp_stats.gaussian_kde(data[0], 0.5).integrate_box_1d(-0.5, 1.0)}
  for name, value in expected.items():
    np.testing.assert_allclose(actual[name], value, rtol=1e-12, err_msg=name)


def test_gaussian_kde_pytree_and_errors():
  """The estimator passes through jit and grad as a pytree; bad input raises."""
  data = _RNG.standard_normal(6).astype(np.float32)
  kde = stats.gaussian_kde(data)
  assert (kde.d, kde.n) == (1, 6)
  points = np.linspace(-1, 1, 3, dtype=np.float32)
  np.testing.assert_allclose(jaxon.jit(lambda k, x: k.logpdf(x))(kde, points),
                             osp_stats.gaussian_kde(data).logpdf(points), rtol=1e-5)
  grad = jaxon.jit(jaxon.grad(lambda k: k.logpdf(0.3)[0]))(kde)
  assert isinstance(grad, stats.gaussian_kde) and grad.dataset.shape == (1, 6)
  assert kde.resample(jaxon.random.key(0), (5,)).shape == (1, 5)
  with pytest.raises(ValueError, match="dimension"):
    kde.evaluate(np.zeros((3, 2)))
  with pytest.raises(ValueError, match="bw_method"):
    stats.gaussian_kde(data, bw_method="wide")
  with pytest.raises(NotImplementedError):
    kde.integrate_box(np.zeros(1), np.ones(1))
