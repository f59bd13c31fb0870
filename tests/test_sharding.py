"""Meshes, shardings and programs over several devices (8 CPU devices, see conftest):
sharded `jit` against the unsharded result, `device_put` round trips, the blocks each device
holds, and `with_sharding_constraint` under jit, grad and vmap. Golden text from JAX 0.10.2."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jaxon.sharding import PartitionSpec as P
from tests.util import check_grads


@pytest.fixture(scope="module")
def mesh():
  return Mesh(np.array(jaxon.devices()).reshape(4, 2), ("x", "y"))


A = np.arange(32.0, dtype=np.float32).reshape(8, 4)
B = np.arange(24.0, dtype=np.float32).reshape(4, 6) / 10


def test_reprs_match_jax(mesh):
  s = NamedSharding(mesh, P("x", None))
  assert repr(s) == ("NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), "
                     "spec=P('x', None), memory_kind=device)")
  assert repr(mesh) == "Mesh(axis_sizes=(4, 2), axis_names=('x', 'y'), axis_types=(Auto, Auto))"
  assert repr(jaxon.make_mesh((4, 2), ("x", "y"))) == (
      "Mesh(axis_sizes=(4, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))")
  assert [repr(p) for p in (P("x", None), P(), P(("x", "y"),), P("x"))] == [
      "P('x', None)", "P()", "P(('x', 'y'),)", "P('x',)"]
  assert repr(SingleDeviceSharding(jaxon.devices()[0])) == (
      "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)")
  assert repr(jnp.ones(3).sharding) == repr(SingleDeviceSharding(jaxon.devices()[0]))


def test_sharding_queries(mesh):
  s = NamedSharding(mesh, P("x", None))
  assert s.shard_shape((8, 4)) == (2, 4) and s.num_devices == 8
  assert not s.is_fully_replicated and NamedSharding(mesh, P()).is_fully_replicated
  assert s.devices_indices_map((8, 4))[jaxon.devices()[1]] == (slice(0, 2), slice(None))
  assert s.addressable_devices == set(jaxon.devices())
  assert s == NamedSharding(mesh, P("x", None)) and hash(s) == hash(NamedSharding(
      mesh, P("x", None)))
  assert s != NamedSharding(mesh, P("x")) and P("x") != P("x", None)
  with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in "
                     r"mesh: \('x', 'y'\)"):
    NamedSharding(mesh, P("z"))
  with pytest.raises(ValueError, match="implies that array axis 0 is partitioned 4 times, "
                     "but the dimension size is 3"):
    jaxon.device_put(np.ones((3, 4)), s)


@pytest.mark.parametrize("spec", [P("x", None), P(None, "y"), P("x", "y"), P()],
                         ids=str)
def test_sharded_matmul_keeps_requested_layout(mesh, spec):
  out = NamedSharding(mesh, spec)
  f = jaxon.jit(lambda u, v: u @ v, in_shardings=(NamedSharding(mesh, P("x", None)), None),
                out_shardings=out)
  result = f(A, B)
  np.testing.assert_allclose(np.asarray(result), A @ B, rtol=1e-6)
  assert result.sharding == out
  blocks = out.devices_indices_map((8, 6))
  for shard in result.addressable_shards:
    assert shard.index == blocks[shard.device]
    np.testing.assert_allclose(np.asarray(shard.data), (A @ B)[shard.index], rtol=1e-6)


def test_device_put_round_trips_and_shards(mesh):
  s = NamedSharding(mesh, P("x", None))
  x = jaxon.device_put(A, s)
  np.testing.assert_array_equal(np.asarray(x), A)
  assert x.sharding == s and x.devices() == set(jaxon.devices())
  assert not x.is_fully_replicated and x.is_fully_addressable
  # JAX 0.10.2: device, index, replica_id of the first three shards.
  got = [(str(sh.device), sh.index, sh.replica_id, sh.data.shape)
         for sh in x.addressable_shards[:3]]
  assert got == [("cpu:0", (slice(0, 2), slice(None)), 0, (2, 4)),
                 ("cpu:1", (slice(0, 2), slice(None)), 1, (2, 4)),
                 ("cpu:2", (slice(2, 4), slice(None)), 0, (2, 4))]
  assert x.addressable_shards[2].data.sharding == SingleDeviceSharding(jaxon.devices()[2])
  y = jaxon.device_put(x, NamedSharding(mesh, P("y")))
  np.testing.assert_array_equal(np.asarray(y), A)
  z = jaxon.device_put(y, jaxon.devices()[2])
  assert z.sharding == SingleDeviceSharding(jaxon.devices()[2])
  np.testing.assert_array_equal(np.asarray(z), A)
  tree = jaxon.device_put({"a": A, "b": [A[0]]}, {"a": s, "b": jaxon.devices()[1]})
  assert tree["a"].sharding == s and tree["b"][0].devices() == {jaxon.devices()[1]}
  assert "Array([[ 0.,  1.,  2.,  3.]," in repr(x) and repr(x).endswith("dtype=float32)")
  scalar = jaxon.device_put(np.int32(7), NamedSharding(mesh, P()))  # 0-d blocks, not (1,)
  assert repr(scalar) == "Array(7, dtype=int32)" and scalar.addressable_shards[3].data.shape == ()


def test_eager_ops_and_jit_follow_committed_arguments(mesh):
  x = jaxon.device_put(A, NamedSharding(mesh, P("x", None)))
  y = x + 1
  np.testing.assert_array_equal(np.asarray(y), A + 1)
  assert y.sharding.mesh == mesh and y.sharding.spec in (P("x"), P("x", None))
  assert jaxon.jit(lambda a: a.sum(1))(x).sharding.spec == P("x")  # XLA's choice, as JAX
  assert float(jnp.sum(x)) == A.sum()
  d3 = jaxon.device_put(np.ones(3), jaxon.devices()[3])
  assert d3.committed and not jnp.ones(3).committed
  assert (d3 + 1).devices() == {jaxon.devices()[3]}
  assert jaxon.jit(lambda a: a * 2)(d3).devices() == {jaxon.devices()[3]}
  d2 = jaxon.device_put(np.ones(3), jaxon.devices()[2])
  with pytest.raises(ValueError, match="Received incompatible devices for jitted computation"):
    jaxon.jit(lambda a, b: a + b)(d2, d3)
  with pytest.raises(ValueError, match="device_put device specification must be a tree "
                     "prefix of the corresponding value"):
    jaxon.device_put(np.ones(3), jaxon.devices()[:2])


def test_with_sharding_constraint_under_jit_grad_vmap(mesh):
  s = NamedSharding(mesh, P("x"))
  constrain = lambda u: lax.with_sharding_constraint(u * 2, s)
  out = jaxon.jit(constrain)(A)
  assert out.sharding == s
  np.testing.assert_array_equal(np.asarray(out), A * 2)
  np.testing.assert_array_equal(np.asarray(constrain(A)), A * 2)  # eager: a reshard
  check_grads(lambda u: jnp.sin(lax.with_sharding_constraint(u, s)), (A[:4] / 10,), order=2,
              modes=["fwd", "rev"])
  g = jaxon.jit(jaxon.grad(lambda u: (lax.with_sharding_constraint(u, s) ** 2).sum()))(A)
  np.testing.assert_allclose(np.asarray(g), 2 * A)
  batched = jaxon.jit(jaxon.vmap(constrain, in_axes=1))(A)
  np.testing.assert_array_equal(np.asarray(batched), 2 * A.T)
  assert batched.sharding.spec == P(None, "x")  # the batch dimension is not split
  with pytest.raises(ValueError, match="can only refer to Auto axes of the mesh"):
    lax.with_sharding_constraint(A, NamedSharding(jaxon.make_mesh((4, 2), ("x", "y")), P("x")))


def test_constraint_jaxpr_matches_jax(mesh):
  s = NamedSharding(mesh, P("x", None))
  text = str(jaxon.make_jaxpr(lambda a: lax.with_sharding_constraint(a, s))(A))
  assert text == """{ lambda ; a:f32[8,4]. let
    b:f32[8,4] = sharding_constraint[
      context_mesh=Mesh()
      layout=None
      sharding=NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P('x', None), memory_kind=device)
      unconstrained_dims=frozenset({})
    ] a
  in (b,) }"""  # noqa: E501
  lowered = jaxon.jit(lambda a: lax.with_sharding_constraint(a * 2, s)).lower(A).as_text()
  assert 'sdy.sharding_constraint %1 <@mesh, [{"x"}, {}]>' in lowered
