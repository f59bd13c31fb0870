"""The parts of JAX's `jax.extend.core` and `jax.core` that jaxon's core does not define
itself: small helpers over avals, jaxprs and the current trace that libraries defining
their own primitives and interpreters use."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxon._src import core
from jaxon._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray
from jaxon._src.interpreters import batching
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.xla.array import Array

# The types whose instances are arrays to jaxon (besides tracers).
array_types: set[type] = {np.ndarray, Array, bool, int, float, complex,
                          *(np.dtype(t).type for t in set(np.sctypeDict.values()))}

# Parameters of an equation (JAX's `ParamDict`).
ParamDict = dict[str, Any]
# A value jaxprs compute with: an array or a tracer (JAX's `Value`).
Value = Any


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
  """`aval` with its mapped axis `axis` (of size `size`) removed."""
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped axis {axis} of {aval.str_short()} has size "
                     f"{aval.shape[axis]}, not {size}")
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray,
                  explicit_mesh_axis: Any = None) -> ShapedArray:
  """`aval` with a new axis of size `size` inserted at `axis`."""
  if axis is None:
    return aval
  return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def primal_dtype_to_tangent_dtype(primal_dtype: Any) -> np.dtype:
  """The dtype of tangents of a value of `primal_dtype`: float0 for integers and
  booleans, the dtype itself for inexact ones."""
  return core.ShapedArray((), primal_dtype).to_tangent_aval().dtype


def new_jaxpr_eqn(invars: list[core.Atom], outvars: list[core.Var],
                  primitive: core.Primitive, params: dict[str, Any], effects: Any = None,
                  source_info: Any = None, ctx: Any = None) -> JaxprEqn:
  """A jaxpr equation; jaxon's equations carry no effects or source info of their own."""
  return JaxprEqn(list(invars), list(outvars), primitive, dict(params))


def gensym(suffix: str = "") -> Callable[[ShapedArray], core.Var]:
  """A maker of fresh jaxpr variables of given avals. jaxon's variables are named when a
  jaxpr prints, so `suffix` has nothing to name."""
  return core.Var


def jaxprs_in_params(params: dict[str, Any]) -> list[Jaxpr]:
  """The jaxprs (opened) an equation's params carry: branches, loop bodies, calls."""
  out = []
  for value in params.values():
    for item in value if isinstance(value, (tuple, list)) else (value,):
      if isinstance(item, ClosedJaxpr):
        out.append(item.jaxpr)
      elif isinstance(item, Jaxpr):
        out.append(item)
  return out


def subjaxprs(jaxpr: Jaxpr) -> Iterator[Jaxpr]:
  """The jaxprs directly inside `jaxpr`'s equations."""
  for eqn in jaxpr.eqns:
    yield from jaxprs_in_params(eqn.params)


@contextlib.contextmanager
def take_current_trace() -> Iterator[core.Trace]:
  """Yields the current trace, running the block under evaluation (JAX runs it under
  no trace at all: a bind inside is then an error there, eager here)."""
  trace = core.current_trace()
  with core.set_current_trace(core.EvalTrace()):
    yield trace


def find_top_trace(xs: Any) -> core.Trace:
  """The trace of the innermost transformation, which jaxon's `bind` always uses."""
  return core.current_trace()


def get_opaque_trace_state(convention: Any = None) -> Any:
  """An object equal only to another taken under the same current trace."""
  return _TraceState(core.current_trace())


class _TraceState:
  __slots__ = ("trace",)

  def __init__(self, trace: core.Trace):
    self.trace = trace

  def __eq__(self, other: object) -> bool:
    return isinstance(other, _TraceState) and other.trace is self.trace

  def __hash__(self) -> int:
    return id(self.trace)


def nonempty_axis_env_DO_NOT_USE() -> bool:  # noqa: N802 (JAX's name)
  return bool(core.axis_frames())


def unsafe_am_i_under_a_jit_DO_NOT_USE() -> bool:  # noqa: N802 (JAX's name)
  """Whether the innermost transformation stages out a jaxpr (jit, make_jaxpr, ...)."""
  return isinstance(core.current_trace(), pe.DynamicJaxprTrace)


def unsafe_am_i_under_a_vmap_DO_NOT_USE() -> bool:  # noqa: N802 (JAX's name)
  return isinstance(core.current_trace(), batching.BatchTrace)


def unsafe_get_axis_names_DO_NOT_USE() -> list[Any]:  # noqa: N802 (JAX's name)
  return [name for name, _ in core.axis_frames()]


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
  """Evaluates the block's jaxon operations eagerly, even inside a transformation, so
  that values computed only from constants are concrete (usable in Python control flow).
  Operating on a tracer of the enclosing transformation is an error inside."""
  with core.set_current_trace(core.EvalTrace()):
    yield


eval_context = ensure_compile_time_eval
