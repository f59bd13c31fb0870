"""`jaxon.ops.segment_*`: reductions of an array's rows grouped by a segment id per row.

Each is a scatter into an output filled with the reduction's identity: row `i` of `data`
is combined into row `segment_ids[i]` of the result, so segments no row maps to keep the
identity (0 for sums, -inf or the smallest integer for maxima, ...). Out-of-range ids are
dropped unless `mode` says otherwise. With `bucket_size`, rows are first reduced within
buckets of that many consecutive rows and the buckets then reduced together, which keeps
long float sums and products from accumulating rounding error in one long chain.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import gather_scatter
from jaxon._src.lax.gather_scatter import GatherScatterMode
from jaxon._src.numpy import creation, lax_numpy, reductions, shape, util


def _identity(scatter_fn: Callable[..., Any], dtype: np.dtype) -> Any:
  """The value that `scatter_fn` leaves unchanged when combining it with any other."""
  if scatter_fn is gather_scatter.scatter_add:
    return 0
  if scatter_fn is gather_scatter.scatter_mul:
    return 1
  is_min = scatter_fn is gather_scatter.scatter_min
  if dtypes.is_bool(dtype):
    return is_min
  if dtypes.is_integer(dtype):
    info = dtypes.iinfo(dtype)
    return info.max if is_min else info.min
  return np.inf if is_min else -np.inf


def _segment_reduce(name: str, data: Any, segment_ids: Any, scatter_fn: Callable[..., Any],
                    reducer: Callable[..., Any], num_segments: int | None,
                    indices_are_sorted: bool, unique_indices: bool, bucket_size: int | None,
                    mode: GatherScatterMode | str | None, out_sharding: Any) -> Any:
  util.check_arraylike(name, data, segment_ids)
  if out_sharding is not None:
    return util.out_sharded(_segment_reduce(
        name, data, segment_ids, scatter_fn, reducer, num_segments, indices_are_sorted,
        unique_indices, bucket_size, mode, None), out_sharding, name)
  data, segment_ids = lax_numpy.asarray(data), lax_numpy.asarray(segment_ids)
  if not dtypes.is_integer(segment_ids.dtype):
    raise TypeError(f"{name} segment_ids must be integers, got dtype {segment_ids.dtype}.")
  if segment_ids.ndim != 1 or data.ndim < 1 or data.shape[0] != segment_ids.shape[0]:
    raise ValueError(f"{name} takes one segment id per row of data: segment_ids must be 1-D "
                     f"with length data.shape[0], got data shape {data.shape} and "
                     f"segment_ids shape {segment_ids.shape}.")
  if num_segments is None:
    num_segments = core.concrete_or_error(
        lambda ids: int(np.max(ids, initial=-1)) + 1, segment_ids,
        f"{name}() `num_segments` argument: pass num_segments to use {name} under jit.")
  num_segments = core.concrete_or_error(int, num_segments, f"{name}() `num_segments` argument.")
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  mode = GatherScatterMode.FILL_OR_DROP if mode is None else mode
  identity = _identity(scatter_fn, data.dtype)
  if bucket_size is None:
    out = lax_numpy.full((num_segments, *data.shape[1:]), identity, data.dtype)
    return _scatter_rows(scatter_fn, out, [segment_ids], data, indices_are_sorted,
                         unique_indices, mode)
  num_buckets = -(-segment_ids.shape[0] // bucket_size)
  out = lax_numpy.full((num_buckets, num_segments, *data.shape[1:]), identity, data.dtype)
  bucket_of_row = creation.arange(segment_ids.shape[0], dtype=segment_ids.dtype) // bucket_size
  out = _scatter_rows(scatter_fn, out, [bucket_of_row, segment_ids], data,
                      indices_are_sorted, unique_indices, mode)
  return reducer(out, axis=0).astype(data.dtype)


def _scatter_rows(scatter_fn: Callable[..., Any], out: Any, row_indices: list[Any],
                  data: Any, indices_are_sorted: bool, unique_indices: bool,
                  mode: GatherScatterMode | str) -> Any:
  """Row `i` of `data` combined into `out[row_indices[0][i], row_indices[1][i], ...]`.

  Negative ids are out of range (dropped), not counted from the end as `x.at[ids]` would:
  that is why this builds the scatter itself rather than going through indexing."""
  n_index = len(row_indices)
  indices = (shape.expand_dims(row_indices[0], -1) if n_index == 1
             else shape.stack(row_indices, axis=-1))
  dnums = gather_scatter.ScatterDimensionNumbers(
      update_window_dims=tuple(range(1, data.ndim)),
      inserted_window_dims=tuple(range(n_index)),
      scatter_dims_to_operand_dims=tuple(range(n_index)))
  return scatter_fn(out, indices, data, dnums, indices_are_sorted=indices_are_sorted,
                    unique_indices=unique_indices, mode=mode)


def _segment_op(name: str, scatter_fn: Callable[..., Any], reducer: Callable[..., Any],
                what: str, example: str) -> Callable[..., Any]:
  def segment_fn(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode: GatherScatterMode | str | None = None,
                 out_sharding: Any = None) -> Any:
    return _segment_reduce(name, data, segment_ids, scatter_fn, reducer, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode,
                           out_sharding)
  segment_fn.__name__ = segment_fn.__qualname__ = name
  segment_fn.__doc__ = f"""The {what} of the rows of `data` in each segment.

  Args:
    data: an array whose leading axis holds the rows to combine.
    segment_ids: integer array of shape `(data.shape[0],)`, the segment of each row; ids
      may repeat and need not be sorted.
    num_segments: the number of segments (the output's leading size). By default
      `max(segment_ids) + 1`, which needs concrete ids: pass it under `jit`.
    indices_are_sorted, unique_indices: unchecked promises about `segment_ids`.
    bucket_size: reduce buckets of this many consecutive rows first, then the buckets
      (for accuracy); None reduces every segment in one pass.
    mode: a `lax.GatherScatterMode` (or its name) for ids outside `[0, num_segments)`;
      by default their rows are dropped.

  Returns:
    An array of shape `(num_segments, *data.shape[1:])`; empty segments hold the
    identity of the {what}.

  Example:
    >>> {name}(jnp.arange(5.0), jnp.array([0, 0, 1, 1, 3]), num_segments=4)
    {example}
  """
  return segment_fn


segment_sum = _segment_op("segment_sum", gather_scatter.scatter_add, reductions.sum, "sum",
                          "Array([1., 5., 0., 4.], dtype=float32)")
segment_prod = _segment_op("segment_prod", gather_scatter.scatter_mul, reductions.prod, "product",
                           "Array([0., 6., 1., 4.], dtype=float32)")
segment_max = _segment_op("segment_max", gather_scatter.scatter_max, reductions.max, "maximum",
                          "Array([  1.,   3., -inf,   4.], dtype=float32)")
segment_min = _segment_op("segment_min", gather_scatter.scatter_min, reductions.min, "minimum",
                          "Array([ 0.,  2., inf,  4.], dtype=float32)")
