"""Reductions over sliding windows: `reduce_window` and its primitives.

A window of `window_dimensions` steps by `window_strides` over the operand padded by
`padding` and dilated by `base_dilation`; `window_dilation` spaces its taps. Sums, maxima
and minima with their identity as init value are the monoid primitives
`reduce_window_{sum,max,min}_p`, which differentiate; any other computation is traced to a
jaxpr and lowered as the body of `reduce_window_p` (see `reductions` for monoids and
computations). The windowed sum transposes to a windowed sum of the padded, dilated
cotangent; max and min take the tangent at the extremum, averaged over ties. Batching gives
the batch dimension a window of one.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, dtypes, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, shape_ops, slicing, utils
from jaxon._src.lax.reductions import (
    ADD, MAX, MIN, Monoid, computation_jaxpr, flatten_operands, mapped_operands, monoid_body,
    monoid_of, reduce_window_op, scalar_avals, split_operands, with_body)

_num = (np.number,)
_ordered = (np.integer, np.floating, np.bool_)


# ----------------------------------------------------------------------------- window shapes

def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
  """Explicit (low, high) padding for a padding name.

  'VALID' pads nothing. 'SAME' pads so the output has ceil(in / stride) elements per
  dimension, splitting the padding evenly with the odd element at the high end
  ('SAME_LOWER': at the low end).
  """
  kind = padding.upper() if isinstance(padding, str) else padding
  if kind == "VALID":
    return [(0, 0)] * len(in_shape)
  if kind not in ("SAME", "SAME_LOWER"):
    raise ValueError(f"Unrecognized padding type {padding!r}: expected 'VALID', 'SAME' or "
                     "'SAME_LOWER'")
  pads = []
  for size, window, stride in zip(in_shape, window_shape, window_strides):
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + window - size)
    small, large = total // 2, total - total // 2
    pads.append((small, large) if kind == "SAME" else (large, small))
  return pads


def _dilate(size: int, dilation: int) -> int:
  return 0 if size == 0 else 1 + dilation * (size - 1)


def reduce_window_shape(name: str, shape: tuple[int, ...], *,
                        window_dimensions: tuple[int, ...], window_strides: tuple[int, ...],
                        padding: tuple[tuple[int, int], ...], base_dilation: tuple[int, ...],
                        window_dilation: tuple[int, ...]) -> tuple[int, ...]:
  """Each output dimension counts the window positions, `stride` apart, that fit in the
  padded, base-dilated operand dimension."""
  ranked = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
  for arg, value in ranked.items():
    if len(value) != len(shape):
      raise TypeError(f"{name}: {arg} {value} must have one entry per dimension of the "
                      f"operand, whose shape is {shape}")
    if arg == "padding" and any(len(pair) != 2 for pair in value):
      raise TypeError(f"{name}: padding must be (low, high) pairs, got {value}")
    if arg != "padding" and any(d < 1 for d in value):
      raise TypeError(f"{name}: {arg} must be positive, got {value}")
  out = []
  for d, w, s, (lo, hi), bd, wd in zip(shape, *ranked.values()):
    padded = _dilate(d, bd) + lo + hi
    if padded < 0:
      raise ValueError(f"{name}: padding {padding} leaves a negative size in dimension "
                       f"{len(out)} of an operand of shape {shape}")
    window = _dilate(w, wd)
    out.append(0 if padded < window else (padded - window) // s + 1)
  return tuple(out)


def _window_params(shape: tuple[int, ...], window_dimensions: Sequence[int],
                   window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]],
                   base_dilation: Sequence[int] | None, window_dilation: Sequence[int] | None
                   ) -> dict[str, Any]:
  """The hashable params of a windowed reduction, with padding names made explicit."""
  ints = lambda xs: tuple(int(x) for x in xs)
  if isinstance(padding, str):
    padding = padtype_to_pads(shape, window_dimensions, window_strides, padding)
  ones = (1,) * len(shape)
  return dict(window_dimensions=ints(window_dimensions), window_strides=ints(window_strides),
              padding=tuple(ints(p) for p in padding),
              base_dilation=ones if base_dilation is None else ints(base_dilation),
              window_dilation=ones if window_dilation is None else ints(window_dilation))


def _window_reduction(name: str, accepted: Sequence[Any], monoid: Monoid) -> core.Primitive:
  def shape_rule(operand: ShapedArray, **window: Any) -> tuple[int, ...]:
    utils.check_dtypes(name, accepted, operand)
    return reduce_window_shape(name, operand.shape, **window)

  def lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, **window: Any
               ) -> list[ir.Value]:
    dtype = ctx.avals_in[0].dtype
    op = reduce_window_op(ctx.avals_out, [operand], [monoid.init(dtype)], **window)
    return with_body(op, [dtype], monoid_body(monoid))

  prim = utils.standard_primitive(name, shape_rule, utils.input_dtype)
  mlir.register_lowering(prim, lowering)
  return prim


reduce_window_sum_p = _window_reduction("reduce_window_sum", _num, ADD)
reduce_window_max_p = _window_reduction("reduce_window_max", _ordered, MAX)
reduce_window_min_p = _window_reduction("reduce_window_min", _ordered, MIN)


def reduce_window(operand: Any, init_value: Any, computation: Callable[[Any, Any], Any],
                  window_dimensions: Sequence[int], window_strides: Sequence[int],
                  padding: str | Sequence[tuple[int, int]],
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
  """Reduces each window of `operand` with `computation`, starting from `init_value`.

  Windows of shape `window_dimensions` step by `window_strides` over the operand after it
  is padded (with `init_value`) by `padding` — (low, high) pairs, or 'SAME'/'VALID' — and
  dilated by `base_dilation` (holes between elements); `window_dilation` spaces out the
  window's taps. `lax.add`, `lax.max` and `lax.min` with their identity as init value use
  the dedicated primitives; other computations (and pytrees of operands) are traced to a
  jaxpr. Example, a 2x2 max pool with stride 2: `reduce_window(x, -jnp.inf, lax.max,
  (2, 2), (2, 2), 'VALID')`.
  """
  flat_operands, tree = flatten_operands("reduce_window", operand, init_value)
  flat_inits = tree_util.tree_leaves(init_value)
  window = _window_params(np.shape(flat_operands[0]), window_dimensions, window_strides,
                          padding, base_dilation, window_dilation)
  monoid = monoid_of(computation, flat_operands, flat_inits)
  if monoid in _WINDOW_PRIMITIVES:
    return _WINDOW_PRIMITIVES[monoid].bind(flat_operands[0], **window)
  jaxpr = computation_jaxpr(computation, tree, scalar_avals(flat_operands))
  outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, **window)
  return tree.unflatten(outs)


_WINDOW_PRIMITIVES = {ADD: reduce_window_sum_p, MAX: reduce_window_max_p,
                      MIN: reduce_window_min_p}


def _reduce_window_sum_transpose(ct: Any, operand: ad.UndefinedPrimal, *,
                                 window_dimensions: tuple[int, ...],
                                 window_strides: tuple[int, ...],
                                 padding: tuple[tuple[int, int], ...],
                                 base_dilation: tuple[int, ...],
                                 window_dilation: tuple[int, ...]) -> list[Any]:
  """Per dimension, element i of the operand sits at i*bd + lo of the padded, dilated
  operand, and window o's tap w at o*s + w*wd. So with ct dilated by the stride (ctd[o*s]
  = ct[o]), ct_x[i] = sum_w ctd[i*bd + lo - w*wd]: flipping the window (w -> W-1-w) makes
  that a windowed sum, with stride bd and the same window dilation, over ctd padded by
  (W-1)*wd - lo in front and to length (n-1)*bd + (W-1)*wd + 1."""
  aval = operand.aval
  if type(ct) is ad.Zero:
    return [ad.Zero(aval.to_tangent_aval())]
  config = []
  for n, m, w, s, (lo, _), bd, wd in zip(aval.shape, np.shape(ct), window_dimensions,
                                         window_strides, padding, base_dilation,
                                         window_dilation):
    reach = _dilate(w, wd) - 1
    low = reach - lo
    config.append((low, _dilate(n, bd) + reach - low - _dilate(m, s), s - 1))
  padded = shape_ops.pad(ct, np.zeros((), dtypes.dtype(ct)), config)
  ones = (1,) * aval.ndim
  return [reduce_window_sum_p.bind(
      padded, window_dimensions=window_dimensions, window_strides=base_dilation,
      padding=((0, 0),) * aval.ndim, base_dilation=ones, window_dilation=window_dilation)]


def _window_taps(x: Any, fill: Any, *, window_dimensions: tuple[int, ...],
                 window_strides: tuple[int, ...], padding: tuple[tuple[int, int], ...],
                 base_dilation: tuple[int, ...], window_dilation: tuple[int, ...]
                 ) -> list[Any]:
  """For each tap of the window, the element under it in every window (arrays of the
  output's shape): strided slices of the operand padded and dilated with `fill`."""
  padded = shape_ops.pad(x, np.array(fill, dtypes.dtype(x)),
                         [(lo, hi, bd - 1) for (lo, hi), bd in zip(padding, base_dilation)])
  out_shape = reduce_window_shape(
      "reduce_window", np.shape(x), window_dimensions=window_dimensions,
      window_strides=window_strides, padding=padding, base_dilation=base_dilation,
      window_dilation=window_dilation)
  taps = []
  for tap in itertools.product(*map(range, window_dimensions)):
    start = [t * wd for t, wd in zip(tap, window_dilation)]
    limit = [b + (m - 1) * s + 1 for b, m, s in zip(start, out_shape, window_strides)]
    taps.append(slicing.slice(padded, start, limit, window_strides))
  return taps


def _reduce_window_chooser_jvp(prim: core.Primitive, identity: Callable) -> Callable:
  """The tangent of a window's max (min) is the tangent at its extremum, the mean over
  taps that tie, as `reduce_max`. JAX pairs values with tangents in one
  `select_and_gather_add`; here each tap's values and tangents are strided slices of the
  padded operand and tangent, which handles strides, padding and both dilations (padding
  and holes hold the identity, with a zero tangent) at the cost of one slice per tap."""
  def jvp(primals: Sequence[Any], tangents: Sequence[Any], **window: Any
          ) -> tuple[Any, Any]:
    (x,), (g,) = primals, tangents
    out = prim.bind(x, **window)
    dtype = dtypes.dtype(g)
    if np.size(out) == 0:
      return out, lax.full(np.shape(out), 0, dtype)
    counts = tangent = None
    for x_tap, g_tap in zip(_window_taps(x, identity(dtype), **window),
                            _window_taps(g, 0, **window)):
      at_extremum = lax.convert_element_type(lax.eq(x_tap, out), dtype)
      counts = _sum_or_first(counts, at_extremum)
      tangent = _sum_or_first(tangent, lax.mul(g_tap, at_extremum))
    return out, lax.div(tangent, counts)
  return jvp


def _sum_or_first(total: Any, x: Any) -> Any:
  return x if total is None else lax.add(total, x)


def _window_batch_rule(prim: core.Primitive) -> Callable:
  """The batch dimension gets a window of one, taken at every position."""
  def rule(vals: Sequence[Any], dims: Sequence[int | None], **window: Any
           ) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return prim.bind(x, **_window_with_batch_dim(window, bdim)), bdim
  return rule


def _window_with_batch_dim(window: dict[str, Any], bdim: int) -> dict[str, Any]:
  def insert(values: tuple, value: Any) -> tuple:
    return values[:bdim] + (value,) + values[bdim:]
  return dict(window_dimensions=insert(window["window_dimensions"], 1),
              window_strides=insert(window["window_strides"], 1),
              padding=insert(window["padding"], (0, 0)),
              base_dilation=insert(window["base_dilation"], 1),
              window_dilation=insert(window["window_dilation"], 1))


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)
ad.primitive_jvps[reduce_window_max_p] = _reduce_window_chooser_jvp(reduce_window_max_p,
                                                                    MAX.identity)
ad.primitive_jvps[reduce_window_min_p] = _reduce_window_chooser_jvp(reduce_window_min_p,
                                                                    MIN.identity)
for _p in _WINDOW_PRIMITIVES.values():
  batching.primitive_batchers[_p] = _window_batch_rule(_p)


# ----------------------------------------------------------------------------- any computation

def _reduce_window_abstract_eval(*avals: ShapedArray, jaxpr: core.ClosedJaxpr,
                                 **window: Any) -> list[ShapedArray]:
  operands, _ = split_operands("reduce_window", avals)
  shape = reduce_window_shape("reduce_window", operands[0].shape, **window)
  return [ShapedArray(shape, x.dtype, x.weak_type) for x in operands]


def _reduce_window_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value,
                            jaxpr: core.ClosedJaxpr, **window: Any) -> list[ir.Value]:
  n = len(args) // 2
  op = reduce_window_op(ctx.avals_out, args[:n], args[n:], **window)
  body = lambda *xs: mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr, xs)
  return with_body(op, [a.dtype for a in ctx.avals_in[:n]], body)


def _reduce_window_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
                       ) -> tuple[list[Any], list[Any]]:
  raise NotImplementedError(
      "Differentiation rule for 'reduce_window' with a general computation is not "
      "implemented; lax.reduce_window differentiates with lax.add, lax.max or lax.min and "
      "their identity as init value (reduce_window_sum, reduce_window_max, "
      "reduce_window_min)")


def _reduce_window_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                              jaxpr: core.ClosedJaxpr, **window: Any
                              ) -> tuple[list[Any], list[int]]:
  operands, bdim = mapped_operands("reduce_window", vals, dims)
  outs = reduce_window_p.bind(*operands, *vals[len(operands):], jaxpr=jaxpr,
                              **_window_with_batch_dim(window, bdim))
  return outs, [bdim] * len(outs)


reduce_window_p = utils.standard_multi_result_primitive("reduce_window",
                                                        _reduce_window_abstract_eval)
mlir.register_lowering(reduce_window_p, _reduce_window_lowering)
ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp
batching.primitive_batchers[reduce_window_p] = _reduce_window_batch_rule
