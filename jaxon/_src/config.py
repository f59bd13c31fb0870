"""Configuration flags, under JAX's names, set the ways JAX's are.

A flag has a global value, set by `config.update("jax_debug_nans", True)` or, at import,
by the environment variable of its name in capitals (`JAX_DEBUG_NANS=1`). Flags with a
context manager (`with jaxon.debug_nans(True): ...`, `jaxon.disable_jit()`, …) override
the global value in the current thread only, until the block exits, as JAX's do.

Flags that change what a function traces to (`trace_context=True`: dtypes, PRNG bit
layout, matmul precision, rank promotion) make up `trace_context()`, which every cache of
traced programs puts in its keys, so flipping one retraces instead of reusing old programs.
"""
from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

_UNSET: Any = object()


class _Values(threading.local):
  """Every flag's value as the current thread sees it. Class attributes hold the global
  values; a context manager sets an instance attribute, which only its thread sees. So a
  read is one attribute lookup, which matters for flags read on every jitted call.

  `trace_context` is derived: the tuple of the trace-context flags, kept current when one
  changes. (A thread overriding one of them by a context manager does not see a global
  `update` of another until its block exits: flags are set before work starts.)
  """
  trace_context: tuple = ()


values = _Values()
_trace_context_flags: list[str] = []


def trace_context() -> tuple:
  """The values of the flags that change tracing, as this thread sees them."""
  return values.trace_context


def trace_context_names() -> tuple[str, ...]:
  """The names of the flags in `trace_context()`, in its order."""
  return tuple(_trace_context_flags)


def shared_trace_context() -> tuple | None:
  """`trace_context()` as every thread sees it, or None while some thread overrides one of
  its flags with a context manager (each thread then reads its own)."""
  if any(config._flags[n]._open_contexts for n in _trace_context_flags):
    return None
  return _Values.trace_context


_watch_all: list[Callable[[], None]] = []


def watch_all(watcher: Callable[[], None]) -> None:
  """Calls `watcher()` now and after every change of any flag, defined now or later (see
  `Flag.watch`)."""
  _watch_all.append(watcher)
  watcher()


def _refresh_trace_context(global_too: bool) -> None:
  if global_too:
    _Values.trace_context = tuple(getattr(_Values, n) for n in _trace_context_flags)
  local = values.__dict__
  if any(n in local for n in _trace_context_flags):
    values.trace_context = tuple(getattr(values, n) for n in _trace_context_flags)
  else:
    local.pop("trace_context", None)


class Flag:
  """One option: reading `.value` gives what the current thread sees; calling it with a
  value gives a context manager (also usable as a decorator) that sets it in this thread."""

  def __init__(self, name: str, default: Any, help: str, parse: Callable[[Any], Any],
               context_default: Any, in_trace_context: bool):
    self.name = name
    self.__name__ = name[4:] if name.startswith("jax_") else name
    self.__doc__ = f"Context manager for `{name}` config option.\n\n{help}"
    self.help = help
    self._parse = parse
    self._context_default = context_default
    self._in_trace_context = in_trace_context
    self._watchers: list[Callable[[], None]] = []
    self._open_contexts = 0  # this flag's context managers open now, in any thread

  @property
  def value(self) -> Any:
    return getattr(values, self.name)

  def set_global(self, value: Any) -> None:
    setattr(_Values, self.name, self._parse(value))
    if self._in_trace_context:
      _refresh_trace_context(global_too=True)
    self._notify()

  @property
  def maybe_set(self) -> bool:
    """Whether some thread may see the flag truthy: its global value is, or one of its
    context managers is open (that thread's `value` then says)."""
    return bool(getattr(_Values, self.name)) or self._open_contexts > 0

  def watch(self, watcher: Callable[[], None]) -> None:
    """Calls `watcher()` after every change of the flag in any thread (an update, a context
    manager entered or exited): for hot paths that keep `maybe_set` in a plain global,
    cheaper to test than the thread's own value."""
    self._watchers.append(watcher)

  def _notify(self) -> None:
    for watcher in self._watchers + _watch_all:
      watcher()

  def __call__(self, new_val: Any = _UNSET) -> _FlagContext:
    if new_val is _UNSET:
      if self._context_default is _UNSET:
        raise TypeError(f"Context manager for {self.__name__} config option requires an "
                        "argument representing the new value for the config option.")
      new_val = self._context_default
    return _FlagContext(self, self._parse(new_val))

  def __bool__(self) -> bool:
    raise TypeError("bool() not supported for instances of type 'Flag' (did you mean to "
                    "use 'Flag.value' instead?)")

  def __repr__(self) -> str:
    return f"<jaxon flag {self.name}={self.value!r}>"


class _FlagContext:
  """Sets a flag in the current thread for a `with` block, then restores what was there."""

  __slots__ = ("_flag", "_value", "_saved")

  def __init__(self, flag: Flag, value: Any):
    self._flag, self._value = flag, value
    self._saved: list[Any] = []  # a stack: the same object may be entered re-entrantly

  def __enter__(self) -> None:
    name = self._flag.name
    self._saved.append(values.__dict__.get(name, _UNSET))
    setattr(values, name, self._value)
    if self._flag._in_trace_context:
      _refresh_trace_context(global_too=False)
    self._flag._open_contexts += 1
    self._flag._notify()

  def __exit__(self, *exc_info: Any) -> None:
    name, previous = self._flag.name, self._saved.pop()
    if previous is _UNSET:
      values.__dict__.pop(name, None)
    else:
      setattr(values, name, previous)
    if self._flag._in_trace_context:
      _refresh_trace_context(global_too=False)
    self._flag._open_contexts -= 1
    self._flag._notify()

  def __call__(self, fun: Callable) -> Callable:
    @functools.wraps(fun)
    def with_flag(*args: Any, **kwargs: Any) -> Any:
      with _FlagContext(self._flag, self._value):
        return fun(*args, **kwargs)
    return with_flag


# ----------------------------------------------------------------------------- parsers

_TRUE_STRINGS = ("y", "yes", "t", "true", "on", "1")
_FALSE_STRINGS = ("n", "no", "f", "false", "off", "0")


def _bool_from_env(name: str, text: str) -> bool:
  """As JAX reads a boolean environment variable (strtobool's spellings)."""
  text = text.strip().lower()
  if text in _TRUE_STRINGS:
    return True
  if text in _FALSE_STRINGS:
    return False
  raise ValueError(f"invalid truth value {text!r} for environment variable {name.upper()}")


def enum_parser(choices: Sequence[str], optional: bool = False) -> Callable[[Any], Any]:
  """A parser accepting the strings `choices` (and None when `optional`), raising JAX's
  error for anything else."""
  def parse(value: Any) -> Any:
    if value is None and optional:
      return None
    if not isinstance(value, str) or value not in choices:
      listed = list(choices)
      raise ValueError(f"new enum value must be {'None or ' if optional else ''}in {listed}, "
                       f"got {value} of type {type(value)}.")
    return value
  return parse


def _parse_platform_name(value: Any) -> str:
  """JAX fails on the first operation on an absent platform; jaxon, which only has the
  CPU, fails as soon as one is asked for."""
  if value not in ("", "cpu"):
    raise RuntimeError(f"Unknown backend: {value!r} requested, but no platforms that are "
                       f"instances of {value} are present. Platforms present are: cpu")
  return value


# ----------------------------------------------------------------------------- the registry


class Config:
  """The flags by name: `update` sets a global value; `config.jax_enable_x64`, `read` and
  `values` read what the current thread sees."""

  def __init__(self) -> None:
    object.__setattr__(self, "_flags", {})
    object.__setattr__(self, "_listeners", [])

  def define(self, name: str, default: Any, help: str, *, parse: Callable[[Any], Any] | None
             = None, context_default: Any = _UNSET, trace_context: bool = False) -> Flag:
    """Defines a flag; the environment variable `name.upper()` overrides `default`. Bool
    defaults make a bool flag whose context manager defaults to True, as JAX's."""
    if name in self._flags:
      raise ValueError(f"Config option {name} already defined")
    is_bool = isinstance(default, bool)
    if parse is None:
      parse = bool if is_bool else (lambda v: v)
    if is_bool and context_default is _UNSET:
      context_default = True
    env = os.environ.get(name.upper())
    if env is not None:
      default = (_bool_from_env(name, env) if is_bool else
                 type(default)(env) if isinstance(default, (int, float)) else env)
    flag = self._flags[name] = Flag(name, default, help, parse, context_default,
                                    trace_context)
    if trace_context:
      _trace_context_flags.append(name)
    flag.set_global(default)
    return flag

  def update(self, name: str, value: Any) -> None:
    flag = self._flags.get(name)
    if flag is None:
      raise AttributeError(f"Unrecognized config option: {name!r}; "
                           f"known options are {sorted(self._flags)}")
    flag.set_global(value)
    for listener in self._listeners:
      listener(name, getattr(_Values, name))

  def on_update(self, listener: Callable[[str, Any], None]) -> None:
    """Registers a callback run after every global update (caches that depend on flags;
    context managers, being per thread, do not call it)."""
    self._listeners.append(listener)

  def read(self, name: str) -> Any:
    if name not in self._flags:
      raise AttributeError(f"Unrecognized config option: {name!r}")
    return getattr(values, name)

  @property
  def values(self) -> dict[str, Any]:
    return {name: getattr(values, name) for name in self._flags}

  def __getattr__(self, name: str) -> Any:
    if name in self._flags:
      return getattr(values, name)
    raise AttributeError(f"Unrecognized config option: {name!r}")

  def __setattr__(self, name: str, value: Any) -> None:
    raise AttributeError("use config.update(name, value) to change a flag")

  def __dir__(self) -> list[str]:
    return sorted(set(super().__dir__()) | set(self._flags))


config = Config()

# The options JAX programs set on their first line. Each is honoured; where JAX itself
# ignores one on the CPU, so does jaxon (`jax_default_matmul_precision`: the CPU computes
# float32 products in full precision whatever the lowered program asks).
enable_x64 = config.define(
    "jax_enable_x64", False, "Enable 64-bit types (float64, int64, complex128).",
    trace_context=True)
threefry_partitionable = config.define(
    "jax_threefry_partitionable", True,
    "Generate random bits in a way that shards without communication.", trace_context=True)
_MATMUL_PRECISIONS = ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32")
default_matmul_precision = config.define(
    "jax_default_matmul_precision", None,
    "Default precision of dot_general and conv_general_dilated when `precision=None`: one "
    f"of {list(_MATMUL_PRECISIONS)} (jaxon has no dot algorithms, JAX's other values).",
    parse=enum_parser(_MATMUL_PRECISIONS, optional=True), trace_context=True)
disable_jit_flag = config.define(
    "jax_disable_jit", False,
    "Run jit-decorated functions and control flow op by op in Python, for debugging.")
platform_name = config.define(
    "jax_platform_name", "",
    "The platform of the default backend; jaxon runs on 'cpu' (or '', the default).",
    parse=_parse_platform_name)
platforms = config.define(
    "jax_platforms", None,
    "Comma-separated platforms to initialize, in order of priority; jaxon has 'cpu' only. "
    "Read when the backend starts (the first computation), as in JAX.",
    parse=lambda v: v or None)
debug_nans = config.define(
    "jax_debug_nans", False,
    "Add NaN checks to every operation; raise FloatingPointError where one appears.")
debug_infs = config.define(
    "jax_debug_infs", False,
    "Add inf checks to every operation; raise FloatingPointError where one appears.")
check_tracer_leaks = config.define(
    "jax_check_tracer_leaks", False,
    "Check that no tracer outlives the transformation that made it.")
traceback_filtering = config.define(
    "jax_traceback_filtering", "auto",
    "How tracebacks of errors raised in jaxon are filtered of jaxon's internal frames.",
    parse=enum_parser(("off", "tracebackhide", "remove_frames", "quiet_remove_frames",
                       "auto")))
log_compiles = config.define(
    "jax_log_compiles", False,
    "Log each compilation (function name and signature) to Python logging at WARNING.")
explain_cache_misses = config.define(
    "jax_explain_cache_misses", False,
    "Log why each jitted function is traced again: which argument's type, tree "
    "structure or static value changed since it was last traced.")
numpy_rank_promotion = config.define(
    "jax_numpy_rank_promotion", "allow",
    "What jaxon.numpy does when it broadcasts operands of different ranks: 'allow', "
    "'warn' or 'raise'.", parse=enum_parser(("allow", "warn", "raise")), trace_context=True)
numpy_dtype_promotion = config.define(
    "jax_numpy_dtype_promotion", "standard",
    "Which implicit dtype promotions jaxon.numpy makes: 'standard' (JAX's lattice) or "
    "'strict' (only Python scalars promote, to arrays of their kind).",
    parse=enum_parser(("standard", "strict")), trace_context=True)
enable_checks = config.define(
    "jax_enable_checks", False,
    "Type-check every jaxpr that jit traces (slow: for debugging jaxon itself).")
default_prng_impl = config.define(
    "jax_default_prng_impl", "threefry2x32",
    "The PRNG implementation of new keys; jaxon implements 'threefry2x32'.",
    parse=enum_parser(("threefry2x32",)))


def _typed_parser(kind: type, what: str) -> Callable[[Any], Any]:
  """A parser accepting values of `kind` (ints for floats too) or None, raising JAX's error
  for anything else."""
  def parse(value: Any) -> Any:
    accepted = (int, float) if kind is float else kind
    if value is not None and (isinstance(value, bool) or not isinstance(value, accepted)):
      raise ValueError(f"new {what} config value must be None or of type {what}, got "
                       f"{value} of type {type(value)}.")
    return value
  return parse


# The persistent compilation cache (`xla/compilation_cache.py`).
compilation_cache_dir = config.define(
    "jax_compilation_cache_dir", None,
    "Directory of the persistent compilation cache: compiled programs are saved there and "
    "loaded by later processes instead of compiling again. None: no persistent cache.",
    parse=_typed_parser(str, "string"))
enable_compilation_cache = config.define(
    "jax_enable_compilation_cache", True,
    "If False, the persistent compilation cache is off even when a directory is set.")
persistent_cache_min_compile_time_secs = config.define(
    "jax_persistent_cache_min_compile_time_secs", 1.0,
    "Programs that compiled faster than this many seconds are not written to the cache.",
    parse=_typed_parser(float, "float"))
persistent_cache_min_entry_size_bytes = config.define(
    "jax_persistent_cache_min_entry_size_bytes", 0,
    "Entries smaller than this many bytes are not written to the cache (0 or -1: no "
    "minimum on the CPU).", parse=_typed_parser(int, "int"))
persistent_cache_enable_xla_caches = config.define(
    "jax_persistent_cache_enable_xla_caches", "xla_gpu_per_fusion_autotune_cache_dir",
    "XLA's own caches to enable beside the persistent cache; they are GPU caches, so on "
    "the CPU this is accepted and changes nothing.", parse=_typed_parser(str, "string"))
raise_persistent_cache_errors = config.define(
    "jax_raise_persistent_cache_errors", False,
    "Raise errors of reading or writing the persistent compilation cache instead of "
    "warning and compiling.")
# JAX's shorthand: `with checking_leaks():` sets `jax_check_tracer_leaks` to True.
checking_leaks = functools.partial(check_tracer_leaks, True)


def disable_jit(disable: bool = True) -> Any:
  """A context manager (or decorator) under which jitted functions and control flow run op
  by op in Python, so `print` and `pdb` see concrete values. Thread-local."""
  return disable_jit_flag(disable)


def x64_enabled() -> bool:
  return values.jax_enable_x64
