"""`shard_map`: a function written for one block of each argument, run on every device of a
mesh at once, with collectives over the mesh's axes.

The primitive `shard_map` carries the body as a closed jaxpr over per-device blocks, the
mesh, and for each input and output the mesh axes each of its dimensions is split over
(`in_specs`, `out_specs`, normalized to one tuple of axis names per dimension). It lowers
to Shardy's `sdy.manual_computation` over the module's mesh; the collectives inside lower
with that mesh's device groups (`parallel.manual_mesh_context`). Eagerly it runs as one
SPMD program over the mesh's devices.

Every rule that retraces the body (JVP, transpose, partial evaluation, batching) runs with
the mesh's axes bound (`core.extend_axis_env`), as the body was first traced.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from jaxon._src import caches, core, pjit, shard_map_vma, traceback_util, tree_util
from jaxon._src.core import ClosedJaxpr, JaxprEqn, ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax, parallel, shape_ops

Spec = tuple[tuple[Any, ...], ...]  # per dimension, the mesh axes it is split over

shard_map_p = core.Primitive("shard_map")
shard_map_p.multiple_results = True


# ----------------------------------------------------------------------------- specs


def _normalize_spec(spec: Any, ndim: int, what: str) -> Spec:
  """A PartitionSpec (or tuple) as one tuple of axis names per dimension of a rank-`ndim`
  value."""
  entries = tuple(spec) if spec is not None else ()
  if len(entries) > ndim:
    raise ValueError(f"shard_map {what} spec {spec} has {len(entries)} entries, more than the "
                     f"rank {ndim} of the value it describes.")
  dims = tuple(() if e is None else tuple(e) if isinstance(e, (tuple, list)) else (e,)
               for e in entries)
  return dims + ((),) * (ndim - len(dims))


def _parts(mesh: Any, dims: Sequence[Any]) -> int:
  return math.prod(mesh.shape[a] for a in dims)


def _block_aval(aval: ShapedArray, spec: Spec, mesh: Any, what: str) -> ShapedArray:
  shape = []
  for i, (size, dims) in enumerate(zip(aval.shape, spec)):
    parts = _parts(mesh, dims)
    if size % parts:
      raise ValueError(f"shard_map {what} of shape {aval.shape} cannot be split over mesh "
                       f"axes {dims} ({parts} parts) along dimension {i}: {size} is not "
                       "divisible by {parts}.")
    shape.append(size // parts)
  return aval.update(shape=tuple(shape))


def _global_aval(aval: ShapedArray, spec: Spec, mesh: Any) -> ShapedArray:
  return aval.update(shape=tuple(s * _parts(mesh, d) for s, d in zip(aval.shape, spec)))


def _axis_frames(mesh: Any) -> list[tuple[Any, int]]:
  return list(zip(mesh.axis_names, mesh.devices.shape))


def _sdy_sharding(spec: Spec) -> str:
  dims = ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in spec)
  return f"<@mesh, [{dims}]>"


# ----------------------------------------------------------------------------- the primitive


def _abstract_eval(*avals: ShapedArray, jaxpr: ClosedJaxpr, mesh: Any, in_specs: tuple,
                   out_specs: tuple, check_vma: bool) -> list[ShapedArray]:
  return [_global_aval(a, s, mesh) for a, s in zip(jaxpr.out_avals, out_specs)]


def _lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, jaxpr: ClosedJaxpr, mesh: Any,
              in_specs: tuple, out_specs: tuple, check_vma: bool) -> list[ir.Value]:
  names, sizes = tuple(mesh.axis_names), tuple(mesh.devices.shape)
  ctx.module_context.mesh_symbol(names, sizes)
  per_value = lambda specs: ir.Attribute.parse(  # noqa: E731
      "#sdy.sharding_per_value<[" + ", ".join(map(_sdy_sharding, specs)) + "]>")
  manual = ir.Attribute.parse("#sdy<manual_axes{" + ", ".join(f'"{n}"' for n in names) + "}>")
  op = sdy.ManualComputationOp([mlir.aval_to_ir_type(a) for a in ctx.avals_out], list(args),
                               per_value(in_specs), per_value(out_specs), manual)
  block = op.body.blocks.append(*[mlir.aval_to_ir_type(a) for a in jaxpr.in_avals])
  # Lowering rules that retrace (`mlir.lower_fun`) see the body's axes bound, as tracing did.
  with ir.InsertionPoint(block), parallel.manual_mesh_context(zip(names, sizes)), \
      core.extend_axis_env(_axis_frames(mesh)):
    outs = mlir.closed_jaxpr_subcomp(ctx.module_context, jaxpr, list(block.arguments))
    sdy.ReturnOp(outs)
  return list(op.results)


def _impl(*args: Any, **params: Any) -> list[Any]:
  return _executable(**params)(args)


@caches.lru_cache(maxsize=256)
def _executable(*, jaxpr: ClosedJaxpr, mesh: Any, in_specs: tuple, out_specs: tuple,
                check_vma: bool) -> Callable[[Sequence[Any]], list[Any]]:
  """One SPMD program over the mesh whose only equation is this shard_map."""
  from jaxon._src import sharding_impls
  params = dict(jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                check_vma=check_vma)
  in_avals = [_global_aval(a, s, mesh) for a, s in zip(jaxpr.in_avals, in_specs)]
  outer = pe.trace_to_closed_jaxpr(lambda *xs: shard_map_p.bind(*xs, **params), in_avals)
  sharding = lambda spec: sharding_impls.NamedSharding(  # noqa: E731
      mesh, sharding_impls.PartitionSpec(*_spec_entries(spec)))
  program = sharding_impls.PlacedProgram(outer.jaxpr, outer.consts, "shard_map",
                                         [sharding(s) for s in in_specs],
                                         [sharding(s) for s in out_specs])
  return program


class _Shown:
  """A param value printed as JAX prints the one it stands for."""

  def __init__(self, text: str):
    self.text = text

  def __str__(self) -> str:
    return self.text


def _spec_entries(spec: Spec) -> list[Any]:
  """The PartitionSpec entries of a normalized spec, trailing unsplit dimensions left out."""
  while spec and not spec[-1]:
    spec = spec[:-1]
  return [None if not d else d[0] if len(d) == 1 else d for d in spec]


def _spec_text(spec: Spec) -> str:
  return "P(" + "".join(repr(e) + "," for e in _spec_entries(spec)) + ")"


def _pp_rule(eqn: JaxprEqn, context: core.PrintContext) -> Any:
  """Specs print as PartitionSpecs and the mesh in short, with the axes the body makes
  manual (every mesh axis), as JAX prints them."""
  params = eqn.params
  specs = lambda ss: _Shown("(" + "".join(_spec_text(s) + ", " for s in ss)[:-1] + ")")  # noqa: E731
  names = params["mesh"].axis_names
  shown = dict(params, in_specs=specs(params["in_specs"]), out_specs=specs(params["out_specs"]),
               mesh=_Shown(params["mesh"]._short_str()),
               newly_manual_axes=_Shown("frozenset({" + ", ".join(map(repr, names)) + "})"))
  return core.pp_standard_eqn(eqn.replace(params=shown), context)


shard_map_p.def_impl(_impl)
shard_map_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(shard_map_p, _lowering)
core.pp_eqn_rules[shard_map_p] = _pp_rule


def _placing_rule(params: dict) -> list[Any]:
  """A program holding a shard_map runs on its mesh (a jit of it, too)."""
  from jaxon._src import sharding_impls
  return [sharding_impls.NamedSharding(params["mesh"], sharding_impls.PartitionSpec())]


pjit.placing_rules[shard_map_p] = _placing_rule


# ----------------------------------------------------------------------------- transformations


def _jvp(primals: Sequence[Any], tangents: Sequence[Any], *, jaxpr: ClosedJaxpr, mesh: Any,
         in_specs: tuple, out_specs: tuple, check_vma: bool) -> tuple[list[Any], list[Any]]:
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  with core.extend_axis_env(_axis_frames(mesh)):
    jvp_jaxpr, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
  tangent_specs = tuple(s for s, nz in zip(in_specs, nonzeros) if nz)
  out_tangent_specs = tuple(s for s, nz in zip(out_specs, out_nonzeros) if nz)
  outs = shard_map_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                          jaxpr=jvp_jaxpr, mesh=mesh, in_specs=in_specs + tangent_specs,
                          out_specs=out_specs + out_tangent_specs, check_vma=check_vma)
  n = len(out_specs)
  nonzero_outs = iter(outs[n:])
  out_avals = _abstract_eval(jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=check_vma)
  return outs[:n], [next(nonzero_outs) if nz else ad.Zero(a.to_tangent_aval())
                    for a, nz in zip(out_avals, out_nonzeros)]


def _unmentioned_parts(mesh: Any, spec: Spec) -> int:
  return math.prod(mesh.shape[n] for n in _unmentioned_axes(mesh, spec))


@caches.lru_cache(maxsize=1024)
def _summing_replicated_cached(transposed: ClosedJaxpr, mesh: Any, specs: tuple
                               ) -> ClosedJaxpr:
  def summed(*xs: Any) -> list[Any]:
    outs = core.jaxpr_as_fun(transposed)(*xs)
    return [ct if not (axes := _unmentioned_axes(mesh, spec)) else parallel.psum(ct, axes)
            for ct, spec in zip(outs, specs)]
  return pe.trace_to_closed_jaxpr(summed, transposed.in_avals)


def _summing_replicated(transposed: ClosedJaxpr, mesh: Any, specs: Sequence[Spec]
                        ) -> ClosedJaxpr:
  """A replicated input reached every device: its cotangent is the sum of what each
  device's body gives it, over the axes its spec does not name."""
  return _summing_replicated_cached(transposed, mesh, tuple(specs))


def _unmentioned_axes(mesh: Any, spec: Spec) -> tuple:
  used = {a for d in spec for a in d}
  return tuple(n for n in mesh.axis_names if n not in used)


def _transpose(cts: Sequence[Any], *args: Any, jaxpr: ClosedJaxpr, mesh: Any, in_specs: tuple,
               out_specs: tuple, check_vma: bool) -> list[Any]:
  """An output replicated over mesh axes its spec does not name is one value held by
  that many devices: each device's share of its cotangent is that fraction, so that the
  psums of the transposed body add the shares back up."""
  undefined = tuple(ad.is_undefined_primal(a) for a in args)
  ct_nonzeros = tuple(type(ct) is not ad.Zero for ct in cts)
  with core.extend_axis_env(_axis_frames(mesh)):
    transposed = _summing_replicated(ad.transpose_jaxpr(jaxpr, undefined, ct_nonzeros), mesh,
                                     [s for s, u in zip(in_specs, undefined) if u])
  shares = []
  for ct, spec in zip(cts, out_specs):
    if type(ct) is ad.Zero:
      continue
    parts = _unmentioned_parts(mesh, spec)
    shares.append(ct if parts == 1 else lax.div(ct, lax._const(ct, parts)))
  defined = [a for a, u in zip(args, undefined) if not u]
  outs = iter(shard_map_p.bind(
      *defined, *shares, jaxpr=transposed, mesh=mesh,
      in_specs=tuple(s for s, u in zip(in_specs, undefined) if not u)
      + tuple(s for s, nz in zip(out_specs, ct_nonzeros) if nz),
      out_specs=tuple(s for s, u in zip(in_specs, undefined) if u), check_vma=check_vma))
  return [next(outs) if u else None for u in undefined]


def _partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]
                  ) -> tuple[JaxprEqn | None, JaxprEqn | None, list[bool]]:
  """The known part runs as its own shard_map now; its residuals are per-device values,
  so each leaves it with a new leading dimension split over every mesh axis."""
  params = eqn.params
  mesh = params["mesh"]
  frames = _axis_frames(mesh)
  with core.extend_axis_env(frames):
    known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(params["jaxpr"],
                                                                  tuple(unknowns))
    n_known_out = len(known.out_avals) - num_res
    res_avals = known.out_avals[n_known_out:]

    def known_stacking_residuals(*xs: Any) -> list[Any]:
      outs = core.jaxpr_as_fun(known)(*xs)
      return outs[:n_known_out] + [shape_ops.expand_dims(r, (0,)) for r in outs[n_known_out:]]

    def unknown_unstacking_residuals(*xs: Any) -> list[Any]:
      res = [shape_ops.squeeze(r, (0,)) for r in xs[:num_res]]
      return core.jaxpr_as_fun(unknown)(*res, *xs[num_res:])
    known = pe.trace_to_closed_jaxpr(known_stacking_residuals, known.in_avals)
    unknown = pe.trace_to_closed_jaxpr(
        unknown_unstacking_residuals,
        [a.update(shape=(1, *a.shape)) for a in res_avals] + unknown.in_avals[num_res:])
  all_axes = (tuple(mesh.axis_names),)
  res_specs = tuple(all_axes + ((),) * len(a.shape) for a in res_avals)
  in_specs, out_specs = params["in_specs"], params["out_specs"]
  residuals = [core.Var(_global_aval(a.update(shape=(1, *a.shape)), s, mesh))
               for a, s in zip(res_avals, res_specs)]
  known_eqn = JaxprEqn(
      [a for a, u in zip(eqn.invars, unknowns) if not u],
      [v for v, u in zip(eqn.outvars, out_unknowns) if not u] + residuals, shard_map_p,
      dict(params, jaxpr=known,
           in_specs=tuple(s for s, u in zip(in_specs, unknowns) if not u),
           out_specs=tuple(s for s, u in zip(out_specs, out_unknowns) if not u) + res_specs))
  unknown_eqn = JaxprEqn(
      residuals + [a for a, u in zip(eqn.invars, unknowns) if u],
      [v for v, u in zip(eqn.outvars, out_unknowns) if u], shard_map_p,
      dict(params, jaxpr=unknown,
           in_specs=res_specs + tuple(s for s, u in zip(in_specs, unknowns) if u),
           out_specs=tuple(s for s, u in zip(out_specs, out_unknowns) if u)))
  return known_eqn, unknown_eqn, out_unknowns


def _batch(axis_data: batching.AxisData, vals: Sequence[Any], dims: Sequence[int | None], *,
           jaxpr: ClosedJaxpr, mesh: Any, in_specs: tuple, out_specs: tuple, check_vma: bool
           ) -> tuple[list[Any], list[int]]:
  """The batch dimension goes first, split over no mesh axis, in and out."""
  vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
  in_dims = tuple(None if d is None else 0 for d in dims)
  with core.extend_axis_env(_axis_frames(mesh)):
    batched, _ = batching.batch_jaxpr(jaxpr, axis_data, in_dims, (0,) * len(out_specs))
  outs = shard_map_p.bind(
      *vals, jaxpr=batched, mesh=mesh,
      in_specs=tuple(s if d is None else ((),) + s for s, d in zip(in_specs, in_dims)),
      out_specs=tuple(((),) + s for s in out_specs), check_vma=check_vma)
  return outs, [0] * len(outs)


ad.primitive_jvps[shard_map_p] = _jvp
ad.primitive_transposes[shard_map_p] = _transpose
pe.partial_eval_jaxpr_custom_rules[shard_map_p] = _partial_eval
batching.fancy_primitive_batchers[shard_map_p] = _batch


# ----------------------------------------------------------------------------- the API


def _broadcast_specs(specs: Any, tree: Any, what: str) -> list[tuple[str, Any]]:
  """`specs` (a pytree prefix of `tree`, PartitionSpecs as leaves) one per leaf of `tree`,
  each with its key path in `specs` (as text, for error messages)."""
  from jaxon._src import sharding_impls
  is_spec = lambda x: x is None or isinstance(x, sharding_impls.PartitionSpec)  # noqa: E731
  out: list[tuple[str, Any]] = []

  def repeat(path: Any, spec: Any, sub: Any) -> None:
    out.extend([(tree_util.keystr(path), spec)] * tree_util.tree_structure(sub).num_leaves)
  try:
    tree_util.tree_map_with_path(repeat, specs, tree, is_leaf=is_spec)
  except ValueError as e:
    raise ValueError(f"shard_map {what} must be a tree prefix of the corresponding value: "
                     f"got {what}={specs} for value tree {tree_util.tree_structure(tree)}."
                     ) from e
  return out


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = None,
              mesh: Any = None, axis_names: Any = frozenset(), check_vma: bool = True
              ) -> Any:
  """`f` run on each device of `mesh` on its block of each argument: `in_specs` and
  `out_specs` (pytree prefixes of PartitionSpecs) say which mesh axes split which
  dimensions; outputs are assembled from the blocks the same way. Inside `f`, collectives
  (`lax.psum(x, 'i')`) act over the mesh's named axes.

  With `check_vma` (the default) an output whose `out_specs` entry leaves a mesh axis out,
  promising the value is the same on every device along it, must be one the body makes
  so (say by a `psum` over that axis): otherwise tracing raises a ValueError
  (`shard_map_vma`). Derivatives use the same rules either way. Every mesh axis is
  manual: `axis_names` naming a subset is not supported.
  """
  if f is None:
    return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                               axis_names=axis_names, check_vma=check_vma)
  if mesh is None:
    from jaxon._src import mesh as mesh_lib
    mesh = mesh_lib.current_mesh()
    if mesh is None:
      raise ValueError("The context mesh cannot be empty. Use `jaxon.set_mesh(mesh)` or pass "
                       "`mesh=` to shard_map.")
  if axis_names and set(axis_names) != set(mesh.axis_names):
    raise NotImplementedError("shard_map over a subset of the mesh axes (axis_names="
                              f"{set(axis_names)} of {mesh.axis_names}) is not supported")
  if in_specs is None:
    raise NotImplementedError("shard_map needs in_specs (inferring them from the arguments' "
                              "shardings is not supported)")

  traced: dict[Any, tuple] = {}  # signature -> a trace that closed over no tracer

  @traceback_util.inline_api_boundary
  @functools.wraps(f)
  def wrapped(*args: Any) -> Any:
    leaves, in_tree = tree_util.tree_flatten(args)
    avals = tuple(core.get_aval(x) for x in leaves)
    key = (in_tree, avals, core.axis_frames())
    found = traced.get(key)
    if found is None:
      found = _trace(args, leaves, in_tree, avals)
      if not any(isinstance(c, core.Tracer) for c in found[1]):
        traced[key] = found
    closed, consts, in_dims, out_dims, out_tree = found
    outs = shard_map_p.bind(*consts, *leaves, jaxpr=closed, mesh=mesh, in_specs=in_dims,
                            out_specs=out_dims, check_vma=check_vma)
    return out_tree.unflatten(outs)

  def _trace(args: tuple, leaves: list, in_tree: Any, avals: tuple) -> tuple:
    specs = _broadcast_specs(in_specs, args, "in_specs")
    in_dims = tuple(_normalize_spec(s, a.ndim, "in_specs") for (_, s), a in zip(specs, avals))
    block_avals = [_block_aval(a, s, mesh, f"argument {i}")
                   for i, (a, s) in enumerate(zip(avals, in_dims))]
    out_trees: list[Any] = []

    def flat_body(*xs: Any) -> list[Any]:
      out = f(*in_tree.unflatten(xs))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_trees.append((out, out_tree))
      return out_leaves
    with core.extend_axis_env(_axis_frames(mesh)):
      body, consts = pe.trace_to_jaxpr(flat_body, block_avals)
    out_value, out_tree = out_trees[0]
    out_spec_entries = _broadcast_specs(out_specs, out_value, "out_specs")
    out_dims = tuple(_normalize_spec(s, v.aval.ndim, "out_specs")
                     for (_, s), v in zip(out_spec_entries, body.outvars))
    const_dims = tuple(((),) * core.get_aval(c).ndim for c in consts)
    closed = ClosedJaxpr(pe.convert_constvars_jaxpr(body), [])
    if check_vma:
      in_vma = [frozenset(a for d in dims for a in d) for dims in const_dims + in_dims]
      shard_map_vma.check_out_specs(f, mesh, closed.jaxpr, in_vma, out_spec_entries, out_dims)
    return closed, consts, const_dims + in_dims, out_dims, out_tree
  return wrapped
