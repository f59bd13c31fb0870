"""`jit`: traced once per signature, static arguments, pytrees, lowering and nesting.

Tracing is counted with a Python side effect in the function body: it runs when the function
is traced, never when a compiled executable runs.
"""
from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import jit, make_jaxpr

Point = namedtuple("Point", "x y")


class Counted:
  """Wraps a function and counts how often it is traced (run in Python)."""

  def __init__(self, fun: Callable):
    self.fun = fun
    self.traces = 0
    functools.update_wrapper(self, fun)

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    self.traces += 1
    return self.fun(*args, **kwargs)


def _assert_tree_close(actual: Any, expected: Any) -> None:
  assert jaxon.tree_structure(actual) == jaxon.tree_structure(expected), (actual, expected)
  for a, e in zip(jaxon.tree_leaves(actual), jaxon.tree_leaves(expected)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-6)


# ----------------------------------------------------------------------------- trace counting

_f32_3 = np.ones(3, np.float32)

# (id, calls that share one signature, calls with a new signature each)
SIGNATURE_CASES = [
    ("python_float", [(1.0,), (2.0,)], [(1,), (np.float32(1.0),), (True,)]),
    ("shapes", [(_f32_3,), (jnp.ones(3),), (np.zeros(3, np.float32),)],
     [(np.ones(4, np.float32),), (np.ones((3, 1), np.float32),), (np.ones(3, np.int32),)]),
    ("dtypes", [(jnp.ones(2, jnp.int32),), (np.arange(2, dtype=np.int32),)],
     [(jnp.ones(2, jnp.uint8),), (jnp.ones(2, jnp.bfloat16),), (jnp.ones(2, jnp.float16),)]),
    ("weak_vs_strong", [(jnp.float32(1.0),), (np.float32(2.0),)], [(1.0,)]),
    ("pytree_structure", [((1.0, 2.0),), ((3.0, 4.0),)],
     [([1.0, 2.0],), ({"a": 1.0, "b": 2.0},), (Point(1.0, 2.0),), ((1.0, None),),
      ((1.0, (2.0,)),)]),
]


def _sum_leaves(tree: Any) -> Any:
  return sum(jaxon.tree_leaves(tree), start=jnp.zeros((), jnp.float32))


@pytest.mark.parametrize("name,same,different", SIGNATURE_CASES,
                         ids=[c[0] for c in SIGNATURE_CASES])
def test_traced_once_per_signature(name: str, same: list, different: list):
  f = Counted(_sum_leaves)
  jf = jit(f)
  for args in same * 2:
    jf(*args)
  assert f.traces == 1, f"{name}: calls with one signature traced {f.traces} times"
  for i, args in enumerate(different, start=2):
    jf(*args)
    jf(*args)
    assert f.traces == i, f"{name}: new signature {args!r} must trace exactly once"


def test_kwargs_are_part_of_the_signature():
  f = Counted(lambda x, y=1.0: x * y)
  jf = jit(f)
  np.testing.assert_allclose(jf(2.0, y=3.0), 6.0)
  np.testing.assert_allclose(jf(2.0, y=4.0), 8.0)
  assert f.traces == 1
  np.testing.assert_allclose(jf(2.0), 2.0)
  assert f.traces == 2


def test_outer_and_inner_jit_each_traced_once():
  inner = Counted(lambda x: jnp.sin(x) * 2.0)
  jinner = jit(inner)
  outer = Counted(lambda x: jinner(x) + jinner(x + 1.0))
  jouter = jit(outer)
  for _ in range(3):
    np.testing.assert_allclose(jouter(0.5), 2 * (np.sin(0.5) + np.sin(1.5)), rtol=1e-6)
  assert (outer.traces, inner.traces) == (1, 1)
  jinner(0.5)  # the eager call reuses the trace staged inside `outer`
  assert inner.traces == 1


# ----------------------------------------------------------------------------- static args


def _scale(x, n):
  return x * n


STATIC_CASES = [
    # (id, jit kwargs, call)
    ("argnums", dict(static_argnums=1), lambda g, n: g(2.0, n)),
    ("argnums_tuple", dict(static_argnums=(1,)), lambda g, n: g(2.0, n)),
    ("negative_argnums", dict(static_argnums=-1), lambda g, n: g(2.0, n)),
    ("argnames", dict(static_argnames="n"), lambda g, n: g(2.0, n=n)),
    ("argnames_positional_call", dict(static_argnames=("n",)), lambda g, n: g(2.0, n)),
    ("argnums_keyword_call", dict(static_argnums=1), lambda g, n: g(2.0, n=n)),
]


@pytest.mark.parametrize("name,kwargs,call", STATIC_CASES, ids=[c[0] for c in STATIC_CASES])
def test_static_args(name: str, kwargs: dict, call: Callable):
  f = Counted(_scale)
  g = jit(f, **kwargs)
  for n in (3, 3, 4, 3, 4):
    out = call(g, n)
    np.testing.assert_allclose(out, 2.0 * n)
  assert f.traces == 2, f"{name}: one trace per static value"


def test_static_value_is_python_inside():
  """A static argument can drive Python control flow and shapes."""
  @functools.partial(jit, static_argnums=1)
  def tile(x, n):
    assert isinstance(n, int)
    return jnp.zeros(n) + x if n > 2 else x
  assert tile(1.0, 4).shape == (4,)
  assert tile(1.0, 1).shape == ()


@pytest.mark.parametrize("bad", [[1, 2], {"a": 1}, np.ones(2)], ids=["list", "dict", "ndarray"])
def test_non_hashable_static_arg(bad: Any):
  g = jit(_scale, static_argnums=1)
  with pytest.raises(ValueError, match="[Nn]on-hashable static argument"):
    g(1.0, bad)


BAD_STATIC_ARGNUMS = [
    # (id, function, static_argnums)
    ("past_the_end", lambda x: x, 1),
    ("negative_past_the_start", lambda x: x, -2),
    ("one_of_several", lambda x, y: x, (0, 3)),
    ("no_positional_args", lambda: 1.0, 0),
    ("keyword_only_is_not_positional", lambda x, *, k: x, 1),
]


@pytest.mark.parametrize("name,fun,nums", BAD_STATIC_ARGNUMS,
                         ids=[c[0] for c in BAD_STATIC_ARGNUMS])
def test_static_argnums_out_of_range(name: str, fun: Callable, nums: Any):
  with pytest.raises(ValueError, match=r"static_argnums=.*only accepts \d+ positional"):
    jit(fun, static_argnums=nums)


def test_static_argnums_beyond_named_params_with_varargs():
  """With *args any position may be passed, so nothing is out of range."""
  g = jit(lambda *xs: xs[0] * xs[2], static_argnums=2)
  np.testing.assert_allclose(g(2.0, 0.0, 3), 6.0)


def test_static_method_self():
  class Model:
    def __init__(self, w: float):
      self.w = w

    @functools.partial(jit, static_argnums=0)
    def apply(self, x):
      return x * self.w

  np.testing.assert_allclose(Model(3.0).apply(2.0), 6.0)


# ----------------------------------------------------------------------------- pytrees


PYTREE_CASES = [
    ("tuple", lambda t: (t[1], t[0] * 2.0), ((1.0, jnp.ones(2)),)),
    ("list", lambda l: [x + 1.0 for x in l], ([1.0, np.float32(2.0), jnp.ones(3)],)),
    ("dict", lambda d: {k: v * 2.0 for k, v in d.items()}, ({"b": 1.0, "a": jnp.ones(2)},)),
    ("namedtuple", lambda p: Point(p.y, p.x + 1.0), (Point(1.0, jnp.zeros(2)),)),
    ("none_in_out", lambda a, b: (None, a * 2.0, {"n": None}), (1.0, None)),
    ("nested", lambda t: {"out": [t[0]["k"], (t[1],)]}, (({"k": 1.0}, jnp.ones(2)),)),
    ("kwargs", lambda x, *, y: {"sum": x + y}, (1.0,), {"y": jnp.ones(2)}),
    ("empty_tuple_out", lambda x: (), (1.0,)),
    ("scalar_constant_out", lambda x: (x, 2.0), (1,)),
]


@pytest.mark.parametrize("case", PYTREE_CASES, ids=[c[0] for c in PYTREE_CASES])
def test_pytrees_in_and_out(case: tuple):
  name, fun, args, *rest = case
  kwargs = rest[0] if rest else {}
  expected = fun(*args, **kwargs)
  got = jit(fun)(*args, **kwargs)
  _assert_tree_close(got, expected)
  for leaf in jaxon.tree_leaves(got):
    assert isinstance(leaf, jaxon.Array), f"{name}: output leaf {leaf!r} is not an Array"


def test_python_scalar_outputs_become_weak_arrays():
  x, c = jit(lambda x: (x, 2.0))(1)
  assert (x.dtype, x.weak_type) == (np.dtype(np.int32), True)
  assert (c.dtype, c.weak_type) == (np.dtype(np.float32), True)


# ----------------------------------------------------------------------------- forms of jit


@jit
def _decorated(x, y):
  return x * y + 1.0


@functools.partial(jit, static_argnames="power")
def _decorated_static(x, power):
  for _ in range(power - 1):
    x = x * x
  return x


def test_decorator_forms():
  np.testing.assert_allclose(_decorated(2.0, 3.0), 7.0)
  np.testing.assert_allclose(_decorated_static(3.0, power=2), 9.0)
  assert _decorated.__name__ == "_decorated"


def test_jit_of_jitted_function():
  np.testing.assert_allclose(jit(_decorated)(2.0, 3.0), 7.0)


def test_jit_rejects_non_callable():
  with pytest.raises(TypeError, match="callable"):
    jit(3)


def test_lower_as_text():
  lowered = jit(lambda x: jnp.sin(x) + 1.0).lower(jnp.ones(3))
  text = lowered.as_text()
  assert "stablehlo" in text and "tensor<3xf32>" in text
  # func is a registered dialect: the module prints in its custom form, not generically
  assert "func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32>" in text, text
  assert '"func.func"' not in text and '"func.return"' not in text, text


def test_small_constants_are_embedded_large_ones_passed():
  """As JAX, a program holds the constants its function closes over; those past
  `EMBEDDED_CONST_BYTES` are passed at each call instead (XLA would fold them slowly)."""
  from jaxon._src.xla import executable
  small = np.arange(4, dtype=np.float32) + 0.5
  large = np.arange(executable.EMBEDDED_CONST_BYTES // 4 + 1, dtype=np.float32)
  f = jit(lambda x: (x * jnp.asarray(small)).sum() + jnp.asarray(large).sum())
  x = jnp.ones(4)
  text = f.lower(x).as_text()
  assert "dense<[5.000000e-01, 1.500000e+00, 2.500000e+00, 3.500000e+00]>" in text, text
  assert f"@main(%arg0: tensor<{large.size}xf32>, %arg1: tensor<4xf32>)" in text, text
  np.testing.assert_allclose(f(x), small.sum() + large.sum(), rtol=1e-6)
  np.testing.assert_allclose(f.lower(x).compile()(x), small.sum() + large.sum(), rtol=1e-6)


def _affine(params, x, *, scale):
  return {"y": params["w"] * x * scale + params["b"]}, x.sum()


def test_lower_compile_call_with_pytrees():
  """As in JAX, a compiled function takes the dynamic arguments of its signature only."""
  g = jit(_affine, static_argnames="scale")
  params = {"w": jnp.full(3, 2.0), "b": 1.0}
  compiled = g.lower(params, jnp.ones(3), scale=3.0).compile()
  out = compiled({"w": jnp.full(3, 1.0), "b": 0.5}, jnp.arange(3.0))
  _assert_tree_close(out, ({"y": np.arange(3.0) * 3.0 + 0.5}, 3.0))
  np.testing.assert_allclose(compiled(params, np.ones(3, np.float32))[0]["y"], 7.0)


COMPILED_MISUSE = [
    # (id, call, message)
    ("missing_leaf", lambda c: c({"w": jnp.ones(3)}, jnp.ones(3)), "input pytree"),
    ("static_passed_again", lambda c: c({"w": jnp.ones(3), "b": 1.0}, jnp.ones(3), scale=3.0),
     "input pytree"),
    ("other_shape", lambda c: c({"w": jnp.ones(4), "b": 1.0}, jnp.ones(3)),
     r"args\[0\]\['w'\] compiled with float32\[3\] and called with float32\[4\]"),
    ("other_dtype", lambda c: c({"w": jnp.ones(3), "b": 1.0}, jnp.ones(3, jnp.int32)),
     r"args\[1\] compiled with float32\[3\] and called with int32\[3\]"),
]


@pytest.mark.parametrize("name,call,message", COMPILED_MISUSE,
                         ids=[c[0] for c in COMPILED_MISUSE])
def test_compiled_rejects_other_signatures(name: str, call: Callable, message: str):
  compiled = jit(_affine, static_argnames="scale").lower(
      {"w": jnp.ones(3), "b": 1.0}, jnp.ones(3), scale=3.0).compile()
  with pytest.raises(TypeError, match=message):
    call(compiled)


def test_nested_jit_stages_pjit_with_name():
  def add_one(x):
    return x + 1.0
  jaxpr = make_jaxpr(lambda x: jit(add_one)(x) * 2.0)(1.0)
  (eqn, mul) = jaxpr.eqns
  assert eqn.primitive.name == "pjit" and eqn.params["name"] == "add_one"
  assert "pjit[\n      name=add_one" in str(jaxpr)
  assert mul.primitive.name == "mul"


def test_disable_jit():
  f = Counted(lambda x: x * 2.0)
  jaxon.config.update("jax_disable_jit", True)
  try:
    assert jit(f)(1.0) == 2.0 and f.traces == 1
    jit(f)(1.0)
    assert f.traces == 2, "with jax_disable_jit the function runs in Python every call"
  finally:
    jaxon.config.update("jax_disable_jit", False)


# ----------------------------------------------------------------------------- closures


def _func12(arg):
  @jit
  def inner(x):
    return x + arg * jnp.ones(1)
  return arg + inner(arg - 2.)


_CONST = jnp.asarray(np.arange(3, dtype=np.float32))

CLOSURE_CASES = [
    ("func12", _func12, (1.0,), lambda a: a + (a - 2.0) + a * np.ones(1)),
    ("closes_over_array", lambda x: jit(lambda y: y * _CONST)(x), (np.ones(3, np.float32),),
     lambda x: x * np.arange(3)),
    ("two_levels", lambda a: jit(lambda b: jit(lambda c: a * b + c)(1.0))(a + 1.0), (2.0,),
     lambda a: a * (a + 1.0) + 1.0),
]


@pytest.mark.parametrize("name,fun,args,reference", CLOSURE_CASES,
                         ids=[c[0] for c in CLOSURE_CASES])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_closures_over_outer_values(name: str, fun: Callable, args: tuple,
                                    reference: Callable, mode: str):
  run = jit(fun) if mode == "jit" else fun
  np.testing.assert_allclose(run(*args), reference(*args), rtol=1e-6,
                             err_msg=f"{name} ({mode})")


def test_flags_that_change_tracing_are_part_of_the_cache_key():
  f = jit(lambda k: jaxon.random.normal(k, (3,)))
  key = jaxon.random.PRNGKey(0)
  try:
    partitionable = np.asarray(f(key))
    jaxon.config.update("jax_threefry_partitionable", False)
    legacy = np.asarray(f(key))
  finally:
    jaxon.config.update("jax_threefry_partitionable", True)
  np.testing.assert_array_equal(partitionable, np.float32([1.6226422, 2.0252647, -0.43359444]))
  np.testing.assert_array_equal(legacy, np.float32([1.8160863, -0.48262316, 0.33988908]))
  np.testing.assert_array_equal(np.asarray(f(key)), partitionable)


def test_device_put_of_a_traced_value_passes_it_through():
  assert float(jaxon.jit(lambda x: jaxon.device_put(x) * 2)(1.0)) == 2.0
  assert float(jaxon.grad(lambda x: jaxon.device_put(x) * 2)(1.0)) == 2.0
