"""The core: abstract values, primitives and traces, jaxprs as data (evaluate, check,
close over constants), tracers inside `jit`, and the pytrees every transformation flattens."""
from __future__ import annotations

import dataclasses
import threading
from collections import namedtuple
from typing import Any

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import core, errors, jit, make_jaxpr
from jaxon import tree_util as tu
from jaxon._src import core as core_internal

# ----------------------------------------------------------------------------- abstract values

AVAL_CASES = [
    # (id, value, expected aval)
    ("py_int", 1, core.ShapedArray((), np.int32, weak_type=True)),
    ("py_float", 1.0, core.ShapedArray((), np.float32, weak_type=True)),
    ("py_complex", 1j, core.ShapedArray((), np.complex64, weak_type=True)),
    ("py_bool", True, core.ShapedArray((), np.bool_)),
    ("np_float64_scalar", np.float64(1), core.ShapedArray((), np.float32)),
    ("np_int64_array", np.ones((2, 0), np.int64), core.ShapedArray((2, 0), np.int32)),
    ("np_uint8", np.ones(3, np.uint8), core.ShapedArray((3,), np.uint8)),
    ("array", jnp.ones(2, jnp.bfloat16), core.ShapedArray((2,), jnp.bfloat16)),
]


@pytest.mark.parametrize("name,value,expected", AVAL_CASES, ids=[c[0] for c in AVAL_CASES])
def test_get_aval(name: str, value: Any, expected: core.ShapedArray):
  assert core.get_aval(value) == expected, name
  assert core.valid_jaxtype(value)


@pytest.mark.parametrize("value", ["text", object(), [1.0], None], ids=["str", "object",
                                                                       "list", "None"])
def test_invalid_jaxtypes(value: Any):
  assert not core.valid_jaxtype(value)
  with pytest.raises(TypeError, match="not a valid jaxon type"):
    core.get_aval(value)


def test_x64_avals(x64):
  assert core.get_aval(1.0) == core.ShapedArray((), np.float64, weak_type=True)
  assert core.get_aval(np.ones(2, np.int64)) == core.ShapedArray((2,), np.int64)


def test_shaped_array():
  a = core.ShapedArray([2, 3], "float32", weak_type=True)
  assert (a.shape, a.dtype, a.weak_type, a.ndim, a.size) == ((2, 3), np.float32, True, 2, 6)
  assert a.str_short() == "f32[2,3]" and repr(a) == "ShapedArray(float32[2,3], weak_type=True)"
  assert a != a.strip_weak_type() and a == core.ShapedArray((2, 3), np.float32, True)
  assert hash(a) == hash(core.ShapedArray((2, 3), np.float32, True))
  assert a.update(shape=(4,)) == core.ShapedArray((4,), np.float32, True)
  assert a.update(dtype=np.int32).str_short() == "i32[2,3]"
  assert core.ShapedArray((), jnp.bfloat16).str_short() == "bf16[]"
  assert core.ShapedArray((0,), np.bool_).str_short() == "bool[0]"
  assert core.ShapedArray((), np.int32).to_tangent_aval().dtype.names == ("float0",)


# ----------------------------------------------------------------------------- primitives


def test_primitive_impl_and_abstract_eval():
  double_p = core.Primitive("double")
  double_p.def_impl(lambda x: np.asarray(x) * 2)
  double_p.def_abstract_eval(lambda aval: aval)
  assert repr(double_p) == "double"
  np.testing.assert_allclose(double_p.bind(np.float32(3.0)), 6.0)
  jaxpr = make_jaxpr(lambda x: double_p.bind(x))(1.0)
  assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = double a in (b,) }"


def test_trace_state_restored_after_error():
  def boom(x):
    raise ValueError("boom")
  with pytest.raises(ValueError, match="boom"):
    jit(boom)(1.0)
  assert type(core_internal.current_trace()) is core.EvalTrace
  assert float(jnp.sin(0.0)) == 0.0  # eager evaluation still works


def test_trace_state_is_thread_local():
  seen = []

  def look(x):
    thread = threading.Thread(target=lambda: seen.append(core_internal.current_trace()))
    thread.start()
    thread.join()
    return x
  jit(look)(1.0)
  assert type(seen[0]) is core.EvalTrace


def test_tracer_attributes_inside_jit():
  seen = {}

  def f(x):
    seen.update(shape=x.shape, dtype=x.dtype, ndim=x.ndim, size=x.size, len=len(x),
                weak=x.weak_type, is_tracer=isinstance(x, core.Tracer), repr=repr(x))
    return x
  jit(f)(jnp.ones((2, 3), jnp.int32))
  assert seen["shape"] == (2, 3) and seen["dtype"] == np.int32 and seen["ndim"] == 2
  assert seen["size"] == 6 and seen["len"] == 2 and not seen["weak"] and seen["is_tracer"]
  assert "i32[2,3]" in seen["repr"]


@pytest.mark.parametrize("use,error,pattern", [
    (hash, TypeError, "unhashable"),
    (lambda t: t.__setitem__(0, 1.0), TypeError, r"\.at\["),
    (len, TypeError, "unsized"),
], ids=["hash", "setitem", "len_of_scalar"])
def test_tracer_misuse(use, error: type, pattern: str):
  with pytest.raises(error, match=pattern):
    jit(lambda x: use(x) and x)(1.0)


def test_concrete_or_error():
  assert core.concrete_or_error(int, 3.7) == 3
  with pytest.raises(errors.ConcretizationTypeError, match="(?s)f32.*in my_op"):
    jit(lambda x: core.concrete_or_error(int, x, "in my_op"))(1.0)


# ----------------------------------------------------------------------------- jaxprs as data

_C = np.arange(3, dtype=np.float32)


def _with_const(x):
  return jnp.sin(x) * jnp.asarray(_C) + 2.0


def test_closed_jaxpr_fields():
  closed = make_jaxpr(_with_const)(np.ones(3, np.float32))
  assert isinstance(closed, core.ClosedJaxpr) and isinstance(closed.jaxpr, core.Jaxpr)
  assert len(closed.consts) == 1 and len(closed.jaxpr.constvars) == 1
  np.testing.assert_array_equal(np.asarray(closed.consts[0]), _C)
  assert closed.in_avals == [core.ShapedArray((3,), np.float32)]
  assert closed.out_avals == [core.ShapedArray((3,), np.float32)]
  sin, mul, add = closed.eqns
  assert [e.primitive.name for e in closed.eqns] == ["sin", "mul", "add"]
  assert isinstance(add.invars[1], core.Literal) and add.invars[1].val == 2.0
  assert mul.invars[1] is closed.jaxpr.constvars[0]
  assert isinstance(sin.outvars[0], core.Var)


@pytest.mark.parametrize("mode", ["eager", "jit", "make_jaxpr"])
def test_eval_jaxpr(mode: str):
  closed = make_jaxpr(_with_const)(np.ones(3, np.float32))
  x = np.linspace(0, 1, 3).astype(np.float32)
  expected = np.sin(x) * _C + 2.0
  run = core.jaxpr_as_fun(closed)
  if mode == "eager":
    (out,) = run(x)
  elif mode == "jit":
    (out,) = jit(run)(x)
  else:  # evaluating a jaxpr under tracing re-stages the same equations
    again = make_jaxpr(run)(x)
    assert [e.primitive.name for e in again.eqns] == ["sin", "mul", "add"]
    (out,) = core.eval_jaxpr(closed.jaxpr, closed.consts, x)
  np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


def test_eval_jaxpr_arity_error():
  closed = make_jaxpr(lambda x, y: x + y)(1.0, 2.0)
  with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
    core.eval_jaxpr(closed.jaxpr, closed.consts, 1.0)


def test_check_jaxpr():
  closed = make_jaxpr(lambda x: jnp.sin(x) + 1.0)(np.ones(2, np.float32))
  core.check_jaxpr(closed.jaxpr)
  sin, add = closed.eqns
  swapped = core.Jaxpr([], closed.jaxpr.invars, closed.jaxpr.outvars, [add, sin])
  with pytest.raises(TypeError, match="used before it is bound"):
    core.check_jaxpr(swapped)
  wrong = sin.replace(outvars=[core.Var(core.ShapedArray((3,), np.float32))])
  with pytest.raises(TypeError, match=r"f32\[3\].*f32\[2\]"):
    core.check_jaxpr(core.Jaxpr([], closed.jaxpr.invars, wrong.outvars, [wrong]))


def test_make_jaxpr_options():
  jaxpr = make_jaxpr(lambda x, n: x * n, static_argnums=1)(1.0, 3)
  assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = mul a 3.0 in (b,) }"
  closed, shapes = make_jaxpr(lambda x: {"y": x * 2}, return_shape=True)(np.ones(2, np.int32))
  assert shapes == {"y": jaxon.ShapeDtypeStruct((2,), np.int32)}
  assert closed.out_avals == [core.ShapedArray((2,), np.int32)]


def test_eval_shape():
  spec = jaxon.ShapeDtypeStruct((4, 3), jnp.float32)
  out = jaxon.eval_shape(lambda x, y: {"s": jnp.sum(x), "p": x * y}, spec, 2.0)
  assert out == {"s": jaxon.ShapeDtypeStruct((), np.float32),
                 "p": jaxon.ShapeDtypeStruct((4, 3), np.float32)}


def test_nested_make_jaxpr_closing_over_outer_tracer():
  """An inner trace treats the outer trace's tracers as constants; evaluating the inner
  jaxpr then stages its equations into the outer one."""
  def outer(x):
    inner = make_jaxpr(lambda y: y * x)(1.0)
    assert len(inner.consts) == 1 and isinstance(inner.consts[0], core.Tracer)
    return core.eval_jaxpr(inner.jaxpr, inner.consts, x + 1.0)[0]
  assert str(make_jaxpr(outer)(2.0)) == (
      "{ lambda ; a:f32[]. let b:f32[] = add a 1.0; c:f32[] = mul b a in (c,) }")
  np.testing.assert_allclose(jit(outer)(2.0), 6.0)


# ----------------------------------------------------------------------------- pytrees

Pair = namedtuple("Pair", "first second")


@tu.register_pytree_node_class
class Box:
  """A registered class: `value` is a child, `label` static."""

  def __init__(self, value, label: str):
    self.value, self.label = value, label

  def tree_flatten(self):
    return (self.value,), self.label

  @classmethod
  def tree_unflatten(cls, label, children):
    return cls(children[0], label)


@dataclasses.dataclass
class Params:
  w: Any
  b: Any
  name: str = dataclasses.field(default="layer", metadata={"static": True})


tu.register_dataclass(Params)

TREE_CASES = [
    # (id, tree, leaves)
    ("dict_sorted_keys", {"b": 1, "a": 2, "c": (3,)}, [2, 1, 3]),
    ("none_is_empty", (None, 1, [None]), [1]),
    ("namedtuple", Pair(1, (2, 3)), [1, 2, 3]),
    ("registered_class", [Box(1, "x"), Box((2, 3), "y")], [1, 2, 3]),
    ("dataclass", Params(w=1, b=2), [1, 2]),
    ("nested_empty", ((), [], {}), []),
]


@pytest.mark.parametrize("name,tree,leaves", TREE_CASES, ids=[c[0] for c in TREE_CASES])
def test_tree_flatten_round_trip(name: str, tree: Any, leaves: list):
  flat, treedef = tu.tree_flatten(tree)
  assert flat == leaves, name
  rebuilt = tu.tree_unflatten(treedef, flat)
  assert tu.tree_structure(rebuilt) == treedef
  assert tu.tree_leaves(tu.tree_map(lambda v: v * 10, tree)) == [v * 10 for v in leaves]


def test_registered_types_through_jit():
  @jit
  def step(box: Box, params: Params):
    return Box(box.value * params.w + params.b, box.label + "!"), params
  box, params = step(Box(2.0, "in"), Params(w=3.0, b=1.0, name="dense"))
  assert box.label == "in!" and float(box.value) == 7.0
  assert params.name == "dense" and type(params.w) is jaxon.Array


def test_tree_util_helpers():
  paths = tu.tree_flatten_with_path({"a": [1, 2], "b": Pair(3, 4)})[0]
  assert [tu.keystr(p) for p, _ in paths] == ["['a'][0]", "['a'][1]", "['b'].first",
                                               "['b'].second"]
  assert tu.tree_map(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])
  part = tu.Partial(lambda x, y: x * y, jnp.ones(2))
  np.testing.assert_allclose(jit(lambda p, y: p(y))(part, 3.0), [3.0, 3.0])


def test_standard_abstract_eval_caches_results_not_errors():
  """Rules run once per (operand types, parameters); a failing one raises every time, an
  unhashable parameter is evaluated every time, and `clear_caches` empties the cache."""
  from jaxon._src.lax import utils
  calls, checks = [], []

  def shape_rule(x, *, k):
    calls.append(k)
    if k == -1:
      raise TypeError("k must not be -1")
    return x.shape
  prim = utils.standard_primitive("abstract_eval_cache_probe", shape_rule, utils.input_dtype,
                                  config_check=lambda x, *, k: checks.append(k))
  a = core_internal.ShapedArray((2,), np.float32)
  assert prim.abstract_eval(a, k=1) is prim.abstract_eval(
      core_internal.ShapedArray((2,), np.float32), k=1)
  assert calls == [1] and checks == [1, 1]
  for _ in range(2):
    with pytest.raises(TypeError, match="must not be -1"):
      prim.abstract_eval(a, k=-1)
  prim.abstract_eval(a, k=[1])
  prim.abstract_eval(a, k=[1])
  assert calls == [1, -1, -1, [1], [1]]
  jaxon.clear_caches()
  prim.abstract_eval(a, k=1)
  assert calls[-1] == 1 and len(calls) == 6
