"""Collectives over named axes without devices: under `vmap(axis_name=)` each collective is
performed over the batch dimension. Oracles: NumPy on the stacked members, finite
differences, and jaxprs printed by JAX 0.10.2 (`make_jaxpr(..., axis_env=)`)."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from tests.util import check_grads

N = 4  # members of the mapped axis


def _members(x: np.ndarray) -> list[np.ndarray]:
  return [x[m] for m in range(x.shape[0])]


# Each case: (collective on one member's value, NumPy on the stacked members -> stacked
# results). Every member's value has shape (4, 3).
CASES = {
    "psum": (lambda x: lax.psum(x, "i"),
             lambda xs: np.broadcast_to(xs.sum(0), xs.shape)),
    "pmean": (lambda x: lax.pmean(x, "i"),
              lambda xs: np.broadcast_to(xs.mean(0), xs.shape)),
    "pmax": (lambda x: lax.pmax(x, "i"),
             lambda xs: np.broadcast_to(xs.max(0), xs.shape)),
    "pmin": (lambda x: lax.pmin(x, "i"),
             lambda xs: np.broadcast_to(xs.min(0), xs.shape)),
    "all_gather": (lambda x: lax.all_gather(x, "i", axis=1),
                   lambda xs: np.broadcast_to(np.moveaxis(xs, 0, 1), (N, 4, N, 3))),
    "all_gather_tiled": (lambda x: lax.all_gather(x, "i", tiled=True),
                         lambda xs: np.broadcast_to(xs.reshape(N * 4, 3), (N, N * 4, 3))),
    "ppermute": (lambda x: lax.ppermute(x, "i", [(0, 1), (1, 2), (3, 0)]),
                 lambda xs: np.stack([xs[3], xs[0], xs[1], np.zeros_like(xs[0])])),
    "pshuffle": (lambda x: lax.pshuffle(x, "i", [2, 0, 3, 1]),
                 lambda xs: xs[[2, 0, 3, 1]]),
    "psum_scatter": (lambda x: lax.psum_scatter(x, "i"),
                     lambda xs: xs.sum(0)),
    "psum_scatter_tiled": (lambda x: lax.psum_scatter(x, "i", tiled=True),
                           lambda xs: xs.sum(0).reshape(N, 1, 3)),
    "all_to_all": (lambda x: lax.all_to_all(x, "i", 0, 1),
                   lambda xs: np.stack([xs[:, k].T for k in range(N)])),
    "all_to_all_tiled": (lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True),
                         lambda xs: np.stack([np.concatenate(list(xs[:, k:k + 1]), axis=1)
                                              for k in range(N)])),
    "axis_index": (lambda x: x * lax.axis_index("i"),
                   lambda xs: xs * np.arange(N)[:, None, None]),
    "psum_of_constant": (lambda x: x * lax.psum(1, "i"),
                         lambda xs: xs * N),
}


@pytest.fixture(scope="module")
def xs():
  return np.random.default_rng(0).uniform(-2, 2, (N, 4, 3)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_performs_collective(name, xs):
  collective, expected = CASES[name]
  out = jaxon.jit(jaxon.vmap(collective, axis_name="i"))(xs)
  np.testing.assert_allclose(np.asarray(out), expected(xs), rtol=1e-6, atol=1e-6)


def test_collective_grads(xs):
  """fwd and rev, to second order, of every collective at once: the JVP, transpose and
  batching rules together."""
  cases = [CASES[name][0] for name in sorted(CASES)]
  f = jaxon.vmap(lambda x: [jnp.sin(c(x)) for c in cases], axis_name="i")
  check_grads(f, (xs,), order=2, modes=["fwd", "rev"], atol=2e-2, rtol=2e-2)


def test_vmap_over_another_axis_batches_through(xs):
  """The inner vmap's axis is not the collective's: it carries its batch dimension
  through, and the outer vmap performs the sum."""
  f = jaxon.vmap(jaxon.vmap(lambda x: lax.psum(x, "i") + lax.all_gather(x, "i").sum(0),
                            axis_name="j"), axis_name="i")
  out = jaxon.jit(f)(xs)
  np.testing.assert_allclose(np.asarray(out), 2 * np.broadcast_to(xs.sum(0), xs.shape),
                             rtol=1e-6)
  both = jaxon.vmap(jaxon.vmap(lambda x: lax.psum(x, ("i", "j")), axis_name="j"),
                    axis_name="i")(xs)
  np.testing.assert_allclose(np.asarray(both), np.broadcast_to(xs.sum((0, 1)), xs.shape),
                             rtol=1e-5)
  index = jaxon.vmap(jaxon.vmap(lambda x: lax.axis_index(("i", "j")), axis_name="j"),
                     axis_name="i")(xs)
  np.testing.assert_array_equal(np.asarray(index), np.arange(N * 4).reshape(N, 4))


def test_pytree_operands_and_bool():
  out = jaxon.vmap(lambda t: lax.psum(t, "i"), axis_name="i")(
      {"a": np.arange(3.0), "b": np.array([True, False, True])})
  np.testing.assert_array_equal(np.asarray(out["a"]), [3.0, 3.0, 3.0])
  assert out["b"].dtype == np.int32
  np.testing.assert_array_equal(np.asarray(out["b"]), [2, 2, 2])


def test_axis_index_groups_refused_in_vmap():
  with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
    jaxon.vmap(lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]),
               axis_name="i")(np.arange(4.0))
  with pytest.raises(ValueError, match="must cover all indices exactly once"):
    jaxon.vmap(lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1], [1, 3]]),
               axis_name="i")(np.arange(4.0))


# ----------------------------------------------------------------------------- errors


def test_unbound_axis_names():
  x = jnp.arange(3.0)
  with pytest.raises(NameError, match="^unbound axis name: i$"):
    lax.psum(x, "i")
  with pytest.raises(NameError, match="Found an unbound axis name: i. To fix this, please "
                                      "call psum under `jaxon.shard_map`."):
    jaxon.jit(lambda x: lax.psum(x, "i"))(x)
  with pytest.raises(NameError, match="Found an unbound axis name: j"):
    jaxon.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(x)
  with pytest.raises(NameError, match="call axis_index under"):
    lax.axis_index("i")
  with pytest.raises(NameError, match="call all_gather under"):
    jaxon.vmap(lambda x: lax.all_gather(x, "k"), axis_name="i")(x)


def test_argument_errors():
  vm = lambda f: jaxon.vmap(f, axis_name="i")(np.ones((3, 3)))  # noqa: E731
  with pytest.raises(ValueError, match="does not represent a permutation"):
    vm(lambda x: lax.pshuffle(x, "i", [0, 0, 1]))
  with pytest.raises(ValueError, match="sources and destinations must be unique"):
    vm(lambda x: lax.ppermute(x, "i", [(0, 1), (1, 1)]))
  with pytest.raises(ValueError, match="all_to_all requires the size of the mapped axis"):
    jaxon.vmap(lambda x: lax.all_to_all(x, "i", 0, 0), axis_name="i")(np.ones((3, 2)))
  with pytest.raises(ValueError, match="reduce_scatter operand scatter dimension size 2 must "
                                       "match shard count 3"):
    jaxon.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(np.ones((3, 2)))


# ----------------------------------------------------------------------------- jaxprs

# As JAX 0.10.2 prints them (make_jaxpr with an axis_env).
GOLDEN = [
    (lambda x: lax.psum(x, "i"), [("i", 4)],
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = psum[axes=('i',) axis_index_groups=None] a\n"
     "  in (b,) }"),
    (lambda x: lax.pmax(x, "i"), [("i", 4)],
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = pmax[axes=('i',) axis_index_groups=None] a\n"
     "  in (b,) }"),
    (lambda x: lax.all_gather(x, "i", axis=0, tiled=True), [("i", 4)],
     "{ lambda ; a:f32[3]. let\n    b:f32[12] = all_gather[\n      all_gather_dimension=0\n"
     "      axis_index_groups=None\n      axis_name=('i',)\n      axis_size=4\n"
     "      tiled=True\n    ] a\n  in (b,) }"),
    (lambda x: lax.ppermute(x, "i", [(0, 1), (1, 0)]), [("i", 2)],
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = ppermute[axis_name=('i',) perm=((0, 1), (1, 0))]"
     " a\n  in (b,) }"),
    (lambda x: lax.all_to_all(x, "i", 0, 0, tiled=True), [("i", 3)],
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = all_to_all[\n      axis_index_groups=None\n"
     "      axis_name=i\n      concat_axis=0\n      split_axis=0\n      tiled=True\n"
     "    ] a\n  in (b,) }"),
    (lambda x: lax.psum_scatter(x, "i", tiled=True), [("i", 3)],
     "{ lambda ; a:f32[3]. let\n    b:f32[1] = reduce_scatter[\n      axis_index_groups=None\n"
     "      axis_name=('i',)\n      axis_size=3\n      scatter_dimension=0\n      tiled=True\n"
     "    ] a\n  in (b,) }"),
    (lambda x: lax.axis_index("i"), [("i", 3)],
     "{ lambda ; a:f32[3]. let b:i32[] = axis_index[axis_name=i]  in (b,) }"),
]


@pytest.mark.parametrize("index", range(len(GOLDEN)))
def test_jaxpr_as_jax_prints_it(index):
  fun, axis_env, text = GOLDEN[index]
  assert str(jaxon.make_jaxpr(fun, axis_env=axis_env)(jnp.arange(3.0))) == text


def test_vmap_jaxpr_reduces_positionally():
  """vmap turns its own axis into the batch dimension: `psum[axes=(0,)]` as in JAX."""
  text = str(jaxon.make_jaxpr(jaxon.vmap(lambda x: lax.psum(x, "i"), axis_name="i"))(
      jnp.ones((3, 3))))
  assert "b:f32[3] = psum[axes=(0,) axis_index_groups=None] a" in text
