"""`with_sharding_constraint`: asks XLA's partitioner to lay a value out as a sharding at
that point of a program (elsewhere it propagates layouts on its own).

The value is unchanged, so the primitive is the identity for every rule: under `jit` it
lowers to `sdy.sharding_constraint`, eagerly it moves the Array to the sharding, its
tangent and cotangent carry the same constraint, and under `vmap` the batch dimension
is left unsplit.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
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
        context_mesh=context_mesh()), sub)
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


def context_mesh() -> Mesh:
  """This thread's context mesh, or the empty one."""
  return current_mesh() or _EMPTY_MESH


_EMPTY_MESH = Mesh(np.empty((0,), dtype=object), ())


# ----------------------------------------------------------------------------- reshard
# JAX's `reshard` and `out_sharding=` are types there; jaxon's types carry no sharding, so
# both are layout requests made with this primitive, over any axis type.

def reshard_target(sharding: Any, api: str) -> NamedSharding:
  """`sharding` as the NamedSharding `api` lays a value out as (a PartitionSpec is over the
  context mesh)."""
  if isinstance(sharding, PartitionSpec):
    mesh = current_mesh()
    if mesh is None:
      raise ValueError(f"{api} was given the PartitionSpec {sharding} with no context "
                       "mesh: use `jaxon.set_mesh(mesh)` or pass a NamedSharding.")
    return NamedSharding(mesh, sharding)
  if not isinstance(sharding, NamedSharding) or sharding.mesh.empty:
    raise ValueError("Reshard should only be used with out_shardings which are non-None "
                     f"and have a non-empty mesh. Got sharding {sharding}.")
  return sharding


def lay_out(xs: Any, sharding: NamedSharding) -> Any:
  """Each leaf of `xs` laid out as `sharding`: moved now for an Array, constrained in the
  compiled program for a traced value."""
  return tree_util.tree_map(lambda leaf: sharding_constraint_p.bind(
      leaf, sharding=sharding, layout=None, unconstrained_dims=_DimSet(),
      context_mesh=context_mesh()), xs)


def apply_out_sharding(x: Any, out_sharding: Any, api: str) -> Any:
  """`x` laid out as JAX's `out_sharding=` keyword asks (None: left as it is). JAX takes
  it over `Explicit` mesh axes only, where it is the result's type. A sharding over the
  empty mesh (`jaxon.typeof(x).sharding` outside `set_mesh`, which optax passes on) asks
  for nothing, as in JAX."""
  if out_sharding is None or isinstance(out_sharding, NamedSharding) and (
      not out_sharding.mesh.axis_names):
    return x
  if not isinstance(out_sharding, (NamedSharding, PartitionSpec)):
    raise TypeError(f"`out_sharding` argument of {api} only supports instances of "
                    f"`NamedSharding` or `PartitionSpec`. Got {out_sharding} of type: "
                    f"{type(out_sharding)}")
  named = reshard_target(out_sharding, api)
  for axis in dict.fromkeys(a for d in range(len(named.spec)) for a in named.spec.axes_of(d)):
    axis_type = named.mesh.axis_types[named.mesh.axis_names.index(axis)]
    if axis_type != AxisType.Explicit:
      raise ValueError(f"PartitionSpec passed to {api} cannot contain axis names that are of "
                       f"type Auto or Manual. Got PartitionSpec: {named.spec} with axis name: "
                       f"{axis} of type: {axis_type}.")
  return lay_out(x, named)


def apply_sharding(x: Any, sharding: Any, api: str) -> Any:
  """`x` placed as `lax.full`'s and `lax.full_like`'s `sharding=` keyword asks (callers
  skip the call when it is None). JAX commits the new array to any concrete Sharding,
  whatever its mesh's axis types, as jnp's `device=` does; under `jit` it ignores one, and
  jaxon lays a NamedSharding out there (a layout request, as `out_sharding` is). A
  PartitionSpec is over the context mesh; a sharding over the empty mesh asks for
  nothing."""
  if isinstance(sharding, NamedSharding):
    return lay_out(x, sharding) if sharding.mesh.axis_names else x
  if isinstance(sharding, PartitionSpec):
    return lay_out(x, reshard_target(sharding, api))
  return x if isinstance(x, core.Tracer) else device_put_leaf(x, sharding)


def takes_out_sharding(fun: Callable) -> Callable:
  """`fun` with JAX's keyword-only `out_sharding` (see `apply_out_sharding`)."""
  @functools.wraps(fun)
  def with_out_sharding(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
    return apply_out_sharding(fun(*args, **kwargs), out_sharding, fun.__name__)
  params = list(inspect.signature(fun).parameters.values())
  at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
  params.insert(at, inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                      default=None))
  with_out_sharding.__signature__ = inspect.signature(fun).replace(parameters=params)
  return with_out_sharding


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
