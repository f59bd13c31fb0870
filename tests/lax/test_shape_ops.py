"""lax shape primitives (reshape, transpose, squeeze, expand_dims, rev, concatenate, pad,
collapse) against NumPy: each case eagerly and under jit, with the abstract output checked
against the executed one."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from jaxon import lax

DTYPES = [np.float32, np.int32, np.uint8, np.bool_, jnp.bfloat16, np.float16]


def rand(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    low = 0 if dtype.kind == "u" else -50
    return rng.integers(low, 100, shape).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


def check(name, fun, args, expected):
  """`fun(*args)` equals `expected` (value, shape, dtype) eagerly and under jit, and the
  abstract evaluation agrees."""
  args = [jaxon.device_put(a) for a in args]
  expected = np.asarray(expected)
  for how, f in (("eager", fun), ("jit", jaxon.jit(fun))):
    out = f(*args)
    where = f"{name} ({how}, dtype {expected.dtype.name}, inputs {[a.shape for a in args]})"
    assert out.shape == expected.shape, f"{where}: shape {out.shape} != {expected.shape}"
    assert out.dtype == expected.dtype, f"{where}: dtype {out.dtype} != {expected.dtype}"
    np.testing.assert_array_equal(np.asarray(out).astype(np.float32),
                                  expected.astype(np.float32), err_msg=where)
  aval = jaxon.make_jaxpr(fun)(*args).out_avals[0]
  assert (aval.shape, aval.dtype) == (expected.shape, expected.dtype), f"{name}: aval {aval}"


def ids(cases):
  return [str(c) for c in cases]


# ----------------------------------------------------------------------------- reshape

RESHAPE_CASES = [
    ((6,), (2, 3), None), ((2, 3), (3, 2), None), ((2, 3), (3, 2), (1, 0)),
    ((2, 3, 4), (4, 6), (2, 0, 1)), ((), (1, 1), None), ((1,), (), None),
    ((0, 3), (3, 0), None), ((2, 3), (2, 3), None),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,new_sizes,dimensions", RESHAPE_CASES, ids=ids(RESHAPE_CASES))
def test_reshape(shape, new_sizes, dimensions, dtype):
  x = rand(shape, dtype)
  expected = np.reshape(x if dimensions is None else np.transpose(x, dimensions), new_sizes)
  check("reshape", lambda x: lax.reshape(x, new_sizes, dimensions), [x], expected)


COLLAPSE_CASES = [((2, 3, 4), 0, 2, (6, 4)), ((2, 3, 4), 1, None, (2, 12)),
                  ((2, 3, 4), -2, None, (2, 12)), ((2, 3), 0, 0, (1, 2, 3)),
                  ((0, 3), 0, None, (0,))]


@pytest.mark.parametrize("shape,start,stop,out_shape", COLLAPSE_CASES, ids=ids(COLLAPSE_CASES))
def test_collapse(shape, start, stop, out_shape):
  x = rand(shape, np.float32)
  check("collapse", lambda x: lax.collapse(x, start, stop), [x], x.reshape(out_shape))


# ----------------------------------------------------------------------------- transpose

TRANSPOSE_CASES = [((), ()), ((3,), (0,)), ((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)),
                   ((0, 2, 1), (1, 2, 0)), ((2, 3), (0, 1))]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,perm", TRANSPOSE_CASES, ids=ids(TRANSPOSE_CASES))
def test_transpose(shape, perm, dtype):
  x = rand(shape, dtype)
  check("transpose", lambda x: lax.transpose(x, perm), [x], np.transpose(x, perm))


# ----------------------------------------------------------------------------- squeeze, expand_dims

SQUEEZE_CASES = [((1,), (0,)), ((1, 3, 1), (0, 2)), ((1, 3, 1), (-1,)), ((3,), ()),
                 ((1, 0, 1), (0,)), ((1, 1), (1, 0))]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,dims", SQUEEZE_CASES, ids=ids(SQUEEZE_CASES))
def test_squeeze(shape, dims, dtype):
  x = rand(shape, dtype)
  check("squeeze", lambda x: lax.squeeze(x, dims), [x], np.squeeze(x, dims))


EXPAND_DIMS_CASES = [((), (0,)), ((3,), (0,)), ((3,), (-1,)), ((2, 3), (0, 2)),
                     ((2, 3), (1, -1)), ((0,), (0, 1))]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,dims", EXPAND_DIMS_CASES, ids=ids(EXPAND_DIMS_CASES))
def test_expand_dims(shape, dims, dtype):
  x = rand(shape, dtype)
  check("expand_dims", lambda x: lax.expand_dims(x, dims), [x], np.expand_dims(x, dims))


# ----------------------------------------------------------------------------- rev

REV_CASES = [((3,), (0,)), ((2, 3), (1,)), ((2, 3), (0, 1)), ((2, 3), ()), ((), ()),
             ((2, 0), (0,)), ((2, 3, 4), (-1, 0))]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,dims", REV_CASES, ids=ids(REV_CASES))
def test_rev(shape, dims, dtype):
  x = rand(shape, dtype)
  check("rev", lambda x: lax.rev(x, dims), [x], np.flip(x, dims))


# ----------------------------------------------------------------------------- concatenate

CONCATENATE_CASES = [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0)], 1), ([(3,)], 0),
                     ([(0, 2), (0, 2)], 0), ([(2, 3, 4), (2, 3, 1)], -1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes,dim", CONCATENATE_CASES, ids=ids(CONCATENATE_CASES))
def test_concatenate(shapes, dim, dtype):
  xs = [rand(s, dtype, seed=i) for i, s in enumerate(shapes)]
  check("concatenate", lambda *xs: lax.concatenate(xs, dim), xs, np.concatenate(xs, dim))


# ----------------------------------------------------------------------------- pad

def np_pad(x, value, config):
  """lax.pad's semantics in NumPy: interior dilation, then np.pad for positive edge
  padding and slicing for negative (np.pad has no cropping)."""
  for axis, (lo, hi, interior) in enumerate(config):
    n = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = 0 if n == 0 else n + (n - 1) * interior
    dilated = np.full(shape, value, x.dtype)
    index = [slice(None)] * x.ndim
    index[axis] = slice(None, None, interior + 1)
    dilated[tuple(index)] = x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (max(lo, 0), max(hi, 0))
    padded = np.pad(dilated, widths, constant_values=value)
    index[axis] = slice(max(-lo, 0), padded.shape[axis] - max(-hi, 0))
    x = padded[tuple(index)]
  return x


PAD_CASES = [((3,), [(1, 2, 0)]), ((3,), [(0, 0, 2)]), ((3,), [(-1, 1, 1)]),
             ((2, 3), [(1, -1, 0), (2, 2, 1)]), ((), []), ((0,), [(1, 1, 3)]),
             ((0, 2), [(1, 0, 0), (0, 0, 1)]), ((4,), [(-2, -2, 0)]), ((3,), [(-3, -2, 1)])]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,config", PAD_CASES, ids=ids(PAD_CASES))
def test_pad(shape, config, dtype):
  x = rand(shape, dtype)
  value = np.array(1, dtype)
  check("pad", lambda x, v: lax.pad(x, v, config), [x, value], np_pad(x, value, config))


# ----------------------------------------------------------------------------- 64-bit

X64_CASES = [
    ("reshape", lambda x: lax.reshape(x, (3, 2), (1, 0)), lambda x: x.T.reshape(3, 2)),
    ("transpose", lambda x: lax.transpose(x, (1, 0)), lambda x: x.T),
    ("rev", lambda x: lax.rev(x, (0,)), lambda x: x[::-1]),
    ("concatenate", lambda x: lax.concatenate([x, x], 1), lambda x: np.concatenate([x, x], 1)),
    ("pad", lambda x: lax.pad(x, np.ones((), x.dtype), [(1, 0, 1), (0, -1, 0)]),
     lambda x: np_pad(x, 1, [(1, 0, 1), (0, -1, 0)])),
]


@pytest.mark.parametrize("dtype", [np.float64, np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,fun,oracle", X64_CASES, ids=[c[0] for c in X64_CASES])
def test_x64(x64, name, fun, oracle, dtype):
  x = rand((2, 3), dtype)
  check(name, fun, [x], oracle(x))


# ----------------------------------------------------------------------------- types and jaxprs

def test_weak_types_follow_inputs():
  assert lax.reshape(1.0, (1, 1)).weak_type
  assert lax.pad(1.0, 0.0, []).weak_type
  strong = jnp.ones(2, jnp.float32)
  weak = lax.expand_dims(2.0, (0,))
  assert lax.concatenate([weak, weak], 0).weak_type
  assert not lax.concatenate([strong, weak], 0).weak_type


def test_no_op_returns_concrete_operand():
  x = jnp.ones((2, 3))
  assert lax.reshape(x, (2, 3)) is x
  assert lax.transpose(x, (0, 1)) is x
  assert lax.squeeze(x, ()) is x
  assert lax.concatenate([x], 0) is x


def test_jaxpr_params():
  def f(x):
    y = lax.reshape(x, (3, 2), (1, 0))
    y = lax.rev(lax.transpose(y, (1, 0)), (-1,))
    y = lax.squeeze(lax.expand_dims(y, (0,)), (0,))
    return lax.pad(lax.concatenate([y, y], 0), 0.0, [(1, 0, 0), (0, -1, 1)])
  text = str(jaxon.make_jaxpr(f)(jnp.ones((2, 3))))
  for expected in ("reshape[dimensions=(1, 0) new_sizes=(3, 2) sharding=None]",
                   "transpose[permutation=(1, 0)]", "rev[dimensions=(1,)]",
                   "squeeze[dimensions=(0,)]", "concatenate[dimension=0]",
                   "pad[padding_config=((1, 0, 0), (0, -1, 1))]"):
    assert expected in text, f"{expected!r} not in\n{text}"


# ----------------------------------------------------------------------------- AD and batching

PAD_CONFIG = [(1, -1, 1), (2, 0, 0)]

# (name, fun, per-example input shapes); pad's padding value is its second input.
LINEAR_CASES = [
    ("reshape", lambda x: lax.reshape(x, (3, 2)), [(2, 3)]),
    ("reshape_dims", lambda x: lax.reshape(x, (4, 6), (2, 0, 1)), [(2, 3, 4)]),
    ("collapse", lambda x: lax.collapse(x, 1), [(2, 3, 4)]),
    ("transpose", lambda x: lax.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    ("squeeze", lambda x: lax.squeeze(x, (0, 2)), [(1, 3, 1)]),
    ("rev", lambda x: lax.rev(x, (0, 2)), [(2, 3, 4)]),
    ("concatenate", lambda x, y: lax.concatenate([x, y], 1), [(2, 3), (2, 1)]),
    ("pad", lambda x, v: lax.pad(x, v, PAD_CONFIG), [(2, 3), ()]),
]


def integer_valued(shapes, seed):
  """Float32 inputs holding small integers, so that sums of products are exact."""
  return [rand(s, np.int32, seed + i).astype(np.float32) for i, s in enumerate(shapes)]


@pytest.mark.parametrize("name,fun,shapes", LINEAR_CASES, ids=[c[0] for c in LINEAR_CASES])
def test_jvp_applies_the_op_to_tangents(name, fun, shapes):
  xs, ts = integer_valued(shapes, 0), integer_valued(shapes, 10)
  out, tangent = jaxon.jvp(fun, xs, ts)
  np.testing.assert_array_equal(np.asarray(out), np.asarray(fun(*xs)), err_msg=name)
  np.testing.assert_array_equal(np.asarray(tangent), np.asarray(fun(*ts)), err_msg=name)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name,fun,shapes", LINEAR_CASES, ids=[c[0] for c in LINEAR_CASES])
def test_vjp_is_the_transpose(name, fun, shapes, jit):
  """<ct, f(t)> == <f^T(ct), t> for a linear f (the dot-product test)."""
  xs, ts = integer_valued(shapes, 0), integer_valued(shapes, 10)
  ct = integer_valued([np.shape(fun(*xs))], 20)[0]
  pullback = lambda xs, ct: jaxon.vjp(fun, *xs)[1](ct)
  cts = (jaxon.jit(pullback) if jit else pullback)(xs, ct)
  assert [c.shape for c in cts] == [t.shape for t in ts], name
  lhs = np.sum(ct * np.asarray(fun(*ts)))
  rhs = sum(np.sum(np.asarray(c) * t) for c, t in zip(cts, ts))
  assert lhs == rhs, f"{name}: <ct, f(t)> = {lhs} but <f^T(ct), t> = {rhs}"


VMAP_AXES = {"reshape": [0, 1, -1], "reshape_dims": [0, 2], "collapse": [0, 3],
             "transpose": [0, 1, 3], "squeeze": [0, 2], "rev": [1, 3],
             "concatenate": [(0, 1), (None, 0), (2, None)],
             "pad": [(0, None), (1, 0), (None, 0)]}
VMAP_CASES = [(c, axes) for c in LINEAR_CASES for axes in VMAP_AXES[c[0]]]


@pytest.mark.parametrize("case,in_axes", VMAP_CASES,
                         ids=[f"{c[0]}-{axes}" for c, axes in VMAP_CASES])
def test_vmap_matches_a_loop(case, in_axes):
  name, fun, shapes = case
  axes = in_axes if isinstance(in_axes, tuple) else (in_axes,)
  batch = 3
  xs = [rand(s, np.float32, i) if a is None else
        np.moveaxis(rand((batch,) + s, np.float32, i), 0, a)
        for i, (s, a) in enumerate(zip(shapes, axes))]
  expected = np.stack([np.asarray(fun(*[x if a is None else np.take(x, b, a)
                                        for x, a in zip(xs, axes)])) for b in range(batch)])
  for how, f in (("eager", jaxon.vmap(fun, axes)), ("jit", jaxon.jit(jaxon.vmap(fun, axes)))):
    np.testing.assert_array_equal(np.asarray(f(*xs)), expected,
                                  err_msg=f"vmap of {name} with in_axes {axes} ({how})")


# ----------------------------------------------------------------------------- errors

F32_6 = np.zeros(6, np.float32)
F32_23 = np.zeros((2, 3), np.float32)
I32_23 = np.zeros((2, 3), np.int32)

ERROR_CASES = [
    ("reshape size", lambda: lax.reshape(F32_6, (4,)), TypeError,
     r"total size must be unchanged, got new_sizes \(4,\).*shape \(6,\)"),
    ("reshape negative", lambda: lax.reshape(F32_6, (-1, 6)), TypeError, "non-negative"),
    ("reshape dimensions", lambda: lax.reshape(F32_23, (6,), (0, 0)), TypeError,
     r"reshape dimensions \(0, 0\) is not a permutation .*\(2, 3\)"),
    ("reshape out_sharding", lambda: lax.reshape(F32_6, (6,), out_sharding="x"),
     TypeError, "only supports instances of `NamedSharding` or `PartitionSpec`"),
    ("transpose permutation", lambda: lax.transpose(F32_23, (0,)), TypeError,
     r"transpose permutation \(0,\) is not a permutation .*\(2, 3\)"),
    ("squeeze size", lambda: lax.squeeze(F32_23, (0,)), ValueError,
     r"size not equal to one, got shape=\(2, 3\) and dimensions=\(0,\)"),
    ("squeeze bounds", lambda: lax.squeeze(F32_23, (2,)), ValueError, "out of bounds"),
    ("squeeze repeated", lambda: lax.squeeze(np.zeros((1, 2)), (0, -2)), ValueError,
     "distinct"),
    ("expand_dims repeated", lambda: lax.expand_dims(F32_6, (0, 0)), ValueError,
     "repeated axis"),
    ("rev repeated", lambda: lax.rev(F32_23, (1, 1)), TypeError, "distinct"),
    ("rev bounds", lambda: lax.rev(F32_23, (2,)), TypeError, r"got \(2,\)"),
    ("concatenate empty", lambda: lax.concatenate([], 0), ValueError, "non-empty"),
    ("concatenate dtypes", lambda: lax.concatenate([F32_23, I32_23], 0), TypeError,
     "same dtypes, got f32.*i32"),
    ("concatenate ranks", lambda: lax.concatenate([F32_23, F32_6], 0), TypeError,
     r"different numbers of dimensions: got \(2, 3\), \(6,\)"),
    ("concatenate shapes", lambda: lax.concatenate([F32_23, F32_23.T], 0), TypeError,
     r"differ in dimensions other than .* \(2, 3\), \(3, 2\)"),
    ("concatenate bounds", lambda: lax.concatenate([F32_23, F32_23], 2), TypeError,
     "dimension out of bounds"),
    ("concatenate scalars", lambda: lax.concatenate([np.float32(1), np.float32(2)], 0),
     TypeError, "dimension out of bounds"),
    ("pad config length", lambda: lax.pad(F32_23, np.float32(0), [(1, 1, 0)]), ValueError,
     r"length of padding_config .* operand shape \(2, 3\)"),
    ("pad interior", lambda: lax.pad(F32_6, np.float32(0), [(0, 0, -1)]), ValueError,
     "interior padding"),
    ("pad crop", lambda: lax.pad(F32_6, np.float32(0), [(-4, -4, 0)]), ValueError,
     r"not at least 0, got result shape \(-2,\)"),
    ("pad dtype", lambda: lax.pad(F32_6, np.int32(0), [(1, 1, 0)]), TypeError,
     "same dtype, got f32.*i32"),
    ("pad value shape", lambda: lax.pad(F32_6, F32_6, [(1, 1, 0)]), ValueError,
     "must be a scalar"),
    ("pad triples", lambda: lax.pad(F32_6, np.float32(0), [(1, 1)]), ValueError, "triples"),
    ("collapse order", lambda: lax.collapse(F32_23, 1, 0), ValueError, "start_dimension"),
]


@pytest.mark.parametrize("name,thunk,exc,match", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(name, thunk, exc, match):
  with pytest.raises(exc, match=match):
    thunk()


@pytest.mark.parametrize("name,thunk,exc,match", ERROR_CASES[:3] + ERROR_CASES[12:16],
                         ids=[c[0] for c in ERROR_CASES[:3] + ERROR_CASES[12:16]])
def test_errors_at_trace_time(name, thunk, exc, match):
  with pytest.raises(exc, match=match):
    jaxon.make_jaxpr(thunk)()


# ----------------------------------------------------------------------------- properties

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
prop_dtypes = st.sampled_from([np.float32, np.int32])
prop_settings = settings(max_examples=20, deadline=None)


@st.composite
def reshapes(draw):
  """A shape, a permutation of it, and a shape of the same size."""
  shape = draw(shapes)
  perm = tuple(draw(st.permutations(range(len(shape)))))
  size = int(np.prod(shape))
  new = []
  while size > 1 and len(new) < 3:
    divisor = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
    new.append(divisor)
    size //= divisor
  new.append(size)
  return shape, perm, tuple(draw(st.permutations(new)))


@prop_settings
@given(reshapes(), prop_dtypes)
def test_reshape_property(case, dtype):
  shape, perm, new = case
  x = rand(shape, dtype)
  out = lax.reshape(x, new, perm)
  np.testing.assert_array_equal(np.asarray(out), np.transpose(x, perm).reshape(new),
                                err_msg=f"reshape {shape} -> {new} dims {perm}")


@prop_settings
@given(shapes.flatmap(lambda s: st.tuples(st.just(s), st.permutations(range(len(s))))),
       prop_dtypes)
def test_transpose_property(case, dtype):
  shape, perm = case
  x = rand(shape, dtype)
  np.testing.assert_array_equal(np.asarray(lax.transpose(x, perm)), np.transpose(x, perm),
                                err_msg=f"transpose {shape} {perm}")


@st.composite
def concatenations(draw):
  base = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
  dim = draw(st.integers(0, len(base) - 1))
  sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
  return [tuple(base[:dim] + [n] + base[dim + 1:]) for n in sizes], dim


@prop_settings
@given(concatenations(), prop_dtypes)
def test_concatenate_property(case, dtype):
  shapes_, dim = case
  xs = [rand(s, dtype, seed=i) for i, s in enumerate(shapes_)]
  np.testing.assert_array_equal(np.asarray(lax.concatenate(xs, dim)),
                                np.concatenate(xs, dim), err_msg=f"concatenate {shapes_}")


@st.composite
def pads(draw):
  shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3))
  config = []
  for n in shape:
    interior = draw(st.integers(0, 2))
    size = 0 if n == 0 else n + (n - 1) * interior
    lo = draw(st.integers(-size, 3))
    hi = draw(st.integers(-(size + lo), 3))
    config.append((lo, hi, interior))
  return tuple(shape), config


@prop_settings
@given(pads(), prop_dtypes)
def test_pad_property(case, dtype):
  shape, config = case
  x = rand(shape, dtype)
  value = np.array(7, dtype)
  np.testing.assert_array_equal(np.asarray(lax.pad(x, value, config)),
                                np_pad(x, value, config), err_msg=f"pad {shape} {config}")
