"""NumPy-style indexing against NumPy: `x[idx]` for every kind of index (ints, slices with
steps, Ellipsis, None, integer arrays and lists, boolean masks), `x.at[idx]` updates against
`np.<ufunc>.at`, `jaxon.ops`, JAX's out-of-bounds rules and the errors. Each case runs
eagerly and under jit, and the abstract evaluation must agree with the result."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
import jaxon.ops
from jaxon._src.numpy.indexing import NonConcreteBooleanIndexError
from tests.util import check, rand

F32, F64, BF16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(jnp.bfloat16)
I32, U8, BOOL = np.dtype(np.int32), np.dtype(np.uint8), np.dtype(bool)




# ----------------------------------------------------------------------------- reads

MASK3 = np.array([True, False, True])
MASK34 = rand((3, 4), BOOL, seed=5)

INDEX_CASES = {  # id: index into an array of shape (3, 4, 5)
    "int": 1,
    "negative-int": -1,
    "ints": (1, 2, 3),
    "numpy-int": (np.int64(2), np.int8(-1)),
    "slice": np.s_[1:3],
    "reverse": np.s_[::-1],
    "step": np.s_[:, ::2],
    "negative-steps": np.s_[2:0:-1, :, -1::-2],
    "slice-out-of-range": np.s_[1:100, -100:2],
    "empty-slice": np.s_[2:1],
    "ellipsis": np.s_[..., 2],
    "ellipsis-middle": np.s_[0, ..., 1],
    "empty-tuple": (),
    "none": np.s_[None],
    "none-middle": np.s_[1, None, 0:4:2, None],
    "int-array": np.array([0, 2, 2]),
    "list-in-tuple": ([0, -1],),
    "2d-int-array": (np.array([[0, 1], [2, 2]]),),
    "adjacent-arrays": np.s_[:, [0, 1], [1, 2]],
    "separated-arrays": np.s_[[0, 2], :, [1, 3]],
    "int-and-array-separated": np.s_[0, :, [1, 2]],
    "int-and-array-adjacent": np.s_[:, 0, [1, 2]],
    "broadcast-arrays": (np.array([[0], [2]]), slice(None), np.array([1, 3, 4])),
    "none-between-arrays": np.s_[:, [0, 1], None, [0, 1]],
    "negative-array": np.s_[..., [-1, 0, -5]],
    "array-and-step": np.s_[::2, [1, 2]],
    "array-and-reverse": np.s_[::-1, [3], 1:4],
    "empty-array": np.array([], np.int32),
    "empty-list": ([],),
    "mask": MASK3,
    "mask-2d": MASK34,
    "mask-after-slice": (slice(None), np.array([True, False, False, True])),
    "mask-and-array": (MASK3, slice(None), [4, 0]),
    "true": True,
    "false": np.False_,
    "true-and-int": (True, 0),
}


@pytest.mark.parametrize("case", INDEX_CASES, ids=str)
def test_getitem(case):
  idx = INDEX_CASES[case]
  x = rand((3, 4, 5), F32)
  check(f"x[{case}]", lambda a: a[idx], [x], x[idx])


@pytest.mark.parametrize("dtype", [I32, U8, BOOL, BF16], ids=str)
@pytest.mark.parametrize("case", ["ints", "negative-steps", "none-middle", "separated-arrays",
                                  "mask-2d"], ids=str)
def test_getitem_dtypes(case, dtype):
  idx = INDEX_CASES[case]
  x = rand((3, 4, 5), dtype)
  check(f"x[{case}] of {dtype}", lambda a: a[idx], [x], x[idx])


def test_getitem_float64(x64):
  x = rand((3, 4, 5), F64)
  for case in ("ints", "separated-arrays", "mask"):
    idx = INDEX_CASES[case]
    check(f"x[{case}] of float64", lambda a, idx=idx: a[idx], [x], x[idx])
  check("x[int64 array]", lambda a, i: a[i], [x, np.array([2, -3], np.int64)], x[[2, -3]])


@pytest.mark.parametrize("shape,idx", [
    ((), ()), ((), Ellipsis), ((), None), ((), np.s_[None, ..., None]), ((), True),
    ((0, 3), np.s_[:, 1]), ((0, 3), np.s_[::-1]), ((0, 3), np.array([], np.int32)),
    ((0, 3), np.s_[:, [2, 0]]), ((2, 0), np.s_[1]), ((2, 0), np.s_[[1, 0], ::2]),
], ids=str)
def test_getitem_scalar_and_zero_size(shape, idx):
  x = rand(shape, F32)
  check(f"x{list(shape)}[{idx}]", lambda a: a[idx], [x], x[idx])


TRACED_CASES = [  # (id, function of (x, *indices), index values as NumPy arrays)
    ("scalar", lambda a, i: a[i], [np.int32(2)]),
    ("negative-scalar", lambda a, i: a[i], [np.int32(-1)]),
    ("scalars-and-slice", lambda a, i, j: a[i, 1:3, j], [np.int32(1), np.int32(-2)]),
    ("uint8-scalar", lambda a, i: a[:, i], [np.uint8(3)]),
    ("array", lambda a, i: a[i], [np.array([2, -1, 0], np.int32)]),
    ("arrays-separated", lambda a, i, j: a[i, :, j],
     [np.array([[0], [2]], np.int32), np.array([1, -1], np.int32)]),
    ("array-and-static", lambda a, i: a[:, i, [0, 4]], [np.array([3, -4], np.int32)]),
    ("scalar-and-array", lambda a, i, j: a[i, j], [np.int32(1), np.array([0, 3], np.int32)]),
]


@pytest.mark.parametrize("name,fun,indices", TRACED_CASES, ids=[c[0] for c in TRACED_CASES])
def test_getitem_traced_indices(name, fun, indices):
  x = rand((3, 4, 5), F32)
  check(f"traced {name}", fun, [x, *indices], fun(x, *indices))


def test_basic_indexing_uses_slices_not_gather():
  x = jnp.zeros((3, 4, 5))
  text = str(jaxon.make_jaxpr(lambda a, i: a[1, ::-2, None, i])(x, 2))
  assert "gather" not in text and "slice[" in text and "rev[" in text, text
  assert "dynamic_slice[" in text and "squeeze[" in text, text
  assert "gather[" in str(jaxon.make_jaxpr(lambda a: a[:, [0, 1]])(x))


# ----------------------------------------------------------------------------- out of bounds

def test_out_of_bounds_reads_clamp():
  x = rand((5,), F32)
  check("x[array(10)]", lambda a, i: a[i], [x, np.int32(10)], x[4])
  check("x[array(-10)]", lambda a, i: a[i], [x, np.int32(-10)], x[0])
  check("x[[10, -1, -7]]", lambda a, i: a[i], [x, np.array([10, -1, -7], np.int32)],
        x[[4, 4, 0]])
  check("x[10] (static)", lambda a: a[10], [x], x[4])
  check("x[-10] (static)", lambda a: a[-10], [x], x[0])
  check("x[int8 array]", lambda a, i: a[i], [rand((300,), F32), np.array([-1, 100], np.int8)],
        rand((300,), F32)[[-1, 100]])
  check("x[[10, -7]] (static)", lambda a: a[np.array([10, -7])], [x], x[[4, 0]])


def test_check_static_indices_flag():
  x = jnp.zeros((5, 2))
  jaxon.config.update("jax_check_static_indices", True)
  try:
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for axis 0 with size 5"):
      x[5]
    with pytest.raises(IndexError, match=r"index -3 is out of bounds for axis 1 with size 2"):
      x.at[0, -3].set(1.0)
    assert x[-5].shape == (2,)
  finally:
    jaxon.config.update("jax_check_static_indices", False)


def test_at_get_modes():
  x = rand((5,), F32)
  idx = np.array([1, 7, -1, -9], np.int32)
  check("at.get(fill)", lambda a, i: a.at[i].get(mode="fill"), [x, idx],
        np.array([x[1], np.nan, x[4], np.nan], F32))
  check("at.get(fill, fill_value)", lambda a, i: a.at[i].get(mode="fill", fill_value=-1.0),
        [x, idx], np.array([x[1], -1, x[4], -1], F32))
  check("at.get(clip)", lambda a, i: a.at[i].get(mode="clip"), [x, idx], x[[1, 4, 4, 0]])
  check("at.get(fill) static int", lambda a: a.at[7].get(mode="fill"), [x], np.float32(np.nan))
  i32 = rand((5,), I32)
  check("at.get(fill) int32", lambda a: a.at[np.array([9])].get(mode="fill"), [i32],
        np.array([np.iinfo(np.int32).min], I32))


def test_out_of_bounds_updates():
  x = rand((5,), F32)
  want = x.copy()
  want[1] = 9
  check("at.set drops", lambda a, i: a.at[i].set(9.0), [x, np.array([1, 5, -6], np.int32)],
        want)
  check("at[10].set drops (static)", lambda a: a.at[10].set(9.0), [x], x)
  check("at[-10].set drops (static)", lambda a: a.at[-10].set(9.0), [x], x)
  want = x.copy()
  want[[4, 0]] += 1
  check("at.add(clip)", lambda a, i: a.at[i].add(1.0, mode="clip"),
        [x, np.array([7, -9], np.int32)], want)


# ----------------------------------------------------------------------------- updates

def _np_update(method, x, idx, y):
  out = x.copy()
  if method == "set":
    out[idx] = y
  elif method == "get":
    return x[idx]
  else:
    ufunc = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
             "divide": np.divide, "power": np.power, "min": np.minimum,
             "max": np.maximum}[method]
    if method == "divide":
      out = out.astype(np.result_type(out.dtype, np.float32))
    ufunc.at(out, idx, y)
  return out


UPDATE_INDICES = {  # id: (index, updates shape) for an operand of shape (4, 5)
    "int": (1, (5,)),
    "scalar-update": ((2, 3), ()),
    "slice": (np.s_[1:3], (2, 5)),
    "step-broadcast": (np.s_[::-2, 1], ()),
    "repeated-array": (np.array([0, 2, 0, 0]), (4, 5)),
    "separated-arrays": (np.s_[[0, 3, 0], [1, 1, 1]], (3,)),
    "mask": (rand((4, 5), BOOL, seed=7), ()),
    "none": (np.s_[None, 2], (1, 5)),
}


@pytest.mark.parametrize("method", ["set", "add", "subtract", "multiply", "divide", "power",
                                    "min", "max", "get"], ids=str)
@pytest.mark.parametrize("case", UPDATE_INDICES, ids=str)
def test_at_methods(case, method):
  idx, yshape = UPDATE_INDICES[case]
  if method == "set" and case == "repeated-array":
    idx = np.array([0, 2, 3, 1])
  x = rand((4, 5), F32) + (3 if method == "power" else 0)
  y = rand(yshape, F32, seed=1)
  fun = (lambda a: a.at[idx].get()) if method == "get" else (
      lambda a, v: getattr(a.at[idx], method)(v))
  args = [x] if method == "get" else [x, y]
  check(f"x.at[{case}].{method}", fun, args, _np_update(method, x, idx, y))


@pytest.mark.parametrize("dtype", [I32, U8, BOOL, BF16], ids=str)
@pytest.mark.parametrize("method", ["set", "add", "min"], ids=str)
def test_at_dtypes(method, dtype):
  x, y = rand((4, 5), dtype), rand((3,), dtype, seed=1)
  idx = np.s_[[0, 3, 1], 2]
  check(f"x.at[...].{method} of {dtype}", lambda a, v: getattr(a.at[idx], method)(v),
        [x, y], _np_update(method, x, idx, y))


def test_at_float64(x64):
  x, y = rand((4, 5), F64), rand((2,), F64, seed=1)
  idx = np.s_[[1, 1], -1]
  check("x.at[...].add of float64", lambda a, v: a.at[idx].add(v), [x, y],
        _np_update("add", x, idx, y))


def test_at_traced_indices_and_values():
  x = rand((4, 5), F32)
  i, y = np.array([3, -1, 0], np.int32), rand((3, 5), F32, seed=2)
  check("x.at[traced].add", lambda a, i, v: a.at[i].add(v), [x, i, y],
        _np_update("add", x, i, y))
  check("x.at[traced scalar].set", lambda a, i: a.at[i, 2].set(7.0), [x, np.int32(-2)],
        _np_update("set", x, (-2, 2), 7.0))


def test_at_casts_and_keeps_weak_type():
  x = jnp.asarray(np.arange(4, dtype=np.int32))
  out = x.at[1].set(2.7)
  assert out.dtype == np.int32 and out.tolist() == [0, 2, 2, 3]
  weak = jaxon.jit(lambda: jnp.zeros(3, jnp.float32).at[0].set(1.0))()
  assert weak.dtype == np.float32 and not weak.weak_type
  assert repr(x.at) .startswith("_IndexUpdateHelper(")


def test_jaxon_ops():
  x = rand((4, 3), F32)
  idx = jaxon.ops.index[1:3, 0]
  assert idx == np.s_[1:3, 0]
  cases = {"index_update": "set", "index_add": "add", "index_mul": "multiply",
           "index_min": "min", "index_max": "max"}
  for name, method in cases.items():
    fn = getattr(jaxon.ops, name)
    check(f"jaxon.ops.{name}", lambda a, f=fn: f(a, idx, 2.0), [x],
          _np_update(method, x, idx, 2.0))
  out = jaxon.ops.index_add(np.zeros(3, np.float32), np.array([0, 0]), 1.0)
  assert out.tolist() == [2.0, 0.0, 0.0]


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("idx,error,match", [
    ([0, 1], TypeError, r"non-tuple sequence for multidimensional indexing"),
    (1.0, TypeError, r"Indexer must have integer or boolean type"),
    (np.array([0.5]), TypeError, r"integer or boolean type, got indexer with type float"),
    ("a", TypeError, r"does not support string indexing"),
    (np.s_[0.5:], TypeError, r"slice indices must be integers"),
    ((0, 0, 0, 0), IndexError, r"Too many indices: 3-dimensional array indexed with 4"),
    ((Ellipsis, 0, Ellipsis), IndexError, r"single ellipsis"),
    (np.ones((2, 2), bool), IndexError, r"boolean index did not match shape"),
    (([0, 1], [0, 1, 2]), IndexError, r"could not be broadcast together"),
], ids=["list", "float", "float-array", "string", "float-slice", "too-many", "two-ellipses",
        "mask-shape", "broadcast"])
def test_getitem_errors(idx, error, match):
  x = jnp.zeros((3, 4, 5))
  with pytest.raises(error, match=match):
    x[idx]


def test_empty_dimension_errors():
  x = jnp.zeros((0, 3))
  with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 0"):
    x[0]
  with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 0"):
    x[jnp.array(0)]
  with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 0"):
    x[jnp.array([0, 1])]


def test_traced_mask_and_slice_errors():
  x = jnp.zeros(5)
  with pytest.raises(NonConcreteBooleanIndexError, match=r"jnp\.where\(mask, x, 0\)"):
    jaxon.jit(lambda a, m: a[m])(x, np.ones(5, bool))
  with pytest.raises(IndexError, match=r"jnp\.nonzero\(mask, size=n"):
    jaxon.jit(lambda a, m: a.at[m].set(1.0))(x, np.ones(5, bool))
  with pytest.raises(IndexError, match=r"static start/stop/step.*dynamic_slice"):
    jaxon.jit(lambda a, i: a[i:i + 2])(x, 1)


def test_update_errors():
  x = jnp.zeros((3, 4))
  with pytest.raises(ValueError, match=r"value array of shape \(3,\) could not be broadcast "
                     r"to indexing result of shape \(2, 4\)"):
    x.at[:2].set(jnp.ones(3))
  with pytest.raises(TypeError, match=r"update values must be arrays or scalars, got dict"):
    x.at[0].set({})
  with pytest.raises(ValueError, match=r"Unknown gather mode 'wrap'"):
    x.at[0].add(1.0, mode="wrap")
  with pytest.raises(TypeError, match=r"x = x\.at\[idx\]\.set\(y\)"):
    x[0] = 1.0


# ----------------------------------------------------------------------------- hypothesis

def _slice_strategy(size):
  bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
  step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
  return st.builds(slice, bound, bound, step)


def _basic_index(shape):
  per_dim = [st.one_of(_slice_strategy(n), st.integers(-n, n - 1)) if n else _slice_strategy(n)
             for n in shape]
  return st.tuples(*per_dim).flatmap(lambda idx: st.integers(0, len(idx)).map(
      lambda k: idx[:k] + (None,) + idx[k:] if k % 2 else idx[:k]))


_SHAPE = (4, 3, 5)
_X = rand(_SHAPE, F32)
_JX = jaxon.device_put(_X)


@settings(max_examples=40, deadline=None)
@given(_basic_index(_SHAPE))
def test_basic_slicing_matches_numpy(idx):
  out = _JX[idx]
  want = _X[idx]
  assert out.shape == want.shape, f"x[{idx}]: shape {out.shape}, NumPy {want.shape}"
  np.testing.assert_array_equal(np.asarray(out), want, err_msg=f"x[{idx}]")
