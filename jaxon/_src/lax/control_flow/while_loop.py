"""`while_loop` and the `while` primitive (seed 001).

Operands: the cond function's consts, the body function's consts, then the carry; params
`cond_jaxpr`/`cond_nconsts` and `body_jaxpr`/`body_nconsts`. A `while` runs a number of
iterations known only at run time, so it has no transpose: reverse mode through it raises
JAX's ValueError (a `fori_loop` with concrete bounds is a `scan` and differentiates).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, traceback_util, tree_util
from jaxon._src.config import config
from jaxon._src.core import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, ShapedArray, Var
from jaxon._src.errors import ConcretizationTypeError
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow import common
from jaxon._src.xla import deferred

while_p = core.Primitive("while")
while_p.multiple_results = True


# ----------------------------------------------------------------------------- API


@traceback_util.api_boundary
def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
  """`val = init_val; while cond_fun(val): val = body_fun(val); return val`, as one
  staged loop. The carry keeps its pytree structure, shapes and dtypes.

  Reverse-mode differentiation is not defined (the trip count is dynamic); use
  `lax.scan` or `fori_loop` with concrete bounds for that.

  Example:
    >>> while_loop(lambda x: x < 10, lambda x: x * 2, 1)
    Array(16, dtype=int32, weak_type=True)
  """
  if not (callable(cond_fun) and callable(body_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  if config.read("jax_disable_jit"):
    try:  # a Python loop on concrete values, so `print` and `pdb` see them
      val = tree_util.tree_map(lax.asarray, init_val)
      while cond_fun(val):
        val = tree_util.tree_map(lax.asarray, body_fun(val))
      return val
    except ConcretizationTypeError:  # traced (under vmap, say): the primitive, as JAX
      pass
  init_vals, in_tree = tree_util.tree_flatten((init_val,))
  cond_jaxpr, cond_consts, body_jaxpr, body_consts, out_tree = _trace_loop(
      cond_fun, body_fun, in_tree, init_vals)
  init_vals, changed = common.promote_weak_carry(init_vals, body_jaxpr.out_avals)
  if changed:
    cond_jaxpr, cond_consts, body_jaxpr, body_consts, out_tree = _trace_loop(
        cond_fun, body_fun, in_tree, init_vals)
  common.check_carry_type("body_fun", body_fun, in_tree.unflatten(init_vals)[0], out_tree,
                          body_jaxpr.out_avals)
  outs = while_p.bind(*cond_consts, *body_consts, *init_vals,
                      cond_nconsts=len(cond_consts), cond_jaxpr=cond_jaxpr,
                      body_nconsts=len(body_consts), body_jaxpr=body_jaxpr)
  return out_tree.unflatten(outs)


def _trace_loop(cond_fun: Callable, body_fun: Callable, in_tree: tree_util.PyTreeDef,
                init_vals: Sequence[Any]) -> tuple:
  avals = [common.abstractify(x) for x in init_vals]
  cond_jaxpr, cond_consts, cond_tree = common.trace_to_jaxpr(cond_fun, in_tree, avals)
  pred = cond_jaxpr.out_avals
  if cond_tree != tree_util.tree_structure(0) or pred[0].shape != () or \
      pred[0].dtype != np.bool_:
    raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                    f"[{common.avals_short(pred)}]. Compare with something (e.g. "
                    "`i < n`) to get a boolean, or reduce it (`jnp.all`).")
  body_jaxpr, body_consts, body_tree = common.trace_to_jaxpr(body_fun, in_tree, avals)
  return cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree


# ----------------------------------------------------------------------------- rules


def _split(args: Sequence[Any], cond_nconsts: int, body_nconsts: int) -> list[list[Any]]:
  """(cond consts, body consts, carry)."""
  return common.split_list(args, [cond_nconsts, body_nconsts])


def _while_abstract_eval(*avals: ShapedArray, cond_nconsts: int, cond_jaxpr: ClosedJaxpr,
                         body_nconsts: int, body_jaxpr: ClosedJaxpr) -> list[ShapedArray]:
  _, _, carry = _split(avals, cond_nconsts, body_nconsts)
  if not all(map(common.typematch, carry, body_jaxpr.out_avals)):
    raise TypeError(f"while body maps the carry ({common.avals_short(carry)}) to "
                    f"{common.avals_short(body_jaxpr.out_avals)}")
  return body_jaxpr.out_avals


def _while_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, cond_nconsts: int,
                    cond_jaxpr: ClosedJaxpr, body_nconsts: int, body_jaxpr: ClosedJaxpr
                    ) -> list[ir.Value]:
  """A `stablehlo.while` whose loop state carries the consts along with the carry. A
  batched predicate (one per example, from `vmap`) keeps the loop going while any example
  runs, and the body leaves the carries of finished examples as they are. A loop with
  effects (prints) carries the effect token too, first, so they keep program order."""
  types = [mlir.aval_to_ir_type(a) for a in ctx.avals_in]
  module = ctx.module_context
  n_tokens = int(core.jaxpr_has_effects(cond_jaxpr) or core.jaxpr_has_effects(body_jaxpr))
  if n_tokens:
    types, args = [hlo.TokenType.get(), *types], (module.effect_token(), *args)
  loop = hlo.WhileOp(types, list(args))
  pred_aval = cond_jaxpr.out_avals[0]
  cond_block = loop.regions[0].blocks.append(*types)
  with ir.InsertionPoint(cond_block):
    if n_tokens:
      module.set_effect_token(cond_block.arguments[0])
    cond_consts, _, carry = _split(list(cond_block.arguments)[n_tokens:], cond_nconsts,
                                   body_nconsts)
    (pred,) = mlir.closed_jaxpr_subcomp(module, cond_jaxpr, cond_consts + carry)
    if pred_aval.shape:
      pred = _any(pred, pred_aval)
    hlo.return_([pred])
  body_block = loop.regions[1].blocks.append(*types)
  with ir.InsertionPoint(body_block):
    if n_tokens:
      module.set_effect_token(body_block.arguments[0])
    cond_consts, body_consts, carry = _split(list(body_block.arguments)[n_tokens:],
                                             cond_nconsts, body_nconsts)
    new_carry = mlir.closed_jaxpr_subcomp(module, body_jaxpr, body_consts + carry)
    if pred_aval.shape:
      (running,) = mlir.closed_jaxpr_subcomp(module, cond_jaxpr, cond_consts + carry)
      new_carry = [_select_running(running, pred_aval, new, old, aval)
                   for new, old, aval in zip(new_carry, carry, body_jaxpr.out_avals)]
    tokens = [module.effect_token()] if n_tokens else []
    hlo.return_(tokens + cond_consts + body_consts + new_carry)
  if n_tokens:
    module.set_effect_token(loop.results[0])
  return list(loop.results)[n_tokens + cond_nconsts + body_nconsts:]


def _any(pred: ir.Value, aval: ShapedArray) -> ir.Value:
  """`reduce_or` of a boolean array to a scalar."""
  scalar = mlir.aval_to_ir_type(aval.update(shape=()))
  reduce = hlo.ReduceOp([scalar], [pred], [mlir.ir_constant(np.bool_(False))],
                        list(range(len(aval.shape))))
  block = reduce.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([hlo.or_(*block.arguments)])
  return reduce.result


def _select_running(running: ir.Value, pred_aval: ShapedArray, new: ir.Value, old: ir.Value,
                    aval: ShapedArray) -> ir.Value:
  """`new` where the example's predicate holds, `old` elsewhere (the predicate's shape is
  the leading dimensions of the carry, physical ones included for keys)."""
  shape = core.physical_aval(aval).shape
  if shape != pred_aval.shape:
    running = hlo.broadcast_in_dim(mlir.aval_to_ir_type(pred_aval.update(shape=shape)),
                                   running, list(range(len(pred_aval.shape))))
  return hlo.select(running, new, old)


def _with_unused_inputs(jaxpr: ClosedJaxpr, avals: Sequence[ShapedArray]) -> ClosedJaxpr:
  """`jaxpr` taking extra trailing inputs it does not read."""
  inner = jaxpr.jaxpr
  return ClosedJaxpr(Jaxpr(inner.constvars, inner.invars + [Var(a) for a in avals],
                           inner.outvars, inner.eqns), jaxpr.consts)


def _while_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, cond_nconsts: int,
               cond_jaxpr: ClosedJaxpr, body_nconsts: int, body_jaxpr: ClosedJaxpr
               ) -> tuple[list[Any], list[Any]]:
  """One loop over primals and tangents. A carry has a tangent if its initial value has
  one or the body gives it one from another (a fixpoint over the carries)."""
  cond_consts, body_consts, init = _split(primals, cond_nconsts, body_nconsts)
  _, body_const_dots, init_dots = _split(tangents, cond_nconsts, body_nconsts)
  const_nz = [type(t) is not ad.Zero for t in body_const_dots]
  carry_nz = [type(t) is not ad.Zero for t in init_dots]
  for _ in range(len(carry_nz) + 1):
    _, out_nz = ad.jvp_jaxpr(body_jaxpr, tuple(const_nz + carry_nz))
    new_nz = [a or b for a, b in zip(carry_nz, out_nz)]
    if new_nz == carry_nz:
      break
    carry_nz = new_nz
  jvp_body, _ = ad.jvp_jaxpr(body_jaxpr, tuple(const_nz + carry_nz), tuple(carry_nz))
  nb, nc, n_cdot = body_nconsts, len(init), sum(const_nz)
  # jvp_jaxpr takes (consts, carry, const tangents, carry tangents); while wants the
  # tangent consts among the consts and the tangent carries among the carries.
  order = common.interleave([range(nb), range(nb, nb + nc)],
                            [range(nb + nc, nb + nc + n_cdot),
                             range(nb + nc + n_cdot, len(jvp_body.in_avals))])
  jvp_body = common.move_binders(jvp_body, order)
  dot_avals = [a.to_tangent_aval() for a, nz in zip(body_jaxpr.out_avals, carry_nz) if nz]
  jvp_cond = _with_unused_inputs(cond_jaxpr, dot_avals)
  const_dots = [t for t in body_const_dots if type(t) is not ad.Zero]
  carry_dots = [ad.instantiate_zeros(t) for t, nz in zip(init_dots, carry_nz) if nz]
  outs = while_p.bind(*cond_consts, *body_consts, *const_dots, *init, *carry_dots,
                      cond_nconsts=cond_nconsts, cond_jaxpr=jvp_cond,
                      body_nconsts=nb + n_cdot, body_jaxpr=jvp_body)
  primal_outs, tangent_outs = outs[:nc], iter(outs[nc:])
  return primal_outs, [next(tangent_outs) if nz else ad.Zero(a.to_tangent_aval())
                       for a, nz in zip(body_jaxpr.out_avals, carry_nz)]


def _while_partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]
                        ) -> tuple[JaxprEqn | None, JaxprEqn | None, list[bool]]:
  """The known carries come from a loop over the known part of the body. The unknown
  carries need the whole loop again (its known part recomputed, like a checkpoint): a
  loop's iterations cannot hand residuals to a later loop whose trip count is dynamic."""
  p = eqn.params
  nc_cond, nc_body = p["cond_nconsts"], p["body_nconsts"]
  cond_uk, const_uk, carry_uk = _split(list(unknowns), nc_cond, nc_body)
  for _ in range(len(carry_uk) + 1):
    _, _, out_uk, _ = pe.partial_eval_jaxpr(p["body_jaxpr"], tuple(const_uk + carry_uk))
    new_uk = [a or b for a, b in zip(carry_uk, out_uk)]
    if new_uk == carry_uk:
      break
    carry_uk = new_uk
  _, _, pred_uk, _ = pe.partial_eval_jaxpr(p["cond_jaxpr"], tuple(cond_uk + carry_uk))
  if pred_uk[0] or all(carry_uk):
    return None, eqn, [True] * len(carry_uk)
  if not any(unknowns):
    return eqn, None, carry_uk
  known_body, _, _, num_res = pe.partial_eval_jaxpr(p["body_jaxpr"], tuple(const_uk + carry_uk),
                                                  tuple(carry_uk))
  n_known = len(known_body.out_avals) - num_res
  body, _ = pe.dce_jaxpr(known_body.jaxpr, [True] * n_known + [False] * num_res)
  cond_jaxpr, _ = pe.dce_jaxpr(p["cond_jaxpr"].jaxpr, [True])  # reads no unknown input
  cond_known = Jaxpr(cond_jaxpr.constvars,
                     [v for v, u in zip(cond_jaxpr.invars, cond_uk + carry_uk) if not u],
                     cond_jaxpr.outvars, cond_jaxpr.eqns)
  cond_ins, const_ins, carry_ins = _split(eqn.invars, nc_cond, nc_body)
  known_ins = ([a for a, u in zip(cond_ins, cond_uk) if not u]
               + [a for a, u in zip(const_ins, const_uk) if not u]
               + [a for a, u in zip(carry_ins, carry_uk) if not u])
  known_eqn = JaxprEqn(known_ins, [v for v, u in zip(eqn.outvars, carry_uk) if not u],
                       while_p, dict(cond_nconsts=nc_cond - sum(cond_uk),
                                     cond_jaxpr=ClosedJaxpr(cond_known, p["cond_jaxpr"].consts),
                                     body_nconsts=nc_body - sum(const_uk),
                                     body_jaxpr=ClosedJaxpr(body, known_body.consts)))
  if not any(carry_uk):  # unknown inputs no carry reads (a tangent that only integers see)
    return known_eqn, None, carry_uk
  unknown_eqn = eqn.replace(outvars=[v if u else DropVar(v.aval)
                                     for v, u in zip(eqn.outvars, carry_uk)])
  return known_eqn, unknown_eqn, carry_uk


def _while_transpose(*args: Any, **params: Any) -> list[Any]:
  raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                   "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                   "using fori_loop with static start/stop.")


def _while_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                 dims: Sequence[int | None], *, cond_nconsts: int, cond_jaxpr: ClosedJaxpr,
                 body_nconsts: int, body_jaxpr: ClosedJaxpr
                 ) -> tuple[list[Any], list[int | None]]:
  """Batched values move their batch axis to 0; a carry batched on one iteration is
  batched on all (a fixpoint). A batched predicate batches every carry: the loop then
  runs while any example runs, each example's carry frozen once it is done (the while
  lowering's batched-predicate form)."""
  size = axis_data.size
  bat = [d is not batching.not_mapped for d in dims]
  cond_bat, const_bat, carry_bat = _split(bat, cond_nconsts, body_nconsts)
  dims_of = lambda bats: tuple(0 if b else None for b in bats)  # noqa: E731
  for _ in range(len(carry_bat) + 1):
    _, out_dims = batching.batch_jaxpr(body_jaxpr, axis_data, dims_of(const_bat + carry_bat))
    new_bat = [b or d is not None for b, d in zip(carry_bat, out_dims)]
    if new_bat == carry_bat:
      break
    carry_bat = new_bat
  _, (pred_dim,) = batching.batch_jaxpr(cond_jaxpr, axis_data, dims_of(cond_bat + carry_bat))
  if pred_dim is not None:
    carry_bat = [True] * len(carry_bat)
  body_b, _ = batching.batch_jaxpr(body_jaxpr, axis_data, dims_of(const_bat + carry_bat),
                                   dims_of(carry_bat))
  cond_b, _ = batching.batch_jaxpr(cond_jaxpr, axis_data, dims_of(cond_bat + carry_bat),
                                   None if pred_dim is None else (0,))
  cond_consts, body_consts, init = _split(vals, cond_nconsts, body_nconsts)
  _, _, init_dims = _split(dims, cond_nconsts, body_nconsts)
  consts = [x if d is None else batching.moveaxis(x, d, 0)
            for x, d in zip(cond_consts + body_consts, dims[:cond_nconsts + body_nconsts])]
  init = [batching.bdim_at_front(x, d, size) if b else x
          for x, d, b in zip(init, init_dims, carry_bat)]
  outs = while_p.bind(*consts, *init, cond_nconsts=cond_nconsts, cond_jaxpr=cond_b,
                      body_nconsts=body_nconsts, body_jaxpr=body_b)
  return outs, list(dims_of(carry_bat))


while_p.def_impl(functools.partial(deferred.apply_primitive, while_p))
while_p.def_abstract_eval(_while_abstract_eval)
mlir.register_lowering(while_p, _while_lowering)
ad.primitive_jvps[while_p] = _while_jvp
ad.primitive_transposes[while_p] = _while_transpose
pe.partial_eval_jaxpr_custom_rules[while_p] = _while_partial_eval
batching.fancy_primitive_batchers[while_p] = _while_batch
