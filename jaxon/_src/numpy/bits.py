"""Bit-level functions of jaxon.numpy: `bitwise_count` (population count) and
`packbits` / `unpackbits`, which move between arrays of bits and uint8 bytes.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src.lax import lax, shape_ops
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import reductions, util
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy.padding import pad


def bitwise_count(x: Any, /) -> Any:
  """The number of 1 bits in the absolute value of each integer, as uint8.

  Example: `jnp.bitwise_count(jnp.array([0, 7, -8]))` is `[0, 3, 1]`.
  """
  util.check_arraylike("jnp.bitwise_count", x)
  x = jnp_shape._ensure_array("bitwise_count", x)
  if not (dtypes.is_integer(x.dtype) or x.dtype == np.bool_):
    raise TypeError(f"jnp.bitwise_count requires integer or boolean inputs, got "
                    f"{x.dtype.name}.")
  if x.dtype == np.bool_:
    x = lax._convert_element_type(x, np.uint8)
  elif dtypes.issubdtype(x.dtype, np.signedinteger):
    x = lax.abs(x)
  return lax._convert_element_type(lax.population_count(x), np.uint8)


def _bit_order(bitorder: str) -> str:
  if bitorder not in ("big", "little"):
    raise ValueError(f"jnp: bitorder must be either 'big' or 'little', got {bitorder!r}.")
  return bitorder


def _bit_weights(bitorder: str) -> np.ndarray:
  """The value of each bit of a byte, in the order the bits are stored."""
  weights = (1 << np.arange(8)).astype(np.uint8)
  return weights[::-1] if _bit_order(bitorder) == "big" else weights


def _to_last(a: Any, axis: int | None) -> tuple[Any, int]:
  """`a` with `axis` moved last (flattened first if None), and where to move it back."""
  if axis is None:
    return jnp_shape.ravel(a), 0
  axis = lax_utils.canonicalize_axis(axis, a.ndim)
  return jnp_shape.moveaxis(a, axis, -1), axis


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
  """Packs the truth values of `a` (nonzero is 1) into uint8 bytes, eight along `axis`
  (of the flattened array if None) per byte, the last byte padded with zeros.

  Example: `jnp.packbits(jnp.array([1, 0, 1]))` is `[160]`.
  """
  a = jnp_shape._ensure_array("packbits", a)
  if not (dtypes.is_integer(a.dtype) or a.dtype == np.bool_):
    raise TypeError(f"jnp.packbits expects an integer or boolean array, got "
                    f"{a.dtype.name}.")
  weights = _bit_weights(bitorder)
  bits, axis = _to_last(lax._convert_element_type(
      lax.ne(a, lax._convert_element_type(0, a.dtype)), np.uint8), axis)
  n = bits.shape[-1]
  bits = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, -n % 8)])
  bytes_ = jnp_shape.reshape(bits, bits.shape[:-1] + (bits.shape[-1] // 8, 8))
  packed = reductions.sum(lax.mul(bytes_, jnp_shape.broadcast_to(weights, bytes_.shape)),
                          axis=-1, dtype=np.uint8)
  return jnp_shape.moveaxis(packed, -1, axis)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
  """Unpacks each uint8 of `a` into its eight bits (0 or 1, uint8) along `axis` (of the
  flattened array if None); `count` keeps that many bits (padding with zeros, or dropping
  from the end when negative).

  Example: `jnp.unpackbits(jnp.array([160], jnp.uint8))` is `[1, 0, 1, 0, 0, 0, 0, 0]`.
  """
  a = jnp_shape._ensure_array("unpackbits", a)
  if a.dtype != np.uint8:
    raise TypeError(f"jnp.unpackbits expects an array of uint8, got {a.dtype.name}.")
  weights = _bit_weights(bitorder)
  a, axis = _to_last(a, axis)
  shape = a.shape + (8,)
  spread = lax.broadcast_in_dim(a, shape, range(a.ndim))
  bits = lax.bitwise_and(spread, lax.broadcast_in_dim(weights, shape, (a.ndim,)))
  bits = lax._convert_element_type(lax.ne(bits, np.uint8(0)), np.uint8)
  bits = shape_ops.collapse(bits, a.ndim - 1, a.ndim + 1)
  if count is not None:
    n = bits.shape[-1]
    count = int(count)
    if -count > n:
      raise ValueError(f"jnp.unpackbits: -count ({-count}) is larger than the number of bits "
                       f"({n}).")
    if count > n:
      bits = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, count - n)])
    else:
      bits = bits[..., :count]
  return jnp_shape.moveaxis(bits, -1, axis)
