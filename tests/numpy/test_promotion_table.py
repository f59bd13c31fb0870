"""JAX's documented type promotion table ("Type promotion semantics" in JAX's docs),
transcribed by hand, against `jnp.promote_types`, `jnp.result_type` and the dtype of
`jnp.add` for every pair of types, with x64 on and off.

The documented table is the join on JAX's lattice with 64-bit types enabled. With x64
off, current JAX changes one edge so that no promotion makes a 64-bit type from 32-bit
inputs: uint32 with int8/int16/int32 gives int32 instead of int64. `promote_types` does not
canonicalize its answer; `result_type` and operations canonicalize their inputs and their
result (64-bit types narrow to 32 bits), and a weak result takes the default dtype of its
kind, weakly typed.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon._src import dtypes

NAMES = "b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c8 c16 i* f* c*".split()

# Rows and columns in the order of NAMES, exactly as JAX's documentation prints them.
DOCUMENTED_TABLE = """
b1  b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8  c16 i*  f*  c*
u1  u1  u1  u2  u4  u8  i2  i2  i4  i8  bf  f2  f4  f8  c8  c16 u1  f*  c*
u2  u2  u2  u2  u4  u8  i4  i4  i4  i8  bf  f2  f4  f8  c8  c16 u2  f*  c*
u4  u4  u4  u4  u4  u8  i8  i8  i8  i8  bf  f2  f4  f8  c8  c16 u4  f*  c*
u8  u8  u8  u8  u8  u8  f*  f*  f*  f*  bf  f2  f4  f8  c8  c16 u8  f*  c*
i1  i1  i2  i4  i8  f*  i1  i2  i4  i8  bf  f2  f4  f8  c8  c16 i1  f*  c*
i2  i2  i2  i4  i8  f*  i2  i2  i4  i8  bf  f2  f4  f8  c8  c16 i2  f*  c*
i4  i4  i4  i4  i8  f*  i4  i4  i4  i8  bf  f2  f4  f8  c8  c16 i4  f*  c*
i8  i8  i8  i8  i8  f*  i8  i8  i8  i8  bf  f2  f4  f8  c8  c16 i8  f*  c*
bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  f4  f4  f8  c8  c16 bf  bf  c8
f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f4  f2  f4  f8  c8  c16 f2  f2  c8
f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f8  c8  c16 f4  f4  c8
f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  c16 c16 f8  f8  c16
c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c16 c8  c16 c8  c8  c8
c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
i*  i*  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8  c16 i*  f*  c*
f*  f*  f*  f*  f*  f*  f*  f*  f*  f*  bf  f2  f4  f8  c8  c16 f*  f*  c*
c*  c*  c*  c*  c*  c*  c*  c*  c*  c*  c8  c8  c8  c16 c8  c16 c*  c*  c*
"""

STRONG = {"b1": np.bool_, "u1": np.uint8, "u2": np.uint16, "u4": np.uint32, "u8": np.uint64,
          "i1": np.int8, "i2": np.int16, "i4": np.int32, "i8": np.int64, "bf": jnp.bfloat16,
          "f2": np.float16, "f4": np.float32, "f8": np.float64, "c8": np.complex64,
          "c16": np.complex128}
WEAK = {"i*": int, "f*": float, "c*": complex}
# What promote_types answers for a weak result (not canonicalized, as in JAX).
WEAK_AS_64 = {"i*": np.int64, "f*": np.float64, "c*": np.complex128}
# The default dtype of each weak kind: what result_type and operations give.
WEAK_DEFAULT = {"i*": "i8", "f*": "f8", "c*": "c16"}
TO_32 = {"u8": "u4", "i8": "i4", "f8": "f4", "c16": "c8"}


def _parse(table: str) -> dict[tuple[str, str], str]:
  rows = [line.split() for line in table.strip().splitlines()]
  assert [r[0] for r in rows] == NAMES, "row labels"
  assert all(len(r) == len(NAMES) + 1 for r in rows), "row lengths"
  return {(r[0], c): entry for r in rows for c, entry in zip(NAMES, r[1:])}


TABLE_X64 = _parse(DOCUMENTED_TABLE)


def _x32_join(a: str, b: str) -> str:
  """The join on the lattice JAX uses with x64 off (one edge changed, see the docstring)."""
  if {a, b} & {"u4"} and {a, b} & {"i1", "i2", "i4"}:
    return "i4"
  return TABLE_X64[a, b]


def _canonical(name: str) -> str:
  return TO_32.get(name, name)


def _type(name: str):
  return WEAK.get(name) or STRONG[name]


def _expected_promote_types(a: str, b: str, x64: bool) -> np.dtype:
  entry = TABLE_X64[a, b] if x64 else _x32_join(a, b)
  return np.dtype(WEAK_AS_64.get(entry) or STRONG[entry])


def _expected_result(a: str, b: str, x64: bool) -> tuple[np.dtype, bool]:
  """(dtype, weak) of an operation on values of types `a` and `b`: inputs canonicalized,
  joined, the result canonicalized; a weak result is the default dtype of its kind."""
  if x64:
    entry = TABLE_X64[a, b]
  else:
    entry = _x32_join(a if a in WEAK else _canonical(a), b if b in WEAK else _canonical(b))
  weak = entry in WEAK
  name = WEAK_DEFAULT[entry] if weak else entry
  return np.dtype(STRONG[name if x64 else _canonical(name)]), weak


def test_documented_table_is_symmetric():
  for a in NAMES:
    for b in NAMES:
      assert TABLE_X64[a, b] == TABLE_X64[b, a], (a, b)


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64_mode(request):
  previous = jaxon.config.jax_enable_x64
  jaxon.config.update("jax_enable_x64", request.param)
  try:
    yield request.param
  finally:
    jaxon.config.update("jax_enable_x64", previous)


def _mismatches(check) -> list[str]:
  out = []
  for a in NAMES:
    for b in NAMES:
      got, want = check(a, b)
      if got != want:
        out.append(f"{a} x {b}: got {got}, expected {want}")
  return out


def test_promote_types(x64_mode):
  def check(a, b):
    return jnp.promote_types(_type(a), _type(b)), _expected_promote_types(a, b, x64_mode)
  bad = _mismatches(check)
  assert not bad, "\n".join(bad)


def test_result_type(x64_mode):
  def check(a, b):
    got = dtypes.result_type(_type(a), _type(b), return_weak_type_flag=True)
    return tuple(got), _expected_result(a, b, x64_mode)
  bad = _mismatches(check)
  assert not bad, "\n".join(bad)


def _operand(name: str):
  """A Python scalar for a weak type, else a (canonicalized) array of that dtype."""
  if name in WEAK:
    return WEAK[name](1)
  return jnp.asarray(np.ones((2,), STRONG[name]))


def test_add_dtype(x64_mode):
  """The dtype and weak type of jnp.add, traced (eval_shape: no compilation)."""
  def check(a, b):
    x, y = _operand(a), _operand(b)
    out = jaxon.eval_shape(lambda: jnp.add(x, y))
    return (np.dtype(out.dtype), bool(out.weak_type)), _expected_result(a, b, x64_mode)
  bad = _mismatches(check)
  assert not bad, "\n".join(bad)


@pytest.mark.parametrize("a", NAMES)
def test_add_runs(a, x64_mode):
  """Executed eagerly, each type with a few partners of every kind."""
  for b in ("b1", "u1", "i4", "bf", "f2", "c8", "i*", "f*"):
    out = jnp.add(_operand(a), _operand(b))
    want, weak = _expected_result(a, b, x64_mode)
    assert (out.dtype, bool(out.weak_type)) == (want, weak), (a, b)


def test_float8_joins_only_below_weak_float():
  """float8 types sit just above `f*` on the lattice: booleans, integers and Python
  floats promote to them; no other float does, and two float8 types do not meet."""
  f8 = np.dtype(dtypes.float8_e4m3fn)
  for other in (f8, float, int, np.int8, np.uint64, np.bool_):
    assert jnp.promote_types(f8, other) == f8, other
  for other in (np.float32, np.float16, jnp.bfloat16, dtypes.float8_e5m2, complex):
    with pytest.raises(dtypes.TypePromotionError):
      jnp.promote_types(f8, other)
