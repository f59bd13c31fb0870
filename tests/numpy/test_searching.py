"""jnp searching, set operations and selection against NumPy: eagerly, under jit (with
`size=` where the result's length depends on the data), vmap against a loop, gradients,
and the errors for traced inputs without `size=`."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from tests.util import check_grads

SETTINGS = settings(max_examples=6, deadline=None)
HEAVY = settings(max_examples=4, deadline=None)  # many ops, each compiled per shape
SIZES = st.sampled_from([0, 2, 5])  # few sizes: each compiles anew under jit
INT = np.int32  # jaxon's default integer (x64 off)


def _close(got, want, what=""):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  np.testing.assert_array_equal(got, want, err_msg=what)


def _close_all(got, want, what=""):
  got = got if isinstance(got, tuple) else (got,)
  want = want if isinstance(want, tuple) else (want,)
  assert len(got) == len(want), what
  for i, (g, w) in enumerate(zip(got, want)):
    _close(g, w, f"{what} output {i}")


def _eager_and_jit(fn, args, want, what=""):
  _close_all(fn(*args), want, f"{what} eager")
  _close_all(jaxon.jit(fn)(*args), want, f"{what} jit")


# A few shapes only: each new shape compiles every op again, which dominates the run time.
SHAPES = [(), (0,), (1,), (4,), (7,), (0, 2), (2, 3), (3, 2), (2, 1, 3)]


@st.composite
def small_arrays(draw, dtype=None, min_dims=1, max_dims=2, nan=True):
  """Arrays with few distinct values (so duplicates are common), NaNs in float ones."""
  dtype = np.dtype(draw(st.sampled_from([np.float32, np.int32, np.uint8]))
                   if dtype is None else dtype)
  shape = draw(st.sampled_from([s for s in SHAPES if min_dims <= len(s) <= max_dims]))
  values = np.asarray(draw(st.lists(st.integers(0, 4), min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape)))), np.float64).reshape(shape)
  if dtype.kind == "f" and nan and values.size and draw(st.booleans()):
    values.reshape(-1)[draw(st.integers(0, values.size - 1))] = np.nan
  if dtype.kind == "b":
    return values > 2
  if dtype.kind == "c":
    return (values + 1j * values[::-1]).astype(dtype)
  return values.astype(dtype)


def _padded(x, size, fill):
  x = np.asarray(x)
  out = np.full((size,) + x.shape[1:], fill, x.dtype)
  out[:min(size, len(x))] = x[:size]
  return out


# ----------------------------------------------------------------------------- searchsorted

@SETTINGS
@given(small_arrays(max_dims=1), small_arrays(min_dims=0),
       st.sampled_from(["left", "right"]),
       st.sampled_from(["scan", "scan_unrolled", "compare_all", "sort"]))
def test_searchsorted(a, v, side, method):
  a = np.sort(a)
  v = (v if a.dtype.kind == "f" else np.nan_to_num(v)).astype(a.dtype)
  want = np.searchsorted(a, v, side=side).astype(np.int32)
  _eager_and_jit(lambda a, v: jnp.searchsorted(a, v, side=side, method=method), (a, v), want,
                 f"searchsorted {side} {method}")


@pytest.mark.parametrize("dtype", [np.bool_, np.complex64, np.int8])
def test_searchsorted_dtypes(dtype):
  rng = np.random.RandomState(0)

  def draw(n):
    x = rng.randint(0, 3, n) + (1j * rng.randint(0, 2, n) if dtype == np.complex64 else 0)
    return x.astype(dtype)
  a, v = np.sort(draw(9)), draw(5)
  for side in ("left", "right"):
    for method in ("scan", "compare_all", "sort"):
      got = jnp.searchsorted(a, v, side=side, method=method)
      _close(got, np.searchsorted(a, v, side=side), f"{dtype.__name__} {side} {method}")


@pytest.mark.parametrize("method,loop", [("scan", True), ("scan_unrolled", False)])
def test_searchsorted_scan_is_a_loop_as_in_jax(method, loop):
  """Unrolled, every step's gather fuses with what computed `a`, computed again per query
  and step (`interp` of points made in the program took 2.4 times JAX's time)."""
  text = str(jaxon.make_jaxpr(lambda a, v: jnp.searchsorted(a, v, method=method))(
      np.arange(8, dtype=np.float32), np.ones(3, np.float32)))
  assert (" scan[" in text or " while[" in text) == loop, text


def test_nonzero_with_size_sorts_nothing():
  """Linear time, as JAX's: cumulative counts and a scatter, not a sort (5x JAX's time)."""
  text = str(jaxon.make_jaxpr(lambda x: jnp.nonzero(x > 0, size=3))(np.ones(8, np.float32)))
  assert " sort[" not in text and "scatter-add" in text, text


def test_searchsorted_complex_nan_order():
  a = np.sort(np.array([1 + 1j, np.nan + 0j, 1 + np.nan * 1j, 0j, 1 + 0j], np.complex64))
  v = np.array([1 + 2j, np.nan, 1 + np.nan * 1j, 2], np.complex64)
  for side in ("left", "right"):
    _close(jnp.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side), side)


def test_searchsorted_sorter_and_scalar():
  a = np.array([3., 1., 2., 5.], np.float32)
  sorter = np.argsort(a).astype(np.int32)
  _close(jnp.searchsorted(a, 2.5, sorter=sorter), np.searchsorted(a, 2.5, sorter=sorter))
  _close(jnp.searchsorted(np.zeros(0, np.float32), np.ones(3, np.float32)), np.zeros(3))
  assert jnp.searchsorted(a, 1).dtype == np.int32


# ----------------------------------------------------------------------------- nonzero family

@SETTINGS
@given(small_arrays(dtype=np.float32, max_dims=3), SIZES)
def test_nonzero_family(x, size):
  want = np.nonzero(x)
  _close_all(jnp.nonzero(x), want, "nonzero")
  _close_all(jnp.where(x), want, "where(x)")
  _close(jnp.flatnonzero(x), np.flatnonzero(x), "flatnonzero")
  _close(jnp.argwhere(x), np.argwhere(x), "argwhere")
  padded = tuple(_padded(w, size, -1) for w in want)
  _eager_and_jit(lambda x: jnp.nonzero(x, size=size, fill_value=-1), (x,), padded,
                 "nonzero size")
  _eager_and_jit(lambda x: jnp.argwhere(x, size=size, fill_value=-1), (x,),
                 _padded(np.argwhere(x), size, -1), "argwhere size")
  fills = tuple(range(-x.ndim, 0))
  _close_all(jnp.nonzero(x, size=size, fill_value=fills),
             tuple(_padded(w, size, f) for w, f in zip(want, fills)), "per-dimension fill")


def test_nonzero_dtypes_and_scalars():
  assert jnp.nonzero(np.array([0, 2]))[0].dtype == INT
  _close(jnp.argwhere(np.float32(3)), np.argwhere(np.float32(3)))
  _close(jnp.argwhere(np.float32(0)), np.argwhere(np.float32(0)))
  _close(jnp.nonzero(np.array([0j, 1j, 0j]))[0], [1])
  with pytest.raises(ValueError, match="0d"):
    jnp.nonzero(np.float32(1))


# ----------------------------------------------------------------------------- unique

def _np_unique(x, **kw):
  out = np.unique(x, **kw)
  return out if isinstance(out, tuple) else (out,)


@SETTINGS
@given(small_arrays(max_dims=2), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from([None, 0, 1, -1]), st.booleans())
def test_unique(x, return_index, return_inverse, return_counts, axis, equal_nan):
  flags = dict(return_index=return_index, return_inverse=return_inverse,
               return_counts=return_counts)
  if axis is not None and (axis >= x.ndim or axis < -x.ndim):
    axis = None
  if axis is not None:
    x = np.where(np.isnan(x), 0, x).astype(x.dtype) if x.dtype.kind == "f" else x
  want = _np_unique(x, axis=axis, equal_nan=equal_nan, **flags)
  got = jnp.unique(x, axis=axis, equal_nan=equal_nan, **flags)
  _close_all(got, want, f"unique axis={axis}")


@SETTINGS
@given(small_arrays(max_dims=2), SIZES)
def test_unique_with_size(x, size):
  values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                             return_counts=True)
  smallest = values[0] if values.size else 0
  want = (_padded(values, size, -2 if x.dtype.kind != "u" else 2),
          _padded(index, size, index[0] if index.size else 0), inverse,
          _padded(counts, size, 0))
  fill = -2 if x.dtype.kind != "u" else 2
  _eager_and_jit(lambda x: jnp.unique(x, True, True, True, size=size, fill_value=fill),
                 (x,), want, "unique size")
  default_fill = _padded(values, size, smallest)
  _close(jaxon.jit(lambda x: jnp.unique(x, size=size))(x), default_fill,
         "default fill (smallest value)")


def test_unique_array_api():
  x = np.array([[3., np.nan, 1.], [1., np.nan, 3.]], np.float32)
  for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
    got, want = getattr(jnp, name)(x), getattr(np, name)(x)
    if name == "unique_values":
      got, want = (got,), (want,)
    else:
      assert got._fields == want._fields
    _close_all(tuple(got), tuple(want), name)


# ----------------------------------------------------------------------------- set operations

@HEAVY
@given(small_arrays(max_dims=2), small_arrays(max_dims=2), SIZES)
def test_set_operations(x, y, size):
  y = (y if x.dtype.kind == "f" else np.nan_to_num(y)).astype(x.dtype)
  for name in ("union1d", "setdiff1d", "setxor1d", "intersect1d"):
    want = getattr(np, name)(x, y)
    _close(getattr(jnp, name)(x, y), want, name)
    fn = getattr(jnp, name)
    _close(jaxon.jit(lambda x, y, fn=fn: fn(x, y, size=size, fill_value=7))(x, y),
           _padded(want, size, 7), f"{name} size={size}")
    if want.size and name == "union1d":  # the padding defaults to the smallest value
      _close(jaxon.jit(lambda x, y, fn=fn: fn(x, y, size=size))(x, y),
             _padded(want, size, want[0]), f"{name} size={size} default fill")
  want = np.intersect1d(x, y, return_indices=True)
  _close_all(jnp.intersect1d(x, y, return_indices=True), want, "intersect1d indices")
  _close_all(jaxon.jit(lambda x, y: jnp.intersect1d(x, y, return_indices=True, size=size,
                                                    fill_value=7))(x, y),
             (_padded(want[0], size, 7), _padded(want[1], size, 0), _padded(want[2], size, 0)),
             "intersect1d size")


@HEAVY
@given(small_arrays(max_dims=1, nan=False), small_arrays(max_dims=1, nan=False))
def test_set_operations_assume_unique(x, y):
  x, y = np.unique(x), np.unique(y.astype(x.dtype))
  rng = np.random.RandomState(len(x))
  x = rng.permutation(x)
  for name in ("setdiff1d", "setxor1d", "intersect1d"):
    _close(getattr(jnp, name)(x, y, assume_unique=True),
           getattr(np, name)(x, y, assume_unique=True), name)
  _close_all(jnp.intersect1d(x, y, assume_unique=True, return_indices=True),
             np.intersect1d(x, y, assume_unique=True, return_indices=True))


@SETTINGS
@given(small_arrays(min_dims=0, max_dims=2), small_arrays(max_dims=2), st.booleans(),
       st.sampled_from(["auto", "compare_all", "binary_search", "sort"]))
def test_isin(x, y, invert, method):
  want = np.isin(x, y, invert=invert)
  _eager_and_jit(lambda x, y: jnp.isin(x, y, invert=invert, method=method), (x, y), want,
                 f"isin {method}")



@pytest.mark.parametrize("n,m", [(1000, 100), (100, 1000)])  # searched, compared
def test_isin_auto_on_larger_arrays(n, m):
  rng = np.random.RandomState(n)
  x = rng.randint(-50, 50, n).astype(np.float32)
  y = rng.randint(-50, 50, m).astype(np.float32)
  x[:3], y[:2] = [np.nan, -0.0, 7.5], [np.nan, 0.0]
  for invert in (False, True):
    got = jaxon.jit(lambda a, b, invert=invert: jnp.isin(a, b, invert=invert))(x, y)
    np.testing.assert_array_equal(got, np.isin(x, y, invert=invert), err_msg=f"{invert=}")


# ----------------------------------------------------------------------------- partition

@SETTINGS
@given(small_arrays(min_dims=1, max_dims=2), st.data())
def test_partition(x, data):
  axis = data.draw(st.sampled_from([-1, 0, None]))
  n = x.size if axis is None else x.shape[axis]
  if n == 0:
    return
  kth = data.draw(st.integers(-n, n - 1))
  part = np.asarray(jnp.partition(x, kth, axis=axis))
  flat = x.reshape(-1) if axis is None else x
  ax = 0 if axis is None else axis
  want_kth = np.take(np.sort(flat, axis=ax), kth, axis=ax)
  np.testing.assert_array_equal(np.take(part, kth, axis=ax), want_kth)
  np.testing.assert_array_equal(np.sort(part, axis=ax), np.sort(flat, axis=ax))
  idx = np.asarray(jnp.argpartition(x, kth, axis=axis))
  by_idx = np.take_along_axis(flat, idx, axis=ax)
  np.testing.assert_array_equal(np.take(by_idx, kth, axis=ax), want_kth)
  np.testing.assert_array_equal(np.sort(by_idx, axis=ax), np.sort(flat, axis=ax))
  before, after = np.split(np.moveaxis(by_idx, ax, -1), [kth % n + 1], axis=-1)
  assert np.all(~(before[..., :-1] > before[..., -1:])) and np.all(~(after < before[..., -1:]))


def test_partition_and_argpartition_arrange_as_jax():
  """One kth of a real array: JAX's arrangement (the smallest ascending, then the rest:
  descending for partition, in index order for argpartition), recorded from JAX 0.10.2;
  the most negative integer stays (JAX's negation there wraps and loses it)."""
  x = np.random.RandomState(0).randn(8).astype(np.float32)
  np.testing.assert_array_equal(
      jnp.partition(x, 3), np.float32([-0.9772779, -0.1513572, 0.4001572, 0.95008844,
                                       2.2408931, 1.867558, 1.7640524, 0.978738]))
  np.testing.assert_array_equal(jnp.argpartition(x, 3), [5, 7, 1, 6, 0, 2, 3, 4])
  # Both select without a sort (XLA's CPU top_k of int32, unlike float32, is one).
  for fn in (jnp.partition, jnp.argpartition):
    assert "sort(" not in jaxon.jit(lambda v, fn=fn: fn(v, 3)).lower(x).compile().as_text()
  with_nan = np.float32([np.nan, 1, 2, 3])
  np.testing.assert_array_equal(jnp.partition(with_nan, 1), [1, 2, np.nan, 3])
  np.testing.assert_array_equal(jnp.argpartition(with_nan, 1), [1, 2, 0, 3])
  u8 = np.uint8([3, 1, 2, 1, 3, 0])
  np.testing.assert_array_equal(jnp.partition(u8, 2), [0, 1, 1, 3, 3, 2])
  np.testing.assert_array_equal(jnp.argpartition(u8, 2), [5, 1, 3, 0, 2, 4])
  i8 = np.int8([2, -128, 5, -1])
  np.testing.assert_array_equal(jnp.partition(i8, 0), [-128, 5, 2, -1])
  np.testing.assert_array_equal(jnp.partition(x.reshape(2, 4), (1, 2), axis=1),
                                np.sort(x.reshape(2, 4), axis=1))  # several kths: sorted


def test_partition_kth_checks():
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.partition(np.arange(3), 3)
  with pytest.raises(TypeError, match="kth"):
    jnp.partition(np.arange(3), 1.5)


# ----------------------------------------------------------------------------- take family

@SETTINGS
@given(small_arrays(dtype=np.float32, min_dims=1, max_dims=3), st.data())
def test_take(x, data):
  axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
  n = x.size if axis is None else x.shape[axis]
  if n == 0:
    return
  shape = data.draw(st.sampled_from([(), (3,), (2, 2)]))
  idx = np.asarray(data.draw(st.lists(st.integers(-n - 2, n + 1), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape)))), np.int32).reshape(shape)
  for mode in ("clip", "wrap"):
    _eager_and_jit(lambda x, i, mode=mode: jnp.take(x, i, axis=axis, mode=mode), (x, idx),
                   np.take(x, idx, axis=axis, mode=mode), f"take {mode}")
  in_bounds = (idx >= -n) & (idx < n)
  filled = np.take(x, np.where(in_bounds, idx, 0), axis=axis)
  mask = np.expand_dims(in_bounds, tuple(range(idx.ndim, idx.ndim + filled.ndim - idx.ndim)))
  if axis is not None:
    ax = axis % x.ndim
    mask = in_bounds.reshape((1,) * ax + idx.shape + (1,) * (x.ndim - ax - 1))
  want = np.where(mask, filled, np.nan).astype(np.float32)
  _eager_and_jit(lambda x, i: jnp.take(x, i, axis=axis), (x, idx), want, "take fill")


@SETTINGS
@given(small_arrays(dtype=np.float32, min_dims=1, max_dims=3), st.data())
def test_take_and_put_along_axis(x, data):
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  n = x.shape[axis]
  if n == 0:
    return
  idx_shape = list(x.shape)
  idx_shape[axis] = data.draw(st.integers(0, 4))
  if x.ndim > 1 and data.draw(st.booleans()):  # broadcast a non-axis dimension
    other = (axis + 1) % x.ndim
    idx_shape[other] = 1
  idx = np.asarray(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(idx_shape)),
                                      max_size=int(np.prod(idx_shape)))),
                   np.int32).reshape(idx_shape)
  _eager_and_jit(lambda x, i: jnp.take_along_axis(x, i, axis=axis), (x, idx),
                 np.take_along_axis(x, idx, axis=axis), "take_along_axis")
  for mode in ("clip", "wrap"):
    shifted = idx + n + 1
    want = np.take_along_axis(x, np.clip(shifted, 0, n - 1) if mode == "clip"
                              else shifted % n, axis=axis)
    _close(jnp.take_along_axis(x, shifted, axis=axis, mode=mode), want, mode)
  # put_along_axis with unique indices along the axis (repeated ones pick any writer)
  perm = np.argsort(np.random.RandomState(0).rand(*x.shape), axis=axis).astype(np.int32)
  values = np.arange(x.size, dtype=np.float32).reshape(x.shape)
  want = x.copy()
  np.put_along_axis(want, perm, values, axis=axis)
  _eager_and_jit(lambda x, i, v: jnp.put_along_axis(x, i, v, axis=axis, inplace=False),
                 (x, perm, values), want, "put_along_axis")


def test_take_along_axis_flat_and_out_of_bounds():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  idx = np.array([5, 0, -1], np.int32)
  _close(jnp.take_along_axis(x, idx, axis=None), np.take_along_axis(x, idx, axis=None))
  got = jnp.take_along_axis(x, np.array([[0, 3]], np.int32), axis=1)
  np.testing.assert_array_equal(np.isnan(np.asarray(got)), [[False, True], [False, True]])
  with pytest.raises(ValueError, match="inplace=False"):
    jnp.put_along_axis(x, np.zeros((2, 1), np.int32), 1., axis=1)


def test_take_errors():
  with pytest.raises(NotImplementedError, match="raise"):
    jnp.take(np.arange(3.), np.array([0]), mode="raise")
  with pytest.raises(TypeError, match="integers"):
    jnp.take(np.arange(3.), np.array([0.]))


@SETTINGS
@given(small_arrays(dtype=np.int32, min_dims=0, max_dims=2),
       st.sampled_from(["raise", "wrap", "clip"]), st.integers(1, 3))
def test_choose(a, mode, n):
  rng = np.random.RandomState(n)
  choices = [np.asarray(rng.randn(*a.shape[1:]), np.float32) for _ in range(n)]
  if mode == "raise":
    a = a % n
  want = np.choose(a, choices, mode=mode)
  got = jnp.choose(a, choices, mode=mode)
  _close(got, want, f"choose {mode}")
  if mode != "raise":
    _close(jaxon.jit(lambda a, c: jnp.choose(a, c, mode=mode))(a, choices), want)


def test_choose_raise_errors():
  with pytest.raises(ValueError, match="invalid entry"):
    jnp.choose(np.array([0, 2]), [np.zeros(2), np.ones(2)])
  with pytest.raises(jaxon.errors.ConcretizationTypeError, match="mode='wrap'"):
    jaxon.jit(lambda a: jnp.choose(a, [np.zeros(2), np.ones(2)]))(np.array([0, 1]))


@SETTINGS
@given(small_arrays(dtype=np.float32, min_dims=1, max_dims=2), st.data())
def test_compress_and_extract(x, data):
  axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
  n = x.size if axis is None else x.shape[axis]
  cond = np.asarray(data.draw(st.lists(st.booleans(), min_size=0, max_size=n)), bool)
  want = np.compress(cond, x, axis=axis)
  _close(jnp.compress(cond, x, axis=axis), want, "compress")
  size = data.draw(SIZES)
  ax = 0 if axis is None else axis % x.ndim
  padded = np.moveaxis(_padded(np.moveaxis(want, ax, 0), size, -1.), 0, ax)
  _close(jaxon.jit(lambda c, x: jnp.compress(c, x, axis=axis, size=size, fill_value=-1.))(
      cond, x), padded, "compress size")
  mask = x > 2
  _close(jnp.extract(mask, x), np.extract(mask, x), "extract")
  _eager_and_jit(lambda m, x: jnp.extract(m, x, size=size, fill_value=-1.), (mask, x),
                 _padded(np.extract(mask, x), size, -1.), "extract size")


def test_compress_long_condition():
  x = np.arange(3.)
  _close(jnp.compress(np.array([True, False, True, False]), x), [0., 2.])
  with pytest.raises(ValueError, match="past the end"):
    jnp.compress(np.array([True, False, True, True]), x)


def test_compress_with_a_constant_condition_needs_no_size_under_jit():
  keep = np.array([True, False, True])
  f = jaxon.jit(lambda x: jnp.compress(keep, x, axis=1))
  x = np.arange(6.).reshape(2, 3)
  _close(f(x), np.compress(keep, x, axis=1))
  _close(jaxon.vmap(lambda r: jnp.compress(keep, r))(x), np.compress(keep, x, axis=1))


# ----------------------------------------------------------------------------- insert, delete, …

@SETTINGS
@given(small_arrays(dtype=np.float32, min_dims=1, max_dims=2, nan=False), st.data())
def test_insert(x, data):
  axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
  n = x.size if axis is None else x.shape[axis]
  kind = data.draw(st.sampled_from(["int", "list", "slice"]))
  if kind == "int":
    obj = data.draw(st.integers(-n, n))
  elif kind == "list":
    obj = data.draw(st.lists(st.integers(-n, n), min_size=1, max_size=3))
  else:
    obj = slice(data.draw(st.integers(0, n)), None, data.draw(st.integers(1, 2)))
  values = np.float32(9.)
  if kind == "list":  # one slice per index, each along the other axes
    along = [1] * x.ndim if axis is not None else [1]
    along[0 if axis is None else axis] = len(obj)
    values = (np.arange(len(obj), dtype=np.float32) + 10).reshape(along)
  want = np.insert(x, obj, values, axis=axis)
  _close(jnp.insert(x, obj, values, axis=axis), want, f"insert {obj!r}")
  if kind != "slice":
    traced = jaxon.jit(lambda x, o, v: jnp.insert(x, o, v, axis=axis))
    _close(traced(x, np.asarray(obj, np.int32), values), want, "insert traced indices")


@SETTINGS
@given(small_arrays(dtype=np.float32, min_dims=1, max_dims=2, nan=False), st.data())
def test_delete(x, data):
  axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
  n = x.size if axis is None else x.shape[axis]
  if n == 0:
    return
  picks = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
  obj = [p - n if p % 2 else p for p in picks]  # some negative
  want = np.delete(x, obj, axis=axis)
  _close(jnp.delete(x, obj, axis=axis), want, "delete")
  _close(jaxon.jit(lambda x, o: jnp.delete(x, o, axis=axis, assume_unique_indices=True))(
      x, np.asarray(obj, np.int32)), want, "delete traced")
  _close(jnp.delete(x, slice(0, None, 2), axis=axis),
         np.delete(x, slice(0, None, 2), axis=axis), "delete slice")
  mask = np.zeros(n, bool)
  mask[picks] = True
  _close(jnp.delete(x, mask, axis=axis), np.delete(x, mask, axis=axis), "delete mask")


def test_delete_traced_without_promise():
  with pytest.raises(jaxon.errors.ConcretizationTypeError, match="assume_unique_indices"):
    jaxon.jit(lambda x, o: jnp.delete(x, o))(np.arange(3.), np.array([1]))


@pytest.mark.parametrize("new_shape", [(7,), (2, 3), (0,), 4, (3, 3)])
def test_resize_append_trim(new_shape):
  x = np.array([[1, 2], [3, 4]], np.int32)
  _close(jnp.resize(x, new_shape), np.resize(x, new_shape))
  _close(jnp.resize(np.zeros((0,), np.int32), new_shape),
         np.resize(np.zeros((0,), np.int32), new_shape))
  for axis in (None, 0, 1):
    _close(jnp.append(x, x + 5, axis=axis), np.append(x, x + 5, axis=axis))
  for trim in ("fb", "f", "b", "B"):
    z = np.array([0, 0, 3, 0, 4, 0], np.float32)
    _close(jnp.trim_zeros(z, trim), np.trim_zeros(z, trim))
  _close(jnp.trim_zeros(np.zeros(3)), np.trim_zeros(np.zeros(3)))


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_unravel_and_ravel_multi_index(dims, data):
  total = int(np.prod(dims))
  flat = np.asarray(data.draw(st.lists(st.integers(0, total - 1), max_size=6)), np.int32)
  want = np.unravel_index(flat, dims)
  _eager_and_jit(lambda f: jnp.unravel_index(f, dims), (flat,), want, "unravel_index")
  for order in ("C", "F"):
    coords = np.unravel_index(flat, dims, order=order)
    _close(jnp.ravel_multi_index(coords, dims, order=order),
           np.ravel_multi_index(coords, dims, order=order), f"ravel_multi_index {order}")
  shifted = tuple(c + d for c, d in zip(want, dims))
  for mode in ("wrap", "clip"):
    ravel = jaxon.jit(lambda *c, mode=mode: jnp.ravel_multi_index(c, dims, mode=mode))
    _close(ravel(*shifted),
           np.ravel_multi_index(shifted, dims, mode=mode), f"ravel_multi_index {mode}")


def test_unravel_index_clips_like_jax():
  rows, cols = jnp.unravel_index(np.array([-1, 6, -7], np.int32), (2, 3))
  _close(rows, [1, 1, 0])
  _close(cols, [2, 2, 0])
  with pytest.raises(ValueError, match="invalid entry"):
    jnp.ravel_multi_index((np.array([2]), np.array([0])), (2, 3))


# ----------------------------------------------------------------------------- errors under jit

@pytest.mark.parametrize("name,fn", [
    ("nonzero", lambda x: jnp.nonzero(x)),
    ("flatnonzero", lambda x: jnp.flatnonzero(x)),
    ("argwhere", lambda x: jnp.argwhere(x)),
    ("nonzero", lambda x: jnp.where(x)),
    ("unique", lambda x: jnp.unique(x)),
    ("unique", lambda x: jnp.unique_values(x)),
    ("union1d", lambda x: jnp.union1d(x, x)),
    ("intersect1d", lambda x: jnp.intersect1d(x, x)),
    ("setdiff1d", lambda x: jnp.setdiff1d(x, x)),
    ("setxor1d", lambda x: jnp.setxor1d(x, x)),
    ("compress", lambda x: jnp.compress(x > 0, x)),
    ("compress", lambda x: jnp.extract(x > 0, x)),
])
def test_traced_without_size_names_size(name, fn):
  with pytest.raises(jaxon.errors.ConcretizationTypeError,
                     match=f"size argument of jnp.{name}"):
    jaxon.jit(fn)(np.array([1., 0., 2.], np.float32))


def test_argument_errors():
  with pytest.raises(ValueError, match="one-dimensional"):
    jnp.searchsorted(np.zeros((2, 2)), 1.)
  with pytest.raises(ValueError, match="side"):
    jnp.searchsorted(np.zeros(2), 1., side="middle")
  with pytest.raises(ValueError, match="fill_value"):
    jnp.nonzero(np.ones((2, 2)), size=3, fill_value=(1, 2, 3))
  with pytest.raises(ValueError, match="non-negative"):
    jnp.nonzero(np.ones(2), size=-1)
  with pytest.raises(ValueError, match="same number of dimensions"):
    jnp.take_along_axis(np.ones((2, 2)), np.zeros(2, np.int32), axis=0)


# ----------------------------------------------------------------------------- vmap and grad

def _vmap_matches_loop(fn, *batched):
  want = [fn(*(b[i] for b in batched)) for i in range(batched[0].shape[0])]
  want = jaxon.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *want)
  for mode, f in (("vmap", jaxon.vmap(fn)), ("jit(vmap)", jaxon.jit(jaxon.vmap(fn)))):
    got = f(*batched)
    for g, w in zip(jaxon.tree_leaves(got), jaxon.tree_leaves(want)):
      _close(g, w, mode)


VMAP_CASES = {
    "searchsorted": (lambda a, v: jnp.searchsorted(jnp.sort(a), v), "ff"),
    "searchsorted_compare_all": (
        lambda a, v: jnp.searchsorted(jnp.sort(a), v, side="right", method="compare_all"), "ff"),
    "searchsorted_sort": (lambda a, v: jnp.searchsorted(jnp.sort(a), v, method="sort"), "ff"),
    "isin": (lambda a, v: jnp.isin(v, a), "ff"),
    "nonzero": (lambda a, v: jnp.nonzero(a > 1, size=4, fill_value=-1), "ff"),
    "unique": (lambda a, v: jnp.unique(a, True, True, True, size=5, fill_value=-1.), "ff"),
    "intersect1d": (lambda a, v: jnp.intersect1d(a, v, return_indices=True, size=3), "ff"),
    "setxor1d": (lambda a, v: jnp.setxor1d(a, v, size=6), "ff"),
    "take": (lambda a, i: jnp.take(a, i), "fi"),
    "take_along_axis": (lambda a, i: jnp.take_along_axis(a, i, axis=0), "fi"),
    "put_along_axis": (lambda a, i: jnp.put_along_axis(a, i, 5., axis=0, inplace=False), "fi"),
    "choose": (lambda a, i: jnp.choose(i, [a, -a, 2 * a], mode="wrap"), "fi"),
    "insert": (lambda a, i: jnp.insert(a, i, 7.), "fi"),
    "delete": (lambda a, i: jnp.delete(a, i[:1], assume_unique_indices=True), "fi"),
    "compress": (lambda a, v: jnp.compress(a > v, a, size=3), "ff"),
    "partition": (lambda a, v: jnp.argpartition(a, 2), "ff"),
}


@pytest.mark.parametrize("name", list(VMAP_CASES))
def test_vmap_matches_loop(name):
  fn, kinds = VMAP_CASES[name]
  rng = np.random.RandomState(0)
  args = [rng.randint(0, 4, (3, 6)).astype(np.float32) if k == "f"
          else rng.randint(-6, 6, (3, 6)).astype(np.int32) for k in kinds]
  _vmap_matches_loop(fn, *args)


GRAD_CASES = {
    "take": lambda x: jnp.take(x, np.array([2, 0, 2, -1], np.int32)),
    "take_along_axis": lambda x: jnp.take_along_axis(
        x.reshape(2, 3), np.array([[2, 0], [1, 1]], np.int32), axis=1),
    "put_along_axis": lambda x: jnp.put_along_axis(
        x.reshape(2, 3), np.array([[2], [0]], np.int32), x[:2].reshape(2, 1) ** 2, axis=1,
        inplace=False),
    "compress": lambda x: jnp.compress(np.array([True, False, True]), x, size=4),
    "insert": lambda x: jnp.insert(x[:4], np.array([3, 0], np.int32), x[4:] * 2),
    "delete": lambda x: jnp.delete(x, [1, 4]),
    "choose": lambda x: jnp.choose(np.array([0, 1, 1, 0, 1, 0]), [x, x ** 2], mode="clip"),
    "append": lambda x: jnp.append(x, x[:2] * 3),
    "resize": lambda x: jnp.resize(x, (4, 4)),
    "partition": lambda x: jnp.partition(x, 3),
    "unique": lambda x: jnp.unique(x, size=4),
    "extract": lambda x: jnp.extract(np.array([1, 0, 1, 1, 0, 0]), x, size=3),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grads(name):
  x = np.array([0.3, -1.2, 2.5, 0.7, -0.4, 1.9], np.float32)
  check_grads(GRAD_CASES[name], (x,), order=2, modes=("fwd", "rev"))
