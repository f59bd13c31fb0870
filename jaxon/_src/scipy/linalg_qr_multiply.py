"""`jaxon.scipy.linalg.qr_multiply`: the QR decomposition's R together with a product by Q,
computed from the compact QR (`geqrf`, or `geqp3` with pivoting) by applying the reflectors
(`ormqr`) without ever forming Q."""
from __future__ import annotations

from typing import Any

import jaxon.numpy as jnp
from jaxon._src.lax import linalg_extra, linalg_lapack
from jaxon._src.scipy.linalg import _inexact


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False, overwrite_c: bool = False
                ) -> tuple[Any, ...]:
  """With a = Q R (k = min(M, N)): (Q @ c, R) for `mode="left"` or (c @ Q, R) for "right".

  Args:
    a: (…, M, N), the matrix to decompose.
    c: (…, K, P) for "left" (K = k rows, padded with zeros to M when M > N) or (…, P, M) for
      "right"; a vector is a column ("left") or a row ("right"), and the result is raveled.
    mode: "right" (default) or "left".
    pivoting: decompose a[…, P] = Q R with columns pivoted (LAPACK's geqp3) and also
      return the int32 permutation P (…, N).
    conjugate: multiply by conj(Q) instead of Q.
    overwrite_a, overwrite_c: unused, as in JAX.

  Returns:
    (Q @ c of shape (…, M, P), R) or (c @ Q restricted to its first k columns, (…, P, k),
    R), with R (…, k, N) upper triangular; then P when `pivoting`.

  Example: `qr_multiply(a, b)` gives Qᵀb (as c @ Q) and R for least squares on a 1-D b.
  """
  del overwrite_a, overwrite_c
  if mode not in ("right", "left"):
    raise ValueError(f"jax.scipy.linalg.qr_multiply: mode must be 'right' or 'left', got "
                     f"{mode!r}")
  a, c = _inexact("qr_multiply", a, c)
  if a.ndim < 2 or c.ndim < 1:
    raise ValueError("jax.scipy.linalg.qr_multiply takes a matrix a (…, M, N) and c with at "
                     f"least one dimension, got shapes {a.shape} and {c.shape}.")
  one_dimensional = c.ndim == 1
  if one_dimensional:
    c = c[:, None] if mode == "left" else c[None, :]
  m, n = a.shape[-2:]
  k = min(m, n)
  if mode == "left" and c.shape[-2] != k:
    raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                     f"{a.shape} so Q has {k} columns, but c has {c.shape[-2]} rows (expected "
                     f"{k}).")
  if mode == "right" and c.shape[-1] != m:
    raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                     f"{a.shape} so Q has {m} rows, but c has {c.shape[-1]} columns (expected "
                     f"{m}).")
  batch = jnp.broadcast_shapes(a.shape[:-2], c.shape[:-2])
  a = jnp.broadcast_to(a, batch + a.shape[-2:])
  c = jnp.broadcast_to(c, batch + c.shape[-2:])
  if pivoting:
    r, jpvt, taus = linalg_lapack.geqp3(a, jnp.zeros(batch + (n,), jnp.int32))
    perm = [jpvt - 1]  # LAPACK's is 1-based
  else:
    (r, taus), perm = linalg_lapack.geqrf(a), []
  if mode == "left" and m > n:  # Q's last M - N columns meet zero rows of c
    c = jnp.concatenate([c, jnp.zeros(batch + (m - k, c.shape[-1]), c.dtype)], axis=-2)
  # conj(Q) c = (cᵀ Qᴴ)ᵀ and c conj(Q) = (Qᴴ cᵀ)ᵀ: transposing c swaps Q's side.
  if conjugate:
    c = jnp.swapaxes(c, -1, -2)
  product = linalg_extra.ormqr(r, taus, c, left=(mode == "left") != conjugate,
                               transpose=conjugate)
  if conjugate:
    product = jnp.swapaxes(product, -1, -2)
  if mode == "right":
    product = product[..., :k]
  if one_dimensional:
    product = product.ravel()
  return product, jnp.triu(r[..., :k, :]), *perm
