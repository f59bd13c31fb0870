"""`pjit`: the primitive a `jit`-decorated function becomes when it is called while another
transformation is tracing. Its params are the function's `name` and its closed `jaxpr`."""
from __future__ import annotations

from typing import Any

from jaxon._src import core
from jaxon._src import pretty_printer as pp
from jaxon._src.core import ClosedJaxpr, JaxprEqn, Literal, PrintContext
from jaxon._src.interpreters import mlir
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
