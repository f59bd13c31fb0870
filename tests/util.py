"""Helpers shared by the primitive and jaxon.numpy test files: random inputs per dtype, and
the check that a function matches NumPy's answer eagerly, under jit and in abstract
evaluation."""
from __future__ import annotations

import numpy as np

import jaxon
from jaxon.test_util import check_grads as public_check_grads
from tests.conftest import tolerance

# The dtypes the primitive and jaxon.numpy tests sweep over.
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(jaxon.numpy.bfloat16)
I32, I64, U8, BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8), np.dtype(bool)


def rand(shape, dtype, seed=0):
  """Small values of `dtype`: floats in [-2, 2], integers in [-5, 5] ([0, 5] unsigned)."""
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return np.asarray(rng.random(shape) > 0.5)
  if dtype.kind in "iu":
    return np.asarray(rng.integers(0 if dtype.kind == "u" else -5, 6, shape), dtype)
  return np.asarray(rng.uniform(-2, 2, shape), dtype)


def rand_distinct(shape, dtype, seed=0):
  """Distinct values in about [-1.5, 1.5] (no ties for max/min), none very close to 0."""
  rng = np.random.RandomState(seed)
  n = int(np.prod(shape))
  magnitudes = 0.3 + 1.2 * (rng.permutation(n) + rng.uniform(0.1, 0.9, n)) / max(n, 1)
  return (magnitudes * rng.choice([-1, 1], n)).reshape(shape).astype(dtype)


def check(name, fun, args, expected):
  """`fun(*args)` matches `expected` (a value or a pytree of them: values, shapes, dtypes)
  eagerly and under jit, and the jaxpr's output avals agree with it. The arguments are put
  on the device first, as a user's arrays would be."""
  args = [jaxon.device_put(a) for a in args]
  wants = [np.asarray(e) for e in jaxon.tree_leaves(expected)]
  inputs = ", ".join(f"{np.dtype(a.dtype).name}{list(np.shape(a))}" for a in args)
  for how, f in (("eager", fun), ("jit", jaxon.jit(fun))):
    outs = jaxon.tree_leaves(f(*args))
    assert len(outs) == len(wants), f"{name} ({how}): {len(outs)} outputs, want {len(wants)}"
    for out, want in zip(outs, wants):
      where = f"{name} ({how}) of {inputs}: expected {want.dtype.name}{list(want.shape)}"
      assert (out.shape, out.dtype) == (want.shape, want.dtype), (
          f"{where}, got {out.dtype.name}{list(out.shape)}")
      np.testing.assert_allclose(np.asarray(out).astype(np.float64), want.astype(np.float64),
                                 err_msg=where, **tolerance(want.dtype))
  avals = jaxon.make_jaxpr(fun)(*args).out_avals
  assert [(a.shape, a.dtype) for a in avals] == [(w.shape, w.dtype) for w in wants], (
      f"{name} of {inputs}: abstract evaluation gives {avals}")


# This suite's finite-difference step and tolerance by dtype, as JAX's own test suite
# sets its own (looser than `jax.test_util`'s defaults, which users get): one step that
# balances truncation against rounding error for every function the suite checks.
_GRAD_SETTINGS = {F16: (1e-1, 1e-1), BF16: (1e-1, 1e-1), F32: (1e-3, 2e-2),
                  np.dtype(np.complex64): (1e-3, 2e-2), F64: (1e-6, 1e-5),
                  np.dtype(np.complex128): (1e-6, 1e-5)}


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """`jaxon.test_util.check_grads` with this suite's step and tolerance for the widest
  inexact dtype among `args` (each can still be given)."""
  settings = [_GRAD_SETTINGS.get(np.dtype(jaxon.dtypes.canonicalize_dtype(np.result_type(x))),
                                 (1e-3, 2e-2))
              for x in jaxon.tree_util.tree_leaves(args)
              if jaxon.numpy.issubdtype(np.result_type(x), np.inexact)] or [(1e-3, 2e-2)]
  step, tol = max(s[0] for s in settings), max(s[1] for s in settings)
  public_check_grads(f, args, order, modes, tol if atol is None else atol,
                     tol if rtol is None else rtol, step if eps is None else eps)
