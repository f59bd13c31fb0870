"""jaxon.nn against NumPy/SciPy formulas (eager and jit, float32 and float64), derivatives
to order 2 by finite differences away from the kinks, JAX's derivatives at the kinks,
numerical stability of softmax in value and gradient, and vmap against a loop."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from jaxon import nn
from tests.transform_util import check_vmap
from tests.util import check_grads

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _elu(x, alpha=1.0):
  return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


# (name, jaxon function, NumPy reference, differentiable away from kinks)
CASES = [
    ("relu", nn.relu, lambda x: np.maximum(x, 0)),
    ("relu6", nn.relu6, lambda x: np.clip(x, 0, 6)),
    ("sigmoid", nn.sigmoid, osp.expit),
    ("softplus", nn.softplus, lambda x: np.logaddexp(x, 0)),
    ("soft_sign", nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    ("silu", nn.silu, lambda x: x * osp.expit(x)),
    ("swish", nn.swish, lambda x: x * osp.expit(x)),
    ("gelu_tanh", nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("gelu_exact", lambda x: nn.gelu(x, approximate=False),
     lambda x: 0.5 * x * (1 + osp.erf(x / np.sqrt(2)))),
    ("elu", nn.elu, _elu),
    ("elu_alpha", lambda x: nn.elu(x, 0.5), lambda x: _elu(x, 0.5)),
    ("celu", lambda x: nn.celu(x, 2.0),
     lambda x: np.maximum(x, 0) + 2.0 * np.expm1(np.minimum(x, 0) / 2.0)),
    ("selu", nn.selu, lambda x: _SELU_SCALE * _elu(x, _SELU_ALPHA)),
    ("leaky_relu", nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    ("leaky_relu_slope", lambda x: nn.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    ("hard_tanh", nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    ("hard_sigmoid", nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    ("hard_silu", nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("log_sigmoid", nn.log_sigmoid, lambda x: -np.logaddexp(0, -x)),
    ("mish", nn.mish, lambda x: x * np.tanh(np.logaddexp(x, 0))),
    ("squareplus", nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    ("softmax", nn.softmax, lambda x: osp.softmax(x, axis=-1)),
    ("softmax_axis0", lambda x: nn.softmax(x, axis=0), lambda x: osp.softmax(x, axis=0)),
    ("log_softmax", nn.log_softmax, lambda x: osp.log_softmax(x, axis=-1)),
    ("log_softmax_all", lambda x: nn.log_softmax(x, axis=None), osp.log_softmax),
    ("logsumexp", lambda x: nn.logsumexp(x, axis=1), lambda x: osp.logsumexp(x, axis=1)),
    ("glu", nn.glu, lambda x: x[..., :2] * osp.expit(x[..., 2:])),
    ("standardize", nn.standardize,
     lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)),
]
IDS = [c[0] for c in CASES]
# Points away from every kink (0, ±1, ±3, 6): finite differences straddle none of them.
POINTS = np.array([[-7.3, -2.2, -0.6, 0.4], [1.7, 2.6, 4.1, 7.9], [-4.4, -1.4, 0.7, 5.2]])


@pytest.mark.parametrize("name,fn,np_fn", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy(request, name, fn, np_fn, dtype):
  if dtype == np.float64:
    request.getfixturevalue("x64")
  x = POINTS.astype(dtype)
  expected = np_fn(x.astype(np.float64))
  rtol = 2e-6 if dtype == np.float32 else 1e-12
  modes = (("eager", fn), ("jit", jaxon.jit(fn)))
  for mode, f in modes if dtype == np.float32 else modes[1:]:  # eager: one precision
    out = f(x)
    assert out.dtype == dtype, f"{name} ({mode}): dtype {out.dtype}"
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol,
                               err_msg=f"{name} {np.dtype(dtype).name} ({mode})")


# Aliases and parameter variants of a function checked here already are left out.
GRAD_CASES = [c for c in CASES if c[0] not in (
    "swish", "elu_alpha", "leaky_relu_slope", "softmax_axis0", "log_softmax_all")]


@pytest.mark.parametrize("name,fn,np_fn", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grads(x64, name, fn, np_fn):
  check_grads(fn, (POINTS[:2],), order=2, rtol=1e-5, atol=1e-7)


VMAP_CASES = [c for c in CASES if c[0] in ("relu", "gelu_exact", "softmax_axis0", "glu",
                                            "standardize")]


@pytest.mark.parametrize("name,fn,np_fn", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap(name, fn, np_fn):
  check_vmap(fn, (POINTS.astype(np.float32),), axes=(0, -1))


# ----------------------------------------------------------------------------- kinks

@pytest.mark.parametrize("fn,points,expected", [
    (nn.relu, [0.0, -1.0, 2.0], [0.0, 0.0, 1.0]),
    (nn.relu6, [0.0, 6.0, 3.0, 7.0], [0.0, 0.0, 1.0, 0.0]),
    (nn.hard_tanh, [0.0, 2.0, -2.0], [1.0, 0.0, 0.0]),
    (nn.leaky_relu, [0.0, -1.0], [1.0, 0.01]),
    (nn.elu, [0.0, -1.0], [np.exp(0.0), np.exp(-1.0)]),
    (nn.celu, [0.0], [1.0]),
], ids=["relu", "relu6", "hard_tanh", "leaky_relu", "elu", "celu"])
def test_derivatives_at_kinks_match_jax(fn, points, expected):
  grads = jaxon.vmap(jaxon.grad(fn))(np.float32(points))
  np.testing.assert_allclose(grads, expected, rtol=1e-6)


def test_nan_and_integer_inputs():
  assert np.isnan(nn.relu(np.float32(np.nan)))
  assert np.isnan(nn.relu6(np.float32(np.nan)))
  out = nn.relu(np.array([-2, 0, 3], np.int32))
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, [0, 0, 3])
  assert nn.sigmoid(np.array([0, 1])).dtype == np.float32
  np.testing.assert_allclose(nn.relu(-1.5), 0.0)


# ----------------------------------------------------------------------------- softmax

def test_softmax_is_stable_in_value_and_gradient():
  x = np.array([[1000.0, 1000.0, -1000.0], [-1e4, 0.0, 1e4]], np.float32)
  np.testing.assert_allclose(nn.softmax(x), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
  np.testing.assert_allclose(nn.log_softmax(x)[0],
                             [-np.log(2), -np.log(2), -2000.0 - np.log(2)], rtol=1e-6)
  for f in (nn.softmax, nn.log_softmax):
    def loss(x, f=f):
      return jnp.sum(f(x)[:, 0] * 3.0 + f(x)[:, 1])
    g = jaxon.grad(loss)(x)
    assert np.all(np.isfinite(g)), (f.__name__, g)
  g = jaxon.grad(lambda x: nn.log_softmax(x)[0, 0])(x)
  np.testing.assert_allclose(g[0], [0.5, -0.5, 0.0], atol=1e-6)
  np.testing.assert_array_equal(g[1], 0.0)


def test_softmax_with_infinities_and_where():
  x = np.array([[0.0, -np.inf, np.log(3.0)], [-np.inf, -np.inf, 1.0]], np.float32)
  np.testing.assert_allclose(nn.softmax(x), [[0.25, 0.0, 0.75], [0.0, 0.0, 1.0]], rtol=1e-6)
  mask = np.array([[True, False, True], [True, True, False]])
  y = np.array([[0.0, 50.0, np.log(3.0)], [1.0, 1.0, 9.0]], np.float32)
  np.testing.assert_allclose(nn.softmax(y, where=mask), [[0.25, 0.0, 0.75], [0.5, 0.5, 0.0]],
                             rtol=1e-6)
  out = np.asarray(nn.log_softmax(y, where=mask))
  np.testing.assert_allclose(out[mask], np.log([0.25, 0.75, 0.5, 0.5]), rtol=1e-6)
  assert np.all(np.isneginf(out[~mask]))
  g = jaxon.grad(lambda y: jnp.sum(nn.softmax(y, where=mask) * np.arange(3.0)))(y)
  assert np.all(np.isfinite(g))
  np.testing.assert_array_equal(np.asarray(g)[~mask], 0.0)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_softmax_random_axes(shape, data):
  ndim = len(shape)
  axis = data.draw(st.one_of(st.integers(-ndim, ndim - 1),
                             st.permutations(range(ndim)).map(lambda p: tuple(p[:2]))))
  x = (np.random.RandomState(ndim).standard_normal(shape) * 20).astype(np.float32)
  out = jaxon.jit(lambda x: (nn.softmax(x, axis), nn.log_softmax(x, axis)))(x)
  np.testing.assert_allclose(out[0], osp.softmax(x.astype(np.float64), axis), atol=1e-6)
  np.testing.assert_allclose(out[1], osp.log_softmax(x.astype(np.float64), axis), rtol=1e-5,
                             atol=1e-5)


# ----------------------------------------------------------------------------- one_hot, etc.

@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
  x = np.array([[0, 2, 5], [1, -1, 3]], np.int32)
  expected = np.moveaxis(np.eye(4, dtype=np.float32)[np.clip(x, 0, 3)] *
                         ((x >= 0) & (x < 4))[..., None], -1, axis)
  for out in (nn.one_hot(x, 4, axis=axis), jaxon.jit(lambda x: nn.one_hot(x, 4, axis=axis))(x)):
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)
  assert nn.one_hot(x, 4, dtype=jnp.int32).dtype == np.int32
  np.testing.assert_array_equal(jaxon.vmap(lambda r: nn.one_hot(r, 4))(x),
                                np.stack([nn.one_hot(r, 4) for r in x]))


def test_one_hot_needs_static_num_classes():
  with pytest.raises(jaxon.ConcretizationTypeError, match="num_classes"):
    jaxon.jit(lambda n: nn.one_hot(np.array([1]), n))(3)


def test_standardize_options():
  x = POINTS.astype(np.float32)
  out = nn.standardize(x, axis=0, mean=1.0, variance=4.0, epsilon=0.0)
  np.testing.assert_allclose(out, (x - 1.0) / 2.0, rtol=1e-6)
  mask = np.array([True, True, False, True])
  out = np.asarray(nn.standardize(x, where=mask))
  kept = x[:, mask]
  expected = (kept - kept.mean(-1, keepdims=True)) / np.sqrt(kept.var(-1, keepdims=True) + 1e-5)
  np.testing.assert_allclose(out[:, mask], expected, rtol=1e-4)


def test_glu_needs_even_axis():
  with pytest.raises(ValueError, match="even size"):
    nn.glu(np.ones((2, 3), np.float32))
