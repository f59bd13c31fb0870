"""jaxon.scipy.interpolate: `RegularGridInterpolator`, interpolation on a rectilinear grid.

The interpolator is a pytree (grid, values and fill value are its leaves; method and
bounds_error its static data), so it can be passed through jit, vmap and grad like any
array container. A query point finds its cell on each axis with `searchsorted` (clamped to
the first and last cells, so points outside extrapolate linearly before `fill_value` is
applied), then mixes the cell's 2^d corners.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src.numpy.util import check_arraylike, promote_args_inexact
from jaxon._src.tree_util import register_pytree_node

_METHODS = ("linear", "nearest")


def _check_method(method: str) -> None:
  if method not in _METHODS:
    raise ValueError(f"method {method!r} is not defined; use one of {_METHODS}.")


def _points_matrix(xi: Any, ndim: int) -> Any:
  """Query points as an (..., ndim) array; a tuple of coordinate arrays is broadcast and
  stacked on a last axis, and a 1-D array is read as points of `ndim` coordinates."""
  if isinstance(xi, tuple) and len(xi) == 1:
    xi = xi[0]
  if isinstance(xi, tuple):
    check_arraylike("RegularGridInterpolator", *xi)
    return jnp.stack(jnp.broadcast_arrays(*xi), axis=-1)
  check_arraylike("RegularGridInterpolator", xi)
  xi = jnp.asarray(xi)
  return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
  """Interpolates `values` given on the grid `points` (SciPy's RegularGridInterpolator).

  Args:
    points: d 1-D arrays of increasing coordinates, one per leading axis of `values`.
    values: array whose first d axes are the grid; trailing axes are carried along.
    method: 'linear' or 'nearest'.
    bounds_error: must be False (under jit an out-of-bounds check could not raise).
    fill_value: the value at points outside the grid; None extrapolates instead.

  Example:
    >>> f = RegularGridInterpolator((jnp.arange(3.0),), jnp.array([0.0, 10.0, 40.0]))
    >>> f(jnp.array([[0.5], [1.5]]))
    Array([ 5., 25.], dtype=float32)
  """

  def __init__(self, points: Sequence[Any], values: Any, method: str = "linear",
               bounds_error: bool = False, fill_value: Any = np.nan):
    _check_method(method)
    if bounds_error:
      raise NotImplementedError("`bounds_error` takes no effect under JIT")
    check_arraylike("RegularGridInterpolator", values)
    if len(points) > np.ndim(values):
      raise ValueError(f"there are {len(points)} point arrays, but values has "
                       f"{np.ndim(values)} dimensions")
    values, = promote_args_inexact("RegularGridInterpolator", values)
    if fill_value is not None:
      check_arraylike("RegularGridInterpolator", fill_value)
      fill_value = jnp.asarray(fill_value)
      if not jnp.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
        raise ValueError("fill_value must be either 'None' or of a type compatible with "
                         f"values (got {fill_value.dtype} for values of {values.dtype}).")
    check_arraylike("RegularGridInterpolator", *points)
    self.method = method
    self.bounds_error = bounds_error
    self.grid = tuple(jnp.asarray(p) for p in points)
    self.values = values
    self.fill_value = fill_value

  def __call__(self, xi: Any, method: str | None = None) -> Any:
    """Interpolated values at the points `xi` (shape (..., d), or a tuple of d arrays)."""
    method = self.method if method is None else method
    _check_method(method)
    ndim = len(self.grid)
    xi = _points_matrix(xi, ndim)
    if xi.shape[-1] != ndim:
      raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                       f"but this RegularGridInterpolator has dimension {ndim}")
    batch_shape = xi.shape[:-1]
    xi = xi.reshape(-1, ndim)
    cells, fractions = self._locate(xi)
    if method == "linear":
      result = self._linear(cells, fractions)
    else:
      result = self.values[tuple(jnp.where(t <= 0.5, i, i + 1)
                                 for i, t in zip(cells, fractions))]
    if self.fill_value is not None:
      outside = jnp.zeros(xi.shape[0], bool)
      for d, g in enumerate(self.grid):
        outside = outside | (xi[:, d] < g[0]) | (xi[:, d] > g[-1])
      outside = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
      result = jnp.where(outside, self.fill_value, result)
    return result.reshape(batch_shape + self.values.shape[ndim:])

  def _locate(self, xi: Any) -> tuple[list[Any], list[Any]]:
    """Per axis: the index of each point's cell and its fractional position in it."""
    cells, fractions = [], []
    for d, g in enumerate(self.grid):
      x = xi[:, d]
      i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.size - 2)
      cells.append(i)
      fractions.append((x - g[i]) / (g[i + 1] - g[i]))
    return cells, fractions

  def _linear(self, cells: list[Any], fractions: list[Any]) -> Any:
    trailing = (slice(None),) + (None,) * (self.values.ndim - len(cells))
    result = 0.0
    for corner in itertools.product((0, 1), repeat=len(cells)):
      weight = 1.0
      for upper, t in zip(corner, fractions):
        weight = weight * (t if upper else 1 - t)
      index = tuple(i + upper for i, upper in zip(cells, corner))
      result = result + self.values[index] * weight[trailing]
    return result


def _unflatten(aux: tuple[str, bool], children: tuple[Any, Any, Any]) -> RegularGridInterpolator:
  """Rebuilds without re-running the constructor's checks: under transformations the
  leaves may be tracers or placeholders (e.g. vmap's in_axes)."""
  interpolator = object.__new__(RegularGridInterpolator)
  interpolator.method, interpolator.bounds_error = aux
  interpolator.grid, interpolator.values, interpolator.fill_value = children
  return interpolator


register_pytree_node(
    RegularGridInterpolator,
    lambda f: ((f.grid, f.values, f.fill_value), (f.method, f.bounds_error)),
    _unflatten,
)
