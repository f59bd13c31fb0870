"""`jaxon.custom_batching`: `custom_vmap` functions batch through their own rule, and
`sequential_vmap` loops over the examples. Oracles: a loop over the examples, the plain
function's derivatives, and the jaxpr JAX 0.10.2 prints."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.custom_batching import custom_vmap, sequential_vmap
from tests.util import check_grads


def make_scaled_sin(calls):
  """sin(x) * y whose rule records how it was called."""
  @custom_vmap
  def scaled_sin(x, y):
    return jnp.sin(x) * y

  @scaled_sin.def_vmap
  def rule(axis_size, in_batched, x, y):
    calls.append((axis_size, in_batched))
    x_batched, y_batched = in_batched
    return jnp.sin(x) * y, x_batched or y_batched
  return scaled_sin


def test_vmap_calls_the_rule_with_what_is_batched():
  calls = []
  f = make_scaled_sin(calls)
  xs, ys = np.arange(3.0, dtype=np.float32), np.array([1.0, -2.0, 0.5], np.float32)
  np.testing.assert_allclose(jaxon.vmap(f)(xs, ys), np.sin(xs) * ys, rtol=1e-6)
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(f, in_axes=(0, None)))(xs, 2.0),
                             np.sin(xs) * 2, rtol=1e-6)
  np.testing.assert_allclose(jaxon.vmap(f, in_axes=(None, 0))(1.0, ys), np.sin(1.0) * ys,
                             rtol=1e-6)
  assert calls == [(3, [True, True]), (3, [True, False]), (3, [False, True])]
  assert float(f(1.0, 2.0)) == pytest.approx(np.sin(1.0) * 2)  # no vmap, no rule
  assert len(calls) == 3


def test_under_nested_vmaps_the_inner_rule_is_batched_by_the_outer_vmap():
  calls = []
  f = make_scaled_sin(calls)
  xs = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  out = jaxon.vmap(jaxon.vmap(f, in_axes=(0, None)), in_axes=(0, None))(xs, 3.0)
  np.testing.assert_allclose(out, np.sin(xs) * 3, rtol=1e-6)
  assert calls == [(3, [True, False])]  # as in JAX: the rule's own operations are batched


def test_an_unbatched_rule_output_is_broadcast_where_needed():
  @custom_vmap
  def total(x):
    return x.sum()

  @total.def_vmap
  def rule(axis_size, in_batched, x):
    return x.sum(), False  # the same total for every example: a valid (odd) rule

  out = jaxon.vmap(lambda x: total(x) + x)(jnp.ones((2, 3)))
  np.testing.assert_array_equal(out, np.full((2, 3), 7.0))


def test_derivatives_are_the_functions_own():
  f = make_scaled_sin([])
  check_grads(f, (0.7, -1.3), order=2, modes=["fwd", "rev"])
  grads = jaxon.vmap(jaxon.grad(f))(jnp.arange(3.0), jnp.ones(3))
  np.testing.assert_allclose(grads, np.cos(np.arange(3.0)), rtol=1e-6)


def test_the_jaxpr_prints_as_jax_s():
  calls = []
  text = str(jaxon.make_jaxpr(make_scaled_sin(calls))(1.0, 2.0))
  assert text.splitlines()[:5] == [  # JAX 0.10.2's, up to the rule's address
      "{ lambda ; a:f32[] b:f32[]. let",
      "    c:f32[] = custom_vmap_call[",
      "      call={ lambda ; d:f32[] e:f32[]. let",
      "          f:f32[] = sin d",
      "          g:f32[] = mul f e"]
  assert "in_tree=PyTreeDef(([], (*, *)))" in text and "out_tree=PyTreeDef(*)" in text
  assert "rule=<function make_scaled_sin.<locals>.rule at 0x" in text


def test_bad_rules_and_uses_are_reported():
  @custom_vmap
  def f(x):
    return x * 2

  with pytest.raises(AttributeError, match="No batching rule"):
    f(1.0)
  f.def_vmap(lambda axis_size, in_batched, x: (x[0] * 2, True))  # drops the batch axis
  with pytest.raises(ValueError, match=r"f32\[\] marked batched.*leading axis of size 3"):
    jaxon.vmap(f)(jnp.ones(3))
  f.def_vmap(lambda axis_size, in_batched, x: (x * 2, (True,)))
  with pytest.raises(ValueError, match="out_batched with the structure"):
    jaxon.vmap(f)(jnp.ones(3))
  f.def_vmap(lambda axis_size, in_batched, x: x * 2)
  with pytest.raises(TypeError, match="must return a pair"):
    jaxon.vmap(f)(jnp.ones(3))

  def closes_over_batched(y):
    g = custom_vmap(lambda x: x + y)
    g.def_vmap(lambda axis_size, in_batched, x: (x + y, True))
    return g(1.0)
  with pytest.raises(NotImplementedError, match="pass it as an argument"):
    jaxon.vmap(closes_over_batched)(jnp.ones(3))


def test_sequential_vmap_loops_instead_of_batching():
  calls = []

  def dot_with(x, w):
    calls.append(np.shape(x))
    return (x * w).sum()

  f = sequential_vmap(dot_with)
  xs, w = np.arange(6.0, dtype=np.float32).reshape(3, 2), np.array([1.0, -1.0], np.float32)
  out = jaxon.vmap(f, in_axes=(0, None))(xs, w)
  np.testing.assert_allclose(out, xs @ w)
  assert calls[-1] == (2,)  # called on one example at a time
  jaxpr = jaxon.make_jaxpr(jaxon.vmap(f, in_axes=(0, None)))(xs, w)
  assert [e.primitive.name for e in jaxpr.eqns] == ["scan"]
  assert float(f(xs[1], w)) == -1.0
