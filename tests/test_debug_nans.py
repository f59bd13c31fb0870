"""jax_debug_nans / jax_debug_infs: the first NaN (or infinity) raises FloatingPointError
naming the primitive that produced it, eagerly, through a jitted function's de-optimized
re-run, under grad and vmap, and for loops and branches. Messages are JAX 0.10.2's."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import threading
import traceback

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import grad, jit, lax, vmap
from tests.conftest import flag_set

REPORT = ("Invalid nan value encountered in the output of a jax.jit function. Calling the "
          "de-optimized version.\n")


def _raises(kind: str, primitive: str, fun, *args) -> FloatingPointError:
  """Checks that `fun(*args)` raises JAX's error for `kind` in `primitive`; returns it."""
  with pytest.raises(FloatingPointError) as info:
    fun(*args)
  assert str(info.value) == f"invalid value ({kind}) encountered in {primitive}"
  return info.value


def _line_of(fun, text: str) -> str:
  """`file:line` of the line of `fun`'s source that contains `text`."""
  lines, first = inspect.getsourcelines(fun)
  offset = next(i for i, line in enumerate(lines) if text in line)
  return f"{inspect.getsourcefile(fun)}:{first + offset}"


# ----------------------------------------------------------------------------- eagerly


def test_eager_primitives_name_themselves_and_the_users_line():
  with jaxon.debug_nans(True):
    error = _raises("nan", "log", lambda: jnp.log(-1.0))  # the line the note names
    _raises("nan", "div", jnp.divide, 0.0, 0.0)
    # JAX checks each primitive's outputs, so a NaN input propagated by `add` is reported.
    _raises("nan", "add", jnp.add, np.float32(np.nan), 1.0)
  here = _line_of(test_eager_primitives_name_themselves_and_the_users_line, "jnp.log(-1.0)")
  assert error.__notes__[0].startswith(f"The operation was called at {here}:")
  assert error.__notes__[0].endswith(" (<lambda>).")


def test_debug_infs_and_debug_nans_are_separate():
  with jaxon.debug_infs(True):
    _raises("inf", "div", jnp.divide, 1.0, 0.0)
    assert np.isnan(jnp.log(-1.0))  # a NaN is not an infinity
  with jaxon.debug_nans(True):
    assert np.isinf(jnp.divide(1.0, 0.0))
    assert np.isinf(grad(jit(jnp.sqrt))(0.0))  # JAX: inf is no NaN, no error
  assert np.isnan(jnp.log(-1.0))  # both off again once the blocks exit


def test_no_false_positives_and_integers_are_not_checked():
  def f(x):
    return jnp.sum(jnp.sin(x) * jnp.log1p(x ** 2))
  x = jnp.arange(3.0)
  with jaxon.debug_nans(True), jaxon.debug_infs(True):
    np.testing.assert_allclose(jit(vmap(grad(f)))(x[:, None]),
                               np.stack([grad(f)(x[i:i + 1]) for i in range(3)]), rtol=1e-6)
    assert jit(lambda i: i // 0)(1) == -2  # integer division by zero: XLA's -2, as JAX


# ----------------------------------------------------------------------------- jit


def _five_ops(x):
  a = x + 1.0
  b = a * 2.0
  c = jnp.log(b - 10.0)
  d = c * 3.0
  return d + 1.0


def test_jit_reruns_deoptimized_and_names_the_first_nan(capsys):
  with jaxon.debug_nans(True):
    error = _raises("nan", "log", jit(_five_ops), 1.0)
  assert capsys.readouterr().out == REPORT
  assert error.__notes__[0].startswith(
      f"The operation was called at {_line_of(_five_ops, 'jnp.log')}:")
  frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
  assert "_five_ops" in frames  # the de-optimized run went through the Python function


def test_jit_with_static_arguments_reruns_with_them():
  f = jit(lambda x, n: jnp.log(x - n), static_argnums=1)
  with jaxon.debug_nans(True):
    _raises("nan", "log", f, 1.0, 3)


def test_jit_nan_that_the_deoptimized_run_does_not_reproduce(capsys):
  nan = np.float32(np.nan)
  for fun in (lambda x: x, lambda x: x + 1.0):  # NumPy computes x + 1.0 when re-run
    with jaxon.debug_nans(True), pytest.raises(FloatingPointError) as info:
      jit(fun)(nan)
    assert str(info.value).startswith(
        "('jit(<lambda>)', 'nan'). Because jax_config.debug_nans.value and/or "
        "config.jax_debug_infs is set, the de-optimized function (i.e., the function as if "
        "the `jit` decorator were removed) was called in an attempt to get a more precise "
        "error message. However, the de-optimized function did not produce invalid values "
        "during its execution.")
  assert capsys.readouterr().out == REPORT * 2


def test_jit_rerun_on_arrays_names_the_primitive_and_python_division():
  nan_array = jnp.array(np.nan, np.float32)  # made before the flag is on
  with jaxon.debug_nans(True):
    _raises("nan", "add", jit(lambda x: x + 1.0), nan_array)
  with jaxon.debug_infs(True):
    _raises("inf", "exp", jit(lambda x: jnp.exp(x) * 2.0), 100.0)
    with pytest.raises(ZeroDivisionError):  # the re-run divides Python floats, as in JAX
      jit(lambda x: 1.0 / x)(0.0)


def test_nested_jit(capsys):
  f = jit(lambda x: jit(lambda y: jnp.log(y) * 2.0)(x) + 1.0)
  with jaxon.debug_nans(True):
    _raises("nan", "log", f, -1.0)
  # The outer function and the inner one each report their re-run (JAX reports a third,
  # for its jnp.log, which is itself jitted there).
  assert capsys.readouterr().out == REPORT * 2


# ----------------------------------------------------------------------------- transformations


def test_grad_and_vmap_of_a_jitted_function_rerun_its_jaxpr(capsys):
  g = jit(jnp.sqrt)
  with jaxon.debug_nans(True):
    _raises("nan", "sqrt", grad(g), -1.0)
    _raises("nan", "sqrt", vmap(g), jnp.array([1.0, -1.0]))
    _raises("nan", "log", grad(jit(_five_ops)), 1.0)
    _raises("nan", "sqrt", grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0)), -1.0)
  assert capsys.readouterr().out.count(REPORT) == 3


def _scan_log(xs):
  return lax.scan(lambda c, x: (c + jnp.log(x), c), 0.0, xs)[0]


def _cond_log(x):
  return lax.cond(x > 0, lambda v: jnp.log(v - 5.0), lambda v: v, x)


def _while_log(x):
  return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.log(c[1] - 2.0)),
                        (0, x))[1]


@pytest.mark.parametrize("fun,arg,primitive", [
    (_scan_log, np.array([1.0, -1.0, 2.0], np.float32), "scan"),
    (_cond_log, 1.0, "cond"),
    (_while_log, 1.0, "while"),
], ids=["scan", "cond", "while"])
def test_control_flow_is_one_primitive(fun, arg, primitive):
  """As in JAX, a loop or branch is reported as a whole, eagerly and under jit (whose
  re-run runs it eagerly), with the user's line in the traceback."""
  with jaxon.debug_nans(True):
    _raises("nan", primitive, fun, arg)
    error = _raises("nan", primitive, jit(fun), arg)
  assert fun.__name__ in error.__notes__[0]


# ----------------------------------------------------------------------------- flags


def test_config_update_and_threads():
  """`config.update` sets the flag for every thread; the context manager, for its own."""
  with flag_set("jax_debug_nans", True):
    _raises("nan", "log", jnp.log, -1.0)
  assert np.isnan(jnp.log(-1.0))

  seen = []
  thread = threading.Thread(target=lambda: seen.append(float(jnp.log(-1.0))))
  with jaxon.debug_nans(True):
    thread.start()
    thread.join()
  assert np.isnan(seen[0])


def test_environment_variable():
  code = ("import jaxon, jaxon.numpy as jnp\n"
          "try:\n  jaxon.jit(lambda x: jnp.log(x) + 1.0)(-1.0)\n"
          "except FloatingPointError as e:\n  print('raised:', e)\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, JAX_DEBUG_NANS="1"), timeout=120,
                       cwd=os.path.dirname(os.path.dirname(__file__)))
  assert out.stdout.splitlines()[-1] == "raised: invalid value (nan) encountered in log"
