"""JAX 0.10.2 names that libraries written for JAX (optax, chex) reach for: `jax.typeof`,
`jax.jacobian`, the newer pytree helpers, `jax.monitoring`, `jax.dlpack`; and the fixes
their test suites exposed (vmap of a gather over an empty batch, `nan_to_num` in bfloat16).
Expected values are NumPy's, another jaxon transformation's, or recorded from JAX 0.10.2."""
from __future__ import annotations

import collections
import dataclasses
import operator

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import tree_util

# ----------------------------------------------------------------------------- gather batching

@pytest.mark.parametrize("batch", [0, 3])
def test_vmap_of_indexing_with_batched_operand_and_indices_matches_a_loop(batch):
  """Both batched: the batch dimension becomes a gather batching dimension, whose slice is
  one element, or none when the batch is empty (JAX 0.10.2's slice_sizes=(0, 1, 2))."""
  x = np.arange(batch * 6, dtype=np.float32).reshape(batch, 3, 2)
  i = np.arange(batch, dtype=np.int32) % 3
  out = jaxon.vmap(lambda row, k: row[k])(x, i)
  want = np.stack([x[b, i[b]] for b in range(batch)]) if batch else np.zeros((0, 2))
  assert out.shape == (batch, 2) and out.dtype == np.float32
  np.testing.assert_array_equal(out, want)
  gather = next(e for e in jaxon.make_jaxpr(jaxon.vmap(lambda row, k: row[k]))(x, i).eqns
                if e.primitive.name == "gather")
  assert gather.params["slice_sizes"] == (min(batch, 1), 1, 2)


def test_scan_under_vmap_over_an_empty_batch():
  """optax's Hungarian algorithm, vmapped over zero cost matrices, reduced to its gather."""
  def per_matrix(c):
    def body(carry, k):
      return carry + c[k, k], None
    return jaxon.lax.scan(body, jnp.float32(0), jnp.arange(2))[0]
  out = jaxon.vmap(per_matrix)(jnp.zeros((0, 2, 2)))
  assert out.shape == (0,) and out.dtype == np.float32


# ----------------------------------------------------------------------------- jacobian, typeof

def test_jacobian_is_jacrev_under_jax_s_name():
  def f(x, y):
    return jnp.sin(x) * y, {"aux": x.sum()}
  x, y = jnp.array([0.5, 1.0, 2.0]), jnp.array([2.0, -1.0, 0.5])
  jac, aux = jaxon.jacobian(f, argnums=(0, 1), has_aux=True)(x, y)
  want, want_aux = jaxon.jacrev(f, argnums=(0, 1), has_aux=True)(x, y)
  np.testing.assert_allclose(jac[0], np.diag(np.cos(x) * y), rtol=1e-6)
  np.testing.assert_allclose(jac[1], np.diag(np.sin(x)), rtol=1e-6)
  for got, expected in zip(jaxon.tree_leaves((jac, aux)), jaxon.tree_leaves((want, want_aux))):
    np.testing.assert_array_equal(got, expected)
  with pytest.raises(TypeError, match="integer"):
    jaxon.jacobian(lambda n: n * 2)(3)


def test_typeof_gives_what_a_transformation_sees():
  seen = []
  jaxon.jit(lambda v: seen.append(jaxon.typeof(v)))(jnp.ones((2, 3)))
  jaxon.vmap(lambda v: seen.append(jaxon.typeof(v)))(jnp.ones((4, 3), jnp.bfloat16))
  assert [(a.shape, a.dtype, a.weak_type) for a in seen] == [
      ((2, 3), np.float32, False), ((3,), jnp.bfloat16, False)]
  scalar = jaxon.typeof(1.0)
  assert (scalar.shape, scalar.dtype, scalar.weak_type) == ((), np.float32, True)
  assert jaxon.typeof(np.arange(3)) == jaxon.typeof(jnp.arange(3))  # canonical int32
  assert str(jaxon.typeof(jaxon.random.key(0)).dtype) == "key<fry>"


@pytest.mark.parametrize("bad", [[1, 2], "a", None])
def test_typeof_rejects_what_is_not_an_array(bad):
  with pytest.raises(TypeError, match="not a valid JAX type"):
    jaxon.typeof(bad)


# ----------------------------------------------------------------------------- nan_to_num

def test_nan_to_num_in_bfloat16_uses_bfloat16_limits():
  x = jnp.array([1.0, np.nan, np.inf, -np.inf], jnp.bfloat16)
  out = jaxon.jit(jnp.nan_to_num)(x)
  assert out.dtype == jnp.bfloat16
  big = float(jnp.finfo(jnp.bfloat16).max)
  np.testing.assert_array_equal(np.asarray(out, np.float32), [1.0, 0.0, big, -big])
  assert big == 3.3895313892515355e38  # JAX 0.10.2 prints 3.38953e+38


# ----------------------------------------------------------------------------- pytrees

def test_tree_reduce_associative_reduces_as_a_balanced_tree():
  assert jaxon.tree.reduce_associative(operator.add, [1, (2, 3), [4, 5, 6]]) == 21
  # The order of JAX 0.10.2: halves split at len // 2.
  assert (jaxon.tree.reduce_associative(lambda a, b: f"({a}+{b})", [1, 2, 3, 4, 5])
          == "((1+2)+(3+(4+5)))")
  assert tree_util.tree_reduce_associative(operator.add, {"a": None}, identity=0) == 0
  with pytest.raises(TypeError, match="Must specify identity"):
    jaxon.tree.reduce_associative(operator.add, [])


def test_is_tree_node_and_flatten_one_level_with_keys():
  Pair = collections.namedtuple("Pair", "a b")
  assert all(tree_util.is_tree_node(t) for t in (list, dict, type(None), Pair,
                                                  tree_util.Partial))
  assert not any(tree_util.is_tree_node(t) for t in (int, jaxon.Array, np.ndarray))
  children, aux = tree_util.flatten_one_level_with_keys({"b": (2, 3), "a": 1})
  assert list(children) == [(tree_util.DictKey("a"), 1), (tree_util.DictKey("b"), (2, 3))]
  assert aux == ("a", "b")
  with pytest.raises(ValueError, match="can't tree-flatten"):
    tree_util.flatten_one_level_with_keys(1)


def test_tree_static_marks_a_dataclass_field_as_aux_data():
  @tree_util.register_dataclass
  @dataclasses.dataclass
  class Op:
    x: jaxon.Array
    name: str = jaxon.tree.static(default="add", metadata={"doc": "kept"})

  leaves, treedef = jaxon.tree.flatten(Op(jnp.ones(2)))
  assert len(leaves) == 1 and "add" in str(treedef)
  assert dataclasses.fields(Op)[1].metadata == {"doc": "kept", "static": True}
  assert jaxon.tree.unflatten(treedef, [jnp.zeros(2)]).name == "add"


# ----------------------------------------------------------------------------- dtypes, errors, lax

def test_itemsize_bits_and_scalar_type_of_as_jax():
  from jaxon import dtypes
  assert [dtypes.itemsize_bits(t) for t in ("int4", "uint2", "bfloat16", "float32", "bool",
                                            "float8_e4m3fn", "float4_e2m1fn")] == [
      4, 2, 16, 32, 8, 8, 4]  # JAX 0.10.2's
  with pytest.raises(ValueError, match="None"):
    dtypes.itemsize_bits(None)
  values = [1, 1.0, True, 1j, np.float32(1), jnp.ones(2, jnp.bfloat16), jnp.ones(2, np.uint8),
            np.ones(2, np.complex64)]
  assert [dtypes.scalar_type_of(v) for v in values] == [int, float, bool, complex, float,
                                                        float, int, complex]
  with pytest.raises(TypeError):
    dtypes.scalar_type_of(object())
  with pytest.raises(dtypes.TypePromotionError):
    dtypes.promote_types(jnp.float8_e4m3fn, jnp.float8_e5m2)


def test_strict_dtype_promotion_lets_only_python_scalars_promote():
  f32, bf16 = jnp.ones(2, np.float32), jnp.ones(2, jnp.bfloat16)
  i32, i8, b = jnp.ones(2, np.int32), jnp.ones(2, np.int8), jnp.ones(2, bool)
  pairs = [(f32, 1.0), (f32, bf16), (i32, 1.5), (i32, f32), (f32, f32), (i8, 3), (i32, 1j),
           (f32, 1j), (b, True), (b, 1)]

  def outcomes():
    out = []
    for x, y in pairs:
      try:
        out.append(np.dtype(jaxon.jit(lambda u, v: u + v)(x, y).dtype).name)
      except jaxon.dtypes.TypePromotionError:
        out.append("error")
    return out

  standard = outcomes()
  with jaxon.numpy_dtype_promotion("strict"):
    strict = outcomes()
    with pytest.raises(jaxon.dtypes.TypePromotionError, match="strict"):
      jnp.promote_types(np.int32, np.float32)
  # JAX 0.10.2's answers.
  assert strict == ["float32", "error", "error", "error", "float32", "int8", "error", "error",
                    "bool", "error"]
  assert standard == ["float32", "float32", "float32", "float32", "float32", "int8",
                      "complex64", "complex64", "bool", "int32"]
  assert outcomes() == standard  # the context manager's value is gone, and jit retraces


def test_boolean_mask_error_is_the_one_jaxon_errors_exports():
  with pytest.raises(jaxon.errors.NonConcreteBooleanIndexError):
    jaxon.jit(lambda x: x[x > 0])(jnp.arange(3.0))


def test_lax_exports_the_primitives_its_operations_bind():
  jaxpr = jaxon.make_jaxpr(lambda x: jaxon.lax.sort(jnp.concatenate([x, x[::-1]]).T))(
      jnp.ones((2, 1)))
  bound = {eqn.primitive for eqn in jaxpr.eqns}
  assert {jaxon.lax.sort_p, jaxon.lax.concatenate_p, jaxon.lax.transpose_p,
          jaxon.lax.rev_p} <= bound
  assert jaxon.lax.dot_general_p in {e.primitive for e in jaxon.make_jaxpr(jnp.dot)(
      jnp.ones(2), jnp.ones(2)).eqns}


# ----------------------------------------------------------------------------- monitoring

def test_monitoring_calls_each_listener_of_the_recorded_kind():
  from jaxon import monitoring
  calls = []
  on_event = lambda event, **kw: calls.append(("event", event, kw))  # noqa: E731
  on_duration = lambda event, secs, **kw: calls.append(("duration", event, secs, kw))  # noqa: E731
  on_span = lambda event, t0, t1, **kw: calls.append(("span", event, t1 - t0))  # noqa: E731
  on_scalar = lambda event, value, **kw: calls.append(("scalar", event, value))  # noqa: E731
  monitoring.register_event_listener(on_event)
  monitoring.register_event_duration_secs_listener(on_duration)
  monitoring.register_event_time_span_listener(on_span)
  monitoring.register_scalar_listener(on_scalar)
  try:
    monitoring.record_event("/a", tag="x")
    monitoring.record_event_duration_secs("/b", 0.5, n=1)
    monitoring.record_event_time_span("/c", 1.0, 3.0)
    monitoring.record_scalar("/d", 7)
    monitoring.unregister_event_listener(on_event)
    monitoring.record_event("/ignored")
    with pytest.raises(AssertionError):
      monitoring.unregister_event_listener(on_event)
  finally:
    monitoring.clear_event_listeners()
  monitoring.record_scalar("/after_clear", 1)
  assert calls == [("event", "/a", {"tag": "x"}), ("duration", "/b", 0.5, {"n": 1}),
                   ("span", "/c", 2.0), ("scalar", "/d", 7)]


# ----------------------------------------------------------------------------- dlpack

def test_dlpack_round_trip_and_supported_dtypes():
  from jaxon import dlpack
  host = np.arange(6.0).reshape(2, 3)
  x = dlpack.from_dlpack(host)
  assert isinstance(x, jaxon.Array) and x.dtype == np.float32  # canonicalized, as JAX
  np.testing.assert_array_equal(x, host)
  np.testing.assert_array_equal(np.from_dlpack(x), host.astype(np.float32))
  np.testing.assert_array_equal(dlpack.from_dlpack(jnp.arange(3)), [0, 1, 2])
  assert dlpack.is_supported_dtype(jnp.bfloat16) and dlpack.is_supported_dtype("uint64")
  assert not dlpack.is_supported_dtype(jnp.float8_e4m3fn)
  with pytest.raises(TypeError, match="__dlpack__"):
    dlpack.from_dlpack([1.0, 2.0])


# ----------------------------------------------------------------------------- profiler

def test_a_trace_holds_the_annotated_spans(tmp_path):
  from jaxon import profiler
  step = profiler.annotate_function(jaxon.jit(lambda v: v * 3), name="annotated_step")
  with profiler.trace(tmp_path):
    with profiler.TraceAnnotation("my_span", detail=1):
      step(jnp.ones(3)).block_until_ready()
    with profiler.StepTraceAnnotation("train", step_num=7):
      pass
    with pytest.raises(RuntimeError, match="already been started"):
      profiler.start_trace(tmp_path)
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  [xplane] = tmp_path.glob("plugins/profile/*/*.xplane.pb")
  names = {event.name for plane in profiler.ProfileData.from_file(str(xplane)).planes
           for line in plane.lines for event in line.events}
  assert {"my_span", "train", "annotated_step"} <= names
  with pytest.raises(TypeError, match="step_num"):
    profiler.StepTraceAnnotation("train")


def test_device_memory_profile_is_a_pprof_protobuf(tmp_path):
  from jaxon import profiler
  keep = jnp.arange(1000.0)
  profiler.save_device_memory_profile(tmp_path / "memory.prof")
  assert (tmp_path / "memory.prof").read_bytes()[:1] == b"\n"  # field 1 of a pprof Profile
  assert isinstance(profiler.device_memory_profile(), bytes)
  del keep


# ----------------------------------------------------------------------------- compiler hook

def test_every_compilation_goes_through_the_replaceable_compiler_hook(monkeypatch):
  """chex's restrict_backends replaces `jax._src.compiler.backend_compile_and_load` to
  veto compilations; jaxon's jit, eager operations and programs with host callbacks all
  compile through that attribute, and a program compiled before is compiled again through
  it (as JAX compiles a function made anew), so the veto holds for it too."""
  from jaxon._src import compiler
  platforms = []
  original = compiler.backend_compile_and_load

  def watching(backend, *args, **kwargs):
    platforms.append(backend.platform)
    if backend.platform == "cpu" and refuse:
      raise RuntimeError("compiling for cpu is forbidden here")
    return original(backend, *args, **kwargs)

  refuse = False
  monkeypatch.setattr(compiler, "backend_compile_and_load", watching)
  x = jnp.arange(3.0)
  assert float(jaxon.jit(lambda v: (v * 17.25).sum())(x)) == 51.75
  np.testing.assert_array_equal(jnp.cumprod(x + 0.5), np.cumprod(np.arange(3.0) + 0.5))
  printed = jaxon.jit(lambda v: jaxon.debug.print("{}", v) or v + 1)(x)
  np.testing.assert_array_equal(printed, [1.0, 2.0, 3.0])
  assert len(platforms) >= 3 and set(platforms) == {"cpu"}
  refuse = True
  with pytest.raises(RuntimeError, match="forbidden"):
    jaxon.jit(lambda v: (v * 17.25).sum())(x)


def test_type_level_sharding_as_jax():
  """optax reads `jax.typeof(x).sharding` (its mesh's `are_all_axes_explicit`, its spec);
  JAX 0.10.2's values outside `set_mesh`."""
  sharding = jaxon.typeof(jnp.ones((2, 3))).sharding
  assert repr(sharding) == ("NamedSharding(mesh=AbstractMesh((), axis_types=()), "
                            "spec=P(None, None))")
  assert sharding.spec == jaxon.P(None, None) and sharding.is_fully_replicated
  assert not sharding.mesh.are_all_axes_explicit and sharding.mesh.empty
  assert jaxon.typeof(1.0).sharding.spec == jaxon.P()
  assert jaxon.NamedSharding is jaxon.sharding.NamedSharding


def test_device_queries_take_jax_arguments():
  assert jaxon.device_count("cpu") == len(jaxon.devices())
  assert jaxon.local_devices(process_index=0) == jaxon.local_devices()
  assert jaxon.local_device_count("cpu") == len(jaxon.local_devices())
  assert jaxon.process_index("cpu") == 0 and jaxon.process_count("cpu") == 1
  with pytest.raises(RuntimeError):
    jaxon.device_count("tpu")


def test_jitted_function_repr_names_pjit_function():
  def f(x):
    return x
  assert repr(jaxon.jit(f)) == f"<PjitFunction of {f!r}>"


def test_deprecated_host_names_and_pjit_warn_and_work():
  with pytest.warns(UserWarning, match="jax.host_count has been renamed to jax.process_count"):
    assert jaxon.host_count() == 1
  with pytest.warns(UserWarning, match="renamed"):
    assert jaxon.host_id() == 0 and jaxon.host_ids() == [0] == jaxon.process_indices()
  from jaxon.experimental.pjit import pjit
  with pytest.warns(DeprecationWarning, match="Please use `jax.jit` instead"):
    doubled = pjit(lambda x: 2 * x)
  assert float(doubled(jnp.float32(3))) == 6.0


def test_xla_bridge_backends_as_chex_reads_them():
  """chex's `set_n_cpu_devices` reads `jax._src.xla_bridge._backends` to know whether the
  CPU backend started (the test process's has)."""
  from jaxon._src import xla_bridge
  jaxon.devices()  # starts the backend if no test before this one did
  assert list(xla_bridge._backends) == ["cpu"]
  assert xla_bridge._backends["cpu"].device_count() == len(jaxon.devices())


def test_abstract_mesh_of_a_mesh_as_jax():
  """JAX 0.10.2's values for `make_mesh((2, 2), ('x', 'y')).abstract_mesh`."""
  mesh = jaxon.make_mesh((2, 2), ("x", "y"), devices=jaxon.devices()[:4]).abstract_mesh
  assert repr(mesh) == ("AbstractMesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit), "
                        "device_kind=cpu, num_cores=None, platform=cpu)")
  assert mesh.are_all_axes_explicit and mesh.size == 4 and not mesh.empty
  assert mesh.axis_names == ("x", "y") and mesh.axis_sizes == (2, 2)
