"""fabs, i0, spacing, nan_to_num, the isposinf/iscomplex/… tests, the window functions,
bitwise_count/packbits/unpackbits and vecdot/matvec/vecmat against NumPy, eagerly and
under jit; second-order gradients and vmap against a loop."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from jaxon.errors import ConcretizationTypeError
from tests.transform_util import check_vmap
from tests.util import check_grads

SPECIALS = np.array([-np.inf, -2.5, -1., -0., 0., 1e-3, 1., 3.5, np.inf, np.nan], np.float32)


def _rand(shape, seed=0, dtype=np.float32):
  return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def _same(got, want, what, dtype=None, **tol):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  if dtype is not None:
    assert got.dtype == np.dtype(dtype), f"{what}: dtype {got.dtype} != {dtype}"
  np.testing.assert_allclose(got, want, err_msg=what, **(tol or dict(rtol=2e-6, atol=1e-7)))


# ----------------------------------------------------------------------------- elementwise

ELEMENTWISE = [("fabs", np.float32), ("isposinf", np.bool_), ("isneginf", np.bool_),
               ("iscomplex", np.bool_), ("isreal", np.bool_), ("spacing", np.float32),
               ("nan_to_num", np.float32)]


@pytest.mark.parametrize("name,dtype", ELEMENTWISE, ids=[n for n, _ in ELEMENTWISE])
def test_elementwise_matches_numpy(name, dtype):
  fn, ref = getattr(jnp, name), getattr(np, name)
  x = SPECIALS.reshape(2, 5)
  want = ref(x)
  if name == "spacing":  # the backend flushes subnormal results to zero
    want = np.where(np.abs(want) < np.finfo(np.float32).tiny, 0, want)
  for got in (fn(x), jaxon.jit(fn)(x)):
    _same(got, want, name, dtype)


def test_elementwise_dtypes_and_complex():
  ints = np.array([-3, 0, 7], np.int32)
  _same(jnp.fabs(ints), np.fabs(ints).astype(np.float32), "fabs int", np.float32)
  _same(jnp.isposinf(ints), np.isposinf(ints), "isposinf int", np.bool_)
  _same(jnp.nan_to_num(ints), ints, "nan_to_num int", np.int32)
  _same(jnp.spacing(np.float16(1.)), np.spacing(np.float16(1.)), "spacing f16", np.float16)
  c = np.array([1 + 2j, complex(np.nan, 1), complex(np.inf, -np.inf), 3 + 0j], np.complex64)
  _same(jnp.nan_to_num(c), np.nan_to_num(c), "nan_to_num complex", np.complex64)
  _same(jnp.nan_to_num(SPECIALS, nan=1.5, posinf=9., neginf=-9.),
        np.nan_to_num(SPECIALS, nan=1.5, posinf=9., neginf=-9.), "nan_to_num values")
  _same(jnp.iscomplex(c), np.iscomplex(c), "iscomplex", np.bool_)
  _same(jnp.isreal(c), np.isreal(c), "isreal", np.bool_)
  for name in ("fabs", "i0", "spacing", "isposinf", "isneginf"):
    with pytest.raises(TypeError, match="complex"):
      getattr(jnp, name)(c)


def test_object_predicates():
  c = jnp.ones(2, jnp.complex64)
  assert jnp.iscomplexobj(c) and not jnp.isrealobj(c)
  assert jnp.isrealobj(jnp.ones(2)) and not jnp.iscomplexobj(None)
  assert jnp.iscomplexobj(1j) and jnp.isrealobj([1, 2])
  for value, want in [(3, True), (2.5, True), (np.float32(1), True), (jnp.ones(()), True),
                      (np.ones(()), True), (jnp.ones(2), False), ([1], False), ("a", True),
                      (None, False)]:
    assert jnp.isscalar(value) is want, value
  assert jaxon.jit(lambda x: jnp.ones(()) * jnp.isscalar(x))(1.) == 1


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([(3,), (2, 3)]), st.integers(0, 50))
def test_i0_matches_numpy(shape, seed):
  x = _rand(shape, seed) * 4
  _same(jaxon.jit(jnp.i0)(x), np.i0(x.astype(np.float64)), "i0", np.float32,
        rtol=2e-6, atol=0)


def test_elementwise_transforms():
  x = _rand((2, 3), 1)
  check_grads(jnp.i0, [x], order=2, modes=("fwd", "rev"))
  check_grads(jnp.fabs, [x], order=2, modes=("fwd", "rev"))
  check_grads(jnp.nan_to_num, [x], order=2, modes=("rev",))
  check_vmap(lambda a: [jnp.i0(a), jnp.spacing(a), jnp.nan_to_num(a / 0), jnp.isposinf(a / 0),
                        jnp.fabs(a)], [x], axes=(0, -1))


def test_i0_x64(x64):
  x = np.linspace(-30, 30, 13)
  _same(jnp.i0(x), np.i0(x), "i0 f64", np.float64, rtol=1e-13, atol=0)
  x = x[x != 0]  # spacing(0) is subnormal, flushed to zero by the backend
  _same(jnp.spacing(x), np.spacing(x), "spacing f64", np.float64, rtol=0, atol=0)


# ----------------------------------------------------------------------------- windows

@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows_match_numpy(name):
  for M in (0, 1, 2, 5, 8, -1):
    got = getattr(jnp, name)(M)
    _same(got, getattr(np, name)(M), f"{name}({M})", np.float32, rtol=1e-6, atol=1e-7)


def test_kaiser():
  for M in (0, 1, 2, 5, 8):
    for beta in (0., 3.5, 14.):
      _same(jnp.kaiser(M, beta), np.kaiser(M, beta), f"kaiser({M}, {beta})", np.float32,
            rtol=2e-6, atol=1e-7)
  _same(jaxon.jit(lambda b: jnp.kaiser(6, b))(2.5), np.kaiser(6, 2.5), "jit kaiser")
  check_grads(lambda b: jnp.kaiser(5, b), [np.float32(2.5)], order=2, modes=("fwd", "rev"))
  check_vmap(lambda b: jnp.kaiser(4, b), [np.float32(2.5)], axes=(0,))


def test_window_errors_and_x64(x64):
  assert jnp.hanning(4).dtype == np.float64
  _same(jnp.blackman(7), np.blackman(7), "f64", rtol=1e-15, atol=1e-15)
  with pytest.raises(ConcretizationTypeError, match="M argument of jnp.hamming"):
    jaxon.jit(jnp.hamming)(4)


# ----------------------------------------------------------------------------- bits

BIT_DTYPES = [np.int8, np.int16, np.int32, np.uint8, np.uint32, np.bool_]


def _ints(shape, dtype, seed=0):
  rng = np.random.RandomState(seed)
  if dtype == np.bool_:
    return rng.rand(*shape) < 0.5
  info = np.iinfo(dtype)
  return rng.randint(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype)


@pytest.mark.parametrize("dtype", BIT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_bitwise_count_and_packbits(dtype):
  x = _ints((3, 10), dtype)
  _same(jnp.bitwise_count(x), np.bitwise_count(x), "bitwise_count", np.uint8)
  fn = jaxon.jit(lambda a: [jnp.packbits(a, axis, order)
                            for axis in (None, 0, 1, -1) for order in ("big", "little")])
  want = [np.packbits(x, axis, bitorder=order)
          for axis in (None, 0, 1, -1) for order in ("big", "little")]
  for got, w in zip(fn(x), want, strict=True):
    _same(got, w, f"packbits {np.dtype(dtype).name}", np.uint8)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([(5,), (2, 3), (0, 2)]), st.sampled_from([None, 0, -1]),
       st.sampled_from([None, 0, 3, -2, 30]), st.sampled_from(["big", "little"]))
def test_unpackbits_roundtrip(shape, axis, count, bitorder):
  u = _ints(shape, np.uint8, seed=len(shape))
  try:
    want = np.unpackbits(u, axis, count, bitorder)
  except ValueError:  # -count larger than the number of bits
    with pytest.raises(ValueError, match="count"):
      jnp.unpackbits(u, axis, count, bitorder)
    return
  got = jaxon.jit(lambda a: jnp.unpackbits(a, axis, count, bitorder))(u)
  if u.size == 0:  # NumPy leaves the padding of an empty input uninitialised
    want = np.zeros_like(want)
  _same(got, want, f"unpackbits {axis} {count}", np.uint8)
  if count is None:
    _same(jnp.packbits(got, axis, bitorder), u if axis is not None else u.ravel(), "roundtrip")


def test_bits_errors_and_vmap():
  with pytest.raises(TypeError, match="uint8"):
    jnp.unpackbits(np.ones(3, np.int32))
  with pytest.raises(TypeError, match="integer or boolean"):
    jnp.packbits(np.ones(3, np.float32))
  with pytest.raises(TypeError, match="integer or boolean"):
    jnp.bitwise_count(np.ones(3, np.float32))
  with pytest.raises(ValueError, match="bitorder"):
    jnp.packbits(np.ones(3, np.int32), bitorder="middle")
  x = _ints((2, 9), np.int32)
  check_vmap(lambda a: [jnp.packbits(a, -1), jnp.bitwise_count(a)], [x], axes=(0, 1))
  check_vmap(lambda a: jnp.unpackbits(a, 0, 5), [x.astype(np.uint8)], axes=(0, 1))


# ----------------------------------------------------------------------------- products

PRODUCT_SHAPES = [("vecdot", (2, 3, 4), (3, 4)), ("vecdot", (4,), (2, 4)),
                  ("matvec", (2, 3, 4), (4,)), ("matvec", (3, 4), (2, 1, 4)),
                  ("vecmat", (3,), (2, 3, 4)), ("vecmat", (2, 1, 3), (3, 4))]


@pytest.mark.parametrize("name,s1,s2", PRODUCT_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_products_match_numpy(name, s1, s2, dtype):
  def make(shape, seed):
    x = _rand(shape, seed) * 3
    if dtype == np.complex64:
      x = x + 1j * _rand(shape, seed + 7)
    return x.astype(dtype)
  a, b = make(s1, 1), make(s2, 2)
  want = getattr(np, name)(a, b)
  for got in (getattr(jnp, name)(a, b), jaxon.jit(getattr(jnp, name))(a, b)):
    _same(got, want, f"{name} {s1} {s2}", dtype, rtol=1e-5, atol=1e-5)


def test_vecdot_axis_and_errors():
  a, b = _rand((3, 4), 3), _rand((3, 4), 4)
  _same(jnp.vecdot(a, b, axis=0), np.vecdot(a, b, axis=0), "axis 0", rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match="equal lengths"):
    jnp.vecdot(a, b.T)
  with pytest.raises(ValueError, match="equal lengths"):
    jnp.matvec(a, np.ones(3))
  with pytest.raises(ValueError, match="vectors"):
    jnp.vecmat(np.ones(3), np.ones(3))


def test_products_transforms():
  m, v, w = _rand((2, 3), 5), _rand((3,), 6), _rand((2,), 7)
  check_grads(lambda m, v, w: [jnp.matvec(m, v), jnp.vecmat(w, m), jnp.vecdot(m, m)],
              [m, v, w], order=2, modes=("fwd", "rev"))
  check_vmap(lambda m, v, w: [jnp.matvec(m, v), jnp.vecmat(w, m), jnp.vecdot(m, v)],
             [m, v, w], axes=(0,))
