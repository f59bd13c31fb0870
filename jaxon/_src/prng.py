"""Threefry-2x32, the counter-based hash behind `jaxon.random`, and the key operations built
on it: seeding, splitting, folding in data and drawing raw bits.

A key is two uint32 words. Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", 2011) maps a key and a pair of uint32 counters to a pair of uint32 words that
look random; everything else numbers counters and hashes them, so results depend only on
the key and the counters, never on how the work is compiled or split.

JAX numbers the counters in two ways, and jaxon reproduces both bit for bit. The flag
`jax_threefry_partitionable` picks one (the key primitives record its value when they are
bound, and pass it here):

* partitionable (the default): the element at flat index i hashes the counter pair
  (hi(i), lo(i)) of its 64-bit index, so any shard of the output can be computed alone;
* original (the flag off, JAX's behaviour before 0.5): one counter array 0 … n-1 is cut in
  halves, the halves are hashed as pairs and the two result halves are laid end to end.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, shape_ops, slicing, utils

_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
                64: np.dtype(np.uint64)}

# ----------------------------------------------------------------------------- the primitive


def _threefry2x32_abstract_eval(*avals: ShapedArray) -> list[ShapedArray]:
  names = ("key1", "key2", "count1", "count2")
  for name, aval in zip(names, avals):
    if aval.dtype != np.uint32:
      raise TypeError(f"threefry2x32: {name} must have dtype uint32, got {aval.str_short()}.")
  shape = utils.broadcasting_shape("threefry2x32", *avals)
  return [ShapedArray(shape, np.uint32)] * 2


threefry2x32_p = utils.standard_multi_result_primitive("threefry2x32",
                                                       _threefry2x32_abstract_eval)

# Rotation distances of the rounds, alternating every four rounds, and the parity constant
# of the key schedule (Threefry's C240).
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA


def _rotate_left(x: Any, distance: Any) -> Any:
  return lax.bitwise_or(lax.shift_left(x, distance),
                        lax.shift_right_logical(x, lax.sub(np.uint32(32), distance)))


def _broadcast(*operands: Any) -> list[Any]:
  """`operands` broadcast to their common shape (rank-0 ones to any rank)."""
  shape = utils.broadcasting_shape("threefry2x32", *map(core.get_aval, operands))
  return [lax.broadcast_in_dim(v, shape, range(len(shape)) if np.ndim(v) else ())
          for v in operands]


def _threefry2x32_start(key1: Any, key2: Any, x1: Any, x2: Any) -> list[Any]:
  """The first key injection, and the key schedule arranged for the first group of rounds:
  group g adds ks[(g + 1) % 3] and ks[(g + 2) % 3] + g + 1 after its four rounds. The keys
  keep their own shape (usually scalars), which keeps the loop state small."""
  key1, key2 = _broadcast(key1, key2)
  x1, x2 = _broadcast(x1, x2, key1)[:2]
  ks = (key1, key2, lax.bitwise_xor(lax.bitwise_xor(key1, key2), np.uint32(_KEY_PARITY)))
  return [lax.add(x1, ks[0]), lax.add(x2, ks[1]), ks[1], ks[2], ks[0]]


def _threefry2x32_group(group: Any, x1: Any, x2: Any, ks_a: Any, ks_b: Any, ks_c: Any
                        ) -> list[Any]:
  """Four rounds (rotations chosen by the parity of `group`), then a key injection; the
  schedule rotates for the next group."""
  even = lax.eq(lax.rem(group, np.uint32(2)), np.uint32(0))
  for even_distance, odd_distance in zip(*_ROTATIONS):
    distance = lax.select(even, np.uint32(even_distance), np.uint32(odd_distance))
    x1 = lax.add(x1, x2)
    x2 = lax.bitwise_xor(_rotate_left(x2, distance), x1)
  next_group = lax.add(group, np.uint32(1))
  x1 = lax.add(x1, ks_a)
  x2 = lax.add(x2, lax.add(ks_b, next_group))
  return [next_group, x1, x2, ks_b, ks_c, ks_a]


_emit_start = mlir.lower_fun(_threefry2x32_start)
_emit_group = mlir.lower_fun(_threefry2x32_group)


def _threefry2x32_lowering(ctx: mlir.LoweringRuleContext, *operands: ir.Value
                           ) -> list[ir.Value]:
  """The five groups of four rounds as a `stablehlo.while`, as JAX lowers it on CPU: fully
  unrolled, XLA fuses the ~120 ops of the rounds into every consumer, and compiling a
  sampler like `randint` then takes seconds."""
  out_aval = ctx.avals_out[0]
  key_aval = ShapedArray(utils.broadcasting_shape("threefry2x32", *ctx.avals_in[:2]),
                         np.uint32)
  avals = [ShapedArray((), np.uint32)] + [out_aval] * 2 + [key_aval] * 3
  start = _emit_start(ctx.replace(avals_out=avals[1:]), *operands)
  types = [mlir.aval_to_ir_type(a) for a in avals]
  loop = hlo.WhileOp(types, [mlir.ir_constant(np.uint32(0)), *start])
  cond = loop.cond.blocks.append(*types)
  with ir.InsertionPoint(cond):
    hlo.return_([lax.compare_hlo(cond.arguments[0], mlir.ir_constant(np.uint32(5)), "LT",
                                 np.dtype(np.uint32))])
  body = loop.body.blocks.append(*types)
  with ir.InsertionPoint(body):
    hlo.return_(_emit_group(ctx.replace(avals_in=avals, avals_out=avals), *body.arguments))
  return [loop.results[1], loop.results[2]]


mlir.register_lowering(threefry2x32_p, _threefry2x32_lowering)


def _threefry2x32_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple:
  outs = threefry2x32_p.bind(*primals)
  return outs, [ad.Zero(core.get_aval(o).to_tangent_aval()) for o in outs]


ad.primitive_jvps[threefry2x32_p] = _threefry2x32_jvp

_broadcast_batcher = batching.broadcast_batcher(threefry2x32_p)


def _threefry2x32_batch(vals: Sequence[Any], dims: Sequence[int | None]) -> tuple:
  outs, dim = _broadcast_batcher(vals, dims)
  return outs, [dim, dim]


batching.primitive_batchers[threefry2x32_p] = _threefry2x32_batch

# ----------------------------------------------------------------------------- hashing arrays


def _key_words(key: Any) -> tuple[Any, Any]:
  return (slicing.index_in_dim(key, 0, keepdims=False),
          slicing.index_in_dim(key, 1, keepdims=False))


def threefry_2x32(key: Any, count: Any) -> Any:
  """Hashes every entry of the uint32 array `count` with the key `key` (uint32[2]), in the
  original layout: the flattened counts (padded with a zero to even length) are cut in
  halves, and the halves are hashed as pairs."""
  count = lax.asarray(count)
  if dtypes.dtype(key) != np.uint32 or dtypes.dtype(count) != np.uint32:
    raise TypeError(f"threefry_2x32 requires uint32 arguments, got key of dtype "
                    f"{dtypes.dtype(key)} and count of dtype {dtypes.dtype(count)}.")
  shape, size = np.shape(count), math.prod(np.shape(count))
  flat = shape_ops.reshape(count, (size,))
  odd = size % 2
  if odd:
    flat = shape_ops.concatenate([flat, np.zeros(1, np.uint32)], 0)
  half = (size + odd) // 2
  x1, x2 = threefry2x32_p.bind(*_key_words(key), slicing.slice_in_dim(flat, 0, half),
                               slicing.slice_in_dim(flat, half, 2 * half))
  out = shape_ops.concatenate([x1, x2], 0)
  return shape_ops.reshape(slicing.slice_in_dim(out, 0, size) if odd else out, shape)


def iota_2x32_shape(shape: Sequence[int]) -> tuple[Any, Any]:
  """The high and low uint32 words of each element's flat (row-major) index."""
  size = math.prod(shape)
  if size > 2 ** 32:
    raise NotImplementedError(f"random arrays of more than 2**32 elements (shape {shape}) "
                              "are not supported.")
  hi = lax.full(shape, 0, np.uint32)
  if not shape:
    return hi, hi
  strides = np.cumprod((1,) + tuple(shape[:0:-1]))[::-1]
  lo = None
  for dim, stride in enumerate(strides):
    term = lax.broadcasted_iota(np.uint32, shape, dim)
    term = term if stride == 1 else lax.mul(term, np.uint32(stride))
    lo = term if lo is None else lax.add(lo, term)
  return hi, lo


# ----------------------------------------------------------------------------- key operations


def threefry_seed(seed: Any) -> Any:
  """The key of each integer of `seed` (uint32[*seed.shape, 2]): (bits 32-63, bits 0-31)
  of its value as a signed or unsigned integer of its own width (so a 32-bit seed has a
  zero first word)."""
  seed = lax.asarray(seed)
  seed_dtype = dtypes.dtype(seed)
  if not dtypes.issubdtype(seed_dtype, np.integer):
    raise TypeError(f"PRNG key seed must be an integer; got dtype {seed_dtype}.")
  shape = np.shape(seed)
  if seed_dtype.itemsize == 8:
    high = lax.shift_right_logical(seed, np.array(32, seed_dtype))
  else:  # JAX shifts these by 32 too, which gives 0 for any narrower type
    high = lax.full(shape, 0, seed_dtype)
  words = [lax.convert_element_type(w, np.uint32) for w in (high, seed)]
  return shape_ops.concatenate([shape_ops.expand_dims(w, (len(shape),)) for w in words],
                               len(shape))


def threefry_split(key: Any, shape: Sequence[int], partitionable: bool) -> Any:
  """`shape` new keys (uint32[*shape, 2]) derived from `key`, in the bit layout of
  `jax_threefry_partitionable`'s value `partitionable`."""
  shape = tuple(shape)
  if partitionable:
    return shape_ops.concatenate(
        [shape_ops.expand_dims(w, (len(shape),))
         for w in threefry2x32_p.bind(*_key_words(key), *iota_2x32_shape(shape))], len(shape))
  counts = lax.iota(np.uint32, math.prod(shape) * 2)
  return shape_ops.reshape(threefry_2x32(key, counts), (*shape, 2))


def threefry_fold_in(key: Any, data: Any) -> Any:
  """A new key from `key` and the uint32 scalar `data` (the same in both layouts)."""
  return threefry_2x32(key, threefry_seed(data))


def threefry_random_bits(key: Any, bit_width: int, shape: Sequence[int], partitionable: bool
                         ) -> Any:
  """An array of `shape` of random unsigned integers `bit_width` bits wide, in the bit
  layout of `jax_threefry_partitionable`'s value `partitionable`."""
  if bit_width not in _UINT_DTYPES:
    raise TypeError(f"random bits must be 8, 16, 32 or 64 bits wide, got {bit_width}.")
  shape = tuple(shape)
  if partitionable:
    return _random_bits_partitionable(key, bit_width, shape)
  return _random_bits_original(key, bit_width, shape)


def _random_bits_partitionable(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
  bits1, bits2 = threefry2x32_p.bind(*_key_words(key), *iota_2x32_shape(shape))
  if bit_width == 64:
    return _join_words(bits1, bits2)
  bits = lax.bitwise_xor(bits1, bits2)
  return bits if bit_width == 32 else lax.convert_element_type(bits, _UINT_DTYPES[bit_width])


def _random_bits_original(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
  size = math.prod(shape)
  words = -(-bit_width * size // 32)
  if words >= np.iinfo(np.uint32).max:
    raise NotImplementedError(f"random arrays of {words} or more 32-bit words (shape "
                              f"{shape}, {bit_width} bits each) are not supported.")
  bits = threefry_2x32(key, lax.iota(np.uint32, words))
  if bit_width == 64:
    bits = _join_words(slicing.slice_in_dim(bits, 0, size),
                       slicing.slice_in_dim(bits, size, 2 * size))
  elif bit_width < 32:
    bits = _unpack_words(bits, bit_width, size)
  return shape_ops.reshape(bits, shape)


def _join_words(high: Any, low: Any) -> Any:
  high, low = (lax.convert_element_type(w, np.uint64) for w in (high, low))
  return lax.bitwise_or(lax.shift_left(high, np.uint64(32)), low)


def _unpack_words(words: Any, bit_width: int, size: int) -> Any:
  """The first `size` `bit_width`-bit pieces of the uint32 `words`, least significant piece
  of each word first (a little-endian view of the words as narrower integers)."""
  per_word = 32 // bit_width
  count = np.shape(words)[0]
  shifts = lax.mul(lax.broadcasted_iota(np.uint32, (count, per_word), 1), np.uint32(bit_width))
  pieces = lax.shift_right_logical(lax.broadcast_in_dim(words, (count, per_word), (0,)), shifts)
  pieces = lax.bitwise_and(pieces, np.uint32(2 ** bit_width - 1))
  pieces = shape_ops.reshape(pieces, (count * per_word,))
  return lax.convert_element_type(slicing.slice_in_dim(pieces, 0, size),
                                  _UINT_DTYPES[bit_width])
