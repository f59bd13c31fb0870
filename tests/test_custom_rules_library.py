"""Library functions that JAX differentiates with custom rules (jax.nn.relu, relu6,
log1mexp; jnp.logaddexp, logaddexp2, sinc; jnp.linalg.det, slogdet, pinv) have the same
derivatives as JAX's, above all at the points where the rule and the formula disagree.

Golden values were recorded from JAX 0.10.2 (CPU, float32, x64 off) by evaluating the same
expressions with `jax` in place of `jaxon` (`jax.vmap(jax.grad(f))(xs)` and so on). Each
edge table is checked eagerly, under `vmap`, and under `jit(vmap(...))`; `check_grads`
(forward and reverse, to order 2) covers ordinary points.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import grad, jit, jvp, vmap
from tests.util import check_grads

inf, nan = np.inf, np.nan


def assert_same(actual, expected, what, rtol=2e-6, atol=1e-6):
  np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                             rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def check_all_ways(fn, args, expected, what, **tol):
  """`fn(*args)` eagerly, and `jit(fn)(*args)`, both equal to the golden `expected`."""
  assert_same(fn(*args), expected, f"{what} (eager)", **tol)
  assert_same(jit(fn)(*args), expected, f"{what} (jit)", **tol)


# ----------------------------------------------------------------------------- unary, elementwise

# name, function, points, golden f' and f'' at those points (None: f'' not recorded).
UNARY_EDGES = [
    ("relu", jaxon.nn.relu, [-1., 0., 2., 6., 7.], [0., 0., 1., 1., 1.], [0.] * 5),
    ("relu6", jaxon.nn.relu6, [-1., 0., 2., 6., 7.], [0., 0., 1., 0., 0.], [0.] * 5),
    ("hard_sigmoid", jaxon.nn.hard_sigmoid, [-3., 0., 3.], [0., 0.1666666716337204, 0.],
     None),
    ("hard_silu", jaxon.nn.hard_silu, [-3., 0., 3.], [0., 0.5, 1.], None),
    ("log1mexp", jaxon.nn.log1mexp, [0., np.log(2.), 1., inf],
     [inf, 1., 0.5819767117500305, 0.], [-inf, -2., -0.9206736087799072, nan]),
    ("softplus", jaxon.nn.softplus, [-inf, -1., 0., 1., inf],
     [0., 0.26894140243530273, 0.5, 0.7310585379600525, 1.],
     [0., 0.1966119259595871, 0.25, 0.19661195576190948, 0.]),
    ("log_sigmoid", jaxon.nn.log_sigmoid, [-inf, -1., 0., 1., inf],
     [1., 0.7310585379600525, 0.5, 0.26894140243530273, 0.], None),
    ("sinc", jnp.sinc, [0., 0.5, 1.], [0., -1.2732396125793457, -1.], None),
]


@pytest.mark.parametrize("name,fn,xs,d1,d2", UNARY_EDGES, ids=[e[0] for e in UNARY_EDGES])
def test_unary_derivatives_at_edges(name, fn, xs, d1, d2):
  xs = np.array(xs, np.float32)
  derivative = vmap(grad(fn))
  check_all_ways(derivative, (xs,), d1, f"{name}' at {xs}")
  assert_same(grad(fn)(xs[0]), d1[0], f"{name}' at {xs[0]} (unbatched)")
  if d2 is not None:
    check_all_ways(vmap(grad(grad(fn))), (xs,), d2, f"{name}'' at {xs}")


def test_relu_forward_keeps_jax_values():
  x = np.array([-0., 0., nan, -inf, inf, 3.], np.float32)
  assert_same(jaxon.nn.relu(x), [0., 0., nan, 0., inf, 3.], "relu")
  assert jaxon.nn.relu(np.int32(-3)).dtype == np.int32, "relu keeps integer dtypes"
  assert_same(jaxon.nn.log1mexp(np.array([0., np.log(2.), 1., inf], np.float32)),
              [-inf, -0.6931471824645996, -0.4586751461029053, -0.], "log1mexp")


def test_sinc_derivatives_at_zero_to_fourth_order():
  """sin(z)/z is NaN at 0 with all its derivatives; the custom rule gives the Taylor
  coefficients instead (JAX's docstring example)."""
  golden = [0.0, -3.2898683547973633, 0.0, 19.481821060180664]
  f = jnp.sinc
  for order, want in enumerate(golden, 1):
    f = grad(f)
    assert_same(f(0.), want, f"sinc derivative {order} at 0", rtol=1e-5)
  assert_same(jit(f)(0.), golden[-1], "jit(sinc'''')(0)", rtol=1e-5)
  assert_same(jaxon.jacfwd(jaxon.jacfwd(jnp.sinc))(0.), golden[1], "jacfwd² sinc at 0",
              rtol=1e-5)
  small = np.array([1e-3, 0.05, 0.5, 1.], np.float32)
  assert_same(jnp.sinc(small), [0.9999983906745911, 0.9958927631378174, 0.6366197466850281,
                                -2.7827534054836178e-08], "sinc near 0")


# ----------------------------------------------------------------------------- logaddexp

PAIRS = np.array([[0., 0.], [-inf, 0.], [0., -inf], [inf, 0.], [0., inf], [inf, inf],
                  [-inf, -inf], [1., 2.], [-inf, inf], [100., -100.]], np.float32)

# function, golden value, d/dx1, d/dx2 and d²/dx1² at PAIRS.
LOGADDEXP_EDGES = [
    (jnp.logaddexp,
     [0.6931471824645996, 0., 0., inf, inf, inf, -inf, 2.3132617473602295, inf, 100.],
     [0.5, 0., 1., 1., 1., 1., nan, 0.26894140243530273, 0., 1.],
     [0.5, 1., 0., 1., 1., 1., nan, 0.7310585379600525, 1., 0.],
     [0.25, 0., 0., 0., 1., 0., nan, 0.1966119259595871, 0., 0.]),
    (jnp.logaddexp2,
     [1., 0., 0., inf, inf, inf, -inf, 2.5849623680114746, inf, 100.],
     [0.5, 0., 1., 1., 1., 1., nan, 0.3333333730697632, 0., 1.],
     [0.5, 1., 0., 1., 1., 1., nan, 0.6666667461395264, 1., 0.],
     [0.1732867956161499, 0., 0., 0., 0.6931471824645996, 0., nan, 0.15403270721435547,
      0., 0.]),
]


@pytest.mark.parametrize("fn,value,d1,d2,d11", LOGADDEXP_EDGES,
                         ids=[e[0].__name__ for e in LOGADDEXP_EDGES])
def test_logaddexp_at_ties_and_infinities(fn, value, d1, d2, d11):
  """At a tie both weights are 1/2; JAX's rule reads +inf as 0 in the weights' exponents,
  so (inf, 0) gives weights (1, 1), and (-inf, -inf) gives NaN."""
  name = fn.__name__
  a, b = PAIRS[:, 0], PAIRS[:, 1]
  assert_same(fn(a, b), value, name)
  check_all_ways(vmap(grad(fn, (0, 1))), (a, b), (d1, d2), f"{name}' at {PAIRS.tolist()}")
  check_all_ways(vmap(grad(grad(fn))), (a, b), d11, f"{name}'' at {PAIRS.tolist()}")
  assert fn(1.0, 2.0).weak_type, "Python scalars give a weak result"


# ----------------------------------------------------------------------------- linear algebra

RANK_3 = np.array([[1., 2., 3., 4.], [2., 4., 6., 8.], [1., 0., 1., 0.], [0., 1., 0., 2.]],
                  np.float32)
RANK_2 = np.array([[1., 2., 3., 4.], [2., 4., 6., 8.], [3., 6., 9., 12.], [0., 1., 0., 2.]],
                  np.float32)
REGULAR = np.array([[2., 1., 0., .5], [1., 3., 1., 0.], [0., 1., 4., 1.], [.5, 0., 1., 5.]],
                   np.float32)

# Golden det(a) and grad(det)(a): at rank n - 1 the gradient is the cofactor matrix, below
# it 0 (the adjugate-based rule); differentiating the LU factors would give NaN at both.
DET_EDGES = [
    ("rank n-1", RANK_3, 0.,
     [[0., 8., 0., -4.], [0., -4., 0., 2.], [0., 0., 0., 0.], [0., 0., 0., 0.]]),
    ("rank n-2", RANK_2, 0., np.zeros((4, 4))),
    ("regular", REGULAR, 81.2499771118164,
     [[52., -19.5, 6.5, -6.5], [-19.5, 37., -10.25, 4.], [6.5, -10.25, 24.25, -5.5],
      [-6.5, 4., -5.5, 18.]]),
]
SMALL_DET_EDGES = [  # explicit sums of products, differentiated as written
    ("2x2 singular", np.array([[1., 2.], [2., 4.]], np.float32), 0., [[4., -2.], [-2., 1.]]),
    ("1x1", np.array([[-3.]], np.float32), -3., [[1.]]),
]


def test_det_gradient_on_singular_matrices():
  names = [name for name, *_ in DET_EDGES]
  stacked = np.stack([a for _, a, _, _ in DET_EDGES])
  assert_same(jnp.linalg.det(stacked), [v for _, _, v, _ in DET_EDGES], f"det {names}",
              atol=1e-4)
  check_all_ways(vmap(grad(jnp.linalg.det)), (stacked,), [g for *_, g in DET_EDGES],
                 f"vmap det' {names}", rtol=1e-5, atol=1e-5)
  assert_same(grad(jnp.linalg.det)(RANK_3), DET_EDGES[0][3], "det' rank n-1 (unbatched)")


@pytest.mark.parametrize("name,a,value,gradient", SMALL_DET_EDGES,
                         ids=[e[0] for e in SMALL_DET_EDGES])
def test_small_det_gradients(name, a, value, gradient):
  assert_same(jnp.linalg.det(a), value, f"det {name}")
  check_all_ways(grad(jnp.linalg.det), (a,), gradient, f"det' {name}")


def test_det_second_derivative_1x1():
  assert_same(jaxon.hessian(jnp.linalg.det)(np.array([[-3.]], np.float32)), [[[[0.]]]],
              "det'' 1x1")


SLOGDET_EDGES = [
    ("4x4", REGULAR,
     [[0.64, -0.24, 0.08, -0.08], [-0.24, 0.45538461208343506, -0.1261538565158844,
                                   0.049230773001909256],
      [0.08, -0.1261538565158844, 0.29846155643463135, -0.06769231706857681],
      [-0.08, 0.049230773001909256, -0.06769231706857681, 0.2215384691953659]]),
    ("2x2", np.array([[1., 2.], [3., 4.]], np.float32), [[-2., 1.5], [1., -.5]]),
    ("1x1", np.array([[-3.]], np.float32), [[-0.3333333432674408]]),
]


@pytest.mark.parametrize("name,a,gradient", SLOGDET_EDGES, ids=[e[0] for e in SLOGDET_EDGES])
def test_slogdet_gradients(name, a, gradient):
  """d log|det a| = tr(a⁻¹ da); the sign's derivative is 0 (not LU round-off)."""
  check_all_ways(grad(lambda m: jnp.linalg.slogdet(m)[1]), (a,), gradient,
                 f"slogdet' {name}", rtol=1e-5, atol=1e-6)
  sign_gradient = grad(lambda m: jnp.linalg.slogdet(m)[0])(a)
  np.testing.assert_array_equal(sign_gradient, np.zeros_like(a), err_msg=f"sign' {name}")


def test_slogdet_complex_sign_tangent():
  """For complex matrices the sign turns: d sign = i Im(tr(a⁻¹ da)) sign."""
  a = np.array([[2. + 1j, 0.5], [0.25j, 1. - 1j]], np.complex64)
  da = np.array([[0.5j, 1.], [0., 1.]], np.complex64)
  (sign, logdet), (dsign, dlog) = jvp(jnp.linalg.slogdet, (a,), (da,))
  eps = 1e-3
  plus, minus = (jnp.linalg.slogdet(a + s * eps * da) for s in (1, -1))
  assert_same(dlog, (plus[1] - minus[1]) / (2 * eps), "dlogabsdet", rtol=1e-2)
  np.testing.assert_allclose(dsign, (plus[0] - minus[0]) / (2 * eps), rtol=1e-2, atol=1e-3)


PINV_MATRIX = np.array([[1., 2.], [2., 4.], [0., 0.]], np.float32)  # rank 1
PINV_TANGENT = np.array([[.5, -1.], [.25, 1.], [1., 0.]], np.float32)
PINV_JVP = np.array([[-0.018400005996227264, 0.005199994891881943, 0.00800000224262476],
                     [-0.04480000212788582, -0.005600005388259888, 0.01600000262260437]])


@pytest.mark.parametrize("wide", [False, True], ids=["tall", "wide"])
def test_pinv_jvp_at_rank_deficient_matrix(wide):
  a, t, want = PINV_MATRIX, PINV_TANGENT, PINV_JVP
  if wide:
    a, t, want = a.T, t.T, want.T
  check_all_ways(lambda a, t: jvp(jnp.linalg.pinv, (a,), (t,))[1], (a, t), want,
                 "pinv jvp", rtol=1e-5, atol=1e-7)


def test_pinv_hermitian_jvp_reads_the_hermitian_part():
  h = np.array([[2., 1.], [1., 2.]], np.float32)
  t = np.array([[0., 1.], [0., 0.]], np.float32)
  out = jvp(lambda a: jnp.linalg.pinv(a, hermitian=True), (h,), (t,))[1]
  assert_same(out, [[0.22222216427326202, -0.27777767181396484],
                    [-0.27777767181396484, 0.22222216427326202]], "hermitian pinv jvp",
              rtol=1e-5)


# ----------------------------------------------------------------------------- softmax

def test_softmax_edges_follow_jax():
  """JAX's default softmax holds the maximum constant (stop_gradient); an infinite
  maximum is not special-cased, so a +inf entry makes the slice NaN."""
  x = np.array([0., -inf, 1.], np.float32)
  assert_same(jaxon.jacrev(jaxon.nn.softmax)(x),
              [[0.1966119259595871, 0., -0.19661197066307068], [0., 0., 0.],
               [-0.19661197066307068, 0., 0.19661188125610352]], "softmax jacobian")
  assert_same(jaxon.jacrev(jaxon.nn.log_softmax)(x),
              [[0.7310585379600525, 0., -0.7310585975646973],
               [-0.2689414322376251, 1., -0.7310585975646973],
               [-0.2689414322376251, 0., 0.26894140243530273]], "log_softmax jacobian")
  for fn in (jaxon.nn.softmax, jaxon.nn.log_softmax):
    for row in ([inf, 1.], [-inf, -inf]):
      assert_same(fn(np.array(row, np.float32)), [nan, nan], f"{fn.__name__}({row})")
  mask = np.array([True, False, True])
  y = np.array([1., 2., 3.], np.float32)
  assert_same(jaxon.jacrev(functools.partial(jaxon.nn.softmax, where=mask))(y),
              [[0.10499357432126999, 0., -0.10499357432126999], [0., 0., 0.],
               [-0.10499357432126999, 0., 0.10499358177185059]], "masked softmax")
  assert_same(jaxon.jacrev(functools.partial(jaxon.nn.log_softmax, where=mask))(y),
              [[0.8807970881462097, 0., -0.8807970285415649], [0., 0., 0.],
               [-0.11920291185379028, 0., 0.11920297145843506]], "masked log_softmax")


# ----------------------------------------------------------------------------- ordinary points

GRAD_CHECKS = [
    ("relu", jaxon.nn.relu, (np.array([-1.3, 0.7, 2.1], np.float32),)),
    ("relu6", jaxon.nn.relu6, (np.array([-1.3, 0.7, 5.2, 6.5], np.float32),)),
    ("log1mexp", jaxon.nn.log1mexp, (np.array([0.3, 2.], np.float32),)),
    ("logaddexp", jnp.logaddexp, (np.array([0.3, -1.], np.float32),
                                  np.array([0.5, 2.], np.float32))),
    ("logaddexp2", jnp.logaddexp2, (np.array([0.3, -1.], np.float32),
                                    np.array([0.5, 2.], np.float32))),
    ("sinc", jnp.sinc, (np.array([0.3, -0.8], np.float32),)),
    ("det 3x3", jnp.linalg.det, (REGULAR[:3, :3],)),
    ("det 4x4", jnp.linalg.det, (REGULAR,)),
    ("slogdet 4x4", lambda a: jnp.linalg.slogdet(a)[1], (REGULAR,)),
    ("slogdet 2x2", lambda a: jnp.linalg.slogdet(a)[1], (REGULAR[:2, :2],)),
    ("pinv", jnp.linalg.pinv, (np.array([[1., 2.], [3., -1.], [0.5, 1.]], np.float32),)),
]


@pytest.mark.parametrize("name,fn,args", GRAD_CHECKS, ids=[c[0] for c in GRAD_CHECKS])
def test_check_grads_at_ordinary_points(name, fn, args):
  check_grads(fn, args, order=2, modes=("fwd", "rev"), rtol=5e-2, atol=5e-2)


def test_i0_derivatives_at_zero_are_jaxs():
  """JAX's rule zeroes i0's tangent at 0 (first and second derivative 0 there)."""
  assert float(jaxon.grad(jnp.i0)(0.)) == 0.0
  assert float(jaxon.grad(jaxon.grad(jnp.i0))(0.)) == 0.0
  np.testing.assert_allclose(jaxon.grad(jnp.i0)(1.), 0.56515914, rtol=1e-6)  # JAX 0.10.2


def test_xlogy_family_derivatives_are_jaxs():
  """JAX's custom rules, recorded from JAX 0.10.2: at x = y = 0 the rule's formulas give
  -inf and NaN; at x = 0, y = 1 they are finite."""
  import jaxon.scipy.special as sp
  gx, gy = jaxon.grad(sp.xlogy, argnums=(0, 1))(0., 0.)
  assert float(gx) == -np.inf and np.isnan(float(gy))
  np.testing.assert_array_equal(jaxon.grad(sp.xlogy, argnums=(0, 1))(0., 1.), (0., 0.))
  gx, gy = jaxon.grad(sp.xlog1py, argnums=(0, 1))(0., -1.)
  assert float(gx) == -np.inf and np.isnan(float(gy))
  assert float(jaxon.grad(sp.entr)(0.)) == np.inf
  np.testing.assert_allclose(jaxon.vmap(jaxon.grad(sp.entr))(jnp.array([0.5, 2.])),
                             -(np.log([0.5, 2.]) + 1), rtol=1e-6)
  np.testing.assert_array_equal(sp.xlogy(jnp.array([0., 0., 2.]), jnp.array([0., np.nan, 1.])),
                                [0., np.nan, 0.])
