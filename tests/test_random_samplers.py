"""The loop-drawn samplers of jaxon.random (`random_loops.py`) and `lax.random_gamma_grad`.

* Golden values: the first draws for PRNGKey(0), recorded once from JAX 0.10.2 (jax and
  jaxlib 0.10.2 on CPU, `np.asarray(sampler(...)).tolist()`) in both bit layouts of
  `jax_threefry_partitionable`; they must match bit for bit (gradients to a few ulps: XLA
  may fuse the per-element gradient loop differently).
* Distributions: means and variances of a few thousand draws against scipy.
* vmap over keys == stacking single draws; jit == eager; gamma's implicit gradient against
  JAX and against finite differences of the CDF; the errors JAX raises.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp
import scipy.stats as ost

import jaxon
import jaxon.numpy as jnp
from jaxon import random
from jaxon._src import dtypes
from tests.conftest import flag_set

KEY = random.PRNGKey(0)


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def layout(request):
  with flag_set("jax_threefry_partitionable", request.param):
    yield request.param


# ----------------------------------------------------------------------------- golden values

# name -> (sampler of a key, {partitionable: JAX 0.10.2's values}).
GOLDEN = {
    "gamma": (lambda k: random.gamma(k, jnp.array([0.5, 2.0, 9.0])),
              {True: [0.8845648169517517, 1.7599413394927979, 7.351254463195801],
               False: [0.1400693953037262, 1.4034603834152222, 7.3845648765563965]}),
    "gamma_f16": (lambda k: random.gamma(k, jnp.array([0.5, 2.0]), dtype=jnp.float16),
                  {True: [0.052215576171875, 0.9580078125],
                   False: [0.9970703125, 1.8544921875]}),
    "gamma_bf16": (lambda k: random.gamma(k, jnp.array([0.5, 2.0]), dtype=jnp.bfloat16),
                   {True: [0.0286865234375, 3.015625], False: [1.703125, 1.3515625]}),
    "loggamma": (lambda k: random.loggamma(k, jnp.array([0.01, 2.0])),
                 {True: [-11.478927612304688, 0.5652804970741272],
                  False: [-32.42397689819336, 0.8834221959114075]}),
    "beta": (lambda k: random.beta(k, 0.5, 2.0, (2,)),
             {True: [0.18802259862422943, 0.028096942231059074],
              False: [0.016205061227083206, 0.6993507146835327]}),
    "dirichlet": (lambda k: random.dirichlet(k, jnp.array([1.0, 2.0, 3.0])),
                  {True: [0.14228560030460358, 0.40488260984420776, 0.45283177495002747],
                   False: [0.04963463544845581, 0.39360329508781433, 0.5567620396614075]}),
    "poisson": (lambda k: random.poisson(k, jnp.array([3.0, 40.0])),
                {True: [0, 37], False: [3, 40]}),
    "binomial": (lambda k: random.binomial(k, jnp.array([10., 100.]), 0.3),
                 {True: [2.0, 28.0], False: [2.0, 30.0]}),
    "t": (lambda k: random.t(k, 3.0, (2,)),
          {True: [0.6902246475219727, -3.2393364906311035],
           False: [-0.030569948256015778, -2.3325908184051514]}),
    "chisquare": (lambda k: random.chisquare(k, 3.0, (2,)),
                  {True: [2.2050840854644775, 2.489966869354248],
                   False: [3.8422465324401855, 3.6238317489624023]}),
    "f": (lambda k: random.f(k, 2.0, 5.0, (2,)),
          {True: [2.876065492630005, 0.04095017910003662],
           False: [4.636630535125732, 0.016385534778237343]}),
    "multinomial": (lambda k: random.multinomial(k, 20., jnp.array([0.2, 0.3, 0.5])),
                    {True: [1.0, 6.0, 13.0], False: [4.0, 4.0, 12.0]}),
    "generalized_normal": (lambda k: random.generalized_normal(k, 1.5, (2,)),
                           {True: [1.0603917837142944, 0.08920828253030777],
                            False: [-0.2996067404747009, 1.0520553588867188]}),
    "ball": (lambda k: random.ball(k, 2, 1.0, (1,)),
             {True: [[0.6340225338935852, 0.3605864346027374]],
              False: [[-0.3451389670372009, 0.40080487728118896]]}),
    "gumbel_high": (lambda k: random.gumbel(k, (2,), mode="high"),
                    {True: [-1.0818486213684082, -1.3463637828826904],
                     False: [-1.2124269008636475, 1.366109848022461]}),
    "gumbel_highest": (lambda k: random.gumbel(k, (2,), mode="highest"),
                       {True: [-1.081849217414856, -1.3463642597198486],
                        False: [-1.2124272584915161, 1.3661094903945923]}),
}


@pytest.mark.parametrize("name", list(GOLDEN))
def test_golden_values(name, layout):
  sampler, expected = GOLDEN[name]
  out = sampler(KEY)
  want = np.asarray(expected[layout], np.asarray(out).dtype)
  np.testing.assert_array_equal(np.asarray(out), want, err_msg=f"{name}, layout {layout}")


def test_golden_values_x64(layout, x64):
  """float64 gamma and int64 Poisson (the defaults with 64-bit types on)."""
  want_gamma = {True: [0.09805368679632306, 1.124359450100187],
                False: [0.6037497407150969, 2.0223516020807013]}
  np.testing.assert_array_equal(random.gamma(KEY, jnp.array([0.5, 2.0])), want_gamma[layout])
  counts = random.poisson(KEY, jnp.array([3.0, 40.0]))
  assert counts.dtype == np.int64
  np.testing.assert_array_equal(counts, {True: [0, 37], False: [3, 40]}[layout])


def test_gamma_gradient_golden(layout):
  """d sample / d a through random_gamma's JVP (JAX 0.10.2's values)."""
  want = {True: [1.7750096321105957, 1.0179104804992676, 0.9190714359283447],
          False: [0.6353822350502014, 0.904150128364563, 0.9212221503257751]}
  want_log = {True: [2.0066473484039307, 0.5783774852752686],
              False: [1.8788045644760132, 0.4932258427143097]}
  grad = jaxon.grad(lambda a: random.gamma(KEY, a).sum())(jnp.array([0.5, 2.0, 9.0]))
  np.testing.assert_allclose(grad, want[layout], rtol=1e-6)
  grad = jaxon.grad(lambda a: random.loggamma(KEY, a).sum())(jnp.array([0.5, 2.0]))
  np.testing.assert_allclose(grad, want_log[layout], rtol=1e-6)


def test_random_gamma_grad_golden():
  out = jaxon.lax.random_gamma_grad(jnp.array([0.5, 2.0, 9.0]), jnp.array([0.3, 3.0, 8.0]))
  np.testing.assert_array_equal(out, np.float32([1.009802222251892, 1.3217979669570923,
                                                 0.9598745703697205]))


# ----------------------------------------------------------------------------- random_gamma_grad


def test_random_gamma_grad_matches_cdf_finite_differences():
  """x(a) = F^-1(u; a) at fixed u moves as dx/da = -(dF/da) / (dF/dx)."""
  a = np.array([0.1, 0.5, 1.0, 2.5, 10.0, 3.0, 100.0])
  x = np.array([0.05, 0.3, 1.0, 4.0, 9.0, 1e-3, 95.0])
  h = 1e-6 * a
  dcdf_da = (osp.gammainc(a + h, x) - osp.gammainc(a - h, x)) / (2 * h)
  want = -dcdf_da / ost.gamma.pdf(x, a)
  with flag_set("jax_enable_x64", True):
    got = np.asarray(jaxon.lax.random_gamma_grad(jnp.asarray(a), jnp.asarray(x)))
  np.testing.assert_allclose(got, want, rtol=1e-5)


def test_random_gamma_grad_edge_values():
  out = np.asarray(jaxon.lax.random_gamma_grad(jnp.array([-1.0, 1.0, np.nan, 2.0]),
                                               jnp.array([1.0, -1.0, 1.0, 0.0])))
  np.testing.assert_array_equal(out, [np.nan, np.nan, np.nan, 0.0])
  half = jaxon.lax.random_gamma_grad(jnp.array([2.0], jnp.float16), jnp.array([1.5], jnp.float16))
  assert half.dtype == np.float16


def test_gamma_gradient_of_the_mean():
  """E[x] = a for Gamma(a), so the mean of d x / d a over many draws is 1."""
  grads = jaxon.grad(lambda a: random.gamma(KEY, a, (2000,)).mean())(jnp.float32(1.7))
  assert abs(float(grads) - 1.0) < 0.05


# ----------------------------------------------------------------------------- distributions

N = 4000


@pytest.mark.parametrize("name, draw, dist", [
    ("gamma", lambda k: random.gamma(k, 0.7, (N,)), ost.gamma(0.7)),
    ("loggamma", lambda k: jnp.exp(random.loggamma(k, 3.0, (N,))), ost.gamma(3.0)),
    ("beta", lambda k: random.beta(k, 2.0, 5.0, (N,)), ost.beta(2.0, 5.0)),
    ("t", lambda k: random.t(k, 8.0, (N,)), ost.t(8.0)),
    ("chisquare", lambda k: random.chisquare(k, 4.0, (N,)), ost.chi2(4.0)),
    ("f", lambda k: random.f(k, 6.0, 12.0, (N,)), ost.f(6.0, 12.0)),
    ("poisson_knuth", lambda k: random.poisson(k, 4.0, (N,)), ost.poisson(4.0)),
    ("poisson_rejection", lambda k: random.poisson(k, 50.0, (N,)), ost.poisson(50.0)),
    ("binomial_inversion", lambda k: random.binomial(k, 20., 0.2, (N,)), ost.binom(20, 0.2)),
    ("binomial_btrs", lambda k: random.binomial(k, 200., 0.6, (N,)), ost.binom(200, 0.6)),
    ("generalized_normal", lambda k: random.generalized_normal(k, 3.0, (N,)),
     ost.gennorm(3.0)),
])
def test_moments(name, draw, dist):
  x = np.asarray(draw(random.PRNGKey(1)), np.float64)
  mean, var = dist.stats()
  assert abs(x.mean() - mean) < 5 * np.sqrt(var / N), name
  assert abs(x.var() / var - 1) < 0.15, name


def test_simplex_samplers():
  alpha = jnp.array([0.5, 2.0, 4.0])
  d = np.asarray(random.dirichlet(random.PRNGKey(2), alpha, (N,)), np.float64)
  np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-5)
  np.testing.assert_allclose(d.mean(0), np.asarray(alpha) / 6.5, atol=0.01)
  m = np.asarray(random.multinomial(random.PRNGKey(3), 30., jnp.array([0.1, 0.3, 0.6]),
                                    shape=(N, 3)))
  np.testing.assert_array_equal(m.sum(-1), 30)
  np.testing.assert_allclose(m.mean(0), [3, 9, 18], rtol=0.03)
  b = np.asarray(random.ball(random.PRNGKey(4), 3, 2.0, (N,)))
  assert (np.linalg.norm(b, axis=-1) <= 1).all()
  np.testing.assert_allclose((np.linalg.norm(b, axis=-1) ** 3).mean(), 0.5, atol=0.02)


def test_gumbel_modes_are_gumbel():
  for mode in ("high", "highest"):
    g = np.asarray(random.gumbel(random.PRNGKey(5), (N,), mode=mode), np.float64)
    assert abs(g.mean() - np.euler_gamma) < 0.06, mode


def test_binomial_edge_parameters():
  out = np.asarray(random.binomial(KEY, jnp.array([-1., np.inf, 10., 10., 0., 7.5, 6.]),
                                   jnp.array([0.5, 0.5, np.nan, -0.1, 0.5, 1.0, 0.0])))
  np.testing.assert_array_equal(out, [np.nan, np.inf, np.nan, np.nan, 0., 7., 0.])
  assert (np.asarray(random.poisson(KEY, jnp.zeros(3))) == 0).all()


# ----------------------------------------------------------------------------- transformations


def test_vmap_over_keys_equals_stacking():
  keys = random.split(KEY, 3)
  a = jnp.array([0.5, 2.0])
  batched = jaxon.vmap(lambda k: random.gamma(k, a))(keys)
  np.testing.assert_array_equal(batched, np.stack([random.gamma(k, a) for k in keys]))
  batched = jaxon.vmap(lambda k, lam: random.poisson(k, lam, (2,)))(keys, jnp.array([2., 3., 30.]))
  np.testing.assert_array_equal(batched, np.stack(
      [random.poisson(k, lam, (2,)) for k, lam in zip(keys, [2., 3., 30.])]))


def test_vmap_over_parameters_equals_stacking():
  a = jnp.array([0.5, 2.0, 9.0])
  batched = jaxon.vmap(lambda a: random.gamma(KEY, a, (2,)))(a)
  np.testing.assert_array_equal(batched, np.stack([random.gamma(KEY, ai, (2,)) for ai in a]))
  n = jnp.array([5., 50.])
  batched = jaxon.vmap(lambda n: random.binomial(KEY, n, 0.4, (3,)))(n)
  np.testing.assert_array_equal(batched, np.stack([random.binomial(KEY, ni, 0.4, (3,))
                                                   for ni in n]))


def test_jit_equals_eager():
  a, b = jnp.array([0.5, 2.0, 5.0]), jnp.array([3.0, 1.0, 0.2])
  eager = random.beta(KEY, a, b)
  np.testing.assert_array_equal(jaxon.jit(random.beta)(KEY, a, b), eager)
  eager = random.poisson(KEY, a * 10)
  np.testing.assert_array_equal(jaxon.jit(random.poisson)(KEY, a * 10), eager)


def test_random_gamma_primitive_rules():
  """The primitive's abstract eval keeps a's aval; batching puts the key batch first. As
  in JAX, the primitive takes typed keys."""
  a = jnp.array([[0.5, 1.5]])
  key = random.wrap_key_data(KEY)
  aval = jaxon.eval_shape(lambda k, a: random.random_gamma_p.bind(k, a, log_space=False),
                          key, a)
  assert (aval.shape, aval.dtype) == ((1, 2), np.float32)
  keys = random.split(key, 2)
  out = jaxon.vmap(lambda k: random.random_gamma_p.bind(k, a[0], log_space=False))(keys)
  want = np.stack([random.random_gamma_p.bind(k, a[0], log_space=False) for k in keys])
  np.testing.assert_array_equal(out, want)


# ----------------------------------------------------------------------------- errors


def test_errors():
  with pytest.raises(ValueError, match="must be a float dtype"):
    random.gamma(KEY, 1.0, dtype=jnp.int32)
  with pytest.raises(ValueError, match="must be an int dtype"):
    random.poisson(KEY, 1.0, dtype=jnp.float32)
  with pytest.raises(ValueError, match="broadcast-compatible"):
    random.gamma(KEY, jnp.ones(3), (2,))
  with pytest.raises(ValueError, match="broadcast-compatible"):
    random.beta(KEY, jnp.ones(3), 1.0, (2,))
  with pytest.raises(dtypes.TypePromotionError, match="cannot safely cast"):
    random.beta(KEY, jnp.ones(2), 1.0, dtype=jnp.float16)
  with pytest.raises(ValueError, match="alpha.ndim >= 1"):
    random.dirichlet(KEY, 1.0)
  with pytest.raises(ValueError, match="single key"):
    random.gamma(random.split(KEY), 1.0)
  with pytest.raises(ValueError, match="valid mode for gumbel"):
    random.gumbel(KEY, mode="mid")
  with pytest.raises(TypeError, match="random_gamma_grad does not accept"):
    jaxon.lax.random_gamma_grad(jnp.int32(1), jnp.int32(1))
