"""Staging Python functions into jaxprs.

`DynamicJaxprTrace` records every primitive bound while it is the current trace as a jaxpr
equation; nothing is evaluated. Values that do not belong to it (constants, and tracers of
enclosing transformations) become the jaxpr's constants: scalars inline as literals, the
rest as constvars.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import caches, core, dtypes
from jaxon._src.core import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, ShapedArray, Var


class DynamicJaxprTracer(core.Tracer):
  __slots__ = ("_aval", "_var")

  def __init__(self, trace: DynamicJaxprTrace, aval: ShapedArray):
    self._trace = trace
    self._aval = aval
    self._var = Var(aval)

  @property
  def aval(self) -> ShapedArray:
    return self._aval


_PY_SCALARS = (bool, int, float, complex)
# Types whose 0-d values print inline as literals rather than becoming constvars.
_array_literal_types: set[type] = {np.ndarray}


def register_literal_type(t: type) -> None:
  """Lets 0-d values of `t` (the runtime's Array) inline as literals."""
  _array_literal_types.add(t)


def _is_literal(x: Any) -> bool:
  if type(x) in _PY_SCALARS or isinstance(x, np.generic):
    return True
  return (type(x) in _array_literal_types and x.shape == ()
          and not dtypes.is_extended(x.dtype))  # a key is a constvar, as in JAX


def _literal(x: Any) -> Literal:
  aval = core.get_aval(x)
  if type(x) is int:
    info = np.iinfo(aval.dtype)
    if not info.min <= x <= info.max:
      raise OverflowError(f"Python int {x} too large to convert to {aval.dtype.name}")
  if type(x) in _PY_SCALARS or isinstance(x, (np.ndarray, np.generic)):
    return Literal(np.asarray(x, aval.dtype)[()], aval)
  return Literal(x, aval)


class DynamicJaxprTrace(core.Trace):
  """Records primitive applications into a jaxpr under construction."""

  def __init__(self, parent: core.Trace):
    super().__init__()
    self.parent = parent
    self.eqns: list[JaxprEqn] = []
    self.invars: list[Var] = []
    self.constvars: dict[int, tuple[Var, Any]] = {}

  def new_arg(self, aval: ShapedArray) -> DynamicJaxprTracer:
    tracer = DynamicJaxprTracer(self, aval)
    self.invars.append(tracer._var)
    return tracer

  def to_atom(self, x: Any) -> core.Atom:
    if isinstance(x, DynamicJaxprTracer) and x._trace is self:
      return x._var
    self.check_not_escaped(x)
    if _is_literal(x):
      return _literal(x)
    entry = self.constvars.get(id(x))
    if entry is None:
      aval = core.get_aval(x)
      if not isinstance(x, core.Tracer):
        aval = aval.update(weak_type=dtypes.is_weakly_typed(x))
      entry = self.constvars[id(x)] = (Var(aval), x)
    return entry[0]

  def is_own(self, x: Any) -> bool:
    return isinstance(x, DynamicJaxprTracer) and x._trace is self

  def process_primitive(self, primitive: core.Primitive, args: Sequence[Any],
                        params: dict) -> Any:
    return self.stage(primitive, args, params)

  def stage(self, primitive: core.Primitive, args: Sequence[Any], params: dict) -> Any:
    """Records `primitive` applied to `args` as an equation; returns its output tracers."""
    atoms = [self.to_atom(x) for x in args]
    out = primitive.abstract_eval(*[a.aval for a in atoms], **params)
    out_avals = out if primitive.multiple_results else [out]
    tracers = [DynamicJaxprTracer(self, aval) for aval in out_avals]
    self.eqns.append(JaxprEqn(atoms, [t._var for t in tracers], primitive, params))
    return tracers if primitive.multiple_results else tracers[0]

  def process_custom_jvp_call(self, primitive: core.Primitive, fun: Callable, jvp: Callable,
                              args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    """Staged as the primitive's initial-style equation (its jaxpr, and its rule traced
    when needed): how is the custom-derivative primitive's to say (`stage`)."""
    return primitive.stage(self, (fun, jvp), args, symbolic_zeros)

  def process_custom_vjp_call(self, primitive: core.Primitive, fun: Callable, fwd: Callable,
                              bwd: Callable, args: Sequence[Any], symbolic_zeros: bool
                              ) -> list[Any]:
    return primitive.stage(self, (fun, fwd, bwd), args, symbolic_zeros)

  def to_jaxpr(self, outs: Sequence[Any]) -> tuple[Jaxpr, list[Any]]:
    outvars = [self.to_atom(x) for x in outs]
    constvars = [var for var, _ in self.constvars.values()]
    consts = [const for _, const in self.constvars.values()]
    eqns = _drop_unused_outvars(self.eqns, outvars)
    return Jaxpr(constvars, self.invars, outvars, eqns), consts


def _drop_unused_outvars(eqns: list[JaxprEqn], outvars: list[core.Atom]) -> list[JaxprEqn]:
  """Marks equation outputs nothing reads as `_` (JAX prints them that way)."""
  used = {v for v in outvars if type(v) is not Literal}
  for eqn in eqns:
    used.update(v for v in eqn.invars if type(v) is not Literal)
  return [eqn if all(v in used for v in eqn.outvars) else
          eqn.replace(outvars=[v if v in used else DropVar(v.aval) for v in eqn.outvars])
          for eqn in eqns]


def trace_to_jaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray]
                   ) -> tuple[Jaxpr, list[Any]]:
  """Stages `fun` (flat arguments to a flat list of outputs) into a jaxpr and its consts."""
  trace = DynamicJaxprTrace(core.current_trace())
  in_tracers = [trace.new_arg(aval) for aval in in_avals]
  try:
    with core.set_current_trace(trace):
      outs = fun(*in_tracers)
    return trace.to_jaxpr(outs)
  finally:
    trace.invalidate()


def trace_to_closed_jaxpr(fun: Callable[..., Sequence[Any]],
                          in_avals: Sequence[ShapedArray]) -> ClosedJaxpr:
  jaxpr, consts = trace_to_jaxpr(fun, in_avals)
  return ClosedJaxpr(jaxpr, consts)


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
  """Turns the constvars into leading invars (used when consts are tracers)."""
  return Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)


# ----------------------------------------------------------------------------- partial eval

# Rules for primitives that carry jaxprs (pjit, control flow), splitting one equation whose
# inputs are partly unknown: `rule(eqn, unknowns) -> (known_eqn, unknown_eqn, out_unknowns)`.
# The known equation computes what the known inputs determine and returns residuals as
# extra outputs (None when there is nothing to compute); the unknown equation reads them
# (None when no output is unknown). `partial_eval_jaxpr` uses the rules inside jaxprs, and
# linearization uses them on the equations it stages (`partial_eval_with_rule`).
partial_eval_jaxpr_custom_rules: dict[core.Primitive, Callable] = {}


@caches.lru_cache(maxsize=4096)
def partial_eval_jaxpr(jaxpr: ClosedJaxpr, unknowns: tuple[bool, ...],
                       instantiate: bool | tuple[bool, ...] = False
                       ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
  """Splits `jaxpr` into the equations computable from its known inputs and the rest.

  Returns (known, unknown, out_unknowns, num_residuals): `known` takes the known inputs and
  returns the known outputs followed by the residuals (known values the unknown equations
  read); `unknown` takes the residuals followed by the unknown inputs and returns the
  unknown outputs. Outputs marked in `instantiate` are unknown even when the known inputs
  determine them (the unknown jaxpr returns them from residuals). Cached per (jaxpr,
  unknowns, instantiate), like the other jaxpr transformations: a new jaxpr object would
  mean a new compilation on every call.
  """
  inner = jaxpr.jaxpr
  unknown_vars = {v for v, u in zip(inner.invars, unknowns) if u}
  known_eqns, unknown_eqns = [], []
  is_unknown = lambda a: type(a) is not Literal and a in unknown_vars  # noqa: E731
  for eqn in inner.eqns:
    eqn_unknowns = [is_unknown(a) for a in eqn.invars]
    rule = partial_eval_jaxpr_custom_rules.get(eqn.primitive)
    if not any(eqn_unknowns):
      known_eqns.append(eqn)
    elif rule is not None:
      known_eqn, unknown_eqn, out_unknowns = rule(eqn, eqn_unknowns)
      if known_eqn is not None:
        known_eqns.append(known_eqn)
      if unknown_eqn is not None:
        unknown_eqns.append(unknown_eqn)
      unknown_vars.update(v for v, u in zip(eqn.outvars, out_unknowns) if u)
    else:
      unknown_vars.update(eqn.outvars)
      unknown_eqns.append(eqn)
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(inner.outvars)
  out_unknowns = [is_unknown(v) or inst for v, inst in zip(inner.outvars, instantiate)]
  unknown_outs = [v for v, u in zip(inner.outvars, out_unknowns) if u]
  residuals = list(dict.fromkeys(
      [a for eqn in unknown_eqns for a in eqn.invars
       if type(a) is not Literal and a not in unknown_vars]
      + [a for a in unknown_outs if type(a) is not Literal and a not in unknown_vars]))
  known_invars = [v for v, u in zip(inner.invars, unknowns) if not u]
  known_outs = [v for v, u in zip(inner.outvars, out_unknowns) if not u]
  known = Jaxpr(inner.constvars, known_invars, known_outs + residuals, known_eqns)
  unknown_invars = [v for v, u in zip(inner.invars, unknowns) if u]
  unknown = Jaxpr([], residuals + unknown_invars, unknown_outs, unknown_eqns)
  return (ClosedJaxpr(known, jaxpr.consts), ClosedJaxpr(unknown, []), out_unknowns,
          len(residuals))


def partial_eval_with_rule(trace: DynamicJaxprTrace, primitive: core.Primitive,
                           args: Sequence[Any], unknowns: Sequence[bool], params: dict
                           ) -> list[Any]:
  """Applies `primitive`'s equation rule to values: runs the known equation now (through
  the trace's parent) and stages the unknown one, fed by the residuals."""
  out_avals = primitive.abstract_eval(*[core.get_aval(x) for x in args], **params)
  eqn = JaxprEqn([Var(core.get_aval(x)) for x in args], [Var(a) for a in out_avals],
                 primitive, params)
  known_eqn, unknown_eqn, _ = partial_eval_jaxpr_custom_rules[primitive](eqn, unknowns)
  env: dict[Var, Any] = dict(zip(eqn.invars, args))
  read = lambda a: a.val if type(a) is Literal else env[a]  # noqa: E731
  if known_eqn is not None and (known_eqn.outvars or core.eqn_has_effects(known_eqn)):
    outs = known_eqn.primitive.bind_with_trace(trace.parent, [read(a) for a in
                                                              known_eqn.invars],
                                               known_eqn.params)
    env.update(zip(known_eqn.outvars, outs))
  if unknown_eqn is not None:
    outs = trace.stage(unknown_eqn.primitive, [read(a) for a in unknown_eqn.invars],
                       unknown_eqn.params)
    env.update(zip(unknown_eqn.outvars, outs))
  return [env[v] for v in eqn.outvars]


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool]) -> tuple[Jaxpr, list[bool]]:
  """`jaxpr` returning only the outputs marked in `used_outputs`, without the equations
  nothing then reads (effectful ones stay: a print runs whether or not it is read). Keeps
  every input; returns which of them are still read."""
  outvars = [v for v, used in zip(jaxpr.outvars, used_outputs) if used]
  live = {v for v in outvars if type(v) is not Literal}
  eqns = []
  for eqn in reversed(jaxpr.eqns):
    if any(v in live for v in eqn.outvars) or core.eqn_has_effects(eqn):
      eqns.append(eqn)
      live.update(a for a in eqn.invars if type(a) is not Literal)
  eqns.reverse()
  used_inputs = [v in live for v in jaxpr.invars]
  return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns), used_inputs
