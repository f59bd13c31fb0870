"""pmap on the test process's CPU devices: collectives against NumPy, data-parallel
training against the single-device step, composition with vmap, grad and jit, the result
Arrays, and a long chain of collective programs (no deadlock)."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax, pmap
from jaxon.sharding import NamedSharding

pytestmark = pytest.mark.skipif(jaxon.device_count() < 8, reason="needs 8 devices")


def test_collectives_under_pmap():
  """The values JAX 0.10.2 prints for the examples in its docstrings."""
  x = np.arange(16).reshape(4, 4)
  np.testing.assert_array_equal(np.asarray(pmap(lambda v: lax.psum(v, "i"), "i")(np.arange(4))),
                                [6, 6, 6, 6])
  np.testing.assert_array_equal(
      np.asarray(pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]), "i")(x)),
      [[4, 6, 8, 10], [4, 6, 8, 10], [20, 22, 24, 26], [20, 22, 24, 26]])
  np.testing.assert_array_equal(
      np.asarray(pmap(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 2], [3, 1]]),
                      "i")(x)),
      [[[0, 1, 2, 3], [8, 9, 10, 11]], [[12, 13, 14, 15], [4, 5, 6, 7]]] * 2)
  np.testing.assert_array_equal(
      np.asarray(pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), "i")(x)),
      [[24], [28], [32], [36]])
  np.testing.assert_array_equal(np.asarray(pmap(lambda v: lax.psum_scatter(v, "i"), "i")(x)),
                                [24, 28, 32, 36])
  out = pmap(lambda v: (lax.pmean(v, "i"), lax.pmax(v, "i"), lax.ppermute(v, "i", [(0, 3)]),
                        lax.all_to_all(v, "i", 0, 0), lax.axis_index("i")), "i")(x)
  np.testing.assert_array_equal(np.asarray(out[0]), np.broadcast_to(x.mean(0), x.shape))
  np.testing.assert_array_equal(np.asarray(out[1]), np.broadcast_to(x.max(0), x.shape))
  np.testing.assert_array_equal(np.asarray(out[2]), [[0] * 4] * 3 + [[0, 1, 2, 3]])
  np.testing.assert_array_equal(np.asarray(out[3]), x.T)
  np.testing.assert_array_equal(np.asarray(out[4]), np.arange(4))


def test_result_arrays_and_seed_readme_example():
  """The README's pmap example (smaller matrices), and what its results are."""
  keys = jaxon.random.split(jaxon.random.PRNGKey(0), 8)
  mats = pmap(lambda key: jaxon.random.normal(key, (50, 60)))(keys)
  result = pmap(lambda x: jnp.dot(x, x.T))(mats)
  assert result.shape == (8, 50, 50)
  means = pmap(jnp.mean)(result)  # values JAX 0.10.2 gives for the same program
  np.testing.assert_allclose(np.asarray(means), [1.028758, 1.4524683, 1.0188266, 0.89828515,
                                                 1.364689, 1.3405077, 1.3516976, 1.1153895],
                             rtol=1e-5)

  @partial(pmap, axis_name="i")
  def normalize(x):
    return x / lax.psum(x, "i")
  out = normalize(jnp.arange(4.0))
  assert repr(out) == ("Array([0.        , 0.16666667, 0.33333334, 0.5       ], "
                       "dtype=float32)")
  assert isinstance(out.sharding, NamedSharding)
  assert out.sharding.spec == jaxon.sharding.PartitionSpec("i")  # as JAX's
  assert len(out.addressable_shards) == 4


def _mlp_loss(params, x, y):
  for w, b in params[:-1]:
    x = jnp.tanh(x @ w + b)
  w, b = params[-1]
  return jnp.mean((x @ w + b - y) ** 2)


def test_data_parallel_training_equals_single_device():
  rng = np.random.default_rng(0)
  sizes = [3, 8, 2]
  params = [(rng.normal(size=(m, n)).astype(np.float32) * 0.5, np.zeros(n, np.float32))
            for m, n in zip(sizes[:-1], sizes[1:])]
  x = rng.normal(size=(16, 3)).astype(np.float32)
  y = rng.normal(size=(16, 2)).astype(np.float32)

  @jaxon.jit
  def step(params, x, y):
    g = jaxon.grad(_mlp_loss)(params, x, y)
    return jaxon.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)

  @partial(pmap, axis_name="batch", in_axes=(None, 0, 0))
  def parallel_step(params, x, y):
    g = lax.pmean(jaxon.grad(_mlp_loss)(params, x, y), "batch")
    return jaxon.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)

  single, parallel = params, params
  for _ in range(3):
    single = step(single, x, y)
    replicated = parallel_step(parallel, x.reshape(4, 4, 3), y.reshape(4, 4, 2))
    parallel = jaxon.tree_util.tree_map(lambda p: p[0], replicated)
  for a, b in zip(jaxon.tree_util.tree_leaves(single), jaxon.tree_util.tree_leaves(parallel)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_nesting_and_transformations():
  x = jnp.arange(6.0).reshape(2, 3)
  f = lambda v: lax.psum(v, "i") + lax.psum(v, "j")  # noqa: E731
  np.testing.assert_array_equal(np.asarray(pmap(jaxon.vmap(f, axis_name="j"), "i")(x)),
                                [[6, 8, 10], [15, 17, 19]])
  np.testing.assert_array_equal(np.asarray(jaxon.vmap(pmap(f, "i"), axis_name="j")(
      x.reshape(3, 2))),
                                [[7, 10], [11, 14], [15, 18]])
  # grad outside and inside: psum transposes to psum (JAX's pmap semantics)
  v = jnp.arange(4.0)
  outside = jaxon.grad(lambda v: pmap(lambda y: lax.psum(y ** 2, "i"), "i")(v).sum())(v)
  np.testing.assert_array_equal(np.asarray(outside), [0.0, 8.0, 16.0, 24.0])
  inside = pmap(jaxon.grad(lambda y: lax.psum(y ** 2, "i")), "i")(v)
  np.testing.assert_array_equal(np.asarray(inside), [0.0, 8.0, 16.0, 24.0])
  jitted = jaxon.jit(jaxon.grad(lambda v: pmap(lambda y: lax.psum(y ** 2, "i"), "i")(v).sum()))
  np.testing.assert_array_equal(np.asarray(jitted(v)), [0.0, 8.0, 16.0, 24.0])
  np.testing.assert_array_equal(
      np.asarray(jaxon.jit(pmap(lambda y: lax.pmean(y, "i"), "i"))(v)), [1.5] * 4)


def test_arguments():
  f = pmap(lambda x, n, y: x * n + y, "i", in_axes=(0, None, 1), out_axes=1,
           static_broadcasted_argnums=1)
  x, y = np.arange(4.0), np.arange(8.0).reshape(2, 4)
  np.testing.assert_array_equal(np.asarray(f(x, 3, y)), x * 3 + y)
  with pytest.raises(ValueError, match="requires at least one argument with a mapped axis"):
    pmap(lambda x: x, in_axes=None)(x)
  with pytest.raises(ValueError, match="implies that array axis 0 is partitioned 8 times, "
                                       "but the dimension size is 9"):
    pmap(lambda x: x)(np.arange(9.0))
  with pytest.raises(TypeError, match="pmap in_axes must be an int, None"):
    pmap(lambda x: x, in_axes="a")
  with pytest.raises(ValueError, match="Specified axis_size 3 doesn't match"):
    pmap(lambda x: x, axis_size=3)(x)


@pytest.mark.parametrize("wrap", ["eager", "jit", "donating"])
def test_long_chain_of_collectives_does_not_deadlock(wrap):
  """CPU collectives deadlock with too many programs in flight (facts §8): every program
  over several devices (eager pmap, or a jit holding one) keeps at most 16 unfinished,
  including those whose results the next one takes as donations."""
  f = pmap(lambda v: lax.psum(v, "i") * 0.25, "i", donate_argnums=(0,) if wrap == "donating"
           else ())
  f = jaxon.jit(f) if wrap == "jit" else f
  x = jnp.arange(4.0)
  for _ in range(200):
    x = f(x)
  np.testing.assert_allclose(np.asarray(x), [1.5] * 4)


# Traced once per axis environment: a collective's axis size is fixed when it is traced, so
# jit's cache and the control-flow trace cache must not reuse a trace made under another
# size. Module-level functions, so that each call finds the previous call's cache entries.
_gather_jit = jaxon.jit(lambda v: lax.all_gather(v, "i"))
_count_jit = jaxon.jit(lambda v: v + lax.psum(1, "i"))


def _scan_body(count, v):
  return count + lax.psum(1, "i"), lax.all_gather(v, "i")


def _while_body(state):
  return state[0] + 1, state[1] + lax.psum(1, "i")


def _sized_collectives(v):
  count, gathered = lax.scan(_scan_body, 0, v[None])
  twice = lax.while_loop(lambda s: s[0] < 2, _while_body, (0, 0))[1]
  return _gather_jit(v), _count_jit(v), count, gathered[0], twice


@pytest.mark.parametrize("transform", ["vmap", "pmap"])
def test_traces_follow_the_axis_size(transform):
  mapped = (jaxon.vmap(_sized_collectives, axis_name="i") if transform == "vmap"
            else pmap(_sized_collectives, "i"))
  for n in (2, 4):
    gathered_jit, counted, count, gathered, twice = mapped(jnp.arange(float(n)))
    rows = np.broadcast_to(np.arange(float(n)), (n, n))
    np.testing.assert_array_equal(np.asarray(gathered_jit), rows)
    np.testing.assert_array_equal(np.asarray(gathered), rows)
    np.testing.assert_array_equal(np.asarray(counted), np.arange(float(n)) + n)
    np.testing.assert_array_equal(np.asarray(count), [n] * n)
    np.testing.assert_array_equal(np.asarray(twice), [2 * n] * n)
