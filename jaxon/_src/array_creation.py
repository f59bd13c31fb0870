"""Global arrays built from the pieces each process holds (JAX's `make_array_from_*`).

In a job of several processes no process holds a whole array laid out over every device:
each puts its blocks on its own devices, and the blocks together make one Array whose
sharding spans the job (`is_fully_addressable` is False). The three functions differ only
in where a process finds its blocks: a callback given each block's index, the blocks
already on their devices, or one process-local NumPy array covering the blocks of this
process's devices.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax

from jaxon._src import dtypes, tree_util
from jaxon._src.config import x64_enabled
from jaxon._src.core import ShapedArray
from jaxon._src.sharding_impls import NamedSharding, SingleDeviceSharding
from jaxon._src.xla import executable, sharded
from jaxon._src.xla.array import Array, intern_aval

Index = tuple[slice, ...]


def _check_sharding(sharding: Any, fun_name: str) -> None:
  if not isinstance(sharding, (NamedSharding, SingleDeviceSharding)):
    raise TypeError(f"{fun_name}: sharding must be a NamedSharding or SingleDeviceSharding, "
                    f"got {sharding!r}")


def _shape_of(index: Index, shape: Sequence[int]) -> tuple[int, ...]:
  return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))


def _place(shape: Sequence[int], dtype: np.dtype, sharding: Any,
           blocks: dict[Any, np.ndarray], fun_name: str) -> Array:
  """The Array of `shape` laid out as `sharding` whose block on each device of this
  process is `blocks[device]` (host data)."""
  shape = tuple(shape)
  aval = ShapedArray(shape, dtype)
  index_map = sharding.addressable_devices_indices_map(shape)
  for device, index in index_map.items():
    want = _shape_of(index, shape)
    if blocks[device].shape != want:
      raise ValueError(f"{fun_name}: the data for device {device} has shape "
                       f"{blocks[device].shape}, but {sharding!r} gives it a block of shape "
                       f"{want} of the global shape {shape}.")
  devices = list(index_map)
  pieces = [np.ascontiguousarray(blocks[d], dtype) for d in devices]
  buf = _jax.batched_device_put(executable._device_aval(aval),
                                sharded.runtime_sharding(sharding, len(shape)), pieces, devices,
                                True, False, enable_x64=x64_enabled())
  return Array(intern_aval(aval), buf)


def make_array_from_callback(shape: Sequence[int], sharding: Any,
                             data_callback: Callable[[Index], Any],
                             dtype: Any = None) -> Array:
  """An Array of `shape` laid out as `sharding`, asking `data_callback(index)` for the
  block each device of this process holds (`index`: a tuple of slices into the global
  array). The dtype is `dtype`, else that of the first block (canonicalized)."""
  _check_sharding(sharding, "make_array_from_callback")
  index_map = sharding.addressable_devices_indices_map(tuple(shape))
  blocks = {d: np.asarray(data_callback(index)) for d, index in index_map.items()}
  if dtype is None:
    dtype = next(iter(blocks.values())).dtype if blocks else np.float32
  return _place(shape, dtypes.canonicalize_dtype(dtype), sharding, blocks,
                "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Any,
                                         arrays: Sequence[Array], *,
                                         dtype: Any = None) -> Array:
  """An Array of `shape` laid out as `sharding` from its blocks, one single-device Array
  per device of this process (in any order): the blocks stay where they are."""
  del dtype  # the blocks' dtype is the Array's
  _check_sharding(sharding, "make_array_from_single_device_arrays")
  shape = tuple(shape)
  arrays = list(arrays)
  index_map = sharding.addressable_devices_indices_map(shape)
  by_device = {}
  for a in arrays:
    if not isinstance(a, Array) or len(a.devices()) != 1:
      raise TypeError("make_array_from_single_device_arrays: each array must be a jaxon "
                      f"Array on one device, got {type(a).__name__}")
    by_device[next(iter(a.devices()))] = a
  if set(by_device) != set(index_map) or len(arrays) != len(index_map):
    raise ValueError("make_array_from_single_device_arrays: expected one array on each "
                     f"addressable device of the sharding {sorted(d.id for d in index_map)}, "
                     f"got arrays on devices {[next(iter(a.devices())).id for a in arrays]}.")
  for device, index in index_map.items():
    if by_device[device].shape != _shape_of(index, shape):
      raise ValueError(f"make_array_from_single_device_arrays: the array on device {device} "
                       f"has shape {by_device[device].shape}, but {sharding!r} gives it a "
                       f"block of shape {_shape_of(index, shape)} of the global shape {shape}.")
  first = arrays[0]
  aval = ShapedArray(shape, first.dtype, first.weak_type)
  runtime = sharded.runtime_sharding(sharding, len(shape))
  # jaxlib wants the blocks in the order of the sharding's devices.
  bufs = [by_device[d]._buf for d in runtime._devices if d in by_device]
  return Array(intern_aval(aval), _jax.ArrayImpl(executable._device_aval(aval), runtime, bufs,
                                                 True, True))


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Any = None) -> Any:
  """A global Array from the data this process holds: `local_data` covers exactly the
  blocks of this process's devices, packed in order along each dimension the job splits
  (rows 8:12 and 24:28 of the global array are rows 0:4 and 4:8 of `local_data`). A
  dimension no process splits is whole in `local_data`.

  `global_shape` (default: inferred, each process holding an equal part) may give, per
  dimension, the local size (the data is the whole dimension) or the inferred size.
  Pytrees of data take one sharding or a matching pytree of them."""
  leaves, treedef = tree_util.tree_flatten(local_data)
  shardings = ([sharding] * len(leaves) if isinstance(sharding, _jax.Sharding) else
               treedef.flatten_up_to(sharding))
  shapes = ([global_shape] * len(leaves) if global_shape is None or
            all(isinstance(n, int) for n in global_shape) else
            treedef.flatten_up_to(global_shape))
  outs = [_from_process_local(s, np.asarray(x, dtypes.dtype(x, canonicalize=True)), g)
          for s, x, g in zip(shardings, leaves, shapes)]
  return tree_util.tree_unflatten(treedef, outs)


def _from_process_local(sharding: Any, local: np.ndarray,
                        global_shape: Sequence[int] | None) -> Array:
  _check_sharding(sharding, "make_array_from_process_local_data")
  ndim = local.ndim
  # Blocks of a shape whose dimension d is its tile count: each device's tile coordinates.
  hlo = sharded.runtime_sharding(sharding, ndim)._hlo_sharding
  tiles = [1] * ndim if hlo.is_replicated() else list(hlo.tile_assignment_dimensions()[:ndim])
  coords_of = {d: [index[k].indices(tiles[k])[0] for k in range(ndim)]
               for d, index in sharding.devices_indices_map(tuple(tiles)).items()}
  mine = sharding.addressable_devices
  local_coords = [sorted({coords_of[d][k] for d in mine}) for k in range(ndim)]
  inferred = []
  for k in range(ndim):
    size, held = local.shape[k] * tiles[k], len(local_coords[k])
    if size % held:
      raise ValueError(f"make_array_from_process_local_data: dimension {k} of the local data "
                       f"({local.shape[k]}) is not a whole number of this process's "
                       f"{held} blocks of it.")
    inferred.append(size // held)
  shape = tuple(inferred) if global_shape is None else tuple(global_shape)
  for k in range(ndim):
    if shape[k] not in (local.shape[k], inferred[k]):
      raise ValueError(f"make_array_from_process_local_data: global_shape {shape} does not "
                       f"fit local data of shape {local.shape}: dimension {k} must be "
                       f"{local.shape[k]} (the data is the whole dimension) or "
                       f"{inferred[k]} (this process's blocks of it).")
  blocks = {}
  for device, index in sharding.addressable_devices_indices_map(shape).items():
    local_index = []
    for k in range(ndim):
      if shape[k] == local.shape[k]:
        local_index.append(index[k])
      else:
        block = shape[k] // tiles[k]
        start = local_coords[k].index(coords_of[device][k]) * block
        local_index.append(slice(start, start + block))
    blocks[device] = local[tuple(local_index)]
  return _place(shape, local.dtype, sharding, blocks, "make_array_from_process_local_data")
