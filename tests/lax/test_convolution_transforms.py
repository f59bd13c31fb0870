"""conv_general_dilated's JVP, transposes and batching rule through the generic harness
(`check_transforms`: derivatives to order 2 in both modes, jit of jvp/vjp, vmap of either or
both operands along several axes) on small shapes: 1-D, 2-D and 3-D, NCHW and channels-last
layouts, strides, 'SAME'/'VALID'/explicit (also negative) padding, lhs and rhs dilation,
feature groups and batch groups."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jaxon
from jaxon import lax
from tests.transform_util import check_transforms, check_vmap

NHWC = ("NHWC", "HWIO", "NHWC")
NWC = ("NWC", "WIO", "NWC")


class Case:
  """Operand shapes (in the layout of `dimension_numbers`) and the convolution's params."""

  def __init__(self, name, lhs_shape, rhs_shape, strides, padding, lhs_dilation=None,
               rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
               batch_group_count=1):
    self.name, self.lhs_shape, self.rhs_shape = name, lhs_shape, rhs_shape
    self.params = dict(window_strides=strides, padding=padding, lhs_dilation=lhs_dilation,
                       rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                       feature_group_count=feature_group_count,
                       batch_group_count=batch_group_count)

  def fun(self, **extra):
    return lambda lhs, rhs: lax.conv_general_dilated(lhs, rhs, **self.params, **extra)

  def inputs(self, dtype, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.randn(*s).astype(dtype) for s in (self.lhs_shape, self.rhs_shape)]


CASES = [
    Case("1d_valid", (2, 3, 5), (4, 3, 2), (1,), "VALID"),
    Case("1d_same_stride2", (2, 3, 6), (4, 3, 3), (2,), "SAME"),
    Case("1d_stride_leaves_tail", (1, 2, 7), (2, 2, 2), (3,), "VALID"),
    Case("1d_same_lower_nwc", (2, 5, 3), (3, 3, 2), (2,), "SAME_LOWER", dimension_numbers=NWC),
    Case("1d_explicit_negative", (2, 2, 6), (3, 2, 3), (1,), [(-1, 2)]),
    Case("1d_lhs_dilation", (2, 2, 4), (3, 2, 3), (1,), [(2, 1)], lhs_dilation=(2,)),
    Case("1d_rhs_dilation_stride", (2, 2, 8), (3, 2, 2), (2,), "VALID", rhs_dilation=(3,)),
    Case("2d_nchw_explicit", (1, 2, 5, 6), (3, 2, 3, 2), (2, 1), [(1, 2), (0, 1)],
         lhs_dilation=(1, 2), rhs_dilation=(2, 1)),
    Case("2d_nhwc_same", (2, 5, 4, 3), (3, 2, 3, 2), (1, 2), "SAME", dimension_numbers=NHWC),
    Case("2d_nhwc_same_stride2", (1, 6, 5, 2), (2, 3, 2, 3), (2, 2), "SAME",
         dimension_numbers=NHWC),
    Case("2d_mixed_layouts", (2, 4, 3, 5), (2, 2, 3, 2), (1, 1), "VALID",
         dimension_numbers=("NHCW", "OHIW", "CNWH")),
    Case("1d_feature_groups", (2, 4, 5), (6, 2, 2), (2,), "VALID", feature_group_count=2),
    Case("1d_depthwise", (2, 3, 5), (3, 1, 3), (1,), "SAME", feature_group_count=3),
    Case("2d_nhwc_feature_groups", (2, 5, 4, 4), (3, 2, 2, 4), (2, 1), "SAME",
         rhs_dilation=(1, 2), dimension_numbers=NHWC, feature_group_count=2),
    Case("1d_batch_groups", (4, 2, 5), (6, 2, 2), (1,), "VALID", batch_group_count=2),
    Case("2d_nhwc_batch_groups", (4, 5, 6, 2), (3, 2, 2, 6), (1, 2), [(-1, 1), (2, 0)],
         lhs_dilation=(2, 1), dimension_numbers=NHWC, batch_group_count=2),
    Case("3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (1, 2, 1), "SAME"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conv(case):
  check_transforms(case.fun(), case.inputs(np.float32))


@pytest.mark.parametrize("case", CASES[::4], ids=[c.name for c in CASES[::4]])
def test_conv_f64(case, x64):
  check_transforms(case.fun(), case.inputs(np.float64), order=1, vmap_axes=(1,))


def test_conv_transpose_wrapper():
  """`conv_transpose` is a convolution with lhs dilation: its gradients go through the same
  rules."""
  rng = np.random.RandomState(0)
  x, w = rng.randn(2, 4, 3, 2).astype(np.float32), rng.randn(3, 2, 2, 3).astype(np.float32)
  check_transforms(lambda x, w: lax.conv_transpose(x, w, (2, 1), "SAME"), [x, w], order=1)


def test_preferred_element_type():
  """bfloat16 operands accumulated in float32: cotangents come back in bfloat16."""
  case = CASES[1]
  lhs, rhs = (x.astype(ml_dtypes.bfloat16) for x in case.inputs(np.float32))
  f = case.fun(preferred_element_type=np.float32)
  out, pullback = jaxon.vjp(f, lhs, rhs)
  assert out.dtype == np.float32
  ct_lhs, ct_rhs = pullback(np.ones(out.shape, np.float32))
  assert (ct_lhs.dtype, ct_rhs.dtype) == (ml_dtypes.bfloat16, ml_dtypes.bfloat16)
  f32_cts = jaxon.vjp(case.fun(), *case.inputs(np.float32))[1](np.ones(out.shape, np.float32))
  np.testing.assert_allclose(np.asarray(ct_rhs, np.float32), np.asarray(f32_cts[1]),
                             rtol=5e-2, atol=5e-2)
  check_vmap(f, [lhs, rhs], axes=(0,))


def test_empty_batch():
  case = CASES[0]
  lhs, rhs = np.zeros((0, 3, 5), np.float32), case.inputs(np.float32)[1]
  out, pullback = jaxon.vjp(case.fun(), lhs, rhs)
  ct_lhs, ct_rhs = pullback(np.zeros(out.shape, np.float32))
  assert ct_lhs.shape == lhs.shape
  np.testing.assert_array_equal(np.asarray(ct_rhs), np.zeros_like(rhs))


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
def test_batching_folds_into_one_convolution(in_axes):
  case = CASES[11]  # feature groups
  lhs, rhs = case.inputs(np.float32)
  args = [x if a is None else np.stack([x] * 3) for x, a in zip((lhs, rhs), in_axes)]
  jaxpr = jaxon.make_jaxpr(jaxon.vmap(case.fun(), in_axes))(*args)
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  assert names.count("conv_general_dilated") == 1, str(jaxpr)
  assert set(names) <= {"conv_general_dilated", "reshape", "transpose"}, str(jaxpr)
