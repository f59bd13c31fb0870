"""Host-local <-> global arrays (JAX's `host_local_array_to_global_array` and back).

In a job of several processes, each process often holds only its own part of a batch (its
host-local data). A global array is the whole batch laid out over every device of the
job: with a mesh whose processes each own a contiguous block of devices (a "subcube"),
process p's local array is exactly the data of p's devices, and the global array is the
local arrays of all processes placed side by side along every dimension that a
PartitionSpec splits over mesh axes spanning several processes. A dimension split only
over axes inside one process, or not split, is the same size locally and globally.

The conversions move no data: a process's local array laid out over its own sub-mesh has
on each device exactly the block that device holds of the global array, so each
conversion re-labels the same device buffers with the other shape and sharding. In a
single process the local sub-mesh is the whole mesh and both shapes agree.

Both conversions are primitives so they can sit inside traced code: under `jit` they lower
to the identity (the compiled program already sees global values), their transposes are
each other, and `vmap` adds an unsplit batch dimension to the spec.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from jaxon._src import core, dtypes, tree_util
from jaxon._src.array_creation import (
    make_array_from_callback, make_array_from_single_device_arrays)
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.mesh import Mesh
from jaxon._src.sharding_impls import NamedSharding, PartitionSpec, device_put_leaf
from jaxon._src.xla import client
from jaxon._src.xla.array import Array


# ----------------------------------------------------------------------------- meshes and avals


@functools.lru_cache(maxsize=64)
def _local_mesh(mesh: Mesh) -> Mesh:
  """The sub-mesh of this process's devices; ValueError when they are not a subcube."""
  here = client.process_index()
  is_local = np.vectorize(lambda d: d.process_index == here, otypes=[bool])(mesh.devices)
  if is_local.all():
    return mesh
  coords = [np.unique(c) for c in np.nonzero(is_local)]
  block = mesh.devices[np.ix_(*coords)]
  if not coords[0].size or block.size != is_local.sum() or not all(
      np.all(np.diff(c) == 1) for c in coords):
    raise ValueError(f"The mesh {mesh._short_str()} is not contiguous: the devices of "
                     f"process {here} must form a subcube of it. Use "
                     "jax.make_array_from_callback or make_array_from_single_device_arrays "
                     "for other meshes.")
  return Mesh(block, mesh.axis_names, mesh.axis_types)


def _process_factors(mesh: Mesh, pspec: PartitionSpec, ndim: int) -> list[int]:
  """Per dimension, how many processes' local blocks lie side by side in the global one."""
  local = _local_mesh(mesh)
  return [math.prod(mesh.shape[a] // local.shape[a] for a in pspec.axes_of(d))
          if d < len(pspec) else 1 for d in range(ndim)]


def _check_pspec(pspec: Any) -> PartitionSpec:
  if pspec is None:
    raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                     "jax.sharding.PartitionSpec() if you wanted to replicate your input.")
  if not isinstance(pspec, PartitionSpec):
    raise TypeError(f"pspecs must be PartitionSpecs (jax.sharding.PartitionSpec), got "
                    f"{pspec!r} of type {type(pspec).__name__}.")
  return pspec


def ltg_abstract_eval(arr: ShapedArray, *, global_mesh: Mesh,
                      pspec: PartitionSpec) -> ShapedArray:
  """The global aval of a host-local one (never weakly typed, as in JAX)."""
  factors = _process_factors(global_mesh, _check_pspec(pspec), len(arr.shape))
  return ShapedArray(tuple(n * f for n, f in zip(arr.shape, factors)), arr.dtype)


def gtl_abstract_eval(arr: ShapedArray, *, global_mesh: Mesh,
                      pspec: PartitionSpec) -> ShapedArray:
  """The host-local aval of a global one."""
  factors = _process_factors(global_mesh, _check_pspec(pspec), len(arr.shape))
  for d, (n, f) in enumerate(zip(arr.shape, factors)):
    if n % f:
      raise ValueError(f"global_array_to_host_local_array: dimension {d} of the global "
                       f"shape {arr.shape} ({n}) does not split evenly over the {f} "
                       f"processes that {pspec} spreads it over.")
  return ShapedArray(tuple(n // f for n, f in zip(arr.shape, factors)), arr.dtype)


def _host_value(arr: Any) -> Any:
  """`arr` ready to be laid out: an Array as it is unless weakly typed (the result is
  not), anything else a canonical NumPy array; a float0 tangent becomes bool zeros."""
  if isinstance(arr, Array) and not arr.weak_type:
    return arr
  dtype = dtypes.dtype(arr, canonicalize=True)
  if dtype == dtypes.float0:
    return np.zeros(np.shape(arr), np.bool_)
  return np.asarray(arr, dtype)


# ----------------------------------------------------------------------------- local -> global


def host_local_array_to_global_array_impl(arr: Any, *, global_mesh: Mesh,
                                          pspec: PartitionSpec) -> Any:
  _check_pspec(pspec)
  if isinstance(arr, Array) and not arr.is_fully_addressable:
    return arr  # already global
  local_sharding = NamedSharding(_local_mesh(global_mesh), pspec)
  local = device_put_leaf(_host_value(arr), local_sharding)
  if local_sharding.mesh is global_mesh:  # a single process
    return local
  global_aval = ltg_abstract_eval(local.aval, global_mesh=global_mesh, pspec=pspec)
  return make_array_from_single_device_arrays(
      global_aval.shape, NamedSharding(global_mesh, pspec),
      [s.data for s in local.addressable_shards])


host_local_array_to_global_array_p = core.Primitive("host_local_array_to_global_array")
host_local_array_to_global_array_p.def_impl(host_local_array_to_global_array_impl)
host_local_array_to_global_array_p.def_abstract_eval(ltg_abstract_eval)


def _batch_into_spec(primitive: core.Primitive, axis_data: Any, x: Any, d: int | None,
                     global_mesh: Mesh, pspec: PartitionSpec) -> tuple[Any, int | None]:
  """The batch dimension goes into the spec where it sits, split over vmap's
  `spmd_axis_name` if it has one (else not split)."""
  spec = list(pspec)
  if d is not None:
    spec += [None] * (d - len(spec))
    spec.insert(d, getattr(axis_data, "spmd_name", None))
  return primitive.bind(x, global_mesh=global_mesh, pspec=PartitionSpec(*spec)), d


def ltg_batcher(insert_axis: bool, axis_data: Any, vals_in: Any, dims_in: Any,
                global_mesh: Mesh, pspec: PartitionSpec) -> tuple[Any, int | None]:
  """`vmap` of host_local_array_to_global_array (`insert_axis` is JAX's unused flag)."""
  del insert_axis
  return _batch_into_spec(host_local_array_to_global_array_p, axis_data, vals_in[0],
                          dims_in[0], global_mesh, pspec)


batching.fancy_primitive_batchers[host_local_array_to_global_array_p] = functools.partial(
    ltg_batcher, False)
mlir.register_lowering(host_local_array_to_global_array_p, lambda ctx, x, **_: [x])


# ----------------------------------------------------------------------------- global -> local


def global_array_to_host_local_array_impl(arr: Any, *, global_mesh: Mesh,
                                          pspec: PartitionSpec) -> Any:
  _check_pspec(pspec)
  if isinstance(arr, Array) and arr.is_fully_addressable:
    return arr  # already host-local
  global_sharding = NamedSharding(global_mesh, pspec)
  if not isinstance(arr, Array):  # a host value of the global shape (a cotangent in AD)
    value = _host_value(arr)
    arr = make_array_from_callback(value.shape, global_sharding, lambda index: value[index])
  if arr.sharding != global_sharding:
    raise ValueError(f"global_array_to_host_local_array: the array is laid out as "
                     f"{arr.sharding!r}, not as {global_sharding!r}; lay it out so first "
                     "(jit with out_shardings, or device_put).")
  local_sharding = NamedSharding(_local_mesh(global_mesh), pspec)
  local_aval = gtl_abstract_eval(arr.aval, global_mesh=global_mesh, pspec=pspec)
  return make_array_from_single_device_arrays(
      local_aval.shape, local_sharding, [s.data for s in arr.addressable_shards])


global_array_to_host_local_array_p = core.Primitive("global_array_to_host_local_array")
global_array_to_host_local_array_p.def_impl(global_array_to_host_local_array_impl)
global_array_to_host_local_array_p.def_abstract_eval(gtl_abstract_eval)
# Unlike JAX (whose rule keeps the spec, so the batch dimension takes the first
# dimension's place in it), the batch dimension is added to the spec as for the inverse.
batching.fancy_primitive_batchers[global_array_to_host_local_array_p] = (
    lambda axis_data, vals, dims, **params: _batch_into_spec(
        global_array_to_host_local_array_p, axis_data, vals[0], dims[0], **params))
mlir.register_lowering(global_array_to_host_local_array_p, lambda ctx, x, **_: [x])


def _transpose_with(other: core.Primitive) -> Any:
  """The conversions are linear and each other's transpose: a cotangent of a global
  output is global, that of its host-local input is host-local."""
  def transpose(ct: Any, x: Any, **params: Any) -> list[Any]:
    return [ct if type(ct) is ad.Zero else other.bind(ct, **params)]
  return transpose


ad.deflinear(host_local_array_to_global_array_p,
             _transpose_with(global_array_to_host_local_array_p))
ad.deflinear(global_array_to_host_local_array_p,
             _transpose_with(host_local_array_to_global_array_p))


# ----------------------------------------------------------------------------- public functions


def _flat_pspecs(what: str, leaves_tree: Any, pspecs: Any) -> list[PartitionSpec]:
  """One spec per leaf of `leaves_tree`, from `pspecs`: one spec or a pytree prefix."""
  def is_spec(p: Any) -> bool:
    return p is None or isinstance(p, PartitionSpec)
  if is_spec(pspecs):
    return [pspecs] * len(tree_util.tree_leaves(leaves_tree))
  flat: list[PartitionSpec] = []
  try:
    tree_util.tree_map(lambda spec, sub: flat.extend([spec] * len(tree_util.tree_leaves(sub))),
                       pspecs, leaves_tree, is_leaf=is_spec)
  except (ValueError, TypeError):
    raise ValueError(f"{what} specification must be a tree prefix of the inputs' pytree "
                     f"structure, got {tree_util.tree_structure(pspecs, is_leaf=is_spec)} "
                     f"for inputs {tree_util.tree_structure(leaves_tree)}.") from None
  return flat


def _convert(primitive: core.Primitive, what: str, inputs: Any, global_mesh: Mesh,
             pspecs: Any) -> Any:
  leaves, treedef = tree_util.tree_flatten(inputs)
  specs = _flat_pspecs(what, inputs, pspecs)
  return treedef.unflatten([primitive.bind(x, global_mesh=global_mesh, pspec=_check_pspec(s))
                            for x, s in zip(leaves, specs)])


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
  """Host-local values (a pytree) as global Arrays over `global_mesh`.

  Each process passes its own data; along every dimension that `pspecs` splits over mesh
  axes spanning several processes, the global array is the processes' local arrays side
  by side (in the mesh's process order), and each device gets its block.

  Args:
    local_inputs: a pytree of arrays, this process's data.
    global_mesh: a Mesh whose every process's devices form a contiguous subcube.
    pspecs: a PartitionSpec, or a pytree prefix of `local_inputs` of them
      (`PartitionSpec()` replicates; None is an error).

  Returns:
    The pytree of global Arrays, laid out as `NamedSharding(global_mesh, pspec)`. In a
    single process the values are unchanged.

  Example:
    >>> mesh = Mesh(np.array(jaxon.devices()), ("x",))
    >>> g = host_local_array_to_global_array(np.arange(8.), mesh, PartitionSpec('x'))
  """
  return _convert(host_local_array_to_global_array_p, "input pspecs", local_inputs,
                  global_mesh, pspecs)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
  """The inverse of `host_local_array_to_global_array`: each global Array (laid out as
  `NamedSharding(global_mesh, pspec)`) as the Array of this process's blocks, over this
  process's sub-mesh. A fully addressable Array (every single-process one) is returned
  as it is."""
  return _convert(global_array_to_host_local_array_p, "output pspecs", global_inputs,
                  global_mesh, pspecs)
