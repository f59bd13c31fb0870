"""Reading back the params of programs over several devices: meshes, shardings and
partition specs (`pjit[in_shardings=(NamedSharding(mesh=Mesh('x': 4, ...), spec=P('x',),
memory_kind=device), UnspecifiedValue)]`, `shard_map[mesh=... in_specs=(P('i',),)]`), and
the axis names of collectives (`psum[axes=('i',)]`, `axis_index[axis_name=i]`).

A mesh's text gives its axis names, sizes and types but not its devices: a mesh is read
back over the first devices of `jaxon.devices()`, in order (`Mesh('x': 4, 'y': 2)` is
devices 0..7 as a 4x2 grid). A program saved from a mesh over other devices, or in
another order, reads back over those; it computes the same, placed as the text's mesh
shape says.

Imported by `jaxpr_parser` (it fills the readers' extension tables).
"""
from __future__ import annotations

import math

import numpy as np

from jaxon._src import jaxpr_param_readers as readers
from jaxon._src import shard_map
from jaxon._src.lax import sharding_constraint
from jaxon._src.mesh import AxisType, Mesh
from jaxon._src.sharding_impls import UNSPECIFIED, NamedSharding, PartitionSpec
from jaxon._src.xla import client


def _read_mesh(node: readers.Call) -> Mesh:
  names, sizes = [], []
  for pair in node.args:
    if type(pair) is not readers.Pair:
      raise readers.Unreadable("a mesh's axes print as 'name': size")
    names.append(readers.read_value(pair.key))
    sizes.append(readers.read_value(pair.value))
  if not names:  # `Mesh()`: no mesh in context
    return Mesh(np.empty((0,), dtype=object), ())
  types = node.kwargs.get("axis_types", ())
  axis_types = tuple(AxisType[readers.read_string(t)] for t in types) or None
  devices = client.devices()
  if math.prod(sizes) > len(devices):
    raise readers.Unreadable(f"the mesh {readers.call_text(node)} needs {math.prod(sizes)} "
                             f"devices and there are {len(devices)}")
  grid = np.array(devices[:math.prod(sizes)], dtype=object).reshape(sizes)
  return Mesh(grid, tuple(names), axis_types)


def _read_named_sharding(node: readers.Call) -> NamedSharding:
  fields = dict(zip(("mesh", "spec"), node.args)) | node.kwargs
  memory_kind = fields.get("memory_kind")
  if memory_kind is not None and readers.read_string(memory_kind) != "device":
    raise readers.Unreadable(f"memory kind {memory_kind.text}: jaxon has device memory only")
  return NamedSharding(readers.read_value(fields["mesh"]), readers.read_value(fields["spec"]))


def _read_frozenset(node: readers.Call) -> frozenset:
  return frozenset(readers.read_value(node.args[0])) if node.args else frozenset()


def _complete_shard_map(params: dict) -> dict:
  """Specs print as PartitionSpecs; the primitive keeps one tuple of axis names per
  dimension of each operand and result, which the body's types give the rank of.
  `newly_manual_axes` prints what the mesh implies (every axis), and is not a param."""
  params = dict(params)
  params.pop("newly_manual_axes", None)
  jaxpr = params["jaxpr"]
  for key, avals in (("in_specs", jaxpr.in_avals), ("out_specs", jaxpr.out_avals)):
    params[key] = tuple(shard_map._normalize_spec(spec, aval.ndim, key)
                        for spec, aval in zip(params[key], avals))
  return params


readers.CALL_READERS.update(Mesh=_read_mesh, NamedSharding=_read_named_sharding,
                           frozenset=_read_frozenset)
readers.CONSTRUCTORS["P"] = PartitionSpec
readers.WORD_VALUES["UnspecifiedValue"] = UNSPECIFIED
readers.PARAM_COMPLETIONS["shard_map"] = _complete_shard_map
readers.AXIS_BINDING_PARAMS["shard_map"] = ("mesh", lambda mesh: mesh.shape_tuple)
readers.PARAM_READERS["sharding_constraint", "unconstrained_dims"] = (
    lambda node: sharding_constraint._DimSet(readers.read_value(node)))
for _primitive_name in ("all_to_all", "axis_index"):  # a single axis name prints bare: `i`
  readers.PARAM_READERS[_primitive_name, "axis_name"] = readers.read_string
