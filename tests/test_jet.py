"""jaxon.experimental.jet: Taylor-mode differentiation.

Oracles: golden values recorded from JAX 0.10.2 (`jax.experimental.jet.jet`) for
compositions of the nonlinear rules, orders 1 to 4; and nested `jvp` along a parabola,
`d^k/dt^k f(x + t v + t^2/2 w)` at 0 (what `jet(f, (x,), ((v, w),))` returns), for the
piecewise, indexing, cumulative and custom-derivative rules. Each case compiles once: the
jet and its oracle run in one `jit`.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon.experimental.jet import jet, jet2

X3 = np.array([0.3, -0.8, 1.1], np.float32)
V3 = np.array([1.0, 0.5, -0.5], np.float32)
W3 = np.array([0.2, 0.1, 0.3], np.float32)
MATRIX = np.array([[1., 2., -1.], [0.5, -0.3, 2.]], np.float32)


def _sum_of_nonlinear_vector_ops(x):
  y = MATRIX @ x
  return (jnp.sum(y ** 2) + jnp.max(x) + jnp.cumsum(x)[-1] * x[jnp.array([2, 0])].sum()
          + jnp.where(x > 0, x, jnp.expm1(x)).sum())


# (name, function, primals, series, expected primal, expected terms, whether weakly typed):
# the values are JAX 0.10.2's.
GOLDEN = [
    ("sin_exp_order4", lambda x: jnp.sin(x) * jnp.exp(x), (0.7,), ((1.0, 0.5, -0.3, 0.2),),
     1.2972951, [2.8374982, 4.499156, 4.255178, -4.5504208], True),
    ("log1p_div_tanh_logistic",
     lambda x, y: jnp.log1p(x * x) / (1 + y) + jnp.tanh(x) * jaxon.nn.sigmoid(y),
     (0.4, -0.3), ((1.0, 0.5, 0.25), (-1.0, 0.3, 0.1)),
     0.37371868, [1.5593615, 5.3943987, 21.963179], True),
    ("pow_sqrt_rsqrt_erf",
     lambda x: x ** 2.5 + x ** 3 + jnp.sqrt(x) - lax.rsqrt(x) + lax.erf(x),
     (1.3,), ((0.6, -0.4, 0.9),), 5.3210216, [5.855782, 0.047659438, 2.94964], False),
    ("matmul_max_cumsum_gather_where", _sum_of_nonlinear_vector_ops, (X3,), ((V3, W3),),
     15.257431, [-13.442336, 19.432867], False),
    ("atan2_erf_inv_inverse_hyperbolic",
     lambda x, y: (lax.atan2(x, y) + lax.erf_inv(x * 0.5) + jnp.arcsinh(x)
                   + jnp.arccosh(1 + x * x) + jnp.arctanh(x * 0.5)
                   + jnp.cosh(y) * jnp.sinh(x) + jnp.log(y)),
     (0.6, 1.7), ((0.5, 0.2, -0.1), (1.0, 0.0, 0.3)),
     4.6463227, [5.6189914, 6.257831, 11.030581], False),
    ("nested_jit", jaxon.jit(lambda x: jnp.sin(x) * x), (1.2,), ((1.0, 2.0),),
     1.118447, [1.3668684, 2.340005], True),
]


@pytest.mark.parametrize("name,fun,primals,series,primal,terms,weak", GOLDEN,
                         ids=[case[0] for case in GOLDEN])
def test_jet_matches_jax_golden_values(name, fun, primals, series, primal, terms, weak):
  out_primal, out_terms = jet(fun, primals, series)
  np.testing.assert_allclose(out_primal, primal, rtol=1e-6, err_msg=name)
  np.testing.assert_allclose(out_terms, terms, rtol=2e-5, err_msg=name)
  assert [t.weak_type for t in out_terms] == [weak] * len(terms), name


def test_jet2_takes_and_returns_plain_taylor_coefficients():
  # JAX 0.10.2: jet2(lambda x: exp(x) * x, (0.5,), ((1.0, 0.5, 0.25),)).
  primal, terms = jet2(lambda x: jnp.exp(x) * x, (0.5,), ((1.0, 0.5, 0.25),))
  np.testing.assert_allclose(primal, 0.8243606, rtol=1e-6)
  np.testing.assert_allclose(terms, [2.4730818, 3.2974424, 3.640926], rtol=1e-5)


def _curve_derivatives(f, x, series):
  """`d^k/dt^k f(x + sum_j t^j / j! series[j-1])` at t = 0, k = 1..K, by nested jvp."""
  def along_curve(t):
    point, power = x, 1.0
    for j, term in enumerate(series, start=1):
      power = power * t / j
      point = point + power * term
    return f(point)
  derivatives, g = [], along_curve
  for _ in series:
    g = (lambda h: lambda t: jaxon.jvp(h, (t,), (jnp.ones_like(t),))[1])(g)
    derivatives.append(g(jnp.zeros((), np.float32)))
  return derivatives


def _piecewise(x):
  return (jnp.abs(x) * jaxon.nn.relu(x) + jnp.clip(x, -0.5, 0.5) + jnp.maximum(x, 0.2)
          + jnp.minimum(0.2, x) + lax.clamp(-1.0, x, 1.0) + jnp.sign(x) * x)


def _indexing(x):
  updated = lax.dynamic_update_slice(x, x[:1] ** 2, (2,))
  scattered = x.at[np.array([0, 0, 2])].add(x * x)
  outer = jnp.concatenate([x, x * x])[:, None] * x[None, :]
  return (lax.dynamic_slice(updated, (1,), (2,)).sum() + scattered
          + jnp.dot(outer.T, jnp.ones(6, np.float32)) + x[::-1] * jnp.flip(x))


def _cumulative(x):
  return (lax.cummax(x) * jnp.cumprod(x) + jnp.min(x * x)
          + jnp.sum(jnp.cumsum(x * x)))


def _special(x):
  y = jnp.array([1.5, 2.0, 0.5], np.float32)
  return (jnp.tan(x) + jnp.square(x) + x ** -2 + lax.integer_pow(x, 0) + lax.erfc(x)
          + lax.rem(x, 0.7) + jnp.abs(x) ** y + jnp.cos(x) / jnp.cosh(x))


def _custom_rules(x):
  return (jaxon.nn.softplus(x) + jaxon.nn.logsumexp(x * x) + jaxon.nn.gelu(x)
          + jaxon.jit(lambda y: jaxon.jit(jnp.tanh)(y) * y)(x))


CURVE_CASES = {"piecewise": _piecewise, "indexing": _indexing, "cumulative": _cumulative,
               "special": _special, "custom_jvp_and_jit": _custom_rules}


@pytest.mark.parametrize("name", sorted(CURVE_CASES))
def test_jet_matches_nested_jvp_along_a_curve(name):
  f = CURVE_CASES[name]

  @jaxon.jit
  def both(x, v, w):
    return jet(f, (x,), ((v, w),))[1], _curve_derivatives(f, x, (v, w))
  terms, expected = both(X3, V3, W3)
  for k, (got, want) in enumerate(zip(terms, expected), start=1):
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4,
                               err_msg=f"{name}: term {k}")


def test_jet_under_jit_vmap_and_grad():
  f = lambda x: jnp.sin(x) * jnp.exp(x)
  series = ((1.0, 0.5, -0.3),)
  eager = jet(f, (0.7,), series)
  jitted = jaxon.jit(lambda x: jet(f, (x,), series))(0.7)
  np.testing.assert_allclose(jitted[1], eager[1], rtol=1e-6)

  xs = np.array([0.1, 0.7, -1.2], np.float32)
  batched = jaxon.vmap(lambda x: jet(f, (x,), series)[1])(xs)
  np.testing.assert_allclose(np.stack(batched, axis=1),
                             [jet(f, (x,), series)[1] for x in xs], rtol=1e-5)
  # jet of a vmapped function maps each example's series.
  inside = jet(jaxon.vmap(f), (xs,), ((np.ones(3, np.float32),) * 3,))[1]
  np.testing.assert_allclose(np.stack(inside, axis=1),
                             [jet(f, (x,), ((1.0,) * 3,))[1] for x in xs], rtol=1e-5)

  # The second term of sin along v = 1 is -sin; its derivative is -cos.
  third = jaxon.grad(lambda x: jet(jnp.sin, (x,), ((1.0, 0.0),))[1][1])(0.4)
  np.testing.assert_allclose(third, -np.cos(0.4), rtol=1e-6)
  # A jet inside a jet: the derivative of the first term (cos) is -sin.
  outer = jet(lambda x: jet(jnp.sin, (x,), ((1.0,),))[1][0], (0.4,), ((1.0,),))[1][0]
  np.testing.assert_allclose(outer, -np.sin(0.4), rtol=1e-6)


def test_jet_of_jit_stays_one_jitted_call_and_reads_back():
  jaxpr = jaxon.make_jaxpr(lambda x: jet(jaxon.jit(jnp.sin), (x,), ((x, x),)))(1.0)
  text = str(jaxpr)
  assert [e.primitive.name for e in jaxpr.eqns].count("pjit") == 1, text


def test_outputs_the_inputs_do_not_reach_get_zero_terms():
  # JAX 0.10.2 returns the Python float as it is and weak float32 zero terms.
  primals, terms = jet(lambda x: (x, 3.0), (1.0,), ((1.0, 2.0),))
  assert primals == (1.0, 3.0)
  np.testing.assert_array_equal(terms[1], [0.0, 0.0])
  assert terms[1][0].weak_type
  assert jet(jnp.sin, (1.0,), ((),))[1] == []


@pytest.mark.parametrize("primals,series,error,match", [
    ((1.0, 2.0), ((1.0,), (1.0, 2.0)), ValueError, "inconsistent lengths"),
    (((1.0, 2.0),), ((1.0,),), ValueError, "primal value at position 0 is not an array"),
    ((1.0,), (((1.0, 2.0),),), ValueError, "term 0 for argument 0 is not an array"),
    ((1.0, 2.0), ((1.0,),), TypeError, "2 primals but series for 1"),
])
def test_bad_arguments_are_rejected(primals, series, error, match):
  with pytest.raises(error, match=match):
    jet(lambda *xs: sum(xs), primals, series)


@pytest.mark.parametrize("fun,name", [
    (lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, x), "while"),
    (lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), "cond"),
])
def test_primitives_without_a_rule_raise(fun, name):
  with pytest.raises(NotImplementedError, match=f"Jet rule .* for '{name}'"):
    jet(fun, (1.0,), ((1.0,),))


def test_branching_on_a_jet_tracer_is_a_concretization_error():
  with pytest.raises(jaxon.errors.TracerBoolConversionError):
    jet(lambda x: x if x > 0 else -x, (1.0,), ((1.0,),))
