"""`checkpoint` (alias `remat`): reverse mode recomputes a function's intermediates
instead of saving them.

The primitive (printed `remat2`, as JAX 0.10.2 prints it) carries the function's jaxpr.
Its partial-evaluation rule is where the saving happens: of the known values the unknown
(tangent) part needs, only the primitive's inputs and what `policy` calls saveable become
residuals; everything else is recomputed inside the staged `remat2`. Its transpose
recomputes the same way, since `backward_pass` evaluates the non-linear equations of the
jaxpr it transposes.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import caches, core, traceback_util, tree_util
from jaxon._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax.control_flow import common

remat_p = core.Primitive("remat2")
remat_p.multiple_results = True

Policy = Callable[..., bool]


# ----------------------------------------------------------------------------- API

_NOT_GIVEN = object()  # `concrete` is refused when passed at all, as JAX refuses it


@traceback_util.api_boundary
def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Policy | None = None,
               static_argnums: int | tuple[int, ...] = (),
               static_argnames: str | Iterable[str] = (), concrete: Any = _NOT_GIVEN
               ) -> Callable:
  """`fun`, but reverse-mode differentiation recomputes its intermediate values from its
  inputs instead of storing them (trading compute for memory). `policy(prim, *avals,
  **params) -> bool` names the intermediates that may be saved (`checkpoint_policies`).
  Arguments at `static_argnums`, and keyword arguments named in `static_argnames`, are
  Python values the function branches on: they are not traced.

  Example:
    >>> grad(checkpoint(lambda x: jnp.sin(jnp.sin(x))))(1.)   # saves only x
  """
  if concrete is not _NOT_GIVEN:
    raise NotImplementedError("The `concrete` option of jax.checkpoint was removed (as in "
                              "JAX): mark the arguments the function branches on with "
                              "`static_argnums` or `static_argnames` instead.")
  static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
  static_names = (static_argnames,) if isinstance(static_argnames, str) else tuple(
      static_argnames)

  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def checkpointed(*args: Any, **kwargs: Any) -> Any:
    try:
      statics = {i: args[i] for i in static}
      dynamic = [a for i, a in enumerate(args) if i not in statics]
      static_kwargs = {k: v for k, v in kwargs.items() if k in static_names}
      kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
      leaves, in_tree = tree_util.tree_flatten((tuple(dynamic), kwargs))

      def with_statics(dyn_args: tuple, kw: dict) -> Any:
        full = list(dyn_args)
        for i in sorted(statics):
          full.insert(i, statics[i])
        return fun(*full, **kw, **static_kwargs)
      jaxpr, consts, out_tree = common.trace_to_jaxpr(
          with_statics, in_tree, [common.abstractify(x) for x in leaves])
      outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr.jaxpr, prevent_cse=prevent_cse,
                          differentiated=False, policy=policy)
      return out_tree.unflatten(outs)
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return checkpointed


remat = checkpoint


# ----------------------------------------------------------------------------- names

name_p = core.Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)
mlir.register_lowering(name_p, lambda ctx, x, *, name: [x])
ad.deflinear(name_p, lambda ct, x, *, name: [ct])
batching.primitive_batchers[name_p] = lambda vals, dims, *, name: (
    name_p.bind(vals[0], name=name), dims[0])


def checkpoint_name(x: Any, name: str) -> Any:
  """`x` unchanged, tagged `name` for the `save_*_names` policies."""
  return tree_util.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


class checkpoint_policies:  # noqa: N801 (JAX's name: a namespace of policies)
  """Which intermediates a `checkpoint` may save: `policy(prim, *avals, **params)`."""

  @staticmethod
  def everything_saveable(*_: Any, **__: Any) -> bool:
    return True

  @staticmethod
  def nothing_saveable(*_: Any, **__: Any) -> bool:
    return False

  @staticmethod
  def dots_saveable(prim: core.Primitive, *_: Any, **__: Any) -> bool:
    return prim.name in ("dot_general", "conv_general_dilated")

  checkpoint_dots = dots_saveable

  @staticmethod
  def dots_with_no_batch_dims_saveable(prim: core.Primitive, *_: Any, **params: Any) -> bool:
    if prim.name != "dot_general":
      return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch

  checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

  @staticmethod
  def save_only_these_names(*names: str) -> Policy:
    return lambda prim, *_, **params: prim is name_p and params["name"] in names

  @staticmethod
  def save_any_names_but_these(*names: str) -> Policy:
    return lambda prim, *_, **params: prim is name_p and params["name"] not in names

  @staticmethod
  def save_anything_except_these_names(*names: str) -> Policy:
    return lambda prim, *_, **params: not (prim is name_p and params["name"] in names)

  @staticmethod
  def save_from_both_policies(policy_1: Policy, policy_2: Policy) -> Policy:
    return lambda *args, **params: policy_1(*args, **params) or policy_2(*args, **params)


# ----------------------------------------------------------------------------- rules


def _remat_impl(*args: Any, jaxpr: Jaxpr, prevent_cse: bool, differentiated: bool,
                policy: Policy | None) -> list[Any]:
  return core.eval_jaxpr(jaxpr, (), *args)


def _remat_abstract_eval(*avals: ShapedArray, jaxpr: Jaxpr, **_: Any) -> list[ShapedArray]:
  return jaxpr.out_avals


def _remat_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, jaxpr: Jaxpr,
                    prevent_cse: bool, differentiated: bool, policy: Policy | None
                    ) -> list[ir.Value]:
  """A recomputation behind an optimization barrier, so XLA cannot merge it with the
  forward computation it repeats (common-subexpression elimination would undo it)."""
  if differentiated and prevent_cse and args:
    args = list(hlo.OptimizationBarrierOp(list(args)).results)
  return mlir.jaxpr_subcomp(ctx.module_context, jaxpr, [], args)


def _remat_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, jaxpr: Jaxpr,
               prevent_cse: bool, differentiated: bool, policy: Policy | None
               ) -> tuple[list[Any], list[Any]]:
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  jvp, out_nz = ad.jvp_jaxpr(_closed(jaxpr), nonzeros)
  outs = remat_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                      jaxpr=jvp.jaxpr, prevent_cse=prevent_cse, differentiated=True,
                      policy=policy)
  n = len(jaxpr.outvars)
  dots = iter(outs[n:])
  return outs[:n], [next(dots) if nz else ad.Zero(a.to_tangent_aval())
                    for a, nz in zip(jaxpr.out_avals, out_nz)]


@caches.lru_cache(maxsize=4096)
def _closed(jaxpr: Jaxpr) -> ClosedJaxpr:
  """One ClosedJaxpr per jaxpr, so the interpreters' caches keyed on it hit."""
  return ClosedJaxpr(jaxpr, [])


def _remat_partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]
                        ) -> tuple[JaxprEqn | None, JaxprEqn, list[bool]]:
  """The known equations run now, in a `remat2` of their own; the unknown part becomes a
  `remat2` that recomputes every known value it needs, except the primitive's inputs and
  what the policy saves, which it takes as residuals."""
  p = eqn.params
  jaxpr = p["jaxpr"]
  known, staged, out_unknowns, residuals = _split_saving(jaxpr, tuple(unknowns), p["policy"])
  outer_of = dict(zip(jaxpr.invars, eqn.invars))  # inputs that are residuals pass as such
  computed = [v for v in residuals if v not in outer_of]
  res_atoms = {v: outer_of.get(v) or Var(v.aval) for v in residuals}
  known_out = [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u]
  known_eqn = None
  if known_out or computed or core.jaxpr_has_effects(known):
    known = Jaxpr([], known.invars, known_out + computed, known.eqns)
    known_eqn = JaxprEqn([a for a, u in zip(eqn.invars, unknowns) if not u],
                         [v for v, u in zip(eqn.outvars, out_unknowns) if not u]
                         + [res_atoms[v] for v in computed], remat_p, dict(p, jaxpr=known))
  unknown_eqn = JaxprEqn([res_atoms[v] for v in residuals]
                         + [a for a, u in zip(eqn.invars, unknowns) if u],
                         [v for v, u in zip(eqn.outvars, out_unknowns) if u], remat_p,
                         dict(p, jaxpr=staged, differentiated=True))
  return known_eqn, unknown_eqn, out_unknowns


@caches.lru_cache(maxsize=4096)
def _split_saving(jaxpr: Jaxpr, unknowns: tuple[bool, ...], policy: Policy | None
                  ) -> tuple[Jaxpr, Jaxpr, list[bool], list[Var]]:
  """(known jaxpr, staged jaxpr, out_unknowns, residual vars): the known jaxpr returns
  the known outputs then the residuals; the staged one takes the residuals then the
  unknown inputs, and recomputes the known values that are not residuals."""
  unknown_vars = {v for v, u in zip(jaxpr.invars, unknowns) if u}
  is_unknown = lambda a: type(a) is not Literal and a in unknown_vars  # noqa: E731
  known_eqns, unknown_eqns = [], []
  for e in jaxpr.eqns:
    if any(map(is_unknown, e.invars)):
      unknown_vars.update(e.outvars)
      unknown_eqns.append(e)
    else:
      known_eqns.append(e)
  out_unknowns = [is_unknown(v) for v in jaxpr.outvars]
  producer = {v: e for e in known_eqns for v in e.outvars}
  known_inputs = {v for v, u in zip(jaxpr.invars, unknowns) if not u}
  residuals: dict[Var, None] = {}
  recomputed: set[JaxprEqn] = set()

  def need(v: core.Atom) -> None:
    if type(v) is Literal or v in unknown_vars or v in residuals:
      return
    e = producer.get(v)
    if v in known_inputs or e is None or (policy is not None and policy(
        e.primitive, *[a.aval for a in e.invars], **e.params)):
      residuals[v] = None
    elif e not in recomputed:
      recomputed.add(e)
      for a in e.invars:
        need(a)
  for e in unknown_eqns:
    for a in e.invars:
      need(a)
  for e in known_eqns:  # a print the policy does not save runs again where recomputed (JAX)
    if core.eqn_has_effects(e) and e not in recomputed and (policy is None or not policy(
        e.primitive, *[a.aval for a in e.invars], **e.params)):
      recomputed.add(e)
      for a in e.invars:
        need(a)
  res = list(residuals)
  known = Jaxpr([], [v for v in jaxpr.invars if v in known_inputs],
                [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u] + res, known_eqns)
  staged = Jaxpr([], res + [v for v, u in zip(jaxpr.invars, unknowns) if u],
                 [v for v, u in zip(jaxpr.outvars, out_unknowns) if u],
                 [e for e in jaxpr.eqns if e in recomputed] + unknown_eqns)
  return known, staged, out_unknowns, res


def _remat_transpose(cts: Sequence[Any], *args: Any, jaxpr: Jaxpr, prevent_cse: bool,
                     differentiated: bool, policy: Policy | None) -> list[Any]:
  undefined = tuple(ad.is_undefined_primal(a) for a in args)
  ct_nonzeros = tuple(type(ct) is not ad.Zero for ct in cts)
  transposed = ad.transpose_jaxpr(_closed(jaxpr), undefined, ct_nonzeros)
  defined = [a for a, u in zip(args, undefined) if not u]
  cts_in = iter(remat_p.bind(*transposed.consts, *defined,
                             *[ct for ct in cts if type(ct) is not ad.Zero],
                             jaxpr=pe.convert_constvars_jaxpr(transposed.jaxpr),
                             prevent_cse=prevent_cse, differentiated=True, policy=policy))
  return [next(cts_in) if u else None for u in undefined]


def _remat_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                 dims: Sequence[int | None], *, jaxpr: Jaxpr, **params: Any
                 ) -> tuple[list[Any], tuple[int | None, ...]]:
  batched, out_dims = batching.batch_jaxpr(_closed(jaxpr), axis_data, tuple(dims))
  outs = remat_p.bind(*batched.consts, *vals,
                      jaxpr=pe.convert_constvars_jaxpr(batched.jaxpr), **params)
  return outs, out_dims


remat_p.def_impl(_remat_impl)
remat_p.def_abstract_eval(_remat_abstract_eval)
mlir.register_lowering(remat_p, _remat_lowering)
ad.primitive_jvps[remat_p] = _remat_jvp
ad.primitive_transposes[remat_p] = _remat_transpose
pe.partial_eval_jaxpr_custom_rules[remat_p] = _remat_partial_eval
batching.fancy_primitive_batchers[remat_p] = _remat_batch
