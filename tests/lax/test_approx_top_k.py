"""`lax.approx_max_k`/`approx_min_k`: exact on CPU, as JAX's fallback (values from JAX
0.10.2), with their JVP and batching rules."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from tests.util import check_grads

X = np.array([[3., 1., 4., 1.5, 9., 2.], [0., -1., 7., 7., 2., 5.]], np.float32)


def test_values_indices_and_the_printed_jaxpr_as_jax():
  values, indices = jaxon.jit(lambda x: lax.approx_max_k(x, 2))(X)
  np.testing.assert_array_equal(values, [[9., 4.], [7., 7.]])
  np.testing.assert_array_equal(indices, [[4, 2], [2, 3]])
  values, indices = lax.approx_min_k(X.T, 3, reduction_dimension=0)
  np.testing.assert_array_equal(indices, np.argsort(X.T, axis=0, kind="stable")[:3])
  text = str(jaxon.make_jaxpr(lambda x: lax.approx_min_k(x, 2, recall_target=0.9))(X))
  assert "approx_top_k[\n      aggregate_to_topk=True\n      is_max_k=False\n      k=2\n" \
         "      recall_target=0.9\n      reduction_dimension=-1\n" in text
  # Not aggregated: as many entries as TPU's first stage keeps (jaxlib's formula).
  x = jnp.arange(5000.0)[None] % 37
  values, indices = lax.approx_max_k(x, 3, aggregate_to_topk=False)
  assert values.shape == (1, 256)
  np.testing.assert_array_equal(indices[0, :5], [36, 73, 110, 147, 184])


def test_grads_vmap_and_errors():
  f = lambda x: lax.approx_max_k(x * x, 2)[0]  # noqa: E731
  distinct = X + np.arange(12, dtype=np.float32).reshape(2, 6) * 0.1
  check_grads(jaxon.jit(f), (distinct,), order=2, modes=["fwd", "rev"])
  stacked = jaxon.vmap(lambda x: lax.approx_min_k(x, 2, reduction_dimension=0), 1, 1)(X)
  np.testing.assert_array_equal(stacked[1], np.stack([lax.approx_min_k(X[:, i], 2)[1]
                                                      for i in range(6)], 1))
  with pytest.raises(ValueError, match="k must be smaller"):
    lax.approx_max_k(X, 7)
  with pytest.raises(ValueError, match="floating"):
    lax.approx_max_k(np.arange(4), 2)
