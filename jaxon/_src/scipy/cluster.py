"""jaxon.scipy.cluster.vq: assigning observations to the nearest code-book entry."""
from __future__ import annotations

from typing import Any

import jaxon.numpy as jnp
from jaxon._src.numpy.util import promote_args_inexact


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
  """The nearest code (Euclidean distance) of each observation (SciPy's `vq.vq`).

  Args:
    obs: (M, N) observations, or (M,) one-feature observations.
    code_book: (K, N) codes (or (K,)), with the same rank as `obs`.
    check_finite: ignored (a data-dependent check cannot run under jit), as in JAX.

  Returns:
    `(code, dist)`: the index of each observation's nearest code (ties go to the first)
    and the distance to it, both of shape (M,).

  Example:
    >>> vq(jnp.array([[0.0], [2.9]]), jnp.array([[0.0], [1.0], [3.0]]))[0]
    Array([0, 2], dtype=int32)
  """
  del check_finite
  obs, code_book = promote_args_inexact("scipy.cluster.vq.vq", obs, code_book)
  if obs.ndim != code_book.ndim:
    raise ValueError(f"Observation and code_book should have the same rank; got shapes "
                     f"{obs.shape} and {code_book.shape}.")
  if obs.ndim == 1:
    obs, code_book = obs[:, None], code_book[:, None]
  if obs.ndim != 2:
    raise ValueError(f"ndim different than 1 or 2 are not supported; got {obs.ndim}.")
  dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
  code = jnp.argmin(dist, axis=-1)
  return code, jnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]
