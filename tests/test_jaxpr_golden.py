"""Golden tests of jaxpr text: `str(make_jaxpr(f)(...))` is a contract.

The seed cases are seed 001's printed jaxprs, verbatim; the small cases follow JAX's printing
rules (one line when it fits, scalar literals inline, non-scalar constants as constvars,
unused outputs as `_`, names `a`…`z`, `ba`, `bb`, …).
"""
from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import jit, make_jaxpr

# ----------------------------------------------------------------------------- seed 001


def func1(first, second):
  temp = first + jnp.sin(second) * 3.
  return jnp.sum(temp)


def func2(inner, first, second):
  temp = first + inner(second) * 3.
  return jnp.sum(temp)


def inner(second):
  if second.shape[0] > 4:
    return jnp.sin(second)
  else:
    assert False  # noqa: B011  (verbatim from seed 001)


def func3(first, second):
  return func2(inner, first, second)


def func4(arg):  # The `arg` is a pair.
  temp = arg[0] + jnp.sin(arg[1]) * 3.
  return jnp.sum(temp)


def func12(arg):
  @jit
  def inner(x):
    return x + arg * jnp.ones(1)  # Include a constant in the inner function.
  return arg + inner(arg - 2.)


_FUNC1_JAXPR = """\
{ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] = sin b
    d:f32[8] = mul c 3.0
    e:f32[8] = add a d
    f:f32[] = reduce_sum[axes=(0,)] e
  in (f,) }"""

_FUNC12_JAXPR = """\
{ lambda ; a:f32[]. let
    b:f32[] = sub a 2.0
    c:f32[1] = pjit[
      name=inner
      jaxpr={ lambda ; a:f32[] b:f32[]. let
          d:f32[1] = broadcast_in_dim[
            broadcast_dimensions=()
            shape=(1,)
            sharding=None
          ] 1.0
          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
          f:f32[1] = mul e d
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
          c:f32[1] = add g f
        in (c,) }
    ] a b
    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
    i:f32[1] = add h c
  in (i,) }"""

SEED_CASES = [
    ("func1", lambda: make_jaxpr(func1)(jnp.zeros(8), jnp.ones(8)), _FUNC1_JAXPR),
    ("func3", lambda: make_jaxpr(func3)(jnp.zeros(8), jnp.ones(8)), _FUNC1_JAXPR),
    ("func4", lambda: make_jaxpr(func4)((jnp.zeros(8), jnp.ones(8))), _FUNC1_JAXPR),
    ("func12", lambda: make_jaxpr(func12)(1.), _FUNC12_JAXPR),
]


@pytest.mark.parametrize("name,make,expected", SEED_CASES, ids=[c[0] for c in SEED_CASES])
def test_seed_001_jaxprs(name: str, make: Callable[[], Any], expected: str):
  assert str(make()) == expected, f"seed 001 {name}: printed jaxpr differs"


# ----------------------------------------------------------------------------- small cases

_CONST = np.arange(3, dtype=np.float32)


def _sin_chain(x, n=30):
  for _ in range(n):
    x = jnp.sin(x)
  return x


def _discard_sin(x):
  jnp.sin(x)
  return x


_SIN_CHAIN_JAXPR = "{ lambda ; a:f32[]. let\n" + "".join(
    f"    {b}:f32[] = sin {a}\n" for a, b in zip(
        [*"abcdefghijklmnopqrstuvwxyz", "ba", "bb", "bc", "bd"],
        [*"bcdefghijklmnopqrstuvwxyz", "ba", "bb", "bc", "bd", "be"])) + "  in (be,) }"

_f32 = np.float32
SMALL_CASES = [
    # (id, function, args, expected text)
    ("one_line", jnp.sin, (1.0,), "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }"),
    ("no_eqns", lambda x: x, (np.ones(3, np.int32),), "{ lambda ; a:i32[3]. let  in (a,) }"),
    ("constvar", lambda x: x + _CONST, (np.ones(3, _f32),),
     "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }"),
    ("literals_inline", lambda x: x * 2.0 + 1, (1.0,),
     "{ lambda ; a:f32[]. let b:f32[] = mul a 2.0; c:f32[] = add b 1.0 in (c,) }"),
    ("int_literal", lambda x: x * -2, (np.ones(3, np.int32),),
     "{ lambda ; a:i32[3]. let b:i32[3] = mul a -2 in (b,) }"),
    ("unused_output", _discard_sin, (1.0,), "{ lambda ; a:f32[]. let _:f32[] = sin a in (a,) }"),
    ("two_outputs", lambda x: (x, jnp.sin(x)), (1.0,),
     "{ lambda ; a:f32[]. let b:f32[] = sin a in (a, b) }"),
    ("dict_in_out_sorted_keys", lambda d: {"b": d["a"] * 2., "a": d["b"]},
     ({"a": 1., "b": np.ones(2, _f32)},),
     "{ lambda ; a:f32[] b:f32[2]. let c:f32[] = mul a 2.0 in (b, c) }"),
    ("weak_int_promoted", lambda x, y: x + y, (1, 2.0), textwrap.dedent("""\
        { lambda ; a:i32[] b:f32[]. let
            c:f32[] = convert_element_type[new_dtype=float32 weak_type=True] a
            d:f32[] = add c b
          in (d,) }""")),
    ("reduce_sum_all_axes", jnp.sum, (np.ones((2, 3), _f32),),
     "{ lambda ; a:f32[2,3]. let b:f32[] = reduce_sum[axes=(0, 1)] a in (b,) }"),
    ("names_past_z", _sin_chain, (1.0,), _SIN_CHAIN_JAXPR),
    ("nested_jit", lambda x: jit(jnp.sin)(x), (1.0,), textwrap.dedent("""\
        { lambda ; a:f32[]. let
            b:f32[] = pjit[
              name=sin
              jaxpr={ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
            ] a
          in (b,) }""")),
]


@pytest.mark.parametrize("name,fun,args,expected", SMALL_CASES, ids=[c[0] for c in SMALL_CASES])
def test_small_jaxprs(name: str, fun: Callable, args: tuple, expected: str):
  assert str(make_jaxpr(fun)(*args)) == expected, f"jaxpr case {name}"


# Nested jit with repeated or dropped arguments and outputs (JAX's own pjit printing tests).
_x1 = np.array([4.2], np.float32)
_id_first = jit(lambda x, y: x)
_mul3 = jit(lambda x, y, z: x * y * z)
_pair = jit(lambda x: (x, jnp.sin(x)))

PJIT_CASES = [
    ("aliased_identity", lambda y: y + _id_first(y, y), textwrap.dedent("""\
        { lambda ; a:f32[1]. let
            b:f32[1] = pjit[
              name=<lambda>
              jaxpr={ lambda ; a:f32[1] c:f32[1]. let  in (a,) }
            ] a a
            d:f32[1] = add a b
          in (d,) }""")),
    ("aliased_args", lambda x: _mul3(x, x, x), textwrap.dedent("""\
        { lambda ; a:f32[1]. let
            b:f32[1] = pjit[
              name=<lambda>
              jaxpr={ lambda ; a:f32[1] c:f32[1] d:f32[1]. let
                  e:f32[1] = mul a c
                  b:f32[1] = mul e d
                in (b,) }
            ] a a a
          in (b,) }""")),
    ("dropped_output", lambda x: _pair(x)[0], textwrap.dedent("""\
        { lambda ; a:f32[1]. let
            b:f32[1] _:f32[1] = pjit[
              name=<lambda>
              jaxpr={ lambda ; a:f32[1]. let c:f32[1] = sin a in (a, c) }
            ] a
          in (b,) }""")),
]


@pytest.mark.parametrize("name,fun,expected", PJIT_CASES, ids=[c[0] for c in PJIT_CASES])
def test_nested_jit_jaxprs(name: str, fun: Callable, expected: str):
  assert str(make_jaxpr(fun)(_x1)) == expected, f"pjit case {name}"


def test_x64_literals_and_types(x64):
  jaxpr = make_jaxpr(lambda x: x * 2.0)(np.ones(2, np.float64))
  assert str(jaxpr) == "{ lambda ; a:f64[2]. let b:f64[2] = mul a 2.0 in (b,) }"


def test_out_avals_match_execution():
  """The jaxpr's output types are those of the executed result, weak types included."""
  cases = [(func1, (jnp.zeros(8), jnp.ones(8))), (func12, (1.,)),
           (lambda x: x * 2, (3,)), (lambda x: (x, jnp.sin(x)), (np.ones(2, np.float16),))]
  for fun, args in cases:
    avals = make_jaxpr(fun)(*args).out_avals
    outs = jaxon.tree_leaves(jit(fun)(*args))
    got = [(o.shape, o.dtype, o.weak_type) for o in outs]
    assert got == [(a.shape, a.dtype, a.weak_type) for a in avals], fun


def test_pretty_print_width():
  """A narrower width breaks a one-line jaxpr into the multi-line layout."""
  jaxpr = make_jaxpr(jnp.sin)(1.0)
  assert jaxpr.pretty_print(width=20) == "{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n  in (b,) }"
