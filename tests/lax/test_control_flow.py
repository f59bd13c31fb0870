"""Control flow (`cond`, `switch`, `while_loop`, `fori_loop`, `scan`, `map`,
`associative_scan`) through the generic rule harness, plus the behaviours particular to loops.

Each table case is checked the same way: finite differences to order 2 (forward, and reverse
where reverse mode is defined: not through `while`), jit of the transformations against the
transformations, and vmap against a Python loop over the examples. Predicates and branch
indices are batched in their own tests, with lanes that take different branches and loops whose
lanes finish at different times. Compositions of transformations are in
`test_control_flow_compositions.py`; the seed's printed jaxprs are in `tests/test_jaxpr_golden.py`.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import jit, lax, vmap
from tests.transform_util import check_jit_transforms, check_vmap
from tests.util import check_grads

F32 = np.float32
TOL = dict(rtol=2e-5, atol=2e-5)


def rand(*shape, seed=0, scale=0.5):
  return (np.random.RandomState(seed).standard_normal(shape) * scale).astype(F32)


def assert_trees_close(actual: Any, expected: Any, what: str = "", **tol: float) -> None:
  a_leaves, e_leaves = jaxon.tree_leaves(actual), jaxon.tree_leaves(expected)
  assert len(a_leaves) == len(e_leaves), f"{what}: {len(a_leaves)} != {len(e_leaves)} leaves"
  for a, e in zip(a_leaves, e_leaves):
    a, e = np.asarray(a), np.asarray(e)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a, e, err_msg=what, **(tol or TOL))


def stack_loop(f: Callable, args: Sequence[Any], in_axes: Sequence[int | None]) -> Any:
  """What vmap(f, in_axes) must give: f applied to each example, outputs stacked at 0."""
  size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
  outs = [f(*[a if ax is None else jnp.take(a, k, axis=ax) for a, ax in zip(args, in_axes)])
          for k in range(size)]
  return jaxon.tree_map(lambda *xs: jnp.stack(xs), *outs)


def check_vmap_axes(f: Callable, args: Sequence[Any], in_axes: Sequence[int | None]) -> None:
  expected = stack_loop(f, args, in_axes)
  assert_trees_close(vmap(f, in_axes=tuple(in_axes))(*args), expected, f"vmap {in_axes}")
  assert_trees_close(jit(vmap(f, in_axes=tuple(in_axes)))(*args), expected,
                     f"jit(vmap) {in_axes}")


# ----------------------------------------------------------------------------- the table

_W = rand(3, 3, seed=7)


def _cond_on_data(x):
  return lax.cond(x[0] > 0, lambda v: jnp.sin(v) * 2., lambda v: jnp.cos(v) * v, x)


def _cond_two_operands_pytree_out(x, y):
  return lax.cond(jnp.sum(x) > jnp.sum(y),
                  lambda a, b: (a * b, {"s": jnp.sum(a ** 2)}),
                  lambda a, b: (a - b, {"s": jnp.sum(jnp.sin(b))}), x, y)


def _cond_closed_const(x):
  return lax.cond(x[1] < 0, lambda v: jnp.dot(_W, v), lambda v: jnp.exp(v) * _W[0], x)


def _switch(index):
  def f(x):
    return lax.switch(index, [lambda v: v + 1., lambda v: jnp.sin(v) * v,
                              lambda v: jnp.dot(_W, jnp.tanh(v))], x)
  return f


def _while_counter(x):
  return lax.while_loop(lambda c: c[0] < 4,
                        lambda c: (c[0] + 1, jnp.sin(c[1]) * 1.5 + c[1] * 0.1), (0, x))[1]


def _while_data_dependent(x):
  # The trip count depends on x, but not within finite-difference steps of these inputs.
  return lax.while_loop(lambda v: jnp.sum(v) < 6., lambda v: v * 1.7 + 0.3, x)


def _fori_static(x):
  return lax.fori_loop(1, 4, lambda i, v: jnp.sin(v) * i + v * 0.5, x)


_fori_traced_jit = jit(lambda x, n: lax.fori_loop(1, n, lambda i, v: jnp.sin(v) * i + v * 0.5,
                                                  x))


def _fori_traced(x):
  return _fori_traced_jit(x, 4)


def _rnn_body(c, x):
  c = jnp.tanh(jnp.dot(_W, c) + x)
  return c, jnp.sum(c * x)


def _scan(**kw):
  return lambda c, xs: lax.scan(_rnn_body, c, xs, **kw)


def _scan_pytree(c, xs):
  def body(carry, x):
    a, (b,) = carry["a"], carry["b"]
    a = jnp.sin(a * x["u"]) + b
    b = b * 0.9 + jnp.sum(x["v"] * a)
    return {"a": a, "b": (b,)}, (a * 2., {"w": b})
  init = {"a": c, "b": (jnp.sum(c),)}
  return lax.scan(body, init, {"u": xs, "v": xs[:, ::-1] * 0.5})


def _scan_no_xs(c):
  return lax.scan(lambda c, _: (jnp.sin(c) + 0.1, c * 2.), c, None, length=4)


def _scan_closed_consts(c, xs):
  return lax.scan(lambda c, x: (c * _W[0] + x, jnp.dot(_W, c)), c, xs)


def _map(xs):
  return lax.map(lambda r: jnp.dot(_W, jnp.sin(r)), xs)


def _map_batched(xs):
  return lax.map(lambda r: jnp.dot(_W, jnp.sin(r)), xs, batch_size=2)


def _assoc(fn, **kw):
  return lambda xs: lax.associative_scan(fn, xs, **kw)


class Case(NamedTuple):
  name: str
  fun: Callable
  args: tuple
  reverse: bool = True  # is reverse mode defined?

  def __repr__(self) -> str:
    return self.name


_x3, _y3 = rand(3, seed=1), rand(3, seed=2)
_xs = rand(5, 3, seed=3)
_pos = np.abs(rand(5, 3, seed=4)) + 0.5

CASES = [
    Case("cond-data-pred-true", _cond_on_data, (np.abs(_x3),)),
    Case("cond-data-pred-false", _cond_on_data, (-np.abs(_x3),)),
    Case("cond-two-operands-pytree", _cond_two_operands_pytree_out, (_x3, _y3)),
    Case("cond-closed-const", _cond_closed_const, (_x3,)),
    *[Case(f"switch-index{i}", _switch(i), (_x3,)) for i in (0, 1, 2, 7, -1)],
    Case("while-counter", _while_counter, (_x3,), reverse=False),
    Case("while-data-dependent", _while_data_dependent, (np.abs(_x3),), reverse=False),
    Case("fori-static", _fori_static, (_x3,)),
    Case("fori-traced", _fori_traced, (_x3,), reverse=False),
    Case("scan", _scan(), (_x3, _xs)),
    Case("scan-reverse", _scan(reverse=True), (_x3, _xs)),
    Case("scan-unroll2", _scan(unroll=2), (_x3, _xs)),
    Case("scan-pytree", _scan_pytree, (_x3, _xs)),
    Case("scan-no-xs", _scan_no_xs, (_x3,)),
    Case("scan-closed-consts", _scan_closed_consts, (_x3, _xs)),
    Case("map", _map, (_xs,)),
    Case("map-batch_size2", _map_batched, (_xs,)),
    Case("assoc-add", _assoc(jnp.add), (_xs,)),
    Case("assoc-mul-reverse", _assoc(jnp.multiply, reverse=True), (_pos,)),
    Case("assoc-add-axis1", _assoc(jnp.add, axis=1), (_xs,)),
]


def _vdot(xs: Any, ys: Any) -> Any:
  return sum(jnp.vdot(x, y) for x, y in zip(jaxon.tree_leaves(xs), jaxon.tree_leaves(ys)))


def _central_difference(f: Callable, args: tuple, tangents: tuple, eps: float) -> Any:
  plus = f(*jaxon.tree_map(lambda x, t: x + eps * t, args, tangents))
  minus = f(*jaxon.tree_map(lambda x, t: x - eps * t, args, tangents))
  return jaxon.tree_map(lambda a, b: (a - b) / (2 * eps), plus, minus)


def check_grads_jitted(f: Callable, args: tuple, modes: Sequence[str], eps: float = 1e-3,
                       tol: float = 2e-2) -> None:
  """`check_grads(f, args, order=2, modes)`'s checks, all computed in one jitted program
  (one compilation per case instead of one per transformation and order): JVPs against
  central differences along a random tangent, VJPs by the adjoint identity
  <vjp(u), t> = <u, J t>, and both again of the JVP and VJP functions themselves."""
  rng = np.random.RandomState(0)
  rand_like = lambda x: rng.standard_normal(np.shape(x)).astype(F32)  # noqa: E731
  t1, t2 = jaxon.tree_map(rand_like, args), jaxon.tree_map(rand_like, args)
  u1 = jaxon.tree_map(rand_like, jaxon.eval_shape(f, *args))

  def checks(args: tuple, t1: tuple, t2: tuple, u1: Any) -> dict:
    fd = lambda g, ts: _central_difference(g, args, ts, eps)  # noqa: E731
    jvp_f = lambda *a: jaxon.jvp(f, a, t1)[1]  # noqa: E731
    vjp_f = lambda *a: jaxon.vjp(f, *a)[1](u1)  # noqa: E731
    res = {}
    if "fwd" in modes:
      res["jvp"] = (jvp_f(*args), fd(f, t1))
      res["jvp of jvp"] = (jaxon.jvp(jvp_f, args, t2)[1], fd(jvp_f, t2))
    if "rev" in modes:
      res["vjp"] = (_vdot(vjp_f(*args), t1), _vdot(u1, fd(f, t1)))
      res["vjp of vjp"] = (_vdot(jaxon.vjp(vjp_f, *args)[1](t2), t1), _vdot(t2, fd(vjp_f, t1)))
    return res
  for what, (analytic, numeric) in jit(checks)(args, t1, t2, u1).items():
    for a, n in zip(jaxon.tree_leaves(analytic), jaxon.tree_leaves(numeric)):
      scale = max(1., float(np.max(np.abs(n), initial=0.)))
      np.testing.assert_allclose(a, n, rtol=tol, atol=tol * scale, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_grads(case: Case):
  check_grads_jitted(case.fun, case.args, ("fwd", "rev") if case.reverse else ("fwd",))


@pytest.mark.parametrize("name", ["cond-two-operands-pytree", "while-counter", "scan"])
def test_check_grads_order2(name: str):
  """jaxon.test_util.check_grads itself (of the jitted function) on a few cases."""
  case = next(c for c in CASES if c.name == name)
  modes = ("fwd", "rev") if case.reverse else ("fwd",)
  check_grads(jit(case.fun), case.args, order=2, modes=modes, atol=5e-2, rtol=5e-2)


_JIT_TRANSFORM_CASES = ["cond-two-operands-pytree", "switch-index1", "fori-static", "scan",
                        "scan-pytree", "map-batch_size2", "assoc-mul-reverse"]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jit_equals_eager(case: Case):
  assert_trees_close(jit(case.fun)(*case.args), case.fun(*case.args), "jit == eager")
  if case.name in _JIT_TRANSFORM_CASES:
    check_jit_transforms(case.fun, case.args)
  elif not case.reverse:
    tangents = tuple(np.ones_like(a) for a in case.args)
    jvp = lambda p, t: jaxon.jvp(case.fun, p, t)  # noqa: E731
    assert_trees_close(jit(jvp)(case.args, tangents), jvp(case.args, tangents), "jit(jvp)")


def _in_axes_choices(args: tuple) -> list[tuple]:
  """Every argument mapped at 0, at -1, and each one alone at 0 (the others unmapped)."""
  choices = [tuple(0 for _ in args), tuple(-1 for _ in args)]
  if len(args) > 1:
    choices += [tuple(0 if j == i else None for j in range(len(args)))
                for i in range(len(args))]
  return choices


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_vmap(case: Case, size: int = 3):
  """vmap against a Python loop over the examples, for each in_axes choice; the batched and
  the per-example computations of all choices run in one jitted program."""
  rng = np.random.RandomState(0)
  choices = _in_axes_choices(case.args)
  batched = [tuple(a if ax is None else np.stack(
      [a + 0.1 * rng.standard_normal(a.shape).astype(F32) for _ in range(size)], ax)
      for a, ax in zip(case.args, in_axes)) for in_axes in choices]

  def both(batched: list) -> list:
    return [(vmap(case.fun, in_axes=in_axes)(*args), stack_loop(case.fun, args, in_axes))
            for in_axes, args in zip(choices, batched)]
  for in_axes, (actual, expected) in zip(choices, jit(both)(batched)):
    assert_trees_close(actual, expected, f"vmap in_axes={in_axes}")


def test_vmap_eager_matches_jit():
  """Eager vmap (each batched control-flow primitive run on its own) on a few cases."""
  for name in ["switch-index1", "while-counter", "scan"]:
    case = next(c for c in CASES if c.name == name)
    check_vmap(case.fun, case.args, axes=(0,))


# ----------------------------------------------------------------------------- batched predicates

_preds = np.array([True, False, True, False])
_idx = np.array([0, 2, 1, 5, -3], np.int32)  # out-of-range indices clamp


def _cond3(p, x, y, z):
  a, b = lax.cond(p, lambda a, b: (jnp.sin(a) + b, a * 2.), lambda a, b: (a - b, b * 3.), x, y)
  return a + z, b


def _switch3(i, x, y, z):
  return lax.switch(i, [lambda a, b: a + b, lambda a, b: jnp.sin(a) * b,
                        lambda a, b: a - 2. * b], x, y) * z


@pytest.mark.parametrize("in_axes", [(0, 0, 0, None), (0, None, None, None),
                                     (None, 0, None, None), (None, None, 0, None),
                                     (0, 1, None, 0), (None, None, None, 0)],
                         ids=lambda a: "-".join(map(str, a)))
@pytest.mark.parametrize("fun,index", [(_cond3, _preds), (_switch3, _idx)],
                         ids=["cond", "switch"])
def test_vmap_batched_index(fun, index, in_axes):
  """The batch axis on the predicate/index, on the operands, on both, and on neither (only
  on a value used outside the branches)."""
  n = len(index)
  i = index if in_axes[0] == 0 else index[1]
  x = {0: rand(n, 3, seed=1), 1: rand(3, n, seed=1), None: rand(3, seed=1)}[in_axes[1]]
  y = rand(n, 3, seed=2) if in_axes[2] == 0 else rand(3, seed=2)
  z = rand(n, 3, seed=3) if in_axes[3] == 0 else rand(3, seed=3)
  check_vmap_axes(fun, (i, x, y, z), in_axes)


def test_vmap_cond_batched_pred_with_effects_of_both_branches_nan_free():
  """A batched predicate runs both branches; the branch not taken must not leak NaNs into
  the selected result or its gradient."""
  def f(x):
    return lax.cond(x > 0, lambda v: jnp.sqrt(v), lambda v: v * 0., x)
  xs = np.array([4., -1., 9.], F32)
  np.testing.assert_allclose(vmap(f)(xs), [2., 0., 3.])
  np.testing.assert_allclose(vmap(jaxon.grad(f))(xs), [0.25, 0., 1 / 6], rtol=1e-6)


def _newton_sqrt(a):
  def body(c):
    x, n = c
    return 0.5 * (x + a / x), n + 1
  return lax.while_loop(lambda c: jnp.abs(c[0] * c[0] - a) > 1e-4 * a, body, (a, 0))


def test_vmap_while_batched_predicate_lanes_finish_at_different_times():
  a = np.array([1., 4., 100., 1e4], F32)
  roots, steps = vmap(_newton_sqrt)(a)
  np.testing.assert_allclose(roots, np.sqrt(a), rtol=1e-4)
  per_lane = [int(_newton_sqrt(F32(v))[1]) for v in a]
  assert list(np.asarray(steps)) == per_lane and len(set(per_lane)) > 1
  jroots, jsteps = jit(vmap(_newton_sqrt))(a)
  np.testing.assert_array_equal(jsteps, steps)
  np.testing.assert_allclose(jroots, roots, rtol=1e-6)


def _while_bound(x, n):
  return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 + 1.), (0, x))


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 0)],
                         ids=lambda a: "-".join(map(str, a)))
def test_vmap_while_axes(in_axes):
  n = np.array([0, 3, 1, 5], np.int32)
  x = {0: rand(4, 2, seed=1), 1: rand(2, 4, seed=1), None: rand(2, seed=1)}[in_axes[0]]
  check_vmap_axes(_while_bound, (x, n if in_axes[1] == 0 else n[1]), in_axes)


def test_vmap_while_unbatched_counter_batched_carry():
  check_vmap_axes(lambda x: _while_bound(x, 3), (rand(4, 2),), (0,))


# ----------------------------------------------------------------------------- loops

_FORI_BODIES = {
    "affine": lambda i, v: v * 1.1 + i,
    "pytree": lambda i, v: (v[0] + jnp.sin(v[1]) * i, v[1] * 0.9),
    "index-use": lambda i, v: v.at[i % 3].add(1.),
}


@pytest.mark.parametrize("name", list(_FORI_BODIES))
def test_fori_loop_static_and_traced_bounds_agree(name):
  body = _FORI_BODIES[name]
  init = (rand(3), rand(3, seed=1)) if name == "pytree" else jnp.asarray(rand(3))
  static = lax.fori_loop(2, 7, body, init)
  traced = jit(lambda lo, hi, v: lax.fori_loop(lo, hi, body, v))(2, 7, init)
  expected = init
  for i in range(2, 7):
    expected = body(i, expected)
  assert_trees_close(static, expected, "static bounds")
  assert_trees_close(traced, expected, "traced bounds")


def test_fori_loop_jaxpr_is_scan_with_static_and_while_with_traced_bounds():
  body = _FORI_BODIES["affine"]
  static = jaxon.make_jaxpr(lambda v: lax.fori_loop(0, 3, body, v))(rand(3))
  traced = jaxon.make_jaxpr(lambda v, n: lax.fori_loop(0, n, body, v))(rand(3), 3)
  assert [e.primitive.name for e in static.jaxpr.eqns] == ["scan"]
  assert [e.primitive.name for e in traced.jaxpr.eqns] == ["while"]


def test_fori_loop_empty_and_negative_ranges():
  assert float(lax.fori_loop(5, 5, lambda i, v: v + 1., 0.)) == 0.
  assert float(lax.fori_loop(5, 2, lambda i, v: v + 1., 0.)) == 0.
  assert float(jit(lambda n: lax.fori_loop(5, n, lambda i, v: v + 1., 0.))(2)) == 0.


def _rnn_loss_scan(w, h0, xs):
  def body(h, x):
    h = jnp.tanh(jnp.dot(h, w) + x)
    return h, jnp.sum(h ** 2)
  h, ys = lax.scan(body, h0, xs)
  return jnp.sum(h) + jnp.mean(ys)


def _rnn_loss_unrolled(w, h0, xs):
  h, ys = h0, []
  for t in range(xs.shape[0]):
    h = jnp.tanh(jnp.dot(h, w) + xs[t])
    ys.append(jnp.sum(h ** 2))
  return jnp.sum(h) + jnp.mean(jnp.stack(ys))


def test_scan_rnn_gradient_equals_unrolled_python_loop():
  w, h0, xs = rand(4, 4, seed=1), rand(2, 4, seed=2), rand(6, 2, 4, seed=3)
  grad_scan = jit(jaxon.grad(_rnn_loss_scan, argnums=(0, 1, 2)))(w, h0, xs)
  grad_loop = jit(jaxon.grad(_rnn_loss_unrolled, argnums=(0, 1, 2)))(w, h0, xs)
  assert_trees_close(grad_scan, grad_loop, "grad scan vs unrolled", rtol=1e-5, atol=1e-6)
  assert_trees_close(jaxon.grad(_rnn_loss_scan)(w, h0, xs), grad_loop[0], "eager grad")


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, True])
def test_scan_matches_python_loop(reverse, unroll):
  xs = rand(7, 2, seed=5)
  body = lambda c, x: (c * 0.5 + x, c + x[::-1])  # noqa: E731
  carry, ys = lax.scan(body, np.zeros(2, F32), xs, reverse=reverse, unroll=unroll)
  c, out = np.zeros(2, F32), [None] * 7
  for t in (reversed(range(7)) if reverse else range(7)):
    c, out[t] = body(c, xs[t])
  assert_trees_close((carry, ys), (c, np.stack(out)), f"reverse={reverse} unroll={unroll}")


def test_scan_unroll_appears_in_jaxpr():
  jaxpr = jaxon.make_jaxpr(_scan(unroll=3))(_x3, _xs)
  assert jaxpr.jaxpr.eqns[0].params["unroll"] == 3
  jaxpr = jaxon.make_jaxpr(_scan(unroll=True))(_x3, _xs)
  assert jaxpr.jaxpr.eqns[0].params["unroll"] == 5


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_indexes_its_slices_without_wrapping_negative_indices(reverse):
  """The loop index is never negative: the lowered loop reads and writes slices at it as is,
  as JAX's does. A wrap-around select in every fused slice read made an RNN's gradient 1.4x
  slower than JAX's."""
  text = jit(lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0., xs, reverse=reverse)
             ).lower(np.ones(5, F32)).as_text()
  assert "dynamic_slice" in text and "dynamic_update_slice" in text
  assert "select" not in text, text


def test_scan_xs_none_with_length_and_pytree_outputs():
  carry, ys = lax.scan(lambda c, x: ((c[0] + 1, c[1] * 2.), {"i": c[0], "n": None}),
                       (0, 1.), None, length=4)
  assert int(carry[0]) == 4 and float(carry[1]) == 16.
  np.testing.assert_array_equal(ys["i"], [0, 1, 2, 3])
  assert ys["n"] is None


def test_scan_zero_length():
  carry, ys = lax.scan(lambda c, x: (c + x, x * 2.), np.ones(3, F32), np.zeros((0, 3), F32))
  np.testing.assert_array_equal(carry, 1.)
  assert ys.shape == (0, 3)


@pytest.mark.parametrize("batch_size", [None, 1, 2, 5, 8])
def test_map_batch_size(batch_size):
  xs = rand(5, 3)
  out = lax.map(lambda r: (jnp.sum(r), r * 2.), xs, batch_size=batch_size)
  assert_trees_close(out, (xs.sum(1), xs * 2.), f"batch_size={batch_size}")


_ASSOC = [
    ("cumsum", jnp.add, np.cumsum, {}),
    ("cumprod", jnp.multiply, np.cumprod, {}),
    ("cummax", jnp.maximum, np.maximum.accumulate, {}),
]


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name,fn,ref,_", _ASSOC, ids=[a[0] for a in _ASSOC])
def test_associative_scan_vs_numpy(name, fn, ref, _, reverse, axis):
  x = rand(7, 5, seed=2) + 1.
  expected = (np.flip(ref(np.flip(x, axis), axis=axis), axis) if reverse
              else ref(x, axis=axis))
  out = lax.associative_scan(fn, x, reverse=reverse, axis=axis)
  np.testing.assert_allclose(out, expected, rtol=1e-5, err_msg=f"{name} axis={axis}")


def test_associative_scan_pytree_elems():
  """A pair (a, b) composing affine maps x -> a*x + b: the scan gives every prefix map."""
  a, b = rand(6, seed=1) + 1., rand(6, seed=2)

  def compose(f, g):
    return g[0] * f[0], g[0] * f[1] + g[1]
  pa, pb = lax.associative_scan(compose, (a, b))
  ea, eb = [a[0]], [b[0]]
  for t in range(1, 6):
    ea.append(a[t] * ea[-1])
    eb.append(a[t] * eb[-1] + b[t])
  np.testing.assert_allclose(pa, ea, rtol=1e-5)
  np.testing.assert_allclose(pb, eb, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- values


def test_cond_switch_values_and_clamping():
  assert float(lax.cond(True, lambda x: x + 1., lambda x: x - 1., 1.)) == 2.
  assert float(lax.cond(0, lambda x: x + 1., lambda x: x - 1., 1.)) == 0.
  assert float(lax.cond(3, lambda x: x + 1., lambda x: x - 1., 1.)) == 2.  # nonzero int
  branches = [lambda x: x, lambda x: -x, lambda x: 2. * x]
  got = [float(lax.switch(i, branches, 3.)) for i in (-3, 0, 1, 2, 7)]
  assert got == [3., 3., -3., 6., 6.]
  jitted = jit(lambda i: lax.switch(i, branches, 3.))
  assert [float(jitted(i)) for i in (-3, 0, 1, 2, 7)] == got


def test_cond_operand_keyword_and_no_operands():
  assert float(lax.cond(False, lambda x: x, lambda x: x * 3., operand=2.)) == 6.
  assert float(lax.cond(True, lambda: 1., lambda: 2.)) == 1.


def test_control_flow_outputs_keep_dtypes():
  x = np.arange(3, dtype=np.int32)
  assert lax.cond(True, lambda v: v * 2, lambda v: v, x).dtype == np.int32
  assert lax.while_loop(lambda v: v[0] < 10, lambda v: v * 2 + 1, x).dtype == np.int32
  carry, ys = lax.scan(lambda c, v: (c + v, v > 0), np.int32(0), x)
  assert carry.dtype == np.int32 and ys.dtype == np.bool_


def test_weak_int_carry_promoted_to_float_like_jax():
  assert float(lax.fori_loop(0, 3, lambda i, c: c + 0.5, 0)) == 1.5
  carry, _ = lax.scan(lambda c, x: (c + 0.5, x), 0, np.ones(3, F32))
  assert float(carry) == 1.5


def test_weak_float_carry_against_strong_body_result():
  # JAX: a weak float carry meeting a float32 body result is fine and stays a float32 value.
  out = lax.while_loop(lambda c: c < 3, lambda c: c + np.float32(1), 0.)
  assert float(out) == 3.
  carry, ys = lax.scan(lambda c, x: (c + x, c), 0., np.ones(3, F32))
  assert float(carry) == 3. and ys.dtype == np.float32


# ----------------------------------------------------------------------------- errors

_T = r"(float32|f32)\[\]"
_I = r"(int32|i32)\[\]"


def _bad_if(x):
  if x > 0:
    return x
  return -x


ERROR_CASES = [
    ("cond-branch-dtypes", TypeError, f"(?s){_T}.*{_I}|{_I}.*{_T}",
     lambda: lax.cond(True, lambda x: x, lambda x: x.astype(jnp.int32), 1.)),
    ("cond-branch-shapes", TypeError, r"(f32|float32)\[2\]",
     lambda: lax.cond(True, lambda x: x, lambda x: jnp.stack([x, x]), 1.)),
    ("cond-branch-trees", TypeError, "structure",
     lambda: lax.cond(True, lambda x: (x, x), lambda x: x, 1.)),
    ("switch-branch-dtypes", TypeError, f"(?s){_T}.*{_I}|{_I}.*{_T}",
     lambda: lax.switch(1, [lambda x: x, lambda x: x.astype(jnp.int32)], 1.)),
    ("while-carry-shape", TypeError, "carry input and carry output must have equal types",
     lambda: lax.while_loop(lambda c: c[0] < 3, lambda c: jnp.concatenate([c, c]),
                            jnp.zeros(2))),
    ("scan-carry-dtype", TypeError, "carry input and carry output must have equal types",
     lambda: lax.scan(lambda c, x: (c.astype(jnp.int32), x), F32(1.), jnp.ones(3))),
    ("scan-carry-shape", TypeError, "carry input and carry output must have equal types",
     lambda: lax.scan(lambda c, x: (jnp.stack([c, c]), x), F32(1.), jnp.ones(3))),
    ("cond-pred-nonscalar", TypeError, "Pred must be a scalar",
     lambda: lax.cond(jnp.array([True, False]), lambda x: x, lambda x: x, 1.)),
    ("while-pred-float", TypeError, "cond_fun must return a boolean scalar",
     lambda: lax.while_loop(lambda c: c, lambda c: c - 1., 3.)),
    ("while-pred-nonscalar", TypeError, "cond_fun must return a boolean scalar",
     lambda: lax.while_loop(lambda c: c < 1, lambda c: c - 1., jnp.ones(2))),
    ("switch-index-float", TypeError, "Index type must be an integer",
     lambda: jit(lambda i: lax.switch(i, [lambda x: x, lambda x: -x], 1.))(1.)),
    ("switch-index-bool", TypeError, "Index type must be an integer",
     lambda: lax.switch(True, [lambda x: x, lambda x: -x], 1.)),
    ("switch-empty", ValueError, "Empty branch sequence",
     lambda: lax.switch(0, [], 1.)),
    ("traced-if-in-branch", jaxon.errors.TracerBoolConversionError, "boolean conversion",
     lambda: lax.cond(True, _bad_if, lambda x: x, 1.)),
    ("traced-if-in-scan-body", jaxon.errors.TracerBoolConversionError, "boolean conversion",
     lambda: lax.scan(lambda c, x: (_bad_if(c), x), 1., jnp.ones(2))),
    ("scan-xs-leading-sizes", ValueError, "different leading axis sizes: 3, 4",
     lambda: lax.scan(lambda c, x: (c, x), 0., (jnp.ones(3), jnp.ones(4)))),
    ("scan-length-disagrees", ValueError, "disagrees with leading axis sizes",
     lambda: lax.scan(lambda c, x: (c, x), 0., jnp.ones(3), length=4)),
    ("scan-no-length", ValueError, "no values to scan over and `length` not provided",
     lambda: lax.scan(lambda c, x: (c, x), 0., None)),
    ("scan-body-not-pair", TypeError, "scan body output must be a pair",
     lambda: lax.scan(lambda c, x: c, 0., jnp.ones(3))),
    ("grad-while", ValueError, "Reverse-mode differentiation does not work for lax.while_loop",
     lambda: jaxon.grad(lambda x: lax.while_loop(lambda c: c < 3, lambda c: c * 2, x))(1.)),
    ("grad-fori-traced-bounds", ValueError,
     "Reverse-mode differentiation does not work for lax.while_loop",
     lambda: jit(jaxon.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 2, x)))(1., 3)),
    ("vjp-while", ValueError, "Reverse-mode differentiation does not work for lax.while_loop",
     lambda: jaxon.vjp(_while_counter, _x3)[1](_x3)),
    ("fori-unroll-traced-bounds", ValueError, "Can only use `unroll` in `fori_loop`",
     lambda: jit(lambda n: lax.fori_loop(0, n, lambda i, c: c, 1., unroll=2))(3)),
    ("assoc-scan-leading-sizes", ValueError, "must have the same first dimension",
     lambda: lax.associative_scan(jnp.add, (jnp.ones(3), jnp.ones(4)))),
]


@pytest.mark.parametrize("name,exc,match,thunk", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(name, exc, match, thunk):
  with pytest.raises(exc, match=match):
    thunk()


def test_cond_float_predicate_like_jax():
  assert float(lax.cond(np.float32(0.5), lambda x: x, lambda x: -x, 1.)) == 1.
  assert float(lax.cond(np.float32(0.), lambda x: x, lambda x: -x, 1.)) == -1.


def test_error_message_names_both_branch_types():
  with pytest.raises(TypeError) as info:
    lax.cond(True, lambda x: x, lambda x: x.astype(jnp.int32), 1.)
  msg = str(info.value)
  assert re.search(_T, msg) and re.search(_I, msg), msg


# ----------------------------------------------------------------------------- JAX's values


def test_values_recorded_from_jax():
  """Golden values recorded with JAX 0.10.2 on the same programs."""
  steps = vmap(_newton_sqrt)(np.array([1., 4., 100., 1e4], F32))[1]
  np.testing.assert_array_equal(steps, [0, 4, 6, 10])

  def scan_vector_loss(x):
    h, _ = lax.scan(lambda h, w: (jnp.tanh(jnp.dot(_W, h) * w + h), h * w), x,
                    jnp.arange(1., 4.))
    return jnp.sum(h ** 2)
  np.testing.assert_allclose(jaxon.hessian(scan_vector_loss)(_x3), [
      [-1.175645351409912, -4.884940147399902, 5.07277774810791],
      [-4.884941101074219, -28.887678146362305, 30.000682830810547],
      [5.072778701782227, 30.00067710876465, -31.297748565673828]], rtol=1e-4)

  def rnn_loss(c, xs):
    carry, ys = _scan()(c, xs)
    return jnp.sum(ys) + jnp.sum(carry)
  np.testing.assert_allclose(jaxon.grad(rnn_loss)(_x3, _xs),
                             [0.11822865903377533, -0.18372385203838348, 0.011703139171004295],
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(jaxon.grad(lambda x: jnp.sum(_cond_on_data(x)))(_x3),
                             [1.375846266746521, 1.907165765762329, 1.930662989616394],
                             rtol=1e-5)


def test_fori_loop_float_bounds_like_jax():
  assert float(lax.fori_loop(np.float32(1), 4., lambda i, c: c + i, 0.)) == 6.0


def test_eager_cond_of_the_same_branches_reuses_its_program(monkeypatch):
  """Branches traced before give the same jaxprs again (so the signature and program of
  the eager `cond` are found, not lowered again); other branches, or a branch closing over
  another value, are new ones."""
  from jaxon._src.xla import executable
  compiled = []
  original = executable.compile_primitive
  monkeypatch.setattr(executable, "compile_primitive",
                      lambda *a, **k: compiled.append(a[0].name) or original(*a, **k))
  jaxon.clear_caches()
  x = jnp.arange(3.0)
  for pred in (True, False, True, False):
    want = np.sin(np.arange(3.0)) if pred else np.cos(np.arange(3.0))
    np.testing.assert_allclose(np.asarray(lax.cond(pred, jnp.sin, jnp.cos, x)), want,
                               rtol=1e-6)
  assert compiled.count("cond") == 1
  np.testing.assert_allclose(np.asarray(lax.cond(True, jnp.cos, jnp.sin, x)),
                             np.cos(np.arange(3.0)), rtol=1e-6)
  for scale in (2.0, 3.0):
    c = jnp.full(3, scale)
    np.testing.assert_allclose(np.asarray(lax.cond(True, lambda v, c=c: v * c, jnp.sin, x)),
                               scale * np.arange(3.0))
  assert compiled.count("cond") == 4
