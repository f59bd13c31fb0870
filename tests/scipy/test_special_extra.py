"""The special functions of `special_error`, `special_expint`, `special_hypergeometric` and
`special_orthogonal`: values against JAX 0.10.2's and SciPy's, custom derivatives by finite
differences (forward and reverse), vmap against a Python loop, and jit against eager."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp

import jaxon
import jaxon.scipy.special as jsp
from tests.conftest import flag_set
from tests.util import check_grads

# name -> (function, arguments); the arguments are cast to the dtype under test.
CASES = {
    "erfcx": (jsp.erfcx, ([-2., 0.3, 3., 12., 30.],)),
    "dawsn": (jsp.dawsn, ([-0.5, 1.2, 4., 7.],)),
    "owens_t": (jsp.owens_t, ([-1., 0.5, 2., 0.2], [0.5, 1., -3., 10.])),
    "expi": (jsp.expi, ([-3., 0.5, 3., 20., 80.],)),
    "exp1": (jsp.exp1, ([0.3, 1.5, 5.],)),
    "expn": (jsp.expn, ([0., 2., 3., 6000.], [0.5, 0.7, 1.5, 2.])),
    "sici_si": (lambda x: jsp.sici(x)[0], ([-3., 0.5, 6., 20.],)),
    "sici_ci": (lambda x: jsp.sici(x)[1], ([-3., 0.5, 6., 20.],)),
    "spence": (jsp.spence, ([0.3, 0.7, 1.7, 5.],)),
    "hyp1f1": (jsp.hyp1f1, ([0.5, 1., 2., 1.5], [1.5, 2., 3., 0.7], [0.3, -2., 5., 120.])),
    # The last three take the digamma transformation (x > 0.9, c - a - b an integer).
    "hyp2f1": (jsp.hyp2f1, ([0.5, -3., 2., 1., 1.5], [1.5, 2., 3., 1., 2.5],
                            [2.5, 1.5, 5., 4., 3.], [0.3, 0.4, 0.95, 0.95, 0.95])),
}

# Recorded from JAX 0.10.2 on CPU: jax.scipy.special.<name>(*CASES[name][1]) with the
# arguments as float32 arrays, and with x64 enabled as float64 arrays.
GOLDEN = {
    np.float32: {
        "erfcx": [108.94090270996094, 0.7345993518829346, 0.17900115251541138,
                  0.04685421660542488, 0.018795888870954514],
        "dawsn": [-0.42443639039993286, 0.5072734951972961, 0.1293479949235916,
                  0.07218097895383835],
        "owens_t": [0.04306468740105629, 0.10667106509208679, -0.011375066824257374,
                    0.21004071831703186],
        "expi": [-0.013048382475972176, 0.4542198181152344, 9.933832168579102, 25615650.0,
                 7.01460076789219e+32],
        "exp1": [0.9056766629219055, 0.10001958906650543, 0.0011482955887913704],
        "expn": [1.2130613327026367, 0.23494714498519897, 0.056739479303359985,
                 2.2552121663466096e-05],
        "sici_si": [-1.8486526012420654, 0.493107408285141, 1.4246876239776611,
                    1.5482417345046997],
        "sici_ci": [0.1196298599243164, -0.17778407037258148, -0.06805723905563354,
                    0.044419821351766586],
        "spence": [0.8893775939941406, 0.3261295557022095, -0.6051583290100098,
                   -2.3699398040771484],
        "hyp1f1": [1.1096822023391724, 0.43233242630958557, 47.572208404541016, np.inf],
        "hyp2f1": [1.108062505722046, 0.05097142606973648, 13.20882797241211,
                   1.4389485120773315, 30.949522018432617],
    },
    np.float64: {
        "erfcx": [108.94090438997797, 0.7345993345676551, 0.17900115118138998,
                  0.04685422101489376, 0.018795888861416754],
        "dawsn": [-0.4244363835020223, 0.5072734964077397, 0.1293480012360051,
                  0.0721809746582363],
        "owens_t": [0.04306469112078537, 0.10667106296144852, -0.011375065971545046,
                    0.2100407120168666],
        "expi": [-0.013048381094197046, 0.45421990486317354, 9.933832570625416,
                 25615652.664056588, 7.014600004904798e+32],
        "exp1": [0.9056766516758468, 0.1000195824066327, 0.001148295591275326],
        "expn": [1.2130613194252668, 0.23494711352795306, 0.05673949017035426,
                 2.2552120599773373e-05],
        "sici_si": [-1.848652527999468, 0.49310741804306674, 1.4246875512805064,
                    1.5482417010434397],
        "sici_ci": [0.11962978600800067, -0.17778407880661287, -0.06805724389324713,
                    0.04441982084535332],
        "spence": [0.8893776242860385, 0.3261295100754763, -0.6051584023377056,
                   -2.3699397969983655],
        "hyp1f1": [1.1096822789280743, 0.43233235838169376, 47.57221091282451,
                   8.82829700259429e+53],
        "hyp2f1": [1.1080625510569322, 0.05097142857142862, 13.208819466901172,
                   1.4389479423258897, 30.94952365643243],
    },
}

# SciPy's names for the same functions where SciPy computes them (float64 only).
SCIPY = {
    "erfcx": osp.erfcx, "dawsn": osp.dawsn, "owens_t": osp.owens_t, "expi": osp.expi,
    "exp1": osp.exp1, "expn": osp.expn, "sici_si": lambda x: osp.sici(x)[0],
    "sici_ci": lambda x: osp.sici(x)[1], "spence": osp.spence, "hyp1f1": osp.hyp1f1,
    "hyp2f1": osp.hyp2f1,
}
# hyp1f1 at x = 120 takes JAX's asymptotic series, a few float64 ulps off SciPy's result.
SCIPY_RTOL = {"hyp1f1": 1e-9, "hyp2f1": 1e-9, "owens_t": 1e-9}


def _args(name: str, dtype: type) -> list[np.ndarray]:
  return [np.array(a, dtype) for a in CASES[name][1]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name, dtype):
  with flag_set("jax_enable_x64", dtype == np.float64):
    out = CASES[name][0](*_args(name, dtype))
    assert out.dtype == dtype, name
    rtol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(np.asarray(out), GOLDEN[dtype][name], rtol=rtol,
                               err_msg=f"{name} {dtype.__name__}")


@pytest.mark.parametrize("name", sorted(SCIPY))
def test_matches_scipy(name, x64):
  args = _args(name, np.float64)
  np.testing.assert_allclose(np.asarray(CASES[name][0](*args)), SCIPY[name](*args),
                             rtol=SCIPY_RTOL.get(name, 1e-12), err_msg=name)


def test_wofz(x64):
  z = np.array([-3. + 1j, 0.3 + 0.1j, 2. - 0.5j, 0.7])
  # The first three from JAX 0.10.2 (x64): jax.scipy.special.wofz(z).
  expected = [0.06531777728904699 - 0.17391831541634895j,
              0.827246006914526 + 0.2695998870442915j,
              -0.12293249482276242 + 0.32755513633331274j]
  out = np.asarray(jsp.wofz(z))
  np.testing.assert_allclose(out[:3], expected, rtol=1e-13)
  np.testing.assert_allclose(out, osp.wofz(z), rtol=1e-12)
  np.testing.assert_allclose(np.asarray(jsp.erfcx(z)), osp.erfcx(z), rtol=1e-12)


def test_special_values(x64):
  nan, inf = np.nan, np.inf
  # E_n(0) is 1/(n-1) in SciPy; JAX 0.10.2 gives 1/n, and jaxon follows JAX.
  np.testing.assert_array_equal(jsp.expn(np.array([-1., 1., 2.]), np.array([1., 0., 0.])),
                                [nan, inf, 0.5])
  si, ci = jsp.sici(np.array([0., inf, -inf]))
  np.testing.assert_allclose(si, [0., np.pi / 2, -np.pi / 2])
  np.testing.assert_array_equal(ci, [-inf, 0., nan])
  np.testing.assert_allclose(jsp.spence(np.array([-1., 0., 1.])), [nan, np.pi ** 2 / 6, 0.])
  np.testing.assert_array_equal(jsp.hyp1f1(0., 0., 3.), 1.)  # SciPy gives inf
  np.testing.assert_array_equal(jsp.hyp2f1(1., 1., 2., 1.5), inf)


GRADS = [
    ("erfcx", jsp.erfcx, (0.7,)),
    ("dawsn", jsp.dawsn, (1.3,)),
    ("owens_t", jsp.owens_t, (0.6, 1.4)),
    ("wofz", jsp.wofz, (0.3 + 0.4j,)),
    ("expi", jsp.expi, (1.5,)),
    ("expn", lambda x: jsp.expn(3, x), (0.8,)),
    ("sici", jsp.sici, (2.5,)),
    ("hyp1f1", jsp.hyp1f1, (0.7, 1.6, 0.4)),
    ("hyp2f1", jsp.hyp2f1, (0.4, 0.8, 1.7, 0.3)),
]


@pytest.mark.parametrize("name,f,args", GRADS, ids=[g[0] for g in GRADS])
def test_custom_derivatives(name, f, args, x64):
  check_grads(f, args, order=1, modes=("fwd", "rev"), rtol=1e-5, atol=1e-7)


def test_vmap_and_jit_agree_with_eager(x64):
  a = np.array([0.5, 1.5, 2.0])
  x = np.array([0.4, 3.0, 150.0])
  looped = np.array([jsp.hyp1f1(ai, 1.2, xi) for ai, xi in zip(a, x)])
  np.testing.assert_allclose(jaxon.vmap(jsp.hyp1f1, (0, None, 0))(a, 1.2, x), looped,
                             rtol=1e-14)
  np.testing.assert_allclose(jaxon.jit(jsp.hyp1f1)(a, 1.2, x), looped, rtol=1e-14)
  n = np.array([1., 2., 5.])
  looped = np.array([jsp.expn(ni, xi) for ni, xi in zip(n, x)])
  np.testing.assert_allclose(jaxon.vmap(jsp.expn)(n, x), looped, rtol=1e-14)
  np.testing.assert_allclose(jaxon.jit(jsp.expn)(n, x), looped, rtol=1e-14)


def test_bessel_jn(x64):
  z = np.array([0.3, 1., 2.5, 7., 15.])
  out = jsp.bessel_jn(z, v=3)
  assert out.shape == (4, 5)
  np.testing.assert_allclose(out, osp.jv(np.arange(4)[:, None], z), rtol=1e-10, atol=1e-14)
  np.testing.assert_allclose(jaxon.jit(lambda z: jsp.bessel_jn(z, v=3))(z), out, rtol=1e-14)
  grad = jaxon.grad(lambda z: jsp.bessel_jn(z, v=1)[0])(2.5)  # J0' = -J1
  np.testing.assert_allclose(grad, -osp.j1(2.5), rtol=1e-10)


def test_sph_harm_y(x64):
  n = np.array([0, 1, 2, 3, 4, 3])
  m = np.array([0, -1, 2, 1, -3, 0])
  theta = np.array([0.3, 1.0, 2.0, 0.5, 1.5, 2.9])
  phi = np.array([0.1, 2.0, 4.0, 1.0, 5.0, 0.3])
  out = jsp.sph_harm_y(n, m, theta, phi)
  np.testing.assert_allclose(out, osp.sph_harm_y(n, m, theta, phi), rtol=1e-12, atol=1e-14)
  jitted = jaxon.jit(lambda t, p: jsp.sph_harm_y(n, m, t, p, n_max=4))(theta, phi)
  np.testing.assert_allclose(jitted, out, rtol=1e-14)


def test_bernoulli():
  np.testing.assert_allclose(jsp.bernoulli(10), osp.bernoulli(10), rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(jsp.bernoulli(1), [1., -0.5])


@pytest.mark.parametrize("f", [jsp.dawsn, jsp.expi, jsp.exp1, jsp.sici])
def test_complex_inputs_rejected(f):
  with pytest.raises(ValueError, match="complex"):
    f(np.array([1j]))
