"""jnp.ufunc and jnp.frompyfunc: calls, reduce, accumulate, reduceat, outer and at against
the methods of NumPy's ufuncs, eagerly and under jit, and differentiated; and the wrapped
builtin ufuncs of ufunc_api (add, multiply, …) with their fast paths."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon._src.numpy import ufunc_api
from tests.transform_util import check_vmap
from tests.util import check_grads

TOL = dict(rtol=2e-5, atol=2e-5)
X = np.random.RandomState(0).uniform(0.5, 2.0, (3, 4)).astype(np.float32)


def _close(got, want, what):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  np.testing.assert_allclose(got, want, err_msg=what, **TOL)


# name, the ufunc from frompyfunc, NumPy's ufunc
BINARY = [
    ("subtract", jnp.frompyfunc(jnp.subtract, 2, 1), np.subtract),
    ("add", jnp.frompyfunc(jnp.add, 2, 1, identity=0), np.add),
    ("divide", jnp.frompyfunc(jnp.divide, 2, 1), np.divide),
    ("maximum", jnp.frompyfunc(jnp.maximum, 2, 1), np.maximum),
    ("wrapped-add", ufunc_api.add, np.add),
    ("wrapped-multiply", ufunc_api.multiply, np.multiply),
    ("wrapped-maximum", ufunc_api.maximum, np.maximum),
]
IDS = [b[0] for b in BINARY]


@pytest.mark.parametrize("name,uf,np_uf", BINARY, ids=IDS)
def test_call_and_outer(name, uf, np_uf):
  _close(uf(X, X[0]), np_uf(X, X[0]), f"{name}(x, y)")
  _close(uf.outer(X[0], X[1, :2]), np_uf.outer(X[0], X[1, :2]), f"{name}.outer")
  _close(jaxon.jit(uf.outer)(X[0], X), np_uf.outer(X[0], X), f"{name}.outer under jit")


@pytest.mark.parametrize("name,uf,np_uf", BINARY, ids=IDS)
@pytest.mark.parametrize("kwargs", [{}, {"axis": 1}, {"axis": None}, {"axis": -1,
                                                                      "keepdims": True}])
def test_reduce(name, uf, np_uf, kwargs):
  if kwargs.get("axis", 0) is None and name in ("subtract", "divide"):
    want = np_uf.reduce(X.ravel())  # NumPy refuses several axes of a non-reorderable ufunc
  else:
    want = np_uf.reduce(X, **kwargs)
  _close(uf.reduce(X, **kwargs), want, f"{name}.reduce {kwargs}")
  _close(jaxon.jit(lambda x: uf.reduce(x, **kwargs))(X), want, f"{name}.reduce jit")


@pytest.mark.parametrize("name,uf,np_uf", BINARY[:2] + BINARY[4:5], ids=IDS[:2] + IDS[4:5])
def test_reduce_initial_and_where(name, uf, np_uf):
  where = X > 1
  _close(uf.reduce(X, axis=1, initial=3.0), np_uf.reduce(X, axis=1, initial=3.0),
         f"{name}.reduce initial")
  _close(uf.reduce(X, axis=0, initial=1.0, where=where),
         np_uf.reduce(X, axis=0, initial=1.0, where=where), f"{name}.reduce where")
  empty = np.zeros((0, 2), np.float32)
  _close(uf.reduce(empty, initial=2.0), np_uf.reduce(empty, initial=2.0), "empty + initial")


def test_reduce_empty_without_identity_raises():
  with pytest.raises(ValueError, match="identity"):
    jnp.frompyfunc(jnp.subtract, 2, 1).reduce(np.zeros((0, 2), np.float32))


@pytest.mark.parametrize("name,uf,np_uf", BINARY, ids=IDS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_accumulate(name, uf, np_uf, axis):
  want = np_uf.accumulate(X, axis=axis)
  _close(uf.accumulate(X, axis=axis), want, f"{name}.accumulate axis={axis}")
  _close(jaxon.jit(lambda x: uf.accumulate(x, axis=axis))(X), want, "accumulate under jit")


@pytest.mark.parametrize("indices", [[0, 2, 1, 3], [0], [1, 1, 3], [3, 0]])
def test_reduceat(indices):
  for name, uf, np_uf in BINARY[:4]:
    _close(uf.reduceat(X, indices, axis=1), np_uf.reduceat(X, indices, axis=1),
           f"{name}.reduceat {indices}")


@pytest.mark.parametrize("name,uf,np_uf", BINARY, ids=IDS)
def test_at_unbuffered(name, uf, np_uf):
  indices = np.array([0, 2, 0, 3])
  want = X[0].copy()
  np_uf.at(want, indices, np.float32(1.5))
  _close(uf.at(X[0], indices, 1.5, inplace=False), want, f"{name}.at repeated indices")
  _close(jaxon.jit(lambda x, i: uf.at(x, i, 1.5, inplace=False))(X[0], indices), want,
         f"{name}.at under jit")
  want2 = X.copy()
  np_uf.at(want2, (np.array([0, 0]), np.array([1, 1])), X[1, :2])
  _close(uf.at(X, (jnp.array([0, 0]), jnp.array([1, 1])), X[1, :2], inplace=False), want2,
         f"{name}.at with a tuple index")
  with pytest.raises(NotImplementedError, match="inplace=False"):
    uf.at(X[0], indices, 1.5)


def test_unary_and_two_output_ufuncs():
  neg = jnp.frompyfunc(jnp.negative, 1, 1)
  want = X[0].copy()
  np.negative.at(want, [0, 0, 1])
  _close(neg.at(X[0], [0, 0, 1], inplace=False), want, "negative.at")
  _close(neg(X), -X, "negative call")
  with pytest.raises(ValueError, match="two arguments"):
    neg.reduce(X)
  dm = jnp.frompyfunc(jnp.divmod, 2, 2)
  q, r = dm(X, 0.3)
  wq, wr = np.divmod(X, np.float32(0.3))
  _close(q, wq, "divmod quotient")
  _close(r, wr, "divmod remainder")
  assert (dm.nin, dm.nout, dm.nargs, dm.identity) == (2, 2, 4, None)
  assert repr(dm) == "<jnp.ufunc 'divmod'>"


def test_wrapped_logical_reduce():
  b = X > 1
  _close(ufunc_api.logical_and.reduce(b, axis=1), np.logical_and.reduce(b, axis=1), "and")
  _close(ufunc_api.logical_or.reduce(b), np.logical_or.reduce(b), "or")
  _close(ufunc_api.minimum.reduce(X, axis=1), np.minimum.reduce(X, axis=1), "minimum")


def test_call_errors():
  uf = jnp.frompyfunc(jnp.add, 2, 1)
  with pytest.raises(NotImplementedError, match="out"):
    uf(X, X, out=X)
  with pytest.raises(NotImplementedError, match="where"):
    uf(X, X, where=X > 0)
  with pytest.raises(TypeError, match="takes 2"):
    uf(X)


def test_transforms():
  uf = jnp.frompyfunc(lambda x, y: x * y - jnp.sin(y), 2, 1, identity=0.0)
  for method in (lambda x: uf.reduce(x, axis=1), lambda x: uf.accumulate(x, axis=0),
                 lambda x: uf.outer(x[0], x[1]), lambda x: uf.at(x, jnp.array([[0, 1]]), 2.0,
                                                                 inplace=False)):
    check_grads(method, (X,), order=2, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
    check_vmap(method, [X], axes=(0,))


# JAX's jnp ufunc objects, with NumPy's counterparts and integer or float test data.
JNP_UFUNCS = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "negative": np.negative,
}


@pytest.mark.parametrize("name", sorted(JNP_UFUNCS))
def test_jnp_ufunc_objects(name):
  """`jnp.add` and the other 13 are ufunc objects, as in JAX: calls and methods match
  NumPy's, under jit too."""
  ours, theirs = getattr(jnp, name), JNP_UFUNCS[name]
  assert isinstance(ours, jnp.ufunc) and ours.nin == theirs.nin
  bitwise = name.startswith("bitwise")
  x = (np.arange(1, 7, dtype=np.int32).reshape(2, 3) if bitwise else
       (X[:2, :3] > 1.0) if name.startswith("logical") else X[:2, :3])
  if ours.nin == 1:
    _close(ours(x), theirs(x), name)
    _close(jaxon.jit(ours)(x), theirs(x), f"jit {name}")
    return
  _close(ours(x, x[::-1]), theirs(x, x[::-1]), name)
  _close(jaxon.jit(ours)(x, x[::-1]), theirs(x, x[::-1]), f"jit {name}")
  _close(ours.reduce(x, axis=1), theirs.reduce(x, axis=1), f"{name}.reduce")
  _close(ours.outer(x[0], x[1]), theirs.outer(x[0], x[1]), f"{name}.outer")
  _close(ours.accumulate(x, axis=1), theirs.accumulate(x, axis=1), f"{name}.accumulate")
  if not name.startswith("logical"):
    want = x.copy()
    theirs.at(want, [0, 0, 1], x[1])
    _close(ours.at(x, np.array([0, 0, 1]), x[1], inplace=False), want, f"{name}.at")
