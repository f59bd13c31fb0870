"""`lax.approx_max_k` / `approx_min_k`: the k largest (smallest) entries along a dimension,
for nearest-neighbour search. On TPU XLA runs an approximate algorithm; on CPU (and GPU)
JAX lowers it to XLA's exact fallback, so jaxon sorts: the results are exact, as JAX's
are here. With `aggregate_to_topk=False` the output keeps as many entries as the
approximate algorithm's first stage would, which jaxlib computes.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import sorting, utils


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> list[Any]:
  """The `k` largest entries of `operand` along `reduction_dimension` and their int32
  indices, largest first (`recall_target` and the override only tune TPU's algorithm).

  Example: `approx_max_k(jnp.array([3., 1., 4., 1.5, 9.]), 2)` is `([9., 4.], [4, 2])`.
  """
  return _approx_top_k(operand, k, reduction_dimension, recall_target, True,
                       reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> list[Any]:
  """The `k` smallest entries along `reduction_dimension` and their indices, smallest
  first (see `approx_max_k`)."""
  return _approx_top_k(operand, k, reduction_dimension, recall_target, False,
                       reduction_input_size_override, aggregate_to_topk)


def _approx_top_k(operand: Any, k: int, reduction_dimension: int, recall_target: float,
                  is_max_k: bool, reduction_input_size_override: int,
                  aggregate_to_topk: bool) -> list[Any]:
  return approx_top_k_p.bind(
      operand, k=int(k), reduction_dimension=int(reduction_dimension),
      recall_target=float(recall_target), is_max_k=bool(is_max_k),
      reduction_input_size_override=int(reduction_input_size_override),
      aggregate_to_topk=bool(aggregate_to_topk))


def _abstract_eval(operand: ShapedArray, *, k: int, reduction_dimension: int,
                   recall_target: float, is_max_k: bool, reduction_input_size_override: int,
                   aggregate_to_topk: bool) -> list[ShapedArray]:
  if k <= 0:
    raise ValueError(f"k must be positive, got {k}")
  if operand.ndim == 0:
    raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {operand.shape}")
  axis = utils.canonicalize_axis(reduction_dimension, operand.ndim)
  size = operand.shape[axis]
  if size < k:
    raise ValueError(f"k must be smaller than the size of reduction_dim {size}, got {k}")
  if not dtypes.issubdtype(operand.dtype, np.floating):
    raise ValueError(f"operand must be a floating type, got {operand.dtype}")
  out = k if aggregate_to_topk else _jax.approx_top_k_reduction_output_size(
      size, operand.ndim, k, recall_target, aggregate_to_topk,
      reduction_input_size_override)[0]
  shape = operand.shape[:axis] + (out,) + operand.shape[axis + 1:]
  return [operand.update(shape=shape), ShapedArray(shape, np.int32)]


approx_top_k_p = utils.standard_multi_result_primitive("approx_top_k", _abstract_eval)


def _lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *, k: int,
              reduction_dimension: int, is_max_k: bool, **_: Any) -> list[ir.Value]:
  """A stable sort of (operand, iota), descending for the largest, sliced to the output."""
  aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
  axis = utils.canonicalize_axis(reduction_dimension, aval.ndim)
  index_aval = ShapedArray(aval.shape, np.int32)
  iota = hlo.iota(mlir.aval_to_ir_type(index_aval), axis)
  sorted_ = sorting._sort_op([operand, iota], [aval, index_aval], axis, True, 1,
                             descending=is_max_k)
  return [hlo.slice(x, [0] * aval.ndim, list(out_aval.shape), [1] * aval.ndim)
          for x in sorted_.results]


def _jvp(primals: Any, tangents: Any, **params: Any) -> tuple[list[Any], list[Any]]:
  """The values' tangent is the operand's at the returned indices (as `top_k`'s)."""
  (operand,), (tangent,) = primals, tangents
  values, indices = approx_top_k_p.bind(operand, **params)
  zero = lambda x: ad.Zero(core.get_aval(x).to_tangent_aval())  # noqa: E731
  if type(tangent) is ad.Zero:
    return [values, indices], [zero(values), zero(indices)]
  axis = utils.canonicalize_axis(params["reduction_dimension"], np.ndim(operand))
  return [values, indices], [sorting._take_along(tangent, indices, axis), zero(indices)]


def _batch_rule(vals: Any, dims: Any, *, reduction_dimension: int, **params: Any
                ) -> tuple[list[Any], list[int]]:
  (operand,), (bdim,) = vals, dims
  axis = utils.canonicalize_axis(reduction_dimension, np.ndim(operand) - 1)
  outs = approx_top_k_p.bind(operand, reduction_dimension=axis + (bdim <= axis), **params)
  return outs, [bdim, bdim]


mlir.register_lowering(approx_top_k_p, _lowering)
ad.primitive_jvps[approx_top_k_p] = _jvp
batching.primitive_batchers[approx_top_k_p] = _batch_rule
