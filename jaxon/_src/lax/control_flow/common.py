"""What every control-flow primitive shares: tracing a Python function to a closed jaxpr,
and small operations on the jaxprs the primitives carry.

Control flow is initial-style (DESIGN.md): `cond`, `while` and `scan` trace their Python
functions into jaxprs up front and carry them as parameters. `trace_to_jaxpr` is that one
step for all of them. It traces with a `DynamicJaxprTrace`, so anything that stages
differently inside a control-flow body (a custom-derivative function becoming its
initial-style `*_call` form, seed 002) recognises the body by that trace. Values the
function closes over become explicit operands (`consts`), never constants baked into the
jaxpr, so the primitive's rules see and transform them like any other input.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import inspect

from jaxon._src import caches, core, dtypes, tree_util
from jaxon._src import config as config_mod
from jaxon._src.core import ClosedJaxpr, Jaxpr, ShapedArray
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax

# fun -> {(in_tree, avals, flags that change tracing, bound axes): (jaxpr, consts, out_tree)},
# for traces that closed over no tracer: eager control flow in a Python loop then reuses one
# jaxpr, and so one compiled program, instead of tracing and compiling on every call. The
# bound axes belong to the key because a collective's axis size is fixed when it is traced.
_trace_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_trace_cache.clear)


def trace_to_jaxpr(fun: Callable, in_tree: tree_util.PyTreeDef,
                   in_avals: Sequence[ShapedArray]
                   ) -> tuple[ClosedJaxpr, list[Any], tree_util.PyTreeDef]:
  """Traces `fun` (taking the pytree `in_tree` of values with `in_avals`) to a jaxpr.

  Returns (jaxpr, consts, out_tree): the jaxpr takes the consts first, then the flat
  inputs, and returns the flat outputs of the pytree `out_tree`.
  """
  key = (in_tree, tuple(in_avals), config_mod.trace_context(), core.axis_frames())
  try:
    per_fun = _trace_cache.get(fun)
  except TypeError:  # not weakly referenceable
    per_fun = None
  if per_fun is not None and key in per_fun:
    return per_fun[key]
  out_trees: list[tree_util.PyTreeDef] = []

  def flat_fun(*flat_args: Any) -> list[Any]:
    out_leaves, out_tree = tree_util.tree_flatten(fun(*in_tree.unflatten(flat_args)))
    out_trees.append(out_tree)
    return out_leaves
  jaxpr, consts = pe.trace_to_jaxpr(flat_fun, in_avals)
  result = (ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts, out_trees[0])
  if not any(isinstance(c, core.Tracer) for c in consts):
    try:
      _trace_cache.setdefault(fun, {})[key] = result
    except TypeError:
      pass
  return result


# first function's jaxpr -> (the others' jaxprs, what `trace_with_common_consts` made of
# them): when every function's trace comes from `_trace_cache`, the same jaxprs, so that
# an eager `cond` finds its signature and compiled program instead of lowering its
# branches again (600 µs a call).
_common_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_common_cache.clear)


def trace_with_common_consts(funs: Sequence[Callable], in_tree: tree_util.PyTreeDef,
                             in_avals: Sequence[ShapedArray]
                             ) -> tuple[list[ClosedJaxpr], list[Any], list[Any]]:
  """Traces each of `funs` on the same inputs into jaxprs that all take the same consts
  (the union of what each closes over) before the inputs: the branches of a `cond`.
  Returns (jaxprs, consts, out_trees)."""
  traced = [trace_to_jaxpr(f, in_tree, in_avals) for f in funs]
  first, *others = [jaxpr for jaxpr, _, _ in traced]
  seen = _common_cache.get(first)
  if seen is not None and len(seen[0]) == len(others) and all(
      a is b for a, b in zip(seen[0], others)):
    return seen[1]
  result = _with_common_consts(traced)
  _common_cache[first] = (tuple(others), result)
  return result


def _with_common_consts(traced: list[tuple[ClosedJaxpr, list[Any], Any]]
                        ) -> tuple[list[ClosedJaxpr], list[Any], list[Any]]:
  """`trace_with_common_consts` of the traces of its functions."""
  consts: dict[int, Any] = {}
  for _, cs, _ in traced:
    for c in cs:
      consts.setdefault(id(c), c)
  const_avals = [core.get_aval(c) for c in consts.values()]
  jaxprs = []
  for jaxpr, cs, _ in traced:
    own = {id(c): v for c, v in zip(cs, jaxpr.jaxpr.invars)}
    const_vars = [own.get(i) or core.Var(aval) for i, aval in zip(consts, const_avals)]
    inner = jaxpr.jaxpr
    jaxprs.append(ClosedJaxpr(Jaxpr([], const_vars + inner.invars[len(cs):], inner.outvars,
                                    inner.eqns), []))
  return jaxprs, list(consts.values()), [out_tree for _, _, out_tree in traced]


def abstractify(x: Any) -> ShapedArray:
  return core.get_aval(x)


def avals_short(avals: Sequence[ShapedArray]) -> str:
  return ", ".join(a.str_short() for a in avals) or "()"


def check_tree_and_avals(what: str, tree1: tree_util.PyTreeDef,
                         avals1: Sequence[ShapedArray], tree2: tree_util.PyTreeDef,
                         avals2: Sequence[ShapedArray]) -> None:
  """Raises JAX's TypeError when two pytrees of avals differ in structure, shape or dtype
  (weak types may differ)."""
  if tree1 != tree2:
    raise TypeError(f"{what} must have same type structure, got {tree1} and {tree2}.")
  if not all(typematch(a, b) for a, b in zip(avals1, avals2)):
    diffs = [f"{a.str_short()} vs {b.str_short()}" for a, b in zip(avals1, avals2)
             if not typematch(a, b)]
    raise TypeError(f"{what} must have identical types, got\n"
                    f"{tree1.unflatten([a.str_short() for a in avals1])}\nand\n"
                    f"{tree2.unflatten([a.str_short() for a in avals2])}\n"
                    f"(differing leaves: {'; '.join(diffs)}).")


def typematch(a: ShapedArray, b: ShapedArray) -> bool:
  """Equal shape and dtype; weak types may differ."""
  return a.shape == b.shape and a.dtype == b.dtype


def move_binders(jaxpr: ClosedJaxpr, order: Sequence[int]) -> ClosedJaxpr:
  """`jaxpr` with its inputs reordered: input i of the result is input `order[i]`."""
  inner = jaxpr.jaxpr
  return ClosedJaxpr(Jaxpr(inner.constvars, [inner.invars[i] for i in order], inner.outvars,
                           inner.eqns), jaxpr.consts)


def move_outputs(jaxpr: ClosedJaxpr, order: Sequence[int]) -> ClosedJaxpr:
  """`jaxpr` with its outputs reordered: output i of the result is output `order[i]`."""
  inner = jaxpr.jaxpr
  return ClosedJaxpr(Jaxpr(inner.constvars, inner.invars, [inner.outvars[i] for i in order],
                           inner.eqns), jaxpr.consts)


def interleave(groups: Sequence[Sequence[int]], *more: Sequence[Sequence[int]]) -> list[int]:
  """The positions of several groups listed group by group, merging `more` group lists
  in: `interleave([a1, a2], [b1, b2])` is a1 + b1 + a2 + b2."""
  out: list[int] = []
  for parts in zip(groups, *more):
    for p in parts:
      out.extend(p)
  return out


def split_list(xs: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
  """`xs` cut into consecutive pieces of `sizes`, plus the rest."""
  out, start = [], 0
  for n in sizes:
    out.append(list(xs[start:start + n]))
    start += n
  out.append(list(xs[start:]))
  return out


def check_carry_type(what: str, fun: Callable, in_carry: Any,
                     out_tree: tree_util.PyTreeDef, out_avals: Sequence[ShapedArray]) -> None:
  """Raises JAX's TypeError when a loop body's output carry differs from its input carry
  in structure, shape or dtype, naming each differing component and both types."""
  try:
    carry_name = list(inspect.signature(fun).parameters)[0]
  except (ValueError, TypeError, IndexError):
    carry_name = "carry"
  paths_leaves, in_tree = tree_util.tree_flatten_with_path(in_carry)
  if in_tree != out_tree:
    raise TypeError(
        f"{what} function carry input and carry output must have the same pytree "
        f"structure, but they differ:\n\n  * the input carry {carry_name} is a {in_tree}\n"
        f"  * the output carry is a {out_tree}\n\nRevise the function so that the "
        "output carry has the same structure as the input carry.")
  diffs = []
  for (path, leaf), out in zip(paths_leaves, out_avals):
    aval = core.get_aval(leaf)
    if not typematch(aval, out):
      kind = "shapes" if aval.shape != out.shape else "dtypes"
      diffs.append(f"the input carry component {carry_name}{tree_util.keystr(path)} has "
                   f"type {aval.str_short(False)} but the corresponding output carry "
                   f"component has type {out.str_short(False)}, so the {kind} do not "
                   "match")
  if diffs:
    raise TypeError(
        f"{what} function carry input and carry output must have equal types (e.g. "
        "shapes and dtypes of arrays), but they differ:\n\n"
        + "\n".join(f"  * {d}" for d in diffs)
        + "\n\nRevise the function so that all output types match the corresponding "
        "input types.")


def promote_weak_carry(init: Sequence[Any], out_avals: Sequence[ShapedArray]
                       ) -> tuple[list[Any], bool]:
  """Weakly typed initial carries (Python scalars) take the dtype the body gives them, as
  in JAX: `fori_loop(0, n, lambda i, x: x + 1.5, 0)` carries a float. Returns the new
  initial values and whether any changed (the body is then traced again)."""
  init = list(init)
  changed = False
  for i, (x, out) in enumerate(zip(init, out_avals)):
    aval = core.get_aval(x)
    if aval.weak_type and not typematch(aval, out) and aval.shape == out.shape:
      init[i] = lax.convert_element_type(x, dtypes.result_type(x, out.dtype))
      changed = True
  return init, changed


def select_examples(which: Any, *cases: Any) -> Any:
  """`select_n` with a per-example selector along the leading axis of the cases."""
  shape = core.get_aval(cases[0]).shape
  if core.get_aval(which).shape != shape:
    which = lax.broadcast_in_dim(which, shape, (0,))
  return lax.select_n(which, *cases)
