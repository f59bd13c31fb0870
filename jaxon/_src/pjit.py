"""`pjit`: the primitive a `jit`-decorated function becomes when it is called while another
transformation is tracing. Its params are the function's `name` and its closed `jaxpr`,
and, for a jit given `in_shardings`/`out_shardings`, those shardings (one per input and
output of the jaxpr, `UNSPECIFIED` where none was given). Each sharding param is present
only when it specifies something, so an unsharded jit's equation prints and compares as
in the seeds (`pjit[name=… jaxpr=…]`); every rule carries the shardings through."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jaxon._src import caches, core
from jaxon._src import pretty_printer as pp
from jaxon._src.core import ClosedJaxpr, JaxprEqn, Literal, PrintContext
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.sharding_impls import (
    UNSPECIFIED, NamedSharding, PartitionSpec, PlacedProgram, lower_constraint)
from jaxon._src.xla import executable

pjit_p = core.Primitive("pjit")
pjit_p.multiple_results = True

Shardings = tuple[Any, ...] | None  # a sharding param; None when absent (all unspecified)


def sharding_params(in_shardings: Iterable[Any], out_shardings: Iterable[Any]
                    ) -> dict[str, tuple[Any, ...]]:
  """The sharding params of a `pjit` equation: each only when it specifies a sharding."""
  in_shardings, out_shardings = tuple(in_shardings), tuple(out_shardings)
  params = {}
  if any(s is not UNSPECIFIED for s in in_shardings):
    params["in_shardings"] = in_shardings
  if any(s is not UNSPECIFIED for s in out_shardings):
    params["out_shardings"] = out_shardings
  return params


def _full(shardings: Shardings, n: int) -> tuple[Any, ...]:
  return (UNSPECIFIED,) * n if shardings is None else shardings


# Primitives of upper layers whose equations fix where a program runs (shard_map runs on
# its mesh): `placing_rules[primitive](params) -> shardings`.
placing_rules: dict[core.Primitive, Callable[[dict], list[Any]]] = {}


def shardings_inside(jaxpr: core.Jaxpr) -> list[Any]:
  """The shardings a program's equations fix (sharding constraints, nested sharded jits),
  at any depth: they decide where the program runs."""
  found = []
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "sharding_constraint":  # lax's primitive (a layer up)
      found.append(eqn.params["sharding"])
    elif eqn.primitive in placing_rules:
      found += placing_rules[eqn.primitive](eqn.params)
    elif eqn.primitive is pjit_p:
      found += [s for s in (*eqn.params.get("in_shardings", ()),
                            *eqn.params.get("out_shardings", ())) if s is not UNSPECIFIED]
    for p in eqn.params.values():
      if isinstance(p, (ClosedJaxpr, core.Jaxpr)):
        found += shardings_inside(p.jaxpr if isinstance(p, ClosedJaxpr) else p)
  return found


_placed_programs = caches.WeakKeyLRUCache(maxsize=256)
_holds_shardings = caches.WeakKeyLRUCache(maxsize=1024)  # jaxpr -> bool(shardings_inside)


def _pjit_impl(*args: Any, jaxpr: ClosedJaxpr, name: str, in_shardings: Shardings = None,
               out_shardings: Shardings = None) -> list[Any]:
  if in_shardings is None and out_shardings is None:
    # A jit without shardings of its own still runs placed if its body holds a shard_map
    # or a constraint (the jvp or transpose of such a jit, bound eagerly).
    inside = _holds_shardings.get(jaxpr)
    if inside is None:
      inside = bool(shardings_inside(jaxpr.jaxpr))
      _holds_shardings.put(jaxpr, inside)
    if not inside:
      return executable.executable_for(jaxpr, name)(args)
  programs = _placed_programs.get(jaxpr)
  if programs is None:
    programs = {}
    _placed_programs.put(jaxpr, programs)
  key = (name, in_shardings, out_shardings)
  program = programs.get(key)
  if program is None:
    as_none = lambda shardings, n: [None if s is UNSPECIFIED else s  # noqa: E731
                                    for s in _full(shardings, n)]
    program = programs[key] = PlacedProgram(
        jaxpr.jaxpr, jaxpr.consts, name, as_none(in_shardings, len(jaxpr.in_avals)),
        as_none(out_shardings, len(jaxpr.out_avals)), shardings_inside(jaxpr.jaxpr),
        default=lambda: executable.executable_for(jaxpr, name), as_jit=True)
  return program(args)


def _pjit_abstract_eval(*avals: core.ShapedArray, jaxpr: ClosedJaxpr, **_: Any
                        ) -> list[core.ShapedArray]:
  return jaxpr.out_avals


def _pjit_lowering(ctx: mlir.LoweringRuleContext, *args: Any, jaxpr: ClosedJaxpr,
                   name: str, in_shardings: Shardings = None, out_shardings: Shardings = None
                   ) -> list[Any]:
  """A nested sharded jit's shardings become constraints on its operands and results."""
  def constrain(values: Sequence[Any], shardings: Shardings, avals: Sequence[Any]
                ) -> list[Any]:
    return [lower_constraint(ctx.module_context, v, s, len(a.shape))
            if isinstance(s, NamedSharding) else v
            for v, s, a in zip(values, _full(shardings, len(values)), avals)]
  args = constrain(args, in_shardings, jaxpr.in_avals)
  outs = mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr, args)
  return constrain(outs, out_shardings, jaxpr.out_avals)


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
  order = [k for k in ("name", "in_shardings", "jaxpr", "out_shardings") if k in eqn.params]
  return core.pp_standard_eqn(eqn, context, param_order=order)


pjit_p.def_impl(_pjit_impl)
pjit_p.def_abstract_eval(_pjit_abstract_eval)
mlir.register_lowering(pjit_p, _pjit_lowering)
core.pp_eqn_rules[pjit_p] = _pjit_pp_rule


# ----------------------------------------------------------------------------- transformations
# Each rule transforms the inner jaxpr (cached per jaxpr and configuration) and binds `pjit`
# on the result, so a jitted function stays one compiled call under every transformation;
# the shardings follow the values they describe (tangents and cotangents are laid out as
# their primals, residuals are left to XLA).


def _pjit_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, jaxpr: ClosedJaxpr,
              name: str, in_shardings: Shardings = None, out_shardings: Shardings = None
              ) -> tuple[list[Any], list[Any]]:
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  jvp_jaxpr, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
  ins, outs = _full(in_shardings, len(primals)), _full(out_shardings, len(jaxpr.out_avals))
  results = pjit_p.bind(
      *primals, *[t for t in tangents if type(t) is not ad.Zero], jaxpr=jvp_jaxpr, name=name,
      **sharding_params(ins + _select(ins, nonzeros), outs + _select(outs, out_nonzeros)))
  n_out = len(jaxpr.out_avals)
  primal_outs, nonzero_tangent_outs = results[:n_out], iter(results[n_out:])
  tangent_outs = [next(nonzero_tangent_outs) if nz else ad.Zero(a.to_tangent_aval())
                  for a, nz in zip(jaxpr.out_avals, out_nonzeros)]
  return primal_outs, tangent_outs


def _select(items: Sequence[Any], keep: Sequence[bool]) -> tuple[Any, ...]:
  return tuple(x for x, k in zip(items, keep) if k)


def _pjit_partial_eval_eqn(eqn: JaxprEqn, unknowns: Sequence[bool]
                           ) -> tuple[JaxprEqn, JaxprEqn, list[bool]]:
  """Splits a `pjit` equation: the known call computes the known outputs and the residuals
  now (a nested jit's primal part runs with the known values), the unknown call the rest."""
  params = eqn.params
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(params["jaxpr"],
                                                              tuple(unknowns))
  ins = _full(params.get("in_shardings"), len(eqn.invars))
  outs = _full(params.get("out_shardings"), len(eqn.outvars))
  knowns, out_knowns = [not u for u in unknowns], [not u for u in out_unknowns]
  residuals = [core.Var(aval) for aval in known.out_avals[len(known.out_avals) - num_res:]]
  unspecified = (UNSPECIFIED,) * num_res
  base = {"name": params["name"]}
  known_eqn = JaxprEqn(
      [a for a, u in zip(eqn.invars, unknowns) if not u],
      [v for v, u in zip(eqn.outvars, out_unknowns) if not u] + residuals, pjit_p,
      dict(base, jaxpr=known, **sharding_params(_select(ins, knowns),
                                                _select(outs, out_knowns) + unspecified)))
  unknown_eqn = JaxprEqn(
      residuals + [a for a, u in zip(eqn.invars, unknowns) if u],
      [v for v, u in zip(eqn.outvars, out_unknowns) if u], pjit_p,
      dict(base, jaxpr=unknown, **sharding_params(unspecified + _select(ins, unknowns),
                                                  _select(outs, out_unknowns))))
  return known_eqn, unknown_eqn, out_unknowns


def _pjit_transpose(cts_out: Sequence[Any], *args: Any, jaxpr: ClosedJaxpr, name: str,
                    in_shardings: Shardings = None, out_shardings: Shardings = None
                    ) -> list[Any]:
  undefined = tuple(ad.is_undefined_primal(a) for a in args)
  ct_nonzeros = tuple(type(ct) is not ad.Zero for ct in cts_out)
  transposed = ad.transpose_jaxpr(jaxpr, undefined, ct_nonzeros)
  defined = [a for a, u in zip(args, undefined) if not u]
  ins, outs = _full(in_shardings, len(args)), _full(out_shardings, len(cts_out))
  cts_in = iter(pjit_p.bind(
      *defined, *[ct for ct in cts_out if type(ct) is not ad.Zero], jaxpr=transposed,
      name=name, **sharding_params(_select(ins, [not u for u in undefined])
                                   + _select(outs, ct_nonzeros), _select(ins, undefined))))
  return [next(cts_in) if u else None for u in undefined]


def _pjit_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                dims: Sequence[int | None], *, jaxpr: ClosedJaxpr, name: str,
                in_shardings: Shardings = None, out_shardings: Shardings = None
                ) -> tuple[list[Any], tuple[int | None, ...]]:
  batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, tuple(dims))
  params = sharding_params(
      map(_unsplit_batch_dim, _full(in_shardings, len(vals)), dims, jaxpr.in_avals),
      map(_unsplit_batch_dim, _full(out_shardings, len(out_dims)), out_dims, jaxpr.out_avals))
  return pjit_p.bind(*vals, jaxpr=batched, name=name, **params), out_dims


def _unsplit_batch_dim(sharding: Any, dim: int | None, aval: core.ShapedArray) -> Any:
  """The sharding of a value batched along `dim`: the batch dimension is not split (its
  spec written without trailing Nones, as JAX writes it)."""
  if dim is batching.not_mapped or not isinstance(sharding, NamedSharding):
    return sharding
  spec = list(sharding.spec) + [None] * (len(aval.shape) - len(sharding.spec))
  spec.insert(dim, None)
  while spec and spec[-1] is None:
    spec.pop()
  return sharding.with_spec(PartitionSpec(*spec))


ad.primitive_jvps[pjit_p] = _pjit_jvp
ad.primitive_transposes[pjit_p] = _pjit_transpose
pe.partial_eval_jaxpr_custom_rules[pjit_p] = _pjit_partial_eval_eqn
batching.fancy_primitive_batchers[pjit_p] = _pjit_batch
