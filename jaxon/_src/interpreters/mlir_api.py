"""The helpers JAX's `jax.interpreters.mlir` offers to code that writes lowering rules
outside the library (custom primitives, FFI calls): Python values as MLIR attributes,
avals as IR types, constants, custom calls, module printing.

They build on `mlir.py` (jaxon's own lowering) and keep JAX's signatures: functions that
take a `ModuleContext` in JAX take it here too, even where jaxon does not need it.
"""
from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import mlir

# ----------------------------------------------------------------------------- attributes

AttributeHandler = Callable[[Any], ir.Attribute]
_attribute_handlers: dict[type, AttributeHandler] = {}


def register_attribute_handler(type_: type, handler: AttributeHandler) -> None:
  """Teaches `ir_attribute` to convert values of `type_` (and of its subclasses)."""
  _attribute_handlers[type_] = handler


def ir_attribute(val: Any) -> ir.Attribute:
  """A Python value as an MLIR attribute: Python scalars take JAX's default types (int as
  i64, float as f64), NumPy scalars and arrays keep their dtypes, strings, dicts and
  sequences nest; dtypes become type attributes."""
  for t in type(val).__mro__:
    handler = _attribute_handlers.get(t)
    if handler is not None:
      return handler(val)
  raise TypeError(f"No attribute handler defined for type: {type(val)}")


def _scalar_attribute(val: np.generic) -> ir.Attribute:
  """A NumPy scalar as an integer or float attribute of its own type."""
  element_type = mlir.dtype_to_ir_type(val.dtype)
  if isinstance(element_type, ir.IntegerType):
    return ir.IntegerAttr.get(element_type, int(val))
  if isinstance(element_type, ir.FloatType):
    return ir.FloatAttr.get(element_type, float(val))
  raise TypeError(f"Unsupported scalar attribute type: {type(val)}")


def _array_attribute(val: np.ndarray) -> ir.Attribute:
  if 0 in val.strides and val.size > 1:
    raise ValueError("NumPy arrays with zero strides are not supported as MLIR attributes")
  if val.dtype == dtypes.float0:
    val = np.zeros(val.shape, np.bool_)
  return ir.DenseElementsAttr.get(np.ascontiguousarray(val),
                                  type=mlir.dtype_to_ir_type(val.dtype), shape=val.shape)


def _sequence_attribute(val: Sequence[Any]) -> ir.Attribute:
  return ir.ArrayAttr.get([ir_attribute(v) for v in val])


register_attribute_handler(np.ndarray, _array_attribute)
register_attribute_handler(np.generic, _scalar_attribute)
register_attribute_handler(np.dtype, lambda d: ir.TypeAttr.get(mlir.dtype_to_ir_type(d)))
register_attribute_handler(bool, lambda v: _scalar_attribute(np.bool_(v)))
register_attribute_handler(int, lambda v: _scalar_attribute(np.int64(v)))
register_attribute_handler(float, lambda v: _scalar_attribute(np.float64(v)))
register_attribute_handler(str, ir.StringAttr.get)
register_attribute_handler(bytes, ir.StringAttr.get)
register_attribute_handler(dict, lambda d: ir.DictAttr.get(
    {k: ir_attribute(v) for k, v in d.items()}))
register_attribute_handler(list, _sequence_attribute)
register_attribute_handler(tuple, _sequence_attribute)
register_attribute_handler(ir.Attribute, lambda a: a)
register_attribute_handler(ir.Type, lambda t: t)


def i32_attr(i: int) -> ir.IntegerAttr:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), i)


def i64_attr(i: int) -> ir.IntegerAttr:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)


def dense_int_elements(xs: Sequence[int]) -> ir.DenseElementsAttr:
  return ir.DenseIntElementsAttr.get(np.asarray(xs, np.int64))


def dense_int_array(xs: Sequence[int]) -> ir.Attribute:
  return ir.DenseI64ArrayAttr.get(list(xs))


# ----------------------------------------------------------------------------- types, values

# Lowered values nest as lists and tuples of `ir.Value`s (JAX's `IrValues`).
ir_tree_registry = _jax.pytree.PyTreeRegistry(enable_none=False, enable_tuple=True,
                                               enable_namedtuple=False, enable_list=True,
                                               enable_dict=False)


def token_type() -> ir.Type:
  return hlo.TokenType.get()


def aval_to_ir_types(ctx: mlir.ModuleContext | None, aval: ShapedArray) -> tuple[ir.Type, ...]:
  """The IR types representing one value of `aval`: one tensor type for every jaxon
  aval (JAX allows several)."""
  del ctx  # jaxon's types do not depend on the module
  return (mlir.aval_to_ir_type(aval),)


def flatten_ir_values(xs: Iterable[Any]) -> list[ir.Value]:
  return ir_tree_registry.flatten(list(xs))[0]


def flatten_ir_types(xs: Iterable[Any]) -> list[ir.Type]:
  return ir_tree_registry.flatten(list(xs))[0]


def unflatten_ir_values_like_types(xs: Iterable[ir.Value], ys: Sequence[Any]) -> list[Any]:
  """`xs` grouped as the (possibly nested) types `ys` are."""
  _, treedef = ir_tree_registry.flatten(list(ys))
  return treedef.unflatten(list(xs))


def ir_constants(val: Any, *, const_lowering: Mapping | None = None,
                 aval: ShapedArray | None = None) -> tuple[ir.Value, ...]:
  """`val` (a scalar, NumPy array or jaxon Array) as StableHLO constants."""
  if const_lowering is not None and (id(val), aval) in const_lowering:
    lowered = const_lowering[(id(val), aval)]
    return tuple(lowered) if isinstance(lowered, (list, tuple)) else (lowered,)
  dtype = None if aval is None else aval.dtype
  return (mlir.ir_constant(mlir.constant_data(val), dtype),)


def module_to_string(module: ir.Module, enable_debug_info: bool | None = None) -> str:
  out = io.StringIO()
  module.operation.print(file=out, enable_debug_info=bool(enable_debug_info))
  return out.getvalue()


def module_to_bytecode(module: ir.Module) -> bytes:
  out = io.BytesIO()
  module.operation.write_bytecode(file=out)
  return out.getvalue()


# ----------------------------------------------------------------------------- custom calls


def _layouts_attr(layouts: Sequence[Sequence[int]]) -> ir.ArrayAttr:
  return ir.ArrayAttr.get([ir.DenseIntElementsAttr.get(
      np.atleast_1d(np.asarray(layout, np.int64)), type=ir.IndexType.get())
      for layout in layouts])


def custom_call(call_target_name: str, *, result_types: Sequence[ir.Type],
                operands: Sequence[ir.Value],
                backend_config: str | bytes | dict[str, ir.Attribute] | None = "",
                has_side_effect: bool = False,
                result_shapes: Sequence[ir.Value] | None = None,
                called_computations: Sequence[str] = (), api_version: int = 2,
                operand_output_aliases: dict[int, int] | None = None,
                operand_layouts: Sequence[Sequence[int]] | None = None,
                result_layouts: Sequence[Sequence[int]] | None = None,
                extra_attributes: dict[str, ir.Attribute] | None = None) -> hlo.CustomCallOp:
  """A `stablehlo.custom_call` of `call_target_name`. Layouts are minor-to-major. A dict
  `backend_config` (the typed FFI's attributes) goes to the `mhlo.backend_config`
  attribute, with the string config left empty: StableHLO's own is a string, and XLA
  reads the dict from there and calls the target with the typed FFI."""
  if isinstance(backend_config, dict):
    config_attr = ir.StringAttr.get("")
    api_version = 1
  elif backend_config is None or isinstance(backend_config, (str, bytes)):
    config_attr = ir.StringAttr.get(backend_config or "")
  else:
    raise ValueError(f"custom_call backend_config unexpected type: {backend_config!r}")
  operands = list(operands)
  attributes = {
      "call_target_name": ir.StringAttr.get(call_target_name),
      "has_side_effect": ir.BoolAttr.get(has_side_effect),
      "backend_config": config_attr,
      "api_version": i32_attr(api_version),
      "called_computations": ir.ArrayAttr.get(
          [ir.FlatSymbolRefAttr.get(name) for name in called_computations]),
  }
  if operand_output_aliases is not None:
    attributes["output_operand_aliases"] = ir.ArrayAttr.get([
        hlo.OutputOperandAlias.get(
            output_tuple_indices=[out] if len(result_types) > 1 else [],
            operand_index=operand, operand_tuple_indices=[])
        for operand, out in operand_output_aliases.items()])
  if extra_attributes:
    attributes.update(extra_attributes)
  if result_shapes is not None:
    attributes["indices_of_shape_operands"] = ir.DenseIntElementsAttr.get(
        np.arange(len(operands), len(operands) + len(result_shapes), dtype=np.int64))
    if operand_layouts is not None:
      operand_layouts = [*operand_layouts, *[(0,)] * len(result_shapes)]
    operands += list(result_shapes)
  if operand_layouts is not None:
    attributes["operand_layouts"] = _layouts_attr(operand_layouts)
  if result_layouts is not None:
    if len(result_layouts) != len(result_types):
      raise ValueError(f"custom_call {call_target_name}: {len(result_layouts)} result "
                       f"layouts for {len(result_types)} results")
    attributes["result_layouts"] = _layouts_attr(result_layouts)
  op = hlo.CustomCallOp.build_generic(results=list(result_types), operands=operands,
                                      attributes=attributes)
  if isinstance(backend_config, dict):
    op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(backend_config)
  return op
