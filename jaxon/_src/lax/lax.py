"""Elementwise primitives, dtype conversion and broadcasting.

Every elementwise primitive is one row of a table: its name, the dtypes it accepts, its
StableHLO op; `_unary`/`_binary` build the primitive, its abstract eval and its lowering.
Operands of a binary op have equal dtypes and shapes that broadcast (rank-0 operands, and
size-1 dimensions of equal-rank operands).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import mlir
from jaxon._src.lax import utils
from jaxon._src.xla.array import Array, device_put_numpy

_float = (np.floating,)
_complex = (np.complexfloating,)
_inexact = (np.inexact,)
_int = (np.integer,)
_bool = (np.bool_,)
_num = (np.number,)
_any = (np.number, np.bool_)
_int_or_bool = (np.integer, np.bool_)


# ----------------------------------------------------------------------------- lowering helpers

def broadcast_to_out(ctx: mlir.LoweringRuleContext, args: Sequence[ir.Value]) -> list[ir.Value]:
  """Broadcasts rank-0 and size-1 operands of an elementwise op to the output shape."""
  out_shape = ctx.avals_out[0].shape
  result = []
  for x, aval in zip(args, ctx.avals_in):
    if aval.shape != out_shape:
      ty = mlir.aval_to_ir_type(aval.update(shape=out_shape))
      x = hlo.broadcast_in_dim(ty, x, list(range(len(out_shape))) if aval.shape else [])
    result.append(x)
  return result


def _nary_lowering(op: Callable[..., ir.Value]) -> mlir.LoweringRule:
  def rule(ctx: mlir.LoweringRuleContext, *args: ir.Value) -> list[ir.Value]:
    return [op(*broadcast_to_out(ctx, args))]
  return rule


# ----------------------------------------------------------------------------- elementwise

def _unary(name: str, accepted: Sequence[Any], op: Callable[..., ir.Value] | None,
           dtype_rule: Callable[..., Any] | None = None) -> core.Primitive:
  def shape_rule(x: ShapedArray, **params: Any) -> tuple[int, ...]:
    utils.check_dtypes(name, accepted, x)
    return x.shape
  prim = utils.standard_primitive(name, shape_rule, dtype_rule or utils.input_dtype)
  if op is not None:
    mlir.register_lowering(prim, _nary_lowering(op))
  return prim


def _binary(name: str, accepted: Sequence[Any], op: Callable[..., ir.Value] | None,
            dtype_rule: Callable[..., Any] | None = None) -> core.Primitive:
  def shape_rule(*avals: ShapedArray, **params: Any) -> tuple[int, ...]:
    utils.check_dtypes(name, accepted, *avals)
    utils.check_same_dtypes(name, *avals)
    return utils.broadcasting_shape(name, *avals)
  prim = utils.standard_primitive(name, shape_rule, dtype_rule or utils.input_dtype)
  if op is not None:
    mlir.register_lowering(prim, _nary_lowering(op))
  return prim


neg_p = _unary("neg", _num, hlo.negate)
sin_p = _unary("sin", _inexact, hlo.sine)
cos_p = _unary("cos", _inexact, hlo.cosine)
tanh_p = _unary("tanh", _inexact, hlo.tanh)
exp_p = _unary("exp", _inexact, hlo.exponential)
log_p = _unary("log", _inexact, hlo.log)

add_p = _binary("add", _any, hlo.add)
sub_p = _binary("sub", _num, hlo.subtract)
mul_p = _binary("mul", _any, hlo.multiply)
div_p = _binary("div", _num, hlo.divide)
max_p = _binary("max", _any, hlo.maximum)
min_p = _binary("min", _any, hlo.minimum)


def neg(x: Any) -> Any:
  r"""Elementwise negation: :math:`-x`."""
  return neg_p.bind(x)


def sin(x: Any) -> Any:
  r"""Elementwise sine: :math:`\sin(x)`."""
  return sin_p.bind(x)


def cos(x: Any) -> Any:
  r"""Elementwise cosine: :math:`\cos(x)`."""
  return cos_p.bind(x)


def tanh(x: Any) -> Any:
  r"""Elementwise hyperbolic tangent."""
  return tanh_p.bind(x)


def exp(x: Any) -> Any:
  r"""Elementwise exponential: :math:`e^x`."""
  return exp_p.bind(x)


def log(x: Any) -> Any:
  r"""Elementwise natural logarithm."""
  return log_p.bind(x)


def add(x: Any, y: Any) -> Any:
  r"""Elementwise addition: :math:`x + y`. Operands must have equal dtypes."""
  return add_p.bind(x, y)


def sub(x: Any, y: Any) -> Any:
  r"""Elementwise subtraction: :math:`x - y`."""
  return sub_p.bind(x, y)


def mul(x: Any, y: Any) -> Any:
  r"""Elementwise multiplication: :math:`x \times y`."""
  return mul_p.bind(x, y)


def div(x: Any, y: Any) -> Any:
  r"""Elementwise division; integer division rounds towards zero."""
  return div_p.bind(x, y)


def max(x: Any, y: Any) -> Any:
  r"""Elementwise maximum (NaN-propagating)."""
  return max_p.bind(x, y)


def min(x: Any, y: Any) -> Any:
  r"""Elementwise minimum (NaN-propagating)."""
  return min_p.bind(x, y)


# ----------------------------------------------------------------------------- convert_element_type

def _convert_element_type_dtype_rule(operand: ShapedArray, *, new_dtype: np.dtype,
                                     weak_type: bool) -> np.dtype:
  return new_dtype


convert_element_type_p = utils.standard_primitive(
    "convert_element_type", lambda operand, **_: operand.shape,
    _convert_element_type_dtype_rule,
    lambda operand, *, new_dtype, weak_type: weak_type)


def _convert_element_type_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                                   new_dtype: np.dtype, weak_type: bool) -> list[ir.Value]:
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if aval_in.dtype == aval_out.dtype:
    return [operand]
  if dtypes.is_complex(aval_in.dtype) and not dtypes.is_complex(new_dtype):
    operand = hlo.real(operand)
  if new_dtype == np.bool_ and aval_in.dtype != np.bool_:
    zero = mlir.full_like_aval(0, aval_in.update(dtype=aval_in.dtype if not dtypes.is_complex(
        aval_in.dtype) else aval_out.dtype))
    return [compare_hlo(operand, zero, "NE", aval_in.dtype)]
  return [hlo.convert(mlir.aval_to_ir_type(aval_out), operand)]


mlir.register_lowering(convert_element_type_p, _convert_element_type_lowering)


def compare_hlo(x: ir.Value, y: ir.Value, direction: str, dtype: np.dtype) -> ir.Value:
  """`stablehlo.compare` with the comparison type XLA needs for `dtype`."""
  if dtypes.is_inexact(dtype):
    kind = "FLOAT"
  elif dtypes.issubdtype(dtype, np.unsignedinteger) or dtype == np.bool_:
    kind = "UNSIGNED"
  else:
    kind = "SIGNED"
  return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get(kind))


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
  """Converts `operand` to `new_dtype` (the result is strongly typed)."""
  return _convert_element_type(operand, new_dtype, weak_type=False)


def _convert_element_type(operand: Any, new_dtype: Any = None, weak_type: bool = False) -> Any:
  """Converts `operand` to `new_dtype` with the given weak type.

  Python and NumPy scalars are converted on the host, so constants stay constants (and
  print inline in jaxprs); converting an array to its own type is a no-op.
  """
  old_dtype = dtypes.dtype(operand, canonicalize=True)
  new_dtype = old_dtype if new_dtype is None else dtypes.canonicalize_dtype(new_dtype)
  weak_type = bool(weak_type)
  if isinstance(operand, (core.Tracer, Array)):
    if old_dtype == new_dtype and operand.aval.weak_type == weak_type:
      return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type)
  host = np.asarray(operand)
  if dtypes.is_complex(host.dtype) and not dtypes.is_complex(new_dtype):
    host = host.real
  value = host.astype(new_dtype)
  if weak_type:
    return device_put_numpy(value, weak_type=True)
  return value


# ----------------------------------------------------------------------------- broadcast_in_dim

def _broadcast_in_dim_shape_rule(operand: ShapedArray, *, shape: tuple[int, ...],
                                 broadcast_dimensions: tuple[int, ...],
                                 sharding: Any) -> tuple[int, ...]:
  if len(broadcast_dimensions) != operand.ndim:
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to operand "
                    f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim "
                    f"{operand.ndim}.")
  if len(set(broadcast_dimensions)) != len(broadcast_dimensions) or any(
      not 0 <= d < len(shape) for d in broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions {broadcast_dimensions} must be "
                    f"distinct dimensions of the result shape {shape}.")
  if list(broadcast_dimensions) != sorted(broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing; got "
                    f"{broadcast_dimensions}.")
  for i, d in enumerate(broadcast_dimensions):
    if operand.shape[i] not in (1, shape[d]):
      raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be equal "
                      f"to their corresponding dimensions in the target broadcast shape; got "
                      f"operand of shape {operand.shape}, target broadcast shape {shape}, "
                      f"broadcast_dimensions {broadcast_dimensions}.")
  return shape


broadcast_in_dim_p = utils.standard_primitive(
    "broadcast_in_dim", _broadcast_in_dim_shape_rule, utils.input_dtype)


def _broadcast_in_dim_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *,
                               shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...],
                               sharding: Any) -> list[ir.Value]:
  return [hlo.broadcast_in_dim(mlir.aval_to_ir_type(ctx.avals_out[0]), operand,
                               list(broadcast_dimensions))]


mlir.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lowering)


def broadcast_in_dim(operand: Any, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int]) -> Any:
  """Broadcasts `operand` to `shape`; operand dimension i becomes result dimension
  `broadcast_dimensions[i]`."""
  shape = utils.canonicalize_shape(shape, "of broadcast_in_dim")
  broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
  if np.shape(operand) == shape and broadcast_dimensions == tuple(range(len(shape))) and \
      isinstance(operand, (core.Tracer, Array)):
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape,
                                 broadcast_dimensions=broadcast_dimensions, sharding=None)


def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
  """Adds leading dimensions of the given `sizes`."""
  ndim = np.ndim(operand)
  return broadcast_in_dim(operand, tuple(sizes) + np.shape(operand),
                          tuple(range(len(sizes), len(sizes) + ndim)))


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
  """An array of `shape` filled with `fill_value`."""
  shape = utils.canonicalize_shape(shape, "of full")
  if np.shape(fill_value):
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                    f"{np.shape(fill_value)}.")
  weak = dtype is None and dtypes.is_weakly_typed(fill_value)
  dtype = dtypes.canonicalize_dtype(dtype or dtypes.dtype(fill_value, canonicalize=True))
  return broadcast(_convert_element_type(fill_value, dtype, weak), shape)


def zeros_like_array(x: Any) -> Any:
  """Zeros of `x`'s shape and dtype (the seed's `lax.zeros_like_array`)."""
  aval = core.get_aval(x)
  return full(aval.shape, 0, aval.dtype)
