"""jaxon.numpy shape manipulation against NumPy: every case is one function written once for
both modules (`fun(np, x)` is the oracle of `fun(jnp, x)`), run eagerly and under jit, with
the abstract output checked against the executed one."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from jaxon._src.errors import ConcretizationTypeError


def rand(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    return rng.integers(0 if dtype.kind == "u" else -50, 100, shape).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


def _leaves(x):
  return list(x) if isinstance(x, (list, tuple)) else [x]


def check(name, fun, args, expected):
  """`fun(*args)` matches `expected` (an array or a list of arrays) eagerly and under jit;
  `make_jaxpr`'s output avals match too."""
  args = [jaxon.device_put(a) for a in args]
  expected = [np.asarray(e) for e in _leaves(expected)]
  for how, f in (("eager", fun), ("jit", jaxon.jit(fun))):
    outs = _leaves(f(*args))
    where = f"{name} ({how}, inputs {[(a.shape, a.dtype.name) for a in args]})"
    assert len(outs) == len(expected), f"{where}: {len(outs)} outputs, not {len(expected)}"
    for out, exp in zip(outs, expected):
      assert (out.shape, out.dtype) == (exp.shape, exp.dtype), (
          f"{where}: got {out.dtype}{out.shape}, expected {exp.dtype}{exp.shape}")
      np.testing.assert_array_equal(np.asarray(out).astype(np.float32),
                                    exp.astype(np.float32), err_msg=where)
  avals = jaxon.make_jaxpr(lambda *a: _leaves(fun(*a)))(*args).out_avals
  assert [(a.shape, a.dtype) for a in avals] == [(e.shape, e.dtype) for e in expected], name


# Each case: (id, input shapes, fun(module, *arrays)).
CASES = [
    ("reshape", [(6,)], lambda m, x: m.reshape(x, (2, -1))),
    ("reshape_flat", [(2, 3)], lambda m, x: m.reshape(x, -1)),
    ("reshape_F", [(2, 3)], lambda m, x: m.reshape(x, (3, 2), order="F")),
    ("reshape_scalar", [()], lambda m, x: m.reshape(x, (1, 1))),
    ("reshape_empty", [(0, 3)], lambda m, x: m.reshape(x, (3, -1))),
    ("ravel", [(2, 3)], lambda m, x: m.ravel(x)),
    ("ravel_F", [(2, 3, 2)], lambda m, x: m.ravel(x, order="F")),
    ("ravel_scalar", [()], lambda m, x: m.ravel(x)),
    ("transpose", [(2, 3, 4)], lambda m, x: m.transpose(x)),
    ("transpose_axes", [(2, 3, 4)], lambda m, x: m.transpose(x, (-1, 0, 1))),
    ("permute_dims", [(2, 3, 4)], lambda m, x: m.permute_dims(x, (1, 0, 2))),
    ("matrix_transpose", [(2, 3, 4)], lambda m, x: m.matrix_transpose(x)),
    ("swapaxes", [(2, 3, 4)], lambda m, x: m.swapaxes(x, 0, -1)),
    ("moveaxis", [(2, 3, 4)], lambda m, x: m.moveaxis(x, 0, -1)),
    ("moveaxis_many", [(2, 3, 4)], lambda m, x: m.moveaxis(x, [0, 1], [-1, -3])),
    ("squeeze", [(1, 3, 1)], lambda m, x: m.squeeze(x)),
    ("squeeze_axis", [(1, 3, 1)], lambda m, x: m.squeeze(x, -1)),
    ("squeeze_axes", [(1, 0, 1)], lambda m, x: m.squeeze(x, (0, 2))),
    ("squeeze_scalar", [()], lambda m, x: m.squeeze(x)),
    ("expand_dims", [(3,)], lambda m, x: m.expand_dims(x, 0)),
    ("expand_dims_many", [(2, 3)], lambda m, x: m.expand_dims(x, (0, -1))),
    ("expand_dims_scalar", [()], lambda m, x: m.expand_dims(x, -1)),
    ("atleast_1d", [()], lambda m, x: m.atleast_1d(x)),
    ("atleast_2d", [(3,)], lambda m, x: m.atleast_2d(x)),
    ("atleast_3d", [(3,)], lambda m, x: m.atleast_3d(x)),
    ("atleast_3d_many", [(), (2, 3), (1, 2, 3, 4)], lambda m, *x: m.atleast_3d(*x)),
    ("broadcast_to", [(3,)], lambda m, x: m.broadcast_to(x, (2, 3))),
    ("broadcast_to_scalar", [()], lambda m, x: m.broadcast_to(x, 2)),
    ("broadcast_to_ones", [(1, 3)], lambda m, x: m.broadcast_to(x, (4, 0, 3)[::2])),
    ("broadcast_arrays", [(3, 1), (4,), ()], lambda m, *x: m.broadcast_arrays(*x)),
    ("flip", [(2, 3)], lambda m, x: m.flip(x)),
    ("flip_axis", [(2, 3, 4)], lambda m, x: m.flip(x, (0, -1))),
    ("fliplr", [(2, 3)], lambda m, x: m.fliplr(x)),
    ("flipud", [(3,)], lambda m, x: m.flipud(x)),
    ("rot90", [(2, 3)], lambda m, x: m.rot90(x)),
    ("rot90_2", [(2, 3)], lambda m, x: m.rot90(x, 2)),
    ("rot90_neg", [(2, 3)], lambda m, x: m.rot90(x, -1)),
    ("rot90_axes", [(2, 3, 4)], lambda m, x: m.rot90(x, 3, axes=(2, 1))),
    ("roll", [(5,)], lambda m, x: m.roll(x, 2)),
    ("roll_axis", [(3, 4)], lambda m, x: m.roll(x, -1, axis=1)),
    ("roll_many", [(3, 4)], lambda m, x: m.roll(x, (1, 2, -7), (0, 1, 0))),
    ("roll_flat", [(3, 4)], lambda m, x: m.roll(x, 5)),
    ("roll_empty", [(0,)], lambda m, x: m.roll(x, 1)),
    ("tile", [(2,)], lambda m, x: m.tile(x, (2, 2))),
    ("tile_int", [(2, 3)], lambda m, x: m.tile(x, 2)),
    ("tile_scalar", [()], lambda m, x: m.tile(x, 3)),
    ("tile_zero", [(2, 3)], lambda m, x: m.tile(x, (2, 1, 0))),
    ("repeat", [(3,)], lambda m, x: m.repeat(x, 2)),
    ("repeat_axis", [(2, 3)], lambda m, x: m.repeat(x, 2, axis=1)),
    ("repeat_counts", [(2, 3)], lambda m, x: m.repeat(x, [1, 0, 2], axis=-1)),
    ("repeat_zero", [(2, 3)], lambda m, x: m.repeat(x, 0)),
    ("concatenate", [(2, 3), (1, 3)], lambda m, *x: m.concatenate(x)),
    ("concatenate_axis", [(2, 3), (2, 1), (2, 0)], lambda m, *x: m.concatenate(x, -1)),
    ("concatenate_none", [(2, 3), (4,)], lambda m, *x: m.concatenate(x, axis=None)),
    ("concatenate_array", [(2, 3, 4)], lambda m, x: m.concatenate(x, axis=1)),
    ("concat", [(2,), (3,)], lambda m, *x: m.concat(x)),
    ("stack", [(3,), (3,)], lambda m, *x: m.stack(x)),
    ("stack_last", [(2, 3), (2, 3), (2, 3)], lambda m, *x: m.stack(x, axis=-1)),
    ("stack_scalars", [(), ()], lambda m, *x: m.stack(x)),
    ("stack_array", [(2, 3, 4)], lambda m, x: m.stack(x, axis=1)),
    ("hstack", [(2,), (3,)], lambda m, *x: m.hstack(x)),
    ("hstack_2d", [(2, 3), (2, 1)], lambda m, *x: m.hstack(x)),
    ("hstack_array", [(2, 3, 4)], lambda m, x: m.hstack(x)),
    ("vstack", [(3,), (3,)], lambda m, *x: m.vstack(x)),
    ("vstack_2d", [(2, 3), (1, 3)], lambda m, *x: m.vstack(x)),
    ("vstack_array", [(4, 3)], lambda m, x: m.vstack(x)),
    ("dstack", [(2, 3), (2, 3)], lambda m, *x: m.dstack(x)),
    ("dstack_1d", [(3,), (3,)], lambda m, *x: m.dstack(x)),
    ("column_stack", [(3,), (3,)], lambda m, *x: m.column_stack(x)),
    ("column_stack_2d", [(3, 2), (3,)], lambda m, *x: m.column_stack(x)),
    ("column_stack_array", [(2, 3)], lambda m, x: m.column_stack(x)),
    ("split", [(6,)], lambda m, x: m.split(x, 3)),
    ("split_indices", [(6,)], lambda m, x: m.split(x, [2, 5])),
    ("split_python_slices", [(5,)], lambda m, x: m.split(x, [-2, 10, 1])),
    ("split_axis", [(4, 6)], lambda m, x: m.split(x, 3, axis=1)),
    ("array_split", [(7,)], lambda m, x: m.array_split(x, 3)),
    ("array_split_more", [(2,)], lambda m, x: m.array_split(x, 3)),
    ("hsplit", [(4, 6)], lambda m, x: m.hsplit(x, 2)),
    ("hsplit_1d", [(4,)], lambda m, x: m.hsplit(x, [1])),
    ("vsplit", [(4, 6)], lambda m, x: m.vsplit(x, [1])),
    ("dsplit", [(2, 2, 4)], lambda m, x: m.dsplit(x, 2)),
    ("pad", [(2, 3)], lambda m, x: m.pad(x, 1)),
    ("pad_constant", [(2, 3)], lambda m, x: m.pad(x, ((1, 0), (0, 2)), constant_values=5)),
    ("pad_constant_axes", [(2, 3)],
     lambda m, x: m.pad(x, ((1, 2), (2, 1)), constant_values=((1, 2), (3, 4)))),
    ("pad_scalar", [()], lambda m, x: m.pad(x, 2)),
    ("pad_empty_axis", [(0, 2)], lambda m, x: m.pad(x, (1, 2))),
    ("pad_edge", [(2, 3)], lambda m, x: m.pad(x, ((1, 3), (4, 0)), mode="edge")),
    ("pad_wrap", [(2, 3)], lambda m, x: m.pad(x, ((1, 3), (4, 0)), mode="wrap")),
    ("pad_reflect", [(2, 3)], lambda m, x: m.pad(x, ((1, 3), (4, 0)), mode="reflect")),
    ("pad_reflect_one", [(1,)], lambda m, x: m.pad(x, 3, mode="reflect")),
    ("pad_symmetric", [(2, 3)], lambda m, x: m.pad(x, ((1, 3), (4, 0)), mode="symmetric")),
    ("method_reshape", [(6,)], lambda m, x: x.reshape(2, 3)),
    ("method_reshape_tuple", [(6,)], lambda m, x: x.reshape((3, -1))),
    ("method_T", [(2, 3, 4)], lambda m, x: x.T),
    ("method_mT", [(2, 3, 4)], lambda m, x: x.mT),
    ("method_transpose", [(2, 3, 4)], lambda m, x: x.transpose()),
    ("method_transpose_args", [(2, 3, 4)], lambda m, x: x.transpose(1, 0, 2)),
    ("method_transpose_tuple", [(2, 3, 4)], lambda m, x: x.transpose((2, 0, 1))),
    ("method_squeeze", [(1, 3, 1)], lambda m, x: x.squeeze(0)),
    ("method_ravel", [(2, 3)], lambda m, x: x.ravel()),
    ("method_flatten", [(2, 3)], lambda m, x: x.flatten()),
    ("method_swapaxes", [(2, 3)], lambda m, x: x.swapaxes(0, 1)),
    ("method_repeat", [(2, 3)], lambda m, x: x.repeat(2, axis=0)),
    ("method_astype", [(2, 3)], lambda m, x: x.astype(np.int32)),
    ("astype_bool", [(2, 3)], lambda m, x: m.astype(x, np.bool_)),
]


def _first_of_each_function(cases):
  seen, firsts = set(), []
  for case in cases:
    fun = case[0].split("_")[0]
    if fun not in seen:
      seen.add(fun)
      firsts.append(case)
  return firsts


# Every case in float32; the first case of each function in the other dtypes too.
SWEEP = [(c, np.float32) for c in CASES] + [
    (c, dt) for c in _first_of_each_function(CASES)
    for dt in (np.int32, np.uint8, np.bool_, jnp.bfloat16)]


@pytest.mark.parametrize("case,dtype", SWEEP,
                         ids=[f"{c[0]}-{np.dtype(dt).name}" for c, dt in SWEEP])
def test_against_numpy(case, dtype):
  name, shapes, fun = case
  xs = [rand(s, dtype, seed=i) for i, s in enumerate(shapes)]
  check(name, lambda *a: fun(jnp, *a), xs, fun(np, *xs))


# ----------------------------------------------------------------------------- dtypes

def test_concatenate_promotes():
  i, f = np.arange(3, dtype=np.int32), np.ones(2, np.float32)
  # JAX's lattice: int32 and float32 meet at float32 (NumPy would say float64).
  check("concatenate", lambda i, f: jnp.concatenate([i, f]), [i, f],
        np.concatenate([i, f]).astype(np.float32))
  check("stack", lambda i: jnp.stack([i, i], dtype=jnp.float32), [i],
        np.stack([i, i]).astype(np.float32))
  check("hstack", lambda f: jnp.hstack([f.astype(jnp.bfloat16), f], dtype=jnp.int32), [f],
        np.ones(4, np.int32))


def test_weak_types_are_kept():
  assert jnp.reshape(1.0, (1, 1)).weak_type
  assert jnp.broadcast_to(1.0, (2,)).weak_type
  assert jnp.stack([1.0, 2.0]).weak_type
  stacked = jnp.stack([np.float32(1), 2.0])
  assert stacked.dtype == np.float32 and not stacked.weak_type
  assert jnp.pad(2, 1, constant_values=1.5).dtype == np.int32
  assert not jnp.astype(1.0, jnp.float32).weak_type


def test_x64(x64):
  i, f = np.arange(3, dtype=np.int32), np.ones(2)
  check("concatenate", lambda i, f: jnp.concatenate([i, f]), [i, f], np.concatenate([i, f]))
  x = rand((2, 3), np.int64)
  check("pad", lambda x: jnp.pad(x, 1, mode="reflect"), [x], np.pad(x, 1, mode="reflect"))
  check("repeat", lambda x: jnp.repeat(x, [2, 1], axis=0), [x], np.repeat(x, [2, 1], axis=0))


def test_repeat_total_repeat_length():
  x = np.array([1, 2, 3], np.int32)
  for counts, total, expected in (([1, 2, 1], 6, [1, 2, 2, 3, 3, 3]), ([2, 2, 2], 3, [1, 1, 2]),
                                  (2, 5, [1, 1, 2, 2, 3])):
    out = jnp.repeat(x, counts, total_repeat_length=total)
    np.testing.assert_array_equal(np.asarray(out), expected, err_msg=f"{counts}, {total}")


def test_repeat_with_traced_repeats_and_total_repeat_length():
  """With total_repeat_length the repeats may be traced, as in JAX; the result is JAX's
  (recorded from JAX 0.10.2), cut short or with its last element repeated. The program does
  not grow with the number of elements."""
  x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
  f = jaxon.jit(lambda x, r: jnp.repeat(x, r, axis=1, total_repeat_length=5))
  np.testing.assert_array_equal(f(x, np.array([2, 0, 1], np.int32)),
                                [[1, 1, 3, 3, 3], [4, 4, 6, 6, 6]])
  np.testing.assert_array_equal(f(x, np.array([1, 3, 2], np.int32)),
                                [[1, 2, 2, 2, 3], [4, 5, 5, 5, 6]])
  grad = jaxon.grad(lambda x: jnp.repeat(x, np.array([2, 0, 1]), axis=1).sum())(x)
  np.testing.assert_array_equal(grad, [[2, 0, 1], [2, 0, 1]])
  jaxpr = jaxon.make_jaxpr(lambda v: jnp.repeat(v, np.arange(1000) % 3))(np.ones(1000))
  assert len(jaxpr.jaxpr.eqns) < 20
  with pytest.raises(ConcretizationTypeError, match="static total_repeat_length"):
    jaxon.jit(lambda x, r: jnp.repeat(x, r))(x[0], np.array([1, 2, 0]))


def test_roll_by_traced_shifts():
  """A shift traced under jit (a scalar, or one per named axis, an axis named twice rolled
  twice) gives NumPy's result; so do its gradient and vmap over per-example shifts."""
  x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  for shift, axis in ((np.int32(-7), None), (np.int32(5), 2), (np.int32([1, -2]), (0, 2)),
                      (np.int32([4, 3]), (1, 1))):
    got = jaxon.jit(lambda x, s, axis=axis: jnp.roll(x, s, axis=axis))(x, shift)
    np.testing.assert_array_equal(got, np.roll(x, shift, axis=axis), err_msg=f"{axis}")
  grad = jaxon.grad(lambda v, s: (jnp.roll(v, s) * np.arange(5.0)).sum())(np.ones(5), 2)
  np.testing.assert_array_equal(grad, [2, 3, 4, 0, 1])
  per_row = jaxon.vmap(jnp.roll)(x[0], np.int32([1, 2, -1]))
  np.testing.assert_array_equal(per_row, [np.roll(r, s) for r, s in zip(x[0], [1, 2, -1])])


def test_broadcast_shapes():
  assert jnp.broadcast_shapes((3, 1), (4,), ()) == (3, 4)
  assert jnp.broadcast_shapes(2, (1,)) == (2,)
  assert jnp.broadcast_shapes() == ()


def test_atleast_returns_list_for_many():
  out = jnp.atleast_1d(1.0, np.ones((2, 2)))
  assert isinstance(out, list) and [o.shape for o in out] == [(1,), (2, 2)]


# ----------------------------------------------------------------------------- errors

X6 = np.zeros(6, np.float32)
X23 = np.zeros((2, 3), np.float32)

ERROR_CASES = [
    ("reshape two unknowns", lambda: jnp.reshape(X6, (-1, -1)), TypeError,
     "one unknown dimension"),
    ("reshape negative", lambda: jnp.reshape(X6, (-2, 3)), TypeError, "negative size"),
    ("reshape unknown size", lambda: jnp.reshape(X6, (4, -1)), TypeError,
     r"cannot reshape array of shape \(6,\) \(size 6\) into shape \(4, -1\)"),
    ("reshape size", lambda: jnp.reshape(X6, (4,)), TypeError,
     r"new_sizes \(4,\).*shape \(6,\)"),
    ("reshape order A", lambda: jnp.reshape(X6, 6, order="A"), NotImplementedError,
     "order='A'"),
    ("reshape order", lambda: jnp.reshape(X6, 6, order="K"), ValueError, "'C' or 'F'"),
    ("reshape no shape", lambda: jnp.reshape(X6), TypeError, "requires a shape"),
    ("reshape float shape", lambda: jnp.reshape(X6, (2.0, 3)), TypeError,
     "must be integers"),
    ("reshape list", lambda: jnp.reshape([1, 2], (2,)), TypeError, "jnp.asarray"),
    ("method reshape empty", lambda: jnp.ones(2).reshape(), TypeError, "requires a shape"),
    ("transpose axis", lambda: jnp.transpose(X23, (0, 2)), ValueError, "out of bounds"),
    ("transpose repeated", lambda: jnp.transpose(X23, (0, 0)), TypeError,
     "not a permutation"),
    ("matrix_transpose 1d", lambda: jnp.matrix_transpose(X6), ValueError,
     r"at least 2 dimensions, got shape \(6,\)"),
    ("mT 1d", lambda: jnp.ones(3).mT, ValueError, "at least 2 dimensions"),
    ("moveaxis lengths", lambda: jnp.moveaxis(X23, (0, 1), 0), ValueError,
     "same number of elements"),
    ("moveaxis repeated", lambda: jnp.moveaxis(X23, (0, 0), (0, 1)), TypeError,
     "repeated axis"),
    ("squeeze size", lambda: jnp.squeeze(X23, 0), ValueError, "size not equal to one"),
    ("expand_dims repeated", lambda: jnp.expand_dims(X6, (0, 0)), ValueError,
     "repeated axis"),
    ("concatenate empty", lambda: jnp.concatenate([]), ValueError, "at least one array"),
    ("concatenate scalars", lambda: jnp.concatenate([1.0, 2.0]), ValueError,
     "Zero-dimensional"),
    ("concatenate shapes", lambda: jnp.concatenate([X23, X6]), TypeError,
     "different numbers of dimensions"),
    ("stack empty", lambda: jnp.stack([]), ValueError, "at least one array"),
    ("stack shapes", lambda: jnp.stack([X6, X23]), ValueError,
     r"same shape, got \(6,\), \(2, 3\)"),
    ("stack out", lambda: jnp.stack([X6], out=X6), NotImplementedError, "immutable"),
    ("broadcast_to", lambda: jnp.broadcast_to(X23, (3, 3)), ValueError,
     r"Incompatible shapes for broadcasting: \(2, 3\) and requested shape \(3, 3\)"),
    ("broadcast_to rank", lambda: jnp.broadcast_to(X23, (3,)), ValueError,
     "Incompatible shapes"),
    ("broadcast_shapes", lambda: jnp.broadcast_shapes((2,), (3,)), ValueError,
     "Incompatible shapes"),
    ("split unequal", lambda: jnp.split(X6, 4), ValueError, "equal division"),
    ("split zero", lambda: jnp.split(X6, 0), ValueError, "larger than 0"),
    ("split scalar", lambda: jnp.split(np.float32(1), 1), ValueError, "at least 1"),
    ("vsplit 1d", lambda: jnp.vsplit(X6, 2), ValueError, r"2 or more dimensions"),
    ("fliplr 1d", lambda: jnp.fliplr(X6), ValueError, "at least 2 dimensions"),
    ("flipud 0d", lambda: jnp.flipud(1.0), ValueError, "at least 1 dimension"),
    ("rot90 axes", lambda: jnp.rot90(X23, axes=(1, 1)), ValueError, "must be different"),
    ("rot90 axes length", lambda: jnp.rot90(X23, axes=(0,)), ValueError, "len"),
    ("tile negative", lambda: jnp.tile(X6, -1), ValueError, "non-negative"),
    ("repeat negative", lambda: jnp.repeat(X6, -1), ValueError, "negative"),
    ("repeat length", lambda: jnp.repeat(X6, [1, 2]), ValueError, r"length 1 or 6"),
    ("pad negative", lambda: jnp.pad(X6, -1), ValueError, "negative"),
    ("pad widths", lambda: jnp.pad(X23, ((1, 2, 3),)), ValueError, "does not broadcast"),
    ("pad mode", lambda: jnp.pad(X6, 1, mode="bogus"), NotImplementedError, "bogus"),
    ("pad kwarg", lambda: jnp.pad(X6, 1, mode="edge", constant_values=1), ValueError,
     "unsupported keyword"),
    ("pad empty axis", lambda: jnp.pad(np.zeros((0, 2)), 1, mode="wrap"), ValueError,
     "empty axis 0"),
    ("pad reflect_type", lambda: jnp.pad(X6, 1, mode="reflect", reflect_type="sideways"),
     ValueError, "reflect_type"),
    ("traced shape", lambda: jaxon.jit(lambda x, n: jnp.reshape(x, (n, 3)))(X6, 2),
     ConcretizationTypeError, "shape argument of jnp.reshape must be static"),
    ("traced shifts of shape (2, 1)", lambda: jaxon.jit(lambda x, s: jnp.roll(x, s, 0))(
        X6, np.int32([[1], [2]])), ValueError, r"1-D sequences, got shapes \(2, 1\)"),
]


@pytest.mark.parametrize("name,thunk,exc,match", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(name, thunk, exc, match):
  with pytest.raises(exc, match=match):
    thunk()


# ----------------------------------------------------------------------------- properties

@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=2),
       st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric"]), st.data())
def test_pad_modes_property(shape, mode, data):
  widths = [tuple(data.draw(st.lists(st.integers(0, 6), min_size=2, max_size=2)))
            for _ in shape]
  x = rand(tuple(shape), np.int32)
  np.testing.assert_array_equal(np.asarray(jnp.pad(x, widths, mode=mode)),
                                np.pad(x, widths, mode=mode),
                                err_msg=f"pad {shape} {widths} {mode}")


def test_split_into_consecutive_pieces_is_one_split_and_other_indices_slice_as_numpy():
  """JAX's jaxpr for the usual split (one `split`); indices out of order or past the end
  give NumPy's (clipped) pieces, which are slices."""
  x = jnp.arange(8.0)
  assert str(jaxon.make_jaxpr(lambda x: jnp.split(x, [3, 5]))(x)) == (
      "{ lambda ; a:f32[8]. let\n    b:f32[3] c:f32[2] d:f32[3] = split[axis=0 sizes=(3, 2, 3)] a\n"
      "  in (b, c, d) }")
  jaxpr = str(jaxon.make_jaxpr(lambda x: jnp.split(x, [5, 2]))(x))
  assert "split" not in jaxpr and jaxpr.count("slice[") == 3
  for got, want in zip(jnp.split(x, [5, 2]), np.split(np.arange(8.0), [5, 2])):
    np.testing.assert_array_equal(np.asarray(got), want)
