"""conv_general_dilated and its wrappers against a direct NumPy convolution, eagerly and
under jit, in NCHW and channels-last layouts."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jaxon
from jaxon import lax
from tests.conftest import tolerance
from tests.lax.test_dot_general import assert_matches_numpy, bf16, random_array


def numpy_conv(lhs: np.ndarray, rhs: np.ndarray, strides, padding, lhs_dilation=None,
               rhs_dilation=None, feature_group_count=1, batch_group_count=1) -> np.ndarray:
  """The reference in (N, C, spatial...) / (O, I, spatial...) layout, by its definition: dilate
  the input and kernel, pad (negative padding crops), then at each output position sum the
  window times the kernel. Feature group g sees input features [g*I, (g+1)*I) and produces
  its share of the output features; batch group b uses the b-th block of the batch."""
  n_spatial = lhs.ndim - 2
  lhs_dilation = lhs_dilation or (1,) * n_spatial
  rhs_dilation = rhs_dilation or (1,) * n_spatial
  x, k = _dilate(lhs.astype(np.float64), lhs_dilation), _dilate(rhs.astype(np.float64),
                                                                 rhs_dilation)
  x = np.pad(x, [(0, 0)] * 2 + [(max(lo, 0), max(hi, 0)) for lo, hi in padding])
  x = x[(slice(None),) * 2 + tuple(slice(max(-lo, 0), size - max(-hi, 0)) for (lo, hi), size
                                    in zip(padding, x.shape[2:]))]
  window = k.shape[2:]
  out_spatial = [max(0, (p - w) // s + 1) for p, w, s in zip(x.shape[2:], window, strides)]
  batch, out_features, in_features = lhs.shape[0], rhs.shape[0], rhs.shape[1]
  per_feature_group = out_features // feature_group_count
  per_batch_group, group_batch = out_features // batch_group_count, batch // batch_group_count
  out = np.zeros((group_batch, out_features, *out_spatial))
  for pos in itertools.product(*map(range, out_spatial)):
    patch = x[(slice(None),) * 2 + tuple(slice(p * s, p * s + w)
                                         for p, s, w in zip(pos, strides, window))]
    for o in range(out_features):
      g, b = o // per_feature_group, o // per_batch_group
      inputs = patch[b * group_batch:(b + 1) * group_batch, g * in_features:(g + 1) * in_features]
      out[(slice(None), o, *pos)] = np.tensordot(inputs, k[o], axes=n_spatial + 1)
  return out


def _dilate(x: np.ndarray, dilation) -> np.ndarray:
  shape = x.shape[:2] + tuple(0 if n == 0 else (n - 1) * d + 1
                              for n, d in zip(x.shape[2:], dilation))
  out = np.zeros(shape, x.dtype)
  out[(slice(None),) * 2 + tuple(slice(None, None, d) for d in dilation)] = x
  return out


def _to_layout(x: np.ndarray, spec: str, canonical: str) -> np.ndarray:
  """Transposes `x` from the `canonical` letter order (e.g. NCHW) to `spec`'s (e.g. NHWC)."""
  return np.transpose(x, [canonical.index(c) for c in spec])


# (id, lhs NC.. shape, rhs OI.. shape, strides, padding, lhs_dilation, rhs_dilation,
#  feature_group_count, batch_group_count, layouts)
CASES = [
    ("1d_valid", (2, 3, 7), (4, 3, 3), (1,), "VALID", None, None, 1, 1, None),
    ("1d_same_stride2", (2, 3, 8), (4, 3, 3), (2,), "SAME", None, None, 1, 1, None),
    ("1d_negative_padding", (1, 2, 7), (3, 2, 2), (1,), ((2, -1),), None, None, 1, 1, None),
    ("1d_dilations", (2, 2, 6), (3, 2, 3), (1,), ((1, 2),), (2,), (2,), 1, 1, None),
    ("1d_nwc", (2, 3, 7), (4, 3, 3), (2,), "SAME_LOWER", None, None, 1, 1,
     ("NWC", "WIO", "NWC")),
    ("2d_same", (2, 3, 6, 5), (4, 3, 3, 2), (1, 1), "SAME", None, None, 1, 1, None),
    ("2d_strides_dilation_padding", (2, 3, 7, 6), (2, 3, 2, 3), (2, 1), ((1, 0), (2, 1)),
     None, (1, 2), 1, 1, None),
    ("2d_nhwc_same_lower", (2, 3, 7, 6), (4, 3, 3, 3), (2, 2), "SAME_LOWER", None, None, 1, 1,
     ("NHWC", "HWIO", "NHWC")),
    ("2d_depthwise", (2, 3, 5, 5), (6, 1, 3, 3), (1, 1), "SAME", None, None, 3, 1, None),
    ("2d_feature_groups_mixed_layout", (2, 4, 5, 6), (6, 2, 2, 3), (1, 2), "VALID", None, None,
     2, 1, ("NHWC", "OIHW", "CNHW")),
    ("2d_batch_groups", (4, 3, 5, 5), (6, 3, 2, 2), (1, 1), "VALID", None, None, 1, 2, None),
    ("2d_lhs_dilation", (1, 2, 3, 4), (2, 2, 2, 2), (1, 2), ((1, 1), (0, 1)), (2, 3), None,
     1, 1, ("NHWC", "HWIO", "NHWC")),
    ("zero_batch", (0, 3, 7), (4, 3, 3), (1,), "VALID", None, None, 1, 1, None),
    ("zero_spatial_same", (2, 3, 0), (4, 3, 3), (1,), "SAME", None, None, 1, 1, None),
    ("window_larger_than_input", (1, 1, 2), (1, 1, 3), (1,), "VALID", None, None, 1, 1, None),
]
DTYPE_CASES = ("2d_strides_dilation_padding", "2d_depthwise", "1d_nwc")


def _run_case(case, dtype, **tol: float) -> None:
  (_, lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, fgc, bgc, layouts) = case
  rng = np.random.RandomState(0)
  lhs, rhs = random_array(rng, lhs_shape, dtype), random_array(rng, rhs_shape, dtype)
  spatial = {1: "W", 2: "HW"}[lhs.ndim - 2]
  canonical = ("NC" + spatial, "OI" + spatial, "NC" + spatial)
  layouts = layouts or canonical
  pads = padding
  if isinstance(padding, str):
    kernel = [(k - 1) * d + 1 for k, d in zip(rhs_shape[2:], rhs_dil or (1,) * len(strides))]
    pads = lax.padtype_to_pads(lhs_shape[2:], kernel, strides, padding)
  expected = numpy_conv(lhs, rhs, strides, pads, lhs_dil, rhs_dil, fgc, bgc)
  expected = _to_layout(expected, layouts[2], canonical[2]).astype(dtype)
  lhs, rhs = _to_layout(lhs, layouts[0], canonical[0]), _to_layout(rhs, layouts[1], canonical[1])
  fn = lambda x, w: lax.conv_general_dilated(
      x, w, strides, padding, lhs_dil, rhs_dil, dimension_numbers=layouts,
      feature_group_count=fgc, batch_group_count=bgc)
  assert_matches_numpy(fn, (lhs, rhs), expected, **tol)


@pytest.mark.parametrize("case,dtype", [
    pytest.param(case, np.float32, id=f"{case[0]}-float32") for case in CASES] + [
    pytest.param(case, dtype, id=f"{case[0]}-{np.dtype(dtype).name}")
    for case in CASES if case[0] in DTYPE_CASES for dtype in (np.int32, np.float16, bf16)])
def test_conv_general_dilated(case, dtype):
  _run_case(case, dtype, **_conv_tolerance(dtype))


def _conv_tolerance(dtype) -> dict:
  """Sums of up to ~30 products: looser than one elementwise op."""
  if dtype in (np.float16, bf16):
    return dict(rtol=5e-2, atol=5e-2)
  return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else tolerance(dtype)


def test_conv_float64(x64):
  _run_case(CASES[6], np.float64, **tolerance(np.float64))


def test_conv_preferred_element_type():
  lhs = np.arange(2 * 2 * 5, dtype=np.int8).reshape(2, 2, 5)
  rhs = np.full((3, 2, 2), 7, np.int8)
  expected = numpy_conv(lhs, rhs, (1,), ((0, 0),)).astype(np.int32)
  assert_matches_numpy(
      lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=np.int32),
      (lhs, rhs), expected)


def test_conv_and_conv_with_general_padding():
  rng = np.random.RandomState(1)
  lhs, rhs = rng.randn(1, 2, 6, 5).astype(np.float32), rng.randn(3, 2, 3, 2).astype(np.float32)
  expected = numpy_conv(lhs, rhs, (2, 1), [(0, 0), (0, 0)]).astype(np.float32)
  assert_matches_numpy(lambda x, w: lax.conv(x, w, (2, 1), "VALID"), (lhs, rhs), expected,
                       rtol=2e-5, atol=2e-5)
  pads, lhs_dil, rhs_dil = ((1, 2), (0, 1)), (1, 2), (2, 1)
  expected = numpy_conv(lhs, rhs, (1, 1), pads, lhs_dil, rhs_dil).astype(np.float32)
  assert_matches_numpy(
      lambda x, w: lax.conv_with_general_padding(x, w, (1, 1), pads, lhs_dil, rhs_dil),
      (lhs, rhs), expected, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("padding,strides,expected_size", [
    ("SAME", (2,), 10), ("VALID", (2,), 11), ("SAME", (1,), 5), ("VALID", (3,), 15)])
def test_conv_transpose_shapes(padding, strides, expected_size):
  """conv_transpose upsamples: 'SAME' gives input * stride, 'VALID' (input-1)*stride + k."""
  rng = np.random.RandomState(2)
  lhs, rhs = rng.randn(2, 5, 3).astype(np.float32), rng.randn(3, 3, 4).astype(np.float32)
  out = jaxon.eval_shape(lambda x, w: lax.conv_transpose(x, w, strides, padding), lhs, rhs)
  assert out.shape == (2, expected_size, 4)


def test_conv_transpose_is_the_adjoint_of_conv():
  """With transpose_kernel, conv_transpose applies the transpose of the linear map
  x -> conv(x, w): <conv(x, w), y> == <x, conv_transpose(y, w)> for all x, y."""
  rng = np.random.RandomState(3)
  x, w = rng.randn(2, 7, 6, 3), rng.randn(3, 2, 3, 4)  # NHWC input, HWIO kernel
  y = rng.randn(2, 3, 3, 4)
  dn = ("NHWC", "HWIO", "NHWC")
  forward = lax.conv_general_dilated(x.astype(np.float32), w.astype(np.float32), (2, 2),
                                     "VALID", dimension_numbers=dn)
  assert forward.shape == y.shape
  adjoint = lax.conv_transpose(y.astype(np.float32), w.astype(np.float32), (2, 2), "VALID",
                               dimension_numbers=dn, transpose_kernel=True)
  assert adjoint.shape == x.shape
  np.testing.assert_allclose(np.vdot(np.asarray(forward), y), np.vdot(x, np.asarray(adjoint)),
                             rtol=1e-4)


def test_conv_dimension_numbers():
  dn = lax.conv_dimension_numbers((2, 5, 6, 3), (3, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))
  assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == ((0, 1, 2),) * 3
  assert lax.conv_dimension_numbers((2, 5, 6, 3), (3, 2, 3, 4), dn) == dn


def test_padtype_to_pads():
  assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME") == [(1, 1), (0, 1)]
  assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME_LOWER") == [(1, 1), (1, 0)]
  assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "VALID") == [(0, 0), (0, 0)]
  with pytest.raises(ValueError, match="padding type 'FULL'"):
    lax.padtype_to_pads((5,), (3,), (1,), "FULL")


def test_jaxpr_params():
  jaxpr = jaxon.make_jaxpr(lambda x, w: lax.conv(x, w, (1,), "SAME"))(
      np.ones((1, 2, 5), np.float32), np.ones((3, 2, 3), np.float32))
  text = str(jaxpr)
  assert "conv_general_dilated[" in text and "padding=((1, 1),)" in text
  assert ("dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), "
          "out_spec=(0, 1, 2))") in text


ERRORS = [
    ("feature_groups_divide", (1, 3, 5), (4, 1, 2), dict(feature_group_count=2), ValueError,
     r"feature_group_count must divide the lhs feature dimension size, but 2 does not "
     r"divide 3"),
    ("in_features", (1, 4, 5), (4, 3, 2), {}, ValueError,
     r"lhs feature dimension size divided by feature_group_count must equal the rhs input "
     r"feature dimension size, but 4 // 1 != 3"),
    ("out_features_multiple", (1, 4, 5), (3, 2, 2), dict(feature_group_count=2), ValueError,
     r"multiple of feature_group_count, but 3 is not a multiple of 2"),
    ("batch_groups_divide", (3, 2, 5), (4, 2, 2), dict(batch_group_count=2), ValueError,
     r"batch_group_count must divide the lhs batch dimension size, but 2 does not divide 3"),
    ("both_groups", (2, 4, 5), (4, 2, 2), dict(feature_group_count=2, batch_group_count=2),
     ValueError, r"At most one of feature_group_count and batch_group_count"),
    ("rank_mismatch", (1, 2, 5), (3, 2), {}, TypeError, r"lhs and rhs ndim to be equal"),
    ("strides_length", (1, 2, 5), (3, 2, 2), dict(window_strides=(1, 1)), ValueError,
     r"window_strides must have one entry per spatial dimension \(1\), got \(1, 1\)"),
    ("padding_length", (1, 2, 5), (3, 2, 2), dict(padding=((0, 0), (0, 0))), ValueError,
     r"one \(low, high\) pair per spatial dimension \(1\)"),
    ("padding_name", (1, 2, 5), (3, 2, 2), dict(padding="FULL"), ValueError,
     r"padding type 'FULL'"),
    ("bad_spec_letters", (1, 2, 5), (3, 2, 2), dict(dimension_numbers=("NCW", "OIW", "NWX")),
     TypeError, r"spec 'NWX' must contain 'N' and 'C' once each"),
    ("spec_lengths", (1, 2, 5), (3, 2, 2), dict(dimension_numbers=("NCW", "OIW", "NCHW")),
     TypeError, r"must have the same length"),
    ("zero_kernel", (1, 2, 5), (3, 2, 0), {}, ValueError,
     r"kernel spatial dimensions must be non-empty"),
    ("string_padding_lhs_dilation", (1, 2, 5), (3, 2, 2),
     dict(padding="SAME", lhs_dilation=(2,)), ValueError, r"String padding is not implemented"),
    ("dilation_positive", (1, 2, 5), (3, 2, 2), dict(rhs_dilation=(0,)), ValueError,
     r"rhs_dilation must be positive"),
    ("mixed_dtypes", (1, 2, 5), (3, 2, 2), dict(rhs_dtype=np.int32), TypeError,
     r"requires arguments to have the same dtypes"),
]


@pytest.mark.parametrize("name,lhs_shape,rhs_shape,kwargs,error,match", [
    pytest.param(*case, id=case[0]) for case in ERRORS])
def test_conv_errors(name, lhs_shape, rhs_shape, kwargs, error, match):
  kwargs = dict(kwargs)
  lhs = np.ones(lhs_shape, np.float32)
  rhs = np.ones(rhs_shape, kwargs.pop("rhs_dtype", np.float32))
  args = dict(window_strides=(1,) * (len(lhs_shape) - 2), padding="VALID") | kwargs
  with pytest.raises(error, match=match):
    lax.conv_general_dilated(lhs, rhs, **args)
