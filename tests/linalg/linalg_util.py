"""Helpers shared by the linear-algebra tests: random matrices and NumPy comparisons."""
from __future__ import annotations

import numpy as np

import jaxon


def tol(dtype) -> dict:
  single = np.dtype(dtype) in (np.float32, np.complex64)
  return dict(rtol=2e-4, atol=2e-4) if single else dict(rtol=1e-10, atol=1e-10)


def rand(shape, dtype=np.float32, seed=0):
  """Standard normal values (real and imaginary parts for complex dtypes)."""
  rng = np.random.RandomState(seed)
  x = rng.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def hpd(shape, dtype=np.float32, seed=0):
  """Hermitian positive-definite matrices of `shape` (…, n, n), well conditioned."""
  a = rand(shape, dtype, seed)
  return (a @ adjoint(a) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def adjoint(x):
  return np.conj(np.swapaxes(x, -1, -2))


def close(actual, expected, dtype, what):
  actual = np.asarray(actual)
  assert actual.shape == np.shape(expected), f"{what}: shape {actual.shape} != " \
                                             f"{np.shape(expected)}"
  np.testing.assert_allclose(actual, expected, err_msg=what, **tol(dtype))


def eager_and_jit(f, *args):
  """f's outputs eagerly, after checking that jit gives the same (up to rounding: XLA fuses
  the jitted program differently)."""
  eager = f(*args)
  jitted = jaxon.jit(f)(*args)
  for e, j in zip(jaxon.tree_leaves(eager), jaxon.tree_leaves(jitted)):
    e, j = np.asarray(e), np.asarray(j)
    assert e.dtype == j.dtype, f"eager dtype {e.dtype}, jit dtype {j.dtype}"
    np.testing.assert_allclose(e, j, err_msg="eager vs jit", **tol(e.dtype))
  return eager
