"""Device arrays for meshes (JAX's `jax.experimental.mesh_utils`)."""
from __future__ import annotations

import math
from collections.abc import Sequence
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
