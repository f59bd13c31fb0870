"""Dtypes: 32-bit defaults, x64 mode (flag and environment variable), weak types, and JAX's
promotion lattice (`promote_types`, `result_type`)."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import jit, make_jaxpr

bf16 = np.dtype(jnp.bfloat16)

# ----------------------------------------------------------------------------- defaults

DEFAULT_CASES = [
    # (id, thunk, dtype without x64, dtype with x64)
    ("ones", lambda: jnp.ones(3), np.float32, np.float64),
    ("zeros_float64_requested", lambda: jnp.zeros(2, jnp.float64), np.float32, np.float64),
    ("array_int", lambda: jnp.array(1), np.int32, np.int64),
    ("array_float", lambda: jnp.array(1.0), np.float32, np.float64),
    ("array_complex", lambda: jnp.array(1 + 1j), np.complex64, np.complex128),
    ("array_bool", lambda: jnp.array(True), np.bool_, np.bool_),
    ("numpy_float64", lambda: jnp.asarray(np.ones(2)), np.float32, np.float64),
    ("numpy_int64", lambda: jnp.asarray(np.arange(2)), np.int32, np.int64),
    ("numpy_uint64", lambda: jnp.asarray(np.arange(2, dtype=np.uint64)), np.uint32, np.uint64),
    ("jit_python_float", lambda: jit(lambda x: x)(1.0), np.float32, np.float64),
    # int32 stays float32 with x64 (JAX 0.10.2); only a 64-bit int reaches float64
    ("sin_of_int", lambda: jnp.sin(jnp.ones(2, jnp.int32)), np.float32, np.float32),
    ("sin_of_int64", lambda: jnp.sin(jnp.ones(2, jnp.int64)), np.float32, np.float64),
]


@pytest.mark.parametrize("name,thunk,dtype32,dtype64", DEFAULT_CASES,
                         ids=[c[0] for c in DEFAULT_CASES])
def test_default_dtypes(name: str, thunk: Callable, dtype32, dtype64):
  assert thunk().dtype == np.dtype(dtype32), name


@pytest.mark.parametrize("name,thunk,dtype32,dtype64", DEFAULT_CASES,
                         ids=[c[0] for c in DEFAULT_CASES])
def test_x64_dtypes(x64, name: str, thunk: Callable, dtype32, dtype64):
  assert thunk().dtype == np.dtype(dtype64), name


def test_x64_flag_round_trip():
  assert not jaxon.config.jax_enable_x64
  jaxon.config.update("jax_enable_x64", True)
  try:
    assert jnp.ones(2).dtype == np.float64
    assert str(make_jaxpr(jnp.sin)(1.0)) == "{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }"
  finally:
    jaxon.config.update("jax_enable_x64", False)
  assert jnp.ones(2).dtype == np.float32


def test_x64_values_keep_precision(x64):
  x = jnp.asarray(np.array([1 + 1e-12]))
  assert float(x + 0.0) == 1 + 1e-12


@pytest.mark.parametrize("env,expected", [("1", "float64 int64"), ("0", "float32 int32")],
                         ids=["1", "0"])
def test_x64_from_environment(env: str, expected: str):
  environ = {**os.environ, "JAX_ENABLE_X64": env}
  code = ("import jaxon.numpy as jnp; "
          "print(jnp.ones(2).dtype, jnp.array(1).dtype)")
  out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                       text=True, check=True, timeout=120)
  assert out.stdout.strip() == expected


# ----------------------------------------------------------------------------- weak types

_u8, _i8, _i32 = np.uint8, np.int8, np.int32

WEAK_CASES = [
    # (id, function, args, result dtype, result weak)
    ("f32_plus_py_float", lambda x: x + 1.0, (np.ones(3, np.float32),), np.float32, False),
    ("bf16_times_py_int", lambda x: x * 2, (jnp.ones(3, jnp.bfloat16),), bf16, False),
    ("bf16_times_py_float", lambda x: x * 2.5, (jnp.ones(3, jnp.bfloat16),), bf16, False),
    ("f16_times_py_float", lambda x: x * 2.5, (np.ones(3, np.float16),), np.float16, False),
    ("u8_plus_py_int", lambda x: x + 1, (np.ones(3, _u8),), _u8, False),
    ("i8_times_py_int", lambda x: x * 2, (np.ones(3, _i8),), _i8, False),
    ("i32_plus_py_float", lambda x: x + 1.5, (np.ones(3, _i32),), np.float32, True),
    ("bool_plus_py_int", lambda x: x + 1, (np.ones(3, np.bool_),), _i32, True),
    ("py_float_arg", lambda x: x * 2, (1.0,), np.float32, True),
    ("py_int_arg", lambda x: x * 2, (1,), _i32, True),
    ("py_int_and_float_args", lambda x, y: x + y, (1, 2.0), np.float32, True),
    ("py_float_arg_meets_bf16", lambda x, y: x * y, (2.0, jnp.ones(2, jnp.bfloat16)), bf16,
     False),
    ("bf16_plus_f16", lambda x, y: x + y, (jnp.ones(2, jnp.bfloat16), np.ones(2, np.float16)),
     np.float32, False),
    ("u8_plus_i8", lambda x, y: x + y, (np.ones(2, _u8), np.ones(2, _i8)), np.int16, False),
    ("f32_plus_numpy_f64_scalar", lambda x: x + np.float64(1), (np.ones(2, np.float32),),
     np.float32, False),
    ("f16_sin", jnp.sin, (np.ones(2, np.float16),), np.float16, False),
    ("weak_sum", jnp.sum, (2.0,), np.float32, False),  # reductions are strong, as in JAX
]


@pytest.mark.parametrize("name,fun,args,dtype,weak", WEAK_CASES, ids=[c[0] for c in WEAK_CASES])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_weak_type_promotion(name: str, fun: Callable, args: tuple, dtype, weak: bool,
                             mode: str):
  # Eagerly, device_put makes jaxon Arrays of the arguments (Python scalars stay weak).
  out = jit(fun)(*args) if mode == "jit" else fun(*map(jaxon.device_put, args))
  assert (out.dtype, out.weak_type) == (np.dtype(dtype), weak), f"{name} ({mode})"
  (aval,) = make_jaxpr(fun)(*args).out_avals
  assert (aval.shape, aval.dtype, aval.weak_type) == (out.shape, out.dtype, out.weak_type), name
  expected = fun(*[np.asarray(a, np.float64) for a in args])
  np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=1e-2, err_msg=name)


def test_x64_weak_types(x64):
  assert (jit(lambda x: x)(1.0).dtype, jit(lambda x: x)(1).dtype) == (np.float64, np.int64)
  out = jnp.ones(2, jnp.float32) + 1.0
  assert out.dtype == np.float32, "a weak float64 scalar does not widen float32"
  assert (jnp.ones(2, jnp.float32) + np.float64(1)).dtype == np.float64


# ----------------------------------------------------------------------------- promotion

# Entries of the binary promotion table in JAX's "Type promotion semantics" document
# (64-bit columns under x64). `int`, `float`, `complex` are the weak Python types: a weak
# result is the 64-bit type of its kind, like NumPy's `np.dtype(float)`.
_d = np.dtype
PROMOTE_TABLE = [
    (np.bool_, np.bool_, np.bool_), (np.bool_, np.uint8, np.uint8),
    (np.bool_, np.int32, np.int32), (np.bool_, np.float16, np.float16),
    (np.bool_, int, np.int64), (np.bool_, float, np.float64),
    (np.uint8, np.int8, np.int16), (np.uint8, np.uint16, np.uint16),
    (np.uint16, np.int16, np.int32), (np.uint32, np.int8, np.int64),
    (np.uint32, np.uint64, np.uint64), (np.uint64, np.int8, np.float64),
    (np.uint64, np.int64, np.float64), (np.int8, np.int64, np.int64),
    (np.uint8, jnp.bfloat16, jnp.bfloat16), (np.int64, np.float16, np.float16),
    (np.int32, np.float32, np.float32), (jnp.bfloat16, np.float16, np.float32),
    (jnp.bfloat16, np.float32, np.float32), (np.float16, np.float64, np.float64),
    (np.float32, np.complex64, np.complex64), (np.float64, np.complex64, np.complex128),
    (jnp.bfloat16, np.complex64, np.complex64),
    (np.uint8, int, np.uint8), (np.int16, int, np.int16), (np.uint64, float, np.float64),
    (np.float16, float, np.float16), (jnp.bfloat16, float, jnp.bfloat16),
    (np.float16, complex, np.complex64), (np.float64, complex, np.complex128),
    (int, float, np.float64), (int, complex, np.complex128), (int, int, np.int64),
    ("int32", "float32", np.float32), (_d("uint8"), _d("int8"), np.int16),
]


@pytest.mark.parametrize("a,b,expected", PROMOTE_TABLE,
                         ids=[f"{getattr(a, '__name__', a)}-{getattr(b, '__name__', b)}"
                              for a, b, _ in PROMOTE_TABLE])
def test_promote_types(x64, a, b, expected):
  assert jnp.promote_types(a, b) == np.dtype(expected)
  assert jnp.promote_types(b, a) == np.dtype(expected), "promotion is symmetric"


def test_promote_types_without_x64():
  """Without x64 no promotion makes a 64-bit type from 32-bit inputs; results that are
  64-bit anyway are not canonicalized (as in JAX)."""
  assert jnp.promote_types(np.uint32, np.int32) == np.int32
  assert jnp.promote_types(np.uint32, np.int8) == np.int32
  assert jnp.promote_types(np.int32, np.float32) == np.float32
  assert jnp.promote_types(np.uint64, np.int64) == np.float64
  assert jnp.promote_types(int, float) == np.float64


def test_no_promotion_path():
  """8-bit floats promote to nothing implicitly."""
  with pytest.raises(ValueError, match="float8_e4m3fn.*float16.*no available implicit"):
    jnp.promote_types(ml_dtypes.float8_e4m3fn, np.float16)


RESULT_TYPE_CASES = [
    # (id, args, dtype without x64) -- the examples of JAX's result_type documentation and
    # weak-type cases
    ("dtype_specifiers", ("int32", "float32"), np.float32),
    ("u16_i32", (np.uint16, np.dtype("int32")), np.int32),
    ("float_and_bf16_scalar", (1.0, jnp.bfloat16(2)), bf16),
    ("canonicalized", ("float64",), np.float32),
    ("py_int_float", (1, 1.0), np.float32),
    ("i8_py_int", (np.int8, 1), np.int8),
    ("i8_int_type", (np.int8, int), np.int8),
    ("i8_py_float", (np.int8, 1.0), np.float32),
    ("bool_py_int", (True, 1), np.int32),
    ("u32_i32", (np.uint32, np.int32), np.int32),
    ("arrays", (jnp.ones(2, jnp.int32), jnp.zeros(2)), np.float32),
    ("weak_array_and_f16", (jit(lambda x: x)(1.0), np.float16), np.float16),
]


@pytest.mark.parametrize("name,args,expected", RESULT_TYPE_CASES,
                         ids=[c[0] for c in RESULT_TYPE_CASES])
def test_result_type(name: str, args: tuple, expected):
  assert jnp.result_type(*args) == np.dtype(expected), name


def test_result_type_weak_flag():
  from jaxon._src import dtypes
  assert dtypes.result_type(1.0, return_weak_type_flag=True) == (np.dtype(np.float32), True)
  assert dtypes.result_type(1, np.int8, return_weak_type_flag=True) == (np.dtype(np.int8), False)
  assert dtypes.result_type(True, return_weak_type_flag=True) == (np.dtype(np.bool_), False)


@pytest.mark.parametrize("like", [np.float32, jnp.float32, "float32", np.dtype("float32"),
                                  np.float32(1.0)])
def test_dtype_of_dtype_likes(like):
  assert jaxon.dtypes.dtype(like) == np.float32
  assert jaxon.dtypes.float0 == np.dtype([("float0", np.void, 0)])


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e3m4", "float8_e4m3fnuz",
                                  "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn"])
def test_narrow_float_arrays(name):
  """The narrow floats are array dtypes: eager, jitted, weak scalars keep them, and they
  promote with no other float (as in JAX)."""
  dt = np.dtype(getattr(ml_dtypes, name))
  x = jnp.asarray([0.5, 1.0, 2.0], dtype=dt)
  assert x.dtype == dt
  for y in (x * 2, jaxon.jit(lambda a: a * 2)(x)):
    assert y.dtype == dt
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), [1.0, 2.0, 4.0])
  with pytest.raises(ValueError, match="no available implicit dtype promotion path"):
    jnp.promote_types(dt, jnp.float32)


def test_explicit_64_bit_dtype_without_x64_warns():
  """As JAX: a requested float64/int64 that narrows says so."""
  import warnings
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = jnp.array(1.0, dtype=jnp.float64)
    jnp.zeros(2, float)  # Python types name the default, not a 64-bit request
  assert x.dtype == np.float32
  assert [str(w.message).split(" requested in")[0] for w in caught] == [
      "Explicitly requested dtype float64"]
