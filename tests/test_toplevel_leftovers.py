"""JAX's remaining top-level API: config options and their guards, the traced stage,
`fwd_and_bwd`, user contexts, the runtime inventory, and the small namespaces."""
from __future__ import annotations

import gc
import logging

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import stages
from jaxon._src import core
from jaxon._src.config import config

# (flag, default, an accepted value, a refused value) as JAX 0.10.2 has them.
_OPTIONS = [
    ("jax_allow_f16_reductions", True, False, None),
    ("jax_array_garbage_collection_guard", None, "log", "bogus"),
    ("jax_debug_key_reuse", False, True, None),
    ("jax_enable_custom_prng", False, True, None),
    ("jax2tf_associative_scan_reductions", False, True, None),
    ("jax_no_execution", False, True, None),
    ("jax_no_tracing", False, True, None),
    ("jax_softmax_custom_jvp", False, True, None),
    ("jax_thread_guard", False, True, None),
    ("jax_auto_pcast", True, False, None),
    ("jax_remove_size_one_mesh_axis_from_type", False, True, None),
    ("jax_transfer_guard_host_to_device", None, "log", "bogus"),
    ("jax_transfer_guard_device_to_device", None, "disallow", "bogus"),
    ("jax_transfer_guard_device_to_host", None, "allow", "bogus"),
]


@pytest.mark.parametrize("name,default,value,bad", _OPTIONS)
def test_option_reads_updates_and_scopes(name, default, value, bad):
  assert config.read(name) == default
  context = getattr(jaxon, name.removeprefix("jax_"))
  with context(value):
    assert getattr(config, name) == value
  assert getattr(config, name) == default
  config.update(name, value)
  try:
    assert config.read(name) == value
  finally:
    config.update(name, default)
  if bad is not None:
    with pytest.raises(ValueError, match="new enum value must be None or in"):
      config.update(name, bad)


def test_legacy_prng_key_and_default_device_values():
  assert config.jax_legacy_prng_key.value == "allow"
  with pytest.raises(ValueError):
    config.update("jax_legacy_prng_key", "bogus")
  with jaxon.default_device(jaxon.devices()[0]):
    assert jnp.ones(2).devices() == {jaxon.devices()[0]}
  with pytest.raises(ValueError, match="must be passed either a Device object"):
    jaxon.default_device(3)
  with pytest.raises(NotImplementedError, match="jaxon.device_put"):
    jaxon.default_device(jaxon.devices()[1])


def test_allow_f16_reductions_false_refuses_half_precision_sums():
  x = jnp.ones(3, jnp.float16)
  with jaxon.allow_f16_reductions(False):
    assert float(jnp.sum(x)) == 3.0  # jnp.sum accumulates in float32, as in JAX
    with pytest.raises(ValueError, match=r"reduce_sum on operand f16\[3\] is not allowed "
                       "when jax_allow_f16_reductions=False"):
      jaxon.lax.reduce_sum(x, (0,))
    with pytest.raises(ValueError, match=r"operand bf16\[3\] is not allowed"):
      jaxon.lax.reduce_sum(x.astype(jnp.bfloat16), (0,))
    assert float(jaxon.lax.reduce_sum(x.astype(jnp.float32), (0,))) == 3.0
  assert float(jaxon.lax.reduce_sum(x, (0,))) == 3.0


def test_enable_x64_context_retraces_jit():
  f = jaxon.jit(lambda x: x * 2)
  assert f(1).dtype == np.int32
  with jaxon.enable_x64(True):
    assert config.jax_enable_x64
    assert jnp.arange(3.0).dtype == np.float64
    assert f(1).dtype == np.int64
  assert jnp.arange(3.0).dtype == np.float32
  assert f(1).dtype == np.int32


def test_transfer_guard_refuses_implicit_transfers_only(caplog):
  host = np.ones(2, np.float32)
  f = jaxon.jit(lambda a: a + 1)
  with jaxon.transfer_guard("disallow"):
    with pytest.raises(jaxon.errors.JaxRuntimeError,
                       match="Disallowed host-to-device transfer: aval=ShapedArray"):
      jnp.asarray(host)
    with pytest.raises(jaxon.errors.JaxRuntimeError, match="Disallowed host-to-device"):
      f(host)
    np.testing.assert_array_equal(f(jaxon.device_put(host)), host + 1)
  with jaxon.transfer_guard_host_to_device("disallow_explicit"):
    with pytest.raises(jaxon.errors.JaxRuntimeError, match="Disallowed host-to-device"):
      jaxon.device_put(host)
  with caplog.at_level(logging.WARNING), jaxon.transfer_guard("log"):
    jnp.asarray(host)
  assert "host-to-device transfer: aval=ShapedArray(float32[2])" in caplog.text


def test_no_tracing_and_no_execution():
  f = jaxon.jit(lambda a: a * 2)
  f(jnp.ones(2))
  with jaxon.no_tracing(True):
    f(jnp.ones(2))  # a cache hit traces nothing
    with pytest.raises(RuntimeError, match="re-tracing function <lambda> at .* for `jit`, "
                       "but 'no_tracing' is set"):
      f(jnp.ones(3))
  with jaxon.no_execution(True):
    with pytest.raises(RuntimeError, match=r"JAX tried to execute function jit\(<lambda>\), "
                       "but the no_execution config option is set"):
      f(jnp.ones(2))


def test_trace_stage():
  f = jaxon.jit(lambda x, y: (x * 2, y), donate_argnums=1)
  traced = f.trace(jnp.ones(3), 2.0)
  assert isinstance(traced, stages.Traced)
  assert traced.fun_name == "<lambda>"
  # The jaxpr JAX 0.10.2 traces here prints `mul a 2.0:f32[]`; jaxon omits the literal type.
  assert str(traced.jaxpr) == "{ lambda ; a:f32[3] b:f32[]. let c:f32[3] = mul a 2.0 in (c, b) }"
  out = traced.out_info
  assert (out[0].shape, out[0].dtype, out[1].weak_type) == ((3,), np.float32, True)
  (x_info, y_info), kwargs = traced.args_info
  assert kwargs == {} and (x_info.shape, x_info.donated, y_info.donated) == ((3,), False, True)
  lowered = traced.lower()
  assert lowered.args_info == traced.args_info
  with pytest.raises(NotImplementedError, match="compiler_options"):
    lowered.compile({"xla_cpu_enable_fast_math": True})
  np.testing.assert_array_equal(lowered.compile()(jnp.ones(3), 2.0)[0], np.full(3, 2.0))
  assert isinstance(stages.ArgInfo(core.ShapedArray((2,), np.float32), False).shape, tuple)


def test_fwd_and_bwd_match_the_analytic_vjp():
  def f(x, w):
    return jnp.sin(x @ w), jnp.sum(w)

  x, w = np.arange(4.0, dtype=np.float32).reshape(2, 2), np.eye(2, dtype=np.float32) + 0.5
  ct = np.ones((2, 2), np.float32)
  fwd, bwd = jaxon.fwd_and_bwd(f, argnums=(0, 1), has_aux=True)
  y, residuals, aux = fwd(x, w)
  np.testing.assert_allclose(y, np.sin(x @ w), rtol=1e-6)
  assert float(aux) == w.sum()
  dy = np.cos(x @ w) * ct
  dx, dw = bwd(residuals, ct)
  np.testing.assert_allclose(dx, dy @ w.T, rtol=1e-5)
  np.testing.assert_allclose(dw, x.T @ dy, rtol=1e-5)
  fwd1, bwd1 = jaxon.fwd_and_bwd(lambda a, b: a * b, argnums=1, jitted=False)
  assert float(bwd1(fwd1(3.0, 2.0)[1], 1.0)) == 3.0


def test_user_context_is_part_of_the_jit_key():
  traces = []
  ctx = jaxon.make_user_context(1)

  @jaxon.jit
  def f(x):
    traces.append(ctx.value)
    return x + ctx.value
  assert float(f(1.0)) == 2.0
  with ctx(5):
    assert ctx.value == 5 and float(f(1.0)) == 6.0
  assert float(f(1.0)) == 2.0 and traces == [1, 5]
  assert ctx.get_global() == 1
  with pytest.raises(TypeError, match="missing 1 required positional argument"):
    ctx()


def test_live_arrays_and_copy_to_host_async():
  x = jnp.arange(5.0) + 1
  assert any(a is x for a in jaxon.live_arrays())
  tree = {"a": x, "b": 1}
  assert jaxon.copy_to_host_async(tree) is tree
  x.delete()
  y = jnp.ones(3) * 2
  ident = id(y)
  assert not any(a is x for a in jaxon.live_arrays())
  del y
  gc.collect()
  assert all(id(a) != ident for a in jaxon.live_arrays())


def test_namespaces_and_environment_info(capsys):
  assert jaxon.version.__version__ == jaxon.__version__
  assert jaxon.version._minimum_jaxlib_version == jaxon.lib.__version__ == "0.10.2"
  assert [s.name for s in jaxon.memory.Space] == ["Device", "Host", "Any"]  # JAX 0.10.2's
  shard = jnp.ones(2).addressable_shards[0]
  assert isinstance(shard, jaxon.Shard)
  assert shard._fields == ("device", "index", "replica_id", "data")
  info = jaxon.print_environment_info(return_string=True)
  assert "jaxlib: 0.10.2" in info and "process_count: 1" in info
  assert jaxon.print_environment_info() is None
  assert capsys.readouterr().out.startswith("jaxon:")


def test_jaxpr_checker_raises_jaxpr_type_error():
  closed = jaxon.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0)
  jaxpr = closed.jaxpr
  swapped = core.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns[::-1])
  with pytest.raises(jaxon.errors.JaxprTypeError, match="used before it is bound"):
    core.check_jaxpr(swapped)
  assert issubclass(jaxon.errors.JaxprTypeError, TypeError)


def test_allow_f16_reductions_false_refuses_sums_computed_before():
  """Abstract evaluation and eager signatures are cached: the flag is checked every time."""
  x = jnp.ones(3, jnp.float16)
  summed = jaxon.jit(lambda x: jaxon.lax.reduce_sum(x, (0,)))
  assert float(jaxon.lax.reduce_sum(x, (0,))) == float(summed(x)) == 3.0
  with jaxon.allow_f16_reductions(False):
    for f in (lambda x: jaxon.lax.reduce_sum(x, (0,)), summed,
              jaxon.make_jaxpr(lambda x: jaxon.lax.reduce_sum(x, (0,)))):
      with pytest.raises(ValueError, match="not allowed when jax_allow_f16_reductions=False"):
        f(x)
