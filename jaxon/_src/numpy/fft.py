"""jaxon.numpy.fft: NumPy's discrete Fourier transforms on top of `lax.fft`.

Every n-dimensional transform is one path (`_fftn`): crop or zero-pad the input to the
requested sizes `s`, move the transformed axes to the end, apply `lax.fft` (which handles at
most three trailing dimensions at a time, so longer axis lists go in chunks), move the axes
back and scale for `norm`. For the real transforms the halved axis is the last of `axes`:
RFFT runs first (on real data) and IRFFT last (producing real data).

`norm` follows NumPy: "backward" (the default) leaves the forward transform unscaled and
divides the inverse by n; "forward" does the opposite; "ortho" divides both by sqrt(n).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import lax, shape_ops
from jaxon._src.lax import utils as lax_utils
from jaxon._src.lax.fft import FftType
from jaxon._src.lax.fft import fft as lax_fft
from jaxon._src.numpy import shape, ufuncs, util
from jaxon._src.xla.eager_plans import memoize_eager_operations

_NORMS = (None, "backward", "ortho", "forward")
_MAX_DIMS = 3  # XLA transforms at most three dimensions at once


# ----------------------------------------------------------------------------- the one path

def _fftn(name: str, fft_type: FftType, a: Any, s: Sequence[int] | None,
          axes: Sequence[int] | None, norm: str | None) -> Any:
  a = shape._ensure_array(name, a)
  if norm not in _NORMS:
    raise ValueError(f"jnp.fft.{name}: invalid norm {norm!r}; expected one of "
                     '"backward", "ortho", "forward" or None.')
  axes, s = _axes_and_sizes(name, fft_type, a, s, axes)
  if not axes:
    return a
  a = _resize(a, axes, _input_sizes(fft_type, s))
  at_end = tuple(range(a.ndim - len(axes), a.ndim))
  a = shape.moveaxis(a, axes, at_end)
  out = _chunked(a, fft_type, s)
  out = shape.moveaxis(out, at_end, axes)
  return _normalize(out, fft_type, math.prod(s), norm)


def _axes_and_sizes(name: str, fft_type: FftType, a: Any, s: Sequence[int] | None,
                    axes: Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """NumPy's defaults: without `axes`, the last len(s) axes (all axes without `s`); without
  `s`, the input's sizes (for IRFFT the last one is 2 * (m - 1))."""
  if axes is None:
    axes = range(a.ndim) if s is None else range(a.ndim - len(s), a.ndim)
  axes = tuple(lax_utils.canonicalize_axis(int(ax), a.ndim) for ax in axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"jnp.fft.{name} does not support repeated axes, got axes={axes}.")
  if s is None:
    s = [a.shape[ax] for ax in axes]
    if fft_type == FftType.IRFFT and axes:
      s[-1] = 2 * (s[-1] - 1)
  s = tuple(int(core.concrete_or_error(int, n, f"The sizes of jnp.fft.{name} must be "
                                       "static.")) for n in s)
  if len(s) != len(axes):
    raise ValueError(f"jnp.fft.{name}: s={s} and axes={axes} must have the same length.")
  if any(n < 1 for n in s):
    raise ValueError(f"jnp.fft.{name}: invalid number of data points {s}; each must be "
                     ">= 1.")
  return axes, s


def _input_sizes(fft_type: FftType, s: tuple[int, ...]) -> tuple[int, ...]:
  return (*s[:-1], s[-1] // 2 + 1) if fft_type == FftType.IRFFT else s


def _resize(a: Any, axes: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
  """Crops (negative padding) or zero-pads each of `axes` to its size."""
  config = [(0, 0, 0)] * a.ndim
  for ax, n in zip(axes, sizes):
    config[ax] = (0, n - a.shape[ax], 0)
  if all(high == 0 for _, high, _ in config):
    return a
  return shape_ops.pad(a, np.zeros((), a.dtype), config)


def _chunked(a: Any, fft_type: FftType, s: tuple[int, ...]) -> Any:
  """Applies the transform over the trailing len(s) axes, at most three per `lax.fft`.
  The real transforms take the last chunk; the other chunks are complex FFTs or IFFTs."""
  if fft_type in (FftType.FFT, FftType.IFFT):
    rest_type, last = fft_type, fft_type
  else:
    rest_type, last = (FftType.FFT if fft_type == FftType.RFFT else FftType.IFFT), fft_type
  last_dims = s[-_MAX_DIMS:]
  rest = s[:-_MAX_DIMS]
  if fft_type == FftType.RFFT:
    a = lax_fft(a, last, last_dims)
  for end in range(len(rest), 0, -_MAX_DIMS):
    lengths = rest[max(end - _MAX_DIMS, 0):end]
    a = _over_axes(a, rest_type, lengths, len(s) - end)
  if fft_type != FftType.RFFT:
    a = lax_fft(a, last, last_dims)
  return a


def _over_axes(a: Any, fft_type: FftType, lengths: tuple[int, ...], trailing: int) -> Any:
  """`lax.fft` over the `len(lengths)` axes that sit just before the last `trailing`."""
  if not trailing:
    return lax_fft(a, fft_type, lengths)
  start = a.ndim - trailing - len(lengths)
  moved = tuple(range(start, start + len(lengths)))
  at_end = tuple(range(a.ndim - len(lengths), a.ndim))
  out = lax_fft(shape.moveaxis(a, moved, at_end), fft_type, lengths)
  return shape.moveaxis(out, at_end, moved)


def _normalize(out: Any, fft_type: FftType, n: int, norm: str | None) -> Any:
  """lax.fft already follows "backward"; the other norms rescale."""
  inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
  if norm in (None, "backward"):
    return out
  factor = math.sqrt(n) if norm == "ortho" else n
  scale = factor if inverse else 1 / factor
  return lax.mul(out, np.array(scale, out.dtype))


def _swap_direction(norm: str | None) -> str:
  """hfft is an inverse real transform used as a forward one: its norm reads swapped."""
  return {None: "forward", "backward": "forward", "ortho": "ortho",
          "forward": "backward"}.get(norm, norm)


def _one_axis(n: int | None, axis: int) -> tuple[Sequence[int] | None, tuple[int]]:
  return (None if n is None else (n,)), (axis,)


# ----------------------------------------------------------------------------- 1-D

@memoize_eager_operations
def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
  """One-dimensional discrete Fourier transform along `axis`.

  Args:
    a: the input (converted to complex).
    n: the transform length; `a` is cropped or zero-padded to it (default: its size).
    axis: the axis to transform.
    norm: "backward" (default: unscaled), "ortho" (1/sqrt(n)) or "forward" (1/n).

  Example: `jnp.fft.fft(jnp.array([1., 0., 0., 0.]))` is `[1, 1, 1, 1]` (complex).
  """
  return _fftn("fft", FftType.FFT, a, *_one_axis(n, axis), norm)


@memoize_eager_operations
def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
  """Inverse of `fft`: with the default norm it divides by n."""
  return _fftn("ifft", FftType.IFFT, a, *_one_axis(n, axis), norm)


@memoize_eager_operations
def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
  """`fft` of a real input, keeping the n // 2 + 1 non-negative frequencies (the others
  are their complex conjugates)."""
  return _fftn("rfft", FftType.RFFT, a, *_one_axis(n, axis), norm)


@memoize_eager_operations
def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
  """Inverse of `rfft`: the real signal of length `n` (default 2 * (m - 1) for an input
  of m frequencies) whose spectrum's non-negative half is `a`."""
  return _fftn("irfft", FftType.IRFFT, a, *_one_axis(n, axis), norm)


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
  """The real spectrum of a signal with Hermitian symmetry given by its first half `a`
  (so the output has length n, default 2 * (m - 1))."""
  a = ufuncs.conj(shape._ensure_array("hfft", a))
  return _fftn("hfft", FftType.IRFFT, a, *_one_axis(n, axis), _swap_direction(norm))


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
  """Inverse of `hfft`: the first n // 2 + 1 entries of the inverse transform of a real
  signal."""
  out = _fftn("ihfft", FftType.RFFT, a, *_one_axis(n, axis), _swap_direction(norm))
  return ufuncs.conj(out)


# ----------------------------------------------------------------------------- n-D

def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Any:
  """N-dimensional discrete Fourier transform over `axes` (default: all, or the last
  len(s)), each cropped or zero-padded to the sizes `s`."""
  return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
  """Inverse of `fftn`."""
  return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
  """`fftn` of a real input; the last of `axes` keeps its n // 2 + 1 non-negative
  frequencies."""
  return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Any:
  """Inverse of `rfftn`; `s[-1]` (default 2 * (m - 1)) is the real output's length along
  the last of `axes`."""
  return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Any:
  """`fftn` over two axes (the last two by default)."""
  return _fftn("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
  """`ifftn` over two axes (the last two by default)."""
  return _fftn("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
  """`rfftn` over two axes (the last two by default)."""
  return _fftn("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Any:
  """`irfftn` over two axes (the last two by default)."""
  return _fftn("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


def _two_axes(name: str, axes: Sequence[int]) -> Sequence[int]:
  if len(axes) != 2:
    raise ValueError(f"jnp.fft.{name} transforms two axes, got axes={tuple(axes)}.")
  return axes


# ----------------------------------------------------------------------------- helpers

def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
  """The sample frequencies of an `fft` of length `n` with sample spacing `d`:
  `[0, 1, …, (n - 1) // 2, -(n // 2), …, -1] / (d * n)`."""
  n = _static_length("fftfreq", n)
  k = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
  return _frequencies(k, n, d, dtype)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
  """The sample frequencies of an `rfft` of length `n`: `[0, 1, …, n // 2] / (d * n)`."""
  n = _static_length("rfftfreq", n)
  return _frequencies(np.arange(n // 2 + 1), n, d, dtype)


def _static_length(name: str, n: Any) -> int:
  n = core.concrete_or_error(int, n, f"The n argument of jnp.fft.{name} must be static.")
  if n < 1:
    raise ValueError(f"jnp.fft.{name}: n must be a positive integer, got {n}.")
  return int(n)


def _frequencies(k: np.ndarray, n: int, d: Any, dtype: Any) -> Any:
  dtype = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)
  util.check_arraylike("fftfreq", d)
  d = lax._convert_element_type(d, dtype, weak_type=False)
  return ufuncs.divide(np.asarray(k, dtype), ufuncs.multiply(d, np.array(n, dtype)))


def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
  """Moves the zero frequency to the centre: rolls each of `axes` (default: all) by half
  its size."""
  return _shift("fftshift", x, axes, lambda n: n // 2)


def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
  """Inverse of `fftshift` (they differ for odd sizes)."""
  return _shift("ifftshift", x, axes, lambda n: -(n // 2))


def _shift(name: str, x: Any, axes: int | Sequence[int] | None, amount: Any) -> Any:
  x = shape._ensure_array(name, x)
  if axes is None:
    axes = tuple(range(x.ndim))
  elif isinstance(axes, (int, np.integer)):
    axes = (int(axes),)
  shifts = tuple(amount(x.shape[ax]) for ax in axes)
  return shape.roll(x, shifts, tuple(axes)) if axes else x
