"""Scalar types (`jnp.float32`, `jnp.int8`, …), dtype queries and constants of jaxon.numpy.

`jnp.float32` must serve two purposes: as a dtype argument anywhere NumPy or jaxon takes one
(`jnp.zeros(3, jnp.float32)`, `np.dtype(jnp.float32)`, `x.dtype == jnp.float32`), and as a
constructor whose call gives a jaxon Array, not a NumPy scalar (`jnp.float32(1)` is
`Array(1., dtype=float32)`). A class whose metaclass is `_ScalarMeta` does both: NumPy reads
its `dtype` attribute, and calling it converts with `jnp.asarray`.
"""
from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from jaxon._src import dtypes
from jaxon._src.numpy import lax_numpy


class _ScalarMeta(type):
  """The metaclass of jnp's scalar types: equal to, and hashing like, NumPy's type."""

  dtype: np.dtype

  def __hash__(cls) -> int:
    return hash(cls.dtype.type)

  def __eq__(cls, other: Any) -> bool:
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other: Any) -> bool:
    return not cls == other

  def __call__(cls, x: Any) -> Any:
    return lax_numpy.asarray(x, dtype=cls.dtype)

  def __instancecheck__(cls, instance: Any) -> bool:
    return isinstance(instance, cls.dtype.type)


def _scalar_type(name: str, np_type: Any) -> _ScalarMeta:
  dtype = np.dtype(np_type)
  doc = (f"The {dtype.name} scalar type: a dtype argument, or a constructor whose call "
         f"converts its argument to a {dtype.name} jaxon array.")
  return _ScalarMeta(name, (object,), {"dtype": dtype, "__doc__": doc,
                                       "__module__": "jaxon.numpy"})


bool_ = _scalar_type("bool_", np.bool_)
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
bfloat16 = _scalar_type("bfloat16", dtypes.bfloat16)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)
float8_e4m3fn = _scalar_type("float8_e4m3fn", dtypes.float8_e4m3fn)
float8_e5m2 = _scalar_type("float8_e5m2", dtypes.float8_e5m2)
float8_e4m3b11fnuz = _scalar_type("float8_e4m3b11fnuz", dtypes.float8_e4m3b11fnuz)
# The other narrow types of ml_dtypes that XLA knows (XLA's CPU runtime has no float6
# buffers, so float6 arrays only trace and lower, as in JAX).
float8_e4m3 = _scalar_type("float8_e4m3", ml_dtypes.float8_e4m3)
float8_e3m4 = _scalar_type("float8_e3m4", ml_dtypes.float8_e3m4)
float8_e4m3fnuz = _scalar_type("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _scalar_type("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = _scalar_type("float4_e2m1fn", ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type("float6_e2m3fn", ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type("float6_e3m2fn", ml_dtypes.float6_e3m2fn)
int1 = _scalar_type("int1", ml_dtypes.int1)
int2 = _scalar_type("int2", ml_dtypes.int2)
int4 = _scalar_type("int4", ml_dtypes.int4)
uint1 = _scalar_type("uint1", ml_dtypes.uint1)
uint2 = _scalar_type("uint2", ml_dtypes.uint2)
uint4 = _scalar_type("uint4", ml_dtypes.uint4)

# The default types of the current mode (float32/int32 unless x64 is on), as in JAX:
# `jnp.int_` is int64 here and canonicalizes when an array is made.
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128
single, double = float32, float64
csingle, cdouble = complex64, complex128

# NumPy's abstract and host-only types and its warning, as jnp re-exports them.
object_ = np.object_
character = np.character
flexible = np.flexible
ComplexWarning = np.exceptions.ComplexWarning

pi = math.pi
e = math.e
euler_gamma = float(np.euler_gamma)
inf = math.inf
nan = math.nan
newaxis = None


# ----------------------------------------------------------------------------- dtype queries

def _dtype_of(x: Any) -> np.dtype:
  """The dtype of a dtype-like (a type, NumPy's or ours, a name) or of an array."""
  if isinstance(x, (type, np.dtype, str)):
    return np.dtype(x)
  return dtypes.dtype(x)


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
  """Whether NumPy's casting rule `casting` allows `from_` (an array or dtype) to become
  `to`; an array's dtype decides, never its values (so tracers are fine)."""
  return bool(np.can_cast(_dtype_of(from_), _dtype_of(to), casting=casting))


_KINDS = {
    "bool": lambda dt: dt == np.bool_,
    "signed integer": lambda dt: dtypes.issubdtype(dt, np.signedinteger),
    "unsigned integer": lambda dt: dtypes.issubdtype(dt, np.unsignedinteger),
    "integral": dtypes.is_integer,
    "real floating": dtypes.is_float,
    "complex floating": dtypes.is_complex,
    "numeric": lambda dt: dt != np.bool_,
}


def isdtype(dtype: Any, kind: Any) -> bool:
  """The array API's kind test: `kind` is a dtype, one of 'bool', 'signed integer',
  'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric', or a
  tuple of those (any may match).

  Example: `jnp.isdtype(jnp.bfloat16, 'real floating')` is True.
  """
  dt = np.dtype(dtype)
  for k in kind if isinstance(kind, tuple) else (kind,):
    if isinstance(k, str):
      if k not in _KINDS:
        raise ValueError(f"isdtype: unknown kind {k!r}; expected a dtype or one of "
                         f"{sorted(_KINDS)}")
      if _KINDS[k](dt):
        return True
    elif dt == np.dtype(k):
      return True
  return False


def issubdtype(arg1: Any, arg2: Any) -> bool:
  """Whether dtype (or scalar type) `arg1` is `arg2` or below it in NumPy's hierarchy;
  bfloat16 and the float8 types count as floating."""
  return dtypes.issubdtype(arg1, arg2)


def finfo(dtype: Any) -> Any:
  """Machine limits of a floating dtype (bfloat16 and the float8 types included); for a
  complex dtype, those of its real part."""
  return dtypes.finfo(_dtype_of(dtype))


def iinfo(int_type: Any) -> Any:
  """Machine limits of an integer dtype."""
  return dtypes.iinfo(_dtype_of(int_type))
