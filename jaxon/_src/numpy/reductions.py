"""Reductions of jaxon.numpy (`sum`, `mean`, …) with `axis`, `keepdims`, `dtype`."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import lax, reductions
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import util


def _canonical_axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
  if axis is None:
    return tuple(range(ndim))
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  axes = tuple(lax_utils.canonicalize_axis(int(a), ndim) for a in axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"duplicate value in 'axis': {axis}")
  return axes


def _keepdims_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
  return tuple(1 if i in axes else d for i, d in enumerate(shape))


def sum(a: Any, axis: int | Sequence[int] | None = None, dtype: Any = None, out: None = None,
        keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
  """Sum of array elements over `axis` (NumPy's `sum`; bools and small ints sum as the
  default integer)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.sum is not supported: jaxon arrays "
                              "are immutable.")
  util.check_arraylike("sum", a)
  aval = core.get_aval(a)
  if dtype is None and (aval.dtype == np.bool_ or (
      dtypes.is_integer(aval.dtype) and aval.dtype.itemsize < dtypes.default_int_dtype()
      .itemsize)):
    dtype = dtypes.default_int_dtype() if not dtypes.issubdtype(
        aval.dtype, np.unsignedinteger) else dtypes.canonicalize_dtype(np.uint64)
  x = lax._convert_element_type(a, dtype, aval.weak_type) if dtype is not None else a
  if where is not None:
    raise NotImplementedError("jnp.sum(where=...) arrives with the full reductions")
  axes = _canonical_axes(axis, aval.ndim)
  result = reductions.reduce_sum(x, axes)
  if initial is not None:
    result = lax.add(result, lax._convert_element_type(initial, core.get_aval(result).dtype))
  if keepdims:
    result = lax.broadcast_in_dim(result, _keepdims_shape(aval.shape, axes),
                                  [i for i in range(aval.ndim) if i not in axes])
  return result
