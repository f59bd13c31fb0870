"""Operators and methods of Array and Tracer, defined once in terms of jaxon.numpy.

The runtime's Array and the core's Tracer live below this layer; installing the operators
from here keeps both layers free of NumPy semantics, and makes `x + y` mean the same thing
whether `x` is concrete or traced. The method set is JAX's `Array`'s: NumPy methods that
would mutate (`fill`, `put`, `sort` in place, `resize`, …) are absent, as in JAX, and `flat`
raises. Methods take the jnp function's arguments; `out=` must be None (arrays are immutable).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes, traceback_util
from jaxon._src.errors import ConcretizationTypeError
from jaxon._src.lax import lax, shape_ops, slicing, structural
from jaxon._src.numpy import (creation, indexing, lax_numpy, linear, reductions, searching,
                              shape, sorting, ufuncs)
from jaxon._src.xla.array import Array


def _defer_to_unrecognized(binary: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
  """Returns NotImplemented for operands jaxon does not know, so Python tries the other
  side's reflected operator."""
  @traceback_util.inline_api_boundary
  def op(self: Any, other: Any) -> Any:
    if not _accepted(other):
      return NotImplemented
    try:  # an API boundary, inline: `x + y` is hot
      return binary(self, other)
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return op


def _accepted(x: Any) -> bool:
  """Arrays, scalars and array-likes; not objects that opt out of NumPy's binary
  operators with `__array_ufunc__ = None` (sparse arrays: theirs handle dense operands)."""
  # Python scalars first: `isinstance(x, Array)` of anything but an Array runs the Python
  # `__instancecheck__` of Array's metaclass.
  return isinstance(x, (float, int, Array, core.Tracer, complex)) or (
      hasattr(x, "dtype") and getattr(x, "__array_ufunc__", True) is not None)


def _swap(binary: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
  return lambda x, y: binary(y, x)


# ----------------------------------------------------------------------------- methods whose
# signature differs from their jnp function's

def _compress(self: Any, condition: Any, axis: int | None = None, *, out: None = None,
              size: int | None = None, fill_value: Any = 0) -> Any:
  """`x.compress(condition)` is `jnp.compress(condition, x)`: the method takes the array
  first."""
  return searching.compress(condition, self, axis, out=out, size=size, fill_value=fill_value)


def _argpartition(self: Any, kth: int | Sequence[int], axis: int = -1,
                  kind: str = "introselect", order: None = None) -> Any:
  if kind != "introselect":
    raise TypeError(f"x.argpartition: kind={kind!r} is not supported; only the default "
                    "'introselect' is.")
  if order is not None:
    raise TypeError("x.argpartition: the 'order' argument is not supported (jaxon arrays "
                    "have no structured dtypes).")
  return sorting.argpartition(self, kth, axis)


# JAX's var, std, argsort, dot and repeat methods lack jnp's newer `mean`, `dtype` and
# `out_sharding` keywords.

def _dot(self: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None
         ) -> Any:
  return linear.dot(self, b, precision=precision, preferred_element_type=preferred_element_type)


def _repeat(self: Any, repeats: Any, axis: int | None = None, *,
            total_repeat_length: int | None = None) -> Any:
  return shape.repeat(self, repeats, axis, total_repeat_length=total_repeat_length)


def _var(self: Any, axis: reductions.Axis = None, dtype: Any = None, out: None = None,
         ddof: int = 0, keepdims: bool = False, *, where: Any = None,
         correction: int | float | None = None) -> Any:
  return reductions.var(self, axis, dtype, out, ddof, keepdims, where=where,
                        correction=correction)


def _std(self: Any, axis: reductions.Axis = None, dtype: Any = None, out: None = None,
         ddof: int = 0, keepdims: bool = False, *, where: Any = None,
         correction: int | float | None = None) -> Any:
  return reductions.std(self, axis, dtype, out, ddof, keepdims, where=where,
                        correction=correction)


def _argsort(self: Any, axis: int | None = -1, *, kind: Any = None, order: None = None,
             stable: bool = True, descending: bool = False) -> Any:
  return sorting.argsort(self, axis, kind=kind, order=order, stable=stable,
                         descending=descending)


def _iter_rows(self: Array) -> Any:
  """A concrete array's rows, as JAX gives them: one `unstack` per 100 rows, not one
  indexing operation per row (`key, sub = random.split(key)` unpacks this way). An array
  spread over several devices is indexed row by row."""
  if not self.aval.shape:
    raise TypeError("iteration over a 0-d array")
  n = self.aval.shape[0]
  if n and len(self.sharding.device_set) > 1:
    return (self[i] for i in range(n))
  if n <= _ROWS_PER_UNSTACK:
    return iter(structural.unstack(self))
  return (row for start in range(0, n, _ROWS_PER_UNSTACK)
          for row in structural.unstack(slicing.slice_in_dim(
              self, start, min(start + _ROWS_PER_UNSTACK, n))))


_ROWS_PER_UNSTACK = 100


def _copy(self: Any) -> Any:
  return lax_numpy.copy(self)


def _byteswap(self: Any, inplace: bool = False) -> Any:
  """The array with each element's bytes in reverse order (NumPy's `byteswap`)."""
  if inplace:
    raise ValueError("Inplace byteswapping is not supported: jaxon arrays are immutable.")
  itemsize = self.dtype.itemsize
  if itemsize == 1:
    return self
  unsigned = np.dtype(f"uint{8 * itemsize}")
  as_bytes = lax.bitcast_convert_type(lax.bitcast_convert_type(self, unsigned), np.uint8)
  return lax.bitcast_convert_type(shape_ops.rev(as_bytes, (as_bytes.ndim - 1,)), self.dtype)


def _deepcopy(self: Any, memo: Any) -> Any:
  return lax_numpy.copy(self)


def _to_device(self: Any, device: Any, *, stream: Any = None) -> Any:
  """The array on `device`: jaxon places every array on its single default device, so
  this is the array itself."""
  if stream is not None:
    raise NotImplementedError("x.to_device: the 'stream' argument is not supported.")
  return self


def _flat(self: Any) -> Any:
  raise NotImplementedError("jaxon arrays do not implement the arr.flat property (it "
                            "iterates or assigns element by element); use arr.ravel() or "
                            "arr.flatten() instead.")


def _round(self: Any, ndigits: int | None = None) -> Any:
  """`round(x)`: Python's rule, an integer result unless `ndigits` is given."""
  out = ufuncs.round(self, ndigits or 0)
  return out if ndigits is not None else out.astype(dtypes.default_int_dtype())


def _array_namespace(self: Any, *, api_version: str | None = None) -> Any:
  import jaxon.numpy
  return jaxon.numpy


# ----------------------------------------------------------------------------- view

def _view(self: Any, dtype: Any = None, type: None = None) -> Any:
  """The array's bits reinterpreted as `dtype`, as NumPy's `view`: with a narrower dtype
  the last axis grows by the size ratio, with a wider one it shrinks (and must divide)."""
  if type is not None:
    raise NotImplementedError("x.view: the 'type' argument is not supported (there is one "
                              "array type).")
  if dtype is None:
    return self
  new = dtypes.canonicalize_dtype(dtype)
  old = np.dtype(self.dtype)
  if new == old:
    return self
  if old.itemsize != new.itemsize and self.ndim == 0:
    raise ValueError(f"x.view({new.name}): changing the dtype of a 0-d {old.name} array is "
                     f"only supported if the itemsize is unchanged.")
  x = _as_real_bits(self)
  real_new = _real_part_dtype(new) if dtypes.is_complex(new) else new
  x = _bitcast_last_axis(x, np.dtype(np.uint8) if real_new == np.bool_ else real_new)
  if real_new == np.bool_:
    x = lax.ne(x, np.zeros((), np.uint8))
  return _pairs_to_complex(x) if dtypes.is_complex(new) else x


def _real_part_dtype(dt: np.dtype) -> np.dtype:
  return np.dtype(np.float32 if dt == np.complex64 else np.float64)


def _as_real_bits(x: Any) -> Any:
  """A non-complex, non-bool array with the same bytes as `x` (XLA bitcasts neither)."""
  if x.dtype == np.bool_:
    return lax.convert_element_type(x, np.uint8)
  if dtypes.is_complex(x.dtype):
    parts = shape.stack([ufuncs.real(x), ufuncs.imag(x)], axis=-1)
    return shape.reshape(parts, (*x.shape[:-1], 2 * x.shape[-1]) if x.ndim else (2,))
  return x


def _pairs_to_complex(x: Any) -> Any:
  pairs = shape.reshape(x, (*x.shape[:-1], x.shape[-1] // 2, 2))
  return lax.complex(pairs[..., 0], pairs[..., 1])


def _bitcast_last_axis(x: Any, new: np.dtype) -> Any:
  old_size, new_size = np.dtype(x.dtype).itemsize, new.itemsize
  if old_size == new_size:
    return lax.bitcast_convert_type(x, new)
  if old_size > new_size:
    out = lax.bitcast_convert_type(x, new)
    return shape.reshape(out, (*x.shape[:-1], x.shape[-1] * (old_size // new_size)))
  ratio = new_size // old_size
  if x.ndim == 0 or x.shape[-1] % ratio:
    raise ValueError(f"x.view({new.name}): the size of the last axis, "
                     f"{x.shape[-1] if x.ndim else 1} {np.dtype(x.dtype).name} elements, is "
                     f"not a multiple of the {ratio} that make one {new.name} element.")
  grouped = shape.reshape(x, (*x.shape[:-1], x.shape[-1] // ratio, ratio))
  return lax.bitcast_convert_type(grouped, new)


# ----------------------------------------------------------------------------- host values

def _host_value(self: Any, method: str) -> np.ndarray:
  """The concrete value of an Array, or of a tracer that knows one; a traced value has
  none, so `method` (which returns Python data) cannot run under a transformation."""
  if isinstance(self, core.Tracer):
    value = self.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          self, f"The {method}() method was called on a traced array: it returns host data, "
                "which a traced value does not have.")
    return np.asarray(value)
  return np.asarray(self)


def _item(self: Any, *args: Any) -> Any:
  return _host_value(self, "item").item(*args)


def _tolist(self: Any) -> Any:
  return _host_value(self, "tolist").tolist()


def _tobytes(self: Any, order: str = "C") -> bytes:
  return _host_value(self, "tobytes").tobytes(order)


# ----------------------------------------------------------------------------- the tables

# Operators with a reflected twin: `__add__` and `__radd__` from one entry.
_BINARY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    # arithmetic, comparison, bitwise (ufuncs)
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "divmod": ufuncs.divmod, "pow": ufuncs.power, "and": ufuncs.bitwise_and,
    "or": ufuncs.bitwise_or, "xor": ufuncs.bitwise_xor, "lshift": ufuncs.left_shift,
    "rshift": ufuncs.right_shift,
    # matmul (linear)
    "matmul": linear.matmul,
}

_METHODS: dict[str, Any] = {
    # unary operators (ufuncs); comparisons have no reflected twin (Python swaps `<` and `>`)
    "__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.abs,
    "__invert__": ufuncs.invert, "__round__": _round,
    "__eq__": _defer_to_unrecognized(ufuncs.equal),
    "__ne__": _defer_to_unrecognized(ufuncs.not_equal),
    "__lt__": _defer_to_unrecognized(ufuncs.less),
    "__le__": _defer_to_unrecognized(ufuncs.less_equal),
    "__gt__": _defer_to_unrecognized(ufuncs.greater),
    "__ge__": _defer_to_unrecognized(ufuncs.greater_equal),
    "real": property(ufuncs.real), "imag": property(ufuncs.imag), "conj": ufuncs.conj,
    "conjugate": ufuncs.conjugate, "round": ufuncs.round, "clip": ufuncs.clip,
    # reductions
    "sum": reductions.sum, "prod": reductions.prod, "max": reductions.max, "min": reductions.min,
    "mean": reductions.mean, "var": _var, "std": _std, "all": reductions.all,
    "any": reductions.any, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "ptp": reductions.ptp, "cumsum": reductions.cumsum, "cumprod": reductions.cumprod,
    # shape methods: reshape, transpose, T, squeeze, …
    "reshape": shape.method_reshape, "transpose": shape.method_transpose,
    "T": property(shape.transpose), "mT": property(shape.matrix_transpose),
    "squeeze": shape.squeeze, "ravel": shape.ravel, "flatten": shape.ravel,
    "swapaxes": shape.swapaxes, "repeat": _repeat, "astype": shape.astype,
    "view": _view, "flat": property(_flat),
    # matrices (creation)
    "diagonal": creation.diagonal, "trace": creation.trace,
    # indexing: __getitem__, __iter__, at, take and friends (searching)
    "__getitem__": indexing.getitem, "__iter__": _iter_rows,
    "at": property(indexing._IndexUpdateHelper),
    "take": searching.take, "compress": _compress, "choose": searching.choose,
    "nonzero": searching.nonzero, "searchsorted": searching.searchsorted,
    # dot, sort, argsort, argpartition
    "dot": _dot, "sort": sorting.sort, "argsort": _argsort,
    "argpartition": _argpartition,
    # copies, devices, host data, sizes
    "copy": _copy, "__copy__": _copy, "__deepcopy__": _deepcopy, "byteswap": _byteswap,
    "to_device": _to_device,
    "tobytes": _tobytes, "__array_namespace__": _array_namespace,
    "itemsize": property(lambda self: self.dtype.itemsize),  # keys' too: 8 bytes
    "nbytes": property(lambda self: self.size * self.dtype.itemsize),
}

# Array has its own fast `item` and `tolist`; a tracer gets them here (concrete tracers
# answer, the others raise a ConcretizationTypeError).
_TRACER_METHODS: dict[str, Any] = {"item": _item, "tolist": _tolist}


def install(cls: type, methods: dict[str, Any] = _METHODS) -> None:
  for name, fn in _BINARY_OPERATORS.items():
    setattr(cls, f"__{name}__", _defer_to_unrecognized(fn))
    setattr(cls, f"__r{name}__", _defer_to_unrecognized(_swap(fn)))
  for name, fn in methods.items():
    setattr(cls, name, fn)


install(Array, {**_METHODS, "clone": _copy})  # JAX's tracers have no `clone`
# A tracer's rows are indexed one by one, as JAX's are (the jaxprs show `index_in_dim`s).
install(core.Tracer, {**{k: v for k, v in _METHODS.items() if k != "__iter__"},
                      **_TRACER_METHODS})
