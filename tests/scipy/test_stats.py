"""jaxon.scipy.stats.norm against scipy.stats.norm: values eagerly and under jit with
broadcasting loc and scale (float32 and float64), tails, derivatives to order 2 in every
argument, and vmap against a loop."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as osp_stats

import jaxon
from jaxon.scipy.stats import norm
from tests.transform_util import check_vmap
from tests.util import check_grads

FUNCTIONS = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]
_PROBABILITY = {"ppf", "isf"}


def _args(name, dtype, seed=0):
  """(x or q, loc, scale) with shapes (3, 1), (4,), () — they broadcast to (3, 4)."""
  rng = np.random.RandomState(seed)
  first = rng.uniform(0.02, 0.98, (3, 1)) if name in _PROBABILITY else rng.uniform(-4, 4, (3, 1))
  return [first.astype(dtype), rng.uniform(-1, 1, 4).astype(dtype),
          np.asarray(rng.uniform(0.5, 2), dtype)]


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_scipy(request, name, dtype):
  if dtype == np.float64:
    request.getfixturevalue("x64")
  args = _args(name, dtype)
  expected = getattr(osp_stats.norm, name)(*[a.astype(np.float64) for a in args])
  rtol = 1e-5 if dtype == np.float32 else 1e-11
  fn = getattr(norm, name)
  modes = (("eager", fn), ("jit", jaxon.jit(fn))) if dtype == np.float32 else (
      ("jit", jaxon.jit(fn)),)
  for mode, f in modes:
    out = f(*args)
    assert out.dtype == dtype and out.shape == (3, 4), (name, mode, out.dtype, out.shape)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol * 1e-2,
                               err_msg=f"norm.{name} {np.dtype(dtype).name} ({mode})")


def test_defaults_and_scalars():
  np.testing.assert_allclose(norm.cdf(1.5), osp_stats.norm.cdf(1.5), rtol=1e-6)
  np.testing.assert_allclose(norm.ppf(np.float32(0.3), 2), osp_stats.norm.ppf(0.3, 2),
                             rtol=1e-6)
  np.testing.assert_allclose(norm.pdf(np.arange(3), scale=2.0),
                             osp_stats.norm.pdf(np.arange(3), scale=2.0), rtol=1e-6)
  assert norm.logpdf(np.arange(3)).dtype == np.float32


def test_tails(x64):
  x = np.array([-40.0, -12.0, 12.0, 40.0])
  for name in ("logcdf", "logsf"):
    np.testing.assert_allclose(getattr(norm, name)(x), getattr(osp_stats.norm, name)(x),
                               rtol=1e-10, err_msg=name)
  np.testing.assert_allclose(norm.sf(x), osp_stats.norm.sf(x), rtol=1e-10)
  q = np.array([1e-300, 1e-20, 0.5, 1 - 1e-12])
  np.testing.assert_allclose(norm.ppf(q, 1.0, 3.0), osp_stats.norm.ppf(q, 1.0, 3.0),
                             rtol=1e-9)
  np.testing.assert_allclose(norm.isf(q, 1.0, 3.0), osp_stats.norm.isf(q, 1.0, 3.0),
                             rtol=1e-9)
  out = np.asarray(norm.ppf(np.array([0.0, 1.0, -0.1])))
  assert out[0] == -np.inf and out[1] == np.inf and np.isnan(out[2])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_grads(x64, name):
  """In x (or q), loc and scale at once, to order 2."""
  args = [a.ravel()[:2].astype(np.float64) if a.ndim else a.astype(np.float64)
          for a in _args(name, np.float64, seed=1)]
  args[0] = args[0][:1]
  check_grads(getattr(norm, name), args, order=2, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["logpdf", "cdf", "logsf"])
def test_vmap(name):
  args = _args(name, np.float32, seed=2)
  check_vmap(getattr(norm, name), [args[0][:, 0], args[1][:3], np.full(3, args[2])],
             axes=(0,))
