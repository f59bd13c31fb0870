"""Export of sharded programs: `export(jit(f, in_shardings=..., out_shardings=...))` gives an
SPMD module over the mesh as JAX 0.10.2's (Shardy annotations), keeps the shardings through
serialization, and runs over the mesh of its arguments."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import export
from jaxon.sharding import Mesh, NamedSharding
from jaxon.sharding import PartitionSpec as P

F32 = np.float32


def _f(x, y):
  return jnp.sin(x) @ y, x.sum()


@pytest.fixture(scope="module")
def mesh() -> Mesh:
  return Mesh(np.array(jaxon.devices()[:4]).reshape(2, 2), ("x", "y"))


@pytest.fixture(scope="module")
def exported(mesh) -> export.Exported:
  jitted = jaxon.jit(
      _f, in_shardings=(NamedSharding(mesh, P("x", "y")), NamedSharding(mesh, P("y"))),
      out_shardings=(NamedSharding(mesh, P("x")), NamedSharding(mesh, P())))
  return export.export(jitted)(jaxon.ShapeDtypeStruct((4, 6), F32),
                               jaxon.ShapeDtypeStruct((6, 2), F32))


def test_sharded_export_fields_and_module_as_jax(exported, mesh):
  assert exported.nr_devices == 4
  # JAX 0.10.2 (Shardy) keeps NamedShardings and leaves the HloShardings None
  assert exported.in_shardings_hlo == (None, None)
  assert exported.out_shardings_hlo == (None, None)
  assert [s.spec for s in exported.in_shardings_jax(mesh)] == [P("x", "y"), P("y")]
  assert [s.spec for s in exported.out_shardings_jax(mesh)] == [P("x"), P()]
  module = exported.mlir_module()
  # the lines of JAX 0.10.2's module (its locations and result names aside)
  assert "mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32" in module
  assert 'sdy.mesh @mesh = <["x"=2, "y"=2]>' in module
  assert ('%arg0: tensor<4x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}'
          in module)
  assert '%arg1: tensor<6x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}' in module
  assert 'tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, []>}' in module


def test_sharded_export_runs_over_the_arguments_mesh(exported, mesh):
  loaded = export.deserialize(exported.serialize())
  assert loaded.nr_devices == 4
  assert loaded.in_shardings_jax(mesh) == exported.in_shardings_jax(mesh)
  assert loaded.out_shardings_jax(mesh) == exported.out_shardings_jax(mesh)
  run_mesh = Mesh(np.array(jaxon.devices()[4:8]).reshape(2, 2), ("x", "y"))
  x_np = np.arange(24, dtype=F32).reshape(4, 6) / 10
  y_np = np.linspace(-1, 1, 12, dtype=F32).reshape(6, 2)
  x, y = (jaxon.device_put(a, s) for a, s in zip((x_np, y_np),
                                                 loaded.in_shardings_jax(run_mesh)))
  want = _f(x_np, y_np)
  out, total = loaded.call(x, y)
  np.testing.assert_allclose(out, want[0], rtol=1e-5, atol=1e-6)  # sharded sums
  np.testing.assert_allclose(total, want[1], rtol=1e-5)
  assert out.sharding == NamedSharding(run_mesh, P("x"))
  assert total.sharding == NamedSharding(run_mesh, P())
  grad = jaxon.jit(jaxon.grad(lambda x, y: loaded.call(x, y)[0].sum()))(x, y)
  np.testing.assert_allclose(grad, jaxon.grad(lambda x: _f(x, y_np)[0].sum())(x_np),
                             rtol=1e-5, atol=1e-6)


def test_sharded_export_refuses_unplaced_arguments_and_other_shardings(exported, mesh):
  with pytest.raises(ValueError, match="exported for 4 devices and is called in a context "
                     "with 1 devices"):
    exported.call(np.ones((4, 6), F32), np.ones((6, 2), F32))
  with pytest.raises(ValueError, match="run_module runs modules for one device"):
    exported.run_module(np.ones((4, 6), F32), np.ones((6, 2), F32))
  other = Mesh(np.array(jaxon.devices()[:2]), ("z",))
  jitted = jaxon.jit(_f, in_shardings=(NamedSharding(mesh, P("x")), NamedSharding(other, P())))
  with pytest.raises(ValueError, match="an exported program has one mesh"):
    export.export(jitted)(jaxon.ShapeDtypeStruct((4, 6), F32),
                          jaxon.ShapeDtypeStruct((6, 2), F32))
