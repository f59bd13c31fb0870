"""Arrays and programs over several devices: the one module that speaks jaxlib's sharding
protocol.

A sharding the user sees (`NamedSharding`, `SingleDeviceSharding`, in `sharding_impls.py`)
is turned here into what jaxlib's C++ needs: a `GSPMDSharding` (a device list and an
`HloSharding`). Buffers carry that C++ object, and `user_sharding` maps it back, so an
Array needs no field of its own for its layout. Device numbers inside an `HloSharding` are
positions in its device list (a mesh's devices in mesh order), as in XLA's device
assignment.

Programs over several devices are SPMD: compiled once with `num_partitions=N`, Shardy
annotations in the module, and XLA's partitioner splitting the work (see
`notes/multidevice-facts.md`).
"""
from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client

from jaxon._src import core, dtypes
from jaxon._src.config import x64_enabled
from jaxon._src.core import Jaxpr, ShapedArray
from jaxon._src.interpreters import mlir
from jaxon._src.xla import client, compilation_cache, executable
from jaxon._src.xla import array as array_mod
from jaxon._src.xla.array import Array, _host_view, intern_aval

HloSharding = xla_client.HloSharding
Index = tuple[slice, ...]

# ----------------------------------------------------------------------------- shardings

_lock = threading.Lock()
# (user sharding, ndim) -> its C++ sharding; id(C++ sharding) -> (C++ sharding, user).
# Both grow with the distinct shardings a program uses, which are few.
_runtime: dict[tuple[Any, int], _jax.GSPMDSharding] = {}
_user: dict[int, tuple[_jax.GSPMDSharding, Any]] = {}


def tiled_hlo_sharding(axis_sizes: Sequence[int], dim_axes: Sequence[Sequence[int]]
                       ) -> xla_client.HloSharding:
  """The HloSharding of an array whose dimension d is split over the mesh axes
  `dim_axes[d]` (major to minor) of a mesh of `axis_sizes`; the array is replicated over
  the mesh axes no dimension uses."""
  used = [a for axes in dim_axes for a in axes]
  unused = [a for a in range(len(axis_sizes)) if a not in used]
  tiles = [int(np.prod([axis_sizes[a] for a in axes])) for axes in dim_axes]
  replicas = int(np.prod([axis_sizes[a] for a in unused]))
  if all(t == 1 for t in tiles):
    return HloSharding.replicate()
  if replicas == 1:
    return HloSharding.iota_tile(tiles, list(axis_sizes), used + unused)
  return HloSharding.iota_tile(tiles + [replicas], list(axis_sizes), used + unused,
                               [xla_client.OpSharding.Type.REPLICATED])


def runtime_sharding(sharding: Any, ndim: int) -> _jax.GSPMDSharding:
  """The C++ sharding of `sharding` (which gives `_device_assignment` and
  `_to_xla_hlo_sharding(ndim)`) for arrays of rank `ndim`; one object per pair, so that
  buffers carry it by identity and `user_sharding` finds `sharding` again. Every layout
  but the default device's is made here, so this is where jaxon notes that placed Arrays
  may exist (`array.note_placed`)."""
  key = (sharding, ndim)
  found = _runtime.get(key)
  if found is None:
    array_mod.note_placed()
    found = _jax.GSPMDSharding(xla_client.DeviceList(tuple(sharding._device_assignment)),
                               sharding._to_xla_hlo_sharding(ndim))
    register(found, sharding)
    with _lock:
      found = _runtime.setdefault(key, found)
  return found


def register(runtime: Any, sharding: Any) -> None:
  """Declares that buffers carrying the C++ sharding `runtime` are laid out as `sharding`."""
  with _lock:
    _user.setdefault(id(runtime), (runtime, sharding))


def user_sharding(runtime: Any) -> Any:
  """The sharding the user sees for a buffer's C++ sharding (the C++ object itself for a
  buffer jaxon did not place)."""
  found = _user.get(id(runtime))
  return runtime if found is None else found[1]


def indices(hlo: xla_client.HloSharding, shape: Sequence[int], num_devices: int
            ) -> list[Index]:
  """The block of an array of `shape` each device holds, by position in the device list
  (`slice(None)` for a dimension that is not split)."""
  if hlo.is_replicated():
    return [(slice(None),) * len(shape)] * num_devices
  tiles = hlo.tile_assignment_dimensions()
  order = hlo.tile_assignment_devices()
  out: list[Index] = [()] * num_devices
  for position, coords in zip(order, itertools.product(*map(range, tiles))):
    out[position] = tuple(slice(None) if n == 1 else slice(c * (size // n), (c + 1) * (size // n))
                          for c, n, size in zip(coords, tiles, shape))
  return out


def _canonical(index: Index, shape: Sequence[int]) -> tuple:
  return tuple(s.indices(n) for s, n in zip(index, shape))


def replica_ids(blocks: Sequence[Index], shape: Sequence[int]) -> list[int]:
  """How many devices before each hold the same block (JAX's `replica_id`)."""
  seen: dict[tuple, int] = {}
  ids = []
  for index in blocks:
    key = _canonical(index, shape)
    ids.append(seen.get(key, 0))
    seen[key] = ids[-1] + 1
  return ids


# ----------------------------------------------------------------------------- transfers


def put(value: np.ndarray, aval: ShapedArray, sharding: Any, committed: bool = True
        ) -> Array:
  """`value` (host data of `aval`'s dtype) laid out as `sharding`: each device of this
  process gets its block (in a job of several processes, each puts its own)."""
  runtime = runtime_sharding(sharding, physical_ndim(aval))
  devices = list(runtime._devices)
  blocks = indices(runtime._hlo_sharding, aval.shape, len(devices))
  here = client.process_index()
  mine = [i for i, d in enumerate(devices) if d.process_index == here]
  pieces = [np.asarray(value[blocks[i]], order="C") for i in mine]  # (a scalar stays 0-d)
  buf = _jax.batched_device_put(executable._device_aval(aval), runtime, pieces,
                                [devices[i] for i in mine], committed, False,
                                enable_x64=x64_enabled())
  return Array(intern_aval(aval), buf)


def host_value(buf: _jax.ArrayImpl, aval: ShapedArray) -> np.ndarray:
  """The whole array of a buffer spread over several devices, assembled from its blocks
  (NumPy cannot read such a buffer directly). A block held by several devices is read
  from the first of them in the device list, as JAX does: with shard_map's replication
  check off, copies that should agree may not.

  Raises:
    RuntimeError: some blocks are only on other processes' devices (JAX's error); an
      array whose local blocks cover it (replicated across processes) is read as JAX does.
  """
  runtime = buf._sharding
  positions = {d: i for i, d in enumerate(runtime._devices)}
  blocks = indices(runtime._hlo_sharding, aval.shape, len(positions))
  first_holders: dict[tuple, _jax.ArrayImpl] = {}  # block -> the shard to read it from
  for shard in sorted(buf._arrays, key=lambda s: positions[s._sharding._device]):
    first_holders.setdefault(_canonical(blocks[positions[shard._sharding._device]],
                                        aval.shape), shard)
  if not runtime._internal_device_list.is_fully_addressable and (
      len(first_holders) != len({_canonical(b, aval.shape) for b in blocks})):
    raise RuntimeError(
        "Fetching value for `jax.Array` that spans non-addressable (non process local) "
        "devices is not possible. You can use "
        "`jax.experimental.multihost_utils.process_allgather` to print the global array or "
        "use `.addressable_shards` method of jax.Array to inspect the addressable (process "
        "local) shards.")
  device_aval = executable._device_aval(aval)
  out = np.empty(core.physical_aval(device_aval).shape, device_aval.dtype)
  for shard in first_holders.values():
    out[blocks[positions[shard._sharding._device]]] = _host_view(shard)
  return out


def shard_buffers(buf: _jax.ArrayImpl) -> list[tuple[Any, Index, _jax.ArrayImpl]]:
  """(device, block, single-device buffer) of each addressable block of a buffer."""
  runtime = buf._sharding
  positions = {d: i for i, d in enumerate(runtime._devices)}
  return [(shard._sharding._device, positions[shard._sharding._device], shard)
          for shard in buf._arrays]


def rewrap(buf: _jax.ArrayImpl, aval: ShapedArray, sharding: Any) -> Array:
  """An Array of the single-device buffer `buf` (a block of a larger one), carrying the
  C++ sharding of `sharding` so that it reads back as the user's."""
  runtime = runtime_sharding(sharding, physical_ndim(aval))
  return Array(intern_aval(aval), _jax.ArrayImpl(executable._device_aval(aval), runtime,
                                                 [buf], True, True))


def is_placed(x: Any) -> bool:
  """Whether an Array lives anywhere but uncommitted on the default device."""
  return type(x) is Array and x._buf._sharding is not client.default_sharding()


# ----------------------------------------------------------------------------- programs


# The completion tokens of the latest runs over several devices, oldest first. XLA's CPU
# collectives deadlock when too many programs with collectives are in flight at once
# (notes/multidevice-facts.md §8), and XLA's partitioner adds collectives of its own: each
# such run waits for the one `MAX_IN_FLIGHT` runs back to finish. Its token, not its
# results, says when: holding 16 runs' outputs made a chained pmap of 1 MB per device
# about a sixth slower.
MAX_IN_FLIGHT = 16
_in_flight: collections.deque = collections.deque()
_in_flight_lock = threading.Lock()


def _limit_in_flight(token: _jax.ShardedToken) -> None:
  with _in_flight_lock:
    _in_flight.append(token)
    oldest = _in_flight.popleft() if len(_in_flight) > MAX_IN_FLIGHT else None
  if oldest is not None:
    oldest.block_until_ready()


class Placement:
  """Where an SPMD program runs: a mesh's devices (in mesh order) and axes."""

  __slots__ = ("devices", "axis_names", "axis_sizes")

  def __init__(self, devices: Sequence[Any], axis_names: Sequence[str],
               axis_sizes: Sequence[int]):
    self.devices = tuple(devices)
    self.axis_names = tuple(axis_names)
    self.axis_sizes = tuple(axis_sizes)


def physical_ndim(aval: Any) -> int:
  """The rank of the buffer holding arrays of `aval`: a key array's holds each key's words
  in trailing dimensions, which no sharding splits."""
  return len(core.physical_aval(aval).shape)


class SpmdExecutable:
  """A program compiled once for the devices of a placement and split over them by XLA.

  Arguments are laid out as `in_shardings` (user shardings); results as `out_shardings`,
  where one is None as XLA chose, read back as a user sharding by `from_hlo`.
  """

  __slots__ = ("name", "loaded", "in_avals", "out_avals", "in_shardings", "in_runtime",
               "out_shardings", "_handlers", "_const_bufs", "_float0_outputs", "_donated",
               "_spans_devices")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any], name: str, placement: Placement,
               in_shardings: Sequence[Any], out_shardings: Sequence[Any | None],
               sdy: Callable[[Any, int], str | None],
               from_hlo: Callable[[xla_client.HloSharding, int], Any],
               donated_invars: Sequence[bool] = ()):
    """`sdy(sharding, ndim)` is the Shardy annotation of a sharding (None: none);
    `from_hlo(hlo, ndim)` the user sharding of a layout XLA chose; `donated_invars` marks
    the inputs whose buffers outputs may take."""
    n = len(placement.devices)
    in_avals = [v.aval for v in jaxpr.invars]
    out_avals = [v.aval for v in jaxpr.outvars]
    replicated = from_hlo(HloSharding.replicate(), 0)
    const_shardings = [replicated] * len(consts)
    module = executable.lower_jaxpr(
        jaxpr, name, mesh=(placement.axis_names, placement.axis_sizes, n),
        arg_shardings=[sdy(s, physical_ndim(a)) for s, a in
                       zip(const_shardings + list(in_shardings),
                           [v.aval for v in jaxpr.constvars] + in_avals)],
        result_shardings=[None if s is None else sdy(s, physical_ndim(a))
                          for s, a in zip(out_shardings, out_avals)])
    self._donated = [i for i, d in enumerate(donated_invars) if d]
    if self._donated:
      aliases, donors, unusable = _donation(in_avals, out_avals, in_shardings, out_shardings,
                                            donated_invars)
      executable._mark_aliases(module, len(jaxpr.constvars), aliases, donors)
      executable.warn_unusable_donations(unusable)
    options = executable._compile_options(False, [d.id for d in placement.devices])
    self.loaded = compilation_cache.compile_and_load(
        client.backend(), executable.mlir_module_bytes(module),
        xla_client.DeviceList(placement.devices), options, name)
    self.name = name
    self._spans_devices = n > 1
    self.in_avals = in_avals
    self.out_avals = [intern_aval(a) for a in out_avals]
    self.in_shardings = list(in_shardings)
    self.in_runtime = [runtime_sharding(s, physical_ndim(a))
                       for s, a in zip(in_shardings, in_avals)]
    protos = self.loaded.get_output_shardings()  # None for a program on one device
    chosen = ([HloSharding.from_proto(p) for p in protos] if protos is not None
              else [HloSharding.replicate()] * len(out_avals))
    self.out_shardings = [from_hlo(h, physical_ndim(a)) if s is None else s
                          for s, h, a in zip(out_shardings, chosen, out_avals)]
    self._handlers = [
        _jax.array_result_handler(executable._device_aval(a),
                                  runtime_sharding(s, physical_ndim(a)), True,
                                  _skip_checks=True)
        for s, a in zip(self.out_shardings, self.out_avals)]
    self._float0_outputs = [i for i, a in enumerate(self.out_avals) if a.dtype == dtypes.float0]
    self._const_bufs = [put(np.asarray(mlir.constant_data(c)), v.aval, replicated)._buf
                        for c, v in zip(consts, jaxpr.constvars)]

  def __call__(self, args: Sequence[Any]) -> list[Array]:
    """Runs on `args`, each moved to its input sharding first when it is elsewhere (the
    copy is what a donated argument then gives up)."""
    if self._donated:
      array_mod._flush()  # pending eager operations may read a donated Array: run them first
      for i in self._donated:
        if type(args[i]) is Array:
          args[i]._npy = None  # a cached host view would keep XLA from taking the buffer
    bufs = [self._argument(x, aval, runtime) for x, aval, runtime in
            zip(args, self.in_avals, self.in_runtime)]
    try:
      run = self.loaded.execute_sharded(self._const_bufs + bufs,
                                        with_tokens=self._spans_devices)
      token = run.consume_token() if self._spans_devices else None
      results = run.consume_with_handlers(self._handlers)
    except _jax.JaxRuntimeError:
      executable._raise_if_deleted(args)
      raise
    if token is not None:
      _limit_in_flight(token)
    outs: list[Any] = list(map(Array, self.out_avals, results))
    for i in self._float0_outputs:
      outs[i] = np.zeros(self.out_avals[i].shape, dtypes.float0)
    return outs

  @staticmethod
  def _argument(x: Any, aval: ShapedArray, runtime: _jax.GSPMDSharding) -> _jax.ArrayImpl:
    if type(x) is Array:
      if x._buf._sharding is runtime:
        return x._buf
      value = x._value if x._buf._sharding is client.default_sharding() else host_value(
          x._buf, x.aval)
    else:
      value = np.asarray(x, executable._device_aval(aval).dtype)
    return put(np.asarray(value), aval, user_sharding(runtime))._buf


def _donation(in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
              in_shardings: Sequence[Any], out_shardings: Sequence[Any | None],
              donated_invars: Sequence[bool]
              ) -> tuple[dict[int, int], list[int], list[ShapedArray]]:
  """How an SPMD program takes its donated inputs, as JAX decides: ({input: output} of
  outputs with a given sharding whose per-device block has the input's block shape and
  dtype; inputs XLA may pair itself with an output left to XLA of the same shape and
  dtype; the per-device avals of the rest, which no output can take)."""
  def block(aval: ShapedArray, sharding: Any) -> ShapedArray:
    return aval.update(shape=sharding.shard_shape(aval.shape))
  waiting: dict[tuple, list[int]] = {}
  for i, (aval, d) in enumerate(zip(in_avals, donated_invars)):
    if d and aval.dtype != dtypes.float0:
      local = block(aval, in_shardings[i])
      waiting.setdefault((local.shape, local.dtype), []).append(i)
  aliases = {}
  for o, (aval, sharding) in enumerate(zip(out_avals, out_shardings)):
    if sharding is not None and (inputs := waiting.get(
        (block(aval, sharding).shape, aval.dtype))):
      aliases[inputs.pop(0)] = o
  left_to_xla = [(a.shape, a.dtype) for a, s in zip(out_avals, out_shardings) if s is None]
  donors, unusable = [], []
  for i, d in enumerate(donated_invars):
    if not d or i in aliases:
      continue
    key = (in_avals[i].shape, in_avals[i].dtype)
    if key in left_to_xla:
      left_to_xla.remove(key)
      donors.append(i)
    else:
      unusable.append(block(in_avals[i], in_shardings[i]))
  return aliases, donors, unusable
