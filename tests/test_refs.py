"""Mutable array references (`jaxon.new_ref`, `jaxon.Ref`, `jaxon.ref`): eager reads and
writes, jaxpr text, `jit` (the caller's ref is updated), loops and `cond` closing over
refs, `vmap`, differentiation of functions that use refs inside, and JAX's errors.

Expected values marked "JAX 0.10.2" were recorded by running the same function there.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon.test_util import check_grads


def _mixed_indexing(x, i):
  r = jaxon.new_ref(jnp.zeros((4, 3)))
  r[1:3, 0] = x[:2]
  r[jaxon.ds(0, 2), :] += 1.0
  r[i] = x
  r[jaxon.ds(i, 2), 1] = x[:2]
  old = jaxon.ref.swap(r, (0, 1), 3.0)
  jaxon.ref.addupdate(r, (i, 2), 3.0)

  def body(c, _):
    r[0] += c
    return c, None
  lax.scan(body, x, None, length=2)
  lax.cond(i > 0, lambda: r.__setitem__(1, x), lambda: None)
  return r[2:4], r[i, 1], r[:, 1], old, r[::2], jaxon.freeze(r)


# JAX 0.10.2, _mixed_indexing(arange(3.), 1)
_MIXED_EXPECTED = ([[1., 1., 0.], [0., 0., 0.]], 1.0, [5., 1., 1., 0.], 1.0,
                   [[1., 5., 5.], [1., 1., 0.]],
                   [[1., 5., 5.], [0., 1., 2.], [1., 1., 0.], [0., 0., 0.]])


def _assert_all_close(got, expected):
  assert len(got) == len(expected)
  for g, e in zip(got, expected):
    np.testing.assert_allclose(np.asarray(g), np.asarray(e, np.float32), rtol=1e-6)


def test_eager_reads_writes_and_text():
  r = jaxon.new_ref(jnp.zeros(3))
  assert isinstance(r, jaxon.Ref) and isinstance(r, jaxon.ref.Ref)
  assert (r.shape, r.dtype, r.ndim, r.size) == ((3,), np.float32, 1, 3)
  r[...] += 2.0
  r[1] = 5.0
  assert float(jaxon.ref.swap(r, 0, 4.0)) == 2.0
  jaxon.ref.addupdate(r, 2, 1.0)
  np.testing.assert_array_equal(jaxon.ref.get(r), [4., 5., 3.])
  assert repr(r) == "Ref([4., 5., 3.], dtype=float32)"
  assert jaxon.ds(1, 2) == jaxon.ds(1, 2, 1) and jaxon.ds(2) == (0, 2, 1)
  # the whole-program form, and the printed jaxpr (re-read by the readback fixture)
  _assert_all_close(_mixed_indexing(jnp.arange(3.), 1), _MIXED_EXPECTED)
  text = str(jaxon.make_jaxpr(_mixed_indexing)(jnp.arange(3.), 1))
  for line in ("d:Ref{f32[4,3]} = new_ref[kind=None memory_space=None] c",
               "d[1:3,0] <- e", "f:f32[2,3] <- d[:2,:]", "d[b:b+2,1] <- h",
               "i:f32[], d[0,1] <- d[0,1], 3.0", "d[b,2] += 3.0",
               "jaxpr={ lambda ; j:Ref{f32[4,3]} k:f32[3]. let", "w:f32[2,3] <- d[:3:2,:]",
               "x:f32[4,3] = freeze d"):
    assert line in text, line


def test_jit_updates_the_callers_ref():
  _assert_all_close(jaxon.jit(_mixed_indexing)(jnp.arange(3.), 1), _MIXED_EXPECTED)

  @jaxon.jit
  def accumulate(r, x):
    r[...] += x
    return r[0] * 2

  def outer(x):
    r = jaxon.new_ref(jnp.zeros(3))
    return accumulate(r, x) + accumulate(r, x * x) + r[1]  # 5x + 3x²

  ref = jaxon.new_ref(jnp.ones(3))
  assert float(accumulate(ref, 2.0)) == 6.0
  assert float(accumulate(ref, 1.0)) == 8.0
  np.testing.assert_array_equal(ref[...], [4., 4., 4.])
  text = str(jaxon.make_jaxpr(outer)(2.0))
  assert "pjit[" in text and "jaxpr={ lambda ; c:Ref{f32[3]} a:f32[]. let" in text
  assert float(outer(2.0)) == float(jaxon.jit(outer)(2.0)) == 22.0
  assert float(jaxon.grad(outer)(2.0)) == 17.0
  np.testing.assert_allclose(jaxon.vmap(outer)(jnp.arange(3.)), [0., 8., 22.])


def _fori_accumulate(x):
  r = jaxon.new_ref(0.0)

  def body(i, c):
    r[...] += x * i
    return c
  lax.fori_loop(0, 4, body, 0)
  return r[...]


def _scan_accumulate(xs):
  acc = jaxon.new_ref(jnp.zeros(()))

  def body(c, x):
    acc[...] += jnp.sin(x) * c
    return c * 2, acc[...]
  _, ys = lax.scan(body, 1.0, xs)
  return acc[...] + jnp.sum(ys)


def test_loops_closing_over_refs():
  # JAX 0.10.2: 12.0, grad 6.0, vmap [0, 6, 12]
  assert float(_fori_accumulate(2.0)) == 12.0
  assert float(jaxon.jit(jaxon.grad(_fori_accumulate))(2.0)) == 6.0
  np.testing.assert_allclose(jaxon.vmap(_fori_accumulate)(jnp.arange(3.)), [0., 6., 12.])
  xs = jnp.array([0.1, 0.2, 0.3])
  # JAX 0.10.2: 3.9555116, grad [3.9800167 5.8803997 7.642692]
  np.testing.assert_allclose(_scan_accumulate(xs), 3.9555116, rtol=1e-6)
  grad = jaxon.jit(jaxon.grad(_scan_accumulate))
  np.testing.assert_allclose(grad(xs), [3.9800167, 5.8803997, 7.642692], rtol=1e-6)
  batch = jnp.stack([xs, 2 * xs])
  np.testing.assert_allclose(jaxon.vmap(grad)(batch), np.stack([grad(x) for x in batch]),
                             rtol=1e-6)


def test_while_loop_and_cond_with_refs():
  def power(x):
    r, count = jaxon.new_ref(x), jaxon.new_ref(0)

    def body(c):
      r[...] = r[...] * x
      count[...] += 1
      return c + 1
    steps = lax.while_loop(lambda c: count[...] < 3, body, 0)
    return r[...], steps

  (value, steps), (tangent, _) = jaxon.jvp(power, (2.0,), (1.0,))
  assert (float(value), int(steps), float(tangent)) == (16.0, 3, 32.0)
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(power))(jnp.arange(3.))[0], [0., 1., 16.])

  def branch(p, x):
    r = jaxon.new_ref(x)
    lax.cond(p, lambda: r.__setitem__(..., r[...] * x), lambda: r.__setitem__(..., -r[...]))
    return r[...]
  # JAX 0.10.2 (grads): 6.0 and -1.0
  assert (float(branch(True, 3.0)), float(branch(False, 3.0))) == (9.0, -3.0)
  assert float(jaxon.grad(branch, 1)(True, 3.0)) == 6.0
  assert float(jaxon.grad(branch, 1)(False, 3.0)) == -1.0

  outer = jaxon.new_ref(jnp.ones(2))  # eager loops and cond write to a caller's ref
  lax.fori_loop(0, 3, lambda i, c: (outer.__setitem__(..., outer[...] * 2.0), c)[1], 0)
  lax.cond(True, lambda: outer.__setitem__(0, 7.0), lambda: None)
  np.testing.assert_array_equal(outer[...], [7., 8.])


def test_vmap_of_refs():
  def write_rows(x, r):
    r[...] += x
    r[0] = x[1] * 2.0
    return r[1]
  ref = jaxon.new_ref(jnp.zeros((2, 3)))
  out = jaxon.vmap(write_rows)(jnp.arange(6.).reshape(2, 3), ref)
  # JAX 0.10.2
  np.testing.assert_array_equal(out, [1., 4.])
  np.testing.assert_array_equal(ref[...], [[2., 1., 2.], [8., 4., 5.]])

  def swap_pair(x):
    r = jaxon.new_ref(x)
    r[0] = r[1] * 2
    return jaxon.freeze(r)
  xs = jnp.arange(6.).reshape(3, 2)
  np.testing.assert_array_equal(jaxon.vmap(swap_pair)(xs), [[2., 1.], [6., 3.], [10., 5.]])


def test_derivatives_of_a_function_using_refs():
  def f(x):
    r = jaxon.new_ref(x)
    r[0] = r[1] * r[2]
    jaxon.ref.addupdate(r, 1, x[0] ** 2)
    return jnp.sum(jaxon.freeze(r) ** 2)
  x = jnp.array([1., 2., 3.])
  np.testing.assert_allclose(jaxon.grad(f)(x), [12., 42., 30.])  # JAX 0.10.2
  check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_errors():
  r = jaxon.new_ref(jnp.zeros(3))
  with pytest.raises(ValueError, match="returned a mutable array reference of type "
                     r"Ref\{float32\[3\]\}, but mutable array references cannot be returned"):
    jaxon.jit(lambda r: r)(r)
  with pytest.raises(ValueError, match="only one reference to a mutable array"):
    jaxon.jit(lambda a, b: a[...] + b[...])(r, r)
  with pytest.raises(ValueError, match=r"Invalid shape for `swap`. Ref shape: \(3,\). "
                     r"Expected shape: \(\). Value shape: \(2,\)"):
    r[0] = jnp.ones(2)
  with pytest.raises(ValueError, match="Invalid dtype for `swap`. Ref dtype: float32. "
                     "Value dtype: int32"):
    r[...] = jnp.ones(3, jnp.int32)
  with pytest.raises(Exception, match="differentiated value on a non-differentiated"):
    jaxon.grad(lambda x: (r.__setitem__(..., x * jnp.ones(3)), x)[1])(1.0)
  with pytest.raises(Exception, match="vmapped value on an unbatched array reference"):
    jaxon.vmap(lambda x: r.__setitem__(..., x))(jnp.ones((2, 3)))
  with pytest.raises(ValueError, match="mutable array references cannot be returned"):
    lax.scan(lambda c, x: (c, x), r, jnp.arange(3.))
  with pytest.raises(TypeError, match="expects a mutable array reference"):
    jaxon.freeze(jnp.ones(3))
  with pytest.raises(IndexError, match="too many indices"):
    r[0, 0]
