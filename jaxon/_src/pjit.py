"""`pjit`: the primitive a `jit`-decorated function becomes when it is called while another
transformation is tracing. Its params are the function's `name` and its closed `jaxpr`."""
from __future__ import annotations

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
# Each rule transforms the inner jaxpr (cached per jaxpr and configuration) and binds `pjit`
# on the result, so a jitted function stays one compiled call under every transformation.


def _pjit_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, jaxpr: ClosedJaxpr,
              name: str) -> tuple[list[Any], list[Any]]:
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  jvp_jaxpr, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
  outs = pjit_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                     jaxpr=jvp_jaxpr, name=name)
  n_out = len(jaxpr.out_avals)
  primal_outs, nonzero_tangent_outs = outs[:n_out], iter(outs[n_out:])
  tangent_outs = [next(nonzero_tangent_outs) if nz else ad.Zero(a.to_tangent_aval())
                  for a, nz in zip(jaxpr.out_avals, out_nonzeros)]
  return primal_outs, tangent_outs


def _pjit_partial_eval_eqn(eqn: JaxprEqn, unknowns: Sequence[bool]
                           ) -> tuple[JaxprEqn, JaxprEqn, list[bool]]:
  """Splits a `pjit` equation: the known call computes the known outputs and the residuals
  now (a nested jit's primal part runs with the known values), the unknown call the rest."""
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(eqn.params["jaxpr"],
                                                              tuple(unknowns))
  residuals = [core.Var(aval) for aval in known.out_avals[len(known.out_avals) - num_res:]]
  known_eqn = JaxprEqn([a for a, u in zip(eqn.invars, unknowns) if not u],
                       [v for v, u in zip(eqn.outvars, out_unknowns) if not u] + residuals,
                       pjit_p, dict(eqn.params, jaxpr=known))
  unknown_eqn = JaxprEqn(residuals + [a for a, u in zip(eqn.invars, unknowns) if u],
                         [v for v, u in zip(eqn.outvars, out_unknowns) if u],
                         pjit_p, dict(eqn.params, jaxpr=unknown))
  return known_eqn, unknown_eqn, out_unknowns


def _pjit_transpose(cts_out: Sequence[Any], *args: Any, jaxpr: ClosedJaxpr, name: str
                    ) -> list[Any]:
  undefined = tuple(ad.is_undefined_primal(a) for a in args)
  ct_nonzeros = tuple(type(ct) is not ad.Zero for ct in cts_out)
  transposed = ad.transpose_jaxpr(jaxpr, undefined, ct_nonzeros)
  defined = [a for a, u in zip(args, undefined) if not u]
  cts_in = iter(pjit_p.bind(*defined, *[ct for ct in cts_out if type(ct) is not ad.Zero],
                            jaxpr=transposed, name=name))
  return [next(cts_in) if u else None for u in undefined]


def _pjit_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                dims: Sequence[int | None], *, jaxpr: ClosedJaxpr, name: str
                ) -> tuple[list[Any], tuple[int | None, ...]]:
  batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, tuple(dims))
  return pjit_p.bind(*vals, jaxpr=batched, name=name), out_dims


ad.primitive_jvps[pjit_p] = _pjit_jvp
ad.primitive_transposes[pjit_p] = _pjit_transpose
pe.partial_eval_jaxpr_custom_rules[pjit_p] = _pjit_partial_eval_eqn
batching.fancy_primitive_batchers[pjit_p] = _pjit_batch
