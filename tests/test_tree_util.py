"""jaxon.tree_util and jaxon.tree against the behaviour JAX documents: flattening order and
structures, key paths, the registration helpers, errors, and pytrees through jit and vmap."""
from __future__ import annotations

import collections
import dataclasses
import functools
import operator
import pickle
from typing import Any

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import tree_util as tu
from jaxon.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

Point = collections.namedtuple("Point", ["x", "y"])


@tu.register_pytree_node_class
class Box:
  """Registered through the class decorator; `label` is static."""

  def __init__(self, value: Any, label: str = "box"):
    self.value, self.label = value, label

  def tree_flatten(self):
    return (self.value,), self.label

  @classmethod
  def tree_unflatten(cls, label, children):
    return cls(*children, label=label)

  def __eq__(self, other):
    return type(other) is Box and (self.value, self.label) == (other.value, other.label)


@tu.register_pytree_with_keys_class
class Pair:
  def __init__(self, first: Any, second: Any):
    self.first, self.second = first, second

  def tree_flatten_with_keys(self):
    return ((GetAttrKey("first"), self.first), (GetAttrKey("second"), self.second)), None

  @classmethod
  def tree_unflatten(cls, _, children):
    return cls(*children)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
  w: Any
  b: Any
  activation: str = dataclasses.field(default="relu", metadata=dict(static=True))


@functools.partial(tu.register_dataclass, data_fields=["x"], meta_fields=["n"])
@dataclasses.dataclass
class Explicit:
  x: Any
  n: int


@tu.register_static
@dataclasses.dataclass(frozen=True)
class Config:
  depth: int


# ----------------------------------------------------------------------------- flatten

FLATTEN_CASES = [
    # (tree, leaves, treedef repr)
    (1, [1], "PyTreeDef(*)"),
    (None, [], "PyTreeDef(None)"),
    ((), [], "PyTreeDef(())"),
    ((1, {"a": 2}), [1, 2], "PyTreeDef((*, {'a': *}))"),
    ([1, (2, None)], [1, 2], "PyTreeDef([*, (*, None)])"),
    ({"b": 1, "a": 2, "c": [3]}, [2, 1, 3], "PyTreeDef({'a': *, 'b': *, 'c': [*]})"),
    (Point(1, (2, 3)), [1, 2, 3], "PyTreeDef(CustomNode(namedtuple[Point], [*, (*, *)]))"),
    (collections.OrderedDict(b=1, a=2), [1, 2], None),
    (collections.defaultdict(list, b=1, a=2), [2, 1], None),
    (Box(np.float32(3)), [np.float32(3)], None),
    (Params(1.0, 2.0), [1.0, 2.0], None),
    (Config(3), [], None),
    (tu.Partial(operator.add, 1), [1], None),
]


@pytest.mark.parametrize("tree,leaves,treedef_repr", FLATTEN_CASES,
                         ids=[type(c[0]).__name__ for c in FLATTEN_CASES])
def test_flatten_unflatten_round_trip(tree, leaves, treedef_repr):
  got_leaves, treedef = tu.tree_flatten(tree)
  assert got_leaves == leaves, f"leaves of {tree!r}"
  assert tu.tree_leaves(tree) == leaves
  assert tu.tree_structure(tree) == treedef
  assert treedef.num_leaves == len(leaves)
  if treedef_repr is not None:
    assert repr(treedef) == treedef_repr
  rebuilt = tu.tree_unflatten(treedef, leaves)
  assert type(rebuilt) is type(tree)
  assert tu.tree_structure(rebuilt) == treedef
  if not isinstance(tree, tu.Partial):
    assert rebuilt == tree


def test_container_details_survive_round_trip():
  od = collections.OrderedDict(b=1, a=2)
  assert list(tu.tree_map(lambda x: x, od)) == ["b", "a"]  # insertion order kept
  dd = tu.tree_map(lambda x: x * 10, collections.defaultdict(list, a=1))
  assert dd.default_factory is list and dd == {"a": 10}
  assert tu.tree_map(lambda x: x, Params(1, 2, "tanh")).activation == "tanh"
  assert tu.tree_structure(Params(1, 2, "relu")) != tu.tree_structure(Params(1, 2, "tanh"))


def test_dict_keys_are_sorted_and_unsortable_keys_raise():
  assert tu.tree_structure({"b": 1, "a": 2}) == tu.tree_structure({"a": 0, "b": 0})
  assert tu.tree_leaves({2: "two", 1: "one"}) == ["one", "two"]
  with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
    tu.tree_flatten({1: 0, "a": 0})


def test_is_leaf_stops_flattening():
  tree = [(1, 2), {"a": (3, 4)}]
  is_pair = lambda x: isinstance(x, tuple)
  assert tu.tree_leaves(tree, is_leaf=is_pair) == [(1, 2), (3, 4)]
  leaves, treedef = tu.tree_flatten(tree, is_leaf=is_pair)
  assert treedef.num_leaves == 2 and treedef.unflatten(leaves) == tree
  assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
  assert tu.tree_structure(tree, is_leaf=is_pair) == tu.tree_structure([0, {"a": 0}])


# ----------------------------------------------------------------------------- PyTreeDef

def test_treedef_methods():
  treedef = tu.tree_structure((1, {"a": [2, 3]}, None))
  assert treedef.num_leaves == 3
  assert treedef.num_nodes == 7  # tuple, dict, list, None and three leaves
  children = treedef.children()
  assert children == tu.treedef_children(treedef)
  assert [repr(c) for c in children] == ["PyTreeDef(*)", "PyTreeDef({'a': [*, *]})",
                                         "PyTreeDef(None)"]
  assert treedef.unflatten([7, 8, 9]) == (7, {"a": [8, 9]}, None)
  assert treedef.flatten_up_to((1, {"a": [(2, 3), 4]}, None)) == [1, (2, 3), 4]
  assert hash(treedef) == hash(tu.tree_structure((0, {"a": [0, 0]}, None)))
  assert treedef != tu.tree_structure((1, {"a": (2, 3)}, None))
  assert tu.treedef_tuple(children) == treedef
  assert tu.build_tree(treedef, [5, [[6, 7]], []]) == (5, {"a": [6, 7]}, None)
  assert pickle.loads(pickle.dumps(treedef)) == treedef


def test_num_nodes_counts_every_node():
  assert tu.tree_structure(1).num_nodes == 1
  assert tu.tree_structure(None).num_nodes == 1
  assert tu.tree_structure((1, 2)).num_nodes == 3
  assert tu.tree_structure({"a": [1, None]}).num_nodes == 4


def test_treedef_is_leaf_and_all_leaves():
  assert tu.treedef_is_leaf(tu.tree_structure(1))
  assert tu.treedef_is_leaf(tu.tree_structure(None))  # one node, as in JAX
  assert not tu.treedef_is_leaf(tu.tree_structure([1, 2]))
  assert tu.all_leaves([1, np.zeros(2), "a"])
  assert not tu.all_leaves([1, (2,)])
  assert not tu.all_leaves([None])
  assert tu.all_leaves([(1, 2)], is_leaf=lambda x: isinstance(x, tuple))


def test_flatten_one_level():
  children, aux = tu.flatten_one_level({"b": [1, 2], "a": 3})
  assert list(children) == [3, [1, 2]] and list(aux) == ["a", "b"]
  children, aux = tu.flatten_one_level(Box(1, "lbl"))
  assert list(children) == [1] and aux == "lbl"
  with pytest.raises(ValueError, match="can't tree-flatten"):
    tu.flatten_one_level(1.0)


# ----------------------------------------------------------------------------- map and friends

def test_tree_map_several_trees_and_prefix():
  out = tu.tree_map(lambda x, y, z: x + y * z, {"a": 1, "b": (2, 3)}, {"a": 10, "b": (20, 30)},
                    {"a": 1, "b": (1, 2)})
  assert out == {"a": 11, "b": (22, 63)}
  # the first tree is a prefix of the second: the subtree is passed whole
  assert tu.tree_map(lambda x, sub: (x, sub), [1, 2], [(3, 4), 5]) == [(1, (3, 4)), (2, 5)]
  assert tu.tree_map(lambda x: x, None) is None
  assert tu.tree_map(lambda x: -x, Box(2, "k")) == Box(-2, "k")


def test_tree_map_is_leaf():
  tree = {"a": (1, 2), "b": (3, 4)}
  out = tu.tree_map(lambda t: sum(t), tree, is_leaf=lambda x: isinstance(x, tuple))
  assert out == {"a": 3, "b": 7}


@pytest.mark.parametrize("first,second", [
    ((1, 2), [1, 2]),
    ({"a": 1}, {"b": 1}),
    ((1, 2), (1, 2, 3)),
    ([1, None], [1, 2]),
    (Box(1, "x"), Box(1, "y")),
])
def test_tree_map_mismatch_names_both_structures(first, second):
  with pytest.raises(ValueError) as info:
    tu.tree_map(lambda x, y: x, first, second)
  message = str(info.value)
  assert repr(tu.tree_structure(first)) in message, message
  assert repr(tu.tree_structure(second)) in message, message
  with pytest.raises(ValueError, match="PyTreeDef"):
    tu.tree_map_with_path(lambda p, x, y: x, first, second)


def test_tree_reduce_all_transpose():
  assert tu.tree_reduce(operator.add, {"a": 1, "b": [2, 3]}) == 6
  assert tu.tree_reduce(operator.add, [], 5) == 5
  assert tu.tree_reduce(operator.add, [(1, 2)], initializer=(0,),
                        is_leaf=lambda x: isinstance(x, tuple)) == (0, 1, 2)
  with pytest.raises(TypeError):
    tu.tree_reduce(operator.add, [])
  assert tu.tree_all([True, {"a": 1}]) and not tu.tree_all([True, (0,)]) and tu.tree_all(())
  assert tu.tree_all([(), ()], is_leaf=lambda x: x == ()) is False
  outer, inner = tu.tree_structure([0, 0, 0]), tu.tree_structure({"a": 0, "b": 0})
  tree = [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
  want = {"a": [1, 3, 5], "b": [2, 4, 6]}
  assert tu.tree_transpose(outer, inner, tree) == want
  assert tu.tree_transpose(outer, None, tree) == want
  with pytest.raises(TypeError, match="Mismatch"):
    tu.tree_transpose(outer, tu.tree_structure((0, 0, 0)), tree)


def test_tree_broadcast():
  assert tu.tree_broadcast({"a": 1, "b": 2}, {"a": (0, 0), "b": [0]}) == {"a": (1, 1), "b": [2]}
  assert tu.tree_broadcast(7, [(0, 0), None]) == [(7, 7), None]
  with pytest.raises(ValueError):
    tu.tree_broadcast((1, 2), (0, 0, 0))


# ----------------------------------------------------------------------------- key paths

def test_key_paths_of_every_node_kind():
  tree = {"d": [Point(1, 2)], "o": collections.OrderedDict(z=3),
          "p": Pair(4, 5), "b": Box(6), "c": Params(7, 8)}
  paths = [path for path, _ in tu.tree_leaves_with_path(tree)]
  assert [tu.keystr(p) for p in paths] == [
      "['b'][<flat index 0>]", "['c'].w", "['c'].b", "['d'][0].x", "['d'][0].y",
      "['o']['z']", "['p'].first", "['p'].second"]
  assert paths[0] == (DictKey("b"), FlattenedIndexKey(0))
  assert paths[3] == (DictKey("d"), SequenceKey(0), GetAttrKey("x"))
  assert tu.tree_leaves_with_path(collections.defaultdict(int, b=1, a=2)) == [
      ((DictKey("a"),), 2), ((DictKey("b"),), 1)]
  pairs, treedef = tu.tree_flatten_with_path(tree)
  assert treedef == tu.tree_structure(tree)
  assert [leaf for _, leaf in pairs] == tu.tree_leaves(tree)


def test_keystr_options_and_key_classes():
  path = (DictKey("a"), SequenceKey(0), GetAttrKey("x"), FlattenedIndexKey(2))
  assert tu.keystr(path) == "['a'][0].x[<flat index 2>]"
  assert tu.keystr(path, simple=True, separator="/") == "a/0/x/2"
  assert tu.keystr((DictKey(1),), simple=True) == "1"
  assert tu.keystr(("raw", 3), separator=".") == "raw.3"
  assert DictKey("a") == DictKey("a") and hash(SequenceKey(1)) == hash(SequenceKey(1))
  assert (DictKey("a").key, SequenceKey(1).idx, GetAttrKey("n").name,
          FlattenedIndexKey(4).key) == ("a", 1, "n", 4)


def test_tree_map_with_path():
  out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), {"a": [1]}, {"a": [2]})
  assert out == {"a": [("['a'][0]", 3)]}


# ----------------------------------------------------------------------------- registration

def test_register_pytree_node_with_and_without_keys():
  class Node:
    def __init__(self, a, b):
      self.a, self.b = a, b

  class KeyedNode(Node):
    pass

  tu.register_pytree_node(Node, lambda n: ((n.a, n.b), None), lambda _, c: Node(*c))
  tu.register_pytree_with_keys(
      KeyedNode, lambda n: (((GetAttrKey("a"), n.a), (GetAttrKey("b"), n.b)), "aux"),
      lambda aux, c: KeyedNode(*c))
  assert tu.tree_leaves([Node(1, (2, 3))]) == [1, 2, 3]
  assert tu.tree_leaves(KeyedNode(1, 2)) == [1, 2]
  assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(KeyedNode(1, 2))] == [".a", ".b"]
  assert "aux" in repr(tu.tree_structure(KeyedNode(1, 2)))
  with pytest.raises(ValueError, match="Duplicate"):
    tu.register_pytree_node(Node, lambda n: ((), None), lambda _, c: Node(0, 0))


def test_register_dataclass_forms_and_errors():
  assert tu.tree_leaves(Explicit(x=[1, 2], n=3)) == [1, 2]
  assert tu.tree_map(lambda v: v + 1, Explicit(x=1, n=5)) == Explicit(x=2, n=5)
  assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Params(1, 2))] == [".w", ".b"]

  @dataclasses.dataclass
  class Partly:
    a: Any
    b: Any
  with pytest.raises(ValueError, match="Missing fields"):
    tu.register_dataclass(Partly, data_fields=["a"], meta_fields=[])
  with pytest.raises(TypeError, match="both"):
    tu.register_dataclass(Partly, data_fields=["a"])

  class NotADataclass:
    pass
  with pytest.raises(TypeError, match="dataclass"):
    tu.register_dataclass(NotADataclass)


def test_register_dataclass_drop_fields_and_init_false():
  @dataclasses.dataclass
  class WithDerived:
    a: Any
    derived: Any = dataclasses.field(init=False, default=0)
  tu.register_dataclass(WithDerived)
  assert tu.tree_leaves(WithDerived(5)) == [5]

  @dataclasses.dataclass
  class Dropped:
    a: Any
    cache: Any = None
  tu.register_dataclass(Dropped, data_fields=["a"], meta_fields=[], drop_fields=["cache"])
  assert tu.tree_map(lambda x: x, Dropped(1, cache="c")) == Dropped(1, None)


def test_register_static():
  assert tu.tree_leaves([Config(2), 1]) == [1]
  assert tu.tree_structure(Config(2)) != tu.tree_structure(Config(3))
  assert tu.tree_map(lambda x: x, Config(2)) == Config(2)


# ----------------------------------------------------------------------------- Partial

def test_partial_is_a_pytree_with_static_function():
  p = tu.Partial(operator.add, 1)
  assert p(2) == 3 and isinstance(p, functools.partial)
  leaves, treedef = tu.tree_flatten(tu.Partial(max, 1, key=abs))
  assert leaves == [1, abs]
  assert tu.tree_unflatten(treedef, [-5, abs])(3) == -5
  assert tu.tree_structure(tu.Partial(operator.add, 1)) == tu.tree_structure(
      tu.Partial(operator.add, 2))
  assert tu.tree_structure(tu.Partial(operator.add)) != tu.tree_structure(
      tu.Partial(operator.sub))


def test_partial_of_a_partial_keeps_inner_arguments_static():
  inner = functools.partial(operator.add, 10)
  p = tu.Partial(inner)
  assert tu.tree_leaves(p) == [] and p(1) == 11
  nested = tu.Partial(tu.Partial(operator.add, 1), 2)
  assert tu.tree_leaves(nested) == [2] and nested() == 3
  assert tu.tree_map(lambda x: x * 10, nested)() == 21


def test_partial_through_jit():
  @jaxon.jit
  def call(f, x):
    return f(x)
  scale = tu.Partial(jnp.multiply, jnp.float32(3))
  np.testing.assert_allclose(call(scale, jnp.arange(3.0)), [0.0, 3.0, 6.0])
  np.testing.assert_allclose(call(tu.Partial(jnp.multiply, jnp.float32(2)), 1.0), 2.0)
  returned = jaxon.jit(lambda a: tu.Partial(jnp.add, a))(jnp.float32(1))
  assert isinstance(returned, tu.Partial)
  np.testing.assert_allclose(returned(2.0), 3.0)


# ----------------------------------------------------------------------------- transforms

def test_jit_grad_vmap_over_registered_types():
  def loss(params, x):
    return jnp.sum(jnp.tanh(x @ params.w + params.b))

  params = Params(jnp.ones((3, 2)), jnp.zeros(2), "tanh")
  x = jnp.arange(6.0).reshape(2, 3) / 6
  np.testing.assert_allclose(jaxon.jit(loss)(params, x), loss(params, x), rtol=1e-6)
  grads = jaxon.grad(loss)(params, x)
  assert isinstance(grads, Params) and grads.activation == "tanh"
  assert grads.w.shape == (3, 2) and grads.b.shape == (2,)
  want_b = np.sum(1 - np.tanh(np.asarray(x) @ np.ones((3, 2))) ** 2, axis=0)
  np.testing.assert_allclose(grads.b, want_b, rtol=1e-5)

  boxes = Box(jnp.arange(6.0).reshape(3, 2), "stack")
  out = jaxon.vmap(lambda b: Box(b.value * 2, b.label))(boxes)
  assert isinstance(out, Box) and out.label == "stack"
  np.testing.assert_allclose(out.value, np.arange(6.0).reshape(3, 2) * 2)
  pairs = jaxon.vmap(lambda p: p.first + p.second)(Pair(jnp.ones(4), jnp.arange(4.0)))
  np.testing.assert_allclose(pairs, np.arange(4.0) + 1)


def test_jit_static_structures_are_part_of_the_cache_key():
  traces = []

  @jaxon.jit
  def f(tree):
    traces.append(1)
    return tu.tree_map(lambda v: v + 1, tree)

  f({"a": jnp.ones(2), "cfg": Config(1)})
  f({"a": jnp.zeros(2), "cfg": Config(1)})
  assert len(traces) == 1
  out = f({"a": jnp.ones(2), "cfg": Config(2)})
  assert len(traces) == 2 and out["cfg"] == Config(2)
  od = f(collections.OrderedDict(b=jnp.ones(1), a=jnp.zeros(1)))
  assert list(od) == ["b", "a"]
  np.testing.assert_allclose(od["a"], [1.0])


# ----------------------------------------------------------------------------- jaxon.tree

def test_tree_module_aliases():
  tree = {"a": [1, 2], "b": (3,)}
  assert jaxon.tree.leaves(tree) == [1, 2, 3]
  assert jaxon.tree.map(lambda x: x * 2, tree) == {"a": [2, 4], "b": (6,)}
  leaves, treedef = jaxon.tree.flatten(tree)
  assert jaxon.tree.unflatten(treedef, leaves) == tree
  assert jaxon.tree.structure(tree) == treedef
  assert jaxon.tree.reduce(operator.add, tree) == 6
  assert jaxon.tree.all(tree)
  assert jaxon.tree.transpose(jaxon.tree.structure([0, 0]), None, [(1, 2), (3, 4)]) == (
      [1, 3], [2, 4])
  assert jaxon.tree.leaves_with_path([5])[0] == ((SequenceKey(0),), 5)
  assert jaxon.tree.flatten_with_path([5])[1] == jaxon.tree.structure([0])
  assert jaxon.tree.map_with_path(lambda p, x: len(p), tree) == {"a": [2, 2], "b": (2,)}
  assert jaxon.tree.broadcast(0, [1, (2,)]) == [0, (0,)]


def test_path_functions_call_is_leaf_with_the_node_unless_told_it_takes_the_path():
  """JAX calls `is_leaf(node)`; `is_leaf_takes_path=True` makes it `is_leaf(path, node)`."""
  tree = {"a": 1, "b": (2, 3)}
  leaves = tu.tree_leaves_with_path(tree, is_leaf=lambda x: isinstance(x, tuple))
  assert [leaf for _, leaf in leaves] == [1, (2, 3)]
  seen = []
  tu.tree_flatten_with_path(
      tree, is_leaf=lambda path, x: seen.append(path) or False, is_leaf_takes_path=True)
  assert (DictKey("b"),) in seen
  same = tu.tree_map_with_path(lambda p, x: x, tree, is_leaf=lambda x: isinstance(x, tuple))
  assert same == tree
