"""`jaxon.export`: exported programs serialize, load in a fresh process and stay
transformable (jit, grad of any order, jvp, vmap), as their originals."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import export, lax

F32 = np.float32
X = np.linspace(-1.0, 1.0, 6, dtype=F32).reshape(2, 3)
W = (np.arange(12, dtype=F32).reshape(3, 4) - 6) / 10


def mlp(x):
  return jnp.sum(jnp.tanh(jnp.tanh(x @ W) @ W.T), axis=-1)


def scanned(x):
  return lax.scan(lambda c, r: (jnp.sin(c) * r + c, c * r), jnp.ones(3, F32), x)[1].sum(1)


def conditional(x):
  return lax.cond(x.sum() > 0, lambda x: jnp.sin(x) * 2.0, jnp.cos, x).sum(1)


@jaxon.custom_jvp
def _smooth_abs(x):
  return jnp.sqrt(x * x + 0.5)


_smooth_abs.defjvp(lambda p, t: (_smooth_abs(p[0]), t[0] * p[0] * 3.0))


def custom_jvp_fun(x):
  return _smooth_abs(x).sum(1)


@jaxon.custom_vjp
def _scaled_sin(x):
  return jnp.sin(x)


_scaled_sin.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (5.0 * c * g,))


def custom_vjp_fun(x):
  return _scaled_sin(x).sum(1)


PROGRAMS = {"mlp": mlp, "scan": scanned, "cond": conditional, "custom_jvp": custom_jvp_fun,
            "custom_vjp": custom_vjp_fun}


def _results(f, forward_mode: bool) -> dict[str, np.ndarray]:
  """What the transformations of `f` give on X (shared by the parent and the subprocess);
  all but the plain call under one `jit`, so that each program compiles once."""
  scalar = lambda x: f(x).sum()  # noqa: E731

  def transformed(x):
    out = {"grad": jaxon.grad(scalar)(x),
           "grad2": jaxon.grad(lambda x: jaxon.grad(scalar)(x).sum())(x),
           "vmap": jaxon.vmap(f)(jnp.stack([x, -x]))}
    if forward_mode:
      out["jvp"] = jaxon.jvp(f, (x,), (jnp.ones_like(x),))[1]
    return out
  out = {"call": f(X), **jaxon.jit(transformed)(X)}
  return {k: np.asarray(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def serialized() -> dict[str, bytes]:
  return {name: bytes(export.export(jaxon.jit(f))(jaxon.ShapeDtypeStruct(X.shape, F32))
                      .serialize())
          for name, f in PROGRAMS.items()}


def test_loaded_programs_transform_as_originals_in_a_fresh_process(serialized, tmp_path):
  for name, data in serialized.items():
    (tmp_path / f"{name}.bin").write_bytes(data)
  script = textwrap.dedent(f"""
      import sys, numpy as np
      sys.path.insert(0, {str(__file__.rsplit('/tests/', 1)[0])!r})
      import jaxon
      from jaxon import export
      from tests.test_export import _results
      for name in {list(serialized)!r}:
        exp = export.deserialize(open({str(tmp_path)!r} + f"/{{name}}.bin", "rb").read())
        res = _results(exp.call, forward_mode=name != "custom_vjp")
        np.savez({str(tmp_path)!r} + f"/{{name}}.npz", **res)
      """)
  subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
  for name, f in PROGRAMS.items():
    loaded = np.load(tmp_path / f"{name}.npz")
    want = _results(f, forward_mode=name != "custom_vjp")
    assert set(loaded.files) == set(want)
    for key, value in want.items():
      np.testing.assert_allclose(loaded[key], value, rtol=2e-5, atol=1e-6,
                                 err_msg=f"{name} {key}")


def test_exported_fields_and_module():
  """As JAX 0.10.2 gives them for this function (golden values)."""
  def f(x, y):
    return {"s": jnp.sin(x) + y}
  exp = export.export(jaxon.jit(f))(jaxon.ShapeDtypeStruct((3,), F32), np.float32(1.0))
  assert exp.fun_name == "f"
  assert str(exp.in_tree) == "PyTreeDef(((*, *), {}))"
  assert str(exp.out_tree) == "PyTreeDef({'s': *})"
  assert [a.str_short() for a in exp.in_avals] == ["f32[3]", "f32[]"]
  assert exp.nr_devices == 1 and exp.platforms == ("cpu",)
  assert exp.calling_convention_version == 10
  assert export.minimum_supported_calling_convention_version == 9
  assert export.maximum_supported_calling_convention_version == 10
  assert export.default_export_platform() == "cpu"
  assert exp.in_shardings_hlo == (None, None) and exp.out_shardings_hlo == (None,)
  assert "func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<f32>)" in exp.mlir_module()
  x = np.array([0.5, 1.0, 2.0], F32)
  np.testing.assert_allclose(exp.run_module(x, F32(1.0))[0], np.sin(x) + 1, rtol=1e-6)
  np.testing.assert_allclose(exp.call(x, 1.0)["s"], np.sin(x) + 1, rtol=1e-6)


def test_vjp_is_exported_with_jax_calling_convention():
  exp = export.export(jaxon.jit(mlp))(jaxon.ShapeDtypeStruct(X.shape, F32))
  vjp = exp.vjp()
  assert [a.str_short() for a in vjp.in_avals] == ["f32[2,3]", "f32[2]"]
  ct = np.array([1.0, -2.0], F32)
  _, pullback = jaxon.vjp(mlp, X)
  np.testing.assert_allclose(vjp.call(X, ct)[0], pullback(ct)[0], rtol=1e-5)
  np.testing.assert_allclose(vjp.run_module(X, ct)[0], pullback(ct)[0], rtol=1e-5)
  loaded = export.deserialize(exp.serialize(vjp_order=2))
  assert loaded.vjp_order == 2 and loaded.vjp().vjp_order == 1 and loaded.has_vjp()


def test_call_checks_its_arguments():
  exp = export.export(jaxon.jit(mlp))(jaxon.ShapeDtypeStruct(X.shape, F32))
  with pytest.raises(ValueError, match=r"Dtype mismatch for args\[0\]: expected float32 and "
                                       r"called with int32"):
    exp.call(X.astype(np.int32))
  with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\].shape\[1\] \(expected "
                                       r"same constant\): expected \(2, 3\) and called with "
                                       r"\(2, 4\)"):
    exp.call(np.ones((2, 4), F32))
  with pytest.raises(ValueError, match="same pytree structure"):
    exp.call(X, X)


def test_corrupt_and_truncated_bytes_are_refused():
  data = bytes(export.export(jaxon.jit(mlp))(jaxon.ShapeDtypeStruct(X.shape, F32)).serialize())
  with pytest.raises(ValueError, match="corrupted or truncated"):
    export.deserialize(data[:-10])
  flipped = bytearray(data)
  flipped[len(data) // 2] ^= 0xFF
  with pytest.raises(ValueError, match="corrupted or truncated"):
    export.deserialize(bytes(flipped))
  with pytest.raises(ValueError, match="missing the magic header"):
    export.deserialize(b"not an export at all")
  with pytest.raises(ValueError, match="too short"):
    export.deserialize(data[:12])
  with pytest.raises(ValueError, match="format version 7"):
    export.deserialize(data[:8] + b"\x07\x00" + data[10:])


@pytest.mark.parametrize("primitive,fun", [
    ("pure_callback", lambda x: jaxon.pure_callback(np.sin, jaxon.ShapeDtypeStruct(
        x.shape, x.dtype), x)),
    ("debug_callback", lambda x: jaxon.debug.callback(print, x) or x * 2),
])
def test_host_callbacks_are_refused_at_export(primitive, fun):
  with pytest.raises(ValueError, match=f"`{primitive}` cannot be read back"):
    export.export(jaxon.jit(fun))(jaxon.ShapeDtypeStruct((3,), F32))


def test_export_needs_a_jitted_function():
  with pytest.raises(ValueError, match="must be the result of `jit`"):
    export.export(mlp)


def test_vjp_of_a_cnn_keeps_custom_jvp_rules():
  """`stax.Relu` and `jaxon.nn.relu` are custom_jvp functions whose rule calls relu again:
  the VJP of a loaded program (and the VJP of that) keeps differentiating through them."""
  from jaxon.example_libraries import stax
  _, apply = stax.serial(stax.Conv(2, (3, 3)), stax.Relu, stax.Flatten, stax.Dense(3))
  rng = np.random.default_rng(0)
  params = [tuple(rng.normal(size=s).astype(F32) for s in shapes)
            for shapes in (((3, 3, 1, 2), (1, 1, 1, 2)), (), (), ((18, 3), (3,)))]
  x = np.linspace(-1, 1, 50, dtype=F32).reshape(2, 5, 5, 1)

  def loss(params, x):
    return jnp.sum(jaxon.nn.relu(apply(params, x)) ** 2)
  flat = jaxon.tree_util.tree_leaves((params, x))
  tree = jaxon.tree_util.tree_structure((params, x))

  @jaxon.jit
  def scaled_grad(*xs):  # what the VJP computes, from the original function
    grads = jaxon.grad(loss, argnums=(0, 1))(*tree.unflatten(xs[:-1]))
    return tuple(g * xs[-1] for g in jaxon.tree_util.tree_leaves(grads))
  exp = export.export(jaxon.jit(loss))(params, x)
  vjp = exp.vjp()
  want = scaled_grad(*flat, F32(1.0))
  for got, w in zip(vjp.call(*flat, F32(1.0)), want):
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
  cts = [np.ones_like(w) for w in want]  # second order: the VJP of the VJP
  second = jaxon.jit(lambda *xs: jaxon.vjp(scaled_grad, *xs)[1](tuple(cts)))
  for got, w in zip(vjp.vjp().call(*flat, F32(1.0), *cts), second(*flat, F32(1.0))):
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)


def test_module_only_exports_refuse_jaxon_calls():
  """jax2tf.convert exports the module alone (its programs may call TF): such an Exported
  says so rather than failing to read a jaxpr it does not have."""
  from jaxon._src.export import _export
  exp = _export.export_module_only(jaxon.jit(mlp))(X)
  assert exp.jaxpr_text is None and "stablehlo.tanh" in exp.mlir_module()
  for use in (lambda: exp.call(X), exp.serialize):
    with pytest.raises(ValueError, match="exported for its StableHLO module only"):
      use()
