"""Convolution: `conv_general_dilated` and the wrappers `conv`, `conv_with_general_padding`,
`conv_transpose`.

Operands have one batch dimension (N), one feature dimension (C) and any number of spatial
dimensions; kernels have an output-feature (O), an input-feature (I) and the same spatial
dimensions. Where each sits is given by *dimension numbers*: `ConvDimensionNumbers` holds, for
lhs, rhs and output, the positions of (batch, feature, spatial...) resp. (out feature, in
feature, spatial...). They can be written as strings such as `('NHWC', 'HWIO', 'NHWC')`;
None means `NCHW`/`OIHW`/`NCHW` (batch and feature first).

Each spatial dimension is dilated (`lhs_dilation` inserts zeros between input elements, as a
transposed convolution needs; `rhs_dilation` spreads the kernel taps, "atrous"), padded by
(low, high), and swept with `window_strides`. `feature_group_count` splits the features into
groups convolved separately (depthwise convolution when it equals C); `batch_group_count`
does the same with the batch (the kernel gradient of a grouped convolution needs it).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import dot_general as dg
from jaxon._src.lax import lax, shape_ops, utils
from jaxon._src.lax.sharding_constraint import apply_out_sharding
from jaxon._src.lax.windowed_reductions import padtype_to_pads


class ConvDimensionNumbers(NamedTuple):
  """Positions of (batch, feature, spatial...) in lhs and out, and of (out feature,
  in feature, spatial...) in rhs."""

  lhs_spec: tuple[int, ...]
  rhs_spec: tuple[int, ...]
  out_spec: tuple[int, ...]


ConvGeneralDilatedDimensionNumbers = None | ConvDimensionNumbers | tuple[str, str, str]
PaddingLike = str | Sequence[tuple[int, int]]


# ----------------------------------------------------------------------------- user functions

def conv_general_dilated(
    lhs: Any, rhs: Any, window_strides: Sequence[int], padding: PaddingLike,
    lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
    feature_group_count: int = 1, batch_group_count: int = 1,
    precision: dg.PrecisionLike = None, preferred_element_type: Any = None,
    out_sharding: Any = None) -> Any:
  """General n-dimensional convolution with dilation, padding and feature/batch groups.

  Args:
    lhs: the input, rank n+2 (batch, feature and n spatial dimensions).
    rhs: the kernel, rank n+2 (out feature, in feature and n spatial dimensions).
    window_strides: n positive strides.
    padding: 'VALID' (none), 'SAME' (output size ceil(input / stride), extra padding
      high), 'SAME_LOWER' (extra padding low), or n `(low, high)` pairs (negative crops).
    lhs_dilation, rhs_dilation: n positive dilation factors (default 1).
    dimension_numbers: None, a `ConvDimensionNumbers`, or three layout strings such as
      `('NHWC', 'HWIO', 'NHWC')`.
    feature_group_count: divides lhs features into groups; rhs in-features are the
      features of one group and rhs out-features must be a multiple of the count.
    batch_group_count: divides the lhs batch into groups, each with its share of the rhs
      out-features.
    precision, preferred_element_type: as for `dot_general`.
    out_sharding: how the result is laid out (see
      `sharding_constraint.apply_out_sharding`).

  Returns:
    The convolution, laid out by the output spec.

  Example: a 3x3 'SAME' convolution of NHWC images with an HWIO kernel is
  `conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))`.
  """
  if out_sharding is not None:
    return apply_out_sharding(conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
        feature_group_count, batch_group_count, precision, preferred_element_type),
        out_sharding, "conv_general_dilated")
  lhs_shape, rhs_shape = np.shape(lhs), np.shape(rhs)
  dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  n_spatial = len(lhs_shape) - 2
  window_strides = _spatial_ints("window_strides", window_strides, n_spatial)
  lhs_dilation = _spatial_ints("lhs_dilation", lhs_dilation, n_spatial)
  rhs_dilation = _spatial_ints("rhs_dilation", rhs_dilation, n_spatial)
  if isinstance(padding, str):
    if any(d != 1 for d in lhs_dilation):
      raise ValueError("String padding is not implemented for convolutions with lhs_dilation "
                       "(transposed convolutions): pass explicit (low, high) pairs, or use "
                       "conv_transpose.")
    in_spatial = [lhs_shape[d] for d in dnums.lhs_spec[2:]]
    kernel = [_dilate_dim(rhs_shape[d], r) for d, r in zip(dnums.rhs_spec[2:], rhs_dilation)]
    padding = padtype_to_pads(in_spatial, kernel, window_strides, padding)
  return conv_general_dilated_p.bind(
      lhs, rhs, window_strides=window_strides, padding=_padding_pairs(padding, n_spatial),
      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dnums,
      feature_group_count=_positive_int("feature_group_count", feature_group_count),
      batch_group_count=_positive_int("batch_group_count", batch_group_count),
      precision=dg.canonicalize_precision(precision),
      preferred_element_type=dg.canonicalize_preferred_element_type(preferred_element_type))


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str,
         precision: dg.PrecisionLike = None, preferred_element_type: Any = None) -> Any:
  """Convolution of an NCHW-style `lhs` with an OIHW-style `rhs`, without dilation."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: PaddingLike, lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None,
                              precision: dg.PrecisionLike = None,
                              preferred_element_type: Any = None) -> Any:
  """`conv` with explicit padding pairs and dilations (NCHW/OIHW layout)."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULT_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                              4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: PaddingLike,
                   rhs_dilation: Sequence[int] | None = None,
                   dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                   transpose_kernel: bool = False, precision: dg.PrecisionLike = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
  """Transposed ("deconvolution") convolution: upsamples `lhs` by `strides`.

  It is a convolution of the input dilated by `strides`. With 'SAME' padding the output
  size is input size * stride, with 'VALID' it is (input - 1) * stride + max(kernel size,
  stride), per spatial dimension. Dimension numbers default to channels-last (`NHWC`, `HWIO`);
  `transpose_kernel=True` flips the kernel spatially and swaps its in/out features, which
  makes this the gradient of `conv_general_dilated` with respect to its input.

  A string `padding` names the forward convolution's padding; (low, high) pairs are by
  default the padding of the dilated input here, but with `use_consistent_padding=True`
  they too are the forward convolution's, as PyTorch reads them: each side gets
  `dilated kernel size - 1 - pad`, so that the result is the gradient of `conv` given the
  same padding and strides (and `transpose_kernel=True`). The default keeps the older,
  inconsistent reading that existing code relies on.
  """
  ndim = np.ndim(lhs)
  if ndim != np.ndim(rhs) or ndim < 2:
    raise ValueError(f"conv_transpose requires lhs and rhs of equal rank >= 2, got shapes "
                     f"{np.shape(lhs)} and {np.shape(rhs)}.")
  if dimension_numbers is None:
    if ndim not in _TRANSPOSE_DEFAULT_LAYOUTS:
      raise ValueError(f"conv_transpose has no default dimension_numbers for rank {ndim}; "
                       "pass them explicitly.")
    dimension_numbers = _TRANSPOSE_DEFAULT_LAYOUTS[ndim]
  dnums = conv_dimension_numbers(np.shape(lhs), np.shape(rhs), dimension_numbers)
  rhs_dilation = _spatial_ints("rhs_dilation", rhs_dilation, ndim - 2)
  strides = _spatial_ints("strides", strides, ndim - 2)
  if isinstance(padding, str) or use_consistent_padding:
    kernel = [_dilate_dim(np.shape(rhs)[d], r) for d, r in zip(dnums.rhs_spec[2:], rhs_dilation)]
    forward = ([padding] * len(kernel) if isinstance(padding, str)
               else _padding_pairs(padding, len(kernel)))
    padding = [_conv_transpose_padding(k, s, p) for k, s, p in zip(kernel, strides, forward)]
  if transpose_kernel:
    rhs = _transpose_kernel(rhs, dnums)
  return conv_general_dilated(lhs, rhs, (1,) * (ndim - 2), padding, lhs_dilation=strides,
                              rhs_dilation=rhs_dilation, dimension_numbers=dnums,
                              precision=precision, preferred_element_type=preferred_element_type)


def _conv_transpose_padding(kernel: int, stride: int, padding: str | tuple[int, int]
                            ) -> tuple[int, int]:
  """Padding of the stride-dilated input that gives 'SAME' (input * stride) or 'VALID'
  ((input - 1) * stride + max(kernel, stride)) output sizes, or that undoes a forward
  convolution's (low, high) padding."""
  if not isinstance(padding, str):
    low, high = padding
    return kernel - 1 - low, kernel - 1 - high
  if padding == "SAME":
    total = kernel + stride - 2
    low = kernel - 1 if stride > kernel - 1 else -(-total // 2)
  elif padding == "VALID":
    total = kernel + stride - 2 + max(kernel - stride, 0)
    low = kernel - 1
  else:
    raise ValueError(f"conv_transpose padding must be 'SAME', 'VALID' or (low, high) pairs, "
                     f"got {padding!r}.")
  return low, total - low


def _transpose_kernel(rhs: Any, dnums: ConvDimensionNumbers) -> Any:
  rhs = shape_ops.rev(rhs, dnums.rhs_spec[2:])
  perm = list(range(np.ndim(rhs)))
  out_dim, in_dim = dnums.rhs_spec[:2]
  perm[out_dim], perm[in_dim] = perm[in_dim], perm[out_dim]
  return shape_ops.transpose(rhs, perm)


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: ConvGeneralDilatedDimensionNumbers
                           ) -> ConvDimensionNumbers:
  """Canonical `ConvDimensionNumbers` for operands of these shapes.

  Strings name each dimension: N and C (batch, feature) in the lhs and output specs, O and
  I (out and in feature) in the kernel spec, any other letters for spatial dimensions,
  which are matched by letter and ordered as in the kernel spec.
  """
  ndim = len(lhs_shape)
  if ndim != len(rhs_shape):
    raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got shapes "
                    f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
  if ndim < 2:
    raise TypeError(f"convolution requires operands of rank >= 2 (batch and feature "
                    f"dimensions), got shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}.")
  if dimension_numbers is None:
    return ConvDimensionNumbers(*(tuple(range(ndim)),) * 3)
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    specs = dimension_numbers
  elif len(dimension_numbers) == 3 and all(isinstance(s, str) for s in dimension_numbers):
    specs = _permutations_of_strings(*dimension_numbers)
  else:
    raise TypeError("convolution dimension_numbers must be None, a ConvDimensionNumbers or a "
                    f"tuple of three layout strings, got {dimension_numbers!r}.")
  specs = ConvDimensionNumbers(*(tuple(int(d) for d in spec) for spec in specs))
  for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), specs):
    if sorted(spec) != list(range(ndim)):
      raise TypeError(f"convolution dimension_numbers {name} {spec} must be a permutation of "
                      f"range({ndim}) for operands of shapes {tuple(lhs_shape)} and "
                      f"{tuple(rhs_shape)}.")
  return specs


def _permutations_of_strings(lhs: str, rhs: str, out: str) -> ConvDimensionNumbers:
  if not len(lhs) == len(rhs) == len(out):
    raise TypeError(f"convolution dimension_numbers {lhs!r}, {rhs!r}, {out!r} must have the "
                    "same length.")
  pairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for spec, (a, b) in zip((lhs, rhs, out), pairs):
    if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
      raise TypeError(f"convolution dimension_numbers spec {spec!r} must contain '{a}' and "
                      f"'{b}' once each and no repeated letters.")
  spatial = [set(spec) - set(pair) for spec, pair in zip((lhs, rhs, out), pairs)]
  if not spatial[0] == spatial[1] == spatial[2]:
    raise TypeError(f"convolution dimension_numbers {lhs!r}, {rhs!r}, {out!r} must name the "
                    "same spatial dimensions.")
  kernel_order = [c for c in rhs if c not in "OI"]
  return ConvDimensionNumbers(*(
      (spec.index(a), spec.index(b)) + tuple(spec.index(c) for c in kernel_order)
      for spec, (a, b) in zip((lhs, rhs, out), pairs)))


def _spatial_ints(name: str, values: Sequence[int] | None, n: int) -> tuple[int, ...]:
  """Per-spatial-dimension factors (strides, dilations): n positive ints, 1 by default."""
  if values is None:
    return (1,) * n
  values = tuple(int(v) for v in values)
  if len(values) != n:
    raise ValueError(f"convolution {name} must have one entry per spatial dimension ({n}), "
                     f"got {values}.")
  if any(v < 1 for v in values):
    raise ValueError(f"convolution {name} must be positive, got {values}.")
  return values


def _padding_pairs(padding: Any, n: int) -> tuple[tuple[int, int], ...]:
  try:
    pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
  except (TypeError, ValueError):
    raise TypeError(f"convolution padding must be a string or a sequence of (low, high) "
                    f"integer pairs, got {padding!r}.") from None
  if len(pairs) != n:
    raise ValueError(f"convolution padding must have one (low, high) pair per spatial "
                     f"dimension ({n}), got {pairs}.")
  return pairs


def _positive_int(name: str, value: Any) -> int:
  if int(value) != value or value < 1:
    raise ValueError(f"conv_general_dilated {name} must be a positive integer, got {value!r}.")
  return int(value)


def _dilate_dim(size: int, dilation: int) -> int:
  return 0 if size == 0 else 1 + dilation * (size - 1)


# ----------------------------------------------------------------------------- the primitive

def _conv_shape_rule(lhs: ShapedArray, rhs: ShapedArray, *, window_strides: tuple[int, ...],
                     padding: tuple[tuple[int, int], ...], lhs_dilation: tuple[int, ...],
                     rhs_dilation: tuple[int, ...], dimension_numbers: ConvDimensionNumbers,
                     feature_group_count: int, batch_group_count: int, **params: Any
                     ) -> tuple[int, ...]:
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  batch, features = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
  out_features, in_features = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
  _check_groups(lhs, rhs, batch, features, out_features, in_features,
                feature_group_count, batch_group_count)
  if any(rhs.shape[d] == 0 for d in rhs_spec[2:]):
    raise ValueError(f"conv_general_dilated kernel spatial dimensions must be non-empty, got "
                     f"rhs {rhs.str_short()} with spatial dimensions {rhs_spec[2:]}.")
  out = [0] * lhs.ndim
  out[out_spec[0]], out[out_spec[1]] = batch // batch_group_count, out_features
  for i, (lhs_dim, rhs_dim) in enumerate(zip(lhs_spec[2:], rhs_spec[2:])):
    padded = _dilate_dim(lhs.shape[lhs_dim], lhs_dilation[i]) + sum(padding[i])
    window = _dilate_dim(rhs.shape[rhs_dim], rhs_dilation[i])
    out[out_spec[2 + i]] = max(0, (padded - window) // window_strides[i] + 1)
  return tuple(out)


def _check_groups(lhs: ShapedArray, rhs: ShapedArray, batch: int, features: int,
                  out_features: int, in_features: int, feature_group_count: int,
                  batch_group_count: int) -> None:
  shapes = f"(lhs {lhs.str_short()}, rhs {rhs.str_short()})"
  if feature_group_count > 1 and batch_group_count > 1:
    raise ValueError("At most one of feature_group_count and batch_group_count may be > 1, "
                     f"got {feature_group_count} and {batch_group_count}.")
  if features % feature_group_count:
    raise ValueError(f"conv_general_dilated feature_group_count must divide the lhs feature "
                     f"dimension size, but {feature_group_count} does not divide {features} "
                     f"{shapes}.")
  if features // feature_group_count != in_features:
    raise ValueError(f"conv_general_dilated lhs feature dimension size divided by "
                     f"feature_group_count must equal the rhs input feature dimension size, "
                     f"but {features} // {feature_group_count} != {in_features} {shapes}.")
  for count, name in ((feature_group_count, "feature"), (batch_group_count, "batch")):
    if out_features % count:
      raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a "
                       f"multiple of {name}_group_count, but {out_features} is not a multiple "
                       f"of {count} {shapes}.")
  if batch % batch_group_count:
    raise ValueError(f"conv_general_dilated batch_group_count must divide the lhs batch "
                     f"dimension size, but {batch_group_count} does not divide {batch} "
                     f"{shapes}.")


def _conv_dtype_rule(lhs: ShapedArray, rhs: ShapedArray, *, preferred_element_type: Any,
                     **params: Any) -> np.dtype:
  utils.check_dtypes("conv_general_dilated", (np.number, np.bool_), lhs, rhs)
  utils.check_same_dtypes("conv_general_dilated", lhs, rhs)
  return dg.upcast_to_preferred("conv_general_dilated", lhs.dtype, preferred_element_type,
                                lhs, rhs)


conv_general_dilated_p = utils.standard_primitive("conv_general_dilated", _conv_shape_rule,
                                                  _conv_dtype_rule)


def _conv_lowering(ctx: mlir.LoweringRuleContext, lhs: ir.Value, rhs: ir.Value, *,
                   window_strides: tuple[int, ...], padding: tuple[tuple[int, int], ...],
                   lhs_dilation: tuple[int, ...], rhs_dilation: tuple[int, ...],
                   dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                   batch_group_count: int, precision: dg.CanonicalPrecision,
                   **params: Any) -> list[ir.Value]:
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  dnums = hlo.ConvDimensionNumbers.get(
      input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
      input_spatial_dimensions=list(lhs_spec[2:]),
      kernel_output_feature_dimension=rhs_spec[0], kernel_input_feature_dimension=rhs_spec[1],
      kernel_spatial_dimensions=list(rhs_spec[2:]), output_batch_dimension=out_spec[0],
      output_feature_dimension=out_spec[1], output_spatial_dimensions=list(out_spec[2:]))
  pads = ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(len(padding), 2))
  lhs, rhs = dg.convert_operands(ctx, [lhs, rhs])
  return [hlo.convolution(
      mlir.aval_to_ir_type(ctx.avals_out[0]), lhs, rhs, dnums, feature_group_count,
      batch_group_count, window_strides=list(window_strides), padding=pads,
      lhs_dilation=list(lhs_dilation), rhs_dilation=list(rhs_dilation),
      precision_config=dg.precision_config(precision))]


mlir.register_lowering(conv_general_dilated_p, _conv_lowering)


# ----------------------------------------------------------------------------- derivatives
#
# The convolution is bilinear, so each operand's cotangent is itself a convolution. In one
# spatial dimension, with the input dilated by Dl and padded by `lo`, the kernel (size K)
# dilated by Dr and stride s, out[o] = sum_k in_padded[o*s + k*Dr] * w[k]. Hence
#  - the input's cotangent convolves the stride-dilated cotangent with the reversed kernel,
#    with stride Dl, kernel dilation Dr and low padding (dilated K) - 1 - lo;
#  - the kernel's cotangent convolves the (dilated, padded) input with the cotangent as the
#    kernel, dilated by s, with stride Dr.
# The high paddings are whatever makes the result exactly the operand's size. Features and
# batch swap roles: feature groups of one become batch groups of the other and vice versa.


def _conv_jvp_rule(operand: int) -> Any:
  def jvp(g: Any, lhs: Any, rhs: Any, **params: Any) -> Any:
    return conv_general_dilated_p.bind(*((g, rhs) if operand == 0 else (lhs, g)), **params)
  return jvp


def _swap_first_two(spec: tuple[int, ...]) -> tuple[int, ...]:
  return (spec[1], spec[0], *spec[2:])


def _spatial_sizes(shape: tuple[int, ...], spec: tuple[int, ...],
                   dilation: Sequence[int]) -> list[int]:
  return [_dilate_dim(shape[d], r) for d, r in zip(spec[2:], dilation)]


def _like(x: Any, ct: Any) -> Any:
  """`x` in the dtype of `ct` (both operands of a convolution need one dtype)."""
  dtype = core.get_aval(ct).dtype
  return x if core.get_aval(x).dtype == dtype else lax._convert_element_type(x, dtype)


def _conv_transpose(ct: Any, lhs: Any, rhs: Any, **params: Any) -> list[Any]:
  linear = lhs if ad.is_undefined_primal(lhs) else rhs
  aval = linear.aval
  if type(ct) is ad.Zero:
    ct_operand = ad.Zero(aval.to_tangent_aval())
  elif core.get_aval(ct).size == 0 or aval.size == 0:
    ct_operand = lax.full(aval.shape, 0, aval.dtype)
  elif linear is lhs:
    ct_operand = _lhs_cotangent(ct, aval, rhs, **params)
  else:
    ct_operand = _rhs_cotangent(ct, lhs, aval, **params)
  if type(ct_operand) is not ad.Zero:
    ct_operand = lax._convert_element_type(ct_operand, aval.dtype, aval.weak_type)
  return [ct_operand, None] if linear is lhs else [None, ct_operand]


def _lhs_cotangent(ct: Any, lhs_aval: ShapedArray, rhs: Any, *,
                   window_strides: tuple[int, ...], padding: tuple[tuple[int, int], ...],
                   lhs_dilation: tuple[int, ...], rhs_dilation: tuple[int, ...],
                   dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                   batch_group_count: int, precision: dg.CanonicalPrecision,
                   preferred_element_type: Any) -> Any:
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  groups = max(feature_group_count, batch_group_count)
  if groups > 1:
    # Group g's out-features become its in-features: (g, o) out x i in -> o out x (g, i) in.
    rhs = _merge_dim(_split_dim(rhs, rhs_spec[0], groups), rhs_spec[0], rhs_spec[1])
  in_sizes = _spatial_sizes(lhs_aval.shape, lhs_spec, lhs_dilation)
  kernel_sizes = _spatial_sizes(np.shape(rhs), rhs_spec, rhs_dilation)
  out_sizes = _spatial_sizes(np.shape(ct), out_spec, window_strides)
  pads = []
  for n, k, o, (lo, _) in zip(in_sizes, kernel_sizes, out_sizes, padding):
    low = k - 1 - lo
    pads.append((low, n + k - 1 - o - low))
  out = conv_general_dilated_p.bind(
      ct, _like(shape_ops.rev(rhs, rhs_spec[2:]), ct),
      window_strides=lhs_dilation, padding=tuple(pads), lhs_dilation=window_strides,
      rhs_dilation=rhs_dilation,
      dimension_numbers=ConvDimensionNumbers(out_spec, _swap_first_two(rhs_spec), lhs_spec),
      feature_group_count=groups, batch_group_count=1, precision=precision,
      preferred_element_type=None)
  if batch_group_count > 1:  # the (group, feature) result features: group into the batch
    out = _merge_dim(_split_dim(out, lhs_spec[1], batch_group_count), lhs_spec[1],
                     lhs_spec[0])
  return out


def _rhs_cotangent(ct: Any, lhs: Any, rhs_aval: ShapedArray, *,
                   window_strides: tuple[int, ...], padding: tuple[tuple[int, int], ...],
                   lhs_dilation: tuple[int, ...], rhs_dilation: tuple[int, ...],
                   dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                   batch_group_count: int, precision: dg.CanonicalPrecision,
                   preferred_element_type: Any) -> Any:
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  in_sizes = _spatial_sizes(np.shape(lhs), lhs_spec, lhs_dilation)
  kernel_sizes = _spatial_sizes(rhs_aval.shape, rhs_spec, rhs_dilation)
  out_sizes = _spatial_sizes(np.shape(ct), out_spec, window_strides)
  pads = tuple((lo, o - n + k - 1 - lo)
               for n, k, o, (lo, _) in zip(in_sizes, kernel_sizes, out_sizes, padding))
  trans_dnums = ConvDimensionNumbers(_swap_first_two(lhs_spec), _swap_first_two(out_spec),
                                     _swap_first_two(rhs_spec))
  return conv_general_dilated_p.bind(
      _like(lhs, ct), ct, window_strides=rhs_dilation, padding=pads,
      lhs_dilation=lhs_dilation, rhs_dilation=window_strides, dimension_numbers=trans_dnums,
      feature_group_count=batch_group_count, batch_group_count=feature_group_count,
      precision=precision, preferred_element_type=None)


# ----------------------------------------------------------------------------- batching


def _conv_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                     dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                     batch_group_count: int, **params: Any) -> tuple[Any, int]:
  """The vmapped dimension folds into one the convolution already has: into the lhs batch
  when only lhs is mapped, into the output features when only rhs is; when both are, each
  example becomes its own feature (or batch) group. Existing groups stay outermost."""
  (lhs, rhs), (lhs_bdim, rhs_bdim) = vals, dims
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  size = np.shape(lhs)[lhs_bdim] if rhs_bdim is batching.not_mapped else np.shape(rhs)[rhs_bdim]

  def conv(lhs: Any, rhs: Any, feature_groups: int = feature_group_count,
           batch_groups: int = batch_group_count) -> Any:
    return conv_general_dilated_p.bind(
        lhs, rhs, dimension_numbers=dimension_numbers, feature_group_count=feature_groups,
        batch_group_count=batch_groups, **params)

  if rhs_bdim is batching.not_mapped:
    lhs = _merge_dim(lhs, lhs_bdim, lhs_spec[0], groups=batch_group_count)
    return _split_dim(conv(lhs, rhs), out_spec[0], size), out_spec[0]
  if lhs_bdim is batching.not_mapped:
    groups = max(feature_group_count, batch_group_count)
    rhs = _merge_dim(rhs, rhs_bdim, rhs_spec[0], groups=groups)
    return _split_dim(conv(lhs, rhs), out_spec[1], size, groups=groups), out_spec[1]
  rhs = _merge_dim(rhs, rhs_bdim, rhs_spec[0])
  if batch_group_count > 1:
    out = conv(_merge_dim(lhs, lhs_bdim, lhs_spec[0]), rhs,
               batch_groups=size * batch_group_count)
  else:
    out = conv(_merge_dim(lhs, lhs_bdim, lhs_spec[1]), rhs,
               feature_groups=size * feature_group_count)
  return _split_dim(out, out_spec[1], size), out_spec[1]


def _merge_dim(x: Any, src: int, dst: int, groups: int = 1) -> Any:
  """`x` with dimension `src` merged into dimension `dst` (numbered as if `src` were gone).
  The merged index is (group, src index, dst index within the group), where `dst` is made
  of `groups` equal groups: the groups stay outermost."""
  shape = np.shape(x)
  dst_at = dst + (dst >= src)  # where `dst` is in x
  if groups > 1:
    shape = shape[:dst_at] + (groups, shape[dst_at] // groups) + shape[dst_at + 1:]
    x = shape_ops.reshape(x, shape)
    src, dst_at = src + (src > dst_at), dst_at + 1
  perm = [d for d in range(len(shape)) if d != src]
  perm.insert(perm.index(dst_at), src)  # src just before dst (and after the groups)
  first, n_merged = perm.index(src) - (groups > 1), 2 + (groups > 1)
  sizes = [shape[d] for d in perm]
  merged = sizes[:first] + [math.prod(sizes[first:first + n_merged])] + \
      sizes[first + n_merged:]
  return shape_ops.reshape(x, merged, None if perm == list(range(len(perm))) else perm)


def _split_dim(x: Any, dim: int, size: int, groups: int = 1) -> Any:
  """The inverse of `_merge_dim`: dimension `dim`, indexed (group, i, rest) with i < `size`,
  becomes a dimension of `size` at `dim` followed by one indexed (group, rest)."""
  shape = np.shape(x)
  rest = shape[dim] // (groups * size)
  if groups == 1:
    return shape_ops.reshape(x, shape[:dim] + (size, rest) + shape[dim + 1:])
  x = shape_ops.reshape(x, shape[:dim] + (groups, size, rest) + shape[dim + 1:])
  perm = list(range(len(shape) + 2))
  perm[dim], perm[dim + 1] = dim + 1, dim
  return shape_ops.reshape(x, shape[:dim] + (size, groups * rest) + shape[dim + 1:], perm)


ad.defjvp(conv_general_dilated_p, _conv_jvp_rule(0), _conv_jvp_rule(1))
ad.primitive_transposes[conv_general_dilated_p] = _conv_transpose
batching.primitive_batchers[conv_general_dilated_p] = _conv_batch_rule
