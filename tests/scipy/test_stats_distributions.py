"""jaxon.scipy.stats's univariate distributions against scipy.stats.

One table row per distribution: the point grid, the parameters (shape (3,) arrays that
broadcast against the (4, 1) points) and the functions JAX 0.10.2 exposes. Each row is one
jitted call computing every function at once (one compile per distribution), compared with
SciPy in float64. Edge conventions (out of support, invalid parameters) are checked against
values recorded from JAX 0.10.2; derivatives, vmap and jit on a few representatives.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as osp_stats

import jaxon
import jaxon.numpy as jnp
from jaxon.scipy import stats
from tests.util import check_grads

_P = np.array([0.2, 0.5, 0.9])  # probabilities for ppf / isf / ppf-like arguments
_LOC, _SCALE = np.array([-0.5, 0.0, 0.7]), 1.5


def _col(*values: float) -> np.ndarray:
  return np.array(values, np.float64)[:, None]


# name -> (points, parameters, functions). Parameters are positional, in JAX's order.
TABLE = {
    "cauchy": (_col(-3, -0.4, 0.9, 4), (_LOC, _SCALE),
               ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "expon": (_col(-1, 0.3, 1.0, 6), (_LOC, _SCALE),
              ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "laplace": (_col(-3, -0.2, 0.5, 4), (_LOC, _SCALE), ["pdf", "logpdf", "cdf"]),
    "logistic": (_col(-5, -0.3, 1.2, 9), (_LOC, _SCALE),
                 ["pdf", "logpdf", "cdf", "sf", "ppf", "isf"]),
    "uniform": (_col(-1, 0.1, 0.9, 2.5), (_LOC, _SCALE), ["pdf", "logpdf", "cdf", "ppf"]),
    "gumbel_l": (_col(-4, -0.5, 0.8, 2), (_LOC, _SCALE),
                 ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "gumbel_r": (_col(-2, -0.5, 0.8, 9), (_LOC, _SCALE),
                 ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "beta": (_col(-0.5, 0.1, 0.6, 0.95), (np.array([0.7, 2.0, 5.0]), 1.8, 0.0, 1.2),
             ["logpdf", "logcdf", "sf"]),
    "chi2": (_col(-1, 0.4, 2.0, 7), (np.array([1.0, 2.5, 6.0]), 0.1, 1.3),  # gamma's code
             ["logpdf", "logsf"]),
    "gamma": (_col(-1, 0.4, 2.0, 7), (np.array([0.8, 2.5, 6.0]), 0.1, 1.3),
              ["logpdf", "logcdf", "sf"]),
    "pareto": (_col(0.5, 1.6, 3.0, 20), (np.array([0.9, 2.0, 4.0]), 0.2, 1.1),
               ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "t": (_col(-6, -0.5, 0.8, 3), (np.array([0.7, 3.0, 30.0]), 0.3, 1.4), ["logpdf"]),
    "gennorm": (_col(-2, -0.3, 0.6, 1.7), (np.array([0.8, 2.0, 5.0]),),
                ["logpdf", "cdf"]),
    "vonmises": (_col(-3, -0.3, 1.0, 2.9), (np.array([0.3, 2.0, 40.0]),), ["pdf", "logpdf"]),
    "wrapcauchy": (_col(0.1, 1.0, 3.0, 6.0), (np.array([0.1, 0.5, 0.9]),), ["pdf", "logpdf"]),
    "truncnorm": (_col(-2.5, -0.3, 0.9, 3.5), (np.array([-1.0, 0.5, -9.0]), 2.0, 0.2, 1.1),
                  ["logpdf", "logcdf"]),  # logsf is logcdf reflected
    "bernoulli": (_col(-1, 0, 1, 2), (_P,), ["pmf", "logpmf", "cdf", "ppf"]),
    "binom": (_col(-1, 0, 3, 7), (7.0, _P, 0.0), ["logpmf"]),
    "betabinom": (_col(0, 2, 5, 7), (7.0, np.array([0.5, 2.0, 4.0]), 1.5), ["logpmf"]),
    "nbinom": (_col(-1, 0, 3, 11), (3.0, _P, 0.0), ["logpmf"]),
    "geom": (_col(0, 1, 3, 10), (_P,), ["pmf", "logpmf"]),
    "poisson": (_col(-1, 0, 3, 12), (np.array([0.5, 4.0, 11.0]), 0.0), ["logpmf", "cdf"]),
}
_QUANTILE_FUNCTIONS = {"ppf", "isf"}
_COMPILED: dict = {}


def _all_functions(name: str):
  """One jitted function returning every function of distribution `name` at once."""
  if name not in _COMPILED:
    module, functions = getattr(stats, name), TABLE[name][2]

    def evaluate(points, quantiles, *params):
      return {f: getattr(module, f)(quantiles if f in _QUANTILE_FUNCTIONS else points, *params)
              for f in functions}
    _COMPILED[name] = jaxon.jit(evaluate)
  return _COMPILED[name]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_matches_scipy(x64, name):
  points, params, functions = TABLE[name]
  quantiles = _P[:, None] * np.ones((1, 3))
  actual = _all_functions(name)(points, quantiles, *params)
  reference = getattr(osp_stats, name)
  for f in functions:
    first = quantiles if f in _QUANTILE_FUNCTIONS else points
    expected = getattr(reference, f)(first, *params)
    np.testing.assert_allclose(actual[f], expected, rtol=1e-9, atol=1e-12,
                               err_msg=f"{name}.{f} (float64, jit)")
    assert actual[f].dtype == np.float64, (name, f, actual[f].dtype)


def test_float32_and_int_promotion():
  """int arguments promote to the default float (float32 without x64), as in JAX."""
  gamma, poisson, bernoulli, t = jaxon.jit(lambda: (
      stats.gamma.logpdf(np.arange(1, 4), 2), stats.poisson.pmf(3, 2),
      stats.bernoulli.ppf(np.float32(0.3), 0.5), stats.t.logpdf(np.float32(0.5), 3)))()
  assert gamma.dtype == poisson.dtype == bernoulli.dtype == t.dtype == np.float32
  np.testing.assert_allclose(t, osp_stats.t.logpdf(0.5, 3), rtol=1e-6)


# Values recorded from JAX 0.10.2 (jax.scipy.stats) at its edge conventions.
EDGE_CASES = [
    ("beta", "logpdf", (1.5, 2.0, 3.0), -np.inf),       # outside [loc, loc + scale]
    ("beta", "logpdf", (0.5, -1.0, 3.0), np.nan),       # invalid shape
    ("beta", "pdf", (0.0, 1.0, 3.0), 3.0),              # edge with exponent zero
    ("expon", "cdf", (-1.0,), 0.0),
    ("expon", "logsf", (-1.0,), 0.0),
    ("expon", "ppf", (1.5,), np.nan),
    ("gamma", "sf", (-1.0, 2.0), 1.0),
    ("gumbel_r", "logpdf", (0.3, 0.0, -1.0), np.nan),   # scale <= 0
    ("gumbel_l", "ppf", (0.0,), np.nan),                # JAX: NaN, not -inf
    ("pareto", "logsf", (0.5, 2.0), 0.0),
    ("uniform", "cdf", (np.nan,), 0.0),                 # JAX's select default
    ("wrapcauchy", "logpdf", (7.0, 0.5), -np.inf),
    ("wrapcauchy", "logpdf", (1.0, 1.5), np.nan),
    ("vonmises", "logpdf", (1.0, 0.0), np.nan),
    ("bernoulli", "cdf", (0.5, 1.5), np.nan),
    ("bernoulli", "ppf", (0.3, 0.6), 0.0),
    ("binom", "pmf", (0.0, 0.0, 0.3), 1.0),
    ("binom", "logpmf", (4.0, 3.0, 0.3), -np.inf),
    ("betabinom", "logpmf", (1.0, 3.0, -1.0, 2.0), np.nan),
    ("geom", "logpmf", (0.0, 0.5), -np.inf),
    ("poisson", "logpmf", (1.5, 2.0), -np.inf),         # non-integral k
    ("poisson", "cdf", (-0.5, 2.0), 0.0),
    ("truncnorm", "logpdf", (0.0, 1.0, 1.0), np.nan),   # a >= b
    ("truncnorm", "logcdf", (3.0, -1.0, 2.0), 0.0),
    ("truncnorm", "logsf", (-3.0, -1.0, 2.0), 0.0),
]


def test_edge_conventions():
  actual = jaxon.jit(lambda: [getattr(getattr(stats, name), f)(*args)
                              for name, f, args, _ in EDGE_CASES])()
  for (name, f, args, expected), value in zip(EDGE_CASES, actual):
    np.testing.assert_allclose(value, expected, rtol=1e-6, err_msg=f"{name}.{f}{args}")


TAILS = [("truncnorm", "logpdf", (9.0, 8.0, 10.0)), ("truncnorm", "logcdf", (8.5, 8.0, 10.0)),
         ("gumbel_r", "logsf", (40.0,)), ("expon", "logcdf", (1e-10,)),
         ("logistic", "sf", (40.0,)), ("gumbel_l", "logcdf", (-30.0,))]


def test_tails_keep_precision(x64):
  """Far tails where the naive formula underflows or cancels."""
  actual = jaxon.jit(lambda: [getattr(getattr(stats, name), f)(*args)
                              for name, f, args in TAILS])()
  for (name, f, args), value in zip(TAILS, actual):
    np.testing.assert_allclose(value, getattr(getattr(osp_stats, name), f)(*args), rtol=1e-9,
                               err_msg=f"{name}.{f}{args}")


@pytest.mark.parametrize("name, args", [
    ("gamma", (2.3, 1.7, 0.2, 1.1)),
    ("beta", (0.4, 2.2, 1.6)),
])
def test_logpdf_grads(x64, name, args):
  """In every argument at once, to order 2."""
  check_grads(getattr(stats, name).logpdf, [np.float64(a) for a in args], order=2, rtol=1e-4,
              atol=1e-6)


def test_truncnorm_grad(x64):
  """Against central differences of SciPy's logpdf in x, a and b (inside and in a tail)."""
  grad = jaxon.jit(jaxon.vmap(jaxon.grad(stats.truncnorm.logpdf, argnums=(0, 1, 2))))
  args = [np.array([0.3, 8.6]), np.array([-1.0, 8.0]), np.array([1.5, 10.0])]
  actual = np.stack(grad(*args))
  step = 1e-6
  for i in range(3):
    up, down = [a.copy() for a in args], [a.copy() for a in args]
    up[i] += step
    down[i] -= step
    expected = (osp_stats.truncnorm.logpdf(*up) - osp_stats.truncnorm.logpdf(*down)) / (2 * step)
    np.testing.assert_allclose(actual[i], expected, rtol=1e-5, atol=1e-8,
                               err_msg=f"argument {i}")


def test_vmap_and_jit_agree_with_eager():
  """vmap over a batch of shape parameters equals a loop; jit equals eager."""
  x = jnp.linspace(0.1, 3.0, 5)
  shapes = np.array([0.6, 1.5, 3.0], np.float32)

  def several(a):
    return (stats.cauchy.logpdf(x, 0, a) + stats.pareto.logsf(x + 1, a)
            + stats.laplace.cdf(x, 0, a))
  jitted = jaxon.jit(several)
  looped = np.stack([jitted(a) for a in shapes])
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(several))(shapes), looped, rtol=1e-5)
  np.testing.assert_allclose(stats.cauchy.logsf(x, shapes[1]),
                             jaxon.jit(stats.cauchy.logsf)(x, shapes[1]), rtol=1e-6)
