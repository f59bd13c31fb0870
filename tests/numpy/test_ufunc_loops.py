"""The methods of ufuncs without a faster equivalent (`subtract`, the bitwise ufuncs,
`logaddexp`, `frompyfunc`) step through the axis in a `fori_loop` or `scan`: values
against NumPy, traced once whatever the length, and jit against eager."""
from __future__ import annotations

import numpy as np

import jaxon
import jaxon.numpy as jnp

_X = (np.arange(1.0, 13.0).reshape(3, 4) ** 1.5).astype(np.float32)
_I = (np.arange(12).reshape(3, 4) * 7 + 3).astype(np.int32)


def test_logaddexp_reduce_is_a_log_sum_exp():
  """As JAX computes it: the maximum taken out, then one sum (no loop over the axis); -inf
  slices, `where`, `initial`, `keepdims` and base 2 as NumPy has them."""
  x = np.array([[0.5, -np.inf, 2.0], [1.0, -np.inf, -3.0], [-1.0, -np.inf, 0.25]], np.float32)
  where = np.array([[True, True, False], [True, False, True], [False, True, True]])
  for ufunc, np_ufunc in ((jnp.logaddexp, np.logaddexp), (jnp.logaddexp2, np.logaddexp2)):
    got = jaxon.jit(lambda a, f=ufunc: (f.reduce(a), f.reduce(a, axis=1, keepdims=True),
                                        f.reduce(a, axis=None, initial=0.5),
                                        f.reduce(a, axis=1, where=where)))(x)
    want = (np_ufunc.reduce(x), np_ufunc.reduce(x, axis=1, keepdims=True),
            np_ufunc(np_ufunc.reduce(x, axis=None), 0.5),
            np_ufunc.reduce(x, axis=1, where=where, initial=-np.inf))
    for g, w in zip(got, want):
      np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=ufunc.__name__)
    jaxpr = jaxon.make_jaxpr(lambda a, f=ufunc: f.reduce(a))(x)
    assert "while" not in str(jaxpr) and "reduce_max" in str(jaxpr), jaxpr


def test_reduce_and_accumulate_match_numpy():
  cases = [
      ("subtract.reduce", jnp.subtract.reduce(_X, axis=1), np.subtract.reduce(_X, axis=1)),
      ("subtract.accumulate", jnp.subtract.accumulate(_X, axis=1),
       np.subtract.accumulate(_X, axis=1)),
      ("logaddexp.reduce", jnp.logaddexp.reduce(_X, axis=0), np.logaddexp.reduce(_X, axis=0)),
      ("bitwise_xor.reduce", jnp.bitwise_xor.reduce(_I, axis=1),
       np.bitwise_xor.reduce(_I, axis=1)),
      ("bitwise_or.accumulate", jnp.bitwise_or.accumulate(_I, axis=0),
       np.bitwise_or.accumulate(_I, axis=0)),
      ("subtract.at", jnp.subtract.at(_X.ravel(), np.array([0, 0, 3]), 2.0, inplace=False),
       _subtract_at_numpy()),
  ]
  for what, actual, expected in cases:
    assert actual.dtype == expected.dtype, what
    np.testing.assert_allclose(actual, expected, rtol=1e-6, err_msg=what)


def _subtract_at_numpy() -> np.ndarray:
  flat = _X.ravel().copy()
  np.subtract.at(flat, np.array([0, 0, 3]), 2.0)
  return flat


def test_traced_once_and_jit_matches_eager():
  long = np.arange(200.0, dtype=np.float32)
  calls = []

  def counted(x, y):
    calls.append(1)
    return x * 0.5 + y
  ufunc = jnp.frompyfunc(counted, nin=2, nout=1)
  jaxpr = str(jaxon.make_jaxpr(lambda v: (ufunc.reduce(v), ufunc.accumulate(v)))(long))
  assert jaxpr.count("scan[") == 2, jaxpr  # fori_loop with concrete bounds is a scan
  assert len(calls) < 10, f"the step function was traced {len(calls)} times"
  np.testing.assert_allclose(jaxon.jit(ufunc.accumulate)(long), ufunc.accumulate(long))


def test_vmap_and_grad():
  np.testing.assert_allclose(jaxon.vmap(jnp.subtract.reduce)(_X), np.subtract.reduce(_X, axis=1))
  grad = jaxon.grad(lambda x: jnp.logaddexp.accumulate(x, axis=1).sum())(_X)
  expected = jaxon.grad(lambda x: jnp.stack(
      [jnp.logaddexp.reduce(x[:, :i + 1], axis=1) for i in range(4)]).sum())(_X)
  np.testing.assert_allclose(grad, expected, rtol=1e-5)
