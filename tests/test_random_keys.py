"""Typed PRNG key arrays (`random.key`, dtype key<fry>) against JAX 0.10.2.

* Golden values: key data and draws recorded once from JAX 0.10.2 (jax and jaxlib 0.10.2
  on CPU) for split, fold_in, seeds, bits under vmap, scan and fori_loop carrying keys, in
  both layouts of `jax_threefry_partitionable`; printed jaxprs and reprs as JAX prints
  them.
* Shape operations on key arrays against NumPy applied to their uint32 data, eagerly and
  under jit; vmap over keys == stacking; jit == eager; typed keys == raw keys.
* The errors JAX raises: arithmetic, conversions, bad key data, batched keys, bad seeds.
"""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax, random
from jaxon.dtypes import extended, prng_key
from tests.conftest import flag_set

KEY = random.key(42)
KEYS = random.split(random.key(0), 4)


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def layout(request):
  with flag_set("jax_threefry_partitionable", request.param):
    yield request.param


def data(keys):
  return np.asarray(random.key_data(keys))


# ----------------------------------------------------------------------------- the dtype

def test_key_is_a_scalar_of_dtype_key_fry():
  k = random.key(0)
  assert (k.shape, k.ndim, k.size, str(k.dtype), k.dtype.name) == ((), 0, 1, "key<fry>",
                                                                    "key<fry>")
  assert (k.dtype.itemsize, KEYS.nbytes, len(KEYS)) == (8, 32, 4)
  assert jnp.issubdtype(k.dtype, prng_key) and jnp.issubdtype(k.dtype, extended)
  assert not jnp.issubdtype(k.dtype, np.number) and not jnp.issubdtype(np.uint32, prng_key)
  assert k.dtype == random.key(1).dtype and hash(k.dtype) == hash(random.key(1).dtype)
  assert random.key_impl(k) == random.key_impl(random.PRNGKey(0)) == "threefry2x32"
  np.testing.assert_array_equal(random.key_data(k), random.PRNGKey(0))
  assert str(jaxon.eval_shape(random.split, k).dtype) == "key<fry>"


def test_key_arrays_print_as_jax():
  assert repr(random.key(0)) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
  assert str(random.key(0)) == repr(random.key(0))
  assert repr(random.split(random.key(0))) == (
      "Array((2,), dtype=key<fry>) overlaying:\n"
      "[[1797259609 2579123966]\n [ 928981903 3453687069]]")
  assert repr(jaxon.core.get_aval(KEYS)) == "ShapedArray(key<fry>[4])"


def test_wrap_and_unwrap_round_trip():
  raw = np.arange(12, dtype=np.uint32).reshape(2, 3, 2)
  keys = random.wrap_key_data(raw)
  assert keys.shape == (2, 3) and str(keys.dtype) == "key<fry>"
  np.testing.assert_array_equal(random.key_data(keys), raw)
  np.testing.assert_array_equal(data(random.clone(keys)), raw)
  np.testing.assert_array_equal(random.clone(random.PRNGKey(3)), [0, 3])


# ----------------------------------------------------------------------------- golden values

# JAX 0.10.2's values for key(42), by layout (partitionable, original).
GOLDEN = {
    "split": {True: [[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827]],
              False: [[3134548294, 3733159049], [3746501087, 894150801],
                      [801545058, 2363201431]]},
    "split23": {True: [[3134548294, 894150801], [2954079971, 3276725750]],  # [1, :2]
                False: [[3055579793, 2323374536], [871308580, 1523113029]]},
    "fold_in": {True: [2547012911, 1371500959], False: [2547012911, 1371500959]},
    "vmap_fold_in": {True: [[1012194634, 3152801799], [2350016172, 1168365246],
                            [3446849625, 3976683102]],
                     False: [[2064605450, 3074746312], [1777782295, 2165037210],
                             [1029801476, 1359158287]]},
    "vmap_bits": {True: [[2277453133, 1345880512], [3125294276, 3383865362],
                         [2865777128, 3098761794]],
                  False: [[520042496, 709634425], [1777782295, 2165037210],
                          [2451112962, 1744012740]]},
    "vmap_bits8": {True: [[77, 192, 181, 170, 152], [196, 18, 183, 193, 141],
                          [232, 66, 7, 4, 143]],
                   False: [[0, 56, 255, 30, 121], [23, 206, 246, 105, 154],
                           [2, 4, 25, 146, 196]]},
    "vmap_split": {True: [[3187376881, 129218101], [2350016172, 1168365246]],  # [1]
                   False: [[674324254, 3228334804], [1103547586, 3522086544]]},
    "vmap_uniform": {True: [[0.5302608, 0.31336212], [0.72766423, 0.78786755],
                            [0.6672406, 0.7214867]],
                     False: [[0.12108183, 0.16522455], [0.4139222, 0.504087],
                             [0.5706942, 0.4060595]]},
    "scan_bits": {True: [2098992034, 2277453133, 1012860571],
                  False: [1832780943, 2383026196, 2609218230]},
    "fori_fold_in": {True: [4179084902, 2188378661], False: [4179084902, 2188378661]},
}


def test_key_operations_match_jax(layout):
  keys = random.split(KEY, 3)
  want = {name: np.array(values[layout]) for name, values in GOLDEN.items()}
  np.testing.assert_array_equal(data(keys), want["split"])
  np.testing.assert_array_equal(data(random.split(KEY, (2, 3)))[1, :2], want["split23"])
  np.testing.assert_array_equal(data(random.fold_in(KEY, 7)), want["fold_in"])
  np.testing.assert_array_equal(data(jaxon.vmap(random.fold_in)(keys, jnp.arange(3))),
                                want["vmap_fold_in"])
  np.testing.assert_array_equal(jaxon.vmap(lambda k: random.bits(k, (2,)))(keys),
                                want["vmap_bits"])
  np.testing.assert_array_equal(jaxon.vmap(lambda k: random.bits(k, (5,), jnp.uint8))(keys),
                                want["vmap_bits8"])
  np.testing.assert_array_equal(data(jaxon.vmap(random.split)(keys))[1], want["vmap_split"])
  np.testing.assert_array_equal(jaxon.vmap(lambda k: random.uniform(k, (2,)))(keys),
                                want["vmap_uniform"].astype(np.float32))
  np.testing.assert_array_equal(data(jaxon.vmap(random.key)(jnp.arange(3))),
                                [[0, 0], [0, 1], [0, 2]])


def test_loops_carry_keys(layout):
  def step(key, _):
    return random.split(key)[0], random.bits(key)
  last, draws = lax.scan(step, KEY, None, length=3)
  assert str(last.dtype) == "key<fry>"
  np.testing.assert_array_equal(draws, GOLDEN["scan_bits"][layout])
  folded = lax.fori_loop(0, 3, lambda i, k: random.fold_in(k, i), KEY)
  np.testing.assert_array_equal(data(folded), GOLDEN["fori_fold_in"][layout])
  np.testing.assert_array_equal(data(jaxon.jit(lambda k: lax.fori_loop(
      0, 3, lambda i, c: random.fold_in(c, i), k))(KEY)), GOLDEN["fori_fold_in"][layout])


def test_control_flow_passes_keys():
  split0 = lambda k: random.split(k)[0]  # noqa: E731
  np.testing.assert_array_equal(data(lax.cond(True, split0, lambda k: k, KEY)),
                                GOLDEN["split"][True][0])
  np.testing.assert_array_equal(data(lax.switch(1, [lambda k: k, split0], KEY)),
                                GOLDEN["split"][True][0])
  np.testing.assert_array_equal(lax.map(random.bits, KEYS),
                                np.stack([random.bits(k) for k in KEYS]))

  def split_n_times(key, n):  # under vmap, each key stops after its own n
    return lax.while_loop(lambda c: c[1] < n, lambda c: (split0(c[0]), c[1] + 1), (key, 0))[0]
  want = [KEYS[0], split0(KEYS[1]), split0(split0(KEYS[2]))]
  np.testing.assert_array_equal(data(jaxon.vmap(split_n_times)(KEYS[:3], jnp.arange(3))),
                                np.stack([data(k) for k in want]))


def test_keys_pickle_and_copy():
  for out in (pickle.loads(pickle.dumps(KEYS)), copy.deepcopy(KEYS), jnp.array(KEYS)):
    assert str(out.dtype) == "key<fry>"
    np.testing.assert_array_equal(data(out), data(KEYS))


def test_layout_is_the_one_traced_under():
  """An eager operation recorded under one layout keeps it even if it runs later."""
  with flag_set("jax_threefry_partitionable", False):
    pending = random.split(KEY, 3)
  np.testing.assert_array_equal(data(pending), GOLDEN["split"][False])


# ----------------------------------------------------------------------------- jaxprs

# name -> (function, arguments, JAX 0.10.2's jaxpr)
JAXPRS = {
    "split": (random.split, (KEY,), """{ lambda ; a:key<fry>[]. let
    b:key<fry>[2] = random_split[shape=(2,)] a
  in (b,) }"""),
    "fold_in": (random.fold_in, (KEY, np.int32(3)), """{ lambda ; a:key<fry>[] b:i32[]. let
    c:u32[] = convert_element_type[new_dtype=uint32 weak_type=False] b
    d:key<fry>[] = random_fold_in a c
  in (d,) }"""),
    "bits8": (lambda k: random.bits(k, (2,), jnp.uint8), (KEY,), """{ lambda ; a:key<fry>[]. let
    b:u8[2] = random_bits[bit_width=8 shape=(2,)] a
  in (b,) }"""),
    "key": (random.key, (np.int32(0),),
            "{ lambda ; a:i32[]. let b:key<fry>[] = random_seed[impl=fry] a in (b,) }"),
    "key_data": (random.key_data, (KEYS,),
                 "{ lambda ; a:key<fry>[4]. let b:u32[4,2] = random_unwrap a in (b,) }"),
    "wrap": (random.wrap_key_data, (random.key_data(KEYS),),
             "{ lambda ; a:u32[4,2]. let b:key<fry>[4] = random_wrap[impl=fry] a in (b,) }"),
    "PRNGKey": (random.PRNGKey, (np.int32(0),), """{ lambda ; a:i32[]. let
    b:key<fry>[] = random_seed[impl=fry] a
    c:u32[2] = random_unwrap b
  in (c,) }"""),
    "split_raw": (random.split, (random.PRNGKey(0),), """{ lambda ; a:u32[2]. let
    b:key<fry>[] = random_wrap[impl=fry] a
    c:key<fry>[2] = random_split[shape=(2,)] b
    d:u32[2,2] = random_unwrap c
  in (d,) }"""),
    "clone": (random.clone, (KEY,),
              "{ lambda ; a:key<fry>[]. let b:key<fry>[] = random_clone a in (b,) }"),
    "vmap_bits": (jaxon.vmap(random.bits), (KEYS,), """{ lambda ; a:key<fry>[4]. let
    b:u32[4] = random_bits[bit_width=32 shape=()] a
  in (b,) }"""),
    "vmap_split": (jaxon.vmap(lambda k: random.split(k, 3)), (KEYS,),
                   """{ lambda ; a:key<fry>[4]. let
    b:key<fry>[4,3] = random_split[shape=(3,)] a
  in (b,) }"""),
    "vmap_key": (jaxon.vmap(random.key), (np.arange(4, dtype=np.int32),),
                 "{ lambda ; a:i32[4]. let b:key<fry>[4] = random_seed[impl=fry] a in (b,) }"),
    "concatenate": (lambda a: jnp.concatenate([a, a]), (KEYS,), """{ lambda ; a:key<fry>[4]. let
    b:key<fry>[8] = concatenate[dimension=0] a a
  in (b,) }"""),
    "ne": (lambda a, b: a != b, (KEYS, KEY),
           "{ lambda ; a:key<fry>[4] b:key<fry>[]. let c:bool[4] = ne a b in (c,) }"),
    "transpose": (lambda a: a.reshape(2, 2).T, (KEYS,), """{ lambda ; a:key<fry>[4]. let
    b:key<fry>[2,2] = reshape[dimensions=None new_sizes=(2, 2) sharding=None] a
    c:key<fry>[2,2] = transpose[permutation=(1, 0)] b
  in (c,) }"""),
    "int_index": (lambda a: a[1], (KEYS,), """{ lambda ; a:key<fry>[4]. let
    b:key<fry>[1] = slice[limit_indices=(2,) start_indices=(1,) strides=None] a
    c:key<fry>[] = squeeze[dimensions=(0,)] b
  in (c,) }"""),
}


@pytest.mark.parametrize("name", list(JAXPRS))
def test_jaxprs_print_as_jax(name):
  fun, args, want = JAXPRS[name]
  assert str(jaxon.make_jaxpr(fun)(*args)) == want


# ----------------------------------------------------------------------------- shape operations

# name -> (operation on key arrays, the same operation on their (…, 2) data)
SHAPE_OPS = {
    "int_index": (lambda a: a[2], lambda d: d[2]),
    "negative_index": (lambda a: a[-1], lambda d: d[-1]),
    "slice": (lambda a: a[1:3], lambda d: d[1:3]),
    "reverse": (lambda a: a[::-1], lambda d: d[::-1]),
    "array_index": (lambda a: a[jnp.array([3, 0, 3])], lambda d: d[[3, 0, 3]]),
    "traced_index": (lambda a: lax.dynamic_index_in_dim(a, jnp.int32(2), keepdims=False),
                     lambda d: d[2]),
    "reshape": (lambda a: a.reshape(2, 2), lambda d: d.reshape(2, 2, 2)),
    "transpose": (lambda a: a.reshape(2, 2).T, lambda d: d.reshape(2, 2, 2).transpose(1, 0, 2)),
    "ravel": (lambda a: a.reshape(2, 2).ravel(), lambda d: d),
    "expand_squeeze": (lambda a: jnp.expand_dims(a, 0).squeeze(0), lambda d: d),
    "none_index": (lambda a: a[:, None], lambda d: d[:, None]),
    "broadcast_to": (lambda a: jnp.broadcast_to(a[0], (3,)), lambda d: np.stack([d[0]] * 3)),
    "concatenate": (lambda a: jnp.concatenate([a, a[:1]]), lambda d: np.concatenate([d, d[:1]])),
    "stack": (lambda a: jnp.stack([a[1], a[0]]), lambda d: np.stack([d[1], d[0]])),
    "where": (lambda a: jnp.where(jnp.array([True, False, True, False]), a, a[::-1]),
              lambda d: np.where([[True], [False], [True], [False]], d, d[::-1])),
    "take_fill": (lambda a: jnp.take(a, jnp.array([1, 9])),  # out of bounds: all ones
                  lambda d: np.array([d[1], [2 ** 32 - 1] * 2])),
    "at_set": (lambda a: a.at[1].set(a[3]), lambda d: d[[0, 3, 2, 3]]),
    "roll": (lambda a: jnp.roll(a, 1), lambda d: np.roll(d, 1, axis=0)),
    "zeros_like": (jnp.zeros_like, np.zeros_like),
    "unstack": (lambda a: jnp.stack(list(a)[::-1]), lambda d: d[::-1]),
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_operations_move_whole_keys(name):
  op, numpy_op = SHAPE_OPS[name]
  want = numpy_op(data(KEYS))
  for how, f in (("eager", op), ("jit", jaxon.jit(op))):
    out = f(KEYS)
    assert str(out.dtype) == "key<fry>", how
    np.testing.assert_array_equal(data(out), want, err_msg=how)


def test_keys_compare_equal_word_by_word():
  np.testing.assert_array_equal(KEYS == KEYS, [True] * 4)
  np.testing.assert_array_equal(KEYS != KEYS[0], [False, True, True, True])
  np.testing.assert_array_equal(jaxon.jit(lambda a, b: a == b)(KEYS, KEYS[2]),
                                [False, False, True, False])
  assert bool(random.key(0) == random.wrap_key_data(np.zeros(2, np.uint32)))


def test_unpacking_and_iteration():
  k1, k2 = random.split(KEY)
  np.testing.assert_array_equal(np.stack([data(k1), data(k2)]), GOLDEN["split"][True][:2])
  assert [data(k).tolist() for k in KEYS] == data(KEYS).tolist()


# ----------------------------------------------------------------------------- transformations

def test_vmap_over_key_axes():
  grid = KEYS.reshape(2, 2)
  draw = lambda k: random.uniform(k, (3,))  # noqa: E731
  out = jaxon.vmap(jaxon.vmap(draw), in_axes=1, out_axes=1)(grid)  # out[i, j]: grid[i, j]'s
  want = np.stack([np.stack([draw(grid[i, j]) for j in range(2)]) for i in range(2)])
  np.testing.assert_array_equal(out, want)
  split = jaxon.vmap(random.split, out_axes=1)(KEYS)
  assert split.shape == (2, 4)
  np.testing.assert_array_equal(data(split[:, 3]), data(random.split(KEYS[3])))


@pytest.mark.parametrize("sampler", [
    lambda k: random.normal(k, (2,)),
    lambda k: random.randint(k, (3,), 0, 10, jnp.uint8),
    lambda k: random.gamma(k, jnp.array([0.5, 3.0])),
    lambda k: random.key_data(random.fold_in(k, 3)),
], ids=["normal", "randint", "gamma", "fold_in"])
def test_vmap_over_keys_equals_stacking(sampler):
  np.testing.assert_array_equal(jaxon.vmap(sampler)(KEYS),
                                np.stack([sampler(k) for k in KEYS]))


def test_jit_takes_and_returns_keys():
  def f(key, x):
    k1, k2 = random.split(key)
    return k1, x + random.normal(k2, x.shape)
  key, y = jaxon.jit(f)(KEY, jnp.zeros(3))
  eager_key, eager_y = f(KEY, jnp.zeros(3))
  assert str(key.dtype) == "key<fry>"
  np.testing.assert_array_equal(data(key), data(eager_key))
  np.testing.assert_array_equal(y, eager_y)
  closed = jaxon.jit(lambda: random.bits(KEY, (2,)))()  # a key constant of the program
  np.testing.assert_array_equal(closed, random.bits(KEY, (2,)))


def test_key_array_is_one_pytree_leaf():
  leaves, tree = jaxon.tree_util.tree_flatten({"keys": KEYS, "x": 1.0})
  assert len(leaves) == 2 and any(leaf is KEYS for leaf in leaves)
  out = jaxon.tree_util.tree_map(lambda x: x, {"keys": KEYS})
  assert out["keys"] is KEYS
  assert jaxon.tree_util.tree_unflatten(tree, leaves)["keys"] is KEYS


def test_derivatives_with_key_arguments():
  f = lambda x, k: x * random.uniform(k)  # noqa: E731
  u = random.uniform(KEY)
  with pytest.raises(TypeError, match="key<fry>"):
    jaxon.grad(f, argnums=(0, 1))(1.0, KEY)
  gx, gk = jaxon.grad(f, argnums=(0, 1), allow_int=True)(1.0, KEY)
  assert gx == u and gk.dtype == jaxon.dtypes.float0 and gk.shape == ()
  assert jaxon.grad(f)(2.0, KEY) == u
  out, tangent = jaxon.jvp(lambda k: random.split(k), (KEY,),
                           (np.zeros((), jaxon.dtypes.float0),))
  assert tangent.dtype == jaxon.dtypes.float0 and tangent.shape == (2,)
  np.testing.assert_array_equal(data(out), GOLDEN["split"][True][:2])


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call,error,match", [
    (lambda: KEY + 1, TypeError, "add does not accept dtypes key<fry>, int32"),
    (lambda: jnp.multiply(KEYS, 2.0), TypeError, "multiply does not accept dtypes key<fry>"),
    (lambda: jnp.sin(KEY), TypeError, "key<fry>"),
    (lambda: -KEY, TypeError, "neg does not accept dtype key<fry>"),
    (lambda: KEY < KEY, TypeError, "lt does not accept dtype key<fry>"),
    (lambda: jnp.sum(KEYS), TypeError, "key<fry>"),
    (lambda: KEY == random.PRNGKey(0), TypeError, "equal does not accept dtypes key<fry>"),
    (lambda: np.asarray(KEY), TypeError, "key_data"),
    (lambda: bool(KEY), TypeError, "key array cannot be converted to boolean"),
    (lambda: lax.convert_element_type(KEY, jnp.float32), ValueError,
     "Cannot convert_element_type from key<fry> to float32"),
    (lambda: KEYS.astype(jnp.uint32), ValueError, "convert_element_type"),
    (lambda: lax.bitcast_convert_type(KEY, jnp.float32), ValueError, "key<fry>"),
    (lambda: random.wrap_key_data(jnp.zeros(2, jnp.int32)), TypeError,
     "expected key_data.dtype = uint32; got dtype=int32"),
    (lambda: random.wrap_key_data(jnp.zeros(3, jnp.uint32)), TypeError,
     r"expected key_data.shape to end with \(2,\)"),
    (lambda: random.wrap_key_data(KEY), TypeError, "typed PRNG keys"),
    (lambda: random.split(KEYS), ValueError,
     r"split accepts a single key, but was given a key array of shape \(4,\)"),
    (lambda: random.uniform(KEYS), ValueError, "single key.*vmap"),
    (lambda: random.key(KEY), TypeError, "key accepts a scalar seed, but was given a PRNG key"),
    (lambda: random.key(jnp.arange(3)), TypeError, "key accepts a scalar seed"),
    (lambda: random.key(1.0), TypeError, "seed must be an integer"),
    (lambda: random.key(0, impl="foo"), ValueError, "unrecognized PRNG implementation"),
    (lambda: random.split(3), TypeError, "must be a PRNG key"),
], ids=["add", "multiply", "sin", "neg", "lt", "sum", "eq_raw", "to_numpy", "bool",
        "convert", "astype", "bitcast", "wrap_int32", "wrap_shape", "wrap_typed",
        "split_batched", "uniform_batched", "key_of_key", "seed_array", "seed_float",
        "impl", "split_int"])
def test_errors(call, error, match):
  with pytest.raises(error, match=match):
    call()
