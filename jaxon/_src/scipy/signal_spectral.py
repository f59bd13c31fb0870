"""jaxon.scipy.signal's spectral estimators: stft, istft, csd and welch.

All of them cut the signal into overlapping segments of `nperseg` samples, `nperseg -
noverlap` apart, detrend and window each one, and FFT it (the shared `_spectral_helper`).
Segment positions depend only on shapes, so cutting is one gather with constant indices
and `istft`'s overlap-add is one scatter-add: both differentiate and batch like any other
jaxon.numpy code. Segment lengths, overlaps and FFT sizes must be static.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core
from jaxon._src.lax.utils import canonicalize_axis
from jaxon._src.numpy.util import check_arraylike, promote_args_inexact
from jaxon._src.scipy.fft import complex_dtype_of
from jaxon._src.scipy.signal import detrend as _detrend


def _static_int(value: Any, what: str) -> int:
  return core.concrete_or_error(int, value, what)


def _window(window: Any, nperseg: int, dtype: Any) -> Any:
  """The window's samples: 'hann' (periodic) natively, other names through SciPy's
  `get_window` (as JAX does), or an explicit 1-D array of length `nperseg`."""
  if isinstance(window, (str, tuple)):
    if window == "hann":
      samples = np.sin(np.pi * np.arange(nperseg) / nperseg) ** 2 if nperseg > 1 else [1.0]
    else:
      try:
        from scipy.signal import get_window
      except ImportError as err:
        raise ImportError(f"scipy must be available to use window={window!r}") from err
      samples = get_window(window, nperseg)
    return jnp.asarray(np.asarray(samples), dtype)
  win = jnp.asarray(window, dtype)
  if win.ndim != 1:
    raise ValueError(f"window must be 1-D; got shape {win.shape}.")
  if win.shape[0] != nperseg:
    raise ValueError(f"window must have length of nperseg ({nperseg}); got {win.shape[0]}.")
  return win


def _segment_length(window: Any, nperseg: Any, input_length: int) -> int:
  """nperseg as JAX settles it: given, else the window array's length, else the whole
  signal; a named window longer than the signal is shortened with a warning."""
  if not isinstance(window, (str, tuple)):
    size = np.size(window)
    if nperseg is not None and _static_int(nperseg, "nperseg of windowed-FFT") != size:
      raise ValueError("value specified for nperseg is different from length of window")
    if input_length < size:
      raise ValueError(f"window is longer than input signal ({size} > {input_length}).")
    return size
  if nperseg is None:
    return input_length
  nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
  if nperseg < 1:
    raise ValueError(f"nperseg must be a positive integer; got {nperseg}.")
  if nperseg > input_length:
    warnings.warn(f"nperseg={nperseg} is greater than input_length={input_length}, using "
                  f"nperseg={input_length}", stacklevel=4)
    return input_length
  return nperseg


def _extend(x: Any, n: int, boundary: str) -> Any:
  """`n` samples added at both ends of the last axis by the boundary rule."""
  if boundary == "odd":  # point reflection about each end sample
    if n > x.shape[-1] - 1:
      raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                       f"x.shape[axis]-1, which is {x.shape[-1] - 1}.")
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -n - 1:-1], -1)
    return jnp.concatenate([left, x, right], axis=-1)
  pad_mode = {"even": "reflect", "constant": "edge", "zeros": "constant"}[boundary]
  return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], pad_mode)


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _detrend_function(detrend: Any, axis: int) -> Callable[[Any], Any]:
  """Detrending of segments (..., segments, samples). A user function sees each segment's
  samples on `axis`, as the signal had them (SciPy's convention)."""
  if isinstance(detrend, str):
    return lambda segments: _detrend(segments, axis=-1, type=detrend)
  if callable(detrend):
    if axis == -1:
      return detrend
    return lambda segments: jnp.moveaxis(detrend(jnp.moveaxis(segments, -1, axis)), axis, -1)
  if not detrend:
    return lambda segments: segments
  raise ValueError(f"Unsupported detrend type: {detrend}")


def _segment_spectra(x: Any, win: Any, detrend: Callable[[Any], Any], nperseg: int,
                     noverlap: int, nfft: int, twosided: bool) -> Any:
  """FFT of each windowed segment: (..., n) -> (..., segments, frequencies)."""
  starts = np.arange(0, x.shape[-1] - nperseg + 1, nperseg - noverlap)
  segments = x[..., starts[:, None] + np.arange(nperseg)]
  segments = detrend(segments)
  if jnp.iscomplexobj(win):
    segments = segments.astype(complex_dtype_of(win.real.dtype))
  segments = win * segments
  return jnp.fft.fft(segments, n=nfft) if twosided else jnp.fft.rfft(segments.real, n=nfft)


def _spectral_helper(x: Any, y: Any, fs: Any, window: Any, nperseg: Any, noverlap: Any,
                     nfft: Any, detrend: Any, return_onesided: bool, scaling: str,
                     axis: int, mode: str, boundary: str | None = None,
                     padded: bool = False) -> tuple[Any, Any, Any]:
  """Frequencies, segment times and per-segment spectra (mode 'stft') or cross power
  spectra (mode 'psd'; of x with itself when y is None), the segments on the last axis."""
  if boundary not in _BOUNDARIES:
    raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                     f"{list(_BOUNDARIES)}")
  if scaling not in ("density", "spectrum"):
    raise ValueError(f"Unknown scaling: {scaling}")
  user_axis = _static_int(axis, "axis of windowed-FFT")
  if y is None:
    x, = promote_args_inexact("spectral_helper", x)
    axis = canonicalize_axis(user_axis, x.ndim)
  else:
    x, y = promote_args_inexact("spectral_helper", x, y)
    if x.ndim != y.ndim:
      raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    axis = canonicalize_axis(user_axis, x.ndim)
    try:
      outer_shape = jnp.broadcast_shapes(tuple(np.delete(x.shape, axis)),
                                         tuple(np.delete(y.shape, axis)))
    except (ValueError, TypeError) as err:
      raise ValueError("x and y cannot be broadcast together.") from err
  result_dtype = complex_dtype_of(x.real.dtype)
  freq_dtype = np.finfo(result_dtype).dtype
  signal_length = x.shape[axis] if y is None else min(x.shape[axis], y.shape[axis])
  if x.size == 0 or (y is not None and y.size == 0):
    shape = x.shape if y is None else tuple(np.insert(outer_shape, axis, signal_length))
    return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
            jnp.zeros(shape, result_dtype))
  nperseg = _segment_length(window, nperseg, x.shape[axis])
  win = _window(window, nperseg, x.dtype)
  noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
  nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")
  if nfft < nperseg:
    raise ValueError(f"nfft must be greater than or equal to nperseg ({nfft} < {nperseg}).")
  if noverlap >= nperseg:
    raise ValueError(f"noverlap must be less than nperseg ({noverlap} >= {nperseg}).")

  x = jnp.moveaxis(x, axis, -1)
  if y is not None:  # the shorter signal is zero-padded to the longer one's length
    y = jnp.moveaxis(y, axis, -1)
    length = max(x.shape[-1], y.shape[-1])
    x, y = (jnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(0, length - s.shape[-1])]) for s in (x, y))
  signals = [x] if y is None else [x, y]
  if boundary is not None:
    signals = [_extend(s, nperseg // 2, boundary) for s in signals]
  if padded:  # zeros so that the last segment ends at the signal's end
    extra = (-(signals[0].shape[-1] - nperseg) % (nperseg - noverlap)) % nperseg
    signals = [jnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(0, extra)]) for s in signals]

  twosided = not return_onesided
  if return_onesided and any(jnp.iscomplexobj(s) for s in signals):
    warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
    twosided = True
  detrend_segments = _detrend_function(detrend, user_axis)
  spectra = [_segment_spectra(s, win, detrend_segments, nperseg, noverlap, nfft, twosided)
             for s in signals]
  if mode == "stft":
    result = spectra[0]
  else:
    result = jnp.conj(spectra[0]) * spectra[-1]
  scale = 1.0 / (fs * jnp.sum(win * win)) if scaling == "density" else 1.0 / jnp.sum(win) ** 2
  result = result * (jnp.sqrt(scale) if mode == "stft" else scale)
  if not twosided and mode == "psd":  # fold in the negative frequencies' power
    doubled = np.ones(result.shape[-1])
    doubled[1:result.shape[-1] - (nfft % 2 == 0)] = 2
    result = result * doubled.astype(freq_dtype)

  frequencies = (np.fft.fftfreq(nfft) if twosided else np.fft.rfftfreq(nfft)).astype(freq_dtype)
  centres = np.arange(nperseg / 2, signals[0].shape[-1] - nperseg / 2 + 1, nperseg - noverlap)
  if boundary is not None:
    centres = centres - nperseg / 2
  result = result.astype(result_dtype)
  if y is None and mode != "stft":
    result = result.real
  return (jnp.asarray(frequencies) * fs, jnp.asarray(centres.astype(freq_dtype)) / fs,
          jnp.moveaxis(result, -1, axis))


def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: Any = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Any, Any, Any]:
  """Short-time Fourier transform (SciPy's `scipy.signal.stft`).

  Args:
    x: the signal; `axis` holds time.
    fs: the sampling frequency.
    window: 'hann', another SciPy window name, or a 1-D array of length `nperseg`.
    nperseg: samples per segment (shortened, with a warning, to the signal's length).
    noverlap: samples shared by consecutive segments (default nperseg // 2).
    nfft: FFT length (default nperseg; longer zero-pads each segment).
    detrend: False, 'constant', 'linear' or a function of the segments.
    return_onesided: only non-negative frequencies (real input only).
    boundary: extend the signal by nperseg // 2 at both ends: 'zeros', 'even', 'odd',
      'constant' or None.
    padded: zero-pad so the last segment reaches the end of the signal.
    axis: the time axis.

  Returns:
    `(f, t, Zxx)`: frequencies, segment times, and the STFT with frequencies at `axis`
    and segments last.
  """
  check_arraylike("stft", x)
  return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                          return_onesided, "spectrum", axis, "stft", boundary, padded)


def _average_segments(pxy: Any, average: str) -> Any:
  """The mean or bias-corrected median over the last (segment) axis."""
  if pxy.ndim < 2 or pxy.size == 0:
    return pxy
  if pxy.shape[-1] == 1:
    return pxy.reshape(pxy.shape[:-1])
  if average == "mean":
    return jnp.mean(pxy, axis=-1)
  if average != "median":
    raise ValueError(f'average must be "median" or "mean", got {average}')
  n = pxy.shape[-1]  # the median of n chi-squared(2) variables over-estimates the mean
  even = np.arange(2.0, n, 2)
  bias = 1 + np.sum(1.0 / (even + 1) - 1.0 / even)
  if jnp.iscomplexobj(pxy):
    median = jnp.median(pxy.real, axis=-1) + 1j * jnp.median(pxy.imag, axis=-1)
  else:
    median = jnp.median(pxy, axis=-1)
  return median / np.asarray(bias, pxy.real.dtype)


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
  """Cross power spectral density by Welch's method (SciPy's `scipy.signal.csd`).

  Arguments as for `stft`, plus `y` (the second signal; None means `x` itself), `scaling`
  ('density': V**2/Hz, or 'spectrum': V**2) and `average` ('mean' or 'median' of the
  segments). With `nperseg=None` the whole signal is one segment, as in JAX.

  Returns:
    `(f, Pxy)`: frequencies and the cross spectral density (complex unless y is None).
  """
  check_arraylike("csd", x, *([] if y is None else [y]))
  freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                   return_onesided, scaling, axis, "psd")
  if y is not None:
    pxy = pxy + 0j
  return freqs, _average_segments(pxy, average)


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Any, Any]:
  """Power spectral density by Welch's method (SciPy's `scipy.signal.welch`): `csd` of
  `x` with itself; arguments as for `csd`. Returns `(f, Pxx)`, Pxx real."""
  freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                   scaling, axis, average)
  return freqs, pxx.real


def _overlap_add(frames: Any, step: int) -> Any:
  """Sums frames (..., segments, length) placed `step` samples apart into one signal."""
  segments, length = frames.shape[-2:]
  positions = (np.arange(segments)[:, None] * step + np.arange(length)).ravel()
  out = jnp.zeros(frames.shape[:-2] + (step * (segments - 1) + length,), frames.dtype)
  return out.at[..., positions].add(frames.reshape(frames.shape[:-2] + (-1,)))


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2) -> tuple[Any, Any]:
  """Inverse short-time Fourier transform (SciPy's `scipy.signal.istft`) by weighted
  overlap-add; it inverts `stft` with the same parameters.

  Args:
    Zxx: the STFT, at least 2-D.
    fs, window, nperseg, noverlap, nfft: as for `stft` (nperseg defaults to the FFT
      length the frequency axis implies).
    input_onesided: whether `Zxx` holds only non-negative frequencies.
    boundary: whether `stft` extended the signal (the extension is cut off again).
    time_axis, freq_axis: the segment and frequency axes of `Zxx`.

  Returns:
    `(t, x)`: sample times and the signal (real if `input_onesided`).
  """
  check_arraylike("istft", Zxx)
  Zxx = jnp.asarray(Zxx)
  if Zxx.ndim < 2:
    raise ValueError(f"Input stft must be at least 2d!; got shape {Zxx.shape}.")
  freq_axis = canonicalize_axis(freq_axis, Zxx.ndim, "freq_axis")
  time_axis = canonicalize_axis(time_axis, Zxx.ndim, "time_axis")
  if freq_axis == time_axis:
    raise ValueError("Must specify differing time and frequency axes!")
  Zxx = Zxx.astype(complex_dtype_of(promote_args_inexact("istft", Zxx.real)[0].dtype))
  implied = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
  nperseg = implied if nperseg is None else _static_int(nperseg, "nperseg of STFT")
  if nperseg < 1:
    raise ValueError("nperseg must be a positive integer")
  if nfft is None:  # an odd nperseg means the one-sided FFT had nperseg points
    nfft = implied + 1 if input_onesided and nperseg == implied + 1 else implied
  else:
    nfft = _static_int(nfft, "nfft of STFT")
  if nfft < nperseg:
    raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
  noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap of STFT")
  if noverlap >= nperseg:
    raise ValueError(f"noverlap must be less than nperseg ({noverlap} >= {nperseg}).")

  outer = [d for d in range(Zxx.ndim) if d not in (freq_axis, time_axis)]
  Zxx = jnp.transpose(Zxx, outer + [time_axis, freq_axis])
  inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
  frames = inverse(Zxx, n=nfft, axis=-1)[..., :nperseg]
  win = _window(window, nperseg, frames.real.dtype)
  frames = frames * jnp.sum(win)  # undo stft's 'spectrum' scaling
  step = nperseg - noverlap
  x = _overlap_add(frames * win, step)
  norm = _overlap_add(jnp.broadcast_to(win * win, (Zxx.shape[-2], nperseg)), step)
  if boundary:
    cut = nperseg // 2
    x, norm = x[..., cut:x.shape[-1] - cut], norm[cut:norm.shape[0] - cut]
  x = x / jnp.where(norm > 1e-10, norm, 1.0)
  if x.ndim > 1 and time_axis != Zxx.ndim - 1:
    x = jnp.moveaxis(x, -1, time_axis - (freq_axis < time_axis))
  times = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
  return times, x
