"""Deferred eager dispatch: eager primitives are recorded, and run together when a value is
needed.

A compiled-executable call costs about as much as JAX's whole eager op, so an eager path
that makes one call per primitive cannot be faster than JAX. Instead, `apply_primitive`
checks the operation (abstract evaluation, so bad shapes and dtypes still fail at the line
that wrote them) and returns *pending* Arrays: the operation joins the current batch.
The batch runs when any pending value is needed (printing, `np.asarray`, a `jit` call, …)
or when it grows to `MAX_BATCH` operations.

A batch is identified by its structure: the operations, how they connect, and which of
their results are still alive. Eager code repeats itself (a training step, a loop body),
so a batch that has repeated enough (`FUSE_WORK`) is compiled into one program and later
runs as a single executable call. Until then batches run operation by operation through
the cached one-primitive executables, as plain eager dispatch would: code that never
repeats pays no extra compilation. Batch programs, like one-primitive programs, are compiled without
XLA's algebraic rewrites, so each operation computes what it computes alone; the one
difference left is that XLA's CPU backend contracts a multiply feeding an add into a fused
multiply-add when both land in one fused loop, which rounds once instead of twice (a
last-bit difference, more accurate, as in any jitted program).
"""
from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from jaxon._src import core
from jaxon._src.config import config
from jaxon._src.core import Jaxpr, JaxprEqn, Var
from jaxon._src.xla import array as array_mod
from jaxon._src.xla import executable
from jaxon._src.xla.array import Array

MAX_BATCH = 256
# A batch is compiled once it has run this many operations op by op: compiling costs
# about as much as a few thousand eager operations, so only code that repeats pays it.
FUSE_WORK = 2048
_MAX_TRACKED = 4096


class _Signature:
  """One (primitive, params, input avals): its output avals, checked once, a small integer
  standing for it in batch keys (hashing ints is cheaper than hashing avals), and its
  one-primitive program. `_signatures` is the one cache of eager primitives."""

  __slots__ = ("prim", "params", "in_avals", "out_avals", "id", "_executable")

  def __init__(self, prim: core.Primitive, params: dict, in_avals: tuple, sig_id: int):
    out = prim.abstract_eval(*in_avals, **params)
    self.prim, self.params, self.in_avals, self.id = prim, params, in_avals, sig_id
    outs = out if prim.multiple_results else [out]
    self.out_avals = tuple(array_mod.intern_aval(a) for a in outs)
    self._executable = None

  def executable(self) -> executable.Executable:
    """The one-primitive program, compiled on first use."""
    if self._executable is None:
      self._executable = executable.compile_primitive(self.prim, self.in_avals,
                                                      self.out_avals, self.params)
    return self._executable


# A recorded operation is a tuple (signature, refs, weak references to its output Arrays):
# refs say where each operand comes from, an int for a leaf of the batch (an Array that
# has its value), a pair (operation, output) for a pending value of the same batch.
# Tuples, not objects: recording is on every eager operation's path.


class _Batch:
  __slots__ = ("nodes", "keys", "leaves", "leaf_index", "error")

  def __init__(self) -> None:
    self.nodes: list[tuple] = []
    self.keys: list[tuple] = []
    self.leaves: list[Array] = []
    self.leaf_index: dict[int, int] = {}  # id(leaf) -> position; leaves live while we do
    self.error: BaseException | None = None


_aval_of = operator.attrgetter("aval")
_lock = threading.RLock()
_current = _Batch()
_signatures: dict[tuple, _Signature] = {}
_last_signature: dict[core.Primitive, _Signature] = {}
_work_done: dict[tuple, int] = {}
_fused: dict[tuple, Any] = {}


def apply_primitive(prim: core.Primitive, *args: Any, **params: Any) -> Any:
  """The impl of every XLA primitive: records it in the current batch."""
  try:
    avals = tuple(map(_aval_of, args))  # Arrays, the usual operands; no Python loop
  except AttributeError:
    args = tuple([x if type(x) is Array else executable.as_array(x) for x in args])
    avals = tuple(map(_aval_of, args))
  sig = _last_signature.get(prim) if not params else None
  if sig is None or sig.in_avals != avals:
    sig = _signature(prim, avals, params)
  with _lock:
    outs = _record(_current, sig, args)
    if len(_current.nodes) >= MAX_BATCH:
      flush()
  return outs if prim.multiple_results else outs[0]


def _signature(prim: core.Primitive, avals: tuple, params: dict) -> _Signature:
  key = (prim, tuple(params.items()), avals)
  try:
    sig = _signatures.get(key)
  except TypeError as e:
    raise TypeError(f"parameters of primitive '{prim.name}' must be hashable: {params}") from e
  if sig is None:
    sig = _signatures[key] = _Signature(prim, params, avals, len(_signatures))
  if not params:
    _last_signature[prim] = sig
  return sig


def _record(batch: _Batch, sig: _Signature, args: Sequence[Array]) -> list[Array]:
  leaf_index = batch.leaf_index
  refs = []
  for x in args:
    pending = x._pending
    if pending is not None:
      if pending[0] is not batch:  # its batch failed: report why
        materialize(x)
      refs.append(pending[1])
      continue
    leaf = leaf_index.get(id(x))
    if leaf is None:
      x._check_if_deleted()  # fail at the operation that uses it, not later
      leaf = leaf_index[id(x)] = len(batch.leaves)
      batch.leaves.append(x)
    refs.append(leaf)
  pos = len(batch.nodes)
  refs = tuple(refs)
  if len(sig.out_avals) == 1:
    out = Array.pending(sig.out_avals[0], (batch, (pos, 0)))
    outs = [out]
    weak = (weakref.ref(out),)
  else:
    outs = [Array.pending(aval, (batch, (pos, i))) for i, aval in enumerate(sig.out_avals)]
    weak = tuple([weakref.ref(a) for a in outs])
  batch.nodes.append((sig, refs, weak))
  batch.keys.append((sig.id, refs))
  return outs


def materialize(x: Array) -> None:
  """Runs the batch that will compute `x`."""
  batch = x._pending[0]
  with _lock:
    if batch is _current:
      flush()
  if batch.error is not None:
    raise RuntimeError(f"an earlier eager operation failed: {batch.error}") from batch.error


def flush() -> None:
  """Runs every pending operation, giving each pending Array that is alive its value."""
  global _current
  with _lock:
    batch, _current = _current, _Batch()
    if not batch.nodes:
      return
    try:
      _run(batch)
    except BaseException as e:
      batch.error = e
      raise


def _run(batch: _Batch) -> None:
  live = [(pos, i, a) for pos, (_, _, outs) in enumerate(batch.nodes)
          for i, ref in enumerate(outs) if (a := ref()) is not None]
  if not live:
    return
  key = (tuple(batch.keys), tuple([(pos, i) for pos, i, _ in live]))
  exe = _fused.get(key)
  if exe is None and len(batch.nodes) > 1:
    exe = _fuse_if_repeated(key, batch, live)
  if exe is not None:
    bufs = exe.run([x._buf for x in batch.leaves], batch.leaves)
    for (_, _, a), buf in zip(live, bufs):
      a._set_buffer(buf)
  else:
    _run_one_by_one(batch, live)


def _fuse_if_repeated(key: tuple, batch: _Batch, live: list) -> Any:
  done = _work_done.get(key, 0)
  if done < FUSE_WORK:
    if len(_work_done) >= _MAX_TRACKED:
      _work_done.clear()
    _work_done[key] = done + len(batch.nodes)
    return None
  del _work_done[key]
  exe = _fused[key] = executable.Executable(_batch_jaxpr(batch, live), [], "eager",
                                            eager=True)
  return exe


def _batch_jaxpr(batch: _Batch, live: list) -> Jaxpr:
  invars = [Var(x.aval) for x in batch.leaves]
  results: list[list[Var]] = []
  eqns = []
  for sig, refs, _ in batch.nodes:
    ins = [invars[r] if type(r) is int else results[r[0]][r[1]] for r in refs]
    outs = [Var(a) for a in sig.out_avals]
    results.append(outs)
    eqns.append(JaxprEqn(ins, outs, sig.prim, sig.params))
  return Jaxpr([], invars, [results[pos][i] for pos, i, _ in live], eqns)


def _run_one_by_one(batch: _Batch, live: list) -> None:
  """Runs the operations whose results are still needed, each through its cached
  one-primitive executable, dropping each intermediate buffer after its last use (a batch
  of operations on large arrays must not hold all of them at once)."""
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
  for pos, (sig, refs, _) in enumerate(nodes):
    if not needed[pos]:
      continue
    bufs = [leaf_bufs[r] if type(r) is int else values[r[0]][r[1]] for r in refs]
    values[pos] = sig.executable().run(bufs, batch.leaves)
    for i, a in outputs.get(pos, ()):
      a._set_buffer(values[pos][i])
    for done in freed_after[pos]:
      values[done] = None


def _clear_caches(name: str, value: Any) -> None:
  if name == "jax_enable_x64":
    flush()
    _signatures.clear()
    _last_signature.clear()
    _work_done.clear()
    _fused.clear()


config.on_update(_clear_caches)
array_mod.set_materializer(materialize, flush)
