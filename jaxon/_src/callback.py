"""Calling Python from jaxon programs: `pure_callback`, `io_callback`, and the lowering the
debug callbacks (`debugging.py`) share.

Eagerly a callback primitive calls its function right away. Under `jit` it lowers to a
custom call of `xla_ffi_python_cpu_callback`, an XLA CPU target built into jaxlib: the
call's `index` attribute picks a Python function from the list the program is compiled
with (`ModuleContext.host_callbacks`, handed to XLA and kept alive by the executable).
XLA passes the operands as NumPy arrays and takes back NumPy arrays.

Functions see jaxon Arrays and may return anything NumPy converts; results are checked
against the declared shapes and dtypes (a mismatch raises, as in JAX, a runtime error).
"""
from __future__ import annotations

import dataclasses
import functools
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.xla import deferred
from jaxon._src.xla.array import Array, device_put_numpy
from jaxon._src.xla.executable import as_array

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


@dataclasses.dataclass(frozen=True)
class _FlatCallback:
  """The user's function called with flat arguments, returning flat results. A class,
  not a closure, so that the same function with the same argument structure gives equal
  params (and prints as JAX prints it)."""
  callback_func: Callable[..., Any]
  in_tree: tree_util.PyTreeDef  # of (args, kwargs)

  def __call__(self, *flat_args: Any) -> list[Any]:
    args, kwargs = tree_util.tree_unflatten(self.in_tree, flat_args)
    return tree_util.tree_leaves(self.callback_func(*args, **kwargs))


# ----------------------------------------------------------------------------- running


def host_arrays(values: Sequence[Any]) -> list[Array]:
  """Callback operands as the jaxon Arrays a function receives. XLA's NumPy operands are
  only valid during the call, so they are copied."""
  return [x if type(x) is Array else
          as_array(x) if not isinstance(x, np.ndarray) else
          device_put_numpy(x, x.dtype) for x in values]


def checked_results(outs: Sequence[Any], result_avals: Sequence[ShapedArray]
                    ) -> tuple[np.ndarray, ...]:
  """A function's results as NumPy arrays of the declared avals (64-bit values narrowed
  when x64 is off, as jaxon narrows every input); RuntimeError naming the first mismatch."""
  if len(outs) != len(result_avals):
    raise RuntimeError("Mismatched number of outputs from callback. "
                       f"Expected: {len(result_avals)}, Actual: {len(outs)}")
  results = []
  for i, (out, aval) in enumerate(zip(outs, result_avals)):
    value = np.asarray(out)
    value = value.astype(dtypes.canonicalize_dtype(value.dtype), copy=False)
    if value.shape != aval.shape:
      raise RuntimeError(f"Incorrect output shape for return value #{i}: "
                         f"Expected: {aval.shape}, Actual: {value.shape}")
    if value.dtype != aval.dtype:
      raise RuntimeError(f"Incorrect output dtype for return value #{i}: "
                         f"Expected: {aval.dtype}, Actual: {value.dtype}")
    results.append(value if value.flags.c_contiguous else value.copy(order="C"))
  return tuple(results)


def _call_eagerly(callback: _FlatCallback, args: Sequence[Any],
                  result_avals: Sequence[ShapedArray]) -> list[Array]:
  """Runs a callback with results now. Its errors surface as they do from a compiled
  program (JAX runs eager callbacks compiled): as XLA's runtime error, with the
  function's traceback in the message."""
  try:
    results = checked_results(callback(*host_arrays(args)), result_avals)
  except Exception as e:
    raise _jax.JaxRuntimeError("INTERNAL: CpuCallback error calling callback: "
                               + traceback.format_exc()) from e
  return [device_put_numpy(r, r.dtype) for r in results]


def _host_function(callback: Callable[..., Sequence[Any]],
                   result_avals: Sequence[ShapedArray], takes_token: bool
                   ) -> Callable[..., tuple]:
  """What XLA calls: NumPy operands in, checked NumPy results out (after the token, passed
  through, when the call has one)."""
  def call(*operands: np.ndarray) -> tuple[np.ndarray, ...]:
    return checked_results(callback(*host_arrays(operands)), result_avals)

  def call_with_token(token: Any, *operands: np.ndarray) -> tuple[Any, ...]:
    return (token, *call(*operands))
  return call_with_token if takes_token else call


def emit_python_callback(ctx: mlir.LoweringRuleContext, callback: Callable[..., Sequence[Any]],
                         operands: Sequence[ir.Value], has_side_effect: bool
                         ) -> list[ir.Value]:
  """The custom call that runs `callback` (jaxon Arrays in, a sequence of values of
  `ctx.avals_out` out) on the host. A call with a side effect takes the block's effect
  token and gives the next (effects happen in program order); one without may be dropped
  by XLA when its results are unused."""
  module = ctx.module_context
  module.host_callbacks.append(_host_function(callback, ctx.avals_out, has_side_effect))
  result_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  operand_layouts = [_row_major(a.ndim) for a in ctx.avals_in]
  result_layouts = [_row_major(a.ndim) for a in ctx.avals_out]
  operands = list(operands)
  if has_side_effect:
    result_types.insert(0, hlo.TokenType.get())
    operands.insert(0, module.effect_token())
    operand_layouts.insert(0, _row_major(0))
    result_layouts.insert(0, _row_major(0))
  u64, i32 = ir.IntegerType.get_unsigned(64), ir.IntegerType.get_signless(32)
  index = ir.IntegerAttr.get(u64, len(module.host_callbacks) - 1)
  op = hlo.CustomCallOp(
      result_types, operands, call_target_name="xla_ffi_python_cpu_callback",
      has_side_effect=has_side_effect, api_version=ir.IntegerAttr.get(i32, 4),
      backend_config=ir.DictAttr.get({"index": index}),
      operand_layouts=ir.ArrayAttr.get(operand_layouts),
      result_layouts=ir.ArrayAttr.get(result_layouts))
  results = list(op.results)
  if has_side_effect:
    module.set_effect_token(results.pop(0))
  return results


def _row_major(ndim: int) -> ir.Attribute:
  """XLA's minor-to-major layout of a C-ordered array (what NumPy hands over); a token's
  is empty."""
  return ir.DenseIntElementsAttr.get(np.arange(ndim - 1, -1, -1, dtype=np.int64),
                                     type=ir.IndexType.get())


def effects_barrier() -> None:
  """Waits until every effect issued so far has happened. Jitted programs with effects
  finish before their call returns, so this runs the pending eager work and flushes what
  callbacks printed to a buffered stdout."""
  deferred.flush()
  sys.stdout.flush()


# ----------------------------------------------------------------------------- arguments


def _result_avals(result_shape_dtypes: Any) -> tuple[list[ShapedArray], Any]:
  """The flat avals of a pytree of objects with `shape` and `dtype`, and its structure."""
  leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
  avals = []
  for leaf in leaves:
    dtype = np.dtype(leaf.dtype)
    if dtypes.canonicalize_dtype(dtype) != dtype:
      raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                       "`jax_enable_x64` is disabled")
    avals.append(ShapedArray(leaf.shape, dtype))
  return avals, tree


def _bind_callback(primitive: core.Primitive, callback: Callable[..., Any],
                   result_shape_dtypes: Any, args: tuple, kwargs: dict, **params: Any) -> Any:
  if not callable(callback):
    raise TypeError(f"the callback of {primitive.name} must be callable, but got an object "
                    f"of type {type(callback)}")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  avals, out_tree = _result_avals(result_shape_dtypes)
  outs = primitive.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                        result_avals=tuple(avals), sharding=None, **params)
  return tree_util.tree_unflatten(out_tree, outs)


# ----------------------------------------------------------------------------- pure_callback

pure_callback_p = core.Primitive("pure_callback")
pure_callback_p.multiple_results = True


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any) -> Any:
  """Calls a Python function that computes arrays from arrays, inside any transformation.

  The function is assumed pure: under `jit` it may run fewer times than written (not at
  all when its results are unused) or more. It receives jaxon Arrays and returns a pytree
  of arrays matching `result_shape_dtypes` (leaves with `shape` and `dtype`, such as
  `ShapeDtypeStruct`). It cannot be differentiated (wrap it in `custom_jvp`). Under `vmap`,
  `vmap_method` says how it is called: "sequential" (once per example, in a loop),
  "sequential_unrolled" (the same, unrolled), "expand_dims" (once, unbatched arguments
  given a leading axis of size 1), "broadcast_all" (once, every argument broadcast to the
  batch), "legacy_vectorized" (once, unbatched arguments unchanged); None refuses `vmap`.

  Example:
    >>> pure_callback(lambda x: np.sin(x), ShapeDtypeStruct((3,), np.float32), jnp.ones(3))
    Array([0.841471, 0.841471, 0.841471], dtype=float32)
  """
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  if sharding is not None:
    raise NotImplementedError("pure_callback: jaxon runs on one device; pass sharding=None")
  return _bind_callback(pure_callback_p, callback, result_shape_dtypes, args, kwargs,
                        vmap_method=vmap_method)


def _pure_callback_impl(*args: Any, callback: _FlatCallback,
                        result_avals: tuple[ShapedArray, ...], sharding: Any,
                        vmap_method: str | None) -> list[Array]:
  return _call_eagerly(callback, args, result_avals)


def _callback_abstract_eval(*avals: ShapedArray, result_avals: tuple[ShapedArray, ...],
                                 **params: Any) -> list[ShapedArray]:
  return list(result_avals)


def _pure_callback_jvp(*args: Any, **params: Any) -> Any:
  raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")


def _pure_callback_transpose(*args: Any, **params: Any) -> Any:
  raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                   "use callbacks while taking gradients.")


def _pure_callback_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value,
                            callback: _FlatCallback, **params: Any) -> list[ir.Value]:
  return emit_python_callback(ctx, callback, args, has_side_effect=False)


def batch_by_vmap_method(primitive: core.Primitive, axis_data: batching.AxisData,
                         args: Sequence[Any], dims: Sequence[int | None], *,
                         vmap_method: str | None, result_avals: tuple[ShapedArray, ...],
                         relayout: Callable[[dict, Sequence[int | None], str], dict] | None
                         = None, **params: Any) -> tuple[list[Any], list[int]]:
  """JAX's `vmap_method` for a call it cannot see into (`pure_callback`, `ffi_call`): one
  call per example in a loop, or one call on arguments batched along a new leading axis
  (an unbatched one given a leading axis of 1, or of the batch size for "broadcast_all";
  left as it is for "legacy_vectorized"). `relayout` adjusts the batched call's params."""
  size = axis_data.size
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  batched_avals = tuple(a.update(shape=(size, *a.shape)) for a in result_avals)
  if vmap_method in ("sequential", "sequential_unrolled"):
    outs = _sequential(primitive, args, dims, unroll=vmap_method != "sequential",
                       vmap_method=vmap_method, result_avals=result_avals, **params)
  elif vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
    if vmap_method != "legacy_vectorized":
      lead = size if vmap_method == "broadcast_all" else 1
      args = [lax.broadcast(x, (lead,)) if d is None else x for x, d in zip(args, dims)]
    if relayout is not None:
      params = relayout(params, dims, vmap_method)
    outs = primitive.bind(*args, vmap_method=vmap_method, result_avals=batched_avals, **params)
  else:
    raise NotImplementedError(
        f"vmap is only supported for the {primitive.name} primitive when vmap_method is one "
        "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got {vmap_method=}.")
  return list(outs), [0] * len(outs)


def _sequential(primitive: core.Primitive, args: Sequence[Any], dims: Sequence[int | None],
                unroll: bool, **params: Any) -> list[Any]:
  """One call per example, in a `scan` over the batched arguments (batch axis first)."""
  batched = [x for x, d in zip(args, dims) if d is not None]

  def body(carry: tuple, examples: list[Any]) -> tuple[tuple, list[Any]]:
    it = iter(examples)
    return carry, primitive.bind(*[x if d is None else next(it) for x, d in zip(args, dims)],
                                 **params)
  _, outs = scan(body, (), batched, unroll=unroll)
  return outs


pure_callback_p.def_impl(_pure_callback_impl)
pure_callback_p.def_abstract_eval(_callback_abstract_eval)
ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp
ad.primitive_transposes[pure_callback_p] = _pure_callback_transpose
batching.fancy_primitive_batchers[pure_callback_p] = functools.partial(
    batch_by_vmap_method, pure_callback_p)
mlir.register_lowering(pure_callback_p, _pure_callback_lowering)


# ----------------------------------------------------------------------------- io_callback

io_callback_p = core.Primitive("io_callback")
io_callback_p.multiple_results = True
io_callback_p.effectful = True


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
  """Calls a Python function with side effects (I/O, state) and returns its arrays.

  Unlike `pure_callback` it always runs, however its results are used. With `ordered`,
  calls happen in program order, across jitted calls too; ordered calls cannot be
  batched by `vmap` (unordered ones run once per example). It cannot be differentiated.
  """
  if sharding is not None:
    raise NotImplementedError("io_callback: jaxon runs on one device; pass sharding=None")
  return _bind_callback(io_callback_p, callback, result_shape_dtypes, args, kwargs,
                        ordered=bool(ordered))


def _io_callback_impl(*args: Any, callback: _FlatCallback,
                      result_avals: tuple[ShapedArray, ...], sharding: Any, ordered: bool
                      ) -> list[Array]:
  return _call_eagerly(callback, args, result_avals)


def _io_callback_jvp(*args: Any, **params: Any) -> Any:
  raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(*args: Any, **params: Any) -> Any:
  raise ValueError("IO callbacks do not support transpose.")


def _io_callback_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value,
                          callback: _FlatCallback, **params: Any) -> list[ir.Value]:
  return emit_python_callback(ctx, callback, args, has_side_effect=True)


def _io_callback_batch(args: Sequence[Any], dims: Sequence[int | None], *, ordered: bool,
                       **params: Any) -> tuple[list[Any], list[int]]:
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  outs = _sequential(io_callback_p, args, dims, unroll=False, ordered=False, **params)
  return outs, [0] * len(outs)


io_callback_p.def_impl(_io_callback_impl)
io_callback_p.def_abstract_eval(_callback_abstract_eval)
ad.primitive_jvps[io_callback_p] = _io_callback_jvp
ad.primitive_transposes[io_callback_p] = _io_callback_transpose
batching.primitive_batchers[io_callback_p] = _io_callback_batch
mlir.register_lowering(io_callback_p, _io_callback_lowering)
