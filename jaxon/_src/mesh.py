"""`Mesh`: devices arranged in an n-dimensional grid whose axes have names.

Shardings (`NamedSharding`) split array dimensions over mesh axes by name; collectives
(`psum(x, 'x')` inside `shard_map`) reduce over them. `with mesh:` makes a mesh the
current one for the code inside (thread-local), as JAX's deprecated form does.
"""
from __future__ import annotations

import collections
import enum
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src.xla import client


class AxisType(enum.Enum):
  """How a mesh axis is sharded. jaxon partitions every axis as `Auto` does (XLA's
  partitioner propagates shardings); `Explicit` and `Manual` are recorded and printed,
  and `with_sharding_constraint` refuses `Explicit` axes as JAX does."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self) -> str:
    return self.name


class Mesh:
  """Devices in a grid (`devices`, an ndarray) with one name per axis (`axis_names`).

  Example:
    >>> mesh = Mesh(np.array(jaxon.devices()).reshape(4, 2), ('x', 'y'))
    >>> NamedSharding(mesh, PartitionSpec('x', None))
  """

  def __init__(self, devices: np.ndarray | Sequence[Any], axis_names: str | Sequence[str],
               axis_types: AxisType | Sequence[AxisType] | None = None):
    devices = np.array(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if devices.ndim != len(names) and not (devices.size == 0 and not names):
      raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal "
                       f"the length of its second argument (`axis_names`), but got "
                       f"devices.ndim == {devices.ndim} and len(axis_names) == {len(names)}.")
    if len(set(names)) != len(names):
      raise ValueError(f"Mesh axis names must be unique, got {names}.")
    if axis_types is None:
      types = (AxisType.Auto,) * len(names)
    elif isinstance(axis_types, AxisType):
      types = (axis_types,) * len(names)
    else:
      types = tuple(axis_types)
    if len(types) != len(names):
      raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                       f"axis_names={names} and axis_types={types}")
    self.devices = devices.copy()
    self.devices.flags.writeable = False
    self.axis_names = names
    self.axis_types = types
    self._key = (tuple(d.id for d in devices.flat), devices.shape, names, types)

  shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.devices.shape)))
  axis_sizes = property(lambda self: tuple(self.devices.shape))
  size = property(lambda self: math.prod(self.devices.shape))
  empty = property(lambda self: self.devices.size == 0)
  device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices))
  _flat_devices_tuple = property(lambda self: tuple(self.devices.flat))
  local_devices = property(lambda self: [d for d in self.devices.flat
                                         if d.process_index == client.process_index()])
  is_multi_process = property(lambda self: len({d.process_index
                                                for d in self.devices.flat}) > 1)

  @property
  def shape(self) -> collections.OrderedDict[str, int]:
    return collections.OrderedDict(self.shape_tuple)

  def _axes_of_type(self, axis_type: AxisType) -> tuple[str, ...]:
    return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == axis_type)

  auto_axes = property(lambda self: self._axes_of_type(AxisType.Auto))
  explicit_axes = property(lambda self: self._axes_of_type(AxisType.Explicit))
  manual_axes = property(lambda self: self._axes_of_type(AxisType.Manual))
  are_all_axes_auto = property(lambda self: len(self.auto_axes) == len(self.axis_names))
  are_all_axes_explicit = property(
      lambda self: len(self.explicit_axes) == len(self.axis_names))
  are_all_axes_manual = property(lambda self: len(self.manual_axes) == len(self.axis_names))

  @property
  def local_mesh(self) -> Mesh:
    """The part of the mesh on this process's devices (the whole mesh in one process)."""
    if not self.is_multi_process:
      return self
    mine = np.vectorize(lambda d: d.process_index == client.process_index())(self.devices)
    keep = tuple(np.flatnonzero(mine.any(axis=tuple(j for j in range(mine.ndim) if j != i)))
                 for i in range(mine.ndim))
    return Mesh(self.devices[np.ix_(*keep)], self.axis_names, self.axis_types)

  def update(self, *, devices: Any = None, axis_names: Sequence[str] | None = None,
             axis_types: Sequence[AxisType] | None = None) -> Mesh:
    """A copy with the given parts replaced."""
    return Mesh(self.devices if devices is None else devices,
                self.axis_names if axis_names is None else axis_names,
                self.axis_types if axis_types is None else axis_types)

  def __eq__(self, other: object) -> bool:
    return isinstance(other, Mesh) and self._key == other._key

  def __hash__(self) -> int:
    return hash(self._key)

  def _short_str(self) -> str:
    """The form inside a `NamedSharding`'s repr: `Mesh('x': 4, 'y': 2, axis_types=...)`."""
    axes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple)
    return f"Mesh({axes}, axis_types={self.axis_types!r})" if axes else "Mesh()"

  __str__ = _short_str

  def __repr__(self) -> str:
    return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"axis_types={self.axis_types!r})")

  @property
  def abstract_mesh(self) -> AbstractMesh:
    return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)

  def __enter__(self) -> Mesh:
    _context.stack.append(self)
    return self

  def __exit__(self, *exc_info: Any) -> None:
    _context.stack.pop()


class AbstractMesh:
  """A mesh's axis names, sizes and types without its devices: what a traced value's
  type (`jaxon.typeof(x).sharding.mesh`) knows of where it lives. jaxon's avals carry the
  empty one (`AbstractMesh((), axis_types=())`), as JAX's do outside `set_mesh`."""

  def __init__(self, axis_sizes: tuple[int, ...], axis_names: tuple[str, ...],
               axis_types: AxisType | Sequence[AxisType] | None = None, *,
               abstract_device: Any = None):
    self.axis_sizes, self.axis_names = tuple(axis_sizes), tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"AbstractMesh needs one size per axis name, got {axis_sizes} and "
                       f"{axis_names}")
    if axis_types is None:
      axis_types = AxisType.Auto
    self.axis_types = ((axis_types,) * len(self.axis_names)
                       if isinstance(axis_types, AxisType) else tuple(axis_types))
    self.abstract_device = abstract_device

  shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
  shape = property(lambda self: collections.OrderedDict(self.shape_tuple))
  size = property(lambda self: math.prod(self.axis_sizes) if self.axis_sizes else 0)
  empty = property(lambda self: not self.axis_names)
  are_all_axes_explicit = property(
      lambda self: bool(self.axis_types) and all(t == AxisType.Explicit
                                                 for t in self.axis_types))
  abstract_mesh = property(lambda self: self)

  def _key(self) -> tuple:
    return (self.axis_sizes, self.axis_names, self.axis_types)

  def __eq__(self, other: object) -> bool:
    return isinstance(other, AbstractMesh) and self._key() == other._key()

  def __hash__(self) -> int:
    return hash(self._key())

  def __repr__(self) -> str:
    if self.empty:
      return f"AbstractMesh((), axis_types={self.axis_types!r})"
    axes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple)
    return (f"AbstractMesh({axes}, axis_types={self.axis_types!r}, device_kind=cpu, "
            "num_cores=None, platform=cpu)")

  _short_str = __repr__

  @property
  def devices(self) -> Any:
    raise ValueError("devices is not implemented for `jax.sharding.AbstractMesh`.")


EMPTY_ABSTRACT_MESH = AbstractMesh((), (), axis_types=())


class _MeshContext(threading.local):
  def __init__(self) -> None:
    self.stack: list[Mesh] = []


_context = _MeshContext()


def current_mesh() -> Mesh | None:
  """The mesh of the innermost `with mesh:` (in this thread), if any."""
  return _context.stack[-1] if _context.stack else None


def swap_mesh_stack(stack: list[Mesh]) -> list[Mesh]:
  """Replaces this thread's context meshes by `stack` (innermost last); returns the old
  ones, for `set_mesh` to put back."""
  old, _context.stack = _context.stack, stack
  return old


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: Sequence[AxisType] | None = None, *,
              devices: Sequence[Any] | None = None) -> Mesh:
  """A mesh of `axis_shapes` over `devices` (default: all devices, in order), whose axes
  are `Explicit` unless `axis_types` says otherwise, as JAX 0.10.2 makes them.

  Raises:
    ValueError: the axis sizes do not multiply to the number of devices.
  """
  devices = client.devices() if devices is None else list(devices)
  axis_shapes = tuple(axis_shapes)
  if math.prod(axis_shapes) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape "
                     f"{axis_shapes}")
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(axis_shapes)
  grid = np.empty(len(devices), dtype=object)
  grid[:] = devices
  return Mesh(grid.reshape(axis_shapes), axis_names, axis_types)
