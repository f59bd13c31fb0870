"""Control flow under stacked transformations: each program is written once against a small
table of loop/branch constructors, run with `lax`'s (`LAX`) and with plain Python loops and
`jnp.where` selects (`REF`), and the transformation of the one must equal the transformation of
the other. Every comparison runs both sides in one jitted program where the transformation
allows it."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import grad, jit, lax, vmap

F32 = np.float32


def rand(*shape, seed=0, scale=0.5):
  return (np.random.RandomState(seed).standard_normal(shape) * scale).astype(F32)


def assert_trees_close(actual: Any, expected: Any, what: str = "", rtol=2e-5, atol=2e-5):
  a_leaves, e_leaves = jaxon.tree_leaves(actual), jaxon.tree_leaves(expected)
  assert len(a_leaves) == len(e_leaves), what
  for a, e in zip(a_leaves, e_leaves):
    np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol, err_msg=what)


# ----------------------------------------------------------------------------- constructors


def _scan_ref(body, carry, xs, length=None):
  n = length if xs is None else jaxon.tree_leaves(xs)[0].shape[0]
  ys = []
  for t in range(n):
    carry, y = body(carry, None if xs is None else jaxon.tree_map(lambda x, t=t: x[t], xs))
    ys.append(y)
  return carry, jaxon.tree_map(lambda *y: jnp.stack(y), *ys)


def _cond_ref(pred, true_fun, false_fun, *ops):
  return jaxon.tree_map(lambda a, b: jnp.where(pred, a, b), true_fun(*ops), false_fun(*ops))


def _fori_ref(lo, hi, body, val):
  for i in range(lo, hi):
    val = body(i, val)
  return val


LAX = dict(scan=lax.scan, cond=lax.cond, fori=lax.fori_loop)
REF = dict(scan=_scan_ref, cond=_cond_ref, fori=_fori_ref)
_W = rand(3, 3, seed=7)


def _both(program: Callable) -> tuple[Callable, Callable]:
  return (lambda *a: program(LAX, *a)), (lambda *a: program(REF, *a))


def check_same(transform: Callable[[Callable], Callable], program: Callable, *args: Any,
               **tol: float) -> None:
  """transform(program with lax) == transform(program with Python loops), both in one jit."""
  with_lax, with_ref = _both(program)
  actual, expected = jit(lambda *a: (transform(with_lax)(*a), transform(with_ref)(*a)))(*args)
  assert_trees_close(actual, expected, "lax vs reference", **tol)


# ----------------------------------------------------------------------------- programs


def scan_in_cond_in_scan(ops, c, xs):
  def inner(h, x):
    return jnp.tanh(h * x + 0.1), jnp.sum(h)

  def body(h, x):
    h = ops["cond"](jnp.sum(x) > 0,
                    lambda h, x: ops["scan"](inner, h, jnp.stack([x, x * 0.5]))[0],
                    lambda h, x: jnp.sin(h) - x, h, x)
    return h, jnp.sum(h ** 2)
  h, ys = ops["scan"](body, c, xs)
  return jnp.sum(h) + jnp.sum(ys)


def cond_inside_scan(ops, c, xs):
  def body(h, x):
    h = ops["cond"](x[0] > 0, lambda h: jnp.dot(_W, h) * x, lambda h: jnp.exp(h) * 0.3 + x, h)
    return jnp.tanh(h), h[0]
  h, ys = ops["scan"](body, c, xs)
  return jnp.sum(h * ys[-1]) + jnp.mean(ys)


def scan_of_jit(ops, c, xs):
  step = jit(lambda h, x: (jnp.tanh(jnp.dot(h, _W) + x), jnp.sin(h)))
  h, ys = ops["scan"](step, c, xs)
  return jnp.sum(h) + jnp.sum(ys ** 2)


def nested_scans(ops, c, xs):
  def outer(h, row):
    h, _ = ops["scan"](lambda g, v: (jnp.sin(g * v) + g * 0.5, None), h, row)
    return h, h
  h, ys = ops["scan"](outer, c, xs)
  return h + jnp.sum(ys)


def fori_program(ops, x):
  return jnp.sum(ops["fori"](0, 4, lambda i, v: jnp.sin(v) * (i + 1) * 0.5 + v, x))


def scan_vector(ops, x):
  """A vector-to-vector scan (for Jacobians)."""
  h, ys = ops["scan"](lambda h, w: (jnp.tanh(jnp.dot(_W, h) * w + h), h * w), x,
                      jnp.arange(1., 4., dtype=F32))
  return h + ys[1]


_c3, _xs = rand(3, seed=1), rand(4, 3, seed=2)


def test_scan_in_cond_in_scan_values_and_grad():
  check_same(lambda f: f, scan_in_cond_in_scan, _c3, _xs)
  check_same(lambda f: grad(f, argnums=(0, 1)), scan_in_cond_in_scan, _c3, _xs, rtol=1e-4)


def test_grad_of_cond_inside_scan():
  check_same(lambda f: grad(f, argnums=(0, 1)), cond_inside_scan, _c3, _xs, rtol=1e-4)


def test_grad_of_scan_of_jit():
  check_same(lambda f: grad(f, argnums=(0, 1)), scan_of_jit, _c3, _xs, rtol=1e-4)


def test_nested_scans_under_grad_of_grad():
  check_same(lambda f: grad(grad(f)), nested_scans, F32(0.3), rand(3, 2, seed=3),
             rtol=1e-4, atol=1e-4)


def test_vmap_of_grad_of_fori_loop():
  check_same(lambda f: vmap(grad(f)), fori_program, rand(4, 3, seed=4), rtol=1e-4)


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev", "hessian"])
def test_jacobians_of_scan(jac):
  transform = getattr(jaxon, jac)
  if jac == "hessian":
    check_same(lambda f: transform(lambda x: jnp.sum(f(x) ** 2)), scan_vector, _c3,
               rtol=1e-4, atol=1e-4)
  else:
    check_same(transform, scan_vector, _c3, rtol=1e-4)


def test_jacfwd_equals_jacrev_of_scan():
  f = lambda x: scan_vector(LAX, x)  # noqa: E731
  fwd, rev = jit(lambda x: (jaxon.jacfwd(f)(x), jaxon.jacrev(f)(x)))(_c3)
  assert fwd.shape == (3, 3)
  assert_trees_close(fwd, rev, "jacfwd vs jacrev", rtol=1e-5)


# ----------------------------------------------------------------------------- while loops


def _while_with_cond(x):
  """Halves or triples-plus-one (Collatz on floats) until below 2: a cond in a while, lanes
  take different branches and finish at different times."""
  def body(c):
    v, n = c
    v = lax.cond(jnp.floor(v / 2) * 2 == v, lambda v: v / 2, lambda v: 3 * v + 1, v)
    return v, n + 1
  return lax.while_loop(lambda c: c[0] > 1.5, body, (x, 0))


def _collatz_steps(v):
  n = 0
  while v > 1.5:
    v = v / 2 if v % 2 == 0 else 3 * v + 1
    n += 1
  return n


def test_cond_in_while_under_vmap():
  xs = np.array([1., 6., 7., 27., 16.], F32)
  expected = [_collatz_steps(float(v)) for v in xs]
  for f in (vmap(_while_with_cond), jit(vmap(_while_with_cond))):
    v, n = f(xs)
    np.testing.assert_array_equal(n, expected)
    np.testing.assert_array_equal(v, np.where(xs > 1.5, 1., xs))


def _while_fixed_trips(x, w):
  """Four trips whatever the values (so a Python loop is its reference)."""
  return lax.while_loop(lambda c: c[0] < 4,
                        lambda c: (c[0] + 1, jnp.sin(c[1]) * w + c[1] * 0.3), (0, x))[1]


def _unrolled_fixed_trips(x, w):
  for _ in range(4):
    x = jnp.sin(x) * w + x * 0.3
  return x


def _check_jvp_of_while(x, w, tx, tw):
  actual, expected = jit(lambda p, t: (jaxon.jvp(_while_fixed_trips, p, t),
                                       jaxon.jvp(_unrolled_fixed_trips, p, t)))((x, w), (tx, tw))
  assert_trees_close(actual, expected, "jvp of while", rtol=1e-5)
  assert_trees_close(jaxon.jvp(_while_fixed_trips, (x, w), (tx, tw)), expected, "eager")


def test_jvp_of_while_loop():
  x, tx = rand(3, seed=5), rand(3, seed=6)
  f = lambda x: _while_fixed_trips(x, F32(1.3))  # noqa: E731
  g = lambda x: _unrolled_fixed_trips(x, F32(1.3))  # noqa: E731
  actual, expected = jit(lambda x, t: (jaxon.jvp(f, (x,), (t,)), jaxon.jvp(g, (x,), (t,))))(
      x, tx)
  assert_trees_close(actual, expected, "jvp of while", rtol=1e-5)
  assert_trees_close(jaxon.jvp(f, (x,), (tx,)), expected, "eager jvp of while", rtol=1e-5)


def test_jvp_of_while_loop_wrt_a_closed_over_value():
  _check_jvp_of_while(rand(3, seed=5), F32(1.3), rand(3, seed=6), F32(0.7))


def test_jvp_of_jvp_of_while_loop():
  f = lambda x: _while_fixed_trips(x, F32(1.3))  # noqa: E731
  g = lambda x: _unrolled_fixed_trips(x, F32(1.3))  # noqa: E731
  x, t = rand(3, seed=5), rand(3, seed=6)
  second = lambda h: jaxon.jvp(lambda y: jaxon.jvp(h, (y,), (t,))[1], (x,), (t,))  # noqa: E731
  actual, expected = jit(lambda: (second(f), second(g)))()
  assert_trees_close(actual, expected, "jvp of jvp of while", rtol=1e-4, atol=1e-5)


def test_linearize_of_while():
  x, t = rand(3, seed=5), rand(3, seed=6)
  f = lambda x: _while_fixed_trips(x, F32(1.3))  # noqa: E731
  out, f_jvp = jaxon.linearize(f, x)
  expected_out, expected_tangent = jaxon.jvp(_unrolled_fixed_trips, (x, F32(1.3)),
                                             (t, F32(0.)))
  assert_trees_close(out, expected_out, "linearize primal out")
  assert_trees_close(f_jvp(t), expected_tangent, "linearized jvp", rtol=1e-5)
  assert_trees_close(jit(f_jvp)(t * 2), expected_tangent * 2, "jit of linearized", rtol=1e-5)


def test_vmap_of_jvp_of_while_with_batched_trip_counts():
  def f(x, n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * c[1] * 0.5 + 1.),
                          (0, x))[1]
  xs, ns, ts = rand(4, seed=1), np.array([0, 1, 2, 3], np.int32), np.ones(4, F32)
  _, tangents = jit(vmap(lambda x, n, t: jaxon.jvp(lambda y: f(y, n), (x,), (t,))))(xs, ns, ts)
  expected = []
  for x, n in zip(xs, ns):
    d, v = 1., float(x)
    for _ in range(n):
      d, v = d * v, v * v * 0.5 + 1.
    expected.append(d)
  np.testing.assert_allclose(tangents, expected, rtol=1e-5)


def test_grad_of_fori_loop_with_static_bounds_inside_vmap_of_jit():
  f = lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, v: v * jnp.sin(v) + i, x))  # noqa: E731
  g = lambda x: jnp.sum(_fori_ref(0, 3, lambda i, v: v * jnp.sin(v) + i, x))  # noqa: E731
  xs = rand(2, 3, seed=8)
  actual, expected = jit(lambda x: (vmap(jit(grad(f)))(x), vmap(grad(g))(x)))(xs)
  assert_trees_close(actual, expected, rtol=1e-5)


def test_switch_in_scan_under_vmap_and_grad():
  branches = [lambda h: jnp.sin(h), lambda h: h * h, lambda h: jnp.cos(h) * 2.]

  def f(h, idx):
    return jnp.sum(lax.scan(lambda h, i: (lax.switch(i, branches, h), None), h, idx)[0])

  def ref(h, idx):
    for i in idx:
      h = branches[int(i)](h)
    return jnp.sum(h)
  hs, idx = rand(3, 2, seed=9), np.array([2, 0, 1, 0], np.int32)
  got = jit(vmap(grad(f), in_axes=(0, None)))(hs, idx)
  expected = np.stack([np.asarray(grad(ref)(h, idx)) for h in hs])
  assert_trees_close(got, expected, rtol=1e-5)


_EDGES = jnp.asarray(np.array([-1.0, 0.0, 0.5, 2.0], np.float32))
_INTEGER_LOOPS = {
    "fori": lambda v: lax.fori_loop(0, 4, lambda i, n: n + (v > _EDGES[i]).astype(np.int32),
                                    jnp.zeros(v.shape, np.int32)),
    "scan": lambda v: lax.scan(lambda n, e: (n + (v > e).astype(np.int32), None),
                               jnp.zeros(v.shape, np.int32), _EDGES)[0],
    "while": lambda v: lax.while_loop(
        lambda c: c[0] < 4,
        lambda c: (c[0] + 1, c[1] + (v > _EDGES[c[0]]).astype(np.int32)),
        (0, jnp.zeros(v.shape, np.int32)))[1],
}


@pytest.mark.parametrize("kind", list(_INTEGER_LOOPS))
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_grad_through_a_loop_of_integers_that_reads_a_differentiable_value(kind, jitted):
  """The loop's inputs include the closed-over value's tangent, which no output (integers)
  reads: the known loop must not take it (it escaped, or its variable was unbound). The
  values are JAX's."""
  loop = jit(_INTEGER_LOOPS[kind]) if jitted else _INTEGER_LOOPS[kind]
  x = np.array([-2.0, -0.7, 0.2, 1.1, 3.0], np.float32)
  np.testing.assert_array_equal(grad(lambda v: (loop(v) * v).sum())(x), [0., 1., 2., 3., 4.])
