"""Leaked tracers: `jax_check_tracer_leaks` raises as the transformation returns, naming the
tracer, where it was created and what holds it; without the flag, using an escaped tracer
raises UnexpectedTracerError naming the transformation and the user's line that ran it."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import errors, grad, jit, lax, vmap

_stored: list = []


@pytest.fixture(autouse=True)
def _empty_store():
  yield
  _stored.clear()


def _line_of(fun, text: str) -> int:
  lines, first = inspect.getsourcelines(fun)
  return first + next(i for i, line in enumerate(lines) if text in line)


def _store_sin(x):
  y = jnp.sin(x)
  _stored.append(y)
  return y


def _leak_message(transform, fun, arg) -> str:
  with jaxon.checking_leaks(), pytest.raises(Exception) as info:
    transform(fun)(arg)
  assert type(info.value) is Exception  # JAX raises a plain Exception
  return str(info.value)


@pytest.mark.parametrize("transform,trace", [
    (jit, "DynamicJaxprTrace"),
    (jaxon.make_jaxpr, "DynamicJaxprTrace"),
    (vmap, "BatchTrace"),
    (grad, "JVPTrace"),  # JAX 0.10.2 misses this one: it checks grad's trace too late
], ids=["jit", "make_jaxpr", "vmap", "grad"])
def test_leak_into_a_global_list(transform, trace):
  arg = jnp.ones(2) if transform is vmap else 1.0
  message = _leak_message(transform, _store_sin, arg)
  name = "make_jaxpr" if transform is jaxon.make_jaxpr else transform.__name__
  tracer_type = {"DynamicJaxprTrace": "DynamicJaxprTracer", "BatchTrace": "BatchTracer",
                 "JVPTrace": "JVPTracer"}[trace]
  assert message.startswith(f"Leaked trace {trace}. Leaked tracer(s):\n\n"
                            f"Traced<f32[]>with<{trace}>\nThis {tracer_type} with object id ")
  created = f"{__file__}:{_line_of(_store_sin, 'jnp.sin')}:6 (_store_sin)"
  assert f" was created on line:\n  {created}\n" in message
  called = _line_of(_leak_message, "transform(fun)(arg)")
  assert (f"Its {trace} was started inside `{name}`, called at {__file__}:{called} in "
          "_leak_message.") in message
  assert f"is referred to by {__name__}._stored\n" in message


def test_leaks_into_a_global_an_attribute_and_a_closure():
  holder = type("Holder", (), {})()

  def to_global(x):
    global _leaked
    _leaked = x
    return x

  def to_attribute(x):
    holder.value = x
    return x
  message = _leak_message(jit, to_global, 1.0)
  assert message.endswith(f"is referred to by {__name__}._leaked\n")
  message = _leak_message(jit, to_attribute, 1.0)
  assert f"> is referred to by <Holder {id(holder)}>.value\n" in message

  def leaks_into_closure():
    saved = []

    def f(x):
      saved.append(x)
      return x
    return vmap(f)(jnp.ones(3))
  with jaxon.checking_leaks(), pytest.raises(Exception, match=(
      r"is referred to by <function \d+> \(test_leaks_into_a_global_an_attribute_and_a_"
      r"closure.<locals>.leaks_into_closure.<locals>.f\) closed-over variable saved")):
    leaks_into_closure()


def test_leak_from_a_loop_body():
  def body(c, x):
    return _store_sin(c), x
  message = _leak_message(lambda f: lambda xs: lax.scan(f, 0.0, xs), body, jnp.ones(2))
  assert message.startswith("Leaked trace DynamicJaxprTrace.")
  assert "was started inside `scan`" in message


def test_no_false_positives():
  def f(x):
    y = lax.scan(lambda c, v: (c * jnp.sin(v), c), 1.0, x)[0]
    return lax.cond(y > 0, jnp.cos, jnp.sin, y) + jit(jnp.tanh)(x).sum()
  x = jnp.linspace(0.1, 0.5, 3)
  with jaxon.checking_leaks():
    got = jit(vmap(grad(f)))(jnp.stack([x, 2 * x]))
    jaxon.make_jaxpr(jaxon.hessian(lambda v: jnp.sum(jnp.tanh(v) ** 2)))(x)
  np.testing.assert_allclose(got, np.stack([grad(f)(x), grad(f)(2 * x)]), rtol=1e-5)


def test_nested_pytree_arguments_and_checkify_are_not_leaks():
  """The pytree of tracers a transformation hands its function is a dict in a dict that
  only running code holds (chex's chexify tests run `checkify(jit(f))` so)."""
  from jaxon.experimental import checkify

  def f(tree):
    checkify.check(jnp.all(tree["b"]["c"] > 0), "positive")
    return jnp.log(tree["a"] + tree["b"]["c"])
  tree = {"a": jnp.ones(2), "b": {"c": jnp.ones(2)}}
  with jaxon.checking_leaks():
    err, out = checkify.checkify(jit(f))(tree)
  assert err.get() is None and np.allclose(out, np.log(2.0))


def test_an_error_inside_the_function_is_reported_not_the_leak():
  def fails(x):
    _stored.append(x)
    raise ValueError("from the function")
  with jaxon.checking_leaks(), pytest.raises(ValueError, match="from the function"):
    jit(fails)(1.0)


def test_without_the_flag_a_leak_is_silent():
  np.testing.assert_allclose(jit(_store_sin)(1.0), np.sin(1.0), rtol=1e-6)
  assert isinstance(_stored[0], jaxon.core.Tracer)


# ----------------------------------------------------------------------------- escaped tracers


def _escape(transform, fun, arg):
  transform(fun)(arg)  # the line an escaped tracer's error names
  return _stored[-1]


@pytest.mark.parametrize("transform,trace", [
    (jit, "DynamicJaxprTrace"), (vmap, "BatchTrace"), (grad, "JVPTrace"),
], ids=["jit", "vmap", "grad"])
@pytest.mark.parametrize("use,context", [
    (jnp.sin, "in eager evaluation of 'sin'"),
    (lambda t: t + 1.0, "in eager evaluation of 'add'"),
    (lambda t: jit(lambda y: y * t)(1.0), "while a DynamicJaxprTrace was tracing"),
], ids=["eager_op", "operator", "other_jit"])
def test_escaped_tracer_names_its_transformation(transform, trace, use, context):
  leaked = _escape(transform, _store_sin, jnp.ones(2) if transform is vmap else 1.0)
  with pytest.raises(errors.UnexpectedTracerError) as info:
    use(leaked)
  assert isinstance(info.value, TypeError)
  line = _line_of(_escape, "transform(fun)(arg)")
  assert (f"The tracer Traced<f32[]>with<{trace}> escaped from a {trace} (started inside "
          f"`{transform.__name__}`, called at {__file__}:{line} in _escape), which has "
          f"already returned, and was used again {context}.") in str(info.value)
  assert str(info.value).startswith(
      "Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
      "allowing for a reference to an intermediate value with type float32[] wrapped in a "
      f"{trace}r to escape the scope of the transformation.\n")
  assert "jaxon.checking_leaks()" in str(info.value)


def test_escaped_tracer_names_its_creation_line_when_leaks_were_checked():
  with jaxon.checking_leaks(), pytest.raises(Exception, match="Leaked trace"):
    jit(_store_sin)(2.0)
  with pytest.raises(errors.UnexpectedTracerError) as info:
    jnp.cos(_stored[0])
  created = f"{__file__}:{_line_of(_store_sin, 'jnp.sin')}:6 (_store_sin)"
  assert f"The leaked intermediate value was created on line {created}." in str(info.value)
