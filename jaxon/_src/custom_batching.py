"""`custom_vmap`: a function whose batched version is written by hand (JAX's
`jax.custom_batching`).

Calling the function stages one `custom_vmap_call` equation holding its traced jaxpr and
the user's rule. Evaluated, compiled or differentiated, the equation is the jaxpr; only
`vmap` differs: its batching rule calls the user's rule with the batched arguments instead
of batching the jaxpr equation by equation.

Differences from JAX 0.10.2, both on purpose: forward mode differentiates the function's
own jaxpr, so `vmap` of a `jvp` batches that jaxpr rather than calling the rule (same
values when the rule agrees with the function); and reverse mode works (through that same
jaxpr), where JAX refuses to linearize a custom_vmap function.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import core, traceback_util, tree_util
from jaxon._src.core import ClosedJaxpr
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax.control_flow import common
from jaxon._src.lax.control_flow.loops import map as lax_map

VmapRule = Callable[..., tuple[Any, Any]]


class custom_vmap:  # noqa: N801 (JAX's name)
  """A function with a hand-written batching rule, set with `def_vmap`.

  The rule is called as `rule(axis_size, in_batched, *args)`: `in_batched` mirrors `args`
  with a bool per array (whether it has the batch axis, always in front), and the rule
  returns `(out, out_batched)`, `out_batched` mirroring `out` likewise.

  Example:
    >>> @custom_vmap
    ... def f(x):
    ...   return jnp.sin(x)
    >>> @f.def_vmap
    ... def f_vmap(axis_size, in_batched, x):
    ...   return jnp.sin(x), in_batched[0]
  """

  def __init__(self, fun: Callable):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule: VmapRule | None = None

  def def_vmap(self, vmap_rule: VmapRule) -> VmapRule:
    self.vmap_rule = vmap_rule
    return vmap_rule

  @traceback_util.api_boundary
  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    if kwargs:
      raise TypeError(f"custom_vmap function {_name(self.fun)} takes positional arguments "
                      f"only; got keyword arguments {sorted(kwargs)}.")
    if self.vmap_rule is None:
      raise AttributeError(f"No batching rule defined for custom_vmap function "
                           f"{_name(self.fun)} using def_vmap.")
    flat, args_tree = tree_util.tree_flatten(args)
    in_avals = [common.abstractify(x) for x in flat]
    call, consts, out_tree = common.trace_to_jaxpr(lambda *a: self.fun(*a), args_tree,
                                                   in_avals)
    # As JAX prints it: the operands are the pytree (closed-over values, arguments).
    in_tree = tree_util.tree_structure((list(consts), args))
    outs = custom_vmap_call_p.bind(*consts, *flat, call=call, rule=self.vmap_rule,
                                   in_tree=in_tree, out_tree=out_tree)
    return out_tree.unflatten(outs)


def _name(f: Any) -> str:
  return getattr(f, "__name__", type(f).__name__)


def _custom_vmap_impl(*args: Any, call: ClosedJaxpr, **_: Any) -> list[Any]:
  return core.jaxpr_as_fun(call)(*args)


def _custom_vmap_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                       dims: Sequence[int | None], *, call: ClosedJaxpr, rule: VmapRule,
                       in_tree: tree_util.PyTreeDef, out_tree: tree_util.PyTreeDef
                       ) -> tuple[list, list]:
  """Calls the rule on the arguments, each batched one with its batch axis in front, and
  checks that its answer has the function's output types (batched or not, as it says)."""
  name = _name(rule)
  num_consts = in_tree.children()[0].num_leaves
  if any(d is not batching.not_mapped for d in dims[:num_consts]):
    raise NotImplementedError(
        f"a custom_vmap function closes over a value that is batched by this vmap; pass it "
        f"as an argument so that its batching rule {name} sees it.")
  args_tree = in_tree.children()[1]
  args = [batching.moveaxis(x, d, 0) if d is not batching.not_mapped else x
          for x, d in zip(vals[num_consts:], dims[num_consts:])]
  in_batched = args_tree.unflatten([d is not batching.not_mapped for d in dims[num_consts:]])
  result = rule(axis_data.size, list(in_batched), *args_tree.unflatten(args))
  if not (isinstance(result, (tuple, list)) and len(result) == 2):
    raise TypeError(f"custom_vmap rule {name} must return a pair (out, out_batched); got "
                    f"{type(result).__name__}.")
  outs, rule_out_tree = tree_util.tree_flatten(result[0])
  if rule_out_tree != out_tree:
    raise ValueError(f"custom_vmap rule {name} returned outputs of structure "
                     f"{rule_out_tree}, but the function returns {out_tree}.")
  out_batched, batched_tree = tree_util.tree_flatten(result[1])
  if batched_tree != out_tree:
    raise ValueError(f"custom_vmap rule {name} must return out_batched with the structure "
                     f"of its outputs, {out_tree}; got {batched_tree}.")
  for out, is_batched, aval in zip(outs, out_batched, call.out_avals):
    want = (axis_data.size, *aval.shape) if is_batched else aval.shape
    got = core.get_aval(out)
    if (got.shape, got.dtype) != (want, aval.dtype):
      marked = "batched" if is_batched else "unbatched"
      raise ValueError(f"custom_vmap rule {name} returned an output of type "
                       f"{got.str_short()} marked {marked}, but the function's output "
                       f"is {aval.str_short()} (batched: with a leading axis of size "
                       f"{axis_data.size}).")
  return outs, [0 if b else batching.not_mapped for b in out_batched]


def _custom_vmap_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, call: ClosedJaxpr,
                     **_: Any) -> tuple[list, list]:
  return ad.jvp_flat(core.jaxpr_as_fun(call), primals, tangents)


custom_vmap_call_p = core.Primitive("custom_vmap_call")
custom_vmap_call_p.multiple_results = True
custom_vmap_call_p.def_impl(_custom_vmap_impl)
custom_vmap_call_p.def_abstract_eval(lambda *avals, call, **_: call.out_avals)
batching.fancy_primitive_batchers[custom_vmap_call_p] = _custom_vmap_batch
ad.primitive_jvps[custom_vmap_call_p] = _custom_vmap_jvp
mlir.register_lowering(custom_vmap_call_p, lambda ctx, *args, call, **_:
                       mlir.closed_jaxpr_subcomp(ctx.module_context, call, args))


def sequential_vmap(f: Callable) -> custom_vmap:
  """`f` whose `vmap` runs it once per example in a loop (`lax.map`) instead of batching
  its operations: for functions with no batched form, or whose batched form costs more
  memory than the loop."""
  fun = custom_vmap(f)

  @fun.def_vmap
  def loop_over_examples(axis_size: int, in_batched: Any, *args: Any) -> tuple[Any, Any]:
    del axis_size
    flat, in_tree = tree_util.tree_flatten(args)
    batched = tree_util.tree_leaves(in_batched)
    mapped = [x for x, b in zip(flat, batched) if b]

    def one_example(xs: list[Any]) -> Any:
      xs_iter = iter(xs)
      return f(*in_tree.unflatten([next(xs_iter) if b else x for x, b in zip(flat, batched)]))
    out = lax_map(one_example, mapped)
    return out, tree_util.tree_map(lambda _: True, out)
  return fun
