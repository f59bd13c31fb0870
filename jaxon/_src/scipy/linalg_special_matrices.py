"""Structured matrices of `jaxon.scipy.linalg` built from a vector (`convolution_matrix`,
`fiedler`, `fiedler_companion`, `leslie`) or from a size alone (`dft`, `hadamard`, `helmert`,
`invhilbert`, `pascal`, `invpascal`).

The vector-built ones are gathers: a static NumPy index matrix picks each entry out of the
vector extended with the constants the pattern needs (0, 1), so they batch over leading axes,
trace to one gather and differentiate like any indexing. The size-built ones are constants:
their entries are exact integers or closed forms computed in NumPy (in Python integers where
floats would round), then cast to the dtype JAX returns.
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.numpy import util
from jaxon._src.scipy.linalg import _broadcast_batch_vectors, _vectors


def _gather_matrix(values: Any, index: np.ndarray) -> Any:
  """M[..., i, j] = values[..., index[i, j]]."""
  return values[..., index]


def _append_constants(x: Any, *constants: float) -> Any:
  """`x` (..., n) extended along its last axis by `constants`, at indices n, n + 1, …"""
  tail = jnp.broadcast_to(jnp.array(constants, x.dtype), x.shape[:-1] + (len(constants),))
  return jnp.concatenate([x, tail], axis=-1)


def _positive_size(fun_name: str, n: Any) -> int:
  n = operator.index(n)
  if n < 1:
    raise ValueError(f"jax.scipy.linalg.{fun_name}: n must be a positive integer; got {n}.")
  return n


def _kind(fun_name: str, kind: str | None) -> str:
  kind = "symmetric" if kind is None else kind
  if kind not in ("symmetric", "lower", "upper"):
    raise ValueError(f"jax.scipy.linalg.{fun_name}: kind must be one of 'symmetric', "
                     f"'lower', 'upper'; got {kind!r}.")
  return kind


# ----------------------------------------------------------------------------- from vectors

def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
  """The Toeplitz matrix A with `A @ v == jnp.convolve(a, v, mode)` for v of length n.

  With m = len(a), A has n columns and m + n - 1 rows ("full"), max(m, n) ("same") or
  max(m, n) - min(m, n) + 1 ("valid"): the rows of the full matrix, A_full[i, j] =
  a[i - j], centred as `convolve` centres its output. Leading axes of `a` are batch axes.

  Example: `convolution_matrix(jnp.array([1, 2]), 2)` is `[[1, 0], [2, 1], [0, 2]]`.
  """
  n = _positive_size("convolution_matrix", n)
  util.check_arraylike("jax.scipy.linalg.convolution_matrix", a)
  a = jnp.asarray(a)
  if a.ndim == 0:
    raise ValueError("jax.scipy.linalg.convolution_matrix: a must be at least 1-dimensional, "
                     "got a scalar.")
  m = a.shape[-1]
  if m < 1:
    raise ValueError(f"jax.scipy.linalg.convolution_matrix: len(a) must be at least 1; got "
                     f"shape {a.shape}.")
  if mode == "full":
    first, rows = 0, m + n - 1
  elif mode == "same":
    first, rows = (min(m, n) - 1) // 2, max(m, n)
  elif mode == "valid":
    first, rows = min(m, n) - 1, max(m, n) - min(m, n) + 1
  else:
    raise ValueError("jax.scipy.linalg.convolution_matrix: mode must be one of 'full', "
                     f"'valid', 'same'; got {mode!r}.")
  offset = first + np.arange(rows)[:, None] - np.arange(n)[None, :]
  index = np.where((offset >= 0) & (offset < m), offset, m)  # index m holds the zero
  return _gather_matrix(_append_constants(a, 0), index)


def fiedler(a: Any) -> Any:
  """The symmetric Fiedler matrix F[i, j] = |a[i] - a[j]|. Leading axes are batch axes.

  Example: `fiedler(jnp.array([1, 4, 12]))` is `[[0, 3, 11], [3, 0, 8], [11, 8, 0]]`.
  """
  a, = _vectors("fiedler", a)
  return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a: Any) -> Any:
  """The Fiedler companion matrix of the polynomial with coefficients `a` (highest degree
  first, a[0] != 0): a pentadiagonal (n - 1)×(n - 1) matrix whose eigenvalues are the
  polynomial's roots, like `companion`'s but banded (Fiedler 2003, "A note on companion
  matrices"). Leading axes are batch axes.

  Example: `fiedler_companion(jnp.array([1., -3., 2.]))` is `[[3., -2.], [1., 0.]]`.
  """
  a, = _vectors("fiedler_companion", a)
  if not dtypes.issubdtype(a.dtype, np.inexact):
    a = a.astype(dtypes.to_inexact_dtype(a.dtype))
  if a.shape[-1] == 0:
    raise ValueError("jax.scipy.linalg.fiedler_companion requires the last axis of 'a' to "
                     f"have nonzero length, but got an array of shape {a.shape}.")
  n = a.shape[-1] - 1
  # values[t - 1] = -a[t] / a[0] for t = 1..n; values[n] = 1; values[n + 1] = 0.
  values = _append_constants(-a[..., 1:] / a[..., :1], 1, 0)
  index = np.full((n, n), n + 1)
  if n:
    index[0, 0] = 0
  if n > 1:
    index[1, 0] = n
  # Even rows i: -a[i+2] right of the diagonal, 1 two to the right, -a[i+1] left of it.
  for i in range(0, n, 2):
    if i + 1 < n:
      index[i, i + 1] = i + 1
    if i + 2 < n:
      index[i, i + 2] = n
    if i >= 2:
      index[i, i - 1] = i
  for i in range(3, n, 2):  # odd rows from 3: a 1 two to the left of the diagonal
    index[i, i - 2] = n
  return _gather_matrix(values, index)


def leslie(f: Any, s: Any) -> Any:
  """The Leslie matrix of an age-structured population: fecundities `f` (n ≥ 2) as its
  first row, survival rates `s` (n - 1) on its subdiagonal, zeros elsewhere. Leading axes are
  broadcast batch axes.

  Example: `leslie(jnp.array([0.1, 2.]), jnp.array([0.5]))` is `[[0.1, 2.], [0.5, 0.]]`.
  """
  f, s = _vectors("leslie", f, s)
  n = f.shape[-1]
  if n < 2:
    raise ValueError("jax.scipy.linalg.leslie: the length of f along the last axis must be at "
                     f"least 2; got shape {f.shape}.")
  if s.shape[-1] != n - 1:
    raise ValueError("jax.scipy.linalg.leslie: the length of s along the last axis must be "
                     f"one less than the length of f; got f shape {f.shape} and s shape "
                     f"{s.shape}.")
  f, s = _broadcast_batch_vectors(f, s)
  values = _append_constants(jnp.concatenate([f, s], axis=-1), 0)  # f, then s, then 0
  index = np.full((n, n), 2 * n - 1)
  index[0] = np.arange(n)
  index[np.arange(1, n), np.arange(n - 1)] = n + np.arange(n - 1)
  return _gather_matrix(values, index)


# ----------------------------------------------------------------------------- from sizes

def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
  """The n×n discrete Fourier transform matrix W[i, j] = exp(-2πi ij / n), so that
  `dft(n) @ x == jnp.fft.fft(x)`; scaled by 1/√n (`scale="sqrtn"`, unitary) or 1/n
  (`scale="n"`). The phases are reduced mod n exactly before rounding.

  Example: `dft(2)` is `[[1, 1], [1, -1]]` (complex).
  """
  if scale not in (None, "sqrtn", "n"):
    raise ValueError(f"jax.scipy.linalg.dft: scale must be None, 'sqrtn', or 'n'; got "
                     f"{scale!r}.")
  if dtype is None:
    dtype = dtypes.default_complex_dtype()
  else:
    dtypes.check_user_dtype_supported(dtype, "dft")
    if not dtypes.issubdtype(dtype, np.complexfloating):
      raise ValueError(f"jax.scipy.linalg.dft: dtype must be a complex floating-point type; "
                       f"got {np.dtype(dtype)}.")
  i = np.arange(n)
  w = np.exp(-2j * np.pi * (np.outer(i, i) % max(n, 1)) / max(n, 1))
  w /= {None: 1, "sqrtn": math.sqrt(n), "n": n}[scale]
  return jnp.asarray(w, dtype=dtypes.canonicalize_dtype(dtype))


def hadamard(n: int, dtype: Any = int) -> Any:
  """Sylvester's n×n Hadamard matrix (n a power of 2): H[i, j] = (-1)^popcount(i & j), so
  H Hᵀ = n I.

  Example: `hadamard(2)` is `[[1, 1], [1, -1]]`.
  """
  n = operator.index(n)
  if n < 1 or n & (n - 1):
    raise ValueError(f"jax.scipy.linalg.hadamard: n must be a positive power of 2; got {n}.")
  i = np.arange(n)
  bits = np.bitwise_and(i[:, None], i[None, :])
  parity = np.zeros_like(bits)
  while bits.any():
    parity ^= bits & 1
    bits >>= 1
  return jnp.asarray(1 - 2 * parity, dtype=dtype)


def helmert(n: int, full: bool = False) -> Any:
  """The Helmert matrix: row k - 1 (k = 1..n-1) is (1, …, 1, -k, 0, …, 0) / √(k(k+1)) with k
  ones, orthonormal contrasts; with `full`, a first row of 1/√n makes it orthogonal (n×n).

  Example: `helmert(2)` is `[[0.7071, -0.7071]]`.
  """
  n = _positive_size("helmert", n)
  k = np.arange(1, n)[:, None]
  j = np.arange(n)[None, :]
  h = np.where(j < k, 1.0, np.where(j == k, -k, 0.0)) / np.sqrt(k * (k + 1.0))
  if full:
    h = np.concatenate([np.full((1, n), 1 / math.sqrt(n)), h])
  return jnp.asarray(h, dtype=dtypes.default_float_dtype())


def invhilbert(n: int) -> Any:
  """The inverse of the n×n Hilbert matrix, from its closed form
  (-1)^(i+j) (i+j+1) C(n+i, n-j-1) C(n+j, n-i-1) C(i+j, i)², evaluated in exact integers
  and rounded once to the default float dtype (entries grow quickly with n).

  Example: `invhilbert(2)` is `[[4., -6.], [-6., 12.]]`.
  """
  n = operator.index(n)
  entries = [[(-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
              * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2 for j in range(n)]
             for i in range(n)]
  return jnp.asarray(np.array(entries, dtype=np.float64).reshape(n, n),
                     dtype=dtypes.default_float_dtype())


def _lower_pascal(n: int, alternating: bool) -> np.ndarray:
  """L[i, j] = C(i, j), times (-1)^(i-j) when `alternating` (which gives L⁻¹)."""
  return np.array([[math.comb(i, j) * (-1) ** ((i - j) * alternating) for j in range(n)]
                   for i in range(n)], dtype=np.float64).reshape(n, n)


def pascal(n: int, kind: str | None = None) -> Any:
  """The n×n Pascal matrix of binomial coefficients: "lower" L[i, j] = C(i, j), "upper" Lᵀ,
  or "symmetric" (default) L Lᵀ, whose entries are C(i + j, i). float32, as JAX returns.

  Example: `pascal(3)` is `[[1., 1., 1.], [1., 2., 3.], [1., 3., 6.]]`.
  """
  kind = _kind("pascal", kind)
  lower = _lower_pascal(operator.index(n), alternating=False)
  matrix = {"lower": lower, "upper": lower.T, "symmetric": lower @ lower.T}[kind]
  return jnp.asarray(matrix, dtype=np.float32)


def invpascal(n: int, kind: str | None = None) -> Any:
  """The inverse of `pascal(n, kind)`: L⁻¹[i, j] = (-1)^(i-j) C(i, j), its transpose, or
  L⁻ᵀ L⁻¹ (the inverse of L Lᵀ) for "symmetric", in the default float dtype.

  Example: `invpascal(2, kind="lower")` is `[[1., 0.], [-1., 1.]]`.
  """
  kind = _kind("invpascal", kind)
  lower_inv = _lower_pascal(operator.index(n), alternating=True)
  matrix = {"lower": lower_inv, "upper": lower_inv.T,
            "symmetric": lower_inv.T @ lower_inv}[kind]
  return jnp.asarray(matrix, dtype=dtypes.default_float_dtype())
