"""`with_sharding_constraint`: asks XLA's partitioner to lay a value out as a sharding at
that point of a program (elsewhere it propagates layouts on its own).

The value is unchanged, so the primitive is the identity for every rule: under `jit` it
lowers to `sdy.sharding_constraint`, eagerly it moves the Array to the sharding, its
tangent and cotangent carry the same constraint, and under `vmap` the batch dimension
is left unsplit.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, tree_util
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.mesh import AxisType, Mesh, current_mesh
from jaxon._src.sharding_impls import (
    NamedSharding, PartitionSpec, device_put_leaf, lower_constraint)

sharding_constraint_p = core.Primitive("sharding_constraint")


class _DimSet(frozenset):
  """`unconstrained_dims`, printed as JAX prints it (`frozenset({})` when empty)."""

  def __str__(self) -> str:
    return "frozenset({" + ", ".join(map(str, sorted(self))) + "})"


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
  """`x` (a pytree) laid out as `shardings` (a NamedSharding, or a PartitionSpec inside
  `with mesh:`; or a pytree prefix of `x` of those).

  Raises:
    ValueError: a PartitionSpec with no mesh in context; a spec naming an `Explicit` mesh
      axis (JAX's `reshard` is for those).
  """
  def constrain(sharding: Any, sub: Any) -> Any:
    sharding = _as_named(sharding)
    return tree_util.tree_map(lambda leaf: sharding_constraint_p.bind(
        leaf, sharding=sharding, layout=None, unconstrained_dims=_DimSet(),
        context_mesh=_context_mesh()), sub)
  if isinstance(shardings, (NamedSharding, PartitionSpec)):
    return constrain(shardings, x)
  return tree_util.tree_map(constrain, shardings, x,
                            is_leaf=lambda s: isinstance(s, PartitionSpec))


def _as_named(sharding: Any) -> NamedSharding:
  if isinstance(sharding, PartitionSpec):
    mesh = current_mesh()
    if mesh is None:
      raise ValueError("with_sharding_constraint requires a non-empty mesh in context "
                       f"(`with mesh:`) when given a PartitionSpec ({sharding}); or pass a "
                       "NamedSharding.")
    sharding = NamedSharding(mesh, sharding)
  if not isinstance(sharding, NamedSharding):
    raise TypeError(f"with_sharding_constraint takes NamedShardings or PartitionSpecs; got "
                    f"{sharding!r}")
  mesh = sharding.mesh
  explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t is AxisType.Explicit}
  if any(set(sharding.spec.axes_of(d)) & explicit for d in range(len(sharding.spec))):
    raise ValueError("The spec of NamedSharding passed to with_sharding_constraint can only "
                     f"refer to Auto axes of the mesh. Got spec={sharding.spec} and "
                     f"mesh={mesh._short_str()}. You probably meant to use `reshard` API?")
  return sharding


def _context_mesh() -> Mesh:
  return current_mesh() or _EMPTY_MESH


_EMPTY_MESH = Mesh(np.empty((0,), dtype=object), ())


def _impl(x: Any, *, sharding: NamedSharding, **_: Any) -> Any:
  return device_put_leaf(x, sharding)


def _transpose(ct: Any, x: Any, **params: Any) -> list[Any]:
  if type(ct) is ad.Zero:
    return [ct]
  return [sharding_constraint_p.bind(ct, **params)]


def _batch(axis_data: batching.AxisData, vals: Any, dims: Any, *, sharding: NamedSharding,
           **params: Any) -> tuple:
  """The batch dimension goes into the spec where it sits in the operand: split over the
  vmap's `spmd_axis_name` mesh axes, else not split."""
  (x,), (d,) = vals, dims
  spec = list(sharding.spec) + [None] * (x.ndim - 1 - len(sharding.spec))
  spmd = axis_data.spmd_name
  spec.insert(d, spmd[0] if spmd is not None and len(spmd) == 1 else spmd)
  out = sharding_constraint_p.bind(x, sharding=sharding.with_spec(PartitionSpec(*spec)),
                                   **params)
  return out, d


def _lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, sharding: NamedSharding,
              **_: Any) -> list[ir.Value]:
  return [lower_constraint(ctx.module_context, x, sharding, len(ctx.avals_in[0].shape))]


sharding_constraint_p.def_impl(_impl)
sharding_constraint_p.def_abstract_eval(lambda aval, **_: aval)
ad.deflinear(sharding_constraint_p, _transpose)
batching.fancy_primitive_batchers[sharding_constraint_p] = _batch
mlir.register_lowering(sharding_constraint_p, _lowering)
