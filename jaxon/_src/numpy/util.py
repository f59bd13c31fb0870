"""Argument handling shared by jaxon.numpy: dtype promotion and array checks.

These run on every eager operation, so the common cases take shortcuts: an Array that
already has the promoted type is passed through untouched, and in eager code a Python
scalar operand becomes a cached device constant instead of being copied to the device again
on each operation. On this path every Python call costs about as much as the work it does,
so helpers are few and loops are plain.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import lax
from jaxon._src.lax.sharding_constraint import apply_out_sharding
from jaxon._src.xla.array import Array, scalar_constant

_ARRAY_TYPES = (Array, core.Tracer)
_PYTHON_SCALARS = (bool, int, float, complex)
# A Python float or int (not bool: True * x is x's dtype only for numbers) next to an
# Array of one of these takes the Array's dtype and weak type, as JAX's lattice says.
_SMALL_SCALARS = frozenset({int, float})
_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def check_arraylike(fun_name: str, *args: Any) -> None:
  """NumPy converts lists implicitly; jaxon.numpy asks for arrays (so a list of a million
  floats is not silently traced element by element)."""
  for pos, arg in enumerate(args):
    if not (isinstance(arg, _ARRAY_TYPES) or type(arg) in _PYTHON_SCALARS
            or hasattr(arg, "__array__") or hasattr(arg, "dtype")):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                      f"{type(arg).__name__} at position {pos}. Convert it with "
                      f"jnp.asarray(...) first.")


def out_sharded(out: Any, out_sharding: Any, fun_name: str) -> Any:
  """`out` laid out as JAX's `out_sharding=` keyword asks (see
  `sharding_constraint.apply_out_sharding`); callers skip the call when it is None."""
  return apply_out_sharding(out, out_sharding, f"jnp.{fun_name}")


def check_python_int(x: int) -> None:
  """A Python int operand is a weakly typed int32 (int64 with x64) before it meets other
  operands, so one that does not fit raises, as in JAX, even next to an int8 or float32
  array (`int8_array + 300` wraps around instead: 300 is an int32)."""
  info = np.iinfo(dtypes.default_int_dtype())
  if not info.min <= x <= info.max:
    raise OverflowError(f"Python int {x} too large to convert to "
                        f"{dtypes.default_int_dtype().name}")


def convert_all(args: tuple, dtype: np.dtype, weak_type: bool) -> list[Any]:
  """`lax._convert_element_type(x, dtype, weak_type)` of each arg, with the shortcuts of
  the module docstring. A plain loop: in CPython 3.11 a comprehension is one more call."""
  out = []
  for x in args:
    if type(x) is Array and x.aval.dtype == dtype and x.aval.weak_type == weak_type:
      out.append(x)
    elif type(x) is int and not -2**31 <= x < 2**31:
      check_python_int(x)
      out.append(lax._convert_element_type(x, dtype, weak_type))
    elif type(x) in _PYTHON_SCALARS and core.is_eval_trace_current():
      out.append(scalar_constant(x, dtype, weak_type))  # traced, it must stay a literal
    else:
      out.append(lax._convert_element_type(x, dtype, weak_type))
  return out


def promote_dtypes(*args: Any) -> list[Any]:
  """Converts `args` to their common dtype by JAX's promotion lattice (weak types kept)."""
  if len(args) < 2:
    return list(args)
  return convert_all(args, *dtypes.operand_type(args))


def promote_args(fun_name: str, *args: Any) -> list[Any]:
  if len(args) == 2:
    x, y = args
    if type(x) is Array:
      if type(y) is Array:
        if x.aval.dtype == y.aval.dtype and x.aval.weak_type == y.aval.weak_type:
          return [x, y]  # eager `x * y` of one type: nothing to check or convert
      elif type(y) in _SMALL_SCALARS and x.aval.dtype in _FLOATS and -2**31 <= y < 2**31:
        if core.is_eval_trace_current():  # eager `x * 2.0`: the scalar takes x's type
          return [x, scalar_constant(y, x.aval.dtype, x.aval.weak_type)]
    elif type(y) is Array and type(x) in _SMALL_SCALARS and y.aval.dtype in _FLOATS and (
        -2**31 <= x < 2**31 and core.is_eval_trace_current()):
      return [scalar_constant(x, y.aval.dtype, y.aval.weak_type), y]
  check_arraylike(fun_name, *args)
  if len(args) < 2:
    return list(args)
  return convert_all(args, *_operand_type(fun_name, args))


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
  """Promotes to a common dtype, then to an inexact one (as `sin` of an int does)."""
  if len(args) == 1 and type(args[0]) is Array and dtypes.is_canonical_inexact(args[0].aval.dtype):
    return list(args)  # eager `sin(x)` of a float: nothing to check or convert
  check_arraylike(fun_name, *args)
  return convert_all(args, *_operand_type(fun_name, args, inexact=True))


def _operand_type(fun_name: str, args: tuple, inexact: bool = False) -> tuple[np.dtype, bool]:
  """`dtypes.operand_type`, whose refusal to promote PRNG keys with other dtypes is
  reported as JAX's TypeError naming the function (checked only on failure: the usual
  path pays nothing)."""
  try:
    return dtypes.operand_type(args, inexact)
  except ValueError:
    arg_dtypes = [dtypes.dtype(x, canonicalize=True) for x in args]
    if any(dtypes.is_extended(dt) for dt in arg_dtypes):
      raise TypeError(f"{fun_name} does not accept dtypes "
                      f"{', '.join(map(str, arg_dtypes))}.") from None
    raise
