"""`pmap`: map a function over an axis of its arguments, one device per member.

As in JAX 0.10.2, pmap is a `shard_map` over a one-axis mesh of the first `n` devices
(`n` the mapped size): each device gets its slice of the mapped axis, the body sees it
with that axis squeezed, and each output is stacked back along its `out_axes`. So
collectives under pmap lower exactly as they do inside shard_map, and the results are
Arrays sharded over the devices along the mapped axis.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, traceback_util, tree_util
from jaxon._src.lax import shape_ops
from jaxon._src.xla import client

_DEFAULT_AXIS_NAME = "_internal_pmap_axis_name"


def _index_tuple(x: int | Iterable[int]) -> tuple[int, ...]:
  return (x,) if isinstance(x, int) else tuple(x)


def _check_axes_tree(axes: Any, what: str) -> None:
  if not all(type(leaf) is int for leaf in tree_util.tree_leaves(axes)):
    raise TypeError(f"pmap {what} must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {axes}.")


def _flat_prefix(prefix: Any, tree: Any, what: str) -> list[Any]:
  out: list[Any] = []
  try:
    tree_util.tree_map(lambda p, sub: out.extend([p] * tree_util.tree_structure(sub).num_leaves),
                       prefix, tree, is_leaf=lambda x: x is None)
  except ValueError as e:
    raise ValueError(f"pmap {what} specification must be a tree prefix of the corresponding "
                     f"value, got specification {prefix} for value tree "
                     f"{tree_util.tree_structure(tree)}.") from e
  return out


def _spec(axis_name: Hashable, axis: int | None) -> Any:
  from jaxon._src.sharding_impls import PartitionSpec
  return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


@traceback_util.api_boundary
def pmap(fun: Callable, axis_name: Hashable | None = None, *, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: int | Iterable[int] = (),
         devices: Sequence[Any] | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Iterable[int] = ()) -> Callable:
  """`fun` applied to each slice of its arguments along `in_axes`, each on its own
  device, in parallel; outputs are stacked along `out_axes`. Inside, collectives over
  `axis_name` (`lax.psum(x, 'i')`) combine the members. Outputs may take the buffers of
  the arguments `donate_argnums` names (those already laid out over the devices, as
  results of a previous call are, are deleted then).

  In a job of several processes (and `devices` None), the members are the first devices
  of each process: each process passes and gets back its own members' slices, and
  collectives span the job.

  Example:
    >>> pmap(lambda x: x / lax.psum(x, 'i'), axis_name='i')(jnp.arange(4.0))
    Array([0.        , 0.16666667, 0.33333334, 0.5       ], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if devices is not None:
    if not devices:
      raise ValueError("'devices' argument to pmap must be non-empty, or None.")
    devices = tuple(devices)
  name = _DEFAULT_AXIS_NAME if axis_name is None else axis_name
  statics = _index_tuple(static_broadcasted_argnums)
  donate = _index_tuple(donate_argnums)
  _check_axes_tree(in_axes, "in_axes")
  _check_axes_tree(out_axes, "out_axes")
  mapped_cache: dict[Any, Callable] = {}

  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def pmap_f(*args: Any, **kwargs: Any) -> Any:
    static_args = {i: args[i] for i in statics if i < len(args)}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in static_args)
    dyn_in_axes = in_axes
    if static_args and isinstance(in_axes, tuple):
      dyn_in_axes = tuple(a for i, a in enumerate(in_axes) if i not in static_args)
    leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
    axes = _flat_prefix((dyn_in_axes, 0), (dyn_args, kwargs), "in_axes")
    size = next((core.get_aval(x).shape[a] for x, a in zip(leaves, axes) if a is not None),
                None)
    if size is None:
      raise ValueError("pmap requires at least one argument with a mapped axis.")
    if axis_size is not None and axis_size != size:
      raise ValueError(f"Specified axis_size {axis_size} doesn't match received axis_size "
                       f"{size}.")
    processes = _process_count() if devices is None else 1
    mesh_devices = (_job_devices(size) if processes > 1
                    else (devices or tuple(client.devices()))[:size])
    key = (tuple(sorted(static_args.items())), in_tree, tuple(axes), mesh_devices)
    mapped = mapped_cache.get(key)
    if mapped is None:
      mapped = _mapped(fun, name, static_args, in_tree, tuple(axes), out_axes, mesh_devices,
                       size * processes)
      donated = _donated_leaves(donate, args, static_args)
      if donated:  # one program that may write its outputs into the donated inputs
        from jaxon._src.jit import jit
        mapped = jit(mapped, donate_argnums=donated)
      mapped_cache[key] = mapped
    if processes == 1:
      return mapped(*leaves)
    return _across_processes(mapped, leaves, tuple(axes), out_axes, name, mesh_devices)
  return PmapFunction(fun, pmap_f)


class PmapFunction:
  """A function mapped over devices by `pmap`. Named as JAX's C++ type is: libraries
  (chex's `is_traceable`) tell pmap-ped functions by the type's name."""

  def __init__(self, fun: Callable, mapped_call: Callable):
    functools.update_wrapper(self, fun)
    self._call = mapped_call

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    return self._call(*args, **kwargs)

  def __get__(self, obj: Any, objtype: Any = None) -> Any:
    return self if obj is None else functools.partial(self, obj)

  def __repr__(self) -> str:
    return f"<PmapFunction of {self.__wrapped__!r}>"


@functools.cache
def _process_count() -> int:
  """The processes of the job (fixed once the backend has started)."""
  return client.process_count()


def _donated_leaves(donate: tuple[int, ...], args: tuple, static_args: dict[int, Any]
                    ) -> tuple[int, ...]:
  """The positions among the flat dynamic arguments of the leaves of donated arguments."""
  positions, start = [], 0
  for i, a in enumerate(args):
    if i in static_args:
      continue
    n = tree_util.tree_structure(a).num_leaves
    if i in donate:
      positions += range(start, start + n)
    start += n
  return tuple(positions)


def _job_devices(size: int) -> tuple[Any, ...]:
  """pmap's devices in a job of several processes, as JAX picks them: the first `size`
  devices of each process (each process maps `size` members), processes in order."""
  by_process: dict[int, list[Any]] = {}
  for d in client.devices():
    by_process.setdefault(d.process_index, []).append(d)
  return tuple(d for p in sorted(by_process)
               for d in sorted(by_process[p], key=lambda d: d.id)[:size])


def _across_processes(mapped: Callable, leaves: Sequence[Any], in_axes: tuple,
                      out_axes: Any, axis_name: Hashable, mesh_devices: tuple) -> Any:
  """`mapped` (over every process's devices) on this process's members: each argument
  becomes a global Array of which this process holds its own slices, and each result
  comes back as the Array of this process's slices, as JAX's pmap does in a job."""
  from jaxon._src import array_creation
  from jaxon._src.mesh import Mesh
  from jaxon._src.sharding_impls import NamedSharding
  from jaxon._src.xla.array import Array

  if any(isinstance(x, core.Tracer) for x in leaves):
    raise NotImplementedError("pmap over the devices of several processes under another "
                              "transformation (jit, grad, vmap) is not supported; call it "
                              "eagerly.")
  here = client.process_index()
  mine = [d for d in mesh_devices if d.process_index == here]
  global_mesh = Mesh(np.array(mesh_devices, dtype=object), (axis_name,))
  local_mesh = Mesh(np.array(mine, dtype=object), (axis_name,))
  processes = len(mesh_devices) // len(mine)

  def widened(shape: Sequence[int], axis: int | None, factor: int) -> tuple[int, ...]:
    return tuple(n * factor if i == axis else n for i, n in enumerate(shape))

  global_args = []
  for x, a in zip(leaves, in_axes):
    spec = _spec(axis_name, a)
    sharding = NamedSharding(global_mesh, spec)
    if type(x) is Array and x.sharding == NamedSharding(local_mesh, spec):
      # A result of a previous call: its blocks go back in without leaving their devices.
      global_args.append(array_creation.make_array_from_single_device_arrays(
          widened(x.shape, a, processes), sharding, [s.data for s in x.addressable_shards]))
    else:
      global_args.append(array_creation.make_array_from_process_local_data(
          sharding, np.asarray(x)))
  out = mapped(*global_args)
  out_leaves, out_tree = tree_util.tree_flatten(out)
  local_outs = []
  for x, a in zip(out_leaves, _flat_prefix(out_axes, out, "out_axes")):
    shape = tuple(n // processes if i == a else n for i, n in enumerate(x.shape))
    local_outs.append(array_creation.make_array_from_single_device_arrays(
        shape, NamedSharding(local_mesh, _spec(axis_name, a)),
        [s.data for s in x.addressable_shards]))
  return out_tree.unflatten(local_outs)


def _mapped(fun: Callable, axis_name: Hashable, static_args: dict[int, Any],
            in_tree: Any, in_axes: tuple, out_axes: Any, mesh_devices: tuple, size: int
            ) -> Callable:
  """The shard_map over a one-axis mesh that pmap of `fun` is, on flat arguments."""
  from jaxon._src.mesh import Mesh
  from jaxon._src.shard_map import shard_map
  from jaxon._src.sharding_impls import IndivisibleError

  if len(mesh_devices) < size:
    n = len(mesh_devices)
    raise IndivisibleError(
        f"Sharding NamedSharding(mesh=Mesh('{axis_name}': {n}, axis_types=(Auto,)), "
        f"spec=P('{axis_name}',), memory_kind=device) implies that array axis 0 is "
        f"partitioned {n} times, but the dimension size is {size} (full shape: ({size},), "
        f"per-dimension tiling factors: [{n}] should evenly divide the shape)")
  mesh = Mesh(np.array(mesh_devices, dtype=object), (axis_name,))

  def body(*flat: Any) -> Any:
    flat = [x if a is None else shape_ops.squeeze(x, (a,)) for x, a in zip(flat, in_axes)]
    dyn_args, kwargs = in_tree.unflatten(flat)
    full = list(dyn_args)
    for i in sorted(static_args):
      full.insert(i, static_args[i])
    out = fun(*full, **kwargs)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_axes_flat = _flat_prefix(out_axes, out, "out_axes")
    out_leaves = [x if a is None else shape_ops.expand_dims(x, (a,))
                  for x, a in zip(out_leaves, out_axes_flat)]
    return out_tree.unflatten(out_leaves)

  def out_specs_of(out_axes: Any) -> Any:
    return tree_util.tree_map(lambda a: _spec(axis_name, a), out_axes,
                              is_leaf=lambda x: x is None)
  return shard_map(body, mesh=mesh, in_specs=tuple(_spec(axis_name, a) for a in in_axes),
                   out_specs=out_specs_of(out_axes), check_vma=False)
