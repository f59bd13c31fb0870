"""Keywords of JAX 0.10.2's transformations, `jax.random` and `jax.nn` that jaxon takes
(test_api_signatures checks they are accepted; these check what they do), and the
attributes of the ahead-of-time stages, against values recorded from JAX 0.10.2 where they
are numbers."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.sharding import NamedSharding, PartitionSpec


def test_custom_jvp_and_vjp_nondiff_argnames():
  @functools.partial(jaxon.custom_jvp, nondiff_argnames=("n",))
  def power(x, n):
    return x ** n

  @power.defjvp
  def power_jvp(n, primals, tangents):  # the nondiff arguments come first, by position
    (x,), (t,) = primals, tangents
    return power(x, n), n * x ** (n - 1) * t

  assert jaxon.grad(power)(2.0, 3) == 12.0
  assert jaxon.grad(lambda x: power(x, n=3))(2.0) == 12.0

  @functools.partial(jaxon.custom_vjp, nondiff_argnums=(0,), nondiff_argnames=("scale",))
  def scaled(f, x, scale):
    return f(x) * scale

  scaled.defvjp(lambda f, scale, x: (scaled(f, x, scale), None),
                lambda f, scale, _, ct: (10.0 * ct * scale,))
  assert jaxon.grad(scaled, 1)(jnp.sin, 1.0, 2.0) == 20.0
  with pytest.raises(ValueError, match="nondiff_argnames names 'y'"):
    jaxon.custom_jvp(lambda x: x, nondiff_argnames=("y",))


def test_checkpoint_static_argnames_and_refused_concrete():
  def f(x, *, kind):
    return jnp.sin(x) if kind == "sin" else jnp.cos(x)

  g = jaxon.checkpoint(f, static_argnames="kind")
  np.testing.assert_allclose(jaxon.grad(lambda x: g(x, kind="sin"))(1.0), np.cos(1.0))
  with pytest.raises(NotImplementedError, match="concrete"):
    jaxon.checkpoint(f, concrete=True)


def test_random_key_dtype_and_bernoulli_mode():
  k = jaxon.random.key(3, dtype=jaxon.random.key_dtype())
  data = jaxon.random.key_data(k)
  assert jaxon.random.wrap_key_data(data, dtype=k.dtype).dtype == k.dtype
  assert jaxon.random.key(3, dtype="threefry2x32").dtype == k.dtype
  with pytest.raises(ValueError, match="both `impl` and `dtype`"):
    jaxon.random.key(0, impl="threefry2x32", dtype="threefry2x32")
  # JAX 0.10.2: jax.random.bernoulli(jax.random.key(1), 0.3, (16,), mode='high')
  high = jaxon.random.bernoulli(jaxon.random.key(1), 0.3, (16,), mode="high")
  np.testing.assert_array_equal(high, np.arange(16) == 10)
  with pytest.raises(ValueError, match="expected 'high' or 'low'"):
    jaxon.random.bernoulli(k, 0.5, mode="medium")


def test_standardize_algorithms():
  """JAX 0.10.2's values: "fast" cancels in float32 (and clips at 0), "stable" does not."""
  x = jnp.array([[1e4, 1e4 + 1, 1e4 + 2, 1e4 + 4]])
  np.testing.assert_allclose(jaxon.nn.standardize(x), [[
      -0.6187180280685425, -0.26516488194465637, 0.08838829398155212, 0.7954946756362915]],
      rtol=1e-6)
  np.testing.assert_allclose(jaxon.nn.standardize(x, algorithm="stable"), [[
      -1.183213233947754, -0.5070914030075073, 0.16903045773506165, 1.5212740898132324]],
      rtol=1e-6)
  with pytest.raises(ValueError, match="Unknown algorithm"):
    jaxon.nn.standardize(x, algorithm="exact")


def test_dot_product_attention_residual():
  """The log-sum-exp of each query head's logits, (B, T, N), as JAX 0.10.2 returns it."""
  rng = np.random.default_rng(0)
  q = rng.normal(size=(2, 3, 4, 8)).astype(np.float32)
  k, v = (rng.normal(size=(2, 5, 2, 8)).astype(np.float32) for _ in range(2))
  out, residual = jaxon.jit(functools.partial(jaxon.nn.dot_product_attention,
                                              return_residual=True))(q, k, v)
  np.testing.assert_allclose(out, jaxon.nn.dot_product_attention(q, k, v), atol=1e-6)
  np.testing.assert_allclose(residual[0, :2], [[1.7039163, 2.284769, 1.2963206, 2.7205083],
                                               [2.100235, 2.5105262, 2.9451094, 2.9040098]],
                             rtol=1e-6)
  assert jaxon.nn.dot_product_attention(q[0], k[0], v[0], return_residual=True)[1].shape == (
      3, 4)


def test_vmap_sum_match_and_spmd_axis_name():
  xs = jnp.arange(6.0).reshape(3, 2)
  assert jaxon.vmap(lambda x: x * 2, out_axes=None, sum_match=True)(xs[:, 0]) == 12.0
  with pytest.raises(ValueError, match="out_axes is None"):
    jaxon.vmap(lambda x: x * 2, out_axes=None)(xs[:, 0])
  mesh = jaxon.sharding.Mesh(np.array(jaxon.devices()[:1]), ("x",))
  f = jaxon.vmap(lambda x: jaxon.lax.with_sharding_constraint(
      x, NamedSharding(mesh, PartitionSpec(None))), spmd_axis_name="x")
  eqn = jaxon.make_jaxpr(f)(xs).eqns[0]
  assert eqn.params["sharding"].spec == PartitionSpec("x", None), eqn


def test_reduce_axes_is_refused_as_in_jax():
  for make in (lambda: jaxon.grad(jnp.sin, reduce_axes=("i",)),
               lambda: jaxon.value_and_grad(jnp.sin, reduce_axes=("i",)),
               lambda: jaxon.vjp(jnp.sin, 1.0, reduce_axes=("i",))):
    with pytest.raises(NotImplementedError, match="reduce_axes"):
      make()


def test_shape_dtype_struct_carries_a_sharding():
  mesh = jaxon.sharding.Mesh(np.array(jaxon.devices()[:1]), ("x",))
  sharding = NamedSharding(mesh, PartitionSpec("x"))
  s = jaxon.ShapeDtypeStruct((4,), jnp.float32, sharding=sharding)
  assert s.sharding is sharding and s != jaxon.ShapeDtypeStruct((4,), jnp.float32)
  assert "sharding=" in repr(s)
  assert "tensor<4xf32>" in jaxon.jit(lambda x: x + 1).lower(s).as_text()


def test_aot_stages_describe_their_signature():
  f = jaxon.jit(lambda x, y: (x @ y, x.sum()), donate_argnums=1)
  x = jnp.ones((4, 4))
  traced, lowered = f.trace(x, x), f.lower(x, x)
  compiled = lowered.compile()
  for stage in (traced, lowered, compiled):
    assert stage.in_tree == jaxon.tree_util.tree_structure(((0, 0), {}))
    assert [s.shape for s in stage.out_info] == [(4, 4), ()]
    assert [a.shape for a in jaxon.tree_util.tree_leaves(stage.in_avals)] == [(4, 4)] * 2
    assert stage.donate_argnums == (1,)
    assert [a.donated for a in stage.args_info[0]] == [False, True]
  one_device = jaxon.sharding.SingleDeviceSharding(jaxon.devices()[0])
  assert compiled.out_info[0].sharding == one_device
  assert compiled.input_shardings == ((one_device, one_device), {})
  assert compiled.output_shardings == (one_device, one_device)
  assert lowered.cost_analysis()["flops"] == compiled.cost_analysis()["flops"] > 0
  assert compiled.runtime_executable() is not None
  np.testing.assert_array_equal(compiled.call(x, jnp.ones((4, 4)))[1], 16.0)


def test_mesh_partition_spec_and_named_sharding_attributes():
  devices = np.array(jaxon.devices()[:2]).reshape(2, 1)
  types = (jaxon.sharding.AxisType.Explicit, jaxon.sharding.AxisType.Auto)
  mesh = jaxon.sharding.Mesh(devices, ("x", "y"), types)
  assert (mesh.explicit_axes, mesh.auto_axes, mesh.manual_axes) == (("x",), ("y",), ())
  assert not mesh.are_all_axes_auto and mesh.local_mesh is mesh
  assert mesh.update(axis_types=(jaxon.sharding.AxisType.Auto,) * 2).are_all_axes_auto
  spec = PartitionSpec("x", None)
  assert (spec.count(None), spec.index("x"), spec.unreduced) == (1, 0, frozenset())
  assert spec.update(partitions=("y",)) == PartitionSpec("y")
  with pytest.raises(NotImplementedError, match="unreduced"):
    PartitionSpec("x", unreduced={"y"})
  sharding = NamedSharding(mesh, spec)
  assert sharding.has_addressable_devices
  assert sharding.update(spec=PartitionSpec()) == NamedSharding(mesh, PartitionSpec())
  assert sharding.with_memory_kind("device") == sharding
  sharding.check_compatible_aval((4, 4))
  with pytest.raises(ValueError, match="rank of at least 2"):
    sharding.check_compatible_aval((4,))


def test_random_out_sharding():
  """An Explicit mesh axis lays the sample out (eagerly and under jit, whose program then
  takes a key argument: its words are one unsplit trailing dimension); an Auto axis is
  refused, as JAX refuses it."""
  explicit = jaxon.sharding.Mesh(np.array(jaxon.devices()[:2]), ("x",),
                                 (jaxon.sharding.AxisType.Explicit,))
  sharding = NamedSharding(explicit, PartitionSpec("x"))
  key = jaxon.random.key(1)
  want = jaxon.random.uniform(key, (4,))
  for sample in (jaxon.random.uniform(key, (4,), out_sharding=sharding),
                 jaxon.jit(lambda k: jaxon.random.uniform(k, (4,), out_sharding=sharding))(key)):
    assert sample.sharding == sharding
    np.testing.assert_array_equal(sample, want)
  keys = jaxon.jit(lambda k: k, in_shardings=sharding, out_shardings=sharding)(
      jaxon.random.split(key, 4))
  assert keys.sharding == sharding and keys.dtype == key.dtype
  auto = jaxon.sharding.Mesh(np.array(jaxon.devices()[:2]), ("x",),
                             (jaxon.sharding.AxisType.Auto,))
  with pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
    jaxon.random.normal(key, (4,), out_sharding=NamedSharding(auto, PartitionSpec("x")))
  # a type's sharding over the empty mesh (what optax passes on) asks for nothing
  unplaced = jaxon.random.uniform(key, (4,), out_sharding=jaxon.typeof(want).sharding)
  np.testing.assert_array_equal(unplaced, want)


def test_array_byteswap_clone_platform():
  x = jnp.array([1, 256, -2], jnp.int16)
  np.testing.assert_array_equal(x.byteswap(), np.array([1, 256, -2], np.int16).byteswap())
  f = jnp.arange(3.0)
  np.testing.assert_array_equal(jaxon.jit(lambda v: v.byteswap())(f),
                                np.arange(3.0, dtype=np.float32).byteswap())
  with pytest.raises(ValueError, match="Inplace"):
    f.byteswap(inplace=True)
  np.testing.assert_array_equal(f.clone(), f)
  assert f.platform() == jaxon.devices()[0].platform


def test_creation_out_sharding():
  explicit = jaxon.sharding.Mesh(np.array(jaxon.devices()[:2]), ("x",),
                                 (jaxon.sharding.AxisType.Explicit,))
  sharding = NamedSharding(explicit, PartitionSpec("x"))
  for make in (lambda: jnp.zeros(4, out_sharding=sharding),
               lambda: jnp.arange(4.0, out_sharding=sharding),
               lambda: jnp.asarray(np.ones(4), out_sharding=sharding),
               lambda: jnp.full_like(np.ones(4), 2.0, out_sharding=sharding),
               lambda: jaxon.jit(lambda: jnp.ones(4, out_sharding=sharding))()):
    assert make().sharding == sharding
  with pytest.raises(ValueError, match="device or out_sharding"):
    jnp.zeros(4, device=jaxon.devices()[0], out_sharding=sharding)


def test_operations_out_sharding():
  explicit = jaxon.sharding.Mesh(np.array(jaxon.devices()[:2]), ("x",),
                                 (jaxon.sharding.AxisType.Explicit,))
  rows = NamedSharding(explicit, PartitionSpec("x"))
  m = jnp.arange(8.0).reshape(4, 2)
  for name, make in [
      ("reshape", lambda: jnp.reshape(m, (8,), out_sharding=rows)),
      ("method", lambda: m.reshape(8, out_sharding=rows)),
      ("ravel", lambda: jnp.ravel(m, out_sharding=rows)),
      ("broadcast_to", lambda: jnp.broadcast_to(m[:1], (4, 2), out_sharding=rows)),
      ("dot", lambda: jnp.dot(m, m.T, out_sharding=rows)),
      ("matmul", lambda: jnp.matmul(m, m.T, out_sharding=rows)),
      ("tensordot", lambda: jnp.tensordot(m, m.T, 1, out_sharding=rows)),
      ("einsum", lambda: jnp.einsum("ij,kj->ik", m, m, out_sharding=rows)),
      ("jit", lambda: jaxon.jit(lambda a: jnp.reshape(a, (8,), out_sharding=rows))(m))]:
    out = make()
    assert out.sharding == rows, name
  host = np.asarray(m)
  np.testing.assert_array_equal(jnp.matmul(m, m.T, out_sharding=rows), host @ host.T)
