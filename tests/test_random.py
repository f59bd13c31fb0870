"""jaxon.random against independent oracles.

* Threefry-2x32 against the Random123 known-answer vectors and a NumPy implementation.
* Both bit layouts (`jax_threefry_partitionable` on and off) of random bits, split and
  fold_in against a NumPy model of JAX's counter layouts, for every bit width.
* The golden values of DESIGN.md and the seed README (JAX's printed numbers).
* uniform bit-exactly from the bits; normal against scipy's erfinv of the same uniforms.
* Every sampler: shape, dtype (x64 too), eager == jit, vmap over keys == stacking, and
  statistics (moments, ranges, frequencies) within tolerances of a few standard errors.
* Derivatives through the parameters JAX differentiates (uniform bounds, shifted normals,
  truncation bounds) and the threefry primitive's rules.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as osp
import scipy.stats as ost

import jaxon
import jaxon.numpy as jnp
from jaxon import random
from jaxon._src import dtypes, prng
from jaxon._src.config import config
from tests.conftest import flag_set
from tests.util import check_grads


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def layout(request):
  """Runs the test in both bit layouts."""
  with flag_set("jax_threefry_partitionable", request.param):
    yield request.param


@pytest.fixture
def original_layout():
  with flag_set("jax_threefry_partitionable", False):
    yield


# ----------------------------------------------------------------------------- NumPy oracle

def _np_threefry(k1, k2, x1, x2):
  """Threefry-2x32 with 20 rounds, written from the Random123 specification."""
  k1, k2, x1, x2 = np.broadcast_arrays(*(np.asarray(v, np.uint64) for v in (k1, k2, x1, x2)))
  mask = np.uint64(0xFFFFFFFF)
  ks = [k1, k2, k1 ^ k2 ^ np.uint64(0x1BD11BDA)]
  rotations = [(13, 15, 26, 6), (17, 29, 16, 24)]
  x = [(x1 + ks[0]) & mask, (x2 + ks[1]) & mask]
  for i in range(5):
    for r in rotations[i % 2]:
      x[0] = (x[0] + x[1]) & mask
      x[1] = (((x[1] << np.uint64(r)) | (x[1] >> np.uint64(32 - r))) & mask) ^ x[0]
    x[0] = (x[0] + ks[(i + 1) % 3]) & mask
    x[1] = (x[1] + ks[(i + 2) % 3] + np.uint64(i + 1)) & mask
  return x[0].astype(np.uint32), x[1].astype(np.uint32)


def _np_hash_original(key, counts):
  """JAX's original layout: counts cut in halves (zero-padded), hashed pairwise, joined."""
  counts = np.asarray(counts, np.uint32).ravel()
  odd = counts.size % 2
  padded = np.concatenate([counts, np.zeros(odd, np.uint32)])
  half = padded.size // 2
  y1, y2 = _np_threefry(key[0], key[1], padded[:half], padded[half:])
  return np.concatenate([y1, y2])[:counts.size]


def _np_bits(key, width, shape, partitionable):
  key = np.asarray(key, np.uint32)
  size = math.prod(shape)
  if partitionable:
    b1, b2 = _np_threefry(key[0], key[1], np.zeros(size), np.arange(size))
    if width == 64:
      out = (b1.astype(np.uint64) << np.uint64(32)) | b2.astype(np.uint64)
    else:
      out = (b1 ^ b2).astype(f"uint{width}")
  else:
    words = _np_hash_original(key, np.arange(-(-width * size // 32)))
    if width == 64:
      out = (words[:size].astype(np.uint64) << np.uint64(32)) | words[size:].astype(np.uint64)
    else:
      out = words.view(f"uint{width}")[:size]  # little-endian pieces of each word
  return out.reshape(shape)


def _np_split(key, num, partitionable):
  key = np.asarray(key, np.uint32)
  if partitionable:
    return np.stack(_np_threefry(key[0], key[1], np.zeros(num), np.arange(num)), axis=1)
  return _np_hash_original(key, np.arange(2 * num)).reshape(num, 2)


def _np_uniform(bits):
  """Floats in [0, 1) from the top 23 bits, as JAX makes them."""
  return ((bits >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)


# ----------------------------------------------------------------------------- threefry

# Known-answer vectors of threefry2x32_20 from the Random123 distribution.
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
]


@pytest.mark.parametrize("key,count,expected", KAT)
def test_threefry_known_answers(key, count, expected):
  words = [jnp.asarray(np.uint32(v)) for v in (*key, *count)]
  for f in (prng.threefry2x32_p.bind, jaxon.jit(prng.threefry2x32_p.bind)):
    assert tuple(int(w) for w in f(*words)) == expected


def test_threefry_matches_numpy_and_broadcasts():
  rng = np.random.RandomState(0)
  k1, k2 = rng.randint(0, 2 ** 32, (2,), dtype=np.uint64).astype(np.uint32)
  x1, x2 = rng.randint(0, 2 ** 32, (2, 4, 3), dtype=np.uint64).astype(np.uint32)
  expected = _np_threefry(k1, k2, x1, x2)
  for f in (prng.threefry2x32_p.bind, jaxon.jit(prng.threefry2x32_p.bind)):
    out = f(jnp.asarray(k1), jnp.asarray(k2), jnp.asarray(x1), jnp.asarray(x2))
    for o, e in zip(out, expected):
      np.testing.assert_array_equal(np.asarray(o), e)
  # Size-1 dimensions broadcast too.
  out = prng.threefry2x32_p.bind(jnp.asarray(k1), jnp.asarray(k2), jnp.asarray(x1[:, :1]),
                                 jnp.asarray(x2[:1]))
  np.testing.assert_array_equal(np.asarray(out[0]), _np_threefry(k1, k2, x1[:, :1],
                                                                 x2[:1])[0])


def test_threefry_rejects_other_dtypes():
  u = jnp.zeros(3, np.uint32)
  with pytest.raises(TypeError, match="count1 must have dtype uint32"):
    prng.threefry2x32_p.bind(u[0], u[0], jnp.zeros(3, np.int32), u)
  with pytest.raises(TypeError, match="incompatible shapes"):
    prng.threefry2x32_p.bind(u[0], u[0], u, jnp.zeros(4, np.uint32))


@pytest.mark.parametrize("in_axes", [(0, 0, None, None), (0, None, 1, 0)])
def test_threefry_vmap(in_axes):
  rng = np.random.RandomState(1)
  size = 3

  def draw(shape):
    return rng.randint(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32)
  base = [(), (), (4,), (4,)]
  args = []
  for shp, ax in zip(base, in_axes):
    if ax is None:
      args.append(draw(shp))
    else:
      full = list(shp)
      full.insert(ax, size)
      args.append(draw(tuple(full)))
  out = jaxon.vmap(prng.threefry2x32_p.bind, in_axes=in_axes)(*map(jnp.asarray, args))
  for i in range(size):
    example = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
    expected = _np_threefry(*example)
    for o, e in zip(out, expected):
      np.testing.assert_array_equal(np.asarray(o)[i], e)


def test_threefry_jvp_is_float0_zero():
  words = [jnp.asarray(np.uint32(v)) for v in (1, 2)] + [jnp.arange(3).astype(np.uint32)] * 2
  tangents = [np.zeros(np.shape(w), dtypes.float0) for w in words]
  outs, touts = jaxon.jvp(lambda *a: prng.threefry2x32_p.bind(*a), words, tangents)
  for t in touts:
    assert np.asarray(t).dtype == dtypes.float0 and np.shape(t) == (3,)


# ----------------------------------------------------------------------------- keys and bits

def test_prng_key_seeds():
  assert np.asarray(random.PRNGKey(0)).tolist() == [0, 0]
  assert np.asarray(random.PRNGKey(42)).dtype == np.uint32
  assert np.asarray(random.PRNGKey(-1)).tolist() == [0, 2 ** 32 - 1]
  assert np.asarray(random.PRNGKey(2 ** 32 + 5)).tolist() == [0, 5]  # wraps to int32 first
  assert np.asarray(random.PRNGKey(np.uint32(2 ** 32 - 1))).tolist() == [0, 2 ** 32 - 1]
  assert np.asarray(random.PRNGKey(np.int8(-2))).tolist() == [0, 2 ** 32 - 2]
  assert np.asarray(jaxon.jit(random.PRNGKey)(7)).tolist() == [0, 7]
  assert np.asarray(random.key_data(random.key(3))).tolist() == [0, 3]
  k = random.PRNGKey(5)
  np.testing.assert_array_equal(random.key_data(k), k)
  wrapped = random.wrap_key_data(np.array([1, 2], np.uint32))
  np.testing.assert_array_equal(random.key_data(wrapped), [1, 2])


def test_prng_key_seeds_x64(x64):
  assert np.asarray(random.PRNGKey(-1)).tolist() == [2 ** 32 - 1, 2 ** 32 - 1]
  assert np.asarray(random.PRNGKey(2 ** 32 + 5)).tolist() == [1, 5]
  assert np.asarray(random.PRNGKey(np.int32(-1))).tolist() == [0, 2 ** 32 - 1]


@pytest.mark.parametrize("width,shape", [(8, (5,)), (8, (2, 3, 3)), (16, (3,)), (16, (2, 3)),
                                         (32, ()), (32, (3, 5))])
def test_bits_match_layout_model(layout, width, shape):
  key = random.PRNGKey(1234)
  dtype = np.dtype(f"uint{width}")
  expected = _np_bits(np.asarray(key), width, shape, layout)
  out = random.bits(key, shape, dtype)
  assert out.dtype == dtype and out.shape == shape
  np.testing.assert_array_equal(np.asarray(out), expected)


def test_bits_64_match_layout_model(layout, x64):
  key = random.PRNGKey(99)
  out = random.bits(key, (3, 2))
  assert out.dtype == np.uint64
  np.testing.assert_array_equal(np.asarray(out), _np_bits(np.asarray(key), 64, (3, 2), layout))


@pytest.mark.parametrize("num", [1, 5])
def test_split_and_fold_in_match_layout_model(layout, num):
  key = random.PRNGKey(17)
  np.testing.assert_array_equal(np.asarray(random.split(key, num)),
                                _np_split(np.asarray(key), num, layout))
  keys = random.split(key, (2, 3))
  assert keys.shape == (2, 3, 2) and keys.dtype == np.uint32
  np.testing.assert_array_equal(np.asarray(keys).reshape(6, 2),
                                _np_split(np.asarray(key), 6, layout))
  # fold_in hashes the counter pair (0, data) in both layouts.
  expected = _np_threefry(0, 17, 0, 2 ** 32 - 3)
  np.testing.assert_array_equal(np.asarray(random.fold_in(key, 2 ** 32 - 3)),
                                np.asarray(expected))


def test_split_of_zero_key_known_values(original_layout):
  # The values printed by JAX's PRNG tutorial.
  assert np.asarray(random.split(random.PRNGKey(0))).tolist() == [
      [4146024105, 967050713], [2718843009, 1272950319]]


# ----------------------------------------------------------------------------- golden values

def test_golden_normal_partitionable():
  assert config.jax_threefry_partitionable  # the default
  out = random.normal(random.PRNGKey(0), (3,))
  np.testing.assert_array_equal(np.asarray(out),
                                np.array([1.6226422, 2.0252647, -0.43359444], np.float32))


def test_golden_normal_original(original_layout):
  key = random.PRNGKey(0)
  np.testing.assert_array_equal(np.asarray(random.normal(key, (3,))),
                                np.array([1.8160863, -0.48262316, 0.33988908], np.float32))
  _, subkey = random.split(key)
  np.testing.assert_array_equal(np.asarray(random.normal(subkey, (3,))),
                                np.array([1.1378784, -1.2209548, -0.59153634], np.float32))


def test_seed_readme_examples(original_layout):
  """The random section of the seed README (JAX 0.1.50, whose erf_inv differed in the last
  bits, so its printed digits agree to about 1e-6)."""
  key = random.PRNGKey(0)
  expected = [1.81608593, -0.48262325, 0.33988902]
  np.testing.assert_allclose(random.normal(key, shape=(3,)), expected, atol=1e-6)
  np.testing.assert_allclose(random.normal(key, shape=(3,)), expected, atol=1e-6)
  key, subkey = random.split(key)
  np.testing.assert_allclose(random.normal(subkey, shape=(3,)),
                             [1.1378783, -1.22095478, -0.59153646], atol=1e-6)
  key, subkey = random.split(key)
  np.testing.assert_allclose(random.normal(subkey, shape=(3,)),
                             [-0.06607265, 0.16676566, 1.17800343], atol=1e-6)
  x = random.normal(random.PRNGKey(0), (50, 50))  # the README's (5000, 5000), smaller
  np.testing.assert_allclose(jnp.dot(x, x.T) / 2, np.dot(np.asarray(x), np.asarray(x).T) / 2,
                             rtol=1e-4, atol=1e-3)


def test_uniform_is_bit_exact_and_normal_is_erfinv(layout):
  key = random.PRNGKey(3)
  bits = _np_bits(np.asarray(key), 32, (1000,), layout)
  u = _np_uniform(bits)
  np.testing.assert_array_equal(np.asarray(random.uniform(key, (1000,))), u)
  np.testing.assert_array_equal(np.asarray(random.uniform(key, (1000,), minval=2., maxval=6.)),
                                np.maximum(np.float32(2), u * np.float32(4) + np.float32(2)))
  lo = np.nextafter(np.float32(-1), np.float32(0))
  u_normal = np.maximum(lo, u * (np.float32(1) - lo) + lo)
  np.testing.assert_allclose(np.asarray(random.normal(key, (1000,))),
                             np.sqrt(2) * osp.erfinv(u_normal.astype(np.float64)),
                             rtol=1e-5, atol=2e-6)  # erfinv is ill-conditioned in the tails


# ----------------------------------------------------------------------------- every sampler

def _samplers(dtype):
  return {
      "uniform": lambda k: random.uniform(k, (4,), dtype, -2., 3.),
      "normal": lambda k: random.normal(k, (2, 3), dtype),
      "truncated_normal": lambda k: random.truncated_normal(k, -1., 2., (4,), dtype),
      "exponential": lambda k: random.exponential(k, (4,), dtype),
      "laplace": lambda k: random.laplace(k, (4,), dtype),
      "logistic": lambda k: random.logistic(k, (4,), dtype),
      "cauchy": lambda k: random.cauchy(k, (4,), dtype),
      "gumbel": lambda k: random.gumbel(k, (4,), dtype),
      "maxwell": lambda k: random.maxwell(k, (4,), dtype),
      "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 1., 2., (4,), dtype),
      "orthogonal": lambda k: random.orthogonal(k, 3, (2,), dtype),
      "multivariate_normal": lambda k: random.multivariate_normal(
          k, jnp.zeros(2, dtype), jnp.eye(2, dtype=dtype), (3,), dtype),
      "bernoulli": lambda k: random.bernoulli(k, jnp.asarray(0.3, dtype), (5,)),
      "rademacher": lambda k: random.rademacher(k, (5,)),
      "randint": lambda k: random.randint(k, (5,), -3, 9),
      "bits": lambda k: random.bits(k, (5,), np.uint8),
      "split": lambda k: random.split(k, 3),
      "fold_in": lambda k: random.fold_in(k, 11),
      "choice": lambda k: random.choice(k, 7, (3,)),
      "choice_noreplace": lambda k: random.choice(k, jnp.arange(14.).reshape(7, 2), (3,),
                                                  replace=False),
      "choice_p": lambda k: random.choice(k, 4, (3,), p=jnp.array([.1, .2, .3, .4], dtype)),
      "choice_p_noreplace": lambda k: random.choice(k, 4, (3,), replace=False,
                                                    p=jnp.array([.1, .2, .3, .4], dtype)),
      "permutation": lambda k: random.permutation(k, 6),
      "permutation_2d": lambda k: random.permutation(k, jnp.arange(12).reshape(3, 4), 1),
      "permutation_independent": lambda k: random.permutation(
          k, jnp.arange(12).reshape(3, 4), 1, independent=True),
      "categorical": lambda k: random.categorical(k, jnp.zeros((2, 5), dtype)),
      "categorical_shape": lambda k: random.categorical(k, jnp.zeros(5, dtype), shape=(3,)),
      "categorical_noreplace": lambda k: random.categorical(k, jnp.zeros((2, 5), dtype),
                                                            shape=(3, 2), replace=False),
  }


_SHAPES = {"normal": (2, 3), "orthogonal": (2, 3, 3), "multivariate_normal": (3, 2),
           "split": (3, 2), "fold_in": (2,), "choice_noreplace": (3, 2), "rademacher": (5,),
           "randint": (5,), "bits": (5,), "bernoulli": (5,), "choice": (3,), "choice_p": (3,),
           "choice_p_noreplace": (3,), "permutation": (6,), "permutation_2d": (3, 4),
           "permutation_independent": (3, 4), "categorical": (2,), "categorical_shape": (3,),
           "categorical_noreplace": (3, 2)}


def _expected_dtype(name, dtype):
  ints = {"rademacher", "randint", "choice", "choice_p", "choice_p_noreplace", "permutation",
          "permutation_2d", "permutation_independent", "categorical", "categorical_shape",
          "categorical_noreplace"}
  if name in ints:
    return dtypes.default_int_dtype()
  return {"bernoulli": np.dtype(bool), "bits": np.dtype(np.uint8), "split": np.dtype(np.uint32),
          "fold_in": np.dtype(np.uint32), "choice_noreplace": np.dtype(dtype)}.get(
              name, np.dtype(dtype))


def _check_samplers(names, dtype):
  """Shape and dtype of each sampler; jit(vmap) over keys of all of them at once (one
  compilation: the file must stay fast) equals each one per key, eagerly."""
  samplers = _samplers(dtype)
  key = random.PRNGKey(7)
  keys = random.split(key, 3)
  batched = jaxon.jit(jaxon.vmap(lambda k: [samplers[n](k) for n in names]))(keys)
  for name, out in zip(names, batched):
    stacked = np.stack([np.asarray(samplers[name](k)) for k in keys])
    assert stacked.shape[1:] == _SHAPES.get(name, (4,)), name
    assert stacked.dtype == _expected_dtype(name, dtype), name
    np.testing.assert_array_equal(np.asarray(out), stacked, err_msg=name)
    if dtypes.is_inexact(stacked.dtype):
      assert not np.array_equal(stacked[0], stacked[1]), name


_NAMES = list(_samplers(np.float32))


@pytest.mark.parametrize("start", range(0, len(_NAMES), 6))
def test_samplers_shape_dtype_jit_vmap(start):
  _check_samplers(_NAMES[start:start + 6], np.float32)


def test_samplers_original_layout(original_layout):
  _check_samplers(["normal", "permutation_2d", "categorical", "choice_p"], np.float32)


def test_samplers_x64(x64):
  _check_samplers(["normal", "randint", "permutation", "truncated_normal"], np.float64)


def test_golden_values_under_jit(layout):
  expected = ([1.6226422, 2.0252647, -0.43359444] if layout else
              [1.8160863, -0.48262316, 0.33988908])
  out = jaxon.jit(lambda k: random.normal(k, (3,)))(random.PRNGKey(0))
  np.testing.assert_array_equal(np.asarray(out), np.array(expected, np.float32))


def test_default_dtypes_follow_x64(x64):
  key = random.PRNGKey(0)
  assert random.uniform(key).dtype == np.float64
  assert random.bits(key).dtype == np.uint64
  assert random.uniform(key, (2,), np.float32).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_uniform_and_normal_half_precision(dtype):
  key = random.PRNGKey(1)
  u = np.asarray(random.uniform(key, (2000,), dtype)).astype(np.float32)
  assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
  assert abs(u.mean() - 0.5) < 0.03
  n = random.normal(key, (2000,), dtype)
  assert n.dtype == np.dtype(dtype)
  assert abs(float(np.asarray(n, np.float32).std()) - 1) < 0.1


def test_complex_normal():
  z = np.asarray(random.normal(random.PRNGKey(2), (20000,), np.complex64))
  assert z.dtype == np.complex64
  assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.05
  assert abs(np.var(z.real) - 0.5) < 0.03 and abs(np.var(z.imag) - 0.5) < 0.03


# ----------------------------------------------------------------------------- statistics

N = 20000


def _close(value, expected, stderr, k=5):
  assert abs(value - expected) < k * stderr, (value, expected, stderr)


def test_continuous_moments():
  key = random.PRNGKey(11)
  u = np.asarray(random.uniform(key, (N,), minval=-1., maxval=3.), np.float64)
  assert -1 <= u.min() and u.max() < 3
  _close(u.mean(), 1, 4 / math.sqrt(12 * N))
  n = np.asarray(random.normal(key, (N,)), np.float64)
  _close(n.mean(), 0, 1 / math.sqrt(N))
  _close(n.var(), 1, math.sqrt(2 / N))
  assert ost.kstest(n, "norm").pvalue > 1e-4
  e = np.asarray(random.exponential(key, (N,)), np.float64)
  assert e.min() >= 0
  _close(e.mean(), 1, 1 / math.sqrt(N))
  lap = np.asarray(random.laplace(key, (N,)), np.float64)
  _close(lap.var(), 2, math.sqrt(20 / N))
  lo = np.asarray(random.logistic(key, (N,)), np.float64)
  _close(lo.var(), math.pi ** 2 / 3, 0.1)
  c = np.asarray(random.cauchy(key, (N,)), np.float64)
  _close(np.median(c), 0, 2 / math.sqrt(N))
  g = np.asarray(random.gumbel(key, (N,)), np.float64)
  _close(g.mean(), np.euler_gamma, 1.3 / math.sqrt(N))
  m = np.asarray(random.maxwell(key, (N,)), np.float64)
  _close(m.mean(), 2 * math.sqrt(2 / math.pi), 0.7 / math.sqrt(N))
  d = np.asarray(random.double_sided_maxwell(key, 1., 2., (N,)), np.float64)
  _close(d.mean(), 1, 2 * math.sqrt(3 / N))
  _close(d.var(), 12, 0.5)
  for name, sample in [("expon", e), ("laplace", lap), ("logistic", lo),
                       ("cauchy", c), ("gumbel_r", g), ("maxwell", m)]:
    assert ost.kstest(sample, name).pvalue > 1e-4, name


def test_truncated_normal_range_and_moments():
  t = np.asarray(random.truncated_normal(random.PRNGKey(4), -0.5, 1.5, (N,)), np.float64)
  assert -0.5 < t.min() and t.max() < 1.5
  ref = ost.truncnorm(-0.5, 1.5)
  _close(t.mean(), ref.mean(), ref.std() / math.sqrt(N))
  assert ost.kstest(t, ref.cdf).pvalue > 1e-4
  bounds = random.truncated_normal(random.PRNGKey(4), jnp.array([-1., 0.]),
                                   jnp.array([0., 1.]), (3, 2))
  b = np.asarray(bounds)
  assert (b[:, 0] < 0).all() and (b[:, 1] > 0).all()


def test_discrete_frequencies():
  key = random.PRNGKey(5)
  b = np.asarray(random.bernoulli(key, 0.3, (N,)))
  _close(b.mean(), 0.3, math.sqrt(0.21 / N))
  pb = np.asarray(random.bernoulli(key, jnp.array([0.1, 0.9]), (N, 2)))
  _close(pb[:, 0].mean(), 0.1, 0.3 / math.sqrt(N))
  _close(pb[:, 1].mean(), 0.9, 0.3 / math.sqrt(N))
  r = np.asarray(random.rademacher(key, (N,)))
  assert set(np.unique(r)) == {-1, 1}
  _close(r.mean(), 0, 1 / math.sqrt(N))
  i = np.asarray(random.randint(key, (N,), -3, 4))
  assert i.min() == -3 and i.max() == 3
  assert ost.chisquare(np.bincount(i + 3)).pvalue > 1e-4
  p = np.array([0.1, 0.2, 0.3, 0.4])
  c = np.asarray(random.choice(key, 4, (N,), p=jnp.asarray(p, np.float32)))
  assert ost.chisquare(np.bincount(c, minlength=4), p * N).pvalue > 1e-4
  logits = np.log(np.array([0.5, 0.25, 0.25]))
  cat = np.asarray(random.categorical(key, jnp.asarray(logits, np.float32), shape=(N,)))
  assert ost.chisquare(np.bincount(cat, minlength=3), np.exp(logits) * N).pvalue > 1e-4


@pytest.mark.parametrize("dtype,lo,hi,span", [(np.uint8, -5, 256, (0, 255)),
                                               (np.int32, -2 ** 31, 2 ** 31 - 1, None)])
def test_randint_clips_bounds_to_dtype(dtype, lo, hi, span):
  x = np.asarray(random.randint(random.PRNGKey(0), (4000,), lo, hi, dtype))
  assert x.dtype == dtype
  if span is not None:
    assert x.min() == span[0] and x.max() == span[1]
  else:
    assert x.min() < -2 ** 29 and x.max() > 2 ** 29


def test_randint_edge_bounds():
  key = random.PRNGKey(0)
  np.testing.assert_array_equal(random.randint(key, (3, 40), 4, 4), np.full((3, 40), 4))
  np.testing.assert_array_equal(random.randint(key, (3, 40), 4, 2), np.full((3, 40), 4))
  x = np.asarray(random.randint(key, (3, 40), jnp.array([0, 10, 20])[:, None],
                                jnp.array([5, 15, 25])[:, None]))
  for row, lo in zip(x, (0, 10, 20)):
    assert lo <= row.min() and row.max() < lo + 5
  f = np.asarray(random.randint(key, (3, 40), 0.0, 3.9))  # float bounds are truncated
  assert f.min() == 0 and f.max() == 2


def test_permutation_choice_are_permutations():
  key = random.PRNGKey(8)
  p = np.asarray(random.permutation(key, 2000))  # two sorting rounds at this size
  assert sorted(p.tolist()) == list(range(2000)) and not (p == np.arange(2000)).all()
  x = np.arange(12).reshape(3, 4)
  rows = np.asarray(random.permutation(key, jnp.asarray(x)))
  assert sorted(map(tuple, rows)) == sorted(map(tuple, x))
  ind = np.asarray(random.permutation(key, jnp.asarray(x), 1, independent=True))
  assert all(sorted(r) == sorted(o) for r, o in zip(ind.tolist(), x.tolist()))
  c = np.asarray(random.choice(key, 10, (10,), replace=False))
  assert sorted(c.tolist()) == list(range(10))
  cp = np.asarray(random.choice(key, 5, (5,), replace=False, p=jnp.ones(5) / 5))
  assert sorted(cp.tolist()) == list(range(5))
  assert random.choice(key, 3, (0,)).shape == (0,)
  with pytest.warns(FutureWarning):
    s = random.shuffle(key, jnp.arange(5))
  assert sorted(np.asarray(s).tolist()) == list(range(5))


def test_categorical_without_replacement_distinct():
  idx = np.asarray(random.categorical(random.PRNGKey(1), jnp.zeros((2, 6)), shape=(6, 2),
                                      replace=False))
  for col in idx.T:
    assert sorted(col.tolist()) == list(range(6))


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_covariance(method):
  cov = np.array([[2.0, 0.6], [0.6, 1.0]])
  mean = np.array([1.0, -2.0])
  x = np.asarray(random.multivariate_normal(random.PRNGKey(3), jnp.asarray(mean, np.float32),
                                            jnp.asarray(cov, np.float32), (N,),
                                            method=method), np.float64)
  np.testing.assert_allclose(x.mean(0), mean, atol=5 * math.sqrt(2 / N))
  np.testing.assert_allclose(np.cov(x.T), cov, atol=0.08)


def test_orthogonal_is_orthogonal():
  key = random.PRNGKey(6)
  q = np.asarray(random.orthogonal(key, 4, (2,)), np.float64)
  for m in q:
    np.testing.assert_allclose(m.T @ m, np.eye(4), atol=1e-5)
  wide = np.asarray(random.orthogonal(key, 2, m=5), np.float64)
  assert wide.shape == (2, 5)
  np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)
  tall = np.asarray(random.orthogonal(key, 5, m=2), np.float64)
  np.testing.assert_allclose(tall.T @ tall, np.eye(2), atol=1e-5)


def test_large_normal_under_jit():
  x = jaxon.jit(lambda k: random.normal(k, (1000, 1000)))(random.PRNGKey(0))
  stats = np.asarray(jnp.array([jnp.mean(x), jnp.std(x)]))
  np.testing.assert_allclose(stats, [0, 1], atol=5e-3)


def test_splits_are_distinct(layout):
  keys = np.asarray(random.split(random.PRNGKey(0), 100))
  assert len({tuple(k) for k in keys}) == 100
  draws = np.asarray(jaxon.vmap(lambda k: random.normal(k, (4,)))(jnp.asarray(keys)))
  assert len({tuple(d) for d in draws}) == 100
  folded = {tuple(np.asarray(random.fold_in(random.PRNGKey(0), i))) for i in range(20)}
  assert len(folded) == 20


# ----------------------------------------------------------------------------- derivatives

def test_grad_uniform_bounds():
  key = random.PRNGKey(0)
  u = np.asarray(random.uniform(key, (5,)), np.float64)
  g_lo, g_hi = jaxon.grad(lambda lo, hi: jnp.sum(random.uniform(key, (5,), minval=lo,
                                                                maxval=hi)),
                          argnums=(0, 1))(-1., 2.)
  np.testing.assert_allclose([g_lo, g_hi], [np.sum(1 - u), np.sum(u)], rtol=1e-5)
  check_grads(lambda lo, hi: random.uniform(key, (3,), minval=lo, maxval=hi), (-1., 2.),
              order=1, modes=("fwd", "rev"))


def test_grad_through_shifted_normal():
  key = random.PRNGKey(1)
  z = np.asarray(random.normal(key, (4,)), np.float64)

  def f(mean, std):
    return jnp.sum((mean + std * random.normal(key, (4,))) ** 2)
  g = jaxon.grad(f, argnums=(0, 1))(0.5, 2.)
  x = 0.5 + 2 * z
  np.testing.assert_allclose(g, [np.sum(2 * x), np.sum(2 * x * z)], rtol=1e-4)
  check_grads(f, (0.5, 2.), order=1, modes=("fwd", "rev"), rtol=2e-2)


def test_grad_truncated_normal_bounds():
  key = random.PRNGKey(2)
  check_grads(lambda lo, hi: random.truncated_normal(key, lo, hi, (3,)), (-0.5, 1.5),
              order=1, modes=("fwd", "rev"), rtol=2e-2, atol=2e-2)


# ----------------------------------------------------------------------------- errors

def test_bad_inputs_raise_clear_errors():
  key = random.PRNGKey(0)
  with pytest.raises(TypeError, match="normal: `key` must be a PRNG key"):
    random.normal(0, (3,))
  with pytest.raises(TypeError, match="key.*f32\\[2\\]"):
    random.normal(jnp.zeros(2), (3,))
  with pytest.raises(ValueError, match="single key.*vmap"):
    random.normal(random.split(key), (3,))
  with pytest.raises(TypeError, match="`shape` must be a sequence of concrete integers"):
    random.normal(key, (2.0,))
  with pytest.raises(TypeError, match="`num`"):
    random.split(key, 1.5)
  with pytest.raises(ValueError, match="dtype argument to `uniform` must be a float"):
    random.uniform(key, (2,), np.int32)
  with pytest.raises(ValueError, match="dtype argument to `normal`"):
    random.normal(key, (2,), np.int32)
  with pytest.raises(ValueError, match="unsigned"):
    random.bits(key, (2,), np.int32)
  with pytest.raises(TypeError, match="integer dtypes"):
    random.randint(key, (2,), 0, 3, np.float32)
  with pytest.raises(TypeError, match="bernoulli probability `p` must have a floating"):
    random.bernoulli(key, 1, (2,))
  with pytest.raises(ValueError, match="uniform parameter shapes"):
    random.uniform(key, (2,), minval=jnp.zeros(3))
  with pytest.raises(ValueError, match=r"`shape` must have non-negative sizes, got \(2, -1\)"):
    random.normal(key, (2, -1))
  with pytest.raises(TypeError, match="normal: `shape` must be a sequence of concrete integers"):
    random.normal(key, (2, 1.5))
  with pytest.raises(ValueError, match="larger sample"):
    random.choice(key, 3, (4,), replace=False)
  with pytest.raises(ValueError, match="p must be None or a 1D vector"):
    random.choice(key, 3, (2,), p=jnp.ones(4) / 4)
  with pytest.raises(TypeError, match="seed must be an integer"):
    random.PRNGKey(1.5)
  with pytest.raises(TypeError, match="seed must be a scalar"):
    random.PRNGKey(np.arange(2))
  with pytest.raises(TypeError, match="fold_in accepts a scalar"):
    random.fold_in(key, np.arange(2))
  with pytest.raises(ValueError, match="`impl`"):
    random.PRNGKey(0, impl="rbg")
  with pytest.raises(ValueError, match="valid mode for gumbel"):
    random.gumbel(key, (2,), mode="mid")
  with pytest.raises(ValueError, match="method must be one of"):
    random.multivariate_normal(key, jnp.zeros(2), jnp.eye(2), method="qr")
