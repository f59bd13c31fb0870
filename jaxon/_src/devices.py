"""Devices and placement, as the user sees them: which devices and processes there are
(`devices`, `process_index`, JAX's deprecated `host_*` names), and moving values onto them
(`device_put`, with a device, a sharding or a pytree prefix of those) and back
(`device_get`, `block_until_ready`)."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src import config_guards, core, dtypes, sharding_impls, tree_util
from jaxon._src.lax import sharding_constraint
from jaxon._src.xla import client, executable
from jaxon._src.xla.array import Array


def devices(backend: str | None = None) -> list[client.Device]:
  return client.devices(backend)


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list[client.Device]:
  """This process's devices, or those of process `process_index` (`host_id`: its old
  name)."""
  client.devices(backend)  # checks the backend's name
  index = process_index if process_index is not None else host_id
  if index is None:
    return client.local_devices()
  return [d for d in client.devices() if d.process_index == index]


def device_count(backend: str | None = None) -> int:
  return len(client.devices(backend))


def local_device_count(backend: str | None = None) -> int:
  return len(local_devices(backend=backend))


def default_backend() -> str:
  return client.default_backend()


def process_index(backend: str | None = None) -> int:
  """This process's index in a multi-process job (0 alone)."""
  client.devices(backend)
  return client.process_index()


def process_count(backend: str | None = None) -> int:
  client.devices(backend)
  return client.process_count()


def process_indices(backend: str | None = None) -> list[int]:
  """The indices of the job's processes: `range(process_count())`."""
  return list(range(process_count(backend)))


def _renamed(old: str, new: Callable) -> Callable:
  """JAX's deprecated `host_*` names: the same function, with JAX's warning."""
  def alias(*args: Any, **kwargs: Any) -> Any:
    warnings.warn(f"jax.{old} has been renamed to jax.{new.__name__}. This alias will "
                  "eventually be removed; please update your code.", UserWarning, stacklevel=2)
    return new(*args, **kwargs)
  alias.__name__ = old
  return alias


host_id = _renamed("host_id", process_index)
host_count = _renamed("host_count", process_count)
host_ids = _renamed("host_ids", process_indices)


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: bool = False,
               may_alias: bool | None = None) -> Any:
  """Places each leaf of `x` on the device as an Array: uncommitted on the default device
  when `device` is None, else committed to `device` (a Device or a Sharding, or a pytree
  prefix of `x` of those). A traced leaf is returned as it is, as in JAX, or constrained
  to a NamedSharding.

  Raises:
    ValueError: `device` is not a tree prefix of `x` (a list of devices for one array).
  """
  with config_guards.explicit_transfer():
    return _device_put(x, device)


def _device_put(x: Any, device: Any) -> Any:
  if device is None:
    return tree_util.tree_map(
        lambda leaf: leaf if isinstance(leaf, core.Tracer) else executable.device_put(leaf), x)
  if isinstance(device, (client.Device, sharding_impls.Sharding)):
    return tree_util.tree_map(lambda leaf: _device_put_leaf(leaf, device), x)
  try:
    return tree_util.tree_map(lambda target, sub: tree_util.tree_map(
        lambda leaf: _device_put_leaf(leaf, target), sub), device, x)
  except ValueError as e:
    raise ValueError("device_put device specification must be a tree prefix of the "
                     f"corresponding value; got device={device!r}: {e}") from None


def _device_put_leaf(leaf: Any, target: Any) -> Any:
  if isinstance(leaf, core.Tracer):
    if isinstance(target, sharding_impls.NamedSharding):
      return sharding_constraint.with_sharding_constraint(leaf, target)
    return leaf
  return sharding_impls.device_put_leaf(leaf, target)


def device_get(x: Any) -> Any:
  """Copies each Array leaf of `x` to a NumPy array (key arrays, which NumPy cannot hold,
  stay as they are)."""
  return tree_util.tree_map(
      lambda a: np.asarray(a) if type(a) is Array and not dtypes.is_extended(a.dtype)
      else a, x)


def block_until_ready(x: Any) -> Any:
  """Waits until every Array leaf of `x` has been computed; returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    if type(leaf) is Array:
      leaf.block_until_ready()
  return x
