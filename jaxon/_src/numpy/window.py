"""Window functions of jaxon.numpy (`bartlett`, `blackman`, `hamming`, `hanning`,
`kaiser`): tapers of a static length M for spectral analysis and filter design.

The fixed windows depend on M alone, so they are computed on the host in float64 and
become constants of the default float type; `kaiser`'s shape parameter may be traced (and
differentiated).
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import lax
from jaxon._src.numpy import lax_numpy, ufuncs, ufuncs_extra


def _length(fun_name: str, M: Any) -> int:
  return core.concrete_or_error(
      operator.index, M, f"The M argument of jnp.{fun_name} must be a concrete integer (it "
                         "is the length of the window).")


def _window(fun_name: str, M: Any, cosine_sum: Callable[[np.ndarray], np.ndarray]) -> Any:
  """The window of length M whose values at n = 1 - M, 3 - M, …, M - 1 are
  `cosine_sum(n / (M - 1))`; empty for M < 1, [1.] for M = 1."""
  M = _length(fun_name, M)
  dtype = dtypes.default_float_dtype()
  if M < 1:
    return lax_numpy.zeros((0,), dtype)
  if M == 1:
    return lax_numpy.ones((1,), dtype)
  t = np.arange(1 - M, M, 2) / (M - 1)
  return lax_numpy.asarray(cosine_sum(t).astype(dtype))


def bartlett(M: int) -> Any:
  """The Bartlett (triangular) window of length M, zero at both ends.

  Example: `jnp.bartlett(5)` is `[0., 0.5, 1., 0.5, 0.]`.
  """
  return _window("bartlett", M, lambda t: 1 - np.abs(t))


def blackman(M: int) -> Any:
  """The Blackman window of length M: 0.42 + 0.5 cos(pi t) + 0.08 cos(2 pi t)."""
  return _window("blackman", M,
                 lambda t: 0.42 + 0.5 * np.cos(np.pi * t) + 0.08 * np.cos(2 * np.pi * t))


def hamming(M: int) -> Any:
  """The Hamming window of length M: 0.54 + 0.46 cos(pi t)."""
  return _window("hamming", M, lambda t: 0.54 + 0.46 * np.cos(np.pi * t))


def hanning(M: int) -> Any:
  """The Hann window of length M: 0.5 + 0.5 cos(pi t), zero at both ends."""
  return _window("hanning", M, lambda t: 0.5 + 0.5 * np.cos(np.pi * t))


def kaiser(M: int, beta: Any) -> Any:
  """The Kaiser window of length M with shape `beta`: i0(beta sqrt(1 - t^2)) / i0(beta)
  for t from -1 to 1 (beta = 0 is rectangular; larger beta narrows it).

  Example: `jnp.kaiser(3, 0.)` is `[1., 1., 1.]`.
  """
  M = _length("kaiser", M)
  dtype = dtypes.default_float_dtype()
  beta = lax._convert_element_type(beta, dtype)
  if M < 2:
    return lax_numpy.ones((max(M, 0),), dtype)
  t = np.arange(1 - M, M, 2) / (M - 1)
  root = lax_numpy.asarray(np.sqrt(np.maximum(1 - t * t, 0)).astype(dtype))
  return ufuncs.divide(ufuncs_extra.i0(ufuncs.multiply(beta, root)), ufuncs_extra.i0(beta))
