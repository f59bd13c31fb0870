"""Operators and methods of Array and Tracer, defined once in terms of jaxon.numpy.

The runtime's Array and the core's Tracer live below this layer; installing the operators
from here keeps both layers free of NumPy semantics, and makes `x + y` mean the same thing
whether `x` is concrete or traced.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxon._src import core
from jaxon._src.numpy import indexing, linear, reductions, shape, sorting, ufuncs
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
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "divmod": ufuncs.divmod, "pow": ufuncs.power, "and": ufuncs.bitwise_and,
    "or": ufuncs.bitwise_or, "xor": ufuncs.bitwise_xor, "lshift": ufuncs.left_shift,
    "rshift": ufuncs.right_shift,
    # matmul (linear)
    "matmul": linear.matmul,
}

_METHODS: dict[str, Callable[..., Any]] = {
    # unary operators (ufuncs); comparisons have no reflected twin (Python swaps `<` and `>`)
    "__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.abs,
    "__invert__": ufuncs.invert,
    "__eq__": _defer_to_unrecognized(ufuncs.equal),
    "__ne__": _defer_to_unrecognized(ufuncs.not_equal),
    "__lt__": _defer_to_unrecognized(ufuncs.less),
    "__le__": _defer_to_unrecognized(ufuncs.less_equal),
    "__gt__": _defer_to_unrecognized(ufuncs.greater),
    "__ge__": _defer_to_unrecognized(ufuncs.greater_equal),
    "real": property(ufuncs.real), "imag": property(ufuncs.imag), "conj": ufuncs.conj,
    "conjugate": ufuncs.conjugate, "round": ufuncs.round, "clip": ufuncs.clip,
    # reductions
    "sum": reductions.sum, "prod": reductions.prod, "max": reductions.max, "min": reductions.min,
    "mean": reductions.mean, "var": reductions.var, "std": reductions.std, "all": reductions.all,
    "any": reductions.any, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "ptp": reductions.ptp, "cumsum": reductions.cumsum, "cumprod": reductions.cumprod,
    # shape methods: reshape, transpose, T, squeeze, …
    "reshape": shape.method_reshape, "transpose": shape.method_transpose,
    "T": property(shape.transpose), "mT": property(shape.matrix_transpose),
    "squeeze": shape.squeeze, "ravel": shape.ravel, "flatten": shape.ravel,
    "swapaxes": shape.swapaxes, "repeat": shape.repeat, "astype": shape.astype,
    # indexing: __getitem__, at
    "__getitem__": indexing.getitem, "at": property(indexing._IndexUpdateHelper),
    # dot, sort, argsort
    "dot": linear.dot, "sort": sorting.sort, "argsort": sorting.argsort,
}


def install(cls: type) -> None:
  for name, fn in _BINARY_OPERATORS.items():
    setattr(cls, f"__{name}__", _defer_to_unrecognized(fn))
    setattr(cls, f"__r{name}__", _defer_to_unrecognized(_swap(fn)))
  for name, fn in _METHODS.items():
    setattr(cls, name, fn)


install(Array)
install(core.Tracer)
