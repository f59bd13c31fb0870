"""Derivatives and vmap of jnp reductions and their usual compositions (mean, var, std, a
stable logsumexp, softmax-style normalisation), with axis and keepdims: the generic harness
(finite differences to order 2 forward and reverse, vmap at axes 0, 1, -1 and mixed with
unmapped arguments, jit of the transformations) on top of the lax rules."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from tests.transform_util import Case, check_transforms, check_vmap
from tests.util import rand_distinct as rand

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)



def logsumexp(x, axis=None, keepdims=False):
  """The stable composition: shift by the (constant) maximum, then log of sum of exp."""
  top = lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True))
  out = jnp.log(jnp.sum(jnp.exp(x - top), axis=axis, keepdims=True)) + top
  return out if keepdims else jnp.squeeze(out, axis=axis)


CASES = [
    Case("sum_all", jnp.sum, ((2, 3),), f64=True),
    Case("sum_axis1_keepdims", lambda x: jnp.sum(x, axis=1, keepdims=True), ((2, 3, 2),)),
    Case("mean_axes", lambda x: jnp.mean(x, axis=(0, 2)), ((2, 3, 2),)),
    Case("var_axis0", lambda x: jnp.var(x, axis=0), ((4, 3),), f64=True),
    Case("std_ddof1_keepdims", lambda x: jnp.std(x, axis=-1, ddof=1, keepdims=True),
         ((3, 4),)),
    Case("max_axis1", lambda x: jnp.max(x, axis=1), ((2, 4, 3),)),
    Case("min_all_keepdims", lambda x: jnp.min(x, keepdims=True), ((3, 4),)),
    Case("prod_axis0", lambda x: jnp.prod(x, axis=0), ((3, 4),), f64=True),
    Case("cumsum_axis1", lambda x: jnp.cumsum(x, axis=1), ((2, 4),)),
    Case("cumprod_flat", jnp.cumprod, ((2, 3),)),
    Case("logsumexp_axis1", lambda x: logsumexp(x, axis=1), ((3, 4),), f64=True),
    Case("softmax_axis0", lambda x: jnp.exp(x - logsumexp(x, axis=0, keepdims=True)),
         ((3, 2),)),
    Case("weighted_mean", lambda x, w: jnp.sum(x * w, axis=0) / jnp.sum(w, axis=0),
         ((4, 3), (4, 3))),
    Case("max_of_sum", lambda x, y: jnp.max(x + y, axis=-1), ((3, 4), (3, 4))),
]


@pytest.mark.parametrize("case,dtype",
                         [(c, F32) for c in CASES] + [(c, F64) for c in CASES if c.f64],
                         ids=repr)
def test_transforms(request, case, dtype):
  if dtype == F64:
    request.getfixturevalue("x64")
  args = tuple(rand(s, dtype, seed) for seed, s in enumerate(case.shapes))
  if case.name == "weighted_mean":  # positive weights
    args = (args[0], np.abs(args[1]))
  check_transforms(case.fun, args)


@pytest.mark.parametrize("name,fun", [
    ("argmax_axis1", lambda x: jnp.argmax(x, axis=1)),
    ("argmin_keepdims", lambda x: jnp.argmin(x, axis=0, keepdims=True)),
    ("argmax_flat", jnp.argmax),
    ("all_any", lambda x: (jnp.all(x > 0, axis=1), jnp.any(x > 1, axis=0))),
], ids=["argmax_axis1", "argmin_keepdims", "argmax_flat", "all_any"])
def test_vmap_of_integer_valued(name, fun):
  check_vmap(fun, (rand((3, 4), F32),))


def test_grad_through_argmax_selection():
  """The argmax itself has no derivative; the value it selects does."""
  x = rand((3, 4), F32)
  f = lambda x: jnp.sum(jnp.take_along_axis(x, jnp.argmax(x, axis=1)[:, None], axis=1))
  oracle = np.zeros_like(x)
  oracle[np.arange(3), np.argmax(x, axis=1)] = 1
  np.testing.assert_allclose(jaxon.grad(f)(x), oracle)
  np.testing.assert_allclose(jaxon.grad(lambda x: jnp.sum(jnp.max(x, axis=1)))(x), oracle)


def test_grad_of_max_with_ties_averages():
  x = np.array([[1., 2., 2.], [3., 3., 3.]], np.float32)
  np.testing.assert_allclose(jaxon.grad(lambda x: jnp.sum(jnp.max(x, axis=1)))(x),
                             [[0, .5, .5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


def test_grad_of_prod_with_a_zero():
  x = np.array([[2., 0., 3.], [1., 2., 3.]], np.float32)
  np.testing.assert_allclose(jaxon.grad(lambda x: jnp.sum(jnp.prod(x, axis=1)))(x),
                             [[0., 6., 0.], [6., 3., 2.]])
