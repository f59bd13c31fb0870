"""`jax2tf.convert`: a jaxon function as a TensorFlow function.

The function is exported (traced, lowered to StableHLO with native XLA ops only, serialized
as a portable artifact) and called through TensorFlow's `XlaCallModule` op, which compiles
the module with TensorFlow's own XLA. Nothing jaxon-specific stays in the TensorFlow graph,
so a SavedModel holding it loads and runs where jaxon is not installed. Gradients go
through a `tf.custom_gradient` whose backward pass is jaxon's VJP of the function,
converted the same way: TensorFlow differentiates the program exactly as jaxon would,
custom derivatives included.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.compiler.tf2xla.python import xla as tfxla

from jaxon._src import api, core, dtypes, tree_util
from jaxon._src.export import _export, shape_poly
from jaxon._src.interpreters import mlir
from jaxon._src.jit import ShapeDtypeStruct, is_jitted, jit
from jaxon._src.xla import deferred

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
# Within TensorFlow float0 (the tangent type of integers) travels as booleans, as jaxon
# lowers it.
_TF_DTYPE_OF_FLOAT0 = tf.bool


def convert(fun_jax: Callable, *, polymorphic_shapes: Any = None,
            polymorphic_constraints: Sequence[str] = (), with_gradient: bool = True,
            enable_xla: Any = None, native_serialization: Any = None,
            native_serialization_platforms: Sequence[str] | None = None,
            native_serialization_disabled_checks: Sequence[Any] = ()) -> Callable:
  """A TensorFlow function computing `fun_jax`: callable eagerly, in `tf.function`
  (with `jit_compile=True` too) and from a SavedModel, on TF tensors, variables, NumPy
  arrays or scalars (pytrees of them), giving TF tensors.

  Args:
    fun_jax: a jaxon function of arrays (pytrees of arrays) to arrays.
    polymorphic_shapes: None, or per positional argument a shape specification such as
      "(b, ...)" or "(b, 2*b)", whose dimension variables range over positive integers: the
      TensorFlow function then accepts any sizes there (`tf.TensorSpec([None, ...])`).
    with_gradient: differentiate through jaxon's VJP of `fun_jax` (`tf.GradientTape`);
      False makes a TF gradient an error.
    native_serialization_platforms: the platforms the module may run on, a subset of
      ("cpu", "cuda", "rocm", "tpu"); default ("cpu",).
    enable_xla, native_serialization: deprecated in JAX and ignored (always native).

  Returns:
    The TensorFlow function; its results mirror `fun_jax`'s pytree of results.
  """
  for name, value in (("enable_xla", enable_xla), ("native_serialization",
                                                   native_serialization)):
    if value is not None:
      warnings.warn(f"The `{name}` parameter is deprecated and will be removed in a future "
                    "version of JAX.", DeprecationWarning, stacklevel=2)
  platforms = _check_platforms(native_serialization_platforms)
  if not callable(fun_jax):
    raise TypeError(f"Expected a callable value, got {fun_jax}")
  options = _Options(tuple(str(c) for c in native_serialization_disabled_checks),
                     with_gradient)

  @tf.autograph.experimental.do_not_convert  # jaxon's tracing is plain Python to TF
  def converted_fun_tf(*args_tf: Any, **kwargs_tf: Any) -> Any:
    if not core.is_eval_trace_current():
      raise ValueError("convert must be used outside all JAX transformations.")
    args_tf, kwargs_tf = _untracked((args_tf, kwargs_tf))
    args_tf, kwargs_tf = tree_util.tree_map(as_jaxon_tensor, (args_tf, kwargs_tf))
    args_specs, kwargs_specs = tree_util.tree_map(_spec_of, (args_tf, kwargs_tf))
    _check_known_shapes(kwargs_specs if polymorphic_shapes else (args_specs, kwargs_specs))
    args_specs = shape_poly.symbolic_args_specs(
        args_specs, _per_argument(polymorphic_shapes, args_tf),
        scope=shape_poly.SymbolicScope(tuple(polymorphic_constraints)))
    fun_jit = fun_jax if is_jitted(fun_jax) else jit(fun_jax)
    exported = _native_export(lambda: _export.export_module_only(
        fun_jit, platforms=platforms)(*args_specs, **kwargs_specs))
    return _call_exported(_flat(fun_jax, exported.in_tree), exported,
                          tree_util.tree_leaves((args_tf, kwargs_tf)), options)

  return converted_fun_tf


@dataclasses.dataclass(frozen=True)
class _Options:
  disabled_checks: tuple[str, ...]
  with_gradient: bool


def _check_platforms(platforms: Sequence[str] | None) -> tuple[str, ...]:
  if platforms is None:
    return ("cpu",)
  if (not isinstance(platforms, (list, tuple)) or not platforms
      or not all(p in _PLATFORMS for p in platforms)):
    raise ValueError("native_serialization_platforms must be a sequence containing a subset "
                     f"of {{'cpu', 'cuda', 'rocm', 'tpu'}}. Got: {platforms}")
  return tuple(platforms)


# ----------------------------------------------------------------------------- arguments

def dtype_of_val(val: Any) -> tf.DType:
  """The TF dtype jaxon gives `val` as an argument of a converted function: its own for a
  tensor, jaxon's typing rules for constants (so 64-bit only with `jax_enable_x64`)."""
  return as_jaxon_tensor(val).dtype


def jaxon_dtype(tf_dtype: tf.DType) -> np.dtype:
  dtype = dtypes.canonicalize_dtype(np.dtype(tf_dtype.as_numpy_dtype))
  if tf_dtype in (tf.string, tf.resource, tf.variant):
    raise TypeError(f"dtype {tf_dtype.name} is not a valid JAX array type. Only arrays of "
                    "numeric types are supported by JAX.")
  return dtype


def as_jaxon_tensor(val: Any) -> tf.Tensor:
  """An argument as a tensor of the dtype jaxon computes with: 64-bit values narrow when
  `jax_enable_x64` is off, constants are typed by jaxon's rules (3.14 is float32)."""
  if isinstance(val, (tf.Tensor, tf.Variable)):
    dtype = jaxon_dtype(val.dtype)
    return val if dtype == val.dtype.as_numpy_dtype else tf.cast(val, dtype)
  if isinstance(val, core.Tracer) or not isinstance(
      val, (np.ndarray, np.generic, int, float, complex, bool)) and not hasattr(
          val, "__array__"):
    raise TypeError(f"Argument {val} of type {type(val)} of jax2tf.convert(f) should be NumPy "
                    "array, scalar, tf.Variable, or tf.Tensor")
  value = np.asarray(val, dtypes.canonicalize_dtype(dtypes.dtype(val)))
  return tf.constant(value)


def _untracked(tree: Any) -> Any:
  """`tree` with TF's tracking wrappers (the dicts, lists and tuples a `tf.Module` attribute
  holds) replaced by the plain containers jaxon's pytrees know."""
  if not type(tree).__module__.startswith("tensorflow.python.trackable"):
    if type(tree) in (tuple, list):
      return type(tree)(map(_untracked, tree))
    return {k: _untracked(v) for k, v in tree.items()} if type(tree) is dict else tree
  if isinstance(tree, collections.abc.Mapping):
    return {k: _untracked(v) for k, v in tree.items()}
  return (tuple if isinstance(tree, tuple) else list)(map(_untracked, tree))


def _spec_of(x: tf.Tensor) -> ShapeDtypeStruct:
  """The tensor's shape (None where unknown to TF) and jaxon dtype."""
  return ShapeDtypeStruct(tuple(x.shape), jaxon_dtype(x.dtype))


def _per_argument(polymorphic_shapes: Any, args: tuple) -> Any:
  """`polymorphic_shapes` as a prefix of the positional arguments' pytree (one string or
  None applies to all)."""
  if polymorphic_shapes is None or isinstance(polymorphic_shapes, str):
    return polymorphic_shapes
  if not isinstance(polymorphic_shapes, (list, tuple)) or len(polymorphic_shapes) != len(args):
    raise ValueError("polymorphic_shapes must be a sequence with the same length as the "
                     f"positional argument list ({len(args)}). Got "
                     f"polymorphic_shapes={polymorphic_shapes!r}.")
  return tuple(polymorphic_shapes)


def _check_known_shapes(*specs: Any) -> None:
  for spec in tree_util.tree_leaves(specs):
    if None in spec.shape:
      raise ValueError(f"jax2tf.convert: an argument has the partially known shape "
                       f"{tuple(spec.shape)}; pass polymorphic_shapes naming its unknown "
                       "dimensions, e.g. polymorphic_shapes=['(b, ...)']")


# ----------------------------------------------------------------------------- exporting

def _native_export(export_fn: Callable[[], _export.Exported]) -> _export.Exported:
  """`export_fn()` lowering with native XLA ops only: TensorFlow's XLA has none of jaxlib's
  LAPACK kernels, so those primitives are refused here, named."""
  deferred.flush()  # lowering reads constants: pending eager work must not compile in there
  try:
    with mlir.lowering_platform(mlir.NATIVE):
      return export_fn()
  except NotImplementedError as e:
    if "MLIR translation rule" not in str(e):
      raise
    raise NotImplementedError(
        f"jax2tf.convert: {e}. Converted programs run in TensorFlow's XLA, which cannot call "
        "jaxlib's LAPACK kernels: of the linear algebra, cholesky and triangular_solve lower "
        "natively; lu, qr, eigh, svd, eig, schur, hessenberg and tridiagonal do not (nor "
        "what uses them: jnp.linalg.solve, inv, det, …).") from e


# ----------------------------------------------------------------------------- calling

def _flat(fun: Callable, in_tree: tree_util.PyTreeDef) -> Callable[..., list[Any]]:
  def flat_fun(*flat_args: Any) -> list[Any]:
    args, kwargs = in_tree.unflatten(flat_args)
    return tree_util.tree_leaves(fun(*args, **kwargs))
  return flat_fun


def _vjp_export(flat_fun: Callable[..., list[Any]], exported: _export.Exported
                ) -> tuple[Callable[..., list[Any]], _export.Exported]:
  """The VJP of `flat_fun` (exported as `exported`): (primals..., output cotangents...) ->
  input cotangents, as a flat function and exported. It differentiates the original
  function (as jaxon.grad would), not the exported program."""
  n_in = len(exported.in_avals)

  def fun_vjp(*primals_and_cts: Any) -> list[Any]:
    _, pullback = api.vjp(flat_fun, *primals_and_cts[:n_in])
    return list(pullback(list(primals_and_cts[n_in:])))
  specs = [*(ShapeDtypeStruct(a.shape, a.dtype) for a in exported.in_avals),
           *(ShapeDtypeStruct(a.shape, a.to_tangent_aval().dtype) for a in exported.out_avals)]
  fun_vjp.__name__ = f"{exported.fun_name}_vjp"
  return fun_vjp, _native_export(lambda: _export.export_module_only(
      jit(fun_vjp), platforms=exported.platforms)(*specs))


def _call_exported(flat_fun: Callable[..., list[Any]], exported: _export.Exported,
                   flat_tf: Sequence[tf.Tensor], options: _Options) -> Any:
  """Runs `exported` (of `flat_fun`) on `flat_tf`; TF differentiates it through the
  exported VJP of `flat_fun`, itself called this way, so higher orders work too."""
  if not options.with_gradient:
    message = ("The jax2tf-converted function does not support gradients. Use "
               "`with_gradient` parameter to enable gradients")
    outs = [tf.raw_ops.PreventGradient(input=o, message=message)
            for o in _call_module(exported, flat_tf, options)]
  else:
    @tf.custom_gradient
    def fun_with_gradient(*flat_args: tf.Tensor) -> Any:
      outs = _call_module(exported, flat_args, options)

      def grad_fn(*cts: tf.Tensor | None, variables: Any = None) -> Any:
        cts = [_zeros_float0(o) if ct is None else ct for ct, o in zip(cts, outs)]
        with tf.name_scope("jax2tf_vjp"):
          fun_vjp, vjp_exported = _vjp_export(flat_fun, exported)
          return _call_exported(fun_vjp, vjp_exported, [*flat_args, *cts], options)
      return tuple(outs), grad_fn
    outs = fun_with_gradient(*flat_tf)
  outs = [tf.identity(x, "jax2tf_out") for x in outs]
  return exported.out_tree.unflatten(outs)


def _zeros_float0(out: tf.Tensor) -> tf.Tensor:
  """The cotangent of an integer output, which TF leaves as None."""
  return tf.zeros_like(out, dtype=_TF_DTYPE_OF_FLOAT0)


def tf_dtype(dtype: np.dtype) -> tf.DType:
  return _TF_DTYPE_OF_FLOAT0 if dtype == dtypes.float0 else tf.as_dtype(dtype)


def _call_module(exported: _export.Exported, args: Sequence[tf.Tensor], options: _Options
                 ) -> list[tf.Tensor]:
  """Runs the exported module as TensorFlow's XlaCallModule op."""
  args = [x if x.dtype == tf_dtype(a.dtype) else tf.cast(x, tf_dtype(a.dtype))
          for x, a in zip(args, exported.in_avals)]
  return list(tfxla.call_module(
      args, version=exported.calling_convention_version,
      module=exported.mlir_module_serialized,
      Tout=[tf_dtype(a.dtype) for a in exported.out_avals],
      Sout=[tuple(None if shape_poly.is_symbolic_dim(d) else d for d in a.shape)
            for a in exported.out_avals],
      platforms=[p.upper() for p in exported.platforms], function_list=[],
      has_token_input_output=False, disabled_checks=list(options.disabled_checks)))
