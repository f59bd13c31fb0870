"""Tracebacks of errors that reach the user through jaxon's API keep only the user's frames,
as JAX's do (`jax_traceback_filtering`, JAX_TRACEBACK_FILTERING).

What JAX 0.10.2 does, recorded with it: in the default mode ("auto", outside IPython: its
"quiet_remove_frames") the traceback starts at the user's call and ends at the user's line
that raised, with a note saying frames were removed; "remove_frames" puts the unfiltered
traceback in `__cause__` (an `UnfilteredStackTrace`) instead of the note; "off" and
"tracebackhide" keep every frame. Only the outermost boundary filters, so a note appears
once however deeply transformations nest. (JAX keeps the frames of its `jax.numpy`
wrappers, which it never marks internal; jaxon removes every frame under `jaxon/_src`.)
"""
from __future__ import annotations

import builtins
import os
import subprocess
import sys
import traceback
import types

import numpy as np
import pytest
from jaxlib import _jax

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon._src.traceback_util import UnfilteredStackTrace
from tests.conftest import flag_set

JAXON_DIR = os.path.dirname(os.path.abspath(jaxon.__file__)) + os.sep
NOTE = ("--------------------\nFor simplicity, jaxon has removed its internal frames from the "
        "traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include "
        "these.")

X3, Y4 = np.ones(3, np.float32), np.ones(4, np.float32)


# ----------------------------------------------------------------------------- user code


def add_mismatched(a):
  return a + Y4  # the user's line that fails: (3,) + (4,)


def summed(a):
  return jnp.sum(add_mismatched(a))


def branch_on_value(a):
  if a > 0:  # a TracerBoolConversionError under jit
    return a
  return -a


def check_positive(a):
  raise ValueError("the user's own error")


def calls_check(a):
  return check_positive(a) + 1


def with_custom_jvp(a):
  f = jaxon.custom_jvp(add_mismatched)
  f.defjvp(lambda primals, tangents: (primals[0], tangents[0]))
  return f(a)


def with_custom_vjp(a):
  f = jaxon.custom_vjp(add_mismatched)
  f.defvjp(lambda a: (a, None), lambda _, g: (g,))
  return f(a)


def capture(thunk):
  """The exception `thunk()` raises."""
  with pytest.raises(Exception) as info:
    thunk()
  return info.value


def frames(e):
  return traceback.extract_tb(e.__traceback__)


def jaxon_frames(e):
  return [f for f in frames(e) if f.filename.startswith(JAXON_DIR)]


def ends_at(e, function, line):
  last = frames(e)[-1]
  return (last.name, last.line) == (function, line)


# ----------------------------------------------------------------------------- the entry points

ADD = (add_mismatched.__name__, "return a + Y4  # the user's line that fails: (3,) + (4,)")

# Each entry point, and a call through it that fails in `add_mismatched`.
CASES = {
    "jit": lambda: jaxon.jit(add_mismatched)(X3),
    "jit.lower": lambda: jaxon.jit(add_mismatched).lower(X3),
    "jit.eval_shape": lambda: jaxon.jit(add_mismatched).eval_shape(X3),
    "grad": lambda: jaxon.grad(summed)(X3),
    "value_and_grad": lambda: jaxon.value_and_grad(summed)(X3),
    "vjp": lambda: jaxon.vjp(add_mismatched, X3),
    "jvp": lambda: jaxon.jvp(add_mismatched, (X3,), (X3,)),
    "linearize": lambda: jaxon.linearize(add_mismatched, X3),
    "vmap": lambda: jaxon.vmap(add_mismatched)(np.ones((2, 3), np.float32)),
    "jacfwd": lambda: jaxon.jacfwd(add_mismatched)(X3),
    "jacrev": lambda: jaxon.jacrev(add_mismatched)(X3),
    "hessian": lambda: jaxon.hessian(summed)(X3),
    "make_jaxpr": lambda: jaxon.make_jaxpr(add_mismatched)(X3),
    "eval_shape": lambda: jaxon.eval_shape(add_mismatched, X3),
    "checkpoint": lambda: jaxon.grad(jaxon.checkpoint(summed))(X3),
    "custom_jvp": lambda: with_custom_jvp(jnp.asarray(X3)),
    "custom_vjp": lambda: with_custom_vjp(jnp.asarray(X3)),
    "cond": lambda: lax.cond(True, add_mismatched, lambda a: a, X3),
    "switch": lambda: lax.switch(0, [add_mismatched, lambda a: a], X3),
    "while_loop": lambda: lax.while_loop(lambda a: False, add_mismatched, X3),
    "fori_loop": lambda: lax.fori_loop(0, 2, lambda i, a: add_mismatched(a), X3),
    "scan": lambda: lax.scan(lambda c, x: (add_mismatched(c), x), X3, np.ones(2)),
    "map": lambda: lax.map(add_mismatched, np.ones((2, 3), np.float32)),
    "nested": lambda: jaxon.jit(jaxon.vmap(jaxon.grad(summed)))(np.ones((2, 3), np.float32)),
    "eager operator": lambda: add_mismatched(jnp.asarray(X3)),
}


@pytest.mark.parametrize("entry", list(CASES))
def test_filtered_to_the_users_frames(entry):
  e = capture(CASES[entry])
  assert isinstance(e, TypeError) and "incompatible shapes" in str(e)
  assert jaxon_frames(e) == []
  assert {f.filename for f in frames(e)} == {__file__}  # nothing but the user's code
  assert frames(e)[0].name == "capture"  # the user's call, then their functions
  assert ends_at(e, *ADD)
  assert e.__notes__.count(NOTE) == 1  # once, by the outermost boundary
  assert not isinstance(e.__cause__, UnfilteredStackTrace)


def test_eager_jnp_function_and_operator():
  for thunk in (lambda: jnp.add(X3, Y4), lambda: jnp.asarray(X3) + Y4,
                lambda: jnp.multiply(jnp.asarray(X3), Y4)):
    e = capture(thunk)
    assert [f.name for f in frames(e)] == ["capture", "<lambda>"]
    assert jaxon_frames(e) == [] and e.__notes__ == [NOTE]


def test_eager_lax_operation_keeps_only_the_frames_above_dispatch():
  """As in JAX, whose boundary for an eager primitive is in its dispatch: the frames of
  the lax function the user called stay, those of shape checking go."""
  e = capture(lambda: lax.add(X3, Y4))
  names = [(os.path.relpath(f.filename, JAXON_DIR), f.name) for f in jaxon_frames(e)]
  assert names[0] == (os.path.join("_src", "lax", "lax.py"), "add")
  assert not any("deferred" in path or "utils" in path for path, _ in names)
  assert e.__notes__ == [NOTE]


def test_tracer_bool_conversion_inside_jit():
  e = capture(lambda: jaxon.jit(branch_on_value)(1.0))
  assert isinstance(e, jaxon.errors.TracerBoolConversionError)
  assert [f.name for f in frames(e)] == ["capture", "<lambda>", "branch_on_value"]
  assert ends_at(e, "branch_on_value", "if a > 0:  # a TracerBoolConversionError under jit")


def test_user_error_inside_jit_keeps_the_users_frames():
  e = capture(lambda: jaxon.jit(calls_check)(1.0))
  assert type(e) is ValueError and str(e) == "the user's own error"
  assert [f.name for f in frames(e)] == ["capture", "<lambda>", "calls_check",
                                         "check_positive"]
  assert e.__notes__ == [NOTE]


def test_an_exception_filtered_twice_gets_one_note():
  """The same error object re-raised through a second boundary."""
  first = capture(lambda: jnp.add(X3, Y4))

  def reraise(a):
    raise first
  again = capture(lambda: jaxon.jit(reraise)(X3))
  assert again is first and first.__notes__ == [NOTE] and jaxon_frames(again) == []


def test_errors_jaxon_handles_itself_are_untouched():
  """An operand jaxon does not know: the operator returns NotImplemented, and Python's
  TypeError comes from the interpreter, not through a boundary."""
  e = capture(lambda: jnp.asarray(X3) + object())
  assert isinstance(e, TypeError) and not hasattr(e, "__notes__")


# ----------------------------------------------------------------------------- the modes


@pytest.mark.parametrize("mode", ["off", "tracebackhide"])
def test_modes_that_keep_every_frame(mode):
  with flag_set("jax_traceback_filtering", mode):
    e = capture(lambda: jaxon.jit(add_mismatched)(X3))
  assert ADD in [(f.name, f.line) for f in frames(e)]
  assert len(jaxon_frames(e)) > 5 and frames(e)[-1] in jaxon_frames(e)  # raised in jaxon
  assert not hasattr(e, "__notes__") and e.__cause__ is None
  tb, kinds = e.__traceback__, set()  # (a jaxon frame?, marked hidden?)
  while tb is not None:
    kinds.add((tb.tb_frame.f_code.co_filename.startswith(JAXON_DIR),
               tb.tb_frame.f_locals.get("__tracebackhide__", False)))
    tb = tb.tb_next
  assert kinds == {(True, mode == "tracebackhide"), (False, False)}


def test_auto_is_tracebackhide_under_ipython(monkeypatch):
  monkeypatch.setattr(builtins, "get_ipython", lambda: None, raising=False)
  monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(version_info=(8, 20, 0)))
  e = capture(lambda: jnp.add(X3, Y4))
  assert len(jaxon_frames(e)) > 1 and not hasattr(e, "__notes__")


def test_quiet_remove_frames_is_auto_outside_ipython():
  with flag_set("jax_traceback_filtering", "quiet_remove_frames"):
    e = capture(lambda: jaxon.grad(summed)(X3))
  assert jaxon_frames(e) == [] and e.__notes__ == [NOTE] and ends_at(e, *ADD)


def test_remove_frames_keeps_the_unfiltered_traceback_as_cause():
  with flag_set("jax_traceback_filtering", "remove_frames"):
    e = capture(lambda: jaxon.jit(jaxon.vmap(add_mismatched))(np.ones((2, 3), np.float32)))
  assert jaxon_frames(e) == [] and ends_at(e, *ADD) and not hasattr(e, "__notes__")
  cause = e.__cause__
  assert type(cause) is UnfilteredStackTrace and e.__context__ is None
  assert str(cause).startswith(f"TypeError: {e}\n\nThe stack trace below excludes")
  unfiltered = traceback.extract_tb(cause.__traceback__)
  assert unfiltered[-1].name == "broadcasting_shape"  # lax's check, where it was raised
  assert (ADD[0], ADD[1]) in [(f.name, f.line) for f in unfiltered]
  assert "capture" in [f.name for f in unfiltered]  # the callers of the boundary too
  # One boundary made it: no UnfilteredStackTrace of an inner one further down the chain.
  assert not isinstance(cause.__cause__, UnfilteredStackTrace)


def test_remove_frames_moves_what_the_error_was_chained_to_onto_its_cause():
  def add_while_handling(a):
    try:
      raise KeyError("the error being handled")
    except KeyError:
      return add_mismatched(a)
  with flag_set("jax_traceback_filtering", "remove_frames"):
    e = capture(lambda: jaxon.jit(add_while_handling)(X3))
  assert type(e.__cause__) is UnfilteredStackTrace and e.__context__ is None
  assert isinstance(e.__cause__.__context__, KeyError)


def test_remove_frames_keeps_the_users_own_chain():
  def chained(a):
    raise ValueError("outer") from KeyError("inner")
  with flag_set("jax_traceback_filtering", "remove_frames"):
    e = capture(lambda: jaxon.jit(chained)(X3))
  assert type(e.__cause__) is UnfilteredStackTrace
  assert type(e.__cause__.__cause__) is KeyError and e.__cause__.__suppress_context__


def test_environment_variable_sets_the_mode():
  script = ("import traceback, jaxon, jaxon.numpy as jnp\n"
            "try:\n  jnp.add(jnp.ones(3), jnp.ones(4))\n"
            "except TypeError as e:\n"
            "  print(jaxon.config.jax_traceback_filtering, len(traceback.extract_tb("
            "e.__traceback__)), hasattr(e, '__notes__'))\n")
  env = {**os.environ, "JAX_TRACEBACK_FILTERING": "off"}
  out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                       text=True, check=True).stdout.split()
  assert out[0] == "off" and int(out[1]) > 3 and out[2] == "False"


# ----------------------------------------------------------------------------- JaxRuntimeError


def test_jax_runtime_error_is_jaxlibs_class():
  assert jaxon.errors.JaxRuntimeError is _jax.JaxRuntimeError
  assert issubclass(jaxon.errors.JaxRuntimeError, RuntimeError)
  assert repr(jaxon.errors.JaxRuntimeError) == "<class 'jaxon.errors.JaxRuntimeError'>"


def test_failing_callback_raises_jax_runtime_error_filtered():
  def host(x):
    raise ValueError("callback failed")
  spec = jaxon.ShapeDtypeStruct((), np.float32)
  e = capture(lambda: jaxon.jit(lambda x: jaxon.pure_callback(host, spec, x))(1.0))
  assert isinstance(e, jaxon.errors.JaxRuntimeError)
  assert "callback failed" in str(e) and e.__notes__ == [NOTE]
  assert [f.name for f in frames(e)] == ["capture", "<lambda>"]
