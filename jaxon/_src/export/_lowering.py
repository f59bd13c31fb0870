"""The StableHLO module of an exported program, laid out as JAX's export lays it out.

`main` takes the program's arguments (their symbolic dimensions as dynamic ones `?`) and
has the constants inlined. A shape-polymorphic module (attribute
`jax.uses_shape_polymorphism = true`) first computes each dimension variable from an
argument dimension that determines it (`b` from a dimension `b`, or from `2*b`), then checks
the other dimensions, the divisibility this needs and `b >= 1` with `shape_assertion` custom
calls carrying JAX's messages, so a consumer that refines the shapes (TF's XlaCallModule,
`_jax.mlir.refine_polymorphic_shapes`) rejects bad shapes with those messages.

A program exported with shardings is an SPMD module as JAX's: `mhlo.num_partitions` is the
number of devices of its mesh, declared as `sdy.mesh @mesh`, and the arguments and results
given a sharding carry it as `sdy.sharding` attributes.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.export import shape_poly
from jaxon._src.interpreters import mlir


class DimSource(NamedTuple):
  """Where a dimension variable's value is read: `arg.shape[axis] == coeff * var + offset`."""
  arg: int
  axis: int
  coeff: int
  offset: int


def _linear_in_one_variable(dim: Any) -> tuple[str, int, int] | None:
  """(var, coeff, offset) if `dim == coeff * var + offset`, else None."""
  if not shape_poly.is_symbolic_dim(dim):
    return None
  variables = dim.variables()
  if len(variables) != 1:
    return None
  (var,) = variables
  coeff = dim.terms.get(((("var", var), 1),))
  if coeff is None or set(dim.terms) - {((("var", var), 1),), ()}:
    return None
  return var, coeff, dim.terms.get((), 0)


def dim_sources(in_avals: Sequence[ShapedArray]) -> dict[str, DimSource]:
  """For each dimension variable of `in_avals`, the first argument dimension that gives it
  (a variable alone first, then a variable times a constant plus a constant)."""
  sources: dict[str, DimSource] = {}
  all_vars: set[str] = set()
  for want_simple in (True, False):
    for i, aval in enumerate(in_avals):
      for axis, d in enumerate(aval.shape):
        if shape_poly.is_symbolic_dim(d):
          all_vars |= d.variables()
        linear = _linear_in_one_variable(d)
        if linear is None or linear[0] in sources:
          continue
        var, coeff, offset = linear
        if want_simple == (coeff == 1 and offset == 0):
          sources[var] = DimSource(i, axis, coeff, offset)
  missing = sorted(all_vars - set(sources))
  if missing:
    raise ValueError(f"Cannot solve for values of dimension variables {missing}: each "
                     "dimension variable must appear alone, or times a constant plus a "
                     "constant, as some dimension of an argument (got argument shapes "
                     f"{[a.str_short() for a in in_avals]}).")
  return sources


def shape_spec_text(in_avals: Sequence[ShapedArray]) -> str:
  return ",".join(f"args[{i}].shape = ({', '.join(map(str, a.shape))}{',' if a.ndim == 1 else ''})"
                  for i, a in enumerate(in_avals))


class Spmd(NamedTuple):
  """How an exported program is laid out over devices: its mesh (axis names, axis sizes,
  number of devices) and a Shardy attribute (or None) for each argument and result."""
  mesh: tuple[Sequence[str], Sequence[int], int]
  arg_shardings: Sequence[str | None]
  result_shardings: Sequence[str | None]


def lower_exported(closed: ClosedJaxpr, name: str, n_platforms: int,
                   in_avals: Sequence[ShapedArray], spmd: Spmd | None = None) -> ir.Module:
  context = mlir.make_ir_context()
  with context, ir.Location.unknown():
    module = ir.Module.create()
    module.operation.attributes["sym_name"] = ir.StringAttr.get(f"jit_{mlir._sanitize(name)}")
    i32 = ir.IntegerType.get_signless(32)
    module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, 1)
    module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, 1)
    polymorphic = not all(core.is_constant_shape(a.shape) for a in in_avals)
    if polymorphic:
      module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(True)
    platform_args = [ir.RankedTensorType.get([], i32)] if n_platforms > 1 else []
    in_types = platform_args + [mlir.aval_to_ir_type(a) for a in in_avals]
    out_types = [mlir.aval_to_ir_type(a) for a in closed.out_avals]
    with ir.InsertionPoint(module.body):
      main = func.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      main.attributes["sym_visibility"] = ir.StringAttr.get("public")
      ctx = mlir.ModuleContext(module, name)
      if spmd is not None:
        mlir.annotate_spmd(ctx, main, spmd.mesh, [None] * len(platform_args)
                           + list(spmd.arg_shardings), spmd.result_shardings)
      if platform_args:
        attrs = list(ir.ArrayAttr(main.arg_attrs)) if spmd is not None else (
            [ir.DictAttr.get({})] * len(in_types))
        attrs[0] = ir.DictAttr.get(
            {"jax.global_constant": ir.StringAttr.get("_platform_index")})
        main.arg_attrs = ir.ArrayAttr.get(attrs)
      block = main.add_entry_block()
      with ir.InsertionPoint(block):
        args = list(block.arguments)[len(platform_args):]
        dim_values = _dim_var_values(in_avals, args) if polymorphic else {}
        with mlir.dim_var_values(dim_values):
          outs = mlir.closed_jaxpr_subcomp(ctx, closed, args)
        func.ReturnOp(outs)
  return module


def _dim_var_values(in_avals: Sequence[ShapedArray], args: Sequence[ir.Value]
                    ) -> dict[str, ir.Value]:
  sources = dim_sources(in_avals)
  spec = shape_spec_text(in_avals)
  sizes: dict[tuple[int, int], ir.Value] = {}

  def size(i: int, axis: int) -> ir.Value:
    if (i, axis) not in sizes:
      sizes[i, axis] = hlo.get_dimension_size(args[i], axis)
    return sizes[i, axis]

  values: dict[str, ir.Value] = {}
  obtained = []
  for var, src in sources.items():
    d = size(src.arg, src.axis)
    if src.offset:
      d = hlo.subtract(d, mlir.ir_constant(np.int32(src.offset)))
    if src.coeff != 1:
      _assert(_compare(hlo.remainder(d, mlir.ir_constant(np.int32(src.coeff))),
                       mlir.ir_constant(np.int32(0)), "EQ"),
              [size(src.arg, src.axis)],
              f"Input shapes do not match the polymorphic shapes specification. Division "
              f"had remainder when computing the value of '{var}' from "
              f"args[{src.arg}].shape[{src.axis}] (= {{0}}). Using the following "
              f"polymorphic shapes specifications: {spec}.")
      d = hlo.divide(d, mlir.ir_constant(np.int32(src.coeff)))
    values[var] = d
    obtained.append(f"'{var}' = {{{len(obtained)}}} from specification "
                    f"'{in_avals[src.arg].shape[src.axis]}' for dimension "
                    f"args[{src.arg}].shape[{src.axis}]")
  obtained_text = ", ".join(obtained)
  var_list = list(values.values())
  for var, value in values.items():
    _assert(_compare(value, mlir.ir_constant(np.int32(1)), "GE"), var_list,
            f"Input shapes do not match the polymorphic shapes specification. Expected "
            f"value >= 1 for dimension variable '{var}'. Using the following polymorphic "
            f"shapes specifications: {spec}. Obtained dimension variables: "
            f"{obtained_text}.")
  with mlir.dim_var_values(values):
    for i, aval in enumerate(in_avals):
      for axis, d in enumerate(aval.shape):
        src = None if not shape_poly.is_symbolic_dim(d) else d
        if src is None or any((s.arg, s.axis) == (i, axis) for s in sources.values()):
          continue
        n = len(var_list)
        _assert(_compare(size(i, axis), mlir.dim_value(d), "EQ"),
                [*var_list, size(i, axis), mlir.dim_value(d)],
                f"Input shapes do not match the polymorphic shapes specification. Found "
                f"inconsistency between dimension size args[{i}].shape[{axis}] (= {{{n}}}) "
                f"and the specification '{d}' (= {{{n + 1}}}). Using the following "
                f"polymorphic shapes specifications: {spec}. Obtained dimension "
                f"variables: {obtained_text}.")
  return values


def _compare(a: ir.Value, b: ir.Value, direction: str) -> ir.Value:
  return hlo.compare(a, b, comparison_direction=hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get("SIGNED"))


def _assert(ok: ir.Value, values: Sequence[ir.Value], message: str) -> None:
  """A `shape_assertion` custom call: `message` with `{i}` the i-th of `values`."""
  op = hlo.CustomCallOp([], [ok, *values], call_target_name="shape_assertion",
                        has_side_effect=True)
  i32 = ir.IntegerType.get_signless(32)
  op.attributes["api_version"] = ir.IntegerAttr.get(i32, 2)
  op.attributes["error_message"] = ir.StringAttr.get(message)
