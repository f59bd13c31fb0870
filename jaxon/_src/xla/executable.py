"""Compiling jaxprs with XLA and calling the executables.

`jit` compiles a whole jaxpr; eager dispatch (`deferred.py`) compiles one-primitive
programs and batches of eager operations through the same `Executable`.
"""
from __future__ import annotations

import operator
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client

from jaxon._src import core, dtypes
from jaxon._src.core import Jaxpr, JaxprEqn, ShapedArray, Var
from jaxon._src.interpreters import mlir
from jaxon._src.xla import client
from jaxon._src.xla.array import Array, device_put_numpy, intern_aval, scalar_constant


class Executable:
  """A compiled program and what it takes to call it: argument avals, output handlers."""

  __slots__ = ("name", "loaded", "in_avals", "out_avals", "_handlers", "_const_bufs",
               "_float0_outputs")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], name: str, eager: bool = False):
    """`eager` programs (one primitive, or a batch of eager operations) are compiled
    without rewrites across operations: their results must not depend on batching."""
    module = mlir.lower_jaxpr_to_module(jaxpr, name)
    self.name = name
    self.loaded = client.backend().compile_and_load(
        mlir_module_bytes(module), client.device_list(), _compile_options(eager))
    self.in_avals = [v.aval for v in jaxpr.invars]
    self.out_avals = [intern_aval(v.aval) for v in jaxpr.outvars]
    sharding = client.default_sharding()
    self._handlers = [_jax.array_result_handler(_device_aval(a), sharding, True,
                                                _skip_checks=True)
                      for a in self.out_avals]
    self._float0_outputs = [i for i, a in enumerate(self.out_avals) if a.dtype == dtypes.float0]
    self._const_bufs = [to_buffer(c, v.aval) for c, v in zip(consts, jaxpr.constvars)]

  def __call__(self, args: Sequence[Any]) -> list[Array]:
    """Runs the program on `args` (Arrays, or NumPy values and Python scalars of the
    argument avals). Every jit call pays for this, so it is lean: `run`'s body inline."""
    try:
      bufs = list(map(_buffer_of, args))
    except AttributeError:  # not all Arrays
      bufs = [to_buffer(x, aval) for x, aval in zip(args, self.in_avals)]
    try:
      results = self.loaded.execute_sharded(
          self._const_bufs + bufs if self._const_bufs else bufs
      ).consume_with_handlers(self._handlers)
    except _jax.JaxRuntimeError:
      _raise_if_deleted(args)
      raise
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


def _raise_if_deleted(args: Sequence[Any]) -> None:
  """jaxlib's message for a deleted argument does not say which: this one does."""
  for x in args:
    if type(x) is Array:
      x._check_if_deleted()


def _device_aval(aval: ShapedArray) -> ShapedArray:
  """float0 has no data; programs carry it as booleans (see `mlir.ir_constant`)."""
  return aval.update(dtype=np.dtype(np.bool_)) if aval.dtype == dtypes.float0 else aval


def _compile_options(eager: bool) -> xla_client.CompileOptions:
  options = xla_client.CompileOptions()
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
  """The one-equation program of `prim` (eager dispatch caches it per signature)."""
  invars = [Var(a) for a in in_avals]
  outvars = [Var(a) for a in out_avals]
  jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(invars, outvars, prim, params)])
  return Executable(jaxpr, [], prim.name, eager=True)


# ----------------------------------------------------------------------------- jitted jaxprs

_jaxpr_executables: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def executable_for(closed_jaxpr: core.ClosedJaxpr, name: str) -> Executable:
  """The executable of a closed jaxpr, compiled on first use and kept while it lives."""
  exe = _jaxpr_executables.get(closed_jaxpr)
  if exe is None:
    exe = _jaxpr_executables[closed_jaxpr] = Executable(closed_jaxpr.jaxpr,
                                                        closed_jaxpr.consts, name)
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

