"""Helpers for defining lax primitives: standard impl and abstract evaluation, and the
shape/dtype checks that give clear errors at trace time."""
from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import caches, core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.xla import deferred


# Results of standard abstract evaluation kept per primitive: tracing a model evaluates the
# same (operand types, parameters) many times over (its layers, then their derivatives),
# and the rules cost several microseconds each.
_MAX_CACHED_AVALS = 1024
_results_lock = threading.Lock()  # guards insertion and eviction (threads trace at once)


def standard_primitive(name: str, shape_rule: Callable[..., tuple[int, ...]],
                       dtype_rule: Callable[..., Any],
                       weak_type_rule: Callable[..., bool] | None = None,
                       config_check: Callable[..., None] | None = None) -> core.Primitive:
  """A primitive with one output whose abstract eval is (shape, dtype, weak type) rules and
  whose impl compiles and runs it through XLA.

  The rules must be functions of the operand types and parameters alone: their results are
  cached. A check that reads the configuration goes in `config_check`, run every time."""
  prim = core.Primitive(name)
  prim.config_check = config_check
  prim.def_impl(functools.partial(deferred.apply_primitive, prim))
  weak_type_rule = weak_type_rule or standard_weak_type_rule
  results: dict[tuple, ShapedArray] = {}
  caches.register(results.clear)

  def abstract_eval(*avals: ShapedArray, **params: Any) -> ShapedArray:
    if prim.config_check is not None:  # the attribute, as eager signatures read it
      prim.config_check(*avals, **params)
    key = (avals, tuple(params.items()))
    try:
      out = results.get(key)
    except (TypeError, ValueError):  # an unhashable parameter, or symbolic dimensions of
      # another export's scope (they refuse to be compared): evaluated every time
      key = None
      out = None
    if out is None:
      out = ShapedArray(shape_rule(*avals, **params), dtype_rule(*avals, **params),
                        weak_type_rule(*avals, **params))
      if key is not None:
        with _results_lock:  # first in, first out: a hit stays one dict lookup
          results[key] = out
          if len(results) > _MAX_CACHED_AVALS:
            del results[next(iter(results))]
    return out
  prim.def_abstract_eval(abstract_eval)
  return prim


def standard_multi_result_primitive(name: str, abstract_eval: Callable[..., list[ShapedArray]]
                                    ) -> core.Primitive:
  prim = core.Primitive(name)
  prim.multiple_results = True
  prim.def_impl(functools.partial(deferred.apply_primitive, prim))
  prim.def_abstract_eval(abstract_eval)
  return prim


def standard_weak_type_rule(*avals: ShapedArray, **params: Any) -> bool:
  """The output is weakly typed only when every input is."""
  return all(a.weak_type for a in avals)


def input_dtype(aval: ShapedArray, *avals: ShapedArray, **params: Any) -> np.dtype:
  return aval.dtype


def check_dtypes(name: str, accepted: Sequence[Any], *avals: ShapedArray) -> None:
  """Raises a TypeError naming the primitive when an operand's dtype is not accepted."""
  for i, aval in enumerate(avals):
    if not any(dtypes.issubdtype(aval.dtype, t) for t in accepted):
      kinds = ", ".join(getattr(t, "__name__", str(t)) for t in accepted)
      raise TypeError(f"{name} does not accept dtype {aval.dtype.name} (operand {i} has type "
                      f"{aval.str_short()}); it accepts {kinds}.")


def check_same_dtypes(name: str, *avals: ShapedArray) -> None:
  if len({a.dtype for a in avals}) > 1:
    types = ", ".join(a.str_short() for a in avals)
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {types}. "
                    "(jaxon.numpy functions promote dtypes; lax functions do not: convert "
                    "with lax.convert_element_type.)")


def broadcasting_shape(name: str, *avals: ShapedArray) -> tuple[int, ...]:
  """Operands of an elementwise op: rank-0 operands broadcast; the rest must have equal
  ranks, and each dimension must agree or be 1."""
  shapes = [a.shape for a in avals if a.shape]
  if not shapes:
    return ()
  if len({len(s) for s in shapes}) != 1:
    raise TypeError(f"{name}: arrays must have the same number of dimensions, got "
                    f"{', '.join(str(s) for s in shapes)}.")
  out = []
  for dims in zip(*shapes):
    non_one = {d for d in dims if d != 1}
    if len(non_one) > 1:
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(str(s) for s in shapes)}.")
    out.append(non_one.pop() if non_one else 1)
  return tuple(out)


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
  """`axis` in [0, ndim). Out of range is NumPy's AxisError, both a ValueError and an
  IndexError: JAX raises one or the other depending on the function."""
  axis = operator.index(axis)  # a float axis is a TypeError, as in JAX
  if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
    raise np.exceptions.AxisError(
        f"{name} {axis} is out of bounds for an array of dimension {ndim}")
  return axis % ndim if ndim else 0


def is_plain_shape(shape: Any) -> bool:
  """Whether `shape` is a tuple of non-negative Python ints, as it is canonical."""
  return (type(shape) is tuple and _INT.issuperset(map(type, shape))
          and min(shape, default=0) >= 0)


_INT = frozenset([int])


def canonicalize_shape(shape: Any, context: str = "") -> tuple[int, ...]:
  """A tuple of non-negative Python ints; traced sizes raise ConcretizationTypeError,
  anything else that is not a shape a TypeError naming it (as JAX's)."""
  if is_plain_shape(shape):  # the usual shape, checked without a Python loop
    return shape
  if isinstance(shape, (int, np.integer)) or (hasattr(shape, "ndim") and shape.ndim == 0):
    shape = (shape,)
  invalid = TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                      f"{shape!r}.")
  if isinstance(shape, str):
    raise invalid
  try:
    dims = tuple(d if core.is_symbolic_dim(d) else operator.index(core.concrete_or_error(
        None, d, f"The size argument {context or 'of a shape'} must be concrete."))
        for d in shape)
  except TypeError as e:
    if isinstance(e, core.ConcretizationTypeError):
      raise
    raise invalid from e
  if any(d < 0 for d in dims):
    raise TypeError(f"Shapes must have only non-negative sizes; the shape {context or ''} "
                    f"is {dims}.".replace("  ", " "))
  return dims
