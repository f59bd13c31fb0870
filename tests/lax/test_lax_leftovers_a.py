"""lax's structural and utility primitives (split, tile, stack, unstack, square,
reduce_precision, mulhi, total-order comparisons, optimization_barrier, copy, stage,
dce_sink, device_put_p, rng_bit_generator, rng_uniform): values against NumPy or golden
values recorded from JAX 0.10.2, printed jaxprs as JAX prints them, derivatives by finite
differences, vmap against a loop, jit against eager."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon._src import core
from jaxon._src.lax import select_and_scatter
from jaxon._src.lax.barriers_tokens import ArrayCopySemantics
from jaxon.test_util import check_grads

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def jaxpr_text(f, *args):
  return str(jaxon.make_jaxpr(f)(*args))


# ----------------------------------------------------------------------------- printed jaxprs

# Each text as JAX 0.10.2 prints it (jaxon prints weak scalar literals without a type).
PRINTED = [
    (lambda x: lax.split(x, (1, 2), axis=1),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,1] c:f32[2,2] = split[axis=1 sizes=(1, 2)] a\n"
     "  in (b, c) }"),
    (lambda x: lax.tile(x, (2, 1)),
     "{ lambda ; a:f32[2,3]. let b:f32[4,3] = tile[reps=(2, 1)] a in (b,) }"),
    (lambda x: lax.stack([x, x], axis=1),
     "{ lambda ; a:f32[2,3]. let b:f32[2,2,3] = stack[axis=1] a a in (b,) }"),
    (lambda x: lax.unstack(x, axis=1),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2] c:f32[2] d:f32[2] = unstack[axis=1] a\n"
     "  in (b, c, d) }"),
    (jnp.square, "{ lambda ; a:f32[2,3]. let b:f32[2,3] = square a in (b,) }"),
    (lambda x: lax.reduce_precision(x, 5, 10),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = reduce_precision[exponent_bits=5 "
     "mantissa_bits=10] a\n  in (b,) }"),
    (lambda x: lax.reciprocal(x),
     "{ lambda ; a:f32[2,3]. let b:f32[2,3] = integer_pow[y=-1] a in (b,) }"),
    (lambda x: lax.optimization_barrier((x, x)),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] c:f32[2,3] = optimization_barrier a a\n"
     "  in (b, c) }"),
    (lambda x: lax.copy_p.bind(x), "{ lambda ; a:f32[2,3]. let b:f32[2,3] = copy a in (b,) }"),
    (lambda x: lax.stage(x), "{ lambda ; a:f32[2,3]. let  in (a,) }"),
    (lambda x: lax.dce_sink(x),
     "{ lambda ; a:f32[2,3]. let dce_sink[prevent_mlir_dce=False] a in () }"),
    (lambda x: lax.device_put_p.bind(x, devices=(None,), srcs=(None,),
                                     copy_semantics=(ArrayCopySemantics.REUSE_INPUT,)),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = device_put[\n"
     "      copy_semantics=(ArrayCopySemantics.REUSE_INPUT,)\n      devices=(None,)\n"
     "      srcs=(None,)\n    ] a\n  in (b,) }"),
    (lambda x: lax.broadcast_to_rank(x, 4),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[1,1,2,3] = broadcast_in_dim[\n"
     "      broadcast_dimensions=(2, 3)\n      shape=(1, 1, 2, 3)\n      sharding=None\n"
     "    ] a\n  in (b,) }"),
]


@pytest.mark.parametrize("f,text", PRINTED, ids=range(len(PRINTED)))
def test_printed_like_jax(f, text):
  assert jaxpr_text(f, X) == text


def test_rng_and_empty_jaxprs():
  key = np.array([1, 2, 3, 4], np.uint32)
  assert jaxpr_text(lambda k: lax.rng_bit_generator(
      k, (2,), algorithm=lax.RandomAlgorithm.RNG_PHILOX), key) == (
      "{ lambda ; a:u32[4]. let\n    b:u32[4] c:u32[2] = rng_bit_generator[\n"
      "      algorithm=RNG_PHILOX\n      dtype=uint32\n      out_sharding=None\n"
      "      shape=(2,)\n    ] a\n  in (b, c) }")
  assert "rng_uniform[shape=(2,)] a 1.0" in jaxpr_text(
      lambda a: lax.rng_uniform(a, 1.0, (2,)), 0.0)
  assert "empty[dtype=int32 out_sharding=None shape=(2,)]" in jaxpr_text(
      lambda: lax.empty((2,), np.int32))


# ----------------------------------------------------------------------------- values

@jaxon.jit
def _structural_values(x):
  return (lax.split(x, (1, 2), axis=1), lax.split(x, (0, 2), axis=0), lax.tile(x, (2, 3)),
          lax.stack([x, x + 1], axis=2), lax.unstack(x, axis=-1),
          lax.broadcast_like(x[0], np.zeros((4, 2, 3))), lax.broadcast_to_rank(x, 3),
          lax.index_take(x, (np.array([1, 0, -1]), np.array([2, 0, -3])), (0, 1)))


def test_structural_values_match_numpy():
  (a, b), (c, d), tiled, stacked, cols, like, ranked, taken = _structural_values(X)
  np.testing.assert_array_equal(a, X[:, :1])
  np.testing.assert_array_equal(b, X[:, 1:])
  assert c.shape == (0, 3)
  np.testing.assert_array_equal(d, X)
  np.testing.assert_array_equal(tiled, np.tile(X, (2, 3)))
  np.testing.assert_array_equal(stacked, np.stack([X, X + 1], axis=2))
  assert len(cols) == 3
  for i, col in enumerate(cols):
    np.testing.assert_array_equal(col, X[:, i])
  np.testing.assert_array_equal(like, np.broadcast_to(X[0], (4, 2, 3)))
  np.testing.assert_array_equal(ranked, X[None])
  np.testing.assert_array_equal(taken, [5, 0, 3])
  assert lax.empty((2, 3), np.int32).shape == (2, 3)
  shape_value = lax.shape_as_value((2, 3))
  assert shape_value.dtype == np.int32 and list(shape_value) == [2, 3]
  assert lax.dtype(jnp.ones(2, jnp.int8)) == np.int8
  # As JAX 0.10.2 (without x64): canonical dtypes.
  assert (lax.dtype(1.0), lax.dtype(np.float64(1)), lax.dtype(np.arange(3))) == (
      np.float32, np.float32, np.int32)


def test_numeric_values():
  f32_one_plus = np.float32(1 + 2 ** -12)
  # JAX 0.10.2: reduce_precision(1 + 2**-12, 5, 10) rounds to 1.0 (float16's spacing).
  assert float(lax.reduce_precision(f32_one_plus, 5, 10)) == 1.0
  assert float(lax.reduce_precision(f32_one_plus, 8, 23)) == float(f32_one_plus)
  u = np.array([0xFFFFFFFF, 7, 1 << 31], np.uint32)
  np.testing.assert_array_equal(
      lax.mulhi(u, np.array([0xFFFFFFFF, 3, 4], np.uint32)),
      (u.astype(np.uint64) * np.array([0xFFFFFFFF, 3, 4], np.uint64)) >> 32)
  s = np.array([-5, 1 << 30, -(1 << 31)], np.int32)
  np.testing.assert_array_equal(
      lax.mulhi(s, np.array([3, 8, -1], np.int32)),
      (s.astype(np.int64) * np.array([3, 8, -1], np.int64)) >> 32)
  np.testing.assert_array_equal(lax.square(np.arange(-2, 3, dtype=np.int32)), [4, 1, 0, 1, 4])
  np.testing.assert_allclose(lax.reciprocal(np.float32([2, 4])), [0.5, 0.25])
  with pytest.raises(TypeError, match="negative powers"):
    lax.reciprocal(np.int32(2))
  with pytest.raises(TypeError, match="square does not accept dtype bool"):
    lax.square(np.bool_(True))


def test_total_order_comparisons():
  x = np.array([0.0, -0.0, np.nan, 1.0, -np.inf], np.float32)
  y = np.array([-0.0, 0.0, 1.0, np.nan, -np.inf], np.float32)
  np.testing.assert_array_equal(lax.lt_to_p.bind(x, y), [False, True, False, True, False])
  np.testing.assert_array_equal(lax.le_to_p.bind(x, y), [False, True, False, True, True])
  np.testing.assert_array_equal(lax.eq_to_p.bind(x, x), [True, True, True, True, True])
  np.testing.assert_array_equal(lax.lt_to_p.bind(np.int32([1, 3]), np.int32([2, 2])),
                                [True, False])


def test_barriers_copy_stage_dce_sink():
  tree = {"a": X, "b": (1.0, np.int32(2))}
  out = jaxon.jit(lax.optimization_barrier)(tree)
  np.testing.assert_array_equal(out["a"], X)
  assert float(out["b"][0]) == 1.0 and int(out["b"][1]) == 2
  np.testing.assert_array_equal(lax.copy_p.bind(X), X)
  staged = lax.stage(np.float32(3))
  assert isinstance(staged, jaxon.Array) and float(staged) == 3.0
  assert lax.dce_sink(X) is None
  assert jaxon.jit(lambda x: lax.dce_sink(x * 2))(X) is None
  with pytest.raises(NotImplementedError, match="prevent_mlir_dce"):
    jaxon.jit(lambda x: lax.dce_sink(x, prevent_mlir_dce=True))(X)


def test_rng_bit_generator_golden():
  key = np.array([1, 2, 3, 4], np.uint32)
  # Golden values from JAX 0.10.2 on CPU.
  philox = [[512747620, 1298009047, 1267190206], [761827841, 1383286907, 1639995030]]
  new_key, bits = lax.rng_bit_generator(key, (2, 3))  # RNG_DEFAULT is Philox on CPU
  np.testing.assert_array_equal(new_key, [1, 2, 5, 4])
  np.testing.assert_array_equal(bits, philox)
  new_key, bits = jaxon.jit(lambda k: lax.rng_bit_generator(
      k, (5,), dtype=np.uint8, algorithm=lax.RandomAlgorithm.RNG_THREE_FRY))(key)
  np.testing.assert_array_equal(new_key, [1, 2, 6, 4])
  np.testing.assert_array_equal(bits, np.array([236, 142, 168, 94, 67], np.uint8))
  # Under vmap, as in JAX 0.10.2: all bits come from the first key, which alone advances.
  new_keys, batched = jaxon.vmap(lambda k: lax.rng_bit_generator(k, (3,)), in_axes=1,
                                 out_axes=1)(np.stack([key, key + 1], 1))
  np.testing.assert_array_equal(new_keys, [[1, 2], [2, 3], [5, 4], [4, 5]])
  np.testing.assert_array_equal(batched, np.array(philox).T)
  with pytest.raises(TypeError, match="unsupported dtype int32"):
    lax.rng_bit_generator(key, (2,), dtype=np.int32)
  with pytest.raises(TypeError, match="u32\\[4\\] or u64\\[2\\]"):
    lax.rng_bit_generator(np.zeros(3, np.uint32), (2,))
  uniform = lax.rng_uniform(np.float32(2), np.float32(3), (50,))
  assert uniform.shape == (50,) and bool(jnp.all((uniform >= 2) & (uniform < 3)))
  with pytest.raises(ValueError, match="identical dtypes"):
    lax.rng_uniform(np.float32(0), np.int32(1), (2,))


def test_shape_errors():
  with pytest.raises(ValueError, match="Sum of sizes 2 must be equal to dimension 1"):
    lax.split(X, (1, 1), axis=1)
  with pytest.raises(TypeError, match="reps length must be equal to the ndim"):
    lax.tile(X, (2,))
  with pytest.raises(ValueError, match="All input arrays must have the same shape"):
    lax.stack([X, X[:1]])
  with pytest.raises(ValueError, match="unstack requires arrays with rank > 0"):
    lax.unstack(np.float32(1))
  with pytest.raises(ValueError, match="exponent_bits must be positive"):
    lax.reduce_precision(X, 0, 3)
  with pytest.raises(TypeError, match="mulhi does not accept dtype float32"):
    lax.mulhi(X, X)
  with pytest.raises(ValueError, match="Incompatible types for broadcasting"):
    lax.broadcast_like(np.ones(2), np.ones(3))


# ----------------------------------------------------------------------------- transformations

LINEAR = {
    "split": lambda x: lax.split(x, (2, 1), axis=1)[1],
    "tile": lambda x: lax.tile(x, (2, 3)),
    "stack": lambda x: lax.stack([x, 2 * x], axis=1),
    "unstack": lambda x: lax.unstack(x, axis=0)[1],
    "square": lax.square,
    "reduce_precision": lambda x: lax.reduce_precision(x * x, 8, 23),
    "optimization_barrier": lambda x: lax.optimization_barrier(x) * x,
    "copy": lambda x: lax.copy_p.bind(x) * x,
    "device_put": lambda x: lax.device_put_p.bind(
        x, devices=(None,), srcs=(None,), copy_semantics=(ArrayCopySemantics.REUSE_INPUT,))[0],
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_grads_vmap_jit(name):
  f = LINEAR[name]
  x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3) + 0.5
  check_grads(f, (x,), order=2, modes=["fwd", "rev"])
  xs = np.stack([x, 2 * x, x - 1]).transpose(1, 0, 2)  # batch along axis 1
  batched = jaxon.vmap(f, in_axes=1)(xs)
  np.testing.assert_allclose(batched, np.stack([f(xs[:, i]) for i in range(3)]), rtol=1e-6)
  np.testing.assert_allclose(jaxon.jit(f)(x), f(x), rtol=1e-6)


def test_vmap_along_each_axis():
  xs = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  cases = [lambda x: lax.split(x, (1, 3), axis=-1), lambda x: lax.tile(x, (2, 1)),
           lambda x: lax.stack([x, x + 1], axis=1), lambda x: lax.unstack(x, axis=1),
           lambda x: lax.stack([x, np.ones((3, 4), np.float32)], axis=0)]
  for f in cases:  # the batch dimension last (test_grads_vmap_jit batches along 1)
    got = jaxon.tree_util.tree_leaves(jaxon.jit(jaxon.vmap(f, in_axes=2))(
        np.moveaxis(xs, 0, 2)))
    want = [jaxon.tree_util.tree_leaves(w) for w in map(jaxon.jit(f), xs)]
    for i, g in enumerate(got):
      np.testing.assert_array_equal(g, np.stack([w[i] for w in want]))


def test_integer_primitives_have_zero_derivatives():
  f = lambda x: lax.lt_to_p.bind(x, 1.0).astype(np.float32) * x  # noqa: E731
  assert float(jaxon.grad(f)(0.5)) == 1.0
  g = jaxon.jvp(lambda a: lax.rng_uniform(a, 1.0, (2,)), (np.float32(0),), (np.float32(1),))
  np.testing.assert_array_equal(g[1], [0, 0])


# ----------------------------------------------------------------------------- windowed selects

_WINDOW = dict(window_dimensions=(2, 2), window_strides=(2, 2), padding=((1, 0), (0, 1)))
_Y = np.random.RandomState(0).randn(5, 4).astype(np.float32)
_SOURCE = np.random.RandomState(1).randn(3, 2).astype(np.float32)


def _gather_min(t, y=_Y):
  return select_and_scatter._select_and_gather_add(t, y, lax.le_p, **_WINDOW,
                                                   base_dilation=(1, 1),
                                                   window_dilation=(1, 1))


def _scatter_max(s, y=_Y):
  return select_and_scatter._select_and_scatter_add(s, y, lax.ge_p, **_WINDOW)


def test_windowed_select_values_and_jaxprs():
  x = np.array([[1., 5., 2.], [4., 3., 6.]], np.float32)
  g = np.array([[10., 20., 30.], [40., 50., 60.]], np.float32)
  window = dict(window_dimensions=(2, 2), window_strides=(1, 1), padding=((0, 0), (0, 0)))
  gather = jaxon.jit(lambda t, x: select_and_scatter._select_and_gather_add(
      t, x, lax.ge_p, **window, base_dilation=(1, 1), window_dilation=(1, 1)))
  np.testing.assert_array_equal(gather(g, x), [[20., 60.]])  # the tangent at each max
  source = np.array([[1., 2.]], np.float32)
  scatter = lambda s, x: select_and_scatter._select_and_scatter_add(  # noqa: E731
      s, x, lax.ge_p, **window)
  np.testing.assert_array_equal(scatter(source, x), [[0., 1., 0.], [0., 0., 2.]])
  general = lambda x, s: select_and_scatter._select_and_scatter(  # noqa: E731
      x, lax.ge, (2, 2), (1, 1), ((0, 0), (0, 0)), s, np.float32(0), lax.add)
  np.testing.assert_array_equal(general(x, source), [[0., 1., 0.], [0., 0., 2.]])
  # As JAX 0.10.2 prints the transpose of a max pool.
  assert jaxpr_text(scatter, source, x) == (
      "{ lambda ; a:f32[1,2] b:f32[2,3]. let\n    c:f32[2,3] = select_and_scatter_add[\n"
      "      padding=((0, 0), (0, 0))\n      select_prim=ge\n      window_dimensions=(2, 2)\n"
      "      window_strides=(1, 1)\n    ] a b\n  in (c,) }")
  assert "select_jaxpr={ lambda ; g:f32[] h:f32[]. let i:bool[] = ge g h in (i,) }" in (
      jaxpr_text(general, x, source))


def test_windowed_select_derivatives_and_vmap():
  # Both are linear in their first argument: first order checks all of it.
  check_grads(_gather_min, (_Y,), order=1, modes=["fwd", "rev"])
  check_grads(_scatter_max, (_SOURCE,), order=1, modes=["fwd", "rev"])
  sources = np.stack([_SOURCE, 2 * _SOURCE, -_SOURCE])
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(_scatter_max))(sources),
                             np.stack(list(map(jaxon.jit(_scatter_max), sources))))
  ys = np.stack([_Y, -_Y])
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(_gather_min, in_axes=(None, 0)))(_Y, ys),
                             np.stack([jaxon.jit(_gather_min)(_Y, y) for y in ys]))
  # Without ties, the transpose of max pooling is the max pool's own VJP.
  pool = lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (2, 2),  # noqa: E731
                                     ((1, 0), (0, 1)))
  np.testing.assert_allclose(jaxon.vjp(pool, _Y)[1](_SOURCE)[0], _scatter_max(_SOURCE))


# ----------------------------------------------------------------------------- composite, platform

_scaled = lax.composite(lambda x, *, scale, tag: x * scale, name="my.scaled", version=2)


def test_composite_prints_lowers_and_runs():
  f = lambda x: _scaled(x, scale=2.0, tag=np.array([1, 2], np.int32))  # noqa: E731
  # As JAX 0.10.2 prints it (its literal shows as `2.0:f32[]`).
  assert jaxpr_text(f, np.ones(2, np.float32)) == (
      "{ lambda ; a:f32[2]. let\n    b:f32[2] = composite[\n"
      "      attributes=(('scale', (2.0,), PyTreeDef(*)), ('tag', (HashableArray(array([1, 2], "
      "dtype=int32)),), PyTreeDef(*)))\n"
      "      jaxpr={ lambda ; c:f32[2]. let d:f32[2] = mul c 2.0 in (d,) }\n"
      "      name=my.scaled\n      version=2\n    ] a\n  in (b,) }")
  text = jaxon.jit(f).lower(np.ones(2, np.float32)).as_text()
  assert 'stablehlo.composite "my.scaled"' in text
  assert "composite_attributes = {scale = 2.000000e+00 : f64, tag = dense<[1, 2]>" in text
  assert "decomposition = @my.scaled, version = 2 : i32" in text
  np.testing.assert_array_equal(jaxon.jit(f)(np.float32([1, 3])), [2, 6])
  np.testing.assert_array_equal(f(np.float32([1, 3])), [2, 6])
  pair = lax.composite(lambda x, y: (x + y, {"prod": x * y}), name="my.pair")
  out = jaxon.jit(pair)(np.float32(2), np.float32([1, 3]))
  np.testing.assert_array_equal(out[1]["prod"], [2, 6])
  with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
    jaxon.grad(lambda x: _scaled(x, scale=2.0, tag=None))(1.0)
  with pytest.raises(core.UnexpectedTracerError, match="attribute of the composite"):
    jaxon.jit(lambda x: _scaled(x, scale=x, tag=None))(1.0)


def test_platform_dependent_picks_the_compiled_platform():
  f = lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)  # noqa: E731
  text = jaxpr_text(f, X)
  assert "b:i32[] = platform_index[platforms=(('cpu',), None)] \n    c:f32[2,3] = cond[" in text
  np.testing.assert_allclose(f(X), np.sin(X), rtol=1e-6)
  np.testing.assert_allclose(jaxon.jit(f)(X), np.sin(X), rtol=1e-6)
  other = jaxon.jit(lambda x: lax.platform_dependent(x, tpu=jnp.sin, default=jnp.cos))
  np.testing.assert_allclose(other(X), np.cos(X), rtol=1e-6)
  assert float(jaxon.grad(f)(np.float32(1))) == pytest.approx(np.cos(1.0))
  with pytest.raises(NotImplementedError, match="no branch for platform 'cpu'"):
    jaxon.jit(lambda x: lax.platform_dependent(x, tpu=jnp.sin))(X)
