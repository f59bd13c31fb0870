"""Block-scaled matrix products (`scaled_matmul`, `scaled_dot_general`): the way narrow
types (float8, float4) are multiplied, each block of `block_size` consecutive entries
along the contracting dimension stored as narrow values times one shared scale.

JAX computes them with cuDNN on recent NVIDIA GPUs and has no CPU path; jaxon computes the
same mathematics with ordinary ops (dequantize to float32, contract, convert), so they run
everywhere and differentiate like any composition. `scaled_dot_general` quantizes its
float inputs first, following the two recipes of `get_scaled_dot_general_config`:

- 'mxfp8': float8_e4m3fn data in blocks of 32, each scaled by a power of two
  (float8_e8m0fnu) rounded up so the block's largest entry fits;
- 'nvfp4': float4_e2m1fn data in blocks of 16 with float8_e4m3fn scales, after dividing by
  a float32 global scale.

Its gradient (a custom VJP, as in JAX) multiplies the cotangent by the other operand with
the same quantization (the third config quantizes the cotangent); for 'nvfp4' it uses an
unquantized product and zeroes the gradient of inputs the quantization clipped.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from jaxon._src import dtypes
from jaxon._src.lax import dot_general as dg
from jaxon._src.lax import barriers_tokens, lax
from jaxon._src.lax.custom_derivatives import custom_vjp
from jaxon._src.numpy import einsum, lax_numpy, reductions, shape, ufuncs


@dataclasses.dataclass
class BlockScaleConfig:
  """How `scaled_dot_general` quantizes one operand (see `get_scaled_dot_general_config`)."""
  mode: str
  block_size: int
  data_type: Any
  scale_type: Any
  global_scale: Any
  infer_only: bool


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Any:
  """Block-scaled batched matrix product `(B, M, K) x (B, N, K) -> (B, M, N)`.

  Each operand entry is multiplied by the scale of its block (`K // K_scales` consecutive
  entries of the last dimension) before contracting over K, in float32.

  Args:
    lhs: `(B, M, K)` data (typically float8 or float4).
    rhs: `(B, N, K)` data.
    lhs_scales: `(B, M, K_a)` scales, `K % K_a == 0`.
    rhs_scales: `(B, N, K_b)` scales, `K % K_b == 0`.
    preferred_element_type: the result type (float32 by default).

  Returns:
    A `(B, M, N)` array.

  Example:
    >>> a = jnp.array([1., 2., 3.]).reshape((1, 1, 3))
    >>> b = jnp.array([4., 5., 6.]).reshape((1, 1, 3))
    >>> s = jnp.array([0.5]).reshape((1, 1, 1))
    >>> scaled_matmul(a, b, s, s)
    Array([[[8.]]], dtype=float32)
  """
  a, b, a_scales, b_scales = (lax_numpy.asarray(x) for x in (lhs, rhs, lhs_scales,
                                                             rhs_scales))
  if not all(x.ndim == 3 for x in (a, b, a_scales, b_scales)):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays, got "
                     f"shapes {a.shape}, {b.shape}, {a_scales.shape} and {b_scales.shape}.")
  if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
    raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
  if a_scales.shape[0] != b_scales.shape[0] or a_scales.shape[2] != b_scales.shape[2]:
    raise ValueError("scaled_matmul requires scales to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {a_scales.shape} and "
                     f"{b_scales.shape}")
  if a_scales.shape[1] != a.shape[1] or b_scales.shape[1] != b.shape[1]:
    raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                     f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                     f"{a_scales.shape}, b_scales: {b_scales.shape}")
  if a.shape[2] % a_scales.shape[2]:
    raise ValueError(f"scaled_matmul requires the contract dimension K={a.shape[2]} to be a "
                     f"multiple of the scales' K={a_scales.shape[2]}.")
  out = einsum.einsum("bmk,bnk->bmn", _dequantize(a, a_scales), _dequantize(b, b_scales),
                      preferred_element_type=np.float32)
  return out.astype(dtypes.canonicalize_dtype(preferred_element_type))


def _dequantize(x: Any, scales: Any) -> Any:
  block = x.shape[-1] // scales.shape[-1]
  f32 = np.dtype(np.float32)
  return ufuncs.multiply(x.astype(f32),
                         shape.repeat(scales.astype(f32), block, axis=-1))


def get_scaled_dot_general_config(mode: Literal["nvfp4", "mxfp8"],
                                  global_scale: Any = None) -> BlockScaleConfig:
  """The quantization of one operand of `scaled_dot_general`: 'mxfp8' or 'nvfp4' (whose
  `global_scale`, a float32 array of shape (1,), defaults to 1)."""
  if mode == "nvfp4":
    return BlockScaleConfig(
        mode="nvfp4", block_size=16, data_type=dtypes.float4_e2m1fn,
        scale_type=dtypes.float8_e4m3fn, infer_only=False,
        global_scale=(lax_numpy.ones((1,), np.float32) if global_scale is None
                      else global_scale))
  if mode == "mxfp8":
    return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=dtypes.float8_e4m3fn,
                            scale_type=dtypes.float8_e8m0fnu, global_scale=None,
                            infer_only=False)
  raise ValueError(f"Unsupported mode: {mode}")


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: dg.DotDimensionNumbers,
                       preferred_element_type: Any = np.float32,
                       configs: list[BlockScaleConfig] | None = None,
                       implementation: Literal["cudnn"] | None = None) -> Any:
  """`dot_general` of `lhs` and `rhs` quantized to block-scaled narrow types.

  Args:
    lhs, rhs: float arrays.
    dimension_numbers: as for `dot_general`; each operand's contracting size must be a
      multiple of its config's block size.
    preferred_element_type: float32 (default), bfloat16 or float16.
    configs: three `BlockScaleConfig`s (lhs, rhs, and the cotangent in the backward pass),
      from `get_scaled_dot_general_config`; None computes a plain `dot_general`.
    implementation: deprecated and ignored.

  Returns:
    The `dot_general` result: batch, then lhs's free, then rhs's free dimensions.
  """
  if implementation is not None:
    warnings.warn("Backend selector, now ignored. The system chooses the backend "
                  "automatically.", DeprecationWarning, stacklevel=2)
  if configs is None:
    return dg.dot_general(lhs, rhs, dimension_numbers,
                          preferred_element_type=preferred_element_type)
  preferred = np.dtype(preferred_element_type)
  if preferred not in (np.dtype(np.float32), np.dtype(dtypes.bfloat16),
                       np.dtype(np.float16)):
    raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                    f"{preferred}")
  lhs, rhs = lax_numpy.asarray(lhs), lax_numpy.asarray(rhs)
  dnums = dg._canonical_dimension_numbers(dimension_numbers)
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dnums
  unbatched = not lhs_batch
  if unbatched:  # a unit batch dimension at the end of each operand, squeezed after
    lhs, rhs = shape.expand_dims(lhs, lhs.ndim), shape.expand_dims(rhs, rhs.ndim)
    dnums = ((lhs_contract, rhs_contract), ((lhs.ndim - 1,), (rhs.ndim - 1,)))
  out = _scaled_dot(lhs, rhs, dnums, preferred, tuple(configs))
  return shape.squeeze(out, 0) if unbatched else out


# ----------------------------------------------------------------------------- quantization

def _to_3d(x: Any, contract: Sequence[int], batch: Sequence[int]) -> Any:
  """`x` as `(batch, free, contracting)`, each group of dimensions flattened into one."""
  free = [d for d in range(x.ndim) if d not in contract and d not in batch]
  order = [*sorted(batch), *free, *sorted(contract)]
  sizes = [int(np.prod([x.shape[d] for d in dims], dtype=int))
           for dims in (batch, free, contract)]
  return shape.reshape(shape.transpose(x, order), sizes)


def _e8m0_bits_rounded_up(x: Any) -> Any:
  """The float8_e8m0fnu bits (a biased power-of-two exponent) of the smallest power of
  two >= x, for x >= 0."""
  bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
  exponent, mantissa = bits >> 23, bits & 0x7FFFFF
  tiny_subnormal = ufuncs.logical_and(exponent == 0, mantissa <= 0x400000)
  round_up = ufuncs.logical_and(ufuncs.logical_and(mantissa > 0, exponent != 0xFE),
                                ufuncs.logical_not(tiny_subnormal))
  return ufuncs.where(round_up, exponent + 1, exponent).astype(np.uint8)


def _e8m0_bits_value(bits: Any, dtype: np.dtype) -> Any:
  """2**(bits - 127) in `dtype` (with 0 replaced by the dtype's near-zero value)."""
  value = lax.bitcast_convert_type(bits.astype(np.uint32) << 23, np.float32)
  near_zero = 2.0 ** -15 if dtype == np.float16 else 2.0 ** -127
  return ufuncs.where(value == 0, np.float32(near_zero), value).astype(dtype)


def _quantize(x: Any, config: BlockScaleConfig) -> tuple[Any, Any]:
  """`(B, M, K)` float data as `(data, scales)`: `config.data_type` data and one
  `config.scale_type` scale per block of `block_size` entries along K."""
  b, m, k = x.shape
  if k < config.block_size or k % config.block_size:
    raise ValueError(f"scaled_dot_general ({config.mode}) needs contracting sizes that are "
                     f"multiples of the block size {config.block_size}, got {k}.")
  blocks = shape.reshape(x, (b, m, k // config.block_size, config.block_size))
  data_max = np.asarray(dtypes.finfo(config.data_type).max, x.dtype)

  def block_scales(values: Any) -> Any:
    return reductions.max(ufuncs.abs(values), axis=-1, keepdims=True) / data_max
  if config.mode == "mxfp8":
    scale_bits = _e8m0_bits_rounded_up(block_scales(blocks))
    scaled = blocks / _e8m0_bits_value(scale_bits, x.dtype)
    scales = lax.bitcast_convert_type(scale_bits, config.scale_type)
  elif config.mode == "nvfp4":
    scale_max = np.asarray(dtypes.finfo(config.scale_type).max, x.dtype)
    blocks = blocks / config.global_scale
    scales = barriers_tokens.optimization_barrier(
        ufuncs.clip(block_scales(blocks), 0, scale_max).astype(config.scale_type))
    scaled = blocks / scales.astype(np.float32)
  else:
    raise ValueError(f"Unrecognized mode: {config.mode}.")
  data = ufuncs.clip(scaled, -data_max, data_max).astype(config.data_type)
  return shape.reshape(data, (b, m, k)), shape.reshape(scales, scales.shape[:-1])


def _dot_shape(x_shape: tuple[int, ...], y_shape: tuple[int, ...], x_contract: Sequence[int],
               x_batch: Sequence[int], y_contract: Sequence[int], y_batch: Sequence[int]
               ) -> tuple[int, ...]:
  free = lambda s, c, b: [n for d, n in enumerate(s) if d not in c and d not in b]
  return (*(x_shape[d] for d in sorted(x_batch)), *free(x_shape, x_contract, x_batch),
          *free(y_shape, y_contract, y_batch))


def _scaled_forward(lhs: Any, rhs: Any, dnums: tuple, preferred: np.dtype,
                    configs: tuple) -> Any:
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dnums
  nvfp4 = configs[0].mode == "nvfp4"
  lhs_q, lhs_scales = _quantize(_to_3d(lhs, lhs_contract, lhs_batch), configs[0])
  rhs_q, rhs_scales = _quantize(_to_3d(rhs, rhs_contract, rhs_batch), configs[1])
  out = scaled_matmul(lhs_q, rhs_q, lhs_scales, rhs_scales,
                      np.float32 if nvfp4 else preferred)
  if nvfp4:
    out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(preferred)
  return shape.reshape(out, _dot_shape(lhs.shape, rhs.shape, lhs_contract, lhs_batch,
                                       rhs_contract, rhs_batch))


def _operand_cotangent(g: Any, x_shape: tuple[int, ...], y: Any, dnums: tuple,
                       preferred: np.dtype, configs: tuple, swapped: bool) -> Any:
  """The cotangent of operand x of `dot(x, y)` (y's of `dot(y, x)` when `swapped`): `g`
  contracted with y over y's free dimensions, laid out like x."""
  (x_contract, y_contract), (x_batch, y_batch) = dnums
  x_free = [d for d in range(len(x_shape)) if d not in x_contract and d not in x_batch]
  y_free = [d for d in range(y.ndim) if d not in y_contract and d not in y_batch]
  n_batch = len(x_batch)
  g_y_free = (range(n_batch, n_batch + len(y_free)) if swapped else
              range(n_batch + len(x_free), n_batch + len(x_free) + len(y_free)))
  g_batch = range(n_batch)
  g3, y3 = _to_3d(g, g_y_free, g_batch), _to_3d(y, y_free, y_batch)
  if configs[0].mode == "nvfp4":
    out = einsum.einsum("bmk,bnk->bmn", g3, y3, preferred_element_type=preferred)
  else:
    g_q, g_scales = _quantize(g3, configs[0])
    y_q, y_scales = _quantize(y3, configs[1])
    out = scaled_matmul(g_q, y_q, g_scales, y_scales, preferred)
  out = shape.reshape(out, _dot_shape(g.shape, y.shape, g_y_free, g_batch, y_free, y_batch))
  x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
  return shape.transpose(out, np.argsort([*x_batch, *x_free, *x_contract_by_y]))


def _scaled_dot_fwd(lhs: Any, rhs: Any, dnums: tuple, preferred: np.dtype,
                    configs: tuple) -> tuple[Any, tuple[Any, Any]]:
  return _scaled_forward(lhs, rhs, dnums, preferred, configs), (lhs, rhs)


def _scaled_dot_bwd(dnums: tuple, preferred: np.dtype, configs: tuple,
                    residuals: tuple[Any, Any], g: Any) -> tuple[Any, Any]:
  lhs, rhs = residuals
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dnums
  swapped = ((rhs_contract, lhs_contract), (rhs_batch, lhs_batch))
  grad_lhs = _operand_cotangent(g, lhs.shape, rhs, dnums, preferred,
                                (configs[2], configs[1]), swapped=False)
  grad_rhs = _operand_cotangent(g, rhs.shape, lhs, swapped, preferred,
                                (configs[2], configs[0]), swapped=True)
  if configs[2].mode == "nvfp4":  # straight-through, but not for inputs that were clipped
    limit = float(dtypes.finfo(configs[0].data_type).max) * float(
        dtypes.finfo(configs[0].scale_type).max)
    grad_lhs = ufuncs.where(ufuncs.abs(lhs) <= configs[0].global_scale * limit,
                               grad_lhs, 0)
    grad_rhs = ufuncs.where(ufuncs.abs(rhs) <= configs[1].global_scale * limit,
                               grad_rhs, 0)
  return grad_lhs.astype(lhs.dtype), grad_rhs.astype(rhs.dtype)


_scaled_dot = custom_vjp(_scaled_forward, nondiff_argnums=(2, 3, 4))
_scaled_dot.defvjp(_scaled_dot_fwd, _scaled_dot_bwd)
