"""jax.scipy.linalg.expm, whose Padé degree is a `lax.switch` and whose squarings are a
`scan` of `cond`s: values against SciPy for norms that select every degree, batches,
vmap and jit, the NaN past `max_squarings`, and derivatives."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as osl

import jaxon
import jaxon.scipy.linalg as jsl
from tests.conftest import flag_set
from tests.util import check_grads

# 1-norm scales below, between and above the Padé degrees' thresholds (3, 5, 7, 9, 13 in
# double precision; 3, 5, 7 in single), the largest needing squarings.
_SCALES = [0.003, 0.08, 0.5, 1.5, 4.0, 60.0]


def _matrices(dtype):
  rng = np.random.RandomState(0)
  base = rng.randn(len(_SCALES), 4, 4)
  base /= np.abs(base).sum(axis=-2).max(axis=-1)[:, None, None]  # unit 1-norm
  return (base * np.array(_SCALES)[:, None, None]).astype(dtype)


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-4), (np.float64, 1e-12)])
def test_matches_scipy(dtype, rtol):
  with flag_set("jax_enable_x64", dtype == np.float64):
    A = _matrices(dtype)
    expected = np.stack([osl.expm(a.astype(np.float64)) for a in A])
    batched = jsl.expm(A)
    assert batched.dtype == dtype
    np.testing.assert_allclose(batched, expected, rtol=rtol, atol=rtol * 1e-2)
    np.testing.assert_allclose(jaxon.jit(jsl.expm)(A[3]), expected[3], rtol=rtol)
    np.testing.assert_allclose(jaxon.vmap(jsl.expm)(A), batched, rtol=rtol)


def test_upper_triangular_and_too_many_squarings():
  with flag_set("jax_enable_x64", True):
    A = np.triu(_matrices(np.float64)[4])
    np.testing.assert_allclose(jsl.expm(A, upper_triangular=True), osl.expm(A), rtol=1e-12)
    assert np.isnan(jsl.expm(A * 1e6, max_squarings=4)).all()


def test_derivatives():
  with flag_set("jax_enable_x64", True):
    A = _matrices(np.float64)[3][:2, :2]
    check_grads(jaxon.jit(jsl.expm), [A], order=1)
