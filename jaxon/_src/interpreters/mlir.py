"""Lowering jaxprs to StableHLO with jaxlib's MLIR Python bindings.

Each primitive registers a lowering rule `rule(ctx, *operands, **params) -> [values]`: `ctx`
carries the input and output avals, operands are `ir.Value`s. A jaxpr lowers to a module
whose public `main` takes the constvars, then the invars.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, func, sdy
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes
from jaxon._src.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray

LoweringRule = Callable[..., Sequence[ir.Value]]

_lowerings: dict[core.Primitive, LoweringRule] = {}
_platform_lowerings: dict[str, dict[core.Primitive, LoweringRule]] = {}
# "native" lowers with StableHLO ops only, skipping every platform's rules (jaxlib's LAPACK
# custom calls): for programs another XLA runs (TensorFlow's, through jax2tf), which does not
# have jaxlib's kernels. Primitives with no generic rule then fail to lower, naming themselves.
NATIVE = "native"
_platform: contextvars.ContextVar[str | None] = contextvars.ContextVar("lowering_platform",
                                                                       default=None)
# Outside a `lowering_platform` block, lowering is for the backend's platform, which the
# runtime names (`set_backend_platform`): a GPU must not get the CPU's LAPACK calls.
_backend_platform: Callable[[], str] = lambda: "cpu"


def set_backend_platform(platform: Callable[[], str]) -> None:
  """`platform()` names the platform programs are lowered for by default."""
  global _backend_platform
  _backend_platform = platform


@contextlib.contextmanager
def lowering_platform(platform: str) -> Iterator[None]:
  """Lowers for `platform` ("cpu", "cuda" or `NATIVE`) inside the block. Nothing may compile there:
  flush pending eager work first (its programs would be lowered for `platform` too)."""
  token = _platform.set(platform)
  try:
    yield
  finally:
    _platform.reset(token)


def register_lowering(prim: core.Primitive, rule: LoweringRule,
                      platform: str | None = None) -> LoweringRule:
  """Registers how `prim` lowers to StableHLO (for every platform, or one)."""
  if platform is None:
    _lowerings[prim] = rule
  else:
    _platform_lowerings.setdefault(platform, {})[prim] = rule
  return rule


def current_platform() -> str:
  """The platform being lowered for ("cpu", "cuda", or `NATIVE`)."""
  return _platform.get() or _backend_platform()


def _lowering_rule(prim: core.Primitive) -> LoweringRule:
  platform = current_platform()
  rule = _platform_lowerings.get(platform, {}).get(prim) or _lowerings.get(prim)
  if rule is None:
    raise NotImplementedError(f"MLIR translation rule for primitive '{prim.name}' not found "
                              f"for platform {platform}")
  return rule


# ----------------------------------------------------------------------------- types

def dtype_to_ir_type(dtype: Any) -> ir.Type:
  dt = np.dtype(dtype)
  if dt == dtypes.float0 or dt == np.bool_:
    return ir.IntegerType.get_signless(1)
  if dt.kind == "i":
    return ir.IntegerType.get_signless(dt.itemsize * 8)
  if dt.kind == "u":
    return ir.IntegerType.get_unsigned(dt.itemsize * 8)
  if dt.kind == "c":
    return ir.ComplexType.get(dtype_to_ir_type(np.float32 if dt.itemsize == 8 else np.float64))
  return _FLOAT_TYPES[dt.name]()


_FLOAT_TYPES: dict[str, Callable[[], ir.Type]] = {
    "float16": ir.F16Type.get, "float32": ir.F32Type.get, "float64": ir.F64Type.get,
    "bfloat16": ir.BF16Type.get, "float8_e4m3fn": ir.Float8E4M3FNType.get,
    "float8_e5m2": ir.Float8E5M2Type.get, "float8_e4m3b11fnuz": ir.Float8E4M3B11FNUZType.get,
    "float8_e4m3": ir.Float8E4M3Type.get, "float8_e3m4": ir.Float8E3M4Type.get,
    "float8_e4m3fnuz": ir.Float8E4M3FNUZType.get, "float8_e5m2fnuz": ir.Float8E5M2FNUZType.get,
    "float8_e8m0fnu": ir.Float8E8M0FNUType.get, "float4_e2m1fn": ir.Float4E2M1FNType.get,
    "float6_e2m3fn": ir.Float6E2M3FNType.get, "float6_e3m2fn": ir.Float6E3M2FNType.get,
}


def aval_to_ir_type(aval: ShapedArray) -> ir.RankedTensorType:
  """The tensor type of `aval`'s data: extended dtypes (keys) lower to their physical
  representation, the element shape appended (see `dtypes.ExtendedDType`). Symbolic
  dimensions lower to dynamic ones (`?`)."""
  aval = core.physical_aval(aval)
  shape = aval.shape
  if not core.is_constant_shape(shape):
    shape = [d if type(d) is int else ir.ShapedType.get_dynamic_size() for d in shape]
  return ir.RankedTensorType.get(shape, dtype_to_ir_type(aval.dtype))


# ----------------------------------------------------------------------------- dynamic shapes
# A shape-polymorphic module (`jaxon.export` with symbolic dimensions) computes the values of
# its dimension variables at the top of `main`; while it is lowered, `dim_var_values` maps
# each variable's name to its `tensor<i32>` value, and the ops whose result shape is an
# operand in StableHLO (broadcast, iota, reshape) take it from `shape_tensor`.

class _DimVarState(threading.local):
  values: dict[str, ir.Value] | None = None


_dim_vars = _DimVarState()


@contextlib.contextmanager
def dim_var_values(values: dict[str, ir.Value]) -> Any:
  previous, _dim_vars.values = _dim_vars.values, values
  try:
    yield
  finally:
    _dim_vars.values = previous


class _IrInt:
  """A `tensor<i32>` value doing integer arithmetic with ints and others like it, so that a
  symbolic dimension evaluates (`DimExpr.evaluate`) to ops."""

  def __init__(self, value: ir.Value):
    self.value = value

  def _op(self, other: Any, op: Callable, reverse: bool = False) -> _IrInt:
    other_value = other.value if isinstance(other, _IrInt) else ir_constant(np.int32(other))
    a, b = (other_value, self.value) if reverse else (self.value, other_value)
    return _IrInt(op(a, b))

  __add__ = lambda self, o: self._op(o, hlo.add)  # noqa: E731
  __radd__ = lambda self, o: self._op(o, hlo.add, True)  # noqa: E731
  __sub__ = lambda self, o: self._op(o, hlo.subtract)  # noqa: E731
  __rsub__ = lambda self, o: self._op(o, hlo.subtract, True)  # noqa: E731
  __mul__ = lambda self, o: self._op(o, hlo.multiply)  # noqa: E731
  __rmul__ = lambda self, o: self._op(o, hlo.multiply, True)  # noqa: E731
  # dimensions and their divisors are positive, where truncation is floor division
  __floordiv__ = lambda self, o: self._op(o, hlo.divide)  # noqa: E731
  __mod__ = lambda self, o: self._op(o, hlo.remainder)  # noqa: E731
  max = rmax = lambda self, o: self._op(o, hlo.maximum)  # noqa: E731  (`max(b, 5)` dims)
  min = rmin = lambda self, o: self._op(o, hlo.minimum)  # noqa: E731


def dim_value(d: Any) -> ir.Value:
  """A dimension (an int or a symbolic one) as a `tensor<i32>` value."""
  if type(d) is int:
    return ir_constant(np.int32(d))
  if _dim_vars.values is None:
    raise ValueError(f"the symbolic dimension {d} can only be lowered by jaxon.export")
  value = d.evaluate({k: _IrInt(v) for k, v in _dim_vars.values.items()})
  return value.value if isinstance(value, _IrInt) else ir_constant(np.int32(value))


def shape_tensor(shape: Sequence[Any]) -> ir.Value:
  """`shape` as a `tensor<rank x i32>` value."""
  i32_1 = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(32))
  parts = [hlo.reshape(i32_1, dim_value(d)) for d in shape]
  if not parts:
    return ir_constant(np.zeros((0,), np.int32))
  return parts[0] if len(parts) == 1 else hlo.concatenate(parts, 0)


def broadcast_in_dim(aval_out: ShapedArray, operand: ir.Value, dims: Sequence[int]
                     ) -> ir.Value:
  """`stablehlo.broadcast_in_dim`, or its dynamic form for a symbolic output shape."""
  if core.is_constant_shape(aval_out.shape):
    return hlo.broadcast_in_dim(aval_to_ir_type(aval_out), operand, list(dims))
  shape = core.physical_aval(aval_out).shape
  return hlo.dynamic_broadcast_in_dim(aval_to_ir_type(aval_out), operand,
                                     shape_tensor(shape), list(dims))


def iota(aval_out: ShapedArray, dimension: int) -> ir.Value:
  if core.is_constant_shape(aval_out.shape):
    return hlo.iota(aval_to_ir_type(aval_out), dimension)
  return hlo.dynamic_iota(aval_to_ir_type(aval_out), shape_tensor(aval_out.shape), dimension)


def reshape(aval_out: ShapedArray, operand: ir.Value) -> ir.Value:
  if core.is_constant_shape(aval_out.shape):
    return hlo.reshape(aval_to_ir_type(aval_out), operand)
  shape = core.physical_aval(aval_out).shape
  return hlo.dynamic_reshape(aval_to_ir_type(aval_out), operand, shape_tensor(shape))


def element_dims(aval: ShapedArray) -> tuple[int, ...]:
  """The sizes of the trailing dimensions `aval`'s dtype adds to its physical shape: ()
  for NumPy dtypes. Lowerings of the primitives that move elements around (slice, gather,
  transpose, …) extend their dimension parameters over these, leaving them untouched."""
  return aval.dtype.element_shape if dtypes.is_extended(aval.dtype) else ()


def constant_data(value: Any) -> np.ndarray:
  """A jaxpr constant as host data: the physical data for an extended dtype (an Array of
  keys, whose `_value` is its device buffer's uint32 contents)."""
  if dtypes.is_extended(core.get_aval(value).dtype):
    return np.asarray(value._value)
  return np.asarray(value)


def ir_constant(value: Any, dtype: Any = None) -> ir.Value:
  """A StableHLO constant holding `value` (a scalar or array)."""
  arr = np.asarray(value, dtype=dtype)
  if arr.dtype == dtypes.float0:  # symbolic zeros carry no data: lowered as false booleans
    arr = np.zeros(arr.shape, np.bool_)
  if not arr.flags.c_contiguous:
    arr = arr.copy(order="C")
  attr = ir.DenseElementsAttr.get(arr, type=dtype_to_ir_type(arr.dtype), shape=arr.shape)
  return hlo.constant(attr)


def full_like_aval(value: Any, aval: ShapedArray) -> ir.Value:
  """A constant of `aval`'s shape filled with `value`, broadcast inside the program."""
  scalar = ir_constant(np.array(value, aval.dtype))
  if not aval.shape:
    return scalar
  return broadcast_in_dim(aval, scalar, [])


# ----------------------------------------------------------------------------- lowering

@dataclasses.dataclass
class ModuleContext:
  module: ir.Module
  name: str
  # Python functions the module calls back into (custom calls name them by position): the
  # executable hands them to XLA and keeps them alive.
  host_callbacks: list[Callable[..., Any]] = dataclasses.field(default_factory=list)
  # The token of the last effect (a print, I/O) in each block: effects take it and give
  # the next one, so they happen in program order (XLA would schedule them freely). Loops
  # and branches with effects inside carry it through their regions.
  effect_tokens: dict[ir.Block, ir.Value] = dataclasses.field(default_factory=dict)

  def effect_token(self) -> ir.Value:
    """The token the next effect at the current insertion point waits for."""
    token = self.effect_tokens.get(ir.InsertionPoint.current.block)
    return hlo.after_all([]) if token is None else token

  def set_effect_token(self, token: ir.Value) -> None:
    self.effect_tokens[ir.InsertionPoint.current.block] = token

  # The mesh of an SPMD program, (axis names, axis sizes), once declared (`mesh_symbol`).
  mesh: tuple[tuple[str, ...], tuple[int, ...]] | None = None

  def mesh_symbol(self, axis_names: Sequence[str], axis_sizes: Sequence[int]) -> str:
    """The symbol of the module's Shardy mesh (`sdy.mesh @mesh`), declared on first use;
    lowerings name it in their sharding attributes (`#sdy.sharding<@mesh, ...>`). A
    program has one mesh: another one is an error."""
    axes = (tuple(axis_names), tuple(axis_sizes))
    if self.mesh is None:
      text = ", ".join(f'"{n}"={s}' for n, s in zip(*axes))
      with ir.InsertionPoint.at_block_begin(self.module.body):
        sdy.MeshOp("mesh", ir.Attribute.parse(f"#sdy.mesh<[{text}]>"))
      self.mesh = axes
    elif self.mesh != axes:
      raise ValueError(f"A program may use one mesh: it uses axes {dict(zip(*self.mesh))} "
                       f"and {dict(zip(*axes))}.")
    return "mesh"


@dataclasses.dataclass
class LoweringRuleContext:
  """What a lowering rule learns about the equation besides its operands."""
  module_context: ModuleContext
  primitive: core.Primitive | None
  avals_in: Sequence[ShapedArray]
  avals_out: Sequence[ShapedArray]

  def replace(self, **kw: Any) -> LoweringRuleContext:
    return dataclasses.replace(self, **kw)


@functools.cache
def _upstream_dialects() -> ir.DialectRegistry:
  """MLIR's own dialects (func, arith, …) as jaxlib builds them in."""
  registry = ir.DialectRegistry()
  _jax_mlir_ext.register_dialects(registry)
  return registry


def make_ir_context() -> ir.Context:
  """A fresh context that knows func, StableHLO and CHLO. Without `func` loaded, modules
  still compile but print as generic MLIR (`"func.func"() ({...})`)."""
  context = ir.Context()
  context.append_dialect_registry(_upstream_dialects())
  context.dialects["func"]  # loads it: the registry alone only makes it available
  chlo.register_dialect(context)
  hlo.register_dialect(context)
  sdy.register_dialect(context)
  return context


def jaxpr_subcomp(ctx: ModuleContext, jaxpr: Jaxpr, consts: Sequence[ir.Value],
                  args: Sequence[ir.Value]) -> list[ir.Value]:
  """Emits the ops of `jaxpr` at the current insertion point; returns its output values."""
  env: dict[core.Var, ir.Value] = {}

  def read(atom: core.Atom) -> ir.Value:
    if type(atom) is Literal:
      return ir_constant(atom.val, atom.aval.dtype)
    return env[atom]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    rule_ctx = LoweringRuleContext(ctx, eqn.primitive, [a.aval for a in eqn.invars],
                                   [v.aval for v in eqn.outvars])
    outs = _lowering_rule(eqn.primitive)(rule_ctx, *map(read, eqn.invars), **eqn.params)
    outs = _as_value_list(outs)
    if len(outs) != len(eqn.outvars):
      raise ValueError(f"lowering of '{eqn.primitive.name}' produced {len(outs)} values for "
                       f"{len(eqn.outvars)} outputs")
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def _as_value_list(outs: Any) -> list[ir.Value]:
  if isinstance(outs, (ir.Value, ir.OpView, ir.Operation)):
    outs = [outs]
  return [o.result if isinstance(o, (ir.OpView, ir.Operation)) else o for o in outs]


def lower_jaxpr_to_module(jaxpr: Jaxpr, name: str = "main",
                          host_callbacks: list[Callable[..., Any]] | None = None,
                          mesh: tuple[Sequence[str], Sequence[int], int] | None = None,
                          arg_shardings: Sequence[str | None] = (),
                          result_shardings: Sequence[str | None] = (),
                          const_values: Sequence[Any] = ()) -> ir.Module:
  """A module whose public `main` computes `jaxpr` from (constvars..., invars...). The
  Python callbacks it calls are appended to `host_callbacks`, to compile it with.
  `const_values` (one per constvar, or empty): the NumPy value the module embeds as a
  constant, or None for a constvar that stays an argument.

  An SPMD program over `mesh` (axis names, axis sizes, number of devices) declares it as
  `@mesh`; `arg_shardings` (one per argument, constvars first) and `result_shardings` are
  Shardy attributes naming it (`#sdy.sharding<@mesh, [{"x"}, {}]>`), None for none."""
  context = make_ir_context()
  with context, ir.Location.unknown():
    module = ir.Module.create()
    module.operation.attributes["sym_name"] = ir.StringAttr.get(f"jit_{_sanitize(name)}")
    const_values = list(const_values) or [None] * len(jaxpr.constvars)
    arg_constvars = [v for v, c in zip(jaxpr.constvars, const_values) if c is None]
    in_types = [aval_to_ir_type(v.aval) for v in arg_constvars + jaxpr.invars]
    out_types = [aval_to_ir_type(v.aval) for v in jaxpr.outvars]
    ctx = ModuleContext(module, name, [] if host_callbacks is None else host_callbacks)
    with ir.InsertionPoint(module.body):
      main = func.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      main.attributes["sym_visibility"] = ir.StringAttr.get("public")
      if mesh is not None:
        annotate_spmd(ctx, main, mesh, arg_shardings, result_shardings)
      block = main.add_entry_block()
      with ir.InsertionPoint(block):
        arguments = iter(block.arguments)
        consts = [next(arguments) if c is None else ir_constant(c) for c in const_values]
        outs = jaxpr_subcomp(ctx, jaxpr, consts, list(arguments))
        func.ReturnOp(outs)
  return module


def annotate_spmd(ctx: ModuleContext, main: func.FuncOp,
                   mesh: tuple[Sequence[str], Sequence[int], int],
                   arg_shardings: Sequence[str | None],
                   result_shardings: Sequence[str | None]) -> None:
  axis_names, axis_sizes, num_devices = mesh
  i32 = ir.IntegerType.get_signless(32)
  ctx.module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, num_devices)
  ctx.module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, 1)
  if axis_names:
    ctx.mesh_symbol(axis_names, axis_sizes)

  def attrs(shardings: Sequence[str | None]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.DictAttr.get({} if s is None else
                                             {"sdy.sharding": ir.Attribute.parse(s)})
                             for s in shardings])
  main.arg_attrs = attrs(arg_shardings)
  main.result_attrs = attrs(result_shardings)


def _sanitize(name: str) -> str:
  return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fun"


def lower_fun(fun: Callable[..., Any], multiple_results: bool = True) -> LoweringRule:
  """A lowering rule that traces `fun` (written with lax) on the equation's avals and
  inlines the result: for primitives whose lowering is a composition of others."""
  from jaxon._src.interpreters import partial_eval as pe

  def rule(ctx: LoweringRuleContext, *args: ir.Value, **params: Any) -> list[ir.Value]:
    def flat_fun(*xs):
      out = fun(*xs, **params)
      return list(out) if multiple_results else [out]
    with core.set_current_trace(core.EvalTrace()):
      jaxpr, consts = pe.trace_to_jaxpr(flat_fun, ctx.avals_in)
    const_values = [ir_constant(constant_data(c)) for c in consts]
    return jaxpr_subcomp(ctx.module_context, jaxpr, const_values, args)
  return rule


def closed_jaxpr_subcomp(ctx: ModuleContext, closed: ClosedJaxpr,
                         args: Sequence[ir.Value]) -> list[ir.Value]:
  """Inlines a closed jaxpr whose consts are concrete values."""
  consts = [ir_constant(constant_data(c)) for c in closed.consts]
  return jaxpr_subcomp(ctx, closed.jaxpr, consts, args)
