"""NumPy's index tricks: `r_` and `c_` (concatenation written as indexing), `mgrid` and
`ogrid` (grids written as slices) and `ix_` (open meshes for cross indexing).

Slices written in these expressions decide shapes, so their bounds must be concrete: the
grids and ranges they make are computed with NumPy and become constants. The arrays that
`r_` and `c_` join may be traced. A complex step `a:b:nj` means "n points from a to b, both
included", as in NumPy.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.numpy import lax_numpy, searching
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.xla.array import Array


def _concrete_slice(s: slice, where: str) -> slice:
  """`s` with its bounds as host values (they decide the result's length)."""
  def value(x: Any) -> Any:
    return core.concrete_or_error(
        lambda v: np.asarray(v).item(), x,
        f"The bounds of a slice in jnp.{where}[...] must be concrete: they decide the shape "
        f"of the result.") if x is not None else None
  return slice(value(s.start), value(s.stop), value(s.step))


def _as_tuple(key: Any) -> tuple:
  return key if isinstance(key, tuple) else (key,)


# ----------------------------------------------------------------------------- mgrid, ogrid

class _Grid:
  """`mgrid[0:2, 0:3]` (dense: one stacked array) or `ogrid[0:2, 0:3]` (open: a list of
  arrays of shape (2, 1) and (1, 3))."""

  def __init__(self, name: str, sparse: bool):
    self._name, self._sparse = name, sparse

  def __getitem__(self, key: Any) -> Any:
    if isinstance(key, slice):
      return lax_numpy.asarray(np.mgrid[_concrete_slice(key, self._name)])
    if not all(isinstance(k, slice) for k in _as_tuple(key)):
      raise TypeError(f"jnp.{self._name}[...] takes slices, like {self._name}[0:3, 0:5:2]; "
                      f"got {key!r}.")
    slices = tuple(_concrete_slice(k, self._name) for k in key)
    grid = np.ogrid[slices] if self._sparse else np.mgrid[slices]
    if self._sparse:
      return [lax_numpy.asarray(g) for g in grid]
    return lax_numpy.asarray(grid)

  def __repr__(self) -> str:
    return f"jaxon.numpy.{self._name}"


mgrid = _Grid("mgrid", sparse=False)
mgrid.__doc__ = """Dense grids from slices: `jnp.mgrid[0:2, 0:3]` has shape (2, 2, 3), its
  k-th entry varying along axis k. A complex step `0:1:5j` asks for 5 points, end included."""
ogrid = _Grid("ogrid", sparse=True)
ogrid.__doc__ = """Open grids from slices: `jnp.ogrid[0:2, 0:3]` is a list of arrays of
  shapes (2, 1) and (1, 3), which broadcast to mgrid's."""


# ----------------------------------------------------------------------------- r_, c_

class _Concatenator:
  """`r_[...]`: the items (arrays, scalars, slices as ranges) joined along `axis` after
  raising each to `ndmin` dimensions. A leading string directive `'axis[,ndmin[,trans1d]]'`
  changes the settings; `trans1d` says where an item's own axes go when it is raised (-1:
  last, the default of `r_`; 0: first, so `c_` makes 1-D items columns)."""

  def __init__(self, name: str, axis: int, ndmin: int, trans1d: int):
    self._name, self._axis, self._ndmin, self._trans1d = name, axis, ndmin, trans1d

  def __getitem__(self, key: Any) -> Any:
    axis, ndmin, trans1d = self._axis, self._ndmin, self._trans1d
    items = _as_tuple(key)
    if items and isinstance(items[0], str):
      axis, ndmin, trans1d = self._directive(items[0], axis, ndmin, trans1d)
      items = items[1:]
    if any(isinstance(item, str) for item in items):
      raise ValueError(f"jnp.{self._name}: a string directive must be the first entry.")
    pieces = [self._piece(item, ndmin, trans1d) for item in items]
    if not pieces:
      return lax_numpy.zeros((0,))
    return jnp_shape.concatenate(pieces, axis=axis)

  def _directive(self, text: str, axis: int, ndmin: int, trans1d: int
                 ) -> tuple[int, int, int]:
    if text in ("r", "c"):
      raise NotImplementedError(f"jnp.{self._name}: the {text!r} directive makes a NumPy "
                                "matrix, which jaxon does not have.")
    try:
      values = [int(v) for v in text.split(",")]
    except ValueError:
      values = []
    if not 1 <= len(values) <= 3:
      raise ValueError(f"jnp.{self._name}: unknown special directive {text!r}; expected "
                       "'axis', 'axis,ndmin' or 'axis,ndmin,trans1d'.")
    return (*values, *(axis, ndmin, trans1d)[len(values):])

  def _piece(self, item: Any, ndmin: int, trans1d: int) -> Any:
    if isinstance(item, slice):
      item = np.r_[_concrete_slice(item, self._name)]
      if ndmin > 1:
        return jnp_shape.swapaxes(lax_numpy.array(item, ndmin=ndmin), -1, trans1d)
      return lax_numpy.asarray(item)
    item_ndim = np.ndim(item)
    out = lax_numpy.array(item, ndmin=ndmin)
    if trans1d == -1 or item_ndim >= ndmin:
      return out
    new_axes = ndmin - item_ndim
    first = trans1d + new_axes + 1 if trans1d < 0 else trans1d
    axes = [*range(first), *range(new_axes, ndmin), *range(first, new_axes)]
    return jnp_shape.transpose(out, axes)

  def __len__(self) -> int:
    return 0

  def __repr__(self) -> str:
    return f"jaxon.numpy.{self._name}"


r_ = _Concatenator("r_", axis=0, ndmin=1, trans1d=-1)
r_.__doc__ = """Concatenation along the first axis written as indexing:
  `jnp.r_[jnp.array([1, 2]), 0, 4:6]` is `[1, 2, 0, 4, 5]`."""
c_ = _Concatenator("c_", axis=-1, ndmin=2, trans1d=0)
c_.__doc__ = """Concatenation along the last axis, 1-D items as columns:
  `jnp.c_[jnp.array([1, 2]), jnp.array([3, 4])]` is `[[1, 3], [2, 4]]`."""


# ----------------------------------------------------------------------------- ix_

def ix_(*args: Any) -> tuple[Any, ...]:
  """Open-mesh index arrays from 1-D sequences: `x[jnp.ix_(rows, cols)]` is the
  submatrix of those rows and columns. Boolean sequences stand for their True positions
  (so they must be concrete).

  Example: `jnp.ix_(jnp.array([0, 2]), jnp.array([1]))` has shapes (2, 1) and (1, 1).
  """
  out = []
  for k, arg in enumerate(args):
    x = arg if isinstance(arg, (Array, core.Tracer)) else np.asarray(arg)
    if x.ndim != 1:
      raise ValueError(f"jnp.ix_: argument {k} must be one-dimensional, got shape "
                       f"{np.shape(x)}.")
    if x.dtype == np.bool_:
      x = searching.nonzero(core.concrete_or_error(
          np.asarray, x, f"jnp.ix_: the boolean argument {k} must be concrete (its True "
                         f"count decides the shape)."))[0]
    elif not isinstance(x, (Array, core.Tracer)) and x.size == 0:
      x = x.astype(dtypes.default_int_dtype())
    elif not dtypes.is_integer(x.dtype):
      raise TypeError(f"jnp.ix_: argument {k} must hold integers or booleans, got "
                      f"{np.dtype(x.dtype).name}.")
    shape = [1] * len(args)
    shape[k] = operator.index(x.shape[0])
    out.append(jnp_shape.reshape(lax_numpy.asarray(x), shape))
  return tuple(out)
