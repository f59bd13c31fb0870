"""Rule-registration helpers JAX's `jax.interpreters.ad` and `batching` offer to code
defining primitives outside the library, written over jaxon's rule tables."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import core
from jaxon._src import linear_util as lu
from jaxon._src.interpreters import ad, batching, structural


def add_jaxvals(x: Any, y: Any) -> Any:
  """The sum of two tangent values (`add_any`)."""
  return ad.add_jaxvals_p.bind(x, y)


def get_primitive_transpose(p: core.Primitive) -> Callable:
  try:
    return ad.primitive_transposes[p]
  except KeyError as err:
    raise NotImplementedError(
        f"Transpose rule (for reverse-mode differentiation) for '{p.name}' not "
        "implemented") from err


def defjvp2(primitive: core.Primitive, *jvp_rules: Callable | None) -> None:
  """As `defjvp`, but each rule also receives the primal output:
  `rule(tangent, primal_out, *primals, **params)`."""
  if primitive.multiple_results:
    raise ValueError(f"defjvp2 takes a primitive with one result, not {primitive.name}")

  def rule(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple:
    primal_out = primitive.bind(*primals, **params)
    tangent_out = ad.Zero(core.get_aval(primal_out).to_tangent_aval())
    for jvp, t in zip(jvp_rules, tangents):
      if jvp is not None and type(t) is not ad.Zero:
        tangent_out = ad.add_tangents(tangent_out, jvp(t, primal_out, *primals, **params))
    return primal_out, tangent_out
  ad.primitive_jvps[primitive] = rule


def deflinear2(primitive: core.Primitive, transpose_rule: Callable) -> None:
  """A primitive linear in its operands, with `transpose_rule(ct, *operands, **params)`
  (undefined operands are `UndefinedPrimal`s); a zero cotangent transposes to zeros."""
  def transpose(ct: Any, *args: Any, **params: Any) -> Any:
    if type(ct) is ad.Zero:
      return [None] * len(args)
    return transpose_rule(ct, *args, **params)
  ad.deflinear(primitive, transpose)


def defbilinear(prim: core.Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
  """A primitive linear in each of its two operands separately (a product): `lhs_rule(ct,
  x, y, **params)` is the cotangent of x when x is the linear one, `rhs_rule` of y."""
  ad.defjvp(prim, lambda g, x, y, **kw: prim.bind(g, y, **kw),
            lambda g, x, y, **kw: prim.bind(x, g, **kw))

  def transpose(ct: Any, x: Any, y: Any, **params: Any) -> list[Any]:
    if ad.is_undefined_primal(x):
      return [lhs_rule(ct, x, y, **params), None]
    return [None, rhs_rule(ct, x, y, **params)]
  ad.primitive_transposes[prim] = transpose


def broadcast(x: Any, sz: int, axis: int, mesh_axis: Any = None) -> Any:
  """`x` with a new axis of size `sz` at position `axis`, repeating it."""
  aval = core.get_aval(x)
  shape = list(aval.shape)
  shape.insert(axis, sz)
  dims = [d for d in range(len(shape)) if d != axis]
  return structural.broadcast_in_dim(x, tuple(shape), dims)


def defreducer(prim: core.Primitive, ident: Callable[..., Any]) -> None:
  """Batching for a reduction with an `axes` param: the batch axis moves to the front
  and the reduced axes shift past it. (`ident` is the reduction's identity, unused: a
  batched reduction never pads.)"""
  def rule(vals: Sequence[Any], dims: Sequence[int | None], *, axes: Sequence[int],
           **params: Any) -> tuple[Any, int | None]:
    (x,), (d,) = vals, dims
    if d is None:
      return prim.bind(x, axes=axes, **params), None
    x = batching.moveaxis(x, d, 0)
    return prim.bind(x, axes=tuple(a + 1 for a in axes), **params), 0
  batching.primitive_batchers[prim] = rule


def _jvp_transform(f: Callable, instantiate: bool | Sequence[bool], primals: Sequence[Any],
                   tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
  primals_out, tangents_out = ad.jvp_flat(lambda *xs: f(*xs), primals, tangents)
  flags = ([instantiate] * len(tangents_out) if isinstance(instantiate, bool)
           else list(instantiate))
  return primals_out, [ad.instantiate_zeros(t) if inst else t
                       for t, inst in zip(tangents_out, flags)]


def _jvp_transform_with_aux(f: Callable, store: lu.Store, instantiate: bool | Sequence[bool],
                            primals: Sequence[Any], tangents: Sequence[Any]
                            ) -> tuple[list[Any], list[Any]]:
  aux_box: list[Any] = []

  def outputs_only(*xs: Any) -> Any:
    outs, aux = f(*xs)
    aux_box.append(aux)
    return outs
  result = _jvp_transform(outputs_only, instantiate, primals, tangents)
  store.store(aux_box[0])
  return result


def jvp(fun: lu.WrappedFun, has_aux: bool = False, instantiate: bool | Sequence[bool] = True,
        transform_stack: bool = True) -> Any:
  """`fun` (a WrappedFun, flat in and out) as a WrappedFun of `(primals, tangents)`
  returning `(primals_out, tangents_out)`; tangents that are symbolically zero stay
  `Zero`s unless `instantiate` says so. With `has_aux`, `fun` returns `(outs, aux)` and a
  thunk giving `aux` comes back too (JAX's internal `ad.jvp`)."""
  if has_aux:
    return lu.transformation_with_aux2(_jvp_transform_with_aux, fun, instantiate)
  return lu.transformation2(_jvp_transform, fun, instantiate)
