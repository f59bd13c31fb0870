"""The special functions computed with loops (`lax.igamma`, `igammac`, `igamma_grad_a`,
`betainc`, whose series and continued fractions run in `while_loop`s, and `bessel_i0e`):
values against JAX 0.10.2's and SciPy's, derivatives by finite differences, vmap against a
loop and jit against eager."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp

import jaxon
import jaxon.scipy.special as jsp
from jaxon import lax
from tests.conftest import flag_set
from tests.util import check_grads

_A = [0.1, 0.5, 2.5, 7.0, 30.0, 150.0]
_X = [0.2, 3.0, 0.5, 9.0, 25.0, 160.0]
_B_X = [0.1, 0.5, 0.9, 0.3, 0.99, 0.7]  # betainc(a + 0.5, x + 0.3, _B_X)

# Recorded from JAX 0.10.2 on CPU (jax.lax.<name>(a, x), x64 enabled for float64).
GOLDEN = {
    np.float32: {
        "igamma": [0.87941957, 0.9856941, 0.037434228, 0.79321945, 0.18210234, 0.79561377],
        "igammac": [0.120580435, 0.014305881, 0.9625658, 0.20678058, 0.8178977, 0.20438625],
        "igamma_grad_a": [-1.1828682, -0.04724033, -0.068855576, -0.10549924, -0.049954448,
                          -0.02293029],
        "betainc": [0.15385929, 0.89846843, 0.6349671, 0.10979022, 1.0, 1.0],
    },
    np.float64: {
        "igamma": [0.8794196267900568, 0.9856941215645704, 0.0374342267527036,
                   0.7932191601400129, 0.18210391597745862, 0.7956261882343396],
        "igammac": [0.12058037320994319, 0.014305878435429641, 0.9625657732472964,
                    0.2067808398599871, 0.8178960840225413, 0.20437381176566036],
        "igamma_grad_a": [-1.1828680306527426, -0.04724032644797377, -0.068855592360964,
                          -0.10549943367004846, -0.04995487742583563, -0.02292871396644558],
        "betainc": [0.15385936105742226, 0.8984684504554706, 0.6349673999123557,
                    0.10979086805366434, 1.0, 0.9999999999999988],
    },
}


def _args(name: str, dtype: type) -> list[np.ndarray]:
  a, x = np.array(_A, dtype), np.array(_X, dtype)
  if name == "betainc":
    return [a + dtype(0.5), x + dtype(0.3), np.array(_B_X, dtype)]
  return [a, x]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["igamma", "igammac", "igamma_grad_a", "betainc"])
def test_matches_jax(name, dtype):
  with flag_set("jax_enable_x64", dtype == np.float64):
    args = _args(name, dtype)
    fn = getattr(lax, name)
    out = fn(*args)
    assert out.dtype == dtype, f"{name} {dtype.__name__}: dtype {out.dtype}"
    # Same algorithm as JAX's: agreement to a few ulps (in practice bitwise).
    rtol = 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(out, GOLDEN[dtype][name], rtol=rtol, err_msg=f"{name} {dtype}")
    np.testing.assert_array_equal(jaxon.jit(fn)(*args), out, err_msg=f"{name} jit vs eager")


@pytest.mark.parametrize("name, oracle", [
    ("gammainc", osp.gammainc), ("gammaincc", osp.gammaincc), ("betainc", osp.betainc)])
def test_matches_scipy_float64(name, oracle):
  with flag_set("jax_enable_x64", True):
    rng = np.random.RandomState(0)
    a = np.exp(rng.uniform(np.log(0.05), np.log(200.0), 40))
    args = [a, a * rng.uniform(0.2, 2.0, 40)]
    if name == "betainc":
      args = [a, a[::-1], rng.uniform(0, 1, 40)]
    np.testing.assert_allclose(getattr(jsp, name)(*args), oracle(*args), rtol=1e-12,
                               atol=1e-300, err_msg=name)


def test_edges_match_scipy():
  nan, inf = np.nan, np.inf
  a = np.array([0.0, 0.0, 1.0, -1.0, 1.0, nan, 2.0])
  x = np.array([0.0, 1.0, 0.0, 1.0, inf, 1.0, -1.0])
  np.testing.assert_allclose(jsp.gammainc(a, x), osp.gammainc(a, x), err_msg="gammainc")
  np.testing.assert_allclose(jsp.gammaincc(a, x), osp.gammaincc(a, x), err_msg="gammaincc")
  ba = np.array([0.0, 1.0, 2.0, -1.0, 2.0, 2.0])
  bb = np.array([1.0, 0.0, 3.0, 1.0, 3.0, 3.0])
  bx = np.array([0.5, 0.5, 0.0, 0.5, 1.0, 1.5])
  np.testing.assert_allclose(jsp.betainc(ba, bb, bx), osp.betainc(ba, bb, bx),
                             err_msg="betainc edges")


def test_bessel_i0e_matches_scipy():
  x = np.array([0.0, 0.5, -3.0, 8.0, 8.5, 40.0, -100.0, 1e4])
  np.testing.assert_allclose(lax.bessel_i0e(x.astype(np.float32)), osp.i0e(x), rtol=2e-6)
  with flag_set("jax_enable_x64", True):
    np.testing.assert_allclose(lax.bessel_i0e(x), osp.i0e(x), rtol=1e-15)


def test_gammasgn_matches_scipy():
  x = np.array([-np.inf, -2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 3.0, np.inf, np.nan, -3.0])
  np.testing.assert_array_equal(jsp.gammasgn(x), osp.gammasgn(x))


def test_derivatives():
  a, x = np.array([0.7, 3.0, 12.0]), np.array([0.4, 5.0, 10.0])
  with flag_set("jax_enable_x64", True):
    check_grads(lambda x: jsp.gammainc(a, x), [x], order=2)
    check_grads(lambda a: jsp.gammaincc(a, x), [a], order=1)
    check_grads(lambda x: jsp.betainc(a, a + 1.0, x), [np.array([0.2, 0.5, 0.8])], order=2)
  with pytest.raises(ValueError, match="only with respect to x"):
    jaxon.grad(lambda a: jsp.betainc(a, 2.0, 0.5))(1.0)


@pytest.mark.parametrize("name", ["igamma_grad_a", "betainc"])
def test_vmap_matches_loop(name):
  """Under vmap the loops run until every example has converged; each keeps its value."""
  fn = getattr(lax, name)
  args = [x[:4] for x in _args(name, np.float32)]
  looped = np.stack([fn(*(x[i] for x in args)) for i in range(4)])
  np.testing.assert_allclose(jaxon.vmap(fn)(*args), looped, rtol=1e-6, err_msg=name)


def test_float16_is_computed_in_float32():
  a, x = np.float16(2.5), np.float16(0.5)
  out = lax.igamma(a, x)
  assert out.dtype == np.float16
  np.testing.assert_allclose(out, osp.gammainc(2.5, 0.5), rtol=1e-3)
