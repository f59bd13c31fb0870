"""Reductions over axes: reduce_sum/prod/max/min/and/or/xor, argmax/argmin, cumulative
reductions, and windowed reductions."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import mlir
from jaxon._src.lax import utils


def _reduce_shape_rule(operand: ShapedArray, *, axes: tuple[int, ...]) -> tuple[int, ...]:
  if len(set(axes)) != len(axes) or any(not 0 <= a < operand.ndim for a in axes):
    raise ValueError(f"reduction axes {axes} must be distinct dimensions of an operand of "
                     f"shape {operand.shape}")
  return tuple(d for i, d in enumerate(operand.shape) if i not in axes)


def _reduce_lowering(combine: Callable[[ir.Value, ir.Value], ir.Value], identity: Callable
                     ) -> mlir.LoweringRule:
  """A lowering of `stablehlo.reduce` with scalar body `combine` and init `identity(dtype)`."""
  def rule(ctx: mlir.LoweringRuleContext, operand: ir.Value, *, axes: tuple[int, ...]
           ) -> list[ir.Value]:
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    init = mlir.ir_constant(np.array(identity(aval_in.dtype), aval_in.dtype))
    op = hlo.ReduceOp([mlir.aval_to_ir_type(aval_out)], [operand], [init],
                      ir.DenseI64ArrayAttr.get(list(axes)))
    scalar = mlir.aval_to_ir_type(aval_in.update(shape=()))
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
      hlo.return_([combine(*block.arguments)])
    return op.results
  return rule


def _reduction(name: str, accepted: Sequence[Any], combine: Callable, identity: Callable
               ) -> core.Primitive:
  def shape_rule(operand: ShapedArray, *, axes: tuple[int, ...]) -> tuple[int, ...]:
    utils.check_dtypes(name, accepted, operand)
    return _reduce_shape_rule(operand, axes=axes)
  prim = utils.standard_primitive(name, shape_rule, utils.input_dtype)
  mlir.register_lowering(prim, _reduce_lowering(combine, identity))
  return prim


reduce_sum_p = _reduction("reduce_sum", (np.number, np.bool_), hlo.add, lambda dt: 0)


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
  """Sums `operand` over `axes`."""
  return reduce_sum_p.bind(operand, axes=tuple(int(a) for a in axes))
