"""Operators and methods of Array and Tracer, defined once in terms of jaxon.numpy.

The runtime's Array and the core's Tracer live below this layer; installing the operators
from here keeps both layers free of NumPy semantics, and makes `x + y` mean the same thing
whether `x` is concrete or traced.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxon._src import core
from jaxon._src.numpy import reductions, ufuncs
from jaxon._src.xla.array import Array


def _defer_to_unrecognized(binary: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
  """Returns NotImplemented for operands jaxon does not know, so Python tries the other
  side's reflected operator."""
  def op(self: Any, other: Any) -> Any:
    if not _accepted(other):
      return NotImplemented
    return binary(self, other)
  return op


def _accepted(x: Any) -> bool:
  return isinstance(x, (Array, core.Tracer, int, float, complex, bool)) or hasattr(x, "dtype")


def _swap(binary: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
  return lambda x, y: binary(y, x)


# Operators with a reflected twin: `__add__` and `__radd__` from one entry.
_BINARY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    # arithmetic, comparison, bitwise (ufuncs)
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide,
    # matmul (linear)
}

_METHODS: dict[str, Callable[..., Any]] = {
    # unary operators (ufuncs)
    "__neg__": ufuncs.negative,
    "__pos__": lambda x: x,
    # reductions
    "sum": reductions.sum,
    # shape methods: reshape, transpose, T, squeeze, …
    # indexing: __getitem__, at
    # dot, sort, argsort
}


def install(cls: type) -> None:
  for name, fn in _BINARY_OPERATORS.items():
    setattr(cls, f"__{name}__", _defer_to_unrecognized(fn))
    setattr(cls, f"__r{name}__", _defer_to_unrecognized(_swap(fn)))
  for name, fn in _METHODS.items():
    setattr(cls, name, fn)


install(Array)
install(core.Tracer)
