"""multihost_utils' host-local <-> global conversions and preemption/liveness names,
custom_derivatives' linear_call and symbolic-zeros helpers, and
ad_checkpoint.print_saved_residuals. Golden values and texts came from JAX 0.10.2."""
import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.ad_checkpoint import checkpoint_name, print_saved_residuals
from jaxon.custom_derivatives import (
  CustomVJPPrimal,
  SymbolicZero,
  custom_vjp,
  custom_vjp_primal_tree_values,
  linear_call,
  zero_from_primal,
)
from jaxon.experimental import multihost_utils as mu
from jaxon.sharding import Mesh, NamedSharding
from jaxon.sharding import PartitionSpec as P
from jaxon.test_util import check_grads


@pytest.fixture(scope="module")
def mesh():
  return Mesh(np.array(jaxon.devices()).reshape(4, 2), ("x", "y"))


# ----------------------------------------------------------------------------- multihost


def test_host_local_to_global_single_process(mesh):
  x = np.arange(8.).reshape(4, 2)
  g = mu.host_local_array_to_global_array({"a": x, "b": np.int32([1])}, mesh,
                                          {"a": P("x"), "b": P()})
  assert g["a"].sharding == NamedSharding(mesh, P("x"))
  assert g["a"].dtype == np.float32 and not g["a"].weak_type
  np.testing.assert_array_equal(g["a"], x)
  np.testing.assert_array_equal(g["b"], [1])
  # Already host-local in one process: returned as it is.
  assert mu.global_array_to_host_local_array(g["a"], mesh, P("x")) is g["a"]
  back = mu.global_array_to_host_local_array(x, mesh, P("x"))
  assert back.sharding == NamedSharding(mesh, P("x"))
  np.testing.assert_array_equal(back, x)


def test_conversions_under_transformations(mesh):
  x = np.arange(8., dtype=np.float32).reshape(4, 2)
  ltg = lambda a: mu.host_local_array_to_global_array(a, mesh, P("x"))  # noqa: E731
  # JAX 0.10.2's text for make_jaxpr(ltg).
  assert str(jaxon.make_jaxpr(ltg)(x)) == """\
{ lambda ; a:f32[4,2]. let
    b:f32[4,2] = host_local_array_to_global_array[
      global_mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto))
      pspec=P('x',)
    ] a
  in (b,) }"""
  np.testing.assert_array_equal(jaxon.jit(ltg)(x), x)
  check_grads(lambda a: ltg(a) ** 3, (x / 8,), order=2, modes=["fwd", "rev"], atol=1e-3, rtol=1e-3)
  xs = np.stack([x, 2 * x, 3 * x])
  batched = jaxon.vmap(ltg, in_axes=1, out_axes=1)(xs.transpose(1, 0, 2))
  assert batched.sharding.spec == P("x", None)
  np.testing.assert_array_equal(batched, xs.transpose(1, 0, 2))
  gtl = jaxon.vmap(lambda a: mu.global_array_to_host_local_array(a, mesh, P("x")))
  np.testing.assert_array_equal(gtl(xs), xs)


def test_conversion_errors(mesh):
  with pytest.raises(ValueError, match="`None` is not a valid input to the pspecs"):
    mu.host_local_array_to_global_array(np.ones(4), mesh, None)
  with pytest.raises(ValueError, match="partitioned 4 times, but the dimension size is 3"):
    mu.host_local_array_to_global_array(np.ones(3), mesh, P("x"))
  with pytest.raises(ValueError, match="must be a tree prefix"):
    mu.host_local_array_to_global_array((np.ones(4), np.ones(4)), mesh, (P("x"),))


def test_preemption_and_live_devices_outside_a_job():
  assert mu.reached_preemption_sync_point(3) is False
  with pytest.raises(RuntimeError, match="Distributed JAX not initialized"):
    with mu.live_devices(jaxon.devices()):
      pass
  err = mu.ProcessFailureError({1})
  assert err.failed_devices == {1} and str(err) == "Devices failed: {1}"


# ----------------------------------------------------------------------------- custom_derivatives


def _div(x, y):
  """x + x / y, the division a linear_call whose transpose is written by hand."""
  return x + linear_call(lambda r, a: a / r, lambda r, t: t / r, y, x)


def test_linear_call_values_and_derivatives():
  # JAX 0.10.2: f(1, 2) = 1.5, grad = 1.5, jvp tangent for 3.0 = 4.5.
  check = jaxon.jit(lambda x, y: (_div(x, y), jaxon.grad(_div)(x, y),
                                  jaxon.jvp(lambda a: _div(a, y), (x,), (3.,))[1]))
  np.testing.assert_allclose(check(1., 2.), (1.5, 1.5, 4.5))
  check_grads(lambda x: _div(x, 2.), (1.,), order=2, modes=["fwd", "rev"], atol=1e-3, rtol=1e-3)
  # The transpose used is the user's (3x), not that of the callee (2x): JAX gives 3.0.
  g = lambda x: linear_call(lambda r, a: 2 * a, lambda r, t: 3 * t, (), x)  # noqa: E731
  assert jaxon.grad(g)(1.) == 3.
  assert jaxon.linear_transpose(g, 1.)(1.)[0] == 3.
  assert jaxon.grad(lambda x: jaxon.grad(g)(x) * x)(1.) == 3.
  with pytest.raises(NotImplementedError, match="Batching rule for 'linear_call'"):
    jaxon.vmap(_div)(jnp.ones(2), jnp.ones(2))


def test_linear_call_transpose_structure_error():
  f = lambda x: linear_call(lambda r, a: a, lambda r, t: (t, t), (), x)  # noqa: E731
  with pytest.raises(TypeError, match="transpose output pytree structure must match"):
    jaxon.grad(f)(1.)


def test_symbolic_zeros_helpers():
  assert custom_vjp_primal_tree_values({"a": CustomVJPPrimal(1., False)}) == {"a": 1.}
  with pytest.raises(TypeError, match="unexpected leaf type"):
    custom_vjp_primal_tree_values({"a": 1.})
  zeros = zero_from_primal({"a": jnp.ones(2), "b": 1})
  np.testing.assert_array_equal(zeros["a"], [0., 0.])
  assert zeros["b"].dtype == jaxon.dtypes.float0
  symbolic = zero_from_primal(jnp.ones(2, jnp.int32), True)
  assert type(symbolic) is SymbolicZero and symbolic.shape == (2,)

  @custom_vjp
  def mul(x, y):
    return x * y

  def fwd(x, y):
    assert type(x) is CustomVJPPrimal
    x, y = custom_vjp_primal_tree_values((x, y))
    return x * y, (x, y)
  mul.defvjp(fwd, lambda r, g: (g * r[1], g * r[0]), symbolic_zeros=True)
  assert jaxon.grad(mul)(1., 2.) == 2.


# ------------------------------------------------------------------ print_saved_residuals


def test_print_saved_residuals(capsys):
  def f(x, y):
    w = checkpoint_name(jnp.sin(x) * y, "w")
    return jnp.cos(w).sum() + x[0]
  print_saved_residuals(f, jnp.ones(3), 2.0)
  print_saved_residuals(jaxon.checkpoint(f), jnp.ones(3), 2.0)
  print_saved_residuals(lambda x, y: x["a"] * y, {"a": jnp.ones(2)}, 3)
  print_saved_residuals(lambda x: jnp.exp(x) * np.arange(2.), jnp.ones(2))
  # JAX 0.10.2's lines, less their "from <file>:<line> (<function>)" source suffixes.
  assert capsys.readouterr().out.splitlines() == [
      "f32[3] output of sin", "f32[3] output of cos", "f32[] output of convert_element_type",
      "f32[3] output of sin",
      "f32[3] from the argument x", "f32[] from the argument y",
      "f32[] output of convert_element_type",
      "f32[2] from a constant", "f32[2] output of exp"]
