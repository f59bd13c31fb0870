"""jaxon.scipy.fft: discrete cosine transforms (type 2 and its inverse, as JAX has them).

The type-2 DCT of length N is one complex FFT of the same length (Makhoul, 1980): reorder
x into v = [x0, x2, x4, ..., x5, x3, x1]; then X[k] = 2 Re(exp(-i pi k / 2N) FFT(v)[k]).
Because v is real, FFT(v)[N - k] is the conjugate of FFT(v)[k], which gives the inverse:
FFT(v)[k] = exp(i pi k / 2N) (X[k] - i X[N - k]) / 2 (with X[N] = 0), then undo the
reordering. Multi-axis transforms apply the one-axis transform to each axis in turn.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.lax.utils import canonicalize_axis
from jaxon._src.numpy.util import check_arraylike, promote_args_inexact

_NORMS = (None, "backward", "ortho")


def _check_args(name: str, x: Any, type: int, norm: str | None) -> Any:
  check_arraylike(f"jax.scipy.fft.{name}", x)
  if type != 2:
    raise NotImplementedError(f"jax.scipy.fft.{name}: only DCT type 2 is implemented "
                              f"(got type={type!r}).")
  if norm not in _NORMS:
    raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented; use one "
                     f"of {_NORMS}.")
  x, = promote_args_inexact(f"jax.scipy.fft.{name}", x)
  return x


def _resize_axis(x: Any, n: int | None, axis: int) -> Any:
  """Zero-pads or truncates `x` to length `n` along `axis` (as SciPy's `n` does)."""
  if n is None:
    return x
  n = operator.index(n)
  if n < 1:
    raise ValueError(f"invalid number of data points ({n}) specified")
  config = [(0, n - x.shape[axis] if a == axis else 0, 0) for a in range(x.ndim)]
  return shape_ops.pad(x, np.zeros((), x.dtype), config)


def _along(axis: int, ndim: int, v: np.ndarray) -> np.ndarray:
  """The 1-D `v` shaped to broadcast along `axis` of an ndim-array."""
  return v.reshape([-1 if a == axis else 1 for a in range(ndim)])


def _ortho_factors(n: int, axis: int, ndim: int, dtype: Any) -> np.ndarray:
  """What norm='ortho' multiplies the backward-normalised DCT-II by: 1/sqrt(4N) for the
  constant term, 1/sqrt(2N) for the others."""
  factors = np.full(n, 1 / math.sqrt(2 * n))
  factors[0] = 1 / math.sqrt(4 * n)
  return _along(axis, ndim, factors.astype(dtype))


def _twiddle(n: int, axis: int, ndim: int, sign: int, dtype: Any) -> np.ndarray:
  k = np.arange(n)
  return _along(axis, ndim, np.exp(sign * 0.5j * np.pi * k / n).astype(dtype))


def complex_dtype_of(real_dtype: Any) -> np.dtype:
  """The complex dtype with `real_dtype`'s precision (complex64 below float64)."""
  return np.dtype(np.complex128 if np.dtype(real_dtype) == np.float64 else np.complex64)


def _interleave(x: Any, axis: int) -> Any:
  """[x0, x2, x4, ..., x5, x3, x1] along `axis`."""
  evens = slicing.slice_in_dim(x, 0, None, 2, axis)
  odds = slicing.slice_in_dim(x, 1, None, 2, axis)
  return shape_ops.concatenate([evens, shape_ops.rev(odds, (axis,))], axis)


def _deinterleave(v: Any, axis: int) -> Any:
  """Inverse of `_interleave`: the first ceil(N/2) entries are the even samples, the rest
  the odd ones reversed."""
  n = v.shape[axis]
  half = (n + 1) // 2
  evens = slicing.slice_in_dim(v, 0, half, 1, axis)
  odds = shape_ops.rev(slicing.slice_in_dim(v, half, n, 1, axis), (axis,))
  if n % 2:  # pad the odd samples to the evens' length, interleave, drop the extra one
    odds = shape_ops.pad(odds, np.zeros((), v.dtype),
                   [(0, 1 if a == axis else 0, 0) for a in range(v.ndim)])
  pairs = jnp.stack([evens, odds], axis=axis + 1)
  merged = pairs.reshape(v.shape[:axis] + (2 * half,) + v.shape[axis + 1:])
  return slicing.slice_in_dim(merged, 0, n, 1, axis)


def _dct2_real(x: Any, axis: int, norm: str | None) -> Any:
  n = x.shape[axis]
  complex_dtype = complex_dtype_of(x.dtype)
  spectrum = jnp.fft.fft(_interleave(x, axis), axis=axis)
  out = 2 * jnp.real(spectrum * _twiddle(n, axis, x.ndim, -1, complex_dtype))
  if norm == "ortho":
    out = out * _ortho_factors(n, axis, x.ndim, x.dtype)
  return out


def _idct2_real(x: Any, axis: int, norm: str | None) -> Any:
  n = x.shape[axis]
  if norm == "ortho":
    x = x / _ortho_factors(n, axis, x.ndim, x.dtype)
  # X[N - k] for k = 0..N-1, with X[N] = 0: shift the reversed X by one, zero in front.
  mirrored = shape_ops.pad(shape_ops.rev(slicing.slice_in_dim(x, 1, n, 1, axis), (axis,)),
                     np.zeros((), x.dtype),
                     [(1 if a == axis else 0, 0, 0) for a in range(x.ndim)])
  complex_dtype = complex_dtype_of(x.dtype)
  spectrum = lax.complex(x, -mirrored) * _twiddle(n, axis, x.ndim, 1, complex_dtype) / 2
  return _deinterleave(jnp.real(jnp.fft.ifft(spectrum, axis=axis)), axis)


def _real_and_imag(transform: Callable[[Any], Any], x: Any) -> Any:
  """A real-linear transform of complex data: transform the two parts separately."""
  if dtypes.issubdtype(x.dtype, np.complexfloating):
    return lax.complex(transform(jnp.real(x)), transform(jnp.imag(x)))
  return transform(x)


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
        norm: str | None = None) -> Any:
  """Discrete cosine transform of type 2 along `axis` (SciPy's `scipy.fft.dct`).

  Args:
    x: input array; integers are promoted to float, complex parts transform separately.
    type: the DCT type; only 2 is implemented (as in JAX).
    n: zero-pad or truncate `x` to this length first.
    axis: the axis to transform.
    norm: None or 'backward' (unscaled), or 'ortho' (orthonormal).

  Returns:
    The transform, with `x`'s (promoted) dtype.
  """
  x = _check_args("dct", x, type, norm)
  axis = canonicalize_axis(axis, x.ndim)
  x = _resize_axis(x, n, axis)
  return _real_and_imag(lambda part: _dct2_real(part, axis, norm), x)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
         norm: str | None = None) -> Any:
  """Inverse of `dct` of type 2 (a scaled DCT-III), SciPy's `scipy.fft.idct`.

  Arguments as for `dct`: `idct(dct(x, norm=m), norm=m)` is `x` for every norm.
  """
  x = _check_args("idct", x, type, norm)
  axis = canonicalize_axis(axis, x.ndim)
  x = _resize_axis(x, n, axis)
  return _real_and_imag(lambda part: _idct2_real(part, axis, norm), x)


def _axes_and_sizes(x: Any, s: Any, axes: Sequence[int] | None
                    ) -> tuple[tuple[int, ...], list[int | None]]:
  """SciPy's n-dimensional convention: `s` without `axes` means the last len(s) axes."""
  if s is not None:
    s = [operator.index(s)] if np.ndim(s) == 0 else [operator.index(d) for d in s]
    if len(s) > x.ndim:
      raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
  if axes is None:
    axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
  else:
    axes = tuple(canonicalize_axis(a, x.ndim) for a in axes)
  if s is not None and len(s) != len(axes):
    raise ValueError(f"s and axes must have the same length; got s={s}, axes={axes}.")
  if len(set(axes)) != len(axes):
    raise ValueError(f"axes must be unique; got {axes}.")
  return axes, list(s) if s is not None else [None] * len(axes)


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
         axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
  """Multidimensional type-2 DCT (SciPy's `scipy.fft.dctn`): `dct` along each of `axes`.

  Args:
    x: input array.
    type: only 2 is implemented.
    s: the length of each transformed axis (zero-pad or truncate).
    axes: the axes to transform (default: the last len(s), or all).
    norm: None, 'backward' or 'ortho'.
  """
  x = _check_args("dctn", x, type, norm)
  for axis, n in zip(*_axes_and_sizes(x, s, axes)):
    x = dct(x, n=n, axis=axis, norm=norm)
  return x


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
  """Inverse of `dctn` (SciPy's `scipy.fft.idctn`); arguments as for `dctn`."""
  x = _check_args("idctn", x, type, norm)
  for axis, n in zip(*_axes_and_sizes(x, s, axes)):
    x = idct(x, n=n, axis=axis, norm=norm)
  return x
