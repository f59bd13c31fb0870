"""Tracebacks of errors that reach the user through jaxon's API, without jaxon's own frames.

An error raised while `jit` traces a user's function unwinds through thirty-odd frames of
jaxon's machinery before it reaches the user. As JAX does, the *outermost* API boundary on
the stack rewrites the exception's traceback to keep only frames outside `jaxon/_src` (the
user's code, and libraries such as `example_libraries`), so the user sees their own call,
their own function's line and the error. Inner boundaries leave the exception alone: the
outer one sees every frame.

Boundaries sit where JAX has them: the transformations and what they return, control flow,
custom derivatives, and eager operations (jnp ufuncs, array operators, and the shape check
of an eager primitive, where JAX's dispatch traces it with `jit`). They come in two kinds.
`api_boundary` wraps a function (JAX's way), for entry points called once per use of a
transformation (`grad`, `vmap`, `lax.scan`, …). Hot entry points (a jitted function's call,
an operator, the closures `grad` returns) cannot afford an extra call, nor the copying of a
function's metadata that wrapping a new closure costs: they are marked with
`inline_api_boundary` and catch the exception in their own body,

    try:
      ...
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise

which costs nothing until something raises (Python 3.11's exceptions are zero-cost). The
bare `raise` matters: `raise e` would add the boundary's own frame back.

The flag `jax_traceback_filtering` (environment variable `JAX_TRACEBACK_FILTERING`) picks
what the outermost boundary does, with JAX's modes:
  "off": nothing; the traceback keeps every frame.
  "tracebackhide": keeps every frame, marking jaxon's with `__tracebackhide__` (which
    IPython, pytest and others skip when printing).
  "remove_frames": removes jaxon's frames and sets the exception's `__cause__` to an
    `UnfilteredStackTrace` whose traceback is the original one, every frame included.
  "quiet_remove_frames": removes jaxon's frames and adds a note saying so.
  "auto" (default): "tracebackhide" under IPython, else "quiet_remove_frames".
"""
from __future__ import annotations

import builtins
import functools
import os
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any, TypeVar

from jaxon._src import config as config_mod

F = TypeVar("F", bound=Callable[..., Any])

# Frames whose code lives here are jaxon's: everything under `jaxon/_src`. The public
# modules only re-export, and `jaxon/example_libraries` is library code a user may step in.
_INTERNAL_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_SIMPLIFIED_NOTE = ("--------------------\nFor simplicity, jaxon has removed its internal "
                    "frames from the traceback of the following exception. Set "
                    "JAX_TRACEBACK_FILTERING=off to include these.")

# The code of every boundary: a frame running one of them, above the frame that caught an
# exception, is an outer boundary, and filtering is left to it.
_boundary_codes: set[types.CodeType] = set()


class UnfilteredStackTrace(Exception):
  """The `__cause__` of an exception filtered in "remove_frames" mode: the same error,
  with the traceback it had before jaxon's frames were removed."""


def is_internal_frame(frame: types.FrameType) -> bool:
  return frame.f_code.co_filename.startswith(_INTERNAL_DIR)


def inline_api_boundary(fun: F) -> F:
  """Marks `fun` as a boundary that filters in its own body (see the module docstring);
  returns `fun` itself, so calls cost what they did."""
  _boundary_codes.add(fun.__code__)
  return fun


def api_boundary(fun: F) -> F:
  """`fun` as a boundary: an exception raised below it leaves with jaxon's frames
  filtered from its traceback, when no boundary encloses this one."""
  @functools.wraps(fun)
  def reraise_with_filtered_traceback(*args: Any, **kwargs: Any) -> Any:
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      filter_at_boundary(e)
      raise
  return reraise_with_filtered_traceback  # type: ignore[return-value]


# The code every `api_boundary` wrapper runs. It only passes calls on: code that names the
# API a user entered (`core.user_frame`) looks past its frames.
WRAPPER_CODE = api_boundary(len).__code__
_boundary_codes.add(WRAPPER_CODE)


def filter_at_boundary(e: BaseException) -> None:
  """Rewrites the traceback of `e`, just caught by a boundary, as the filtering mode says,
  unless an enclosing boundary will. The caller re-raises `e` with a bare `raise`."""
  mode = _filtering_mode()
  tb = e.__traceback__
  if mode == "off" or tb is None or _under_another_boundary(tb.tb_frame):
    return
  if mode == "tracebackhide":
    _hide_internal_frames(tb)
    return
  if mode == "remove_frames":
    if not isinstance(e.__cause__, UnfilteredStackTrace):
      _attach_unfiltered(e, tb)
  elif _SIMPLIFIED_NOTE not in getattr(e, "__notes__", ()):
    e.add_note(_SIMPLIFIED_NOTE)
  e.with_traceback(filter_traceback(tb))


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
  """A new traceback of the entries of `tb` that are not in jaxon's frames, in order."""
  kept = []
  while tb is not None:
    if not is_internal_frame(tb.tb_frame):
      kept.append(tb)
    tb = tb.tb_next
  out = None
  for entry in reversed(kept):
    out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
  return out


def _filtering_mode() -> str:
  mode = config_mod.values.jax_traceback_filtering
  if mode == "auto":
    return "tracebackhide" if _ipython_hides_frames() else "quiet_remove_frames"
  return mode


def _ipython_hides_frames() -> bool:
  """Whether we run under an IPython that honours `__tracebackhide__` (7.17 or later)."""
  ipython = sys.modules.get("IPython")
  return (getattr(builtins, "get_ipython", None) is not None and ipython is not None
          and tuple(getattr(ipython, "version_info", ()))[:2] >= (7, 17))


def _under_another_boundary(frame: types.FrameType) -> bool:
  """Whether a boundary is running above `frame`, the boundary that caught the exception."""
  caller = frame.f_back
  while caller is not None:
    if caller.f_code in _boundary_codes:
      return True
    caller = caller.f_back
  return False


def _hide_internal_frames(tb: types.TracebackType | None) -> None:
  while tb is not None:
    if is_internal_frame(tb.tb_frame):
      tb.tb_frame.f_locals["__tracebackhide__"] = True
    tb = tb.tb_next


def _attach_unfiltered(e: BaseException, tb: types.TracebackType) -> None:
  """Makes `e.__cause__` an `UnfilteredStackTrace` holding the whole traceback: `tb` and
  the frames that called the boundary, up to the user's script or REPL entry; what `e`
  was chained to moves to it."""
  message = "".join(traceback.format_exception_only(type(e), e)).strip()
  unfiltered = UnfilteredStackTrace(
      f"{message}\n\nThe stack trace below excludes jaxon-internal frames.\nThe preceding "
      "is the original exception that occurred, unmodified.\n\n--------------------")
  unfiltered.with_traceback(_with_callers(tb))
  unfiltered.__cause__ = e.__cause__
  unfiltered.__context__ = e.__context__
  unfiltered.__suppress_context__ = e.__suppress_context__
  e.__cause__ = unfiltered
  e.__context__ = None


def _with_callers(tb: types.TracebackType) -> types.TracebackType:
  """`tb` preceded by the frames that called its first one. It stops above the first run
  of module-level frames, so that a REPL's or runner's own frames stay out."""
  out = tb
  reached_module_level = False
  frame = tb.tb_frame.f_back
  while frame is not None:
    name = frame.f_code.co_name
    if reached_module_level and name != "<module>":
      break
    if "importlib._bootstrap" not in frame.f_code.co_filename:
      out = types.TracebackType(out, frame, frame.f_lasti, frame.f_lineno)
    reached_module_level = reached_module_level or name == "<module>"
    frame = frame.f_back
  return out
