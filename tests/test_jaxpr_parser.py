"""`jaxon.core.jaxpr_from_text`: every jaxpr jaxon prints reads back into an equal jaxpr.

The corpus covers every primitive whose params can be written as text (each lax primitive,
control flow, nested jit, checkpoint, typed PRNG keys, and jaxprs of grad/jvp/vjp/vmap).
For each, the parsed jaxpr prints the same text and has the same structure, avals, literal
values and params (the same Python types: tuples, lists, dtypes, enum members, named
tuples, jaxprs) up to weak types, which the text does not show. A subset is evaluated
against the original jaxpr, and the parsed functions are differentiated and batched.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
import jaxon.random as jr
import jaxon.scipy as jsp
from jaxon import lax, make_jaxpr
from jaxon._src import dtypes, prng
from jaxon._src.core import ClosedJaxpr, DropVar, Jaxpr, Literal, jaxpr_as_fun
from jaxon._src.lax import linalg_lapack
from jaxon._src.lax.custom_derivatives import UnsavedRule, _SavedRule
from jaxon.core import jaxpr_from_text, jaxpr_to_text
from tests.conftest import flag_set

F = np.linspace(-1.5, 1.7, 6, dtype=np.float32).reshape(2, 3)
P = np.abs(F) + 0.5
I = np.arange(6, dtype=np.int32).reshape(2, 3) - 2  # noqa: E741
SQ = np.array([[2., .5, .1], [.5, 3., .2], [.1, .2, 4.]], np.float32)
IDX = np.array([1, 0], np.int32)
KEY = jr.key(0)

_UNARY = ["neg", "sign", "floor", "ceil", "is_finite", "abs", "exp", "exp2", "log", "log1p",
          "expm1", "sqrt", "rsqrt", "cbrt", "logistic", "sin", "cos", "tan", "asin", "acos",
          "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "lgamma", "digamma",
          "erf", "erfc", "erf_inv", "bessel_i0e", "bessel_i1e"]


def _custom_linear_solve(x):
  return [lax.custom_linear_solve(lambda v: 2 * v, x[0], lambda mv, b: b / 2),
          lax.custom_linear_solve(lambda v: 2 * v, x[0], lambda mv, b: b / 2, symmetric=True)]


def _grad_control_flow(x):
  return (lax.fori_loop(0, 2, lambda i, c: jnp.sin(c) * c, x).sum()
          + lax.cond(x[0, 0] > 0, jnp.sin, jnp.cos, x).sum()
          + lax.scan(lambda c, y: (c * y, c), 1., x[0])[0])


CORPUS: list[tuple[str, Callable, tuple]] = [
    ("unary", lambda x: [getattr(lax, n)(x) for n in _UNARY], (P * 0.5,)),
    ("round", lambda x: [lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), lax.round(x)],
     (F,)),
    ("binary", lambda x, y: [lax.add(x, y), lax.sub(x, y), lax.mul(x, y), lax.div(x, y),
                             lax.max(x, y), lax.min(x, y), lax.pow(x, y), lax.atan2(x, y),
                             lax.rem(x, y), lax.nextafter(x, y)], (P, P[::-1])),
    ("compare", lambda x, y: [lax.eq(x, y), lax.ne(x, y), lax.lt(x, y), lax.le(x, y),
                              lax.gt(x, y), lax.ge(x, y)], (F, F[::-1])),
    ("bits", lambda x, y: [x & y, x | y, x ^ y, ~x, lax.shift_left(x, 2),
                           lax.shift_right_arithmetic(x, 1), lax.shift_right_logical(x, 1),
                           lax.population_count(x), lax.clz(x)], (I, I[::-1])),
    ("unsigned_and_bool", lambda u, b: [(u >> 1) + jnp.uint32(7), jnp.logical_not(b) & True],
     (I.astype(np.uint32), F > 0)),
    ("complex", lambda x: [lax.complex(x, x), lax.conj(lax.complex(x, x)), lax.real(x * 1j),
                           lax.imag(x + 2j), jnp.exp(x * (1 - 2j)), jnp.abs(x + 1j)], (F,)),
    ("integer_pow", lambda x: [x ** 3, lax.integer_pow(x, -2)], (P,)),
    ("special", lambda a, x: [lax.igamma(a, x), lax.igammac(a, x), lax.igamma_grad_a(a, x),
                              lax.zeta(a + 1, x), lax.polygamma(jnp.ones_like(a), x),
                              lax.regularized_incomplete_beta_p.bind(a, x, x / 4)],
     (P, P[::-1])),
    ("convert", lambda x: [x.astype(jnp.float16), x.astype(jnp.bfloat16).astype(jnp.float32),
                           x.astype(jnp.int8), lax.bitcast_convert_type(x, jnp.int32),
                           lax.convert_element_type(x, jnp.uint8)], (F,)),
    ("literals", lambda x: [x + np.float32(0.1), x * 1e30 + 1e-30, x + jnp.nan, x - jnp.inf,
                            x + jnp.float32(2) + jnp.array(3, jnp.int8),
                            x + jnp.bfloat16(0.1), x * -2.5, x * np.float16(1 / 3)], (F,)),
    ("clamp_select", lambda x: [jnp.clip(x, -1, 1), lax.clamp(-0.5, x, 0.5),
                                lax.select(x > 0, x, -x),
                                lax.select_n(jnp.int32(1), x, x * 2)], (F,)),
    ("shapes", lambda x: [x.reshape(3, 2), x.T, x[None, :, None][0, :, 0], lax.rev(x, (0, 1)),
                          jnp.concatenate([x, x], 1), lax.pad(x, 0., ((1, 0, 1), (0, -1, 0))),
                          jnp.tile(x, (2, 1)), lax.iota(jnp.int32, 4),
                          lax.broadcasted_iota(jnp.float32, (2, 3), 1)], (F,)),
    ("slicing", lambda x, i: [x[1:, ::2], lax.dynamic_slice(x, (i, 0), (1, 2)),
                              lax.dynamic_update_slice(x, x[:1, :2], (i, 1)), x[:, i]],
     (F, np.int32(1))),
    ("gather_scatter", lambda x, idx: [x[idx, 1:], x.at[0, idx].add(5.), x.at[idx].set(0.),
                                       x.at[idx].mul(2.), x.at[idx].min(0.),
                                       x.at[idx].max(0.),
                                       x.at[idx].get(mode="fill", fill_value=-1.)], (F, IDX)),
    ("reductions", lambda x: [jnp.sum(x), jnp.prod(x, 0), jnp.max(x, 1), jnp.min(x),
                              jnp.argmax(x, 1), jnp.argmin(x, 0), jnp.any(x > 0),
                              jnp.all(x > 0, 1), lax.reduce_xor(x > 0, (0,)),
                              jsp.special.logsumexp(x)], (F,)),
    ("reduce_general", lambda x: [lax.reduce(x, 0., lax.add, (0,)),
                                  lax.reduce((x, x), (0., 1.),
                                             lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,))],
     (F,)),
    ("cumulative", lambda x: [jnp.cumsum(x, 1), jnp.cumprod(x, 0),
                              lax.cummax(x, 1, reverse=True), lax.cummin(x, 0),
                              lax.cumlogsumexp(x, 1)], (F,)),
    ("windows", lambda x: [lax.reduce_window(x, 0., lax.add, (1, 2), (1, 1), "VALID"),
                           lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME"),
                           lax.reduce_window(x, jnp.inf, lax.min, (1, 2), (1, 1), "VALID"),
                           lax.reduce_window((x, x), (0., 1.),
                                             lambda a, b: (a[0] + b[0], a[1] * b[1]),
                                             (1, 2), (1, 1), "VALID")], (F,)),
    ("dot", lambda x, y: [x @ y.T, lax.dot(x, y.T, precision=lax.Precision.HIGHEST),
                          lax.dot_general(x, y, (((1,), (1,)), ((0,), (0,))),
                                          preferred_element_type=jnp.float32)], (F, F[::-1])),
    ("conv", lambda x, w: [lax.conv(x, w, (1, 1), "SAME"),
                           lax.conv_general_dilated(x, w, (1, 1), ((1, 0), (0, 1)),
                                                    lhs_dilation=(2, 1),
                                                    dimension_numbers=("NCHW", "OIHW", "NHWC"))],
     (F[None, None], F[None, None, :, :2])),
    ("sort", lambda x: [jnp.sort(x, 0), jnp.argsort(x), lax.sort((x, -x), num_keys=1),
                        lax.top_k(x, 2)], (F,)),
    ("fft", lambda x: [jnp.fft.fft(x), jnp.fft.irfft(jnp.fft.rfft(x)), jnp.fft.ifft2(x)], (F,)),
    ("linalg", lambda a: [jnp.linalg.inv(a), jnp.linalg.cholesky(a), jnp.linalg.qr(a),
                          jnp.linalg.eigh(a), jnp.linalg.svd(a), jsp.linalg.lu(a),
                          lax.linalg.triangular_solve(a, a, left_side=True, lower=True)],
     (SQ,)),
    ("linalg_more", lambda a: [jnp.linalg.eig(a)[0], jsp.linalg.schur(a),
                               jsp.linalg.hessenberg(a), lax.linalg.tridiagonal(a),
                               lax.linalg.tridiagonal_solve(a[0], a[1], a[2], a),
                               linalg_lapack.householder_product(*linalg_lapack.geqrf(a)),
                               lax.linalg.lu_pivots_to_permutation(np.array([2, 2, 2],
                                                                            np.int32), 3),
                               lax.scatter_sub(a, np.array([[1]], np.int32), a[:1],
                                               lax.ScatterDimensionNumbers((1,), (0,), (0,)))],
     (SQ,)),
    ("custom_linear_solve", _custom_linear_solve, (F,)),
    ("cond", lambda x: lax.cond(x.sum() > 0, lambda y: y + 1., lambda y: y * 2., x), (F,)),
    ("cond_consts", lambda x: lax.cond(x[0, 0] > 0, lambda: x * F[0], lambda: x - 1.), (F,)),
    ("switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda y: y], x),
     (np.int32(1), F)),
    ("cond_literal_operands", lambda p: lax.cond(p, lambda a, b: a + b, lambda a, b: a - b,
                                                 2., 3.), (True,)),
    ("while", lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2),
                                       (0, x)), (F,)),
    ("fori_dynamic", lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, x), (F, np.int32(2))),
    ("scan", lambda x: lax.scan(lambda c, y: (c * F[0] + y, (c, y.sum())), F[0], x,
                                reverse=True, unroll=2), (F,)),
    ("fori", lambda x: lax.fori_loop(0, 3, lambda i, c: c + i, x), (F,)),
    ("map_and_associative_scan", lambda x: [lax.map(jnp.sum, x),
                                            lax.associative_scan(jnp.add, x, axis=1)], (F,)),
    ("jit", lambda x: jaxon.jit(lambda y: jnp.ones(3) * y)(x[0]), (F,)),
    ("jit_consts", lambda x: jaxon.jit(lambda y: y + np.arange(3, dtype=np.float32))(x), (F,)),
    ("jit_nested", lambda x: jaxon.jit(lambda y: jaxon.jit(jnp.sin)(y) * 2)(x), (F,)),
    ("jit_literal_args", lambda x: jaxon.jit(lambda a, b: a * b)(x, 2.), (F,)),
    ("remat", lambda x: jaxon.checkpoint(lambda y: jnp.sin(jnp.sin(y)))(x), (F,)),
    ("remat_policy", lambda x: jaxon.checkpoint(
        jnp.sin, policy=jaxon.checkpoint_policies.dots_saveable)(x), (F,)),
    ("checkpoint_name", lambda x: jaxon.checkpoint(
        lambda y: jnp.sin(jaxon.ad_checkpoint.checkpoint_name(y, "s")))(x), (F,)),
    ("stop_gradient", lambda x: lax.stop_gradient(x) * x, (F,)),
    ("random_uint32_keys", lambda s: jr.normal(jr.PRNGKey(s), (3,)), (np.int32(0),)),
    ("random_typed_keys", lambda k: [jr.split(k), jr.fold_in(k, 3), jr.uniform(k, (2,)),
                                     jr.bits(k, (2,), jnp.uint32),
                                     jr.wrap_key_data(jr.key_data(k)), jr.clone(k)], (KEY,)),
    ("random_samplers", lambda k: [jr.bernoulli(k, 0.3, (3,)), jr.randint(k, (2,), 0, 5),
                                   jr.gamma(k, 2., (2,)), jr.permutation(k, 4)], (KEY,)),
    ("key_const", lambda x: jr.uniform(KEY, (2,)) + x[0, :2], (F,)),
    ("threefry", prng.threefry_2x32,
     (np.array([1, 2], np.uint32), np.arange(4, dtype=np.uint32))),
    ("grad", jaxon.grad(lambda x: jnp.sum(jnp.tanh(x) * jnp.sin(x))), (F,)),
    ("grad_control_flow", jaxon.grad(_grad_control_flow), (F,)),
    ("grad_grad", jaxon.grad(jaxon.grad(lambda x: jnp.sin(x) ** 3)), (np.float32(0.3),)),
    ("grad_remat_jit", jaxon.grad(lambda x: jaxon.checkpoint(jaxon.jit(jnp.sin))(x).sum()),
     (F,)),
    ("jvp", lambda x, t: jaxon.jvp(lambda y: (jnp.exp(y), jnp.sort(y)), (x,), (t,)), (F, F)),
    ("vjp", lambda x, t: jaxon.vjp(lambda y: jnp.cumsum(y, 1) @ y.T, x)[1](t),
     (F, SQ[:2, :2])),
    ("vmap", jaxon.vmap(lambda x, i: (jnp.dot(x, x), x[i])), (F, IDX)),
    ("vmap_control_flow", jaxon.vmap(lambda p, x: (
        lax.cond(p, jnp.sin, jnp.cos, x),
        lax.while_loop(lambda c: c.sum() < 10., lambda c: c + 1., x))), (F[:, 0] > 0, F)),
    ("jnp_misc", lambda x: [jaxon.nn.softmax(x), jaxon.nn.gelu(x), jnp.where(x > 0, x, 0.),
                            jnp.linspace(0., 1., 5), jnp.triu(x), jnp.roll(x, 1),
                            jnp.unique(I, size=3), jnp.polyval(F[0], x)], (F,)),
]
_CASES = {name: (fun, args) for name, fun, args in CORPUS}


def _assert_same(original: Any, parsed: Any, where: str, names: dict) -> None:
  """`parsed` is `original` up to weak types: the same structure, variables bound and used
  in the same places, avals, literal values (bit for bit), and params of the same types."""
  if isinstance(original, ClosedJaxpr):
    assert type(parsed) is ClosedJaxpr, where
    assert [id(c) for c in parsed.consts] == [id(c) for c in original.consts], where
    return _assert_same(original.jaxpr, parsed.jaxpr, where, {})
  if isinstance(original, Jaxpr):
    assert type(parsed) is Jaxpr, where
    atoms = lambda j: [*j.constvars, *j.invars,  # noqa: E731
                       *(a for e in j.eqns for a in (*e.outvars, *e.invars)), *j.outvars]
    assert len(atoms(original)) == len(atoms(parsed)), where
    for a, b in zip(atoms(original), atoms(parsed)):
      assert type(a) is type(b), where
      assert (a.aval.shape, a.aval.dtype) == (b.aval.shape, b.aval.dtype), where
      if type(a) is Literal:
        assert np.asarray(a.val).tobytes() == np.asarray(b.val).tobytes(), (where, a, b)
      elif type(a) is not DropVar:
        assert names.setdefault(a, b) is b, f"{where}: a variable read back as another"
    for e, f in zip(original.eqns, parsed.eqns):
      assert e.primitive is f.primitive and set(e.params) == set(f.params), where
      for key in e.params:
        _assert_same(e.params[key], f.params[key], f"{where}/{e.primitive}.{key}", names)
    return
  if isinstance(parsed, (_SavedRule, UnsavedRule)):  # a custom rule: traced, or named
    assert callable(original), where
    return
  assert type(original) is type(parsed), f"{where}: {original!r} read as {parsed!r}"
  if isinstance(original, (tuple, list)):
    assert len(original) == len(parsed), where
    for a, b in zip(original, parsed):
      _assert_same(a, b, where, names)
  elif callable(original) and not isinstance(original, type):
    assert original is parsed, where
  elif original == original:  # noqa: PLR0124  (a NaN fill_value equals nothing)
    assert original == parsed, f"{where}: {original!r} read as {parsed!r}"


def _round_trip(jaxpr: ClosedJaxpr) -> ClosedJaxpr:
  """Saved text reads back equal and prints the same; so does plain text, which differs
  from saved text only where that carries custom derivative rules (plain text names them)."""
  text, consts = jaxpr_to_text(jaxpr)
  plain = str(jaxpr)
  assert text == plain or "jvp_jaxpr_fun=" in text or "fwd_jaxpr_thunk=" in text
  parsed = jaxpr_from_text(text, consts)
  assert str(parsed) == text
  _assert_same(jaxpr, parsed, "", {})
  if text != plain:
    parsed_plain = jaxpr_from_text(plain, consts)
    assert str(parsed_plain) == plain
    _assert_same(jaxpr, parsed_plain, "", {})
  return parsed


@pytest.mark.parametrize("name", list(_CASES))
def test_round_trip(name: str):
  fun, args = _CASES[name]
  _round_trip(make_jaxpr(fun)(*args))


def test_round_trip_under_x64(x64):
  for name in ("while", "literals", "random_uint32_keys", "random_typed_keys",
               "gather_scatter", "scan", "cond_literal_operands"):
    fun, args = _CASES[name]
    _round_trip(make_jaxpr(fun)(*args))


def _unkeyed(x: Any) -> np.ndarray:
  return np.asarray(jr.key_data(x) if dtypes.is_extended(x.dtype) else x)


@pytest.mark.parametrize("name", ["literals", "gather_scatter", "cond_consts", "jit_consts",
                                  "scan", "while", "random_typed_keys", "key_const", "conv",
                                  "dot", "custom_linear_solve", "complex", "remat_policy"])
def test_parsed_jaxpr_computes_the_same(name: str):
  """Bit for bit what the original jaxpr computes (both in one compiled program)."""
  fun, args = _CASES[name]
  original = make_jaxpr(fun)(*args)
  parsed = jaxpr_from_text(*jaxpr_to_text(original))
  leaves = jaxon.tree_leaves(args)
  want, got = jaxon.jit(lambda *xs: (jaxpr_as_fun(original)(*xs),
                                     jaxpr_as_fun(parsed)(*xs)))(*leaves)
  assert len(want) == len(got)
  for w, g in zip(want, got):
    assert (w.shape, w.dtype) == (g.shape, g.dtype)
    np.testing.assert_array_equal(_unkeyed(g), _unkeyed(w))


def _program(x):
  """A scalar function through every kind of nested jaxpr that differentiates."""
  y = jaxon.jit(lambda a: jnp.sin(a) * 1.5)(x)
  y = lax.cond(y > 0, lambda a: a ** 3, jnp.cos, y)
  y = lax.scan(lambda c, w: (jnp.tanh(c * w), c), y, np.array([0.5, 2.], np.float32))[0]
  return jaxon.checkpoint(lambda a: jnp.exp(a) * x)(y)


def _loaded(fun: Callable, *args: Any) -> Callable:
  """`fun` saved as text and read back: the function of its parsed jaxpr."""
  parsed = jaxpr_from_text(*jaxpr_to_text(make_jaxpr(fun)(*args)))
  return lambda *xs: jaxpr_as_fun(parsed)(*xs)[0]


def test_parsed_function_differentiates_to_any_order():
  """Derivatives up to third order and a JVP match the original function's, and the first
  derivative matches a central difference (all in one compiled program)."""
  loaded = _loaded(_program, 0.7)
  x, h = np.float32(0.7), np.float32(1e-2)
  derivatives = lambda f: (f(x), jaxon.grad(f)(x), jaxon.grad(jaxon.grad(f))(x),  # noqa: E731
                           jaxon.grad(jaxon.grad(jaxon.grad(f)))(x),
                           jaxon.jvp(f, (x,), (np.float32(2.),)))
  want, got, difference = jaxon.jit(lambda: (
      derivatives(_program), derivatives(loaded), (loaded(x + h) - loaded(x - h)) / (2 * h)))()
  for w, g in zip(jaxon.tree_leaves(want), jaxon.tree_leaves(got)):
    np.testing.assert_allclose(g, w, rtol=1e-6)
  np.testing.assert_allclose(difference, got[1], rtol=1e-3)


def test_parsed_function_batches():
  loaded = _loaded(_program, 0.7)
  xs = np.array([0.3, -0.5, 1.2], np.float32)
  batched, looped = jaxon.jit(lambda v: (jaxon.vmap(loaded)(v),
                                         jnp.stack([loaded(x) for x in v])))(xs)
  np.testing.assert_allclose(batched, looped, rtol=1e-6)


def test_nested_consts_in_text_order():
  """`jaxpr_to_text` gives the values of every constvar in the text, nested ones included,
  and `jaxpr_from_text` puts each back in its jaxpr."""
  outer, inner = np.arange(3, dtype=np.float32), np.full(3, 2., np.float32)

  def f(x):
    y = jaxon.jit(lambda a: a * inner)(x) + outer
    return lax.cond(x[0] > 0, lambda: y * outer, lambda: y)
  jaxpr = make_jaxpr(f)(np.ones(3, np.float32))
  text, consts = jaxpr_to_text(jaxpr)
  assert text.startswith("{ lambda a:f32[3] b:f32[3]; c:f32[3]. let")
  assert "jaxpr={ lambda e:f32[3]; c:f32[3]." in text
  in_text_order = [*jaxpr.consts, *jaxpr.eqns[0].params["jaxpr"].consts]
  assert [id(c) for c in consts] == [id(c) for c in in_text_order]
  np.testing.assert_array_equal(np.asarray(consts[2]), inner)
  _round_trip(jaxpr)
  with pytest.raises(ValueError, match="more constvars than the 2 consts given"):
    jaxpr_from_text(text, consts[:2])
  with pytest.raises(ValueError, match="4 consts given for the 3 constvars"):
    jaxpr_from_text(text, [*consts, outer])
  with pytest.raises(ValueError, match="const 1 is f32.2. but its constvar is f32.3."):
    jaxpr_from_text(text, [outer, outer[:2], inner])


def test_literal_types_are_printed_where_the_equation_does_not_tell():
  """A literal prints bare where its equation's other operands or outputs give its dtype,
  and with its type (as JAX prints every literal) where they do not."""
  jaxpr = make_jaxpr(lambda x: x * 3. + jnp.array(3, jnp.int8).astype(jnp.float32))(
      np.float32(1))
  assert str(jaxpr) == (
      "{ lambda ; a:f32[]. let\n"
      "    b:f32[] = mul a 3.0\n"
      "    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] 3:i8[]\n"
      "    d:f32[] = add b c\n"
      "  in (d,) }")
  literal = _round_trip(jaxpr).eqns[1].invars[0]
  assert literal.aval.dtype == np.int8 and literal.val == 3


# Printed by JAX 0.10.2's make_jaxpr for `_jax_while` below: JAX types every literal.
_JAX_WHILE_TEXT = """\
{ lambda ; a:f32[3]. let
    b:i32[] c:f32[3] = while[
      body_jaxpr={ lambda ; d:i32[] e:f32[3]. let
          f:i32[] = add d 1:i32[]
          g:f32[3] = mul e 2.0:f32[]
        in (f, g) }
      body_nconsts=0
      cond_jaxpr={ lambda ; h:i32[] i:f32[3]. let
          j:bool[] = lt h 5:i32[]
        in (j,) }
      cond_nconsts=0
    ] 0:i32[] a
  in (b, c) }"""


def _jax_while(x):
  return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2.), (0, x))


def test_reads_jax_text_with_typed_literals():
  parsed = jaxpr_from_text(_JAX_WHILE_TEXT)
  assert str(parsed) == str(make_jaxpr(_jax_while)(np.ones(3, np.float32)))


def test_layout_does_not_matter():
  jaxpr = make_jaxpr(_CASES["cond_consts"][0])(F)
  for width in (20, 200):
    parsed = jaxpr_from_text(jaxpr.pretty_print(width=width), jaxpr.consts)
    assert str(parsed) == str(jaxpr)


def test_variable_names_that_are_keywords_or_primitive_names():
  """Past 26 variables names have two letters: `eq`, `in`, `ne`, `or` are variables too."""
  def chain(x):
    for _ in range(400):
      x = jnp.sin(x)
    return x
  text = str(_round_trip(make_jaxpr(chain)(1.)))
  assert all(f" = sin {name}\n" in text for name in ("eq", "in", "ne", "or"))


def test_weak_types_come_from_abstract_evaluation():
  """The text shows no weak types: invars are strong and each equation's outputs take the
  weak type its primitive gives."""
  parsed = jaxpr_from_text("{ lambda ; a:f32[]. let b:f32[] = convert_element_type["
                           "new_dtype=float32 weak_type=True] a; c:f32[] = sin b in (c,) }")
  assert not parsed.in_avals[0].weak_type
  assert [e.outvars[0].aval.weak_type for e in parsed.eqns] == [True, True]


def test_hidden_prng_layout_is_read_from_the_flag():
  """`random_bits` prints without its bit layout: reading it takes the flag's value, as
  JAX reads the flag when it lowers."""
  text = str(make_jaxpr(lambda k: jr.bits(k, (2,)))(KEY))
  for layout in (True, False):
    with flag_set("jax_threefry_partitionable", layout):
      eqn = next(e for e in jaxpr_from_text(text).eqns if e.primitive.name == "random_bits")
    assert eqn.params["partitionable"] is layout


UNREADABLE = [
    ("pure_callback", lambda x: jaxon.pure_callback(
        np.sin, jaxon.ShapeDtypeStruct(x.shape, x.dtype), x)),
    ("debug_callback", lambda x: jaxon.debug.callback(print, x) or x),
    ("debug_print", lambda x: jaxon.debug.print("{}", x) or x),
    ("policy of `remat2`: <function <lambda>",
     jaxon.checkpoint(jnp.sin, policy=lambda *_, **__: True)),
    ("policy of `remat2`: <function checkpoint_policies.save_only_these_names", jaxon.checkpoint(
        jnp.sin, policy=jaxon.checkpoint_policies.save_only_these_names("s"))),
]


@pytest.mark.parametrize("what,fun", UNREADABLE, ids=[f"{i}" for i in range(len(UNREADABLE))])
def test_python_callables_are_refused_when_saved(what: str, fun: Callable):
  """A program whose text names Python functions says so when it is saved."""
  jaxpr = make_jaxpr(fun)(F)
  with pytest.raises(ValueError, match=f"line [0-9]+, column [0-9]+: .*{what}") as info:
    jaxpr_to_text(jaxpr)
  assert "cannot be read back" in str(info.value)


MALFORMED = [
    ("{ lambda ; a:f32[]. let b:f32[] = sin a in (b,)", "expected '}' closing the jaxpr"),
    ("{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) } extra", "expected the end of the text"),
    ("{ lambda ; a:f32[]. let\n    b:f32[] = frobnicate a\n  in (b,) }",
     "line 2, column 15: 'frobnicate' is not a primitive"),
    ("{ lambda ; a:f31[]. let  in (a,) }", "column 14: unknown dtype 'f31'"),
    ("{ lambda ; a:f32[]. let b:f32[] = sin z in (b,) }", "variable z is not bound"),
    ("{ lambda ; a:f32[]. let b:f32[] = sin a in (z,) }", "expected an output variable"),
    ("{ lambda ; a:f32[]. let b:f32[] = sin a; b:f32[] = cos a in (b,) }",
     "variable b is bound twice"),
    ("{ lambda ; a:f32[]. let b:f32[3] = sin a in (b,) }",
     "`sin` gives f32.. but the text binds f32.3."),
    ("{ lambda ; a:f32[] c:i32[]. let b:f32[] = add a c in (b,) }",
     "`add` rejects these operands or params: TypeError: lax.add requires"),
    ("{ lambda ; a:u8[]. let b:u8[] = add a 300:u8[] in (b,) }", "300 does not fit uint8"),
    ("{ lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[3] in (b,) }",
     "a literal is a scalar, not f32.3."),
    ("{ lambda ; a:f32[3]. let b:f32[] = reduce_sum[axes=(0,) a in (b,) }",
     "expected '=' after a, found 'in'"),
    ("{ lambda ; a:f32[3]. let b:f32[] = reduce_sum[axes=Axes(0)] a in (b,) }",
     "param axes of `reduce_sum`: `Axes.....` is not a value"),
    ("{ lambda ; a:f32[3]. let b:f32[] = reduce_sum[axes=<function f at 0xXX>] a in (b,) }",
     "is a Python object, which a jaxpr's text shows by name only"),
    ("{ lambda ; a:f32[3]. let b:f32[] = reduce_sum[axes=(0,] a in (b,) }",
     "expected a param value, found ']'"),
    ("{ lambda ; a:key<philox>[]. let  in (a,) }", "unknown dtype 'key<philox>'"),
    ("", "column 1: expected '{' .a jaxpr., found the end of the text"),
]


@pytest.mark.parametrize("text,message", MALFORMED, ids=[f"{i}" for i in range(len(MALFORMED))])
def test_malformed_text(text: str, message: str):
  with pytest.raises(ValueError, match=message):
    jaxpr_from_text(text)


def test_text_must_be_a_string():
  jaxpr = make_jaxpr(jnp.sin)(1.)
  with pytest.raises(TypeError, match=r"takes the text of a jaxpr \(str\(jaxpr\)\), got "
                     "ClosedJaxpr"):
    jaxpr_from_text(jaxpr)
