"""jnp.roots, poly, polydiv and polyfit against NumPy, eagerly and under jit; gradients
(second order, first for roots: eig's eigenvector derivatives are not implemented) and
vmap against a loop. (polyval/polyadd/… are tested in test_misc.py.)"""
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


def _sorted(r):
  r = np.asarray(r, np.complex128)
  return r[np.lexsort((r.imag.round(3), r.real.round(3)))]


def _same(got, want, what, rtol=2e-4, atol=2e-4):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


# ----------------------------------------------------------------------------- roots

ROOT_CASES = [[1., -3., 2.], [0., 0., 1., -6., 11., -6.], [1., 0., 0.], [2., 1., 0., 0., 3.],
              [1., 2., 3., 4.], [0., 0.], [5.], [0., 1., 0.], [1., 0., 1.]]


@pytest.mark.parametrize("p", ROOT_CASES, ids=str)
def test_roots_match_numpy(p):
  p = np.array(p, np.float32)
  got = jnp.roots(p)
  assert got.dtype == np.complex64
  _same(_sorted(got), _sorted(np.roots(p)), f"roots {p}")


def test_roots_without_stripping_under_jit():
  fn = jaxon.jit(lambda p: jnp.roots(p, strip_zeros=False))
  for p in ROOT_CASES:
    p = np.array(p, np.float32)
    got = np.asarray(fn(p))
    assert got.shape == (max(p.shape[0] - 1, 0),), p
    leading = np.argmax(p != 0) if np.any(p) else p.shape[0]
    n_nan = min(leading, got.shape[0])
    assert np.isnan(got[got.shape[0] - n_nan:]).all(), (p, got)
    _same(_sorted(got[:got.shape[0] - n_nan]), _sorted(np.roots(p)), f"roots {p}")


def test_roots_x64_and_errors(x64):
  p = np.array([1., -6., 11., -6.])
  got = jnp.roots(p)
  assert got.dtype == np.complex128
  _same(_sorted(got), _sorted(np.roots(p)), "roots f64", rtol=1e-9, atol=1e-9)
  with pytest.raises(ConcretizationTypeError, match="strip_zeros=False"):
    jaxon.jit(jnp.roots)(p)
  with pytest.raises(ValueError, match="one-dimensional"):
    jnp.roots(np.ones((2, 2)))


def test_roots_transforms():
  p = np.array([1., -3., 2.], np.float32)
  fn = lambda p: jnp.roots(p, strip_zeros=False).real  # noqa: E731
  check_grads(jaxon.jit(fn), [p], order=1, modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)
  check_vmap(lambda p: jnp.sort(fn(p)), [p], axes=(0,), tol=dict(rtol=1e-3, atol=1e-3))


# ----------------------------------------------------------------------------- poly, polydiv

@pytest.mark.parametrize("zeros", [[1., 2.], [1., -2., 0.5], [], [3.], [[1., 2.], [3., 4.]],
                                   [[0., -1.], [1., 0.]]], ids=str)
def test_poly_matches_numpy(zeros):
  zeros = np.array(zeros, np.float32)
  got, want = jnp.poly(zeros), np.poly(zeros)
  if zeros.ndim == 2:
    assert np.iscomplexobj(got)  # eigenvalues; NumPy drops imaginary parts of conjugates
  _same(got, want, f"poly {zeros}")


def test_poly_complex_and_integer():
  z = np.array([1 + 1j, 1 - 1j, 2], np.complex64)
  _same(jnp.poly(z), np.poly(z).astype(np.complex64), "complex zeros")
  got = jnp.poly(np.array([1, 2, 3]))
  assert got.dtype == np.float32
  _same(got, np.poly([1, 2, 3]), "int zeros")
  with pytest.raises(ValueError, match="square"):
    jnp.poly(np.ones((2, 3)))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 100))
def test_polydiv_matches_numpy(nu, nv, seed):
  rng = np.random.RandomState(seed)
  u = rng.standard_normal(nu).astype(np.float32)
  v = rng.standard_normal(nv).astype(np.float32)
  v[0] += np.sign(v[0]) * 0.5  # keep the division well conditioned
  q, r = jaxon.jit(jnp.polydiv)(u, v)
  q_want, r_want = np.polydiv(u.astype(np.float64), v.astype(np.float64))
  _same(q, q_want, f"quotient {u} / {v}")
  assert r.shape == u.shape
  _same(r[r.shape[0] - r_want.shape[0]:], r_want, f"remainder {u} / {v}")
  _same(r[:r.shape[0] - r_want.shape[0]], np.zeros(r.shape[0] - r_want.shape[0]), "leading")


def test_polydiv_trim_and_transforms():
  u, v = np.array([1., -3., 2., 5.], np.float32), np.array([2., -1.], np.float32)
  q, r = jnp.polydiv(u, v, trim_leading_zeros=True)
  q_want, r_want = np.polydiv(u, v)
  _same(q, q_want, "quotient")
  _same(r, r_want, "trimmed remainder")
  _same(jnp.polydiv(np.array([1, 2]), np.array([1, 2, 3]))[0], [0.], "short u")
  check_grads(jaxon.jit(jnp.polydiv), [u, v], order=2, modes=("rev",), atol=2e-2, rtol=2e-2)
  check_grads(jaxon.jit(jnp.poly), [np.array([1., -2., 0.5], np.float32)], order=2,
              modes=("fwd", "rev"))
  check_vmap(jnp.polydiv, [u, v], axes=(0,))
  check_vmap(jnp.poly, [np.array([1., -2., 0.5], np.float32)], axes=(0,))


# ----------------------------------------------------------------------------- polyfit

def _points(n=7, k=None, seed=0):
  rng = np.random.RandomState(seed)
  x = np.linspace(-1, 1, n).astype(np.float32)
  y = (3 * x ** 2 - x + 0.5)[:, None] + 0.1 * rng.standard_normal((n, k or 1))
  return x, (y[:, 0] if k is None else y).astype(np.float32)


@pytest.mark.parametrize("deg", [0, 1, 2, 3])
@pytest.mark.parametrize("k", [None, 2])
def test_polyfit_matches_numpy(deg, k):
  x, y = _points(k=k)
  w = np.linspace(0.5, 1.5, x.shape[0]).astype(np.float32)
  fn = jaxon.jit(lambda x, y, w: [jnp.polyfit(x, y, deg), jnp.polyfit(x, y, deg, w=w),
                                  *jnp.polyfit(x, y, deg, cov=True),
                                  *jnp.polyfit(x, y, deg, w=w, cov="unscaled")])
  want = [np.polyfit(x, y, deg), np.polyfit(x, y, deg, w=w),
          *np.polyfit(x, y, deg, cov=True), *np.polyfit(x, y, deg, w=w, cov="unscaled")]
  for i, (g, e) in enumerate(zip(fn(x, y, w), want, strict=True)):
    _same(g, e, f"polyfit deg={deg} k={k} output {i}", rtol=2e-3, atol=2e-4)


def test_polyfit_full_and_errors():
  x, y = _points()
  got = jnp.polyfit(x, y, 2, full=True)
  want = np.polyfit(x, y, 2, full=True)
  for i, (g, e) in enumerate(zip(got, want, strict=True)):
    _same(g, e, f"full output {i}", rtol=2e-3, atol=1e-5)
  with pytest.raises(ValueError, match="deg"):
    jnp.polyfit(x, y, -1)
  with pytest.raises(TypeError, match="1-D x"):
    jnp.polyfit(np.ones((2, 2)), np.ones(2), 1)
  with pytest.raises(TypeError, match="length"):
    jnp.polyfit(x, y[:3], 1)
  with pytest.raises(ValueError, match="exceed order"):
    jnp.polyfit(x[:3], y[:3], 2, cov=True)
  with pytest.raises(ConcretizationTypeError, match="deg"):
    jaxon.jit(jnp.polyfit)(x, y, 2)


def test_polyfit_x64(x64):
  x = np.linspace(0, 2, 9)
  y = np.exp(x)
  _same(jnp.polyfit(x, y, 4), np.polyfit(x, y, 4), "f64", rtol=1e-10, atol=1e-10)


def test_polyfit_transforms():
  x, y = _points(n=5)
  check_grads(jaxon.jit(lambda x, y: jnp.polyfit(x, y, 2)), [x, y], order=2,
              modes=("rev",), atol=5e-2, rtol=5e-2)
  check_vmap(lambda y: jnp.polyfit(x, y, 2), [y], axes=(0,), tol=dict(rtol=1e-4, atol=1e-4))
