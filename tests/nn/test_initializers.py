"""jaxon.nn.initializers: shapes and dtypes, the fan computation against hand-computed fans,
variances of the variance-scaling family against scale / fan, exact agreement with the
jaxon.random draws they are defined by, orthogonality, and use under jit and vmap."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import random
from jaxon._src.nn.initializers import _compute_fans
from jaxon.nn import initializers as init

KEY = random.PRNGKey(0)


def test_importable_as_attribute():
  assert jaxon.nn.initializers is init
  assert init.xavier_uniform is init.glorot_uniform
  assert init.kaiming_normal is init.he_normal


def test_constant_initializers():
  np.testing.assert_array_equal(init.zeros(KEY, (2, 3)), np.zeros((2, 3), np.float32))
  np.testing.assert_array_equal(init.ones(KEY, (4,), jnp.int32), np.ones(4, np.int32))
  out = init.constant(-7.)(KEY, (2,))
  np.testing.assert_array_equal(out, [-7., -7.])
  assert out.dtype == np.float32
  assert init.constant(3, jnp.int32)(KEY, (2,)).dtype == np.int32


def test_simple_distributions_are_scaled_draws():
  shape = (3, 5)
  np.testing.assert_array_equal(init.uniform(10.)(KEY, shape),
                                np.asarray(random.uniform(KEY, shape)) * np.float32(10))
  np.testing.assert_array_equal(init.normal(5.)(KEY, shape),
                                np.asarray(random.normal(KEY, shape)) * np.float32(5))
  np.testing.assert_array_equal(
      init.truncated_normal(5.)(KEY, shape),
      np.asarray(random.truncated_normal(KEY, -2., 2., shape)) * np.float32(5))


@pytest.mark.parametrize("shape,in_axis,out_axis,batch_axis,fans", [
    ((64, 32), -2, -1, (), (64, 32)),
    ((3, 3, 16, 32), -2, -1, (), (9 * 16, 9 * 32)),  # HWIO convolution kernel
    ((5, 3, 3, 16, 32), -2, -1, 0, (9 * 16, 9 * 32)),  # a batch of kernels
    ((4, 6, 8), (0, 1), -1, (), (24, 8)),
    ((4, 6, 8), 0, (1, 2), (), (4, 48)),
])
def test_compute_fans(shape, in_axis, out_axis, batch_axis, fans):
  assert _compute_fans(shape, in_axis, out_axis, batch_axis) == fans


def test_compute_fans_needs_two_dimensions():
  with pytest.raises(ValueError, match="at least 2D"):
    init.glorot_uniform()(KEY, (5,))


@pytest.mark.parametrize("name,scale,fan", [
    ("glorot_uniform", 1.0, "avg"), ("glorot_normal", 1.0, "avg"),
    ("lecun_uniform", 1.0, "in"), ("lecun_normal", 1.0, "in"),
    ("he_uniform", 2.0, "in"), ("he_normal", 2.0, "in"),
])
def test_presets_variance(name, scale, fan):
  shape = (3, 3, 40, 60)  # fans 360 and 540
  fans = {"in": 360, "avg": 450}
  w = getattr(init, name)()(KEY, shape)
  assert w.shape == shape and w.dtype == np.float32
  w = np.asarray(w, np.float64)
  expected = scale / fans[fan]
  # Four standard errors of a sample variance (kurtosis below 3 for these distributions).
  assert abs(w.var() - expected) < 4 * expected * math.sqrt(2 / w.size)
  if name.endswith("uniform"):
    assert np.abs(w).max() <= math.sqrt(3 * expected)
  else:  # truncated at two (corrected) standard deviations
    assert np.abs(w).max() <= 2 * math.sqrt(expected) / .87962566103423978


@pytest.mark.parametrize("mode,denominator", [("fan_in", 20), ("fan_out", 30),
                                              ("fan_avg", 25), ("fan_geo_avg", math.sqrt(600))])
def test_variance_scaling_modes_are_exact_draws(mode, denominator):
  shape = (20, 30)
  variance = np.float32(3.0 / denominator)
  w = init.variance_scaling(3.0, mode, "normal")(KEY, shape)
  np.testing.assert_allclose(w, np.asarray(random.normal(KEY, shape)) * np.sqrt(variance),
                             rtol=1e-6)
  u = init.variance_scaling(3.0, mode, "uniform")(KEY, shape)
  np.testing.assert_allclose(u, np.asarray(random.uniform(KEY, shape, minval=-1.))
                             * np.sqrt(3 * variance), rtol=1e-6)


@pytest.mark.parametrize("distribution", ["normal", "uniform", "truncated_normal"])
def test_variance_scaling_complex(distribution):
  w = np.asarray(init.variance_scaling(1.0, "fan_in", distribution, dtype=jnp.complex64)(
      KEY, (100, 200)))
  assert w.dtype == np.complex64
  expected = 1 / 100
  assert abs(np.mean(np.abs(w) ** 2) - expected) < 0.05 * expected


def test_variance_scaling_bad_arguments():
  with pytest.raises(ValueError, match="invalid mode"):
    init.variance_scaling(1.0, "fan_sum", "normal")
  with pytest.raises(ValueError, match="invalid distribution"):
    init.variance_scaling(1.0, "fan_in", "cauchy")


@pytest.mark.parametrize("shape,column_axis", [((5, 3), -1), ((3, 5), -1), ((2, 3, 6), -1),
                                               ((4, 2, 3), 0)])
def test_orthogonal(shape, column_axis):
  w = np.asarray(init.orthogonal(scale=2.0, column_axis=column_axis)(KEY, shape), np.float64)
  assert w.shape == shape
  n_cols = shape[column_axis]
  m = np.moveaxis(w, column_axis, -1).reshape(-1, n_cols) / 2.0
  if m.shape[0] >= n_cols:
    np.testing.assert_allclose(m.T @ m, np.eye(n_cols), atol=1e-5)
  else:
    np.testing.assert_allclose(m @ m.T, np.eye(m.shape[0]), atol=1e-5)


def test_delta_orthogonal():
  w = np.asarray(init.delta_orthogonal()(KEY, (3, 3, 4, 6)), np.float64)
  center = w[1, 1]
  np.testing.assert_allclose(center @ center.T, np.eye(4), atol=1e-5)
  w[1, 1] = 0
  assert not w.any()
  with pytest.raises(ValueError, match="3D, 4D or 5D"):
    init.delta_orthogonal()(KEY, (4, 6))
  with pytest.raises(ValueError, match="fan_in"):
    init.delta_orthogonal()(KEY, (3, 6, 4))


def test_x64_default_dtype(x64):
  assert init.glorot_normal()(KEY, (4, 5)).dtype == np.float64
  assert init.normal()(KEY, (3,)).dtype == np.float64
  assert init.he_uniform(dtype=jnp.float32)(KEY, (4, 5)).dtype == np.float32


def test_under_jit_and_vmap():
  f = init.he_normal()
  keys = random.split(KEY, 3)
  np.testing.assert_array_equal(jaxon.jit(lambda k: f(k, (4, 5)))(KEY), f(KEY, (4, 5)))
  batched = jaxon.vmap(lambda k: f(k, (4, 5)))(keys)
  np.testing.assert_array_equal(batched, np.stack([np.asarray(f(k, (4, 5))) for k in keys]))
