"""`jit`: a function traced once per signature of its arguments and run as one executable.

A jitted function keeps its traced signatures in a cache of its own; all functions' entries
share one least-recently-used order, bounded as JAX's C++ jit cache is (`CACHE_CAPACITY`
entries over all functions), so a program that retraces forever keeps a bounded number of
executables. `jaxon.clear_caches()` empties it (see `caches.py`).

Debugging switches read here: `jax_disable_jit` (call the Python function), `jax_log_compiles`
(log each trace and compilation), `jax_explain_cache_misses` (log why a function is traced
again), `jax_enable_checks` (type-check each traced jaxpr) and `jax_debug_nans`/`infs`
(check the outputs; see `debug_nans.py`).
"""
from __future__ import annotations

import collections
import functools
import inspect
import logging
import operator
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from jaxon._src import (caches, core, debug_nans, dtypes, jit_cache_misses, traceback_util,
                        tree_util)
from jaxon._src import config as config_mod, config_guards
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.mesh import current_mesh
from jaxon._src.pjit import pjit_p, sharding_params, shardings_inside
from jaxon._src import sharding_impls
from jaxon._src.xla import cpp_dispatch, executable
from jaxon._src.xla.array import Array

logger = logging.getLogger(__name__)

# JAX's C++ jit cache holds this many compiled signatures over all jitted functions.
CACHE_CAPACITY = 8192


def abstractify(x: Any, where: str = "") -> ShapedArray:
  try:
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument {where}{x!r} of type {type(x)} is not a valid JAX type: "
                    "pass arrays, NumPy values, Python scalars or pytrees of those, or mark "
                    "the argument static with static_argnums/static_argnames.") from None


def _flat_avals(leaves: Sequence[Any]) -> tuple[ShapedArray, ...]:
  return tuple([x.aval if type(x) is Array else abstractify(x) for x in leaves])


_aval_of = operator.attrgetter("aval")
_ONLY_ARRAYS = frozenset([Array])
_flag_values = config_mod.values  # the flags as this thread sees them
# Every call needs `jax_disable_jit` and the trace context; reading them from the thread's
# values costs more than the rest of the check, so plain globals stand in for them while
# no thread overrides them: `_maybe_disabled` (some thread may have jit off) and
# `_shared_context` (None while a thread overrides a flag of the trace context).
_maybe_disabled = False
_shared_context: tuple | None = None


def _track_flags() -> None:
  global _maybe_disabled, _shared_context
  _maybe_disabled = config_mod.disable_jit_flag.maybe_set
  _shared_context = config_mod.shared_trace_context()


config_mod.watch_all(_track_flags)
_maybe_no_execution = False  # config_guards.no_execution.maybe_set, as a global


def _track_no_execution() -> None:
  global _maybe_no_execution
  _maybe_no_execution = config_guards.no_execution.maybe_set


config_guards.no_execution.watch(_track_no_execution)
_check_outputs = False  # debug_nans.maybe_checking, as a global: one read per call


def _set_check_outputs(on: bool) -> None:
  global _check_outputs
  _check_outputs = on


debug_nans.watch(_set_check_outputs)


@functools.lru_cache(maxsize=64)
def _positional_leaves_tree(n: int) -> tree_util.PyTreeDef:
  """The input tree of a call with `n` Array arguments and no keywords, the usual call.
  It is one object per `n`, so comparing cache keys compares it by identity."""
  return tree_util.tree_structure(((0,) * n, {}))


def flatten_fun(fun: Callable, in_tree: tree_util.PyTreeDef, out_tree_store: list
                ) -> Callable[..., list[Any]]:
  """`fun` on flat inputs to flat outputs; the output structure lands in `out_tree_store`."""
  def flat_fun(*flat_args: Any) -> list[Any]:
    args, kwargs = in_tree.unflatten(flat_args)
    out = fun(*args, **kwargs)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_store.append(out_tree)
    return out_leaves
  return flat_fun


class ShapeDtypeStruct:
  """A shape and dtype standing in for an array (what `eval_shape` returns). `sharding`
  is carried for the code that reads it; jaxon's `jit` lays out its arguments by its own
  `in_shardings`, not by this."""

  __slots__ = ("shape", "dtype", "weak_type", "sharding")

  def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False, *,
               sharding: Any = None):
    self.shape = tuple(shape)
    self.dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)  # keys' as they are
    self.weak_type = weak_type
    self.sharding = sharding

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape)))

  def __eq__(self, other: object) -> bool:
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self.sharding == other.sharding)

  def __hash__(self) -> int:
    return hash((self.shape, self.dtype, self.sharding))

  def __repr__(self) -> str:
    sharding = "" if self.sharding is None else f", sharding={self.sharding}"
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding})"


core.register_aval_handler(
    ShapeDtypeStruct, lambda s: ShapedArray(s.shape, dtypes.canonicalize_dtype(s.dtype),
                                            s.weak_type))


# ----------------------------------------------------------------------------- the cache


class _CacheEntry:
  """What tracing one signature of a jitted function gave, and the executable that runs it
  (compiled on the first eager call; a call under another transformation stages `pjit`)."""

  __slots__ = ("jaxpr", "const_args", "in_tree", "out_tree", "executable", "returns_leaf",
               "donated", "owner", "key", "shardings")

  def __init__(self, jaxpr: ClosedJaxpr, const_args: list[Any], in_tree: tree_util.PyTreeDef,
               out_tree: tree_util.PyTreeDef, donated: tuple[bool, ...]):
    self.jaxpr = jaxpr  # consts that are tracers of an enclosing trace become leading args
    self.const_args = const_args
    self.in_tree = in_tree
    self.out_tree = out_tree
    self.donated = donated  # per flat input; () when nothing is donated
    self.executable: executable.Executable | None = None  # set by `compile`
    # A function returning one array (the usual case) needs no unflattening.
    self.returns_leaf = out_tree == tree_util.tree_structure(0)
    self.owner: dict | None = None  # the cache holding it, and its key there
    # jit's (in_shardings, out_shardings), as pytree prefixes; None when neither is given.
    self.shardings: tuple[Any, Any] | None = None
    self.key: Hashable = None

  def compile(self, name: str) -> executable.Executable:
    if self.executable is None:
      special = next((program for build in special_programs
                      if (program := build(self.jaxpr, name)) is not None), None)
      if special is not None:
        self.executable = special
      elif self.shardings is not None or shardings_inside(self.jaxpr.jaxpr):
        self.executable = _placed_program(self, name)
      elif any(self.donated):
        self.executable = executable.DonatingExecutable(
            self.jaxpr.jaxpr, self.jaxpr.consts, name, self.donated)
      else:
        self.executable = executable.executable_for(self.jaxpr, name)
    return self.executable


# Builders of the programs a layer above compiles its own way (one that takes or makes
# mutable refs: `state.discharge`): each returns the program for a jaxpr it handles, else
# None. Consulted once per compilation, never per call.
special_programs: list[Callable[[ClosedJaxpr, str], Any]] = []

# Every cached entry of every jitted function, least recently used first.
_lru: collections.OrderedDict[_CacheEntry, None] = collections.OrderedDict()
_live_functions: weakref.WeakSet[PjitFunction] = weakref.WeakSet()


def _remember(owner: dict, key: Hashable, entry: _CacheEntry) -> None:
  entry.owner, entry.key = owner, key
  owner[key] = entry
  _lru[entry] = None
  while len(_lru) > CACHE_CAPACITY:
    old, _ = _lru.popitem(last=False)
    old.owner.pop(old.key, None)


def _forget_function(owner: dict) -> None:
  """Drops a dead function's entries from the shared order (they go with it; jaxlib's
  go with the C++ function, see `cpp_dispatch.pjit`)."""
  for entry in owner.values():
    _lru.pop(entry, None)


@caches.register
def _clear_jit_caches() -> None:
  _lru.clear()
  for fun in list(_live_functions):
    fun.clear_cache()


def _trace_for_jit(fun: Callable, name: str, in_tree: tree_util.PyTreeDef,
                   avals: Sequence[ShapedArray], donated: tuple[bool, ...]) -> _CacheEntry:
  start = time.perf_counter()
  out_tree_store: list = []
  flat_fun = flatten_fun(fun, in_tree, out_tree_store)
  jaxpr, consts = pe.trace_to_jaxpr(flat_fun, avals)
  if _flag_values.jax_enable_checks:
    core.check_jaxpr(jaxpr)
  executable.log_event(logger, f"Finished tracing {name} for jit", start)
  if any(isinstance(c, core.Tracer) for c in consts):
    return _CacheEntry(ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts, in_tree,
                       out_tree_store[0], ())
  return _CacheEntry(ClosedJaxpr(jaxpr, consts), [], in_tree, out_tree_store[0], donated)


# ----------------------------------------------------------------------------- jit


class PjitFunction:
  """A function compiled with XLA on first call for each distinct signature: the Python
  path of its calls. `jit` returns jaxlib's C++ function made of it (`as_cpp_function`),
  or this object itself where jaxlib cannot run the calls (donation, shardings, inlining).
  Named as JAX's C++ type is: libraries (chex) tell jitted functions by the type's name."""

  def __init__(self, fun: Callable, argnums: _Argnums, inline: bool,
               shardings: tuple[Any, Any] | None = None):
    functools.update_wrapper(self, fun)
    self._shardings = shardings
    self._fun = fun
    self._name = getattr(fun, "__name__", type(fun).__name__)
    self._static_argnums = argnums.static_nums
    self._static_argnames = argnums.static_names
    self._donate_argnums = argnums.donate_nums
    self._donate_argnames = argnums.donate_names
    self._inline = inline
    self._cache: dict[Hashable, _CacheEntry] = {}
    # The key and entry of the last call: a call that repeats its signature (the usual
    # case) is found by comparing keys, without hashing them (aval hashing runs Python).
    # It stays usable when the shared order evicts the entry: a hot function never
    # retraces because of other functions' entries.
    self._last: tuple[Hashable, _CacheEntry | None] = (None, None)
    self._cpp: weakref.ref | None = None  # the C++ function, if `as_cpp_function` made it
    _live_functions.add(self)
    weakref.finalize(self, _forget_function, self._cache).atexit = False

  def as_cpp_function(self) -> Any:
    """This function as jaxlib's C++ `PjitFunction` (see `xla/cpp_dispatch.py`), which
    answers the signatures the Python path (`_call_python`) has run and handed over, and
    calls that path for the others. `jit` returns it, so that a call jaxlib answers runs
    no Python at all (0.25 µs of a 3.4 µs call was this class's `__call__`). It carries
    this object's API, and holds it: this object dies with it."""
    cpp = cpp_dispatch.pjit(self._name, self._fun, _cache_miss_of(weakref.ref(self)),
                            self._static_argnums, self._static_argnames)
    functools.update_wrapper(cpp, self._fun)
    cpp._fun, cpp._jaxon_jit = self._fun, self
    cpp.lower, cpp.trace, cpp.eval_shape = self.lower, self.trace, self.eval_shape
    cpp.clear_cache, cpp._cache_size = self.clear_cache, self._cache_size
    self._cpp = weakref.ref(cpp)
    return cpp

  def _split_statics(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple[tuple, dict]]:
    """(static (position or name, value) pairs, (dynamic args, dynamic kwargs))."""
    statics = tuple((i, args[i]) for i in self._static_argnums if i < len(args)) + tuple(
        (k, kwargs[k]) for k in self._static_argnames if k in kwargs)
    dyn_args = tuple(a for i, a in enumerate(args) if i not in self._static_argnums)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
    return statics, (dyn_args, dyn_kwargs)

  def _entry(self, args: tuple, kwargs: dict) -> tuple[Sequence[Any], _CacheEntry]:
    """The flat dynamic arguments and the cache entry of their signature: (input tree,
    static values, avals, flags). Runs on every call, so it does no more than that."""
    statics, dynamic = (), (args, kwargs)
    if self._static_argnums or self._static_argnames:
      statics, dynamic = self._split_statics(args, kwargs)
    in_tree = None
    if not kwargs and not statics and _ONLY_ARRAYS.issuperset(map(type, args)):
      # The usual call, Arrays by position: no flattening, and the avals are the signature
      # (as for any call whose arguments are leaves, NumPy arrays or scalars too).
      leaves, avals = args, tuple(map(_aval_of, args))
      key: tuple = (avals, _shared_context or _flag_values.trace_context, core.axis_frames())
    else:
      leaves, in_tree = tree_util.registry.flatten(dynamic)
      try:  # Arrays and tracers: `map` runs in C, without a Python call per leaf
        avals = tuple(map(_aval_of, leaves))
      except AttributeError:
        avals = _flat_avals(leaves)
      positional = not statics and in_tree == _positional_leaves_tree(len(leaves))
      # The bound axes too: a collective's axis size is fixed when it is traced.
      context = _shared_context or _flag_values.trace_context
      frames = core.axis_frames()
      key = ((avals, context, frames) if positional
             else (in_tree, statics, avals, context, frames))
    last_key, last_entry = self._last
    if not statics and key == last_key:  # statics may not compare safely
      return leaves, last_entry
    entry = self._lookup(key, statics)
    if entry is None:
      in_tree = _positional_leaves_tree(len(args)) if in_tree is None else in_tree
      if _flag_values.jax_explain_cache_misses:
        jit_cache_misses.explain_miss(self, key, args, statics)
      entry = self._trace(args, kwargs, statics, in_tree, avals)
      if not entry.const_args:
        _remember(self._cache, key, entry)
    if not entry.const_args:
      self._last = (key, entry)
    return leaves, entry

  def _lookup(self, key: Hashable, statics: tuple) -> _CacheEntry | None:
    try:
      entry = self._cache.get(key)
    except TypeError:
      raise _unhashable_static_error(statics) from None
    except Exception as e:  # a static value's __eq__ failed
      types = ", ".join(str(type(v)) for _, v in statics)
      raise ValueError("static arguments should be comparable using __eq__. The following "
                       f"error was raised when comparing static arguments of types {types}: "
                       f"{type(e).__name__}: {e}") from e
    if entry is not None:
      try:
        _lru.move_to_end(entry)
      except KeyError:  # evicted by another thread just now
        pass
    return entry

  def _trace(self, args: tuple, kwargs: dict, statics: tuple, in_tree: tree_util.PyTreeDef,
             avals: Sequence[ShapedArray]) -> _CacheEntry:
    if _flag_values.jax_no_tracing:
      code = getattr(self._fun, "__code__", None)
      where = f" at {code.co_filename}:{code.co_firstlineno}" if code else ""
      raise RuntimeError(f"re-tracing function {self._name}{where} for `jit`, but "
                         "'no_tracing' is set")
    static_args = {i: v for i, v in statics if type(i) is int}
    static_kwargs = {k: v for k, v in statics if type(k) is str}

    def fun_of_dynamic(*dyn_args: Any, **dyn_kwargs: Any) -> Any:
      full = list(dyn_args)
      for i in sorted(static_args):
        full.insert(i, static_args[i])
      return self._fun(*full, **dyn_kwargs, **static_kwargs)
    entry = _trace_for_jit(fun_of_dynamic, self._name, in_tree, avals,
                           self._donated_leaves(args, kwargs))
    entry.shardings = self._shardings
    return entry

  def _donated_leaves(self, args: tuple, kwargs: dict) -> tuple[bool, ...]:
    """Whether each flat dynamic input is donated (`()` when none is)."""
    if not (self._donate_argnums or self._donate_argnames):
      return ()
    flags: list[bool] = []
    for i, a in enumerate(args):
      if i not in self._static_argnums:
        flags += [i in self._donate_argnums] * tree_util.tree_structure(a).num_leaves
    for k in sorted(kwargs):  # the order dicts flatten in
      if k not in self._static_argnames:
        flags += [k in self._donate_argnames] * tree_util.tree_structure(kwargs[k]).num_leaves
    return tuple(flags) if any(flags) else ()

  @traceback_util.inline_api_boundary
  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    try:
      return self._call_python(args, kwargs)[0]
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise

  def _call_python(self, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """The Python path of a call: its result, and the executable that computed it when the
    call ran one as it is (else None)."""
    # Every step of this path is paid on each call it takes: keep it short.
    if _maybe_disabled and _flag_values.jax_disable_jit:
      return self._fun(*args, **kwargs), None
    leaves, entry = self._entry(args, kwargs)
    ran = None
    if core.is_eval_trace_current():
      if _maybe_no_execution and _flag_values.jax_no_execution:
        raise RuntimeError(f"JAX tried to execute function jit({self._name}), but the "
                           "no_execution config option is set")
      ran = entry.executable or entry.compile(self._name)
      outs = ran(leaves)
      if _check_outputs:  # jax_debug_nans/infs: on a bad value, re-run op by op
        debug_nans.check_jit_outputs(self._fun, self._name, args, kwargs, outs)
        ran = None
    elif self._inline:
      outs = core.eval_jaxpr(entry.jaxpr.jaxpr, entry.jaxpr.consts, *entry.const_args,
                             *leaves)
    else:
      outs = pjit_p.bind(*entry.const_args, *leaves, jaxpr=entry.jaxpr, name=self._name,
                         **_pjit_shardings(entry))
    return (outs[0] if entry.returns_leaf else entry.out_tree.unflatten(outs)), ran

  @traceback_util.api_boundary
  def lower(self, *args: Any, **kwargs: Any) -> Any:
    _, entry = self._entry(args, kwargs)
    from jaxon._src.stages import Lowered  # that module builds on this one
    return Lowered(entry, self._name)

  @traceback_util.api_boundary
  def trace(self, *args: Any, **kwargs: Any) -> Any:
    """The `jax.stages.Traced` stage for these arguments (static ones by value)."""
    from jaxon._src.stages import Traced  # that module builds on this one
    _, entry = self._entry(args, kwargs)
    return Traced(entry, self._name)

  @traceback_util.api_boundary
  def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
    _, entry = self._entry(args, kwargs)
    return entry.out_tree.unflatten(
        [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in entry.jaxpr.out_avals])

  def clear_cache(self) -> None:
    for entry in self._cache.values():
      _lru.pop(entry, None)
    self._cache.clear()
    self._last = (None, None)
    cpp = self._cpp and self._cpp()
    if cpp is not None:
      cpp._clear_cache()

  def _cache_size(self) -> int:
    return len(self._cache)

  def __get__(self, obj: Any, objtype: Any = None) -> Any:
    return self if obj is None else functools.partial(self, obj)

  def __repr__(self) -> str:
    # JAX's form, which libraries (chex) read to tell a jitted function from a plain one.
    return f"<PjitFunction of {self._fun!r}>"


def _cache_miss_of(function: weakref.ref[PjitFunction]) -> Callable[..., tuple]:
  """What jaxlib's C++ jit calls for a signature it cannot answer: the Python path, and the
  fast path for that signature when the call ran a program as it is on evaluation's trace.
  (The function is held weakly: jaxlib's object, which holds this, holds it.)"""
  def cache_miss(*args: Any, **kwargs: Any) -> tuple:
    jitted = function()
    result, ran = jitted._call_python(args, kwargs)
    fast = None
    if ran is not None and not core.axis_frames():
      _, (dynamic_args, dynamic_kwargs) = jitted._split_statics(args, kwargs)
      fast = cpp_dispatch.fastpath(ran, dynamic_args, dynamic_kwargs, result)
    return result, fast, False
  return cache_miss


def is_jitted(fun: Any) -> bool:
  """Whether `fun` is the result of jaxon's `jit`: a `PjitFunction`, or jaxlib's C++
  function made of one (not a JAX-jitted function, nor a wrapper that copied the
  attributes of a jitted one with `functools.wraps`)."""
  return isinstance(fun, PjitFunction) or (
      type(fun) is cpp_dispatch.CppFunction
      and isinstance(getattr(fun, "_jaxon_jit", None), PjitFunction))


def _unhashable_static_error(statics: tuple) -> ValueError:
  for _, value in statics:
    try:
      hash(value)
    except TypeError as e:
      return ValueError("Non-hashable static arguments are not supported. An error occurred "
                        f"while trying to hash an object of type {type(value)}, {value}. The "
                        f"error was:\nTypeError: {e}\n")
  return ValueError("Non-hashable static arguments are not supported.")


# ----------------------------------------------------------------------------- arguments


class _Argnums:
  """Static and donated arguments, by position and by name, checked against `fun`'s
  signature and each completed from the other as JAX does."""

  def __init__(self, fun: Callable, static_argnums: Any, static_argnames: Any,
               donate_argnums: Any, donate_argnames: Any):
    try:
      sig: inspect.Signature | None = inspect.signature(fun)
    except (TypeError, ValueError):  # some builtins have none: nothing can be checked
      sig = None
    if sig is None:
      if donate_argnames is not None:
        raise ValueError(f"Getting the signature of function {fun} failed. Pass "
                         "donate_argnums instead of donate_argnames.")
      static = (_index_tuple(static_argnums), _str_tuple(static_argnames))
      donate: tuple[tuple[int, ...], tuple[str, ...]] = (_index_tuple(donate_argnums), ())
    else:
      static = _infer_argnums_and_argnames(sig, static_argnums, static_argnames)
      donate = _infer_argnums_and_argnames(sig, donate_argnums, donate_argnames)
      for (nums, names), what in ((static, "static"), (donate, "donate")):
        _check_argnums(sig, nums, f"{what}_argnums")
        _check_argnames(sig, names, f"{what}_argnames")
    if both := set(static[1]) & set(donate[1]):
      raise ValueError("static_argnames and donate_argnames cannot intersect. Argument names "
                       f"{both} appear in both static_argnames and donate_argnames")
    if set(static[0]) & set(donate[0]):
      raise ValueError(f"`static_argnums` {sorted(set(static[0]))} and `donate_argnums` "
                       f"{sorted(set(donate[0]))} cannot intersect.")
    self.static_nums = _nonnegative(sig, static[0])
    self.static_names = static[1]
    # As in JAX, a negative donate_argnums donates nothing.
    self.donate_nums = tuple(sorted({n for n in donate[0] if n >= 0}))
    self.donate_names = donate[1]


def _index_tuple(x: Any) -> tuple[int, ...]:
  if x is None:
    return ()
  return (operator.index(x),) if isinstance(x, int) else tuple(map(operator.index, x))


def _str_tuple(x: Any) -> tuple[str, ...]:
  if x is None:
    return ()
  names = (x,) if isinstance(x, str) else tuple(x)
  for name in names:
    if not isinstance(name, str):
      raise TypeError(f"argument is not a string: {name!r}")
  return names


def _infer_argnums_and_argnames(sig: inspect.Signature, argnums: Any, argnames: Any
                                ) -> tuple[tuple[int, ...], tuple[str, ...]]:
  """Positions and names; when only one is given, the other follows from the parameters
  that may be passed either way."""
  if argnums is None and argnames is None:
    return (), ()
  if argnums is not None and argnames is not None:
    return _index_tuple(argnums), _str_tuple(argnames)
  either = [(i, name) for i, (name, p) in enumerate(sig.parameters.items())
            if p.kind is p.POSITIONAL_OR_KEYWORD]
  if argnums is None:
    names = _str_tuple(argnames)
    return tuple(i for i, name in either if name in names), names
  nums = _index_tuple(argnums)
  return nums, tuple(name for i, name in either if i in nums)


def _positional_count(sig: inspect.Signature) -> int:
  return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
             for p in sig.parameters.values())


def _check_argnums(sig: inspect.Signature, nums: tuple[int, ...], what: str) -> None:
  if any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
    return  # any position may be passed
  n = _positional_count(sig)
  if nums and (-min(nums) > n or max(nums) >= n):
    raise ValueError(f"Jitted function has {what}={nums}, but only accepts {n} positional "
                     "arguments.")


def _check_argnames(sig: inspect.Signature, names: tuple[str, ...], what: str) -> None:
  params = sig.parameters.values()
  positional_only = {p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                          p.VAR_POSITIONAL)}
  if bad := positional_only & set(names):
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are "
                     "positional-only")
  if any(p.kind is p.VAR_KEYWORD for p in params):
    return
  keywords = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
  if bad := set(names) - keywords:
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function does "
                     "not take these args.")


def _nonnegative(sig: inspect.Signature | None, nums: tuple[int, ...]) -> tuple[int, ...]:
  """Negative static positions counted from the last positional parameter (a function
  with *args has no last one: they stay negative and match nothing)."""
  if sig is None or any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
    return tuple(sorted(nums))
  n = _positional_count(sig)
  return tuple(sorted({i % n if i < 0 else i for i in nums}))


@traceback_util.api_boundary
def jit(fun: Callable | None = None, /, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool = False,
        compiler_options: dict[str, Any] | None = None) -> Any:
  """Compiles `fun` with XLA: traced once per signature of its arguments (shapes, dtypes,
  weak types, tree structure and static values), then run as one executable.

  Args:
    fun: the function; arrays and pytrees of arrays in, arrays and pytrees out.
    static_argnums, static_argnames: arguments that are compile-time constants (hashable).
    donate_argnums, donate_argnames: arguments whose buffers the program may reuse for an
      output of the same shape and dtype; a donated Array is deleted by the call.
    keep_unused: jaxon never prunes unused arguments, so this changes nothing.
    inline: under another transformation, stage the function's equations in place of
      a `pjit` equation.
    in_shardings, out_shardings: how the flat arguments and results are laid out over
      devices: pytree prefixes of them whose leaves are Shardings, PartitionSpecs (over
      the mesh of `with mesh:`) or None (the argument's own placement; XLA's choice).
    device, backend: jaxon runs on the CPU; only the values that mean it are accepted.

  Example:
    >>> f = jit(lambda x: x * 2.0 + 1.0)
    >>> f(jnp.arange(3.0))
    Array([1., 3., 5.], dtype=float32)
  """
  if fun is None:
    return functools.partial(
        jit, in_shardings=in_shardings, out_shardings=out_shardings,
        static_argnums=static_argnums, static_argnames=static_argnames,
        donate_argnums=donate_argnums, donate_argnames=donate_argnames,
        keep_unused=keep_unused, device=device, backend=backend, inline=inline,
        compiler_options=compiler_options)
  if not callable(fun):
    raise TypeError(f"jit expected a callable, got {fun!r}")
  shardings = None
  if in_shardings is not None or out_shardings is not None:
    _check_shardings(in_shardings, "in_shardings")
    _check_shardings(out_shardings, "out_shardings")
    shardings = (in_shardings, out_shardings)
  if backend not in (None, "cpu") or (device is not None and
                                      getattr(device, "platform", None) != "cpu"):
    raise ValueError(f"jit: jaxon runs on the CPU; got backend={backend!r}, "
                     f"device={device!r}.")
  if compiler_options:
    raise NotImplementedError("jit: jaxon does not take XLA compiler_options.")
  argnums = _Argnums(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
  jitted = PjitFunction(fun, argnums, inline, shardings)
  # Donation, shardings and inlining keep to the Python path; so do negative static
  # positions, which jaxlib would not count from the end.
  if (argnums.donate_nums or argnums.donate_names or inline or shardings
      or any(i < 0 for i in argnums.static_nums)):
    return jitted
  return jitted.as_cpp_function()


# ----------------------------------------------------------------------------- shardings


def _is_sharding_leaf(x: Any) -> bool:
  return x is None or isinstance(x, (sharding_impls.Sharding, sharding_impls.PartitionSpec))


def _check_shardings(shardings: Any, what: str) -> None:
  for leaf in tree_util.tree_leaves(shardings, is_leaf=_is_sharding_leaf):
    if not _is_sharding_leaf(leaf):
      raise TypeError(f"{what} leaf specifications are expected to be PartitionSpec "
                      f"instances or None, but got {leaf}")


def _resolve_sharding(sharding: Any, what: str) -> Any:
  """A jit sharding leaf as a Sharding: a PartitionSpec is over the mesh of `with mesh:`."""
  if not isinstance(sharding, sharding_impls.PartitionSpec):
    return sharding
  mesh = current_mesh()
  if mesh is None:
    raise RuntimeError(f"jit requires a non-empty mesh in context if you are passing "
                       f"`PartitionSpec`s to {what}. You can define a context mesh via "
                       f"`with mesh:`. Alternatively, provide `Sharding`s to {what} and "
                       "then the mesh context manager is not required.")
  return sharding_impls.NamedSharding(mesh, sharding)


def _flat_shardings(prefix: Any, tree: Any, n: int, what: str) -> list[Any]:
  """One sharding (or None) per leaf of `tree` (whose leaves are 0..n-1), from a pytree
  prefix of it."""
  flat: list[Any] = [None] * n
  if _is_sharding_leaf(prefix):
    return [_resolve_sharding(prefix, what)] * n

  def assign(sharding: Any, sub: Any) -> None:
    for i in tree_util.tree_leaves(sub):
      flat[i] = _resolve_sharding(sharding, what)
  try:
    tree_util.tree_map(assign, prefix, tree, is_leaf=_is_sharding_leaf)
  except ValueError as e:
    raise ValueError(f"jit: {what} must be a pytree prefix of the arguments/results: {e}"
                     ) from None
  return flat


def _entry_shardings(entry: _CacheEntry) -> tuple[list[Any], list[Any]]:
  """(in, out) shardings of a traced jit, one per flat argument and result (None where
  none was given)."""
  in_shardings, out_shardings = entry.shardings or (None, None)
  n_in, n_out = entry.in_tree.num_leaves, entry.out_tree.num_leaves
  args, _ = entry.in_tree.unflatten(range(n_in))
  return (_flat_shardings(in_shardings, args, n_in, "in_shardings"),
          _flat_shardings(out_shardings, entry.out_tree.unflatten(range(n_out)), n_out,
                          "out_shardings"))


def _pjit_shardings(entry: _CacheEntry) -> dict[str, tuple[Any, ...]]:
  """The sharding params of the `pjit` equation a sharded jit stages (none when unsharded);
  leading arguments that were tracer constants have no sharding."""
  if entry.shardings is None:
    return {}
  flat_in, flat_out = _entry_shardings(entry)
  unspecified = lambda flat: [sharding_impls.UNSPECIFIED if s is None else s  # noqa: E731
                              for s in flat]
  return sharding_params(unspecified([None] * len(entry.const_args) + flat_in),
                         unspecified(flat_out))


def _placed_program(entry: _CacheEntry, name: str) -> sharding_impls.PlacedProgram:
  """The program of a jit given shardings (or holding sharding constraints): it runs on
  their devices, split by XLA as they say."""
  flat_in, flat_out = _entry_shardings(entry)
  jaxpr, donated = entry.jaxpr, entry.donated

  @functools.cache
  def on_default_device() -> executable.Executable:
    if any(donated):
      return executable.DonatingExecutable(jaxpr.jaxpr, jaxpr.consts, name, donated)
    return executable.executable_for(jaxpr, name)
  return sharding_impls.PlacedProgram(
      jaxpr.jaxpr, jaxpr.consts, name, flat_in, flat_out, shardings_inside(jaxpr.jaxpr),
      default=on_default_device, donated_invars=donated, as_jit=True)
