"""JAX's `api_util`: the argument handling transformations share (flattening a function's
pytree arguments and results, fixing static arguments, expanding per-argument options to
per-leaf ones), for libraries that build their own transformations on `WrappedFun`s."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import core, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.linear_util import DebugInfo, Store, WrappedFun, transformation_with_aux2
from jaxon._src.util import safe_map as safe_map


def _flatten_fun(f: Callable, store: Store, in_tree: tree_util.PyTreeDef, *flat: Any) -> Any:
  args, kwargs = tree_util.tree_unflatten(in_tree, flat)
  leaves, out_tree = tree_util.tree_flatten(f(*args, **kwargs))
  store.store(out_tree)
  return leaves


def flatten_fun(fun: WrappedFun, *gen_static_args: Any, use_eq_store: bool = False,
                unk_names: bool = False) -> tuple[WrappedFun, Callable[[], Any]]:
  """`fun` taking the flat leaves of `(args, kwargs)` (of structure `in_tree`, the static
  argument) and returning its results' leaves; the thunk gives their structure.
  (`unk_names`, JAX's request to forget argument names, has nothing to act on: jaxon's
  WrappedFuns carry no per-argument debug names.)"""
  return transformation_with_aux2(_flatten_fun, fun, *gen_static_args,
                                  use_eq_store=use_eq_store)


def _flatten_fun_nokwargs(f: Callable, store: Store, in_tree: tree_util.PyTreeDef,
                          *flat: Any) -> Any:
  leaves, out_tree = tree_util.tree_flatten(f(*tree_util.tree_unflatten(in_tree, flat)))
  store.store(out_tree)
  return leaves


def flatten_fun_nokwargs(fun: WrappedFun, *gen_static_args: Any, use_eq_store: bool = False,
                         unk_names: bool = False) -> tuple[WrappedFun, Callable[[], Any]]:
  """As `flatten_fun`, for `in_tree` the structure of the positional arguments only."""
  return transformation_with_aux2(_flatten_fun_nokwargs, fun, *gen_static_args,
                                  use_eq_store=use_eq_store)


def _with_static_args(f: Callable, dyn_argnums: tuple[int, ...], static: tuple,
                      *dyn_args: Any, **kwargs: Any) -> Any:
  args: list[Any] = list(static)
  for i, x in zip(dyn_argnums, dyn_args):
    args.insert(i, x)
  return f(*args, **kwargs)


def argnums_partial(f: WrappedFun, dyn_argnums: int | Sequence[int], args: Sequence[Any],
                    require_static_args_hashable: bool = True) -> tuple[WrappedFun, tuple]:
  """`f` with the arguments not in `dyn_argnums` fixed to their values in `args`, and the
  dynamic arguments to call it with."""
  dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
  dyn_argnums = tuple(sorted(i % len(args) for i in dyn_argnums))
  static = tuple(x for i, x in enumerate(args) if i not in dyn_argnums)
  if require_static_args_hashable:
    for i, x in enumerate(args):
      if i not in dyn_argnums:
        try:
          hash(x)
        except TypeError:
          raise ValueError(f"Non-hashable static arguments are not supported. An error "
                           f"occurred while trying to hash an object of type {type(x)}, "
                           f"{x}.") from None
  wrapped = f.wrap(_with_static_args, (dyn_argnums, static), None)
  return wrapped, tuple(args[i] for i in dyn_argnums)


def rebase_donate_argnums(donate_argnums: Sequence[int], static_argnums: Sequence[int]
                          ) -> tuple[int, ...]:
  """Donated argument positions counted among the dynamic (non-static) arguments."""
  static = set(static_argnums)
  if static & set(donate_argnums):
    raise ValueError(f"static arguments {sorted(static & set(donate_argnums))} cannot be "
                     "donated")
  return tuple(sorted(i - sum(s < i for s in static) for i in donate_argnums))


def donation_vector(donate_argnums: Sequence[int], donate_argnames: Sequence[str],
                    in_tree: tree_util.PyTreeDef, kws: bool = True) -> tuple[bool, ...]:
  """One flag per leaf of `in_tree` (of `(args, kwargs)`, or `args` without `kws`):
  whether its argument is donated."""
  if kws:
    args_tree, kwargs_tree = tree_util.treedef_children(in_tree)
  else:
    args_tree, kwargs_tree = in_tree, tree_util.tree_structure({})
  flags: list[bool] = []
  for i, arg in enumerate(tree_util.treedef_children(args_tree)):
    flags += [i in donate_argnums] * arg.num_leaves
  kwargs = tree_util.tree_unflatten(kwargs_tree, [None] * kwargs_tree.num_leaves)
  for name in sorted(kwargs):
    sub = tree_util.tree_structure(kwargs[name], is_leaf=lambda x: x is None)
    flags += [name in donate_argnames] * sub.num_leaves
  return tuple(flags)


def flatten_axes(name: str, treedef: tree_util.PyTreeDef, axis_tree: Any, *,
                 kws: bool = False, tupled_args: bool = False) -> list[Any]:
  """`axis_tree`, a prefix of the tree `treedef` describes (None entries covering whole
  subtrees), as one entry per leaf of it; ValueError naming `name` if it is not one."""
  proxy = tree_util.tree_unflatten(treedef, [object()] * treedef.num_leaves)
  out: list[Any] = []
  try:
    tree_util.tree_map(lambda axis, sub: out.extend(
        [axis] * tree_util.tree_structure(sub).num_leaves), axis_tree, proxy,
        is_leaf=lambda x: x is None)
  except ValueError as e:
    raise ValueError(f"{name} specification must be a tree prefix of the corresponding "
                     f"value, got specification {axis_tree} for value tree {treedef}.") from e
  return out


def shaped_abstractify(x: Any) -> ShapedArray:
  """The abstract value of an array-like, with TypeError for anything else."""
  if not core.valid_jaxtype(x) and not isinstance(x, core.Tracer):
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type")
  return core.get_aval(x)


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict[str, Any],
               *, static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
               result_paths_thunk: Callable[[], tuple[str, ...]] | None = None,
               sourceinfo: str | None = None, signature: inspect.Signature | None = None
               ) -> DebugInfo:
  """What `fun`, traced for `traced_for`, is called and where, and the names of its
  non-static flat arguments (`x`, `y['a']`, keyword arguments by name)."""
  if sourceinfo is None:
    code = getattr(inspect.unwrap(fun), "__code__", None)
    name = getattr(fun, "__name__", "<unnamed function>")
    sourceinfo = name if code is None else f"{name} at {code.co_filename}:{code.co_firstlineno}"
  if signature is None:
    try:
      signature = inspect.signature(fun)
    except (TypeError, ValueError):
      signature = None
  static = {i % len(args) for i in static_argnums} if args else set()
  try:
    bound = None if signature is None else signature.bind(*args, **kwargs)
  except TypeError:
    bound = None
  names: list[str] = []
  if bound is None:
    for i, x in enumerate(args):
      if i not in static:
        names += [f"args[{i}]{tree_util.keystr(p)}"
                  for p, _ in tree_util.tree_flatten_with_path(x)[0]]
  else:
    position = {p: i for i, p in enumerate(signature.parameters)}
    for pname, value in bound.arguments.items():
      if position.get(pname, -1) in static or pname in static_argnames:
        continue
      names += [f"{pname}{tree_util.keystr(p)}"
                for p, _ in tree_util.tree_flatten_with_path(value)[0]]
  return DebugInfo(traced_for, sourceinfo, tuple(names), result_paths_thunk)
