"""The stages of ahead-of-time compilation, as `jax.stages` names them: `jit(f).trace(*args)`
gives a `Traced`, whose `.lower()` continues to `Lowered`, whose `.compile()` gives a
`Compiled`. All three describe one traced signature of the jitted function (`_Stage`)."""
from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from jaxlib import _jax

from jaxon._src import core, tree_util
from jaxon._src.jit import ShapeDtypeStruct, _CacheEntry, _flat_avals, abstractify
from jaxon._src.sharding_impls import SingleDeviceSharding
from jaxon._src.xla import client, executable

# Options for XLA passed to `Lowered.compile(compiler_options=...)` in JAX.
CompilerOptions = dict[str, str | bool]


@dataclasses.dataclass(frozen=True, slots=True)
class ArgInfo:
  """One argument of a traced signature: its abstract value and whether it is donated."""
  _aval: core.AbstractValue
  donated: bool

  @property
  def shape(self) -> tuple[int, ...]:
    if not hasattr(self._aval, "shape"):
      raise TypeError(f"No shape attribute with aval of type {type(self._aval)}")
    return self._aval.shape

  @property
  def dtype(self) -> Any:
    if not hasattr(self._aval, "dtype"):
      raise TypeError(f"No dtype attribute with aval of type {type(self._aval)}")
    return self._aval.dtype


class Wrapped(Protocol):
  """What `jit` returns: callable, and staged ahead of time by `trace` or `lower`."""

  def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

  def trace(self, *args: Any, **kwargs: Any) -> Traced: ...

  def lower(self, *args: Any, **kwargs: Any) -> Lowered: ...


class _Stage:
  """What every stage tells of its signature: the (args, kwargs) and output trees, the
  arguments' types and donation, and the outputs' types (`out_info`)."""

  _entry: _CacheEntry

  in_tree = property(lambda self: self._entry.in_tree)
  out_tree = property(lambda self: self._entry.out_tree)

  @property
  def args_info(self) -> Any:
    """The (args, kwargs) tree of `ArgInfo`s of the dynamic arguments."""
    entry = self._entry
    donated = entry.donated or (False,) * len(entry.jaxpr.in_avals)
    return entry.in_tree.unflatten(
        [ArgInfo(aval, d) for aval, d in zip(entry.jaxpr.in_avals, donated)])

  @property
  def in_avals(self) -> Any:
    return self._entry.in_tree.unflatten(self._entry.jaxpr.in_avals)

  @property
  def donate_argnums(self) -> tuple[int, ...]:
    """The flat indices of the donated arguments."""
    return tuple(i for i, d in enumerate(self._entry.donated or ()) if d)

  @property
  def out_info(self) -> Any:
    """The outputs' types, as a tree of `ShapeDtypeStruct`s (with their shardings once
    compiled)."""
    avals = self._entry.jaxpr.out_avals
    shardings = self._out_shardings_flat() or [None] * len(avals)
    return self._entry.out_tree.unflatten(
        [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=s)
         for a, s in zip(avals, shardings)])

  def _out_shardings_flat(self) -> list[Any] | None:
    return None


class Traced(_Stage):
  """A jitted function traced for one signature: its jaxpr and output types, before
  lowering. `.lower()` reuses the trace (no second trace of the Python function)."""

  def __init__(self, entry: _CacheEntry, name: str):
    self._entry = entry
    self.fun_name = name

  jaxpr = property(lambda self: self._entry.jaxpr)
  out_avals = property(
      lambda self: self._entry.out_tree.unflatten(self._entry.jaxpr.out_avals))

  def lower(self) -> Lowered:
    return Lowered(self._entry, self.fun_name)


class Lowered(_Stage):
  """A jitted function lowered for one signature: its StableHLO, and compilation."""

  def __init__(self, entry: _CacheEntry, name: str):
    self._entry = entry
    self._name = name

  def compiler_ir(self, dialect: str | None = None) -> Any:
    """The StableHLO module (`dialect='stablehlo'`, the default) or the HLO computation
    (`'hlo'`), as JAX's: for reading, not a stable serialization."""
    closed = self._entry.jaxpr
    module = executable.lower_jaxpr(
        closed.jaxpr, self._name, self._entry.donated,
        const_values=executable.embedded_consts(closed.jaxpr, closed.consts))
    if dialect in (None, "stablehlo"):
      return module
    if dialect == "hlo":
      return executable.to_xla_computation(module)
    raise ValueError(f"unknown dialect: {dialect}")

  def as_text(self, dialect: str | None = None) -> str:
    ir = self.compiler_ir(dialect)
    return ir.as_hlo_text() if dialect == "hlo" else str(ir)

  def cost_analysis(self) -> dict[str, float]:
    """XLA's estimates (flops, bytes accessed, …) for the program before optimization, as
    JAX's (`Compiled.cost_analysis` has them after)."""
    hlo_module = self.compiler_ir("hlo").get_hlo_module()
    return _jax.hlo_module_cost_analysis(client.backend(), hlo_module)

  def compile(self, compiler_options: dict[str, str | bool] | None = None) -> Compiled:
    """Compiles for the lowered signature. `compiler_options` (XLA flags) must be empty:
    jaxon compiles every program with XLA's defaults."""
    if compiler_options:
      raise NotImplementedError("jaxon compiles with XLA's default options; got "
                                f"compiler_options={compiler_options!r}")
    if self._entry.const_args:
      raise TypeError(f"jit({self._name}).lower(...).compile(): the function closes over "
                      "values traced by an enclosing transformation, so it cannot be "
                      "compiled on its own; call the jitted function instead.")
    return Compiled(self._entry, self._name)


class Compiled(_Stage):
  """A jitted function compiled for one signature. As in JAX, it is called with the
  dynamic arguments only (static ones were fixed by `lower`), in the same pytree structure
  and with the same shapes and dtypes."""

  def __init__(self, entry: _CacheEntry, name: str):
    self._entry = entry
    self._name = name
    self._executable = entry.compile(name)

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != self._entry.in_tree:
      raise TypeError(f"Function compiled with input pytree {self._entry.in_tree} does not "
                      f"match the input pytree it was called with, {in_tree}.")
    for want, got in zip(self._executable.in_avals, _flat_avals(leaves)):
      if (want.shape, want.dtype) != (got.shape, got.dtype):
        self._raise_type_mismatch(args, kwargs)
    return self._entry.out_tree.unflatten(self._executable(leaves))

  def call(self, *args: Any, **kwargs: Any) -> Any:
    return self(*args, **kwargs)

  def _raise_type_mismatch(self, args: tuple, kwargs: dict) -> None:
    paths, _ = tree_util.tree_flatten_with_path((args, kwargs))
    mismatches = []
    for (path, leaf), want in zip(paths, self._executable.in_avals):
      got = abstractify(leaf)
      if (want.shape, want.dtype) != (got.shape, got.dtype):
        where = ("args", "kwargs")[path[0].idx] + tree_util.keystr(path[1:])
        mismatches.append(f"argument {where} compiled with {want.str_short(False)} and "
                          f"called with {got.str_short(False)}")
    raise TypeError("Argument types differ from the types for which this computation was "
                    "compiled: " + "; ".join(mismatches))

  @property
  def input_shardings(self) -> Any:
    """How each argument is laid out when the program runs, as the (args, kwargs) tree."""
    shardings = getattr(self._executable, "in_shardings", None)
    return self._entry.in_tree.unflatten(
        shardings or [self._one_device()] * self._entry.in_tree.num_leaves)

  @property
  def output_shardings(self) -> Any:
    return self._entry.out_tree.unflatten(self._out_shardings_flat())

  def _out_shardings_flat(self) -> list[Any]:
    shardings = getattr(self._executable, "out_shardings", None)
    return list(shardings or [self._one_device()] * len(self._entry.jaxpr.out_avals))

  def _one_device(self) -> SingleDeviceSharding:
    return SingleDeviceSharding(client.local_devices()[0])

  def runtime_executable(self) -> Any:
    """jaxlib's loaded executable (for reading; not a stable interface)."""
    return self._executable.loaded

  def as_text(self) -> str:
    return self._executable.loaded.hlo_modules()[0].to_string()

  def cost_analysis(self) -> dict[str, float]:
    """XLA's estimates (flops, bytes accessed, …) for the compiled program, as JAX's."""
    return self._executable.loaded.cost_analysis()

  def memory_analysis(self) -> Any:
    """XLA's `CompiledMemoryStats`: argument, output, temporary and code sizes in bytes."""
    return self._executable.loaded.get_compiled_memory_stats()

  def __repr__(self) -> str:
    return f"<compiled function {self._name}>"
