"""`pjit`: the primitive a `jit`-decorated function becomes when it is called while another
transformation is tracing. Its params are the function's `name` and its closed `jaxpr`."""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from jaxon._src import core
from jaxon._src import pretty_printer as pp
from jaxon._src.core import ClosedJaxpr, JaxprEqn, Literal, PrintContext
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.xla import executable

pjit_p = core.Primitive("pjit")
pjit_p.multiple_results = True


def _pjit_impl(*args: Any, jaxpr: ClosedJaxpr, name: str) -> list[Any]:
  return executable.executable_for(jaxpr, name)(args)


def _pjit_abstract_eval(*avals: core.ShapedArray, jaxpr: ClosedJaxpr, name: str
                        ) -> list[core.ShapedArray]:
  return jaxpr.out_avals


def _pjit_lowering(ctx: mlir.LoweringRuleContext, *args: Any, jaxpr: ClosedJaxpr,
                   name: str) -> list[Any]:
  return mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr, args)


def _pjit_pp_rule(eqn: JaxprEqn, context: PrintContext) -> pp.Doc:
  """Prints the inner jaxpr with its inputs and outputs named after the outer ones."""
  core.pp_binders(eqn.outvars, context)  # the outer binders take their names first
  inner = eqn.params["jaxpr"].jaxpr
  defined = {v for e in inner.eqns for v in e.outvars}
  for inner_var in defined:
    context.names.pop(inner_var, None)
  named_after: set[core.Var] = set()  # an outer var passed twice names only the first binder
  for inner_var, outer in zip(inner.invars, eqn.invars):
    if type(outer) is Literal or outer in named_after:
      context.names.pop(inner_var, None)
    else:
      named_after.add(outer)
      context.names[inner_var] = context.name(outer)
  for inner_out, outer in zip(inner.outvars, eqn.outvars):
    if (inner_out in defined and inner.outvars.count(inner_out) == 1
        and not isinstance(outer, core.DropVar)):
      context.names[inner_out] = context.name(outer)
  return core.pp_standard_eqn(eqn, context, param_order=("name", "jaxpr"))


pjit_p.def_impl(_pjit_impl)
pjit_p.def_abstract_eval(_pjit_abstract_eval)
mlir.register_lowering(pjit_p, _pjit_lowering)
core.pp_eqn_rules[pjit_p] = _pjit_pp_rule


# ----------------------------------------------------------------------------- transformations
# Each rule transforms the inner jaxpr once per (jaxpr, configuration) and binds `pjit` on
# the result, so a jitted function stays one compiled call under every transformation. The
# caches matter: a new jaxpr object would mean a new compilation on every call.


@functools.lru_cache(maxsize=4096)
def _jvp_jaxpr(jaxpr: ClosedJaxpr, nonzeros: tuple[bool, ...]
               ) -> tuple[ClosedJaxpr, list[bool]]:
  """The JVP of `jaxpr`: takes the primals and the nonzero tangents; returns the primal
  outputs and the nonzero output tangents (and which those are)."""
  in_avals = jaxpr.in_avals
  tangent_avals = [a.to_tangent_aval() for a, nz in zip(in_avals, nonzeros) if nz]
  out_nonzeros: list[bool] = []

  def jvp_fun(*args: Any) -> list[Any]:
    primals, nonzero_tangents = args[:len(in_avals)], iter(args[len(in_avals):])
    tangents = [next(nonzero_tangents) if nz else ad.Zero(a.to_tangent_aval())
                for a, nz in zip(in_avals, nonzeros)]
    primal_outs, tangent_outs = ad.jvp_flat(core.jaxpr_as_fun(jaxpr), primals, tangents)
    out_nonzeros.extend(type(t) is not ad.Zero for t in tangent_outs)
    return primal_outs + [t for t in tangent_outs if type(t) is not ad.Zero]
  return pe.trace_to_closed_jaxpr(jvp_fun, list(in_avals) + tangent_avals), out_nonzeros


def _pjit_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, jaxpr: ClosedJaxpr,
              name: str) -> tuple[list[Any], list[Any]]:
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  jvp_jaxpr, out_nonzeros = _jvp_jaxpr(jaxpr, nonzeros)
  outs = pjit_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                     jaxpr=jvp_jaxpr, name=name)
  n_out = len(jaxpr.out_avals)
  primal_outs, nonzero_tangent_outs = outs[:n_out], iter(outs[n_out:])
  tangent_outs = [next(nonzero_tangent_outs) if nz else ad.Zero(a.to_tangent_aval())
                  for a, nz in zip(jaxpr.out_avals, out_nonzeros)]
  return primal_outs, tangent_outs


_partial_eval_jaxpr = functools.lru_cache(maxsize=4096)(pe.partial_eval_jaxpr)


def _pjit_partial_eval(trace: pe.DynamicJaxprTrace, args: Sequence[Any],
                       unknowns: Sequence[bool], *, jaxpr: ClosedJaxpr, name: str
                       ) -> list[Any]:
  """Runs the known part of the call now (through the parent trace) and stages the rest,
  fed by the residuals the known part returns."""
  known, unknown, out_unknowns, num_res = _partial_eval_jaxpr(jaxpr, tuple(unknowns))
  known_args = [x for x, u in zip(args, unknowns) if not u]
  known_outs = pjit_p.bind_with_trace(trace.parent, known_args,
                                      dict(jaxpr=known, name=name))
  n_known = len(known_outs) - num_res
  residuals = known_outs[n_known:]
  unknown_args = residuals + [x for x, u in zip(args, unknowns) if u]
  unknown_outs = iter(trace.stage(pjit_p, unknown_args, dict(jaxpr=unknown, name=name)))
  known_vals = iter(known_outs[:n_known])
  return [next(unknown_outs) if u else next(known_vals) for u in out_unknowns]


def _pjit_partial_eval_eqn(eqn: JaxprEqn, unknowns: Sequence[bool]
                           ) -> tuple[JaxprEqn, JaxprEqn, list[bool]]:
  """Splits a `pjit` equation of a jaxpr being partially evaluated, so that a nested jit's
  primal part is computed with the known values instead of staged with the tangents."""
  known, unknown, out_unknowns, num_res = _partial_eval_jaxpr(eqn.params["jaxpr"],
                                                              tuple(unknowns))
  residuals = [core.Var(aval) for aval in known.out_avals[len(known.out_avals) - num_res:]]
  known_eqn = JaxprEqn([a for a, u in zip(eqn.invars, unknowns) if not u],
                       [v for v, u in zip(eqn.outvars, out_unknowns) if not u] + residuals,
                       pjit_p, dict(eqn.params, jaxpr=known))
  unknown_eqn = JaxprEqn(residuals + [a for a, u in zip(eqn.invars, unknowns) if u],
                         [v for v, u in zip(eqn.outvars, out_unknowns) if u],
                         pjit_p, dict(eqn.params, jaxpr=unknown))
  return known_eqn, unknown_eqn, out_unknowns


@functools.lru_cache(maxsize=4096)
def _transpose_jaxpr(jaxpr: ClosedJaxpr, undefined: tuple[bool, ...],
                     ct_nonzeros: tuple[bool, ...]) -> ClosedJaxpr:
  """The transpose of `jaxpr` in its undefined (linear) inputs: takes the defined inputs
  and the nonzero output cotangents; returns the linear inputs' cotangents."""
  in_avals, out_avals = jaxpr.in_avals, jaxpr.out_avals
  defined_avals = [a for a, u in zip(in_avals, undefined) if not u]
  ct_avals = [a.to_tangent_aval() for a, nz in zip(out_avals, ct_nonzeros) if nz]

  def transposed(*args: Any) -> list[Any]:
    defined, nonzero_cts = iter(args[:len(defined_avals)]), iter(args[len(defined_avals):])
    primals = [ad.UndefinedPrimal(a) if u else next(defined) for a, u in zip(in_avals, undefined)]
    cts = [next(nonzero_cts) if nz else ad.Zero(a.to_tangent_aval())
           for a, nz in zip(out_avals, ct_nonzeros)]
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, cts)
    return [ad.instantiate_zeros(ct) for ct, u in zip(cts_in, undefined) if u]
  return pe.trace_to_closed_jaxpr(transposed, defined_avals + ct_avals)


def _pjit_transpose(cts_out: Sequence[Any], *args: Any, jaxpr: ClosedJaxpr, name: str
                    ) -> list[Any]:
  undefined = tuple(ad.is_undefined_primal(a) for a in args)
  ct_nonzeros = tuple(type(ct) is not ad.Zero for ct in cts_out)
  transposed = _transpose_jaxpr(jaxpr, undefined, ct_nonzeros)
  defined = [a for a, u in zip(args, undefined) if not u]
  cts_in = iter(pjit_p.bind(*defined, *[ct for ct in cts_out if type(ct) is not ad.Zero],
                            jaxpr=transposed, name=name))
  return [next(cts_in) if u else None for u in undefined]


@functools.lru_cache(maxsize=4096)
def _batch_jaxpr(jaxpr: ClosedJaxpr, dims: tuple[int | None, ...],
                 axis_data: batching.AxisData) -> tuple[ClosedJaxpr, list[int | None]]:
  """`jaxpr` over inputs mapped along `dims`; returns it and its outputs' batch dims."""
  in_avals = [a if d is batching.not_mapped else
              a.update(shape=a.shape[:d] + (axis_data.size,) + a.shape[d:])
              for a, d in zip(jaxpr.in_avals, dims)]
  out_dims: list[int | None] = []

  def batched(*args: Any) -> list[Any]:
    outs, dims_out = batching.batch_flat(core.jaxpr_as_fun(jaxpr), args, dims,
                                         axis_data.size, axis_data.name)
    out_dims.extend(dims_out)
    return outs
  return pe.trace_to_closed_jaxpr(batched, in_avals), out_dims


def _pjit_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                dims: Sequence[int | None], *, jaxpr: ClosedJaxpr, name: str
                ) -> tuple[list[Any], list[int | None]]:
  batched, out_dims = _batch_jaxpr(jaxpr, tuple(dims), axis_data)
  return pjit_p.bind(*vals, jaxpr=batched, name=name), out_dims


ad.primitive_jvps[pjit_p] = _pjit_jvp
ad.primitive_transposes[pjit_p] = _pjit_transpose
pe.custom_partial_eval_rules[pjit_p] = _pjit_partial_eval
pe.partial_eval_jaxpr_custom_rules[pjit_p] = _pjit_partial_eval_eqn
batching.fancy_primitive_batchers[pjit_p] = _pjit_batch
