"""`jax2tf.call_tf`: a TensorFlow function called from jaxon code.

Eagerly the TensorFlow function runs in TF eager mode on the arguments' values. Staged
(under `jit`, in control flow) it is compiled by TensorFlow's XLA bridge
(`tf.function(jit_compile=True)`) to HLO, which becomes StableHLO functions inside jaxon's
own module: one XLA program runs both. Reverse-mode derivatives are TensorFlow's
(`tf.GradientTape`), themselves called through `call_tf`, so they compose again.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import batching, mlir
from jaxon._src.jax2tf import convert as convert_mod
from jaxon._src.lax.custom_derivatives import custom_vjp
from jaxon._src.xla.array import Array, device_put_numpy

_LIMITATIONS = ("See https://github.com/jax-ml/jax/blob/main/jax/experimental/jax2tf/"
                "README.md#limitations-of-call_tf for a discussion.")


def call_tf(callable_tf: Callable, has_side_effects: bool = True, ordered: bool = False,
            output_shape_dtype: Any = None, call_tf_graph: bool = False) -> Callable:
  """A jaxon function that calls the TensorFlow function `callable_tf`.

  Args:
    callable_tf: takes TF tensors (pytrees of them), returns TF tensors (a pytree).
    has_side_effects, ordered: accepted for JAX's signature; jaxon keeps every staged call
      (it does not remove unused ones), and `ordered=True` is refused under `jit`, as JAX
      refuses it without `call_tf_graph`.
    output_shape_dtype: the results' shapes and dtypes (a pytree of objects with `shape`
      and `dtype`), checked against TF's; by default TF's inferred ones, which must be
      static.
    call_tf_graph: not supported (it calls back into TF's runtime from the XLA program).

  Returns:
    A function of jaxon arrays (pytrees), usable eagerly (TF eager mode), under `jit` (the
    function must compile with XLA and have static output shapes) and under `grad`
    (through TF's gradient).
  """
  if call_tf_graph:
    raise NotImplementedError("call_tf(call_tf_graph=True) is not supported by jaxon: the "
                              "called function is compiled into jaxon's XLA program.")
  declared = None
  if output_shape_dtype is not None:
    leaves, declared_tree = tree_util.tree_flatten(output_shape_dtype)
    declared = (tuple(ShapedArray(tuple(s.shape), np.dtype(s.dtype)) for s in leaves),
                declared_tree)

  @custom_vjp
  def make_call(*args: Any) -> Any:
    flat_args, args_tree = tree_util.tree_flatten(args)
    flat_tf = _FlatTfFunction(callable_tf, args_tree, declared)
    avals = [core.get_aval(x) for x in flat_args]
    signature = tuple(tf.TensorSpec(a.shape, convert_mod.tf_dtype(a.dtype)) for a in avals)
    outs = call_tf_p.bind(
        *flat_args, callable_flat_tf=flat_tf,
        function_flat_tf=tf.function(flat_tf, autograph=False, jit_compile=True),
        args_flat_sig_tf=signature, output_avals=None if declared is None else declared[0],
        has_side_effects=bool(has_side_effects), ordered=bool(ordered), call_tf_graph=False)
    return flat_tf.results_tree.unflatten(outs)

  def make_call_fwd(*args: Any) -> tuple[Any, Any]:
    return make_call(*args), args

  def make_call_bwd(args: tuple, cts: Any) -> tuple:
    cts_args = call_tf(functools.partial(_tf_vjp, callable_tf))(args, cts)
    return tuple(tree_util.tree_map(_as_cotangent_of, args, cts_args))

  make_call.defvjp(make_call_fwd, make_call_bwd)

  @functools.wraps(callable_tf)
  def call(*args: Any) -> Any:
    return make_call(*tree_util.tree_map(_canonical_arg, args))
  return call


@dataclasses.dataclass(eq=False)
class _FlatTfFunction:
  """`callable_tf` on flat tensors, returning flat tensors; it records the structure of
  the results, checked against the declared one (`output_shape_dtype`)."""
  callable_tf: Callable
  args_tree: tree_util.PyTreeDef
  declared: tuple[tuple[ShapedArray, ...], tree_util.PyTreeDef] | None
  results_tree: Any = None

  def __call__(self, *flat_args: tf.Tensor) -> list[tf.Tensor]:
    results = self.callable_tf(*self.args_tree.unflatten(flat_args))
    if isinstance(results, tf.Operation):  # a tf.function with no results gives its op
      results = []
    flat, tree = tree_util.tree_flatten(results)
    self.results_tree = tree
    if self.declared is not None:
      avals, declared_tree = self.declared
      if tree != declared_tree:
        raise ValueError("The pytree of the TensorFlow function results does not match the "
                         "pytree of the declared output_shape_dtype:\nresults pytree: "
                         f"{tree}\noutput_shape_dtype tree: {declared_tree}")
      for i, (x, aval) in enumerate(zip(flat, avals)):
        _check_declared(i, x, aval)
    return [_result_tensor(x) for x in flat]


def _check_declared(index: int, x: tf.Tensor, aval: ShapedArray) -> None:
  want = convert_mod.tf_dtype(aval.dtype)
  if x.dtype != want or len(x.shape) != aval.ndim or any(
      d is not None and d != w for d, w in zip(x.shape, aval.shape)):
    raise ValueError("The shapes or dtypes returned by the TensorFlow function do not match "
                     f"the declared output_shape_dtype:\nResult[{index}] is "
                     f"{x.dtype.name}[{tuple(x.shape)}] vs. expected {want.name}[{aval.shape}]")


def _result_tensor(x: Any) -> tf.Tensor:
  try:
    return convert_mod.as_jaxon_tensor(x)
  except Exception as e:
    raise ValueError("The called TF function returns a result that is not convertible to "
                     f"JAX: {x}.") from e


def _canonical_arg(x: Any) -> Any:
  """Arguments as jaxon computes with them (64-bit narrowed unless x64 is on); TF tensors
  are taken by value."""
  if isinstance(x, (core.Tracer, Array)):
    return x
  value = np.asarray(x)
  return value.astype(dtypes.canonicalize_dtype(value.dtype), copy=False)


# ----------------------------------------------------------------------------- gradient

def _float_or_zero(x: tf.Tensor | None) -> tf.Tensor:
  """What the tape watches and differentiates: floating tensors, a scalar zero in place of
  the others (TF refuses to watch integers), whose gradients jaxon drops."""
  if x is not None and (x.dtype.is_floating or x.dtype.is_complex):
    return x
  return tf.zeros((), tf.float32)


def _tf_vjp(callable_tf: Callable, args: tuple, cts: Any) -> Any:
  """TF's reverse-mode derivative of `callable_tf` at `args`, applied to `cts`."""
  watched = tf.nest.map_structure(_float_or_zero, args)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(watched)
    results = callable_tf(*args)
  return tf.nest.map_structure(
      tf.convert_to_tensor,
      tape.gradient(tf.nest.map_structure(_float_or_zero, results), sources=watched,
                    output_gradients=cts,
                    unconnected_gradients=tf.UnconnectedGradients.ZERO))


def _as_cotangent_of(arg: Any, ct: Any) -> Any:
  """The cotangent jaxon expects for `arg`: float0 zeros for integers and booleans."""
  tangent_dtype = core.get_aval(arg).to_tangent_aval().dtype
  if tangent_dtype != ct.dtype:
    return np.zeros(np.shape(arg), tangent_dtype)
  return ct


# ----------------------------------------------------------------------------- the primitive

call_tf_p = core.Primitive("call_tf")
call_tf_p.multiple_results = True


def _call_tf_impl(*args: Any, callable_flat_tf: _FlatTfFunction, **_: Any) -> list[Any]:
  """Runs the function in TF eager mode: values cross by copy through NumPy."""
  args_tf = [tf.zeros(np.shape(x), convert_mod.tf_dtype(aval.dtype))
             if aval.dtype == dtypes.float0 else tf.constant(np.asarray(x, aval.dtype))
             for x, aval in zip(args, map(core.get_aval, args))]  # literals are Python scalars
  return [device_put_numpy(r.numpy() if r.dtype == tf.bfloat16 else np.asarray(r))
          for r in callable_flat_tf(*args_tf)]


@functools.lru_cache(maxsize=128)
def _concrete_function(function_flat_tf: Any, signature: tuple) -> Any:
  return function_flat_tf.get_concrete_function(*signature)


def _call_tf_abstract_eval(*avals: ShapedArray, function_flat_tf: Any,
                           args_flat_sig_tf: tuple, output_avals: Any, **_: Any
                           ) -> list[ShapedArray]:
  concrete = _concrete_function(function_flat_tf, args_flat_sig_tf)
  if not concrete.outputs:
    return []
  if output_avals is not None:
    return list(output_avals)
  shapes = concrete.output_shapes
  if not all(s.rank is not None and None not in s.as_list() for s in shapes):
    raise ValueError("call_tf cannot call functions whose output has dynamic shape. Found "
                     f"output shapes: {shapes}. Consider using the `output_shape_dtype` "
                     f"argument to call_tf.\n{_LIMITATIONS}")
  return [ShapedArray(tuple(s.as_list()), convert_mod.jaxon_dtype(d))
          for s, d in zip(shapes, concrete.output_dtypes)]


def _captured_values(concrete: Any) -> list[np.ndarray]:
  """The values of the tensors and variables the function captures, read now: a staged
  call sees the variables' values of when it was lowered (as in JAX)."""
  values = []
  with tf.init_scope():  # out of any graph being built, where values cannot be read
    for captured in concrete.captured_inputs:
      if captured.dtype == tf.resource:
        captured = next(v for v in concrete.variables if v.handle is captured)
      values.append(np.asarray(captured))
  return values


def _call_tf_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, function_flat_tf: Any,
                      args_flat_sig_tf: tuple, ordered: bool, **_: Any) -> list[ir.Value]:
  """Inlines the function's XLA computation, as StableHLO functions of jaxon's module."""
  if ordered:
    raise NotImplementedError("ordered=True is not supported in the jitted context without "
                              "`call_tf_graph=True`")
  concrete = _concrete_function(function_flat_tf, args_flat_sig_tf)
  try:
    hlo_bytes = function_flat_tf.experimental_get_compiler_ir(*args_flat_sig_tf)(
        stage="hlo_serialized", platform_name="CPU")
  except Exception as e:
    raise ValueError("Error compiling TensorFlow function (see below for the caught "
                     "exception).\ncall_tf can be used in a staged context (under jax.jit, "
                     "lax.scan, etc.) only with compilable functions with static output "
                     f"shapes.\n{_LIMITATIONS}\n\nCaught TensorFlow exception: {e}") from e
  try:
    submodule = ir.Module.parse(_jax.mlir.hlo_to_stablehlo(hlo_bytes))
  except ir.MLIRError as e:
    raise ValueError("call_tf: the XLA computation TensorFlow compiled for the function "
                     "cannot be embedded in jaxon's program. (A function that writes "
                     "tf.Variables, for one, cannot be called under jit: pass the variables' "
                     "values in and the new values out explicitly.)\n"
                     f"{_LIMITATIONS}\n\nCaught exception: {e}") from e
  callee = _merge_module(ctx.module_context.module, submodule,
                         f"call_tf_{_sanitize(function_flat_tf.name)}")
  captured = [mlir.ir_constant(v) for v in _captured_values(concrete)]
  result_types = list(callee.type.results)
  if len(result_types) != len(ctx.avals_out):
    raise ValueError(f"call_tf: the compiled TensorFlow function has {len(result_types)} "
                     f"results where its signature has {len(ctx.avals_out)}; functions that "
                     f"write tf.Variables cannot be called under jit.\n{_LIMITATIONS}")
  for t in result_types:
    if not ir.RankedTensorType(t).has_static_shape:
      raise ValueError(f"call_tf: the TensorFlow function's compiled result has the dynamic "
                       f"type {t} (tf.unique, 1-argument tf.where, …); jaxon needs static "
                       f"shapes under jit.\n{_LIMITATIONS}")
  call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(callee.name.value),
                     [*args, *captured])
  return [r if r.type == mlir.aval_to_ir_type(aval) else
          hlo.convert(mlir.aval_to_ir_type(aval), r)  # 64-bit results, narrowed
          for r, aval in zip(call.results, ctx.avals_out)]


def _merge_module(module: ir.Module, submodule: ir.Module, prefix: str) -> func.FuncOp:
  """Moves `submodule`'s functions into `module`, private and renamed `prefix…` (a fresh
  prefix per call); returns its `main`."""
  taken = ir.SymbolTable(module.operation)
  n = 0
  while f"{prefix}_{n}_main" in taken:
    n += 1
  main = None
  for op in list(submodule.body.operations):
    old = ir.StringAttr(op.attributes["sym_name"]).value
    new = f"{prefix}_{n}_{old}"
    ir.SymbolTable.replace_all_symbol_uses(old, new, submodule.operation)
    op.attributes["sym_name"] = ir.StringAttr.get(new)
    op.attributes["sym_visibility"] = ir.StringAttr.get("private")
    module.body.append(op.detach_from_parent())
    if old == "main":
      main = func.FuncOp(op.operation) if not isinstance(op, func.FuncOp) else op
  assert main is not None
  return main


def _sanitize(name: str) -> str:
  return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def _call_tf_batch(*args: Any, **params: Any) -> Any:
  raise NotImplementedError("call_tf does not support vmap: the TensorFlow function is "
                            "called on whole arrays; map it inside TensorFlow "
                            "(tf.vectorized_map) or loop with lax.map.")


call_tf_p.def_impl(_call_tf_impl)
call_tf_p.def_abstract_eval(_call_tf_abstract_eval)
mlir.register_lowering(call_tf_p, _call_tf_lowering)
batching.primitive_batchers[call_tf_p] = _call_tf_batch
