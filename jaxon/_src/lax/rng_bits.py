"""XLA's own random number generators: `rng_bit_generator` (stateless: a key in, the next
key and random bits out) and `rng_uniform` (XLA's stateful `rng` op, whose stream depends on
the compiled program). `jaxon.random` does not use them (its threefry is bit-exact with JAX);
they are the low-level ops JAX exposes in `lax`.

Both produce values that do not depend differentiably on their inputs: they have no JVP
(integer outputs) or a zero one.
"""
from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import slicing, utils
from jaxon._src.lax.sharding_constraint import apply_out_sharding
from jaxon._src.xla import deferred


class RandomAlgorithm(enum.IntEnum):
  """The algorithm `rng_bit_generator` runs (its key layout: four uint32 or two uint64)."""
  RNG_DEFAULT = 0  # the platform's choice (Philox on CPU)
  RNG_THREE_FRY = 1
  RNG_PHILOX = 2

  def __str__(self) -> str:
    return self.name


_BIT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_HLO_ALGORITHM = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                  RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                  RandomAlgorithm.RNG_PHILOX: "PHILOX"}


# ----------------------------------------------------------------------------- rng_bit_generator

def rng_bit_generator(key: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
  """`(new_key, bits)`: random unsigned integers of `shape` and `dtype` from `key` (u32[4]
  or u64[2]) with XLA's RngBitGenerator, and the key to use next. Deterministic for a key;
  the streams are XLA's, not `jaxon.random`'s."""
  if out_sharding is not None:  # the bits laid out as asked; the key is tiny
    key, bits = rng_bit_generator(key, shape, dtype, algorithm)
    return key, apply_out_sharding(bits, out_sharding, "rng_bit_generator")
  shape = utils.canonicalize_shape(shape, "of rng_bit_generator")
  dtype = np.dtype(dtype)
  if dtype not in _BIT_DTYPES:
    raise TypeError(f"rng_bit_generator: unsupported dtype {dtype.name}; use one of "
                    "uint8, uint16, uint32, uint64.")
  return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype,
                                        algorithm=RandomAlgorithm(algorithm),
                                        out_sharding=None))


def _rng_bit_generator_abstract_eval(key: ShapedArray, *, shape: tuple[int, ...],
                                     dtype: np.dtype, algorithm: RandomAlgorithm,
                                     out_sharding: Any) -> list[ShapedArray]:
  if (key.shape, key.dtype) not in (((4,), np.dtype(np.uint32)), ((2,), np.dtype(np.uint64))):
    raise TypeError(f"rng_bit_generator key must be u32[4] or u64[2], got "
                    f"{key.str_short()}.")
  return [key, ShapedArray(shape, dtype)]


rng_bit_generator_p = utils.standard_multi_result_primitive(
    "rng_bit_generator", _rng_bit_generator_abstract_eval)


def _rng_bit_generator_lowering(ctx: mlir.LoweringRuleContext, key: ir.Value, *,
                                shape: tuple[int, ...], dtype: np.dtype,
                                algorithm: RandomAlgorithm, out_sharding: Any
                                ) -> list[ir.Value]:
  """XLA's op takes the key as u64[2]: a u32[4] key is bitcast there and back."""
  u32, u64 = ir.IntegerType.get_unsigned(32), ir.IntegerType.get_unsigned(64)
  key_is_u32 = ctx.avals_in[0].dtype == np.uint32
  if key_is_u32:
    key = hlo.bitcast_convert(ir.RankedTensorType.get([2], u64),
                              hlo.reshape(ir.RankedTensorType.get([2, 2], u32), key))
  out_key, bits = hlo.RngBitGeneratorOp(
      key.type, ir.RankedTensorType.get(shape, mlir.dtype_to_ir_type(dtype)),
      hlo.RngAlgorithmAttr.get(_HLO_ALGORITHM[algorithm]), key).results
  if key_is_u32:
    out_key = hlo.reshape(ir.RankedTensorType.get([4], u32),
                          hlo.bitcast_convert(ir.RankedTensorType.get([2, 2], u32), out_key))
  return [out_key, bits]


mlir.register_lowering(rng_bit_generator_p, _rng_bit_generator_lowering)


def _rng_bit_generator_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                                  shape: tuple[int, ...], **params: Any
                                  ) -> tuple[list[Any], list[int | None]]:
  """As JAX: XLA's op takes a single key, so a batch of keys draws all the batch's bits
  from the first key (as one (batch, *shape) draw) and advances only that key. Bits are
  therefore not those of a per-key loop: vmap over `jaxon.random` keys, not these."""
  (keys,), (d,) = vals, dims
  keys = batching.moveaxis(keys, d, 0)
  first = slicing.index_in_dim(keys, 0, keepdims=False)
  new_key, bits = rng_bit_generator_p.bind(first, shape=(np.shape(keys)[0], *shape),
                                           **params)
  return [slicing.dynamic_update_index_in_dim(keys, new_key, 0, 0), bits], [0, 0]


batching.primitive_batchers[rng_bit_generator_p] = _rng_bit_generator_batch_rule


# ----------------------------------------------------------------------------- rng_uniform

def rng_uniform(a: Any, b: Any, shape: Sequence[int]) -> Any:
  """Uniform values in [a, b) of `shape` from XLA's stateful `rng` op (scalars `a`, `b` of
  one dtype). The stream depends on the compiled program; prefer `jaxon.random`."""
  return rng_uniform_p.bind(a, b, shape=utils.canonicalize_shape(shape, "of rng_uniform"))


def _rng_uniform_abstract_eval(a: ShapedArray, b: ShapedArray, *, shape: tuple[int, ...]
                               ) -> ShapedArray:
  if a.dtype != b.dtype:
    raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got "
                     f"{a.dtype} and {b.dtype}.")
  if a.shape != () or b.shape != ():
    raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and "
                     f"{b.shape}.")
  if not (dtypes.is_inexact(a.dtype) or dtypes.is_integer(a.dtype)):
    raise TypeError(f"rng_uniform needs a numeric dtype, got {a.dtype}.")
  return ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)


rng_uniform_p = core.Primitive("rng_uniform")
rng_uniform_p.def_impl(functools.partial(deferred.apply_primitive, rng_uniform_p))
rng_uniform_p.def_abstract_eval(_rng_uniform_abstract_eval)
ad.defjvp(rng_uniform_p, None, None)


def _rng_uniform_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, b: ir.Value, *,
                          shape: tuple[int, ...]) -> list[ir.Value]:
  dims = mlir.ir_constant(np.array(ctx.avals_out[0].shape, np.int64))
  return [hlo.rng(a, b, dims, hlo.RngDistributionAttr.get("UNIFORM"))]


mlir.register_lowering(rng_uniform_p, _rng_uniform_lowering)
