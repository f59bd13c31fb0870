"""The context-mesh and explicit-sharding API (`set_mesh`, `reshard`, `auto_axes`,
`explicit_axes`, `smap`, …) on the 8 CPU devices of the test process."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.sharding import (
  AbstractDevice,
  AbstractMesh,
  AxisType,
  ManualAxisType,
  NamedSharding,
  get_abstract_mesh,
  get_mesh,
)
from jaxon.sharding import PartitionSpec as P


@pytest.fixture(scope="module")
def mesh():
  return jaxon.make_mesh((4, 2), ("x", "y"))


def _blocks(arr) -> list[tuple]:
  """Each device's index in the whole array, by device id: the layout, comparable."""
  shards = sorted(arr.addressable_shards, key=lambda s: s.device.id)
  return [tuple((i.start, i.stop) for i in s.index) for s in shards]


def test_set_mesh_scopes_and_sets(mesh):
  assert get_mesh().empty and get_abstract_mesh().empty
  with jaxon.set_mesh(mesh):
    assert get_mesh() == mesh
    assert get_abstract_mesh() == mesh.abstract_mesh
    with jaxon.set_mesh(None):
      assert get_mesh().empty
    assert get_mesh() == mesh
  assert get_mesh().empty
  jaxon.set_mesh(mesh)  # the global-setter form stays set (in this thread)
  try:
    assert get_mesh() == mesh
  finally:
    jaxon.set_mesh(None)
  assert get_mesh().empty
  with pytest.raises(ValueError, match="Expected mesh of type"):
    jaxon.set_mesh(mesh.abstract_mesh)
  with pytest.raises(ValueError, match="can only be used outside of `jax.jit`"):
    jaxon.jit(lambda x: (get_mesh(), x)[1])(1.0)


def test_reshard_eager_and_jitted(mesh):
  x = jnp.arange(16.0).reshape(8, 2)
  with jaxon.set_mesh(mesh):
    eager = jaxon.reshard(x, P("x"))
    jitted = jaxon.jit(lambda a: jaxon.reshard(a * 2, P("x", "y")))(x)
    tree = jaxon.reshard({"a": x, "b": x}, {"a": P("y"), "b": P()})
  assert eager.sharding == NamedSharding(mesh, P("x"))
  assert _blocks(eager)[::2] == [((0, 2), (None, None)), ((2, 4), (None, None)),
                                 ((4, 6), (None, None)), ((6, 8), (None, None))]
  assert jitted.sharding.spec == P("x", "y")
  assert _blocks(jitted)[1] == ((0, 2), (1, 2))
  np.testing.assert_array_equal(jitted, 2 * np.arange(16.0).reshape(8, 2))
  assert tree["a"].sharding.spec == P("y") and tree["b"].sharding.is_fully_replicated
  np.testing.assert_array_equal(eager, x)
  with pytest.raises(ValueError, match="no context mesh"):
    jaxon.reshard(x, P("x"))
  with pytest.raises(ValueError, match="Reshard should only be used with out_shardings "
                     "which are non-None"):
    jaxon.reshard(x, None)


def test_auto_and_explicit_axes(mesh):
  x = jnp.arange(8.0)
  seen = []

  def record(a):
    seen.append(get_abstract_mesh().axis_types)
    return a + 1
  with jaxon.set_mesh(mesh):
    out = jaxon.sharding.auto_axes(record, axes="x", out_sharding=P("x"))(x)
    out2 = jaxon.sharding.explicit_axes(record)(x, in_sharding=P("y"))
  assert seen == [(AxisType.Auto, AxisType.Explicit), (AxisType.Explicit,) * 2]
  assert out.sharding.spec == P("x")
  np.testing.assert_array_equal(out, np.arange(8.0) + 1)
  np.testing.assert_array_equal(out2, np.arange(8.0) + 1)
  with jaxon.set_mesh(mesh), pytest.raises(TypeError, match="'out_sharding'"):
    jaxon.sharding.auto_axes(record)(x)
  with pytest.raises(ValueError, match="Context mesh cannot be empty"):
    jaxon.sharding.explicit_axes(record, in_sharding=P())(x)


def test_use_abstract_mesh():
  abstract = AbstractMesh((2, 4), ("a", "b"), (AxisType.Auto, AxisType.Explicit),
                          abstract_device=AbstractDevice("cpu", None, "cpu"))
  with jaxon.sharding.use_abstract_mesh(abstract):
    assert get_abstract_mesh() == abstract
    with pytest.raises(ValueError, match="cannot change the size of the mesh"):
      with jaxon.sharding.use_abstract_mesh(AbstractMesh((2,), ("a",))):
        pass
  assert get_abstract_mesh().empty
  assert repr(abstract.abstract_device) == (
      "AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)")


def test_smap_is_a_one_axis_shard_map():
  line = jaxon.make_mesh((8,), ("i",))
  x, y = np.arange(16.0).reshape(8, 2), np.float32(3.0)
  f = jaxon.smap(lambda a, b: a * b + jaxon.lax.axis_index("i"), in_axes=(0, None),
                 out_axes=0, axis_name="i")
  with jaxon.set_mesh(line):
    out = jaxon.jit(f)(x, y)
  np.testing.assert_array_equal(out, x * y + np.arange(8.0)[:, None])
  with pytest.raises(NotImplementedError, match="pass in_axes"):
    jaxon.smap(lambda a: a, out_axes=0, axis_name="i")
  with pytest.raises(TypeError, match="axis_name should be a `str`"):
    jaxon.smap(lambda a: a, in_axes=0, out_axes=0, axis_name=("i",))


def test_small_types():
  t = ManualAxisType(varying={"x"})
  assert t == ManualAxisType(varying=frozenset({"x"})) and not t.empty
  assert t.update(varying=frozenset()).empty
  with pytest.raises(ValueError, match="varying and unreduced cannot have common"):
    ManualAxisType(varying={"x"}, unreduced={"x"})
  device = jaxon.devices()[1]
  sharding = jaxon.sharding.make_single_device_sharding(device)
  assert jaxon.device_put(jnp.ones(2), sharding).devices() == {device}
