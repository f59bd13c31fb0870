"""The `checkify` rules: which primitives can fail and how, and how primitives that carry
jaxprs thread the error through them (JAX 0.10.2's choices of primitives and conditions).

- NaN checks: a floating-point primitive whose output holds a NaN (whatever its inputs).
- Division checks: `div` (integer or floating) by a divisor with a zero in it.
- Index checks: `dynamic_slice`, `dynamic_update_slice`, `gather` and `scatter` (`-add`,
  `-mul`, `-min`, `-max`) whose start indices reach out of bounds, in every mode (the mode
  only says what the program does with such an index; it is still reported).
- `pjit`, `cond`, `while`, `scan`, `remat2`: their jaxprs are checkified and the error's
  leaves become extra operands and results. Branches and iterations must agree on the
  error's type, so the error first gets a slot for every kind of failure the jaxpr can add.
- `custom_jvp_call`/`custom_vjp_call`: the function is checkified; differentiation uses the
  custom rule, which is not checked and passes the incoming error through.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import caches, core, dtypes, shard_map, tree_util
from jaxon._src.checkify import (
    CheckedJaxpr,
    DivisionByZeroError,
    Error,
    NaNError,
    OOBError,
    assert_func,
    checkify_closed_jaxpr,
    checkify_jaxpr,
    current_location,
    error_checks,
)
from jaxon._src.core import ClosedJaxpr, Jaxpr
from jaxon._src.interpreters import ad
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import transcendental
from jaxon._src.lax import (
    convolution,
    dot_general,
    fft,
    gather_scatter,
    lax,
    reductions,
    shape_ops,
    slicing,
    slicing_common,
    special,
    windowed_reductions,
)
from jaxon._src.lax import custom_derivatives as cd
from jaxon._src.lax.control_flow import common
from jaxon._src.lax.control_flow.conditionals import cond_p
from jaxon._src.lax.control_flow.remat import _closed, remat_p
from jaxon._src.lax.control_flow.scan import scan_p
from jaxon._src.lax.control_flow.solves import custom_linear_solve_p
from jaxon._src.lax.control_flow.while_loop import while_p
from jaxon._src.pjit import Shardings, pjit_p, sharding_params
from jaxon._src.sharding_impls import UNSPECIFIED

# ----------------------------------------------------------------------------- NaNs


def _any(flags: Any) -> Any:
  ndim = core.get_aval(flags).ndim
  return reductions.reduce_or(flags, tuple(range(ndim))) if ndim else flags


def check_nans(prim: core.Primitive, error: Error, enabled_errors: frozenset, out: Any
               ) -> Error:
  """`error` with a NaN check of `prim`'s output(s)."""
  if NaNError not in enabled_errors:
    return error
  outs = out if prim.multiple_results else [out]
  flags = [_any(lax.ne(x, x)) for x in outs if dtypes.is_inexact(core.get_aval(x).dtype)]
  if not flags:
    return error
  return assert_func(error, functools.reduce(lax.bitwise_or, flags),
                     NaNError(current_location(), prim.name))


def _nan_rule(prim: core.Primitive, error: Error, enabled_errors: frozenset, *args: Any,
              **params: Any) -> tuple[Error, Any]:
  out = prim.bind(*args, **params)
  return check_nans(prim, error, enabled_errors, out), out


_NAN_PRIMITIVES = [
    lax.add_p, lax.integer_pow_p, lax.mul_p, lax.rem_p, lax.sub_p,
    transcendental.acos_p, transcendental.acosh_p, transcendental.asin_p, transcendental.asinh_p,
    transcendental.atan2_p, transcendental.atan_p, transcendental.atanh_p, transcendental.cbrt_p,
    transcendental.cos_p, transcendental.cosh_p, transcendental.digamma_p,
    transcendental.erf_inv_p, transcendental.erf_p, transcendental.erfc_p, transcendental.exp_p,
    transcendental.expm1_p, transcendental.lgamma_p, transcendental.log1p_p,
    transcendental.log_p, transcendental.logistic_p, transcendental.pow_p,
    transcendental.rsqrt_p, transcendental.sin_p, transcendental.sinh_p, transcendental.sqrt_p,
    transcendental.tan_p, transcendental.tanh_p,
    special.bessel_i0e_p, special.bessel_i1e_p, special.igamma_grad_a_p, special.igamma_p,
    special.igammac_p, special.regularized_incomplete_beta_p,
    reductions.cumlogsumexp_p, reductions.cummax_p, reductions.cummin_p, reductions.cumprod_p,
    reductions.cumsum_p, reductions.reduce_p, reductions.reduce_prod_p, reductions.reduce_sum_p,
    windowed_reductions.reduce_window_p, windowed_reductions.reduce_window_sum_p,
    shape_ops.pad_p, convolution.conv_general_dilated_p, dot_general.dot_general_p,
    fft.fft_p, custom_linear_solve_p,
]
for _prim in _NAN_PRIMITIVES:
  error_checks[_prim] = functools.partial(_nan_rule, _prim)


def _div_rule(error: Error, enabled_errors: frozenset, x: Any, y: Any) -> tuple[Error, Any]:
  if DivisionByZeroError in enabled_errors:
    aval = core.get_aval(y)
    zero = _any(lax.eq(y, lax.full(aval.shape, 0, aval.dtype)))
    error = assert_func(error, zero, DivisionByZeroError(current_location()))
  return _nan_rule(lax.div_p, error, enabled_errors, x, y)


error_checks[lax.div_p] = _div_rule


# ----------------------------------------------------------------------------- indices


def _oob_payload(mask: Any, indices: Any, dims_map: Sequence[int],
                 operand_shape: tuple[int, ...]) -> Any:
  """int32[3]: the first out-of-bounds index (row-major over `indices`, whose last
  dimension is the index vector), the operand axis it indexes and that axis's size."""
  size = core.get_aval(mask).size
  flat = lambda x: x if core.get_aval(x).ndim == 1 else shape_ops.reshape(x, (size,))
  first = reductions.argmin(lax.bitwise_not(flat(mask)), 0, np.int32)

  def entry(values: Any, at: Any) -> Any:
    return slicing.dynamic_index_in_dim(values, at, keepdims=False,
                                        allow_negative_indices=False)
  index = lax.convert_element_type(entry(flat(indices), first), np.int32)
  if len(dims_map) == 1:
    axis, axis_size = np.int32(dims_map[0]), np.int32(operand_shape[dims_map[0]])
  else:
    axis = entry(np.array(dims_map, np.int32), lax.rem(first, np.int32(len(dims_map))))
    axis_size = entry(np.array(operand_shape, np.int32), axis)
  return shape_ops.concatenate([lax.broadcast_in_dim(p, (1,), ())
                                for p in (index, axis, axis_size)], 0)


def _check_indices(error: Error, name: str, operand_shape: tuple[int, ...], indices: Any,
                   upper: Sequence[int], dims_map: Sequence[int]) -> Error:
  """`error` with the check that every index vector (the last dimension of `indices`,
  entry i indexing operand axis `dims_map[i]`) lies in [0, `upper[i]`]."""
  aval = core.get_aval(indices)
  if aval.size == 0:
    return error
  limit = np.minimum(np.array(upper, np.int64), np.iinfo(aval.dtype).max).astype(aval.dtype)
  last = (aval.ndim - 1,)
  mask = lax.bitwise_or(
      lax.lt(indices, lax.full(aval.shape, 0, aval.dtype)),
      lax.gt(indices, lax.broadcast_in_dim(limit, aval.shape, last)))
  payload = _oob_payload(mask, indices, dims_map, operand_shape)
  return assert_func(error, _any(mask),
                     OOBError(current_location(), name, operand_shape, payload))


def _check_starts(error: Error, name: str, operand_shape: tuple[int, ...],
                  starts: Sequence[Any], window: Sequence[int]) -> Error:
  if not starts:
    return error
  stacked = [lax.broadcast_in_dim(s, (1,), ()) for s in starts]
  stacked = stacked[0] if len(stacked) == 1 else shape_ops.concatenate(stacked, 0)
  upper = [d - w for d, w in zip(operand_shape, window)]
  return _check_indices(error, name, operand_shape, stacked, upper, range(len(starts)))


def _dynamic_slice_rule(error: Error, enabled_errors: frozenset, operand: Any, *starts: Any,
                        slice_sizes: tuple[int, ...]) -> tuple[Error, Any]:
  out = slicing.dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
  if OOBError in enabled_errors:
    error = _check_starts(error, "dynamic_slice", core.get_aval(operand).shape, starts,
                          slice_sizes)
  return error, out


def _dynamic_update_slice_rule(error: Error, enabled_errors: frozenset, operand: Any,
                               update: Any, *starts: Any) -> tuple[Error, Any]:
  out = slicing.dynamic_update_slice_p.bind(operand, update, *starts)
  if OOBError in enabled_errors:
    error = _check_starts(error, "dynamic_update_slice", core.get_aval(operand).shape,
                          starts, core.get_aval(update).shape)
  return error, out


def _gather_rule(error: Error, enabled_errors: frozenset, operand: Any, indices: Any, *,
                 dimension_numbers: gather_scatter.GatherDimensionNumbers,
                 slice_sizes: tuple[int, ...], **params: Any) -> tuple[Error, Any]:
  out = gather_scatter.gather_p.bind(operand, indices, dimension_numbers=dimension_numbers,
                              slice_sizes=slice_sizes, **params)
  if OOBError in enabled_errors:
    shape = core.get_aval(operand).shape
    index_map = dimension_numbers.start_index_map
    upper = slicing_common.index_upper_bounds(shape, slice_sizes, index_map)
    error = _check_indices(error, "gather", shape, indices, upper, index_map)
  return error, out


def _scatter_rule(prim: core.Primitive, error: Error, enabled_errors: frozenset,
                  operand: Any, indices: Any, updates: Any, *,
                  dimension_numbers: gather_scatter.ScatterDimensionNumbers, **params: Any
                  ) -> tuple[Error, Any]:
  """Also checks the result for NaNs, but only with index checks on (as JAX does)."""
  out = prim.bind(operand, indices, updates, dimension_numbers=dimension_numbers, **params)
  if OOBError not in enabled_errors:
    return error, out
  operand_aval = core.get_aval(operand)
  window = gather_scatter._scatter_window(operand_aval, core.get_aval(updates), dimension_numbers)
  index_map = dimension_numbers.scatter_dims_to_operand_dims
  upper = slicing_common.index_upper_bounds(operand_aval.shape, window, index_map)
  error = _check_indices(error, prim.name, operand_aval.shape, indices, upper, index_map)
  return check_nans(prim, error, enabled_errors, out), out


error_checks[slicing.dynamic_slice_p] = _dynamic_slice_rule
error_checks[slicing.dynamic_update_slice_p] = _dynamic_update_slice_rule
error_checks[gather_scatter.gather_p] = _gather_rule
for _prim in (gather_scatter.scatter_p, gather_scatter.scatter_add_p, gather_scatter.scatter_mul_p,
              gather_scatter.scatter_min_p, gather_scatter.scatter_max_p):
  error_checks[_prim] = functools.partial(_scatter_rule, _prim)


# ----------------------------------------------------------------------------- calls


def _leaves(error: Error) -> list[Any]:
  return tree_util.tree_leaves(error)


def _with_slots_for(error: Error, enabled_errors: frozenset,
                    jaxprs: Sequence[ClosedJaxpr]) -> Error:
  """`error` with a slot for every kind of failure `jaxprs` can add, so that it has the
  type of their output errors (the fixpoint a loop's carried error needs)."""
  effects = set()
  for jaxpr in jaxprs:
    effects.update(checkify_closed_jaxpr(jaxpr, enabled_errors, error._effects).out_effects)
  return error._add_placeholder_effects(effects)


def _pjit_rule(error: Error, enabled_errors: frozenset, *args: Any, jaxpr: ClosedJaxpr,
               name: str, in_shardings: Shardings = None, out_shardings: Shardings = None
               ) -> tuple[Error, list[Any]]:
  checked = checkify_closed_jaxpr(jaxpr, enabled_errors, error._effects)
  errors = _leaves(error)
  # The error values ride in front of the program's own inputs and outputs, unplaced.
  shardings = sharding_params(
      (UNSPECIFIED,) * len(errors) + (in_shardings or (UNSPECIFIED,) * len(args)),
      (UNSPECIFIED,) * checked.num_error_leaves
      + (out_shardings or (UNSPECIFIED,) * len(jaxpr.out_avals)))
  outs = pjit_p.bind(*errors, *args, jaxpr=checked.jaxpr, name=name, **shardings)
  return checked.split_outputs(outs, error)


@caches.lru_cache(maxsize=4096)
def _consts_as_inputs(jaxpr: ClosedJaxpr) -> Jaxpr:
  return pe.convert_constvars_jaxpr(jaxpr.jaxpr)


def _remat_rule(error: Error, enabled_errors: frozenset, *args: Any, jaxpr: Jaxpr,
                **params: Any) -> tuple[Error, list[Any]]:
  """`remat2` carries an open jaxpr: the checkified jaxpr's consts become operands."""
  checked = checkify_closed_jaxpr(_closed(jaxpr), enabled_errors, error._effects)
  outs = remat_p.bind(*checked.jaxpr.consts, *_leaves(error), *args,
                      jaxpr=_consts_as_inputs(checked.jaxpr), **params)
  return checked.split_outputs(outs, error)


error_checks[pjit_p] = _pjit_rule
error_checks[remat_p] = _remat_rule


# ----------------------------------------------------------------------------- control flow


def _cond_rule(error: Error, enabled_errors: frozenset, index: Any, *ops: Any,
               branches: tuple[ClosedJaxpr, ...]) -> tuple[Error, list[Any]]:
  error = _with_slots_for(error, enabled_errors, branches)
  checked = [checkify_closed_jaxpr(b, enabled_errors, error._effects) for b in branches]
  outs = cond_p.bind(index, *_leaves(error), *ops,
                     branches=tuple(c.jaxpr for c in checked))
  out_error, outs = checked[0].split_outputs(outs, error)
  metadata = {code: tree for c in checked for code, tree in c.metadata.items()}
  return dataclasses.replace(out_error, _metadata={**out_error._metadata, **metadata}), outs


def _error_after_consts(checked: CheckedJaxpr, num_consts: int) -> CheckedJaxpr:
  """`checked` taking its leading `num_consts` inputs before the error leaves (loops
  carry the error, and their operands list the consts first)."""
  n_err, n_in = checked.num_error_leaves, len(checked.jaxpr.in_avals)
  order = [*range(n_err, n_err + num_consts), *range(n_err), *range(n_err + num_consts, n_in)]
  return checked._replace(jaxpr=common.move_binders(checked.jaxpr, order))


@caches.lru_cache(maxsize=4096)
def _checked_scan_body(jaxpr: ClosedJaxpr, num_consts: int, enabled_errors: frozenset,
                       effects: tuple) -> CheckedJaxpr:
  return _error_after_consts(checkify_closed_jaxpr(jaxpr, enabled_errors, effects),
                             num_consts)


def _scan_rule(error: Error, enabled_errors: frozenset, *args: Any, jaxpr: ClosedJaxpr,
               num_consts: int, num_carry: int, linear: tuple[bool, ...], **params: Any
               ) -> tuple[Error, list[Any]]:
  """The error is carried: an iteration's failure stays reported by later ones."""
  error = _with_slots_for(error, enabled_errors, [jaxpr])
  body = _checked_scan_body(jaxpr, num_consts, enabled_errors, error._effects)
  err_leaves = _leaves(error)
  outs = scan_p.bind(*args[:num_consts], *err_leaves, *args[num_consts:], jaxpr=body.jaxpr,
                     num_consts=num_consts, num_carry=len(err_leaves) + num_carry,
                     linear=(*linear[:num_consts], *[False] * len(err_leaves),
                             *linear[num_consts:]), **params)
  return body.split_outputs(outs, error)


@caches.lru_cache(maxsize=4096)
def _body_then_cond(cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int
                    ) -> ClosedJaxpr:
  """(cond consts, body consts, carry) -> the body's new carry, after evaluating the cond
  function on it: checkified, the cond's checks run on every carry the loop tests."""
  def body_then_cond(*args: Any) -> list[Any]:
    new_carry = core.jaxpr_as_fun(body_jaxpr)(*args[cond_nconsts:])
    core.jaxpr_as_fun(cond_jaxpr)(*args[:cond_nconsts], *new_carry)
    return new_carry
  return pe.trace_to_closed_jaxpr(
      body_then_cond, [*cond_jaxpr.in_avals[:cond_nconsts], *body_jaxpr.in_avals])


@caches.lru_cache(maxsize=4096)
def _checked_while(cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                   body_nconsts: int, enabled_errors: frozenset, effects: tuple
                   ) -> tuple[ClosedJaxpr, CheckedJaxpr]:
  """The `while` operands become (cond consts, cond consts + body consts, error, carry).
  The cond jaxpr is checkified only so that its `check`s are discharged: the predicate is
  all it returns (the body already checks what the cond function does)."""
  cond = _error_after_consts(checkify_closed_jaxpr(cond_jaxpr, enabled_errors, effects),
                             cond_nconsts).jaxpr
  pred_only = ClosedJaxpr(Jaxpr(cond.jaxpr.constvars, cond.jaxpr.invars,
                                cond.jaxpr.outvars[-1:], cond.jaxpr.eqns), cond.consts)
  body = checkify_closed_jaxpr(_body_then_cond(cond_jaxpr, body_jaxpr, cond_nconsts),
                               enabled_errors, effects)
  return pred_only, _error_after_consts(body, cond_nconsts + body_nconsts)


def _while_rule(error: Error, enabled_errors: frozenset, *args: Any, cond_nconsts: int,
                cond_jaxpr: ClosedJaxpr, body_nconsts: int, body_jaxpr: ClosedJaxpr
                ) -> tuple[Error, list[Any]]:
  if cond_jaxpr.out_avals[0].shape:
    raise ValueError("Checkify does not support batched while-loops "
                     "(checkify-of-vmap-of-while). \nHint: if possible, move the vmap to "
                     "the outer level to get vmap-of-checkify-of-while.")
  cond_consts, body_consts, carry = common.split_list(args, [cond_nconsts, body_nconsts])
  error, _ = checkify_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, enabled_errors, error,
                            *cond_consts, *carry)
  error = _with_slots_for(error, enabled_errors,
                          [_body_then_cond(cond_jaxpr, body_jaxpr, cond_nconsts)])
  cond, body = _checked_while(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts,
                              enabled_errors, error._effects)
  outs = while_p.bind(*cond_consts, *cond_consts, *body_consts, *_leaves(error), *carry,
                      cond_nconsts=cond_nconsts, cond_jaxpr=cond,
                      body_nconsts=cond_nconsts + body_nconsts, body_jaxpr=body.jaxpr)
  return body.split_outputs(outs, error)


error_checks[cond_p] = _cond_rule
error_checks[scan_p] = _scan_rule
error_checks[while_p] = _while_rule


# ----------------------------------------------------------------------------- custom rules


def _custom_jvp_rule(error: Error, enabled_errors: frozenset, *args: Any,
                     call_jaxpr: ClosedJaxpr, symbolic_zeros: bool, **params: Any
                     ) -> tuple[Error, list[Any]]:
  """The checkified function, with the original rule passing the error through (the
  error's leaves are integers and booleans: their tangents are zero)."""
  error = _with_slots_for(error, enabled_errors, [call_jaxpr])
  checked = checkify_closed_jaxpr(call_jaxpr, enabled_errors, error._effects)
  n_err = checked.num_error_leaves
  fun = core.jaxpr_as_fun(checked.jaxpr)
  fun.rule_name = params["name"]  # type: ignore[attr-defined]

  def original_call(*xs: Any) -> list[Any]:
    return cd.custom_jvp_call_p.bind(*xs, call_jaxpr=call_jaxpr,
                                     symbolic_zeros=symbolic_zeros, **params)

  def jvp(*primals_and_tangents: Any) -> list[Any]:
    n = len(primals_and_tangents) // 2
    errors, primals = primals_and_tangents[:n_err], primals_and_tangents[n_err:n]
    outs, out_tangents = ad.jvp_flat(original_call, primals,
                                     primals_and_tangents[n + n_err:])
    error_tangents = [ad.Zero(core.get_aval(e).to_tangent_aval()) for e in errors]
    return [*errors, *outs, *error_tangents, *out_tangents]
  jvp.rule_name = params["jvp"]  # type: ignore[attr-defined]
  outs = cd.custom_jvp_call_p.bind_call(fun, jvp, [*_leaves(error), *args], symbolic_zeros)
  return checked.split_outputs(outs, error)


def _custom_vjp_rule(error: Error, enabled_errors: frozenset, *args: Any,
                     call_jaxpr: ClosedJaxpr, fwd_jaxpr_thunk: Any, bwd: Any, num_consts: int,
                     symbolic_zeros: bool, name: str, fwd: str) -> tuple[Error, list[Any]]:
  """The checkified function; the forward rule passes the error through unchecked and
  the backward rule gives the error's leaves no cotangent."""
  error = _with_slots_for(error, enabled_errors, [call_jaxpr])
  checked = checkify_closed_jaxpr(call_jaxpr, enabled_errors, error._effects)
  n_err = checked.num_error_leaves
  fun = core.jaxpr_as_fun(checked.jaxpr)
  fun.rule_name = name  # type: ignore[attr-defined]

  def forward(*xs: Any) -> tuple[list[Any], list[Any]]:
    jaxpr, num_outs = fwd_jaxpr_thunk()
    outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs[n_err + num_consts:])
    return [*xs[:n_err], *outs[:num_outs]], outs[num_outs:]
  forward.rule_name = fwd  # type: ignore[attr-defined]
  forward.num_consts = n_err + num_consts  # type: ignore[attr-defined]

  def backward(residuals: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
    return [None] * (n_err + num_consts) + list(bwd(residuals, cts[n_err:]))
  backward.rule_name = str(bwd)  # type: ignore[attr-defined]
  outs = cd.custom_vjp_call_p.bind_call(fun, forward, backward, [*_leaves(error), *args],
                                        symbolic_zeros)
  return checked.split_outputs(outs, error)


error_checks[cd.custom_jvp_call_p] = _custom_jvp_rule
error_checks[cd.custom_vjp_call_p] = _custom_vjp_rule


# ----------------------------------------------------------------------------- shard_map


@caches.lru_cache(maxsize=1024)
def _checked_shard_map_body(jaxpr: ClosedJaxpr, mesh: Any, enabled_errors: frozenset,
                            in_effects: tuple) -> tuple[CheckedJaxpr, ClosedJaxpr]:
  """The checkified body, and a body that returns each device's error leaves with a new
  leading dimension of one, so that they leave the shard_map stacked over the devices."""
  with core.extend_axis_env(shard_map._axis_frames(mesh)):
    checked = checkify_closed_jaxpr(jaxpr, enabled_errors, in_effects)
    n = checked.num_error_leaves

    def stacking(*xs: Any) -> list[Any]:
      outs = core.jaxpr_as_fun(checked.jaxpr)(*xs)
      return [*(shape_ops.expand_dims(e, (0,)) for e in outs[:n]), *outs[n:]]
    return checked, pe.trace_to_closed_jaxpr(stacking, checked.jaxpr.in_avals)


def _first_failure(error: Error) -> Error:
  """One error from an error whose leaves are stacked over devices: per kind of failure,
  the first device's (in mesh order) that failed, as if they had run one after another."""
  pred, code, payload = {}, {}, {}
  for effect in error._effects:
    failed = error._pred[effect]
    first = reductions.argmax(failed, 0, np.int32)
    pred[effect] = reductions.reduce_or(failed, (0,))
    code[effect] = slicing.dynamic_index_in_dim(error._code[effect], first, keepdims=False)
    payload[effect] = [slicing.dynamic_index_in_dim(p, first, keepdims=False)
                       for p in error._payload[effect]]
  return Error(pred, code, error._metadata, payload)


def _shard_map_rule(error: Error, enabled_errors: frozenset, *args: Any, jaxpr: ClosedJaxpr,
                    mesh: Any, in_specs: tuple, out_specs: tuple, check_vma: bool
                    ) -> tuple[Error, list[Any]]:
  """Every device checks its own block; the incoming error is replicated in, and each
  device's error comes out along a new dimension split over all the mesh axes."""
  with core.extend_axis_env(shard_map._axis_frames(mesh)):
    error = _with_slots_for(error, enabled_errors, [jaxpr])
  checked, body = _checked_shard_map_body(jaxpr, mesh, enabled_errors, error._effects)
  errors = _leaves(error)
  stacked = (tuple(mesh.axis_names),)
  outs = shard_map.shard_map_p.bind(
      *errors, *args, jaxpr=body, mesh=mesh,
      in_specs=tuple(((),) * np.ndim(e) for e in errors) + in_specs,
      out_specs=tuple(stacked + ((),) * a.ndim
                      for a in checked.jaxpr.out_avals[:checked.num_error_leaves]) + out_specs,
      check_vma=check_vma)
  per_device, outs = checked.split_outputs(outs, error)
  return _first_failure(per_device), outs


error_checks[shard_map.shard_map_p] = _shard_map_rule
