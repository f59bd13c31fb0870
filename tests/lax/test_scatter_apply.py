"""`lax.scatter_apply` and `x.at[idx].apply`: a scatter whose update computation is a
scalar function of the operand's value. Values are checked against the loop reference of
test_gather_scatter (each window applies the function in turn, so a repeated element gets
it repeatedly) and against values recorded from JAX 0.10.2; the printed jaxpr against
JAX's. Derivatives, which JAX does not define, are checked by finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import export, lax
from tests.lax.test_gather_scatter import SCATTER_CASES, Mode, np_scatter
from tests.util import F32, I32, check, check_grads, rand

FUNCS = {F32: (lambda v: v * 2.0 + 1.0), I32: (lambda v: v * 3 - 1)}


@pytest.mark.parametrize("case", list(SCATTER_CASES))
def test_scatter_apply(case):
  shape, indices, updates_shape, dn = SCATTER_CASES[case]
  indices = np.asarray(indices, np.int32)
  for dtype, f in FUNCS.items():
    x = rand(shape, dtype)
    for mode in (None, "clip") if "out-of-bounds" in case or "oob" in case else (None,):
      want = np_scatter(x, indices, np.zeros(updates_shape, dtype), dn,
                        lambda old, _, f=f: f(old), Mode.from_any(mode))
      check(f"scatter_apply[{case}, {dtype}, mode={mode}]",
            lambda a, i, f=f, m=mode: lax.scatter_apply(a, i, f, dn, mode=m,
                                                         update_shape=updates_shape),
            [x, indices], want)


def test_at_apply_matches_jax():
  """Values recorded from JAX 0.10.2 (repeated rows get the function twice; with 'clip'
  an index past the end lands on the last row)."""
  x = jnp.arange(12.0).reshape(3, 4)
  np.testing.assert_array_equal(x.at[jnp.array([0, 2, 0])].apply(lambda v: v * 2 + 1),
                                [[3, 7, 11, 15], [4, 5, 6, 7], [17, 19, 21, 23]])
  np.testing.assert_allclose(x.at[:, 1:3].apply(jnp.sqrt),
                             [[0, 1, 1.4142135, 3], [4, 2.236068, 2.4494898, 7],
                              [8, 3, 3.1622777, 11]], rtol=1e-6)
  np.testing.assert_array_equal(x.at[jnp.array([5, -1])].apply(jnp.exp, mode="clip")[2],
                                [np.inf] * 4)
  np.testing.assert_allclose(x.at[jnp.array([5, -1])].apply(jnp.exp)[2],
                             [2.9809580e+03, 8.1030840e+03, 2.2026465e+04, 5.9874141e+04],
                             rtol=1e-6)
  i = jnp.arange(7, dtype=jnp.int32)
  out = i.at[jnp.array([1, 1, 1, 6, 9])].apply(lambda v: v * 3 - 1)
  assert out.dtype == jnp.int32
  np.testing.assert_array_equal(out, [0, 14, 2, 3, 4, 5, 17])


def test_jaxpr_prints_as_jax():
  """JAX 0.10.2 prints scatter's two region params on every scatter: None for a plain one,
  the scalar function for scatter_apply."""
  text = str(jaxon.make_jaxpr(lambda x: x.at[jnp.array([1, 1])].apply(jnp.sin))(
      jnp.zeros(5)))
  assert "update_consts=()\n      update_jaxpr={ lambda ; i:f32[] j:f32[]. let k:f32[] = " \
         "sin i in (k,) }\n    ] b f g" in text, text
  text = str(jaxon.make_jaxpr(lambda x: x.at[1].set(2.0))(jnp.zeros(5)))
  assert "update_consts=()\n      update_jaxpr=None\n" in text, text


def test_one_function_traces_once():
  """Applying the same function again reuses its jaxpr, so eager calls compile once."""
  f = lambda x: x.at[jnp.array([0, 2])].apply(jnp.tanh)
  eqns = [jaxon.make_jaxpr(f)(jnp.zeros(4)).eqns[-1] for _ in range(2)]
  assert eqns[0].params["update_jaxpr"] is eqns[1].params["update_jaxpr"]


def test_jaxpr_text_and_export_round_trip():
  f = lambda x, i: x.at[i].apply(jnp.sin).at[2].set(7.0)
  x, i = jnp.arange(5.0), np.array([1, 3], np.int32)
  closed = jaxon.make_jaxpr(f)(x, i)
  read = jaxon.core.jaxpr_from_text(str(closed), consts=closed.consts)
  np.testing.assert_array_equal(jaxon.jit(jaxon.core.jaxpr_as_fun(read))(x, i)[0], f(x, i))
  g = lambda x, i: x.at[i].apply(jnp.sin, unique_indices=True).sum()
  for fun in (f, g):
    exported = export.deserialize(export.export(jaxon.jit(fun))(x, i).serialize())
    np.testing.assert_array_equal(exported.call(x, i), fun(x, i))
  grad = jaxon.grad(exported.call)(x, i)  # a loaded function stays differentiable
  np.testing.assert_allclose(grad, np.where(np.isin(np.arange(5), i), np.cos(x), 1), rtol=1e-6)


def test_vmap():
  xs = jnp.asarray(rand((3, 2, 4), F32))
  idx = np.array([[0], [1], [0]], np.int32)
  f = lambda x, i: x.at[i].apply(jnp.cos)
  for in_axes in ((0, 0), (0, None), (None, 0)):
    args = [xs if in_axes[0] == 0 else xs[0], idx if in_axes[1] == 0 else idx[0]]
    got = jaxon.jit(jaxon.vmap(f, in_axes=in_axes))(*args)
    want = np.stack([f(args[0][k] if in_axes[0] == 0 else args[0],
                       args[1][k] if in_axes[1] == 0 else args[1]) for k in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(in_axes))


def test_derivatives_with_unique_indices():
  x = rand((3, 4), F32) + 3.0
  f = lambda x: jnp.sum(x.at[jnp.array([2, 0])].apply(jnp.log, unique_indices=True) ** 2)
  check_grads(jaxon.jit(f), (x,), order=2)
  g = jaxon.jit(jaxon.grad(lambda x: jnp.sum(x.at[:, 1:3].apply(jnp.sin))))(x)
  want = np.ones((3, 4), F32)
  want[:, 1:3] = np.cos(x[:, 1:3])
  np.testing.assert_allclose(g, want, rtol=1e-6)


def test_jvp_with_repeated_indices_is_refused():
  with pytest.raises(NotImplementedError, match="unique_indices=True"):
    jaxon.grad(lambda x: x.at[jnp.array([0, 0])].apply(jnp.sin).sum())(jnp.ones(3))


def test_errors():
  x = jnp.ones(3)
  with pytest.raises(TypeError, match="closes over traced values"):
    jaxon.jit(lambda x, c: x.at[0].apply(lambda v: v * c))(x, 2.0)
  with pytest.raises(TypeError, match=r"must return scalars of the operands' dtypes "
                     r"\['i32\[\]'\], got \['f32\[\]'\]"):
    jnp.arange(3).at[0].apply(jnp.sin)
  with pytest.raises(TypeError, match="array of numbers"):
    jaxon.random.key(0)[None].at[0].apply(lambda k: k)
