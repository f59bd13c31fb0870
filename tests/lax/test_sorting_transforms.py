"""sort's and top_k's JVP (tangents permuted like their primals; integer outputs get float0
zero tangents) and batching rules through the generic harness (`check_transforms`)."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
from jaxon import lax
from jaxon._src.dtypes import float0
from tests.transform_util import check_transforms, check_vmap


def distinct(shape, seed=0, dtype=np.float32):
  """Values far enough apart that finite differences never reorder them."""
  rng = np.random.RandomState(seed)
  return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.5
          + rng.uniform(-0.05, 0.05, shape)).astype(dtype)


@pytest.mark.parametrize("shape,dimension", [((5,), 0), ((3, 4), 0), ((3, 4), 1),
                                             ((2, 3, 4), 1)], ids=str)
def test_sort(shape, dimension):
  check_transforms(lambda x: lax.sort(x, dimension), [distinct(shape)])


def test_sort_f64(x64):
  check_transforms(lambda x: lax.sort(x, 0), [distinct((3, 4), dtype=np.float64)], order=1)


@pytest.mark.parametrize("dimension", [0, 1])
def test_sort_key_val(dimension):
  keys, values = distinct((3, 4)), distinct((3, 4), seed=1)
  check_transforms(lambda k, v: lax.sort_key_val(k, v, dimension), [keys, values])


def test_sort_several_keys():
  """Integer first key with ties, float second key: the float operands follow."""
  first = np.array([[1, 0, 1, 0], [2, 2, 1, 1], [0, 0, 0, 0]], np.int32)
  second, values = distinct((3, 4)), distinct((3, 4), seed=1)
  check_transforms(lambda s, v: lax.sort((first, s, v), 1, num_keys=2)[1:], [second, values])
  check_vmap(lambda f, s, v: lax.sort((f, s, v), 1, num_keys=2), [first, second, values])


def test_sort_integer_outputs_have_float0_tangents():
  keys, values = np.array([3, 1, 2], np.int32), distinct((3,))
  _, (t_keys, t_values) = jaxon.jvp(lambda v: lax.sort_key_val(keys, v), (values,),
                                    (np.ones(3, np.float32),))
  assert np.asarray(t_keys).dtype == float0
  np.testing.assert_array_equal(np.asarray(t_values), np.ones(3))


@pytest.mark.parametrize("shape,k,axis", [((5,), 2, -1), ((3, 4), 3, -1), ((3, 4), 2, 0),
                                          ((2, 5, 3), 1, 1)], ids=str)
def test_top_k(shape, k, axis):
  check_transforms(lambda x: lax.top_k(x, k, axis=axis)[0], [distinct(shape)])
  check_vmap(lambda x: lax.top_k(x, k, axis=axis), [distinct(shape)])


def test_top_k_indices_have_float0_tangents():
  x = distinct((4,))
  (values, indices), (t_values, t_indices) = jaxon.jvp(lambda x: lax.top_k(x, 2), (x,),
                                                       (np.arange(4, dtype=np.float32),))
  assert np.asarray(t_indices).dtype == float0
  np.testing.assert_array_equal(np.asarray(t_values), np.asarray(indices).astype(np.float32))


def test_top_k_batching_moves_nothing():
  x = np.stack([distinct((3, 4))] * 2, axis=2)
  jaxpr = jaxon.make_jaxpr(jaxon.vmap(lambda x: lax.top_k(x, 2), 2, out_axes=2))(x)
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["top_k"], str(jaxpr)
