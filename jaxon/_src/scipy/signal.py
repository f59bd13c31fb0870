"""jaxon.scipy.signal: convolution, correlation and detrending (the spectral estimators,
stft/istft/csd/welch, are in `signal_spectral`).

Direct convolution is one `conv_general_dilated` of the larger input with the flipped
smaller one, padded so that exactly the requested window of the full convolution comes out
(SciPy's modes: 'full', 'same' — centred, the size of `in1` — and 'valid'). `fftconvolve`
multiplies spectra instead, and maps itself with vmap over axes that are not convolved.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

import jaxon.numpy as jnp
from jaxon._src.api import vmap
from jaxon._src.lax import slicing
from jaxon._src.lax.convolution import conv_general_dilated
from jaxon._src.lax.utils import canonicalize_axis
from jaxon._src.numpy.util import check_arraylike, promote_args_inexact

ModeString = Literal["full", "same", "valid"]
_MODES = ("full", "same", "valid")


def _check_mode(mode: str) -> None:
  if mode not in _MODES:
    raise ValueError(f"mode must be one of {list(_MODES)}; got {mode!r}.")


def _output_window(shape1: Sequence[int], shape2: Sequence[int], mode: str,
                   same_rounds_up: bool = False) -> list[tuple[int, int]]:
  """(start, size) per axis of the mode's output inside the full convolution. An odd
  margin in 'same' mode puts the extra element before the window (after it if
  `same_rounds_up`, as SciPy's correlate2d does)."""
  window = []
  for n1, n2 in zip(shape1, shape2):
    full = n1 + n2 - 1
    if mode == "full":
      window.append((0, full))
    elif mode == "same":
      margin = full - n1
      window.append(((margin + 1) // 2 if same_rounds_up else margin // 2, n1))
    else:
      window.append((min(n1, n2) - 1, abs(n1 - n2) + 1))
  return window


def _check_sizes(in1: Any, in2: Any, mode: str) -> bool:
  """Whether in1 is the smaller input (then the two swap roles). One must be at least as
  large as the other on every axis (SciPy's rule for 'valid'; JAX's for every mode)."""
  if in1.ndim != in2.ndim:
    raise ValueError(f"in1 and in2 must have the same number of dimensions; got shapes "
                     f"{in1.shape} and {in2.shape}.")
  if in1.size == 0 or in2.size == 0:
    raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                     f"{in1.shape} and {in2.shape}.")
  in1_larger = all(a >= b for a, b in zip(in1.shape, in2.shape))
  in2_larger = all(a <= b for a, b in zip(in1.shape, in2.shape))
  if not (in1_larger or in2_larger):
    raise ValueError(f"One input must be smaller than the other in every dimension; got "
                     f"shapes {in1.shape} and {in2.shape} (mode={mode!r}).")
  return not in1_larger


def _convolve_direct(in1: Any, in2: Any, mode: str, precision: Any,
                     same_rounds_up: bool = False) -> Any:
  _check_mode(mode)
  in1, in2 = promote_args_inexact("convolve", in1, in2)
  window = _output_window(in1.shape, in2.shape, mode, same_rounds_up)
  big, small = (in2, in1) if _check_sizes(in1, in2, mode) else (in1, in2)
  # A conv with padding (k - 1, k - 1) gives the full convolution; shift both ends in
  # to keep only the window.
  padding = [(k - 1 - start, k - 1 - (n + k - 1 - start - size))
             for (start, size), n, k in zip(window, big.shape, small.shape)]
  kernel = jnp.flip(small)[None, None]
  out = conv_general_dilated(big[None, None], kernel, (1,) * big.ndim, padding,
                             precision=precision)
  return out[0, 0]


def convolve(in1: Any, in2: Any, mode: ModeString = "full", method: str = "auto",
             precision: Any = None) -> Any:
  """N-dimensional convolution of `in1` and `in2` (SciPy's `scipy.signal.convolve`).

  Args:
    in1, in2: arrays of the same rank; one at least as large as the other on every axis.
    mode: 'full' (every overlap), 'same' (centred, the shape of `in1`) or 'valid'
      (complete overlaps only).
    method: 'auto' or 'direct' (a convolution op) or 'fft' (`fftconvolve`).
    precision: precision of the direct convolution.

  Returns:
    The convolution, promoted to an inexact dtype.

  Example:
    >>> convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
  """
  check_arraylike("convolve", in1, in2)
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  if method not in ("direct", "auto"):
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
  return _convolve_direct(in1, in2, mode, precision)


def correlate(in1: Any, in2: Any, mode: ModeString = "full", method: str = "auto",
              precision: Any = None) -> Any:
  """Cross-correlation, sum_l in1[l + k] conj(in2[l]) (SciPy's `scipy.signal.correlate`):
  the convolution with `in2` conjugated and reversed. Arguments as for `convolve`."""
  check_arraylike("correlate", in1, in2)
  return convolve(in1, jnp.flip(jnp.conj(jnp.asarray(in2))), mode, method, precision)


def _check_2d(name: str, in1: Any, in2: Any, boundary: str, fillvalue: Any) -> None:
  check_arraylike(name, in1, in2)
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0; got "
                              f"boundary={boundary!r}, fillvalue={fillvalue!r}.")
  if np.ndim(in1) != 2 or np.ndim(in2) != 2:
    raise ValueError(f"{name}() only supports 2-dimensional inputs; got shapes "
                     f"{np.shape(in1)} and {np.shape(in2)}.")


def convolve2d(in1: Any, in2: Any, mode: ModeString = "full", boundary: str = "fill",
               fillvalue: float = 0, precision: Any = None) -> Any:
  """Two-dimensional `convolve` (SciPy's `convolve2d`); only zero fill at the boundary."""
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_direct(in1, in2, mode, precision)


def correlate2d(in1: Any, in2: Any, mode: ModeString = "full", boundary: str = "fill",
                fillvalue: float = 0, precision: Any = None) -> Any:
  """Two-dimensional `correlate` (SciPy's `correlate2d`); only zero fill at the boundary.

  Two quirks of SciPy's (and JAX's) correlate2d are kept: in 'same' mode an odd margin
  is cut from the front, and in 'valid' mode with `in2` the larger input the result is
  the complex conjugate of the correlation."""
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  out = _convolve_direct(in1, jnp.flip(jnp.conj(jnp.asarray(in2))), mode, precision,
                         same_rounds_up=True)
  shape1, shape2 = np.shape(in1), np.shape(in2)
  in2_larger = shape1 != shape2 and all(a <= b for a, b in zip(shape1, shape2))
  return jnp.conj(out) if mode == "valid" and in2_larger else out


def _fftconvolve_all_axes(in1: Any, in2: Any, mode: str) -> Any:
  if mode == "valid" and _check_sizes(in1, in2, mode):
    in1, in2 = in2, in1
  full_shape = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
  if all(a == 1 or b == 1 for a, b in zip(in1.shape, in2.shape)):
    full = in1 * in2  # an outer product: no overlap to sum
  elif jnp.iscomplexobj(in1):
    full = jnp.fft.ifftn(jnp.fft.fftn(in1, full_shape) * jnp.fft.fftn(in2, full_shape))
  else:
    spectrum = jnp.fft.rfftn(in1, full_shape) * jnp.fft.rfftn(in2, full_shape)
    full = jnp.fft.irfftn(spectrum, full_shape)
  window = _output_window(in1.shape, in2.shape, mode)
  return slicing.slice(full, [start for start, _ in window],
                       [start + size for start, size in window])


def fftconvolve(in1: Any, in2: Any, mode: ModeString = "full",
                axes: Sequence[int] | None = None) -> Any:
  """Convolution through the FFT (SciPy's `scipy.signal.fftconvolve`).

  Args:
    in1, in2: arrays of the same rank.
    mode: 'full', 'same' or 'valid', as for `convolve`.
    axes: the axes to convolve over (default all); on the others the inputs must have
      equal sizes and are paired elementwise.

  Returns:
    The convolution, promoted to an inexact dtype.
  """
  check_arraylike("fftconvolve", in1, in2)
  in1, in2 = promote_args_inexact("fftconvolve", in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError(f"in1 and in2 should have the same dimensionality; got shapes "
                     f"{in1.shape} and {in2.shape}.")
  _check_mode(mode)

  def convolve_axes(a: Any, b: Any) -> Any:
    return _fftconvolve_all_axes(a, b, mode)
  if axes is None:
    return convolve_axes(in1, in2)
  axes = [axes] if np.ndim(axes) == 0 else list(axes)
  axes = {canonicalize_axis(operator.index(a), in1.ndim) for a in axes}
  paired = [d for d in range(in1.ndim) if d not in axes]
  if any(in1.shape[d] != in2.shape[d] for d in paired):
    raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} "
                     f"in2.shape={in2.shape} axes={tuple(sorted(axes))}")
  for d in paired:  # innermost vmap first: each maps its axis of the remaining rank
    convolve_axes = vmap(convolve_axes, in_axes=d, out_axes=d)
  return convolve_axes(in1, in2)


def _detrend_linear(data: Any, bp: Any) -> Any:
  """Removes a least-squares line from each piece between breakpoints, along axis 0."""
  n = data.shape[0]
  breaks = np.unique(np.concatenate([[0], np.ravel(bp), [n]]).astype(int))
  if breaks[0] < 0 or breaks[-1] > n:
    raise ValueError(f"Breakpoints must be non-negative and less than length of data "
                     f"along given axis ({n}); got bp={bp}.")
  pieces = []
  for start, stop in zip(breaks[:-1], breaks[1:]):
    piece = data[start:stop]
    t = np.arange(stop - start, dtype=np.float64)
    t = (t - t.mean()).reshape((-1,) + (1,) * (data.ndim - 1)).astype(data.dtype)
    denominator = float(np.sum(t.astype(np.float64) ** 2)) or 1.0  # one point: no slope
    slope = jnp.sum(t * piece, axis=0) / np.asarray(denominator, t.dtype)
    pieces.append(piece - jnp.mean(piece, axis=0) - t * slope)
  return jnp.concatenate(pieces, axis=0)


def detrend(data: Any, axis: int = -1, type: str = "linear",
            bp: int | Sequence[int] | np.ndarray = 0, overwrite_data: None = None) -> Any:
  """Removes the mean ('constant') or a least-squares line ('linear', piecewise between the
  breakpoints `bp`) along `axis` (SciPy's `scipy.signal.detrend`).

  Example:
    >>> detrend(jnp.array([1.0, 2.0, 4.0]), type="linear")
    Array([ 0.16666675, -0.33333325,  0.16666675], dtype=float32)
  """
  if overwrite_data is not None:
    raise NotImplementedError("overwrite_data argument not implemented.")
  if type not in ("constant", "linear"):
    raise ValueError(f"Trend type must be 'linear' or 'constant'; got {type!r}.")
  data, = promote_args_inexact("detrend", data)
  if type == "constant":
    return data - jnp.mean(data, axis=axis, keepdims=True)
  axis = canonicalize_axis(axis, data.ndim)
  return jnp.moveaxis(_detrend_linear(jnp.moveaxis(data, axis, 0), bp), 0, axis)
