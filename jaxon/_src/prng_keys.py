"""Typed PRNG key arrays: the `key<fry>` dtype and the primitives on arrays of keys.

`jaxon.random.key(0)` is an array of shape () and dtype `key<fry>`, an extended dtype (see
`dtypes.ExtendedDType`) whose elements are the two uint32 words of a threefry key. Shape
operations (indexing, reshape, concatenate, `where`, vmap's batching) treat a key as one
element; arithmetic is refused. The key operations are primitives, named and printed as
JAX prints them, so jaxprs of programs with keys read the same:

- `random_seed[impl=fry]`: integer seeds to keys;
- `random_wrap[impl=fry]` and `random_unwrap`: uint32[..., 2] data to keys and back;
- `random_split[shape]`, `random_fold_in`, `random_bits[bit_width shape]`: the threefry
  operations of `prng.py`, applied to every key of an array of keys;
- `random_clone`: the identity (JAX's key-reuse checker tells clones apart).

Each primitive takes keys of any shape, so vmap batches it by binding it to the batch of
keys; the lowering maps the single-key threefry function over the keys with the batching
interpreter, which is what keeps a batch of keys bit-identical to the keys one at a time.

`random_split` and `random_bits` depend on the bit layout `jax_threefry_partitionable`.
They record its value when bound, as a `partitionable` param that jaxprs do not print (JAX
reads the flag when it lowers, which its caches key on): an eager operation that runs
later, or a jaxpr lowered later, keeps the layout it was traced under.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, dtypes, prng
from jaxon._src.config import config
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import batching, mlir
from jaxon._src.lax import lax, shape_ops, utils
from jaxon._src.xla import deferred


class PRNGImpl(NamedTuple):
  """A PRNG: the shape of its uint32 key data and its single-key operations."""
  name: str
  tag: str
  key_shape: tuple[int, ...]
  seed: Callable[[Any], Any]  # integer seeds (any shape) -> their keys' data
  split: Callable[[Any, tuple[int, ...], bool], Any]  # key, shape, bit layout
  fold_in: Callable[[Any, Any], Any]
  random_bits: Callable[[Any, int, tuple[int, ...], bool], Any]  # ..., bit layout

  def __str__(self) -> str:  # as jaxpr params print it: random_seed[impl=fry]
    return self.tag


threefry_prng_impl = PRNGImpl("threefry2x32", "fry", (2,), prng.threefry_seed,
                              prng.threefry_split, prng.threefry_fold_in,
                              prng.threefry_random_bits)


def resolve_impl(impl: Any) -> PRNGImpl:
  """The PRNG `impl` names (None: the default, threefry2x32), or whose keys' dtype it is.
  JAX's others (rbg, philox) are not implemented: a ValueError, as JAX raises for a name it
  does not know."""
  if isinstance(impl, KeyTy):
    impl = impl.impl
  if impl is None or impl == threefry_prng_impl.name or impl is threefry_prng_impl:
    return threefry_prng_impl
  raise ValueError(f'unrecognized PRNG implementation "{impl}": `impl` must be None or '
                   f'"threefry2x32", the only PRNG jaxon implements.')


class KeyTy(dtypes.ExtendedDType):
  """The dtype of arrays of keys of one PRNG, `key<fry>` for threefry2x32."""

  type = dtypes.prng_key
  element_dtype = np.dtype(np.uint32)

  def __init__(self, impl: PRNGImpl):
    self.impl = impl
    self.name = f"key<{impl.tag}>"
    self.element_shape = impl.key_shape

  def full(self, shape: tuple[int, ...], fill_value: Any) -> Any:
    data = lax.full((*shape, *self.element_shape), fill_value, self.element_dtype)
    return random_wrap(data, self.impl)

  def __eq__(self, other: object) -> bool:
    return type(other) is KeyTy and other.impl == self.impl

  def __hash__(self) -> int:
    return hash((KeyTy, self.impl.name))


def is_key_dtype(dtype: Any) -> bool:
  return dtypes.issubdtype(dtype, dtypes.prng_key)


def check_key_data(aval: ShapedArray, impl: PRNGImpl) -> None:
  """Raises JAX's TypeError when `aval` cannot be the data of keys of `impl`."""
  problem = None
  if aval.ndim < len(impl.key_shape):
    problem = f"expected key_data.ndim >= {len(impl.key_shape)}; got ndim={aval.ndim}"
  elif aval.dtype != np.uint32:
    problem = f"expected key_data.dtype = uint32; got dtype={aval.dtype}"
  elif aval.shape[aval.ndim - len(impl.key_shape):] != impl.key_shape:
    problem = (f"expected key_data.shape to end with {impl.key_shape}; got "
               f"shape={aval.shape} for impl={impl.name}")
  if problem is not None:
    raise TypeError(f"jaxon encountered invalid PRNG key data: {problem}")


# ----------------------------------------------------------------------------- helpers


def _key_primitive(name: str, abstract_eval: Callable[..., ShapedArray],
                   lowering: mlir.LoweringRule, batcher: Callable | None = None
                   ) -> core.Primitive:
  prim = core.Primitive(name)
  prim.def_impl(functools.partial(deferred.apply_primitive, prim))
  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, lowering)
  if batcher is None:  # the outputs' leading dimensions are the inputs'
    batching.defvectorized(prim)
  else:
    batching.primitive_batchers[prim] = batcher
  return prim


def _check_keys(name: str, keys: ShapedArray) -> KeyTy:
  if not is_key_dtype(keys.dtype):
    raise TypeError(f"{name} takes an array of PRNG keys (dtype key<fry>), got "
                    f"{keys.str_short()}.")
  return keys.dtype


def _on_physical(fun: Callable[..., Any]) -> mlir.LoweringRule:
  """A lowering rule that traces `fun` on the physical avals of the equation: keys arrive
  as their uint32 data, `fun` returns the output's data, and it is told the PRNG (`impl`)
  when the equation's params do not say it."""
  rule = mlir.lower_fun(fun, multiple_results=False)

  def physical_rule(ctx: mlir.LoweringRuleContext, *args: ir.Value, **params: Any
                    ) -> Sequence[ir.Value]:
    physical = ctx.replace(avals_in=[core.physical_aval(a) for a in ctx.avals_in],
                           avals_out=[core.physical_aval(a) for a in ctx.avals_out])
    if "impl" not in params:
      params["impl"] = ctx.avals_in[0].dtype.impl
    return rule(physical, *args, **params)
  return physical_rule


def _identity_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, **params: Any
                       ) -> list[ir.Value]:
  return [x]  # the data does not change, only how the program types it


def _map_keys(fun: Callable[..., Any], batch_shape: tuple[int, ...], *operands: Any) -> Any:
  """`fun` applied to each element of the leading `batch_shape` of `operands` (key data and
  messages), the results stacked: vmap over the flattened batch dimensions."""
  if not batch_shape:
    return fun(*operands)
  size = math.prod(batch_shape)
  flat = [shape_ops.reshape(x, (size, *np.shape(x)[len(batch_shape):])) for x in operands]
  (out,), (dim,) = batching.batch_flat(lambda *xs: [fun(*xs)], flat, [0] * len(flat), size,
                                       None)
  out = batching.bdim_at_front(out, dim, size)
  return shape_ops.reshape(out, batch_shape + np.shape(out)[1:])


# ----------------------------------------------------------------------------- seed, wrap


def _seed_abstract_eval(seeds: ShapedArray, *, impl: PRNGImpl) -> ShapedArray:
  if not dtypes.is_integer(seeds.dtype):
    raise TypeError(f"PRNG key seed must be an integer; got {seeds.str_short()}.")
  return ShapedArray(seeds.shape, KeyTy(impl))


random_seed_p = _key_primitive(
    "random_seed", _seed_abstract_eval,
    _on_physical(lambda seeds, *, impl: impl.seed(seeds)))


def _wrap_abstract_eval(data: ShapedArray, *, impl: PRNGImpl) -> ShapedArray:
  check_key_data(data, impl)
  return ShapedArray(data.shape[:data.ndim - len(impl.key_shape)], KeyTy(impl))


def _wrap_batch(vals: Sequence[Any], dims: Sequence[int | None], *, impl: PRNGImpl
                ) -> tuple[Any, int]:
  """The batch dimension may be one of the data's trailing (key) dimensions: it goes
  first."""
  (data,), (dim,) = vals, dims
  return random_wrap_p.bind(batching.moveaxis(data, dim, 0), impl=impl), 0


random_wrap_p = _key_primitive("random_wrap", _wrap_abstract_eval, _identity_lowering,
                               _wrap_batch)


def _unwrap_abstract_eval(keys: ShapedArray) -> ShapedArray:
  _check_keys("random_unwrap", keys)
  return core.physical_aval(keys)


random_unwrap_p = _key_primitive("random_unwrap", _unwrap_abstract_eval, _identity_lowering)


def _clone_abstract_eval(keys: ShapedArray) -> ShapedArray:
  _check_keys("random_clone", keys)
  return keys


random_clone_p = _key_primitive("random_clone", _clone_abstract_eval, _identity_lowering)


# ----------------------------------------------------------------------------- split, fold_in, bits


def _split_abstract_eval(keys: ShapedArray, *, shape: tuple[int, ...], partitionable: bool
                         ) -> ShapedArray:
  return ShapedArray(keys.shape + shape, _check_keys("random_split", keys))


def _batch_shape(keys: Any, impl: PRNGImpl) -> tuple[int, ...]:
  """The shape of the keys whose data is `keys`."""
  return np.shape(keys)[:np.ndim(keys) - len(impl.key_shape)]


def _split_lowering(keys: Any, *, shape: tuple[int, ...], partitionable: bool,
                    impl: PRNGImpl) -> Any:
  return _map_keys(lambda k: impl.split(k, shape, partitionable), _batch_shape(keys, impl),
                   keys)


random_split_p = _key_primitive("random_split", _split_abstract_eval,
                                _on_physical(_split_lowering))


def _fold_in_abstract_eval(keys: ShapedArray, msgs: ShapedArray) -> ShapedArray:
  dtype = _check_keys("random_fold_in", keys)
  if msgs.dtype != np.uint32:
    raise TypeError(f"random_fold_in: messages must be uint32, got {msgs.str_short()}.")
  return ShapedArray(utils.broadcasting_shape("random_fold_in", keys, msgs), dtype)


def _fold_in_lowering(keys: Any, msgs: Any, *, impl: PRNGImpl) -> Any:
  """Keys and messages broadcast to one shape (rank-0 ones to any), then folded pairwise."""
  key_shape, msg_shape = _batch_shape(keys, impl), np.shape(msgs)
  shape = np.broadcast_shapes(key_shape, msg_shape)
  if key_shape != shape:
    element_dims = range(len(shape), len(shape) + len(impl.key_shape))
    keys = lax.broadcast_in_dim(keys, shape + impl.key_shape,
                                [*(range(len(shape)) if key_shape else ()), *element_dims])
  if msg_shape != shape:
    msgs = lax.broadcast_in_dim(msgs, shape, range(len(shape)) if msg_shape else ())
  return _map_keys(impl.fold_in, shape, keys, msgs)


random_fold_in_p = _key_primitive("random_fold_in", _fold_in_abstract_eval,
                                  _on_physical(_fold_in_lowering))
batching.defbroadcasting(random_fold_in_p)


def _bits_abstract_eval(keys: ShapedArray, *, bit_width: int, shape: tuple[int, ...],
                        partitionable: bool) -> ShapedArray:
  _check_keys("random_bits", keys)
  if bit_width not in (8, 16, 32, 64):
    raise TypeError(f"random_bits: bit_width must be 8, 16, 32 or 64, got {bit_width}.")
  return ShapedArray(keys.shape + shape, np.dtype(f"uint{bit_width}"))


def _bits_lowering(keys: Any, *, bit_width: int, shape: tuple[int, ...], partitionable: bool,
                   impl: PRNGImpl) -> Any:
  return _map_keys(lambda k: impl.random_bits(k, bit_width, shape, partitionable),
                   _batch_shape(keys, impl), keys)


random_bits_p = _key_primitive("random_bits", _bits_abstract_eval,
                               _on_physical(_bits_lowering))


def _pp_without_layout(eqn: core.JaxprEqn, context: core.PrintContext) -> Any:
  """The equation as JAX prints it: without the recorded bit layout."""
  params = {k: v for k, v in eqn.params.items() if k != "partitionable"}
  return core.pp_standard_eqn(eqn.replace(params=params), context)


core.pp_eqn_rules[random_split_p] = _pp_without_layout
core.pp_eqn_rules[random_bits_p] = _pp_without_layout


# ----------------------------------------------------------------------------- functions


def random_seed(seeds: Any, impl: PRNGImpl) -> Any:
  return random_seed_p.bind(seeds, impl=impl)


def random_wrap(data: Any, impl: PRNGImpl) -> Any:
  return random_wrap_p.bind(data, impl=impl)


def random_unwrap(keys: Any) -> Any:
  return random_unwrap_p.bind(keys)


def random_clone(keys: Any) -> Any:
  return random_clone_p.bind(keys)


def random_split(keys: Any, shape: tuple[int, ...]) -> Any:
  return random_split_p.bind(keys, shape=tuple(shape),
                             partitionable=config.jax_threefry_partitionable)


def random_fold_in(keys: Any, msgs: Any) -> Any:
  return random_fold_in_p.bind(keys, lax.convert_element_type(msgs, np.uint32))


def random_bits(keys: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
  return random_bits_p.bind(keys, bit_width=bit_width, shape=tuple(shape),
                            partitionable=config.jax_threefry_partitionable)
