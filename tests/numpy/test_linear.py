"""jnp.dot, vdot, inner, outer, matmul (and `@`), tensordot and kron against NumPy, eagerly
and under jit, with JAX's dtype promotion."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from tests.conftest import tolerance
from tests.lax.test_dot_general import assert_matches_numpy, bf16, random_array

# (id, jnp function, NumPy function, operand shapes)
CASES = [
    ("dot_vec_vec", jnp.dot, np.dot, [(3,), (3,)]),
    ("dot_mat_vec", jnp.dot, np.dot, [(2, 3), (3,)]),
    ("dot_stacked", jnp.dot, np.dot, [(2, 3, 4), (5, 4, 6)]),
    ("dot_scalar", jnp.dot, np.dot, [(2, 3), ()]),
    ("dot_zero_size", jnp.dot, np.dot, [(2, 0), (0, 3)]),
    ("matmul_vec_vec", jnp.matmul, np.matmul, [(3,), (3,)]),
    ("matmul_broadcast", jnp.matmul, np.matmul, [(5, 1, 2, 3), (4, 3, 6)]),
    ("matmul_vec_batch", jnp.matmul, np.matmul, [(3,), (4, 3, 6)]),
    ("matmul_batch_vec", jnp.matmul, np.matmul, [(2, 1, 4, 3), (3,)]),
    ("matmul_both_broadcast", jnp.matmul, np.matmul, [(3, 1, 2, 3), (1, 5, 3, 2)]),
    ("matmul_size1_batches", jnp.matmul, np.matmul, [(1, 2, 3), (1, 3, 2)]),
    ("matmul_zero_batch", jnp.matmul, np.matmul, [(0, 2, 3), (3, 4)]),
    ("matmul_operator", lambda a, b: a @ b, np.matmul, [(2, 3), (3, 4)]),
    ("matmul_reflected", lambda a, b: b.__rmatmul__(a), np.matmul, [(2, 3), (3, 4)]),
    ("tensordot_2", jnp.tensordot, np.tensordot, [(2, 3, 4), (3, 4, 5)]),
    ("tensordot_0", lambda a, b: jnp.tensordot(a, b, 0),
     lambda a, b: np.tensordot(a, b, 0), [(2, 3), (4,)]),
    ("tensordot_pairs", lambda a, b: jnp.tensordot(a, b, ((0, -1), (2, 0))),
     lambda a, b: np.tensordot(a, b, ((0, -1), (2, 0))), [(2, 3, 4), (4, 3, 2)]),
    ("tensordot_int_pair", lambda a, b: jnp.tensordot(a, b, (1, 0)),
     lambda a, b: np.tensordot(a, b, (1, 0)), [(2, 3), (3, 4)]),
    ("inner", jnp.inner, np.inner, [(2, 3), (4, 3)]),
    ("inner_scalar", jnp.inner, np.inner, [(), (4, 3)]),
    ("outer", jnp.outer, np.outer, [(2, 3), (4,)]),
    ("vdot", jnp.vdot, np.vdot, [(2, 3), (6,)]),
    ("kron", jnp.kron, np.kron, [(2, 3), (4, 1, 2)]),
    ("dot_method", lambda a, b: a.dot(b), np.dot, [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("name,fn,np_fn,shapes", [pytest.param(*c, id=c[0]) for c in CASES])
def test_product_float32(name, fn, np_fn, shapes):
  rng = np.random.RandomState(0)
  args = [random_array(rng, s, np.float32) for s in shapes]
  expected = np.asarray(np_fn(*[a.astype(np.float64) for a in args])).astype(np.float32)
  assert_matches_numpy(lambda *xs: fn(*map(jnp.asarray, xs)), args, expected,
                       rtol=2e-5, atol=2e-5)


# (id, function, operand dtypes, result dtype)
DTYPE_CASES = [
    ("dot_int32", jnp.dot, (np.int32, np.int32), np.int32),
    ("dot_uint8", jnp.dot, (np.uint8, np.uint8), np.uint8),
    ("dot_bool", jnp.dot, (np.bool_, np.bool_), np.bool_),
    ("dot_int8_int32", jnp.dot, (np.int8, np.int32), np.int32),
    ("dot_int32_float32", jnp.dot, (np.int32, np.float32), np.float32),
    ("matmul_bf16", jnp.matmul, (bf16, bf16), bf16),
    ("matmul_bf16_float32", jnp.matmul, (bf16, np.float32), np.float32),
    ("matmul_float16_int8", jnp.matmul, (np.float16, np.int8), np.float16),
    ("matmul_complex64", jnp.matmul, (np.complex64, np.float32), np.complex64),
    ("tensordot_int32", jnp.tensordot, (np.int32, np.int32), np.int32),
    ("vdot_complex64", jnp.vdot, (np.complex64, np.complex64), np.complex64),
    ("kron_int32", jnp.kron, (np.int32, np.int32), np.int32),
    ("outer_int32", jnp.outer, (np.int32, np.int32), np.int32),
]
NUMPY_OF = {jnp.dot: np.dot, jnp.matmul: np.matmul, jnp.tensordot: np.tensordot,
            jnp.vdot: np.vdot, jnp.kron: np.kron, jnp.outer: np.outer}
SHAPES_OF = {jnp.tensordot: [(2, 3, 4), (3, 4, 2)], jnp.kron: [(2, 3), (3, 2)],
             jnp.vdot: [(2, 3), (6,)], jnp.outer: [(2, 3), (4,)]}


@pytest.mark.parametrize("name,fn,dtypes,result", [pytest.param(*c, id=c[0])
                                                   for c in DTYPE_CASES])
def test_product_dtypes(name, fn, dtypes, result):
  rng = np.random.RandomState(1)
  shapes = SHAPES_OF.get(fn, [(2, 3, 4), (4, 2)])
  args = [random_array(rng, s, dt) for s, dt in zip(shapes, dtypes)]
  wide = np.complex128 if np.dtype(result).kind == "c" else np.float64
  expected = np.asarray(NUMPY_OF[fn](*[a.astype(wide) for a in args]))
  expected = (expected != 0) if result == np.bool_ else expected.astype(result)
  assert_matches_numpy(fn, args, expected, **tolerance(result))


def test_matmul_float64(x64):
  rng = np.random.RandomState(2)
  a, b = rng.randn(3, 2, 4), rng.randn(4, 5)
  assert_matches_numpy(jnp.matmul, (a, b), np.matmul(a, b), **tolerance(np.float64))


def test_weak_types():
  """A Python scalar operand adopts the array's dtype, as in any jnp binary op."""
  x = jnp.ones((2, 3), jnp.bfloat16)
  assert jnp.dot(x, 2.0).dtype == jnp.bfloat16
  assert jnp.dot(jnp.ones(3, jnp.int8), 2).dtype == jnp.int8
  assert jnp.dot(2.0, 3.0).aval == jaxon.core.ShapedArray((), np.float32, weak_type=True)
  assert not jnp.dot(jnp.float32(2.0), 3.0).aval.weak_type


def test_preferred_element_type():
  x = np.full((2, 3), 100, np.int8)
  out = jnp.dot(x, x.T, preferred_element_type=jnp.int32)
  np.testing.assert_array_equal(np.asarray(out), np.full((2, 2), 30000, np.int32))
  out = jnp.matmul(x, x.T, preferred_element_type=jnp.float32)
  assert out.dtype == np.float32


def test_matmul_jaxpr_is_one_dot_general():
  jaxpr = str(jaxon.make_jaxpr(jnp.matmul)(np.ones((5, 2, 3), np.float32),
                                           np.ones((5, 3, 4), np.float32)))
  assert jaxpr.count("dot_general") == 1 and "transpose" not in jaxpr, jaxpr


ERRORS = [
    ("matmul_scalar", lambda: jnp.matmul(jnp.ones(3), 2.0), ValueError,
     r"matmul input operand 1 must have ndim at least 1"),
    ("matmul_batch", lambda: jnp.matmul(jnp.ones((2, 2, 3)), jnp.ones((3, 3, 4))), ValueError,
     r"batch dimensions of shapes \(2, 2, 3\) and \(3, 3, 4\) do not broadcast"),
    ("matmul_inner", lambda: jnp.ones((2, 3)) @ jnp.ones((4, 2)), TypeError,
     r"matmul: shapes \(2, 3\) and \(4, 2\) are not aligned"),
    ("dot_inner", lambda: jnp.dot(jnp.ones((2, 3)), jnp.ones((2, 3))), TypeError,
     r"dot: shapes \(2, 3\) and \(2, 3\) are not aligned"),
    ("tensordot_too_many_axes", lambda: jnp.tensordot(jnp.ones(3), jnp.ones(3), 2), TypeError,
     r"Number of tensordot axes \(axes 2\) exceeds input ranks \(1 and 1\)"),
    ("tensordot_unequal_axes", lambda: jnp.tensordot(jnp.ones((2, 3)), jnp.ones((2, 3)),
                                                     ((0, 1), (0,))), TypeError,
     r"axes lists to have equal length"),
    ("vdot_sizes", lambda: jnp.vdot(jnp.ones(3), jnp.ones(4)), ValueError,
     r"vdot requires operands of equal size, got shapes \(3,\) and \(4,\)"),
    ("list_argument", lambda: jnp.dot([1.0, 2.0], jnp.ones(2)), TypeError,
     r"dot requires ndarray or scalar arguments"),
]


@pytest.mark.parametrize("name,fn,error,match", [pytest.param(*c, id=c[0]) for c in ERRORS])
def test_errors(name, fn, error, match):
  with pytest.raises(error, match=match):
    fn()
