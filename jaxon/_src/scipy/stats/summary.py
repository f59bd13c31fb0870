"""jaxon.scipy.stats's summary statistics: `mode`, `rankdata` and `sem`.

Ties are found the same way in `mode` and `rankdata`: sort, then mark where a run of equal
values starts (NaNs compare equal to each other, as `np.unique`'s `equal_nan`). Both are
jittable with static `axis`/`method` because nothing depends on how many distinct values
there are. Only `nan_policy='propagate'` is implemented for them, as in JAX: 'omit' and
'raise' need data-dependent shapes or host checks.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.api import vmap
from jaxon._src.jit import jit
from jaxon._src.lax import reductions as lax_reductions
from jaxon._src.lax.utils import canonicalize_axis
from jaxon._src.numpy.util import check_arraylike
from jaxon._src.scipy.stats._util import promote

_NAN_POLICIES = ("propagate", "omit", "raise")


def _check_nan_policy(fun_name: str, nan_policy: str) -> None:
  if nan_policy not in _NAN_POLICIES:
    raise ValueError(f"{fun_name}: illegal nan_policy value {nan_policy!r}; expected one of "
                     f"{_NAN_POLICIES}")
  if nan_policy == "omit":
    raise NotImplementedError(f"{fun_name}: nan_policy='omit' is not implemented (its output "
                              "would depend on how many NaNs there are)")
  if nan_policy == "raise":
    raise NotImplementedError(f"{fun_name}: nan_policy='raise' cannot be checked under jit; "
                              "check for NaNs outside the function instead")


def _run_starts(sorted_values: Any) -> Any:
  """True where a run of equal values starts in a sorted 1-D array (NaNs equal each other)."""
  head, tail = sorted_values[1:], sorted_values[:-1]
  same = (head == tail) | (jnp.isnan(head) & jnp.isnan(tail))
  return jnp.concatenate([jnp.ones(1, bool), ~same])


class ModeResult(NamedTuple):
  """The most common value along an axis and how often it occurs."""
  mode: Any
  count: Any


def _mode_1d(values: Any) -> tuple[Any, Any]:
  """The smallest most common entry of a 1-D array and its count."""
  ordered = jnp.sort(values)
  run_id = jnp.cumsum(_run_starts(ordered)) - 1
  run_length = jnp.zeros(ordered.shape[0], dtypes.default_int_dtype()).at[run_id].add(1)
  counts = run_length[run_id]
  best = jnp.argmax(counts)  # the first maximum: runs are in increasing order
  return ordered[best], counts[best]


def _mode(a: Any, axis: int | None, nan_policy: str, keepdims: bool) -> ModeResult:
  check_arraylike("mode", a)
  _check_nan_policy("mode", nan_policy)
  x = jnp.atleast_1d(a)
  if axis is None:
    kept_shape = (1,) * x.ndim if keepdims else ()
    x, axis = jnp.ravel(x), 0
  else:
    axis = canonicalize_axis(axis, x.ndim)
    kept_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape)) if keepdims else (
        tuple(s for i, s in enumerate(x.shape) if i != axis))
  moved = jnp.moveaxis(x, axis, 0)
  columns = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
  if columns.shape[0] == 0:  # SciPy's answer for an empty axis: NaN, seen 0 times
    nan = jnp.full(columns.shape[1], np.nan, dtypes.default_float_dtype())
    return ModeResult(nan.reshape(kept_shape), jnp.zeros_like(nan).reshape(kept_shape))
  values, counts = vmap(_mode_1d, in_axes=1)(columns)
  return ModeResult(values.reshape(kept_shape), counts.reshape(kept_shape))


_mode_jit = jit(_mode, static_argnames=("axis", "nan_policy", "keepdims"))


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
  """The most common value along `axis` (the smallest one on ties) and its count.

  Args:
    a: the array.
    axis: the axis to reduce (static); None flattens first.
    nan_policy: only 'propagate' (NaNs count as one value) is supported.
    keepdims: keep the reduced axis with size 1.

  Returns:
    `ModeResult(mode, count)`.

  JAX implementation of `scipy.stats.mode`."""
  return _mode_jit(a, axis=axis, nan_policy=nan_policy, keepdims=keepdims)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def _rank_1d(values: Any, method: str) -> Any:
  n = values.shape[0]
  order = jnp.argsort(values, stable=True)
  position = jnp.zeros(n, order.dtype).at[order].set(jnp.arange(n, dtype=order.dtype))
  starts = _run_starts(values[order])
  out_dtype = dtypes.default_float_dtype()
  if method == "ordinal":
    return (position + 1).astype(out_dtype)
  if method == "dense":
    return jnp.cumsum(starts)[position].astype(out_dtype)
  index = jnp.arange(n)
  ends = jnp.concatenate([starts[1:], jnp.ones(1, bool)])
  first_of_run = lax_reductions.cummax(jnp.where(starts, index, 0))  # in sorted order
  last_of_run = lax_reductions.cummin(jnp.where(ends, index, n), reverse=True)
  lowest = (first_of_run[position] + 1).astype(out_dtype)
  highest = (last_of_run[position] + 1).astype(out_dtype)
  ranks = {"min": lowest, "max": highest}.get(method, (lowest + highest) / 2)
  return jnp.where(jnp.any(jnp.isnan(values)), np.nan, ranks)


def _rankdata(a: Any, method: str, axis: int | None, nan_policy: str) -> Any:
  check_arraylike("rankdata", a)
  _check_nan_policy("rankdata", nan_policy)
  if method not in _RANK_METHODS:
    raise ValueError(f"rankdata: unknown method {method!r}; expected one of {_RANK_METHODS}")
  if axis is None:
    return _rank_1d(jnp.ravel(a), method)
  return jnp.apply_along_axis(_rank_1d, axis, a, method)


_rankdata_jit = jit(_rankdata, static_argnames=("method", "axis", "nan_policy"))


def rankdata(a: Any, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Any:
  """Ranks from 1, ties resolved by `method`.

  Args:
    a: the array.
    method: 'average' (mean of the tied ranks), 'min', 'max', 'dense' (consecutive ranks for
      distinct values) or 'ordinal' (ties broken by position).
    axis: rank along this axis (static); None ranks the flattened array.
    nan_policy: only 'propagate' is supported: any NaN makes every rank NaN.

  Returns:
    The ranks, in the default float dtype.

  JAX implementation of `scipy.stats.rankdata`."""
  return _rankdata_jit(a, method=method, axis=axis, nan_policy=nan_policy)


def _sem(a: Any, axis: int | None, ddof: int, nan_policy: str, keepdims: bool) -> Any:
  b, = promote("sem", a)
  if nan_policy == "propagate":
    size = b.size if axis is None else b.shape[axis]
    return jnp.std(b, axis, ddof=ddof, keepdims=keepdims) / jnp.asarray(math.sqrt(size),
                                                                          b.dtype)
  if nan_policy == "omit":
    count = jnp.sum(~jnp.isnan(b), axis, keepdims=keepdims)
    return jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count).astype(b.dtype)
  raise ValueError(f"sem: nan_policy={nan_policy!r} is not supported; use 'propagate' or "
                   "'omit'")


_sem_jit = jit(_sem, static_argnames=("axis", "nan_policy", "keepdims"))


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Any:
  """Standard error of the mean, std(a, ddof) / sqrt(n) along `axis`.

  Args:
    a: the array.
    axis: the axis to reduce (static); None flattens first.
    ddof: delta degrees of freedom of the standard deviation.
    nan_policy: 'propagate' or 'omit' (ignore NaNs, n counting only the others).
    keepdims: keep the reduced axis with size 1.

  JAX implementation of `scipy.stats.sem`."""
  return _sem_jit(a, axis=axis, ddof=ddof, nan_policy=nan_policy, keepdims=keepdims)
