"""Pytrees: nested containers (tuples, lists, dicts, namedtuples, None, registered classes)
flattened into a list of leaves and a `PyTreeDef` that rebuilds them.

Flattening sits on every `jit` call, so it uses jaxlib's C++ registry (about 1 µs for a
small dict). jaxon keeps a registry of its own, separate from JAX's, so the two can share a
process (the benchmarks run both).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from jaxlib._jax import pytree as _pytree

PyTreeDef = _pytree.PyTreeDef
DictKey = _pytree.DictKey
SequenceKey = _pytree.SequenceKey
GetAttrKey = _pytree.GetAttrKey
FlattenedIndexKey = _pytree.FlattenedIndexKey
KeyEntry = Any
KeyPath = tuple[KeyEntry, ...]

registry = _pytree.PyTreeRegistry(enable_none=True, enable_tuple=True, enable_namedtuple=True,
                                  enable_list=True, enable_dict=True)

T = TypeVar("T")


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
  """Flattens `tree` into its leaves and the structure that rebuilds it."""
  return registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
  return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
  return registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
  return registry.flatten(tree, is_leaf)[1]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  return _pytree.treedef_tuple(registry, list(treedefs))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(iterable: Iterable[Any]) -> bool:
  return _pytree.all_leaves(registry, iterable)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Applies `f` leafwise; `rest` are trees with `tree`'s structure (or a prefix-compatible
  structure whose subtrees at the leaves of `tree` are passed whole)."""
  leaves, treedef = registry.flatten(tree, is_leaf)
  all_leaves_ = [leaves] + [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten(f(*xs) for xs in zip(*all_leaves_))


def tree_reduce(function: Callable[[T, Any], T], tree: Any, initializer: Any = ...,
                is_leaf: Callable[[Any], bool] | None = None) -> T:
  leaves = tree_leaves(tree, is_leaf)
  if initializer is ...:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
  return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef, pytree_to_transpose: Any
                   ) -> Any:
  """Turns a tree of trees inside out: outer[inner] -> inner[outer]."""
  flat, treedef = tree_flatten(pytree_to_transpose)
  inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
  expected = outer_treedef.compose(inner_treedef)
  if treedef.num_leaves != inner_size * outer_size or treedef != expected:
    raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
  groups = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
  transposed = [outer_treedef.unflatten(col) for col in zip(*groups)]
  return inner_treedef.unflatten(transposed)


# ----------------------------------------------------------------------------- registration

def register_pytree_node(nodetype: type[T], flatten_func: Callable[[T], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], T],
                         flatten_with_keys_func: Callable | None = None) -> None:
  """Teaches the pytree machinery (and so every transformation) about `nodetype`."""
  registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type[T], flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None
                              ) -> None:
  if flatten_func is None:
    def flatten_func(x):
      key_children, aux = flatten_with_keys(x)
      return [child for _, child in key_children], aux
  registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type[T]) -> type[T]:
  """Class decorator: `cls.tree_flatten()` and `cls.tree_unflatten(aux, children)`."""
  register_pytree_node(cls, cls.tree_flatten, cls.tree_unflatten)
  return cls


def register_dataclass(nodetype: type[T], data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None) -> type[T]:
  """Registers a dataclass whose `data_fields` are children and `meta_fields` static."""
  if data_fields is None or meta_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError(f"register_dataclass({nodetype.__name__}) needs data_fields and "
                      "meta_fields unless the class is a dataclass")
    meta_fields = [f.name for f in dataclasses.fields(nodetype)
                   if f.metadata.get("static", False)] if meta_fields is None else meta_fields
    data_fields = [f.name for f in dataclasses.fields(nodetype)
                   if f.name not in meta_fields] if data_fields is None else data_fields
  registry.register_dataclass_node(nodetype, list(data_fields), list(meta_fields))
  return nodetype


# ----------------------------------------------------------------------------- key paths

def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
  return registry.flatten_with_path(tree, is_leaf)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                          ) -> list[tuple[KeyPath, Any]]:
  return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[[Any], bool] | None = None) -> Any:
  path_leaves, treedef = tree_flatten_with_path(tree, is_leaf)
  rest_leaves = [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten(f(path, leaf, *xs) for (path, leaf), *xs in
                           zip(path_leaves, *rest_leaves))


def keystr(keys: KeyPath) -> str:
  """`(DictKey('a'), SequenceKey(0))` -> `"['a'][0]"`."""
  return "".join(_key_str(k) for k in keys)


def _key_str(key: Any) -> str:
  if isinstance(key, DictKey):
    return f"[{key.key!r}]"
  if isinstance(key, SequenceKey):
    return f"[{key.idx}]"
  if isinstance(key, GetAttrKey):
    return f".{key.name}"
  if isinstance(key, FlattenedIndexKey):
    return f"[<flat index {key.key}>]"
  return str(key)


# ----------------------------------------------------------------------------- Partial

class Partial(functools.partial):
  """A `functools.partial` that is a pytree: its bound arguments are leaves, the function
  is static, so it can be passed through `jit` and other transformations."""

  def __new__(klass, func, *args, **kw):
    if isinstance(func, functools.partial):
      args = (*func.args, *args)
      kw = {**func.keywords, **kw}
      func = func.func
    return super().__new__(klass, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)
