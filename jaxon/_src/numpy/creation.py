"""Array creation in jaxon.numpy: ranges (`arange`, `linspace`, `logspace`, `geomspace`),
matrices (`eye`, `tri`, `tril`, `triu`, `diag`, `diagonal`), grids (`meshgrid`, `indices`,
`fromfunction`) and the index helpers (`tril_indices`, `diag_indices`, …).

Sizes decide shapes, so they must be concrete (a traced `num` or `N` raises a
ConcretizationTypeError naming the argument); values such as `linspace`'s `start` and
`stop` or `eye`'s `k` may be traced, and `linspace` is differentiable in its endpoints.
Integer ranges are generated on the device with `iota`; the index helpers compute their
(static) answer with NumPy.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import api, core, dtypes
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import lax_numpy, reductions, searching, ufuncs, util
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.xla.eager_plans import memoize_eager_operations


def _concrete_int(fun_name: str, what: str, value: Any) -> int:
  return core.concrete_or_error(
      operator.index, value,
      f"The {what} argument of jnp.{fun_name} must be a concrete integer (it decides the "
      f"shape of the result).")


def _int_dtype(dtype: Any) -> np.dtype:
  return dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype)


def _float_dtype(dtype: Any) -> np.dtype:
  return dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)


# ----------------------------------------------------------------------------- ranges

def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None, out_sharding: Any = None) -> Any:
  """Evenly spaced values in `[start, stop)` with spacing `step` (`arange(n)` is
  `0, 1, …, n - 1`).

  The bounds decide the length, so they must be concrete. The dtype is by default the
  arguments' promoted one (int32 for Python ints, float32 for floats, without x64).
  `device` (a Device or a Sharding) is where the result is committed.

  Example: `jnp.arange(1, 10, 3)` is `[1, 4, 7]` (int32).
  """
  return lax_numpy.place("arange", _arange(start, stop, step, dtype), device, out_sharding)


def _arange(start: Any, stop: Any, step: Any, dtype: Any) -> Any:
  if stop is None and step is None and core.is_symbolic_dim(start):  # shape-polymorphic
    return lax.iota(dtypes.canonicalize_dtype(dtype or np.int64), start)
  if stop is None:
    start, stop = 0, _concrete_scalar("stop", start)
  else:
    start, stop = _concrete_scalar("start", start), _concrete_scalar("stop", stop)
  step = _concrete_scalar("step", step)
  if dtype is None:
    dtype = dtypes.result_type(*(x for x in (start, stop, step) if x is not None))
  dtype = dtypes.canonicalize_dtype(dtype)
  step = 1 if step is None else step
  if step == 0:
    raise ZeroDivisionError("jnp.arange: step must not be zero.")
  if dtypes.is_integer(dtype) and all(_is_integral(x) for x in (start, stop, step)):
    return _integer_range(int(start), int(stop), int(step), dtype)
  return lax_numpy.asarray(np.arange(start, stop, step, dtype=dtype))


def _concrete_scalar(name: str, x: Any) -> Any:
  if x is None:
    return None
  value = core.concrete_or_error(
      None, x, f"It arose in the jnp.arange argument {name!r}: jnp.arange's bounds decide "
               f"the length of its result, so they must be concrete (for a traced size, use "
               f"a static argument, or jnp.linspace with a concrete num).")
  value = np.asarray(value)
  if value.ndim:
    raise ValueError(f"jnp.arange: {name} must be a scalar, got an array of shape "
                     f"{value.shape}.")
  return value.item()


def _is_integral(x: Any) -> bool:
  return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _integer_range(start: int, stop: int, step: int, dtype: np.dtype) -> Any:
  """`start + step * iota` on the device (no constant array in the program)."""
  out = lax.iota(dtype, len(range(start, stop, step)))
  if step != 1:
    out = lax.mul(out, lax._convert_element_type(step, dtype))
  if start != 0:
    out = lax.add(out, lax._convert_element_type(start, dtype))
  return out


@memoize_eager_operations
def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None) -> Any:
  """`num` evenly spaced values from `start` to `stop` (included if `endpoint`).

  Args:
    start, stop: scalars or arrays (broadcast together; the values run along `axis` of the
      result); they may be traced, and the result is differentiable in them.
    num: the number of values (concrete).
    endpoint: whether `stop` is the last value (else the spacing is (stop - start) / num).
    retstep: also return the spacing.
    dtype: the result dtype (integer results are floored); values are computed in the
      inexact dtype of `start` and `stop`.
    axis: where the values run in the result, for array `start`/`stop`.
    device: a Device or a Sharding to commit the values to (not the step, as in JAX).

  Example: `jnp.linspace(0., 1., 5)` is `[0., 0.25, 0.5, 0.75, 1.]`.
  """
  num = _concrete_int("linspace", "num", num)
  if num < 0:
    raise ValueError(f"jnp.linspace: number of samples, {num}, must be non-negative.")
  util.check_arraylike("linspace", start, stop)
  out_dtype, start, stop = _range_dtypes(start, stop, dtype)
  start, stop = jnp_shape.broadcast_arrays(start, stop)
  div = num - 1 if endpoint else num
  delta = ufuncs.divide(ufuncs.subtract(stop, start), div) if div > 0 else \
      lax.full_like(start, np.nan)
  out = _linear_values(start, stop, delta, num, endpoint)
  out = jnp_shape.moveaxis(out, 0, lax_utils.canonicalize_axis(axis, out.ndim))
  if dtypes.is_integer(out_dtype):
    out = ufuncs.floor(out)
  out = lax_numpy.place("linspace", lax.convert_element_type(out, out_dtype), device)
  return (out, delta) if retstep else out


def _range_dtypes(start: Any, stop: Any, dtype: Any) -> tuple[np.dtype, Any, Any]:
  """The result dtype, and `start`, `stop` as arrays of the inexact dtype to compute in."""
  if dtype is None:
    dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  dtype = dtypes.canonicalize_dtype(dtype)
  compute = dtypes.to_inexact_dtype(dtype)
  return dtype, lax_numpy.asarray(start, compute), lax_numpy.asarray(stop, compute)


def _linear_values(start: Any, stop: Any, delta: Any, num: int, endpoint: bool) -> Any:
  """`start + i * delta` for i < num along a new leading axis, ending exactly at `stop`
  when `endpoint` is set (as NumPy makes sure it does)."""
  bshape = np.shape(start)
  if num <= 1:
    return lax.broadcast_in_dim(start, (num, *bshape), range(1, len(bshape) + 1))
  rows = lax.broadcasted_iota(start.dtype, (num, *bshape), 0)
  trailing = range(1, len(bshape) + 1)
  out = lax.add(lax.mul(rows, lax.broadcast_in_dim(delta, rows.shape, trailing)),
                lax.broadcast_in_dim(start, rows.shape, trailing))
  if endpoint:
    out = shape_ops.concatenate(
        [slicing.slice_in_dim(out, 0, num - 1), lax.broadcast_in_dim(stop, (1, *bshape),
                                                                     trailing)], 0)
  return out


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
  """`base ** linspace(start, stop, num)`: `num` values evenly spaced on a log scale from
  `base ** start` to `base ** stop`. `base` may be an array (broadcast with `start` and
  `stop`).

  Example: `jnp.logspace(0., 3., 4)` is `[1., 10., 100., 1000.]`.
  """
  util.check_arraylike("logspace", start, stop, base)
  out_dtype, start, stop = _range_dtypes(start, stop, dtype)
  base = lax_numpy.asarray(base, start.dtype)
  ndim = len(lax.broadcast_shapes(np.shape(start), np.shape(stop), np.shape(base)))
  start, stop, base = (lax_numpy.array(x, ndmin=ndim) for x in (start, stop, base))
  exponents = linspace(start, stop, num, endpoint, axis=axis)
  base = jnp_shape.expand_dims(base, lax_utils.canonicalize_axis(axis, ndim + 1))
  return lax.convert_element_type(ufuncs.power(base, exponents), out_dtype)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
  """`num` values evenly spaced on a log scale from `start` to `stop` (a geometric
  progression), with exactly `start` and `stop` at the ends. Both ends must have the same
  sign and be non-zero.

  Example: `jnp.geomspace(1., 1000., 4)` is `[1., 10., 100., 1000.]`.
  """
  util.check_arraylike("geomspace", start, stop)
  out_dtype, start, stop = _range_dtypes(start, stop, dtype)
  if not any(isinstance(x, core.Tracer) for x in (start, stop)) and (
      np.any(np.asarray(start) == 0) or np.any(np.asarray(stop) == 0)):
    raise ValueError("jnp.geomspace: a geometric sequence cannot include zero; got "
                     f"start={start} and stop={stop}.")
  start, stop = jnp_shape.broadcast_arrays(start, stop)
  sign = ufuncs.sign(start)
  logs = [ufuncs.log10(ufuncs.divide(x, sign)) for x in (start, stop)]
  out = ufuncs.multiply(logspace(*logs, num, endpoint, dtype=start.dtype), sign)
  if num > 0:
    ends = [slicing.slice_in_dim(out, 1, num - 1 if endpoint and num > 1 else num)]
    if endpoint and num > 1:
      ends.append(jnp_shape.expand_dims(stop, 0))
    out = jnp_shape.concatenate([jnp_shape.expand_dims(start, 0), *ends], 0)
  out = jnp_shape.moveaxis(out, 0, lax_utils.canonicalize_axis(axis, out.ndim))
  return lax.convert_element_type(out, out_dtype)


# ----------------------------------------------------------------------------- matrices

def _offset_mask(fun_name: str, compare: Callable[[Any, Any], Any], N: Any, M: Any, k: Any
                 ) -> Any:
  """The boolean (N, M) matrix `compare(i + k, j)` over its row and column indices i, j
  (`k` may be traced)."""
  N = _concrete_int(fun_name, "N", N)
  M = N if M is None else _concrete_int(fun_name, "M", M)
  if N < 0 or M < 0:
    raise ValueError(f"jnp.{fun_name}: negative dimensions are not allowed, got N={N}, "
                     f"M={M}.")
  util.check_arraylike(fun_name, k)
  if not dtypes.is_integer(dtypes.dtype(k)):
    raise TypeError(f"jnp.{fun_name}: k must be an integer, got {k!r}.")
  int_dtype = dtypes.default_int_dtype()
  rows = ufuncs.add(lax.broadcasted_iota(int_dtype, (N, M), 0), k)
  return compare(rows, lax.broadcasted_iota(int_dtype, (N, M), 1))


def eye(N: int, M: int | None = None, k: Any = 0, dtype: Any = None, *,
        device: Any = None) -> Any:
  """The (N, M) matrix with ones on diagonal `k` (0 the main one, positive above it,
  negative below) and zeros elsewhere; float32 by default. `device` (a Device or a
  Sharding) is where the result is committed.

  Example: `jnp.eye(2, 3, k=1)` is `[[0, 1, 0], [0, 0, 1]]`.
  """
  out = lax.convert_element_type(_offset_mask("eye", ufuncs.equal, N, M, k),
                                 _float_dtype(dtype))
  return lax_numpy.place("eye", out, device)


def identity(n: int, dtype: Any = None) -> Any:
  """The (n, n) identity matrix."""
  return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: Any = 0, dtype: Any = None) -> Any:
  """The (N, M) matrix with ones at and below diagonal `k` and zeros above it."""
  return lax.convert_element_type(_offset_mask("tri", ufuncs.greater_equal, N, M, k),
                                  _float_dtype(dtype))


def _matrix_mask(fun_name: str, m: Any, k: Any, upper: bool) -> Any:
  m = jnp_shape._ensure_array(fun_name, m)
  if m.ndim < 2:
    raise ValueError(f"jnp.{fun_name} requires an array of at least 2 dimensions, got "
                     f"shape {m.shape}.")
  *_, rows, cols = m.shape
  if upper:  # above the (k - 1)-th diagonal is the complement of tri(k - 1)
    keep = ufuncs.logical_not(_offset_mask(fun_name, ufuncs.greater_equal, rows, cols,
                                           ufuncs.subtract(k, 1)))
  else:
    keep = _offset_mask(fun_name, ufuncs.greater_equal, rows, cols, k)
  return ufuncs.where(keep, m, lax.full_like(m, 0))


@memoize_eager_operations
def tril(m: Any, k: Any = 0) -> Any:
  """`m` with the elements above diagonal `k` of its last two axes set to zero.

  Example: `jnp.tril(jnp.ones((3, 3)))` is lower triangular with ones on the diagonal.
  """
  return _matrix_mask("tril", m, k, upper=False)


@memoize_eager_operations
def triu(m: Any, k: Any = 0) -> Any:
  """`m` with the elements below diagonal `k` of its last two axes set to zero."""
  return _matrix_mask("triu", m, k, upper=True)


@memoize_eager_operations
def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
  """Diagonal `offset` of the matrices spanned by `axis1` and `axis2`; those axes are
  removed and the diagonal becomes the last axis.

  It is a strided slice of the matrices flattened (elements `i * (cols + 1) + offset`), so
  no gather is needed, and it differentiates and batches like any slice.

  Example: `jnp.diagonal(jnp.arange(6).reshape(2, 3), 1)` is `[1, 5]`.
  """
  a = jnp_shape._ensure_array("diagonal", a)
  if a.ndim < 2:
    raise ValueError(f"jnp.diagonal requires an array of at least 2 dimensions, got shape "
                     f"{a.shape}.")
  axis1 = lax_utils.canonicalize_axis(operator.index(axis1), a.ndim, "axis1")
  axis2 = lax_utils.canonicalize_axis(operator.index(axis2), a.ndim, "axis2")
  if axis1 == axis2:
    raise ValueError(f"jnp.diagonal: axis1 and axis2 cannot be the same axis, got {axis1}.")
  offset = _concrete_int("diagonal", "offset", offset)
  batch = [i for i in range(a.ndim) if i not in (axis1, axis2)]
  perm = (*batch, axis1, axis2)
  if perm != tuple(range(a.ndim)):
    a = shape_ops.transpose(a, perm)
  *batch_shape, rows, cols = a.shape
  length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
  first = offset if offset >= 0 else -offset * cols
  flat = shape_ops.reshape(a, (*batch_shape, rows * cols))
  if length == 0:
    return slicing.slice_in_dim(flat, 0, 0, axis=-1)
  return slicing.slice_in_dim(flat, first, first + (length - 1) * (cols + 1) + 1, cols + 1,
                              axis=-1)


@memoize_eager_operations
def diag(v: Any, k: int = 0) -> Any:
  """The diagonal `k` of a matrix `v`, or the square matrix with vector `v` on its
  diagonal `k` (zeros elsewhere).

  Example: `jnp.diag(jnp.array([1, 2]), 1)` is `[[0, 1, 0], [0, 0, 2], [0, 0, 0]]`.
  """
  v = jnp_shape._ensure_array("diag", v)
  k = _concrete_int("diag", "k", k)
  if v.ndim == 2:
    return diagonal(v, k)
  if v.ndim != 1:
    raise ValueError(f"jnp.diag: the input must be 1-D or 2-D, got shape {v.shape}.")
  n = v.shape[0] + abs(k)
  # Padded to n, entry i of v lies in row i (k >= 0) or column i (k < 0) of the result.
  padded = shape_ops.pad(v, np.zeros((), v.dtype), [(0, abs(k), 0)])
  along = (n, 1) if k >= 0 else (1, n)
  return ufuncs.where(_offset_mask("diag", ufuncs.equal, n, n, k),
                      shape_ops.reshape(padded, along), lax.full_like(v, 0, shape=()))


def diagflat(v: Any, k: int = 0) -> Any:
  """The square matrix with `v` (flattened) on its diagonal `k`."""
  return diag(jnp_shape.ravel(jnp_shape._ensure_array("diagflat", v)), k)


# ----------------------------------------------------------------------------- grids

def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy"
             ) -> list[Any]:
  """Coordinate arrays of the grid spanned by the (flattened) vectors `xi`.

  With `indexing='ij'` output k varies along axis k; with the default 'xy' (Cartesian)
  the first two axes are swapped, so for two vectors of sizes m and n the outputs have
  shape (n, m). `sparse=True` returns them unbroadcast (size 1 on every other axis).

  Example: `x, y = jnp.meshgrid(jnp.arange(3), jnp.arange(2))`; `x` is
  `[[0, 1, 2], [0, 1, 2]]`.
  """
  if indexing not in ("xy", "ij"):
    raise ValueError(f"jnp.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}.")
  vectors = [jnp_shape.ravel(jnp_shape._ensure_array("meshgrid", x)) for x in xi]
  axes = list(range(len(vectors)))
  if indexing == "xy" and len(vectors) > 1:
    axes[0], axes[1] = 1, 0
  full_shape = [0] * len(vectors)
  for x, axis in zip(vectors, axes):
    full_shape[axis] = x.shape[0]
  outputs = []
  for x, axis in zip(vectors, axes):
    out_shape = [1] * len(vectors) if sparse else list(full_shape)
    out_shape[axis] = x.shape[0]
    outputs.append(lax.broadcast_in_dim(x, out_shape, (axis,)))
  return outputs


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
  """The index grid of an array of shape `dimensions`: `indices(s)[k][i0, i1, …]` is
  `ik`. Dense, the grids are stacked into one array of shape `(len(s), *s)`; sparse, they
  are a tuple of arrays of size 1 on every axis but their own.

  Example: `jnp.indices((2, 3))[1]` is `[[0, 1, 2], [0, 1, 2]]`.
  """
  dims = tuple(_concrete_int("indices", "dimensions", d) for d in dimensions)
  dtype = _int_dtype(dtype)
  grids = []
  for i, size in enumerate(dims):
    grid_shape = tuple(size if j == i else 1 for j in range(len(dims))) if sparse else dims
    grids.append(lax.broadcasted_iota(dtype, grid_shape, i))
  if sparse:
    return tuple(grids)
  return jnp_shape.stack(grids) if grids else lax.full((0,), 0, dtype)


def fromfunction(function: Callable[..., Any], shape: Sequence[int], *, dtype: Any = float,
                 **kwargs: Any) -> Any:
  """The array whose element at index `(i0, i1, …)` is `function(i0, i1, …)`.

  `function` is vmapped over each axis (as in JAX), so it sees scalar indices of `dtype`
  (float by default) and need not be written for arrays.

  Example: `jnp.fromfunction(lambda i, j: i + j, (2, 2), dtype=int)` is `[[0, 1], [1, 2]]`.
  """
  dims = tuple(_concrete_int("fromfunction", "shape", d) for d in shape)
  dtype = dtypes.canonicalize_dtype(dtype)
  def fun(*args: Any) -> Any:
    return function(*args, **kwargs)
  for i in reversed(range(len(dims))):
    fun = api.vmap(fun, in_axes=tuple(0 if j == i else None for j in range(len(dims))))
  return fun(*(lax.iota(dtype, size) for size in dims))


# ----------------------------------------------------------------------------- index helpers
# These indices depend only on static sizes: NumPy computes them, and they become arrays of
# the default integer type.

def _index_arrays(arrays: Sequence[np.ndarray]) -> tuple[Any, ...]:
  return tuple(lax_numpy.asarray(a, dtypes.default_int_dtype()) for a in arrays)


def _matrix_shape(fun_name: str, arr: Any) -> tuple[int, int]:
  arr_shape = np.shape(arr)
  if len(arr_shape) != 2:
    raise ValueError(f"jnp.{fun_name} requires a 2-D array, got shape {arr_shape}.")
  return arr_shape


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
  """The (row, column) indices of the lower triangle (at and below diagonal `k`) of an
  (n, m) matrix."""
  n = _concrete_int("tril_indices", "n", n)
  m = n if m is None else _concrete_int("tril_indices", "m", m)
  return _index_arrays(np.tril_indices(n, _concrete_int("tril_indices", "k", k), m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
  """The (row, column) indices of the upper triangle (at and above diagonal `k`) of an
  (n, m) matrix."""
  n = _concrete_int("triu_indices", "n", n)
  m = n if m is None else _concrete_int("triu_indices", "m", m)
  return _index_arrays(np.triu_indices(n, _concrete_int("triu_indices", "k", k), m))


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
  rows, cols = _matrix_shape("tril_indices_from", arr)
  return tril_indices(rows, k, cols)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
  rows, cols = _matrix_shape("triu_indices_from", arr)
  return triu_indices(rows, k, cols)


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
  """The indices of the main diagonal of an `ndim`-dimensional array with sides `n`."""
  n = _concrete_int("diag_indices", "n", n)
  ndim = _concrete_int("diag_indices", "ndim", ndim)
  if n < 0 or ndim < 0:
    raise ValueError(f"jnp.diag_indices: n and ndim must be non-negative, got n={n}, "
                     f"ndim={ndim}.")
  return _index_arrays([np.arange(n)] * ndim)


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
  arr_shape = np.shape(arr)
  if len(arr_shape) < 2 or len(set(arr_shape)) != 1:
    raise ValueError(f"jnp.diag_indices_from requires an array of at least 2 dimensions, "
                     f"all of equal length; got shape {arr_shape}.")
  return diag_indices(arr_shape[0], len(arr_shape))


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *,
                 size: int | None = None) -> tuple[Any, Any]:
  """The indices where `mask_func(ones((n, n)), k)` is non-zero (`mask_func` is for
  example `jnp.triu`). Under jit the mask is traced: pass `size=` (the number of
  indices), as for `nonzero`."""
  n = _concrete_int("mask_indices", "n", n)
  mask = mask_func(lax_numpy.ones((n, n), np.int32), k)
  if size is not None:
    return searching.nonzero(mask, size=size)
  mask = core.concrete_or_error(
      np.asarray, mask, "jnp.mask_indices: mask_func must give a concrete mask; under jit "
      "pass size=.")
  return _index_arrays(np.nonzero(mask))


# ----------------------------------------------------------------------------- trace

@memoize_eager_operations
def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None) -> Any:
  """The sum along diagonal `offset` of the matrices spanned by `axis1` and `axis2`.

  Example: `jnp.trace(jnp.eye(3))` is 3.
  """
  return reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)
