"""The windowed select primitives behind max/min pooling's derivatives in JAX:

- `select_and_gather_add(tangents, operand)`: per window, the tangent at the element the
  `select_prim` (`ge` for max, `le` for min) picks: the JVP of `reduce_window_max/min`.
- `select_and_scatter_add(source, operand)`: its transpose; each output element's source
  value is added at the element its window picked.
- `select_and_scatter(operand, source, init_value)`: XLA's general SelectAndScatter, with
  traced select and scatter computations; the other two lower through it or through a
  variadic `reduce_window`.

The pick is the first element in the window (row-major) that `select_prim` prefers over all
others, so ties go to the first, as in XLA and JAX.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax, reductions, shape_ops, slicing, utils, windowed_reductions

Padding = tuple[tuple[int, int], ...]


def _check_window(name: str, operand: ShapedArray, window_dimensions: tuple[int, ...],
                  window_strides: tuple[int, ...], padding: Padding) -> None:
  for arg, value in (("window_dimensions", window_dimensions),
                     ("window_strides", window_strides), ("padding", padding)):
    if len(value) != operand.ndim:
      raise TypeError(f"{name}: {arg} {value} must have one entry per dimension of the "
                      f"operand, whose shape is {operand.shape}.")


def _scalar_jaxpr(fun: Callable[[Any, Any], Any], dtype: np.dtype
                  ) -> tuple[core.Jaxpr, tuple[Any, ...]]:
  scalar = ShapedArray((), dtype)
  with core.set_current_trace(core.EvalTrace()):
    jaxpr, consts = pe.trace_to_jaxpr(lambda x, y: [fun(x, y)], [scalar, scalar])
  return jaxpr, tuple(consts)


def _identity_of(select_prim: core.Primitive, dtype: np.dtype) -> Any:
  """The operand value no window picks: the padding of a max (min) selection."""
  get = reductions.get_max_identity if select_prim is lax.ge_p else \
      reductions.get_min_identity
  return np.array(get(dtype), dtype)


def _check_select_prim(name: str, select_prim: core.Primitive) -> None:
  if select_prim not in (lax.ge_p, lax.le_p):
    raise TypeError(f"{name}: select_prim must be lax.ge_p (max) or lax.le_p (min), got "
                    f"{select_prim}.")


# ----------------------------------------------------------------------------- select_and_scatter

def _select_and_scatter(operand: Any, select: Callable[[Any, Any], Any],
                        window_dimensions: Sequence[int], window_strides: Sequence[int],
                        padding: Sequence[tuple[int, int]], source: Any, init_value: Any,
                        scatter: Callable[[Any, Any], Any]) -> Any:
  """XLA's SelectAndScatter: per window of `operand`, `select` (a >= b style, over scalars)
  picks one element; the window's `source` value is combined with `scatter` (from
  `init_value`) into the output at that element."""
  dtype = dtypes.dtype(init_value)
  select_jaxpr, select_consts = _scalar_jaxpr(select, dtype)
  scatter_jaxpr, scatter_consts = _scalar_jaxpr(scatter, dtype)
  return select_and_scatter_p.bind(
      operand, source, init_value, select_jaxpr=select_jaxpr, select_consts=select_consts,
      scatter_jaxpr=scatter_jaxpr, scatter_consts=scatter_consts,
      window_dimensions=tuple(window_dimensions), window_strides=tuple(window_strides),
      padding=tuple(tuple(p) for p in padding))


def _select_and_scatter_shape_rule(operand: ShapedArray, source: ShapedArray,
                                   init_value: ShapedArray, *, window_dimensions: tuple,
                                   window_strides: tuple, padding: Padding,
                                   **jaxprs: Any) -> tuple[int, ...]:
  _check_window("select_and_scatter", operand, window_dimensions, window_strides, padding)
  return operand.shape


select_and_scatter_p = utils.standard_primitive(
    "select_and_scatter", _select_and_scatter_shape_rule, utils.input_dtype)


def _fill_region(ctx: mlir.LoweringRuleContext, region: ir.Region, scalar: ir.Type,
                 jaxpr: core.Jaxpr, consts: Sequence[Any]) -> None:
  block = region.blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    const_values = [mlir.ir_constant(mlir.constant_data(c)) for c in consts]
    hlo.return_(mlir.jaxpr_subcomp(ctx.module_context, jaxpr, const_values,
                                   list(block.arguments)))


def _select_and_scatter_lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value,
                                 source: ir.Value, init_value: ir.Value, *,
                                 select_jaxpr: core.Jaxpr, select_consts: tuple,
                                 scatter_jaxpr: core.Jaxpr, scatter_consts: tuple,
                                 window_dimensions: tuple, window_strides: tuple,
                                 padding: Padding) -> list[ir.Value]:
  scalar = mlir.aval_to_ir_type(ctx.avals_in[0].update(shape=()))
  pads = np.asarray(padding, np.int64).reshape(len(window_dimensions), 2)
  op = hlo.SelectAndScatterOp(
      mlir.aval_to_ir_type(ctx.avals_out[0]), operand, source, init_value,
      window_dimensions=list(window_dimensions), window_strides=list(window_strides),
      padding=ir.DenseIntElementsAttr.get(pads))
  _fill_region(ctx, op.select, scalar, select_jaxpr, select_consts)
  _fill_region(ctx, op.scatter, scalar, scatter_jaxpr, scatter_consts)
  return [op.result]


mlir.register_lowering(select_and_scatter_p, _select_and_scatter_lowering)


def _select_and_scatter_batch_rule(vals: Sequence[Any], dims: Sequence[int | None],
                                   **params: Any) -> tuple[Any, int]:
  """The batch dimension (moved to the front) gets a window of one."""
  operand, source, init_value = vals
  if dims[2] is not None:
    raise NotImplementedError("vmap of select_and_scatter over its init_value is not "
                              "supported; batch the operand and source only.")
  size = next(np.shape(v)[d] for v, d in zip(vals, dims) if d is not None)
  operand = batching.bdim_at_front(operand, dims[0], size)
  source = batching.bdim_at_front(source, dims[1], size)
  return select_and_scatter_p.bind(operand, source, init_value,
                                   **_with_front_batch_window(params)), 0


def _with_front_batch_window(params: dict[str, Any]) -> dict[str, Any]:
  out = dict(params, window_dimensions=(1,) + params["window_dimensions"],
             window_strides=(1,) + params["window_strides"],
             padding=((0, 0),) + params["padding"])
  for key in ("base_dilation", "window_dilation"):
    if key in params:
      out[key] = (1,) + params[key]
  return out


batching.primitive_batchers[select_and_scatter_p] = _select_and_scatter_batch_rule


# ------------------------------------------------------------------- select_and_scatter_add

def _select_and_scatter_add(source: Any, operand: Any, select_prim: core.Primitive,
                            window_dimensions: Sequence[int], window_strides: Sequence[int],
                            padding: Sequence[tuple[int, int]]) -> Any:
  _check_select_prim("select_and_scatter_add", select_prim)
  return select_and_scatter_add_p.bind(
      source, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
      window_strides=tuple(window_strides), padding=tuple(tuple(p) for p in padding))


def _select_and_scatter_add_shape_rule(source: ShapedArray, operand: ShapedArray, *,
                                       select_prim: core.Primitive, window_dimensions: tuple,
                                       window_strides: tuple, padding: Padding
                                       ) -> tuple[int, ...]:
  _check_window("select_and_scatter_add", operand, window_dimensions, window_strides, padding)
  utils.check_same_dtypes("select_and_scatter_add", source, operand)
  expected = windowed_reductions.reduce_window_shape(
      "select_and_scatter_add", operand.shape, window_dimensions=window_dimensions,
      window_strides=window_strides, padding=padding, base_dilation=(1,) * operand.ndim,
      window_dilation=(1,) * operand.ndim)
  if source.shape != expected:
    raise TypeError(f"select_and_scatter_add: source has shape {source.shape}, but the "
                    f"operand's windows give {expected}.")
  return operand.shape


select_and_scatter_add_p = utils.standard_primitive(
    "select_and_scatter_add", _select_and_scatter_add_shape_rule, utils.input_dtype)


def _select_and_scatter_add_by_select_and_scatter(
    source: Any, operand: Any, *, select_prim: core.Primitive, window_dimensions: tuple,
    window_strides: tuple, padding: Padding) -> Any:
  """Padding is applied to the operand explicitly (with the value no window picks) and
  sliced off after, as JAX does on CPU, where XLA's padded SelectAndScatter misbehaves."""
  dtype = dtypes.dtype(operand)
  padded = shape_ops.pad(operand, _identity_of(select_prim, dtype),
                         [(lo, hi, 0) for lo, hi in padding])
  scatter = lax.bitwise_or if dtype == np.bool_ else lax.add
  out = _select_and_scatter(padded, lambda x, y: select_prim.bind(x, y), window_dimensions,
                            window_strides, ((0, 0),) * len(padding), source,
                            np.zeros((), dtype), scatter)
  starts = [lo for lo, _ in padding]
  return slicing.slice(out, starts, [s + d for s, d in zip(starts, np.shape(operand))])


mlir.register_lowering(select_and_scatter_add_p, mlir.lower_fun(
    _select_and_scatter_add_by_select_and_scatter, multiple_results=False))


def _select_and_scatter_add_jvp(primals: Sequence[Any], tangents: Sequence[Any],
                                **params: Any) -> tuple[Any, Any]:
  """Linear in `source`; the pick is piecewise constant in `operand`."""
  (source, operand), (g_source, _) = primals, tangents
  out = select_and_scatter_add_p.bind(source, operand, **params)
  if type(g_source) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, select_and_scatter_add_p.bind(g_source, operand, **params)


def _select_and_scatter_add_transpose(ct: Any, source: Any, operand: Any, *,
                                      select_prim: core.Primitive, window_dimensions: tuple,
                                      window_strides: tuple, padding: Padding) -> list[Any]:
  if ad.is_undefined_primal(operand):
    raise NotImplementedError("select_and_scatter_add is not linear in its operand.")
  ones = (1,) * len(window_dimensions)
  return [_select_and_gather_add(ct, operand, select_prim, window_dimensions, window_strides,
                                 padding, ones, ones), None]


def _two_operand_batch_rule(prim: core.Primitive) -> Callable[..., tuple[Any, int]]:
  def rule(vals: Sequence[Any], dims: Sequence[int | None], **params: Any
           ) -> tuple[Any, int]:
    size = next(np.shape(v)[d] for v, d in zip(vals, dims) if d is not None)
    a, b = (batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims))
    return prim.bind(a, b, **_with_front_batch_window(params)), 0
  return rule


ad.primitive_jvps[select_and_scatter_add_p] = _select_and_scatter_add_jvp
ad.primitive_transposes[select_and_scatter_add_p] = _select_and_scatter_add_transpose
batching.primitive_batchers[select_and_scatter_add_p] = _two_operand_batch_rule(
    select_and_scatter_add_p)


# -------------------------------------------------------------------- select_and_gather_add

def _select_and_gather_add(tangents: Any, operand: Any, select_prim: core.Primitive,
                           window_dimensions: Sequence[int], window_strides: Sequence[int],
                           padding: Sequence[tuple[int, int]], base_dilation: Sequence[int],
                           window_dilation: Sequence[int]) -> Any:
  _check_select_prim("select_and_gather_add", select_prim)
  return select_and_gather_add_p.bind(
      tangents, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
      window_strides=tuple(window_strides), padding=tuple(tuple(p) for p in padding),
      base_dilation=tuple(base_dilation), window_dilation=tuple(window_dilation))


def _select_and_gather_add_shape_rule(tangents: ShapedArray, operand: ShapedArray, *,
                                      select_prim: core.Primitive, **window: Any
                                      ) -> tuple[int, ...]:
  if tangents.shape != operand.shape:
    raise TypeError(f"select_and_gather_add tangents and operand shapes must match, got "
                    f"{tangents.shape} and {operand.shape}.")
  return windowed_reductions.reduce_window_shape("select_and_gather_add", operand.shape,
                                                 **window)


select_and_gather_add_p = utils.standard_primitive(
    "select_and_gather_add", _select_and_gather_add_shape_rule, utils.input_dtype)


def _select_and_gather_add_by_reduce_window(tangents: Any, operand: Any, *,
                                            select_prim: core.Primitive, **window: Any
                                            ) -> Any:
  """A variadic reduce_window over (value, tangent) pairs keeping the selected pair."""
  def keep_selected(acc: tuple[Any, Any], x: tuple[Any, Any]) -> tuple[Any, Any]:
    which = select_prim.bind(acc[0], x[0])
    return lax.select(which, acc[0], x[0]), lax.select(which, acc[1], x[1])
  dtype = dtypes.dtype(operand)
  _, out = windowed_reductions.reduce_window(
      (operand, tangents), (_identity_of(select_prim, dtype), np.zeros((), dtypes.dtype(
          tangents))), keep_selected, **window)
  return out


mlir.register_lowering(select_and_gather_add_p, mlir.lower_fun(
    _select_and_gather_add_by_reduce_window, multiple_results=False))


def _select_and_gather_add_jvp(primals: Sequence[Any], tangents: Sequence[Any],
                               **params: Any) -> tuple[Any, Any]:
  (source, operand), (g_source, _) = primals, tangents
  out = select_and_gather_add_p.bind(source, operand, **params)
  if type(g_source) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, select_and_gather_add_p.bind(g_source, operand, **params)


def _select_and_gather_add_transpose(ct: Any, tangents: Any, operand: Any, *,
                                     select_prim: core.Primitive, window_dimensions: tuple,
                                     window_strides: tuple, padding: Padding,
                                     base_dilation: tuple, window_dilation: tuple
                                     ) -> list[Any]:
  if ad.is_undefined_primal(operand):
    raise NotImplementedError("select_and_gather_add is not linear in its operand.")
  if any(d != 1 for d in window_dilation):
    raise NotImplementedError(f"VJP not implemented for select_and_gather (MaxPool) with "
                              f"window dilation, got window_dilation={window_dilation}.")
  dilated = any(d != 1 for d in base_dilation)
  if dilated:  # holes hold the value no window picks
    operand = shape_ops.pad(operand, _identity_of(select_prim, dtypes.dtype(operand)),
                            [(0, 0, d - 1) for d in base_dilation])
  result = _select_and_scatter_add(ct, operand, select_prim, window_dimensions,
                                   window_strides, padding)
  if dilated:
    result = slicing.slice(result, (0,) * np.ndim(result), np.shape(result), base_dilation)
  return [result, None]


ad.primitive_jvps[select_and_gather_add_p] = _select_and_gather_add_jvp
ad.primitive_transposes[select_and_gather_add_p] = _select_and_gather_add_transpose
batching.primitive_batchers[select_and_gather_add_p] = _two_operand_batch_rule(
    select_and_gather_add_p)
