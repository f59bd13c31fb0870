"""jaxon.scipy.special (and the lax special-function primitives under it) against SciPy:
values eagerly and under jit in float32 and float64 with broadcasting, derivatives to
order 2 by finite differences, vmap against a loop, and the edge values SciPy defines."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
import jaxon.scipy.special as jsp
from tests.transform_util import check_vmap
from tests.util import check_grads


def _uniform(lo, hi):
  return lambda rng, shape: rng.uniform(lo, hi, shape)


def _log_uniform(lo, hi):
  return lambda rng, shape: np.exp(rng.uniform(np.log(lo), np.log(hi), shape))


# (name, SciPy function, argument samplers, shapes that broadcast, float32 rtol, grad order)
# The jaxon function is jsp.<name>. Grad order 0: not differentiable (or not checked).
CASES = [
    ("gammaln", osp.gammaln, [_uniform(0.1, 20)], [(5,)], 1e-5, 2),
    ("digamma", osp.digamma, [_uniform(0.2, 20)], [(5,)], 1e-5, 2),
    ("gamma", osp.gamma, [_uniform(-3.9, 5)], [(6,)], 1e-4, 2),
    ("erf", osp.erf, [_uniform(-3, 3)], [(5,)], 1e-5, 2),
    ("erfc", osp.erfc, [_uniform(-3, 3)], [(5,)], 1e-5, 2),
    ("erfinv", osp.erfinv, [_uniform(-0.95, 0.95)], [(5,)], 1e-5, 2),
    ("expit", osp.expit, [_uniform(-8, 8)], [(5,)], 1e-5, 2),
    ("logit", osp.logit, [_uniform(0.05, 0.95)], [(5,)], 1e-5, 2),
    ("i0e", osp.i0e, [_uniform(-30, 30)], [(9,)], 1e-5, 2),
    ("i1e", osp.i1e, [_uniform(-30, 30)], [(9,)], 1e-5, 2),
    ("i0", osp.i0, [_uniform(-6, 6)], [(5,)], 1e-5, 2),
    ("i1", osp.i1, [_uniform(-6, 6)], [(5,)], 1e-5, 2),
    ("ndtr", osp.ndtr, [_uniform(-6, 6)], [(5,)], 1e-5, 2),
    ("log_ndtr", osp.log_ndtr, [_uniform(-40, 12)], [(9,)], 1e-5, 2),
    ("ndtri", osp.ndtri, [_log_uniform(1e-30, 0.99)], [(9,)], 1e-5, 2),
    ("entr", osp.entr, [_uniform(0.05, 3)], [(5,)], 1e-5, 2),
    ("xlogy", osp.xlogy, [_uniform(-2, 2), _uniform(0.1, 3)], [(3, 1), (4,)], 1e-5, 2),
    ("xlog1py", osp.xlog1py, [_uniform(-2, 2), _uniform(-0.9, 3)], [(3, 1), (4,)], 1e-5, 2),
    ("rel_entr", osp.rel_entr, [_uniform(0.1, 2), _uniform(0.1, 2)], [(2, 3), (3,)], 1e-5, 2),
    ("betaln", osp.betaln, [_uniform(0.2, 10), _uniform(0.2, 10)], [(3, 1), (1, 4)], 1e-4, 2),
    ("beta", osp.beta, [_uniform(0.2, 5), _uniform(0.2, 5)], [(3,), (3,)], 1e-4, 2),
    ("gammainc", osp.gammainc, [_log_uniform(0.1, 40), _log_uniform(0.05, 60)],
     [(4, 1), (5,)], 1e-4, 1),
    ("gammaincc", osp.gammaincc, [_log_uniform(0.1, 40), _log_uniform(0.05, 60)],
     [(4, 1), (5,)], 1e-4, 1),
    ("zeta", osp.zeta, [_uniform(1.5, 6), _uniform(0.5, 4)], [(3, 1), (4,)], 1e-5, 0),
    ("kl_div", osp.kl_div, [_uniform(0.1, 2), _uniform(0.1, 2)], [(2, 3), (3,)], 1e-5, 2),
    ("boxcox", osp.boxcox, [_uniform(0.1, 5), _uniform(-2, 2)], [(3, 1), (4,)], 1e-4, 2),
    ("boxcox1p", osp.boxcox1p, [_uniform(-0.9, 4), _uniform(-2, 2)], [(3, 1), (4,)], 1e-4, 2),
    ("factorial", osp.factorial, [_uniform(0.1, 8)], [(5,)], 1e-4, 2),
    ("comb", osp.comb, [_uniform(4, 12), _uniform(0.2, 3.5)], [(3, 1), (4,)], 1e-4, 2),
    ("poch", osp.poch, [_uniform(0.5, 5), _uniform(-0.4, 3)], [(3, 1), (4,)], 1e-4, 2),
    ("loggamma", osp.loggamma, [_uniform(0.1, 20)], [(5,)], 1e-5, 2),
]
IDS = [c[0] for c in CASES]


def _args(samplers, shapes, dtype, seed=0):
  rng = np.random.RandomState(seed)
  return [np.asarray(s(rng, shape), dtype) for s, shape in zip(samplers, shapes)]


def _check_values(name, sp_fn, args, rtol, modes=("eager", "jit")):
  fn = getattr(jsp, name)
  expected = sp_fn(*[a.astype(np.float64) for a in args])
  dtype = args[0].dtype
  for mode, f in (("eager", fn), ("jit", jaxon.jit(fn))):
    if mode not in modes:
      continue
    out = f(*args)
    assert out.dtype == dtype, f"{name} ({mode}): dtype {out.dtype}, expected {dtype}"
    assert out.shape == expected.shape, f"{name} ({mode}): shape {out.shape}"
    np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=rtol,
                               atol=rtol * 1e-3, err_msg=f"{name} {dtype} ({mode})")


@pytest.mark.parametrize("name,sp_fn,samplers,shapes,rtol,order", CASES, ids=IDS)
def test_float32_matches_scipy(name, sp_fn, samplers, shapes, rtol, order):
  _check_values(name, sp_fn, _args(samplers, shapes, np.float32), rtol)


@pytest.mark.parametrize("name,sp_fn,samplers,shapes,rtol,order", CASES, ids=IDS)
def test_float64_matches_scipy(x64, name, sp_fn, samplers, shapes, rtol, order):
  rtol64 = 1e-10 if name not in ("log_ndtr", "gamma", "beta", "betaln") else 1e-9
  _check_values(name, sp_fn, _args(samplers, shapes, np.float64, seed=1), rtol64, ("jit",))


# Thin wrappers of lax primitives (erf, gammaln, …) have their rules tested with lax.
_COMPOSITIONS = {"gamma", "logit", "i0e", "i1e", "log_ndtr", "ndtri", "entr", "xlogy",
                 "xlog1py", "rel_entr", "betaln", "gammainc", "gammaincc", "kl_div", "boxcox",
                 "boxcox1p", "factorial", "comb", "poch", "loggamma"}
GRAD_CASES = [c for c in CASES if c[0] in _COMPOSITIONS]


@pytest.mark.parametrize("name,sp_fn,samplers,shapes,rtol,order", GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_grads(x64, name, sp_fn, samplers, shapes, rtol, order):
  """Finite differences in double precision (single precision's are too coarse for the
  second derivatives of the steep functions)."""
  args = _args(samplers, [(3,)] * len(samplers), np.float64, seed=2)
  if name == "ndtri":  # keep p +- the finite-difference step inside (0, 1)
    args = [np.array([1e-3, 0.2, 0.97])]
  check_grads(getattr(jsp, name), args, order=order, rtol=1e-4, atol=1e-6)


VMAP_CASES = [c for c in CASES if c[0] in ("i0e", "xlogy")]


@pytest.mark.parametrize("name,sp_fn,samplers,shapes,rtol,order", VMAP_CASES,
                         ids=[c[0] for c in VMAP_CASES])
def test_vmap(name, sp_fn, samplers, shapes, rtol, order):
  args = _args(samplers, [(2, 3)] * len(samplers), np.float32, seed=3)
  check_vmap(getattr(jsp, name), args, axes=(0,) if len(args) > 1 else (0, -1))


def test_integer_and_python_scalar_inputs():
  assert jsp.gammaln(3).dtype == np.float32
  np.testing.assert_allclose(jsp.gammaln(np.arange(1, 5)), osp.gammaln(np.arange(1, 5)),
                             rtol=1e-6, atol=1e-6)
  out = jsp.xlogy(2, np.float32(3.0))
  assert out.dtype == np.float32
  np.testing.assert_allclose(jsp.polygamma(np.array([0, 1, 3]), 2.5),
                             osp.polygamma([0, 1, 3], 2.5), rtol=1e-5)
  np.testing.assert_allclose(jsp.zeta(np.float32([2, 4])), osp.zeta([2, 4]), rtol=1e-6)
  np.testing.assert_allclose(jsp.multigammaln(np.float32([3, 7.5]), 3),
                             osp.multigammaln(np.array([3, 7.5]), 3), rtol=1e-5)


# ----------------------------------------------------------------------------- edge values

EDGES = [
    ("gamma", [[0.0, -0.0, -1.0, -2.0, -2.5, 171.5]]),
    ("digamma", [[0.0, -0.0, -1.0]]),
    ("gammaln", [[0.0, -1.0, 1.0, 2.0]]),
    ("log_ndtr", [[-np.inf, np.inf, -50.0, 40.0]]),
    ("ndtri", [[0.0, 1.0, -0.5, 1.5, 0.5, 1e-300]]),
    ("xlogy", [[0.0, 0.0, 0.0, 0.0, 1.0], [0.0, -1.0, np.inf, np.nan, 0.0]]),
    ("xlog1py", [[0.0, 0.0, 1.0], [-1.0, -2.0, -1.0]]),
    ("entr", [[0.0, -1.0, np.inf]]),
    ("rel_entr", [[0.0, 0.0, 1.0, -1.0], [0.0, -1.0, 0.0, 1.0]]),
    ("logit", [[0.0, 1.0, 0.5]]),
    ("gammainc", [[0.0, 0.0, -1.0, 1.0, 1.0, np.nan, 2.0, 3.0],
                  [0.0, 1.0, 1.0, -1.0, 0.0, 1.0, np.inf, 1e-30]]),
    ("gammaincc", [[0.0, 0.0, -1.0, 1.0, 1.0, np.nan, 2.0, 3.0],
                   [0.0, 1.0, 1.0, -1.0, 0.0, 1.0, np.inf, 1e-30]]),
    ("kl_div", [[0.0, 0.0, 1.0, -1.0, 2.0], [0.0, 3.0, 0.0, 1.0, -1.0]]),
    ("boxcox", [[0.0, 0.0, -1.0, 2.0, 2.0], [1.0, -1.0, 0.5, 0.0, 1e-20]]),
    ("boxcox1p", [[-1.0, -1.0, -2.0, 1e-10, 2.0], [1.0, -1.0, 0.5, 0.0, 1e-20]]),
    ("factorial", [[-1.0, -0.5, 0.0, 1.0, 10.0, 170.0]]),
    ("comb", [[5.0, 5.0, 5.0, -1.0, 0.0, 20.0], [6.0, -1.0, 0.0, 0.0, 0.0, 10.0]]),
    ("poch", [[2.0, 0.5, -1.5, 3.0], [0.0, 0.0, 2.0, -1.5]]),
    ("loggamma", [[0.0, -1.5, 1.0, 2.0, 1e-300]]),
]


@pytest.mark.parametrize("name,values", EDGES, ids=[e[0] for e in EDGES])
def test_edge_values(x64, name, values):
  args = [np.array(v) for v in values]
  expected = getattr(osp, name)(*args)
  out = np.asarray(getattr(jsp, name)(*args))
  np.testing.assert_allclose(out, expected, rtol=1e-10, err_msg=name)


def test_ndtri_is_jax_bit_for_bit():
  """Cephes' approximation as JAX 0.10.2 evaluates it: values bit for bit, gradients to the
  ulp (float32 bits recorded from JAX; the backward pass may sum cotangents in another
  order) in the middle, both tails and near the region boundaries."""
  p = np.float32([1e-30, 1e-10, 3e-4, 0.02, 0.1353, 0.2, 0.5, 0.77, 0.8647, 0.99, 1 - 3e-7])
  values = [3241634980, 3234566171, 3227230096, 3221450912, 3213689833, 3210179709, 0,
            1060971792, 1066206185, 1075110628, 1084211842]
  grads = [1871438020, 1320620690, 1147274666, 1101347379, 1083386153, 1080334909,
           1075866777, 1079166258, 1083386154, 1108743413, 1226713977]
  got, grad = jaxon.jit(lambda p: (jsp.ndtri(p), jaxon.grad(lambda p: jsp.ndtri(p).sum())(p)))(p)
  np.testing.assert_array_equal(np.asarray(got).view(np.uint32), values)
  np.testing.assert_allclose(grad, np.uint32(grads).view(np.float32), rtol=2.5e-7)
  with pytest.raises(TypeError, match="float32 or float64"):
    jsp.ndtri(np.array([1, 2]))


def test_tails_keep_relative_accuracy(x64):
  x = np.array([-35.0, -19.0, -5.0, 3.0, 9.0, 30.0])
  np.testing.assert_allclose(jsp.log_ndtr(x), osp.log_ndtr(x), rtol=1e-10)
  p = np.array([1e-200, 1e-50, 1e-8, 0.3, 0.8, 1 - 1e-9])
  np.testing.assert_allclose(jsp.ndtri(p), osp.ndtri(p), rtol=1e-9)
  a = np.array([0.5, 5.0, 300.0, 900.0, 20.0, 1.0])
  x = np.array([60.0, 80.0, 400.0, 1000.0, 30.0, 1e-3])
  np.testing.assert_allclose(jsp.gammaincc(a, x), osp.gammaincc(a, x), rtol=1e-9)
  np.testing.assert_allclose(jsp.gammainc(x, a), osp.gammainc(x, a), rtol=1e-9)


def test_finite_gradients_at_zero():
  """xlogy's and xlog1py's derivative in x at x = 0 is log(y) (log1p(y)), as in JAX."""
  np.testing.assert_allclose(jaxon.grad(jsp.xlogy)(0.0, 2.0), np.log(2.0), rtol=1e-6)
  np.testing.assert_allclose(jaxon.grad(jsp.xlogy, argnums=1)(0.0, 2.0), 0.0)
  np.testing.assert_allclose(jaxon.grad(jsp.xlog1py)(0.0, 2.0), np.log(3.0), rtol=1e-6)
  g = jaxon.grad(lambda x: jsp.xlogy(x, x))(0.0)
  assert np.isnan(g)  # JAX's rule: log(0) + 0/0, as JAX 0.10.2 gives
  np.testing.assert_allclose(jaxon.grad(jsp.i1e)(0.0), 0.5)
  np.testing.assert_allclose(jaxon.grad(jsp.i0e)(0.0), 0.0)


def test_gammainc_second_derivative_in_a_is_not_implemented():
  with pytest.raises(NotImplementedError, match="second derivatives in a"):
    jaxon.grad(jaxon.grad(jsp.gammainc))(2.0, 1.5)
  g = jaxon.grad(jaxon.grad(jsp.gammainc, argnums=1), argnums=1)(2.0, 1.5)
  np.testing.assert_allclose(g, (1 - 1.5) * np.exp(-1.5), rtol=1e-5)


def test_zeta_not_differentiable_in_x():
  with pytest.raises(NotImplementedError, match="first argument"):
    jaxon.grad(jsp.zeta)(2.0, 1.5)
  np.testing.assert_allclose(jaxon.grad(jsp.zeta, argnums=1)(3.0, 1.5),
                             -3 * osp.zeta(4.0, 1.5), rtol=1e-5)


# ----------------------------------------------------------------------------- logsumexp

@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_logsumexp_random(shape, data):
  """Random shapes, axes, keepdims and weights b (of either sign), under jit (the eager
  path is the same code, exercised by the tests below)."""
  ndim = len(shape)
  axis = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                             st.permutations(range(ndim)).map(lambda p: tuple(p[:2]))))
  keepdims = data.draw(st.booleans())
  with_b = data.draw(st.booleans())
  rng = np.random.RandomState(ndim)
  a = (rng.standard_normal(shape) * 10).astype(np.float32)
  b = rng.uniform(-1, 2, shape[-1:]).astype(np.float32) if with_b else None

  def f(a):
    return (jsp.logsumexp(a, axis, b=b, keepdims=keepdims, return_sign=True),
            jsp.logsumexp(a, axis, b=b, keepdims=keepdims))
  (out, sign), plain = jaxon.jit(f)(a)
  expected, expected_sign = osp.logsumexp(a.astype(np.float64), axis, b=b, keepdims=keepdims,
                                          return_sign=True)
  # Weights of both signs cancel: float32's rounding of the terms is then amplified by
  # sum(|terms|) / |sum(terms)|, the sum's condition number.
  magnitude = osp.logsumexp(a.astype(np.float64), axis, b=None if b is None else np.abs(b),
                            keepdims=keepdims)
  atol = 1e-5 * np.maximum(1.0, np.exp(magnitude - expected))
  for got, want in ((out, expected), (plain, np.where(expected_sign < 0, np.nan, expected))):
    assert np.isclose(got, want, rtol=1e-5, atol=atol, equal_nan=True).all(), (got, want)
  np.testing.assert_array_equal(sign, expected_sign)


def test_logsumexp_infinities_and_gradient():
  a = np.array([[1.0, -np.inf, 3.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0]],
               np.float32)
  np.testing.assert_allclose(jsp.logsumexp(a, axis=1), osp.logsumexp(a, axis=1))
  g = np.asarray(jaxon.grad(lambda a: jsp.logsumexp(a, axis=1)[0])(a))
  expected = np.exp(a[0] - osp.logsumexp(a[0]))
  np.testing.assert_allclose(g[0], expected, rtol=1e-6)
  # JAX 0.10.2's gradient where the maximum is infinite: 0 / 0 and inf / inf, even with a
  # zero cotangent
  np.testing.assert_array_equal(g[1:], [[np.nan] * 3, [np.nan, 0.0, 0.0]])
  masked = np.float32([[1.0, np.nan, 2.0], [0.0, 0.0, 0.0]])
  mask = np.array([[True, False, True], [False, False, False]])
  g = jaxon.grad(lambda a: jsp.logsumexp(a, axis=1, where=mask)[0])(masked)
  np.testing.assert_allclose(g, [[0.26894143, 0.0, 0.7310586], [0.0, 0.0, 0.0]], rtol=1e-6)
  big = np.array([1000.0, 1000.0, -1000.0], np.float32)
  np.testing.assert_allclose(jaxon.grad(jsp.logsumexp)(big), [0.5, 0.5, 0.0], atol=1e-7)
  check_grads(lambda a: jsp.logsumexp(a, axis=0, b=np.float32([1, 2, 0.5])),
              (np.float32([0.5, -1.0, 2.0]),), order=2)


def test_logsumexp_where_and_negative_sum():
  a = np.array([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]], np.float32)
  mask = np.array([[True, False, True], [False, False, False]])
  out = jsp.logsumexp(a, axis=1, where=mask)
  np.testing.assert_allclose(out[0], np.log(np.exp(1) + np.exp(3)), rtol=1e-6)
  assert np.isneginf(out[1])
  assert np.isnan(jsp.logsumexp(np.float32([0.0, 1.0]), b=np.float32([1.0, -1.0])))
  np.testing.assert_allclose(jsp.softmax(a, axis=1), osp.softmax(a, axis=1), rtol=1e-6)
  np.testing.assert_allclose(jsp.log_softmax(a), osp.log_softmax(a), rtol=1e-6)
  assert jnp.asarray(jsp.logsumexp(a)).shape == ()


def test_comb_and_factorial_options():
  N, k = np.array([5.0, 3.0, 0.0, 0.0]), np.array([2.0, 3.0, 0.0, 2.0])
  np.testing.assert_allclose(jsp.comb(N, k, repetition=True),
                             osp.comb(N, k, repetition=True), rtol=1e-5)
  for f, args in ((jsp.comb, (5, 2)), (jsp.factorial, (5,))):
    with pytest.raises(NotImplementedError, match="exact=True"):
      f(*args, exact=True)
  with pytest.raises(TypeError, match="complex"):
    jsp.loggamma(np.complex64(1 + 1j))
