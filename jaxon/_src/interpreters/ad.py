"""Automatic differentiation: forward mode (JVP), and reverse mode as JVP followed by
partial evaluation into a linear jaxpr and its transposition (seed 000's mechanism).

- `JVPTrace` carries (primal, tangent) pairs; each primitive's rule in `primitive_jvps`
  computes the output pair. Tangents that are known to be zero are the symbolic `Zero`,
  never materialised unless a rule asks.
- Linearization runs the JVP with tangents that are tracers of a `LinearizeTrace`: it
  evaluates every operation whose inputs are all known (the primal computation) right away,
  through its parent trace, and stages the rest (the tangent computation, linear in the
  tangent inputs) into a jaxpr whose constants are the residuals.
- `backward_pass` transposes that linear jaxpr: each primitive in it has a rule in
  `primitive_transposes` that maps output cotangents to input cotangents; inputs that are
  linear arrive as `UndefinedPrimal`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import caches, core, dtypes, tree_util
from jaxon._src.core import ClosedJaxpr, Literal, ShapedArray, Var
from jaxon._src.errors import CustomVJPException
from jaxon._src.interpreters import batching, mlir, structural
from jaxon._src.interpreters import partial_eval as pe

primitive_jvps: dict[core.Primitive, Callable] = {}
primitive_transposes: dict[core.Primitive, Callable] = {}


# ----------------------------------------------------------------------------- zeros


class Zero:
  """A symbolic zero tangent or cotangent of the given abstract value."""

  __slots__ = ("aval",)

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  @staticmethod
  def from_primal_value(x: Any) -> Zero:
    return Zero(core.get_aval(x).to_tangent_aval())

  def __repr__(self) -> str:
    return f"Zero({self.aval.str_short()})"


_PYTHON_ZEROS = {"i": 0, "f": 0.0, "c": 0j}


def zeros_like_aval(aval: ShapedArray) -> Any:
  """A materialised zero of `aval` (float0 zeros are NumPy arrays: they carry no data).

  A weakly typed aval gets a weakly typed zero, as in JAX (the zero cotangent of a Python
  float argument is a weak float32): filled from the Python zero of its kind, whose weak
  type `full` keeps when that zero's default dtype is the aval's."""
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  zero = _PYTHON_ZEROS.get(aval.dtype.kind) if aval.weak_type else None
  if zero is not None and dtypes.dtype(zero, canonicalize=True) == aval.dtype:
    return structural.full(aval.shape, zero, None)
  return structural.full(aval.shape, 0, aval.dtype)


def instantiate_zeros(t: Any) -> Any:
  return zeros_like_aval(t.aval) if type(t) is Zero else t


add_jaxvals_p = core.Primitive("add_any")


def add_tangents(x: Any, y: Any) -> Any:
  """Sums two tangents (or cotangents), skipping symbolic zeros."""
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return add_jaxvals_p.bind(x, y)


# ----------------------------------------------------------------------------- JVP


class JVPTracer(core.Tracer):
  __slots__ = ("primal", "tangent")

  def __init__(self, trace: JVPTrace, primal: Any, tangent: Any):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent

  @property
  def aval(self) -> ShapedArray:
    return core.get_aval(self.primal)

  def to_concrete_value(self) -> Any:
    primal = self.primal
    if isinstance(primal, core.Tracer):
      return primal.to_concrete_value()
    return primal


class JVPTrace(core.Trace):
  def __init__(self, parent: core.Trace):
    super().__init__()
    self.parent = parent

  def to_primal_tangent(self, x: Any) -> tuple[Any, Any]:
    if isinstance(x, JVPTracer) and x._trace is self:
      return x.primal, x.tangent
    self.check_not_escaped(x)
    return x, Zero.from_primal_value(x)

  def process_primitive(self, primitive: core.Primitive, args: Sequence[Any],
                        params: dict) -> Any:
    primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
    if all(type(t) is Zero for t in tangents):
      return primitive.bind_with_trace(self.parent, primals, params)
    rule = primitive_jvps.get(primitive)
    if rule is None:
      raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not "
                                "implemented")
    with core.set_current_trace(self.parent):
      primal_out, tangent_out = rule(primals, tangents, **params)
    if primitive.multiple_results:
      return [JVPTracer(self, p, t) for p, t in zip(primal_out, tangent_out)]
    return JVPTracer(self, primal_out, tangent_out)

  def process_custom_jvp_call(self, primitive: core.Primitive, fun: Callable, jvp: Callable,
                              args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    """The custom rule replaces differentiating `fun` (seed 002: jvp(custom_jvp_call(f,
    f_jvp)) == f_jvp)."""
    primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
    with core.set_current_trace(self.parent):
      if all(type(t) is Zero for t in tangents):
        return self.parent.process_custom_jvp_call(primitive, fun, jvp, primals,
                                                   symbolic_zeros)
      if not symbolic_zeros:
        tangents = [instantiate_zeros(t) for t in tangents]
      outs = jvp(*primals, *tangents)
    n = len(outs) // 2
    return [JVPTracer(self, p, t) for p, t in zip(outs[:n], outs[n:])]

  def process_custom_vjp_call(self, primitive: core.Primitive, fun: Callable, fwd: Callable,
                              bwd: Callable, args: Sequence[Any], symbolic_zeros: bool
                              ) -> list[Any]:
    """Runs the forward rule now; the output tangents are `custom_lin` of the input
    tangents, a linear map known only by its transpose, the backward rule."""
    primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
    with core.set_current_trace(self.parent):
      if all(type(t) is Zero for t in tangents):
        return self.parent.process_custom_vjp_call(primitive, fun, fwd, bwd, primals,
                                                   symbolic_zeros)
      # A staged call passes the values the function closed over first (`num_consts`).
      if any(type(t) is not Zero for t in tangents[:getattr(fwd, "num_consts", 0)]):
        raise CustomVJPException()
      outs, residuals = fwd(*primals)
      out_avals = tuple(core.get_aval(o).to_tangent_aval() for o in outs)
      tangents_out = custom_lin_p.bind(*residuals, *map(instantiate_zeros, tangents),
                                       num_res=len(residuals), bwd=bwd, out_avals=out_avals,
                                       symbolic_zeros=symbolic_zeros)
    return [JVPTracer(self, p, t) for p, t in zip(outs, tangents_out)]


def jvp_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
             tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
  """Runs `fun` (flat in, flat out) on (primal, tangent) pairs. Tangents of integer inputs
  (dtype float0) carry no information: they enter as symbolic zeros."""
  tangents = [Zero(core.get_aval(t)) if type(t) is not Zero and
              core.get_aval(t).dtype == dtypes.float0 else t for t in tangents]
  trace = JVPTrace(core.current_trace())
  in_tracers = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
  try:
    with core.set_current_trace(trace):
      outs = fun(*in_tracers)
    pairs = [trace.to_primal_tangent(x) for x in outs]
  finally:
    trace.invalidate()
  return [p for p, _ in pairs], [t for _, t in pairs]


# Rules for primitives that carry jaxprs transform the jaxpr once per (jaxpr, configuration):
# the caches matter, since a new jaxpr object would mean a new compilation on every call.


@caches.lru_cache(maxsize=4096)
def jvp_jaxpr(jaxpr: ClosedJaxpr, nonzeros: tuple[bool, ...],
              instantiate: tuple[bool, ...] | bool = False
              ) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
  """The JVP of `jaxpr`: takes the primals and the nonzero tangents; returns the primal
  outputs and the nonzero output tangents, and which outputs those are. Output tangents
  marked in `instantiate` are materialised even when they are symbolically zero."""
  in_avals = jaxpr.in_avals
  tangent_avals = [a.to_tangent_aval() for a, nz in zip(in_avals, nonzeros) if nz]
  if isinstance(instantiate, bool):
    instantiate = (instantiate,) * len(jaxpr.out_avals)
  out_nonzeros: list[bool] = []

  def jvp_fun(*args: Any) -> list[Any]:
    primals, nonzero_tangents = args[:len(in_avals)], iter(args[len(in_avals):])
    tangents = [next(nonzero_tangents) if nz else Zero(a.to_tangent_aval())
                for a, nz in zip(in_avals, nonzeros)]
    primal_outs, tangent_outs = jvp_flat(core.jaxpr_as_fun(jaxpr), primals, tangents)
    tangent_outs = [instantiate_zeros(t) if inst else t
                    for t, inst in zip(tangent_outs, instantiate)]
    out_nonzeros.extend(type(t) is not Zero for t in tangent_outs)
    return primal_outs + [t for t in tangent_outs if type(t) is not Zero]
  return (pe.trace_to_closed_jaxpr(jvp_fun, list(in_avals) + tangent_avals),
          tuple(out_nonzeros))


# ----------------------------------------------------------------------------- linearize


class LinearizeTrace(pe.DynamicJaxprTrace):
  """Stages only operations that touch its own (tangent) tracers; evaluates the rest
  through the parent trace, so the primal computation runs on concrete values."""

  def process_primitive(self, primitive: core.Primitive, args: Sequence[Any],
                        params: dict) -> Any:
    unknowns = [self.is_own(x) for x in args]
    if not any(unknowns):
      return primitive.bind_with_trace(self.parent, args, params)
    if primitive in pe.partial_eval_jaxpr_custom_rules:
      return pe.partial_eval_with_rule(self, primitive, args, unknowns, params)
    return self.stage(primitive, args, params)

  def process_custom_jvp_call(self, primitive: core.Primitive, fun: Callable, jvp: Callable,
                              args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    if not any(map(self.is_own, args)):
      with core.set_current_trace(self.parent):
        return self.parent.process_custom_jvp_call(primitive, fun, jvp, args, symbolic_zeros)
    return super().process_custom_jvp_call(primitive, fun, jvp, args, symbolic_zeros)

  def process_custom_vjp_call(self, primitive: core.Primitive, fun: Callable, fwd: Callable,
                              bwd: Callable, args: Sequence[Any], symbolic_zeros: bool
                              ) -> list[Any]:
    if not any(map(self.is_own, args)):
      with core.set_current_trace(self.parent):
        return self.parent.process_custom_vjp_call(primitive, fun, fwd, bwd, args,
                                                   symbolic_zeros)
    return super().process_custom_vjp_call(primitive, fun, fwd, bwd, args, symbolic_zeros)


def linearize_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any]
                   ) -> tuple[list[Any], core.Jaxpr, list[Any], list[Any]]:
  """The primal outputs of `fun` and its linear tangent map as a jaxpr.

  Returns (primal_outs, linear_jaxpr, residuals, out_tangent_avals): the jaxpr takes the
  residuals as constvars and the input tangents as invars.
  """
  lin_trace = LinearizeTrace(core.current_trace())
  tangent_in = [lin_trace.new_arg(core.get_aval(p).to_tangent_aval()) for p in primals]
  try:
    with core.set_current_trace(lin_trace):
      primal_outs, tangent_outs = jvp_flat(fun, primals, tangent_in)
    tangent_outs = [instantiate_zeros(t) if type(t) is Zero else t for t in tangent_outs]
    jaxpr, residuals = lin_trace.to_jaxpr(tangent_outs)
  finally:
    lin_trace.invalidate()
  return primal_outs, jaxpr, residuals, [core.get_aval(t) for t in tangent_outs]


# ----------------------------------------------------------------------------- transpose


class UndefinedPrimal:
  """A linear input of a primitive being transposed: only its abstract value is known."""

  __slots__ = ("aval",)

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  def __repr__(self) -> str:
    return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x: Any) -> bool:
  return type(x) is UndefinedPrimal


def backward_pass(jaxpr: core.Jaxpr, consts: Sequence[Any], primals: Sequence[Any],
                  cotangents_out: Sequence[Any]) -> list[Any]:
  """Cotangents of `jaxpr`'s invars given its outputs' cotangents. The linear invars are
  those whose `primals` entry is an `UndefinedPrimal`; the others are known values (their
  cotangents come back as `Zero`)."""
  ct_env: dict[Var, Any] = {}
  const_env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
  linear = {v for v, p in zip(jaxpr.invars, primals) if is_undefined_primal(p)}
  const_env.update((v, p) for v, p in zip(jaxpr.invars, primals) if v not in linear)

  def read_primal(atom: core.Atom) -> Any:
    if type(atom) is Literal:
      return atom.val
    return UndefinedPrimal(atom.aval) if atom in linear else const_env[atom]

  def write_ct(v: core.Atom, ct: Any) -> None:
    if type(v) is Literal or ct is None or v not in linear:
      return
    ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

  for eqn in jaxpr.eqns:  # forward: evaluate what does not depend on the linear inputs
    if any(type(a) is not Literal and a in linear for a in eqn.invars):
      linear.update(eqn.outvars)
    else:
      outs = eqn.primitive.bind(*map(read_primal, eqn.invars), **eqn.params)
      const_env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
  for v, ct in zip(jaxpr.outvars, cotangents_out):
    write_ct(v, ct)
  for eqn in reversed(jaxpr.eqns):
    cts_out = [ct_env.pop(v, Zero(v.aval)) for v in eqn.outvars]
    if all(type(ct) is Zero for ct in cts_out):
      continue
    rule = primitive_transposes.get(eqn.primitive)
    if rule is None:
      raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                f"'{eqn.primitive.name}' not implemented")
    ct_arg = cts_out if eqn.primitive.multiple_results else cts_out[0]
    cts_in = rule(ct_arg, *map(read_primal, eqn.invars), **eqn.params)
    for v, ct in zip(eqn.invars, cts_in):
      write_ct(v, ct)
  return [ct_env.get(v, Zero(v.aval.to_tangent_aval())) for v in jaxpr.invars]


@caches.lru_cache(maxsize=4096)
def transpose_jaxpr(jaxpr: ClosedJaxpr, undefined: tuple[bool, ...],
                    ct_nonzeros: tuple[bool, ...]) -> ClosedJaxpr:
  """The transpose of `jaxpr` in its undefined (linear) inputs: takes the defined inputs
  and the nonzero output cotangents; returns the linear inputs' cotangents."""
  in_avals, out_avals = jaxpr.in_avals, jaxpr.out_avals
  defined_avals = [a for a, u in zip(in_avals, undefined) if not u]
  ct_avals = [a.to_tangent_aval() for a, nz in zip(out_avals, ct_nonzeros) if nz]

  def transposed(*args: Any) -> list[Any]:
    defined, nonzero_cts = iter(args[:len(defined_avals)]), iter(args[len(defined_avals):])
    primals = [UndefinedPrimal(a) if u else next(defined) for a, u in zip(in_avals, undefined)]
    cts = [next(nonzero_cts) if nz else Zero(a.to_tangent_aval())
           for a, nz in zip(out_avals, ct_nonzeros)]
    cts_in = backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, cts)
    return [instantiate_zeros(ct) for ct, u in zip(cts_in, undefined) if u]
  return pe.trace_to_closed_jaxpr(transposed, defined_avals + ct_avals)


# ----------------------------------------------------------------------------- add_any


def _add_any_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
  return x


def _add_any_impl(x: Any, y: Any) -> Any:
  return structural.add(x, y)


def _add_any_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
  return [ct, ct]


add_jaxvals_p.def_abstract_eval(_add_any_abstract_eval)
add_jaxvals_p.def_impl(_add_any_impl)
primitive_transposes[add_jaxvals_p] = _add_any_transpose
mlir.register_lowering(add_jaxvals_p, lambda ctx, x, y: [hlo.add(x, y)])


def _add_any_batch(vals: Sequence[Any], dims: Sequence[int | None]) -> tuple[Any, int]:
  """Both operands must end up with the same shape: `add_any` does not broadcast."""
  (x, y), (dx, dy) = vals, dims
  if dx == dy:
    return add_jaxvals_p.bind(x, y), dx
  size = core.get_aval(x if dx is not None else y).shape[dx if dx is not None else dy]
  x, y = batching.bdim_at_front(x, dx, size), batching.bdim_at_front(y, dy, size)
  return add_jaxvals_p.bind(x, y), 0


batching.primitive_batchers[add_jaxvals_p] = _add_any_batch
primitive_jvps[add_jaxvals_p] = lambda primals, tangents: (
    add_jaxvals_p.bind(*primals), add_tangents(*tangents))


def defjvp(primitive: core.Primitive, *jvp_rules: Callable | None) -> None:
  """One rule per operand, `rule(tangent, *primals, **params) -> output tangent`; the
  output tangent is their sum (None marks an operand the output does not depend on)."""
  _define_operand_jvps(primitive, jvp_rules, with_output=False)


def defjvp2(primitive: core.Primitive, *jvp_rules: Callable | None) -> None:
  """`defjvp` for rules written with the primal output,
  `rule(tangent, output, *primals, **params)`: tanh's derivative is `1 - tanh(x)**2`, and
  taking `tanh(x)` from the output instead of binding it again keeps one tanh in the jaxpr
  (and in eager work), as JAX's rules do."""
  _define_operand_jvps(primitive, jvp_rules, with_output=True)


def _define_operand_jvps(primitive: core.Primitive, jvp_rules: Sequence[Callable | None],
                         with_output: bool) -> None:
  def rule(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple:
    primal_out = primitive.bind(*primals, **params)
    before_primals = (primal_out,) if with_output else ()
    tangent_out = Zero(core.get_aval(primal_out).to_tangent_aval())
    for jvp, t in zip(jvp_rules, tangents):
      if jvp is not None and type(t) is not Zero:
        tangent_out = add_tangents(tangent_out, jvp(t, *before_primals, *primals, **params))
    return primal_out, tangent_out
  primitive_jvps[primitive] = rule


def deflinear(primitive: core.Primitive, transpose_rule: Callable) -> None:
  """A primitive linear in all operands: its JVP applies it to the tangents."""
  def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple:
    primal_out = primitive.bind(*primals, **params)
    tangents = [instantiate_zeros(t) for t in tangents]
    return primal_out, primitive.bind(*tangents, **params)
  primitive_jvps[primitive] = jvp
  primitive_transposes[primitive] = transpose_rule


# ----------------------------------------------------------------------------- custom_lin

# The tangent map of a function with a custom VJP: linear in its tangent operands, known
# only through its transpose, the user's backward rule (seed 002). Its operands are the
# forward rule's residuals, then the input tangents.
custom_lin_p = core.Primitive("custom_lin")
custom_lin_p.multiple_results = True
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _custom_lin_impl(*args: Any, **params: Any) -> Any:
  raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def _custom_lin_transpose(cts: Sequence[Any], *args: Any, num_res: int, bwd: Callable,
                          out_avals: tuple[ShapedArray, ...], symbolic_zeros: bool
                          ) -> list[Any]:
  residuals = args[:num_res]
  if not symbolic_zeros:
    cts = [instantiate_zeros(ct) for ct in cts]
  return [None] * num_res + list(bwd(residuals, cts))


custom_lin_p.def_impl(_custom_lin_impl)
primitive_transposes[custom_lin_p] = _custom_lin_transpose


# ----------------------------------------------------------------------------- stop_gradient

stop_gradient_p = core.Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(stop_gradient_p, lambda ctx, x: [x])
batching.defvectorized(stop_gradient_p)
primitive_jvps[stop_gradient_p] = lambda primals, tangents: (
    stop_gradient_p.bind(*primals), Zero(core.get_aval(primals[0]).to_tangent_aval()))


def stop_gradient(x: Any) -> Any:
  """`x` unchanged, but with zero derivative under every transformation; applies to each
  leaf of a pytree. Integer and boolean leaves pass through (they have no derivative).

  Example:
    >>> grad(lambda x: x * stop_gradient(x))(3.0)
    Array(3., dtype=float32, weak_type=True)
  """
  def stop(leaf: Any) -> Any:
    if not dtypes.is_inexact(core.get_aval(leaf).dtype):
      return leaf
    return stop_gradient_p.bind(leaf)
  return tree_util.tree_map(stop, x)
