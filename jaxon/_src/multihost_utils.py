"""Exchanging host values between the processes of a job (JAX's `multihost_utils`).

JAX moves these values through a compiled collective over every device of the job. jaxon
moves them through the coordination service's key-value store instead: each process
publishes its bytes under a key named by the call's sequence number, then reads every
other process's. That needs no compiled program, so it works before any sharding is set
up and costs one round trip to process 0 rather than a compile per shape. It suits what
these functions are for (small host values: configs, metrics, barriers); bulk data
belongs in sharded arrays and their collectives.

Every process must make the same calls in the same order (as with JAX, where a mismatch
would deadlock in the collective); here a mismatch shows up as a shape error or a
timeout, never a silent mix-up, because each call's keys carry its sequence number.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from jaxon._src import distributed, dtypes, tree_util

# How long one process waits for the others' values. A process that died ends the wait
# sooner: the service aborts the job after its heartbeat timeout.
EXCHANGE_TIMEOUT_MS = 5 * 60 * 1000

_call_numbers = itertools.count()


def _encode(arrays: list[np.ndarray | None]) -> bytes:
  """Arrays as one header line (dtype names and shapes, JSON) and their raw bytes; a None
  (a process with nothing to send) has no entry. np.save would lose bfloat16 and the
  float8 types, whose names np.dtype resolves once ml_dtypes is imported."""
  header = [None if a is None else [a.dtype.name, list(a.shape)] for a in arrays]
  body = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays if a is not None)
  return json.dumps(header).encode() + b"\n" + body


def _decode(payload: bytes) -> list[np.ndarray | None]:
  header_line, body = payload.split(b"\n", 1)
  arrays: list[np.ndarray | None] = []
  offset = 0
  for entry in json.loads(header_line):
    if entry is None:
      arrays.append(None)
      continue
    dtype, shape = np.dtype(entry[0]), tuple(entry[1])
    count = int(np.prod(shape, dtype=np.int64))
    arrays.append(np.frombuffer(body, dtype, count, offset).reshape(shape).copy())
    offset += count * dtype.itemsize
  return arrays


def _exchange(arrays: list[np.ndarray | None]) -> list[list[np.ndarray | None]]:
  """Every process's `arrays`, in process order."""
  state = distributed.global_state
  client = state.client
  assert client is not None
  prefix = f"jaxon/multihost/{next(_call_numbers)}"
  client.key_value_set_bytes(f"{prefix}/{state.process_id}", _encode(arrays))
  gathered = [_decode(client.blocking_key_value_get_bytes(f"{prefix}/{p}",
                                                          EXCHANGE_TIMEOUT_MS))
              for p in range(state.num_processes)]
  # Every process has read every key once all pass the barrier; only then may each drop
  # its own, so the store does not grow with the number of calls.
  client.wait_at_barrier(prefix, EXCHANGE_TIMEOUT_MS)
  client.key_value_delete(f"{prefix}/{state.process_id}")
  return gathered


def _host_value(x: Any) -> np.ndarray:
  """`x` as the NumPy array a device would hold: dtype canonicalized as for
  `device_put` (float64 becomes float32 without x64, a Python int int32)."""
  return np.asarray(x, dtypes.dtype(x, canonicalize=True))


def _is_global(x: Any) -> bool:
  return not getattr(x, "is_fully_addressable", True)


def _single_process() -> bool:
  return distributed.global_state.num_processes == 1


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
  """Every process's value of each leaf, as NumPy arrays: stacked on a new leading axis
  (`tiled=False`) or concatenated along axis 0 (`tiled=True`; scalars are stacked).

  A global array (one spanning other processes' devices) comes back whole, assembled
  from every process's shards; it must be gathered with `tiled=True`, as in JAX."""
  leaves, treedef = tree_util.tree_flatten(in_tree)
  if any(_is_global(x) for x in leaves) and not tiled:
    raise ValueError("Gathering global non-fully-addressable arrays only supports tiled=True")
  if _single_process():  # as JAX: the value as it is (no dtype canonicalization)
    return tree_util.tree_unflatten(
        treedef, [np.asarray(x) if tiled else np.asarray(x)[None] for x in leaves])
  local = [_addressable_pieces(x) if _is_global(x) else [_host_value(x)] for x in leaves]
  # One exchange for the whole tree: a flat list of pieces, split per leaf afterwards.
  gathered = _exchange([piece for pieces in local for piece in pieces])
  outs, start = [], 0
  for x, pieces in zip(leaves, local):
    per_process = [g[start:start + len(pieces)] for g in gathered]
    start += len(pieces)
    outs.append(_assemble(x, per_process) if _is_global(x) else
                _join([p[0] for p in per_process], tiled))
  return tree_util.tree_unflatten(treedef, outs)


def _join(values: list[Any], tiled: bool) -> np.ndarray:
  shapes = {np.shape(v) for v in values}
  if len(shapes) > 1:
    raise ValueError("process_allgather: each leaf must have the same shape in every "
                     f"process; got shapes {[np.shape(v) for v in values]} (process order).")
  if tiled and np.ndim(values[0]) > 0:
    return np.concatenate(values)
  return np.stack(values)


def _addressable_pieces(x: Any) -> list[np.ndarray]:
  """A global array's shards held here, each preceded by its (start, stop) per axis."""
  pieces: list[np.ndarray] = []
  for shard in x.addressable_shards:
    bounds = [idx.indices(n)[:2] for idx, n in zip(shard.index, x.shape)]
    pieces += [np.asarray(bounds, np.int64).reshape(len(x.shape), 2),
               np.asarray(shard.data)]
  return pieces


def _assemble(x: Any, per_process: list[list[np.ndarray]]) -> np.ndarray:
  out = np.empty(x.shape, np.dtype(x.dtype))
  for pieces in per_process:
    for bounds, data in zip(pieces[::2], pieces[1::2]):
      out[tuple(slice(int(a), int(b)) for a, b in bounds)] = data
  return out


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
  """The source process's value of each leaf, in every process (NumPy arrays).

  Args:
    in_tree: a pytree of arrays, with the same shapes and dtypes in every process.
    is_source: whether this process is the source; by default process 0 is. Like JAX,
      which sums what the sources send, no source gives zeros and several give the sum.
  """
  leaves, treedef = tree_util.tree_flatten(in_tree)
  if _single_process():
    return tree_util.tree_unflatten(treedef, [np.asarray(x) for x in leaves])
  if is_source is None:
    is_source = distributed.global_state.process_id == 0
  values = [_host_value(x) for x in leaves]
  # A process that is not a source sends only shapes and dtypes, to check they agree.
  sent = values if is_source else [np.empty((0,), v.dtype) for v in values]
  gathered = _exchange([np.asarray(is_source)] + sent)
  sources = [g[1:] for g in gathered if bool(g[0])]
  outs = []
  for i, value in enumerate(values):
    contributions = [s[i] for s in sources]
    if any(c.shape != value.shape or c.dtype != value.dtype for c in contributions):
      raise ValueError("broadcast_one_to_all: each leaf must have the same shape and dtype in "
                       f"every process; here {value.dtype.name}{list(value.shape)}, at a "
                       "source " + ", ".join(f"{c.dtype.name}{list(c.shape)}"
                                             for c in contributions) + ".")
    outs.append(contributions[0] if len(contributions) == 1 else
                np.sum(np.stack([np.zeros_like(value)] + contributions), axis=0,
                       dtype=value.dtype))
  return tree_util.tree_unflatten(treedef, outs)


def sync_global_devices(name: str) -> None:
  """Waits until every process reaches the call of the same `name` (AssertionError when
  the processes' names differ)."""
  assert_equal(np.uint32(zlib.crc32(name.encode())),
               f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
  """Raises AssertionError unless every process holds the same values in `in_tree` (a
  global array is one value by construction, so it always passes)."""
  gathered = process_allgather(in_tree, tiled=True)
  for mine, everyone in zip(tree_util.tree_leaves(in_tree), tree_util.tree_leaves(gathered)):
    value = _host_value(mine)
    expected = (np.concatenate([np.atleast_1d(value)] * distributed.global_state.num_processes)
                if not _is_global(mine) else everyone)
    if not np.all(np.equal(expected, everyone)):  # broadcasting: one process's scalar
      raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


def reached_preemption_sync_point(step_id: int) -> bool:
  """Whether every process has reached the step at which to save a checkpoint after a
  preemption notice (False outside a multi-process job, as in JAX).

  Raises:
    RuntimeError: in a multi-process job: jaxon's distributed runtime does not start the
      preemption sync manager this needs.
  """
  del step_id
  if distributed.global_state.client is None:
    return False
  raise RuntimeError("Preemption sync manager has not been initialized: jaxon's "
                     "distributed runtime does not start JAX's preemption service. Save "
                     "checkpoints on a fixed schedule instead.")


class ProcessFailureError(Exception):
  """Raised by `live_devices` when processes failed during its `with` block;
  `failed_devices` holds the failed processes' devices."""

  def __init__(self, failed_devices: set[Any]):
    self.failed_devices = failed_devices
    super().__init__(f"Devices failed: {failed_devices}")


def _live_devices(client: Any, devices: Sequence[Any]) -> dict[Any, int]:
  """The live ones among `devices`, each with its process's incarnation number (a process
  that restarted has a new one)."""
  process_ids = {d.process_index for d in devices}
  if distributed.global_state.process_id not in process_ids:
    raise ValueError("Provided devices do not have any local devices.")
  incarnations = client.get_live_nodes(sorted(process_ids))
  return {d: incarnations[d.process_index] for d in devices
          if d.process_index in incarnations}


class _LiveDevices:
  """`with live_devices(devices) as alive:` runs the block on the devices, of `devices`,
  whose processes are alive (sorted by id). Every process of the job that calls it
  agrees on that set (asking the coordination service is a barrier among the live
  processes), and if a process fails or restarts during the block, every survivor
  raises ProcessFailureError on leaving it (chained to the block's own exception).

  Raises:
    RuntimeError: the distributed runtime is not initialized (`jax.distributed.initialize`).
    ValueError: `devices` is empty or holds no device of this process.
  """

  def __init__(self) -> None:
    self.devices: dict[Any, int] | None = None

  @contextlib.contextmanager
  def __call__(self, devices: Sequence[Any]) -> Iterator[list[Any]]:
    client = distributed.global_state.client
    if client is None:
      raise RuntimeError("Distributed JAX not initialized.")
    if not devices:
      raise ValueError("No devices provided.")
    if self.devices is None:
      self.devices = _live_devices(client, devices)
    error = None
    try:
      yield sorted(self.devices, key=lambda d: d.id)
    except Exception as e:  # noqa: BLE001 (re-raised below, possibly chained)
      error = e
    finally:
      before, self.devices = self.devices, _live_devices(client, devices)
      failed = {d for d in before if self.devices.get(d) != before[d]}
      if failed:
        raise ProcessFailureError(failed) from error
      if error is not None:
        raise error


live_devices = _LiveDevices()
