"""Statistics of samples in jaxon.numpy: covariance and correlation matrices, histograms
in several dimensions, integration by the trapezoidal rule, and phase unwrapping.
(Reductions such as `mean`, `median` or `nanquantile` live in reductions.py.)
"""
from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import lax, slicing
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import creation, lax_numpy, linear, misc, reductions, searching, ufuncs
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy import util
from jaxon._src.xla.eager_plans import memoize_eager_operations


def _inexact_arrays(fun_name: str, *args: Any) -> list[Any]:
  return [lax_numpy.asarray(x) for x in util.promote_args_inexact(f"jnp.{fun_name}", *args)]


# ----------------------------------------------------------------------------- cov, corrcoef

@memoize_eager_operations
def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: Any = None, aweights: Any = None,
        dtype: Any = None) -> Any:
  """The covariance matrix of the variables in the rows of `m` (columns if not `rowvar`),
  each column one observation; `y` adds more variables.

  Args:
    m: one variable (1-D) or several (2-D).
    y: more variables, in the same layout as `m`.
    rowvar: whether rows (True) or columns hold the variables.
    bias: normalise by N (True) instead of N - 1; `ddof` overrides it.
    ddof: the normalisation is N - ddof (weights change N, as in NumPy).
    fweights: integer repeat counts of each observation.
    aweights: relative importance of each observation.
    dtype: the dtype to compute in (default: the inputs' inexact type).

  Returns:
    the (variables, variables) covariance, squeezed: a scalar for a single variable.

  Example: `jnp.cov(jnp.array([[0., 1., 2.], [2., 1., 0.]]))` is `[[1., -1.], [-1., 1.]]`.
  """
  if y is None:
    (m,) = _inexact_arrays("cov", m)
  else:
    m, y = _inexact_arrays("cov", m, y)
  X = _variables("cov", m, dtype, transpose=not rowvar and m.ndim == 2)
  if X.shape[0] == 0:
    return lax.full((0, 0), 0, X.dtype)
  if y is not None:
    Y = _variables("cov", y, dtype, transpose=not rowvar and (y.ndim == 2 and y.shape[0] != 1))
    if Y.shape[1] != X.shape[1]:
      raise ValueError(f"jnp.cov: m and y must have the same number of observations, got "
                       f"{X.shape[1]} and {Y.shape[1]}.")
    X = jnp_shape.concatenate([X, Y], 0)
  if ddof is None:
    ddof = 0 if bias else 1
  elif ddof != int(ddof):
    raise ValueError(f"jnp.cov: ddof must be an integer, got {ddof!r}.")
  n = X.shape[1]
  fweights = _observation_weights("fweights", fweights, n, X.dtype, integral=True)
  aweights = _observation_weights("aweights", aweights, n, X.dtype, integral=False)
  w = fweights if aweights is None else (aweights if fweights is None else fweights * aweights)
  avg, w_sum = reductions.average(X, axis=1, weights=w, returned=True)
  w_sum = w_sum[0]
  if w is None:
    factor: Any = builtins.max(n - ddof, 0)
  elif ddof == 0:
    factor = w_sum
  elif aweights is None:
    factor = w_sum - ddof
  else:
    factor = w_sum - ddof * reductions.sum(w * aweights) / w_sum
  if w is not None:
    factor = ufuncs.maximum(factor, 0)  # NumPy warns and divides by zero
  X = X - avg[:, None]
  X_weighted = X if w is None else X * w
  c = linear.matmul(X, ufuncs.conj(X_weighted).T)
  return jnp_shape.squeeze(ufuncs.true_divide(c, factor))


def _variables(fun_name: str, m: Any, dtype: Any, transpose: bool) -> Any:
  """`m` (inexact) as a (variables, observations) matrix."""
  if dtype is not None:
    m = m.astype(dtypes.canonicalize_dtype(dtype))
  if m.ndim > 2:
    raise ValueError(f"jnp.{fun_name}: expected at most 2 dimensions, got shape {m.shape}.")
  X = jnp_shape.atleast_2d(m)
  return X.T if transpose else X


def _observation_weights(what: str, w: Any, n: int, dtype: np.dtype, integral: bool) -> Any:
  if w is None:
    return None
  util.check_arraylike(f"jnp.cov({what}=...)", w)
  w = lax_numpy.asarray(w)
  if w.ndim != 1 or w.shape[0] != n:
    raise ValueError(f"jnp.cov: {what} must be 1-D with one weight per observation ({n}), "
                     f"got shape {w.shape}.")
  if not isinstance(w, core.Tracer):  # values can only be checked when known
    host = np.asarray(w)
    if integral and not np.all(host == np.around(host)):
      raise TypeError("jnp.cov: fweights must be integer.")
    if np.any(host < 0):
      raise ValueError(f"jnp.cov: {what} cannot be negative.")
  return w.astype(dtype)


@memoize_eager_operations
def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
  """Pearson correlation coefficients: the covariance matrix (see `cov`) normalised by the
  standard deviations, clipped to [-1, 1].

  Example: `jnp.corrcoef(jnp.array([[0., 1., 2.], [2., 1., 0.]]))` is `[[1., -1.], [-1., 1.]]`.
  """
  c = cov(x, y, rowvar, dtype=dtype)
  if c.ndim == 0:
    return ufuncs.divide(c, c)  # 1, or NaN for a constant variable
  stddev = ufuncs.sqrt(ufuncs.real(creation.diagonal(c))).astype(c.dtype)
  c = c / stddev[:, None] / stddev[None, :]
  clipped = ufuncs.clip(ufuncs.real(c), -1, 1)
  if dtypes.is_complex(c.dtype):
    return lax.complex(clipped, ufuncs.clip(ufuncs.imag(c), -1, 1))
  return clipped


# ----------------------------------------------------------------------------- histograms

def histogramdd(sample: Any, bins: Any = 10, range: Sequence[Any] | None = None,
                weights: Any = None, density: bool | None = None) -> tuple[Any, list[Any]]:
  """The D-dimensional histogram of the N points in the rows of `sample` (N, D).

  Args:
    sample: the points, shape (N, D).
    bins: for every dimension, or one per dimension: a bin count (static) or the edges.
    range: one (min, max) pair or None per dimension, for the dimensions with bin counts
      (default: the data's extent).
    weights: one weight per point (default 1).
    density: normalise so that the histogram integrates to 1.

  Returns:
    (hist, edges): the counts (or summed weights) in the sample's inexact dtype, shape one
    per bin in each dimension, and the list of the D edge vectors. Bins are half-open
    except the last of each dimension; points outside the edges are not counted.
  """
  util.check_arraylike("jnp.histogramdd", sample)
  (sample,) = _inexact_arrays("histogramdd", sample)
  if sample.ndim != 2:
    raise ValueError(f"jnp.histogramdd: sample must have shape (N, D), got {sample.shape}.")
  N, D = sample.shape
  if weights is not None and np.shape(weights) != (N,):
    raise ValueError(f"jnp.histogramdd: weights must have one weight per sample, shape "
                     f"({N},), got {np.shape(weights)}.")
  if range is not None and (len(range) != D or any(
      r is not None and np.shape(r) != (2,) for r in range)):
    raise ValueError(f"jnp.histogramdd: for sample.shape={(N, D)}, range must be a sequence "
                     f"of {D} pairs or Nones; got range={range}.")
  per_dim_bins = _bins_per_dimension(bins, D)
  edges, coordinates = [], []
  for i in builtins.range(D):
    column = sample[:, i]
    e = misc.histogram_bin_edges(column, per_dim_bins[i], None if range is None else range[i])
    e = lax_numpy.asarray(e).astype(sample.dtype)
    index = searching.searchsorted(e, column, "right")
    coordinates.append(ufuncs.where(column == e[-1], index - 1, index))
    edges.append(e)
  # Each dimension has an outlier bin below and above its edges, cut off at the end.
  sizes = tuple(e.shape[0] + 1 for e in edges)
  flat = searching.ravel_multi_index(coordinates, sizes, mode="clip")
  values = (lax.full((N,), 1, sample.dtype) if weights is None
            else lax_numpy.asarray(weights).astype(sample.dtype))
  hist = lax_numpy.zeros(math.prod(sizes), sample.dtype).at[flat].add(values)
  hist = jnp_shape.reshape(hist, sizes)[(builtins.slice(1, -1),) * D]
  if density:
    hist = hist / reductions.sum(hist)
    for i, e in enumerate(edges):
      widths_shape = [1] * D
      widths_shape[i] = e.shape[0] - 1
      hist = hist / jnp_shape.reshape(misc.diff(e), widths_shape)
  return hist, edges


def _bins_per_dimension(bins: Any, D: int) -> list[Any]:
  if not isinstance(bins, (list, tuple)) and np.ndim(bins) == 0:
    return [bins] * D
  if len(bins) != D:
    raise ValueError(f"jnp.histogramdd: bins must be a count, or one bin specification per "
                     f"dimension ({D}), got {len(bins)}.")
  return list(bins)


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Sequence[Any] | None = None,
                weights: Any = None, density: bool | None = None) -> tuple[Any, Any, Any]:
  """The 2-D histogram of the points (x[i], y[i]): `histogramdd` of the stacked columns.

  `bins` is a count, a pair of counts or edge vectors, or one edge vector for both
  dimensions. Returns (hist, x_edges, y_edges).
  """
  util.check_arraylike("jnp.histogram2d", x, y)
  if (isinstance(bins, (list, tuple)) or np.ndim(bins)) and len(bins) not in (1, 2):
    bins = [bins, bins]  # one edge vector for both dimensions
  x, y = _inexact_arrays("histogram2d", x, y)
  hist, edges = histogramdd(jnp_shape.stack([x, y], axis=1), bins, range, weights, density)
  return hist, edges[0], edges[1]


# ----------------------------------------------------------------------------- along an axis

def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
  """The integral of `y` along `axis` by the trapezoidal rule: at the sample points `x`
  (1-D, or of `y`'s shape), or spaced `dx` apart.

  Example: `jnp.trapezoid(jnp.array([1., 2., 3.]))` is `4.`.
  """
  if x is None:
    y, dx = _inexact_arrays("trapezoid", y, dx)
  else:
    y, x = _inexact_arrays("trapezoid", y, x)
  axis = lax_utils.canonicalize_axis(axis, y.ndim)
  y = jnp_shape.moveaxis(y, axis, -1)
  if x is not None:
    dx = misc.diff(x) if x.ndim == 1 else jnp_shape.moveaxis(misc.diff(x, axis=axis), axis, -1)
  return reductions.sum(dx * (y[..., 1:] + y[..., :-1]), axis=-1) * 0.5


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
  """`p` with every jump larger than `discont` (default and minimum period / 2) between
  neighbours along `axis` replaced by its remainder modulo `period`: a phase made
  continuous.

  Example: `jnp.unwrap(jnp.array([0., 3., 6.5]))` is `[0., 3., 0.2168147]`.
  """
  util.check_arraylike("jnp.unwrap", p)
  if dtypes.is_complex(dtypes.dtype(p)):
    raise TypeError("jnp.unwrap does not support complex inputs.")
  (p,) = _inexact_arrays("unwrap", p)
  axis = lax_utils.canonicalize_axis(axis, p.ndim)
  if p.shape[axis] == 0:
    return p
  half = ufuncs.divide(period, 2)
  discont = half if discont is None else discont
  dd = misc.diff(p, axis=axis)
  ddmod = ufuncs.remainder(dd + half, period) - half
  ddmod = ufuncs.where((ddmod == -half) & (dd > 0), half, ddmod)  # +half stays +half
  correction = ufuncs.where(ufuncs.abs(dd) < discont, 0, ddmod - dd).astype(p.dtype)
  first = slicing.slice_in_dim(p, 0, 1, axis=axis)
  rest = slicing.slice_in_dim(p, 1, None, axis=axis) + reductions.cumsum(correction, axis=axis)
  return jnp_shape.concatenate([first, rest], axis)
