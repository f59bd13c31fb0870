"""The traced stage of ahead-of-time compilation, and the types `jax.stages` names beside
`Lowered` and `Compiled` (which live with `jit`): `jit(f).trace(*args)` gives a `Traced`,
whose `.lower()` continues to `Lowered` and `.compile()`."""
from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from jaxon._src import core, tree_util
from jaxon._src.jit import Lowered, ShapeDtypeStruct, _CacheEntry

# Options for XLA passed to `Lowered.compile(compiler_options=...)` in JAX.
CompilerOptions = dict[str, str | bool]


@dataclasses.dataclass(frozen=True, slots=True)
class ArgInfo:
  """One argument of a traced signature: its abstract value and whether it is donated."""
  _aval: core.AbstractValue
  donated: bool

  @property
  def shape(self) -> tuple[int, ...]:
    if not hasattr(self._aval, "shape"):
      raise TypeError(f"No shape attribute with aval of type {type(self._aval)}")
    return self._aval.shape

  @property
  def dtype(self) -> Any:
    if not hasattr(self._aval, "dtype"):
      raise TypeError(f"No dtype attribute with aval of type {type(self._aval)}")
    return self._aval.dtype


class Wrapped(Protocol):
  """What `jit` returns: callable, and staged ahead of time by `trace` or `lower`."""

  def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

  def trace(self, *args: Any, **kwargs: Any) -> Traced: ...

  def lower(self, *args: Any, **kwargs: Any) -> Lowered: ...


def args_info(entry: _CacheEntry) -> Any:
  """The (args, kwargs) tree of `ArgInfo`s of a traced signature's dynamic arguments."""
  donated = entry.donated or (False,) * len(entry.jaxpr.in_avals)
  infos = [ArgInfo(aval, d) for aval, d in zip(entry.jaxpr.in_avals, donated)]
  return entry.in_tree.unflatten(infos)


class Traced:
  """A jitted function traced for one signature: its jaxpr and output types, before
  lowering. `.lower()` reuses the trace (no second trace of the Python function)."""

  def __init__(self, entry: _CacheEntry, name: str):
    self._entry = entry
    self.fun_name = name

  jaxpr = property(lambda self: self._entry.jaxpr)
  in_tree = property(lambda self: self._entry.in_tree)
  out_tree = property(lambda self: self._entry.out_tree)
  in_avals = property(lambda self: self._entry.in_tree.unflatten(self._entry.jaxpr.in_avals))
  out_avals = property(
      lambda self: self._entry.out_tree.unflatten(self._entry.jaxpr.out_avals))

  @property
  def args_info(self) -> Any:
    return args_info(self._entry)

  @property
  def out_info(self) -> Any:
    return tree_util.tree_map(lambda a: ShapeDtypeStruct(a.shape, a.dtype, a.weak_type),
                              self.out_avals,
                              is_leaf=lambda x: isinstance(x, core.ShapedArray))

  def lower(self) -> Lowered:
    return Lowered(self._entry, self.fun_name)
