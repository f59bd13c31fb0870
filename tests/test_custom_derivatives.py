"""custom_jvp / custom_vjp (seed 002): each property of the design doc as a test that fails
if it breaks. The rules below are deliberately wrong (3x the true derivative), so a test
can tell the rule's value from the function's own derivative."""
from __future__ import annotations

import io
from contextlib import redirect_stdout
from functools import partial

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import grad, jacfwd, jacrev, jit, jvp, lax, make_jaxpr, vmap
from jaxon.errors import UnexpectedTracerError
from tests.util import check_grads


@jaxon.custom_jvp
def sin3(x):
  return jnp.sin(x)


@sin3.defjvp
def sin3_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return sin3(x), 3. * jnp.cos(x) * t


@jaxon.custom_vjp
def vsin3(x):
  return jnp.sin(x)


def vsin3_fwd(x):
  return vsin3(x), jnp.cos(x)


def vsin3_bwd(cos_x, g):
  return (3. * cos_x * g,)


vsin3.defvjp(vsin3_fwd, vsin3_bwd)

XS = np.array([0.3, -1.2, 2.0], np.float32)
RULE = 3. * np.cos(XS)


@pytest.mark.parametrize("f", [sin3, vsin3], ids=["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("transform", [
    lambda f: vmap(grad(f)),
    lambda f: grad(lambda x: vmap(f)(x).sum()),
    lambda f: jit(vmap(grad(f))),
    lambda f: vmap(jit(grad(f))),
    lambda f: jacrev(vmap(f)),
    lambda f: vmap(grad(lambda x: lax.scan(lambda c, _: (f(c), None), x, None,
                                           length=1)[0])),
    lambda f: vmap(grad(lambda x: lax.cond(x > 0, f, f, x))),
], ids=["vmap_grad", "grad_vmap", "jit_vmap_grad", "vmap_jit_grad", "jacrev_vmap",
        "grad_scan", "grad_cond"])
def test_rule_survives_every_transformation(f, transform):
  """Seed 002's vmap-removes-custom-jvp problem must not exist, nor a jit or
  control-flow version of it."""
  out = np.asarray(transform(f)(XS))
  if out.ndim == 2:
    out = np.diag(out)
  np.testing.assert_allclose(out, RULE, rtol=1e-6)


def test_forward_mode_uses_the_jvp_rule():
  np.testing.assert_allclose(jvp(sin3, (XS,), (np.ones(3, np.float32),))[1], RULE, rtol=1e-6)
  np.testing.assert_allclose(np.diag(jacfwd(vmap(sin3))(XS)), RULE, rtol=1e-6)
  np.testing.assert_allclose(np.diag(jacfwd(jit(vmap(sin3)))(XS)), RULE, rtol=1e-6)


def test_higher_order_differentiates_the_rule():
  # d/dx (3 cos x) = -3 sin x: grad(grad) differentiates the rule itself.
  np.testing.assert_allclose(grad(grad(sin3))(0.7), -3. * np.sin(0.7), rtol=1e-6)
  check_grads(lambda x: jnp.sin(x) * jnp.tanh(x), (0.7,), order=2, modes=("fwd", "rev"))


@jaxon.custom_jvp
def _divide(a, b):
  return b / a


@_divide.defjvp
def _divide_jvp(primals, tangents):
  (a, b), (da, db) = primals, tangents
  x = _divide(a, b)
  return x, _divide(a, db - da * x)  # the function itself, applied to tangents


def test_reverse_mode_over_a_rule_that_applies_its_function_to_tangents():
  """Linear there, the call is transposed as its jaxpr is (JAX's value)."""
  second = grad(lambda a, b: jvp(_divide, (a, b), (1.0, 1.0))[1])(2.0, 3.0)
  np.testing.assert_allclose(second, 0.5, rtol=1e-6)  # d/da (1 - b/a) / a at (2, 3)
  check_grads(_divide, (2.0, 3.0), order=2, modes=("fwd", "rev"))


def test_python_control_flow_in_function_and_rule():
  @jaxon.custom_jvp
  def clip(x):
    return x if x > 0 else 0. * x

  @clip.defjvp
  def clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    print("rule sees", float(x))
    return clip(x), (2. if x > 0 else 0.) * t
  buf = io.StringIO()
  with redirect_stdout(buf):
    assert grad(clip)(1.5) == 2.
    assert grad(clip)(-1.5) == 0.
  assert buf.getvalue() == "rule sees 1.5\nrule sees -1.5\n"


def test_bwd_rule_runs_python_during_backward_pass():
  @jaxon.custom_vjp
  def f(x):
    return x * 2.

  def f_bwd(_, g):
    print("backward sees", float(g))
    return (g * 2.,)
  f.defvjp(lambda x: (f(x), None), f_bwd)
  buf = io.StringIO()
  with redirect_stdout(buf):
    assert grad(lambda x: f(x) * 5.)(1.) == 10.
  assert buf.getvalue() == "backward sees 5.0\n"


def test_jaxpr_printing():
  assert str(make_jaxpr(sin3)(1.)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = custom_jvp_call[
      name=sin3
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }
      jvp=sin3_jvp
      symbolic_zeros=False
    ] a
  in (b,) }"""
  assert str(make_jaxpr(vsin3)(1.)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = custom_vjp_call[
      name=vsin3
      bwd=vsin3_bwd
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }
      fwd=vsin3_fwd
      symbolic_zeros=False
    ] a
  in (b,) }"""


def test_errors():
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    jvp(vsin3, (1.,), (1.,))

  @jaxon.custom_jvp
  def bad(x):
    return x

  with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function bad"):
    bad(1.)
  bad.defjvp(lambda p, t: (bad(p[0]), jnp.ones(3)))
  with pytest.raises(TypeError, match=r"Expected float32\[\] \(tangent type of float32\[\]\) "
                     r"but got float32\[3\]"):
    jvp(bad, (1.,), (1.,))

  @partial(jaxon.custom_vjp, nondiff_argnums=(0,))
  def scale(n, x):
    return x * n
  scale.defvjp(lambda n, x: (scale(n, x), None), lambda n, _, g: (g * n,))
  with pytest.raises(UnexpectedTracerError, match="nondiff_argnums"):
    jit(lambda n, x: grad(lambda x: scale(n, x))(x))(2., 1.)

  @jaxon.custom_vjp
  def two_cts(x):
    return x
  two_cts.defvjp(lambda x: (x, None), lambda _, g: (g, g))
  with pytest.raises(TypeError, match="bwd rule must produce an output with the same "
                     "container"):
    grad(two_cts)(1.)


def test_pytrees_kwargs_nondiff_and_methods():
  @jaxon.custom_jvp
  def f(p, scale=2.):
    return {"y": p["a"] * scale + p["b"]}

  @f.defjvp
  def f_jvp(primals, tangents):
    (p, scale), (tp, ts) = primals, tangents
    return f(p, scale), {"y": 10. * tp["a"] + tp["b"] + ts * p["a"]}
  g = grad(lambda p: f(p, scale=3.)["y"])({"a": 1., "b": 2.})
  assert (float(g["a"]), float(g["b"])) == (10., 1.)

  @partial(jaxon.custom_jvp, nondiff_argnums=(0,))
  def apply(fn, x):
    return fn(x)
  apply.defjvp(lambda fn, p, t: (apply(fn, *p), 7. * t[0]))
  assert grad(partial(apply, jnp.sin))(0.5) == 7.

  class Model:
    def __init__(self, w: float):
      self.w = w

    @partial(jaxon.custom_jvp, nondiff_argnums=(0,))
    def __call__(self, x):
      return x * self.w

    @__call__.defjvp
    def _call_jvp(self, primals, tangents):
      return self(*primals), 9. * self.w * tangents[0]
  assert grad(Model(2.))(1.) == 18.


def test_custom_gradient_and_closure_convert():
  @jaxon.custom_gradient
  def sq(x):
    return x ** 2, lambda g: (g * x * 10.,)
  assert grad(sq)(3.) == 30.
  np.testing.assert_allclose(vmap(grad(sq))(XS), 10. * XS)

  def outer(w):
    def inner(x):
      return x * w
    converted, consts = jaxon.closure_convert(inner, 1.)
    assert len(consts) == 1
    return converted(2., *consts)
  assert grad(outer)(3.) == 2.


def test_library_rules_at_edge_points():
  assert grad(jaxon.nn.relu)(0.) == 0.


def test_traced_nondiff_argument_under_vmap():
  """The batched function closes over the vmap's tracers; they stay mapped values."""
  @partial(jaxon.custom_jvp, nondiff_argnums=(0,))
  def scale(n, x):
    return x * n
  scale.defjvp(lambda n, p, t: (scale(n, p[0]), t[0] * n * 10.))
  n, x = np.array([1., 2.], np.float32), np.array([3., 4.], np.float32)
  np.testing.assert_allclose(vmap(scale)(n, x), [3., 8.])
  np.testing.assert_allclose(jit(vmap(grad(scale, 1)))(n, x), [10., 20.])


def test_differentiating_a_custom_vjp_in_its_closed_over_value_raises():
  """Staged under jit, the value becomes an operand of the call; the rule cannot
  differentiate it, so it must not be given a silent zero cotangent."""
  from jaxon._src.errors import CustomVJPException

  def f(w, x):
    @jaxon.custom_vjp
    def g(x):
      return x * w
    g.defvjp(lambda x: (x * w, None), lambda _, ct: (ct * w,))
    return g(x)
  with pytest.raises(CustomVJPException, match="closed-over value"):
    grad(jit(f), 0)(2., 3.)


def test_seed_002_examples_as_written():
  """Seed 002's API examples with `jax` read as `jaxon` (its `np` is the numpy of jax).
  Its other snippets use `jax.custom_transforms`/`defvjp_all`, the API the document
  replaces, which JAX itself no longer has."""
  jax, np_ = jaxon, jnp

  # f :: a -> b
  @jax.custom_jvp
  def f(x):
    return np_.sin(x)

  # f_jvp :: (a, T a) -> (b, T b)
  def f_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return f(x), np_.cos(x) * t

  f.defjvp(f_jvp)
  np.testing.assert_allclose(grad(f)(1.), np.cos(1.), rtol=1e-6)
  np.testing.assert_allclose(vmap(grad(f))(XS), np.cos(XS), rtol=1e-6)

  # f :: a -> b
  @jax.custom_vjp
  def f(x):  # noqa: F811 (the seed redefines f)
    return np_.sin(x)

  # f_fwd :: a -> (b, c)
  def f_fwd(x):
    return f(x), np_.cos(x)

  # f_bwd :: (c, CT b) -> CT a
  def f_bwd(cos_x, g):
    return (cos_x * g,)

  f.defvjp(f_fwd, f_bwd)
  np.testing.assert_allclose(grad(f)(1.), np.cos(1.), rtol=1e-6)
  np.testing.assert_allclose(grad(lambda x: vmap(f)(x).sum())(XS), np.cos(XS), rtol=1e-6)
