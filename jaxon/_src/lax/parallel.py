"""Collectives over named axes: `psum`, `pmax`, `pmin`, `ppermute`, `all_gather`,
`psum_scatter` (`reduce_scatter`), `all_to_all`, `axis_index`, and the functions built on
them (`pmean`, `pshuffle`, `axis_size`, `pbroadcast`, `pswapaxes`).

A collective names the axes it acts over; the transformation that bound a name gives it
its meaning. Under `vmap(axis_name=)` the batching rule *performs* the collective over the
batch dimension (no devices involved); under `shard_map` and `pmap` the equation lowers to
a cross-device collective inside the SPMD manual computation, whose mesh the lowering
learns from `manual_mesh_context`. Both meanings give the same numbers.

Derivatives follow JAX's unchecked (pmap) semantics: `psum` transposes to `psum` (a psum
is a sum followed by a broadcast to every member), `all_gather` and `psum_scatter`
transpose to each other, `ppermute` to the inverse permutation and `all_to_all` to the one
with split and concat axes swapped. `shard_map`'s transpose divides the cotangents of
outputs replicated over an axis by its size, which makes these rules exact.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core, dtypes, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, reductions, shape_ops, slicing

AxisName = Hashable


# ----------------------------------------------------------------------------- axis names


def _as_axes(axis_name: Any) -> tuple:
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _named(axes: Sequence[Any]) -> tuple:
  return tuple(a for a in axes if not isinstance(a, int))


def _check_bound(axes: Sequence[Any], api: str) -> None:
  """Collectives are staged by name: a name no enclosing vmap, pmap or shard_map binds
  would only fail at lowering, far from the call, so it fails here."""
  for name in _named(axes):
    if not core.axis_is_bound(name):
      raise NameError(f"Found an unbound axis name: {name}. To fix this, please call {api} "
                      "under `jaxon.shard_map`.")


def _bound_size(axes: Sequence[Any], api: str) -> int:
  _check_bound(axes, api)
  return math.prod(core.axis_size(name) for name in _named(axes))


def _canonical_groups(axis_index_groups: Any, axes: Sequence[Any]) -> tuple | None:
  if axis_index_groups is None:
    return None
  if any(isinstance(a, int) for a in axes):
    raise ValueError("axis_index_groups only supported for sums over just named axes")
  groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
  covered = sorted(i for g in groups for i in g)
  if covered != list(range(len(covered))):
    raise ValueError("axis_index_groups must cover all indices exactly once")
  return groups


def _group_size(axes: Sequence[Any], groups: tuple | None, api: str) -> int:
  size = _bound_size(axes, api)
  if groups is None:
    return size
  if len({len(g) for g in groups}) != 1:
    raise ValueError("Replica groups must be equally sized")
  return len(groups[0])


def _no_groups_in_vmap(groups: tuple | None) -> None:
  if groups is not None:
    raise NotImplementedError("axis_index_groups not supported in vmap collectives. Please "
                              "open a feature request!")


# ----------------------------------------------------------------------------- lowering context

class _ManualMesh(threading.local):
  def __init__(self) -> None:
    self.axes: tuple[tuple[Any, int], ...] | None = None


_manual_mesh = _ManualMesh()
_channel_ids = itertools.count(1)


@contextlib.contextmanager
def manual_mesh_context(axes: Sequence[tuple[Any, int]]) -> Iterator[None]:
  """While lowering the body of a manual computation over a mesh with these (name, size)
  axes, in mesh order: the device that runs member (i0, i1, …) is partition
  i0 * size1 * … + i1 * … + …, which is how collectives name their peers."""
  prev = _manual_mesh.axes
  _manual_mesh.axes = tuple(axes)
  try:
    yield
  finally:
    _manual_mesh.axes = prev


def _mesh_axes(names: Sequence[Any]) -> tuple[tuple[Any, int], ...]:
  mesh = _manual_mesh.axes
  known = {} if mesh is None else dict(mesh)
  for name in names:
    if name not in known:
      raise NameError(f"unbound axis name: {name} (collectives lower only inside a "
                      "shard_map or pmap over a mesh with that axis)")
  return mesh  # type: ignore[return-value]


def _device_groups(names: Sequence[Any], groups: tuple | None) -> np.ndarray:
  """Partition ids of the members that act together, one row per group, each row in the
  order of the combined axis `names` (major to minor), restricted to `groups` if given."""
  mesh = _mesh_axes(names)
  mesh_names = [n for n, _ in mesh]
  ids = np.arange(math.prod(s for _, s in mesh)).reshape([s for _, s in mesh])
  acting = [mesh_names.index(n) for n in names]
  others = [i for i in range(len(mesh)) if i not in acting]
  ids = ids.transpose(others + acting).reshape(-1, math.prod(ids.shape[i] for i in acting))
  if groups is None:
    return ids
  return np.concatenate([ids[:, list(g)] for g in groups], axis=0)


def _groups_attr(rows: np.ndarray) -> ir.DenseElementsAttr:
  return ir.DenseElementsAttr.get(np.ascontiguousarray(rows, np.int64))


def _channel() -> ir.Attribute:
  return hlo.ChannelHandle.get(next(_channel_ids), 1)  # type 1: device to device


def _scalar_body(op: ir.OpView, dtype: Any, combine: Any) -> None:
  scalar = mlir.aval_to_ir_type(ShapedArray((), dtype))
  block = op.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([combine(*block.arguments)])


def _positional_reduce(reduce: Any, ctx: mlir.LoweringRuleContext, x: ir.Value,
                       positions: Sequence[int]) -> ir.Value:
  if not positions:
    return x
  aval = ctx.avals_in[0]
  out_aval = aval.update(shape=tuple(d for i, d in enumerate(aval.shape) if i not in positions))
  rule = mlir.lower_fun(lambda v: reduce(v, tuple(positions)), multiple_results=False)
  return rule(ctx.replace(avals_out=[out_aval]), x)[0]


# ----------------------------------------------------------------------------- psum, pmax, pmin

def _allreduce_abstract_eval(x: ShapedArray, *, axes: tuple, axis_index_groups: Any,
                             name: str) -> ShapedArray:
  _check_bound(axes, name)
  positions = [a for a in axes if isinstance(a, int)]
  return x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in positions))


def _allreduce_impl(reduce: Any, x: Any, *, axes: tuple, axis_index_groups: Any) -> Any:
  """Outside every mapping only positional axes (left by a vmap rule) can be reduced."""
  _check_bound(axes, "a collective")
  return reduce(x, tuple(a for a in axes if isinstance(a, int)))


def _allreduce_lowering(reduce: Any, monoid: reductions.Monoid,
                        ctx: mlir.LoweringRuleContext, x: ir.Value, *, axes: tuple,
                        axis_index_groups: Any) -> list[ir.Value]:
  x = _positional_reduce(reduce, ctx, x, [a for a in axes if isinstance(a, int)])
  names = _named(axes)
  if not names:
    return [x]
  out_aval = ctx.avals_out[0]
  op = hlo.AllReduceOp([mlir.aval_to_ir_type(out_aval)], [x],
                       _groups_attr(_device_groups(names, axis_index_groups)),
                       channel_handle=_channel(), use_global_device_ids=True)
  _scalar_body(op, out_aval.dtype, monoid.combine)
  return [op.result]


def _allreduce_batcher(prim: core.Primitive, unmapped: Any, axis_data: batching.AxisData,
                       vals: Sequence[Any], dims: Sequence[int | None], *, axes: tuple,
                       axis_index_groups: Any) -> tuple[Any, int | None]:
  """The vmap's own axis among `axes` becomes the batch dimension (reduced here, so the
  result is unmapped) or, for an unmapped operand, `unmapped(x, size)`; the other axes
  stay for the enclosing transformations."""
  (x,), (d,) = vals, dims
  if d is not batching.not_mapped:  # positional axes count the operand's own dimensions
    axes = tuple(a + (a >= d) if isinstance(a, int) else a for a in axes)
  if axis_data.name not in axes:
    out = prim.bind(x, axes=axes, axis_index_groups=axis_index_groups)
    return out, None if d is None else d - sum(isinstance(a, int) and a < d for a in axes)
  _no_groups_in_vmap(axis_index_groups)
  rest = tuple(a for a in axes if a != axis_data.name)
  if d is batching.not_mapped:
    x = unmapped(x, axis_data.size)
  else:
    rest = (*rest, d)
  return (prim.bind(x, axes=rest, axis_index_groups=None) if rest else x), None


def _psum_transpose(ct: Any, x: Any, *, axes: tuple, axis_index_groups: Any) -> list[Any]:
  positions = tuple(a for a in axes if isinstance(a, int))
  if positions:
    ct = lax.broadcast_in_dim(ct, x.aval.shape,
                              [i for i in range(x.aval.ndim) if i not in positions])
  names = _named(axes)
  return [psum_p.bind(ct, axes=names, axis_index_groups=axis_index_groups) if names else ct]


def _pextremum_jvp(prim: core.Primitive, primals: Sequence[Any], tangents: Sequence[Any], *,
                   axes: tuple, axis_index_groups: Any) -> tuple[Any, Any]:
  """The tangent at the members holding the extremum, averaged over ties (as reductions'
  max does); JAX itself has no rule here."""
  (x,), (t,) = primals, tangents
  params = dict(axes=axes, axis_index_groups=axis_index_groups)
  out = prim.bind(x, **params)
  positions = [a for a in axes if isinstance(a, int)]
  shape = core.get_aval(x).shape
  kept = [i for i in range(len(shape)) if i not in positions]
  at_extremum = lax.eq(x, lax.broadcast_in_dim(out, shape, kept))
  hits = lax.convert_element_type(at_extremum, core.get_aval(t).dtype)
  t = ad.instantiate_zeros(t)
  count = psum_p.bind(hits, **params)
  return out, lax.div(psum_p.bind(lax.mul(t, hits), **params), count)


def _reduction_primitive(name: str, reduce: Any, monoid: reductions.Monoid,
                         unmapped: Any) -> core.Primitive:
  prim = core.Primitive(name)
  prim.def_impl(lambda x, **params: _allreduce_impl(reduce, x, **params))
  prim.def_abstract_eval(lambda x, **params: _allreduce_abstract_eval(x, name=name, **params))
  mlir.register_lowering(prim, lambda ctx, x, **params: _allreduce_lowering(
      reduce, monoid, ctx, x, **params))
  batching.fancy_primitive_batchers[prim] = (
      lambda *args, **params: _allreduce_batcher(prim, unmapped, *args, **params))
  batching.collective_axis_names[prim] = lambda params: params["axes"]
  return prim


psum_p = _reduction_primitive("psum", reductions.reduce_sum, reductions.ADD,
                              lambda x, size: lax.mul(x, lax._const(x, size)))
ad.deflinear(psum_p, _psum_transpose)
pmax_p = _reduction_primitive("pmax", reductions.reduce_max, reductions.MAX,
                              lambda x, size: x)
pmin_p = _reduction_primitive("pmin", reductions.reduce_min, reductions.MIN,
                              lambda x, size: x)
ad.primitive_jvps[pmax_p] = lambda p, t, **params: _pextremum_jvp(pmax_p, p, t, **params)
ad.primitive_jvps[pmin_p] = lambda p, t, **params: _pextremum_jvp(pmin_p, p, t, **params)


def _is_concrete(x: Any) -> bool:
  return not isinstance(x, core.Tracer)


def _allreduce(prim: core.Primitive, api: str, combine_copies: Any, x: Any, axis_name: Any,
               axis_index_groups: Any) -> Any:
  axes = _as_axes(axis_name)
  if not axes:
    return x
  groups = _canonical_groups(axis_index_groups, axes)

  def one(leaf: Any) -> Any:
    if dtypes.dtype(leaf) == np.bool_:
      leaf = lax.convert_element_type(leaf, np.int32)
    if _is_concrete(leaf):  # the same value on every member: no communication needed
      positions = tuple(a for a in axes if isinstance(a, int))
      if positions:
        leaf = prim.impl(leaf, axes=positions, axis_index_groups=None)
      size = len(groups[0]) if groups else math.prod(core.axis_size(n) for n in _named(axes))
      return combine_copies(leaf, size)
    _check_bound(axes, api)
    return prim.bind(leaf, axes=axes, axis_index_groups=groups)
  return tree_util.tree_map(one, x)


def _times(x: Any, size: int) -> Any:
  if isinstance(x, (int, float, complex)):
    return x * size
  if isinstance(x, (np.ndarray, np.generic)):
    return x * np.array(size, x.dtype)
  return lax.mul(x, lax._const(x, size))


def psum(x: Any, axis_name: AxisName | Sequence[AxisName], *,
         axis_index_groups: Sequence[Sequence[int]] | None = None) -> Any:
  """The sum of `x` over the members of the named axis (or axes), on every member; applies
  to each leaf of a pytree. Booleans are summed as int32.

  Example:
    >>> vmap(lambda x: lax.psum(x, 'i'), axis_name='i')(jnp.arange(3.0))
    Array([3., 3., 3.], dtype=float32)
  """
  return _allreduce(psum_p, "psum", _times, x, axis_name, axis_index_groups)


def pmax(x: Any, axis_name: AxisName | Sequence[AxisName], *,
         axis_index_groups: Sequence[Sequence[int]] | None = None) -> Any:
  """The maximum of `x` over the members of the named axis, on every member."""
  return _allreduce(pmax_p, "pmax", lambda x, size: x, x, axis_name, axis_index_groups)


def pmin(x: Any, axis_name: AxisName | Sequence[AxisName], *,
         axis_index_groups: Sequence[Sequence[int]] | None = None) -> Any:
  """The minimum of `x` over the members of the named axis, on every member."""
  return _allreduce(pmin_p, "pmin", lambda x, size: x, x, axis_name, axis_index_groups)


def pmean(x: Any, axis_name: AxisName | Sequence[AxisName], *,
          axis_index_groups: Sequence[Sequence[int]] | None = None) -> Any:
  """The mean of `x` over the members of the named axis, on every member."""
  axes = _as_axes(axis_name)
  if any(isinstance(a, int) for a in axes):
    raise NotImplementedError("pmean over positional axes is not supported; use a named "
                              "axis (vmap's axis_name)")
  total = psum(x, axis_name, axis_index_groups=axis_index_groups)
  groups = _canonical_groups(axis_index_groups, axes)
  n = len(groups[0]) if groups else axis_size(axes)
  return tree_util.tree_map(lambda v: v / n, total)


def axis_size(axis_name: AxisName | Sequence[AxisName]) -> int:
  """The number of members of the named axis (the product, for several names)."""
  return math.prod(core.axis_size(name) for name in _as_axes(axis_name))


# ----------------------------------------------------------------------------- axis_index

axis_index_p = core.Primitive("axis_index")


def _axis_index_abstract_eval(*, axis_name: Any) -> ShapedArray:
  _check_bound((axis_name,), "axis_index")
  return ShapedArray((), np.dtype(np.int32))


def _axis_index_impl(*, axis_name: Any) -> Any:
  _check_bound((axis_name,), "axis_index")
  raise NameError(f"unbound axis name: {axis_name}")


def _axis_index_lowering(ctx: mlir.LoweringRuleContext, *, axis_name: Any) -> list[ir.Value]:
  mesh = _mesh_axes((axis_name,))
  names = [n for n, _ in mesh]
  position = names.index(axis_name)
  stride = math.prod(s for _, s in mesh[position + 1:])
  u32 = np.uint32
  index = hlo.remainder(hlo.divide(hlo.partition_id(), mlir.ir_constant(np.array(stride, u32))),
                        mlir.ir_constant(np.array(mesh[position][1], u32)))
  return [hlo.convert(mlir.aval_to_ir_type(ctx.avals_out[0]), index)]


def _axis_index_batcher(axis_data: batching.AxisData, vals: Sequence[Any],
                        dims: Sequence[int | None], *, axis_name: Any) -> tuple[Any, int]:
  return lax.iota(np.int32, axis_data.size), 0


axis_index_p.def_impl(_axis_index_impl)
axis_index_p.def_abstract_eval(_axis_index_abstract_eval)
mlir.register_lowering(axis_index_p, _axis_index_lowering)
batching.fancy_primitive_batchers[axis_index_p] = _axis_index_batcher
batching.collective_axis_names[axis_index_p] = lambda params: (params["axis_name"],)


def axis_index(axis_name: AxisName | Sequence[AxisName]) -> Any:
  """This member's index along the named axis (for several names, the index into their
  combination, the first name major).

  Example:
    >>> vmap(lambda x: x + lax.axis_index('i'), axis_name='i')(jnp.zeros(3, jnp.int32))
    Array([0, 1, 2], dtype=int32)
  """
  names = _as_axes(axis_name)
  index, inner = None, 1
  for name in reversed(names):
    _check_bound((name,), "axis_index")
    term = axis_index_p.bind(axis_name=name)
    if inner != 1:
      term = lax.mul(term, np.int32(inner))
    index = term if index is None else lax.add(index, term)
    inner *= core.axis_size(name)
  return index


# ----------------------------------------------------------------------------- shared rules

def _unbound_impl(name: str) -> Any:
  def impl(*args: Any, axis_name: Any, **params: Any) -> Any:
    _check_bound(_as_axes(axis_name), name)
    raise NameError(f"unbound axis name: {axis_name}")
  return impl


def _own_axis_only(axis_data: batching.AxisData, names: tuple, name: str) -> bool:
  """Whether the vmap performs the collective itself (its axis is the only one named):
  mixing a vmapped axis with others in one gather or permutation is not supported."""
  if axis_data.name not in names:
    return False
  if len(names) > 1:
    raise NotImplementedError(f"{name} over the vmapped axis {axis_data.name!r} together "
                              f"with other axes {names} is not supported")
  return True


def _members_first(x: Any, d: int | None, size: int) -> Any:
  return batching.bdim_at_front(x, d, size)


def _merge_dims(x: Any, dim: int) -> Any:
  """`x` with dimensions `dim` and `dim + 1` merged into one (major first)."""
  shape = core.get_aval(x).shape
  return shape_ops.reshape(x, (*shape[:dim], shape[dim] * shape[dim + 1], *shape[dim + 2:]))


def _split_dim(x: Any, dim: int, parts: int) -> Any:
  """`x` with dimension `dim` split into (`parts`, rest), `parts` major."""
  shape = core.get_aval(x).shape
  return shape_ops.reshape(x, (*shape[:dim], parts, shape[dim] // parts, *shape[dim + 1:]))


def _register_collective(prim: core.Primitive, abstract_eval: Any, lowering: Any,
                         batcher: Any, transpose: Any) -> None:
  prim.def_impl(_unbound_impl(prim.name))
  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, lowering)
  batching.fancy_primitive_batchers[prim] = batcher
  batching.collective_axis_names[prim] = lambda params: _as_axes(params["axis_name"])
  ad.deflinear(prim, transpose)


# ----------------------------------------------------------------------------- ppermute

ppermute_p = core.Primitive("ppermute")


def _ppermute_abstract_eval(x: ShapedArray, *, axis_name: tuple, perm: tuple) -> ShapedArray:
  _check_bound(axis_name, "ppermute")
  return x


def _ppermute_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, axis_name: tuple,
                       perm: tuple) -> list[ir.Value]:
  rows = _device_groups(axis_name, None)
  pairs = np.array([(row[src], row[dst]) for row in rows for src, dst in perm],
                   np.int64).reshape(-1, 2)
  op = hlo.CollectivePermuteOp(x, _groups_attr(pairs), channel_handle=_channel(),
                               results=[mlir.aval_to_ir_type(ctx.avals_out[0])])
  return [op.result]


def _ppermute_batcher(axis_data: batching.AxisData, vals: Sequence[Any],
                      dims: Sequence[int | None], *, axis_name: tuple, perm: tuple
                      ) -> tuple[Any, int | None]:
  (x,), (d,) = vals, dims
  if not _own_axis_only(axis_data, axis_name, "ppermute"):
    return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
  x = _members_first(x, d, axis_data.size)
  source_of = {dst: src for src, dst in perm}
  rows = [slicing.index_in_dim(x, source_of[m], 0) if m in source_of else
          lax.full_like(slicing.index_in_dim(x, 0, 0), 0) for m in range(axis_data.size)]
  return shape_ops.concatenate(rows, 0), 0


def _ppermute_transpose(ct: Any, x: Any, *, axis_name: tuple, perm: tuple) -> list[Any]:
  inverse = tuple((dst, src) for src, dst in perm)
  return [ppermute_p.bind(ad.instantiate_zeros(ct), axis_name=axis_name, perm=inverse)]


_register_collective(ppermute_p, _ppermute_abstract_eval, _ppermute_lowering,
                     _ppermute_batcher, _ppermute_transpose)


def ppermute(x: Any, axis_name: AxisName | Sequence[AxisName],
             perm: Sequence[tuple[int, int]]) -> Any:
  """Sends each member's `x` along the (source, destination) pairs of `perm`; members no
  pair sends to get zeros. Applies to each leaf of a pytree."""
  names = _as_axes(axis_name)
  perm = tuple((int(s), int(t)) for s, t in perm)
  srcs, dsts = [s for s, _ in perm], [t for _, t in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")

  def one(leaf: Any) -> Any:
    size = _bound_size(names, "ppermute")
    if any(not 0 <= i < size for i in srcs + dsts):
      raise ValueError(f"ppermute perm indices must be in [0, {size}) for axis {axis_name!r}"
                       f" of size {size}, got {perm}")
    return ppermute_p.bind(lax.asarray(leaf), axis_name=names, perm=perm)
  return tree_util.tree_map(one, x)


def pshuffle(x: Any, axis_name: AxisName | Sequence[AxisName], perm: Sequence[int]) -> Any:
  """`ppermute` with the permutation given by sources: member i receives from `perm[i]`."""
  if set(perm) != set(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pbroadcast(x: Any, axis_name: AxisName | Sequence[AxisName], source: int) -> Any:
  """Every member gets the `x` of member `source`."""
  def one(leaf: Any) -> Any:
    leaf = lax.asarray(leaf)
    mine = lax.eq(axis_index(axis_name), np.int32(source))
    return psum(lax.select(lax.broadcast_in_dim(mine, core.get_aval(leaf).shape, ()), leaf,
                           lax.full_like(leaf, 0)), axis_name)
  return tree_util.tree_map(one, x)


# ----------------------------------------------------------------------------- all_gather

all_gather_p = core.Primitive("all_gather")


def _all_gather_abstract_eval(x: ShapedArray, *, all_gather_dimension: int, axis_name: tuple,
                              axis_index_groups: Any, axis_size: int, tiled: bool
                              ) -> ShapedArray:
  _check_bound(axis_name, "all_gather")
  shape = list(x.shape)
  if tiled:
    shape[all_gather_dimension] *= axis_size
  else:
    shape.insert(all_gather_dimension, axis_size)
  return x.update(shape=tuple(shape))


def _all_gather_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                         all_gather_dimension: int, axis_name: tuple, axis_index_groups: Any,
                         axis_size: int, tiled: bool) -> list[ir.Value]:
  aval = ctx.avals_in[0]
  if not tiled:
    shape = list(aval.shape)
    shape.insert(all_gather_dimension, 1)
    x = hlo.reshape(mlir.aval_to_ir_type(aval.update(shape=tuple(shape))), x)
  op = hlo.AllGatherOp([mlir.aval_to_ir_type(ctx.avals_out[0])], [x], all_gather_dimension,
                       _groups_attr(_device_groups(axis_name, axis_index_groups)),
                       channel_handle=_channel(), use_global_device_ids=True)
  return [op.results[0]]


def _all_gather_batcher(axis_data: batching.AxisData, vals: Sequence[Any],
                        dims: Sequence[int | None], *, all_gather_dimension: int,
                        axis_name: tuple, axis_index_groups: Any, axis_size: int, tiled: bool
                        ) -> tuple[Any, int | None]:
  (x,), (d,) = vals, dims
  x = _members_first(x, d, axis_data.size)
  if not _own_axis_only(axis_data, axis_name, "all_gather"):
    return all_gather_p.bind(x, all_gather_dimension=all_gather_dimension + 1,
                             axis_name=axis_name, axis_index_groups=axis_index_groups,
                             axis_size=axis_size, tiled=tiled), 0
  _no_groups_in_vmap(axis_index_groups)
  gathered = batching.moveaxis(x, 0, all_gather_dimension)
  return (_merge_dims(gathered, all_gather_dimension) if tiled else gathered), None


def _all_gather_transpose(ct: Any, x: Any, *, all_gather_dimension: int, axis_name: tuple,
                          axis_index_groups: Any, axis_size: int, tiled: bool) -> list[Any]:
  return [reduce_scatter_p.bind(ad.instantiate_zeros(ct),
                                scatter_dimension=all_gather_dimension, axis_name=axis_name,
                                axis_index_groups=axis_index_groups, axis_size=axis_size,
                                tiled=tiled)]


_register_collective(all_gather_p, _all_gather_abstract_eval, _all_gather_lowering,
                     _all_gather_batcher, _all_gather_transpose)


def all_gather(x: Any, axis_name: AxisName | Sequence[AxisName], *,
               axis_index_groups: Sequence[Sequence[int]] | None = None, axis: int = 0,
               tiled: bool = False) -> Any:
  """Every member gets the `x` of all members, stacked along a new dimension `axis` (or,
  with `tiled`, concatenated along the existing dimension `axis`)."""
  names = _as_axes(axis_name)
  groups = _canonical_groups(axis_index_groups, names)

  def one(leaf: Any) -> Any:
    leaf = lax.asarray(leaf)
    size = _group_size(names, groups, "all_gather")
    ndim = core.get_aval(leaf).ndim + (not tiled)
    if not -ndim <= axis < ndim:
      raise ValueError(f"all_gather axis {axis} is out of bounds for an operand of rank "
                       f"{core.get_aval(leaf).ndim} (tiled={tiled})")
    return all_gather_p.bind(leaf, all_gather_dimension=axis % ndim, axis_name=names,
                             axis_index_groups=groups, axis_size=size, tiled=tiled)
  return tree_util.tree_map(one, x)


# ----------------------------------------------------------------------------- psum_scatter

reduce_scatter_p = core.Primitive("reduce_scatter")


def _reduce_scatter_abstract_eval(x: ShapedArray, *, scatter_dimension: int, axis_name: tuple,
                                  axis_index_groups: Any, axis_size: int, tiled: bool
                                  ) -> ShapedArray:
  _check_bound(axis_name, "reduce_scatter")
  shape = list(x.shape)
  size = shape[scatter_dimension]
  if tiled:
    if size % axis_size:
      raise ValueError(f"tiled reduce_scatter operand scatter dimension size {size} must be "
                       f"divisible by shard_count {axis_size}")
    shape[scatter_dimension] = size // axis_size
  else:
    if size != axis_size:
      raise ValueError(f"reduce_scatter operand scatter dimension size {size} must match "
                       f"shard count {axis_size}")
    del shape[scatter_dimension]
  return x.update(shape=tuple(shape))


def _reduce_scatter_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                             scatter_dimension: int, axis_name: tuple, axis_index_groups: Any,
                             axis_size: int, tiled: bool) -> list[ir.Value]:
  aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
  shape = list(aval.shape)
  shape[scatter_dimension] //= axis_size
  op = hlo.ReduceScatterOp(mlir.aval_to_ir_type(aval.update(shape=tuple(shape))), x,
                           scatter_dimension,
                           _groups_attr(_device_groups(axis_name, axis_index_groups)),
                           channel_handle=_channel(), use_global_device_ids=True)
  _scalar_body(op, aval.dtype, reductions.ADD.combine)
  out = op.result
  return [out if tiled else hlo.reshape(mlir.aval_to_ir_type(out_aval), out)]


def _reduce_scatter_batcher(axis_data: batching.AxisData, vals: Sequence[Any],
                            dims: Sequence[int | None], *, scatter_dimension: int,
                            axis_name: tuple, axis_index_groups: Any, axis_size: int,
                            tiled: bool) -> tuple[Any, int | None]:
  """Member k keeps chunk k of the sum: the chunks' dimension is the new batch dimension."""
  (x,), (d,) = vals, dims
  x = _members_first(x, d, axis_data.size)
  if not _own_axis_only(axis_data, axis_name, "psum_scatter"):
    return reduce_scatter_p.bind(x, scatter_dimension=scatter_dimension + 1,
                                 axis_name=axis_name, axis_index_groups=axis_index_groups,
                                 axis_size=axis_size, tiled=tiled), 0
  _no_groups_in_vmap(axis_index_groups)
  total = reductions.reduce_sum(x, (0,))
  _reduce_scatter_abstract_eval(core.get_aval(total), scatter_dimension=scatter_dimension,
                                axis_name=(), axis_index_groups=None,
                                axis_size=axis_data.size, tiled=tiled)
  if tiled:
    total = _split_dim(total, scatter_dimension, axis_data.size)
  return total, scatter_dimension


def _reduce_scatter_transpose(ct: Any, x: Any, *, scatter_dimension: int, axis_name: tuple,
                              axis_index_groups: Any, axis_size: int, tiled: bool
                              ) -> list[Any]:
  return [all_gather_p.bind(ad.instantiate_zeros(ct), all_gather_dimension=scatter_dimension,
                            axis_name=axis_name, axis_index_groups=axis_index_groups,
                            axis_size=axis_size, tiled=tiled)]


_register_collective(reduce_scatter_p, _reduce_scatter_abstract_eval, _reduce_scatter_lowering,
                     _reduce_scatter_batcher, _reduce_scatter_transpose)


def psum_scatter(x: Any, axis_name: AxisName | Sequence[AxisName], *,
                 scatter_dimension: int = 0,
                 axis_index_groups: Sequence[Sequence[int]] | None = None,
                 tiled: bool = False) -> Any:
  """`psum(x)` cut along `scatter_dimension`, member k keeping piece k: that dimension
  (of the axis size) is dropped, or with `tiled` divided by the axis size."""
  names = _as_axes(axis_name)
  groups = _canonical_groups(axis_index_groups, names)

  def one(leaf: Any) -> Any:
    leaf = lax.asarray(leaf)
    size = _group_size(names, groups, "psum_scatter")
    ndim = core.get_aval(leaf).ndim
    return reduce_scatter_p.bind(leaf, scatter_dimension=scatter_dimension % max(ndim, 1),
                                 axis_name=names, axis_index_groups=groups, axis_size=size,
                                 tiled=tiled)
  return tree_util.tree_map(one, x)


# ----------------------------------------------------------------------------- all_to_all

all_to_all_p = core.Primitive("all_to_all")


def _all_to_all_abstract_eval(x: ShapedArray, *, axis_name: Any, split_axis: int,
                              concat_axis: int, axis_index_groups: Any, tiled: bool
                              ) -> ShapedArray:
  names = _as_axes(axis_name)
  _check_bound(names, "all_to_all")
  size = len(axis_index_groups[0]) if axis_index_groups else _bound_size(names, "all_to_all")
  shape = list(x.shape)
  shape[split_axis] //= size
  shape[concat_axis] *= size
  return x.update(shape=tuple(shape))


def _all_to_all_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, axis_name: Any,
                         split_axis: int, concat_axis: int, axis_index_groups: Any,
                         tiled: bool) -> list[ir.Value]:
  rows = _device_groups(_as_axes(axis_name), axis_index_groups)
  op = hlo.AllToAllOp([x], split_axis, concat_axis, rows.shape[1], _groups_attr(rows),
                      channel_handle=_channel(),
                      results=[mlir.aval_to_ir_type(ctx.avals_out[0])])
  return [op.results[0]]


def _all_to_all_batcher(axis_data: batching.AxisData, vals: Sequence[Any],
                        dims: Sequence[int | None], *, axis_name: Any, split_axis: int,
                        concat_axis: int, axis_index_groups: Any, tiled: bool
                        ) -> tuple[Any, int]:
  """Member m cuts `split_axis` into one chunk per member and sends chunk k to member k,
  which concatenates what it receives along `concat_axis` in the senders' order."""
  (x,), (d,) = vals, dims
  x = _members_first(x, d, axis_data.size)
  if not _own_axis_only(axis_data, _as_axes(axis_name), "all_to_all"):
    return all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis + 1,
                             concat_axis=concat_axis + 1, axis_index_groups=axis_index_groups,
                             tiled=tiled), 0
  _no_groups_in_vmap(axis_index_groups)
  n = axis_data.size
  chunks = _split_dim(x, split_axis + 1, n)              # (sender, …, receiver, chunk, …)
  by_receiver = batching.moveaxis(chunks, split_axis + 1, 0)  # (receiver, sender, …)
  senders_at = batching.moveaxis(by_receiver, 1, concat_axis + 1)
  return _merge_dims(senders_at, concat_axis + 1), 0


def _all_to_all_transpose(ct: Any, x: Any, *, axis_name: Any, split_axis: int,
                          concat_axis: int, axis_index_groups: Any, tiled: bool) -> list[Any]:
  return [all_to_all_p.bind(ad.instantiate_zeros(ct), axis_name=axis_name,
                            split_axis=concat_axis, concat_axis=split_axis,
                            axis_index_groups=axis_index_groups, tiled=tiled)]


_register_collective(all_to_all_p, _all_to_all_abstract_eval, _all_to_all_lowering,
                     _all_to_all_batcher, _all_to_all_transpose)


def all_to_all(x: Any, axis_name: AxisName | Sequence[AxisName], split_axis: int,
               concat_axis: int, *, axis_index_groups: Sequence[Sequence[int]] | None = None,
               tiled: bool = False) -> Any:
  """Cuts `split_axis` into one piece per member, sends piece k to member k, and stacks
  what each member receives along a new `concat_axis` (with `tiled`: concatenates along
  the existing one)."""
  names = _as_axes(axis_name)
  groups = _canonical_groups(axis_index_groups, names)

  def one(leaf: Any, split_axis: int = split_axis, concat_axis: int = concat_axis) -> Any:
    leaf = lax.asarray(leaf)
    size = _group_size(names, groups, "all_to_all")
    shape = core.get_aval(leaf).shape
    if tiled:
      if shape[split_axis] % size:
        raise ValueError(f"The size of all_to_all split_axis ({shape[split_axis]}) has to be "
                         f"divisible by the size of the named axis {axis_name} ({size})")
    elif shape[split_axis] != size:
      raise ValueError("all_to_all requires the size of the mapped axis axis_name to equal "
                       f"x.shape[split_axis], but they are {size} and {shape[split_axis]} "
                       "respectively.")
    elif split_axis < concat_axis:
      concat_axis += 1  # counted after split_axis is removed
      leaf = shape_ops.expand_dims(leaf, (concat_axis,))
    elif concat_axis < split_axis:
      leaf = shape_ops.expand_dims(leaf, (concat_axis,))
      split_axis += 1
    out = all_to_all_p.bind(leaf, axis_name=axis_name, split_axis=split_axis,
                            concat_axis=concat_axis, axis_index_groups=groups, tiled=tiled)
    if not tiled and split_axis != concat_axis:
      out = shape_ops.squeeze(out, (split_axis,))
    return out
  return tree_util.tree_map(one, x)


def pswapaxes(x: Any, axis_name: AxisName | Sequence[AxisName], axis: int, *,
              axis_index_groups: Sequence[Sequence[int]] | None = None) -> Any:
  """Swaps the named axis with positional `axis`: `all_to_all(x, axis_name, axis, axis)`."""
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)
