"""lax slicing against NumPy: slice, dynamic_slice, dynamic_update_slice and their in_dim
wrappers. Each case runs eagerly and under jit, and the abstract evaluation must agree with
the result."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon.numpy as jnp
from jaxon import lax
from tests.util import BF16, BOOL, F32, I32, U8, check, rand

DTYPES = [F32, I32, U8, BOOL, BF16]




# ----------------------------------------------------------------------------- slice

SLICE_CASES = [  # (shape, start, limit, strides)
    ((), (), (), None),
    ((7,), (1,), (6,), None),
    ((7,), (0,), (7,), (3,)),
    ((4, 6), (1, 0), (3, 6), (1, 2)),
    ((4, 6), (2, 3), (2, 5), None),  # zero-size result
    ((0, 3), (0, 1), (0, 3), None),  # zero-size operand
    ((3, 4, 5), (0, 1, 1), (3, 4, 5), (2, 2, 3)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,start,limit,strides", SLICE_CASES, ids=str)
def test_slice(shape, start, limit, strides, dtype):
  x = rand(shape, dtype)
  index = tuple(slice(lo, hi, s) for lo, hi, s in zip(start, limit, strides or [1] * len(shape)))
  check(f"slice{start}:{limit}:{strides}", lambda a: lax.slice(a, start, limit, strides), [x],
        x[index])


def test_slice_in_dim_and_index_in_dim():
  x = rand((4, 6), F32)
  check("slice_in_dim", lambda a: lax.slice_in_dim(a, 1, -1, 2, axis=1), [x], x[:, 1:-1:2])
  check("slice_in_dim(None)", lambda a: lax.slice_in_dim(a, None, None, axis=0), [x], x)
  check("index_in_dim", lambda a: lax.index_in_dim(a, -1, axis=1), [x], x[:, -1:])
  check("index_in_dim(keepdims=False)", lambda a: lax.index_in_dim(a, 2, 0, keepdims=False),
        [x], x[2])


@pytest.mark.parametrize("fun,error,match", [
    (lambda x: lax.slice(x, (0,), (3,)), TypeError, r"length equal to the number of dim"),
    (lambda x: lax.slice(x, (0, 0), (5, 3)), TypeError, r"0 <= start <= limit <= shape"),
    (lambda x: lax.slice(x, (2, 0), (1, 3)), TypeError, r"0 <= start <= limit <= shape"),
    (lambda x: lax.slice(x, (0, 0), (4, 3), (0, 1)), TypeError, r"strides must be positive"),
    (lambda x: lax.index_in_dim(x, 4, 0), IndexError, r"index 4 is out of bounds for axis 0"),
], ids=["rank", "limit", "start>limit", "stride0", "index_in_dim"])
def test_slice_errors(fun, error, match):
  with pytest.raises(error, match=match):
    fun(jnp.zeros((4, 3)))


# ----------------------------------------------------------------------------- dynamic slices

def np_dynamic_slice(x, starts, sizes):
  """XLA's semantics: negative starts count from the end, then clamp so the window fits."""
  starts = [min(max(s + d if s < 0 else s, 0), d - n) for s, d, n in zip(starts, x.shape, sizes)]
  return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes))], starts


def np_dynamic_update_slice(x, update, starts):
  _, starts = np_dynamic_slice(x, starts, update.shape)
  out = x.copy()
  out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
  return out


DYNAMIC_CASES = [  # (shape, starts, sizes)
    ((), (), ()),
    ((7,), (2,), (3,)),
    ((7,), (6,), (3,)),     # clamped to 4
    ((7,), (-2,), (2,)),    # counts from the end
    ((7,), (-20,), (2,)),   # clamped to 0
    ((4, 5), (1, 3), (2, 2)),
    ((4, 5), (3, -1), (0, 5)),  # zero-size window
]


@pytest.mark.parametrize("dtype", [F32, I32, BOOL], ids=str)
@pytest.mark.parametrize("shape,starts,sizes", DYNAMIC_CASES, ids=str)
def test_dynamic_slice(shape, starts, sizes, dtype):
  x = rand(shape, dtype)
  want, _ = np_dynamic_slice(x, starts, sizes)
  starts_arr = [np.int32(s) for s in starts]
  check(f"dynamic_slice{starts}", lambda a, *s: lax.dynamic_slice(a, s, sizes),
        [x, *starts_arr], want)
  check(f"dynamic_slice{starts} (static starts)",
        lambda a: lax.dynamic_slice(a, starts, sizes), [x], want)


@pytest.mark.parametrize("dtype", [F32, I32, BOOL], ids=str)
@pytest.mark.parametrize("shape,starts,sizes", DYNAMIC_CASES, ids=str)
def test_dynamic_update_slice(shape, starts, sizes, dtype):
  x, update = rand(shape, dtype), rand(sizes, dtype, seed=1)
  want = np_dynamic_update_slice(x, update, starts)
  starts_arr = [np.int32(s) for s in starts]
  check(f"dynamic_update_slice{starts}", lambda a, u, *s: lax.dynamic_update_slice(a, u, s),
        [x, update, *starts_arr], want)


def test_dynamic_slice_start_indices_array_and_dtypes():
  x = rand((5, 6), F32)
  check("dynamic_slice(array starts)",
        lambda a, s: lax.dynamic_slice(a, s, (2, 3)), [x, np.array([4, -2], np.int32)],
        np_dynamic_slice(x, (4, -2), (2, 3))[0])
  check("dynamic_slice(uint8 start)",
        lambda a, s: lax.dynamic_slice(a, (s, 1), (2, 3)), [x, np.uint8(3)], x[3:5, 1:4])
  check("dynamic_slice(no negative indices)",
        lambda a, s: lax.dynamic_slice(a, (s, 0), (2, 3), allow_negative_indices=False),
        [x, np.int32(-1)], x[0:2, 0:3])


def test_dynamic_in_dim_wrappers():
  x = rand((4, 5), F32)
  i = np.int32(-1)
  check("dynamic_slice_in_dim", lambda a, i: lax.dynamic_slice_in_dim(a, i, 2, axis=1),
        [x, np.int32(2)], x[:, 2:4])
  check("dynamic_index_in_dim", lambda a, i: lax.dynamic_index_in_dim(a, i, 0, False),
        [x, i], x[-1])
  check("dynamic_index_in_dim(keepdims)", lambda a, i: lax.dynamic_index_in_dim(a, i, 1),
        [x, i], x[:, -1:])
  row = rand((5,), F32, seed=2)
  want = x.copy()
  want[1] = row
  check("dynamic_update_index_in_dim",
        lambda a, u, i: lax.dynamic_update_index_in_dim(a, u, i, 0), [x, row, np.int32(1)],
        want)
  want = x.copy()
  want[:, 3:5] = x[:, :2]
  check("dynamic_update_slice_in_dim",
        lambda a, u, i: lax.dynamic_update_slice_in_dim(a, u, i, axis=1),
        [x, x[:, :2], np.int32(4)], want)


@pytest.mark.parametrize("fun,match", [
    (lambda x: lax.dynamic_slice(x, (0,), (1, 1)), r"Length of dynamic_slice start_indices"),
    (lambda x: lax.dynamic_slice(x, (0, 0), (5, 1)), r"0 <= size <= dimension"),
    (lambda x: lax.dynamic_slice(x, (0.5, 0), (1, 1)), r"scalars of integer type"),
    (lambda x: lax.dynamic_slice(x, jnp.zeros((2, 1), jnp.int32), (1, 1)), r"1D array"),
    (lambda x: lax.dynamic_update_slice(x, jnp.zeros((5, 1)), (0, 0)), r"fit inside it"),
    (lambda x: lax.dynamic_update_slice(x, jnp.zeros(2), (0, 0)), r"operand's rank"),
    (lambda x: lax.dynamic_update_slice(x, jnp.zeros((1, 1), jnp.int32), (0, 0)),
     r"same dtypes"),
], ids=["starts-length", "size", "float-start", "2d-starts", "update-size", "update-rank",
        "update-dtype"])
def test_dynamic_slice_errors(fun, match):
  # JAX's class: a ValueError for the wrong number of start indices, TypeErrors otherwise
  with pytest.raises((TypeError, ValueError), match=match):
    fun(jnp.zeros((4, 3)))
