"""Image patches and locally connected (unshared) convolutions, built on
`conv_general_dilated` and `dot_general`; and the shape arithmetic of convolutions and
windowed reductions (`conv_shape_tuple` and kin) as plain functions of shapes.

`conv_general_dilated_patches` convolves the input with a fixed 0/1 kernel that copies
each input feature at each tap of the receptive window into its own output feature: the
output's feature dimension holds the flattened patch, feature-major (`c` then the window's
spatial dimensions in kernel-spec order). `conv_general_dilated_local` is then one
contraction of those patches with a kernel that has its own weights at every output
position.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src.lax import convolution as conv
from jaxon._src.lax import dot_general as dg
from jaxon._src.lax import lax, shape_ops
from jaxon._src.lax.windowed_reductions import padtype_to_pads

# ----------------------------------------------------------------------------- patches


def conv_general_dilated_patches(
    lhs: Any, filter_shape: Sequence[int], window_strides: Sequence[int],
    padding: conv.PaddingLike, lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: conv.ConvGeneralDilatedDimensionNumbers = None,
    precision: dg.Precision | None = None, preferred_element_type: Any = None) -> Any:
  """The patches that `conv_general_dilated` with a kernel of `filter_shape` would see.

  Args:
    lhs: the input, rank n+2.
    filter_shape: the n spatial sizes of the receptive window, in the order of the
      kernel spec's spatial dimensions (`dimension_numbers[1]` without 'O' and 'I').
    window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers: as for
      `conv_general_dilated` (the kernel spec only orders the spatial dimensions).
    precision: a `Precision` for `lhs` (the copying kernel is exact).
    preferred_element_type: as for `conv_general_dilated`.

  Returns:
    A rank n+2 array laid out by the output spec whose feature dimension has
    `C * prod(filter_shape)` entries: the patch at each output position, flattened with
    the input feature outermost.

  Example: 2x2 patches of a (1, 3, 4, 4) NCHW image are
  `conv_general_dilated_patches(x, (2, 2), (1, 1), 'VALID')`, of shape (1, 12, 3, 3).
  """
  lhs = lax.asarray(lhs)
  filter_shape = tuple(int(d) for d in filter_shape)
  dnums = conv.conv_dimension_numbers(lhs.shape, (1, 1, *filter_shape), dimension_numbers)
  n_features = lhs.shape[dnums.lhs_spec[1]]
  window_size = math.prod(filter_shape)
  # Output feature c * window_size + t copies input feature c at window tap t: each
  # feature group (one per input feature) sees an identity over the window's taps.
  taps = np.eye(window_size, dtype=lhs.dtype).reshape(window_size, 1, *filter_shape)
  kernel = np.tile(taps, (n_features,) + (1,) * (taps.ndim - 1))
  kernel = np.moveaxis(kernel, (0, 1), dnums.rhs_spec[:2])
  return conv.conv_general_dilated(
      lhs, kernel, window_strides, padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dnums, feature_group_count=n_features,
      precision=None if precision is None else (precision, dg.Precision.DEFAULT),
      preferred_element_type=preferred_element_type)


def conv_general_dilated_local(
    lhs: Any, rhs: Any, window_strides: Sequence[int], padding: conv.PaddingLike,
    filter_shape: Sequence[int], lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: conv.ConvGeneralDilatedDimensionNumbers = None,
    precision: dg.PrecisionLike = None) -> Any:
  """A locally connected ("unshared") convolution: a separate kernel at every output
  position.

  Args:
    lhs: the input, rank n+2.
    rhs: the kernels, rank n+2 laid out by the kernel spec, but its spatial dimensions
      are the *output* positions and its 'I' dimension holds a whole flattened patch
      (`C * prod(filter_shape)` entries, input feature outermost, as
      `conv_general_dilated_patches` lays them out).
    window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers: as for
      `conv_general_dilated`.
    filter_shape: the n spatial sizes of the receptive window (kernel-spec order).
    precision: None, a `Precision` or a pair of them (lhs, rhs).

  Returns:
    An array laid out by the output spec with `rhs`'s 'O' features.
  """
  lhs = lax.asarray(lhs)
  canonical = dg.canonicalize_precision(precision)
  patches = conv_general_dilated_patches(
      lhs, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
      precision=None if canonical is None else canonical[0])
  lhs_spec, rhs_spec, out_spec = conv.conv_dimension_numbers(
      lhs.shape, (1, 1, *filter_shape), dimension_numbers)
  # Output position dimensions pair up as batch dimensions (sorted by their position in
  # the patches), the patch dimension contracts with rhs's 'I'.
  by_position = sorted(range(len(out_spec) - 2), key=lambda i: out_spec[2 + i])
  patch_batch = tuple(out_spec[2 + i] for i in by_position)
  rhs_batch = tuple(rhs_spec[2 + i] for i in by_position)
  out = dg.dot_general(patches, rhs, (((out_spec[1],), (rhs_spec[1],)),
                                      ((*patch_batch,), (*rhs_batch,))), precision=precision)
  # dot_general's result is (positions..., batch N, out feature O): put N and O in place.
  positions = [d for d in range(out.ndim - 2)]
  order = [None] * out.ndim
  order[out_spec[0]], order[out_spec[1]] = out.ndim - 2, out.ndim - 1
  order = [positions.pop(0) if o is None else o for o in order]
  return shape_ops.transpose(out, order)


# ----------------------------------------------------------------------------- shape helpers


def conv_general_permutations(dimension_numbers: tuple[str, str, str]
                              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
  """The (batch, feature, spatial...) positions in lhs and output, and the (out feature,
  in feature, spatial...) positions in the kernel, of three layout strings such as
  `('NHWC', 'HWIO', 'NHWC')` (spatial dimensions in the kernel's order).

  Example:
    >>> conv_general_permutations(('NHWC', 'HWIO', 'NHWC'))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  """
  for i, (spec, pair) in enumerate(zip(dimension_numbers, ("NC", "OI", "NC"))):
    if not isinstance(spec, str):
      raise TypeError(f"conv_general_permutations takes three layout strings such as "
                      f"('NHWC', 'HWIO', 'NHWC'); dimension_numbers[{i}] is {spec!r}.")
    if spec.count(pair[0]) != 1 or spec.count(pair[1]) != 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{pair[0]}' and '{pair[1]}' exactly once, got {spec}.")
  return tuple(conv.conv_dimension_numbers(
      (0,) * len(dimension_numbers[0]), (0,) * len(dimension_numbers[1]),
      tuple(dimension_numbers)))


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: conv.PaddingLike,
                     batch_group_count: int = 1) -> tuple[int, ...]:
  """The output shape of a convolution of operands in the default layout (NCHW, OIHW):
  `(N // batch_group_count, O, spatial...)`. `pads` is a padding name or (low, high)
  pairs; kernels are not dilated.

  Example:
    >>> conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (1, 2), 'SAME')
    (2, 4, 9, 4)
  """
  lhs_shape, rhs_shape = tuple(map(int, lhs_shape)), tuple(map(int, rhs_shape))
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
  if any(d < 0 for d in padded):
    raise ValueError(f"Negative padding is larger than the size of the corresponding "
                     f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
  if lhs_shape[0] % batch_group_count:
    raise ValueError(f"conv_shape_tuple: batch size {lhs_shape[0]} is not a multiple of "
                     f"batch_group_count={batch_group_count}.")
  spatial = (_window_count(d, k, s) for d, k, s in zip(padded, rhs_shape[2:], strides))
  return (int(lhs_shape[0]) // batch_group_count, int(rhs_shape[0]), *spatial)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: conv.PaddingLike,
                             dimension_numbers: tuple[str, str, str]) -> tuple[int, ...]:
  """The output shape of `conv_general_dilated` (no dilation, no groups) for operands
  laid out by the layout strings `dimension_numbers`."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  canonical = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                               window_strides, padding)
  return tuple(canonical[i] for i in np.argsort(out_perm))


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: conv.PaddingLike,
                               dimension_numbers: tuple[str, str, str]) -> tuple[int, ...]:
  """The output shape of `conv_transpose` (no dilation) for operands laid out by the
  layout strings `dimension_numbers`: each spatial size is
  `(input - 1) * stride - kernel + 2 + padding`, with padding names as `conv_transpose`
  resolves them."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
  if isinstance(padding, str):
    padding = [conv._conv_transpose_padding(int(k), int(s), padding)
               for k, s in zip(rhs_t[2:], window_strides)]
  spatial = [(int(i) - 1) * int(s) - int(k) + 2 + int(sum(p))
             for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
  canonical = (int(lhs_t[0]), int(rhs_t[0]), *spatial)
  return tuple(canonical[i] for i in np.argsort(out_perm))


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int],
                              padding: Sequence[tuple[int, int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
  """The output shape of `reduce_window` with explicit (low, high) `padding`.

  Example:
    >>> reduce_window_shape_tuple((9, 8), (3, 2), (2, 1), [(1, 1), (0, 0)])
    (5, 7)
  """
  ones = (1,) * len(operand_shape)
  base_dilation = ones if base_dilation is None else base_dilation
  window_dilation = ones if window_dilation is None else window_dilation
  return tuple(
      _window_count(conv._dilate_dim(int(d), int(bd)) + int(lo) + int(hi),
                    conv._dilate_dim(int(w), int(wd)), int(s))
      for d, w, s, (lo, hi), bd, wd in zip(operand_shape, window_dimensions, window_strides,
                                           padding, base_dilation, window_dilation))


def _window_count(size: int, window: int, stride: int) -> int:
  """How many windows of `window` elements, `stride` apart, fit in `size` elements."""
  return 0 if size < window else (size - window) // int(stride) + 1
