"""Every cache of traced or compiled programs, so that `jaxon.clear_caches()` can empty them.

The caches live at every layer (jit signatures, executables, transformed jaxprs, control-flow
bodies, eager signatures). This module sits below them all: each layer registers a function
that empties its own caches, and `clear_all` runs them, so clearing needs no upward import.
"""
from __future__ import annotations

import collections
import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_clear_functions: list[Callable[[], None]] = []


def register(clear: Callable[[], None]) -> Callable[[], None]:
  """Adds `clear` (which empties one cache) to what `clear_all` runs; returns it."""
  _clear_functions.append(clear)
  return clear


def clear_all() -> None:
  for clear in list(_clear_functions):
    clear()


def lru_cache(maxsize: int) -> Callable[[F], F]:
  """`functools.lru_cache(maxsize)`, registered with `clear_all`."""
  def decorate(fun: F) -> F:
    cached = functools.lru_cache(maxsize=maxsize)(fun)
    register(cached.cache_clear)
    return cached  # type: ignore[return-value]
  return decorate


class WeakKeyLRUCache:
  """A mapping from objects, held weakly, to values, holding at most `maxsize` entries:
  the least recently used one goes first. An entry also goes when its key dies, so a cache
  keyed by jaxprs holds no program longer than something else holds its jaxpr."""

  def __init__(self, maxsize: int):
    self.maxsize = maxsize
    self._entries: collections.OrderedDict[weakref.ref, Any] = collections.OrderedDict()
    self._forget = self._make_forget(weakref.ref(self))

  @staticmethod
  def _make_forget(cache_ref: weakref.ref) -> Callable[[weakref.ref], None]:
    # Holds the cache weakly: the weak references it is the callback of must not keep the
    # cache alive.
    def forget(key_ref: weakref.ref) -> None:
      cache = cache_ref()
      if cache is not None:
        cache._entries.pop(key_ref, None)
    return forget

  def get(self, key: Any) -> Any:
    """The value of `key` (which becomes the most recently used), or None."""
    key_ref = weakref.ref(key)
    value = self._entries.get(key_ref)
    if value is not None:
      self._entries.move_to_end(key_ref)
    return value

  def put(self, key: Any, value: Any) -> None:
    self._entries[weakref.ref(key, self._forget)] = value
    while len(self._entries) > self.maxsize:
      self._entries.popitem(last=False)

  def clear(self) -> None:
    self._entries.clear()

  def __len__(self) -> int:
    return len(self._entries)
