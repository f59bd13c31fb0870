"""Pytrees: nested containers (tuples, lists, dicts, namedtuples, None, OrderedDict,
defaultdict, registered classes) flattened into a list of leaves and a `PyTreeDef` that
rebuilds them.

Flattening sits on every `jit` call, so it uses jaxlib's C++ registry (about 1 µs for a
small dict). jaxon keeps a registry of its own, separate from JAX's, so the two can share a
process (the benchmarks run both). Dict keys are sorted (so `{'b', 'a'}` and `{'a', 'b'}`
have one structure); `OrderedDict` keeps its order; `None` is a node with no children.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from jaxlib._jax import pytree as _pytree

PyTreeDef = _pytree.PyTreeDef
DictKey = _pytree.DictKey
SequenceKey = _pytree.SequenceKey
GetAttrKey = _pytree.GetAttrKey
FlattenedIndexKey = _pytree.FlattenedIndexKey
KeyEntry = Hashable
KeyPath = tuple[KeyEntry, ...]

registry = _pytree.PyTreeRegistry(enable_none=True, enable_tuple=True, enable_namedtuple=True,
                                  enable_list=True, enable_dict=True)
registry.__module__, registry.__name__ = __name__, "registry"  # treedefs pickle by reference
default_registry = registry
# The registry jaxlib's C++ jit flattens arguments with: every node of `registry`, and
# jaxon's concrete Array as a node over its device buffer (`xla/cpp_dispatch.py`).
dispatch_registry = _pytree.PyTreeRegistry(enable_none=True, enable_tuple=True,
                                           enable_namedtuple=True, enable_list=True,
                                           enable_dict=True)

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)
IsLeaf = Callable[[Any], bool] | None


def tree_flatten(tree: Any, is_leaf: IsLeaf = None) -> tuple[list[Any], PyTreeDef]:
  """Flattens `tree` into its leaves and the structure that rebuilds it.

  Args:
    tree: a pytree.
    is_leaf: called on each node before it is flattened; True makes it a leaf.

  Returns:
    `(leaves, treedef)`; `treedef.unflatten(leaves)` gives `tree` back.

  Example:
    >>> tree_flatten((1, {'b': 2, 'a': None}))
    ([1, 2], PyTreeDef((*, {'a': None, 'b': *})))
  """
  return registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
  """Rebuilds the tree described by `treedef` around new `leaves`."""
  return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: IsLeaf = None) -> list[Any]:
  """The leaves of `tree`, in flattening order."""
  return registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: IsLeaf = None) -> PyTreeDef:
  """The `PyTreeDef` of `tree`: everything but its leaves."""
  return registry.flatten(tree, is_leaf)[1]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  """The structure of a tuple whose children have the structures `treedefs`."""
  return _pytree.treedef_tuple(registry, list(treedefs))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  """The structures of the root's children."""
  return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  """True for a single node: a leaf, but also `None` or an empty container (as in JAX)."""
  return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
  return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(iterable: Iterable[Any], is_leaf: IsLeaf = None) -> bool:
  """Whether every element of `iterable` is a leaf (so flattening it changes nothing)."""
  if is_leaf is None:
    return _pytree.all_leaves(registry, iterable)
  items = list(iterable)
  return items == tree_leaves(items, is_leaf)


def build_tree(treedef: PyTreeDef, xs: Any) -> Any:
  """Builds `treedef` from nested iterables of its children (`[[1, 2], [3]]` for
  `[(*, *), {'a': *}]`) instead of a flat list of leaves."""
  return treedef.from_iterable_tree(xs)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
  """`(children, aux_data)` of the root node of `tree`; a ValueError for a leaf."""
  out = registry.flatten_one_level(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[KeyEntry, Any]], Hashable]:
  """`((key, child), ...)` and the aux data of the root node of `tree`; a ValueError for a
  leaf."""
  out = registry.flatten_one_level_with_keys(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def is_tree_node(typ: type) -> bool:
  """Whether instances of `typ` are pytree nodes (built in, registered, or a namedtuple)
  rather than leaves."""
  return registry.is_node(typ)


# ----------------------------------------------------------------------------- mapping

def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None) -> Any:
  """Applies `f` leafwise across `tree` and the trees `rest`.

  Args:
    f: called as `f(x, *xs)` with a leaf of `tree` and the matching parts of `rest`.
    tree: the tree whose structure the result has.
    *rest: trees with `tree`'s structure, or whose structure has it as a prefix (the
      subtree sitting where `tree` has a leaf is passed to `f` whole).
    is_leaf: stops flattening `tree` where it returns True.

  Example:
    >>> tree_map(lambda x, y: x + y, {'a': 1, 'b': (2, 3)}, {'a': 10, 'b': (20, 30)})
    {'a': 11, 'b': (22, 33)}
  """
  leaves, treedef = registry.flatten(tree, is_leaf)
  rest_leaves = _leaves_up_to(treedef, rest, "tree_map")
  return treedef.unflatten(f(*xs) for xs in zip(leaves, *rest_leaves))


def _leaves_up_to(treedef: PyTreeDef, trees: Sequence[Any], caller: str) -> list[list[Any]]:
  """Each of `trees` flattened down to `treedef`'s leaves, or an error that shows both
  structures (jaxlib's own message names only the first place they differ)."""
  out = []
  for i, t in enumerate(trees, start=2):
    try:
      out.append(treedef.flatten_up_to(t))
    except ValueError as e:
      raise ValueError(
          f"{caller}: tree number {i} has structure {tree_structure(t)}, which neither "
          f"matches nor extends the first tree's structure {treedef}: {e}") from None
  return out


def tree_reduce(function: Callable[[T, Any], T], tree: Any, initializer: Any = ...,
                is_leaf: IsLeaf = None) -> T:
  """`functools.reduce(function, tree_leaves(tree), initializer)`."""
  leaves = tree_leaves(tree, is_leaf)
  if initializer is ...:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = ..., is_leaf: IsLeaf = None) -> T:
  """Reduces the leaves of `tree` with an associative `operation` as a balanced tree of
  calls (logarithmic depth, so a traced reduction of many leaves stays shallow); the
  result may differ in rounding from `tree_reduce`'s left fold. `identity` is returned
  for a tree without leaves.

  Example:
    >>> tree_reduce_associative(operator.add, [1, (2, 3), [4, 5, 6]])
    21
  """
  leaves = tree_leaves(tree, is_leaf)
  if not leaves:
    if identity is ...:
      raise TypeError("Must specify identity for parallel reduction of empty sequence.")
    return identity

  def reduce(xs: Sequence[Any]) -> Any:
    if len(xs) == 1:
      return xs[0]
    middle = len(xs) // 2
    return operation(reduce(xs[:middle]), reduce(xs[middle:]))
  return reduce(leaves)


def tree_all(tree: Any, *, is_leaf: IsLeaf = None) -> bool:
  """Whether every leaf is truthy (True for a tree without leaves)."""
  return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
  """Turns a tree of trees inside out: outer[inner] -> inner[outer].

  Example:
    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])

  `inner_treedef=None` takes it from the first inner tree.
  """
  flat, treedef = tree_flatten(pytree_to_transpose)
  if inner_treedef is None:
    inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
  if treedef.num_leaves != inner_size * outer_size:
    raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
  groups = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
  transposed = [outer_treedef.unflatten(column) for column in zip(*groups)]
  return inner_treedef.unflatten(transposed)


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf = None) -> Any:
  """Copies each leaf of `prefix_tree` over the subtree of `full_tree` below it, giving a
  tree with `full_tree`'s structure.

  Example:
    >>> tree_broadcast({'a': 1, 'b': 2}, {'a': (0, 0), 'b': [0]})
    {'a': (1, 1), 'b': [2]}
  """
  full_treedef = tree_structure(full_tree, is_leaf)
  leaves: list[Any] = []

  def repeat(x: Any, subtree: Any) -> None:
    leaves.extend([x] * tree_structure(subtree, is_leaf).num_leaves)

  tree_map(repeat, prefix_tree, full_tree, is_leaf=is_leaf)
  return full_treedef.unflatten(leaves)


# ----------------------------------------------------------------------------- registration

def register_pytree_node(nodetype: type[T], flatten_func: Callable[[T], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], T],
                         flatten_with_keys_func: Callable | None = None) -> None:
  """Teaches the pytree machinery (and so every transformation) about `nodetype`.

  Args:
    nodetype: the class to treat as a container.
    flatten_func: `x -> (children, aux_data)`; aux_data is static and must be hashable.
    unflatten_func: `(aux_data, children) -> x`.
    flatten_with_keys_func: optional `x -> (((key, child), ...), aux_data)` for key paths;
      without it children are keyed by `FlattenedIndexKey`.
  """
  for each in (registry, dispatch_registry):
    each.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type[T], flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None
                              ) -> None:
  """`register_pytree_node` for a class whose children have keys (`GetAttrKey`, ...).

  `flatten_func` is only a faster path for flattening without keys; it must give the same
  children in the same order and the same aux data.
  """
  if flatten_func is None:
    def flatten_func(x):
      key_children, aux = flatten_with_keys(x)
      return [child for _, child in key_children], aux
  for each in (registry, dispatch_registry):
    each.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: Typ) -> Typ:
  """Class decorator: `x.tree_flatten()` and `cls.tree_unflatten(aux, children)`."""
  register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
  return cls


def register_pytree_with_keys_class(cls: Typ) -> Typ:
  """Class decorator: `x.tree_flatten_with_keys()`, `cls.tree_unflatten(aux, children)` and
  optionally `x.tree_flatten()`."""
  flatten_func = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                            cls.tree_unflatten, flatten_func)
  return cls


def register_static(cls: Typ) -> Typ:
  """Registers `cls` as a node without children: its (hashable) instances live in the
  treedef, so transformations treat them as static."""
  register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
  return cls


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
  """Registers a dataclass-like class: `data_fields` are children, `meta_fields` static.

  Used as a bare decorator on a dataclass, the fields are inferred: those declared with
  `field(metadata=dict(static=True))` are meta fields, the other `__init__` fields data.

  Example:
    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Params:
    ...   w: Any
    ...   n: int = dataclasses.field(metadata=dict(static=True))
    >>> tree_leaves(Params(w=1.0, n=3))
    [1.0]
  """
  if (data_fields is None) != (meta_fields is None):
    raise TypeError("register_dataclass: data_fields and meta_fields must both be given, or "
                    f"neither; got {data_fields=} and {meta_fields=}")
  if data_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError(f"register_dataclass({nodetype.__name__}) needs data_fields and "
                      "meta_fields unless the class is a dataclass")
    fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
    meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
  elif dataclasses.is_dataclass(nodetype):
    _check_dataclass_fields(nodetype, {*data_fields, *meta_fields}, drop_fields)
  for each in (registry, dispatch_registry):
    each.register_dataclass_node(nodetype, list(data_fields), list(meta_fields))
  return nodetype


def static(**field_kwargs: Any) -> Any:
  """A `dataclasses.field` marked static, so `register_dataclass` puts it in the treedef
  (aux data) instead of among the leaves. Takes `dataclasses.field`'s arguments."""
  metadata = dict(field_kwargs.pop("metadata", None) or {}, static=True)
  return dataclasses.field(metadata=metadata, **field_kwargs)


def _check_dataclass_fields(nodetype: type, given: set[str], drop_fields: Sequence[str]
                            ) -> None:
  """Unflattening calls `nodetype(**fields)`, so the fields must be exactly the init ones."""
  init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
  if given == init_fields:
    return
  msg = ("data_fields and meta_fields must include all dataclass fields with init=True and "
         "only them.")
  if missing := init_fields - given:
    msg += f" Missing fields: {sorted(missing)}; add them to drop_fields to leave them out."
  if unexpected := given - init_fields:
    msg += f" Unexpected fields: {sorted(unexpected)}."
  raise ValueError(msg)


def _ordereddict_flatten_with_keys(d: collections.OrderedDict) -> tuple[tuple, tuple]:
  return tuple((DictKey(k), v) for k, v in d.items()), tuple(d.keys())


def _defaultdict_flatten_with_keys(d: collections.defaultdict) -> tuple[tuple, tuple]:
  keys = tuple(sorted(d))
  return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


register_pytree_with_keys(
    collections.OrderedDict, _ordereddict_flatten_with_keys,
    lambda keys, values: collections.OrderedDict(zip(keys, values, strict=True)),
    lambda d: (tuple(d.values()), tuple(d.keys())))
register_pytree_with_keys(
    collections.defaultdict, _defaultdict_flatten_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values, strict=True)))


# ----------------------------------------------------------------------------- key paths

def _path_predicate(is_leaf: IsLeaf, is_leaf_takes_path: bool) -> Any:
  """jaxlib's path flattening calls its predicate with (path, node); a user's `is_leaf`
  takes the node alone unless `is_leaf_takes_path`, as in JAX."""
  if is_leaf is None or is_leaf_takes_path:
    return is_leaf
  return lambda _, node: is_leaf(node)


def tree_flatten_with_path(tree: Any, is_leaf: IsLeaf = None, is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
  """Like `tree_flatten`, each leaf paired with its key path from the root.

  Example:
    >>> tree_flatten_with_path({'a': (1, 2)})[0]
    [((DictKey(key='a'), SequenceKey(idx=0)), 1), ((DictKey(key='a'), SequenceKey(idx=1)), 2)]
  """
  return registry.flatten_with_path(tree, _path_predicate(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(tree: Any, is_leaf: IsLeaf = None, is_leaf_takes_path: bool = False
                          ) -> list[tuple[KeyPath, Any]]:
  """`(key path, leaf)` pairs of `tree`."""
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None,
                       is_leaf_takes_path: bool = False) -> Any:
  """`tree_map` whose `f` also receives the key path: `f(path, x, *xs)`."""
  path_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
  rest_leaves = _leaves_up_to(treedef, rest, "tree_map_with_path")
  return treedef.unflatten(f(path, leaf, *xs) for (path, leaf), *xs in
                           zip(path_leaves, *rest_leaves))


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
  """A key path as text: `"['a'][0].x"`, or with `simple=True, separator='/'`: `"a/0/x"`."""
  return separator.join(map(_simple_key_str if simple else str, keys))


def _simple_key_str(key: Any) -> str:
  if isinstance(key, DictKey):
    return str(key.key)
  if isinstance(key, SequenceKey):
    return str(key.idx)
  if isinstance(key, GetAttrKey):
    return key.name
  if isinstance(key, FlattenedIndexKey):
    return str(key.key)
  return str(key)


# ----------------------------------------------------------------------------- Partial

class _StaticCallable:
  """Holds a `functools.partial` given to `Partial` as its function. Unwrapped,
  `functools.partial` would merge the inner partial's arguments into the Partial's, turning
  arguments the caller bound statically into pytree leaves."""

  def __init__(self, fun: Callable):
    self.fun = fun

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    return self.fun(*args, **kwargs)

  def __hash__(self) -> int:
    return hash(self.fun)

  def __eq__(self, other: object) -> bool:
    return self.fun == (other.fun if isinstance(other, _StaticCallable) else other)

  def __repr__(self) -> str:
    return repr(self.fun)


class Partial(functools.partial):
  """A `functools.partial` that is a pytree: its bound arguments are children, the function
  is static (in the treedef), so it can be passed through `jit` and other transformations.

  Example:
    >>> add_one = Partial(operator.add, 1)
    >>> tree_leaves(add_one), add_one(2)
    ([1], 3)
  """

  def __new__(cls, func: Callable, *args: Any, **kwargs: Any) -> Partial:
    if isinstance(func, functools.partial):
      func = _StaticCallable(func)
    return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
