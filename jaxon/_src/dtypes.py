"""Dtypes: canonicalization under the x64 flag, weak types, and JAX's promotion lattice.

A *weak type* is the type of a Python scalar (`1`, `2.0`, `1j`): it takes the dtype of the
array it meets (`jnp.ones(3, jnp.bfloat16) + 1.0` stays bfloat16) instead of widening it.
Promotion is the least upper bound in the lattice of `_LATTICE_EDGES`, where the weak
Python types are the nodes `i*`, `f*`, `c*`. With `jax_numpy_dtype_promotion='strict'` the
lattice keeps only the weak types' edges: arrays of different dtypes do not mix.
"""
from __future__ import annotations

import warnings

import functools
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from jaxon._src.config import (config, enable_x64 as enable_x64_flag, values as config_values,
                               x64_enabled)

bfloat16 = np.dtype(ml_dtypes.bfloat16).type
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn).type
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2).type
float8_e4m3b11fnuz = np.dtype(ml_dtypes.float8_e4m3b11fnuz).type
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3).type
float8_e3m4 = np.dtype(ml_dtypes.float8_e3m4).type
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz).type
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz).type
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu).type
float4_e2m1fn = np.dtype(ml_dtypes.float4_e2m1fn).type
float6_e2m3fn = np.dtype(ml_dtypes.float6_e2m3fn).type
float6_e3m2fn = np.dtype(ml_dtypes.float6_e3m2fn).type
bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

# The tangent dtype of integer and boolean values: zero bytes per element.
float0 = np.dtype([("float0", np.void, 0)])

# ----------------------------------------------------------------------------- extended dtypes


class extended(np.generic):  # noqa: N801 (JAX's name)
  """The scalar type above every extended dtype, for `issubdtype(dt, extended)`."""


class prng_key(extended):  # noqa: N801 (JAX's name)
  """The scalar type of PRNG key dtypes (`key<fry>`)."""


class ExtendedDType:
  """A dtype NumPy does not have: each element is stored as a small array of a NumPy dtype
  (its *physical* representation), which stays hidden from the user.

  A PRNG key is the example: `key<fry>` elements are uint32[2]. Arrays of an extended
  dtype have the logical shape only (a key array of shape (4,) is uint32[4, 2] on the
  device); the lowering of a program appends `element_shape` to every such aval, and the
  primitives that move elements around (reshape, slice, gather, concatenate, …) leave the
  trailing dimensions untouched. Arithmetic has no meaning on them and is refused.
  """

  type: type = extended
  name: str = "extended"
  element_shape: tuple[int, ...] = ()
  element_dtype: np.dtype = np.dtype(np.uint32)

  @property
  def itemsize(self) -> int:
    return self.element_dtype.itemsize * int(np.prod(self.element_shape, dtype=np.int64))

  def full(self, shape: tuple[int, ...], fill_value: Any) -> Any:
    """An array of `shape` of this dtype whose physical data is all `fill_value` (how
    `lax.full` and `zeros_like` make one): defined by each extended dtype."""
    raise NotImplementedError(f"arrays of dtype {self.name} cannot be filled")

  def __repr__(self) -> str:
    return self.name

  __str__ = __repr__


def is_extended(dt: Any) -> bool:
  return isinstance(dt, ExtendedDType)


# The narrow floats: each promotes only with itself and with weak (Python) scalars.
_FP8_DTYPES = [np.dtype(t) for t in (float8_e4m3fn, float8_e5m2, float8_e4m3b11fnuz,
                                     float8_e4m3, float8_e3m4, float8_e4m3fnuz,
                                     float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn,
                                     float6_e2m3fn, float6_e3m2fn)]
_CUSTOM_FLOATS = [np.dtype(bfloat16), *_FP8_DTYPES]
_BOOL, _F16, _BF16 = np.dtype(bool), np.dtype(float16), np.dtype(bfloat16)

_TO_32 = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
          np.dtype(np.float64): np.dtype(np.float32),
          np.dtype(np.complex128): np.dtype(np.complex64)}

_SUPPORTED = {np.dtype(t) for t in (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                                    uint64, float16, float32, float64, complex64, complex128)}
_SUPPORTED |= set(_CUSTOM_FLOATS)


# canonicalize_dtype's answers, by x64 flag (False, True) and by the dtype-like asked about
# (np.float32, "float32", np.dtype("float32"), float, …). Every operation canonicalizes
# dtypes, and np.dtype() plus the checks cost about a microsecond; a dict lookup does not.
# A key equal to another (np.dtype("int64") == int) always has the same answer.
_CANONICAL: tuple[dict[Any, np.dtype], dict[Any, np.dtype]] = ({}, {})


# The x64 flag, kept here by a config listener: every operation reads it, several times.
_x64 = x64_enabled()


def _track_x64(name: str, value: Any) -> None:
  global _x64
  if name == "jax_enable_x64":
    _x64 = bool(value)


config.on_update(_track_x64)
# `with jaxon.enable_x64(...)` too: the thread that enters or leaves the block notifies.
enable_x64_flag.watch(lambda: _track_x64("jax_enable_x64", config_values.jax_enable_x64))


# The inexact dtypes arrays can have, by x64 flag: `sin` of one needs no conversion.
_INEXACT_32 = frozenset(np.dtype(t) for t in (float16, float32, complex64, *_CUSTOM_FLOATS))
_CANONICAL_INEXACT = (_INEXACT_32, _INEXACT_32 | {np.dtype(float64), np.dtype(complex128)})


def is_canonical_inexact(dt: np.dtype) -> bool:
  return dt in _CANONICAL_INEXACT[_x64]


def canonicalize_dtype(dtype: Any) -> np.dtype:
  """The dtype an array of `dtype` actually gets: 64-bit types narrow unless x64 is on."""
  try:
    return _CANONICAL[_x64][dtype]
  except (KeyError, TypeError):  # not seen yet, or unhashable
    return _canonicalize_in(dtype, _x64)


def public_canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> Any:
  """`jax.dtypes.canonicalize_dtype`: an extended dtype (a key type) is refused unless
  `allow_extended_dtype`, as JAX refuses it (jaxon's own rules pass those through)."""
  if isinstance(dtype, ExtendedDType) and not allow_extended_dtype:
    raise ValueError(f"canonicalize_dtype called on extended dtype {dtype} with "
                     "allow_extended_dtype=False")
  return canonicalize_dtype(dtype)


def check_user_dtype_supported(dtype: Any, fun_name: str) -> None:
  """Warns, as JAX does, when a dtype the user asked for by name is narrowed (a 64-bit
  type without x64): the result silently having another dtype would surprise."""
  if dtype is None or _x64 or isinstance(dtype, ExtendedDType):
    return
  dt = np.dtype(dtype)
  narrowed = _TO_32.get(dt, dt)
  if narrowed != dt and not (isinstance(dtype, type) and dtype in (int, float, complex)):
    warnings.warn(f"Explicitly requested dtype {dt.name} requested in {fun_name} is not "
                  f"available, and will be truncated to dtype {narrowed.name}. To enable "
                  "more dtypes, set the jax_enable_x64 configuration option or the "
                  "JAX_ENABLE_X64 shell environment variable.", stacklevel=3)


def _canonicalize_in(dtype: Any, x64: bool) -> np.dtype:
  if isinstance(dtype, ExtendedDType):
    return dtype
  dt = np.dtype(dtype)
  if dt not in _SUPPORTED and dt != float0:
    raise TypeError(f"dtype {dt.name!r} is not a valid jaxon array type; jaxon supports "
                    f"{sorted(d.name for d in _SUPPORTED)}")
  out = dt if x64 else _TO_32.get(dt, dt)
  if isinstance(dtype, (np.dtype, type, str)):  # not values with a .dtype: 2.0 == float32(2)
    _CANONICAL[x64][dtype] = out
  return out


_PY_SCALAR_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64),
                     float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def default_int_dtype() -> np.dtype:
  return canonicalize_dtype(np.int64)


def default_float_dtype() -> np.dtype:
  return canonicalize_dtype(np.float64)


def default_complex_dtype() -> np.dtype:
  return canonicalize_dtype(np.complex128)


def is_python_scalar(x: Any) -> bool:
  return type(x) in _PY_SCALAR_DTYPES


def is_weakly_typed(x: Any) -> bool:
  """Python int, float and complex are weak; Python bool is not (JAX's rule)."""
  if type(x) in (int, float, complex):
    return True
  return getattr(getattr(x, "aval", None), "weak_type", False)


def dtype(x: Any, canonicalize: bool = False) -> np.dtype:
  """The dtype of a value: arrays, tracers, NumPy scalars, Python scalars or dtype-likes."""
  scalar_dtype = _PY_SCALAR_DTYPES.get(type(x))
  if scalar_dtype is not None:
    dt = scalar_dtype
  elif (aval := getattr(x, "aval", None)) is not None:  # arrays and tracers, directly
    dt = aval.dtype
  elif isinstance(x, (np.dtype, type, str)):  # before `.dtype`: np.float32 has one too
    dt = np.dtype(x)
  elif isinstance(x, ExtendedDType):
    return x
  elif hasattr(x, "dtype"):
    dt = np.dtype(x.dtype)
  else:
    dt = np.result_type(x)
  if not canonicalize:
    return dt
  out = _CANONICAL[_x64].get(dt)  # canonicalize_dtype's quick path, without the call
  return canonicalize_dtype(dt) if out is None else out


_ABSTRACT_TYPES = (np.generic, np.number, np.inexact, np.floating, np.complexfloating,
                   np.integer, np.signedinteger, np.unsignedinteger)


def issubdtype(a: Any, b: Any) -> bool:
  """`np.issubdtype` that also knows bfloat16 and the float8 types are floating, and
  places extended dtypes under their scalar type (`key<fry>` under `prng_key`). Answers
  are kept: shape and dtype rules ask the same few questions on every traced operation,
  and NumPy's answer costs microseconds."""
  try:
    return _subdtype_answers[a, b]
  except (KeyError, TypeError):  # not asked yet, or not hashable
    pass
  answer = _issubdtype(a, b)
  try:
    if len(_subdtype_answers) >= _MAX_SUBDTYPE_ANSWERS:
      _subdtype_answers.clear()
    _subdtype_answers[a, b] = answer
  except TypeError:
    pass
  return answer


_subdtype_answers: dict[tuple[Any, Any], bool] = {}
_MAX_SUBDTYPE_ANSWERS = 4096


def _issubdtype(a: Any, b: Any) -> bool:
  if isinstance(a, ExtendedDType):
    return a == b or (isinstance(b, type) and issubclass(a.type, b))
  if isinstance(b, ExtendedDType):
    return False
  if a in _ABSTRACT_TYPES:
    return bool(np.issubdtype(a, b))
  dt = np.dtype(a)
  if dt in _CUSTOM_FLOATS:
    if b in _ABSTRACT_TYPES:
      return b in (np.floating, np.inexact, np.number, np.generic)
    return dt == np.dtype(b)
  return bool(np.issubdtype(dt, b))


def is_float(dt: Any) -> bool:
  return issubdtype(dt, np.floating)


def is_complex(dt: Any) -> bool:
  return issubdtype(dt, np.complexfloating)


def is_inexact(dt: Any) -> bool:
  return issubdtype(dt, np.inexact)


def is_integer(dt: Any) -> bool:
  return issubdtype(dt, np.integer)


def is_bool(dt: Any) -> bool:
  return np.dtype(dt) == _BOOL


def finfo(dtype: Any) -> ml_dtypes.finfo:
  return ml_dtypes.finfo(np.dtype(dtype))


def iinfo(int_type: Any) -> ml_dtypes.iinfo:
  return ml_dtypes.iinfo(np.dtype(int_type))


# ----------------------------------------------------------------------------- promotion

_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"


def _lattice_edges(x64: bool) -> dict[Any, list[Any]]:
  """Each node's immediate successors. Without x64, no promotion may make a 64-bit type
  from 32-bit inputs: the one edge that would (uint32 x int32 -> int64) goes to int32."""
  d = np.dtype
  u8, u16, u32, u64 = d(uint8), d(uint16), d(uint32), d(uint64)
  i8, i16, i32, i64 = d(int8), d(int16), d(int32), d(int64)
  f32, f64, c64, c128 = d(float32), d(float64), d(complex64), d(complex128)
  return {
      _BOOL: [_WEAK_INT],
      u8: [i16, u16], u16: [i32, u32], u32: [i64 if x64 else i32, u64], u64: [_WEAK_FLOAT],
      _WEAK_INT: [u8, i8], i8: [i16], i16: [i32], i32: [i64], i64: [_WEAK_FLOAT],
      _WEAK_FLOAT: [*_FP8_DTYPES, _BF16, _F16, _WEAK_COMPLEX],
      **{fp8: [] for fp8 in _FP8_DTYPES},
      _BF16: [f32], _F16: [f32], f32: [f64, c64], f64: [c128],
      _WEAK_COMPLEX: [c64], c64: [c128], c128: [],
  }


def _strict_lattice_edges() -> dict[Any, list[Any]]:
  """A Python scalar still takes the dtype of the array it meets (of its kind or a wider
  kind: `ints + 1.0` is a weak float); dtypes have no edges at all."""
  nodes = [n for n in _lattice_edges(True) if not isinstance(n, str)]
  ints = [n for n in nodes if n.kind in "iu"]
  floats = [n for n in nodes if n.kind == "f" or n in _CUSTOM_FLOATS]
  complexes = [n for n in nodes if n.kind == "c"]
  return {**{n: [] for n in nodes}, _WEAK_INT: [_WEAK_FLOAT, *ints],
          _WEAK_FLOAT: [_WEAK_COMPLEX, *floats], _WEAK_COMPLEX: complexes}


# The lattices by name: standard without x64 ("x32") and with it ("x64"), and "strict".
_LATTICE_EDGES = {"x32": _lattice_edges(False), "x64": _lattice_edges(True),
                  "strict": _strict_lattice_edges()}


def _lattice(x64: bool) -> str:
  """The lattice promotion uses now (the strict flag is read per thread, since its
  context manager sets it for one)."""
  if config_values.jax_numpy_dtype_promotion == "strict":
    return "strict"
  return "x64" if x64 else "x32"


@functools.cache
def _upper_bounds(node: Any, lattice: str) -> frozenset:
  return frozenset({node}).union(*(_upper_bounds(n, lattice)
                                   for n in _LATTICE_EDGES[lattice][node]))


class TypePromotionError(ValueError):
  pass


def _join(a: Any, b: Any) -> Any:
  return _join_in(a, b, _lattice(_x64))


@functools.cache
def _join_in(a: Any, b: Any, lattice: str) -> Any:
  common = _upper_bounds(a, lattice) & _upper_bounds(b, lattice)
  least = [n for n in common if common <= _upper_bounds(n, lattice)]
  if not least:
    if lattice == "strict":
      raise TypePromotionError(
          f"Input dtypes {_node_name(a)!r} and {_node_name(b)!r} have no available implicit "
          "dtype promotion path when jax_numpy_dtype_promotion=strict. Cast the inputs "
          "explicitly to the output type you want, or set "
          "jax_numpy_dtype_promotion=standard.")
    raise TypePromotionError(
        f"Input dtypes {_node_name(a)!r} and {_node_name(b)!r} have no available implicit "
        "dtype promotion path. Convert one of them explicitly with .astype(...).")
  return least[0]


def _node_name(node: Any) -> str:
  return node if isinstance(node, str) else node.name


def _node_of(dt: np.dtype, weak: bool) -> Any:
  if weak:
    if dt.kind in "iub":
      return _WEAK_INT if dt.kind != "b" else _BOOL
    if dt.kind == "f" or dt in _CUSTOM_FLOATS:
      return _WEAK_FLOAT
    if dt.kind == "c":
      return _WEAK_COMPLEX
  return dt


_PY_TYPE_NODES = ((int, _WEAK_INT), (float, _WEAK_FLOAT), (complex, _WEAK_COMPLEX))
_WEAK_NODE_PY_DTYPE = {_WEAK_INT: np.dtype(int64), _WEAK_FLOAT: np.dtype(float64),
                       _WEAK_COMPLEX: np.dtype(complex128)}


def promote_types(a: Any, b: Any) -> np.dtype:
  """The dtype both `a` and `b` promote to. Dtypes are strong; the Python types `int`,
  `float` and `complex` are weak (`promote_types('uint8', int)` is uint8). Like JAX, the
  result is not canonicalized: a weak result is the 64-bit type of its kind."""
  node = _join(_type_node(a), _type_node(b))
  return _WEAK_NODE_PY_DTYPE[node] if isinstance(node, str) else np.dtype(node)


def _type_node(t: Any) -> Any:
  # Identity, not `==`: np.dtype('int64') == int is True.
  return next((node for py_type, node in _PY_TYPE_NODES if t is py_type), None) or np.dtype(t)


def _dtype_and_weakness(x: Any) -> tuple[np.dtype, bool]:
  """`x`'s dtype as promotion sees it: canonical (64-bit types narrowed when x64 is off,
  as JAX does before promoting) and whether it is weakly typed."""
  if type(x) in (int, float, complex):
    return _PY_SCALAR_DTYPES[type(x)], True
  if any(x is t for t in (int, float, complex)):
    return _PY_SCALAR_DTYPES[x], True
  if isinstance(x, (np.dtype, str)) or (isinstance(x, type) and issubclass(x, np.generic)):
    return canonicalize_dtype(x), False
  return dtype(x, canonicalize=True), is_weakly_typed(x)


def result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
  """The canonical dtype of an operation on `args`, following JAX's promotion lattice."""
  if not args:
    raise ValueError("at least one array or dtype is required")
  out = operand_type(args)
  return out if return_weak_type_flag else out[0]


def operand_type(args: Sequence[Any], inexact: bool = False) -> tuple[np.dtype, bool]:
  """(dtype, weak type) that jaxon.numpy converts the operands `args` to: their
  `result_type`, made inexact if asked (as `sin` of an int computes in float)."""
  # Every operation asks, so this is a plain loop that reads arrays and tracers (the usual
  # operands) inline: a call per operand would cost more than the (cached) promotion.
  key = []
  for x in args:
    aval = getattr(x, "aval", None)
    if aval is not None:
      key.append((aval.dtype, aval.weak_type))
    else:
      key.append(_PY_SCALAR_KEYS.get(type(x)) or _dtype_and_weakness(x))
  return _promote(tuple(key), _x64, inexact, _lattice(_x64))


# (dtype, weak type) of each Python scalar type; bool is strong (JAX's rule).
_PY_SCALAR_KEYS = {t: (dt, t is not bool) for t, dt in _PY_SCALAR_DTYPES.items()}


@functools.cache
def _promote(dtypes_and_weakness: tuple[tuple[np.dtype, bool], ...], x64: bool,
             inexact: bool, lattice: str) -> tuple[np.dtype, bool]:
  """(canonical dtype, weak type) of the join of the inputs; cached, since every
  operation asks and the combinations in a program are few."""
  distinct = {dt for dt, _ in dtypes_and_weakness}
  extended_dtypes = [dt for dt in distinct if isinstance(dt, ExtendedDType)]
  if extended_dtypes:  # promotes only with itself, and is never made inexact
    if len(distinct) > 1:
      raise ValueError(f"dtype={extended_dtypes[0]} is not a valid dtype for JAX type "
                       "promotion.")
    if inexact:
      raise TypeError(f"Cannot interpret '{extended_dtypes[0]}' as a data type for "
                      "arithmetic: PRNG keys only support shape operations and ==.")
    return extended_dtypes[0], False
  node = None
  for dt, weak in dtypes_and_weakness:
    arg_node = _node_of(dt, weak)
    node = arg_node if node is None else _join_in(node, arg_node, lattice)
  if isinstance(node, str):
    out, weak = _canonicalize_in(_WEAK_NODE_PY_DTYPE[node], x64), True
  else:
    out, weak = _canonicalize_in(node, x64), False
  if inexact:
    out = _canonicalize_in(to_inexact_dtype(out), x64)
  return out, weak


def to_inexact_dtype(dt: Any) -> np.dtype:
  """The float dtype a function like `sin` computes integer inputs in. Not a promotion: JAX
  computes bool and ints of up to 32 bits in float32 even with x64 on, so only a 64-bit int
  (which exists only under x64) reaches the default float."""
  dt = np.dtype(dt)
  if is_inexact(dt):
    return dt
  return default_float_dtype() if dt.itemsize == 8 else np.dtype(np.float32)


def short_name(dt: np.dtype) -> str:
  """`f32`, `i32`, `bool`, `bf16`: the dtype names jaxprs print."""
  if isinstance(dt, ExtendedDType):
    return dt.name
  dt = np.dtype(dt)
  if dt == float0:
    return "float0"
  if dt == _BOOL:
    return "bool"
  if dt == _BF16:
    return "bf16"
  if dt in _FP8_DTYPES:  # float8_e4m3fn prints as f8_e4m3fn
    return dt.name.replace("float", "f", 1)
  return f"{dt.kind}{dt.itemsize * 8}"


def itemsize_bits(dtype: Any) -> int:
  """Bits per element: 4 for int4 and float4_e2m1fn (which NumPy stores a byte apiece),
  8 for bool."""
  if dtype is None:
    raise ValueError("dtype cannot be None.")
  dt = np.dtype(dtype)
  if dt.itemsize == 1 and dt.kind == "V":  # ml_dtypes' narrow types: int2/4, float4/6/8
    info = ml_dtypes.finfo if dt.name.startswith("float") else ml_dtypes.iinfo
    return info(dt).bits
  return dt.itemsize * 8


def scalar_type_of(x: Any) -> type:
  """The Python scalar type (bool, int, float or complex) of `x`'s dtype: what a value of
  it converts to, and the weak type it stands for in promotion."""
  dt = dtype(x)
  for kind, scalar_type in ((is_bool, bool), (is_integer, int), (is_float, float),
                            (is_complex, complex)):
    if kind(dt):
      return scalar_type
  raise TypeError(f"Invalid scalar value {x!r} of dtype {dt}: scalar_type_of takes values "
                  "of boolean or numeric dtypes.")
