"""JVP, transpose and batching rules of the lax reductions, checked by the generic harness:
finite differences to order 2 (forward and reverse), vmap against per-example results (batch
axis at 0, 1, -1 and mixed with unmapped arguments), and jit of the transformations.

Inputs for max/min have no ties (finite differences are meaningless there); ties, zeros in
products and the integer-valued reductions are tested separately against exact oracles."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon._src import dtypes
from tests.transform_util import Case, check_transforms, check_vmap
from tests.util import rand_distinct as rand

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)



def rand_int(shape, dtype, seed=0):
  rng = np.random.RandomState(seed)
  if np.dtype(dtype) == np.bool_:
    return rng.rand(*shape) > 0.5
  return rng.randint(-8, 8, shape).astype(dtype)


def finite(x):
  """Windows that hold only padding reduce to +-inf, which finite differences turn into
  NaN; map them to 0 (their tangent is 0 either way)."""
  return lax.select(lax.is_finite(x), x, lax.full_like(x, 0))


def _argmax_pair(x, axis):
  """(max, argmax) by a variadic reduction over values and indices."""
  indices = lax.broadcasted_iota(np.int32, x.shape, axis)

  def better(acc, elem):
    (a, i), (b, j) = acc, elem
    pick = lax.bitwise_or(lax.gt(a, b), lax.bitwise_and(lax.eq(a, b), lax.lt(i, j)))
    return lax.select(pick, a, b), lax.select(pick, i, j)
  return lax.reduce((x, indices), (np.array(-np.inf, x.dtype), np.int32(0)), better, (axis,))


def _window(op, init, *case):
  return lambda x: finite(lax.reduce_window(x, np.array(init, x.dtype), op, *case))


def _general(computation, init, axes):
  return lambda x: lax.reduce(x, np.array(init, x.dtype), computation, axes)


_mul = lambda a, b: a * b  # noqa: E731  (not lax.mul: a general computation)
CASES = [
    # over axes
    Case("reduce_sum_02", lambda x: lax.reduce_sum(x, (0, 2)), ((2, 3, 4),)),
    Case("reduce_sum_0", lambda x: lax.reduce_sum(x, (0,)), ((5,),)),
    Case("reduce_sum_none", lambda x: lax.reduce_sum(x, ()), ((2, 3),), f64=True),
    Case("reduce_prod_02", lambda x: lax.reduce_prod(x, (0, 2)), ((2, 3, 4),)),
    Case("reduce_prod_1", lambda x: lax.reduce_prod(x, (1,)), ((3, 4),), f64=True),
    Case("reduce_max_1", lambda x: lax.reduce_max(x, (1,)), ((2, 3, 4),)),
    Case("reduce_max_01", lambda x: lax.reduce_max(x, (0, 1)), ((3, 4),), f64=True),
    Case("reduce_min_02", lambda x: lax.reduce_min(x, (0, 2)), ((2, 3, 4),)),
    Case("reduce_max_of_product", lambda x, y: lax.reduce_max(lax.mul(x, y), (1,)),
         ((2, 3), (2, 3))),
    Case("reduce_prod_of_product", lambda x, y: lax.reduce_prod(lax.mul(x, y), (0,)),
         ((2, 3), (2, 3))),
    # cumulative, forwards and in reverse
    Case("cumsum", lambda x: lax.cumsum(x, 1), ((2, 5),)),
    Case("cumsum_reverse", lambda x: lax.cumsum(x, 0, True), ((5, 3),)),
    Case("cumprod", lambda x: lax.cumprod(x, 1), ((2, 5),)),
    Case("cumprod_reverse", lambda x: lax.cumprod(x, 0, True), ((5, 3),), f64=True),
    Case("cummax", lambda x: lax.cummax(x, 1), ((2, 5),)),
    Case("cummax_reverse", lambda x: lax.cummax(x, 0, True), ((5, 3),), f64=True),
    Case("cummin_reverse", lambda x: lax.cummin(x, 1, True), ((2, 5),)),
    Case("cumlogsumexp", lambda x: lax.cumlogsumexp(x, 1), ((2, 5),)),
    Case("cumlogsumexp_reverse", lambda x: lax.cumlogsumexp(x, 0, True), ((5, 3),),
         f64=True),
    # windows: strides, padding (also negative), base and window dilation
    Case("window_sum_same_strided", _window(lax.add, 0, (2, 3), (2, 2), "SAME"), ((5, 6),)),
    Case("window_sum_base_dilated", _window(lax.add, 0, (2, 2), (1, 2), ((1, 0), (2, 1)),
                                            (2, 1)), ((5, 6),)),
    Case("window_sum_dilated", _window(lax.add, 0, (3, 3), (2, 3), ((2, 1), (-1, 1)), (1, 2),
                                       (1, 2)), ((5, 6),)),
    Case("window_max_padded", _window(lax.max, -np.inf, (3, 2), (2, 1), ((1, 2), (0, 1))),
         ((5, 6),)),
    Case("window_max_dilated", _window(lax.max, -np.inf, (2, 2), (2, 3), ((2, 1), (-1, 1)),
                                       (1, 2), (1, 2)), ((5, 6),), f64=True),
    Case("window_min_base_dilated", _window(lax.min, np.inf, (2, 2), (1, 2), ((1, 0), (2, 1)),
                                            (2, 1)), ((5, 6),)),
    # general computations
    Case("reduce_general_product_02", _general(_mul, 1, (0, 2)), ((2, 3, 4),)),
    Case("reduce_general_logaddexp", _general(jnp.logaddexp, -np.inf, (1,)), ((2, 3),)),
    Case("reduce_general_max_value", lambda x: _argmax_pair(x, 1)[0], ((2, 3),)),
]


@pytest.mark.parametrize("case,dtype",
                         [(c, F32) for c in CASES] + [(c, F64) for c in CASES if c.f64],
                         ids=repr)
def test_transforms(request, case, dtype):
  if dtype == F64:
    request.getfixturevalue("x64")
  check_transforms(case.fun, tuple(rand(s, dtype, seed) for seed, s in enumerate(case.shapes)))


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
@pytest.mark.parametrize("int_dtype", [np.int32, np.bool_], ids=str)
def test_bitwise_reduction_vmap(name, int_dtype):
  op = getattr(lax, name)
  check_vmap(lambda x: op(x, (0, 2)), (rand_int((2, 3, 4), int_dtype),))


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
def test_bitwise_reduction_tangent_is_float0_zero(name):
  x = rand_int((3, 4), np.int32)
  out, tangent = jaxon.jvp(lambda x: getattr(lax, name)(x, (1,)), (x,),
                           (np.zeros(x.shape, dtypes.float0),))
  assert tangent.dtype == dtypes.float0 and tangent.shape == (3,), name


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis,index_dtype", [((5,), 0, np.int32),
                                                    ((2, 3, 4), 1, np.int8)], ids=str)
def test_arg_reduction_vmap_keeps_index_dtype(name, shape, axis, index_dtype):
  op = getattr(lax, name)
  f = lambda x: op(x, axis, index_dtype)
  check_vmap(f, (rand(shape, F32),))
  batched = jaxon.vmap(f, in_axes=1 if len(shape) > 1 else 0)(rand((3, *shape), F32))
  assert batched.dtype == np.dtype(index_dtype), name


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduction_tangent_is_float0_zero(name):
  x = rand((3, 4), F32)
  out, tangent = jaxon.jvp(lambda x: getattr(lax, name)(x, 1, np.int32), (x,),
                           (np.ones_like(x),))
  assert out.dtype == np.int32 and tangent.dtype == dtypes.float0, name
  assert tangent.shape == (3,), name
  grad = jaxon.grad(lambda x: jnp.sum(x * getattr(lax, name)(x, 1, np.int32)[:, None]))(x)
  np.testing.assert_allclose(grad, np.broadcast_to(
      getattr(np, name)(x, 1)[:, None], x.shape).astype(np.float32), err_msg=name)


@pytest.mark.parametrize("op", [lambda x: lax.reduce_sum(x, (1,)),
                                lambda x: lax.reduce_max(x, (1,)),
                                lambda x: lax.argmax(x, 1, np.int32),
                                lambda x: lax.cumsum(x, 1)])
def test_batch_dim_moves_no_data(op):
  """Batching a reduction only renumbers its axes: no transpose in the jaxpr."""
  jaxpr = jaxon.make_jaxpr(jaxon.vmap(op, in_axes=1, out_axes=1))(
      np.zeros((2, 3, 4), np.float32))
  assert "transpose" not in str(jaxpr), str(jaxpr)


# ----------------------------------------------------------------------------- exact values

def test_reduce_prod_derivatives_with_zeros(x64):
  """d prod / dx_i is the product of the others, also where elements are 0; the Hessian
  entry (i, j) is the product of all elements but x_i and x_j."""
  for x in ([2., 0., 3., 5.], [0., 0., 3., 5.], [0., 0., 0., 5.], [4., 2., 3., 5.]):
    x = np.array(x)
    n = len(x)
    others = lambda skip, x=x: np.prod([x[k] for k in range(len(x)) if k not in skip])
    grad_oracle = [others({i}) for i in range(n)]
    hess_oracle = [[0. if i == j else others({i, j}) for j in range(n)] for i in range(n)]
    f = lambda x: lax.reduce_prod(x, (0,))
    np.testing.assert_allclose(jaxon.grad(f)(x), grad_oracle, err_msg=str(x))
    np.testing.assert_allclose(jaxon.jacfwd(f)(x), grad_oracle, err_msg=str(x))
    np.testing.assert_allclose(jaxon.hessian(f)(x), hess_oracle, err_msg=str(x))
    np.testing.assert_allclose(jaxon.jacfwd(jaxon.jacrev(f))(x), hess_oracle, err_msg=str(x))


def test_reduce_prod_over_several_axes_with_zeros(x64):
  x = rand((2, 3, 2), F64)
  x[1, 2, 0] = 0.
  grad = jaxon.grad(lambda x: jnp.sum(lax.reduce_prod(x, (0, 2))))(x)
  oracle = np.zeros_like(x)
  for i in np.ndindex(x.shape):
    rest = np.delete(np.moveaxis(x, 1, 0)[i[1]].ravel(), i[0] * 2 + i[2])
    oracle[i] = np.prod(rest)
  np.testing.assert_allclose(grad, oracle)


def _cumulative_jacobian_oracle(name, x, reverse):
  """Row k of the Jacobian of the running reduction of x (1-D), from its definition."""
  n = len(x)
  jac = np.zeros((n, n))
  for k in range(n):
    span = list(range(k, n)) if reverse else list(range(k + 1))
    part = x[span]
    if name == "cumprod":
      for pos, i in enumerate(span):
        jac[k, i] = np.prod(np.delete(part, pos))
    elif name == "cumlogsumexp":  # no weight while every element so far is -inf
      total = np.logaddexp.reduce(part)
      jac[k, span] = np.exp(part - total) if total > -np.inf else 0
    else:  # the mean over the elements that tie for the extremum
      best = part.max() if name == "cummax" else part.min()
      ties = [i for i in span if x[i] == best]
      jac[k, ties] = 1 / len(ties)
  return jac


@pytest.mark.parametrize("name,x,reverse", [
    ("cumprod", [2., 0., 3., 4., 0., 5.], False),
    ("cumprod", [0., 1.5, 0., 2., -1., 3.], True),
    ("cummax", [1., 3., 3., 2., 5., 5., 5., 0.], False),
    ("cummax", [1., 3., 3., 2., 5., 5., 5., 0.], True),
    ("cummin", [4., 1., 1., 2., 1., 0., 3., 0.], False),
    ("cumlogsumexp", [-np.inf, 1., 2., 700., -50., 3.], False),
    ("cumlogsumexp", [1., 2., 700., -50., 3., -np.inf], True),
], ids=str)
def test_cumulative_jacobian_exact(x64, name, x, reverse):
  x = np.array(x)
  f = lambda x: getattr(lax, name)(x, 0, reverse)
  oracle = _cumulative_jacobian_oracle(name, x, reverse)
  for how, jac in (("jacfwd", jaxon.jacfwd(f)), ("jacrev", jaxon.jacrev(f))):
    np.testing.assert_allclose(jac(x), oracle, atol=1e-12, err_msg=f"{name} {how}")


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min"])
def test_reduce_max_min_ties_average(x64, name):
  """JAX's rule: the tangent is the mean of the tangents of all elements that tie."""
  x = np.array([[1., 3., 3., 2.], [0., 0., 0., 0.], [5., -1., 5., 5.]])
  op = getattr(lax, name)
  best = (x.max if name == "reduce_max" else x.min)(axis=1, keepdims=True)
  ties = (x == best).astype(np.float64)
  oracle = ties / ties.sum(axis=1, keepdims=True)
  np.testing.assert_allclose(jaxon.grad(lambda x: jnp.sum(op(x, (1,))))(x), oracle)
  t = np.arange(12.).reshape(3, 4)
  _, tangent = jaxon.jvp(lambda x: op(x, (1,)), (x,), (t,))
  np.testing.assert_allclose(tangent, (oracle * t).sum(1))
  total = np.array([x.max()]) if name == "reduce_max" else np.array([x.min()])
  all_ties = (x == total).astype(np.float64)
  np.testing.assert_allclose(jaxon.grad(lambda x: op(x, (0, 1)))(x),
                             all_ties / all_ties.sum())


@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_window_ties_average(x64, name):
  """Like reduce_max: a window's tangent is the mean over the taps that tie."""
  x = np.array([[1., 1., 0.], [1., 2., 2.], [0., 2., 2.]])
  if name == "min":
    x = -x
  op, init = (lax.max, -np.inf) if name == "max" else (lax.min, np.inf)
  f = lambda x: lax.reduce_window(x, init, op, (2, 2), (1, 1), "VALID")
  jac = jaxon.jacfwd(f)(x)
  oracle = np.zeros((2, 2, 3, 3))
  for o in np.ndindex(2, 2):
    window = x[o[0]:o[0] + 2, o[1]:o[1] + 2]
    best = window.max() if name == "max" else window.min()
    ties = window == best
    oracle[o][o[0]:o[0] + 2, o[1]:o[1] + 2] = ties / ties.sum()
  np.testing.assert_allclose(jac, oracle)
  np.testing.assert_allclose(jaxon.jacrev(f)(x), oracle)


# ----------------------------------------------------------------------------- windows

def test_reduce_window_sum_transpose_matches_oracle():
  """The cotangent of each element is the sum of the cotangents of the windows it is in,
  counted by brute force over windows, strides, padding and dilations."""
  shape, window, strides = (5, 4), (3, 2), (2, 1)
  padding, base, wdil = ((2, 1), (0, 2)), (2, 1), (1, 2)
  f = lambda x: lax.reduce_window(x, np.float32(0), lax.add, window, strides, padding, base,
                                  wdil)
  x = rand(shape, F32)
  out, pullback = jaxon.vjp(f, x)
  ct = rand(out.shape, F32, seed=2)
  oracle = np.zeros(shape, np.float32)
  for o in np.ndindex(out.shape):
    for w in np.ndindex(window):
      pos = [o[d] * strides[d] + w[d] * wdil[d] - padding[d][0] for d in range(2)]
      if all(p % base[d] == 0 and 0 <= p // base[d] < shape[d] for d, p in enumerate(pos)):
        oracle[tuple(p // base[d] for d, p in enumerate(pos))] += ct[o]
  np.testing.assert_allclose(pullback(ct)[0], oracle, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- any computation

def test_general_reduce_vmap_of_variadic_and_mixed_operands():
  x = rand((2, 3, 4), F32)
  check_vmap(lambda x: _argmax_pair(x, 2), (x,))
  pair_sum = lambda x, y: lax.reduce((x, y), (np.float32(0), np.float32(0)),
                                     lambda a, b: (a[0] + b[0], a[1] + 2 * b[1]), (1,))
  check_vmap(pair_sum, (x, rand((2, 3, 4), F32, seed=1)))


def test_general_reduce_vmap_over_init_values_is_refused():
  f = lambda init: lax.reduce(np.ones(3, np.float32), init, lambda a, b: a * b, (0,))
  with pytest.raises(NotImplementedError, match="init values"):
    jaxon.vmap(f)(np.ones(2, np.float32))


def test_general_reduce_window():
  mul = lambda a, b: a * b
  x = rand((3, 4, 5), F32)
  check_vmap(lambda x: lax.reduce_window(x, np.float32(1), mul, (1, 2, 2), (1, 1, 2),
                                         "SAME"), (x,))
  check_vmap(lambda x, y: lax.reduce_window((x, y), (np.float32(0), np.float32(1)),
                                            lambda a, b: (a[0] + b[0], a[1] * b[1]),
                                            (2, 1, 2), (1, 1, 1), "VALID"),
             (x, rand((3, 4, 5), F32, seed=1)))
  with pytest.raises(NotImplementedError, match="reduce_window"):
    jaxon.grad(lambda x: jnp.sum(lax.reduce_window(x, np.float32(1), mul, (2, 1, 1),
                                                   (1, 1, 1), "VALID")))(x)


@pytest.mark.parametrize("axes", [(0, 2)], ids=str)
def test_general_reduce_matches_dedicated_derivative(axes):
  """The tree-shaped JVP of a general product agrees with reduce_prod's."""
  x = rand((2, 3, 4), F32)
  t = rand((2, 3, 4), F32, seed=3)
  general = lambda x: lax.reduce(x, np.float32(1), lambda a, b: a * b, axes)
  _, want = jaxon.jvp(lambda x: lax.reduce_prod(x, axes), (x,), (t,))
  _, got = jaxon.jvp(general, (x,), (t,))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
