"""jnp.sort, argsort, lexsort, sort_complex and the sort/argsort methods against NumPy,
eagerly and under jit."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from tests.lax.test_dot_general import assert_matches_numpy, bf16, random_array


def _with_nans(x: np.ndarray) -> np.ndarray:
  x = x.copy()
  x.reshape(-1)[::4] = np.nan
  return x


def _descending_order(x: np.ndarray, axis: int) -> np.ndarray:
  """Stable descending argsort with NaNs first, the order of `descending=True`."""
  moved = np.moveaxis(x.astype(np.float64), axis, -1)
  rows = moved.reshape(-1, moved.shape[-1])
  order = np.array([np.lexsort((-row, ~np.isnan(row))) for row in rows], np.int64)
  return np.moveaxis(order.reshape(moved.shape), -1, axis)


# (id, shape, dtype, axis)
CASES = [
    ("f32_last", (3, 8), np.float32, -1),
    ("f32_first", (3, 8), np.float32, 0),
    ("f32_flattened", (3, 4), np.float32, None),
    ("i32", (2, 9), np.int32, -1),
    ("u8", (10,), np.uint8, 0),
    ("bool", (7,), np.bool_, -1),
    ("bf16", (2, 6), bf16, 1),
    ("zero_size", (0, 3), np.float32, 0),
]


def _input(shape, dtype) -> np.ndarray:
  x = random_array(np.random.RandomState(0), shape, dtype)
  return _with_nans(x) if np.dtype(dtype).kind == "f" or np.dtype(dtype) == bf16 else x


@pytest.mark.parametrize("name,shape,dtype,axis", [pytest.param(*c, id=c[0]) for c in CASES])
def test_sort(name, shape, dtype, axis):
  x = _input(shape, dtype)
  expected = np.sort(x.astype(np.float32) if x.dtype == bf16 else x, axis=axis).astype(x.dtype)
  assert_matches_numpy(lambda a: jnp.sort(a, axis=axis), (x,), expected)


@pytest.mark.parametrize("name,shape,dtype,axis", [pytest.param(*c, id=c[0]) for c in CASES])
def test_argsort(name, shape, dtype, axis):
  x = _input(shape, dtype)
  wide = x.astype(np.float32) if x.dtype == bf16 else x
  expected = np.argsort(wide, axis=axis, kind="stable").astype(np.int32)
  assert_matches_numpy(lambda a: jnp.argsort(a, axis=axis), (x,), expected)


@pytest.mark.parametrize("axis", [0, -1])
def test_descending(axis):
  x = _with_nans(random_array(np.random.RandomState(1), (4, 6), np.float32))
  order = _descending_order(x, axis)
  assert_matches_numpy(lambda a: jnp.argsort(a, axis=axis, descending=True), (x,),
                       order.astype(np.int32))
  assert_matches_numpy(lambda a: jnp.sort(a, axis=axis, descending=True), (x,),
                       np.take_along_axis(x, order, axis))


def test_argsort_int64_under_x64(x64):
  x = np.array([3, 1, 2], np.int64)
  assert_matches_numpy(jnp.argsort, (x,), np.array([1, 2, 0], np.int64))


def test_methods():
  x = _input((3, 5), np.float32)
  assert_matches_numpy(lambda a: jnp.asarray(a).sort(axis=0), (x,), np.sort(x, axis=0))
  assert_matches_numpy(lambda a: jnp.asarray(a).argsort(), (x,),
                       np.argsort(x, kind="stable").astype(np.int32))


def test_lexsort():
  rng = np.random.RandomState(2)
  keys = (rng.randint(0, 3, (2, 12)).astype(np.int32), rng.randint(0, 2, (2, 12)) > 0,
          rng.randn(2, 12).astype(np.float32).round())
  assert_matches_numpy(lambda *k: jnp.lexsort(k), keys, np.lexsort(keys).astype(np.int32))


def test_sort_complex():
  x = np.array([3, 1, 2], np.int32)
  assert_matches_numpy(jnp.sort_complex, (x,), np.sort_complex(x).astype(np.complex64))


def test_stable_is_the_default():
  keys = np.array([1, 0, 1, 0, 1, 0], np.int32)
  np.testing.assert_array_equal(np.asarray(jaxon.jit(jnp.argsort)(keys)), [1, 3, 5, 0, 2, 4])


ERRORS = [
    ("order", lambda: jnp.sort(jnp.ones(3), order="x"), TypeError,
     r"'order' argument to sort is not supported"),
    ("axis", lambda: jnp.argsort(jnp.ones((2, 3)), axis=2), ValueError,
     r"axis 2 is out of bounds for an array of dimension 2"),
    ("lexsort_shapes", lambda: jnp.lexsort((jnp.ones(3), jnp.ones(4))), ValueError,
     r"lexsort keys must all have the same shape"),
    ("lexsort_empty", lambda: jnp.lexsort(()), TypeError, r"at least one key"),
    ("list_argument", lambda: jnp.sort([3, 1]), TypeError,
     r"sort requires ndarray or scalar arguments"),
]


@pytest.mark.parametrize("name,fn,error,match", [pytest.param(*c, id=c[0]) for c in ERRORS])
def test_errors(name, fn, error, match):
  with pytest.raises(error, match=match):
    fn()
