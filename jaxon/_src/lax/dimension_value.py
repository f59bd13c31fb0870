"""`dim_as_value`: a symbolic dimension (shape-polymorphic export) used as an integer value,
as in `x.sum(0) / x.shape[0]` or `jnp.full((b,), b)`.

The primitive takes no operands; its `dim` param is the symbolic dimension, and its result
is a weakly typed default int (int32, int64 with x64), as JAX's, so that `x * x.shape[0]`
keeps `x`'s dtype. It lowers to the computation of the dimension from the module's
dimension variables. When a saved program is read back with values for those variables,
the param is an int, and evaluation gives it as a constant.

Importing this module teaches symbolic dimensions to turn into values (`shape_poly`'s
hook): a `DimExpr` met by an array operation becomes `dim_as_value[dim=...]`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.export import shape_poly
from jaxon._src.interpreters import mlir
from jaxon._src.xla.array import device_put_numpy

dim_as_value_p = core.Primitive("dim_as_value")


def _aval() -> core.ShapedArray:
  return core.ShapedArray((), dtypes.default_int_dtype(), weak_type=True)


def dimension_as_value(d: Any) -> Any:
  """`d` (an int or a symbolic dimension) as a weakly typed integer scalar."""
  if not core.is_symbolic_dim(d):
    return np.array(d, dtypes.default_int_dtype())
  return dim_as_value_p.bind(dim=d)


def _impl(*, dim: Any) -> Any:
  if core.is_symbolic_dim(dim):
    raise core.ConcretizationTypeError(
        None, f"the symbolic dimension {dim} has no value outside an exported program")
  return device_put_numpy(np.array(dim, dtypes.default_int_dtype()), weak_type=True)


def _lowering(ctx: mlir.LoweringRuleContext, *, dim: Any) -> list:
  from jaxlib.mlir.dialects import stablehlo as hlo
  return [hlo.convert(mlir.aval_to_ir_type(ctx.avals_out[0]), mlir.dim_value(dim))]


dim_as_value_p.def_impl(_impl)
dim_as_value_p.def_abstract_eval(lambda *, dim: _aval())
mlir.register_lowering(dim_as_value_p, _lowering)
shape_poly.register_dimension_as_value(dimension_as_value)
