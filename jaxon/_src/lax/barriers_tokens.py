"""Primitives that compute nothing new but shape how a program is compiled or kept:
`optimization_barrier` (XLA may not move work across it), `copy` (a fresh buffer), `stage`
(lift a value into the current trace), `dce_sink` (keep a value's computation alive),
`device_put` (identity on values; where they live is the runtime's business), `composite`
(a named `stablehlo.composite` op around a decomposition) and `platform_dependent` (the
branch for the platform being compiled for).

The first five are the identity on values (dce_sink has no outputs), so their derivative
rules apply the same primitive to tangents and cotangents, and batching keeps the batch
dimensions. JAX 0.10.2's token primitives (`create_token`, `after_all`) are not here yet:
they need a token type through core, lowering, the runtime and the jaxpr parser.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, sharding_impls, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow import conditionals
from jaxon._src.xla import deferred, executable

ArrayCopySemantics = _jax.ArrayCopySemantics


def _identity_primitive(name: str, multiple_results: bool) -> core.Primitive:
  """A primitive returning its operands' avals, run through XLA when applied eagerly."""
  prim = core.Primitive(name)
  prim.multiple_results = multiple_results
  prim.def_impl(functools.partial(deferred.apply_primitive, prim))
  if multiple_results:
    prim.def_abstract_eval(lambda *avals, **params: list(avals))
  else:
    prim.def_abstract_eval(lambda aval, **params: aval)
  return prim


def _instantiate_all(ts: Sequence[Any]) -> list[Any]:
  return [ad.instantiate_zeros(t) for t in ts]


# ----------------------------------------------------------------------------- optimization_barrier

optimization_barrier_p = _identity_primitive("optimization_barrier", multiple_results=True)


def _optimization_barrier_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value
                                   ) -> list[ir.Value]:
  return list(hlo.OptimizationBarrierOp(list(args)).results)


mlir.register_lowering(optimization_barrier_p, _optimization_barrier_lowering)


def _optimization_barrier_jvp(primals: Sequence[Any], tangents: Sequence[Any]
                              ) -> tuple[list[Any], list[Any]]:
  """Primals and tangents pass separate barriers (as in JAX), so the tangent work is not
  pinned to the primal's."""
  return (optimization_barrier_p.bind(*primals),
          optimization_barrier_p.bind(*_instantiate_all(tangents)))


ad.primitive_jvps[optimization_barrier_p] = _optimization_barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = lambda cts, *primals: (
    optimization_barrier_p.bind(*_instantiate_all(cts)))
batching.primitive_batchers[optimization_barrier_p] = lambda vals, dims: (
    optimization_barrier_p.bind(*vals), list(dims))


def optimization_barrier(operand: Any, /) -> Any:
  """`operand` (any pytree of arrays) unchanged, behind a barrier XLA's optimizations do not
  cross: everything feeding the barrier is computed before anything using its outputs, and
  values on the two sides are not merged (common subexpression elimination) or moved
  (e.g. to keep a recomputation from being hoisted back to the forward pass)."""
  leaves, tree = tree_util.tree_flatten(operand)
  return tree_util.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


# ----------------------------------------------------------------------------- copy

copy_p = _identity_primitive("copy", multiple_results=False)
mlir.register_lowering(copy_p, lambda ctx, x: [x])
ad.deflinear(copy_p, lambda ct, x: [copy_p.bind(ct)])
batching.defvectorized(copy_p)


# ----------------------------------------------------------------------------- stage

def _stage_impl(x: Any) -> Any:
  return lax.asarray(x)


stage_p = core.Primitive("stage")
stage_p.def_impl(_stage_impl)
stage_p.def_abstract_eval(lambda aval: aval)
mlir.register_lowering(stage_p, lambda ctx, x: [x])
ad.deflinear(stage_p, lambda ct, x: [ct])
batching.defvectorized(stage_p)


def stage(x: Any, /) -> Any:
  """`x` as a value of the computation: a traced value stays as it is (no equation, as in
  JAX), a Python or NumPy value becomes an Array (a constant of the traced program)."""
  if isinstance(x, core.Tracer):
    return x
  return stage_p.bind(x) if core.is_eval_trace_current() else lax.asarray(x)


# ----------------------------------------------------------------------------- dce_sink

dce_sink_p = core.Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.effectful = True  # what marks it as used: dead-code elimination keeps it
dce_sink_p.def_impl(lambda x, **params: [])
dce_sink_p.def_abstract_eval(lambda aval, **params: [])
ad.deflinear(dce_sink_p, lambda cts, x, **params: [None])
batching.primitive_batchers[dce_sink_p] = lambda vals, dims, **params: (
    dce_sink_p.bind(*vals, **params), [])


def _dce_sink_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                       prevent_mlir_dce: bool) -> list[ir.Value]:
  """Nothing to emit: the equation's presence kept `x`'s computation in the jaxpr. Keeping
  it in the compiled program too (`prevent_mlir_dce=True`) needs JAX's `dce_sink` FFI
  kernel, which jaxlib does not ship for CPU."""
  if prevent_mlir_dce:
    raise NotImplementedError("dce_sink(prevent_mlir_dce=True) needs a 'dce_sink' custom "
                              "call target, which jaxon does not register; pass False.")
  return []


mlir.register_lowering(dce_sink_p, _dce_sink_lowering)


def dce_sink(val: Any, *, prevent_mlir_dce: bool = False) -> None:
  """Marks every leaf of `val` as used, so dead-code elimination of the jaxpr keeps the
  computations producing them even though nothing reads them."""
  tree_util.tree_map(lambda leaf: dce_sink_p.bind(leaf, prevent_mlir_dce=prevent_mlir_dce),
                     val)


# ----------------------------------------------------------------------------- device_put

def _device_put_impl(*xs: Any, devices: tuple, srcs: tuple, copy_semantics: tuple
                     ) -> list[Any]:
  return [executable.device_put(x) if d is None else sharding_impls.device_put_leaf(x, d)
          for x, d in zip(xs, devices)]


device_put_p = core.Primitive("device_put")
device_put_p.multiple_results = True
device_put_p.def_impl(_device_put_impl)
device_put_p.def_abstract_eval(lambda *avals, **params: list(avals))
mlir.register_lowering(device_put_p, lambda ctx, *xs, **params: list(xs))


def _device_put_transpose(cts: Sequence[Any], *xs: Any, devices: tuple, srcs: tuple,
                          copy_semantics: tuple) -> list[Any]:
  """Cotangents go back where the operands came from: the sources become the targets."""
  return device_put_p.bind(*_instantiate_all(cts), devices=srcs, srcs=devices,
                           copy_semantics=copy_semantics)


ad.deflinear(device_put_p, _device_put_transpose)
batching.primitive_batchers[device_put_p] = lambda vals, dims, **params: (
    device_put_p.bind(*vals, **params), list(dims))


# ----------------------------------------------------------------------------- composite

class HashableArray:
  """A NumPy array attribute of a composite, hashable (params must be) and printed as
  JAX prints it."""

  def __init__(self, val: np.ndarray):
    self.val = np.asarray(val)

  def __repr__(self) -> str:
    return f"HashableArray({self.val!r})"

  def __hash__(self) -> int:
    return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

  def __eq__(self, other: object) -> bool:
    return (isinstance(other, HashableArray) and self.val.shape == other.val.shape
            and self.val.dtype == other.val.dtype and np.array_equal(self.val, other.val))


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
  """Wraps `decomposition` as one `stablehlo.composite` op named `name`: a compiler that
  knows the name may emit a dedicated kernel; others (XLA on CPU) run the decomposition.
  The wrapped function's positional arguments are the op's operands and its keyword
  arguments (static: Python or NumPy values) the op's attributes; None-valued ones are
  left out of the attributes. As in JAX, a composite has no derivative or batching rule:
  wrap it in `custom_jvp`/`custom_vjp` to differentiate it."""
  @functools.wraps(decomposition)
  def wrapped(*args: Any, **kwargs: Any) -> Any:
    if any(isinstance(v, core.Tracer) for v in tree_util.tree_leaves(kwargs)):
      raise core.UnexpectedTracerError(
          f"Found a traced value as an attribute of the composite op '{name}': attributes "
          "must be known at compile time (pass NumPy arrays, not jaxon arrays); pass "
          "traced values as positional arguments instead.")
    flat_args, in_tree = tree_util.tree_flatten(args)
    in_avals = [core.get_aval(x) for x in flat_args]
    out_tree_box: list[Any] = []

    def flat_decomposition(*flat: Any) -> list[Any]:
      out = decomposition(*tree_util.tree_unflatten(in_tree, flat), **kwargs)
      leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return leaves
    with core.set_current_trace(core.EvalTrace()):
      jaxpr, consts = pe.trace_to_jaxpr(flat_decomposition, in_avals)
    attributes = []
    for key, value in kwargs.items():
      leaves, treedef = tree_util.tree_flatten(value)
      attributes.append((key, tuple(HashableArray(v) if isinstance(v, np.ndarray) else v
                                    for v in leaves), treedef))
    outs = composite_p.bind(*flat_args, name=name, attributes=tuple(attributes),
                            version=int(version), jaxpr=core.ClosedJaxpr(jaxpr, consts))
    return tree_util.tree_unflatten(out_tree_box[0], outs)
  return wrapped


def _composite_impl(*args: Any, jaxpr: core.ClosedJaxpr, **params: Any) -> list[Any]:
  return core.jaxpr_as_fun(jaxpr)(*args)


def _ir_attribute(value: Any) -> ir.Attribute:
  """A composite attribute as MLIR: Python scalars as i64/f64/bool, strings, and NumPy
  scalars and arrays as dense elements of their own dtype."""
  if isinstance(value, HashableArray):
    value = value.val
  if isinstance(value, (bool, np.bool_)):
    return ir.BoolAttr.get(bool(value))
  if isinstance(value, int):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
  if isinstance(value, float):
    return ir.FloatAttr.get(ir.F64Type.get(), value)
  if isinstance(value, str):
    return ir.StringAttr.get(value)
  if isinstance(value, (np.ndarray, np.generic)):
    array = np.asarray(value)
    return ir.DenseElementsAttr.get(
        array, type=mlir.dtype_to_ir_type(array.dtype), shape=list(array.shape))
  raise TypeError(f"composite attribute {value!r} of type {type(value).__name__} has no "
                  "StableHLO form; use a Python scalar, a string or a NumPy array.")


def _composite_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, name: str,
                        attributes: tuple, version: int, jaxpr: core.ClosedJaxpr
                        ) -> list[ir.Value]:
  """The decomposition becomes a private function the `stablehlo.composite` op names."""
  module = ctx.module_context.module
  symbols = ir.SymbolTable(module.operation)
  symbol, n = name, 0
  while symbol in symbols:
    n += 1
    symbol = f"{name}_{n}"
  in_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_in]
  out_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  with ir.InsertionPoint(module.body):
    fn = func.FuncOp(symbol, ir.FunctionType.get(in_types, out_types))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    block = fn.add_entry_block()
    with ir.InsertionPoint(block):
      func.ReturnOp(mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr,
                                              list(block.arguments)))
  composite_attributes = {}
  for key, leaves, treedef in attributes:
    value = tree_util.tree_unflatten(treedef, leaves)
    if value is not None:
      composite_attributes[key] = _ir_attribute(value)
  op = hlo.CompositeOp(out_types, list(args), name=ir.StringAttr.get(name),
                       decomposition=ir.FlatSymbolRefAttr.get(symbol),
                       composite_attributes=ir.DictAttr.get(composite_attributes),
                       version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), version))
  return list(op.results)


def _composite_no_derivative(*args: Any, **params: Any) -> Any:
  raise ValueError("JVP rule for composite not implemented. You can use `jaxon.custom_jvp` "
                   "to add support.")


def _composite_no_transpose(*args: Any, **params: Any) -> Any:
  raise ValueError("Transpose rule for composite not implemented. You can use "
                   "`jaxon.custom_jvp` or `jaxon.custom_vjp` to add support.")


composite_p = core.Primitive("composite")
composite_p.multiple_results = True
composite_p.def_impl(_composite_impl)
composite_p.def_abstract_eval(lambda *avals, jaxpr, **params: list(jaxpr.out_avals))
mlir.register_lowering(composite_p, _composite_lowering)
ad.primitive_jvps[composite_p] = _composite_no_derivative
ad.primitive_transposes[composite_p] = _composite_no_transpose


# ----------------------------------------------------------------------------- platform_dependent

def _platform_index_abstract_eval(*, platforms: tuple) -> ShapedArray:
  return ShapedArray((), np.dtype(np.int32))


def _platform_index_for(platforms: tuple, platform: str) -> int:
  """The index of the group naming `platform`, else of the default (None) group."""
  for i, group in enumerate(platforms):
    if group is not None and platform in group:
      return i
  for i, group in enumerate(platforms):
    if group is None:
      return i
  raise NotImplementedError(f"platform_dependent has no branch for platform '{platform}' "
                            f"(branches: {platforms}) and no default.")


platform_index_p = core.Primitive("platform_index")
platform_index_p.def_impl(functools.partial(deferred.apply_primitive, platform_index_p))
platform_index_p.def_abstract_eval(_platform_index_abstract_eval)


def _platform_index_lowering(ctx: mlir.LoweringRuleContext, *, platforms: tuple
                             ) -> list[ir.Value]:
  return [mlir.ir_constant(np.int32(_platform_index_for(platforms, mlir.current_platform())))]


mlir.register_lowering(platform_index_p, _platform_index_lowering)


def platform_dependent(*args: Any, default: Callable | None = None,
                       **per_platform: Callable) -> Any:
  """Applies the branch for the platform the program is compiled for (`cpu=`, `cuda=`,
  `rocm=`, `tpu=`, else `default`) to `args` (pytrees). Eagerly the branch runs directly;
  under tracing the choice is a `platform_index` equation feeding a `cond`, resolved when
  the program is lowered: the index is a constant then, and XLA folds the `cond` away.
  Unlike JAX (whose `cond` carries `branches_platforms` and lowers only the chosen branch),
  every branch is lowered, so each must be lowerable on the platform compiled for."""
  groups: list[tuple[list[str], Callable]] = []
  for platform, branch in per_platform.items():
    if not callable(branch):
      raise TypeError(f"lax.platform_dependent: the '{platform}' branch must be a callable.")
    if platform == "gpu":
      raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    for names, existing in groups:
      if existing is branch:
        names.append(platform)
        break
    else:
      groups.append(([platform], branch))
  platforms = tuple(tuple(names) for names, _ in groups)
  branches = tuple(branch for _, branch in groups)
  if default is not None:
    if not callable(default):
      raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    platforms, branches = platforms + (None,), branches + (default,)
  index = platform_index_p.bind(platforms=platforms)
  concrete = core.concrete_or_none(index)
  if concrete is not None:
    return branches[int(concrete)](*args)
  return conditionals._bind_cond(index, branches, args, "switch")
