"""Symbolic dimensions and shape-polymorphic export: one export serves every batch size,
and shapes that do not fit the specification give JAX's errors."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import export

F32 = np.float32


def test_dimension_expressions_print_and_compare_as_jax():
  """Golden values printed by JAX 0.10.2."""
  b, = export.symbolic_shape("b")
  assert [str(e) for e in (b, b + 1, 2 * b, b // 2, b % 2, b * b - b, b - 1, 3 - b)] == [
      "b", "b + 1", "2*b", "floordiv(b, 2)", "mod(b, 2)", "b^2 - b", "b - 1", "- b + 3"]
  assert str(export.symbolic_shape("b, 2*b+1, b*b")) == "(b, 2*b + 1, b^2)"
  assert (b == 1, b != 1, b >= 1, (2 * b) // 2 == b, 2 * b - b == b) == (
      False, True, True, True, True)
  assert export.is_symbolic_dim(b) and not export.is_symbolic_dim(3)
  a, c = export.symbolic_shape("a, c")
  with pytest.raises(export.InconclusiveDimensionOperation, match="'a' >= 'c' is inconclusive"):
    a >= c  # noqa: B015
  with pytest.raises(export.InconclusiveDimensionOperation, match="requires a constant"):
    int(a)
  d, = export.symbolic_shape("d", constraints=("d >= 4",))
  assert (d >= 4, d > 3, d < 2) == (True, True, False)
  assert export.symbolic_shape("(b, ...)", like=(3, 4, 5))[1:] == (4, 5)
  specs = export.symbolic_args_specs((np.zeros((3, 4)), np.zeros((3,))), ["(b, _)", "(b,)"])
  assert str(specs[0].shape) == "(b, 4)" and str(specs[1].shape) == "(b,)"
  with pytest.raises(ValueError, match="syntax error in symbolic shape"):
    export.symbolic_shape("b, b +")


def test_symbolic_avals_print_as_jax():
  b, = export.symbolic_shape("b")
  jaxpr = jaxon.make_jaxpr(lambda x: jnp.sum(x * 2.0, axis=0))(
      jaxon.ShapeDtypeStruct((b + 1, 2), F32))
  assert str(jaxpr.in_avals[0]) == "ShapedArray(float32[b + 1,2])"
  assert jaxpr.jaxpr.eqns[0].outvars[0].aval.str_short() == "f32[b + 1,2]"


W = (np.arange(12, dtype=F32).reshape(3, 4) - 5) / 10


def program(x, y):
  h = jnp.tanh(x @ W) - jnp.mean(x, axis=0)[:1]
  z = h.reshape(-1)[: x.shape[0]] + y.reshape((x.shape[0], 2)).sum(1)
  return jnp.concatenate([z, jnp.arange(x.shape[0]) * 1.0]) + x[1:].sum()


@pytest.fixture(scope="module")
def exported() -> export.Exported:
  b, three, twob = export.symbolic_shape("b, 3, 2*b")
  exp = export.export(jaxon.jit(program))(jaxon.ShapeDtypeStruct((b, three), F32),
                                          jaxon.ShapeDtypeStruct((twob,), F32))
  return export.deserialize(exp.serialize())


def test_export_once_call_with_any_batch(exported):
  assert [a.str_short() for a in exported.in_avals] == ["f32[b,3]", "f32[2*b]"]
  assert [a.str_short() for a in exported.out_avals] == ["f32[2*b]"]
  module = exported.mlir_module()
  assert "jax.uses_shape_polymorphism = true" in module
  assert "tensor<?x3xf32>" in module and "@shape_assertion" in module
  def value_and_grads(f):
    return jaxon.jit(lambda x, y: (f(x, y), jaxon.grad(lambda x, y: f(x, y).sum(),
                                                       argnums=(0, 1))(x, y)))
  got_fn, want_fn = value_and_grads(exported.call), value_and_grads(program)
  rng = np.random.default_rng(0)
  for n in (1, 3, 17):
    x, y = rng.normal(size=(n, 3)).astype(F32), rng.normal(size=(2 * n,)).astype(F32)
    want = want_fn(x, y)
    for got, w in zip(jaxon.tree_util.tree_leaves(got_fn(x, y)),
                      jaxon.tree_util.tree_leaves(want)):
      np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
    if n == 3:  # x[1:] is empty for n == 1: refining that module is checked with n > 1
      np.testing.assert_allclose(exported.run_module(x, y)[0], want[0], rtol=1e-5, atol=1e-5)


def test_wrong_shapes_give_jax_errors(exported):
  with pytest.raises(ValueError, match=r"Found inconsistency between dimension size "
                     r"args\[1\].shape\[0\] \(= 5\) and the specification '2\*b' \(= 6\)"):
    exported.call(np.ones((3, 3), F32), np.ones((5,), F32))
  with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\].shape\[1\] \(expected "
                     r"same constant\): expected \(b, 3\) and called with \(3, 4\)"):
    exported.call(np.ones((3, 4), F32), np.ones((6,), F32))
  with pytest.raises(ValueError, match=r"Expected value >= 1 for dimension variable 'b'"):
    exported.call(np.ones((0, 3), F32), np.ones((0,), F32))


def test_symbolic_vjp_export():
  b, = export.symbolic_shape("b")
  exp = export.export(jaxon.jit(lambda x: jnp.sin(x[1:]) * 2.0))(jaxon.ShapeDtypeStruct((b,), F32))
  vjp = exp.vjp()
  assert [a.str_short() for a in vjp.in_avals] == ["f32[b]", "f32[b - 1]"]
  x, ct = np.linspace(0, 1, 5, dtype=F32), np.ones(4, F32)
  want = np.concatenate([[0.0], 2 * np.cos(x[1:])])
  np.testing.assert_allclose(vjp.call(x, ct)[0], want, rtol=1e-6)
  np.testing.assert_allclose(vjp.run_module(x, ct)[0], want, rtol=1e-6)


def _dims_as_values(x, y):
  n = x.shape[0]
  return (jnp.sum(x, axis=0) / n, x * n + (n - x), jnp.full((n,), n),
          jnp.reshape(y, (-1, y.shape[0])), jnp.asarray(x.shape))


def test_dimensions_used_as_values():
  """`dim_as_value` (JAX 0.10.2's jaxpr line, golden), and the divisibility of a product
  by one of its factors (`reshape(y, (-1, y.shape[0]))` gives `(6*b2, b1)`, as in JAX)."""
  b, b1, b2 = export.symbolic_shape("b, b1, b2")
  specs = (jaxon.ShapeDtypeStruct((b, 4), F32), jaxon.ShapeDtypeStruct((b1, b2, 6), F32))
  assert "c:i32[] = dim_as_value[dim=b] \n" in str(jaxon.make_jaxpr(
      lambda x: jnp.sum(x, axis=0) / x.shape[0])(specs[0]))
  exp = export.export(jaxon.jit(_dims_as_values))(*specs)
  assert [a.str_short() for a in exp.out_avals] == [
      "f32[4]", "f32[b,4]", "i32[b]", "f32[6*b2,b1]", "i32[2]"]
  rng = np.random.default_rng(1)
  for n, (n1, n2) in ((3, (2, 5)), (5, (1, 1))):
    args = rng.normal(size=(n, 4)).astype(F32), rng.normal(size=(n1, n2, 6)).astype(F32)
    for got, want in zip(exp.call(*args), _dims_as_values(*args)):
      np.testing.assert_allclose(got, want, rtol=1e-6)
  for got, want in zip(exp.run_module(*args), _dims_as_values(*args)):
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_min_and_max_dimensions_print_and_compare_as_jax():
  """Golden values printed by JAX 0.10.2 (`jax.core.min_dim`/`max_dim`); terms print in
  JAX's order (operations before variables, larger first)."""
  a, b, c = export.symbolic_shape("a, b, c")
  min_dim, max_dim = jaxon.core.min_dim, jaxon.core.max_dim
  assert [str(e) for e in (
      b + b // 2, a + b % 3, min_dim(b, 5), max_dim(b, 5), max_dim(b, 0), min_dim(b, 0),
      3 * min_dim(b, 4) + 2 * b + 1, b * max_dim(b, 3), min_dim(a, c) + max_dim(a, c),
      max_dim(a, c) * max_dim(a, c), a * b * max_dim(a, 3))] == [
      "floordiv(b, 2) + b", "mod(b, 3) + a", "min(b, 5)", "max(b, 5)", "b", "0",
      "3*min(b, 4) + 2*b + 1", "b*max(b, 3)", "min(a, c) + max(a, c)", "max(a, c)^2",
      "a*b*max(a, 3)"]
  assert min_dim(3, 5) == 3 and type(min_dim(3, 5)) is int
  assert str(export.symbolic_shape("max(b, 5), min(b, 3)")) == "(max(b, 5), min(b, 3))"
  m = min_dim(b, 5)
  assert (m >= 1, m <= 5, m <= b, max_dim(b, 5) >= b, max_dim(a, b) <= a + b,
          max_dim(a, b) >= a + b, m == min_dim(5, b), m == min_dim(b, 5)) == (
      True, True, True, True, True, False, False, True)
  with pytest.raises(export.InconclusiveDimensionOperation,
                     match=r"'min\(b, 5\)' >= '5' is inconclusive"):
    m >= 5  # noqa: B015
  d, = export.symbolic_shape("d", constraints=("d >= 6",))
  assert (min_dim(d, 5), str(max_dim(d, 5))) == (5, "d")


def _clamped_slices(x):
  return jnp.concatenate([x[:5], x[-4:] * 2.0, x[2:]]) * x[0]


def test_slices_clamp_with_min_max_dimensions():
  """`x[:5]` of a dimension `b` has `min(b, 5)` rows: the module computes the size at run
  time from `b`, so one export serves sizes below and above the bound."""
  b, = export.symbolic_shape("b")
  exp = export.export(jaxon.jit(_clamped_slices))(jaxon.ShapeDtypeStruct((b, 2), F32))
  assert [a.str_short() for a in exp.out_avals] == [  # JAX 0.10.2's
      "f32[- max(0, b - 4) + min(b, 5) - min(b, 2) + 2*b,2]"]
  assert "stablehlo.minimum" in exp.mlir_module() and "stablehlo.maximum" in exp.mlir_module()
  loaded = export.deserialize(exp.serialize())
  grad = jaxon.jit(jaxon.grad(lambda x: loaded.call(x).sum()))
  for n in (1, 3, 7):
    x = np.arange(2 * n, dtype=F32).reshape(n, 2) + 1
    want = np.concatenate([x[:5], x[-4:] * 2.0, x[2:]]) * x[0]
    np.testing.assert_allclose(loaded.call(x), want)
    np.testing.assert_allclose(grad(x), jaxon.grad(lambda x: _clamped_slices(x).sum())(x))
  np.testing.assert_allclose(loaded.run_module(x)[0], want)
