"""lax leftovers B: ragged dots, dot algorithms (`precision=` presets), scaled_dot, image
patches and locally connected convolutions, the conv/reduce_window shape helpers; and
jaxon.ops' segment reductions, the float6 dtypes and random.key_dtype. Values against
NumPy or golden values recorded from JAX 0.10.2, printed jaxprs as JAX prints them,
derivatives by finite differences, vmap against a loop, jit against eager."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax, ops
from jaxon.test_util import check_grads

RNG = np.random.RandomState(0)
F32 = np.float32


def jaxpr_text(f, *args):
  return str(jaxon.make_jaxpr(f)(*args))


# ----------------------------------------------------------------------------- ragged dot

def ragged_rows_oracle(lhs, rhs, group_sizes):
  """NumPy: rows of group g times rhs[g]; rows past the groups are zero."""
  out = np.zeros((lhs.shape[0], rhs.shape[2]), F32)
  start = 0
  for g, size in enumerate(group_sizes):
    out[start:start + size] = lhs[start:start + size] @ rhs[g]
    start += size
  return out


def ragged_contracting_oracle(lhs, rhs, group_sizes):
  """NumPy: one product per group of the contracting dimension."""
  out, start = [], 0
  for size in group_sizes:
    out.append(lhs[:, start:start + size] @ rhs[start:start + size])
    start += size
  return np.stack(out)


LHS, RHS = RNG.randn(6, 3).astype(F32), RNG.randn(3, 3, 2).astype(F32)
SIZES = np.array([2, 0, 3], np.int32)  # an empty group, and a last row in no group
CONTRACTING = lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())


def test_ragged_dot_rows_against_numpy():
  np.testing.assert_allclose(lax.ragged_dot(LHS, RHS, SIZES),
                             ragged_rows_oracle(LHS, RHS, SIZES), rtol=1e-5, atol=1e-6)


def test_ragged_dot_contracting_against_numpy():
  lhs, rhs = RNG.randn(2, 5).astype(F32), RNG.randn(5, 3).astype(F32)
  sizes = np.array([1, 3, 1], np.int32)
  out = jaxon.jit(lambda a, b: lax.ragged_dot_general(a, b, sizes, CONTRACTING))(lhs, rhs)
  np.testing.assert_allclose(out, ragged_contracting_oracle(lhs, rhs, sizes), rtol=1e-5,
                             atol=1e-6)


def test_ragged_dot_batched_group_sizes_golden():
  """A batch dimension, and one size vector per batch entry ([b, g] group_sizes)."""
  dnums = lax.RaggedDotDimensionNumbers((((2,), (1,)), ((0,), (0,))), (1,), (2,))
  lhs = np.arange(2 * 3 * 2, dtype=F32).reshape(2, 3, 2)
  rhs = np.arange(2 * 2 * 2 * 1, dtype=F32).reshape(2, 2, 2, 1)
  out = lax.ragged_dot_general(lhs, rhs, np.array([[1, 2], [2, 1]], np.int32), dnums)
  # From JAX 0.10.2.
  np.testing.assert_array_equal(out, [[[2.], [11.], [19.]], [[66.], [86.], [127.]]])


def test_ragged_dot_grads():
  """First order only: the product is bilinear, so its second derivatives are the
  primitive itself again (and order 2 would cost seconds of compiling)."""
  check_grads(jaxon.jit(lambda a, b: lax.ragged_dot(a, b, SIZES)), (LHS, RHS), order=1,
              atol=2e-2, rtol=2e-2)
  lhs, rhs = RNG.randn(2, 4).astype(F32), RNG.randn(4, 2).astype(F32)
  check_grads(jaxon.jit(lambda a, b: lax.ragged_dot_general(
      a, b, np.array([3, 1], np.int32), CONTRACTING)), (lhs, rhs), order=1,
              modes=("rev",), atol=2e-2, rtol=2e-2)


def test_ragged_dot_grad_golden():
  lhs = np.arange(10, dtype=F32).reshape(5, 2) / 4
  rhs = np.arange(12, dtype=F32).reshape(2, 2, 3) / 8 - 0.5
  sizes = np.array([2, 2], np.int32)
  grads = jaxon.jit(jaxon.grad(lambda a, b: (lax.ragged_dot(a, b, sizes) ** 2).sum(),
                               (0, 1)))(lhs, rhs)
  # From JAX 0.10.2.
  np.testing.assert_allclose(grads[0], [[0.015625, 0.015625], [0.5, 0.078125],
                                        [3.09375, 6.046875], [4.421875, 8.640625], [0., 0.]],
                             rtol=1e-6)
  np.testing.assert_allclose(grads[1][1], [[6.46875, 8.25, 10.03125],
                                           [7.71875, 9.84375, 11.96875]], rtol=1e-6)


def test_ragged_dot_vmap():
  lhs = np.stack([LHS, 2 * LHS])
  sizes = np.array([[2, 0, 3], [1, 4, 1]], np.int32)
  out = jaxon.vmap(lax.ragged_dot, in_axes=(0, None, 0))(lhs, RHS, sizes)
  expected = np.stack([ragged_rows_oracle(lhs[i], RHS, sizes[i]) for i in range(2)])
  np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_ragged_dot_jaxpr_as_jax_prints_it():
  assert jaxpr_text(lax.ragged_dot, LHS, RHS, SIZES) == (
      "{ lambda ; a:f32[6,3] b:f32[3,3,2] c:i32[3]. let\n"
      "    d:f32[6,2] = ragged_dot_general[\n"
      "      group_offset=None\n      out_sharding=None\n      precision=None\n"
      "      preferred_element_type=None\n"
      "      ragged_dot_dimension_numbers=RaggedDotDimensionNumbers(dot_dimension_numbers="
      "(((1,), (1,)), ((), ())), lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))\n"
      "    ] a b c\n  in (d,) }")


def test_ragged_dot_errors():
  with pytest.raises(TypeError, match="expected rhs group dimension size to be 2"):
    lax.ragged_dot(LHS, RHS, np.array([3, 3], np.int32))
  with pytest.raises(TypeError, match="integer dtype"):
    lax.ragged_dot(LHS, RHS, SIZES.astype(F32))
  with pytest.raises(NotImplementedError, match="group_offset"):
    lax.ragged_dot(LHS, RHS, SIZES, group_offset=np.array([0], np.int32))


# ----------------------------------------------------------------------------- dot algorithms

A, B = np.arange(6, dtype=np.float16).reshape(2, 3), np.arange(6, dtype=np.float16).reshape(3, 2)


@pytest.mark.parametrize("precision,printed", [
    ("F32_F32_F32", "F32_F32_F32"),
    (lax.DotAlgorithmPreset.BF16_BF16_F32_X3, "BF16_BF16_F32_X3"),
    (lax.DotAlgorithm(np.float32, np.float32, np.float32),
     "DotAlgorithm(lhs_precision_type=float32, rhs_precision_type=float32, "
     "accumulation_type=float32, lhs_component_count=1, rhs_component_count=1, "
     "num_primitive_operations=1, allow_imprecise_accumulation=False)"),
])
def test_dot_algorithm_prints_lowers_and_computes(precision, printed):
  f = lambda a, b: lax.dot(a, b, precision=precision)
  assert f"precision={printed}\n" in jaxpr_text(f, A, B)
  hlo = jaxon.jit(f).lower(A, B).as_text()
  assert "algorithm = <lhs_precision_type = " in hlo and "tensor<2x2xf16>" in hlo
  out = jaxon.jit(f)(A, B)
  assert out.dtype == np.float16
  np.testing.assert_array_equal(out, A.astype(F32) @ B.astype(F32))


def test_dot_algorithm_grad_keeps_the_algorithm():
  text = jaxpr_text(jaxon.grad(lambda a: lax.dot(a, B, precision="F32_F32_F32").sum()), A)
  assert text.count("precision=F32_F32_F32") == 2


def test_dot_algorithm_presets_and_errors():
  preset = lax.DotAlgorithmPreset
  assert preset.F16_F16_F16.supported_lhs_types == (np.float16,)
  assert preset.BF16_BF16_F32.supported_output_types(np.float32, np.float32) == (F32,)
  assert preset.DEFAULT.accumulation_type is None and repr(preset.F32_F32_F32) == (
      "DotAlgorithmPreset.F32_F32_F32")
  with pytest.raises(ValueError, match="'F16_F16_F32' is not supported by dot_general on CPU"):
    lax.dot(A, B, precision="F16_F16_F32")
  with pytest.raises(ValueError, match="At least one of atol, rtol, or ulps"):
    lax.Tolerance()
  assert lax.Tolerance(atol=1e-3).atol == 1e-3 and lax.AccuracyMode.HIGHEST.value == 1


# ----------------------------------------------------------------------------- scaled_dot

def test_scaled_dot_golden_and_vmap():
  a = np.arange(8, dtype=F32).reshape(1, 2, 4) / 4
  b = np.arange(8, dtype=F32).reshape(1, 4, 2) / 8 - 0.3
  lhs_scale = np.array([[[1., 2.], [0.5, 4.]]], F32)
  rhs_scale = np.array([[[2., 1.], [1., 0.25]]], F32)
  f = jaxon.jit(lambda *x: lax.scaled_dot(x[0], x[1], lhs_scale=x[2], rhs_scale=x[3]))
  out = f(a, b, lhs_scale, rhs_scale)
  assert out.dtype == jnp.bfloat16
  # From JAX 0.10.2.
  np.testing.assert_array_equal(out.astype(F32), [[[0.84765625, 0.314453125],
                                                   [3.984375, 1.453125]]])
  batched = jaxon.vmap(lambda x, y: lax.scaled_dot(x, y, preferred_element_type=F32))
  np.testing.assert_allclose(batched(a, b)[0], (a[0].astype(jnp.bfloat16).astype(F32)
                                                @ b[0].astype(jnp.bfloat16).astype(F32)))
  with pytest.raises(TypeError, match="must be at least 2"):
    lax.scaled_dot(a, b, lhs_scale=np.ones((1, 2, 4), F32))


# ----------------------------------------------------------------------------- conv patches

def test_conv_general_dilated_patches_golden():
  x = np.arange(18, dtype=F32).reshape(1, 2, 3, 3)
  patches = lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID")
  assert patches.shape == (1, 8, 2, 2)
  # From JAX 0.10.2: feature-major patches (c, then the window).
  np.testing.assert_array_equal(patches[0, :, 0, 1], [1, 2, 4, 5, 10, 11, 13, 14])
  x_nhwc = np.arange(24, dtype=F32).reshape(1, 4, 3, 2)
  patches = lax.conv_general_dilated_patches(x_nhwc, (2, 1), (2, 1), [(0, 1), (0, 0)],
                                             dimension_numbers=("NHWC", "HWIO", "NCHW"))
  assert patches.shape == (1, 4, 2, 3)
  np.testing.assert_array_equal(patches[0, :, 1, 2], [16, 22, 17, 23])


def test_conv_general_dilated_local_against_numpy_and_grads():
  x = RNG.randn(2, 3, 4, 2).astype(F32)  # NHWC
  w = RNG.randn(2, 3, 2 * 2 * 2, 3).astype(F32)  # out H, out W, patch (c, h, w), O
  f = jaxon.jit(lambda x, w: lax.conv_general_dilated_local(
      x, w, (1, 1), "VALID", (2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC")))
  patches = np.array([[[x[n, i:i + 2, j:j + 2].transpose(2, 0, 1).ravel() for j in range(3)]
                       for i in range(2)] for n in range(2)])
  np.testing.assert_allclose(f(x, w), np.einsum("nhwp,hwpo->nhwo", patches, w), rtol=1e-5,
                             atol=1e-5)
  check_grads(f, (x, w), order=1, atol=2e-2, rtol=2e-2)


def test_conv_shape_helpers_golden():
  # All from JAX 0.10.2.
  assert lax.conv_general_permutations(("NHWC", "HWIO", "NHWC")) == (
      (0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  assert lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (1, 2), "SAME") == (2, 4, 9, 4)
  assert lax.conv_shape_tuple((4, 3, 9, 8), (4, 3, 3, 2), (1, 2), "VALID", 2) == (2, 4, 7, 4)
  dn = ("NHWC", "HWIO", "NCHW")
  assert lax.conv_general_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (1, 2), [(1, 1), (0, 0)],
                                      dn) == (2, 4, 9, 4)
  dn = ("NHWC", "HWIO", "NHWC")
  assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 2), "VALID",
                                        dn) == (2, 19, 16, 4)
  assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 2),
                                        [(1, 2), (0, 1)], dn) == (2, 18, 15, 4)
  assert lax.reduce_window_shape_tuple((9, 8), (3, 2), (2, 1), [(1, 1), (0, 0)],
                                       (2, 1), (1, 2)) == (9, 6)
  with pytest.raises(TypeError, match="exactly once"):
    lax.conv_general_permutations(("NHW", "HWIO", "NHWC"))


# ----------------------------------------------------------------------------- jaxon.ops

DATA = np.arange(12, dtype=F32).reshape(6, 2) - 5
IDS = np.array([0, 0, 1, 3, 3, -1], np.int32)  # segment 2 empty; id -1 dropped


@pytest.mark.parametrize("name,reduce_fn,identity", [
    ("segment_sum", np.add, 0.), ("segment_prod", np.multiply, 1.),
    ("segment_max", np.maximum, -np.inf), ("segment_min", np.minimum, np.inf)])
def test_segment_ops_against_numpy(name, reduce_fn, identity):
  expected = np.full((4, 2), identity, F32)
  for row, i in zip(DATA, IDS):
    if i >= 0:
      expected[i] = reduce_fn(expected[i], row)
  op = getattr(ops, name)
  plain, bucketed = jaxon.jit(lambda d, i: (op(d, i, 4), op(d, i, 4, bucket_size=4)))(DATA, IDS)
  np.testing.assert_array_equal(plain, expected)
  np.testing.assert_array_equal(bucketed, expected)


def test_segment_ops_jit_grad_and_errors():
  f = jaxon.jit(lambda d, i: ops.segment_sum(d, i, num_segments=3, indices_are_sorted=True))
  np.testing.assert_array_equal(f(DATA[:4], IDS[:4] % 3), [[-7, -4], [-1, 0], [0, 0]])
  check_grads(jaxon.jit(lambda d: ops.segment_max(d, np.array([0, 0, 1, 2, 2, 1]), 3)),
              (DATA + RNG.rand(6, 2).astype(F32),),
              order=1, modes=("rev",))
  np.testing.assert_array_equal(ops.segment_min(np.arange(3), np.array([1, 1, 5])),
                                [np.iinfo(np.int32).max, 0, *[np.iinfo(np.int32).max] * 3, 2])
  with pytest.raises(jaxon.errors.ConcretizationTypeError, match="num_segments"):
    jaxon.jit(ops.segment_sum)(DATA, IDS)
  with pytest.raises(ValueError, match="non-negative"):
    ops.segment_sum(DATA, IDS, -1)


# ----------------------------------------------------------------------------- dtypes, keys

def test_float6_dtypes_and_key_dtype():
  assert jnp.dtype(jnp.float6_e2m3fn).name == "float6_e2m3fn"
  assert float(jnp.finfo(jnp.float6_e3m2fn).max) == 28.0
  text = jaxpr_text(lambda x: x, jaxon.ShapeDtypeStruct((3,), jnp.float6_e3m2fn))
  assert text == "{ lambda ; a:f6_e3m2fn[3]. let  in (a,) }"  # as JAX 0.10.2 prints it
  assert jaxon.random.key_dtype() == jaxon.random.key(0).dtype
  assert str(jaxon.random.key_dtype("threefry2x32")) == "key<fry>"
