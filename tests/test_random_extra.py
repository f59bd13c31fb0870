"""jaxon.random's samplers that transform one or two draws (lognormal, pareto, rayleigh,
triangular, wald, weibull_min, geometric).

* The draws: each sampler against a NumPy transform of jaxon's own uniform / normal /
  exponential draws from the same key (those are checked bit-exactly in test_random.py),
  so the key use and the transform are JAX's.
* Shapes, dtypes (x64 too), eager == jit, vmap over keys == stacking.
* Statistics: Kolmogorov-Smirnov tests against scipy.stats (a chi-square test for the
  discrete geometric), with parameters broadcast across rows.
* Bad arguments, and derivatives through the parameters.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ost

import jaxon
from jaxon import random
from tests.util import check_grads

KEY = random.PRNGKey(1234)

# name -> (sampler(key, shape, dtype) with fixed parameters, the scipy distribution,
#          NumPy transform of the base draws `draws(key, shape, dtype)` from the same key)
SAMPLERS = {
    "lognormal": (lambda k, s, d: random.lognormal(k, 0.7, s, d), ost.lognorm(0.7)),
    "pareto": (lambda k, s, d: random.pareto(k, 3.0, s, d), ost.pareto(3.0)),
    "rayleigh": (lambda k, s, d: random.rayleigh(k, 2.0, s, d), ost.rayleigh(scale=2.0)),
    "triangular": (lambda k, s, d: random.triangular(k, -1.0, 0.5, 2.0, s, d),
                   ost.triang(0.5, loc=-1.0, scale=3.0)),
    "wald": (lambda k, s, d: random.wald(k, 1.5, s, d), ost.invgauss(1.5)),
    "weibull_min": (lambda k, s, d: random.weibull_min(k, 2.0, 1.5, s, d),
                    ost.weibull_min(1.5, scale=2.0)),
}
NAMES = list(SAMPLERS)


def _triangular(u, left, mode, right):
  width = right - left
  rising = left + np.sqrt(u * width * (mode - left))
  falling = right - np.sqrt((1 - u) * width * (right - mode))
  return np.where(u < (mode - left) / width, rising, falling)


def _wald(key, shape, dtype, mean):
  normal_key, uniform_key = random.split(key)
  y = np.float64(random.normal(normal_key, shape, dtype)) ** 2
  z = np.float64(random.uniform(uniform_key, shape, dtype))
  x = mean + mean ** 2 * y / 2 - mean / 2 * np.sqrt(4 * mean * y + mean ** 2 * y ** 2)
  return np.where(z <= mean / (mean + x), x, mean ** 2 / x)


def _f64(sampler, key, shape, dtype):
  return np.asarray(sampler(key, shape, dtype), np.float64)


# The same transforms in NumPy (float64), of jaxon's base draws from the same key.
ORACLES = {
    "lognormal": lambda k, s, d: np.exp(0.7 * _f64(random.normal, k, s, d)),
    "pareto": lambda k, s, d: np.exp(_f64(random.exponential, k, s, d) / 3.0),
    "rayleigh": lambda k, s, d: 2.0 * np.sqrt(-2 * np.log(_f64(random.uniform, k, s, d))),
    "triangular": lambda k, s, d: _triangular(_f64(random.uniform, k, s, d), -1.0, 0.5, 2.0),
    "wald": lambda k, s, d: _wald(k, s, d, 1.5),
    "weibull_min": lambda k, s, d: 2.0 * (-np.log1p(-_f64(random.uniform, k, s, d))) ** (
        1 / 1.5),
}


@pytest.mark.parametrize("name", NAMES)
def test_draws_are_jax_transforms_of_the_base_draws(name):
  sampler, _ = SAMPLERS[name]
  out = sampler(KEY, (500,), np.float32)
  np.testing.assert_allclose(out, ORACLES[name](KEY, (500,), np.float32), rtol=2e-5,
                             err_msg=name)


def test_geometric_is_the_inverse_cdf_of_the_uniform_draw():
  p = np.float32(0.3)
  out = np.asarray(random.geometric(KEY, p, (2000,)))
  u = np.asarray(random.uniform(KEY, (2000,), np.float32))
  expected = np.floor(np.log(u) / np.log1p(-p)) + 1
  # float32 rounding of the quotient may differ by one right at an integer.
  assert np.mean(out == expected) > 0.999
  np.testing.assert_array_less(np.abs(out - expected), 1.5)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_dtypes_jit_and_vmap(name):
  sampler, _ = SAMPLERS[name]
  for shape in ((), (3,), (2, 3)):
    out = sampler(KEY, shape, float)
    assert out.shape == shape and out.dtype == np.float32, (name, shape)
  jitted = jaxon.jit(lambda k: sampler(k, (2, 3), np.float32))(KEY)
  # Not bit-exact: with the parameters as constants XLA fuses (and may contract into FMAs)
  # differently, and wald's cancellation magnifies that rounding.
  np.testing.assert_allclose(jitted, sampler(KEY, (2, 3), np.float32), rtol=1e-5,
                             err_msg=name)
  keys = random.split(KEY, 3)
  batched = jaxon.vmap(lambda k: sampler(k, (4,), np.float32))(keys)
  np.testing.assert_array_equal(batched, np.stack([sampler(k, (4,), np.float32) for k in keys]),
                                err_msg=name)


@pytest.mark.parametrize("name", NAMES)
def test_float64(x64, name):
  sampler, _ = SAMPLERS[name]
  for dtype in (float, np.float64):
    out = sampler(KEY, (300,), dtype)
    assert out.dtype == np.float64, (name, dtype)
  np.testing.assert_allclose(out, ORACLES[name](KEY, (300,), np.float64), rtol=1e-12,
                             err_msg=name)


@pytest.mark.parametrize("name", NAMES)
def test_kolmogorov_smirnov(name):
  sampler, dist = SAMPLERS[name]
  samples = np.asarray(sampler(random.PRNGKey(7), (4000,), np.float32), np.float64)
  assert ost.kstest(samples, dist.cdf).pvalue > 1e-3, name


# One parameter per row, broadcast along the samples: (sampler, scipy distribution per row).
ROWS = np.array([[0.5], [1.0], [2.5]], np.float32)
BROADCAST = {
    "lognormal": (lambda k, s: random.lognormal(k, ROWS, s), lambda r: ost.lognorm(r)),
    "pareto": (lambda k, s: random.pareto(k, ROWS, s), ost.pareto),
    "rayleigh": (lambda k, s: random.rayleigh(k, ROWS, s), lambda r: ost.rayleigh(scale=r)),
    "triangular": (lambda k, s: random.triangular(k, -ROWS, ROWS - 0.5, 2 * ROWS, s),
                   lambda r: ost.triang((2 * r - 0.5) / (3 * r), loc=-r, scale=3 * r)),
    "wald": (lambda k, s: random.wald(k, ROWS, s), ost.invgauss),
    "weibull_min": (lambda k, s: random.weibull_min(k, 1.0, ROWS, s),
                    lambda r: ost.weibull_min(r)),
}


@pytest.mark.parametrize("name", NAMES)
def test_kolmogorov_smirnov_with_broadcast_parameters(name):
  sampler, dist = BROADCAST[name]
  samples = np.asarray(sampler(random.PRNGKey(3), (3, 2000)), np.float64)
  assert samples.shape == (3, 2000)
  for row, r in zip(samples, ROWS[:, 0]):
    assert ost.kstest(row, dist(float(r)).cdf).pvalue > 1e-3, (name, r)


def test_default_shapes_follow_the_parameters():
  assert random.lognormal(KEY).shape == ()
  assert random.lognormal(KEY, ROWS).shape == (3, 1)
  assert random.pareto(KEY, ROWS[:, 0]).shape == (3,)
  assert random.rayleigh(KEY, ROWS).shape == (3, 1)
  assert random.triangular(KEY, 0.0, ROWS[:, 0], 4.0).shape == (3,)
  assert random.wald(KEY, ROWS).shape == (3, 1)
  assert random.geometric(KEY, ROWS).shape == (3, 1)
  # weibull_min's parameters broadcast with `shape`, as in JAX.
  assert random.weibull_min(KEY, ROWS, 1.0, (4,)).shape == (3, 4)
  assert random.weibull_min(KEY, 1.0, 1.0).shape == ()


# ----------------------------------------------------------------------------- geometric

@pytest.mark.parametrize("p", [0.1, 0.5, 0.85])
def test_geometric_frequencies(p):
  n = 4000
  samples = np.asarray(random.geometric(random.PRNGKey(5), p, (n,)))
  assert samples.min() >= 1
  dist = ost.geom(p)
  top = int(dist.ppf(0.99))  # the last bin holds the tail
  observed = np.array([np.sum(samples == k) for k in range(1, top)] + [np.sum(samples >= top)])
  expected = n * np.append(dist.pmf(np.arange(1, top)), dist.sf(top - 1))
  assert ost.chisquare(observed, expected).pvalue > 1e-3, p


def test_geometric_dtypes_jit_and_vmap(request):
  p = np.array([0.2, 0.6], np.float32)
  out = random.geometric(KEY, p, (3, 2))
  assert out.shape == (3, 2) and out.dtype == np.int32
  assert random.geometric(KEY, 0.5, (4,), np.int8).dtype == np.int8
  np.testing.assert_array_equal(jaxon.jit(lambda k: random.geometric(k, p, (3, 2)))(KEY), out)
  keys = random.split(KEY, 3)
  np.testing.assert_array_equal(
      jaxon.vmap(lambda k, p: random.geometric(k, p, (5,)))(keys, np.float32([0.1, 0.5, 0.9])),
      np.stack([random.geometric(k, q, (5,)) for k, q in zip(keys, [0.1, 0.5, 0.9])]))
  request.getfixturevalue("x64")
  assert random.geometric(KEY, 0.5, (4,)).dtype == np.int64


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call,error,match", [
    (lambda: random.lognormal(KEY, 1.0, (3,), np.int32), ValueError, "must be a float dtype"),
    (lambda: random.weibull_min(KEY, 1.0, 1.0, (3,), int), ValueError, "float dtype"),
    (lambda: random.geometric(KEY, 0.5, (3,), np.float32), ValueError, "must be an int dtype"),
    (lambda: random.pareto(KEY, np.ones(3), (2,)), ValueError, "broadcast-compatible"),
    (lambda: random.triangular(KEY, 0.0, np.ones((2, 1)), 1.0, (3,)), ValueError,
     "broadcast-compatible"),
    (lambda: random.wald(KEY, np.ones(4), (2, 3)), ValueError, "broadcast-compatible"),
    (lambda: random.geometric(KEY, np.full(3, 0.5), (2,)), ValueError, "broadcast-compatible"),
    (lambda: random.rayleigh(np.ones(2, np.float32), 1.0), TypeError, "PRNG key"),
    (lambda: random.rayleigh(random.split(KEY), 1.0), ValueError, "single key"),
    (lambda: random.lognormal(KEY, 1.0, (-1,)), ValueError, "non-negative"),
], ids=["lognormal_int_dtype", "weibull_int_dtype", "geometric_float_dtype", "pareto_shape",
        "triangular_shape", "wald_shape", "geometric_shape", "not_a_key", "batched_key",
        "negative_shape"])
def test_bad_arguments(call, error, match):
  with pytest.raises(error, match=match):
    call()


# ----------------------------------------------------------------------------- derivatives

@pytest.mark.parametrize("name,fn,params", [
    ("lognormal", lambda s: random.lognormal(KEY, s, (4,), np.float64), (0.7,)),
    ("pareto", lambda b: random.pareto(KEY, b, (4,), np.float64), (3.0,)),
    ("rayleigh", lambda s: random.rayleigh(KEY, s, (4,), np.float64), (2.0,)),
    ("triangular", lambda a, m, b: random.triangular(KEY, a, m, b, (4,), np.float64),
     (-1.0, 0.5, 2.0)),
    ("wald", lambda m: random.wald(KEY, m, (4,), np.float64), (1.5,)),
    ("weibull_min", lambda s, c: random.weibull_min(KEY, s, c, (4,), np.float64), (2.0, 1.5)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_parameter_derivatives(x64, name, fn, params):
  check_grads(fn, tuple(np.float64(p) for p in params), order=2, rtol=1e-5, atol=1e-7)
