"""Calling compiled foreign functions from jaxon programs through XLA's FFI.

A library written in C++ against XLA's FFI headers exports handlers; they are registered
with XLA under a name (`xla/ffi_targets.py`), and `ffi_call(name, ...)`
returns a function whose calls bind `ffi_call_p`. That primitive lowers to a
`stablehlo.custom_call` of the name with the typed-FFI calling convention (api_version 4),
its keyword arguments becoming the call's attributes; eagerly it runs compiled, like every
XLA primitive. It has no derivative (wrap it in `custom_jvp`/`custom_vjp`) and batches
as its `vmap_method` says, like `pure_callback`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, dtypes, jaxpr_param_readers
from jaxon._src.callback import VMAP_METHODS, batch_by_vmap_method
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir, mlir_api
from jaxon._src.lax.barriers_tokens import HashableArray
from jaxon._src.xla import deferred

# A layout option of one array: None (row-major), or its axes from major to minor.
FfiLayoutOptions = Sequence[int] | None

mlir_api.register_attribute_handler(HashableArray, lambda a: mlir_api.ir_attribute(a.val))


# ----------------------------------------------------------------------------- lowering


def _default_layout(aval: ShapedArray) -> tuple[int, ...]:
  """XLA's minor-to-major order of a row-major array."""
  return tuple(reversed(range(len(core.physical_aval(aval).shape))))


def _layout_for_lowering(aval: ShapedArray, layout: FfiLayoutOptions) -> tuple[int, ...]:
  return _default_layout(aval) if layout is None else tuple(layout)


def build_ffi_lowering_function(call_target_name: str, *,
                                operand_layouts: Sequence[FfiLayoutOptions] | None = None,
                                result_layouts: Sequence[FfiLayoutOptions] | None = None,
                                backend_config: Mapping[str, ir.Attribute] | str | None = None,
                                skip_ffi_layout_processing: bool = False,
                                **lowering_args: Any) -> Callable[..., ir.OpView]:
  """A function `(ctx, *operands, **attributes) -> custom call op` calling the FFI
  target `call_target_name`, result types from `ctx.avals_out`. Layouts here are XLA's
  minor-to-major (None: row-major). Keyword attributes join `backend_config`, which
  must then be a dict (the typed FFI, api_version 4, the default). Other keyword
  arguments go to the custom call (`has_side_effect`, `api_version`, ...)."""

  def lowering_op(ctx: mlir.LoweringRuleContext, *operands: ir.Value,
                  **params: Any) -> ir.OpView:
    kwargs = dict(lowering_args)
    kwargs.setdefault("api_version", 4)
    if kwargs["api_version"] >= 4:
      if backend_config is not None and not isinstance(backend_config, dict):
        raise ValueError("When api_version > 4, backend_config must be a dictionary.")
      kwargs["backend_config"] = dict(
          backend_config or {}, **{k: mlir_api.ir_attribute(v) for k, v in params.items()})
    else:
      if params:
        raise ValueError("The use of ffi_call attributes requires a custom call API version "
                         f"of at least 4; got api_version={kwargs['api_version']}.")
      kwargs["backend_config"] = backend_config
    kwargs.setdefault("result_types", [mlir.aval_to_ir_type(a) for a in ctx.avals_out])
    if not skip_ffi_layout_processing:
      kwargs["operand_layouts"] = [
          _layout_for_lowering(a, None if operand_layouts is None else layout)
          for a, layout in zip(ctx.avals_in, operand_layouts or [None] * len(ctx.avals_in))]
      kwargs["result_layouts"] = [
          _layout_for_lowering(a, None if result_layouts is None else layout)
          for a, layout in zip(ctx.avals_out, result_layouts or [None] * len(ctx.avals_out))]
    if "result_shapes" not in kwargs and not all(
        core.is_constant_shape(a.shape) for a in ctx.avals_out):
      kwargs["result_shapes"] = [mlir.shape_tensor(core.physical_aval(a).shape)
                                 for a in ctx.avals_out]
    return mlir_api.custom_call(call_target_name, operands=operands, **kwargs)

  return lowering_op


def ffi_lowering(call_target_name: str, *,
                 operand_layouts: Sequence[FfiLayoutOptions] | None = None,
                 result_layouts: Sequence[FfiLayoutOptions] | None = None,
                 backend_config: Mapping[str, ir.Attribute] | str | None = None,
                 skip_ffi_layout_processing: bool = False,
                 **lowering_args: Any) -> mlir.LoweringRule:
  """A lowering rule (for `mlir.register_lowering`) calling the FFI target
  `call_target_name`: `build_ffi_lowering_function`'s op, returning its results."""
  build = build_ffi_lowering_function(
      call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
      backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
      **lowering_args)

  def lowering(ctx: mlir.LoweringRuleContext, *operands: ir.Value,
               **params: Any) -> Sequence[ir.Value]:
    return list(build(ctx, *operands, **params).results)

  return lowering


# ----------------------------------------------------------------------------- ffi_call


def _result_avals(results: Sequence[Any]) -> tuple[ShapedArray, ...]:
  avals = []
  for i, result in enumerate(results):
    if not hasattr(result, "shape") or not hasattr(result, "dtype"):
      raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                       f"attributes. Got {result} at position {i}.")
    avals.append(ShapedArray(tuple(result.shape), dtypes.canonicalize_dtype(result.dtype)))
  return tuple(avals)


def _layouts_for_ffi_call(avals: Sequence[ShapedArray], layouts: Sequence[FfiLayoutOptions],
                          what: str) -> tuple[tuple[int, ...], ...]:
  """Major-to-minor user layouts as XLA's minor-to-major ones."""
  if len(layouts) != len(avals):
    raise ValueError(f"The number of {what} ({len(avals)}) must equal the number of "
                     f"{what[:-1] if what.endswith('s') else what} layouts ({len(layouts)}).")
  return tuple(_layout_for_lowering(a, None if layout is None else tuple(layout)[::-1])
               for a, layout in zip(avals, layouts))


def _hashable_attributes(kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
  """The call's attributes as params (hashable, sorted by name): NumPy arrays wrapped,
  dicts frozen into sorted tuples of items."""
  out = []
  for key, value in sorted(kwargs.items()):
    if isinstance(value, core.Tracer):
      raise TypeError(f"ffi_call attribute {key!r} is a traced value: attributes are "
                      "compile-time constants; pass arrays as positional arguments.")
    if isinstance(value, np.ndarray):
      value = HashableArray(value)
    elif isinstance(value, dict):
      value = FrozenDict(value)
    try:
      hash(value)
    except TypeError as e:
      raise TypeError(f"Non-hashable keyword argument to ffi_call {key}: {value}") from e
    out.append((key, value))
  return tuple(out)


class FrozenDict(dict):
  """A dict attribute (a struct of the handler's) made hashable, printed as JAX prints
  it; it lowers as a dictionary attribute."""

  def __hash__(self) -> int:  # type: ignore[override]
    return hash(tuple(sorted(self.items())))

  def __repr__(self) -> str:
    return f"FrozenDict({dict.__repr__(self)})"


def _read_frozen_dict(node: jaxpr_param_readers.Call) -> FrozenDict:
  """`FrozenDict({'a': 1})` in a printed jaxpr."""
  (braces,) = node.args
  return FrozenDict({jaxpr_param_readers.read_value(item.key):
                     jaxpr_param_readers.read_value(item.value) for item in braces.items})


jaxpr_param_readers.CALL_READERS["FrozenDict"] = _read_frozen_dict


def _check_aliases(aliases: dict[int, int], in_avals: Sequence[ShapedArray],
                   result_avals: Sequence[ShapedArray], in_layouts: Sequence[Any],
                   out_layouts: Sequence[Any]) -> tuple[tuple[int, int], ...]:
  checked = []
  for i, o in sorted(aliases.items()):
    i, o = int(i), int(o)
    mapping = f"input_output_aliases contains the mapping '{i}:{o}'"
    if not 0 <= i < len(in_avals):
      raise ValueError(f"{mapping} with input index {i} outside the range "
                       f"[0, {len(in_avals)}).")
    if not 0 <= o < len(result_avals):
      raise ValueError(f"{mapping} with output index {o} outside the range "
                       f"[0, {len(result_avals)}).")
    a, b = in_avals[i], result_avals[o]
    if a.shape != b.shape or a.dtype != b.dtype:
      raise ValueError(f"{mapping} referring to an input with abstract value {a} and an "
                       f"output with a different abstract value {b}.")
    if in_layouts[i] != out_layouts[o]:
      raise ValueError(f"{mapping} referring to an input with layout {in_layouts[i]} and "
                       f"an output with a different layout {out_layouts[o]}.")
    checked.append((i, o))
  return tuple(checked)


def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None,
             input_layouts: Sequence[FfiLayoutOptions] | None = None,
             output_layouts: FfiLayoutOptions | Sequence[FfiLayoutOptions] | None = None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None) -> Callable[..., Any]:
  """A function calling the FFI target `target_name` (see `register_ffi_target`).

  `result_shape_dtypes` is one object with `shape` and `dtype` (one result) or a sequence
  of them (a list, or a tuple if a tuple is given). Positional arguments of the returned
  function are the handler's buffers; keyword arguments its attributes (Python or NumPy
  scalars, strings, NumPy arrays, dicts). Layouts are major-to-minor axis orders (None:
  row-major) that XLA arranges the buffers in; `input_output_aliases` maps input indices
  to the outputs that reuse their buffers. `has_side_effect` keeps the call when its
  results are unused. Under `vmap`, `vmap_method` chooses as for `pure_callback`."""
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  multiple_results = isinstance(result_shape_dtypes, Sequence)
  result_avals = _result_avals(result_shape_dtypes if multiple_results
                               else [result_shape_dtypes])
  out_layouts = output_layouts if multiple_results else (output_layouts,)
  if custom_call_api_version >= 4 and legacy_backend_config is not None:
    raise ValueError("The use of the legacy_backend_config parameter requires "
                     f"custom_call_api_version < 4; got {custom_call_api_version}.")

  def call(*args: Any, **kwargs: Any) -> Any:
    in_avals = [core.get_aval(x) for x in args]
    static_in_layouts = (tuple(map(_default_layout, in_avals)) if input_layouts is None
                         else _layouts_for_ffi_call(in_avals, input_layouts,
                                                    "input arguments"))
    static_out_layouts = (tuple(map(_default_layout, result_avals)) if out_layouts is None
                          else _layouts_for_ffi_call(result_avals, out_layouts, "outputs"))
    aliases = _check_aliases(input_output_aliases or {}, in_avals, result_avals,
                             static_in_layouts, static_out_layouts)
    results = ffi_call_p.bind(
        *args, result_avals=result_avals, vmap_method=vmap_method, target_name=target_name,
        has_side_effect=bool(has_side_effect), input_layouts=static_in_layouts,
        output_layouts=static_out_layouts, input_output_aliases=aliases,
        custom_call_api_version=custom_call_api_version,
        legacy_backend_config=legacy_backend_config,
        attributes=_hashable_attributes(kwargs))
    if not multiple_results:
      return results[0]
    return tuple(results) if isinstance(result_shape_dtypes, tuple) else list(results)

  return call


class _FfiCallPrimitive(core.Primitive):
  """`ffi_call`: effectful only when the call says it has a side effect."""

  multiple_results = True

  def is_effectful(self, params: dict) -> bool:
    return bool(params.get("has_side_effect"))


ffi_call_p = _FfiCallPrimitive("ffi_call")


def _ffi_call_abstract_eval(*avals: ShapedArray, result_avals: tuple[ShapedArray, ...],
                            **params: Any) -> list[ShapedArray]:
  return list(result_avals)


def _not_differentiable(*args: Any, target_name: str, **params: Any) -> Any:
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                   "`jax.custom_jvp` or `jax.custom_vjp` to add support.")


def _ffi_call_lowering(ctx: mlir.LoweringRuleContext, *operands: ir.Value, target_name: str,
                       has_side_effect: bool, input_layouts: Sequence[Sequence[int]],
                       output_layouts: Sequence[Sequence[int]],
                       input_output_aliases: Sequence[tuple[int, int]],
                       custom_call_api_version: int, legacy_backend_config: str | None,
                       attributes: Sequence[tuple[str, Any]], **params: Any
                       ) -> Sequence[ir.Value]:
  rule = ffi_lowering(target_name, has_side_effect=has_side_effect,
                      operand_layouts=input_layouts, result_layouts=output_layouts,
                      operand_output_aliases=dict(input_output_aliases),
                      api_version=custom_call_api_version,
                      backend_config=legacy_backend_config)
  return rule(ctx, *operands, **dict(attributes))


def _batch_layouts(layouts: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
  """Minor-to-major layouts with a new major (batch) axis in front of each array."""
  return tuple(tuple(n + 1 for n in layout) + (0,) for layout in layouts)


def _batched_layouts(params: dict, dims: Sequence[int | None], vmap_method: str) -> dict:
  """The layouts of a batched `ffi_call`: each result, and each argument that has one now,
  gains the batch axis as its most major."""
  params = dict(params, output_layouts=_batch_layouts(params["output_layouts"]))
  if vmap_method == "legacy_vectorized":  # unbatched arguments keep their shape
    params["input_layouts"] = tuple(
        layout if d is None else _batch_layouts([layout])[0]
        for layout, d in zip(params["input_layouts"], dims))
  else:
    params["input_layouts"] = _batch_layouts(params["input_layouts"])
  return params


ffi_call_p.def_impl(functools.partial(deferred.apply_primitive, ffi_call_p))
ffi_call_p.def_abstract_eval(_ffi_call_abstract_eval)
ad.primitive_jvps[ffi_call_p] = _not_differentiable
ad.primitive_transposes[ffi_call_p] = _not_differentiable
batching.fancy_primitive_batchers[ffi_call_p] = functools.partial(
    batch_by_vmap_method, ffi_call_p, relayout=_batched_layouts)
mlir.register_lowering(ffi_call_p, _ffi_call_lowering)
