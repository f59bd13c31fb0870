"""`ref[idx]` and `ref[idx] = v` on traced refs: a tracer's indexing operators come from
jaxon.numpy (arrays); a tracer whose aval is an `AbstractRef` reads and writes instead."""
from __future__ import annotations

from typing import Any

from jaxon._src import core
from jaxon._src.numpy import array_methods  # noqa: F401  (installs the array operators first)
from jaxon._src.state import primitives
from jaxon._src.state.types import AbstractRef

_array_getitem = core.Tracer.__getitem__
_array_setitem = core.Tracer.__setitem__


def _getitem(self: core.Tracer, idx: Any) -> Any:
  if type(self.aval) is AbstractRef:
    return primitives.get(self, idx)
  return _array_getitem(self, idx)


def _setitem(self: core.Tracer, idx: Any, value: Any) -> None:
  if type(self.aval) is AbstractRef:
    primitives.set(self, idx, value)
  else:
    _array_setitem(self, idx, value)


core.Tracer.__getitem__ = _getitem
core.Tracer.__setitem__ = _setitem
