"""jnp.einsum against np.einsum: a table of subscripts (matrix products, batches, traces,
diagonals, ellipses, broadcasting, outer products, implicit output), random expressions
from hypothesis, every optimize mode, dtypes, eager and under jit; second-order gradients
and vmap against a loop; the lowering (one dot_general per pair, no gather)."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from tests.transform_util import check_vmap
from tests.util import check_grads

SETTINGS = settings(max_examples=25, deadline=None)


def _rand(shape, seed=0):
  return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


def _operands(shapes, seed=0):
  return [_rand(s, seed + i) for i, s in enumerate(shapes)]


def _expected(subscripts, operands):
  return np.einsum(subscripts, *[x.astype(np.float64) for x in operands]).astype(np.float32)


def _check(subscripts, operands, what="", **kw):
  want = _expected(subscripts, operands)
  einsum = functools.partial(jnp.einsum, subscripts, **kw)
  for name, fn in (("eager", einsum), ("jit", jaxon.jit(einsum))):
    got = fn(*operands)
    assert got.shape == want.shape and got.dtype == np.float32, f"{what} {name}: {got.shape}"
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5,
                               err_msg=f"{subscripts} {what} {name}")


# (subscripts, operand shapes)
CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("bij,bkj->bki", [(2, 2, 3), (2, 4, 3)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("iji->ij", [(3, 2, 3)]),
    ("iii->i", [(2, 2, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j,k->ijk", [(2,), (3,), (2,)]),
    ("ij,kl", [(2, 2), (3, 1)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...i,...i->...", [(1, 3), (2, 3)]),
    ("i...->...", [(3, 2, 2)]),
    ("...", [(2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("ab,cd,ef->", [(2, 2), (2, 2), (2, 2)]),
    ("iij,jkk,k->i", [(2, 2, 3), (3, 4, 4), (4,)]),
    ("i,->i", [(3,), ()]),
    (",->", [(), ()]),
    ("abc,cd->abd", [(1, 2, 3), (3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ji->", [(2, 3), (3, 2)]),
    ("ijk,k->ij", [(0, 2, 3), (3,)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
]


@pytest.mark.parametrize("subscripts,shapes", CASES, ids=[c[0] or "scalars" for c in CASES])
def test_einsum(subscripts, shapes):
  _check(subscripts, _operands(shapes))


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", "dp", [(1, 2), (0, 1)]])
def test_optimize_modes(optimize):
  _check("ij,jk,kl->il", _operands([(2, 3), (3, 4), (4, 5)]), optimize=optimize)
  _check("iij,jk,k", _operands([(2, 2, 3), (3, 4), (4,)]), optimize=optimize)


@st.composite
def expressions(draw):
  """Random einsum expressions over indices a-e (size 1-3): 1-3 operands of rank 0-3,
  indices sometimes repeated within an operand, explicit or implicit output."""
  sizes = {c: draw(st.integers(1, 3)) for c in "abcde"}
  terms = [draw(st.lists(st.sampled_from("abcde"), max_size=3))
           for _ in range(draw(st.integers(1, 3)))]
  used = sorted(set("".join("".join(t) for t in terms)))
  subscripts = ",".join("".join(t) for t in terms)
  if draw(st.booleans()):
    subscripts += "->" + "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
  shapes = [tuple(sizes[c] for c in t) for t in terms]
  return subscripts, shapes


@SETTINGS
@given(expr=expressions(), seed=st.integers(0, 1000))
def test_random_expressions(expr, seed):
  subscripts, shapes = expr
  _check(subscripts, _operands(shapes, seed))


# (subscripts, shapes) checked to second order, forward and reverse
GRAD_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij,j->ij", [(2, 2, 3), (3,)]),
    ("i,j->ij", [(3,), (2,)]),
    ("...ij,...j->...i", [(2, 2, 3), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ijk,jil->kl", [(2, 3, 2), (3, 2, 2)]),
]


@pytest.mark.parametrize("subscripts,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grads(subscripts, shapes):
  check_grads(lambda *xs: jnp.einsum(subscripts, *xs), _operands(shapes), order=2)


@pytest.mark.parametrize("subscripts,shapes", GRAD_CASES[:7], ids=[c[0] for c in GRAD_CASES[:7]])
def test_vmap(subscripts, shapes):
  check_vmap(lambda *xs: jnp.einsum(subscripts, *xs), _operands(shapes), axes=(0, -1))


def test_interleaved_and_path():
  x, y = _operands([(2, 3), (3, 4)])
  np.testing.assert_allclose(np.asarray(jnp.einsum(x, [0, 1], y, [1, 2], [0, 2])),
                             np.einsum(x, [0, 1], y, [1, 2], [0, 2]), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(jnp.einsum(x, [0, 1], y, [1, 2])),
                             np.einsum(x, [0, 1], y, [1, 2]), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(jnp.einsum(x, [Ellipsis, 1], [Ellipsis])),
                             np.einsum(x, [Ellipsis, 1], [Ellipsis]), rtol=1e-5)
  path, info = jnp.einsum_path("ij,jk,kl->il", *_operands([(2, 3), (3, 4), (4, 5)]))
  assert path == [(1, 2), (0, 1)] and "Optimized FLOP count" in str(info)


DTYPE_CASES = [
    ((np.int32, np.int32), None, np.int32),
    ((np.int8, np.int32), None, np.int32),
    ((np.int8, np.int8), np.int32, np.int32),
    ((np.bool_, np.bool_), None, np.bool_),
    ((np.float16, np.float32), None, np.float32),
    ((np.complex64, np.float32), None, np.complex64),
    ((jnp.bfloat16, jnp.bfloat16), np.float32, np.float32),
]


@pytest.mark.parametrize("dtypes,preferred,result", DTYPE_CASES)
def test_dtypes(dtypes, preferred, result):
  rng = np.random.RandomState(0)
  x, y = (rng.randint(-3, 4, s).astype(dt) for s, dt in zip([(3, 3, 3), (3, 4)], dtypes))
  for subscripts in ("ijj,jk->ik", "iij,jk", "ijk,kl->"):
    got = jnp.einsum(subscripts, x, y, preferred_element_type=preferred)
    assert got.dtype == np.dtype(result), (subscripts, got.dtype)
    wide = np.complex128 if np.dtype(result).kind == "c" else np.float64
    want = np.einsum(subscripts, x.astype(wide), y.astype(wide))
    want = want != 0 if result == np.bool_ else want.astype(result)
    np.testing.assert_allclose(np.asarray(got).astype(wide), want.astype(wide), rtol=1e-2,
                               err_msg=subscripts)


def test_weak_types():
  assert jnp.einsum("i,->i", jnp.ones(3, jnp.bfloat16), 2.0).dtype == jnp.bfloat16
  assert jnp.einsum(",->", 2.0, 3.0).weak_type


def test_lowering():
  x, y = _operands([(5, 2, 3), (5, 3, 4)])
  jaxpr = str(jaxon.make_jaxpr(lambda a, b: jnp.einsum("bij,bjk->bik", a, b))(x, y))
  assert jaxpr.count("dot_general") == 1 and "transpose" not in jaxpr, jaxpr
  jaxpr = str(jaxon.make_jaxpr(lambda a: jnp.einsum("ii->i", a))(np.ones((3, 3), np.float32)))
  assert "gather" not in jaxpr and "dot_general" not in jaxpr, jaxpr
  ops = _operands([(2, 3), (3, 4), (4, 5), (5, 2)])
  jaxpr = str(jaxon.make_jaxpr(lambda *xs: jnp.einsum("ij,jk,kl,lm->im", *xs))(*ops))
  assert jaxpr.count("dot_general") == 3, jaxpr



@pytest.mark.parametrize("groups", [1, 3])
def test_pair_order_leaves_the_least_to_rearrange(groups):
  """Attention's grouped logits: with one group the product only needs a reshape (its
  size-1 axis moves); with more, the transpose keeps the key axis last, where the softmax
  that follows reduces."""
  q, k = _operands([(2, 3, 2, groups, 4), (2, 5, 2, 4)])
  fn = lambda a, b: jnp.einsum("btkgh,bskh->gbkts", a, b)  # noqa: E731
  np.testing.assert_allclose(fn(q, k), np.einsum("btkgh,bskh->gbkts", q, k), rtol=1e-5)
  eqns = jaxon.make_jaxpr(fn)(q, k).jaxpr.eqns
  dot = next(e for e in eqns if e.primitive.name == "dot_general")
  assert dot.outvars[0].aval.shape[-1] == 5, eqns
  assert any(e.primitive.name == "transpose" for e in eqns) == (groups > 1), eqns

ERRORS = [
    (lambda: jnp.einsum("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((4, 2))), ValueError,
     "Size of label"),
    (lambda: jnp.einsum("ij,jk->ik", jnp.ones((2, 3))), ValueError, "operands"),
    (lambda: jnp.einsum("ij", [[1.0]]), TypeError, "einsum requires ndarray"),
    (lambda: jnp.einsum("i->i", jnp.ones(2), out=jnp.ones(2)), NotImplementedError, "out"),
]


@pytest.mark.parametrize("fn,error,match", ERRORS)
def test_errors(fn, error, match):
  with pytest.raises(error, match=match):
    fn()
