"""`jaxon.debug`: printing, callbacks and breakpoints that work inside transformations.

`debug_print` and `debug_callback` are effectful primitives with no outputs: they are
never removed for being unused, see only primal values under differentiation (their JVP
runs them on the primals and their transpose does nothing), run once per example under
`vmap`, and lower to host callbacks (`callback.emit_python_callback`) under `jit`.
"""
from __future__ import annotations

import cmd
import copy
import functools
import inspect
import logging
import os
import pprint
import string
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, tree_util
from jaxon._src.callback import emit_python_callback, host_arrays, pure_callback
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import slicing


class DebugEffect:
  """The `effect` param of a `debug_callback` equation (the printed jaxpr shows it). jaxon
  keeps every debug effect in program order; JAX promises it only for ordered ones."""

  def __repr__(self) -> str:
    return "Debug"


class OrderedDebugEffect(DebugEffect):
  def __repr__(self) -> str:
    return "OrderedDebug"


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()
logger = logging.getLogger(__name__)
_JAXON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _unrolled_batch(primitive: core.Primitive) -> Callable:
  """A batching rule calling `primitive` once per example, in order: each lane prints."""
  def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any
           ) -> tuple[list[Any], list[int]]:
    size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
    for i in range(size):
      primitive.bind(*[x if d is None else slicing.index_in_dim(x, i, d, keepdims=False)
                       for x, d in zip(args, dims)], **params)
    return [], []
  return rule


def _define_debug_primitive(primitive: core.Primitive,
                            host_function: Callable[..., Callable[..., None]]) -> None:
  """Registers the rules `debug_callback` and `debug_print` share; `host_function(**params)`
  is the Python function to call with the operands (as jaxon Arrays)."""
  primitive.multiple_results = True
  primitive.effectful = True

  def impl(*args: Any, **params: Any) -> list[Any]:
    host_function(**params)(*host_arrays(args))
    return []

  def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple:
    return primitive.bind(*primals, **params), []

  def lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, **params: Any
               ) -> list[ir.Value]:
    run = host_function(**params)

    def call(*operands: Any) -> tuple:
      run(*operands)
      return ()
    return emit_python_callback(ctx, call, args, has_side_effect=True)

  primitive.def_impl(impl)
  primitive.def_abstract_eval(lambda *avals, **params: [])
  ad.primitive_jvps[primitive] = jvp
  ad.primitive_transposes[primitive] = lambda cts, *args, **params: [None] * len(args)
  batching.primitive_batchers[primitive] = _unrolled_batch(primitive)
  mlir.register_lowering(primitive, lowering)


def _split_callback_args(args: tuple, kwargs: dict
                         ) -> tuple[tree_util.PyTreeDef, list[Any], dict[int, Any]]:
  """The leaves of (args, kwargs) that are arrays become operands; the others (strings,
  arbitrary objects) stay Python values, found again by their position."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  dynamic, static = [], {}
  for i, leaf in enumerate(leaves):
    if core.valid_jaxtype(leaf):
      dynamic.append(leaf)
    else:
      static[i] = leaf
  return in_tree, dynamic, static


def _merge_callback_args(in_tree: tree_util.PyTreeDef, dynamic: Sequence[Any],
                         static: dict[int, Any]) -> tuple[tuple, dict]:
  operands = iter(dynamic)
  leaves = [static[i] if i in static else next(operands)
            for i in range(len(static) + len(dynamic))]
  return tree_util.tree_unflatten(in_tree, leaves)


# ----------------------------------------------------------------------------- debug.callback

debug_callback_p = core.Primitive("debug_callback")
_define_debug_primitive(debug_callback_p, lambda callback, effect, partitioned: callback)


def debug_callback(callback: Callable[..., Any] | None = None, *args: Any,
                   ordered: bool = False, partitioned: bool = False,
                   **kwargs: Any) -> Callable[..., None] | None:
  """Calls `callback(*args, **kwargs)` (arrays arrive as jaxon Arrays) wherever the
  program runs: eagerly, under `jit`, in loop bodies, once per example under `vmap`,
  on primal values under differentiation. Its return value is ignored. With `ordered`,
  calls keep program order with other ordered effects. Called with only options,
  `debug_callback(ordered=True)` returns the function to call with the callback."""
  def _debug_callback(callback: Callable[..., Any], *c_args: Any, **c_kwargs: Any) -> None:
    if not callable(callback):
      raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                      f"object of type {type(callback)}")
    in_tree, dynamic, static = _split_callback_args(c_args, c_kwargs)

    def _flat_callback(*operands: Any) -> tuple:
      f_args, f_kwargs = _merge_callback_args(in_tree, operands, static)
      callback(*f_args, **f_kwargs)
      return ()
    debug_callback_p.bind(*dynamic, callback=_flat_callback,
                          effect=ordered_debug_effect if ordered else debug_effect,
                          partitioned=partitioned)

  if callback is not None:
    _debug_callback(callback, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError("debug_callback received unexpected arguments in the two-call form: "
                    f"{args=} {kwargs=}")
  return _debug_callback


# ----------------------------------------------------------------------------- debug.print


class _FormatChecker(string.Formatter):
  """Checks a format string against its arguments without formatting anything (the
  values are not known while tracing)."""

  def format_field(self, value: Any, format_spec: str) -> str:
    return ""

  def check_unused_args(self, used_args: Any, args: Sequence[Any], kwargs: dict) -> None:
    unused_args = [a for i, a in enumerate(args) if i not in used_args]
    unused_kwargs = [k for k in kwargs if k not in used_args]
    if unused_args:
      raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
    if unused_kwargs:
      raise ValueError(
          f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
          "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should "
          "pass in a regular string.")


_format_checker = _FormatChecker()


def _printer(fmt: str, has_placeholders: bool, in_tree: tree_util.PyTreeDef,
             static_args: tuple, np_printoptions: tuple,
             logging_record: logging.LogRecord | None, **params: Any
             ) -> Callable[..., None]:
  """The host function of a `debug_print` equation: formats its operands and writes a line
  to stdout, or logs it with the record made where `debug.log` was called. NumPy's print
  options are those in force at the call."""
  def print_line(*operands: Any) -> None:
    args, kwargs = _merge_callback_args(in_tree, operands, dict(static_args))
    if has_placeholders:
      with np.printoptions(**dict(np_printoptions)):
        line = fmt.format(*args, **kwargs)
    else:
      line = " ".join((fmt, *map(str, args)))
    if logging_record is None:
      sys.stdout.write(line + "\n")
    else:
      record = copy.copy(logging_record)
      record.msg = line
      logger.handle(record)
  return print_line


debug_print_p = core.Primitive("debug_print")
_define_debug_primitive(debug_print_p, _printer)


def debug_print(fmt: str | None = None, *args: Any, ordered: bool = False,
                partitioned: bool = False, skip_format_check: bool = False,
                _use_logging: bool = False, **kwargs: Any) -> Callable[..., None] | None:
  """Prints `fmt.format(*args, **kwargs)` when the program runs, with the arguments'
  values (not tracers): eagerly, under `jit`, every iteration of a loop body, once per
  example under `vmap`. Pass values as arguments, not with an f-string. With `ordered`,
  prints keep program order with other ordered effects. Called with only options,
  `debug_print(ordered=True)` returns the function to call with the format.

  Example:
    >>> jit(lambda x: debug.print("x = {x:.2f}", x=x))(jnp.float32(1.5))
    x = 1.50
  """
  def _debug_print(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
    if not skip_format_check:
      _format_checker.format(fmt, *c_args, **c_kwargs)
    has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
    in_tree, dynamic, static = _split_callback_args(c_args, c_kwargs)
    record = _user_log_record() if _use_logging else None
    debug_print_p.bind(*dynamic, fmt=fmt, has_placeholders=has_placeholders,
                       in_tree=in_tree, logging_record=record,
                       np_printoptions=tuple(np.get_printoptions().items()),
                       ordered=ordered, partitioned=partitioned,
                       static_args=tuple(static.items()))

  if fmt is not None:
    _debug_print(fmt, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError("debug_print received unexpected arguments in the two-call form: "
                    f"{args=} {kwargs=}")
  return _debug_print


debug_log = functools.partial(debug_print, _use_logging=True)
debug_log.__doc__ = """Like `debug_print`, but logs the line (level INFO, logger
`jaxon._src.debugging`) as if from the line that called it."""


def _user_log_record() -> logging.LogRecord:
  """A log record naming the first caller outside jaxon (its message set at run time)."""
  frame = sys._getframe(1)
  while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_JAXON_DIR):
    frame = frame.f_back
  where = ((frame.f_code.co_filename, frame.f_lineno) if frame is not None
           else ("(unknown file)", 0))
  return logger.makeRecord(logger.name, logging.INFO, *where, "", (), None)


# ----------------------------------------------------------------------------- breakpoint

class DebuggerFrame:
  """A Python frame as the debugger shows it: where it is, its source, and its locals
  (traced ones replaced by their values when the breakpoint runs)."""

  def __init__(self, filename: str, lineno: int, local_vars: dict[str, Any],
               source: list[str], offset: int | None):
    self.filename, self.lineno, self.locals = filename, lineno, local_vars
    self.source, self.offset = source, offset

  @classmethod
  def capture(cls, info: inspect.FrameInfo) -> DebuggerFrame:
    try:
      lines, start = inspect.getsourcelines(info.frame)
      source = [line.rstrip("\n") for line in lines]
      offset = info.lineno - max(start, 1)  # a module's source starts at line 1, as 0
      if not 0 <= offset < len(source):
        source, offset = [], None
    except (OSError, TypeError):
      source, offset = [], None
    return cls(info.filename, info.lineno, dict(info.frame.f_locals), source, offset)

  def with_locals(self, local_vars: dict[str, Any]) -> DebuggerFrame:
    return DebuggerFrame(self.filename, self.lineno, local_vars, self.source, self.offset)


class CliDebugger(cmd.Cmd):
  """A small pdb over captured frames (innermost first): `p`/`pp` expressions (or any
  expression alone), `u`/`d` to move, `l` to list, `w` for the stack, `c` to continue,
  `q` to exit the program."""

  prompt = "(jdb) "
  intro = "Entering jdb:"

  def __init__(self, frames: list[DebuggerFrame]):
    super().__init__()
    self.frames = frames
    self.frame_index = 0

  def _evaluate(self, expr: str) -> Any:
    return eval(expr, {}, dict(self.frames[self.frame_index].locals))

  def _show(self, expr: str, format_value: Callable[[Any], str]) -> None:
    try:
      print(format_value(self._evaluate(expr)), file=self.stdout)
    except Exception:
      message = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
      print("***", message, file=self.stdout)

  def default(self, line: str) -> None:
    self._show(line, repr)

  def do_p(self, arg: str) -> None:
    """p expression: prints the value of the expression."""
    self._show(arg, repr)

  def do_pp(self, arg: str) -> None:
    """pp expression: pretty-prints the value of the expression."""
    self._show(arg, pprint.pformat)

  def _context(self, num_lines: int = 2) -> None:
    frame = self.frames[self.frame_index]
    lines = [f"> {frame.filename}({frame.lineno})"]
    if frame.offset is not None:
      for i, line in enumerate(frame.source):
        if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
          lines.append(("->  " if i == frame.offset else "    ") + line)
    print("\n".join(lines), file=self.stdout)

  def do_up(self, arg: str) -> None:
    """u(p): moves one frame up (to the caller)."""
    if self.frame_index == len(self.frames) - 1:
      print("At topmost frame.", file=self.stdout)
    else:
      self.frame_index += 1
    self._context()
  do_u = do_up

  def do_down(self, arg: str) -> None:
    """d(own): moves one frame down."""
    if self.frame_index == 0:
      print("At bottommost frame.", file=self.stdout)
    else:
      self.frame_index -= 1
    self._context()
  do_d = do_down

  def do_list(self, arg: str) -> None:
    """l(ist): shows the source around the current line."""
    self._context(num_lines=5)
  do_l = do_list

  def do_where(self, arg: str) -> None:
    """w(here): prints the stack, innermost frame last."""
    lines = ["Traceback:"]
    for frame in reversed(self.frames):
      lines.append(f'  File "{frame.filename}", line {frame.lineno}')
      lines.append("    " + (frame.source[frame.offset].strip() if frame.offset is not None
                             else "<no source>"))
    print("\n".join(lines), file=self.stdout)
  do_w = do_bt = do_where

  def do_continue(self, arg: str) -> bool:
    """c(ont(inue)): resumes the program."""
    return True
  do_c = do_cont = do_continue

  def do_quit(self, arg: str) -> None:
    """q(uit): exits the program."""
    sys.exit(0)
  do_q = do_exit = do_EOF = do_quit


def _user_frames(filter_frames: bool, num_frames: int | None) -> list[DebuggerFrame]:
  """The frames above `breakpoint`'s caller chain, innermost first, without jaxon's own
  (unless `filter_frames` is off)."""
  infos = inspect.stack()[2:]
  if filter_frames:
    infos = [i for i in infos if not os.path.abspath(i.filename).startswith(_JAXON_DIR)]
  return [DebuggerFrame.capture(i) for i in infos[:num_frames]]


def _flatten_locals(local_vars: dict[str, Any]
                    ) -> tuple[list[Any], Callable[[list[Any]], dict[str, Any]]]:
  """The leaves of a frame's locals, and how to rebuild the locals from new leaves. A value
  that does not flatten (a dict with unorderable keys, say) is one leaf."""
  names, trees, leaves = [], [], []
  for name, value in local_vars.items():
    try:
      with warnings.catch_warnings():  # a generator is a leaf, as it should be here
        warnings.simplefilter("ignore", DeprecationWarning)
        value_leaves, tree = tree_util.tree_flatten(value)
    except Exception:
      value_leaves, tree = [value], None
    names.append(name)
    trees.append((tree, len(value_leaves)))
    leaves.extend(value_leaves)

  def rebuild(new_leaves: list[Any]) -> dict[str, Any]:
    it = iter(new_leaves)
    result = {}
    for name, (tree, n) in zip(names, trees):
      value_leaves = [next(it) for _ in range(n)]
      result[name] = value_leaves[0] if tree is None else tree_util.tree_unflatten(
          tree, value_leaves)
    return result
  return leaves, rebuild


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any) -> Any:
  """Stops the program where it is called and opens a debugger prompt `(jdb)` on stdin,
  in which the locals of the calling frames can be printed, with their values even inside
  `jit` (see `CliDebugger` for the commands). With `token` (a pytree of arrays), the
  breakpoint runs once `token` is computed, and `token` is returned unchanged."""
  if token is not None and ordered:
    raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
  if backend not in (None, "cli"):
    raise ValueError(f"jaxon's only debugger backend is 'cli', not {backend!r}")
  frames = _user_frames(filter_frames, num_frames)
  # Traced values among the locals travel as the callback's operands; the rest stay.
  flat = [_flatten_locals(frame.locals) for frame in frames]
  operands = [x for leaves, _ in flat for x in leaves if isinstance(x, core.Tracer)]

  def run_debugger(*values: Any) -> None:
    concrete = iter(values)
    shown = [frame.with_locals(rebuild([next(concrete) if isinstance(x, core.Tracer) else x
                                        for x in leaves]))
             for frame, (leaves, rebuild) in zip(frames, flat)]
    CliDebugger(shown).cmdloop()

  if token is None:
    debug_callback(run_debugger, *operands, ordered=ordered)
    return None

  def run_then_return(tok: Any, *values: Any) -> Any:
    run_debugger(*values)
    return tok
  token, operands = ad.stop_gradient((token, operands))
  return pure_callback(run_then_return, token, token, *operands)
