"""Device arrays for meshes (JAX's `jax.experimental.mesh_utils`)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src.xla import client


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
  """The devices in an array of `mesh_shape`, in device order: CPU devices have no
  physical topology to follow (TPU meshes do in JAX), so the order is the one
  `jaxon.devices()` lists. The keyword arguments only matter for TPUs."""
  devices = client.devices() if devices is None else list(devices)
  if math.prod(mesh_shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                     f"mesh_shape {tuple(mesh_shape)}")
  grid = np.empty(len(devices), dtype=object)
  grid[:] = devices
  return grid.reshape(tuple(mesh_shape))


# JAX's builders of TPU meshes that follow the chips' physical layout, by device kind.
# CPU and GPU devices have no such layout: the table is empty, and meshes follow device order.
device_kind_handler_dict: dict[str, Callable[..., np.ndarray]] = {}


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
  """A mesh over several granules (TPU slices, or processes with `process_is_granule`;
  the process of a device without a slice): each granule's devices form a `mesh_shape`
  block, and the blocks are laid out as `dcn_mesh_shape` (the slow network between
  granules), so the result's shape is their elementwise product."""
  if len(mesh_shape) != len(dcn_mesh_shape):
    raise ValueError(f"mesh_shape {tuple(mesh_shape)} and dcn_mesh_shape "
                     f"{tuple(dcn_mesh_shape)} must have the same length")
  devices = client.devices() if devices is None else list(devices)

  def granule_of(d: Any) -> int:
    return d.process_index if process_is_granule else getattr(d, "slice_index",
                                                              d.process_index)
  granules: dict[int, list[Any]] = {}
  for d in devices:
    granules.setdefault(granule_of(d), []).append(d)
  keys = sorted(granules) if should_sort_granules_by_key else list(granules)
  if len(keys) != math.prod(dcn_mesh_shape):
    raise ValueError(f"Number of slices/processes {len(keys)} must equal the product of "
                     f"dcn_mesh_shape {tuple(dcn_mesh_shape)}")
  blocks = np.empty((*dcn_mesh_shape, *mesh_shape), dtype=object)
  for index, key in zip(np.ndindex(*dcn_mesh_shape), keys):
    blocks[index] = create_device_mesh(mesh_shape, granules[key])
  rank = len(mesh_shape)  # interleave (dcn_0, mesh_0, dcn_1, mesh_1, ...), as np.block does
  order = [axis for i in range(rank) for axis in (i, rank + i)]
  return blocks.transpose(order).reshape(
      tuple(m * d for m, d in zip(mesh_shape, dcn_mesh_shape)))
