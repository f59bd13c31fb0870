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
from jaxon import jit, lax, make_jaxpr

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


def one_of_three(index, arg):
  return lax.switch(index, [lambda x: x + 1.,
                            lambda x: x - 2.,
                            lambda x: x + 3.],
                    arg)


def func7(arg):
  return lax.cond(arg >= 0.,
                  lambda xtrue: xtrue + 3.,
                  lambda xfalse: xfalse - 3.,
                  arg)


def func8(arg1, arg2):  # Where `arg2` is a pair.
  return lax.cond(arg1 >= 0.,
                  lambda xtrue: xtrue[0],
                  lambda xfalse: jnp.array([1]) + xfalse[1],
                  arg2)


def func10(arg, n):
  ones = jnp.ones(arg.shape)  # A constant.
  return lax.fori_loop(0, n,
                       lambda i, carry: carry + ones * 3. + arg,
                       arg + ones)


def func11(arr, extra):
  ones = jnp.ones(arr.shape)  #  A constant
  def body(carry, aelems):
    # carry: running dot-product of the two arrays
    # aelems: a pair with corresponding elements from the two arrays
    ae1, ae2 = aelems
    return (carry + ae1 * ae2 + extra, carry)
  return lax.scan(body, 0., (arr, ones))


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

_ONE_OF_THREE_JAXPR = """\
{ lambda ; a:i32[] b:f32[]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:i32[] = clamp 0 c 2
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[]. let g:f32[] = add f 1.0 in (g,) }
        { lambda ; h:f32[]. let i:f32[] = sub h 2.0 in (i,) }
        { lambda ; j:f32[]. let k:f32[] = add j 3.0 in (k,) }
      )
    ] d b
  in (e,) }"""

_FUNC7_JAXPR = """\
{ lambda ; a:f32[]. let
    b:bool[] = ge a 0.0
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
    d:f32[] = cond[
      branches=(
        { lambda ; e:f32[]. let f:f32[] = sub e 3.0 in (f,) }
        { lambda ; g:f32[]. let h:f32[] = add g 3.0 in (h,) }
      )
    ] c a
  in (d,) }"""

# Verbatim from seed 001 except its rendering artifact `m_:i32[1]`, which jaxon prints as
# `m:i32[1]` (DESIGN.md).
_FUNC8_JAXPR = """\
{ lambda a:i32[1]; b:f32[] c:f32[1] d:f32[]. let
    e:bool[] = ge b 0.0
    f:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e
    g:f32[1] = cond[
      branches=(
        { lambda ; h:i32[1] i:f32[1] j:f32[]. let
            k:f32[1] = convert_element_type[new_dtype=float32 weak_type=True] h
            l:f32[1] = add k j
          in (l,) }
        { lambda ; m:i32[1] n:f32[1] o:f32[]. let  in (n,) }
      )
    ] f a c d
  in (g,) }"""

_FUNC10_JAXPR = """\
{ lambda ; a:f32[16] b:i32[]. let
    c:f32[16] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(16,)
      sharding=None
    ] 1.0
    d:f32[16] = add a c
    _:i32[] _:i32[] e:f32[16] = while[
      body_jaxpr={ lambda ; f:f32[16] g:f32[16] h:i32[] i:i32[] j:f32[16]. let
          k:i32[] = add h 1
          l:f32[16] = mul f 3.0
          m:f32[16] = add j l
          n:f32[16] = add m g
        in (k, i, n) }
      body_nconsts=2
      cond_jaxpr={ lambda ; o:i32[] p:i32[] q:f32[16]. let
          r:bool[] = lt o p
        in (r,) }
      cond_nconsts=0
    ] c a 0 b d
  in (e,) }"""

_FUNC11_JAXPR = """\
{ lambda ; a:f32[16] b:f32[]. let
    c:f32[16] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(16,)
      sharding=None
    ] 1.0
    d:f32[] e:f32[16] = scan[
      _split_transpose=False
      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[] i:f32[]. let
          j:f32[] = mul h i
          k:f32[] = convert_element_type[new_dtype=float32 weak_type=False] g
          l:f32[] = add k j
          m:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f
          n:f32[] = add l m
        in (n, g) }
      length=16
      linear=(False, False, False, False)
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] b 0.0 a c
  in (d, e) }"""

SEED_CASES = [
    ("func1", lambda: make_jaxpr(func1)(jnp.zeros(8), jnp.ones(8)), _FUNC1_JAXPR),
    ("func3", lambda: make_jaxpr(func3)(jnp.zeros(8), jnp.ones(8)), _FUNC1_JAXPR),
    ("func4", lambda: make_jaxpr(func4)((jnp.zeros(8), jnp.ones(8))), _FUNC1_JAXPR),
    ("func12", lambda: make_jaxpr(func12)(1.), _FUNC12_JAXPR),
    ("one_of_three", lambda: make_jaxpr(one_of_three)(1, 5.), _ONE_OF_THREE_JAXPR),
    ("func7", lambda: make_jaxpr(func7)(5.), _FUNC7_JAXPR),
    ("func8", lambda: make_jaxpr(func8)(5., (jnp.zeros(1), 2.)), _FUNC8_JAXPR),
    ("func10", lambda: make_jaxpr(func10)(np.ones(16), 5), _FUNC10_JAXPR),
    ("func11", lambda: make_jaxpr(func11)(np.ones(16), 5.), _FUNC11_JAXPR),
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
