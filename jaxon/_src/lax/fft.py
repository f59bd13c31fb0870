"""The `fft` primitive: discrete Fourier transforms over the trailing 1 to 3 dimensions.

Four kinds (`FftType`): FFT and IFFT map complex to complex; RFFT maps real to complex and
keeps only the non-redundant half of the last dimension (`n // 2 + 1` entries, the rest being
complex conjugates); IRFFT maps such a half spectrum back to a real signal of length
`fft_lengths[-1]`. FFT is unnormalised, IFFT divides by the product of the lengths (NumPy's
"backward" convention); `jaxon.numpy.fft` builds the other normalisations on top.

Every kind is linear. The DFT matrix is symmetric, so FFT and IFFT are their own transposes;
RFFT and IRFFT are a full transform followed or preceded by taking half of the spectrum, and
their transposes undo that step (see `_rfft_transpose`, `_irfft_transpose`).
"""
from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, utils


class FftType(enum.IntEnum):
  """Which transform `fft` computes (XLA's numbering)."""
  FFT = 0
  IFFT = 1
  RFFT = 2
  IRFFT = 3

  def __str__(self) -> str:
    return f"FftType.{self.name}"


def fft(x: Any, fft_type: FftType | str, fft_lengths: Sequence[int]) -> Any:
  """Discrete Fourier transform over the trailing `len(fft_lengths)` dimensions of `x`.

  Args:
    x: the input. FFT and IFFT convert it to complex, RFFT needs (or converts to) a real
      floating type, IRFFT converts it to complex.
    fft_type: an `FftType` or its name ("fft", "ifft", "rfft", "irfft").
    fft_lengths: the transform's size along each of the trailing 1 to 3 dimensions. They
      must equal those dimensions of `x`, except for IRFFT, whose input's last dimension is
      `fft_lengths[-1] // 2 + 1`.

  Returns:
    The transform; leading dimensions are batch dimensions.

  Example: `fft(jnp.ones(4, jnp.complex64), "fft", (4,))` is `[4, 0, 0, 0]`.
  """
  fft_type = _canonical_type(fft_type)
  fft_lengths = tuple(int(n) for n in fft_lengths)
  dtype = dtypes.dtype(x, canonicalize=True)
  if fft_type == FftType.RFFT and dtypes.is_complex(dtype):
    raise ValueError(f"rfft takes a real input, got dtype {dtype.name}; use FFT for "
                     "complex inputs.")
  x = lax.convert_element_type(x, _input_dtype(fft_type, dtype))
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


def _input_dtype(fft_type: FftType, dtype: np.dtype) -> np.dtype:
  """XLA transforms single and double precision only: narrower types compute in single
  precision, integers in the default float type."""
  dtype = dtypes.to_inexact_dtype(dtype)
  double = dtype in (np.dtype(np.float64), np.dtype(np.complex128))
  if fft_type == FftType.RFFT:
    return np.dtype(np.float64 if double else np.float32)
  return np.dtype(np.complex128 if double else np.complex64)


def _canonical_type(fft_type: FftType | str) -> FftType:
  if isinstance(fft_type, str):
    try:
      return FftType[fft_type.upper()]
    except KeyError:
      raise ValueError(f"fft_type must be one of 'fft', 'ifft', 'rfft', 'irfft' or an "
                       f"FftType, got {fft_type!r}.") from None
  return FftType(fft_type)


# ----------------------------------------------------------------------------- abstract eval

def _expected_input_dims(fft_type: FftType, fft_lengths: tuple[int, ...]) -> tuple[int, ...]:
  if fft_type == FftType.IRFFT:
    return (*fft_lengths[:-1], fft_lengths[-1] // 2 + 1)
  return fft_lengths


def _fft_shape_rule(x: ShapedArray, *, fft_type: FftType, fft_lengths: tuple[int, ...]
                    ) -> tuple[int, ...]:
  if not 1 <= len(fft_lengths) <= 3:
    raise ValueError(f"fft transforms 1 to 3 dimensions, got fft_lengths={fft_lengths}.")
  if len(fft_lengths) > x.ndim:
    raise ValueError(f"fft_lengths={fft_lengths} has more entries than the input has "
                     f"dimensions (shape {x.shape}).")
  expected = _expected_input_dims(fft_type, fft_lengths)
  trailing = x.shape[x.ndim - len(fft_lengths):]
  if trailing != expected:
    raise ValueError(f"{fft_type.name} with fft_lengths={fft_lengths} needs the input's "
                     f"trailing dimensions to be {expected}, got shape {x.shape}.")
  batch = x.shape[:x.ndim - len(fft_lengths)]
  if fft_type == FftType.RFFT:
    return (*batch, *fft_lengths[:-1], fft_lengths[-1] // 2 + 1)
  return (*batch, *fft_lengths)


def _fft_dtype_rule(x: ShapedArray, *, fft_type: FftType, fft_lengths: tuple[int, ...]
                    ) -> np.dtype:
  if fft_type == FftType.RFFT:
    utils.check_dtypes("rfft", (np.float32, np.float64), x)
    return np.dtype(np.complex64 if x.dtype == np.float32 else np.complex128)
  utils.check_dtypes(fft_type.name.lower(), (np.complex64, np.complex128), x)
  if fft_type == FftType.IRFFT:
    return np.dtype(np.float32 if x.dtype == np.complex64 else np.float64)
  return x.dtype


fft_p = utils.standard_primitive("fft", _fft_shape_rule, _fft_dtype_rule)


def _fft_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, fft_type: FftType,
                  fft_lengths: tuple[int, ...]) -> list[ir.Value]:
  return [hlo.fft(x, hlo.FftTypeAttr.get(fft_type.name), list(fft_lengths))]


mlir.register_lowering(fft_p, _fft_lowering)


# ----------------------------------------------------------------------------- transpose

def _rfft_transpose(ct: Any, fft_lengths: tuple[int, ...]) -> Any:
  """RFFT(x) is the first half of FFT(complex(x)) along the last axis, so its transpose is
  Re(FFT(ct padded to the full length with zeros)). Written as JAX writes it: N IRFFT(conj(ct)
  / w), w along the last axis 1 for the zero frequency (and the Nyquist one when n is even)
  and 2 for the others, which IRFFT counts twice; a half-spectrum inverse transform costs
  half the full complex FFT of the padded cotangent (the gradient of an rfftn ran 2x JAX's
  time that way)."""
  weights = _hermitian_weights(ct.ndim, ct.shape[-1], fft_lengths[-1], ct.dtype)
  signal = fft_p.bind(lax.div(lax.conj(ct), weights), fft_type=FftType.IRFFT,
                      fft_lengths=fft_lengths)
  return lax.mul(signal, np.array(math.prod(fft_lengths), signal.dtype))


def _hermitian_weights(ndim: int, half: int, n: int, dtype: np.dtype) -> Any:
  """How many entries of a full spectrum of length n each of the `half` kept ones stands for:
  1 for the zero frequency (and the Nyquist one when n is even), 2 for the others; shaped to
  broadcast along the last of `ndim` axes. Made in the program: a constant of over 1 KB
  would be passed with every call."""
  column = lax.broadcasted_iota(np.int32, (1,) * (ndim - 1) + (half,), ndim - 1)
  edge = lax.eq(column, np.int32(0))
  if n % 2 == 0:
    edge = lax.bitwise_or(edge, lax.eq(column, np.int32(half - 1)))
  return lax.select(edge, lax.full(column.shape, 1, dtype), lax.full(column.shape, 2, dtype))


def _irfft_transpose(ct: Any, fft_lengths: tuple[int, ...]) -> Any:
  """IRFFT(y) = Re(sum_k w_k y_k e^{2 pi i j.k / n}) / N, where along the last axis w_k is 1
  for the zero frequency (and the Nyquist one when n is even) and 2 for the others, which
  stand for their conjugate twins. For a real cotangent d, sum_j d_j e^{2 pi i j.k / n} is
  conj(RFFT(d))_k, so the transpose is w * conj(RFFT(d)) / N."""
  spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
  weights = _hermitian_weights(spectrum.ndim, spectrum.shape[-1], fft_lengths[-1],
                               spectrum.dtype)
  scale = np.array(1 / math.prod(fft_lengths), spectrum.dtype)
  return lax.conj(lax.mul(lax.mul(weights, scale), spectrum))


def _fft_transpose(ct: Any, x: Any, *, fft_type: FftType, fft_lengths: tuple[int, ...]
                   ) -> list[Any]:
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


ad.deflinear(fft_p, _fft_transpose)


# ----------------------------------------------------------------------------- batching

def _fft_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *, fft_type: FftType,
                    fft_lengths: tuple[int, ...]) -> tuple[Any, int]:
  """Leading dimensions are batch dimensions already: the batch dimension only moves (to
  the front) when it sits among the transformed trailing ones."""
  (x,), (bdim,) = vals, dims
  if bdim >= np.ndim(x) - len(fft_lengths):
    x, bdim = batching.moveaxis(x, bdim, 0), 0
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), bdim


batching.primitive_batchers[fft_p] = _fft_batch_rule
