"""`cond` and `switch`: the `cond` primitive applies one of several branch jaxprs, chosen
by an integer index clamped into range (seed 001). Its operands are the index, the values
the branches close over, then the branches' inputs; every branch takes the same inputs.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes, traceback_util, tree_util
from jaxon._src.config import config
from jaxon._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Var
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow import common
from jaxon._src.xla import deferred

cond_p = core.Primitive("cond")
cond_p.multiple_results = True

_no_operand = object()


# ----------------------------------------------------------------------------- API


@traceback_util.api_boundary
def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _no_operand) -> Any:
  """Applies `branches[index]` to `operands`; `index` is clamped into range.

  Example:
    >>> switch(1, [lambda x: x + 1., lambda x: x - 2.], 5.)
    Array(3., dtype=float32, weak_type=True)
  """
  operands = _operands(operands, operand)
  branches = tuple(branches)
  if not all(callable(b) for b in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  if np.ndim(index) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  index_dtype = dtypes.dtype(index)
  if index_dtype.kind not in "iu":
    raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
  if not branches:
    raise ValueError("Empty branch sequence: lax.switch needs at least one branch function.")
  if len(branches) == 1:
    return branches[0](*operands)
  index = lax.convert_element_type(index, np.int32)
  index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
  if config.read("jax_disable_jit") and core.concrete_or_none(index) is not None:
    return branches[int(core.concrete_or_none(index))](*operands)
  return _bind_cond(index, branches, operands, "switch")


@traceback_util.api_boundary
def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _no_operand) -> Any:
  """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, staged as one `cond`
  (both branches are traced; one runs).

  Args:
    pred: a boolean or numeric scalar (a number is true when nonzero).
    true_fun, false_fun: functions of `operands` returning pytrees of the same types.
    operands: pytrees of arrays passed to the branch.

  Example:
    >>> cond(x > 0, lambda x: x, lambda x: -x, x)   # abs(x)
  """
  operands = _operands(operands, operand)
  if not (callable(true_fun) and callable(false_fun)):
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, Sequence) or np.ndim(pred) != 0:
    shape = f"type {type(pred).__name__}" if isinstance(pred, Sequence) else \
        f"shape {np.shape(pred)}"
    raise TypeError(f"Pred must be a scalar, got {pred} of {shape}. Use jnp.where for an "
                    "elementwise choice.")
  pred_dtype = dtypes.dtype(pred)
  if pred_dtype.kind not in "biuf":
    raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype.name}. "
                    "Compare it with something (e.g. `x > 0`) to get a boolean.")
  if pred_dtype.kind != "b":
    pred = lax.ne(pred, lax._const(pred, 0))
  if config.read("jax_disable_jit") and core.concrete_or_none(pred) is not None:
    return (true_fun if core.concrete_or_none(pred) else false_fun)(*operands)
  index = lax.convert_element_type(pred, np.int32)
  return _bind_cond(index, (false_fun, true_fun), operands, "cond")


def _operands(operands: tuple, operand: Any) -> tuple:
  """JAX's older calling convention passes one pytree as `operand=`."""
  if operand is _no_operand:
    return operands
  if operands:
    raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                    f"passed, got operand={operand} and positional operands {operands}")
  return (operand,)


def _bind_cond(index: Any, branches: Sequence[Callable], operands: tuple, what: str) -> Any:
  ops, in_tree = tree_util.tree_flatten(operands)
  in_avals = [common.abstractify(x) for x in ops]
  jaxprs, consts, out_trees = common.trace_with_common_consts(branches, in_tree, in_avals)
  for i in range(1, len(jaxprs)):
    where = ("true_fun and false_fun output" if what == "cond" else
             f"branch 0 and {i} outputs")
    common.check_tree_and_avals(where, out_trees[0], jaxprs[0].out_avals, out_trees[i],
                                jaxprs[i].out_avals)
  outs = cond_p.bind(index, *consts, *ops, branches=tuple(jaxprs))
  return out_trees[0].unflatten(outs)


# ----------------------------------------------------------------------------- rules


def _cond_abstract_eval(index: ShapedArray, *avals: ShapedArray,
                        branches: tuple[ClosedJaxpr, ...]) -> list[ShapedArray]:
  if index.shape != () or index.dtype != np.int32:
    raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
  for b in branches:
    if [a.shape for a in b.in_avals] != [a.shape for a in avals]:
      raise TypeError(f"cond branch takes {common.avals_short(b.in_avals)} but the "
                      f"operands are {common.avals_short(avals)}")
  return branches[0].out_avals


def _cond_lowering(ctx: mlir.LoweringRuleContext, index: ir.Value, *args: ir.Value,
                   branches: tuple[ClosedJaxpr, ...]) -> list[ir.Value]:
  """A `stablehlo.case`. With effects (prints) in a branch, the effect token goes through
  it, first among the results, so effects keep program order."""
  module = ctx.module_context
  types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  token = module.effect_token() if any(map(core.jaxpr_has_effects, branches)) else None
  if token is not None:
    types.insert(0, hlo.TokenType.get())
  case = hlo.CaseOp(types, index, len(branches))
  for region, jaxpr in zip(case.regions, branches):
    with ir.InsertionPoint(region.blocks.append()):
      if token is not None:
        module.set_effect_token(token)
      outs = mlir.closed_jaxpr_subcomp(module, jaxpr, args)
      hlo.return_(outs if token is None else [module.effect_token(), *outs])
  if token is None:
    return list(case.results)
  module.set_effect_token(case.results[0])
  return list(case.results)[1:]


def _cond_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
              branches: tuple[ClosedJaxpr, ...]) -> tuple[list[Any], list[Any]]:
  index, *ops = primals
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents[1:])
  out_nonzeros = tuple(map(any, zip(*[ad.jvp_jaxpr(b, nonzeros)[1] for b in branches])))
  jvp_branches = tuple(ad.jvp_jaxpr(b, nonzeros, out_nonzeros)[0] for b in branches)
  outs = cond_p.bind(index, *ops, *[t for t in tangents[1:] if type(t) is not ad.Zero],
                     branches=jvp_branches)
  n = len(branches[0].out_avals)
  primal_outs, tangent_outs = outs[:n], iter(outs[n:])
  return primal_outs, [next(tangent_outs) if nz else ad.Zero(a.to_tangent_aval())
                       for a, nz in zip(branches[0].out_avals, out_nonzeros)]


def _cond_partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]
                       ) -> tuple[JaxprEqn | None, JaxprEqn, list[bool]]:
  """The known cond computes the known outputs and every branch's residuals (zeros for
  the branches not taken); the unknown cond reads the residuals of its own branch."""
  index_unknown, *op_unknowns = unknowns
  branches = eqn.params["branches"]
  if index_unknown:
    return None, eqn, [True] * len(eqn.outvars)
  op_unknowns = tuple(op_unknowns)
  out_unknowns = tuple(map(any, zip(*[pe.partial_eval_jaxpr(b, op_unknowns)[2]
                                      for b in branches])))
  splits = [pe.partial_eval_jaxpr(b, op_unknowns, out_unknowns) for b in branches]
  res_avals = [known.out_avals[len(known.out_avals) - n:] for known, _, _, n in splits]
  all_res_avals, slots = _merge_residuals(res_avals)
  known_branches = [_residuals_to_slots(known, n, all_res_avals, slots_i)
                    for (known, _, _, n), slots_i in zip(splits, slots)]
  unknown_branches = [_residuals_from_slots(unknown, n, all_res_avals, slots_i)
                      for (_, unknown, _, n), slots_i in zip(splits, slots)]
  residuals = [Var(a) for a in all_res_avals]
  index, *ops = eqn.invars
  known_eqn = JaxprEqn(
      [index] + [a for a, u in zip(ops, op_unknowns) if not u],
      [v for v, u in zip(eqn.outvars, out_unknowns) if not u] + residuals, cond_p,
      dict(branches=tuple(known_branches)))
  unknown_eqn = JaxprEqn(
      [index] + residuals + [a for a, u in zip(ops, op_unknowns) if u],
      [v for v, u in zip(eqn.outvars, out_unknowns) if u], cond_p,
      dict(branches=tuple(unknown_branches)))
  return known_eqn, unknown_eqn, list(out_unknowns)


def _merge_residuals(res_avals: Sequence[Sequence[ShapedArray]]
                     ) -> tuple[list[ShapedArray], list[list[int]]]:
  """Residual slots shared by the branches: one branch's residuals never coexist with
  another's, so residuals of equal type share a slot. Returns the slots' avals and, per
  branch, the slot of each of its residuals."""
  slot_avals: list[ShapedArray] = []
  slots = []
  for avals in res_avals:
    free = list(range(len(slot_avals)))
    mine = []
    for aval in avals:
      slot = next((i for i in free if slot_avals[i] == aval), None)
      if slot is None:
        slot = len(slot_avals)
        slot_avals.append(aval)
      else:
        free.remove(slot)
      mine.append(slot)
    slots.append(mine)
  return slot_avals, slots


def _residuals_to_slots(known: ClosedJaxpr, num_res: int, slot_avals: Sequence[ShapedArray],
                        slots: Sequence[int]) -> ClosedJaxpr:
  """`known` returning its residuals in their slots and zeros in the others."""
  def in_slots(*args: Any) -> list[Any]:
    outs = core.jaxpr_as_fun(known)(*args)
    n = len(outs) - num_res
    by_slot = dict(zip(slots, outs[n:]))
    return outs[:n] + [by_slot[i] if i in by_slot else ad.zeros_like_aval(a)
                       for i, a in enumerate(slot_avals)]
  return pe.trace_to_closed_jaxpr(in_slots, known.in_avals)


def _residuals_from_slots(unknown: ClosedJaxpr, num_res: int,
                          slot_avals: Sequence[ShapedArray], slots: Sequence[int]
                          ) -> ClosedJaxpr:
  """`unknown` taking every residual slot, reading its own."""
  inner = unknown.jaxpr
  own = dict(zip(slots, inner.invars[:num_res]))
  slot_vars = [own.get(i) or Var(a) for i, a in enumerate(slot_avals)]
  return ClosedJaxpr(Jaxpr([], slot_vars + inner.invars[num_res:], inner.outvars,
                           inner.eqns), unknown.consts)


def _cond_transpose(cts: Sequence[Any], index: Any, *ops: Any,
                    branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
  undefined = tuple(ad.is_undefined_primal(x) for x in ops)
  ct_nonzeros = tuple(type(ct) is not ad.Zero for ct in cts)
  transposed = tuple(ad.transpose_jaxpr(b, undefined, ct_nonzeros) for b in branches)
  defined = [x for x, u in zip(ops, undefined) if not u]
  cts_in = iter(cond_p.bind(index, *defined, *[ct for ct in cts if type(ct) is not ad.Zero],
                            branches=transposed))
  return [None] + [next(cts_in) if u else None for u in undefined]


def _cond_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                dims: Sequence[int | None], *, branches: tuple[ClosedJaxpr, ...]
                ) -> tuple[list[Any], list[int | None]]:
  index, *ops = vals
  index_dim, *op_dims = dims
  if index_dim is not batching.not_mapped:
    return _batched_index_as_select(axis_data, vals, dims, branches)
  ops = [x if d is batching.not_mapped else batching.moveaxis(x, d, 0)
         for x, d in zip(ops, op_dims)]
  in_dims = tuple(None if d is batching.not_mapped else 0 for d in op_dims)
  out_batched = map(any, zip(*[[d is not None for d in batching.batch_jaxpr(
      b, axis_data, in_dims)[1]] for b in branches]))
  out_dims = tuple(0 if b else None for b in out_batched)
  batched = tuple(batching.batch_jaxpr(b, axis_data, in_dims, out_dims)[0] for b in branches)
  return cond_p.bind(index, *ops, branches=batched), list(out_dims)


def _batched_index_as_select(axis_data: batching.AxisData, vals: Sequence[Any],
                             dims: Sequence[int | None], branches: tuple[ClosedJaxpr, ...]
                             ) -> tuple[list[Any], list[int]]:
  """A per-example branch index: every branch runs on every example and `select_n`
  picks each example's result. Each branch sees the operands through `stop_gradient` on
  the examples it does not serve, so reverse mode sends no cotangent (not even a NaN
  times zero) through a branch that was not taken."""
  size = axis_data.size
  index, *ops = [batching.bdim_at_front(x, d, size) for x, d in zip(vals, dims)]
  in_dims = (0,) * len(ops)
  out_dims = (0,) * len(branches[0].out_avals)
  branch_outs = []
  for i, branch in enumerate(branches):
    batched, _ = batching.batch_jaxpr(branch, axis_data, in_dims, out_dims)
    taken = lax.eq(index, np.int32(i))
    ops_i = [common.select_examples(taken, ad.stop_gradient(x), x) for x in ops]
    branch_outs.append(core.jaxpr_as_fun(batched)(*ops_i))
  outs = [common.select_examples(index, *cases) for cases in zip(*branch_outs)]
  return outs, [0] * len(outs)


cond_p.def_impl(functools.partial(deferred.apply_primitive, cond_p))
cond_p.def_abstract_eval(_cond_abstract_eval)
mlir.register_lowering(cond_p, _cond_lowering)
ad.primitive_jvps[cond_p] = _cond_jvp
ad.primitive_transposes[cond_p] = _cond_transpose
pe.partial_eval_jaxpr_custom_rules[cond_p] = _cond_partial_eval
batching.fancy_primitive_batchers[cond_p] = _cond_batch
