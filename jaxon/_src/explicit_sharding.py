"""JAX's context-mesh and explicit-sharding API: `set_mesh`/`get_mesh`, the abstract mesh
(`use_abstract_mesh`, `get_abstract_mesh`), `reshard`, `auto_axes`/`explicit_axes`,
`smap`, and the types they name (`AbstractDevice`, `ManualAxisType`).

jaxon's avals carry no sharding (every mesh axis is partitioned as JAX's `Auto` axes are,
by XLA's propagation), so what JAX tracks in types is here a layout request: `reshard`
moves an Array eagerly and constrains a traced value's layout under `jit`; `auto_axes` and
`explicit_axes` switch the axis types of the context's abstract mesh for their function
and reshard at its boundary, which is all they change when types carry no sharding.
"""
from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import core, tree_util
from jaxon._src.lax.sharding_constraint import context_mesh, lay_out, reshard_target
from jaxon._src.mesh import (EMPTY_ABSTRACT_MESH, AbstractMesh, AxisType, Mesh,
                             current_mesh, swap_mesh_stack)
from jaxon._src.shard_map import shard_map
from jaxon._src.sharding_impls import NamedSharding, PartitionSpec, SingleDeviceSharding


@dataclasses.dataclass(frozen=True)
class AbstractDevice:
  """The kind of device an `AbstractMesh` stands for, without the devices."""
  device_kind: str
  num_cores: int | None
  platform: str

  def __repr__(self) -> str:
    return (f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, "
            f"platform={self.platform})")


class ManualAxisType:
  """Inside `shard_map`, which manual mesh axes a value varies over, and which it holds
  unreduced or reduced partial sums over (JAX's type of a value's manual axes)."""
  __slots__ = ("varying", "unreduced", "reduced")

  def __init__(self, *, varying: Any = frozenset(), unreduced: Any = frozenset(),
               reduced: Any = frozenset()):
    varying, unreduced, reduced = map(frozenset, (varying, unreduced, reduced))
    for name, other in (("unreduced", unreduced), ("reduced", reduced)):
      if varying & other:
        raise ValueError(f"varying and {name} cannot have common mesh axes. Got "
                         f"varying={varying} and {name}={other}")
    object.__setattr__(self, "varying", varying)
    object.__setattr__(self, "unreduced", unreduced)
    object.__setattr__(self, "reduced", reduced)

  def __setattr__(self, name: str, value: Any) -> None:
    raise AttributeError("ManualAxisType is immutable; use .update(...)")

  def _key(self) -> tuple:
    return (self.varying, self.unreduced, self.reduced)

  def __eq__(self, other: object) -> bool:
    return isinstance(other, ManualAxisType) and self._key() == other._key()

  def __hash__(self) -> int:
    return hash(self._key())

  def __repr__(self) -> str:
    return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
            f"reduced={self.reduced})")

  def update(self, **kwargs: Any) -> ManualAxisType:
    return ManualAxisType(**{**dict(zip(("varying", "unreduced", "reduced"), self._key())),
                             **kwargs})

  @property
  def empty(self) -> bool:
    return not (self.varying or self.unreduced or self.reduced)


def make_single_device_sharding(device: Any, *, memory_kind: str | None = None
                                ) -> SingleDeviceSharding:
  return SingleDeviceSharding(device, memory_kind=memory_kind)


# ----------------------------------------------------------------------------- meshes

class _AbstractMeshContext(threading.local):
  mesh: AbstractMesh | None = None


_abstract = _AbstractMeshContext()


def _outside_jit(api: str, hint: str = "") -> None:
  if not core.is_eval_trace_current():
    raise ValueError(f"`{api}` can only be used outside of `jax.jit`.{hint}")


class set_mesh:  # noqa: N801 (JAX's name: a function to its users, a context manager too)
  """Makes `mesh` this thread's context mesh: at once (a global setter, as `set_mesh(m)`
  alone is used) and until the `with` block exits when used as a context manager. With a
  context mesh, PartitionSpecs stand for NamedShardings over it (`jit` shardings,
  `with_sharding_constraint`, `reshard`, `shard_map` without `mesh=`)."""

  def __init__(self, mesh: Mesh | None):
    if mesh is not None and not isinstance(mesh, Mesh):
      raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
    _outside_jit("set_mesh")
    if mesh is not None and AxisType.Manual in mesh.axis_types:
      raise ValueError(f"mesh {mesh} contains manual axes which is not allowed when using "
                       "`jax.set_mesh`. Please use `jax.shard_map` to enter into `Manual` "
                       "mode instead.")
    self._previous = swap_mesh_stack([] if mesh is None or mesh.empty else [mesh])
    self._previous_abstract, _abstract.mesh = _abstract.mesh, None

  def __enter__(self) -> None:
    pass

  def __exit__(self, *exc_info: Any) -> None:
    swap_mesh_stack(self._previous)
    _abstract.mesh = self._previous_abstract


def get_mesh() -> Mesh:
  """This thread's context mesh (`Mesh()`, the empty one, when none is set)."""
  _outside_jit("get_mesh", " Maybe you want `jax.sharding.get_abstract_mesh()`?")
  return context_mesh()


def get_abstract_mesh() -> AbstractMesh:
  """The abstract mesh in context: `use_abstract_mesh`'s, else the context mesh's."""
  if _abstract.mesh is not None:
    return _abstract.mesh
  mesh = current_mesh()
  return EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh


class use_abstract_mesh:  # noqa: N801 (JAX's name)
  """Sets this thread's abstract mesh for a `with` block (`get_abstract_mesh` reads it).
  It may change axis types, not the number of devices."""
  __slots__ = ("mesh", "prev")

  def __init__(self, mesh: AbstractMesh):
    if not isinstance(mesh, AbstractMesh):
      raise ValueError("Expected mesh of type `jax.sharding.AbstractMesh`. Got type: "
                       f"{type(mesh)}")
    self.mesh = mesh

  def __enter__(self) -> None:
    prev = get_abstract_mesh()
    if not prev.empty and not self.mesh.empty and prev.size != self.mesh.size:
      raise ValueError(f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
                       f"{self.mesh} with size={self.mesh.size} and prev mesh: {prev} with "
                       f"size={prev.size}")
    self.prev, _abstract.mesh = _abstract.mesh, self.mesh

  def __exit__(self, *exc_info: Any) -> None:
    _abstract.mesh = self.prev


# ----------------------------------------------------------------------------- reshard


def reshard(xs: Any, out_shardings: Any) -> Any:
  """Each leaf of `xs` laid out as `out_shardings` says (a NamedSharding or, with a
  context mesh, a PartitionSpec; or a pytree prefix of `xs` of those): moved now for an
  Array, constrained in the compiled program for a traced value. Unlike
  `with_sharding_constraint`, it accepts `Explicit` mesh axes."""
  def move(sharding: Any, sub: Any) -> Any:
    return lay_out(sub, reshard_target(sharding, "reshard"))
  is_leaf = lambda s: s is None or isinstance(s, PartitionSpec)  # noqa: E731
  if is_leaf(out_shardings) or isinstance(out_shardings, NamedSharding):
    return move(out_shardings, xs)
  return tree_util.tree_map(move, out_shardings, xs, is_leaf=is_leaf)


def _with_axis_types(axes: str | Sequence[str] | None, axis_type: AxisType, api: str
                     ) -> AbstractMesh | None:
  """The context's abstract mesh with `axes` (all when None) of type `axis_type`; None
  when there is no context mesh."""
  mesh = get_abstract_mesh()
  if mesh.empty:
    return None
  names = mesh.axis_names if axes is None else (
      (axes,) if isinstance(axes, str) else tuple(axes))
  unknown = set(names) - set(mesh.axis_names)
  if unknown:
    raise ValueError(f"{api}: axes {sorted(unknown)} are not axes of the context mesh "
                     f"{mesh}")
  types = tuple(axis_type if n in names else t
                for n, t in zip(mesh.axis_names, mesh.axis_types))
  return AbstractMesh(mesh.axis_sizes, mesh.axis_names, types,
                      abstract_device=mesh.abstract_device)


def _sharding_argument(given: Any, kwargs: dict, name: str) -> Any:
  if given is not None:
    return given
  if name not in kwargs:
    raise TypeError(f"Missing required keyword argument: '{name}'")
  return kwargs.pop(name)


def auto_axes(f: Callable | None = None, /, *, axes: str | tuple[str, ...] | None = None,
              out_sharding: Any = None) -> Any:
  """`f` run with the mesh axes `axes` (all by default) of type `Auto` (XLA chooses the
  layouts inside), its outputs then resharded to `out_sharding` (given here or as a
  keyword argument of each call)."""
  if f is None:
    return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

  @functools.wraps(f)
  def wrapped(*args: Any, **kwargs: Any) -> Any:
    out_sharding_ = _sharding_argument(out_sharding, kwargs, "out_sharding")
    mesh = _with_axis_types(axes, AxisType.Auto, "auto_axes")
    if mesh is None:
      return f(*args, **kwargs)
    with use_abstract_mesh(mesh):
      out = f(*args, **kwargs)
    return reshard(out, out_sharding_)
  return wrapped


def explicit_axes(f: Callable | None = None, /, *,
                  axes: str | tuple[str, ...] | None = None, in_sharding: Any = None) -> Any:
  """`f` run with the mesh axes `axes` (all by default) of type `Explicit`, its arguments
  first resharded to `in_sharding` (given here or as a keyword argument of each call)."""
  if f is None:
    return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

  @functools.wraps(f)
  def wrapped(*args: Any, **kwargs: Any) -> Any:
    in_sharding_ = _sharding_argument(in_sharding, kwargs, "in_sharding")
    mesh = _with_axis_types(axes, AxisType.Explicit, "explicit_axes")
    if mesh is None:
      raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to "
                       "enter into a mesh context when using `explicit_axes` API.")
    with use_abstract_mesh(mesh):
      return f(*reshard(args, in_sharding_), **kwargs)
  return wrapped


# ----------------------------------------------------------------------------- smap

_INFER: Any = type("Infer", (), {"__repr__": lambda self: "Infer"})()


def _axis_spec(axis_name: Any, axis: int | None) -> PartitionSpec:
  return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


def smap(f: Callable | None = None, /, *, in_axes: Any = _INFER, out_axes: Any,
         axis_name: Any) -> Any:
  """`shard_map` over the one mesh axis `axis_name` of the context mesh, with vmap-like
  axes: `in_axes` (an int, None, or a tuple with one per positional argument) and
  `out_axes` say which array dimension is split over the axis.

  jaxon's shard_map makes every mesh axis manual, so the context mesh must have this one
  axis only; and with no type-level shardings `in_axes` cannot be inferred: give it.
  """
  if f is None:
    return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
  if isinstance(axis_name, (list, tuple)):
    raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
  if in_axes is _INFER:
    raise NotImplementedError("smap without in_axes infers them from the arguments' "
                              "type-level shardings, which jaxon's avals do not carry; "
                              "pass in_axes")
  is_axis = lambda x: x is None  # noqa: E731
  for what, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
    if not all(isinstance(a, int) for a in tree_util.tree_leaves(axes)):
      raise TypeError(f"smap {what} must be an int, None, or (nested) container with those "
                      f"types as leaves, but got {axes}.")
  in_specs = tree_util.tree_map(functools.partial(_axis_spec, axis_name), in_axes,
                                is_leaf=is_axis)
  out_specs = tree_util.tree_map(functools.partial(_axis_spec, axis_name), out_axes,
                                 is_leaf=is_axis)

  mapped: dict[tuple[Mesh, int], Callable] = {}  # one shard_map (and its traces) per use

  @functools.wraps(f)
  def wrapped(*args: Any) -> Any:
    mesh = current_mesh()
    if mesh is None:
      raise ValueError("smap needs a context mesh: use `jaxon.set_mesh(mesh)`.")
    if mesh.axis_names != (axis_name,):
      raise NotImplementedError(f"smap over axis {axis_name!r} of the mesh {mesh}: jaxon's "
                                "shard_map cannot leave the other mesh axes automatic")
    mapped_f = mapped.get((mesh, len(args)))
    if mapped_f is None:
      specs = in_specs if isinstance(in_specs, tuple) else (in_specs,) * len(args)
      mapped_f = mapped[mesh, len(args)] = shard_map(f, mesh=mesh, in_specs=specs,
                                                     out_specs=out_specs)
    return mapped_f(*args)
  return wrapped
