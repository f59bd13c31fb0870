"""Result dtypes and weak types against JAX 0.10.2's, from abstract evaluation (no compiling).

Two sweeps, each a table recorded from JAX (literals below):

* reductions and cumulative reductions of every bool/int/uint/float/complex dtype, and of
  weakly typed input, with and without `dtype=`, with and without x64;
* transformations (grad, jvp, vjp, linearize, vmap, jit, jacfwd, jacrev, hessian) of
  functions that return an input unchanged, a constant or a Python scalar, where the
  answer's Array-ness, dtype and weak type are easy to get wrong.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax

# ----------------------------------------------------------------------------- reductions

_INPUTS = ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "bfloat16",
           "float32", "complex64", "weak_int", "weak_float")
_DTYPE_ARGS = (None, "int32", "float32", "int8", "uint8", "float16", "bool", "complex64")
_SHORT = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16",
          "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex64": "c64",
          "complex128": "c128"}

# JAX's result for each input (a row) and `dtype=` argument (a column, as _DTYPE_ARGS):
# a short dtype name, "~" when weakly typed, "!T" / "!V" for a TypeError / ValueError.
_WITH_DTYPE = {
    "sum": """
        bool        i32   i32   f32   i8    u8    f16   bool  c64
        int8        i32   i32   f32   i8    u8    f16   bool  c64
        int16       i32   i32   f32   i8    u8    f16   bool  c64
        int32       i32   i32   f32   i8    u8    f16   bool  c64
        uint8       u32   i32   f32   i8    u8    f16   bool  c64
        uint16      u32   i32   f32   i8    u8    f16   bool  c64
        uint32      u32   i32   f32   i8    u8    f16   bool  c64
        float16     f16   i32   f32   i8    u8    f16   bool  c64
        bfloat16    bf16  i32   f32   i8    u8    f16   bool  c64
        float32     f32   i32   f32   i8    u8    f16   bool  c64
        complex64   c64   i32   f32   i8    u8    f16   bool  c64
        weak_int    i32   i32   f32   i8    u8    f16   bool  c64
        weak_float  f32   i32   f32   i8    u8    f16   bool  c64
    """,
    "mean": """
        bool        f32   i32   f32   i8    u8    f16   !T    c64
        int8        f32   i32   f32   i8    u8    f16   !T    c64
        int16       f32   i32   f32   i8    u8    f16   !T    c64
        int32       f32   i32   f32   i8    u8    f16   !T    c64
        uint8       f32   i32   f32   i8    u8    f16   !T    c64
        uint16      f32   i32   f32   i8    u8    f16   !T    c64
        uint32      f32   i32   f32   i8    u8    f16   !T    c64
        float16     f16   i32   f32   i8    u8    f16   !T    c64
        bfloat16    bf16  i32   f32   i8    u8    f16   !T    c64
        float32     f32   i32   f32   i8    u8    f16   !T    c64
        complex64   c64   i32   f32   i8    u8    f16   !T    c64
        weak_int    f32   i32   f32   i8    u8    f16   !T    c64
        weak_float  f32   i32   f32   i8    u8    f16   !T    c64
    """,
    "var": """
        bool        f32   f32~  f32   f32~  f32~  f16   !T    c64
        int8        f32   f32~  f32   f32~  f32~  f16   !T    c64
        int16       f32   f32~  f32   f32~  f32~  f16   !T    c64
        int32       f32   f32~  f32   f32~  f32~  f16   !T    c64
        uint8       f32   f32~  f32   f32~  f32~  f16   !T    c64
        uint16      f32   f32~  f32   f32~  f32~  f16   !T    c64
        uint32      f32   f32~  f32   f32~  f32~  f16   !T    c64
        float16     f16   f32~  f32   f32~  f32~  f16   !T    c64
        bfloat16    bf16  f32~  f32   f32~  f32~  f16   !T    c64
        float32     f32   f32~  f32   f32~  f32~  f16   !T    c64
        complex64   f32   !V    !V    !V    !V    !V    !V    c64
        weak_int    f32   f32~  f32   f32~  f32~  f16   !T    c64
        weak_float  f32   f32~  f32   f32~  f32~  f16   !T    c64
    """,
    "std": """
        bool        f32   !V    f32   !V    !V    f16   !V    c64
        int8        f32   !V    f32   !V    !V    f16   !V    c64
        int16       f32   !V    f32   !V    !V    f16   !V    c64
        int32       f32   !V    f32   !V    !V    f16   !V    c64
        uint8       f32   !V    f32   !V    !V    f16   !V    c64
        uint16      f32   !V    f32   !V    !V    f16   !V    c64
        uint32      f32   !V    f32   !V    !V    f16   !V    c64
        float16     f16   !V    f32   !V    !V    f16   !V    c64
        bfloat16    bf16  !V    f32   !V    !V    f16   !V    c64
        float32     f32   !V    f32   !V    !V    f16   !V    c64
        complex64   f32   !V    !V    !V    !V    !V    !V    c64
        weak_int    f32   !V    f32   !V    !V    f16   !V    c64
        weak_float  f32   !V    f32   !V    !V    f16   !V    c64
    """,
    "cumsum": """
        bool        i32   i32   f32   i8    u8    f16   bool  c64
        int8        i8    i32   f32   i8    u8    f16   bool  c64
        int16       i16   i32   f32   i8    u8    f16   bool  c64
        int32       i32   i32   f32   i8    u8    f16   bool  c64
        uint8       u8    i32   f32   i8    u8    f16   bool  c64
        uint16      u16   i32   f32   i8    u8    f16   bool  c64
        uint32      u32   i32   f32   i8    u8    f16   bool  c64
        float16     f16   i32   f32   i8    u8    f16   bool  c64
        bfloat16    bf16  i32   f32   i8    u8    f16   bool  c64
        float32     f32   i32   f32   i8    u8    f16   bool  c64
        complex64   c64   i32   f32   i8    u8    f16   bool  c64
        weak_int    i32   i32   f32   i8    u8    f16   bool  c64
        weak_float  f32   i32   f32   i8    u8    f16   bool  c64
    """,
    "nanvar": """
        bool        f32   i32   f32   i8    u8    f16   !T    c64
        int8        f32   i32   f32   i8    u8    f16   !T    c64
        int16       f32   i32   f32   i8    u8    f16   !T    c64
        int32       f32   i32   f32   i8    u8    f16   !T    c64
        uint8       f32   i32   f32   i8    u8    f16   !T    c64
        uint16      f32   i32   f32   i8    u8    f16   !T    c64
        uint32      f32   i32   f32   i8    u8    f16   !T    c64
        float16     f16   i32   f32   i8    u8    f16   !T    c64
        bfloat16    bf16  i32   f32   i8    u8    f16   !T    c64
        float32     f32   i32   f32   i8    u8    f16   !T    c64
        complex64   f32   !V    !V    !V    !V    !V    !V    c64
        weak_int    f32   i32   f32   i8    u8    f16   !T    c64
        weak_float  f32   i32   f32   i8    u8    f16   !T    c64
    """,
    "nanstd": """
        bool        f32   !T    f32   !T    !T    f16   !T    c64
        int8        f32   !T    f32   !T    !T    f16   !T    c64
        int16       f32   !T    f32   !T    !T    f16   !T    c64
        int32       f32   !T    f32   !T    !T    f16   !T    c64
        uint8       f32   !T    f32   !T    !T    f16   !T    c64
        uint16      f32   !T    f32   !T    !T    f16   !T    c64
        uint32      f32   !T    f32   !T    !T    f16   !T    c64
        float16     f16   !T    f32   !T    !T    f16   !T    c64
        bfloat16    bf16  !T    f32   !T    !T    f16   !T    c64
        float32     f32   !T    f32   !T    !T    f16   !T    c64
        complex64   f32   !V    !V    !V    !V    !V    !V    c64
        weak_int    f32   !T    f32   !T    !T    f16   !T    c64
        weak_float  f32   !T    f32   !T    !T    f16   !T    c64
    """,
}
# Functions whose table is another's.
_SAME_AS = {"prod": "sum", "nansum": "sum", "nanprod": "sum", "cumprod": "cumsum",
            "nancumsum": "cumsum", "nancumprod": "cumsum", "nanmean": "mean"}
# Functions without a `dtype=` argument: the result for each input of _INPUTS.
_WITHOUT_DTYPE = {
    "max": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "min": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "argmax": "i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32",
    "argmin": "i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32",
    "lax.cummax": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32~ f32~",
    "lax.cummin": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32~ f32~",
    "lax.cumsum": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32~ f32~",
    "nanmax": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "nanmin": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "nanargmax": "i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32",
    "average": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 c64 f32 f32",
    "count_nonzero": "i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32",
    "all": "bool bool bool bool bool bool bool bool bool bool bool bool bool",
    "any": "bool bool bool bool bool bool bool bool bool bool bool bool bool",
    "ptp": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "median": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 !V f32 f32",
    "nanmedian": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 !V f32 f32",
}
# With x64, without `dtype=`: the result for each input of _INPUTS.
_X64 = {
    "sum": "i64 i64 i64 i64 u64 u64 u64 f16 bf16 f32 c64 i64 f32",
    "prod": "i64 i64 i64 i64 u64 u64 u64 f16 bf16 f32 c64 i64 f32",
    "mean": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 c64 f32 f32",
    "var": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 f32 f32 f32",
    "std": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 f32 f32 f32",
    "max": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "min": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "argmax": "i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64",
    "argmin": "i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64",
    "cumsum": "i64 i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "cumprod": "i64 i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "lax.cummax": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32~ f32~",
    "lax.cummin": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32~ f32~",
    "lax.cumsum": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32~ f32~",
    "nansum": "i64 i64 i64 i64 u64 u64 u64 f16 bf16 f32 c64 i64 f32",
    "nanprod": "i64 i64 i64 i64 u64 u64 u64 f16 bf16 f32 c64 i64 f32",
    "nancumsum": "i64 i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "nancumprod": "i64 i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "nanmean": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 c64 f32 f32",
    "nanvar": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 f32 f32 f32",
    "nanstd": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 f32 f32 f32",
    "nanmax": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "nanmin": "bool i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "nanargmax": "i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64",
    "average": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 c64 f32 f32",
    "count_nonzero": "i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64",
    "all": "bool bool bool bool bool bool bool bool bool bool bool bool bool",
    "any": "bool bool bool bool bool bool bool bool bool bool bool bool bool",
    "ptp": "!T i8 i16 i32 u8 u16 u32 f16 bf16 f32 c64 i32 f32",
    "median": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 !V f64 f64",
    "nanmedian": "f32 f32 f32 f32 f32 f32 f32 f16 bf16 f32 !V f64 f64",
}

# Where jaxon differs on purpose. JAX computes var and nanvar in an integer `dtype=` (so the
# mean is truncated) and returns garbage-adjacent results; jaxon raises ValueError, as JAX's
# std does. JAX's abstract evaluation accepts argmax of complex numbers, which then fails
# when it runs (a TypeError from its comparison): jaxon raises that TypeError up front.
_DEVIATIONS = {
    ("var", "int"): "!V", ("nanvar", "int"): "!V",
    ("argmax", "complex64"): "!T", ("argmin", "complex64"): "!T",
    ("nanargmax", "complex64"): "!T",
}

def _function(name: str):
  return getattr(lax, name[4:]) if name.startswith("lax.") else getattr(jnp, name)


def _jaxon_result(name: str, input_name: str, dtype_arg: str | None) -> str:
  weak = input_name.startswith("weak_")
  dtype = {"weak_int": "int32", "weak_float": "float32"}.get(input_name, input_name)
  x = jaxon.ShapeDtypeStruct((3,), jnp.dtype(dtype), weak_type=weak)
  kwargs = {} if dtype_arg is None else {"dtype": jnp.dtype(dtype_arg)}
  try:
    out = jaxon.eval_shape(lambda a: _function(name)(a, **kwargs), x)
  except TypeError:
    return "!T"
  except ValueError:
    return "!V"
  return _SHORT[np.dtype(out.dtype).name] + ("~" if out.weak_type else "")


def _expected(name: str, input_name: str, dtype_arg: str | None, golden: str) -> str:
  kind = "int" if dtype_arg in ("int32", "int8", "uint8") else dtype_arg
  deviation = _DEVIATIONS.get((name, kind)) or _DEVIATIONS.get((name, input_name))
  return deviation or golden


def _table(name: str) -> dict[str, list[str]]:
  text = _WITH_DTYPE[_SAME_AS.get(name, name)]
  return {line.split()[0]: line.split()[1:] for line in text.strip().splitlines()}


def _mismatches(name: str, cases) -> list[str]:
  bad = []
  for input_name, dtype_arg, golden in cases:
    want = _expected(name, input_name, dtype_arg, golden)
    got = _jaxon_result(name, input_name, dtype_arg)
    if got != want:
      bad.append(f"{name}({input_name}, dtype={dtype_arg}): JAX {want}, jaxon {got}")
  return bad


@pytest.mark.parametrize("name", [*_WITH_DTYPE, *_SAME_AS])
def test_reduction_dtypes_with_dtype_argument(name: str):
  table = _table(name)
  cases = [(i, d, table[i][k]) for i in _INPUTS for k, d in enumerate(_DTYPE_ARGS)]
  assert not _mismatches(name, cases)


@pytest.mark.parametrize("name", list(_WITHOUT_DTYPE))
def test_reduction_dtypes(name: str):
  cases = list(zip(_INPUTS, [None] * len(_INPUTS), _WITHOUT_DTYPE[name].split()))
  assert not _mismatches(name, cases)
  assert _jaxon_result(name, "float32", "float32") == "!T"  # no dtype argument, as in JAX


@pytest.mark.parametrize("name", list(_X64))
def test_reduction_dtypes_x64(name: str, x64):
  cases = list(zip(_INPUTS, [None] * len(_INPUTS), _X64[name].split()))
  assert not _mismatches(name, cases)


# ----------------------------------------------------------------------------- transformations

_ARGS = {"0.7": lambda: (0.7,), "weak": lambda: (jnp.asarray(0.7),),
         "f32[2]": lambda: (jnp.ones(2),), "np.float32": lambda: (np.float32(0.7),),
         "1+1j": lambda: (1 + 1j,)}
_FUNCTIONS = {"ident": lambda x: x, "const": lambda x: 2.0,
              "const_array": lambda x: jnp.float32(2.0), "first": lambda x, y: x,
              "second": lambda x, y: y, "times0": lambda x: x * 0, "pair": lambda x: (x, 1.0)}
_TRANSFORMS = {
    "grad": lambda f, args: jaxon.grad(f)(*args),
    "grad_all": lambda f, args: jaxon.grad(f, argnums=tuple(range(len(args))))(*args),
    "jvp": lambda f, args: jaxon.jvp(f, args, args)[1],
    "vjp": lambda f, args: (lambda out, pull: pull(jaxon.tree_map(jnp.ones_like, out)))(
        *jaxon.vjp(f, *args)),
    "linearize": lambda f, args: (lambda out, push: push(*args))(*jaxon.linearize(f, *args)),
    "vmap": lambda f, args: jaxon.vmap(f)(*[jnp.stack([a, a]) for a in args]),
    "jit": lambda f, args: jaxon.jit(f)(*args),
    "jacfwd": lambda f, args: jaxon.jacfwd(f)(*args),
    "jacrev": lambda f, args: jaxon.jacrev(f)(*args),
    "hessian": lambda f, args: jaxon.hessian(f)(*args),
}

# JAX's answers, one per argument of _ARGS: each leaf's dtype ("~" when weakly typed) and
# shape, or "host" for a value that is not an Array (a tangent passed through unchanged);
# "!T" for a TypeError.
_TRANSFORMS_GOLDEN = {
    ("grad", "ident"): "f32~ | f32~ | !T | f32 | !T",
    ("grad_all", "ident"): "f32~ | f32~ | !T | f32 | !T",
    ("jvp", "ident"): "host | f32~ | f32[2] | host | host",
    ("vjp", "ident"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("linearize", "ident"): "host | f32~ | f32[2] | host | host",
    ("vmap", "ident"): "f32~[2] | f32~[2] | f32[2,2] | f32[2] | c64~[2]",
    ("jit", "ident"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("jacfwd", "ident"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("jacrev", "ident"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("hessian", "ident"): "f32~ | f32~ | f32[2,2,2] | f32 | !T",
    ("grad", "const"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("grad_all", "const"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("jvp", "const"): "f32~ | f32~ | f32~ | f32~ | f32~",
    ("vjp", "const"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("linearize", "const"): "f32~ | f32~ | f32~ | f32~ | f32~",
    ("vmap", "const"): "f32~[2] | f32~[2] | f32~[2] | f32~[2] | f32~[2]",
    ("jit", "const"): "f32~ | f32~ | f32~ | f32~ | f32~",
    ("jacfwd", "const"): "f32~ | f32~ | f32~[2] | f32~ | !T",
    ("jacrev", "const"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("hessian", "const"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("grad", "const_array"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("grad_all", "const_array"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("jvp", "const_array"): "f32 | f32 | f32 | f32 | f32",
    ("vjp", "const_array"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("linearize", "const_array"): "f32 | f32 | f32 | f32 | f32",
    ("vmap", "const_array"): "f32[2] | f32[2] | f32[2] | f32[2] | f32[2]",
    ("jit", "const_array"): "f32 | f32 | f32 | f32 | f32",
    ("jacfwd", "const_array"): "f32 | f32 | f32[2] | f32 | !T",
    ("jacrev", "const_array"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("hessian", "const_array"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("grad", "first"): "f32~ | f32~ | !T | f32 | !T",
    ("grad_all", "first"): "f32~ f32~ | f32~ f32~ | !T | f32 f32 | !T",
    ("jvp", "first"): "host | f32~ | f32[2] | host | host",
    ("vjp", "first"): "f32~ f32~ | f32~ f32~ | f32[2] f32[2] | f32 f32 | c64~ c64~",
    ("linearize", "first"): "host | f32~ | f32[2] | host | host",
    ("vmap", "first"): "f32~[2] | f32~[2] | f32[2,2] | f32[2] | c64~[2]",
    ("jit", "first"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("jacfwd", "first"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("jacrev", "first"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("hessian", "first"): "f32~ | f32~ | f32[2,2,2] | f32 | !T",
    ("grad", "second"): "f32~ | f32~ | !T | f32 | !T",
    ("grad_all", "second"): "f32~ f32~ | f32~ f32~ | !T | f32 f32 | !T",
    ("jvp", "second"): "host | f32~ | f32[2] | host | host",
    ("vjp", "second"): "f32~ f32~ | f32~ f32~ | f32[2] f32[2] | f32 f32 | c64~ c64~",
    ("linearize", "second"): "host | f32~ | f32[2] | host | host",
    ("vmap", "second"): "f32~[2] | f32~[2] | f32[2,2] | f32[2] | c64~[2]",
    ("jit", "second"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("jacfwd", "second"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("jacrev", "second"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("hessian", "second"): "f32~ | f32~ | f32[2,2,2] | f32 | !T",
    ("grad", "times0"): "f32~ | f32~ | !T | f32 | !T",
    ("grad_all", "times0"): "f32~ | f32~ | !T | f32 | !T",
    ("jvp", "times0"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("vjp", "times0"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("linearize", "times0"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("vmap", "times0"): "f32~[2] | f32~[2] | f32[2,2] | f32[2] | c64~[2]",
    ("jit", "times0"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("jacfwd", "times0"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("jacrev", "times0"): "f32~ | f32~ | f32[2,2] | f32 | !T",
    ("hessian", "times0"): "f32~ | f32~ | f32[2,2,2] | f32 | !T",
    ("grad", "pair"): "!T | !T | !T | !T | !T",
    ("grad_all", "pair"): "!T | !T | !T | !T | !T",
    ("jvp", "pair"): "host f32~ | f32~ f32~ | f32[2] f32~ | host f32~ | host f32~",
    ("vjp", "pair"): "f32~ | f32~ | f32[2] | f32 | c64~",
    ("linearize", "pair"): "host f32~ | f32~ f32~ | f32[2] f32~ | host f32~ | host f32~",
    ("vmap", "pair"):
        "f32~[2] f32~[2] | f32~[2] f32~[2] | f32[2,2] f32~[2] | f32[2] f32~[2] | c64~[2] f32~[2]",
    ("jit", "pair"): "f32~ f32~ | f32~ f32~ | f32[2] f32~ | f32 f32~ | c64~ f32~",
    ("jacfwd", "pair"): "f32~ f32~ | f32~ f32~ | f32[2,2] f32~[2] | f32 f32~ | !T",
    ("jacrev", "pair"): "f32~ f32~ | f32~ f32~ | f32[2,2] f32[2] | f32 f32 | !T",
    ("hessian", "pair"): "f32~ f32~ | f32~ f32~ | f32[2,2,2] f32[2,2] | f32 f32 | !T",
}


def _describe(value) -> str:
  leaves = []
  for leaf in jaxon.tree_leaves(value):
    if isinstance(leaf, jaxon.Array):
      shape = list(leaf.shape) if leaf.shape else ""
      name = _SHORT[np.dtype(leaf.dtype).name]
      leaves.append(f"{name}{'~' if leaf.weak_type else ''}{shape}".replace(", ", ","))
    else:
      leaves.append("host")
  return " ".join(leaves)


@pytest.mark.parametrize("transform,function,golden",
                         [pytest.param(t, f, golden, id=f"{t}-{f}")
                          for (t, f), golden in _TRANSFORMS_GOLDEN.items()])
def test_transform_result_types(transform: str, function: str, golden: str):
  f = _FUNCTIONS[function]
  got = []
  for make_args in _ARGS.values():
    args = make_args() * f.__code__.co_argcount
    try:
      got.append(_describe(_TRANSFORMS[transform](f, args)))
    except TypeError:
      got.append("!T")
  assert " | ".join(got) == golden


def test_jacfwd_of_integer_outputs_is_integer_zero():
  """No tangent flows to an integer output: its Jacobian block is a zero of the output's
  type (JAX's values), not a float0 vmap would have to broadcast."""
  const = jaxon.jacfwd(lambda x: 3)(0.7)
  assert _describe(const) == "i32~" and int(const) == 0
  block = jaxon.jacfwd(lambda x: jnp.ones(2, jnp.int32))(jnp.ones(3))
  assert _describe(block) == "i32[2,3]" and not np.asarray(block).any()


# ----------------------------------------------------------------------------- Python scalars

# jnp functions of Python scalars: the result for the arguments of _SCALAR_ARGS ("!T", "!V",
# "!I" for a TypeError, ValueError or IndexError, as from a wrong number of arguments).
# JAX's weak types come from its implementations: a function computed from the weak input
# alone stays weak; one that meets a NumPy constant (log10) or reduces is strong.
_SCALAR_ARGS = ((3,), (2.5,), (7, 3), (2.5, 1.5), (7, 1.5), (True,), (True, False))
_PYTHON_SCALAR_GOLDEN = {
    "floor_divide": "!T !T i32~ f32~ f32~ !T i32",
    "remainder": "!T !T i32~ f32~ f32~ !T i32",
    "fmod": "!T !T i32~ f32~ f32~ !T i32",
    "divmod": "!T !T i32~ f32~ f32~ !T i32",
    "hypot": "!T !T f32~ f32~ f32~ !T f32",
    "heaviside": "!T !T f32~ f32~ f32~ !T f32",
    "gcd": "!T !T i32~ !V !V !T !V",
    "lcm": "!T !T i32~ !V !V !T !V",
    "deg2rad": "f32~ f32~ !T !T !T f32 !T",
    "rad2deg": "f32~ f32~ !T !T !T f32 !T",
    "equal": "!T !T bool~ bool~ bool~ !T bool",
    "less": "!T !T bool~ bool~ bool~ !T bool",
    "greater": "!T !T bool~ bool~ bool~ !T bool",
    "logical_and": "!T !T bool~ bool~ bool~ !T bool",
    "logical_not": "bool~ bool~ !T !T !T bool !T",
    "logical_xor": "!T !T bool~ bool~ bool~ !T bool",
    "isnan": "bool~ bool~ !T !T !T bool !T",
    "isfinite": "bool bool~ !T !T !T bool !T",
    "isinf": "bool bool !T !T !T bool !T",
    "iscomplex": "bool~ bool~ !T !T !T bool !T",
    "isreal": "bool~ bool~ !T !T !T bool !T",
    "signbit": "bool bool !T !T !T bool !T",
    "logaddexp": "!T !T f32~ f32~ f32~ !T f32",
    "logaddexp2": "!T !T f32~ f32~ f32~ !T f32",
    "log2": "f32 f32 !T !T !T f32 !T",
    "log10": "f32 f32 !T !T !T f32 !T",
    "rint": "f32 f32~ !T !T !T f32 !T",
    "ceil": "i32~ f32~ !T !T !T bool !T",
    "floor": "i32~ f32~ !T !T !T bool !T",
    "trunc": "i32~ f32~ !T !T !T bool !T",
    "sum": "i32 f32 !V !T !T i32 !V",
    "prod": "i32 f32 !V !T !T i32 !V",
    "max": "i32 f32 !V !T !T bool !V",
    "min": "i32 f32 !V !T !T bool !V",
    "mean": "f32 f32 !I !T !T f32 !I",
    "average": "f32 f32 !V !T !T f32 !V",
    "ptp": "i32 f32 !V !T !T !T !V",
    "all": "bool bool !V !T !T bool !V",
    "any": "bool bool !V !T !T bool !V",
    "nansum": "i32 f32 !V !T !T i32 !V",
    "nanmean": "f32 f32 !I !T !T f32 !I",
    "cumsum": "i32 f32 !V !T !T i32 !V",
    "sign": "i32~ f32~ !T !T !T !T !T",
    "square": "i32~ f32~ !T !T !T i32 !T",
    "reciprocal": "f32~ f32~ !T !T !T f32 !T",
    "power": "!T !T i32~ f32~ f32~ !T i32",
    "true_divide": "!T !T f32~ f32~ f32~ !T f32",
    "exp2": "f32~ f32~ !T !T !T f32 !T",
    "cbrt": "f32~ f32~ !T !T !T f32 !T",
    "maximum": "!T !T i32~ f32~ f32~ !T bool",
    "fmax": "!T !T i32~ f32~ f32~ !T bool",
    "nextafter": "!T !T f32~ f32~ f32~ !T f32",
    "copysign": "!T !T f32~ f32~ f32~ !T f32",
}


_ERRORS = {"!T": TypeError, "!V": ValueError, "!I": IndexError}


def _scalar_result(fn, args, golden: str) -> bool:
  try:
    out = jaxon.eval_shape(lambda: fn(*args))
  except Exception as e:  # noqa: BLE001 -- the class is what is compared
    return golden in _ERRORS and isinstance(e, _ERRORS[golden])
  out = out[0] if isinstance(out, tuple) else out
  return golden == _SHORT[np.dtype(out.dtype).name] + ("~" if out.weak_type else "")


@pytest.mark.parametrize("name", list(_PYTHON_SCALAR_GOLDEN))
def test_functions_of_python_scalars(name: str):
  golden = _PYTHON_SCALAR_GOLDEN[name].split()
  fn = getattr(jnp, name)
  bad = [f"{name}{args}: JAX {want}" for args, want in zip(_SCALAR_ARGS, golden, strict=True)
         if not _scalar_result(fn, args, want)]
  assert not bad


# ----------------------------------------------------------------------------- values

def test_complex_max_min_order_lexicographically():
  """Real part first, then imaginary (NumPy's and JAX's order), in every max/min reduction."""
  z = np.array([[1 + 2j, 1 + 3j, 0 + 9j], [-1 - 1j, -1 + 0j, -5 + 5j]], np.complex64)
  got = jaxon.jit(lambda z: (jnp.max(z, 1), jnp.min(z, 1), jnp.ptp(z, 1), lax.cummax(z, 1),
                             lax.cummin(z, 1)))(z)
  want = (np.max(z, 1), np.min(z, 1), np.ptp(z, 1), np.maximum.accumulate(z, 1),
          np.minimum.accumulate(z, 1))
  for out, expected in zip(got, want, strict=True):
    assert out.dtype == np.complex64
    np.testing.assert_array_equal(out, expected)


def test_complex_logaddexp():
  """JAX 0.10.2's values: the principal branch (imaginary part in [-pi, pi])."""
  x1 = np.array([1 + 1j, 3 - 3j, -2 + 3j], np.complex64)
  x2 = np.array([2 - 1j, 1 + 3j, -2 + 3j], np.complex64)
  got, got2 = jaxon.jit(lambda a, b: (jnp.logaddexp(a, b), jnp.logaddexp2(a, b)))(x1, x2)
  np.testing.assert_allclose(got, [1.9063238 - 0.62382865j, 3.1227286 - 3.0334535j,
                                   -1.3068528 + 3.0000002j], rtol=1e-6)
  np.testing.assert_allclose(got2[0], 2.2597494 - 0.38969135j, rtol=1e-6)
  assert got.dtype == got2.dtype == np.complex64


def test_variance_without_degrees_of_freedom_is_nan():
  """N - ddof <= 0 gives NaN (JAX), not NumPy's inf or a negative variance."""
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  got = jaxon.jit(lambda x: (jnp.var(x, 0, ddof=2), jnp.std(x, 0, ddof=3),
                             jnp.nanvar(x, 0, ddof=2)))(x)
  for out in got:
    assert np.isnan(out).all()
