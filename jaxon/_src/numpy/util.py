"""Argument handling shared by jaxon.numpy: dtype promotion and array checks."""
from __future__ import annotations

from typing import Any

from jaxon._src import core, dtypes
from jaxon._src.lax import lax
from jaxon._src.xla.array import Array

_ARRAY_TYPES = (Array, core.Tracer)


def check_arraylike(fun_name: str, *args: Any) -> None:
  """NumPy converts lists implicitly; jaxon.numpy asks for arrays (so a list of a million
  floats is not silently traced element by element)."""
  for pos, arg in enumerate(args):
    if not (isinstance(arg, _ARRAY_TYPES) or dtypes.is_python_scalar(arg)
            or hasattr(arg, "__array__") or hasattr(arg, "dtype")):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                      f"{type(arg).__name__} at position {pos}. Convert it with "
                      f"jnp.asarray(...) first.")


def promote_dtypes(*args: Any) -> list[Any]:
  """Converts `args` to their common dtype by JAX's promotion lattice (weak types kept)."""
  if len(args) < 2:
    return list(args)
  to_dtype, weak_type = dtypes.result_type(*args, return_weak_type_flag=True)
  return [lax._convert_element_type(x, to_dtype, weak_type) for x in args]


def promote_args(fun_name: str, *args: Any) -> list[Any]:
  check_arraylike(fun_name, *args)
  return promote_dtypes(*args)


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
  """Promotes to a common dtype, then to an inexact one (as `sin` of an int does)."""
  check_arraylike(fun_name, *args)
  to_dtype, weak_type = dtypes.result_type(*args, return_weak_type_flag=True)
  to_dtype = dtypes.to_inexact_dtype(to_dtype)
  return [lax._convert_element_type(x, to_dtype, weak_type) for x in args]
