"""`scaled_dot`: a `dot_general` of block-scaled operands, `(lhs * lhs_scale) @ (rhs *
rhs_scale)`, the form narrow (float8, float4) data is multiplied in.

A scale has the operand's shape except along the contracting dimensions, where each
scale entry covers a block (a "subchannel") of at least 2 consecutive operand entries.
XLA on CPU has no scaled dot, so it lowers as JAX's portable form does: operands and
scales widened to bfloat16, multiplied, and contracted with `dot_general`, accumulating in
`preferred_element_type` (bfloat16 by default). As in JAX it has no derivative rules.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import batching, mlir
from jaxon._src.lax import dot_general as dg
from jaxon._src.lax import lax, shape_ops, utils


def scaled_dot(lhs: Any, rhs: Any, *, lhs_scale: Any = None, rhs_scale: Any = None,
               dimension_numbers: dg.DotDimensionNumbers | None = None,
               preferred_element_type: Any = None) -> Any:
  """`(lhs * lhs_scale) @ (rhs * rhs_scale)` contracted as `dot_general` does.

  Args:
    lhs, rhs: operands of equal rank >= 2 (typically float8).
    lhs_scale, rhs_scale: the operands' shapes with each contracting dimension divided by
      its block size (>= 2); None: all ones (in float8_e8m0fnu).
    dimension_numbers: as for `dot_general`; by default a matrix product over the last
      two dimensions with the leading ones batched.
    preferred_element_type: the accumulation and result type (default bfloat16).

  Returns:
    The `dot_general` result in `preferred_element_type`.
  """
  lhs, rhs = lax.asarray(lhs), lax.asarray(rhs)
  if dimension_numbers is None:
    if lhs.ndim < 2:
      raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
    n = lhs.ndim
    batch = tuple(range(n - 2))
    dimension_numbers = (((n - 1,), (n - 2,)), (batch, batch))
  dnums = dg._canonical_dimension_numbers(dimension_numbers)
  (lhs_contract, rhs_contract), _ = dnums
  if lhs_scale is None:
    lhs_scale = _unit_scale(lhs.shape, lhs_contract)
  if rhs_scale is None:
    rhs_scale = _unit_scale(rhs.shape, rhs_contract)
  out_type = dtypes.bfloat16 if preferred_element_type is None else preferred_element_type
  return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dnums,
                           preferred_element_type=dtypes.canonicalize_dtype(out_type))


def _unit_scale(shape: tuple[int, ...], contract: tuple[int, ...]) -> Any:
  scale_shape = tuple(1 if d in contract else s for d, s in enumerate(shape))
  ones = lax.full(scale_shape, 1.0, dtypes.bfloat16)  # as JAX builds it, then narrowed
  return lax._convert_element_type(ones, dtypes.float8_e8m0fnu)


# ----------------------------------------------------------------------------- the primitive

def _shape_rule(lhs: ShapedArray, rhs: ShapedArray, lhs_scale: ShapedArray,
                rhs_scale: ShapedArray, *, dimension_numbers: tuple, **params: Any
                ) -> tuple[int, ...]:
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  if len({lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim}) != 1:
    raise TypeError(f"All input tensors must have the same rank. Got lhs rank: {lhs.ndim} "
                    f"rhs rank: {rhs.ndim} lhs_scale rank: {lhs_scale.ndim} rhs_scale "
                    f"rank: {rhs_scale.ndim}.")
  for i, j in zip(lhs_batch, rhs_batch):
    if len({lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}) != 1:
      raise TypeError("All input tensors must have the same batch dimension size for "
                      f"batch dims ({i}, {j}).")
  _check_scale("LHS", lhs, lhs_scale, lhs_contract)
  _check_scale("RHS", rhs, rhs_scale, rhs_contract)
  return dg._dot_general_shape_rule(lhs, rhs, dimension_numbers=dimension_numbers)


def _check_scale(side: str, operand: ShapedArray, scale: ShapedArray,
                 contract: tuple[int, ...]) -> None:
  for i, (size, scale_size) in enumerate(zip(operand.shape, scale.shape)):
    if i not in contract:
      if size != scale_size:
        raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size "
                        f"{scale_size}.")
    elif size % scale_size:
      raise TypeError(f"{side} contracting dim {i} of size {size} must be divisible by its "
                      f"scale's dim size {scale_size}.")
    elif size // scale_size < 2:
      raise TypeError(f"The ratio of {side} contracting dim {i} to its scale's dim size "
                      f"({size // scale_size}) must be at least 2.")


def _dtype_rule(*avals: ShapedArray, preferred_element_type: np.dtype, **params: Any
                ) -> np.dtype:
  utils.check_dtypes("scaled_dot", (np.floating,), *avals)
  return preferred_element_type


scaled_dot_p = utils.standard_primitive("scaled_dot", _shape_rule, _dtype_rule,
                                        lambda *avals, **params: False)


def _scaled_operand(x: Any, scale: Any, contract: tuple[int, ...]) -> Any:
  """`x * scale` in bfloat16, each scale entry repeated over its block."""
  x_shape, scale_shape = core.get_aval(x).shape, core.get_aval(scale).shape
  for d in contract:
    if scale_shape[d] != x_shape[d]:  # repeat entry i as entries [i*block, (i+1)*block)
      block = x_shape[d] // scale_shape[d]
      split = (*scale_shape[:d + 1], block, *scale_shape[d + 1:])
      dims = tuple(i for i in range(len(split)) if i != d + 1)
      scale = shape_ops.reshape(lax.broadcast_in_dim(scale, split, dims),
                                (*scale_shape[:d], x_shape[d], *scale_shape[d + 1:]))
      scale_shape = core.get_aval(scale).shape
  as_bf16 = lambda v: lax._convert_element_type(v, dtypes.bfloat16)
  return lax.mul(as_bf16(x), as_bf16(scale))


def _scaled_dot_dense(lhs: Any, rhs: Any, lhs_scale: Any, rhs_scale: Any, *,
                      dimension_numbers: tuple, preferred_element_type: np.dtype) -> Any:
  (lhs_contract, rhs_contract), _ = dimension_numbers
  return dg.dot_general(_scaled_operand(lhs, lhs_scale, lhs_contract),
                        _scaled_operand(rhs, rhs_scale, rhs_contract), dimension_numbers,
                        preferred_element_type=preferred_element_type)


mlir.register_lowering(scaled_dot_p, mlir.lower_fun(_scaled_dot_dense, multiple_results=False))


def _batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                dimension_numbers: tuple, **params: Any) -> tuple[Any, int]:
  """Every operand gets the batch dimension in front, as a new leading batch dimension
  of the product."""
  size = next(np.shape(x)[d] for x, d in zip(vals, dims) if d is not batching.not_mapped)
  vals = [batching.bdim_at_front(x, d, size) for x, d in zip(vals, dims)]
  up = lambda ds: tuple(d + 1 for d in ds)
  (lc, rc), (lb, rb) = dimension_numbers
  new_dnums = ((up(lc), up(rc)), ((0, *up(lb)), (0, *up(rb))))
  return scaled_dot_p.bind(*vals, dimension_numbers=new_dnums, **params), 0


batching.primitive_batchers[scaled_dot_p] = _batch_rule
