"""Reductions: over axes (`reduce_sum`, …, `argmax`), cumulatively along one axis (`cumsum`,
…), and over sliding windows (`reduce_window`).

All of them lower to StableHLO's `reduce` or `reduce_window`. Their body is a scalar
computation that XLA may apply in any order, any number of times, starting from the init
value: so the body must be associative and commutative and the init value its identity. Most
reductions here are such a *monoid* (a combine op and its identity, `Monoid`). `lax.reduce`
and `lax.reduce_window` with a computation that is not one of them trace it into a jaxpr and
lower that jaxpr as the body (`reduce_p`, `reduce_window_p`).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax, utils

_num = (np.number,)
_float = (np.floating,)
_ordered = (np.integer, np.floating, np.bool_)  # max/min/argmax: complex numbers are unordered
_int_or_bool = (np.integer, np.bool_)


# ----------------------------------------------------------------------------- monoids

def get_max_identity(dtype: Any) -> Any:
  """The identity of `max`: the lowest value of `dtype` (-inf for floats)."""
  if dtypes.is_inexact(dtype):
    return -np.inf
  return False if dtypes.is_bool(dtype) else dtypes.iinfo(dtype).min


def get_min_identity(dtype: Any) -> Any:
  """The identity of `min`: the highest value of `dtype` (+inf for floats)."""
  if dtypes.is_inexact(dtype):
    return np.inf
  return True if dtypes.is_bool(dtype) else dtypes.iinfo(dtype).max


def _all_bits_set(dtype: Any) -> Any:
  return np.invert(np.zeros((), dtype))  # True, -1, or the largest unsigned value


def _logaddexp_hlo(x: ir.Value, y: ir.Value) -> ir.Value:
  """log(exp(x) + exp(y)) without overflow: max(x, y) + log1p(exp(-|x - y|)). Equal
  arguments take a zero gap, so two infinities of one sign stay infinite instead of going
  through inf - inf = NaN."""
  element_type = ir.RankedTensorType(x.type).element_type
  zero = hlo.constant(ir.DenseElementsAttr.get_splat(x.type, ir.FloatAttr.get(element_type, 0)))
  equal = hlo.compare(x, y, hlo.ComparisonDirectionAttr.get("EQ"),
                      compare_type=hlo.ComparisonTypeAttr.get("FLOAT"))
  gap = hlo.select(equal, zero, hlo.negate(hlo.abs(hlo.subtract(x, y))))
  return hlo.add(hlo.maximum(x, y), hlo.log_plus_one(hlo.exponential(gap)))


class Monoid(NamedTuple):
  """An associative, commutative scalar computation (building StableHLO ops) and its
  identity element as a function of the dtype."""
  combine: Callable[[ir.Value, ir.Value], ir.Value]
  identity: Callable[[Any], Any]

  def init(self, dtype: Any) -> ir.Value:
    return mlir.ir_constant(np.array(self.identity(dtype), dtype))


ADD = Monoid(hlo.add, lambda dtype: 0)
MUL = Monoid(hlo.multiply, lambda dtype: 1)
MAX = Monoid(hlo.maximum, get_max_identity)
MIN = Monoid(hlo.minimum, get_min_identity)
AND = Monoid(hlo.and_, _all_bits_set)
OR = Monoid(hlo.or_, lambda dtype: 0)
XOR = Monoid(hlo.xor, lambda dtype: 0)
LOGADDEXP = Monoid(_logaddexp_hlo, lambda dtype: -np.inf)


# ----------------------------------------------------------------------------- lowering helpers

def _scalar_type(dtype: Any) -> ir.Type:
  return mlir.aval_to_ir_type(ShapedArray((), dtype))


def _with_body(op: ir.OpView, dtypes_: Sequence[Any], body: Callable[..., Sequence[ir.Value]]
               ) -> list[ir.Value]:
  """Fills the body region of a `reduce`/`reduce_window` op and returns the op's results.

  The region takes scalar accumulators, then scalar elements (one of each per operand, of
  `dtypes_`); `body` maps them to the new accumulators.
  """
  types = [_scalar_type(d) for d in dtypes_]
  block = op.regions[0].blocks.append(*types, *types)
  with ir.InsertionPoint(block):
    hlo.return_(list(body(*block.arguments)))
  return list(op.results)


def _monoid_body(monoid: Monoid) -> Callable[[ir.Value, ir.Value], list[ir.Value]]:
  return lambda acc, x: [monoid.combine(acc, x)]


def _reduce_op(avals_out: Sequence[ShapedArray], operands: Sequence[ir.Value],
               inits: Sequence[ir.Value], axes: Sequence[int]) -> ir.OpView:
  return hlo.ReduceOp([mlir.aval_to_ir_type(a) for a in avals_out], list(operands),
                      list(inits), ir.DenseI64ArrayAttr.get(list(axes)))


def _reduce_window_op(avals_out: Sequence[ShapedArray], operands: Sequence[ir.Value],
                      inits: Sequence[ir.Value], *, window_dimensions: Sequence[int],
                      window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                      base_dilation: Sequence[int], window_dilation: Sequence[int]
                      ) -> ir.OpView:
  pads = np.asarray(padding, np.int64).reshape(len(window_dimensions), 2)
  return hlo.ReduceWindowOp(
      [mlir.aval_to_ir_type(a) for a in avals_out], list(operands), list(inits),
      list(window_dimensions), window_strides=list(window_strides),
      base_dilations=list(base_dilation), window_dilations=list(window_dilation),
      padding=ir.DenseIntElementsAttr.get(pads))


# ----------------------------------------------------------------------------- over axes

def _canonical_axes(operand: Any, axes: Sequence[int]) -> tuple[int, ...]:
  """Axes as non-negative ints (negative ones count from the end)."""
  ndim = np.ndim(operand)
  return tuple(int(a) + ndim if int(a) < 0 else int(a) for a in axes)


def _reduced_shape(name: str, shape: tuple[int, ...], axes: tuple[int, ...]
                   ) -> tuple[int, ...]:
  if any(not 0 <= a < len(shape) for a in axes):
    raise ValueError(f"{name}: reduction axes {axes} are out of bounds for an operand of "
                     f"shape {shape}")
  if len(set(axes)) != len(axes):
    raise ValueError(f"{name}: duplicate value in reduction axes {axes}")
  return tuple(d for i, d in enumerate(shape) if i not in axes)


def _axis_reduction(name: str, accepted: Sequence[Any], monoid: Monoid) -> core.Primitive:
  def shape_rule(operand: ShapedArray, *, axes: tuple[int, ...]) -> tuple[int, ...]:
    utils.check_dtypes(name, accepted, operand)
    return _reduced_shape(name, operand.shape, axes)

  def lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *, axes: tuple[int, ...]
               ) -> list[ir.Value]:
    dtype = ctx.avals_in[0].dtype
    op = _reduce_op(ctx.avals_out, [operand], [monoid.init(dtype)], axes)
    return _with_body(op, [dtype], _monoid_body(monoid))

  prim = utils.standard_primitive(name, shape_rule, utils.input_dtype)
  mlir.register_lowering(prim, lowering)
  return prim


reduce_sum_p = _axis_reduction("reduce_sum", _num, ADD)
reduce_prod_p = _axis_reduction("reduce_prod", _num, MUL)
reduce_max_p = _axis_reduction("reduce_max", _ordered, MAX)
reduce_min_p = _axis_reduction("reduce_min", _ordered, MIN)
reduce_and_p = _axis_reduction("reduce_and", _int_or_bool, AND)
reduce_or_p = _axis_reduction("reduce_or", _int_or_bool, OR)
reduce_xor_p = _axis_reduction("reduce_xor", _int_or_bool, XOR)


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
  """Sum over `axes`, in `operand`'s dtype (integer sums wrap around on overflow).

  Example: `reduce_sum(jnp.ones((2, 3)), (1,))` is `[3., 3.]`.
  """
  return reduce_sum_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
  """Product over `axes`, in `operand`'s dtype."""
  return reduce_prod_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
  """Maximum over `axes`; NaN wins. Reducing an empty axis gives the dtype's lowest value."""
  return reduce_max_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
  """Minimum over `axes`; NaN wins. Reducing an empty axis gives the dtype's highest value."""
  return reduce_min_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
  """Logical (bool) or bitwise (integers) AND over `axes`."""
  return reduce_and_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
  """Logical (bool) or bitwise (integers) OR over `axes`."""
  return reduce_or_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
  """Logical (bool) or bitwise (integers) XOR over `axes`."""
  return reduce_xor_p.bind(operand, axes=_canonical_axes(operand, axes))


# ----------------------------------------------------------------------------- argmax, argmin

def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
  """Index of the largest element along `axis`, as `index_dtype`.

  Like NumPy: the first of equal maxima, and the first NaN if there is one.
  """
  return argmax_p.bind(operand, axes=_canonical_axes(operand, (axis,)),
                       index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
  """Index of the smallest element along `axis`, as `index_dtype`.

  Like NumPy: the first of equal minima, and the first NaN if there is one.
  """
  return argmin_p.bind(operand, axes=_canonical_axes(operand, (axis,)),
                       index_dtype=dtypes.canonicalize_dtype(index_dtype))


def _argminmax_shape_rule(name: str) -> Callable[..., tuple[int, ...]]:
  def shape_rule(operand: ShapedArray, *, axes: tuple[int, ...], index_dtype: np.dtype
                 ) -> tuple[int, ...]:
    utils.check_dtypes(name, _ordered, operand)
    if not dtypes.is_integer(index_dtype):
      raise TypeError(f"{name}: index_dtype must be an integer type, got "
                      f"{np.dtype(index_dtype).name}")
    if len(axes) != 1:
      raise ValueError(f"{name} reduces exactly one axis, got axes {axes}")
    shape = _reduced_shape(name, operand.shape, axes)
    if operand.shape[axes[0]] == 0:
      raise ValueError(f"{name} requires a non-empty reduced dimension: operand shape "
                       f"{operand.shape}, axis {axes[0]}")
    return shape
  return shape_rule


def _argminmax_lowering(direction: str) -> mlir.LoweringRule:
  """A variadic `reduce` over (value, index) pairs. The body keeps the pair that comes first
  in the order: NaN above everything, then by value in `direction`, then by smaller index.
  That order is total, so the body is associative and commutative as XLA requires; the init
  pair (the value identity, index 0) can only win when it ties the real element 0."""
  def rule(ctx: mlir.LoweringRuleContext, operand: ir.Value, *, axes: tuple[int, ...],
           index_dtype: np.dtype) -> list[ir.Value]:
    aval = ctx.avals_in[0]
    index_aval = aval.update(dtype=index_dtype)
    iota = hlo.iota(mlir.aval_to_ir_type(index_aval), axes[0])
    value_identity = MAX.identity if direction == "GT" else MIN.identity
    inits = [mlir.ir_constant(np.array(value_identity(aval.dtype), aval.dtype)),
             mlir.ir_constant(np.array(0, index_dtype))]
    op = _reduce_op([ctx.avals_out[0].update(dtype=aval.dtype), ctx.avals_out[0]],
                    [operand, iota], inits, axes)

    def body(a: ir.Value, i: ir.Value, b: ir.Value, j: ir.Value) -> list[ir.Value]:
      cmp = lax.compare_hlo
      better = cmp(a, b, direction, aval.dtype)
      tie = cmp(a, b, "EQ", aval.dtype)
      if dtypes.is_inexact(aval.dtype):
        a_nan, b_nan = cmp(a, a, "NE", aval.dtype), cmp(b, b, "NE", aval.dtype)
        better = hlo.or_(better, hlo.and_(a_nan, hlo.not_(b_nan)))
        tie = hlo.or_(tie, hlo.and_(a_nan, b_nan))
      pick_a = hlo.or_(better, hlo.and_(tie, cmp(i, j, "LT", index_dtype)))
      return [hlo.select(pick_a, a, b), hlo.select(pick_a, i, j)]
    return _with_body(op, [aval.dtype, index_dtype], body)[1:]
  return rule


def _argminmax(name: str, direction: str) -> core.Primitive:
  prim = utils.standard_primitive(name, _argminmax_shape_rule(name),
                                  lambda operand, *, axes, index_dtype: index_dtype,
                                  lambda operand, *, axes, index_dtype: False)
  mlir.register_lowering(prim, _argminmax_lowering(direction))
  return prim


argmax_p = _argminmax("argmax", "GT")
argmin_p = _argminmax("argmin", "LT")


# ----------------------------------------------------------------------------- cumulative

def _cumulative(name: str, accepted: Sequence[Any], monoid: Monoid) -> core.Primitive:
  """A prefix reduction along `axis` (a suffix one when `reverse`). It lowers to a
  `reduce_window` whose window spans the whole axis and is padded by n - 1 identities on
  the leading side; XLA turns that pattern into an efficient scan."""
  def shape_rule(operand: ShapedArray, *, axis: int, reverse: bool) -> tuple[int, ...]:
    utils.check_dtypes(name, accepted, operand)
    if not 0 <= axis < operand.ndim:
      raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of shape "
                       f"{operand.shape}")
    return operand.shape

  def lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *, axis: int,
               reverse: bool) -> list[ir.Value]:
    aval = ctx.avals_in[0]
    if aval.size == 0:
      return [operand]
    n, ones = aval.shape[axis], (1,) * aval.ndim
    window = tuple(n if i == axis else 1 for i in range(aval.ndim))
    padding = tuple(((0, n - 1) if reverse else (n - 1, 0)) if i == axis else (0, 0)
                    for i in range(aval.ndim))
    op = _reduce_window_op(ctx.avals_out, [operand], [monoid.init(aval.dtype)],
                           window_dimensions=window, window_strides=ones, padding=padding,
                           base_dilation=ones, window_dilation=ones)
    return _with_body(op, [aval.dtype], _monoid_body(monoid))

  prim = utils.standard_primitive(name, shape_rule, utils.input_dtype)
  mlir.register_lowering(prim, lowering)
  return prim


cumsum_p = _cumulative("cumsum", _num, ADD)
cumprod_p = _cumulative("cumprod", _num, MUL)
cummax_p = _cumulative("cummax", _ordered, MAX)
cummin_p = _cumulative("cummin", _ordered, MIN)
cumlogsumexp_p = _cumulative("cumlogsumexp", _float, LOGADDEXP)


def _cumulative_params(operand: Any, axis: int, reverse: bool) -> dict[str, Any]:
  return dict(axis=_canonical_axes(operand, (axis,))[0], reverse=bool(reverse))


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
  """Running sums along `axis`: element i is the sum of elements 0..i (i..n-1 if
  `reverse`)."""
  return cumsum_p.bind(operand, **_cumulative_params(operand, axis, reverse))


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
  """Running products along `axis` (suffix products if `reverse`)."""
  return cumprod_p.bind(operand, **_cumulative_params(operand, axis, reverse))


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
  """Running maxima along `axis` (suffix maxima if `reverse`)."""
  return cummax_p.bind(operand, **_cumulative_params(operand, axis, reverse))


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
  """Running minima along `axis` (suffix minima if `reverse`)."""
  return cummin_p.bind(operand, **_cumulative_params(operand, axis, reverse))


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
  """Running log(sum(exp(x))) along `axis`, computed without overflow."""
  return cumlogsumexp_p.bind(operand, **_cumulative_params(operand, axis, reverse))


# ----------------------------------------------------------------------------- windows

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


def _reduce_window_shape(name: str, shape: tuple[int, ...], *,
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
    return _reduce_window_shape(name, operand.shape, **window)

  def lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, **window: Any
               ) -> list[ir.Value]:
    dtype = ctx.avals_in[0].dtype
    op = _reduce_window_op(ctx.avals_out, [operand], [monoid.init(dtype)], **window)
    return _with_body(op, [dtype], _monoid_body(monoid))

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
  flat_operands, tree = _flatten_operands("reduce_window", operand, init_value)
  flat_inits = tree_util.tree_leaves(init_value)
  window = _window_params(np.shape(flat_operands[0]), window_dimensions, window_strides,
                          padding, base_dilation, window_dilation)
  monoid = _monoid_of(computation, flat_operands, flat_inits)
  if monoid in _WINDOW_PRIMITIVES:
    return _WINDOW_PRIMITIVES[monoid].bind(flat_operands[0], **window)
  jaxpr = _computation_jaxpr(computation, tree, _scalar_avals(flat_operands))
  outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, **window)
  return tree.unflatten(outs)


_WINDOW_PRIMITIVES = {ADD: reduce_window_sum_p, MAX: reduce_window_max_p,
                      MIN: reduce_window_min_p}


# ----------------------------------------------------------------------------- any computation

def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int]) -> Any:
  """Reduces `operands` over `dimensions` with `computation`, starting from `init_values`.

  `operands` may be a pytree of equally-shaped arrays; `computation` then takes and returns
  pytrees of scalars of that structure, `(accumulators, elements) -> accumulators`. It must
  be associative and commutative with `init_values` as identity. A single operand with
  `lax.add`, `lax.mul`, `lax.max`, `lax.min` or a `lax.bitwise_*` op and its identity uses
  `reduce_sum` etc. Example: `reduce(x, 0., lax.add, (0,))` is `reduce_sum(x, (0,))`.
  """
  flat_operands, tree = _flatten_operands("reduce", operands, init_values)
  flat_inits = tree_util.tree_leaves(init_values)
  axes = _canonical_axes(flat_operands[0], dimensions)
  monoid = _monoid_of(computation, flat_operands, flat_inits)
  if monoid is not None:
    return _AXIS_PRIMITIVES[monoid].bind(flat_operands[0], axes=axes)
  jaxpr = _computation_jaxpr(computation, tree, _scalar_avals(flat_operands))
  return tree.unflatten(reduce_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr,
                                      dimensions=axes))


_AXIS_PRIMITIVES = {ADD: reduce_sum_p, MUL: reduce_prod_p, MAX: reduce_max_p,
                    MIN: reduce_min_p, AND: reduce_and_p, OR: reduce_or_p, XOR: reduce_xor_p}
_MONOID_OF_LAX_FUNCTION = {"add": ADD, "mul": MUL, "max": MAX, "min": MIN,
                           "bitwise_and": AND, "bitwise_or": OR, "bitwise_xor": XOR}


def _flatten_operands(name: str, operands: Any, init_values: Any
                      ) -> tuple[list[Any], tree_util.PyTreeDef]:
  flat, tree = tree_util.tree_flatten(operands)
  init_tree = tree_util.tree_structure(init_values)
  if tree != init_tree:
    raise ValueError(f"{name}: operands and init_values must have the same structure, got "
                     f"{tree} and {init_tree}")
  if not flat:
    raise ValueError(f"{name} needs at least one operand")
  return flat, tree


def _monoid_of(computation: Callable, operands: Sequence[Any], inits: Sequence[Any]
               ) -> Monoid | None:
  """The monoid `computation` is, if it is a known lax function applied to one operand
  whose (concrete) init value is that monoid's identity."""
  if len(operands) != 1:
    return None
  monoid = next((m for fn_name, m in _MONOID_OF_LAX_FUNCTION.items()
                 if getattr(lax, fn_name, None) is computation), None)
  init = inits[0]
  if isinstance(init, core.Tracer):
    init = init.to_concrete_value()
  if monoid is None or init is None or np.shape(init) != ():
    return None
  dtype = dtypes.dtype(operands[0], canonicalize=True)
  if monoid in (ADD, MUL) and dtypes.is_bool(dtype):
    return None
  return monoid if np.asarray(init) == np.asarray(monoid.identity(dtype), dtype) else None


def _scalar_avals(operands: Sequence[Any]) -> tuple[ShapedArray, ...]:
  return tuple(ShapedArray((), core.get_aval(x).dtype) for x in operands)


@functools.lru_cache(maxsize=256)
def _computation_jaxpr(computation: Callable, tree: tree_util.PyTreeDef,
                       avals: tuple[ShapedArray, ...]) -> core.ClosedJaxpr:
  """`computation` traced on scalars: flat (accumulators..., elements...) to flat new
  accumulators. Cached, so repeated reductions reuse one jaxpr (and one executable)."""
  def flat_computation(*args: Any) -> list[Any]:
    n = len(avals)
    out = computation(tree.unflatten(args[:n]), tree.unflatten(args[n:]))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    if out_tree != tree:
      raise TypeError(f"the reduction computation must return the operands' structure "
                      f"{tree}, got {out_tree}")
    return out_leaves
  with core.set_current_trace(core.EvalTrace()):
    jaxpr, consts = pe.trace_to_jaxpr(flat_computation, avals * 2)
  if any(isinstance(c, core.Tracer) for c in consts):
    raise TypeError("the reduction computation closes over traced values; pass them as "
                    "operands instead")
  out = tuple((a.shape, a.dtype) for a in jaxpr.out_avals)
  if out != tuple((a.shape, a.dtype) for a in avals):
    raise TypeError(f"the reduction computation must return scalars of the operands' dtypes "
                    f"{[a.str_short() for a in avals]}, got "
                    f"{[a.str_short() for a in jaxpr.out_avals]}")
  return core.ClosedJaxpr(jaxpr, consts)


def _split_operands(name: str, avals: Sequence[ShapedArray]
                    ) -> tuple[Sequence[ShapedArray], Sequence[ShapedArray]]:
  """Splits (operands..., init values...) and checks that the operands share a shape and
  the init values are scalars of the operands' dtypes."""
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if len({a.shape for a in operands}) != 1:
    raise ValueError(f"{name} operands must have the same shape, got "
                     f"{', '.join(a.str_short() for a in operands)}")
  for x, init in zip(operands, inits):
    if init.shape != () or init.dtype != x.dtype:
      raise TypeError(f"{name}: each init value must be a scalar of its operand's dtype; "
                      f"got {init.str_short()} for an operand of type {x.str_short()}")
  return operands, inits


def _reduce_abstract_eval(*avals: ShapedArray, jaxpr: core.ClosedJaxpr,
                          dimensions: tuple[int, ...]) -> list[ShapedArray]:
  operands, _ = _split_operands("reduce", avals)
  shape = _reduced_shape("reduce", operands[0].shape, dimensions)
  return [ShapedArray(shape, x.dtype, x.weak_type) for x in operands]


def _reduce_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, jaxpr: core.ClosedJaxpr,
                     dimensions: tuple[int, ...]) -> list[ir.Value]:
  n = len(args) // 2
  op = _reduce_op(ctx.avals_out, args[:n], args[n:], dimensions)
  body = lambda *xs: mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr, xs)
  return _with_body(op, [a.dtype for a in ctx.avals_in[:n]], body)


reduce_p = utils.standard_multi_result_primitive("reduce", _reduce_abstract_eval)
mlir.register_lowering(reduce_p, _reduce_lowering)


def _reduce_window_abstract_eval(*avals: ShapedArray, jaxpr: core.ClosedJaxpr,
                                 **window: Any) -> list[ShapedArray]:
  operands, _ = _split_operands("reduce_window", avals)
  shape = _reduce_window_shape("reduce_window", operands[0].shape, **window)
  return [ShapedArray(shape, x.dtype, x.weak_type) for x in operands]


def _reduce_window_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value,
                            jaxpr: core.ClosedJaxpr, **window: Any) -> list[ir.Value]:
  n = len(args) // 2
  op = _reduce_window_op(ctx.avals_out, args[:n], args[n:], **window)
  body = lambda *xs: mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr, xs)
  return _with_body(op, [a.dtype for a in ctx.avals_in[:n]], body)


reduce_window_p = utils.standard_multi_result_primitive("reduce_window",
                                                        _reduce_window_abstract_eval)
mlir.register_lowering(reduce_window_p, _reduce_window_lowering)
