"""jaxon.scipy.optimize.minimize (BFGS) against SciPy and JAX's results."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as osp_optimize

import jaxon
import jaxon.numpy as jnp
from jaxon.scipy.optimize import OptimizeResults, minimize


def rosenbrock(np_module):
  def f(x):
    return np_module.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
  return f


def test_rosenbrock_matches_scipy_and_jax():
  x0 = np.array([0.5, 1.5, -0.5], np.float32)
  result = jaxon.jit(lambda x: minimize(rosenbrock(jnp), x, method="BFGS"))(x0)
  assert isinstance(result, OptimizeResults)
  want = osp_optimize.minimize(rosenbrock(np), x0.astype(np.float64), method="BFGS")
  np.testing.assert_allclose(result.x, want.x, rtol=1e-4, atol=1e-4)
  assert bool(result.success) and int(result.status) == 0
  # JAX 0.10.2 takes the same path: 23 iterations, 37 evaluations.
  assert (int(result.nit), int(result.nfev), int(result.njev)) == (23, 37, 37)


def test_rosenbrock_x64_with_args(x64):
  """From the classic start JAX's line search gives up (status 3) after two iterations;
  so does jaxon's, at the same point."""
  def f(x, scale):
    return scale * rosenbrock(jnp)(x)
  stuck = minimize(f, np.array([-1.2, 1.0]), (2.0,), method="bfgs")
  assert stuck.x.dtype == np.float64 and stuck.hess_inv.shape == (2, 2)
  assert (int(stuck.status), int(stuck.nit), bool(stuck.success)) == (3, 2, False)
  np.testing.assert_allclose(stuck.x, [-0.51318347, 0.2304552], rtol=1e-7)


def test_errors():
  with pytest.raises(ValueError, match="not recognized"):
    minimize(rosenbrock(jnp), jnp.zeros(2), method="Nelder-Mead")
  with pytest.raises(TypeError, match="must be a tuple"):
    minimize(rosenbrock(jnp), jnp.zeros(2), args=[1.0], method="BFGS")
