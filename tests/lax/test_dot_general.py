"""dot_general, dot and batch_matmul against NumPy, eagerly and under jit.

`assert_matches_numpy` is the harness the convolution, sorting and jnp product tests share:
it runs a function eagerly and under `jit`, compares both with a NumPy result, and checks
that abstract evaluation (`eval_shape`) predicted the shape and dtype that came out.
"""
from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import jaxon
from jaxon import lax
from tests.conftest import tolerance

bf16 = np.dtype(ml_dtypes.bfloat16)


def assert_matches_numpy(fn: Callable, args: Sequence[Any], expected: Any, **tol: float
                         ) -> None:
  """`fn(*args)` eagerly and jitted equals `expected` (an array or a tuple of arrays, with
  the dtypes jaxon should produce); `eval_shape` agrees with both."""
  expected = expected if isinstance(expected, tuple) else (expected,)
  abstract = jaxon.eval_shape(fn, *args)
  abstract = abstract if isinstance(abstract, tuple) else (abstract,)
  for mode, f in (("eager", fn), ("jit", jaxon.jit(fn))):
    outs = f(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    assert len(outs) == len(expected), f"{mode}: {len(outs)} outputs, expected {len(expected)}"
    for i, (out, want, shape) in enumerate(zip(outs, expected, abstract)):
      where = f"{mode} output {i}"
      assert (out.shape, out.dtype) == (want.shape, want.dtype), (
          f"{where}: got {out.dtype}{out.shape}, expected {want.dtype}{want.shape}")
      assert (shape.shape, shape.dtype) == (want.shape, want.dtype), (
          f"abstract eval of output {i}: {shape}, expected {want.dtype}{want.shape}")
      got = np.asarray(out)
      if want.dtype == bf16 or want.dtype.kind == "f":
        got, want = got.astype(np.float64), want.astype(np.float64)
      np.testing.assert_allclose(got, want, err_msg=where, **tol)


def random_array(rng: np.random.RandomState, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
  """Small values: integer products stay exact, and low-precision floats stay close."""
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return np.asarray(rng.rand(*shape) > 0.5)
  if dtype.kind in "iu":
    return rng.randint(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)
  values = np.asarray(rng.randn(*shape))
  if dtype.kind == "c":
    values = values + 1j * rng.randn(*shape)
  return values.astype(dtype)


def numpy_dot_general(lhs: np.ndarray, rhs: np.ndarray, dimension_numbers: Any,
                      dtype: Any) -> np.ndarray:
  """The reference: an einsum in float64/complex128/int64, cast to `dtype`."""
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  letters = iter(string.ascii_letters)
  lhs_sub = [next(letters) for _ in range(lhs.ndim)]
  rhs_sub = [next(letters) for _ in range(rhs.ndim)]
  for l, r in zip(lhs_contract + lhs_batch, rhs_contract + rhs_batch):
    rhs_sub[r] = lhs_sub[l]
  out_sub = ([lhs_sub[d] for d in lhs_batch]
             + [c for i, c in enumerate(lhs_sub) if i not in lhs_contract + lhs_batch]
             + [c for i, c in enumerate(rhs_sub) if i not in rhs_contract + rhs_batch])
  wide = np.complex128 if np.dtype(dtype).kind == "c" else (
      np.float64 if np.dtype(dtype).kind == "f" or np.dtype(dtype) == bf16 else np.int64)
  out = np.einsum(f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(out_sub)}",
                  lhs.astype(wide), rhs.astype(wide))
  return (out != 0) if np.dtype(dtype) == np.bool_ else out.astype(dtype)


# ----------------------------------------------------------------------------- dot_general

# (id, lhs shape, rhs shape, dimension_numbers)
SHAPES = [
    ("vec_vec", (3,), (3,), (((0,), (0,)), ((), ()))),
    ("mat_vec", (2, 3), (3,), (((1,), (0,)), ((), ()))),
    ("mat_mat", (2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ("contract_leading", (3, 2), (3, 4), (((0,), (0,)), ((), ()))),
    ("batched", (5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,)))),
    ("batch_not_leading", (2, 5, 3), (3, 4, 5), (((2,), (0,)), ((1,), (2,)))),
    ("two_contracting", (2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
    ("outer_product", (2,), (3,), (((), ()), ((), ()))),
    ("scalar_operand", (), (3,), (((), ()), ((), ()))),
    ("zero_size_contracting", (2, 0), (0, 3), (((1,), (0,)), ((), ()))),
    ("zero_size_free", (0, 3), (3, 4), (((1,), (0,)), ((), ()))),
]
DTYPES = [np.int32, np.uint8, np.bool_, bf16, np.float16, np.complex64]
CASES = [(name, lhs, rhs, dn, np.float32) for name, lhs, rhs, dn in SHAPES] + [
    (name, lhs, rhs, dn, dt) for name, lhs, rhs, dn in SHAPES
    if name in ("mat_vec", "batch_not_leading", "zero_size_contracting") for dt in DTYPES]


@pytest.mark.parametrize("name,lhs_shape,rhs_shape,dimension_numbers,dtype", [
    pytest.param(*case, id=f"{case[0]}-{np.dtype(case[4]).name}") for case in CASES])
def test_dot_general(name, lhs_shape, rhs_shape, dimension_numbers, dtype):
  rng = np.random.RandomState(0)
  lhs, rhs = random_array(rng, lhs_shape, dtype), random_array(rng, rhs_shape, dtype)
  expected = numpy_dot_general(lhs, rhs, dimension_numbers, dtype)
  assert_matches_numpy(lambda x, y: lax.dot_general(x, y, dimension_numbers), (lhs, rhs),
                       expected, **tolerance(dtype))


def test_dot_general_float64(x64):
  rng = np.random.RandomState(1)
  lhs, rhs = rng.randn(4, 2, 3), rng.randn(3, 4, 5)
  dn = (((2,), (0,)), ((0,), (1,)))
  assert_matches_numpy(lambda x, y: lax.dot_general(x, y, dn), (lhs, rhs),
                       numpy_dot_general(lhs, rhs, dn, np.float64), **tolerance(np.float64))


# (id, lhs dtype, rhs dtype, preferred_element_type, result dtype)
MIXED_TYPES = [
    ("int8_to_int32", np.int8, np.int8, np.int32, np.int32),
    ("bf16_to_f32", bf16, bf16, np.float32, np.float32),
    ("f32_to_bf16", np.float32, np.float32, bf16, bf16),
    ("int8_to_f32", np.int8, np.int8, np.float32, np.float32),
    ("bool_to_int32", np.bool_, np.bool_, np.int32, np.int32),
    ("int8_times_int32", np.int8, np.int32, None, np.int32),
    ("f32_times_bf16", np.float32, bf16, None, np.float32),
    ("int32_times_f16", np.int32, np.float16, None, np.float16),
]


@pytest.mark.parametrize("name,lhs_dtype,rhs_dtype,preferred,result", [
    pytest.param(*case, id=case[0]) for case in MIXED_TYPES])
def test_dot_general_mixed_and_preferred_types(name, lhs_dtype, rhs_dtype, preferred, result):
  rng = np.random.RandomState(2)
  lhs, rhs = random_array(rng, (2, 3), lhs_dtype), random_array(rng, (3, 4), rhs_dtype)
  dn = (((1,), (0,)), ((), ()))
  expected = numpy_dot_general(lhs.astype(result), rhs.astype(result), dn, result)
  assert_matches_numpy(
      lambda x, y: lax.dot_general(x, y, dn, preferred_element_type=preferred), (lhs, rhs),
      expected, **tolerance(bf16 if bf16 in (lhs.dtype, rhs.dtype, result) else result))


@pytest.mark.parametrize("precision,printed", [
    ("highest", "(Precision.HIGHEST, Precision.HIGHEST)"),
    (lax.Precision.HIGH, "(Precision.HIGH, Precision.HIGH)"),
    (("bfloat16", "float32"), "(Precision.DEFAULT, Precision.HIGHEST)"),
])
def test_precision(precision, printed):
  lhs, rhs = np.ones((2, 3), np.float32), np.ones((3,), np.float32)
  fn = lambda x, y: lax.dot(x, y, precision=precision)
  assert f"precision={printed}" in str(jaxon.make_jaxpr(fn)(lhs, rhs))
  assert_matches_numpy(fn, (lhs, rhs), np.full((2,), 3, np.float32))


def test_jaxpr_prints_dimension_numbers_as_lists_and_hides_none():
  jaxpr = jaxon.make_jaxpr(lax.dot)(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
  assert "dot_general[dimension_numbers=(([1], [0]), ([], []))] a b" in str(jaxpr)


def test_default_matmul_precision_config():
  previous = jaxon.config.jax_default_matmul_precision
  jaxon.config.update("jax_default_matmul_precision", "highest")
  try:
    jaxpr = jaxon.make_jaxpr(lax.dot)(np.ones(3, np.float32), np.ones(3, np.float32))
  finally:
    jaxon.config.update("jax_default_matmul_precision", previous)
  assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in str(jaxpr)


DOT_ERRORS = [
    ("contracting_sizes", (2, 3), (4, 5), (((1,), (0,)), ((), ())), TypeError,
     r"contracting dimensions to have the same shape, got \(3,\) and \(4,\)"),
    ("out_of_range", (2, 3), (3, 4), (((2,), (0,)), ((), ())), TypeError,
     r"lhs contracting dimensions \(2,\) to be in range .* shape \(2, 3\)"),
    ("batch_count", (2, 3), (2, 3), (((1,), (1,)), ((0,), ())), TypeError,
     r"equal numbers of lhs and rhs batch dimensions"),
    ("batch_sizes", (2, 3), (4, 3), (((1,), (1,)), ((0,), (0,))), TypeError,
     r"batch dimensions to have the same shape, got \(2,\) and \(4,\)"),
    ("overlap", (2, 3), (3, 3), (((1,), (0,)), ((1,), (1,))), TypeError,
     r"lhs contracting and batch dimensions to be distinct"),
    ("malformed", (2, 3), (3, 4), ((1,), (0,)), TypeError, r"dimension_numbers must be"),
]


@pytest.mark.parametrize("name,lhs_shape,rhs_shape,dn,error,match", [
    pytest.param(*case, id=case[0]) for case in DOT_ERRORS])
def test_dot_general_errors(name, lhs_shape, rhs_shape, dn, error, match):
  lhs, rhs = np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32)
  with pytest.raises(error, match=match):
    lax.dot_general(lhs, rhs, dn)
  with pytest.raises(error, match=match):
    jaxon.jit(lambda x, y: lax.dot_general(x, y, dn))(lhs, rhs)


def test_dot_general_argument_errors():
  x = np.ones((2, 2), np.int32)
  dn = (((1,), (0,)), ((), ()))
  with pytest.raises(TypeError, match=r"preferred_element_type must not be narrower.*int8"):
    lax.dot_general(x, x, dn, preferred_element_type=np.int8)
  with pytest.raises(ValueError, match=r"precision 'fast' is not one of"):
    lax.dot_general(x, x, dn, precision="fast")
  with pytest.raises(TypeError, match=r"precision argument must be"):
    lax.dot_general(x, x, dn, precision=3)
  with pytest.raises(TypeError, match=r"`out_sharding` argument of dot_general only"):
    lax.dot_general(x, x, dn, out_sharding="x")


# ----------------------------------------------------------------------------- dot, batch_matmul

@pytest.mark.parametrize("lhs_shape,rhs_shape", [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 0), (0, 4))])
def test_dot(lhs_shape, rhs_shape):
  rng = np.random.RandomState(3)
  lhs, rhs = rng.randn(*lhs_shape).astype(np.float32), rng.randn(*rhs_shape).astype(np.float32)
  assert_matches_numpy(lax.dot, (lhs, rhs), np.dot(lhs, rhs).astype(np.float32),
                       **tolerance(np.float32))


def test_dot_preferred_element_type():
  x = np.arange(6, dtype=np.int8).reshape(2, 3)
  assert_matches_numpy(lambda a: lax.dot(a, a.T, preferred_element_type=np.int32), (x,),
                       np.dot(x.astype(np.int32), x.T.astype(np.int32)))


def test_dot_errors():
  with pytest.raises(ValueError, match=r"Incompatible shapes for dot: got \(3,\) and \(4,\)"):
    lax.dot(np.ones(3, np.float32), np.ones(4, np.float32))
  with pytest.raises(ValueError, match=r"Incompatible shapes for dot"):
    lax.dot(np.ones((2, 3, 4), np.float32), np.ones(4, np.float32))


def test_batch_matmul():
  rng = np.random.RandomState(4)
  lhs, rhs = rng.randn(2, 5, 3, 4).astype(np.float32), rng.randn(2, 5, 4, 1).astype(np.float32)
  assert_matches_numpy(lax.batch_matmul, (lhs, rhs), np.matmul(lhs, rhs),
                       **tolerance(np.float32))


@pytest.mark.parametrize("lhs_shape,rhs_shape,match", [
    ((3,), (3, 4), r"at least 2D, got shapes \(3,\) and \(3, 4\)"),
    ((2, 3, 4), (4, 5), r"same ndim, got shapes \(2, 3, 4\) and \(4, 5\)"),
])
def test_batch_matmul_errors(lhs_shape, rhs_shape, match):
  with pytest.raises(ValueError, match=match):
    lax.batch_matmul(np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32))
