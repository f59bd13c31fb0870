"""Derivatives and vmap of NumPy-style indexing, which lowers to the slicing primitives:
`x[idx]` for basic and advanced indices and the `x.at[idx]` updates, checked by the generic
harness (finite differences to order 2, forward and reverse; vmap at axes 0, 1, -1 and
mixed with unmapped arguments), plus the integer-label pattern of a cross-entropy loss."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from tests.transform_util import check_transforms, check_vmap
from tests.util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def rand(shape, dtype, seed=0):
  """Values away from zero and at least 0.05 apart, also across seeds 0 and 1 (no ties
  for `.at[].min/max`)."""
  rng = np.random.RandomState(seed)
  n = int(np.prod(shape))
  magnitudes = 0.3 + 0.05 * (2 * rng.permutation(n) + seed)
  return (magnitudes * rng.choice([-1.0, 1.0], n)).reshape(shape).astype(dtype)


class Case(NamedTuple):
  """`fun(*arrays, *indices)`: `arrays` are float shapes, `indices` integer arrays."""
  name: str
  fun: Any
  shapes: tuple
  indices: tuple = ()


def case_params(cases, f64_names):
  params = [pytest.param(c, F32, id=f"{c.name}-float32") for c in cases]
  return params + [pytest.param(c, F64, id=f"{c.name}-float64") for c in cases
                   if c.name in f64_names]


def check_case(request, case: Case, dtype: np.dtype) -> None:
  if dtype == F64:
    request.getfixturevalue("x64")
  arrays = tuple(rand(s, dtype, seed) for seed, s in enumerate(case.shapes))
  closed = lambda *xs: case.fun(*xs, *case.indices)  # noqa: E731
  check_transforms(closed, arrays, vmap_axes=(0, 1, -1) if not case.indices else ())
  if case.indices:
    check_vmap(case.fun, (*arrays, *case.indices))


def ints(values):
  return np.asarray(values, np.int32)


A = jnp.asarray  # the functions get NumPy arrays from the harness: index jaxon arrays
DUPS = ints([1, 3, 1, 0])

READ_CASES = [
    Case("int", lambda x: A(x)[2], ((4, 3),)),
    Case("int-slice", lambda x: A(x)[-1, 1:3], ((4, 3),)),
    Case("slice", lambda x: A(x)[1:3], ((4, 3),)),
    Case("strided-reversed", lambda x: A(x)[::2, ::-1], ((5, 3),)),
    Case("newaxis-ellipsis", lambda x: A(x)[None, ..., 0], ((2, 3, 4),)),
    Case("bool-mask", lambda x: A(x)[np.array([True, False, True, True])], ((4, 3),)),
    Case("int-array", lambda x: A(x)[DUPS], ((5, 3),)),
    Case("int-array-axis1", lambda x: A(x)[:, DUPS[:3]], ((2, 4, 3),)),
    Case("traced-int", lambda x, i: A(x)[i], ((4, 3),), (ints(2),)),
    Case("traced-int-array", lambda x, idx: A(x)[idx], ((5, 3),), (DUPS,)),
    Case("traced-int-pair", lambda x, i, j: A(x)[i, 1:, j], ((4, 3, 5),),
         (ints([0, 3, 3]), ints([4, 0, 4]))),
    Case("at-get", lambda x, idx: A(x).at[idx].get(), ((5, 3),), (DUPS,)),
]


@pytest.mark.parametrize("case,dtype", case_params(READ_CASES, {"slice", "traced-int-array"}))
def test_read(request, case, dtype):
  check_case(request, case, dtype)


UPDATE_METHODS = ("set", "add", "multiply", "min", "max")
UPDATE_INDICES = {  # name: (index, operand shape, values shape)
    "int-array": (DUPS, (5, 3), (4, 3)),
    "slice": (np.s_[1:3], (4, 3), (2, 3)),
    "int": (np.s_[-1, 1], (4, 3), ()),
}


def _update_case(method: str, index_name: str) -> Case:
  idx, xs, vs = UPDATE_INDICES[index_name]
  fun = lambda x, v: getattr(A(x).at[idx], method)(v)  # noqa: E731
  return Case(f"{method}-{index_name}", fun, (xs, vs))


UPDATE_CASES = [_update_case(m, i) for m in UPDATE_METHODS for i in UPDATE_INDICES]


@pytest.mark.parametrize("case,dtype", case_params(UPDATE_CASES, {"set-int-array",
                                                                  "multiply-int-array"}))
def test_update(request, case, dtype):
  check_case(request, case, dtype)


@pytest.mark.parametrize("method", UPDATE_METHODS)
def test_update_with_batched_indices(method):
  fun = lambda x, v, idx: getattr(A(x).at[idx], method)(v)  # noqa: E731
  check_vmap(fun, (rand((5, 3), F32), rand((4, 3), F32, 1), DUPS))


# ----------------------------------------------------------------------------- integer labels

def test_vmap_of_indexing_by_batched_integer():
  """`vmap(lambda x, i: x[i])` with a batch of integer indices, the array shared or not."""
  x, labels = jnp.asarray(rand((4, 3), F32)), ints([0, 3, 1, 1])
  expected = np.asarray(x)[labels]
  np.testing.assert_array_equal(jaxon.vmap(lambda x, i: x[i], (None, 0))(x, labels), expected)
  np.testing.assert_array_equal(jaxon.jit(jaxon.vmap(lambda x, i: x[i], (None, 0)))(x, labels),
                                expected)
  rows = np.asarray(rand((4, 5), F32))
  np.testing.assert_array_equal(jaxon.vmap(lambda r, i: r[i])(rows, labels),
                                rows[np.arange(4), labels])


def _log_softmax_np(z):
  z = z - z.max(axis=1, keepdims=True)
  return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _cross_entropy(logits, labels):
  """The demo's loss: the mean negative log-probability of each example's label."""
  z = logits - jnp.max(logits, axis=1, keepdims=True)
  log_probs = z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))
  return -jnp.mean(log_probs[jnp.arange(logits.shape[0]), labels])


def test_grad_of_cross_entropy_with_integer_labels():
  logits, labels = rand((5, 4), F32), ints([0, 3, 1, 1, 2])
  loss, grad = jaxon.value_and_grad(_cross_entropy)(logits, labels)
  log_probs = _log_softmax_np(logits.astype(np.float64))
  np.testing.assert_allclose(loss, -log_probs[np.arange(5), labels].mean(), rtol=1e-5)
  expected = (np.exp(log_probs) - np.eye(4)[labels]) / 5
  np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(jaxon.jit(jaxon.grad(_cross_entropy))(logits, labels), expected,
                             rtol=1e-5, atol=1e-6)
  check_grads(lambda x: _cross_entropy(x, labels), (logits,), order=2)


def test_grad_of_per_example_loss_under_vmap():
  """Per-example losses indexing with a traced label, batched by vmap, then differentiated."""
  logits, labels = rand((5, 4), F32), ints([0, 3, 1, 1, 2])

  def loss(logits):
    per_example = jaxon.vmap(lambda row, label: -jnp.log(jnp.exp(row)[label]
                                                         / jnp.sum(jnp.exp(row))))
    return jnp.mean(per_example(logits, labels))
  expected = (np.exp(_log_softmax_np(logits.astype(np.float64))) - np.eye(4)[labels]) / 5
  np.testing.assert_allclose(jaxon.grad(loss)(logits), expected, rtol=1e-5, atol=1e-6)
  check_grads(loss, (logits,), order=2)
