"""Every pair and triple of jit, grad, vmap, jvp, jacfwd and jacrev composes.

Each transformation has a reference built without any transformation: jit is the identity,
vmap a Python loop stacked, and the derivatives central finite differences (float64). A
composed transformation of `f` must agree with the same composition of references. The
vmap here maps over scalings of the argument, so it closes over the outer value (a tracer
of the enclosing transformation when it is nested)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jaxon.numpy as jnp
from jaxon import grad, jacfwd, jacrev, jit, jvp, vmap

M = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [-0.2, 0.3, 0.7]])
X = np.array([0.3, -0.5, 0.8])
SCALES = np.array([1.0, -0.5])
EPS = 1e-3


def f(x):
  return jnp.tanh(M @ x) * x[0] + jnp.exp(0.3 * x)


def f_numpy(x):
  """`f` in NumPy: the references never run jaxon."""
  return np.tanh(M @ x) * x[0] + np.exp(0.3 * x)


def _sum_grad(g):
  return lambda x: grad(lambda y: jnp.sum(g(y)))(x)


TRANSFORMS = {
    "jit": jit,
    "grad": _sum_grad,
    "vmap": lambda g: lambda x: vmap(lambda s: g(x * s))(jnp.asarray(SCALES)),
    "jvp": lambda g: lambda x: jvp(g, (x,), (jnp.ones_like(x),))[1],
    "jacfwd": jacfwd,
    "jacrev": jacrev,
}


def _fd_along(g, x, v):
  return (g(x + EPS * v) - g(x - EPS * v)) / (2 * EPS)


def _fd_jacobian(g):
  def jac(x):
    cols = [_fd_along(g, x, e) for e in np.eye(len(x))]
    return np.stack(cols, axis=-1)
  return jac


REFERENCES = {
    "jit": lambda g: g,
    "grad": lambda g: lambda x: np.array(
        [_fd_along(lambda y: np.sum(g(y)), x, e) for e in np.eye(len(x))]),
    "vmap": lambda g: lambda x: np.stack([g(x * s) for s in SCALES]),
    "jvp": lambda g: lambda x: _fd_along(g, x, np.ones_like(x)),
    "jacfwd": _fd_jacobian,
    "jacrev": _fd_jacobian,
}


def _compose(names, table, fun):
  for name in reversed(names):
    fun = table[name](fun)
  return fun


COMBOS = [p for p in itertools.product(TRANSFORMS, repeat=2)] + [
    t for t in itertools.permutations(TRANSFORMS, 3)]


@pytest.mark.parametrize("names", COMBOS, ids=["-".join(c) for c in COMBOS])
def test_composition(names, x64):
  actual = _compose(names, TRANSFORMS, f)(jnp.asarray(X))
  expected = _compose(names, REFERENCES, f_numpy)(X)
  n_derivs = sum(n in ("grad", "jvp", "jacfwd", "jacrev") for n in names)
  tol = {0: 1e-12, 1: 1e-6, 2: 1e-5, 3: 1e-4}[n_derivs]  # finite differences: O(EPS**2)
  assert np.shape(actual) == np.shape(expected)
  np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)
