"""Contractions: `dot_general`, and `dot` and `batch_matmul` built on it.

`dot_general` multiplies two arrays and sums over pairs of *contracting* dimensions
(`lhs_contracting[i]` with `rhs_contracting[i]`), while pairs of *batch* dimensions stay
aligned, as in a batched matrix product. The result's dimensions are the batch dimensions,
then the free dimensions of lhs, then those of rhs, each in operand order.

`precision` trades speed for accuracy on matrix units (bfloat16 passes on TPU, TF32 on GPU);
on CPU every setting computes in full precision. `preferred_element_type` names the type to
accumulate in and return, e.g. int32 products of int8 operands or float32 ones of bfloat16.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.config import config
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import dot_algorithms, lax, shape_ops, utils
from jaxon._src.lax.dot_algorithms import DotAlgorithm, DotAlgorithmPreset
from jaxon._src.lax.sharding_constraint import apply_out_sharding


class Precision(enum.Enum):
  """How precisely matrix units multiply float32 operands: DEFAULT is fastest (one bfloat16
  pass on TPU), HIGH uses three passes (or TF32), HIGHEST is full float32.

  The strings JAX accepts name the same levels: 'default'/'fastest'/'bfloat16',
  'high'/'bfloat16_3x'/'tensorfloat32', 'highest'/'float32'.
  """

  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value: object) -> Precision | None:
    return _PRECISION_STRINGS.get(value) if isinstance(value, str) else None

  def __repr__(self) -> str:
    return f"Precision.{self.name}"

  def __str__(self) -> str:
    return self.name


_PRECISION_STRINGS = {
    "default": Precision.DEFAULT, "fastest": Precision.DEFAULT, "bfloat16": Precision.DEFAULT,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
}

PrecisionLike = (None | str | Precision | tuple[str, str] | tuple[Precision, Precision]
                 | DotAlgorithm | DotAlgorithmPreset)
CanonicalPrecision = None | tuple[Precision, Precision] | DotAlgorithm | DotAlgorithmPreset
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


def canonicalize_precision(precision: PrecisionLike) -> CanonicalPrecision:
  """None (the backend default, or `jax_default_matmul_precision` when set), one
  `Precision` per operand, or a dot algorithm (a `DotAlgorithmPreset`, also by name, or a
  `DotAlgorithm`, its types made dtypes so that it prints and compares by them)."""
  if precision is None:
    default = config.jax_default_matmul_precision
    return None if default is None else canonicalize_precision(default)
  if isinstance(precision, DotAlgorithmPreset):
    return precision
  if isinstance(precision, DotAlgorithm):
    return precision._replace(**{f: np.dtype(getattr(precision, f)) for f in (
        "lhs_precision_type", "rhs_precision_type", "accumulation_type")})
  if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
    return DotAlgorithmPreset[precision]
  if isinstance(precision, (str, Precision)):
    return (_one_precision(precision),) * 2
  if isinstance(precision, (tuple, list)) and len(precision) == 2:
    return (_one_precision(precision[0]), _one_precision(precision[1]))
  raise TypeError(f"precision argument must be None, a string in {sorted(_PRECISION_STRINGS)}, "
                  f"a lax.Precision value, a tuple of two of those, a lax.DotAlgorithmPreset "
                  f"(or its name) or a lax.DotAlgorithm; got {precision!r}.")


def _one_precision(p: str | Precision) -> Precision:
  try:
    return Precision(p)
  except ValueError:
    raise ValueError(f"precision {p!r} is not one of {sorted(_PRECISION_STRINGS)} or a "
                     "lax.Precision value.") from None


def precision_config(precision: CanonicalPrecision) -> ir.ArrayAttr | None:
  """The `precision_config` attribute of `stablehlo.dot_general` and `convolution`
  (DEFAULT for both operands beside an algorithm)."""
  if precision is None:
    return None
  if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
    precision = (Precision.DEFAULT,) * 2
  return ir.ArrayAttr.get([hlo.PrecisionAttr.get(p.name) for p in precision])


def canonicalize_preferred_element_type(preferred_element_type: Any) -> np.dtype | None:
  if preferred_element_type is None:
    return None
  return dtypes.canonicalize_dtype(preferred_element_type)


# ----------------------------------------------------------------------------- user functions

def dot_general(lhs: Any, rhs: Any, dimension_numbers: DotDimensionNumbers,
                precision: PrecisionLike = None, preferred_element_type: Any = None,
                out_sharding: Any = None) -> Any:
  """General tensor contraction (XLA's DotGeneral).

  Args:
    lhs, rhs: arrays of any rank.
    dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`,
      sequences of dimension indices; paired dimensions must have equal sizes.
    precision: None, a `Precision` (or its string name), or a pair of them, one per operand.
    preferred_element_type: the dtype to accumulate in and return; by default the
      operands' dtype (the wider one, if they differ the way XLA allows).

  Returns:
    An array of shape `batch + lhs_free + rhs_free`.

  Example: a batched matrix product `(b, m, k) x (b, k, n) -> (b, m, n)` is
  `dot_general(x, y, (((2,), (1,)), ((0,), (0,))))`.
  """
  if out_sharding is not None:
    return apply_out_sharding(dot_general(lhs, rhs, dimension_numbers, precision,
                                          preferred_element_type), out_sharding, "dot_general")
  return dot_general_p.bind(
      lhs, rhs, dimension_numbers=_canonical_dimension_numbers(dimension_numbers),
      precision=canonicalize_precision(precision),
      preferred_element_type=canonicalize_preferred_element_type(preferred_element_type),
      out_sharding=None)


def dot(lhs: Any, rhs: Any, precision: PrecisionLike = None,
        preferred_element_type: Any = None, *,
        dimension_numbers: DotDimensionNumbers | None = None, out_sharding: Any = None) -> Any:
  """Vector/matrix product: vector·vector, matrix·vector, vector·matrix or matrix·matrix,
  contracting the last dimension of `lhs` with the first of `rhs`.

  With `dimension_numbers` it is `dot_general`.

  Example: `dot(jnp.ones((2, 3)), jnp.ones(3))` is `[3., 3.]`.
  """
  if dimension_numbers is None:
    lhs_shape, rhs_shape = np.shape(lhs), np.shape(rhs)
    if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
            and lhs_shape[-1] == rhs_shape[0]):
      raise ValueError(f"Incompatible shapes for dot: got {lhs_shape} and {rhs_shape}. "
                       "lax.dot takes vectors or matrices whose inner sizes agree; use "
                       "dot_general (or pass dimension_numbers) for other contractions.")
    dimension_numbers = (((len(lhs_shape) - 1,), (0,)), ((), ()))
  return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                     out_sharding)


def batch_matmul(lhs: Any, rhs: Any, precision: PrecisionLike = None) -> Any:
  """Batched matrix product `(..., m, k) x (..., k, n) -> (..., m, n)` of operands with
  equal ranks and equal leading (batch) dimensions."""
  lhs_ndim, rhs_ndim = np.ndim(lhs), np.ndim(rhs)
  if min(lhs_ndim, rhs_ndim) < 2:
    raise ValueError(f"Arguments to batch_matmul must be at least 2D, got shapes "
                     f"{np.shape(lhs)} and {np.shape(rhs)}.")
  if lhs_ndim != rhs_ndim:
    raise ValueError(f"Arguments to batch_matmul must have the same ndim, got shapes "
                     f"{np.shape(lhs)} and {np.shape(rhs)}.")
  batch = tuple(range(lhs_ndim - 2))
  return dot_general(lhs, rhs, (((lhs_ndim - 1,), (rhs_ndim - 2,)), (batch, batch)),
                     precision=precision)


def _canonical_dimension_numbers(dimension_numbers: Any) -> tuple:
  """Tuples of ints (params must be hashable); sequences of any kind are accepted."""
  try:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    return tuple(tuple(tuple(int(d) for d in dims) for dims in pair) for pair in (
        (lhs_contract, rhs_contract), (lhs_batch, rhs_batch)))
  except (TypeError, ValueError):
    raise TypeError("dot_general dimension_numbers must be ((lhs_contracting, "
                    "rhs_contracting), (lhs_batch, rhs_batch)), each a sequence of ints; got "
                    f"{dimension_numbers!r}.") from None


# ----------------------------------------------------------------------------- the primitive

def _dot_general_shape_rule(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers: tuple,
                            **params: Any) -> tuple[int, ...]:
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  _check_operand_dims("lhs", lhs, lhs_contract, lhs_batch)
  _check_operand_dims("rhs", rhs, rhs_contract, rhs_batch)
  _check_paired_sizes("batch", lhs, rhs, lhs_batch, rhs_batch)
  _check_paired_sizes("contracting", lhs, rhs, lhs_contract, rhs_contract)
  batch_shape = tuple(lhs.shape[d] for d in lhs_batch)
  return batch_shape + _free_shape(lhs, lhs_contract + lhs_batch) + _free_shape(
      rhs, rhs_contract + rhs_batch)


def _check_operand_dims(side: str, aval: ShapedArray, contract: tuple[int, ...],
                        batch: tuple[int, ...]) -> None:
  for kind, dims in (("contracting", contract), ("batch", batch)):
    if any(not 0 <= d < aval.ndim for d in dims):
      raise TypeError(f"dot_general requires {side} {kind} dimensions {dims} to be in range "
                      f"for an operand of shape {aval.shape}.")
  if len(set(contract + batch)) != len(contract + batch):
    raise TypeError(f"dot_general requires {side} contracting and batch dimensions to be "
                    f"distinct, got contracting {contract} and batch {batch}.")


def _check_paired_sizes(kind: str, lhs: ShapedArray, rhs: ShapedArray,
                        lhs_dims: tuple[int, ...], rhs_dims: tuple[int, ...]) -> None:
  if len(lhs_dims) != len(rhs_dims):
    raise TypeError(f"dot_general requires equal numbers of lhs and rhs {kind} dimensions, "
                    f"got {lhs_dims} and {rhs_dims}.")
  lhs_sizes = tuple(lhs.shape[d] for d in lhs_dims)
  rhs_sizes = tuple(rhs.shape[d] for d in rhs_dims)
  if lhs_sizes != rhs_sizes:
    raise TypeError(f"dot_general requires {kind} dimensions to have the same shape, got "
                    f"{lhs_sizes} and {rhs_sizes} (lhs {lhs.str_short()} dimensions "
                    f"{lhs_dims}, rhs {rhs.str_short()} dimensions {rhs_dims}).")


def _free_shape(aval: ShapedArray, used: tuple[int, ...]) -> tuple[int, ...]:
  return tuple(d for i, d in enumerate(aval.shape) if i not in used)


def _dot_general_dtype_rule(lhs: ShapedArray, rhs: ShapedArray, *,
                            preferred_element_type: np.dtype | None, **params: Any) -> np.dtype:
  utils.check_dtypes("dot_general", (np.number, np.bool_), lhs, rhs)
  return upcast_to_preferred("dot_general", operand_result_dtype("dot_general", lhs, rhs),
                             preferred_element_type, lhs, rhs)


def upcast_to_preferred(name: str, result: np.dtype, preferred_element_type: np.dtype | None,
                        *avals: ShapedArray) -> np.dtype:
  """The result dtype given `preferred_element_type`, which may widen integers but not
  narrow them (floats may go either way, e.g. float32 operands into a bfloat16 result)."""
  if preferred_element_type is None or preferred_element_type == result:
    return result
  if not dtypes.is_float(result) and _bit_width(preferred_element_type) < _bit_width(result):
    raise TypeError(f"{name} preferred_element_type must not be narrower than the operands' "
                    f"type, got preferred_element_type {np.dtype(preferred_element_type).name} "
                    f"for operands {', '.join(a.str_short() for a in avals)}.")
  return preferred_element_type


def operand_result_dtype(name: str, lhs: ShapedArray, rhs: ShapedArray) -> np.dtype:
  """The dtype XLA computes a product of `lhs` and `rhs` in: the more precise one (a float
  beats an integer, more exponent and mantissa bits beat fewer, wider beats narrower, signed
  beats unsigned). Two distinct types that tie are an error."""
  if lhs.dtype == rhs.dtype:  # the usual product: nothing to rank
    return lhs.dtype
  lhs_rank, rhs_rank = _precision_rank(lhs.dtype), _precision_rank(rhs.dtype)
  if lhs_rank == rhs_rank and lhs.dtype != rhs.dtype:
    raise TypeError(f"lax.{name} cannot combine operands {lhs.str_short()} and "
                    f"{rhs.str_short()}: neither type is wider; convert one with "
                    "lax.convert_element_type.")
  return lhs.dtype if lhs_rank >= rhs_rank else rhs.dtype


def _precision_rank(dt: np.dtype) -> tuple:
  real = np.dtype(dtypes.finfo(dt).dtype) if dtypes.is_complex(dt) else np.dtype(dt)
  is_float = dtypes.is_float(real)
  return (dtypes.is_complex(dt), dtypes.finfo(real).maxexp if is_float else -1,
          dtypes.finfo(real).nmant if is_float else -1, _bit_width(real),
          not dtypes.issubdtype(real, np.unsignedinteger))


def _bit_width(dt: Any) -> int:
  dt = np.dtype(dt)
  return 1 if dt == np.bool_ else dt.itemsize * 8


dot_general_p = utils.standard_primitive("dot_general", _dot_general_shape_rule,
                                         _dot_general_dtype_rule)


def convert_operands(ctx: mlir.LoweringRuleContext, operands: Sequence[ir.Value]
                     ) -> list[ir.Value]:
  """Converts operands to the result dtype, which is how XLA on CPU computes mixed-type and
  `preferred_element_type` products."""
  out_dtype = ctx.avals_out[0].dtype
  return [x if aval.dtype == out_dtype else
          hlo.convert(mlir.aval_to_ir_type(aval.update(dtype=out_dtype)), x)
          for x, aval in zip(operands, ctx.avals_in)]


def _dot_general_lowering(ctx: mlir.LoweringRuleContext, lhs: ir.Value, rhs: ir.Value, *,
                          dimension_numbers: tuple, precision: CanonicalPrecision,
                          **params: Any) -> list[ir.Value]:
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  dnums = hlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=list(lhs_batch), rhs_batching_dimensions=list(rhs_batch),
      lhs_contracting_dimensions=list(lhs_contract),
      rhs_contracting_dimensions=list(rhs_contract))
  if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
    return [_dot_with_algorithm(ctx, lhs, rhs, dnums, precision)]
  lhs, rhs = convert_operands(ctx, [lhs, rhs])
  return [hlo.dot_general(mlir.aval_to_ir_type(ctx.avals_out[0]), lhs, rhs, dnums,
                          precision_config=precision_config(precision))]


def _dot_with_algorithm(ctx: mlir.LoweringRuleContext, lhs: ir.Value, rhs: ir.Value,
                        dnums: Any, algorithm: DotAlgorithm | DotAlgorithmPreset
                        ) -> ir.Value:
  """The product in the algorithm's types: operands converted to them, the accumulator
  converted back to the result type."""
  if isinstance(algorithm, DotAlgorithmPreset):
    dot_algorithms.check_supported_on_cpu(algorithm)
  (lhs_aval, rhs_aval), (out_aval,) = ctx.avals_in, ctx.avals_out
  lhs_type, rhs_type, acc_type = dot_algorithms.compute_types(
      algorithm, lhs_aval.dtype, rhs_aval.dtype, out_aval.dtype)
  lhs, rhs = (x if aval.dtype == t else hlo.convert(
      mlir.aval_to_ir_type(aval.update(dtype=t)), x)
      for x, aval, t in ((lhs, lhs_aval, lhs_type), (rhs, rhs_aval, rhs_type)))
  attr = algorithm.hlo_attr(lhs_type, rhs_type)
  out = hlo.dot_general(mlir.aval_to_ir_type(out_aval.update(dtype=acc_type)), lhs, rhs,
                        dnums, precision_config=precision_config(algorithm),
                        **({} if attr is None else {"algorithm": attr}))
  return out if acc_type == out_aval.dtype else hlo.convert(mlir.aval_to_ir_type(out_aval),
                                                            out)


mlir.register_lowering(dot_general_p, _dot_general_lowering)


def _dot_general_pp_rule(eqn: core.JaxprEqn, context: core.PrintContext) -> Any:
  """Prints as JAX does: dimension numbers as lists, params that are None left out."""
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = eqn.params["dimension_numbers"]
  params = {k: v for k, v in eqn.params.items() if v is not None}
  params["dimension_numbers"] = ((list(lhs_contract), list(rhs_contract)),
                                 (list(lhs_batch), list(rhs_batch)))
  return core.pp_standard_eqn(eqn.replace(params=params), context)


core.pp_eqn_rules[dot_general_p] = _dot_general_pp_rule


# ----------------------------------------------------------------------------- derivatives

def _free_dims(ndim: int, used: tuple[int, ...]) -> tuple[int, ...]:
  return tuple(d for d in range(ndim) if d not in used)


def _dot_general_transpose(ct: Any, lhs: Any, rhs: Any, *, dimension_numbers: tuple,
                           precision: CanonicalPrecision, **params: Any) -> list[Any]:
  """Bilinear: in a linear jaxpr exactly one operand is linear (an undefined primal)."""
  if ad.is_undefined_primal(lhs):
    return [_lhs_cotangent(ct, lhs.aval, rhs, dimension_numbers, precision, **params), None]
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  swapped_dims = ((rhs_contract, lhs_contract), (rhs_batch, lhs_batch))
  # A pair of Precisions swaps with the operands; an algorithm (a DotAlgorithm is a named
  # tuple, hence `type(...) is tuple`) applies to the product as a whole.
  swapped_precision = precision[::-1] if type(precision) is tuple else precision
  return [None, _lhs_cotangent(ct, rhs.aval, lhs, swapped_dims, swapped_precision,
                               swapped=True, **params)]


def _lhs_cotangent(ct: Any, lhs_aval: ShapedArray, rhs: Any, dimension_numbers: tuple,
                   precision: CanonicalPrecision, preferred_element_type: np.dtype | None,
                   out_sharding: None, swapped: bool = False) -> Any:
  """`ct` contracted with `rhs` over rhs's free dimensions, transposed to lhs's layout and
  converted to lhs's dtype.

  `swapped` marks the rhs cotangent, computed with the operands (and dimension numbers)
  swapped: then the free dimensions of the operand we differentiate come second in `ct`."""
  if type(ct) is ad.Zero:
    return ad.Zero(lhs_aval.to_tangent_aval())
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  lhs_free = _free_dims(lhs_aval.ndim, lhs_contract + lhs_batch)
  rhs_free = _free_dims(np.ndim(rhs), rhs_contract + rhs_batch)
  n_batch = len(lhs_batch)
  start = n_batch if swapped else n_batch + len(lhs_free)
  dims = ((tuple(range(start, start + len(rhs_free))), rhs_free),
          (tuple(range(n_batch)), rhs_batch))
  product = dot_general(ct, rhs, dims, precision, preferred_element_type)
  # The product's dimensions: batch, lhs's free ones, then rhs's contracting ones in rhs
  # order, each standing for the lhs dimension it was paired with.
  by_rhs_order = tuple(lhs_contract[i] for i in np.argsort(rhs_contract))
  perm = tuple(int(i) for i in np.argsort(lhs_batch + lhs_free + by_rhs_order))
  out = product if perm == tuple(range(len(perm))) else shape_ops.transpose(product, perm)
  return lax._convert_element_type(out, lhs_aval.dtype, lhs_aval.weak_type)


def _dot_general_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                            dimension_numbers: tuple, **params: Any) -> tuple[Any, int]:
  """The batch dimension joins the dimension numbers, so nothing moves: mapped in both
  operands it is a new (leading) batch dimension; mapped in one it is a free dimension of
  that operand, which lands after the batch dimensions and the free ones before it."""
  (lhs, rhs), (lhs_bdim, rhs_bdim) = vals, dims
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  lhs_contract, lhs_batch = (_shift_past(d, lhs_bdim) for d in (lhs_contract, lhs_batch))
  rhs_contract, rhs_batch = (_shift_past(d, rhs_bdim) for d in (rhs_contract, rhs_batch))
  if lhs_bdim is not batching.not_mapped and rhs_bdim is not batching.not_mapped:
    lhs_batch, rhs_batch = (lhs_bdim, *lhs_batch), (rhs_bdim, *rhs_batch)
    out_dim = 0
  elif lhs_bdim is not batching.not_mapped:
    lhs_free = _free_dims(np.ndim(lhs), lhs_contract + lhs_batch)
    out_dim = len(lhs_batch) + lhs_free.index(lhs_bdim)
  else:
    lhs_free = _free_dims(np.ndim(lhs), lhs_contract + lhs_batch)
    rhs_free = _free_dims(np.ndim(rhs), rhs_contract + rhs_batch)
    out_dim = len(lhs_batch) + len(lhs_free) + rhs_free.index(rhs_bdim)
  new_dims = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))
  return dot_general_p.bind(lhs, rhs, dimension_numbers=new_dims, **params), out_dim


def _shift_past(dims: tuple[int, ...], bdim: int | None) -> tuple[int, ...]:
  """Dimension numbers of an operand that gained a batch dimension at `bdim`."""
  if bdim is batching.not_mapped:
    return dims
  return tuple(d + (d >= bdim) for d in dims)


ad.defjvp(dot_general_p,
          lambda g, lhs, rhs, **params: dot_general_p.bind(g, rhs, **params),
          lambda g, lhs, rhs, **params: dot_general_p.bind(lhs, g, **params))
ad.primitive_transposes[dot_general_p] = _dot_general_transpose
batching.primitive_batchers[dot_general_p] = _dot_general_batch_rule
