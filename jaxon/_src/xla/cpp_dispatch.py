"""jaxlib's C++ call path for `jit` (`_jax.pjit`): the one module that owns jaxon's contract
with it.

A jitted call whose signature was seen before is answered in C++: jaxlib flattens the
arguments with `tree_util.dispatch_registry`, in which a concrete Array is a node over its
device buffer, looks the call's signature up (shapes, dtypes, weak types, shardings, the tree,
and the values of every jaxlib `Config` made with `include_in_jit_key`), runs the executable
and rebuilds the outputs as Arrays. Any other call goes to jaxon's Python path (`cache_miss`):
the first call of a signature, tracers (an unknown leaf type for jaxlib), pending eager Arrays
(flattening one runs its batch first), arguments on other devices. The Python path says, with
`fastpath`, whether jaxlib may answer that signature itself from then on.

What else decides a call is kept in jaxlib's key by two `Config`s: `_flags_key`, jaxon's flags
a jitted call depends on (the trace context, and the switches that make a call do something
else: disabled jit, NaN checks, no execution), and `_staging_key`, set while a trace other
than evaluation (or a named axis) is current, when a call must stage `pjit` instead of running
(`core` reports that through `core.staging_hook`).

jaxlib also reads `jax_disable_jit` and `jax_enable_x64` from `Config`s registered process-wide.
jaxon registers its own unless JAX is already imported; JAX imported later registers its own
in their place. Their values then need not be jaxon's. jaxlib canonicalizes the dtypes of
NumPy and Python scalar arguments with that x64 state, so while JAX shares the process,
`fastpath` hands such a signature to jaxlib only when JAX's x64 state is jaxon's. Both are in
the key (jaxon's in its trace context), so the entry is found again only while they agree.
"""
from __future__ import annotations

import collections
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax

from jaxon._src import caches, config_guards, core, traceback_util, tree_util
from jaxon._src import config as config_mod
from jaxon._src.xla import client, executable
from jaxon._src.xla.array import Array, KeyData

_disable_jit = _jax.config.Config("jax_disable_jit", False)
_enable_x64 = _jax.config.Config("jax_enable_x64", False)
_flags_key = _jax.config.Config("jaxon_jit_flags", None, include_in_jit_key=True)
_FLAGS_IN_KEY = ("trace_context", "jax_disable_jit", "jax_debug_nans", "jax_debug_infs",
                 "jax_no_execution", "jax_transfer_guard", "jax_transfer_guard_host_to_device")
_flag_ids: dict[tuple, int] = {}  # each distinct set of values, as a small int: cheap to hash
_staging_key = _jax.config.Config("jaxon_staging", None, include_in_jit_key=True)


def _set_staging(staging: bool) -> None:
  _staging_key.set_local(True if staging else _jax.config.unset)


core.staging_hook = _set_staging


def _jax_shares_the_process() -> bool:
  """Whether JAX's config module, which registers JAX's jit states with jaxlib, is imported
  (under `install_as_jax`, `jax._src.config` is jaxon's own)."""
  module = sys.modules.get("jax._src.config")
  return module is not None and module.__name__ == "jax._src.config"


def _jaxlib_canonicalizes_as_jaxon() -> bool:
  """Whether jaxlib gives a NumPy or Python scalar argument the dtype jaxon would: its x64
  state is jaxon's own, or JAX's (`jax.config`, public) with the same value in this thread."""
  if not _jax_shares_the_process():
    return True
  jax_x64 = getattr(getattr(sys.modules.get("jax"), "config", None), "jax_enable_x64", None)
  return jax_x64 == config_mod.values.jax_enable_x64


_owns_jit_state = not _jax_shares_the_process()
if _owns_jit_state:
  _jax.jax_jit.set_disable_jit_state(_disable_jit)
  _jax.jax_jit.set_enable_x64_state(_enable_x64)
  _jax.jax_jit.set_post_hook_state(_jax.config.Config("post_hook", None,
                                                      include_in_jit_key=False))


def _flags_id(values: Any) -> int:
  return _flag_ids.setdefault(tuple(getattr(values, n) for n in _FLAGS_IN_KEY), len(_flag_ids))


def _track_flags() -> None:
  """Mirrors jaxon's flags into jaxlib's: globally, and as this thread overrides them."""
  global_values = config_mod._Values
  _flags_key.set_global(_flags_id(global_values))
  _disable_jit.set_global(global_values.jax_disable_jit)
  _enable_x64.set_global(global_values.jax_enable_x64)
  values = config_mod.values
  overridden = values.__dict__
  _flags_key.set_local(_flags_id(values) if overridden else _jax.config.unset)
  _disable_jit.set_local(values.jax_disable_jit if "jax_disable_jit" in overridden
                         else _jax.config.unset)
  _enable_x64.set_local(values.jax_enable_x64 if "jax_enable_x64" in overridden
                        else _jax.config.unset)


# ----------------------------------------------------------------------------- Arrays as nodes

class _Output:
  """An output of a call jaxlib answers: in the output tree it gives, a node whose aux data
  is the Array's aval, so rebuilding the Array takes one Python call."""

  __slots__ = ("aval", "buf")

  def __init__(self, x: Array):
    self.aval, self.buf = x.aval, x._buf


def _array_from_node(aval: Any, children: Sequence[Any], new: Callable = object.__new__
                     ) -> Array:
  # Runs for every output of every call jaxlib answers: the constructor bound as a default
  # and one indexing instead of unpacking cut it 0.19 -> 0.15 µs.
  x = new(Array)
  x.aval = aval
  x._buf = x._dispatch_leaf = children[0]
  x._npy = x._pending = None
  return x


# An Array argument is read as its `_dispatch_leaf`, the buffer (a dataclass node: jaxlib
# reads the attribute itself, cheaper than calling a flattening function: a call with 30
# Array arguments 15.3 -> 14.0 µs); a key's wraps its buffer with its key type, which the
# signature compares.
tree_util.dispatch_registry.register_dataclass_node(Array, ["_dispatch_leaf"], [])
tree_util.dispatch_registry.register_dataclass_node(KeyData, ["buf"], ["dtype"])
tree_util.dispatch_registry.register_node(_Output, lambda o: ((o.buf,), o.aval),
                                          _array_from_node)


# ----------------------------------------------------------------------------- the C++ function

# What jaxlib needs to run a signature itself, field for field as it reads them.
FastpathData = collections.namedtuple("FastpathData", [
    "xla_executable", "out_pytree_def", "in_shardings", "out_shardings", "out_avals",
    "out_committed", "kept_var_bitvec", "in_device_local_layouts", "const_args"])

CppFunction = _jax.PjitFunction  # the type of what `pjit` returns

# Every jitted function's C++ entries, bounded as JAX's (least recently used go first).
_cache = _jax.PjitFunctionCache(capacity=8192)
caches.register(_cache.clear)
stats = {"python_calls": 0}  # calls that reached the Python path, for tests


def pjit(name: str, fun: Callable, cache_miss: Callable, static_argnums: Sequence[int] = (),
         static_argnames: Sequence[str] = ()) -> _jax.PjitFunction:
  """A C++ jitted function: `fun` runs when jit is disabled; `cache_miss(*args, **kwargs)`
  returns `(outputs, fastpath data or None, False)` for the dynamic arguments."""
  @traceback_util.api_boundary  # jaxlib calls it from the user's frame
  def counted_miss(*args: Any, **kwargs: Any) -> Any:
    stats["python_calls"] += 1
    return cache_miss(*args, **kwargs)
  # jaxlib keys a function's entries by `fun`, and drops them when it dies: `fun` is an
  # object of this C++ function's own, so each jitted function keeps its own signatures,
  # as jaxon's Python path does, and they go with it.
  own_fun = functools.partial(fun)
  return _jax.pjit(name, own_fun, counted_miss, list(static_argnums), list(static_argnames),
                   (), tree_util.dispatch_registry, _refuse_resharding, _cache)


def _refuse_resharding(*args: Any) -> Any:
  raise AssertionError("jaxlib asked jaxon to place an argument: a fast path was given for "
                       "arguments it cannot run")


def fastpath(exe: Any, args: tuple, kwargs: dict, outs: Any) -> FastpathData | None:
  """The data with which jaxlib runs this call's signature itself, or None when the call
  must keep to the Python path: a program other than a plain one on the default device
  (donating, sharded, with host callbacks or effects), float0 or key outputs, arguments
  that are not all on the default device."""
  if type(exe) is not executable.Executable or exe._host_callbacks or exe._float0_outputs:
    return None
  leaves = tree_util.dispatch_registry.flatten((args, kwargs))[0]
  sharding = client.default_sharding()
  for leaf in leaves:
    if type(leaf) is _jax.ArrayImpl:
      if leaf._sharding is not sharding:
        return None
    elif not isinstance(leaf, (np.ndarray, np.generic, int, float, complex)):
      return None  # a tracer
    elif (not _jaxlib_canonicalizes_as_jaxon()
          or config_guards.host_to_device_level() != "allow"):
      return None  # a NumPy value or scalar whose dtype or transfer jaxon must decide
  if not all(type(x) is Array and isinstance(x.aval.dtype, np.dtype)
             for x in tree_util.tree_leaves(outs)):
    return None
  out_bufs, out_tree = tree_util.dispatch_registry.flatten(tree_util.tree_map(_Output, outs))
  n_in = len(exe._const_bufs) + len(leaves)
  return FastpathData(exe.loaded, out_tree, [sharding] * n_in, [sharding] * len(out_bufs),
                      [b.aval for b in out_bufs], [True] * len(out_bufs), [True] * n_in,
                      [None] * n_in, list(exe._const_bufs))


config_mod.watch_all(_track_flags)
