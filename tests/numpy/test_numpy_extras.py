"""jnp.fill_diagonal, place, put (pure, inplace=False), block, unstack, rollaxis, the host
functions (printing, frombuffer & co, load/save) and the extra scalar types, against
NumPy: eagerly, under jit, vmap against a loop and gradients where they apply."""
from __future__ import annotations

import io

import ml_dtypes
import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from tests.transform_util import check_vmap
from tests.util import check_grads


def _rand(shape, seed=0):
  return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


def _same(got, want, what):
  got, want = np.asarray(got), np.asarray(want)
  assert (got.shape, got.dtype) == (want.shape, want.dtype), (
      f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)


# ----------------------------------------------------------------------------- updates

@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 3), False), ((5, 3), True),
                                        ((3, 5), False), ((2, 2, 2), False)])
@pytest.mark.parametrize("val", [7.0, [1.0, 2.0], [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]])
def test_fill_diagonal(shape, wrap, val):
  a = _rand(shape)
  want = a.copy()
  np.fill_diagonal(want, val, wrap=wrap)
  _same(jnp.fill_diagonal(a, jnp.asarray(val), wrap=wrap, inplace=False), want,
        f"fill_diagonal {shape} wrap={wrap}")
  got = jaxon.jit(lambda a, v: jnp.fill_diagonal(a, v, wrap=wrap, inplace=False))(a, val)
  _same(got, want, "fill_diagonal under jit")


def test_fill_diagonal_transforms_and_errors():
  a = _rand((3, 3))
  check_grads(lambda a, v: jnp.fill_diagonal(a * a, v, inplace=False),
              (a, np.float32(2.0)), order=2)
  check_vmap(lambda a, v: jnp.fill_diagonal(a, v, inplace=False), [a, np.float32(2.0)])
  with pytest.raises(NotImplementedError, match="inplace=False"):
    jnp.fill_diagonal(a, 1.0)
  with pytest.raises(ValueError, match="equal length"):
    jnp.fill_diagonal(np.zeros((2, 3, 2)), 1.0, inplace=False)
  with pytest.raises(ValueError, match="2-d"):
    jnp.fill_diagonal(np.zeros(3), 1.0, inplace=False)


@pytest.mark.parametrize("vals", [[10, 20], [7], [1, 2, 3, 4, 5, 6, 7]])
def test_place(vals):
  a = np.arange(6, dtype=np.int32).reshape(2, 3)
  mask = a % 2 == 1
  want = a.copy()
  np.place(want, mask, vals)
  _same(jnp.place(a, mask, np.asarray(vals), inplace=False), want, f"place {vals}")
  got = jaxon.jit(lambda a, m, v: jnp.place(a, m, v, inplace=False))(a, mask,
                                                                     np.asarray(vals))
  _same(got, want, "place under jit (traced mask)")


def test_place_transforms_and_errors():
  a, mask = _rand((2, 3)), np.array([[True, False, True], [False, True, True]])
  check_grads(lambda a, v: jnp.place(a, mask, v, inplace=False), (a, _rand((2,), 1)),
              order=2)
  check_vmap(lambda a, v: jnp.place(a, mask, v, inplace=False), [a, _rand((2,), 1)])
  _same(jnp.place(a, ~np.ones_like(mask), np.zeros(0, np.float32), inplace=False), a,
        "empty vals, empty mask")
  with pytest.raises(ValueError, match="empty"):
    jnp.place(a, mask, np.zeros(0, np.float32), inplace=False)
  with pytest.raises(ValueError, match="same size"):
    jnp.place(a, mask[0], [1.0], inplace=False)


@pytest.mark.parametrize("mode,ind", [(None, [0, -1, 2]), ("raise", [0, -1, 2]),
                                      ("wrap", [0, 7, -8]), ("clip", [1, 7, -8])])
def test_put(mode, ind):
  a = _rand((2, 3))
  want = a.copy()
  np.put(want, ind, [9.0, 8.0], mode=mode or "raise")
  _same(jnp.put(a, np.array(ind), jnp.array([9.0, 8.0]), mode=mode, inplace=False), want,
        f"put mode={mode}")
  if mode != "raise":
    got = jaxon.jit(lambda a, i: jnp.put(a, i, jnp.array([9.0, 8.0]), mode=mode,
                                         inplace=False))(a, np.array(ind))
    _same(got, want, f"put mode={mode} under jit")


def test_put_out_of_bounds_and_transforms():
  a = _rand((4,))
  _same(jnp.put(a, np.array([0, 9]), 1.0, inplace=False), np.r_[1.0, a[1:]].astype(np.float32),
        "mode=None drops out-of-bounds")
  with pytest.raises(IndexError, match="out of bounds"):
    jnp.put(a, np.array([0, 9]), 1.0, mode="raise", inplace=False)
  with pytest.raises(ValueError, match="mode"):
    jnp.put(a, np.array([0]), 1.0, mode="bad", inplace=False)
  with pytest.raises(NotImplementedError, match="inplace=False"):
    jnp.put(a, np.array([0]), 1.0)
  check_grads(lambda a, v: jnp.put(a, jnp.array([1, 3]), v, inplace=False),
              (a, _rand((2,), 1)), order=2)
  check_vmap(lambda a, v: jnp.put(a, jnp.array([1, 3]), v, inplace=False),
             [a, _rand((2,), 1)])


# ----------------------------------------------------------------------------- block, …

A, B, C = np.ones((2, 2), np.float32), np.zeros((2, 1), np.float32), np.full((1, 3), 2.0,
                                                                             np.float32)
BLOCKS = {
    "2x2-matrix": [[A, B], [C]], "1d": [np.float32(1), np.float32(2.5), np.ones(1, np.float32)],
    "array": np.array([1, 2], np.int32), "3d-lists": [[[A, A]], [[A, A]]],
    "rows": [A, A], "columns": [[A], [A]], "scalar": np.float32(5),
    "promote-rank": [[np.ones(2, np.float32)], [np.ones((1, 2), np.float32)]],
}


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_block(name):
  arrays = BLOCKS[name]
  _same(jnp.block(arrays), np.block(arrays), f"block {name}")


def test_block_traced_grads_and_errors():
  f = lambda a, b: jnp.block([[a, b], [b, a * 2]])
  _same(jaxon.jit(f)(A, A * 3), np.block([[A, A * 3], [A * 3, A * 2]]), "block under jit")
  check_grads(f, (_rand((2, 2)), _rand((2, 2), 1)), order=2)
  with pytest.raises(ValueError, match="empty"):
    jnp.block([])
  with pytest.raises(ValueError, match="depths"):
    jnp.block([[A], A])
  with pytest.raises(TypeError, match="tuple"):
    jnp.block((A, A))


@pytest.mark.parametrize("axis,start", [(3, 1), (2, 0), (1, 4), (0, -1), (2, -4), (1, 2),
                                        (-1, 0)])
def test_rollaxis(axis, start):
  a = _rand((2, 3, 4, 5))
  _same(jnp.rollaxis(a, axis, start), np.rollaxis(a, axis, start), f"rollaxis {axis} {start}")


def test_rollaxis_error():
  with pytest.raises(np.exceptions.AxisError):
    jnp.rollaxis(np.zeros((2, 3)), 0, 5)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(axis):
  a = _rand((2, 3, 4))
  got = jnp.unstack(a, axis=axis)
  want = [np.take(a, i, axis=axis) for i in range(a.shape[axis])]
  assert isinstance(got, tuple) and len(got) == len(want)
  for g, w in zip(got, want):
    _same(g, w, f"unstack axis={axis}")
  check_grads(lambda a: jnp.unstack(a, axis=axis)[-1] * 2, (a,), order=2)
  check_vmap(lambda a: jnp.unstack(a, axis=axis), [a])
  with pytest.raises(ValueError, match="1-d"):
    jnp.unstack(jnp.float32(1))


# ----------------------------------------------------------------------------- host

def test_printing():
  x = jnp.array([1 / 3, 2.0])
  assert jnp.array_repr(x) == np.array_repr(np.asarray(x))
  assert jnp.array_str(x, precision=2) == np.array_str(np.asarray(x), precision=2)
  with jnp.printoptions(precision=2):
    assert jnp.get_printoptions()["precision"] == 2
    assert str(x) == "[0.33 2.  ]"
  assert jnp.get_printoptions()["precision"] == np.get_printoptions()["precision"]


def test_from_host_data():
  _same(jnp.frombuffer(b"\x01\x02\x03", dtype=jnp.uint8), np.array([1, 2, 3], np.uint8),
        "frombuffer")
  buf = np.arange(4, dtype=np.float32).tobytes()
  _same(jnp.frombuffer(buf, dtype=jnp.float32, count=2, offset=4),
        np.array([1.0, 2.0], np.float32), "frombuffer count/offset")
  _same(jnp.fromstring("1 2 3", dtype=np.int32, sep=" "), np.array([1, 2, 3], np.int32),
        "fromstring")
  for impure in (jnp.fromiter, jnp.fromfile):  # side effects: not provided, as in JAX
    with pytest.raises(NotImplementedError, match=r"jnp.asarray\(np\.from"):
      impure(iter([1.0]), np.float32)
  _same(jnp.from_dlpack(np.arange(3, dtype=np.int32)), np.arange(3, dtype=np.int32),
        "from_dlpack of NumPy")
  _same(jnp.from_dlpack(jnp.arange(3.0)), np.arange(3.0, dtype=np.float32),
        "from_dlpack of jaxon")
  assert jnp.iterable(jnp.arange(2)) and not jnp.iterable(1)


def test_load_save():
  x = jnp.arange(6.0).reshape(2, 3)
  f = io.BytesIO()
  jnp.save(f, x)
  f.seek(0)
  y = jnp.load(f)
  assert isinstance(y, jaxon.Array)
  _same(y, np.asarray(x), "load(save(x))")
  f = io.BytesIO()
  jnp.save(f, jnp.ones(2, jnp.bfloat16))
  f.seek(0)
  assert jnp.load(f).dtype == jnp.bfloat16
  f = io.BytesIO()
  jnp.savez(f, a=x, b=x + 1)
  f.seek(0)
  loaded = jnp.load(f)
  _same(loaded["b"], np.asarray(x) + 1, "savez/load")


# ----------------------------------------------------------------------------- scalar types

NARROW_TYPES = ["float8_e4m3", "float8_e3m4", "float8_e4m3fnuz", "float8_e5m2fnuz",
                "float8_e8m0fnu", "float4_e2m1fn", "int1", "int2", "int4", "uint1", "uint2",
                "uint4"]


@pytest.mark.parametrize("name", NARROW_TYPES)
def test_narrow_scalar_types_are_dtypes(name):
  t = getattr(jnp, name)
  assert np.dtype(t) == np.dtype(getattr(ml_dtypes, name))
  assert t == getattr(ml_dtypes, name) and hash(t) == hash(getattr(ml_dtypes, name))


def test_numpy_type_aliases():
  assert jnp.object_ is np.object_ and jnp.character is np.character
  assert jnp.flexible is np.flexible and jnp.ComplexWarning is np.exceptions.ComplexWarning
  assert issubclass(jnp.ComplexWarning, Warning)
