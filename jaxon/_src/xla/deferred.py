"""Eager dispatch: operations run at once while the code is new, and are deferred and run
as one compiled program where the code repeats.

A compiled-executable call costs about as much as JAX's whole eager op, so an eager path
that makes one call per primitive cannot be much faster than JAX; and one that defers
every operation, to run it later, pays for the recording too where nothing repeats. So
`apply_primitive` checks each operation (abstract evaluation: bad shapes and dtypes fail
at the line that wrote them) and then either runs it at once through its cached
one-primitive executable, as JAX does, or records it in the calling thread's batch and
returns *pending* Arrays.

Which one is decided by the structure of the code: a *window* is the run of a thread's
operations between two sync points (a value read to the host, `block_until_ready`, or
`MAX_BATCH` operations). Each window's sequence of operation signatures is hashed as it
grows; once a sequence has run `FUSE_WORK` operations at once, its prefixes are *hot*,
and a window that starts on a hot prefix is recorded instead. Its batch runs when a
pending value is needed (printing, `np.asarray`, a `jit` call, …), in whichever thread
needs it, at the next sync point, or when it grows to `MAX_BATCH` operations; when the
code leaves the hot sequence, what was recorded runs and the rest of the window runs at
once. A recorded batch is identified by its exact structure (operations, how they
connect, which results are still alive): the second time a hot sequence's batch comes
with the same structure, it is compiled into one program and runs as a single executable
call from then on. A sequence whose recorded structure keeps changing goes cold again.
A `Composite` is such a program made for a known sequence of operations, outside any
batch: how `eager_plans.py` runs a `jnp` function of several primitives.

Batching must not change a single bit of any result. Batch programs, like one-primitive
programs, are compiled without XLA's algebraic rewrites. And XLA's CPU backend fuses an
operation with the next into one loop, where LLVM contracts a multiply and the add reading
it into a fused multiply-add (one rounding instead of two; XLA always allows it and has no
flag against it, and it drops optimization barriers before fusing). So in a batch program
each result that may come from a multiply passes through a fence (`_fence_p`) before
another operation reads it: the fused loops then compute what each operation computes
alone, and a repeated computation keeps its bits once its batch is compiled.

Failures stay with the values they concern: an operation run at once raises there (as in
JAX); one that fails when its batch runs (out of memory, a deleted operand) marks its own
results and those computed from them, and using one of those raises the error; the other
results of the batch get their values.
"""
from __future__ import annotations

import functools
import itertools
import operator
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import caches, core, dtypes, traceback_util
from jaxon._src.config import config, enable_x64
from jaxon._src.core import Jaxpr, JaxprEqn, Var
from jaxon._src.interpreters import mlir
from jaxon._src.xla import array as array_mod
from jaxon._src.xla import client, executable
from jaxon._src.xla.array import Array

MAX_BATCH = 256
# A sequence of operations is hot once it has run this many operations at once (and a
# batch recorded outside hot code is compiled once it has run as many op by op):
# compiling costs about as much as a few thousand eager operations, so only code that
# repeats pays it.
FUSE_WORK = 2048
# Record every operation, hot or not (the deferred path alone, as tests of it want it).
ALWAYS_DEFER = False
# Cache bounds. Signatures as JAX's primitive cache (each holds a one-primitive
# executable); compiled batches are larger programs, and few repeat in a steady state.
_MAX_SIGNATURES = 4096
_MAX_FUSED = 256
_MAX_TRACKED = 4096
_MAX_HOT_PREFIXES = 65536


class _Signature:
  """One (primitive, params, input avals): its output avals, checked once, a small integer
  standing for it in batch keys (hashing ints is cheaper than hashing avals), and its
  one-primitive program. `_signatures` is the one cache of eager primitives."""

  __slots__ = ("prim", "params", "in_avals", "out_avals", "id", "multiple_results",
               "effectful", "runs_alone", "_executable", "_direct_call")

  def __init__(self, prim: core.Primitive, params: dict, in_avals: tuple):
    out = prim.abstract_eval(*in_avals, **params)
    self.prim, self.params, self.in_avals = prim, params, in_avals
    self.id = next(_signature_ids)  # never reused: a key of an evicted signature stays stale
    self.multiple_results = prim.multiple_results
    outs = out if prim.multiple_results else [out]
    self.out_avals = tuple(array_mod.intern_aval(a) for a in outs)
    # A loop whose body prints: it runs when called, not when (or if) its results are read.
    self.effectful = core.has_effects(prim, params)
    # A loop, branch or call is compiled as under `jit` (see `compile_primitive`): never
    # batched, so that its results do not depend on what ran next to it.
    self.runs_alone = self.effectful or core.carries_jaxprs(params)
    self._executable = None
    self._direct_call: tuple | None = None

  def check_config(self) -> None:
    """The primitive's `config_check`, which every application runs (the configuration
    may have changed since the signature was made)."""
    self.prim.config_check(*self.in_avals, **self.params)

  def executable(self) -> executable.Executable:
    """The one-primitive program, compiled on first use."""
    if self._executable is None:
      exe = executable.compile_primitive(self.prim, self.in_avals, self.out_avals,
                                         self.params)
      if not (self.multiple_results or self.effectful or exe._float0_outputs):
        self._direct_call = (exe.loaded.execute_sharded, exe._handlers, self.out_avals[0])
      self._executable = exe
    return self._executable


_signature_ids = itertools.count()


# A recorded operation is a tuple (signature, refs, weak references to its output Arrays):
# refs say where each operand comes from, an int for a leaf of the batch (an Array that
# has its value), a pair (operation, output) for a pending value of the same batch.
# Tuples, not objects: recording is on every eager operation's path.


class _Batch:
  """One thread's current window: the operations it recorded since its last run (none
  while it runs them at once). `lock` is held while an operation is recorded and while
  the batch runs, so that another thread needing one of its values runs it whole, once.
  After the run, `failures` maps the position of each operation that failed, or was
  computed from one that did, to (error, name of the failed operation).

  `prefixes` are the hashes of the window's sequence of signatures, one per operation
  (`prefix` the last); `recording` is None until the window's first operation decides
  whether it is recorded (its prefix is hot) or run at once, and False again once the
  code left the hot sequence."""

  __slots__ = ("nodes", "leaves", "leaf_index", "lock", "open", "failures",
               "stopped_by", "prefix", "prefixes", "recording", "__weakref__")

  def __init__(self) -> None:
    self.nodes: list[tuple] = []
    self.leaves: list[Array] = []
    self.leaf_index: dict[int, int] = {}  # id(leaf) -> position; leaves live while we do
    self.lock = threading.RLock()  # reentrant: compiling during a run may run eager code
    self.open = True
    self.failures: dict[int, tuple[BaseException, str]] = {}
    self.stopped_by = ""  # the error that ended the run early, if one did
    self.prefix = 0
    self.prefixes: list[int] = []
    self.recording: bool | None = None


class _ThreadBatch(threading.local):
  """Each thread records into a batch of its own: one thread's failing operation, or its
  long run, never touches another's values."""

  def __init__(self) -> None:
    self.batch = _new_batch()


class _ForeignOperand(Exception):
  """An operand is pending in another thread's batch (or in one that failed)."""


class _PlacedOperand(Exception):
  """An operand lives elsewhere than uncommitted on the default device: the operation
  runs now, where its operands are (see `sharding_impls.PlacedProgram`)."""


_aval_of = operator.attrgetter("aval")
_pending_of = operator.attrgetter("_pending")
_buffer_of = operator.attrgetter("_buf")
_signatures: dict[tuple, _Signature] = {}
_last_signature: dict[core.Primitive, _Signature] = {}
_cache_lock = threading.Lock()  # guards changes to the caches
_work_done: dict[int, int] = {}  # hash of a batch key -> operations it has run op by op
_fused: dict[tuple, executable.Executable] = {}  # batch key -> compiled batch, LRU order
_sequence_work: dict[int, int] = {}  # sequence hash -> operations it has run at once
_hot: set[int] = set()  # prefixes of the sequences that have run FUSE_WORK operations
_misses: dict[int, int] = {}  # hot sequence -> its recorded batches of a structure not seen
_open_batches: weakref.WeakSet = weakref.WeakSet()  # every thread's unrun batch
_open_batches_lock = threading.Lock()


def _new_batch() -> _Batch:
  batch = _Batch()
  with _open_batches_lock:
    _open_batches.add(batch)
  return batch


_thread = _ThreadBatch()


@traceback_util.inline_api_boundary
def apply_primitive(prim: core.Primitive, *args: Any, **params: Any) -> Any:
  """The impl of every XLA primitive: runs it at once, or records it in the calling
  thread's batch where the code is hot (see the module's docstring); one with effects runs
  now. An API boundary where JAX has one, in its dispatch: an error of an eager `lax`
  operation's shape rule leaves without jaxon's frames below here."""
  try:
    avals = tuple(map(_aval_of, args))  # Arrays, the usual operands; no Python loop
  except AttributeError:
    args = tuple([x if type(x) is Array else executable.as_array(x) for x in args])
    avals = tuple(map(_aval_of, args))
  sig = _last_signature.get(prim) if not params else None
  if sig is None or sig.in_avals != avals:
    try:
      sig = _signature(prim, avals, params)
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return apply_signature(sig, args)


def apply_signature(sig: _Signature, args: Sequence[Array]) -> Any:
  """`apply_primitive` of Arrays whose signature is known, checked: where
  `eager_plans.py` replays an operation."""
  if sig.runs_alone:
    return _run_now(sig, args)
  if ALWAYS_DEFER:
    return _record_in_thread_batch(sig, args, None, _thread.batch)
  batch = _thread.batch
  if not batch.open:  # another thread ran our batch for a value it needed
    batch = _thread.batch = _new_batch()
  step = hash((batch.prefix, sig.id))
  if batch.recording is None:  # the window's first operation
    batch.recording = step in _hot
  elif batch.recording and step not in _hot:
    batch = _leave_hot_sequence(batch)
    step = hash((0, sig.id))
  if batch.recording:
    return _record_in_thread_batch(sig, args, step, batch)
  outs = _run_now(sig, args)
  batch.prefix = step
  batch.prefixes.append(step)
  if len(batch.prefixes) >= MAX_BATCH:
    _end_window(batch)
  return outs


class Composite:
  """Several operations of known signatures compiled as one program, as a batch of them
  is (fenced: it computes what they compute one by one), returning some of their results:
  how `eager_plans.py` runs a `jnp` function of several primitives with one executable
  call, as JAX runs its jitted `jnp` functions."""

  __slots__ = ("execute", "handlers", "out_avals", "checked")

  def __init__(self, leaf_avals: Sequence[core.ShapedArray],
               steps: Sequence[tuple[_Signature, tuple]],
               returned: Sequence[tuple[int, int]]):
    """`steps`: each operation's signature and operands, as a batch records them (an int
    for a leaf, (operation, output) for an earlier result); `returned`: the (operation,
    output) of each result."""
    nodes = [(sig, refs, ()) for sig, refs in steps]
    exe = executable.Executable(_batch_jaxpr(leaf_avals, nodes, list(returned)), [], "eager",
                                eager=True)
    self.execute, self.handlers = exe.loaded.execute_sharded, exe._handlers
    self.out_avals = [steps[op][0].out_avals[i] for op, i in returned]
    # Operations whose `config_check` runs on each application, as it does one by one.
    self.checked = tuple(sig for sig, _ in steps if sig.prim.config_check is not None)

  @staticmethod
  def can_compose(sig: _Signature) -> bool:
    """Whether an operation may be part of a composite: no effects, no jaxpr (those run
    alone, compiled as under `jit`), no float0 result."""
    return not sig.runs_alone and all(a.dtype != dtypes.float0 for a in sig.out_avals)


def apply_composite(composite: Composite, leaves: Sequence[Array]) -> list[Array] | None:
  """Runs `composite` on `leaves` at once, as an operation that runs alone (outside the
  windows that decide what is batched). None, for the caller to apply the operations one
  by one, where an operand is pending (they then join the batch computing it) or the call
  fails: an operand lives elsewhere than on the default device (they run where it is, as
  `_run_now` finds), or is deleted (each operation says what went wrong)."""
  if ALWAYS_DEFER or any(map(_pending_of, leaves)):  # `map`: no Python loop
    return None
  if array_mod.placements.seen and not array_mod.on_the_default_device(
      map(_buffer_of, leaves)):
    return None
  for sig in composite.checked:
    sig.check_config()
  try:
    bufs = composite.execute([*map(_buffer_of, leaves), _negative_zero()._buf]
                             ).consume_with_handlers(composite.handlers)
  except _jax.JaxRuntimeError:
    return None
  return list(map(Array, composite.out_avals, bufs))


def _run_now(sig: _Signature, args: Sequence[Array]) -> Any:
  """Runs the operation at once. The common case (Arrays on the default device, one
  result) calls the executable directly: this is most of an eager operation's cost."""
  direct_call = sig._direct_call
  if direct_call is None:
    sig.executable()  # compiles it, and sets `_direct_call` where it applies
    direct_call = sig._direct_call
  if direct_call is not None and (not array_mod.placements.seen
                                  or array_mod.on_the_default_device(map(_buffer_of, args))):
    execute, handlers, out_aval = direct_call
    try:
      buf, = execute(list(map(_buffer_of, args))).consume_with_handlers(handlers)
    except _jax.JaxRuntimeError:
      pass  # the general call below says what went wrong, or runs it where its operands are
    else:
      return Array(out_aval, buf)
  outs = sig.executable()(args)
  return outs if sig.multiple_results else outs[0]


def _record_in_thread_batch(sig: _Signature, args: Sequence[Array], step: int | None,
                            batch: _Batch) -> Any:
  """Records the operation in `batch`, the calling thread's (in a new one if another
  thread ran it meanwhile); `step` is the window's prefix with this operation."""
  while True:
    lock = batch.lock
    lock.acquire()  # not `with`, which costs 50 ns more: this runs for every operation
    try:
      if batch.open:
        try:
          outs = _record(batch, sig, args)
        except _ForeignOperand:
          pass
        except _PlacedOperand:
          return _run_now(sig, args)
        else:
          if step is not None:
            batch.prefix = step
            batch.prefixes.append(step)
          if len(batch.nodes) >= MAX_BATCH:
            _run_batch(batch)
          return outs
    finally:
      lock.release()
    if batch.open:  # outside our lock: two threads may each wait for the other's batch
      for x in args:
        pending = x._pending
        if pending is not None and pending[0] is not batch:
          materialize(x)
    else:  # another thread ran our batch for a value it needed
      _thread.batch = _new_batch()
    batch = _thread.batch


def _leave_hot_sequence(batch: _Batch) -> _Batch:
  """The code took another turn than the hot sequence it was recorded as: what was
  recorded runs now, and the rest of the window runs at once, as a window of its own."""
  with batch.lock:
    if batch.open:
      batch.recording = False  # compiled only as a batch recorded outside hot code is
      _run_batch(batch)
  batch = _thread.batch = _new_batch()
  batch.recording = False
  return batch


def _end_window(batch: _Batch) -> None:
  """Ends a window whose operations ran at once: counts them for its sequence, which
  turns hot (all its prefixes) once it has run `FUSE_WORK` operations. A one-operation
  sequence never does: there is nothing to compile together."""
  sequence, prefixes = batch.prefix, batch.prefixes
  batch.prefix, batch.prefixes, batch.recording = 0, [], None
  if len(prefixes) < 2:
    return
  with _cache_lock:
    work = _sequence_work.pop(sequence, 0) + len(prefixes)
    if work < FUSE_WORK:
      _sequence_work[sequence] = work  # reinserted: most recent last
      if len(_sequence_work) > _MAX_TRACKED:
        del _sequence_work[next(iter(_sequence_work))]
      return
    if len(_hot) + len(prefixes) > _MAX_HOT_PREFIXES:
      _hot.clear()
    _hot.update(prefixes)


def sync_point() -> None:
  """A value is read to the host or waited for: the calling thread's window ends here
  (its recorded operations run)."""
  if ALWAYS_DEFER:
    return
  batch = _thread.batch
  if batch.nodes:
    with batch.lock:
      if batch.open:
        _run_batch(batch)
  elif batch.prefixes:
    _end_window(batch)


def signature_replay(prim: core.Primitive, operands: Sequence[Any], params: dict
                     ) -> tuple[Callable[[_Signature, Sequence[Array]], Any], _Signature] | None:
  """(`apply`, signature): how to apply `prim` again to Arrays of `operands`' avals without
  looking up its signature, as `apply(signature, args)`; None unless `prim` runs through
  `apply_primitive` and its operands are Arrays. A primitive with a `config_check` runs it
  first, as every application does (`_signature` runs it on a hit)."""
  impl = prim.impl
  if (type(impl) is not functools.partial or impl.func is not apply_primitive
      or any(type(x) is not Array for x in operands)):
    return None
  sig = _signature(prim, tuple(map(_aval_of, operands)), params)
  return (apply_signature if prim.config_check is None else apply_checked_signature), sig


def apply_checked_signature(sig: _Signature, args: Sequence[Array]) -> Any:
  sig.check_config()
  return apply_signature(sig, args)


def _signature(prim: core.Primitive, avals: tuple, params: dict) -> _Signature:
  key = (prim, tuple(params.items()), avals)
  try:
    sig = _signatures.get(key)
  except TypeError as e:
    raise TypeError(f"parameters of primitive '{prim.name}' must be hashable: {params}") from e
  if sig is None:
    sig = _Signature(prim, params, avals)
    with _cache_lock:  # first in, first out: hits stay a plain dict lookup
      _signatures[key] = sig
      if len(_signatures) > _MAX_SIGNATURES:
        del _signatures[next(iter(_signatures))]
  elif prim.config_check is not None:
    sig.check_config()
  if not params and prim.config_check is None:
    _last_signature[prim] = sig
  return sig


def _record(batch: _Batch, sig: _Signature, args: Sequence[Array]) -> Any:
  """Records the operation in `batch`; its pending result (a list of them for a primitive
  of several)."""
  leaf_index = batch.leaf_index
  leaves_before = len(batch.leaves)
  refs = []
  try:
    for x in args:
      pending = x._pending
      if pending is not None:
        if pending[0] is not batch:
          raise _ForeignOperand
        refs.append(pending[1])
        continue
      leaf = leaf_index.get(id(x))
      if leaf is None:
        x._check_if_deleted()  # fail at the operation that uses it, not later
        if x._buf._sharding is not client.default_sharding():
          raise _PlacedOperand
        leaf = leaf_index[id(x)] = len(batch.leaves)
        batch.leaves.append(x)
      refs.append(leaf)
  except BaseException:  # leave no unused leaf behind: it would change the batch's key
    for x in batch.leaves[leaves_before:]:
      del leaf_index[id(x)]
    del batch.leaves[leaves_before:]
    raise
  pos = len(batch.nodes)
  if not sig.multiple_results:  # `Array.pending`'s body inline: this runs for each operation
    out = object.__new__(Array)
    out.aval, out._npy, out._pending = sig.out_avals[0], None, (batch, (pos, 0))
    batch.nodes.append((sig, tuple(refs), (weakref.ref(out),)))
    return out
  outs = [Array.pending(aval, (batch, (pos, i))) for i, aval in enumerate(sig.out_avals)]
  batch.nodes.append((sig, tuple(refs), tuple([weakref.ref(a) for a in outs])))
  return outs


def materialize(x: Array) -> None:
  """Runs the batch that will compute `x` (whichever thread recorded it), or raises the
  error that kept it from being computed."""
  pending = x._pending
  if pending is None:  # another thread ran its batch meanwhile
    return
  batch = pending[0]
  with batch.lock:
    if batch.open:
      _run_batch(batch)
  if x._pending is not None:
    raise _failure(batch, pending[1][0])


def _failure(batch: _Batch, pos: int) -> BaseException:
  """A fresh exception for each use of a failed value (raising one object again and again
  would grow its traceback), of the original's class and message."""
  if pos not in batch.failures:
    return RuntimeError(f"the run of pending eager operations that was to compute this "
                        f"value stopped early: {batch.stopped_by}")
  cause, name = batch.failures[pos]
  try:
    error = type(cause)(*cause.args)
  except Exception:
    error = RuntimeError(str(cause))
  error.add_note(f"The eager operation '{name}' failed when its batch of pending "
                 "operations ran; this value depends on it.")
  return error


def flush() -> None:
  """Runs every thread's pending operations: before an Array is deleted (whichever thread
  recorded an operation reading it), and where every effect issued so far must happen.
  Errors are kept for the values they concern (see `materialize`)."""
  with _open_batches_lock:
    batches = list(_open_batches)
  for batch in batches:
    with batch.lock:
      if batch.open:
        _run_batch(batch)


def _run_batch(batch: _Batch) -> None:
  """Runs an open batch; the caller holds its lock."""
  batch.open = False
  with _open_batches_lock:
    _open_batches.discard(batch)
  try:
    _run(batch)
  except BaseException as e:  # an interrupt, or compiling failed: values not computed
    batch.stopped_by = repr(e)  # yet report it when used
    raise
  finally:  # a failed value keeps its batch alive: let it not keep operands too
    batch.nodes, batch.leaves, batch.leaf_index = [], [], {}


def _run(batch: _Batch) -> None:
  live = [(pos, i, a) for pos, (_, _, outs) in enumerate(batch.nodes)
          for i, ref in enumerate(outs) if (a := ref()) is not None]
  if not live:
    return
  key = (tuple([(sig.id, refs) for sig, refs, _ in batch.nodes]),
         tuple([(pos, i) for pos, i, _ in live]))
  with _cache_lock:
    exe = _fused.pop(key, None)
    if exe is not None:
      _fused[key] = exe  # most recently used last
  if exe is None and len(batch.nodes) > 1:
    exe = _fuse_if_repeated(key, batch, live)
  elif exe is None and batch.recording:
    with _cache_lock:
      _missed(batch)
  if exe is not None:
    try:
      bufs = exe.run([x._buf for x in batch.leaves] + [_negative_zero()._buf])
      # A compiled batch may fail after the call returns (XLA allocates its temporaries
      # as it runs), leaving error buffers that crash jaxlib when read (not raise).
      _jax.batched_block_until_ready(bufs)
    except Exception:  # op by op finds which operations fail, and runs the others
      exe = None
    else:
      for (_, _, a), buf in zip(live, bufs):
        a._set_buffer(buf)
  if exe is None:
    _run_one_by_one(batch, live)


def _fuse_if_repeated(key: tuple, batch: _Batch, live: list) -> executable.Executable | None:
  """The compiled batch, if compiling it pays: a batch of hot code the second time its
  structure comes (its sequence has run `FUSE_WORK` operations already), another once its
  structure has run `FUSE_WORK` operations op by op."""
  key_hash = hash(key)  # a collision only fuses a batch sooner
  with _cache_lock:
    done = _work_done.pop(key_hash, 0)
    if done < (1 if batch.recording else FUSE_WORK):
      _work_done[key_hash] = done + len(batch.nodes)  # reinserted: most recent last
      if len(_work_done) > _MAX_TRACKED:
        del _work_done[next(iter(_work_done))]
      if batch.recording:
        _missed(batch)
      return None
  jaxpr = _batch_jaxpr([x.aval for x in batch.leaves], batch.nodes,
                       [(pos, i) for pos, i, _ in live])
  exe = executable.Executable(jaxpr, [], "eager", eager=True)
  with _cache_lock:
    _fused[key] = exe
    if len(_fused) > _MAX_FUSED:
      del _fused[next(iter(_fused))]
  return exe


def _missed(batch: _Batch) -> None:
  """A batch of hot code came with a structure not seen before (or too short to compile):
  the second time this happens to its sequence, the sequence goes cold, and runs at once
  until it has earned `FUSE_WORK` operations again. The caller holds `_cache_lock`."""
  sequence = batch.prefix
  misses = _misses.pop(sequence, 0) + 1
  if misses < 2:
    _misses[sequence] = misses
    if len(_misses) > _MAX_TRACKED:
      del _misses[next(iter(_misses))]
    return
  _hot.difference_update(batch.prefixes)
  _sequence_work.pop(sequence, None)


# The fence between operations of a compiled batch: x + z, with z = -0.0 an argument of the
# program. Adding -0.0 changes no value (not even a zero's sign), but LLVM cannot fold an
# addend it does not know, so no multiply reaches the next operation's add to be contracted
# with it; a multiply contracted into the fence itself, fma(a, b, -0.0), rounds as a*b does.
_fence_p = core.Primitive("eager_fence")


def _fence_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, negative_zero: ir.Value
                    ) -> list[ir.Value]:
  aval = ctx.avals_in[0]
  dtype = np.dtype(aval.dtype)
  part = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype  # complex64 -> f4
  zero = hlo.convert(ir.RankedTensorType.get([], mlir.dtype_to_ir_type(part)), negative_zero)
  if dtype.kind == "c":
    zero = hlo.complex(zero, zero)
  return [hlo.add(x, hlo.broadcast_in_dim(mlir.aval_to_ir_type(aval), zero, []))]


mlir.register_lowering(_fence_p, _fence_lowering)
_NEGATIVE_ZERO_AVAL = core.ShapedArray((), np.dtype(np.float32))

# Operations whose real results are never a multiply's (moves, adds, comparisons, reductions
# by adding or comparing): they need no fence. Fewer fences keep more small batches under
# the cost below which XLA runs a program in the calling thread instead of handing it to a
# worker (1000 flops: a fence is one per element).
_MULTIPLY_FREE = frozenset({
    "add", "add_any", "sub", "neg", "abs", "max", "min", "clamp", "select_n", "sign",
    "floor", "ceil", "round", "convert_element_type", "broadcast_in_dim", "reshape",
    "squeeze", "transpose", "rev", "slice", "dynamic_slice", "dynamic_update_slice",
    "concatenate", "pad", "gather", "scatter", "scatter-add", "iota", "reduce_sum",
    "reduce_max", "reduce_min", "cumsum", "cummax", "cummin", "sort", "stop_gradient"})


# Operations that run as LAPACK calls on the CPU (their real results leave the call as
# values in memory, and what follows only selects among them): no fence either there. An
# eager `inv` of f32[16,16] went over the cost with two fences and ran on a worker (16.7 us
# against 7.5 under `jit`).
_LAPACK_ON_CPU = frozenset({"cholesky", "lu", "triangular_solve"})


def _needs_fence(sig: _Signature, aval: core.ShapedArray) -> bool:
  if _kind(aval) not in "fc":
    return False
  if any(_kind(a) == "c" for a in sig.in_avals):  # |z| multiplies
    return True
  name = sig.prim.name
  applies_function = sig.params.get("update_jaxpr") is not None  # scatter_apply's
  return not (name in _MULTIPLY_FREE and not applies_function
              or name in _LAPACK_ON_CPU and mlir.current_platform() == "cpu")


def _kind(aval: core.ShapedArray) -> str:
  """NumPy's kind letter of the dtype; "K" for keys (integers underneath: no fence)."""
  return "K" if dtypes.is_extended(aval.dtype) else np.dtype(aval.dtype).kind


@functools.cache
def _negative_zero() -> Array:
  return array_mod.device_put_numpy(np.array(-0.0, np.float32))


def _batch_jaxpr(leaf_avals: Sequence[core.ShapedArray], nodes: Sequence[tuple],
                 outputs: Sequence[tuple[int, int]]) -> Jaxpr:
  """Recorded operations (`nodes`, as a batch holds them) as one program that returns the
  results at `outputs` ((operation, output) pairs): the leaves, then -0.0 for the fences,
  are its arguments."""
  invars = [Var(a) for a in leaf_avals]
  negative_zero = Var(_NEGATIVE_ZERO_AVAL)
  read_later = {r for _, refs, _ in nodes for r in refs if type(r) is not int}
  results: list[list[Var]] = []
  eqns = []
  for pos, (sig, refs, _) in enumerate(nodes):
    ins = [invars[r] if type(r) is int else results[r[0]][r[1]] for r in refs]
    outs = [Var(a) for a in sig.out_avals]
    eqns.append(JaxprEqn(ins, outs, sig.prim, sig.params))
    readable = list(outs)
    for i, aval in enumerate(sig.out_avals):
      if (pos, i) in read_later and _needs_fence(sig, aval):
        readable[i] = Var(aval)
        eqns.append(JaxprEqn([outs[i], negative_zero], [readable[i]], _fence_p, {}))
    results.append(readable)
  return Jaxpr([], invars + [negative_zero], [results[pos][i] for pos, i in outputs], eqns)


def _run_one_by_one(batch: _Batch, live: list) -> None:
  """Runs the operations whose results are still needed, each through its cached
  one-primitive executable, dropping each intermediate buffer after its last use (a batch
  of operations on large arrays must not hold all of them at once). An operation that
  fails, and those reading its results, are recorded in `batch.failures`."""
  nodes = batch.nodes
  outputs: dict[int, list[tuple[int, Array]]] = {}
  for pos, i, a in live:
    outputs.setdefault(pos, []).append((i, a))
  needed = [pos in outputs for pos in range(len(nodes))]
  read = [False] * len(nodes)
  freed_after: list[list[int]] = [[] for _ in nodes]  # results last read by each operation
  for pos in range(len(nodes) - 1, -1, -1):  # backwards: the first read seen is the last
    if needed[pos]:
      for r in nodes[pos][1]:
        if type(r) is not int and not read[r[0]]:
          read[r[0]] = needed[r[0]] = True
          freed_after[pos].append(r[0])
  leaf_bufs = [x._buf for x in batch.leaves]
  values: list[Any] = [None] * len(nodes)
  failures = batch.failures
  for pos, (sig, refs, _) in enumerate(nodes):
    if not needed[pos]:
      continue
    if failures and (failed := _failed_operand(failures, refs)) is not None:
      failures[pos] = failed
      continue
    bufs = [leaf_bufs[r] if type(r) is int else values[r[0]][r[1]] for r in refs]
    try:
      values[pos] = sig.executable().run(bufs)
    except Exception as e:
      failures[pos] = (_run_error(batch, refs, e), sig.prim.name)
      continue
    for i, a in outputs.get(pos, ()):
      a._set_buffer(values[pos][i])
    for done in freed_after[pos]:
      values[done] = None


def _failed_operand(failures: dict, refs: tuple) -> tuple[BaseException, str] | None:
  for r in refs:
    if type(r) is not int and r[0] in failures:
      return failures[r[0]]
  return None


def _run_error(batch: _Batch, refs: tuple, error: Exception) -> BaseException:
  """The error to report for a failed operation: jaxlib's message for a deleted operand
  does not say which one, ours does. Kept without its traceback, whose frames would hold
  the batch's buffers."""
  for r in refs:
    if type(r) is int:
      try:
        batch.leaves[r]._check_if_deleted()
      except RuntimeError as deleted:
        return deleted.with_traceback(None)
  return error.with_traceback(None)


def clear_caches() -> None:
  """Forgets every compiled eager program: one-primitive and batch executables and the
  counts that decide when a batch is compiled. Pending operations are unaffected."""
  with _cache_lock:
    _signatures.clear()
    _last_signature.clear()
    _work_done.clear()
    _fused.clear()
    _sequence_work.clear()
    _hot.clear()
    _misses.clear()


def _clear_caches_on_update(name: str, value: Any) -> None:
  if name == "jax_enable_x64":
    flush()  # pending operations compile as they were checked
    clear_caches()


config.on_update(_clear_caches_on_update)
# A `with jaxon.enable_x64(...)` block's edges too (context managers call no listener).
enable_x64.watch(lambda: _clear_caches_on_update("jax_enable_x64", None))
caches.register(clear_caches)
array_mod.set_materializer(materialize, flush, sync_point)
