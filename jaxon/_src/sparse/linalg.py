"""Sparse linear algebra: `spsolve`, a direct solve of a CSR system.

JAX solves it with cuSOLVER's sparse QR on GPU and SciPy's `spsolve` through a host
callback on CPU. Here the CSR matrix is scattered to dense and solved with XLA's LU
(`jnp.linalg.solve`): the same solution, differentiable in the data and in `b` and
batchable with vmap, at the cost of dense memory (meant for the moderate sizes a single
CPU device handles).
"""
from __future__ import annotations

from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src.sparse.coo_csr import CSR, csr_todense


def spsolve(data: Any, indices: Any, indptr: Any, b: Any, tol: float = 1e-6,
            reorder: int = 1) -> Any:
  """The solution x of `A @ x = b` for the square CSR matrix `A = (data, indices, indptr)`.

  `tol` and `reorder` are checked as JAX does; they tune cuSOLVER's factorization, which
  this dense solve does not use."""
  data, indices, indptr, b = map(jnp.asarray, (data, indices, indptr, b))
  if data.dtype != b.dtype:
    raise ValueError(f"data types do not match: data.dtype={data.dtype} b.dtype={b.dtype}")
  if not (np.issubdtype(indices.dtype, np.integer) and np.issubdtype(indptr.dtype, np.integer)):
    raise ValueError("index arrays must be integer typed; got "
                     f"indices.dtype={indices.dtype} indptr.dtype={indptr.dtype}")
  if not data.ndim == indices.ndim == indptr.ndim == b.ndim == 1:
    raise ValueError("Arrays must be one-dimensional. Got data.shape="
                     f"{data.shape} indices.shape={indices.shape} indptr.shape="
                     f"{indptr.shape} b.shape={b.shape}")
  if indptr.size != b.size + 1 or data.shape != indices.shape:
    raise ValueError(f"Invalid CSR buffer sizes: data.shape={data.shape} indices.shape="
                     f"{indices.shape} indptr.shape={indptr.shape}")
  if reorder not in (0, 1, 2, 3):
    raise ValueError(f"reorder={reorder} not valid, must be one of [0, 1, 2, 3]")
  float(tol)
  matrix = csr_todense(CSR((data, indices, indptr), shape=(b.size, b.size)))
  return jnp.linalg.solve(matrix, b)
