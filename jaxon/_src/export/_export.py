"""`jaxon.export`: a jitted function saved, for given argument shapes and dtypes, as a
program that can be serialized, loaded in another process and called.

An `Exported` carries what JAX's carries — the input and output avals and pytrees, the
StableHLO module (`mlir_module_serialized`, a portable artifact that other runtimes such as
TensorFlow run) — and, beyond JAX, the program as jaxpr text (`jaxpr_text`, with the values
of its constants). `Exported.call` evaluates that jaxpr, read back with `jaxpr_from_text`,
as one `pjit` call: transformations see the real primitives, so a loaded function supports
`jit`, `grad` of any order, `jvp` and `vmap` (JAX's supports reverse mode only, to the
order saved with it). Custom derivative rules are saved as jaxprs (see
`custom_derivatives.save_rules`); a program whose text cannot be read back (a host
callback) is refused when exported.

With symbolic dimensions (`symbolic_shape`), the program is traced once; a call binds the
dimension variables from its arguments' shapes, checks them as the module's shape
assertions do (JAX's messages), and reads the jaxpr text with those values.

A `jit` given `NamedSharding`s exports an SPMD program over its mesh, as JAX 0.10.2 does
with Shardy: `nr_devices` is the mesh's size, the shardings are kept as NamedShardings
(`in_shardings_jax(mesh)` gives them over any mesh of that shape) and `in_shardings_hlo` is
all None, as JAX's. A call runs the program over the mesh of its sharded arguments.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, tree_util
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.export import _lowering, shape_poly
from jaxon._src.jaxpr_parser import jaxpr_to_text, read_jaxpr_text
from jaxon._src.xla import stablehlo_artifact

# The calling conventions of the serialized module (JAX's numbering): 9 reads effect tokens
# from `main`'s signature, 10 requires the platforms to be named. jaxon writes 10.
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
CALLING_CONVENTION_VERSION = 10
_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def default_export_platform() -> str:
  """The platform a module is exported for when `platforms` is not given."""
  return "cpu"


class DisabledSafetyCheck:
  """A safety check to skip when calling an exported module (JAX's names)."""

  def __init__(self, name: str):
    self._name = name

  @classmethod
  def platform(cls) -> DisabledSafetyCheck:
    return cls("platform")

  @classmethod
  def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
    return cls(f"custom_call:{target_name}")

  def is_custom_call(self) -> str | None:
    return self._name[len("custom_call:"):] if self._name.startswith("custom_call:") else None

  def __eq__(self, other: object) -> bool:
    return isinstance(other, DisabledSafetyCheck) and self._name == other._name

  def __hash__(self) -> int:
    return hash(self._name)

  def __str__(self) -> str:
    return self._name

  __repr__ = __str__


@dataclasses.dataclass(frozen=True)
class Exported:
  """A function exported for argument shapes and dtypes. `in_tree`/`out_tree` are the
  pytrees of `(args, kwargs)` and of the results; `in_avals`/`out_avals` their leaves'
  abstract values, which may have symbolic dimensions."""

  fun_name: str
  in_tree: tree_util.PyTreeDef
  in_avals: tuple[ShapedArray, ...]
  out_tree: tree_util.PyTreeDef
  out_avals: tuple[ShapedArray, ...]
  in_shardings_hlo: tuple[Any, ...]
  out_shardings_hlo: tuple[Any, ...]
  nr_devices: int
  platforms: tuple[str, ...]
  ordered_effects: tuple[Any, ...]
  unordered_effects: tuple[Any, ...]
  disabled_safety_checks: tuple[DisabledSafetyCheck, ...]
  mlir_module_serialized: bytes
  calling_convention_version: int
  # beyond JAX: the program as jaxpr text and its constants' values, in text order (None
  # for a program exported for its module only, see `export_module_only`)
  jaxpr_text: str | None
  jaxpr_consts: tuple[Any, ...]
  # the constraints of the symbolic scope of the avals
  constraints: tuple[str, ...]
  # the VJP saved with a deserialized program (`serialize(vjp_order=k)`; it holds the next)
  saved_vjps: tuple[Exported, ...] = ()
  # as JAX's: a NamedSharding (or None) for each argument and result of a sharded export
  _in_named_shardings: tuple[Any, ...] = ()
  _out_named_shardings: tuple[Any, ...] = ()
  _call_cache: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

  @property
  def vjp_order(self) -> int:
    """How many orders of VJP modules this carries (`serialize(vjp_order=...)` wrote). Any
    order can be computed again from the jaxpr (`vjp()`)."""
    return 1 + self.saved_vjps[0].vjp_order if self.saved_vjps else 0

  @property
  def module_kept_var_idx(self) -> tuple[int, ...]:
    return tuple(range(len(self.in_avals)))

  @property
  def uses_global_constants(self) -> bool:
    return len(self.platforms) > 1 or not all(
        core.is_constant_shape(a.shape) for a in self.in_avals)

  @property
  def _has_named_shardings(self) -> bool:
    return any(s is not None for s in self._in_named_shardings + self._out_named_shardings)

  def in_shardings_jax(self, mesh: Any) -> tuple[Any, ...]:
    """The arguments' shardings over `mesh` (a mesh of the exported one's shape), to place
    arguments with `device_put`; None where the export gave none."""
    return tuple(_over_mesh(s, mesh) for s in self._in_named_shardings)

  def out_shardings_jax(self, mesh: Any) -> tuple[Any, ...]:
    return tuple(_over_mesh(s, mesh) for s in self._out_named_shardings)

  def __str__(self) -> str:
    return f"Exported(fun_name={self.fun_name}, in_avals={self.in_avals})"

  __repr__ = __str__

  def mlir_module(self) -> str:
    """The StableHLO module as text."""
    from jaxon._src.interpreters import mlir
    context = mlir.make_ir_context()
    with context:
      return str(stablehlo_artifact.deserialize(self.mlir_module_serialized, context))

  def has_vjp(self) -> bool:
    """True: jaxon computes the VJP from the saved jaxpr whenever it is asked for."""
    return True

  def vjp(self) -> Exported:
    """The VJP of this function as an Exported: it takes the primal arguments then the
    output cotangents (flat) and gives the input cotangents (flat)."""
    if self.saved_vjps:
      return self.saved_vjps[0]
    from jaxon._src import api
    from jaxon._src.jit import ShapeDtypeStruct, jit
    n_in = len(self.in_avals)

    def fun_vjp(*primals_and_cts: Any) -> tuple[Any, ...]:
      primals, cts = primals_and_cts[:n_in], primals_and_cts[n_in:]
      _, pullback = api.vjp(lambda *xs: tuple(self._call_flat(xs)), *primals)
      return tuple(pullback(tuple(cts)))
    fun_vjp.__name__ = f"{self.fun_name}_vjp"
    specs = [ShapeDtypeStruct(a.shape, a.dtype) for a in self.in_avals] + [
        ShapeDtypeStruct(a.shape, a.to_tangent_aval().dtype) for a in self.out_avals]
    return export(jit(fun_vjp), platforms=self.platforms)(*specs)

  def serialize(self, vjp_order: int = 0) -> bytearray:
    """The bytes of this program, with the VJP modules of `vjp_order` orders (see
    `serialization.py` for the format)."""
    from jaxon._src.export import serialization
    return serialization.serialize(self, vjp_order)

  def call(self, *args: Any, **kwargs: Any) -> Any:
    """Calls the program with arguments of the exported structure, dtypes and shapes
    (symbolic dimensions bound by the arguments); works under every transformation."""
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != self.in_tree:
      raise ValueError(
          "The invocation args and kwargs must have the same pytree structure as when the "
          f"function '{self.fun_name}' was exported, but they have the following structural "
          f"differences: exported with {self.in_tree} and called with {in_tree}.")
    return self.out_tree.unflatten(self._call_flat(leaves))

  def _call_flat(self, leaves: Sequence[Any]) -> list[Any]:
    from jaxon._src.pjit import pjit_p, sharding_params
    from jaxon._src.sharding_impls import UNSPECIFIED
    env = self._bind_dims([core.get_aval(x) for x in leaves])
    closed = self._jaxpr_for(env)
    params = {}
    mesh = self._call_mesh(leaves) if self._has_named_shardings else None
    if mesh is not None:
      params = sharding_params(
          *([UNSPECIFIED if s is None else _over_mesh(s, mesh) for s in shardings]
            for shardings in (self._in_named_shardings, self._out_named_shardings)))
    return pjit_p.bind(*leaves, jaxpr=closed, name=self.fun_name, **params)

  def _call_mesh(self, leaves: Sequence[Any]) -> Any:
    """The mesh a sharded program runs on: that of an argument laid out over a mesh of the
    exported shape. Under a transformation (traced arguments, whose placement is not known
    yet) None: the program follows its arguments' placement, unconstrained. Concrete
    arguments on another number of devices are refused, as JAX refuses them."""
    from jaxon._src import sharding_impls
    from jaxon._src.xla import sharded
    exported_mesh = next(s.mesh for s in self._in_named_shardings + self._out_named_shardings
                         if s is not None)
    n_devices = 1
    for x in leaves:
      if isinstance(x, core.Tracer):
        return None
      if sharded.is_placed(x):
        sharding = sharding_impls.sharding_of(x)
        if (isinstance(sharding, sharding_impls.NamedSharding)
            and sharding.mesh.shape_tuple == exported_mesh.shape_tuple):
          return sharding.mesh
        n_devices = max(n_devices, sharding.num_devices)
    raise ValueError(f"Function {self.fun_name} was exported for {self.nr_devices} devices "
                     f"and is called in a context with {n_devices} devices, which is not "
                     f"allowed. Place the arguments with `in_shardings_jax(mesh)` for a mesh "
                     f"of shape {dict(exported_mesh.shape_tuple)}.")

  def _jaxpr_for(self, env: dict[str, Any]) -> ClosedJaxpr:
    if self.jaxpr_text is None:
      raise ValueError(f"{self.fun_name} was exported for its StableHLO module only (as "
                       "jax2tf.convert exports), without the jaxpr that jaxon calls and "
                       "transforms: export it with `jaxon.export.export`")
    key = tuple(sorted(env.items(), key=lambda kv: kv[0]))
    closed = self._call_cache.get(key)
    if closed is None:
      scope = shape_poly.SymbolicScope(self.constraints)
      closed = read_jaxpr_text(self.jaxpr_text, self.jaxpr_consts, scope,
                               env if env else None)
      self._call_cache[key] = closed
    return closed

  def _bind_dims(self, avals: Sequence[ShapedArray]) -> dict[str, Any]:
    """The values of the dimension variables in the arguments' shapes, checked as the
    module's shape assertions check them (JAX's messages)."""
    for i, (want, got) in enumerate(zip(self.in_avals, avals)):
      if want.dtype != got.dtype:
        raise ValueError(f"Dtype mismatch for args[{i}]: expected {want.dtype} and called "
                         f"with {got.dtype}")
      if want.ndim != got.ndim:
        raise ValueError(f"Rank mismatch for args[{i}]: expected {want.ndim} and called "
                         f"with {got.ndim}")
      for axis, (w, g) in enumerate(zip(want.shape, got.shape)):
        if not core.is_symbolic_dim(w) and w != g:
          raise ValueError(f"Shape mismatch for args[{i}].shape[{axis}] (expected same "
                           f"constant): expected {_shape_str(want.shape)} and called with "
                           f"{_shape_str(got.shape)}")
    if all(core.is_constant_shape(a.shape) for a in self.in_avals):
      return {}
    spec = _lowering.shape_spec_text(self.in_avals)
    sources = _lowering.dim_sources(self.in_avals)
    env: dict[str, Any] = {}
    obtained = []
    for var, src in sources.items():
      size = avals[src.arg].shape[src.axis]
      value, remainder = divmod(size - src.offset, src.coeff)
      if not (core.is_symbolic_dim(remainder) or remainder == 0):
        raise ValueError(
            f"Input shapes do not match the polymorphic shapes specification. Division had "
            f"remainder {remainder} when computing the value of '{var}'. Using the "
            f"following polymorphic shapes specifications: {spec}.")
      env[var] = value
      obtained.append(f"'{var}' = {value} from specification "
                      f"'{self.in_avals[src.arg].shape[src.axis]}' for dimension "
                      f"args[{src.arg}].shape[{src.axis}] (= {size})")
    obtained_text = ", ".join(obtained) + ", "
    for var, value in env.items():
      if not core.is_symbolic_dim(value) and value < 1:
        raise ValueError(
            f"Input shapes do not match the polymorphic shapes specification. Expected "
            f"value >= 1 for dimension variable '{var}'. Using the following polymorphic "
            f"shapes specifications: {spec}. Obtained dimension variables: "
            f"{obtained_text}. Please see https://docs.jax.dev/en/latest/export/"
            "shape_poly.html#shape-assertion-errors for more details.")
    for i, (want, got) in enumerate(zip(self.in_avals, avals)):
      for axis, (w, g) in enumerate(zip(want.shape, got.shape)):
        if core.is_symbolic_dim(w) and w.evaluate(env) != g:
          raise ValueError(
              f"Input shapes do not match the polymorphic shapes specification. Found "
              f"inconsistency between dimension size args[{i}].shape[{axis}] (= {g}) and "
              f"the specification '{w}' (= {w.evaluate(env)}). Using the following "
              f"polymorphic shapes specifications: {spec}. Obtained dimension variables: "
              f"{obtained_text}. Please see https://docs.jax.dev/en/latest/export/"
              "shape_poly.html#shape-assertion-errors for more details.")
    scope = shape_poly.SymbolicScope(self.constraints)
    for constraint, geq0 in zip(self.constraints, scope.geq0):
      value = geq0.evaluate(env)
      if not core.is_symbolic_dim(value) and value < 0:
        raise ValueError(f"Input shapes do not match the symbolic shape constraint "
                         f"{constraint}. Obtained dimension variables: {obtained_text}.")
    return env

  def run_module(self, *args: Any) -> list[np.ndarray]:
    """Runs the serialized StableHLO module (not the jaxpr) on NumPy arguments, refining
    its shapes for theirs: what another runtime does with it. For checking a module."""
    return _run_module(self, [np.asarray(x) for x in tree_util.tree_leaves(args)])


def _over_mesh(sharding: Any, mesh: Any) -> Any:
  if sharding is None:
    return None
  if mesh.shape_tuple != sharding.mesh.shape_tuple:
    raise ValueError(f"The exported program's mesh has axes {dict(sharding.mesh.shape_tuple)}"
                     f"; the mesh given has {dict(mesh.shape_tuple)}")
  from jaxon._src.sharding_impls import NamedSharding
  return NamedSharding(mesh, sharding.spec)


def _export_shardings(entry: Any, n_in: int, n_out: int
                      ) -> tuple[tuple[Any, ...], tuple[Any, ...], _lowering.Spmd | None]:
  """The NamedShardings (or None) of a jit's flat arguments and results, and how its module
  is laid out over their mesh (None when the jit has no shardings)."""
  from jaxon._src.jit import _entry_shardings
  from jaxon._src.sharding_impls import NamedSharding
  if entry.shardings is None:
    return (None,) * n_in, (None,) * n_out, None
  flat_in, flat_out = _entry_shardings(entry)
  mesh = None
  for what, shardings in (("in_shardings", flat_in), ("out_shardings", flat_out)):
    for i, s in enumerate(shardings):
      if s is None:
        continue
      if not isinstance(s, NamedSharding):
        raise ValueError(f"export: {what}[{i}] is {s!r}; jaxon exports programs sharded "
                         "with NamedSharding (or PartitionSpecs under a mesh) only")
      if mesh is None:
        mesh = s.mesh
      elif s.mesh.shape_tuple != mesh.shape_tuple:
        raise ValueError(f"export: {what}[{i}] is over a mesh with axes "
                         f"{dict(s.mesh.shape_tuple)}, another than the "
                         f"{dict(mesh.shape_tuple)} of the other shardings; an exported "
                         "program has one mesh")
  if mesh is None:
    return tuple(flat_in), tuple(flat_out), None
  sdy = lambda shardings, avals: [None if s is None else s._to_sdy(a.ndim)  # noqa: E731
                                  for s, a in zip(shardings, avals)]
  closed = entry.jaxpr
  spmd = _lowering.Spmd((mesh.axis_names, mesh.devices.shape, math.prod(mesh.devices.shape)),
                        sdy(flat_in, closed.in_avals), sdy(flat_out, closed.out_avals))
  return tuple(flat_in), tuple(flat_out), spmd


def _shape_str(shape: Sequence[Any]) -> str:
  return f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def _run_module(exp: Exported, args: list[np.ndarray]) -> list[np.ndarray]:
  from jaxlib.mlir import ir

  from jaxon._src.interpreters import mlir
  if exp.nr_devices > 1:
    raise ValueError(f"run_module runs modules for one device; {exp.fun_name} was exported "
                     f"for {exp.nr_devices} devices (call it with `call`)")
  env = exp._bind_dims([ShapedArray(x.shape, x.dtype) for x in args])
  context = mlir.make_ir_context()
  with context, ir.Location.unknown():
    module = stablehlo_artifact.deserialize(exp.mlir_module_serialized, context)
    main = next(op for op in module.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "main")
    types = [mlir.aval_to_ir_type(ShapedArray(x.shape, x.dtype)) for x in args]
    main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        types, ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results))
    for arg, t in zip(main.regions[0].blocks[0].arguments, types):
      arg.set_type(t)
    bytecode = module.operation.get_asm(binary=True, enable_debug_info=False)
  refined = stablehlo_artifact.refine_shapes(bytecode)
  out_avals = [ShapedArray(shape_poly.evaluate_shape(a.shape, env), a.dtype)
               for a in exp.out_avals]
  return stablehlo_artifact.compile_and_run(refined, args, out_avals)


def export(fun_jit: Callable, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
  """`export(jit(f))(*args, **kwargs)`: `f` exported for arguments shaped like `args`
  (arrays, or `ShapeDtypeStruct`s whose shapes may be symbolic)."""
  return _exporter(fun_jit, platforms, disabled_checks, with_jaxpr=True)


def export_module_only(fun_jit: Callable, *, platforms: Sequence[str] | None = None
                       ) -> Callable[..., Exported]:
  """`export` without the jaxpr text, for runtimes that run the StableHLO module alone
  (jax2tf.convert): its programs may hold what a jaxpr's text cannot carry, such as the
  TensorFlow function of a `call_tf`, which the module embeds compiled. Its `call` and
  `serialize` are refused."""
  return _exporter(fun_jit, platforms, (), with_jaxpr=False)


def _exporter(fun_jit: Callable, platforms: Sequence[str] | None,
              disabled_checks: Sequence[DisabledSafetyCheck], with_jaxpr: bool
              ) -> Callable[..., Exported]:
  from jaxon._src.jit import is_jitted
  if not is_jitted(fun_jit):
    raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
  platforms = tuple(p.lower() for p in (platforms or (default_export_platform(),)))
  for p in platforms:
    if p not in _PLATFORMS:
      raise ValueError(f"Unsupported platform {p!r}: jaxon exports for {_PLATFORMS}")

  def do_export(*args: Any, **kwargs: Any) -> Exported:
    lowered = fun_jit.lower(*args, **kwargs)
    entry = lowered._entry
    closed = entry.jaxpr
    in_avals = tuple(a.strip_weak_type() for a in closed.in_avals)
    scope = _common_scope(in_avals, fun_jit.__name__)
    text, consts = jaxpr_to_text(closed) if with_jaxpr else (None, [])
    in_shardings, out_shardings, spmd = _export_shardings(entry, len(in_avals),
                                                          len(closed.out_avals))
    module = _lowering.lower_exported(closed, fun_jit.__name__, len(platforms), in_avals,
                                      spmd)
    artifact = stablehlo_artifact.serialize(module, stablehlo_artifact.target_version(),
                                            keep_shardy=spmd is not None)
    return Exported(
        fun_name=fun_jit.__name__, in_tree=entry.in_tree, in_avals=in_avals,
        out_tree=entry.out_tree, out_avals=tuple(a.strip_weak_type()
                                                 for a in closed.out_avals),
        in_shardings_hlo=(None,) * len(in_avals),
        out_shardings_hlo=(None,) * len(closed.out_avals),
        nr_devices=1 if spmd is None else spmd.mesh[2],
        platforms=platforms, ordered_effects=(), unordered_effects=(),
        disabled_safety_checks=tuple(disabled_checks), mlir_module_serialized=artifact,
        calling_convention_version=CALLING_CONVENTION_VERSION, jaxpr_text=text,
        jaxpr_consts=tuple(np.asarray(c) for c in consts),
        constraints=scope._constraints_str if scope is not None else (),
        _in_named_shardings=in_shardings, _out_named_shardings=out_shardings)
  return do_export


def _common_scope(avals: Sequence[ShapedArray], name: str
                  ) -> shape_poly.SymbolicScope | None:
  scope = None
  for aval in avals:
    for d in aval.shape:
      if shape_poly.is_symbolic_dim(d):
        if scope is None:
          scope = d.scope
        elif d.scope is not scope:
          scope._check_same_scope(d, f"when exporting {name}")
  return scope
