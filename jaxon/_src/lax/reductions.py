"""Reductions: over axes (`reduce_sum`, …, `argmax`), cumulatively along one axis (`cumsum`,
…), and with any computation (`lax.reduce`); sliding windows build on these in
`windowed_reductions`.

All of them lower to StableHLO's `reduce` or `reduce_window`. Their body is a scalar
computation that XLA may apply in any order, any number of times, starting from the init
value: so the body must be associative and commutative and the init value its identity. Most
reductions here are such a *monoid* (a combine op and its identity, `Monoid`). `lax.reduce`
with a computation that is not one of them traces it into a jaxpr and lowers that jaxpr as
the body (`reduce_p`).

Derivatives: sums (over axes, running) are linear and transpose to broadcasts and reverse
running sums. Max and min take the tangent at the extremum, averaged over ties. Products and
the running reductions need no division: their tangents follow linear recurrences solved by
recursive doubling with shifts (`_linear_recurrence`), so reverse mode only transposes pads,
products and sums. Batching never moves data: the batch dimension is one more dimension that
is not reduced.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import caches, core, dtypes, tree_util
from jaxon._src.config import values as config_values
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, utils
from jaxon._src.lax.sharding_constraint import apply_out_sharding

_num = (np.number,)
_float = (np.floating,)
_ordered = (np.integer, np.floating, np.bool_)  # argmax/argmin: complex numbers are unordered
# max and min order complex numbers lexicographically (real part first), as lax.max does
_max_min = (*_ordered, np.complexfloating)
_int_or_bool = (np.integer, np.bool_)


# ----------------------------------------------------------------------------- monoids

def get_max_identity(dtype: Any) -> Any:
  """The identity of `max`: the lowest value of `dtype` (-inf for floats, -inf - inf j for
  complex numbers, which compare lexicographically)."""
  if dtypes.is_complex(dtype):
    return complex(-np.inf, -np.inf)
  if dtypes.is_inexact(dtype):
    return -np.inf
  return False if dtypes.is_bool(dtype) else dtypes.iinfo(dtype).min


def get_min_identity(dtype: Any) -> Any:
  """The identity of `min`: the highest value of `dtype` (+inf for floats, inf + inf j for
  complex numbers)."""
  if dtypes.is_complex(dtype):
    return complex(np.inf, np.inf)
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


def _chooser_hlo(op: Callable[[ir.Value, ir.Value], ir.Value], direction: str
                 ) -> Callable[[ir.Value, ir.Value], ir.Value]:
  """`op` (maximum or minimum), except that complex numbers compare lexicographically
  (real part first, then imaginary), as lax.max and NumPy order them: XLA's own complex
  maximum looks at the real parts only."""
  def combine(x: ir.Value, y: ir.Value) -> ir.Value:
    if not isinstance(ir.RankedTensorType(x.type).element_type, ir.ComplexType):
      return op(x, y)
    def compare(a: ir.Value, b: ir.Value, how: str) -> ir.Value:
      return hlo.compare(a, b, hlo.ComparisonDirectionAttr.get(how),
                         compare_type=hlo.ComparisonTypeAttr.get("FLOAT"))
    rx, ry, ix, iy = hlo.real(x), hlo.real(y), hlo.imag(x), hlo.imag(y)
    pick_x = hlo.select(compare(rx, ry, "EQ"), compare(ix, iy, direction),
                        compare(rx, ry, direction))
    return hlo.select(pick_x, x, y)
  return combine


class Monoid(NamedTuple):
  """An associative, commutative scalar computation (building StableHLO ops) and its
  identity element as a function of the dtype."""
  combine: Callable[[ir.Value, ir.Value], ir.Value]
  identity: Callable[[Any], Any]

  def init(self, dtype: Any) -> ir.Value:
    return mlir.ir_constant(np.array(self.identity(dtype), dtype))


ADD = Monoid(hlo.add, lambda dtype: 0)
MUL = Monoid(hlo.multiply, lambda dtype: 1)
MAX = Monoid(_chooser_hlo(hlo.maximum, "GT"), get_max_identity)
MIN = Monoid(_chooser_hlo(hlo.minimum, "LT"), get_min_identity)
AND = Monoid(hlo.and_, _all_bits_set)
OR = Monoid(hlo.or_, lambda dtype: 0)
XOR = Monoid(hlo.xor, lambda dtype: 0)
LOGADDEXP = Monoid(_logaddexp_hlo, lambda dtype: -np.inf)


# ----------------------------------------------------------------------------- lowering helpers

def _scalar_type(dtype: Any) -> ir.Type:
  return mlir.aval_to_ir_type(ShapedArray((), dtype))


def with_body(op: ir.OpView, dtypes_: Sequence[Any], body: Callable[..., Sequence[ir.Value]]
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


def monoid_body(monoid: Monoid) -> Callable[[ir.Value, ir.Value], list[ir.Value]]:
  return lambda acc, x: [monoid.combine(acc, x)]


def _reduce_op(avals_out: Sequence[ShapedArray], operands: Sequence[ir.Value],
               inits: Sequence[ir.Value], axes: Sequence[int]) -> ir.OpView:
  return hlo.ReduceOp([mlir.aval_to_ir_type(a) for a in avals_out], list(operands),
                      list(inits), ir.DenseI64ArrayAttr.get(list(axes)))


def reduce_window_op(avals_out: Sequence[ShapedArray], operands: Sequence[ir.Value],
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


def _shift_past(dims: Sequence[int], bdim: int) -> tuple[int, ...]:
  """Operand dimensions renumbered for an operand with a batch dimension at `bdim`."""
  return tuple(d + (d >= bdim) for d in dims)


def _axis_reduction_batch_rule(prim: core.Primitive) -> Callable:
  """The batch dimension is one more dimension the reduction keeps: only the axes move
  past it, and it ends up after the kept dimensions that preceded it."""
  def rule(vals: Sequence[Any], dims: Sequence[int | None], *, axes: tuple[int, ...],
           **params: Any) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    out = prim.bind(x, axes=_shift_past(axes, bdim), **params)
    return out, bdim - sum(a < bdim for a in axes)
  return rule


# As dtypes, a set: every eager sum runs the check, and comparing a dtype with a scalar type
# converts the type first (0.28 -> 0.15 µs a check).
_HALF_FLOATS = frozenset([np.dtype(np.float16), np.dtype(dtypes.bfloat16)])


def _check_half_precision_sum(operand: ShapedArray, *, axes: tuple[int, ...]) -> None:
  """`jax_allow_f16_reductions=False` refuses sums of float16/bfloat16 over more than one
  element, which lose precision (jnp.sum accumulates them in float32 and is unaffected)."""
  if (operand.dtype in _HALF_FLOATS and not config_values.jax_allow_f16_reductions
      and any(operand.shape[a] != 1 for a in axes)):
    raise ValueError(f"reduce_sum on operand {operand.str_short()} is not allowed when "
                     "jax_allow_f16_reductions=False.")


def _axis_reduction(name: str, accepted: Sequence[Any], monoid: Monoid) -> core.Primitive:
  def shape_rule(operand: ShapedArray, *, axes: tuple[int, ...]) -> tuple[int, ...]:
    utils.check_dtypes(name, accepted, operand)
    return _reduced_shape(name, operand.shape, axes)

  def lowering(ctx: mlir.LoweringRuleContext, operand: ir.Value, *, axes: tuple[int, ...]
               ) -> list[ir.Value]:
    dtype = ctx.avals_in[0].dtype
    op = _reduce_op(ctx.avals_out, [operand], [monoid.init(dtype)], axes)
    return with_body(op, [dtype], monoid_body(monoid))

  config_check = _check_half_precision_sum if name == "reduce_sum" else None
  prim = utils.standard_primitive(name, shape_rule, utils.input_dtype,
                                  config_check=config_check)
  mlir.register_lowering(prim, lowering)
  batching.primitive_batchers[prim] = _axis_reduction_batch_rule(prim)
  return prim


reduce_sum_p = _axis_reduction("reduce_sum", _num, ADD)
reduce_prod_p = _axis_reduction("reduce_prod", _num, MUL)
reduce_max_p = _axis_reduction("reduce_max", _max_min, MAX)
reduce_min_p = _axis_reduction("reduce_min", _max_min, MIN)
reduce_and_p = _axis_reduction("reduce_and", _int_or_bool, AND)
reduce_or_p = _axis_reduction("reduce_or", _int_or_bool, OR)
reduce_xor_p = _axis_reduction("reduce_xor", _int_or_bool, XOR)


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
  """Sum over `axes`, in `operand`'s dtype (integer sums wrap around on overflow), laid out
  as `out_sharding` (see `sharding_constraint.apply_out_sharding`).

  Example: `reduce_sum(jnp.ones((2, 3)), (1,))` is `[3., 3.]`.
  """
  if out_sharding is not None:
    return apply_out_sharding(reduce_sum(operand, axes), out_sharding, "reduce_sum")
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


def _kept_dims(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
  """The operand dimensions a reduction over `axes` keeps, in order."""
  return tuple(i for i in range(ndim) if i not in axes)


def _reduce_sum_transpose(ct: Any, operand: ad.UndefinedPrimal, *, axes: tuple[int, ...]
                          ) -> list[Any]:
  """Every summed element receives the cotangent of its sum: broadcast it back."""
  aval = operand.aval
  if type(ct) is ad.Zero:
    return [ad.Zero(aval.to_tangent_aval())]
  return [lax.broadcast_in_dim(ct, aval.shape, _kept_dims(aval.ndim, axes))]


def _reduce_prod_jvp(g: Any, x: Any, *, axes: tuple[int, ...]) -> Any:
  """d prod(x) = sum_i g_i prod_{j != i} x_j. The products of all other elements are an
  exclusive running product from each side, multiplied: no division, so elements that are
  zero get their true coefficient (zero unless they are the only zero)."""
  x, g = _reduced_axes_first(x, axes), _reduced_axes_first(g, axes)
  before = _shift(cumprod(x, 0), 0, 1, 1)
  after = _shift(cumprod(x, 0, reverse=True), 0, 1, 1, reverse=True)
  return reduce_sum(lax.mul(g, lax.mul(before, after)), (0,))


def _reduced_axes_first(x: Any, axes: tuple[int, ...]) -> Any:
  """`x` with the reduced axes flattened into one leading axis, the kept ones after it."""
  from jaxon._src.lax import shape_ops  # shape_ops builds on this module
  shape = np.shape(x)
  kept = _kept_dims(len(shape), axes)
  x = shape_ops.transpose(x, axes + kept)
  return shape_ops.reshape(x, (int(np.prod([shape[a] for a in axes])),
                               *(shape[d] for d in kept)))


def _reduce_chooser_jvp(prim: core.Primitive) -> Callable:
  """The tangent of max (min) is the tangent at the extremum; where several elements tie
  for it, the mean of their tangents (JAX's rule)."""
  def jvp(primals: Sequence[Any], tangents: Sequence[Any], *, axes: tuple[int, ...]
          ) -> tuple[Any, Any]:
    (x,), (g,) = primals, tangents
    out = prim.bind(x, axes=axes)
    shape = np.shape(x)
    at_extremum = lax.eq(x, lax.broadcast_in_dim(out, shape, _kept_dims(len(shape), axes)))
    at_extremum = lax.convert_element_type(at_extremum, dtypes.dtype(g))
    counts = reduce_sum(at_extremum, axes)
    return out, lax.div(reduce_sum(lax.mul(g, at_extremum), axes), counts)
  return jvp


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)
ad.defjvp(reduce_prod_p, _reduce_prod_jvp)
ad.primitive_jvps[reduce_max_p] = _reduce_chooser_jvp(reduce_max_p)
ad.primitive_jvps[reduce_min_p] = _reduce_chooser_jvp(reduce_min_p)
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
  ad.defjvp(_p, None)  # integer and bool outputs: the tangent is a float0 zero


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
    return with_body(op, [aval.dtype, index_dtype], body)[1:]
  return rule


def _argminmax(name: str, direction: str) -> core.Primitive:
  prim = utils.standard_primitive(name, _argminmax_shape_rule(name),
                                  lambda operand, *, axes, index_dtype: index_dtype,
                                  lambda operand, *, axes, index_dtype: False)
  mlir.register_lowering(prim, _argminmax_lowering(direction))
  ad.defjvp(prim, None)  # integer outputs: the tangent is a float0 zero
  batching.primitive_batchers[prim] = _axis_reduction_batch_rule(prim)
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
    op = reduce_window_op(ctx.avals_out, [operand], [monoid.init(aval.dtype)],
                          window_dimensions=window, window_strides=ones, padding=padding,
                          base_dilation=ones, window_dilation=ones)
    return with_body(op, [aval.dtype], monoid_body(monoid))

  prim = utils.standard_primitive(name, shape_rule, utils.input_dtype)
  mlir.register_lowering(prim, lowering)
  return prim


cumsum_p = _cumulative("cumsum", _num, ADD)
cumprod_p = _cumulative("cumprod", _num, MUL)
cummax_p = _cumulative("cummax", _num, MAX)
cummin_p = _cumulative("cummin", _num, MIN)
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


def _shift(x: Any, axis: int, distance: int, fill: Any, reverse: bool = False) -> Any:
  """`x` moved `distance` places along `axis`, toward its end (its start if `reverse`),
  with `fill` entering the vacated places: the previous elements of a scan."""
  from jaxon._src.lax import shape_ops  # shape_ops builds on this module
  config = [(0, 0, 0)] * np.ndim(x)
  config[axis] = (-distance, distance, 0) if reverse else (distance, -distance, 0)
  return shape_ops.pad(x, np.array(fill, dtypes.dtype(x)), config)


def _linear_recurrence(a: Any, b: Any, axis: int, reverse: bool) -> Any:
  """h with h_k = a_k h_{k-1} + b_k along `axis` (h_{-1} = 0; k runs backwards if
  `reverse`), by recursive doubling: after the step with distance d, (a_k, b_k) describe
  the last 2d steps ending at k, h_k = a_k h_{k-2d} + b_k. log2(n) steps of shifts,
  products and sums, so the result is linear in `b` through primitives that transpose."""
  size, distance = np.shape(b)[axis], 1
  while distance < size:
    b = lax.add(lax.mul(a, _shift(b, axis, distance, 0, reverse)), b)
    if 2 * distance < size:
      a = lax.mul(a, _shift(a, axis, distance, 1, reverse))
    distance *= 2
  return b


def _cumprod_coefficients(x: Any, out: Any, axis: int, reverse: bool) -> tuple[Any, Any]:
  """y_k = y_{k-1} x_k, so dy_k = x_k dy_{k-1} + y_{k-1} dx_k: no division by x."""
  return x, _shift(out, axis, 1, 1, reverse)


def _cumlogsumexp_coefficients(x: Any, out: Any, axis: int, reverse: bool
                               ) -> tuple[Any, Any]:
  """y_k = log(exp(y_{k-1}) + exp(x_k)), so dy_k = exp(y_{k-1} - y_k) dy_{k-1} +
  exp(x_k - y_k) dx_k; both weights are at most 1 (y_k bounds y_{k-1} and x_k). While
  every element so far is -inf, so is y_k: the weights are then 0, not exp(-inf + inf)."""
  before = _shift(out, axis, 1, -np.inf, reverse)
  out = lax.select(lax.is_finite(out), out, lax.full_like(out, 0))
  return transcendental.exp(lax.sub(before, out)), transcendental.exp(lax.sub(x, out))


def _cumchooser_coefficients(better: Callable, not_worse: Callable, identity: Callable
                             ) -> Callable:
  """The running max (min) takes the tangent of its extremum, the mean over the elements
  so far that tie for it (as `reduce_max`). With c_k the number of such elements:
  a new extremum restarts, dy_k = dx_k (c_k = 1); a tie averages in, dy_k =
  (c_{k-1} dy_{k-1} + dx_k) / c_k; a worse element keeps dy_{k-1}. The counts follow the
  same kind of recurrence, c_k = (1 - new_k) c_{k-1} + not_worse_k."""
  def coefficients(x: Any, out: Any, axis: int, reverse: bool) -> tuple[Any, Any]:
    dtype = dtypes.dtype(x)
    before = _shift(out, axis, 1, identity(dtype), reverse)
    new = lax.convert_element_type(better(x, before), dtype)
    joins = lax.convert_element_type(not_worse(x, before), dtype)
    keeps = lax.sub(np.array(1, dtype), new)
    count = _linear_recurrence(keeps, joins, axis, reverse)
    count_before = _shift(count, axis, 1, 0, reverse)
    return lax.div(lax.mul(keeps, count_before), count), lax.div(joins, count)
  return coefficients


def _cumulative_jvp(prim: core.Primitive, coefficients: Callable) -> Callable:
  """Tangents of a scan y_k = combine(y_{k-1}, x_k) obey a linear recurrence
  dy_k = a_k dy_{k-1} + b_k dx_k whose coefficients come from the primals."""
  def jvp(primals: Sequence[Any], tangents: Sequence[Any], *, axis: int, reverse: bool
          ) -> tuple[Any, Any]:
    (x,), (g,) = primals, tangents
    out = prim.bind(x, axis=axis, reverse=reverse)
    a, b = coefficients(x, out, axis, reverse)
    return out, _linear_recurrence(a, lax.mul(b, g), axis, reverse)
  return jvp


def _cumulative_batch_rule(prim: core.Primitive) -> Callable:
  def rule(vals: Sequence[Any], dims: Sequence[int | None], *, axis: int, reverse: bool
           ) -> tuple[Any, int]:
    (x,), (bdim,) = vals, dims
    return prim.bind(x, axis=axis + (axis >= bdim), reverse=reverse), bdim
  return rule


def _cumsum_transpose(ct: Any, operand: ad.UndefinedPrimal, *, axis: int, reverse: bool
                      ) -> list[Any]:
  """Element i feeds every running sum from i on: its cotangent is their suffix sum."""
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval.to_tangent_aval())]
  return [cumsum(ct, axis, not reverse)]


ad.deflinear(cumsum_p, _cumsum_transpose)
ad.primitive_jvps[cumprod_p] = _cumulative_jvp(cumprod_p, _cumprod_coefficients)
ad.primitive_jvps[cumlogsumexp_p] = _cumulative_jvp(cumlogsumexp_p,
                                                    _cumlogsumexp_coefficients)
ad.primitive_jvps[cummax_p] = _cumulative_jvp(
    cummax_p, _cumchooser_coefficients(lax.gt, lax.ge, MAX.identity))
ad.primitive_jvps[cummin_p] = _cumulative_jvp(
    cummin_p, _cumchooser_coefficients(lax.lt, lax.le, MIN.identity))
for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
  batching.primitive_batchers[_p] = _cumulative_batch_rule(_p)


# ----------------------------------------------------------------------------- any computation

def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int], out_sharding: Any = None) -> Any:
  """Reduces `operands` over `dimensions` with `computation`, starting from `init_values`.

  `operands` may be a pytree of equally-shaped arrays; `computation` then takes and returns
  pytrees of scalars of that structure, `(accumulators, elements) -> accumulators`. It must
  be associative and commutative with `init_values` as identity. A single operand with
  `lax.add`, `lax.mul`, `lax.max`, `lax.min` or a `lax.bitwise_*` op and its identity uses
  `reduce_sum` etc. Example: `reduce(x, 0., lax.add, (0,))` is `reduce_sum(x, (0,))`.
  Each result is laid out as `out_sharding` (see `sharding_constraint.apply_out_sharding`).
  """
  if out_sharding is not None:
    return apply_out_sharding(reduce(operands, init_values, computation, dimensions),
                              out_sharding, "reduce")
  flat_operands, tree = flatten_operands("reduce", operands, init_values)
  flat_inits = tree_util.tree_leaves(init_values)
  axes = _canonical_axes(flat_operands[0], dimensions)
  monoid = monoid_of(computation, flat_operands, flat_inits)
  if monoid is not None:
    return _AXIS_PRIMITIVES[monoid].bind(flat_operands[0], axes=axes)
  jaxpr = computation_jaxpr(computation, tree, scalar_avals(flat_operands))
  return tree.unflatten(reduce_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr,
                                      dimensions=axes))


_AXIS_PRIMITIVES = {ADD: reduce_sum_p, MUL: reduce_prod_p, MAX: reduce_max_p,
                    MIN: reduce_min_p, AND: reduce_and_p, OR: reduce_or_p, XOR: reduce_xor_p}
_MONOID_OF_LAX_FUNCTION = {"add": ADD, "mul": MUL, "max": MAX, "min": MIN,
                           "bitwise_and": AND, "bitwise_or": OR, "bitwise_xor": XOR}


def flatten_operands(name: str, operands: Any, init_values: Any
                     ) -> tuple[list[Any], tree_util.PyTreeDef]:
  flat, tree = tree_util.tree_flatten(operands)
  init_tree = tree_util.tree_structure(init_values)
  if tree != init_tree:
    raise ValueError(f"{name}: operands and init_values must have the same structure, got "
                     f"{tree} and {init_tree}")
  if not flat:
    raise ValueError(f"{name} needs at least one operand")
  return flat, tree


def monoid_of(computation: Callable, operands: Sequence[Any], inits: Sequence[Any]
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


def scalar_avals(operands: Sequence[Any]) -> tuple[ShapedArray, ...]:
  return tuple(ShapedArray((), core.get_aval(x).dtype) for x in operands)


@caches.lru_cache(maxsize=256)
def computation_jaxpr(computation: Callable, tree: tree_util.PyTreeDef,
                      avals: tuple[ShapedArray, ...], what: str = "reduction computation"
                      ) -> core.ClosedJaxpr:
  """`computation` traced on scalars: flat (accumulators..., elements...) to flat new
  accumulators. Cached, so repeated reductions reuse one jaxpr (and one executable).
  `what` names the computation in errors."""
  def flat_computation(*args: Any) -> list[Any]:
    n = len(avals)
    out = computation(tree.unflatten(args[:n]), tree.unflatten(args[n:]))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    if out_tree != tree:
      raise TypeError(f"the {what} must return the operands' structure "
                      f"{tree}, got {out_tree}")
    return out_leaves
  with core.set_current_trace(core.EvalTrace()):
    jaxpr, consts = pe.trace_to_jaxpr(flat_computation, avals * 2)
  if any(isinstance(c, core.Tracer) for c in consts):
    raise TypeError(f"the {what} closes over traced values: XLA runs it on scalars inside "
                    f"the operation, where only its arguments and constants exist")
  out = tuple((a.shape, a.dtype) for a in jaxpr.out_avals)
  if out != tuple((a.shape, a.dtype) for a in avals):
    raise TypeError(f"the {what} must return scalars of the operands' dtypes "
                    f"{[a.str_short() for a in avals]}, got "
                    f"{[a.str_short() for a in jaxpr.out_avals]}")
  return core.ClosedJaxpr(jaxpr, consts)


def split_operands(name: str, avals: Sequence[ShapedArray]
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
  operands, _ = split_operands("reduce", avals)
  shape = _reduced_shape("reduce", operands[0].shape, dimensions)
  return [ShapedArray(shape, x.dtype, x.weak_type) for x in operands]


def _reduce_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, jaxpr: core.ClosedJaxpr,
                     dimensions: tuple[int, ...]) -> list[ir.Value]:
  n = len(args) // 2
  op = _reduce_op(ctx.avals_out, args[:n], args[n:], dimensions)
  body = lambda *xs: mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr, xs)
  return with_body(op, [a.dtype for a in ctx.avals_in[:n]], body)


def _reduce_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, jaxpr: core.ClosedJaxpr,
                dimensions: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
  """Differentiates the reduction written as a balanced tree of elementwise applications
  of the computation, which needs only the computation's own derivative (and is linear
  in the tangents through slices, pads and that derivative). The init values are the
  computation's identity, so they carry no tangent."""
  n = len(primals) // 2
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise NotImplementedError("Differentiation of lax.reduce with respect to its init "
                              "values is not implemented (they must be constants)")
  inits = primals[n:]
  return ad.jvp_flat(lambda *xs: _reduce_tree(jaxpr, xs, inits, dimensions), primals[:n],
                     tangents[:n])


def _reduce_tree(jaxpr: core.ClosedJaxpr, operands: Sequence[Any], inits: Sequence[Any],
                 dimensions: tuple[int, ...]) -> list[Any]:
  """The reduction as halves combined elementwise until one element is left (an odd half
  is completed with the init value)."""
  from jaxon._src.lax import shape_ops, slicing  # both build on this module
  xs = [_reduced_axes_first(x, dimensions) for x in operands]
  while (size := np.shape(xs[0])[0]) > 1:
    half = (size + 1) // 2
    odd_config = [(0, size % 2, 0)] + [(0, 0, 0)] * (np.ndim(xs[0]) - 1)
    firsts = [slicing.slice_in_dim(x, 0, half) for x in xs]
    seconds = [shape_ops.pad(slicing.slice_in_dim(x, half, size), init, odd_config)
               for x, init in zip(xs, inits)]
    xs = _apply_elementwise(jaxpr, [*firsts, *seconds])
  if size == 0:
    kept_shape = np.shape(xs[0])[1:]
    return [lax.broadcast_in_dim(init, kept_shape, ()) for init in inits]
  return [shape_ops.squeeze(x, (0,)) for x in xs]


def _apply_elementwise(jaxpr: core.ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
  """The scalar computation applied to each element of equally shaped arrays (batched
  over their flattened elements)."""
  from jaxon._src.lax import shape_ops  # shape_ops builds on this module
  shape = np.shape(args[0])
  size = int(np.prod(shape))
  flat = [shape_ops.reshape(a, (size,)) for a in args]
  outs, dims = batching.batch_flat(
      lambda *xs: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), flat, [0] * len(flat),
      size, None)
  return [shape_ops.reshape(batching.bdim_at_front(o, d, size), shape)
          for o, d in zip(outs, dims)]


def mapped_operands(name: str, vals: Sequence[Any], dims: Sequence[int | None]
                    ) -> tuple[list[Any], int]:
  """The operands of a general reduction, all mapped along one dimension: where they
  already share it, else in front. The init values must be unmapped: they are the
  computation's identity, the same for every example."""
  n = len(vals) // 2
  if any(d is not batching.not_mapped for d in dims[n:]):
    raise NotImplementedError(f"vmap of lax.{name} over its init values is not supported: "
                              "they must be the same for every example")
  operand_dims = dims[:n]
  mapped = {d for d in operand_dims if d is not batching.not_mapped}
  if len(mapped) == 1 and batching.not_mapped not in operand_dims:
    return list(vals[:n]), mapped.pop()
  size = next(np.shape(v)[d] for v, d in zip(vals, operand_dims)
              if d is not batching.not_mapped)
  return [batching.bdim_at_front(v, d, size) for v, d in zip(vals[:n], operand_dims)], 0


def _reduce_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                       jaxpr: core.ClosedJaxpr, dimensions: tuple[int, ...]
                       ) -> tuple[list[Any], list[int]]:
  operands, bdim = mapped_operands("reduce", vals, dims)
  outs = reduce_p.bind(*operands, *vals[len(operands):], jaxpr=jaxpr,
                       dimensions=_shift_past(dimensions, bdim))
  return outs, [bdim - sum(d < bdim for d in dimensions)] * len(outs)


reduce_p = utils.standard_multi_result_primitive("reduce", _reduce_abstract_eval)
mlir.register_lowering(reduce_p, _reduce_lowering)
ad.primitive_jvps[reduce_p] = _reduce_jvp
batching.primitive_batchers[reduce_p] = _reduce_batch_rule
