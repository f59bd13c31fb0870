"""`jax_debug_nans` / `jax_debug_infs`: raise `FloatingPointError` where a NaN (or an
infinity) first appears, as JAX does.

Eagerly, every primitive's outputs are checked as it runs (which makes each operation wait
for its result). A jitted function's outputs are checked after the compiled call; on a bad
value it runs again de-optimized, its Python function called directly so each operation is
checked on its own, and the error names the primitive that produced the first bad value. A
jitted function reached as the `pjit` primitive (under `grad` or `vmap`) is re-run the same
way, equation by equation of its jaxpr. A loop or branch is one primitive eagerly: the
error names `scan`, `while` or `cond`, as in JAX.

The error's text is JAX's (`invalid value (nan) encountered in log`); a note attached to it
gives the user's line that was running (`e.__notes__`, shown under the traceback).

Both flags are thread-local under their context managers, and reading a thread-local value
costs more than a global; so the hot paths (every eager primitive, every jitted call) test
only a process-wide bool, `maybe_checking`, kept true while the flags might be on in any
thread, and read the thread's own values only then.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from jaxon._src import config as config_mod
from jaxon._src import core, dtypes
from jaxon._src.pjit import pjit_p

_FLAGS = (config_mod.debug_nans, config_mod.debug_infs)
# Called with the new `maybe_checking` whenever it changes (the jit module keeps a copy of
# it in a global of its own: one global read per jitted call).
_watchers: list[Callable[[bool], None]] = []
maybe_checking = False


def watch(watcher: Callable[[bool], None]) -> None:
  """Calls `watcher(maybe_checking)` now and whenever it changes."""
  _watchers.append(watcher)
  watcher(maybe_checking)


def _refresh() -> None:
  """Recomputes `maybe_checking` after a flag changed: on while a flag is set globally or
  any thread is inside one of their context managers (which then decides for itself)."""
  global maybe_checking
  on = any(flag.maybe_set for flag in _FLAGS)
  if on == maybe_checking:
    return
  maybe_checking = on
  core.eval_output_check = check_primitive_outputs if on else None
  for watcher in _watchers:
    watcher(on)


def _invalid_kind(outputs: Sequence[Any]) -> str | None:
  """'nan' or 'inf' if an inexact output holds one that the current thread's flags ask
  about (NaNs first, as JAX checks them), else None."""
  nans, infs = config_mod.values.jax_debug_nans, config_mod.values.jax_debug_infs
  if not (nans or infs):
    return None
  for x in outputs:
    dtype = getattr(x, "dtype", None)  # outputs are arrays (float0 ones are not inexact)
    if dtype is None or not dtypes.is_inexact(dtype):
      continue
    value = np.asarray(x)
    if nans and np.isnan(value).any():
      return "nan"
    if infs and np.isinf(value).any():
      return "inf"
  return None


def _invalid_value_error(kind: str, where: str) -> FloatingPointError:
  """JAX's error, with a note naming the innermost line of user code that is running."""
  error = FloatingPointError(f"invalid value ({kind}) encountered in {where}")
  frame, _ = core.user_frame(sys._getframe(1))
  if frame is not None:
    error.add_note(f"The operation was called at {core.describe_frame(frame)}.")
  return error


def check_primitive_outputs(primitive: core.Primitive, args: Sequence[Any], params: dict,
                            out: Any) -> None:
  """The check of each eagerly evaluated primitive (installed in `core`). A nested jitted
  function (`pjit`) is re-run equation by equation to find the primitive at fault."""
  kind = _invalid_kind(out if primitive.multiple_results else (out,))
  if kind is None:
    return
  if primitive is not pjit_p:
    raise _invalid_value_error(kind, primitive.name)
  jaxpr = params["jaxpr"]
  _rerun_deoptimized(f"jit({params['name']})", kind,
                     lambda: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args))


def check_jit_outputs(fun: Callable, name: str, args: tuple, kwargs: dict,
                      outs: Sequence[Any]) -> None:
  """The check of a jitted function's outputs: on a bad value, calls `fun` (the function
  under `jit`) op by op on the same arguments, so the error names the primitive."""
  kind = _invalid_kind(outs)
  if kind is not None:
    _rerun_deoptimized(f"jit({name})", kind, lambda: fun(*args, **kwargs))


def _rerun_deoptimized(name: str, kind: str, rerun: Callable[[], Any]) -> NoReturn:
  """Runs `rerun`, which should raise the precise error; raises JAX's explanation if it
  does not (jit's optimizations produced the value, or it was an input or a literal)."""
  print("Invalid nan value encountered in the output of a jax.jit function. Calling the "
        "de-optimized version.")
  try:
    rerun()
  except (FloatingPointError, ZeroDivisionError) as e:
    raise e from None
  raise FloatingPointError(
      f"{(name, kind)}. Because jax_config.debug_nans.value and/or config.jax_debug_infs is "
      "set, the de-optimized function (i.e., the function as if the `jit` decorator were "
      "removed) was called in an attempt to get a more precise error message. However, the "
      "de-optimized function did not produce invalid values during its execution. This "
      "behavior can result from `jit` optimizations causing the invalid value to be "
      "produced. It may also arise from having nan/inf literals as inputs or outputs, like "
      "`jax.jit(lambda ...: jax.numpy.nan)(...)`. \n\nIt may be possible to avoid the "
      "invalid value by removing the `jit` decorator, at the cost of losing optimizations. "
      "\n\nIf you see this error, consider opening a bug report at "
      "https://github.com/jax-ml/jax.") from None


for _flag in _FLAGS:
  _flag.watch(_refresh)
_refresh()
