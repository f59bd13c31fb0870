"""shard_map over meshes of the test process's CPU devices: collectives inside against
NumPy (and against values JAX 0.10.2 gives), derivatives, batching, printing, errors."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon.sharding import Mesh, NamedSharding
from jaxon.sharding import PartitionSpec as P
from tests.util import check_grads

pytestmark = pytest.mark.skipif(jaxon.device_count() < 8, reason="needs 8 devices")


@pytest.fixture(scope="module")
def mesh2d():
  return Mesh(np.array(jaxon.devices()[:8]).reshape(4, 2), ("x", "y"))


@pytest.fixture(scope="module")
def mesh1d():
  return Mesh(np.array(jaxon.devices()[:4]), ("i",))


def _blocks(x: np.ndarray) -> np.ndarray:
  """x (8, 8) as the (4, 2) grid of its (2, 4) blocks, P('x', 'y') over a 4x2 mesh."""
  return x.reshape(4, 2, 2, 4).transpose(0, 2, 1, 3)


def _unblocks(b: np.ndarray) -> np.ndarray:
  return b.transpose(0, 2, 1, 3).reshape(b.shape[0] * b.shape[2], b.shape[1] * b.shape[3])


def test_every_collective_on_a_2d_mesh(mesh2d):
  """One program: each collective over one mesh axis; the expected values are computed
  block by block in NumPy (and agree with JAX 0.10.2's on the same program). The
  all_gather's result is equal along 'y' but, as in JAX, still typed as varying: the
  replication check is off."""
  def body(b):
    return (lax.psum(b, "x"), lax.axis_index("y") + 0 * b,
            lax.all_gather(b, "y", tiled=True),
            lax.ppermute(b, "x", [(0, 1), (1, 2), (2, 3), (3, 0)]),
            lax.psum_scatter(b, "y", tiled=True), lax.all_to_all(b, "x", 1, 1, tiled=True),
            lax.pmax(b, ("x", "y")), lax.axis_index(("x", "y")) + 0 * b)
  f = jaxon.shard_map(body, mesh=mesh2d, in_specs=P("x", "y"),
                      out_specs=(P(None, "y"), P("x", "y"), P("x"), P("x", "y"), P("x", "y"),
                                 P("x", "y"), P(), P("x", "y")), check_vma=False)
  x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
  outs = [np.asarray(o) for o in f(x)]
  b = _blocks(x)  # b[i, j]: the block of device (x=i, y=j)
  np.testing.assert_array_equal(outs[0], _unblocks(b.sum(0, keepdims=True)))
  np.testing.assert_array_equal(outs[1], _unblocks(np.broadcast_to(
      np.arange(2.0)[None, :, None, None], b.shape)))
  np.testing.assert_array_equal(outs[2], np.concatenate([np.concatenate(list(b[i]), 0)
                                                         for i in range(4)], 0))
  np.testing.assert_array_equal(outs[3], _unblocks(b[[3, 0, 1, 2]]))
  summed = b.sum(1)  # (4, 2, 4): over y, then each y member keeps one row
  np.testing.assert_array_equal(outs[4], _unblocks(summed.reshape(4, 2, 1, 4)))
  expected_a2a = np.stack([[np.concatenate([b[m, j][:, k:k + 1] for m in range(4)], 1)
                            for j in range(2)] for k in range(4)])
  np.testing.assert_array_equal(outs[5], _unblocks(expected_a2a))
  np.testing.assert_array_equal(outs[6], b.max((0, 1)))
  np.testing.assert_array_equal(outs[7], _unblocks(np.broadcast_to(
      np.arange(8.0).reshape(4, 2, 1, 1), b.shape)))
  assert f(x)[0].sharding == NamedSharding(mesh2d, P(None, "y"))


def test_psum_and_printing(mesh1d):
  f = jaxon.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh1d, in_specs=P("i"),
                      out_specs=P(), check_vma=False)
  x = jnp.arange(8.0)
  out = f(x)
  np.testing.assert_array_equal(np.asarray(out), [12.0, 16.0])
  assert out.sharding == NamedSharding(mesh1d, P())
  assert str(jaxon.make_jaxpr(f)(x)) == (
      "{ lambda ; a:f32[8]. let\n    b:f32[2] = shard_map[\n      check_vma=False\n"
      "      in_specs=(P('i',),)\n      jaxpr={ lambda ; c:f32[2]. let\n"
      "          d:f32[2] = psum[axes=('i',) axis_index_groups=None] c\n        in (d,) }\n"
      "      mesh=Mesh('i': 4, axis_types=(Auto,))\n"
      "      newly_manual_axes=frozenset({'i'})\n      out_specs=(P(),)\n    ] a\n  in (b,) }")


def test_grad_through_shard_map(mesh1d):
  """grad of a replicated output: the transpose shares its cotangent among the devices
  that hold it, so the psums add it back up exactly once."""
  f = jaxon.shard_map(lambda x, w: lax.psum(jnp.sum(jnp.sin(x) * w), "i"), mesh=mesh1d,
                      in_specs=(P("i"), P()), out_specs=P())
  x, w = np.linspace(-1, 2, 8).astype(np.float32), np.float32(1.5)
  gx, gw = jaxon.grad(f, argnums=(0, 1))(x, w)
  np.testing.assert_allclose(np.asarray(gx), np.cos(x) * w, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(gw), np.sin(x).sum(), rtol=1e-5)
  # An all_gather's result stays typed as varying (as in JAX): P() needs the check off.
  g = jaxon.shard_map(lambda x: lax.all_gather(jnp.sin(x), "i", tiled=True) * 2.0,
                      mesh=mesh1d, in_specs=P("i"), out_specs=P(), check_vma=False)
  check_grads(jaxon.jit(g), (x,), order=2, modes=["fwd", "rev"], atol=1e-2, rtol=1e-2)


def test_vmap_of_shard_map(mesh1d):
  f = jaxon.shard_map(lambda x: x / lax.psum(x, "i"), mesh=mesh1d, in_specs=P("i"),
                      out_specs=P("i"))
  xs = np.arange(1.0, 25.0, dtype=np.float32).reshape(3, 8)
  out = jaxon.vmap(f)(xs)
  np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(f(x)) for x in xs]),
                             rtol=1e-6)


def test_errors(mesh1d):
  f = jaxon.shard_map(lambda x: x, mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
  with pytest.raises(ValueError, match="not divisible"):
    f(jnp.arange(6.0))
  with pytest.raises(NameError, match="Found an unbound axis name: j"):
    jaxon.shard_map(lambda x: lax.psum(x, "j"), mesh=mesh1d, in_specs=P("i"),
                    out_specs=P())(jnp.arange(8.0))
