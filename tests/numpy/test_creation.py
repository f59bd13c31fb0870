"""jnp array creation (ranges, matrices, grids, index helpers), the basic constructors'
weak types, and the scalar types and dtype queries, against NumPy: eagerly and under jit,
vmap against a loop, and gradients where the values depend differentiably on the inputs."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from jaxon._src import dtypes as jdtypes
from jaxon.errors import ConcretizationTypeError
from tests.transform_util import check_vmap
from tests.util import check_grads

SETTINGS = settings(max_examples=12, deadline=None)
F32_TOL = dict(rtol=2e-6, atol=2e-6)


def _same(got, want, what="", exact=True, **tol):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  if exact:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    np.testing.assert_array_equal(got, want, err_msg=what)
  else:
    np.testing.assert_allclose(got, want, err_msg=what, **(tol or F32_TOL))


def _rand(shape, seed=0, dtype=np.float32):
  return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- arange

@SETTINGS
@given(start=st.integers(-6, 6), stop=st.integers(-6, 6),
       step=st.sampled_from([None, 1, 2, 3, -1, -2]), one_arg=st.booleans())
def test_arange_ints(start, stop, step, one_arg):
  if one_arg:
    want = np.arange(stop).astype(np.int32)
    _same(jnp.arange(stop), want, "arange(stop)")
    _same(jaxon.jit(lambda: jnp.arange(stop))(), want, "jit arange(stop)")
  else:
    want = np.arange(start, stop, step).astype(np.int32)
    _same(jnp.arange(start, stop, step), want, f"arange({start}, {stop}, {step})")
    _same(jaxon.jit(lambda: jnp.arange(start, stop, step))(), want, "jit arange")


@pytest.mark.parametrize("args,dtype", [
    ((0.0, 1.0, 0.25), None), ((5,), np.float32), ((1.5,), None), ((-1.0, 2, 0.5), None),
    ((2, 10, 3), np.uint8), ((10, 0, -3), np.int8), ((0, 3), np.int16),
    ((0.5, 4.5), np.int32), ((np.int16(3),), None),
])
def test_arange_dtypes(args, dtype):
  want = np.arange(*args, dtype=dtype)
  want = want.astype(jdtypes.canonicalize_dtype(want.dtype))
  _same(jnp.arange(*args, dtype=dtype), want, f"arange{args}")


def test_arange_needs_concrete_bounds():
  with pytest.raises(ConcretizationTypeError, match="jnp.arange argument 'stop'"):
    jaxon.jit(jnp.arange)(3)
  with pytest.raises(ZeroDivisionError, match="step must not be zero"):
    jnp.arange(0, 3, 0)


def test_arange_is_iota():
  jaxpr = str(jaxon.make_jaxpr(lambda: jnp.arange(2, 12, 2))())
  assert "iota" in jaxpr and "[5]" in jaxpr, jaxpr


# ----------------------------------------------------------------------------- linspace & co

@SETTINGS
@given(shapes=st.sampled_from([((), ()), ((2,), ()), ((3, 1), (2,))]),
       num=st.integers(0, 6), endpoint=st.booleans(), axis=st.integers(-1, 0),
       seed=st.integers(0, 100))
def test_linspace(shapes, num, endpoint, axis, seed):
  start, stop = _rand(shapes[0], seed) * 3, _rand(shapes[1], seed + 1) * 3
  want, want_step = np.linspace(start, stop, num, endpoint, retstep=True, axis=axis)
  fn = lambda s, t: jnp.linspace(s, t, num, endpoint, retstep=True, axis=axis)
  for name, (got, step) in (("eager", fn(start, stop)), ("jit", jaxon.jit(fn)(start, stop))):
    assert got.dtype == np.float32, name
    _same(got, want, f"linspace {name}", exact=False, rtol=1e-5, atol=1e-5)
    _same(step, np.broadcast_to(want_step, np.shape(step)), f"step {name}", exact=False,
          rtol=1e-5, atol=1e-5, equal_nan=True)
    if endpoint and num > 1:  # the end is `stop` exactly
      np.testing.assert_array_equal(np.take(np.asarray(got), -1, axis=axis),
                                    np.broadcast_to(stop, np.broadcast_shapes(
                                        start.shape, stop.shape)).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.float16, jnp.bfloat16])
def test_linspace_dtype(dtype):
  want = np.linspace(-3.0, 7.0, 7).astype(np.float64)
  if np.dtype(dtype).kind == "i":
    want = np.floor(want)
  got = jnp.linspace(-3, 7, 7, dtype=dtype)
  assert got.dtype == np.dtype(dtype)
  _same(got.astype(np.float32), want, "linspace dtype", exact=False, rtol=1e-2, atol=1e-2)


def test_linspace_transforms():
  fn = lambda s, t: jnp.linspace(s, t, 5)
  check_grads(fn, (np.float32(0.5), np.float32(2.0)), order=2)
  check_grads(lambda s, t: jnp.linspace(s, t, 4, endpoint=False, axis=1),
              (_rand((2,)), _rand((2,), 1)), order=2)
  check_vmap(fn, (np.float32(0.5), np.float32(2.0)), axes=(0,))


@pytest.mark.parametrize("start,stop,num,endpoint,base", [
    (0.0, 3.0, 4, True, 10.0), (1.0, -1.0, 5, False, 2.0), (0.0, 2.0, 3, True, np.e),
    (np.array([0.0, 1.0]), 2.0, 3, True, np.array([2.0, 3.0])),
])
def test_logspace(start, stop, num, endpoint, base):
  want = np.logspace(start, stop, num, endpoint, base)
  _same(jnp.logspace(start, stop, num, endpoint, base), want, "logspace", exact=False,
        rtol=1e-5)
  check_grads(lambda s, t: jnp.logspace(s, t, num, endpoint, base),
              (np.float32(np.mean(start)), np.float32(stop)), order=2, rtol=2e-2)


@pytest.mark.parametrize("start,stop,num,endpoint", [
    (1.0, 1000.0, 4, True), (-1.0, -100.0, 5, False), (2.0, 0.5, 3, True), (3.0, 3.0, 1, True),
    (np.array([1.0, 2.0]), np.array([8.0, 32.0]), 4, True),
])
def test_geomspace(start, stop, num, endpoint):
  want = np.geomspace(start, stop, num, endpoint)
  got = jnp.geomspace(start, stop, num, endpoint)
  _same(got, want, "geomspace", exact=False, rtol=1e-5)
  if num:  # the ends are exact
    np.testing.assert_array_equal(np.asarray(got)[0], np.float32(start))
  with pytest.raises(ValueError, match="cannot include zero"):
    jnp.geomspace(0.0, 1.0)


# ----------------------------------------------------------------------------- matrices

@pytest.mark.parametrize("N,M,k", [(3, None, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (0, 2, 0),
                                   (3, None, -3)])
@pytest.mark.parametrize("dtype", [None, np.int32, np.bool_])
def test_eye_tri(N, M, k, dtype):
  want_dtype = np.float32 if dtype is None else dtype
  _same(jnp.eye(N, M, k, dtype), np.eye(N, M, k, want_dtype), "eye")
  _same(jnp.tri(N, M, k, dtype), np.tri(N, M, k, want_dtype), "tri")
  _same(jaxon.jit(lambda k: jnp.eye(N, M, k, dtype))(k), np.eye(N, M, k, want_dtype),
        "eye with traced k")


def test_identity():
  _same(jnp.identity(3), np.identity(3, np.float32), "identity")
  _same(jnp.identity(2, jnp.int8), np.identity(2, np.int8), "identity int8")


@SETTINGS
@given(shape=st.sampled_from([(3, 3), (2, 4), (4, 2), (2, 3, 3), (1, 0, 2)]),
       k=st.integers(-3, 3))
def test_tril_triu(shape, k):
  x = _rand(shape)
  for name in ("tril", "triu"):
    fn = lambda m, name=name: getattr(jnp, name)(m, k)
    _same(fn(x), getattr(np, name)(x, k), name)
    _same(jaxon.jit(fn)(x), getattr(np, name)(x, k), f"jit {name}")


def test_tril_triu_transforms():
  x = _rand((3, 4))
  for fn in (jnp.tril, lambda m: jnp.triu(m, -1)):
    check_grads(fn, (x,), order=2)
    check_vmap(fn, (x,))
  with pytest.raises(ValueError, match="at least 2 dimensions"):
    jnp.tril(jnp.ones(3))


@SETTINGS
@given(shape=st.sampled_from([(3, 3), (2, 5), (5, 2), (2, 3, 4), (0, 3), (1, 1, 2, 3)]),
       offset=st.integers(-4, 4), axes=st.sampled_from([(0, 1), (1, 0), (-1, 0), (-2, -1)]))
def test_diagonal(shape, offset, axes):
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  want = np.diagonal(x, offset, *axes)
  _same(jnp.diagonal(x, offset, *axes), want, "diagonal")
  _same(jaxon.jit(lambda a: jnp.diagonal(a, offset, *axes))(x), want, "jit diagonal")
  _same(jnp.trace(x, offset, *axes), np.trace(x, offset, *axes), "trace")


def test_diagonal_transforms():
  x = _rand((3, 4, 2))
  for fn in (lambda a: jnp.diagonal(a, 1), lambda a: jnp.diagonal(a, -1, 2, 0),
             lambda a: jnp.trace(a, 0, 1, 2)):
    check_grads(fn, (x,), order=2)
    check_vmap(fn, (x,))
  assert "gather" not in str(jaxon.make_jaxpr(jnp.diagonal)(x))
  with pytest.raises(ValueError, match="cannot be the same"):
    jnp.diagonal(x, 0, 1, 1)


@pytest.mark.parametrize("k", [-2, 0, 1, 3])
def test_diag_diagflat(k):
  v, m = _rand((3,)), _rand((3, 4))
  _same(jnp.diag(v, k), np.diag(v, k), "diag of vector")
  _same(jnp.diag(m, k), np.diag(m, k), "diag of matrix")
  _same(jnp.diagflat(m[:2, :2], k), np.diagflat(m[:2, :2], k), "diagflat")
  check_grads(lambda v: jnp.diag(v, k), (v,), order=2)
  check_vmap(lambda v: jnp.diag(v, k), (v,), axes=(0, -1))
  with pytest.raises(ValueError, match="1-D or 2-D"):
    jnp.diag(jnp.ones((2, 2, 2)))


# ----------------------------------------------------------------------------- grids

@pytest.mark.parametrize("shapes", [[(3,), (2,)], [(2,), (3,), (4,)], [(4,)], [(2, 2), (3,)]])
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(shapes, indexing, sparse):
  xs = [_rand(s, i) for i, s in enumerate(shapes)]
  want = np.meshgrid(*xs, indexing=indexing, sparse=sparse)
  got = jnp.meshgrid(*xs, indexing=indexing, sparse=sparse)
  assert isinstance(got, list) and len(got) == len(want)
  for g, w in zip(got, want):
    _same(g, w, "meshgrid")


@pytest.mark.parametrize("dims", [(2, 3), (4,), (2, 1, 3), ()])
@pytest.mark.parametrize("sparse", [False, True])
def test_indices(dims, sparse):
  want = np.indices(dims, sparse=sparse)
  got = jnp.indices(dims, sparse=sparse)
  if sparse:
    for g, w in zip(got, want):
      _same(g, w.astype(np.int32), "sparse indices")
  else:
    _same(got, want.astype(np.int32), "indices")


def test_fromfunction():
  _same(jnp.fromfunction(lambda i, j: i * 3 + j, (2, 3)),
        np.fromfunction(lambda i, j: i * 3 + j, (2, 3), dtype=np.float32), "fromfunction")
  _same(jnp.fromfunction(lambda i, j, k: i - j * k, (2, 3, 2), dtype=int),
        np.fromfunction(lambda i, j, k: i - j * k, (2, 3, 2), dtype=np.int32), "int")
  # Like JAX (and unlike NumPy) the function sees scalars, so Python control flow on
  # shapes works, and a constant result is broadcast to the shape.
  _same(jnp.fromfunction(lambda i: jnp.float32(7), (3,)), np.full(3, 7, np.float32), "const")


def test_index_helpers():
  for got, want in [(jnp.tril_indices(3), np.tril_indices(3)),
                    (jnp.triu_indices(4, 1, 3), np.triu_indices(4, 1, 3)),
                    (jnp.tril_indices_from(np.ones((2, 3)), -1),
                     np.tril_indices_from(np.ones((2, 3)), -1)),
                    (jnp.triu_indices_from(np.ones((3, 3))), np.triu_indices_from(np.ones((3, 3)))),
                    (jnp.diag_indices(3, 3), np.diag_indices(3, 3)),
                    (jnp.diag_indices_from(np.ones((2, 2))), np.diag_indices_from(np.ones((2, 2)))),
                    (jnp.mask_indices(3, jnp.triu, 1), np.mask_indices(3, np.triu, 1))]:
    assert len(got) == len(want)
    for g, w in zip(got, want):
      _same(g, w.astype(np.int32), "index helper")
  x = jnp.arange(9).reshape(3, 3)
  _same(x[jnp.triu_indices(3)], np.arange(9).reshape(3, 3)[np.triu_indices(3)].astype(np.int32),
        "indexing with triu_indices")


# ----------------------------------------------------------------------------- constructors

def test_constructor_weak_types():
  """Python scalars make weak arrays (they adopt the other operand's dtype), as in JAX;
  an explicit dtype makes them strong."""
  assert jnp.array(1.0).weak_type and jnp.asarray(2).weak_type
  assert not jnp.array(1.0, jnp.float32).weak_type
  assert not jnp.array([1.0, 2.0]).weak_type
  assert (jnp.ones(2, jnp.bfloat16) + jnp.array(1.0)).dtype == jnp.bfloat16
  assert jnp.full(3, 1.0).weak_type and not jnp.full(3, 1.0, jnp.float32).weak_type
  assert jnp.zeros_like(jnp.array(1.0)).weak_type


def test_full_and_likes():
  _same(jnp.full((2, 3), np.arange(3)), np.full((2, 3), np.arange(3)).astype(np.int32), "full")
  _same(jnp.full_like(np.ones((2, 2), np.int8), 3), np.full((2, 2), 3, np.int8), "full_like")
  _same(jnp.full_like(np.ones((2, 3)), np.arange(3.0), shape=(4, 3)),
        np.full((4, 3), np.arange(3.0), np.float32), "full_like with an array")
  _same(jnp.empty((2, 1), jnp.int32), np.zeros((2, 1), np.int32), "empty")
  _same(jnp.empty_like(np.ones(3, np.float32)), np.zeros(3, np.float32), "empty_like")
  _same(jnp.copy(np.arange(3)), np.arange(3).astype(np.int32), "copy")
  _same(jnp.ones_like(np.ones(2), dtype=jnp.int8, shape=(1, 2)), np.ones((1, 2), np.int8),
        "ones_like")
  with pytest.raises(ValueError, match="cannot be broadcast"):
    jnp.full((2,), np.arange(3))


# ----------------------------------------------------------------------------- scalar types

SCALAR_TYPES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                "complex128"]


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_types(name):
  t = getattr(jnp, name)
  np_type = np.dtype(jnp.bfloat16.dtype if name == "bfloat16" else name).type
  assert np.dtype(t) == np.dtype(np_type) and t == np_type and hash(t) == hash(np_type)
  assert jnp.zeros(2, t).dtype == jdtypes.canonicalize_dtype(np_type)
  x = t(1)
  assert isinstance(x, jaxon.Array) and not x.weak_type
  assert x.dtype == jdtypes.canonicalize_dtype(np_type)
  _same(t(np.array([0, 1, 2])), np.array([0, 1, 2]).astype(x.dtype), f"jnp.{name}(array)")
  assert jaxon.jit(lambda v: t(v))(np.float32(1)).dtype == x.dtype
  assert isinstance(np_type(0), t)


def test_scalar_types_x64(x64):
  assert jnp.float64(1).dtype == np.float64 and jnp.int64(1).dtype == np.int64
  assert jnp.arange(3).dtype == np.int64 and jnp.linspace(0, 1, 3).dtype == np.float64


def test_dtype_queries():
  assert jnp.dtype(jnp.float32) == np.float32 and jnp.dtype("int8") == np.int8
  assert jnp.can_cast(jnp.int8, jnp.float32) and not jnp.can_cast(jnp.float32, jnp.int8)
  assert jnp.can_cast(jnp.ones(2, jnp.int8), "int16")
  assert jnp.can_cast(jnp.float32, jnp.int8, casting="unsafe")
  assert jnp.finfo(jnp.bfloat16).eps == 2.0 ** -7
  assert jnp.finfo(jnp.float32).max == np.finfo(np.float32).max
  assert jnp.finfo(jnp.complex64).bits == 32
  assert jnp.iinfo(jnp.int8).min == -128 and jnp.iinfo(jnp.uint16).max == 65535
  assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and jnp.issubdtype(jnp.int8, jnp.integer)
  assert jnp.issubdtype(jnp.uint8, jnp.unsignedinteger)
  assert not jnp.issubdtype(jnp.float32, jnp.integer)
  assert jnp.issubdtype(jnp.complex64, jnp.complexfloating)
  assert jnp.issubdtype(jnp.int32, jnp.number) and jnp.issubdtype(jnp.bool_, jnp.generic)
  assert jnp.issubdtype(jnp.float16, jnp.inexact) and jnp.issubdtype(jnp.int8,
                                                                     jnp.signedinteger)
  cases = [(jnp.bfloat16, "real floating", True), (jnp.int8, "signed integer", True),
           (jnp.uint8, "integral", True), (jnp.bool_, "numeric", False),
           (jnp.complex64, ("bool", "complex floating"), True), (jnp.int32, jnp.int32, True),
           (jnp.float32, "integral", False), (jnp.bool_, "bool", True)]
  for dtype, kind, want in cases:
    assert jnp.isdtype(dtype, kind) == want, (dtype, kind)
  with pytest.raises(ValueError, match="unknown kind"):
    jnp.isdtype(jnp.float32, "floaty")
  assert jnp.promote_types(jnp.int8, jnp.uint8) == np.int16
  assert jnp.result_type(jnp.bfloat16, 1.0) == jnp.bfloat16


def test_constants():
  assert (jnp.pi, jnp.e, jnp.euler_gamma) == (np.pi, np.e, np.euler_gamma)
  assert np.isinf(jnp.inf) and np.isnan(jnp.nan) and jnp.newaxis is None
  assert jnp.ones(3)[:, jnp.newaxis].shape == (3, 1)
