"""dot_general's JVP, transposes and batching rule through the generic harness
(`check_transforms`), over dimension numbers with and without batch dimensions, contracting
dimensions in any order, mixed dtypes and `preferred_element_type`."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jaxon
from jaxon import lax
from tests.transform_util import check_transforms, check_vmap

# (id, lhs shape, rhs shape, ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)))
CASES = [
    ("vector_dot", (3,), (3,), (((0,), (0,)), ((), ()))),
    ("matvec", (2, 3), (3,), (((1,), (0,)), ((), ()))),
    ("matmul", (2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ("matmul_transposed", (3, 2), (4, 3), (((0,), (1,)), ((), ()))),
    ("outer", (2,), (3,), (((), ()), ((), ()))),
    ("batch_matmul", (2, 3, 4), (2, 4, 3), (((2,), (1,)), ((0,), (0,)))),
    ("batch_not_leading", (3, 2, 4), (4, 3, 2), (((2,), (0,)), ((1,), (2,)))),
    ("two_contracting_unsorted", (2, 3, 4), (4, 2, 3), (((2, 0), (0, 1)), ((), ()))),
    ("two_batch", (2, 3, 2, 4), (3, 2, 4), (((3,), (2,)), ((1, 0), (0, 1)))),
    ("batch_only", (2, 3), (3, 2), (((), ()), ((0, 1), (1, 0)))),
]


def _inputs(lhs_shape, rhs_shape, dtype, seed=0):
  rng = np.random.RandomState(seed)
  return [rng.randn(*s).astype(dtype) for s in (lhs_shape, rhs_shape)]


def _fun(dims, **kw):
  return lambda lhs, rhs: lax.dot_general(lhs, rhs, dims, **kw)


@pytest.mark.parametrize("name,lhs_shape,rhs_shape,dims", CASES, ids=[c[0] for c in CASES])
def test_dot_general(name, lhs_shape, rhs_shape, dims):
  check_transforms(_fun(dims), _inputs(lhs_shape, rhs_shape, np.float32))


@pytest.mark.parametrize("name,lhs_shape,rhs_shape,dims", CASES[::2],
                         ids=[c[0] for c in CASES[::2]])
def test_dot_general_f64(name, lhs_shape, rhs_shape, dims, x64):
  check_transforms(_fun(dims), _inputs(lhs_shape, rhs_shape, np.float64), order=1)


def test_complex():
  rng = np.random.RandomState(0)
  lhs = (rng.randn(2, 3) + 1j * rng.randn(2, 3)).astype(np.complex64)
  rhs = (rng.randn(3, 4) + 1j * rng.randn(3, 4)).astype(np.complex64)
  check_transforms(lax.dot, [lhs, rhs], order=1)


def test_mixed_dtypes_give_cotangents_of_each_operands_dtype():
  """A float32 x bfloat16 product is float32; each cotangent has its operand's dtype."""
  lhs, rhs = _inputs((2, 3), (3, 4), np.float32)
  rhs = rhs.astype(ml_dtypes.bfloat16)
  out, pullback = jaxon.vjp(lax.dot, lhs, rhs)
  assert out.dtype == np.float32
  ct_lhs, ct_rhs = pullback(np.ones((2, 4), np.float32))
  assert (ct_lhs.dtype, ct_rhs.dtype) == (np.float32, ml_dtypes.bfloat16)
  np.testing.assert_allclose(np.asarray(ct_lhs), np.ones((2, 4)) @ rhs.astype(np.float32).T,
                             rtol=1e-6)


def test_preferred_element_type():
  """bfloat16 operands accumulated in float32: float32 tangents out, bfloat16 cotangents."""
  lhs, rhs = (x.astype(ml_dtypes.bfloat16) for x in _inputs((2, 3), (3, 4), np.float32))
  f = lambda a, b: lax.dot(a, b, preferred_element_type=np.float32)
  _, t = jaxon.jvp(f, (lhs, rhs), (lhs, rhs))
  assert t.dtype == np.float32
  ct_lhs, ct_rhs = jaxon.vjp(f, lhs, rhs)[1](np.ones((2, 4), np.float32))
  assert (ct_lhs.dtype, ct_rhs.dtype) == (ml_dtypes.bfloat16, ml_dtypes.bfloat16)
  expected = (lhs.astype(np.float32).T @ np.ones((2, 4), np.float32))
  np.testing.assert_allclose(np.asarray(ct_rhs).astype(np.float32), expected, rtol=1e-2)
  check_vmap(f, [lhs, rhs], axes=(0,))


def test_integer_operands_batch():
  lhs, rhs = (np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(12, dtype=np.int32)
              .reshape(3, 4))
  check_vmap(lax.dot, [lhs, rhs])


@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 2), (2, 1)])
def test_batching_moves_nothing(in_axes):
  """The batch dimension joins the dimension numbers: one dot_general and no transpose
  when the output stays where the rule put it."""
  lhs = np.ones((2, 3, 4), np.float32)
  rhs = np.ones((2, 4, 5), np.float32)
  f = _fun((((2,), (1,)), ((0,), (0,))))
  args = [x if a is None else np.stack([x] * 3, axis=a) for x, a in zip((lhs, rhs), in_axes)]
  out_axis = {(0, 0): 0, (1, None): 1, (None, 2): 2, (2, 1): 0}[in_axes]
  jaxpr = jaxon.make_jaxpr(jaxon.vmap(f, in_axes, out_axes=out_axis))(*args)
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["dot_general"], str(jaxpr)
