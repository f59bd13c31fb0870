"""More shape functions of jaxon.numpy: `block` (nested concatenation), `unstack` (the
inverse of `stack`) and `rollaxis` (`moveaxis`'s older spelling)."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from jaxon._src import core
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import lax_numpy
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.xla.array import Array


def _block_depth(arrays: Any, where: str) -> tuple[int, int]:
  """The nesting depth of the lists in `arrays` (equal for every leaf) and the largest
  rank of a leaf."""
  if type(arrays) is tuple:
    raise TypeError(f"jnp.block: {where} is a tuple; only lists arrange blocks (a tuple is "
                    "not taken as an array here, as in NumPy).")
  if type(arrays) is not list:
    return 0, np.ndim(arrays)
  if not arrays:
    raise ValueError(f"jnp.block: the list at {where} cannot be empty.")
  depths = [_block_depth(a, f"{where}[{i}]") for i, a in enumerate(arrays)]
  if len({d for d, _ in depths}) > 1:
    raise ValueError(f"jnp.block: list depths are mismatched inside {where}: elements sit "
                     f"at depths {sorted({d + 1 for d, _ in depths})}.")
  return depths[0][0] + 1, max(r for _, r in depths)


def _assemble(arrays: Any, depth: int, list_depth: int, ndim: int) -> Any:
  """The blocks below nesting level `depth` joined: the innermost lists along the last
  axis, each enclosing level along the axis before."""
  if depth == list_depth:
    x = lax_numpy.asarray(arrays)
    return jnp_shape.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
  parts = [_assemble(a, depth + 1, list_depth, ndim) for a in arrays]
  return jnp_shape.concatenate(parts, axis=depth - list_depth)


def block(arrays: Any) -> Any:
  """An array assembled from nested lists of blocks, as written: the innermost lists are
  joined along the last axis, the lists holding them along the one before, and so on.
  Blocks are first given the result's rank by prepending size-1 dimensions.

  Example: `jnp.block([[A, B], [C, D]])` is the 2x2 block matrix of A, B, C, D.
  """
  list_depth, max_rank = _block_depth(arrays, "arrays")
  return _assemble(arrays, 0, list_depth, max(list_depth, max_rank))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
  """The slices of `x` along `axis`, as a tuple (`stack`'s inverse).

  Example: `jnp.unstack(jnp.eye(2))` is `(Array([1., 0.]), Array([0., 1.]))`.
  """
  x = lax_numpy.asarray(x)
  if x.ndim == 0:
    raise ValueError("jnp.unstack: the input must be at least 1-d, got a 0-d array.")
  axis = lax_utils.canonicalize_axis(axis, x.ndim)
  moved = jnp_shape.moveaxis(x, axis, 0)
  return tuple(moved[i] for i in range(x.shape[axis]))


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
  """`a` with `axis` moved to sit just before position `start` (NumPy's older form of
  `moveaxis`; `moveaxis(a, axis, start)` when `axis >= start`, else `start - 1`).

  Example: for `a` of shape (3, 4, 5, 6), `jnp.rollaxis(a, 3, 1)` has shape (3, 6, 4, 5).
  """
  a = a if isinstance(a, (Array, core.Tracer)) else lax_numpy.asarray(a)
  n = a.ndim
  axis = lax_utils.canonicalize_axis(operator.index(axis), n)
  start = operator.index(start)
  if not -n <= start <= n:
    raise np.exceptions.AxisError(f"jnp.rollaxis: start={start} must be in [-{n}, {n}] for "
                                  f"an array of rank {n}.")
  start = start + n if start < 0 else start
  if axis < start:
    start -= 1
  return a if axis == start else jnp_shape.moveaxis(a, axis, start)
