"""The autodiff API: jvp, linearize, vjp, grad and value_and_grad options, jacfwd, jacrev,
hessian, linear_transpose, stop_gradient, float0 tangents, symbolic zeros, higher order and
perturbation confusion. Oracles: closed-form derivatives and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import (
  grad,
  hessian,
  jacfwd,
  jacrev,
  jit,
  jvp,
  lax,
  linear_transpose,
  linearize,
  value_and_grad,
  vjp,
  vmap,
)
from jaxon._src import dtypes
from jaxon.interpreters import ad
from tests.util import check_grads


def test_grad_tanh_seed_003_value():
  assert repr(grad(jnp.tanh)(1.0)) == "Array(0.41997433, dtype=float32, weak_type=True)"


def test_grad_tanh_seed_003_value_x64(x64):
  np.testing.assert_allclose(grad(jnp.tanh)(1.0), 0.41997434161402603, rtol=1e-15)


def test_jvp_and_linearize_agree():
  f = lambda x, y: jnp.sin(x) * y + jnp.exp(x)
  primals, tangents = (0.3, 2.0), (1.0, -1.0)
  out, t = jvp(f, primals, tangents)
  out2, f_jvp = linearize(f, *primals)
  np.testing.assert_allclose(out, out2)
  np.testing.assert_allclose(f_jvp(*tangents), t, rtol=1e-6)
  np.testing.assert_allclose(t, np.cos(0.3) * 2 + np.exp(0.3) - np.sin(0.3), rtol=1e-6)


def test_vjp_pytree_cotangent_and_has_aux():
  def f(p):
    return {"a": p["x"] * p["y"], "b": jnp.sin(p["x"])}, p["y"] + 1
  p = {"x": 1.5, "y": 2.0}
  out, pullback, aux = vjp(f, p, has_aux=True)
  assert aux == 3.0
  (ct,) = pullback({"a": 1.0, "b": 1.0})
  np.testing.assert_allclose(ct["x"], 2.0 + np.cos(1.5), rtol=1e-6)
  np.testing.assert_allclose(ct["y"], 1.5)


def test_vjp_rejects_mismatched_cotangent():
  _, pullback = vjp(lambda x: x * 2, jnp.ones(3))
  with pytest.raises(ValueError, match="Shape of cotangent"):
    pullback(jnp.ones(2))
  with pytest.raises(ValueError, match="tree structure"):
    pullback((jnp.ones(3),))


@pytest.mark.parametrize("argnums,expected", [(0, 6.0), (1, 4.0), ((0, 1), (6.0, 4.0)),
                                              (-1, 4.0)])
def test_grad_argnums(argnums, expected):
  g = grad(lambda x, y: x * y * 2.0, argnums=argnums)(2.0, 3.0)
  np.testing.assert_allclose(g, expected)


def test_grad_has_aux_and_value_and_grad():
  g, aux = grad(lambda x: (x ** 2, {"v": x}), has_aux=True)(3.0)
  np.testing.assert_allclose(g, 6.0)
  np.testing.assert_allclose(aux["v"], 3.0)
  (v, aux), g = value_and_grad(lambda x: (x ** 2, x + 1), has_aux=True)(3.0)
  np.testing.assert_allclose((v, aux, g), (9.0, 4.0, 6.0))


def test_grad_errors_name_the_problem():
  with pytest.raises(TypeError, match="scalar-output"):
    grad(lambda x: x * jnp.ones(2))(1.0)
  with pytest.raises(TypeError, match="argument 0 has dtype int32"):
    grad(lambda x: x * 1.0)(1)
  with pytest.raises(TypeError, match="real-valued outputs"):
    grad(lambda x: x * 1j)(1.0)
  with pytest.raises(TypeError, match="argnums=2 requires at least 3"):
    grad(lambda x, y: x, argnums=2)(1.0, 2.0)


def test_grad_allow_int_gives_float0():
  gx, gi = grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(2.0, 3)
  np.testing.assert_allclose(gx, 3.0)
  assert gi.dtype == dtypes.float0 and gi.shape == ()


def test_jvp_of_integer_input_takes_float0_tangent():
  out, t = jvp(lambda x, i: x * i, (2.0, 3), (1.0, np.zeros((), dtypes.float0)))
  np.testing.assert_allclose((out, t), (6.0, 3.0))
  with pytest.raises(TypeError, match="tangent dtype"):
    jvp(lambda i: i * 2, (3,), (1.0,))


def test_holomorphic_grad():
  f = lambda z: z ** 2 + 1j * z
  g = grad(f, holomorphic=True)(1.0 + 2.0j)
  np.testing.assert_allclose(g, 2 * (1.0 + 2.0j) + 1j, rtol=1e-6)
  with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex"):
    grad(f, holomorphic=True)(1.0)


def test_symbolic_zero_tangents_stay_symbolic():
  seen = []

  def rule(primals, tangents):
    seen.append(tuple(type(t) is ad.Zero for t in tangents))
    return lax.mul(*primals), ad.instantiate_zeros(tangents[0])
  prim = jaxon.core.Primitive("zero_probe")
  prim.def_impl(lambda x, y: np.multiply(x, y))
  prim.def_abstract_eval(lambda x, y: x)
  ad.primitive_jvps[prim] = rule
  jvp(lambda x, y: prim.bind(x, y), (2.0, 3.0), (1.0, 0.0))
  jvp(lambda x: prim.bind(x, 3.0), (2.0,), (1.0,))
  assert seen == [(False, False), (False, True)]


def test_jacobians_match_closed_form():
  a = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]], np.float32)
  f = lambda x: jnp.tanh(a @ x)
  x = np.array([0.1, -0.2, 0.3], np.float32)
  expected = (1 - np.tanh(a @ x) ** 2)[:, None] * a
  np.testing.assert_allclose(jacfwd(f)(x), expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(jacrev(f)(x), expected, rtol=1e-5, atol=1e-6)


def test_jacobian_pytrees_and_argnums():
  f = lambda x, y: {"p": x * y[0], "q": jnp.sum(y)}
  x, y = jnp.array([0.0, 1.0]), jnp.ones(3)
  for jac in (jacfwd, jacrev):
    j = jac(f, argnums=(0, 1))(x, y)
    assert j["p"][0].shape == (2, 2) and j["p"][1].shape == (2, 3)
    assert j["q"][0].shape == (2,) and j["q"][1].shape == (3,)
    np.testing.assert_allclose(j["p"][1][:, 0], x)
    np.testing.assert_allclose(j["q"][1], np.ones(3))


@pytest.mark.parametrize("n", [1, 3])
def test_hessian_of_quadratic_is_its_matrix(n):
  rng = np.random.RandomState(n)
  m = rng.standard_normal((n, n)).astype(np.float32)
  a = m + m.T
  f = lambda x: 0.5 * x @ (a @ x)
  np.testing.assert_allclose(hessian(f)(jnp.ones(n)), a, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(jit(hessian(f))(jnp.ones(n)), a, rtol=1e-5, atol=1e-5)


def test_hessian_has_aux():
  h, aux = hessian(lambda x: (jnp.sum(x ** 3), x[0]), has_aux=True)(jnp.array([1.0, 2.0]))
  np.testing.assert_allclose(h, np.diag([6.0, 12.0]))
  assert aux == 1.0


def test_jacfwd_rejects_integer_inputs_and_jacrev_complex_outputs():
  with pytest.raises(TypeError, match="jacfwd requires real- or complex-valued inputs"):
    jacfwd(lambda x: x)(1)
  with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
    jacrev(lambda x: x * 1j)(1.0)


def test_linear_transpose():
  m = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
  f_t = linear_transpose(lambda x: m @ x, jnp.ones(2))
  (ct,) = f_t(jnp.array([1.0, 0.0, 2.0]))
  np.testing.assert_allclose(ct, m.T @ np.array([1.0, 0.0, 2.0]))
  with pytest.raises(TypeError, match="cotangent"):
    f_t(jnp.ones(2))
  with pytest.raises(TypeError, match="float or complex"):
    linear_transpose(lambda i: i, 1)


def test_stop_gradient():
  np.testing.assert_allclose(grad(lambda x: x * lax.stop_gradient(x))(3.0), 3.0)
  tree = lax.stop_gradient({"a": 1.0, "i": 2})
  assert tree["i"] == 2
  assert str(jaxon.make_jaxpr(lax.stop_gradient)(1.0)) == (
      "{ lambda ; a:f32[]. let b:f32[] = stop_gradient a in (b,) }")
  np.testing.assert_allclose(vmap(lax.stop_gradient)(jnp.array([0.0, 1.0, 2.0])), [0.0, 1.0, 2.0])


def test_higher_order_derivatives_of_sin():
  f = jnp.sin
  derivs = [jnp.sin, jnp.cos, lambda x: -jnp.sin(x), lambda x: -jnp.cos(x)]
  for expected in derivs:
    np.testing.assert_allclose(f(0.7), expected(0.7), rtol=1e-5)
    f = grad(f)
  np.testing.assert_allclose(f(0.7), np.sin(0.7), rtol=1e-4)


def test_no_perturbation_confusion():
  # d/dx (x * d/dy (x + y)) at any point is 1 (seed-independent classic).
  f = lambda x: x * grad(lambda y: x + y)(0.0)
  assert grad(f)(2.0) == 1.0
  assert jit(grad(f))(2.0) == 1.0
  _, t = jvp(f, (2.0,), (1.0,))
  assert t == 1.0


def test_nested_closure_over_outer_tracer():
  def outer(x):
    def inner(y):
      return jnp.sin(x * y)
    return grad(inner)(2.0)
  expected = np.cos(2.0 * 0.5) - 0.5 * 2.0 * np.sin(2.0 * 0.5)
  np.testing.assert_allclose(grad(outer)(0.5), expected, rtol=1e-5)
  np.testing.assert_allclose(jit(grad(outer))(0.5), expected, rtol=1e-5)


def test_check_grads_detects_a_wrong_rule():
  prim = jaxon.core.Primitive("wrong_sin")
  prim.def_impl(lambda x: np.sin(x))
  prim.def_abstract_eval(lambda x: x)
  ad.defjvp(prim, lambda g, x: g * jnp.sin(x))  # should be cos
  with pytest.raises(AssertionError):
    check_grads(prim.bind, (np.float32(0.3),), order=1, modes=("fwd",))


@pytest.mark.parametrize("f", [lambda x: jnp.sin(x) * x, lambda x: jnp.exp(jnp.tanh(x)),
                               lambda x: x ** 3 / (1.0 + x * x)])
def test_check_grads_order_3(f, x64):
  check_grads(f, (np.array([0.3, -0.7]),), order=3)


def test_nested_jit_primal_part_stays_out_of_the_linear_jaxpr():
  # The inner jit computes an integer index and a boolean from primal values only; reverse
  # mode must evaluate it with the known values, not stage it among the tangents (where
  # the boolean would reach select_n's transpose as a linear input).
  table = np.array([-1.0, 0.0, 0.5, 2.0], np.float32)
  position = jit(lambda x: jnp.sum(x[:, None] > table, axis=1))
  f = jit(lambda x: jnp.where(jnp.asarray(table)[position(x) % 4] > 0, x * x, 0.0))
  x = np.array([-2.0, -0.7, 0.2, 1.1, 3.0], np.float32)
  expected = np.where(table[np.sum(x[:, None] > table, axis=1) % 4] > 0, 2 * x, 0.0)
  (ct,) = vjp(f, x)[1](np.ones(5, np.float32))
  np.testing.assert_allclose(ct, expected)
  np.testing.assert_allclose(grad(lambda x: jnp.sum(f(x)))(x), expected)
  _, f_jvp = linearize(f, x)
  linear_eqns = str(jaxon.make_jaxpr(f_jvp)(x))
  assert "gt" not in linear_eqns and "reduce_sum" not in linear_eqns, linear_eqns


def test_jit_returns_float0_tangents_as_host_zeros():
  """As in JAX: a jitted gradient with respect to an integer is a float0 NumPy array."""
  f = jaxon.jit(jaxon.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True))
  dx, dn = f(2.0, 3)
  assert float(dx) == 3.0
  assert isinstance(dn, np.ndarray) and dn.dtype == dtypes.float0 and dn.shape == ()
  _, tangent = jaxon.jit(lambda n: jaxon.jvp(lambda m: m * 2, (n,),
                                             (np.zeros((3,), dtypes.float0),)))(jnp.arange(3))
  assert tangent.dtype == dtypes.float0 and tangent.shape == (3,)


def test_grad_of_an_identity_is_an_array():
  """The seed cotangent comes straight back: it is still an Array, typed as JAX's."""
  g = jaxon.grad(lambda x, y: x)(0.7, 0)
  assert type(g) is jaxon.Array and g.weak_type and float(g) == 1.0
  g = jaxon.grad(lambda x: x)(np.float32(0.7))
  assert type(g) is jaxon.Array and not g.weak_type and g.dtype == np.float32


def test_public_check_grads_uses_jaxs_step_tolerance_and_precision():
  """`jaxon.test_util` as `jax.test_util` (values recorded from JAX 0.10.2): a step of 1e-4
  with the difference taken in float32, and float32's gradient tolerance of 2e-3, which
  catches a derivative 1% off."""
  from jaxon import test_util
  assert test_util.numerical_jvp(jnp.exp, (np.float32(1.0),), (np.float32(1.0),)) \
      == np.float32(2.719164)
  got = test_util.numerical_jvp(lambda x: jnp.sin(x) * x, (np.float32(0.3),),
                                (np.float32(-2.0),))
  assert got == np.float32(-1.1642277) and got.dtype == np.float32

  @jaxon.custom_jvp
  def off_by_one_percent(x):
    return jnp.sin(x)
  off_by_one_percent.defjvp(lambda p, t: (jnp.sin(p[0]), 1.01 * jnp.cos(p[0]) * t[0]))
  with pytest.raises(AssertionError, match="JVP tangent"):
    test_util.check_grads(off_by_one_percent, (np.float32(0.5),), order=1)
  test_util.check_grads(jnp.sin, (np.float32(0.5),), order=2, modes=("fwd", "rev", "lin"))
