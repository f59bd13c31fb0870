"""jnp.r_, c_, mgrid, ogrid and ix_ against NumPy's, eagerly and under jit (where the
joined arrays are traced), with gradients through r_/c_."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon.errors import ConcretizationTypeError
from tests.util import check_grads

A = np.array([1, 2, 3], np.int32)
F = np.array([[0.5, -1.0], [2.0, 3.5]], np.float32)


def _same(got, want, what):
  got, want = np.asarray(got), np.asarray(want)
  want = want.astype(dtypes.canonicalize_dtype(want.dtype))
  assert (got.shape, got.dtype) == (want.shape, want.dtype), (
      f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)


# Each case: an expression over (the concatenator, the 1-D array, the 2-D array).
CONCAT_CASES = {
    "array-scalar-slice": lambda R, a, f: R[a, 0, 4:6],
    "promote-float": lambda R, a, f: R[a, 2.5],
    "complex-step": lambda R, a, f: R[0:1:5j],
    "negative-step": lambda R, a, f: R[5:0:-2, a],
    "directive-axis-ndmin": lambda R, a, f: R["0,2", a, a],
    "directive-trans1d-0": lambda R, a, f: R["1,2,0", a, a],
    "directive-trans1d-neg": lambda R, a, f: R["0,2,-1", a, a],
    "directive-axis": lambda R, a, f: R["1", f, f],
    "2d": lambda R, a, f: R[f, f],
    "list-and-scalars": lambda R, a, f: R[-1:1:6j, [0.0] * 3, 5, 6],
    "3d-ndmin": lambda R, a, f: R["2,3", f, f],
}


@pytest.mark.parametrize("name", sorted(CONCAT_CASES))
def test_r_matches_numpy(name):
  expr = CONCAT_CASES[name]
  want = expr(np.r_, A, F)
  _same(expr(jnp.r_, jnp.asarray(A), jnp.asarray(F)), want, f"r_ {name}")
  got = jaxon.jit(lambda a, f: expr(jnp.r_, a, f))(A, F)
  _same(got, want, f"r_ {name} under jit")


@pytest.mark.parametrize("name", ["2d", "3d-ndmin", "directive-trans1d-0",
                                  "directive-axis-ndmin"])
def test_c_matches_numpy(name):
  expr = CONCAT_CASES[name]
  want = expr(np.c_, A, F)
  _same(expr(jnp.c_, jnp.asarray(A), jnp.asarray(F)), want, f"c_ {name}")
  _same(jaxon.jit(lambda a, f: expr(jnp.c_, a, f))(A, F), want, f"c_ {name} under jit")


def test_c_columns():
  _same(jnp.c_[A, A * 2], np.c_[A, A * 2], "c_ of 1-D arrays")
  _same(jnp.c_[np.ones((2, 3)), np.zeros((2, 2))], np.c_[np.ones((2, 3)), np.zeros((2, 2))],
        "c_ of 2-D arrays")


def test_concatenator_errors():
  with pytest.raises(NotImplementedError, match="matrix"):
    jnp.r_["r", A]
  with pytest.raises(ValueError, match="first"):
    jnp.r_[A, "0"]
  with pytest.raises(ValueError, match="directive"):
    jnp.r_["a,b", A]
  with pytest.raises(ConcretizationTypeError, match="concrete"):
    jaxon.jit(lambda n: jnp.r_[0:n])(3)


def test_r_grads():
  check_grads(lambda x, y: jnp.r_[x, 1.0, y * 2], (F[0], F[1]), order=2)
  check_grads(lambda x: jnp.c_[x, x ** 2], (F[0],), order=2)


GRID_KEYS = [slice(0, 3), (slice(0, 3), slice(0, 2)), (slice(-1, 1, 5j), slice(2)),
             (slice(0, 2, 0.5),), (slice(1, 7, 2), slice(0, 1, 3j), slice(3))]


@pytest.mark.parametrize("key", GRID_KEYS, ids=str)
def test_mgrid_ogrid_match_numpy(key):
  _same(jnp.mgrid[key], np.mgrid[key], f"mgrid[{key}]")
  got, want = jnp.ogrid[key], np.ogrid[key]
  if isinstance(key, slice):
    _same(got, want, f"ogrid[{key}]")
  else:
    assert len(got) == len(want)
    for g, w in zip(got, want):
      _same(g, w, f"ogrid[{key}]")
  _same(jaxon.jit(lambda: jnp.mgrid[key])(), np.mgrid[key], f"mgrid[{key}] under jit")


def test_grids_need_slices():
  with pytest.raises(TypeError, match="slices"):
    jnp.mgrid[0:2, 3]


@pytest.mark.parametrize("args", [
    ([0, 1], [2, 3, 4]), ([True, False, True], [1]), ([],), ([0], [1], [2, 0]),
])
def test_ix_matches_numpy(args):
  got, want = jnp.ix_(*args), np.ix_(*args)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    _same(g, w, f"ix_{args}")
  x = np.arange(60).reshape(3, 4, 5)[tuple(slice(None) for _ in range(3 - len(args)))]
  if len(args) == 3:
    _same(jnp.asarray(x)[jnp.ix_(*args)], x[np.ix_(*args)], "x[ix_(...)]")


def test_ix_traced_and_errors():
  x = np.arange(12).reshape(3, 4)
  f = jaxon.jit(lambda i, j: jnp.asarray(x)[jnp.ix_(i, j)])
  _same(f(np.array([2, 0]), np.array([1, 3])), x[np.ix_([2, 0], [1, 3])], "ix_ under jit")
  with pytest.raises(ValueError, match="one-dimensional"):
    jnp.ix_(np.zeros((2, 2), int))
  with pytest.raises(ConcretizationTypeError):
    jaxon.jit(lambda b: jnp.ix_(b))(np.array([True, False]))
