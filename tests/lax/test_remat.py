"""jaxon.checkpoint (remat): same values and derivatives as the plain function, fewer saved
residuals (counted), policies, and its composition with control flow and transformations."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import checkpoint, checkpoint_policies, grad, jit, lax, make_jaxpr, vmap
from jaxon._src.interpreters import ad
from jaxon.ad_checkpoint import checkpoint_name


def _chain(x):
  return jnp.sin(jnp.sin(jnp.sin(x)))


def _num_residuals(f, *args):
  """How many values reverse mode keeps from the forward pass of `f`."""
  _, _, residuals, _ = ad.linearize_flat(lambda *a: [f(*a)], list(args))
  return len(residuals)


X = np.array([0.3, -1.1, 2.0], np.float32)


def test_saves_fewer_residuals():
  plain = _num_residuals(lambda x: _chain(x).sum(), X)
  remat = _num_residuals(lambda x: checkpoint(_chain)(x).sum(), X)
  assert remat < plain
  assert remat == 1  # only the input: every cos(sin(...)) is recomputed
  saved_all = _num_residuals(
      lambda x: checkpoint(_chain, policy=checkpoint_policies.everything_saveable)(x).sum(),
      X)
  assert saved_all >= plain - 1


def test_values_and_derivatives_match_the_plain_function():
  f = lambda x: checkpoint(_chain)(x).sum()  # noqa: E731
  g = lambda x: _chain(x).sum()  # noqa: E731
  np.testing.assert_allclose(grad(f)(X), grad(g)(X), rtol=1e-6)
  np.testing.assert_allclose(jit(grad(f))(X), grad(g)(X), rtol=1e-6)
  np.testing.assert_allclose(vmap(grad(lambda x: checkpoint(_chain)(x)))(X),
                             vmap(grad(_chain))(X), rtol=1e-6)
  np.testing.assert_allclose(jaxon.hessian(f)(X), jaxon.hessian(g)(X), rtol=1e-5, atol=1e-6)
  jaxon.test_util.check_grads(checkpoint(_chain), (X,), order=2, modes=("fwd", "rev"))


def test_policy_saves_dots_and_names():
  w = np.eye(3, dtype=np.float32) * 0.5

  def layer(x):
    h = jnp.tanh(w @ x)
    return jnp.tanh(w @ checkpoint_name(h, "hidden")).sum()
  none_saved = _num_residuals(checkpoint(layer), X)
  dots = _num_residuals(checkpoint(layer, policy=checkpoint_policies.dots_saveable), X)
  named = _num_residuals(
      checkpoint(layer, policy=checkpoint_policies.save_only_these_names("hidden")), X)
  assert none_saved < named and none_saved < dots
  for policy in (None, checkpoint_policies.dots_saveable,
                 checkpoint_policies.save_only_these_names("hidden")):
    np.testing.assert_allclose(grad(checkpoint(layer, policy=policy))(X), grad(layer)(X),
                               rtol=1e-6)


def test_checkpoint_inside_scan_under_grad():
  w = np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [0.0, 0.2, 0.9]], np.float32)

  def loss(body):
    def f(h):
      h, _ = lax.scan(lambda c, x: (body(c, x), None), h, np.ones((4, 3), np.float32))
      return h.sum()
    return f
  step = lambda c, x: jnp.tanh(w @ c + x)  # noqa: E731
  np.testing.assert_allclose(grad(loss(checkpoint(step)))(X), grad(loss(step))(X), rtol=1e-5)


def test_static_argnums_and_jaxpr():
  f = checkpoint(lambda x, n: x * n, static_argnums=1)
  assert float(grad(f)(2.0, 3)) == 3.0
  assert str(make_jaxpr(checkpoint(lambda x: jnp.sin(x) * 2.))(1.)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = remat2[
      differentiated=False
      jaxpr={ lambda ; c:f32[]. let
          d:f32[] = sin c
          e:f32[] = mul d 2.0
        in (e,) }
      policy=None
      prevent_cse=True
    ] a
  in (b,) }"""


def test_recomputation_is_behind_an_optimization_barrier():
  text = jit(grad(lambda x: checkpoint(_chain)(x).sum())).lower(X).as_text()
  assert "optimization_barrier" in text


def test_named_call_and_scope():
  from jaxon._src.named_scope import current_name_stack
  seen = []

  def f(x):
    seen.append(current_name_stack())
    return x * 2
  with jaxon.named_scope("outer"):
    assert float(jaxon.named_call(f, name="inner")(1.0)) == 2.0
  assert seen == ["outer/inner"]
  with pytest.raises(TypeError, match="must be a string"):
    with jaxon.named_scope(3):
      pass
