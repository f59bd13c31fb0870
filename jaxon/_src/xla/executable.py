"""Compiling jaxprs with XLA and calling the executables.

`jit` compiles a whole jaxpr; eager dispatch (`deferred.py`) compiles one-primitive
programs and batches of eager operations through the same `Executable`.
"""
from __future__ import annotations

import logging
import operator
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client
from jaxlib.mlir import ir

from jaxon._src import caches, compiler, core, dtypes
from jaxon._src import config as config_mod
from jaxon._src.core import Jaxpr, JaxprEqn, ShapedArray, Var
from jaxon._src.interpreters import mlir
from jaxon._src.xla import array as array_mod
from jaxon._src.xla import client, compilation_cache
from jaxon._src.xla.array import Array, device_put_numpy, intern_aval, scalar_constant


class Executable:
  """A compiled program and what it takes to call it: argument avals, output handlers."""

  __slots__ = ("name", "loaded", "in_avals", "out_avals", "_handlers", "_const_bufs",
               "_float0_outputs", "_host_callbacks", "source", "placed")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], name: str, eager: bool = False,
               donated_invars: Sequence[bool] = ()):
    """`eager` programs (one primitive, or a batch of eager operations) are compiled
    without rewrites across operations: their results must not depend on batching.
    `donated_invars` marks inputs whose buffers outputs may take (see `lower_jaxpr`)."""
    self._host_callbacks: list[Any] = []  # XLA calls them by index while we live
    embedded = embedded_consts(jaxpr, consts)
    module = lower_jaxpr(jaxpr, name, donated_invars, self._host_callbacks,
                         const_values=embedded)
    self.name = name
    start = time.perf_counter()
    if self._host_callbacks:
      self.loaded = _load_with_callbacks(module, self._host_callbacks,
                                         _compile_options(eager), core.jaxpr_has_effects(jaxpr))
    else:
      self.loaded = compilation_cache.compile_and_load(
          client.backend(), mlir_module_bytes(module), client.device_list(),
          _compile_options(eager), name)
    log_event(logger, f"Finished XLA compilation of jit({name})", start)
    self.in_avals = [v.aval for v in jaxpr.invars]
    self.out_avals = [intern_aval(v.aval) for v in jaxpr.outvars]
    sharding = client.default_sharding()
    self._handlers = [_jax.array_result_handler(_device_aval(a), sharding, True,
                                                _skip_checks=True)
                      for a in self.out_avals]
    self._float0_outputs = [i for i, a in enumerate(self.out_avals) if a.dtype == dtypes.float0]
    self._const_bufs = [to_buffer(c, v.aval) for c, v, e in zip(consts, jaxpr.constvars, embedded)
                        if e is None]
    # For arguments placed on other devices: the program again, compiled for them (see
    # `call_placed`), by their shardings.
    self.source = (jaxpr, consts)
    self.placed: dict[tuple, Any] = {}

  def __call__(self, args: Sequence[Any]) -> list[Array]:
    """Runs the program on `args` (Arrays, or NumPy values and Python scalars of the
    argument avals). Every jit call pays for this, so it is lean: `run`'s body inline."""
    try:
      bufs = list(map(_buffer_of, args))
    except AttributeError:  # not all Arrays
      bufs = [to_buffer(x, aval) for x, aval in zip(args, self.in_avals)]
    if array_mod.placements.seen and not array_mod.on_the_default_device(bufs):
      placed = call_placed(self, args)  # (run here, a failed call would be logged by XLA)
      if placed is not None:
        return placed
    try:
      results = self.loaded.execute_sharded(
          self._const_bufs + bufs if self._const_bufs else bufs
      ).consume_with_handlers(self._handlers)
    except _jax.JaxRuntimeError:
      _raise_if_deleted(args)
      placed = call_placed(self, args)
      if placed is None:
        raise
      array_mod.note_placed()  # (an argument placed where jaxon did not note it)
      return placed
    outs = list(map(Array, self.out_avals, results))
    for i in self._float0_outputs:  # as in JAX, float0 values are host zeros, not Arrays
      outs[i] = np.zeros(self.out_avals[i].shape, dtypes.float0)
    return outs

  def run(self, bufs: list[_jax.ArrayImpl], args: Sequence[Any] = ()) -> list[_jax.ArrayImpl]:
    """Runs the program on device buffers; `args` (the Arrays behind them, when known)
    name a deleted one in the error."""
    try:
      return self.loaded.execute_sharded(
          self._const_bufs + bufs if self._const_bufs else bufs
      ).consume_with_handlers(self._handlers)
    except _jax.JaxRuntimeError:
      _raise_if_deleted(args)
      raise


def _no_placed_arguments(exe: Executable, args: Sequence[Any]) -> list[Array] | None:
  return None


# `call_placed(exe, args)` runs `exe`'s program on arguments some of which live on other
# devices than the default one (jaxlib refuses them: the program was compiled for it), or
# returns None when none does. Installed by the sharding layer, which knows where to run.
call_placed: Any = _no_placed_arguments


class DonatingExecutable(Executable):
  """An executable some of whose inputs are donated: XLA writes outputs into their
  buffers, and the Arrays passed there are deleted by the call (as in JAX)."""

  __slots__ = ("_donated", "donated_invars")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], name: str,
               donated_invars: Sequence[bool]):
    super().__init__(jaxpr, consts, name, donated_invars=donated_invars)
    self.donated_invars = tuple(donated_invars)  # for the program again on placed arguments
    aliases = donation_aliases([v.aval for v in jaxpr.invars],
                               [v.aval for v in jaxpr.outvars], donated_invars)
    self._donated = sorted(aliases)

  def __call__(self, args: Sequence[Any]) -> list[Array]:
    array_mod._flush()  # pending eager operations may read a donated Array: run them first
    args = list(args)
    for i in self._donated:
      x = args[i]
      if type(x) is Array:
        # Our cached host view would hold the buffer (XLA then copies instead of
        # donating) and would show whatever XLA writes there next.
        x._npy = None
      else:  # a buffer of its own, never a shared scalar constant
        aval = self.in_avals[i]
        args[i] = device_put_numpy(np.asarray(x), aval.dtype, aval.weak_type)
    return Executable.__call__(self, args)


# ----------------------------------------------------------------------------- lowering

logger = logging.getLogger(__name__)


def log_event(log: logging.Logger, what: str, start: float) -> None:
  """Logs that `what` finished, with the time since `start`: at WARNING when
  `jax_log_compiles` is set, otherwise at DEBUG (as JAX)."""
  level = logging.WARNING if config_mod.values.jax_log_compiles else logging.DEBUG
  if log.isEnabledFor(level):
    log.log(level, f"{what} in {time.perf_counter() - start:.9f} sec")


# Constants of at most this many bytes are embedded in the program, as JAX embeds every
# constant; larger ones are passed at each call, as arguments, so that XLA does not fold
# them at compile time. Each argument costs a call about 0.04 µs (2-core machine: jitted
# `hessian` of a function of f32[4], two constants, 3.89 -> 3.81 µs a call embedded).
EMBEDDED_CONST_BYTES = 1024


def embedded_consts(jaxpr: Jaxpr, consts: Sequence[Any]) -> list[np.ndarray | None]:
  """For each constvar of `jaxpr`, the NumPy value its program embeds, or None where the
  constant is an argument (large ones, and those of extended dtypes: keys, float0)."""
  out: list[np.ndarray | None] = []
  for c, v in zip(consts, jaxpr.constvars):
    aval = v.aval
    small = (isinstance(aval.dtype, np.dtype) and aval.dtype != dtypes.float0
             and aval.size * aval.dtype.itemsize <= EMBEDDED_CONST_BYTES)
    out.append(np.asarray(c, aval.dtype) if small else None)
  return out


def lower_jaxpr(jaxpr: Jaxpr, name: str, donated_invars: Sequence[bool] = (),
                host_callbacks: list[Any] | None = None,
                const_values: Sequence[Any] = (), **shardings: Any) -> ir.Module:
  """The StableHLO module of `jaxpr` (constvars first, then invars; `const_values` as in
  `mlir.lower_jaxpr_to_module`). Each donated input that an output of the same shape and
  dtype can take is marked `tf.aliasing_output`, as JAX marks it; the others are reported
  in JAX's warning and left alone. `shardings`: the Shardy annotations of an SPMD program
  (see `mlir.lower_jaxpr_to_module`)."""
  in_avals = [v.aval for v in jaxpr.invars]
  level = logging.WARNING if config_mod.values.jax_log_compiles else logging.DEBUG
  if logger.isEnabledFor(level):
    logger.log(level, f"Compiling jit({name}) with global shapes and types "
                      f"{tuple(in_avals)}.")
  start = time.perf_counter()
  module = mlir.lower_jaxpr_to_module(jaxpr, name, host_callbacks, const_values=const_values,
                                      **shardings)
  if any(donated_invars):
    out_avals = [v.aval for v in jaxpr.outvars]
    aliases = donation_aliases(in_avals, out_avals, donated_invars)
    n_const_args = len(jaxpr.constvars) - sum(c is not None for c in const_values)
    _mark_aliases(module, n_const_args, aliases)
    warn_unusable_donations([a for i, (a, d) in enumerate(zip(in_avals, donated_invars))
                             if d and i not in aliases])
  log_event(logger, f"Finished jaxpr to MLIR module conversion jit({name})", start)
  return module


def donation_aliases(in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                     donated_invars: Sequence[bool]) -> dict[int, int]:
  """{input: output} as JAX pairs them: each output in turn takes the first donated input
  not yet taken with its shape and dtype (weak types aside)."""
  waiting: dict[tuple, list[int]] = {}
  for i, (aval, donated) in enumerate(zip(in_avals, donated_invars)):
    if donated and aval.dtype != dtypes.float0:
      waiting.setdefault((aval.shape, aval.dtype), []).append(i)
  aliases = {}
  for o, aval in enumerate(out_avals):
    inputs = waiting.get((aval.shape, aval.dtype))
    if inputs:
      aliases[inputs.pop(0)] = o
  return aliases


def warn_unusable_donations(avals: Sequence[ShapedArray]) -> None:
  """JAX's warning for donated inputs no output can take."""
  if avals:
    unused = ", ".join(a.str_short(short_dtypes=False) for a in avals)
    warnings.warn(f"Some donated buffers were not usable: {unused}.\nSee an explanation at "
                  "https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
                  stacklevel=_user_stacklevel())


def _mark_aliases(module: ir.Module, n_consts: int, aliases: dict[int, int],
                  donors: Sequence[int] = ()) -> None:
  """Sets `tf.aliasing_output` on `main`'s arguments of the aliased inputs (which come
  after the `n_consts` constants), and `jax.buffer_donor` on those of `donors` (XLA pairs
  them with outputs itself), keeping the arguments' other attributes."""
  with module.context:
    main = next(op for op in module.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "main")
    i32 = ir.IntegerType.get_signless(32)
    n = len(main.arguments)
    old = (list(main.attributes["arg_attrs"]) if "arg_attrs" in main.attributes
           else [ir.DictAttr.get({})] * n)
    attrs = []
    for i, kept in zip(range(-n_consts, n - n_consts), old):
      entries = {named.name: named.attr for named in ir.DictAttr(kept)}
      if i in aliases:
        entries["tf.aliasing_output"] = ir.IntegerAttr.get(i32, aliases[i])
      elif i in donors:
        entries["jax.buffer_donor"] = ir.BoolAttr.get(True)
      attrs.append(ir.DictAttr.get(entries))
    main.arg_attrs = ir.ArrayAttr.get(attrs)


def _user_stacklevel() -> int:
  """The `stacklevel` of a warning that points at the user's line, past jaxon's frames."""
  frame, level = sys._getframe(1), 1
  user, _ = core.user_frame(frame)
  while frame is not None and frame is not user:
    frame, level = frame.f_back, level + 1
  return level


def to_xla_computation(module: ir.Module) -> Any:
  """The HLO computation of a StableHLO module (`Lowered.compiler_ir('hlo')`)."""
  return _jax.mlir.mlir_module_to_xla_computation(mlir_module_bytes(module),
                                                  use_tuple_args=False, return_tuple=False)


def _load_with_callbacks(module: Any, host_callbacks: list[Any],
                         options: xla_client.CompileOptions, effectful: bool) -> Any:
  """Compiles a module that calls back into Python (jaxlib takes such a module as an MLIR
  object, not bytes). A program with effects runs to completion before its call returns."""
  loaded = compiler.backend_compile_and_load(client.backend(), module, client.device_list(),
                                             options, host_callbacks)
  return _CompletingExecutable(loaded) if effectful else loaded


class _CompletingExecutable:
  """A loaded program whose executions finish (and so run their effects: prints, I/O)
  before `execute_sharded` returns. Effects then happen in program order across calls,
  which JAX gets by threading a runtime token from each call to the next. Programs
  without effects do not come through here and pay nothing."""

  __slots__ = ("_loaded",)

  def __init__(self, loaded: Any):
    self._loaded = loaded

  def execute_sharded(self, bufs: list[_jax.ArrayImpl]) -> Any:
    results = self._loaded.execute_sharded(bufs, with_tokens=True)
    results.consume_token().block_until_ready()
    return results

  def __getattr__(self, name: str) -> Any:  # hlo_modules(), …: the program's own
    return getattr(self._loaded, name)


def _raise_if_deleted(args: Sequence[Any]) -> None:
  """jaxlib's message for a deleted argument does not say which: this one does."""
  for x in args:
    if type(x) is Array:
      x._check_if_deleted()


def _device_aval(aval: ShapedArray) -> ShapedArray:
  """float0 has no data; programs carry it as booleans (see `mlir.ir_constant`). Extended
  dtypes (keys) are carried as their physical data."""
  return aval.update(dtype=np.dtype(np.bool_)) if aval.dtype == dtypes.float0 else (
      core.physical_aval(aval))


def _backend_platform() -> str:
  """The backend's platform as lowering rules name it: jaxlib calls a CUDA backend "gpu"."""
  platform = client.backend().platform
  return "cuda" if platform == "gpu" else platform


mlir.set_backend_platform(_backend_platform)


def _compile_options(eager: bool, device_ids: Sequence[int] = ()) -> xla_client.CompileOptions:
  """`device_ids` (global ids, in mesh order), when given, are where the program runs;
  more than one make it an SPMD program that XLA splits over them, as the module's Shardy
  annotations say (see `sharded.py`)."""
  options = xla_client.CompileOptions()
  if device_ids:
    options.num_partitions = len(device_ids)
    options.device_assignment = xla_client.DeviceAssignment.create(
        np.asarray(device_ids, dtype=np.int32).reshape(1, len(device_ids)))
    build = options.executable_build_options
    build.use_spmd_partitioning = len(device_ids) > 1
    build.use_shardy_partitioner = len(device_ids) > 1
  if eager:
    # Algebraic rewrites across operations ((a/b)/c -> a/(b*c), exp(a)*exp(b) -> exp(a+b))
    # change results by more than rounding. Fusion stays on: without it, compiling a
    # primitive made of many HLO operations takes several times longer.
    options.executable_build_options.debug_options.xla_disable_hlo_passes = "algsimp"
  return options


def mlir_module_bytes(module: Any) -> bytes:
  return module.operation.get_asm(binary=True, enable_debug_info=False)


# `map` with this runs in C: a Python-level loop or comprehension costs several times more
# than the rest of a call's bookkeeping. Only Arrays have `_buf`.
_buffer_of = operator.attrgetter("_buf")


def to_buffer(x: Any, aval: ShapedArray) -> _jax.ArrayImpl:
  """The device buffer behind an argument of type `aval` (see `as_array`)."""
  if type(x) is Array:
    return x._buf
  if aval.dtype == dtypes.float0:  # no data: carried as booleans (see `mlir.ir_constant`)
    x, aval = np.zeros(aval.shape, np.bool_), _device_aval(aval)
  return as_array(x, aval)._buf


# ----------------------------------------------------------------------------- eager ops

def _escaped_tracer_error(x: core.Tracer) -> Exception:
  if x._trace._invalidated:
    return core.escaped_tracer_error(x, "as an operand of eager or compiled code")
  return core.UnexpectedTracerError(
      f"The tracer {x} reached eager evaluation outside of its transformation.")


def as_array(x: Any, aval: ShapedArray | None = None) -> Array:
  """A NumPy value or Python scalar as an Array (of type `aval`, default its own): NumPy
  values are copied to the device now (they are mutable, and an eager operation may run
  later); scalars come from the cache of constants, since eager code passes the same ones
  again and again."""
  if isinstance(x, core.Tracer):
    raise _escaped_tracer_error(x)
  if aval is None:
    aval = core.get_aval(x)
  if not aval.shape:
    return scalar_constant(x, aval.dtype, aval.weak_type)
  return device_put_numpy(np.asarray(x), aval.dtype, aval.weak_type)


def compile_primitive(prim: core.Primitive, in_avals: Sequence[ShapedArray],
                      out_avals: Sequence[ShapedArray], params: dict) -> Executable:
  """The one-equation program of `prim` (eager dispatch caches it per signature). One
  that carries a jaxpr (an eager `while_loop`, `scan`, `cond`) is compiled as JAX compiles
  it, as under `jit`, with XLA's algebraic rewrites; eager dispatch never batches it."""
  invars = [Var(a) for a in in_avals]
  outvars = [Var(a) for a in out_avals]
  jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(invars, outvars, prim, params)])
  return Executable(jaxpr, [], prim.name, eager=not core.carries_jaxprs(params))


# ----------------------------------------------------------------------------- jitted jaxprs

# JAX keeps the lowerings (and so the executables) of this many jaxprs, weakly keyed.
_jaxpr_executables = caches.WeakKeyLRUCache(maxsize=2048)
caches.register(_jaxpr_executables.clear)


def executable_for(closed_jaxpr: core.ClosedJaxpr, name: str) -> Executable:
  """The executable of a closed jaxpr, compiled on first use and kept while the jaxpr
  lives, among the 2048 most recently used."""
  exe = _jaxpr_executables.get(closed_jaxpr)
  if exe is None:
    exe = Executable(closed_jaxpr.jaxpr, closed_jaxpr.consts, name)
    _jaxpr_executables.put(closed_jaxpr, exe)
  return exe


def device_put(x: Any, dtype: Any = None) -> Array:
  """An Array holding `x` (Arrays pass through unchanged)."""
  if type(x) is Array and (dtype is None or np.dtype(dtype) == x.dtype):
    return x
  if isinstance(x, core.Tracer):
    raise TypeError("device_put of a traced value inside a transformation is not "
                    "supported; it is already on the device")
  weak = dtype is None and dtypes.is_weakly_typed(x)
  host = np.asarray(x)
  if dtype is None and type(x) in (int, float, complex):
    dtype = dtypes.canonicalize_dtype(dtypes.dtype(x))
  return device_put_numpy(host, dtype, weak_type=weak)

