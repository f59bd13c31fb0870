"""sort, sort_key_val and top_k against NumPy, eagerly and under jit."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
from jaxon import lax
from tests.lax.test_dot_general import assert_matches_numpy, bf16, random_array

SPECIALS = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan, 1.0, 1.0])


def _values(shape, dtype, seed=0) -> np.ndarray:
  """Random values with repeats; float arrays also get NaNs, signed zeros and infinities."""
  rng = np.random.RandomState(seed)
  x = random_array(rng, shape, dtype)
  if np.dtype(dtype).kind in "fc" or np.dtype(dtype) == bf16:
    flat = x.reshape(-1)
    n = min(flat.size, len(SPECIALS))
    flat[rng.permutation(flat.size)[:n]] = SPECIALS[:n].astype(dtype)
  return x


# ----------------------------------------------------------------------------- sort

# (shape, dimension)
SORT_SHAPES = [((9,), -1), ((3, 7), 1), ((3, 7), 0), ((2, 3, 4), 1), ((2, 0), 0), ((0,), 0)]
SORT_DTYPES = [np.float32, np.int32, np.uint8, np.bool_, bf16, np.float16, np.complex64]
SORT_CASES = [(shape, dim, np.float32) for shape, dim in SORT_SHAPES] + [
    (shape, dim, dt) for shape, dim in SORT_SHAPES[1:3] for dt in SORT_DTYPES[1:]]


@pytest.mark.parametrize("shape,dimension,dtype", [
    pytest.param(*c, id=f"{np.dtype(c[2]).name}{list(c[0])}-dim{c[1]}") for c in SORT_CASES])
def test_sort(shape, dimension, dtype):
  x = _values(shape, dtype)
  expected = np.sort(x.astype(np.float32) if x.dtype == bf16 else x, axis=dimension)
  assert_matches_numpy(lambda a: lax.sort(a, dimension=dimension), (x,),
                       expected.astype(x.dtype))


def test_sort_float64(x64):
  x = _values((4, 6), np.float64)
  assert_matches_numpy(lax.sort, (x,), np.sort(x, axis=-1))


def test_sort_nans_last_and_signed_zeros_equal():
  """-0.0 and 0.0 tie, so a stable sort keeps their input order; NaNs (of either sign) tie
  with each other after +inf."""
  keys = np.array([0.0, np.nan, -0.0, -np.inf, -np.nan, np.inf, 0.0], np.float32)
  values = np.arange(7, dtype=np.int32)
  expected_order = np.array([3, 0, 2, 6, 5, 1, 4], np.int32)
  assert_matches_numpy(lax.sort_key_val, (keys, values), (keys[expected_order], expected_order))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_sort_key_val_is_stable(dtype):
  keys = random_array(np.random.RandomState(1), (4, 20), dtype)
  values = np.arange(80, dtype=np.float32).reshape(4, 20)
  order = np.argsort(keys, axis=1, kind="stable")
  assert_matches_numpy(lambda k, v: lax.sort_key_val(k, v, dimension=1), (keys, values),
                       (np.take_along_axis(keys, order, 1), np.take_along_axis(values, order, 1)))


def test_sort_two_keys_lexicographic():
  rng = np.random.RandomState(2)
  k1, k2 = rng.randint(0, 3, 30).astype(np.int32), _values((30,), np.float32, seed=3)
  payload = np.arange(30, dtype=np.uint8)
  order = np.lexsort((k2, k1))  # NumPy: last key is primary; NaNs sort last there too
  assert_matches_numpy(lambda a, b, c: lax.sort((a, b, c), num_keys=2), (k1, k2, payload),
                       (k1[order], k2[order], payload[order]))


def test_sort_complex_orders_by_real_then_imaginary():
  x = np.array([1 + 2j, 1 - 1j, -3 + 0j, np.nan + 0j, 1 + 1j], np.complex64)
  assert_matches_numpy(lax.sort, (x,), np.sort(x))


def test_sort_jaxpr():
  jaxpr = jaxon.make_jaxpr(lambda k, v: lax.sort_key_val(k, v, 0))(
      np.ones(3, np.float32), np.ones(3, np.int32))
  assert "sort[dimension=0 is_stable=True num_keys=1] a b" in str(jaxpr)


SORT_ERRORS = [
    ("shapes", lambda: lax.sort((np.ones(3), np.ones(4))), TypeError,
     r"sort requires all operands to have the same shape, got f32\[3\], f32\[4\]"),
    ("num_keys_too_many", lambda: lax.sort((np.ones(3),), num_keys=2), ValueError,
     r"num_keys=2 must be between 1 and the number of operands, 1"),
    ("num_keys_single", lambda: lax.sort(np.ones(3), num_keys=2), ValueError,
     r"single operand takes num_keys=1"),
    ("scalar", lambda: lax.sort(np.float32(1)), TypeError, r"rank >= 1, got shape \(\)"),
    ("dimension", lambda: lax.sort(np.ones((2, 3)), dimension=2), ValueError,
     r"dimension 2 is out of bounds for an array of dimension 2"),
]


@pytest.mark.parametrize("name,fn,error,match", [pytest.param(*c, id=c[0]) for c in SORT_ERRORS])
def test_sort_errors(name, fn, error, match):
  with pytest.raises(error, match=match):
    fn()


# ----------------------------------------------------------------------------- top_k

def numpy_top_k(x: np.ndarray, k: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
  """Largest first in IEEE total order (JAX's, XLA's TopK: NaN above inf and -NaN below
  -inf, 0. above -0.), ties in index order."""
  moved = np.moveaxis(x, axis, -1)
  wide = moved.astype(np.float64)  # keeps the sign of a NaN
  bits = wide.view(np.int64)
  total_order = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
  rows = total_order.reshape(-1, x.shape[axis])
  order = np.array([np.argsort(~row, kind="stable") for row in rows], np.int64)
  order = order.reshape(moved.shape)[..., :k]
  values = np.take_along_axis(moved, order, -1)
  return np.moveaxis(values, -1, axis), np.moveaxis(order.astype(np.int32), -1, axis)


# (shape, k, axis)
TOP_K_SHAPES = [((9,), 3, -1), ((3, 7), 7, -1), ((4, 5), 2, 0), ((2, 5), 0, -1), ((0, 4), 2, 1)]
TOP_K_CASES = [(shape, k, axis, np.float32) for shape, k, axis in TOP_K_SHAPES] + [
    (TOP_K_SHAPES[1][0], 3, -1, dt) for dt in (np.int32, np.uint8, bf16, np.bool_)]


@pytest.mark.parametrize("shape,k,axis,dtype", [
    pytest.param(*c, id=f"{np.dtype(c[3]).name}{list(c[0])}-k{c[1]}-axis{c[2]}")
    for c in TOP_K_CASES])
def test_top_k(shape, k, axis, dtype):
  x = _values(shape, dtype)
  assert_matches_numpy(lambda a: lax.top_k(a, k, axis=axis), (x,), numpy_top_k(x, k, axis))


def test_top_k_lowers_to_chlo_top_k():
  """As JAX's: XLA's CPU backend then selects the top k of float32 without a full sort."""
  text = jaxon.jit(lambda a: lax.top_k(a, 2, axis=0)).lower(np.ones((5, 3), np.float32)).as_text()
  assert "chlo.top_k" in text and "stablehlo.sort" not in text


TOP_K_ERRORS = [
    ("k_too_large", lambda: lax.top_k(np.ones(3, np.float32), 4), ValueError,
     r"k must be no larger than the size 3 of axis 0 of operand f32\[3\], got k=4"),
    ("negative_k", lambda: lax.top_k(np.ones(3, np.float32), -1), ValueError,
     r"k must be nonnegative"),
    ("complex", lambda: lax.top_k(np.ones(3, np.complex64), 1), TypeError,
     r"top_k does not accept dtype complex64"),
    ("scalar", lambda: lax.top_k(np.float32(1), 1), TypeError, r"rank >= 1"),
]


@pytest.mark.parametrize("name,fn,error,match", [pytest.param(*c, id=c[0]) for c in TOP_K_ERRORS])
def test_top_k_errors(name, fn, error, match):
  with pytest.raises(error, match=match):
    fn()
