"""jaxon.scipy.ndimage: `map_coordinates`, interpolation of an array at arbitrary points.

For order 0 (nearest) or 1 (linear) each coordinate axis contributes one or two
(index, weight) pairs; the value at a point is the sum, over every combination of one pair
per axis, of the product of the weights times the gathered input. Out-of-range indices are
folded back by the boundary mode; with mode='constant' they read `cval` instead (SciPy's
'grid-constant': the array is padded with cval, and interpolation crosses the edge).
"""
from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.api import jit
from jaxon._src.lax import lax
from jaxon._src.numpy.util import check_arraylike


def _mirror(index: Any, size: int) -> Any:
  """Reflection about the edge pixels' centres (period 2(size - 1)): -1 -> 1."""
  if size == 1:
    return jnp.zeros_like(index)
  period = 2 * (size - 1)
  return jnp.abs((index + size - 1) % period - (size - 1))


def _reflect(index: Any, size: int) -> Any:
  """Reflection about the array's outer edges (period 2 size): -1 -> 0."""
  folded = index % (2 * size)
  return jnp.where(folded >= size, 2 * size - 1 - folded, folded)


_BOUNDARY_MODES: dict[str, Callable[[Any, int], Any]] = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away(x: Any) -> Any:
  return x if dtypes.issubdtype(x.dtype, np.integer) else lax.round(x)


def _nearest_nodes(coordinate: Any) -> list[tuple[Any, Any]]:
  return [(_round_half_away(coordinate).astype(np.int32), None)]


def _linear_nodes(coordinate: Any) -> list[tuple[Any, Any]]:
  lower = jnp.floor(coordinate)
  upper_weight = coordinate - lower
  index = lower.astype(np.int32)
  return [(index, 1 - upper_weight), (index + 1, upper_weight)]


_ORDERS = {0: _nearest_nodes, 1: _linear_nodes}


@jit(static_argnums=(2, 3))
def _map_coordinates(image: Any, coordinates: Sequence[Any], order: int, mode: str,
                     cval: Any) -> Any:
  image = jnp.asarray(image)
  coordinates = [jnp.asarray(c) for c in coordinates]
  cval = jnp.asarray(cval, image.dtype)
  fix_index = _BOUNDARY_MODES[mode]
  per_axis = []
  for coordinate, size in zip(coordinates, image.shape):
    nodes = []
    for index, weight in _ORDERS[order](coordinate):
      inside = (index >= 0) & (index < size) if mode == "constant" else None
      nodes.append((fix_index(index, size), inside, weight))
    per_axis.append(nodes)
  terms = []
  for corner in itertools.product(*per_axis):
    indices, insides, weights = zip(*corner)
    value = image[indices]
    insides = [m for m in insides if m is not None]
    if insides:
      value = jnp.where(functools.reduce(operator.and_, insides), value, cval)
    weights = [w for w in weights if w is not None]
    terms.append(functools.reduce(operator.mul, weights, value) if weights else value)
  result = functools.reduce(operator.add, terms)
  if dtypes.issubdtype(image.dtype, np.integer):
    result = _round_half_away(result)
  return result.astype(image.dtype)


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int,
                    mode: str = "constant", cval: Any = 0.0) -> Any:
  """Interpolates `input` at the points `coordinates` (SciPy's `map_coordinates`).

  Args:
    input: the N-dimensional array to sample.
    coordinates: N arrays of one common shape: the (fractional) index along each axis.
    order: 0 (nearest, halves rounded away from zero) or 1 (linear).
    mode: how indices outside the array are treated: 'constant' (read `cval`),
      'nearest' (clamp), 'wrap' (periodic, SciPy's 'grid-wrap'), 'mirror' or 'reflect'.
    cval: the value outside the array for mode='constant'.

  Returns:
    The interpolated values, shaped like the coordinates, with `input`'s dtype (integer
    inputs are rounded).

  Example:
    >>> map_coordinates(jnp.arange(4.0), [jnp.array([0.5, 2.25])], order=1)
    Array([0.5 , 2.25], dtype=float32)
  """
  check_arraylike("map_coordinates", input, cval, *coordinates)
  if len(coordinates) != np.ndim(input):
    raise ValueError(f"coordinates must be a sequence of length input.ndim, but "
                     f"{len(coordinates)} != {np.ndim(input)}")
  if mode not in _BOUNDARY_MODES:
    raise NotImplementedError(
        f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. "
        f"Currently supported modes are {set(_BOUNDARY_MODES)}.")
  if order not in _ORDERS:
    raise NotImplementedError(
        f"jax.scipy.ndimage.map_coordinates currently requires order<=1; got {order}.")
  return _map_coordinates(input, tuple(coordinates), order, mode, cval)
