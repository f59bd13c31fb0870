"""The shardings users write (`NamedSharding`, `SingleDeviceSharding`, `PartitionSpec`),
and where programs over several devices run.

Each sharding gives the runtime (`xla/sharded.py`) its devices and its `HloSharding`, and
the lowering its Shardy attribute. A program's placement follows JAX's rules: the
shardings its arguments are committed to, those `jit` was given and those of
`with_sharding_constraint` inside must agree on one mesh (or one device); uncommitted
arguments (made without `device_put` to a device or sharding) go where the program runs.
"""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from jaxon._src import core
from jaxon._src.mesh import EMPTY_ABSTRACT_MESH, AbstractMesh, Mesh
from jaxon._src.xla import client, executable, sharded
from jaxon._src.xla import array as array_mod
from jaxon._src.xla.array import Array, Shard

Sharding = _jax.Sharding


class IndivisibleError(ValueError):
  """A sharding splits a dimension into parts that do not divide it."""


class PartitionSpec:
  """How each array dimension is split over mesh axes: an axis name, a tuple of names
  (split over their product, major first), or None (not split). Trailing dimensions
  that are not listed are not split."""

  __slots__ = ("_partitions",)

  def __init__(self, *partitions: Any, unreduced: Any = frozenset(), reduced: Any = frozenset()):
    if unreduced or reduced:
      raise NotImplementedError("PartitionSpec's unreduced and reduced axes (JAX's types of "
                                "values held as partial sums) are not implemented in jaxon.")
    for p in partitions:
      if not (p is None or isinstance(p, str) or
              (isinstance(p, tuple) and all(isinstance(a, str) for a in p))):
        raise TypeError(f"PartitionSpec entries must be None, an axis name or a tuple of "
                        f"axis names; got {p!r}")
    self._partitions = partitions

  def __getitem__(self, i: Any) -> Any:
    return self._partitions[i]

  def __len__(self) -> int:
    return len(self._partitions)

  def __iter__(self) -> Any:
    return iter(self._partitions)

  def __eq__(self, other: object) -> bool:
    return isinstance(other, PartitionSpec) and self._partitions == other._partitions

  def __hash__(self) -> int:
    return hash(self._partitions)

  def __repr__(self) -> str:
    return f"P{self._partitions!r}"

  unreduced = reduced = property(lambda self: frozenset())  # always empty: see __init__

  def count(self, value: Any) -> int:
    return self._partitions.count(value)

  def index(self, value: Any) -> int:
    return self._partitions.index(value)

  def update(self, *, partitions: Sequence[Any] | None = None, **kwargs: Any
             ) -> PartitionSpec:
    """A copy with the given parts replaced."""
    return PartitionSpec(*(self._partitions if partitions is None else partitions), **kwargs)

  def axes_of(self, dim: int) -> tuple[str, ...]:
    """The mesh axes dimension `dim` is split over, major first."""
    p = self._partitions[dim] if dim < len(self._partitions) else None
    return () if p is None else (p,) if isinstance(p, str) else p


class UnspecifiedValue:
  """The sharding of a `jit` input or output the user left to XLA (and to the argument's
  own placement); printed in jaxprs as JAX prints it."""

  def __repr__(self) -> str:
    return "UnspecifiedValue"


UNSPECIFIED = UnspecifiedValue()


class _ShardingBase(Sharding):
  """What every jaxon sharding derives from its devices and `HloSharding`."""

  # A plain class value, set per instance: importing the real `jax` in the same process
  # puts read-only properties of this name on jaxlib's C++ `Sharding` (JAX's own base), and
  # without one here an instance could not set it (benchmarks time jaxon beside JAX).
  _device_assignment: tuple[Any, ...] = ()
  memory_kind = "device"

  def _to_xla_hlo_sharding(self, ndim: int) -> Any:
    raise NotImplementedError

  device_set = property(lambda self: set(self._device_assignment))
  num_devices = property(lambda self: len(self._device_assignment))
  is_fully_addressable = property(
      lambda self: all(d.process_index == client.process_index()
                       for d in self._device_assignment))

  @property
  def addressable_devices(self) -> set[Any]:
    return {d for d in self._device_assignment if d.process_index == client.process_index()}

  def _blocks(self, global_shape: Sequence[int]) -> list[tuple[slice, ...]]:
    shape = tuple(global_shape)
    hlo = self._to_xla_hlo_sharding(len(shape))
    if not hlo.is_replicated():
      tiles = hlo.tile_assignment_dimensions()[:len(shape)]
      if any(size % n for size, n in zip(shape, tiles)):
        raise IndivisibleError(
            f"Sharding {self!r} implies that array axis {_first_uneven(shape, tiles)} is "
            f"partitioned {tiles[_first_uneven(shape, tiles)]} times, but the dimension size "
            f"is {shape[_first_uneven(shape, tiles)]} (full shape: {shape}, per-dimension "
            f"tiling factors: {list(tiles)} should evenly divide the shape)")
    return sharded.indices(hlo, shape, self.num_devices)

  def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Any, tuple[slice, ...]]:
    return dict(zip(self._device_assignment, self._blocks(global_shape)))

  def addressable_devices_indices_map(self, global_shape: Sequence[int]
                                      ) -> dict[Any, tuple[slice, ...]]:
    mine = self.addressable_devices
    return {d: i for d, i in self.devices_indices_map(global_shape).items() if d in mine}

  def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
    index = self._blocks(global_shape)[0]
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, global_shape))

  def is_equivalent_to(self, other: Any, ndim: int) -> bool:
    return (tuple(self._device_assignment) == tuple(other._device_assignment) and
            self._to_xla_hlo_sharding(ndim) == other._to_xla_hlo_sharding(ndim))


def _first_uneven(shape: Sequence[int], tiles: Sequence[int]) -> int:
  return next(i for i, (size, n) in enumerate(zip(shape, tiles)) if size % n)


class SingleDeviceSharding(_ShardingBase):
  """The whole array on one device."""

  def __init__(self, device: Any, *, memory_kind: str | None = None):
    super().__init__()
    self._device = device
    self._device_assignment = (device,)

  is_fully_replicated = property(lambda self: True)

  def _to_xla_hlo_sharding(self, ndim: int) -> Any:
    return sharded.HloSharding.replicate()

  def __eq__(self, other: object) -> bool:
    return isinstance(other, SingleDeviceSharding) and other._device == self._device

  def __hash__(self) -> int:
    return hash(("single", self._device))

  def __repr__(self) -> str:
    return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


class NamedSharding(_ShardingBase):
  """Array dimensions split over the axes of a mesh, as `spec` names them; the array is
  replicated over the axes it does not name.

  Raises:
    ValueError: `spec` names an axis the mesh does not have, or one axis twice.
  """

  def __init__(self, mesh: Mesh, spec: PartitionSpec, *, memory_kind: str | None = None):
    super().__init__()
    if not isinstance(mesh, (Mesh, AbstractMesh)):
      raise TypeError(f"NamedSharding's mesh must be a jaxon.sharding.Mesh, got {mesh!r}")
    if not isinstance(spec, PartitionSpec):
      raise TypeError(f"NamedSharding's spec must be a PartitionSpec, got {spec!r}")
    used = [a for dim in range(len(spec)) for a in spec.axes_of(dim)]
    for axis in used:
      if axis not in mesh.axis_names:
        raise ValueError(f"Resource axis: {axis} of {spec} is not found in mesh: "
                         f"{mesh.axis_names}.")
    if len(set(used)) != len(used):
      raise ValueError(f"A mesh axis may split one array dimension only; {spec} uses one "
                       "twice.")
    self.mesh = mesh
    self.spec = spec
    if isinstance(mesh, Mesh):  # an abstract mesh has no devices
      self._device_assignment = mesh._flat_devices_tuple

  @property
  def is_fully_replicated(self) -> bool:
    return all(math.prod(self.mesh.shape[a] for a in self.spec.axes_of(d)) == 1
               for d in range(len(self.spec)))

  def _dim_axes(self, ndim: int) -> list[list[int]]:
    if len(self.spec) > ndim:
      raise ValueError(f"One of pjit arguments was given the sharding of {self!r}, which "
                       f"implies that it has a rank of at least {len(self.spec)}, but it is "
                       f"{ndim}")
    names = self.mesh.axis_names
    return [[names.index(a) for a in self.spec.axes_of(d)] for d in range(ndim)]

  def _to_xla_hlo_sharding(self, ndim: int) -> Any:
    return sharded.tiled_hlo_sharding(self.mesh.axis_sizes, self._dim_axes(ndim))

  def _to_sdy(self, ndim: int) -> str:
    """The Shardy attribute of arrays of rank `ndim` laid out so."""
    names = self.mesh.axis_names
    dims = ", ".join("{" + ", ".join(f'"{names[a]}"' for a in axes) + "}"
                     for axes in self._dim_axes(ndim))
    return f"#sdy.sharding<@mesh, [{dims}]>"

  def with_spec(self, spec: PartitionSpec) -> NamedSharding:
    return NamedSharding(self.mesh, spec)

  def with_memory_kind(self, kind: str) -> NamedSharding:
    return NamedSharding(self.mesh, self.spec, memory_kind=kind)

  def update(self, *, mesh: Mesh | None = None, spec: PartitionSpec | None = None,
             memory_kind: str | None = None) -> NamedSharding:
    """A copy with the given parts replaced."""
    return NamedSharding(self.mesh if mesh is None else mesh,
                         self.spec if spec is None else spec, memory_kind=memory_kind)

  @property
  def has_addressable_devices(self) -> bool:
    return any(d.process_index == client.process_index() for d in self.device_set)

  def check_compatible_aval(self, aval_shape: Sequence[int]) -> None:
    """Raises ValueError when arrays of shape `aval_shape` cannot be laid out so (the
    spec names more dimensions than they have)."""
    self._dim_axes(len(aval_shape))

  def __eq__(self, other: object) -> bool:
    return (isinstance(other, NamedSharding) and self.mesh == other.mesh
            and self.spec == other.spec)

  def __hash__(self) -> int:
    return hash((self.mesh, self.spec))

  def __repr__(self) -> str:
    memory = "" if isinstance(self.mesh, AbstractMesh) else f", memory_kind={self.memory_kind}"
    return f"NamedSharding(mesh={self.mesh._short_str()}, spec={self.spec!r}{memory})"


# ----------------------------------------------------------------------------- conversions


@functools.lru_cache(maxsize=1024)
def named_from_hlo(mesh: Mesh, hlo_text: str, ndim: int) -> NamedSharding | None:
  """The NamedSharding over `mesh` whose HloSharding is the one written `hlo_text` (XLA's
  choice for a result), with the fewest axes and trailing Nones dropped, as JAX reads
  it back; None if no spec over `mesh` gives it."""
  hlo = sharded.HloSharding.from_string(hlo_text)
  names = mesh.axis_names
  candidates: list[tuple[int, PartitionSpec]] = []
  # Each mesh axis splits one dimension (or none); the axes of a dimension in some order.
  for target in itertools.product(range(-1, ndim), repeat=len(names)):
    groups = [[a for a, t in enumerate(target) if t == d] for d in range(ndim)]
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
      if sharded.tiled_hlo_sharding(mesh.axis_sizes, orders) != hlo:
        continue
      parts = [None if not o else names[o[0]] if len(o) == 1 else tuple(names[a] for a in o)
               for o in orders]
      while parts and parts[-1] is None:
        parts.pop()
      candidates.append((sum(map(len, orders)), PartitionSpec(*parts)))
  if not candidates:
    return None
  return NamedSharding(mesh, min(candidates, key=lambda c: c[0])[1])


def _named_result(mesh: Mesh, originals: Sequence[tuple[Any, int]], hlo: Any, ndim: int
                  ) -> NamedSharding:
  """A result's sharding from XLA's layout `hlo`: that of an input of the same rank laid
  out the same way when there is one (so `x + 1` keeps `x`'s spec as written, trailing
  Nones included, as JAX does), else the shortest spec that gives it."""
  for sharding, rank in originals:
    if (rank == ndim and isinstance(sharding, NamedSharding) and sharding.mesh == mesh
        and sharding._to_xla_hlo_sharding(ndim) == hlo):
      return sharding
  named = named_from_hlo(mesh, str(hlo), ndim)
  if named is None:
    raise NotImplementedError(f"XLA laid out a result as {hlo}, which no PartitionSpec over "
                              f"{mesh!r} describes; pass out_shardings.")
  return named


def sharding_of(x: Array) -> Any:
  """The sharding of an Array, as the user sees it."""
  runtime = x._buf._sharding
  if runtime is client.default_sharding():
    return _default_sharding()
  return sharded.user_sharding(runtime)


@functools.cache
def _default_sharding() -> SingleDeviceSharding:
  return SingleDeviceSharding(client.local_devices()[0])


def lower_constraint(module_context: Any, value: Any, sharding: NamedSharding, ndim: int
                     ) -> Any:
  """`value` (an MLIR value of rank `ndim`) constrained to be laid out as `sharding` at
  that point of the program: an `sdy.sharding_constraint` over the module's mesh."""
  mesh = sharding.mesh
  module_context.mesh_symbol(mesh.axis_names, mesh.axis_sizes)
  return sdy.ShardingConstraintOp(value, ir.Attribute.parse(sharding._to_sdy(ndim))).result


def _sdy(sharding: Any, ndim: int) -> str | None:
  return sharding._to_sdy(ndim) if isinstance(sharding, NamedSharding) else None


# ----------------------------------------------------------------------------- placement


def _placement(shardings: Sequence[Any], describe: Any) -> tuple[Any, sharded.Placement]:
  """(replicated sharding, placement) of a program whose committed shardings (None for
  none) are `shardings`; `describe(i)` names the i-th for the error."""
  first: tuple[int, Any] | None = None
  for i, s in enumerate(shardings):
    if s is None:
      continue
    if not isinstance(s, (NamedSharding, SingleDeviceSharding)):
      raise TypeError(f"jaxon cannot run a program on {describe(i)}, laid out as {s!r}.")
    if first is None:
      first = (i, s)
    elif not _same_place(first[1], s):
      j, f = first
      raise ValueError(f"Received incompatible devices for jitted computation. Got "
                       f"{describe(j)} with device ids {[d.id for d in f._device_assignment]} "
                       f"and {describe(i)} with device ids "
                       f"{[d.id for d in s._device_assignment]}.")
  if first is None:
    return None, None
  s = first[1]
  if isinstance(s, SingleDeviceSharding):
    return s, sharded.Placement((s._device,), (), ())
  mesh = s.mesh
  return (NamedSharding(mesh, PartitionSpec()),
          sharded.Placement(mesh._flat_devices_tuple, mesh.axis_names, mesh.axis_sizes))


def _same_place(a: Any, b: Any) -> bool:
  if isinstance(a, NamedSharding) and isinstance(b, NamedSharding):
    return (a.mesh.axis_names, a.mesh.axis_sizes, a._device_assignment) == (
        b.mesh.axis_names, b.mesh.axis_sizes, b._device_assignment)
  return a._device_assignment == b._device_assignment and type(a) is type(b)


class PlacedProgram:
  """A jaxpr that runs where its shardings say: one SPMD executable per combination of
  the shardings of its arguments (those `in_shardings` leaves unspecified follow their
  argument, or are replicated)."""

  def __init__(self, jaxpr: core.Jaxpr, consts: Sequence[Any], name: str,
               in_shardings: Sequence[Any], out_shardings: Sequence[Any],
               inner_shardings: Sequence[Any] = (),
               default: Callable[[], Any] | None = None,
               donated_invars: Sequence[bool] = (), as_jit: bool = False):
    """`default()` gives the executable that runs the program when nothing places it
    (None: the caller runs it on the default device); `donated_invars` marks the inputs
    whose buffers outputs may take; `as_jit` refuses, as `jit` does, an argument placed
    otherwise than its given sharding (other programs move it there)."""
    self.jaxpr, self.consts, self.name = jaxpr, consts, name
    self.as_jit = as_jit
    self.donated_invars = tuple(donated_invars)
    self._default = default
    self.in_shardings = list(in_shardings)
    self.out_shardings = list(out_shardings)
    self.inner_shardings = list(inner_shardings)
    self._executables: dict[tuple, sharded.SpmdExecutable] = {}
    # The same by the arguments' own shardings (None: uncommitted): no placement to work out.
    self._by_committed: dict[tuple, sharded.SpmdExecutable] = {}

  def __call__(self, args: Sequence[Any]) -> list[Any] | None:
    """The outputs, or None when nothing places the program (it runs on the default
    device then)."""
    committed = tuple([s if s is not None else sharding_of(x) if sharded.is_placed(x)
                       else None for x, s in zip(args, self.in_shardings)])
    exe = self._by_committed.get(committed)
    if exe is not None:  # the usual call: the arguments are laid out as the last time
      if self.as_jit:
        self._check_placed_as_given(exe, args)
      return exe(args)
    fixed = list(committed) + self.out_shardings + self.inner_shardings
    n_in, n_out = len(committed), len(self.out_shardings)

    def describe(i: int) -> str:
      if i < n_in:
        aval = self.jaxpr.invars[i].aval
        return f"argument {i} of {self.name} with shape {aval.str_short(short_dtypes=False)}"
      return ("out_shardings" if i < n_in + n_out else "a sharding constraint") + \
          f" of {self.name}"
    replicated, placement = _placement(fixed, describe)
    if placement is None:
      return None if self._default is None else self._default()(args)
    in_shardings = tuple(replicated if s is None else s for s in committed)
    exe = self._executables.get(in_shardings)
    if exe is None:
      mesh = getattr(replicated, "mesh", None)
      originals = [(s, len(v.aval.shape)) for s, v in zip(in_shardings, self.jaxpr.invars)]
      from_hlo = (functools.partial(_named_result, mesh, originals) if mesh is not None
                  else lambda hlo, ndim: replicated)
      exe = self._executables[in_shardings] = sharded.SpmdExecutable(
          self.jaxpr, self.consts, self.name, placement, in_shardings, self.out_shardings,
          _sdy, from_hlo, self.donated_invars)
    self._by_committed[committed] = exe
    if self.as_jit:
      self._check_placed_as_given(exe, args)
    return exe(args)

  def _check_placed_as_given(self, exe: sharded.SpmdExecutable, args: Sequence[Any]) -> None:
    """JAX's error for an argument placed (committed) with another layout than the sharding
    jit is given for it; one on the default device, not placed, is moved."""
    for x, given, runtime, aval in zip(args, self.in_shardings, exe.in_runtime, exe.in_avals):
      if given is None or type(x) is not Array:
        continue
      placed = x._buf._sharding
      if placed is runtime or placed is client.default_sharding():
        continue
      ndim = sharded.physical_ndim(aval)
      if sharded.runtime_sharding(sharding_of(x), ndim)._hlo_sharding != runtime._hlo_sharding:
        raise ValueError(f"Sharding passed to jit does not match the sharding on the "
                         f"respective arg. Got jit sharding: {given},\narg sharding: "
                         f"{sharding_of(x)} for arg type: {aval.str_short(short_dtypes=False)}")


def _call_placed(exe: executable.Executable, args: Sequence[Any]) -> list[Any] | None:
  program = exe.placed.get(None)
  if program is None:
    jaxpr, consts = exe.source
    program = exe.placed[None] = PlacedProgram(
        jaxpr, consts, exe.name, [None] * len(jaxpr.invars), [None] * len(jaxpr.outvars),
        donated_invars=getattr(exe, "donated_invars", ()))
  return program(args)


def shards_of(x: Array) -> list[Shard]:
  """`x.addressable_shards`: each block on a device of this process, as an Array
  committed to that device."""
  if x._buf._sharding is client.default_sharding():
    return [Shard(_default_sharding()._device, (slice(None),) * x.ndim, 0, x)]
  sharding = sharding_of(x)
  blocks = sharding._blocks(x.shape)
  replicas = sharded.replica_ids(blocks, x.shape)
  shards = []
  for device, position, buf in sharded.shard_buffers(x._buf):
    index = blocks[position]
    shape = tuple(len(range(*s.indices(n))) for s, n in zip(index, x.shape))
    data = x if sharding.num_devices == 1 else sharded.rewrap(
        buf, x.aval.update(shape=shape), SingleDeviceSharding(device))
    shards.append(Shard(device, index, replicas[position], data))
  return shards


class _Layout:
  """What Arrays ask about where their data is (see `array.set_layout`)."""
  sharding_of = staticmethod(sharding_of)
  shards_of = staticmethod(shards_of)
  host_value = staticmethod(sharded.host_value)


executable.call_placed = _call_placed
array_mod.set_layout(_Layout)


# ----------------------------------------------------------------------------- device_put


def device_put_leaf(x: Any, target: Any) -> Array:
  """`x` (an Array or host value) placed on a device or laid out as a sharding; the
  result is committed there."""
  if isinstance(target, _jax.Device):
    target = SingleDeviceSharding(target)
  if not isinstance(target, (NamedSharding, SingleDeviceSharding)):
    raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                     "`jax.Device` or a pytree of these values. Received invalid value: "
                     f"{target}")
  if type(x) is Array:
    if x._buf._sharding is sharded.runtime_sharding(target, sharded.physical_ndim(x.aval)):
      return x
    aval = x.aval
    value = x._value if x._buf._sharding is client.default_sharding() else sharded.host_value(
        x._buf, x.aval)
  else:
    arr = executable.device_put(x)
    aval, value = arr.aval, arr._value
  target._blocks(aval.shape)  # uneven splits fail here, with JAX's error
  return sharded.put(np.asarray(value), aval, target)



@functools.lru_cache(maxsize=64)
def _type_level_sharding(ndim: int) -> NamedSharding:
  return NamedSharding(EMPTY_ABSTRACT_MESH, PartitionSpec(*[None] * ndim))


core.set_aval_sharding(_type_level_sharding)
