"""Numeric helpers of jaxon.numpy: comparisons (`isclose`, `array_equal`), finite
differences (`diff`, `gradient`), interpolation and binning (`interp`, `digitize`,
`histogram`, `bincount`), 1-D convolutions, polynomials, piecewise selection, and the float
and integer helpers `frexp`, `ldexp`, `modf`, `gcd`, `lcm`.

Everything is written with lax and other jnp functions, so it traces, batches and (where
the function is smooth) differentiates. Data decide no shapes: `bincount` needs `length=`
under jit, and `histogram`'s bin count must be concrete. Floating-point helpers work on the
bits through `bitcast_convert_type`, with the scaling done by exact powers of two so that
derivatives still flow through the multiplications.
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import convolution, lax, slicing
from jaxon._src.lax import utils as lax_utils
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.numpy import creation, lax_numpy, reductions, searching, sorting, ufuncs, util
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy.padding import pad
from jaxon._src.xla.eager_plans import memoize_eager_operations


def _asarray(fun_name: str, x: Any) -> Any:
  return jnp_shape._ensure_array(fun_name, x)


def _inexact_arrays(fun_name: str, *args: Any) -> list[Any]:
  """The arguments promoted to one inexact dtype, as jaxon arrays."""
  return [lax_numpy.asarray(x) for x in util.promote_args_inexact(fun_name, *args)]


def _take_along(x: Any, start: int | None, stop: int | None, axis: int) -> Any:
  """`x[start:stop]` along `axis` (Python slice bounds)."""
  start, stop, _ = slice(start, stop).indices(x.shape[axis])
  return slicing.slice_in_dim(x, start, max(start, stop), axis=axis)


def _concrete_int(fun_name: str, what: str, value: Any) -> int:
  return core.concrete_or_error(
      operator.index, value, f"The {what} argument of jnp.{fun_name} must be a concrete "
                             f"integer (it decides the shape of the result).")


# ----------------------------------------------------------------------------- comparisons

@memoize_eager_operations
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False
            ) -> Any:
  """Elementwise `|a - b| <= atol + rtol * |b|` for finite values; infinities are close
  only to themselves, and NaNs to nothing unless `equal_nan`. Integers are compared as
  floats, as in NumPy.

  Example: `jnp.isclose(1.0, 1.0 + 1e-9)` is True.
  """
  a, b = _inexact_arrays("isclose", a, b)
  tolerance = ufuncs.add(atol, ufuncs.multiply(rtol, ufuncs.abs(b)))
  close = ufuncs.logical_and(ufuncs.less_equal(ufuncs.abs(ufuncs.subtract(a, b)), tolerance),
                             ufuncs.isfinite(b))
  close = ufuncs.logical_or(close, ufuncs.equal(a, b))
  if equal_nan:
    close = ufuncs.logical_or(close, ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b)))
  return close


@memoize_eager_operations
def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False
             ) -> Any:
  """Whether `isclose` holds for every element (a boolean scalar array)."""
  return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
  """Whether the arrays have the same shape and elements (a boolean scalar array)."""
  a1, a2 = _asarray("array_equal", a1), _asarray("array_equal", a2)
  if a1.shape != a2.shape:
    return lax_numpy.asarray(False)
  equal = ufuncs.equal(a1, a2)
  if equal_nan and any(dtypes.is_inexact(x.dtype) for x in (a1, a2)):
    equal = ufuncs.logical_or(equal, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
  return reductions.all(equal)


def array_equiv(a1: Any, a2: Any) -> Any:
  """Whether the arrays broadcast together and are equal elementwise."""
  a1, a2 = _asarray("array_equiv", a1), _asarray("array_equiv", a2)
  try:
    lax.broadcast_shapes(a1.shape, a2.shape)
  except ValueError:
    return lax_numpy.asarray(False)
  return reductions.all(ufuncs.equal(a1, a2))


# ----------------------------------------------------------------------------- vectors

@memoize_eager_operations
def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
  """The cross product of (broadcast) vectors of length 2 or 3 along `axisa` of `a` and
  `axisb` of `b`; the result's vectors lie along `axisc`. Two 2-vectors give the scalar z
  component; a 2-vector counts as a 3-vector with z = 0.

  Example: `jnp.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0]))` is `[0, 0, 1]`.
  """
  if axis is not None:
    axisa = axisb = axisc = axis
  a, b = (jnp_shape.moveaxis(_asarray("cross", x), ax, -1) for x, ax in ((a, axisa), (b, axisb)))
  if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
    raise ValueError(f"jnp.cross: incompatible dimensions for cross product (dimension must "
                     f"be 2 or 3), got vectors of length {a.shape[-1]} and {b.shape[-1]}.")
  a, b = util.promote_dtypes(a, b)
  ax, ay, az = _components(a)
  bx, by, bz = _components(b)
  z = _product_difference(ax, by, ay, bx)
  if az is None and bz is None:
    return z
  out = jnp_shape.stack([_product_difference(ay, bz, az, by),
                         _product_difference(az, bx, ax, bz), z], axis=-1)
  return jnp_shape.moveaxis(out, -1, axisc)


def _components(v: Any) -> list[Any]:
  """x, y and z of vectors along the last axis; z is None for 2-vectors."""
  parts = [slicing.index_in_dim(v, i, v.ndim - 1, keepdims=False) for i in range(v.shape[-1])]
  return parts + [None] * (3 - len(parts))


def _product_difference(p: Any, q: Any, r: Any, s: Any) -> Any:
  """`p * q - r * s`, where a None factor is zero (so it never multiplies an inf)."""
  left = None if p is None or q is None else ufuncs.multiply(p, q)
  right = None if r is None or s is None else ufuncs.multiply(r, s)
  if right is None:
    return left
  return ufuncs.negative(right) if left is None else ufuncs.subtract(left, right)


# ----------------------------------------------------------------------------- sorted lookups

def _vector(fun_name: str, what: str, x: Any) -> Any:
  x = _asarray(fun_name, x)
  if x.ndim != 1:
    raise ValueError(f"jnp.{fun_name}: {what} must be one-dimensional, got shape {x.shape}.")
  return x


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
  """Piecewise-linear interpolation of the points (`xp`, `fp`) (with `xp` increasing) at
  `x`; outside [xp[0], xp[-1]] the result is `left` / `right` (default fp[0] / fp[-1]).
  With `period`, `xp` is treated as periodic and `left`/`right` are not used.

  Example: `jnp.interp(1.5, jnp.array([1., 2.]), jnp.array([10., 20.]))` is 15.
  """
  xp, fp = _vector("interp", "xp", xp), _vector("interp", "fp", fp)
  if xp.shape != fp.shape or xp.shape[0] == 0:
    raise ValueError(f"jnp.interp: xp and fp must be non-empty and of the same length, got "
                     f"shapes {xp.shape} and {fp.shape}.")
  x, xp = _inexact_arrays("interp", x, xp)
  (fp,) = _inexact_arrays("interp", fp)
  if period is not None:
    if left is not None or right is not None:
      raise ValueError("jnp.interp: left and right are not used with period.")
    x, xp, fp = _periodic_points(x, xp, fp, ufuncs.abs(period))
  n = xp.shape[0]
  upper = ufuncs.clip(searching.searchsorted(xp, x, "right"), 1, max(n - 1, 1))
  lower = ufuncs.subtract(upper, 1 if n > 1 else 0)
  x_lo, x_hi, f_lo, f_hi = xp[lower], xp[upper], fp[lower], fp[upper]
  dx = ufuncs.subtract(x_hi, x_lo)
  flat = ufuncs.equal(dx, 0)
  slope = ufuncs.divide(ufuncs.subtract(f_hi, f_lo), ufuncs.where(flat, 1, dx))
  f = ufuncs.where(flat, f_lo, ufuncs.add(f_lo, ufuncs.multiply(slope,
                                                                ufuncs.subtract(x, x_lo))))
  if period is not None:
    return f
  f = ufuncs.where(ufuncs.equal(x, xp[-1]), fp[-1], f)
  f = ufuncs.where(ufuncs.greater(x, xp[-1]), fp[-1] if right is None else right, f)
  return ufuncs.where(ufuncs.less(x, xp[0]), fp[0] if left is None else left, f)


def _periodic_points(x: Any, xp: Any, fp: Any, period: Any) -> tuple[Any, Any, Any]:
  """`x` and `xp` reduced modulo `period`, the points sorted, and one point wrapped
  around at each end."""
  x, xp = ufuncs.remainder(x, period), ufuncs.remainder(xp, period)
  order = sorting.argsort(xp)
  xp, fp = xp[order], fp[order]
  xp = jnp_shape.concatenate([ufuncs.subtract(xp[-1:], period), xp,
                              ufuncs.add(xp[:1], period)])
  fp = jnp_shape.concatenate([fp[-1:], fp, fp[:1]])
  return x, xp, fp


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
  """The index of the bin of `bins` (monotonic, increasing or decreasing) that each
  element of `x` falls in: `i` with `bins[i-1] <= x < bins[i]` for increasing bins
  (`<` and `<=` swapped with `right=True`); 0 and `len(bins)` lie outside. `method` is
  `searchsorted`'s (None: its default), which does the search.

  Example: `jnp.digitize(jnp.array([0.5, 1.5]), jnp.array([1., 2.]))` is `[0, 1]`.
  """
  bins = _vector("digitize", "bins", bins)
  x = _asarray("digitize", x)
  if bins.shape[0] == 0:
    return lax.full_like(x, 0, dtypes.default_int_dtype())
  side = "left" if right else "right"
  search = functools.partial(searching.searchsorted, side=side,
                             **({} if method is None else {"method": method}))
  increasing = search(bins, x)
  decreasing = ufuncs.subtract(bins.shape[0], search(jnp_shape.flip(bins), x))
  return ufuncs.where(ufuncs.greater_equal(bins[-1], bins[0]), increasing, decreasing)


def histogram_bin_edges(a: Any, bins: Any = 10, range: Sequence[Any] | None = None,
                        weights: Any = None) -> Any:
  """The edges of `histogram`'s bins: `bins` itself if it is a sequence, else `bins + 1`
  evenly spaced edges over `range` (default: the data's min and max, widened by 0.5 each
  way when they are equal)."""
  a = _asarray("histogram_bin_edges", a)
  if np.ndim(bins) == 1:
    return lax_numpy.asarray(bins)
  bins = _concrete_int("histogram_bin_edges", "bins", bins)
  if bins < 1:
    raise ValueError(f"jnp.histogram_bin_edges: bins must be positive, got {bins}.")
  (a,) = _inexact_arrays("histogram_bin_edges", a)
  if range is None:
    low, high = ((reductions.min(a), reductions.max(a)) if a.size else (0.0, 1.0))
  else:
    low, high = range
  low, high = _inexact_arrays("histogram_bin_edges", low, high, a)[:2]
  empty_range = ufuncs.equal(low, high)
  low = ufuncs.where(empty_range, ufuncs.subtract(low, 0.5), low)
  high = ufuncs.where(empty_range, ufuncs.add(high, 0.5), high)
  return creation.linspace(low, high, bins + 1)


def histogram(a: Any, bins: Any = 10, range: Sequence[Any] | None = None,
              weights: Any = None, density: bool | None = None) -> tuple[Any, Any]:
  """Counts (or summed `weights`) of the elements of `a` in each bin, and the bin edges.
  Bins are half-open `[edge_i, edge_i+1)` except the last, which includes its right edge;
  values outside the edges are not counted. With `density` the counts are divided by
  the total and the bin widths, so the histogram integrates to 1.

  Example: `jnp.histogram(jnp.array([0., 1., 1., 3.]), bins=3)[0]` is `[1., 2., 1.]`.
  """
  edges = histogram_bin_edges(a, bins, range, weights)
  if weights is not None and np.shape(weights) != np.shape(a):
    raise ValueError(f"jnp.histogram: weights must have the shape of a, got "
                     f"{np.shape(weights)} for {np.shape(a)}.")
  a = jnp_shape.ravel(_inexact_arrays("histogram", a)[0])
  weights = (lax.full_like(a, 1) if weights is None
             else jnp_shape.ravel(lax_numpy.asarray(weights)))
  n_edges = edges.shape[0]
  bin_index = searching.searchsorted(edges, a, "right")
  bin_index = ufuncs.where(ufuncs.equal(a, edges[-1]), n_edges - 1, bin_index)
  counts = lax_numpy.zeros(n_edges + 1, weights.dtype).at[bin_index].add(weights)
  counts = _take_along(counts, 1, -1, 0)
  if density:
    widths = diff(edges)
    counts = ufuncs.divide(ufuncs.divide(counts, widths), reductions.sum(counts))
  return counts, edges


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None,
             out_sharding: Any = None) -> Any:
  """How often each value 0, 1, …, length - 1 occurs in the non-negative integer vector
  `x` (the sum of the matching `weights` with weights). Larger values are dropped.

  The result's length is `length`; without it, max(x) + 1 (at least `minlength`), which
  needs a concrete `x`: under jit pass `length=`.

  Example: `jnp.bincount(jnp.array([0, 1, 1, 3]))` is `[1, 2, 0, 1]`.
  """
  if out_sharding is not None:
    return util.out_sharded(bincount(x, weights, minlength, length=length), out_sharding,
                            "bincount")
  x = _vector("bincount", "x", x)
  if not dtypes.is_integer(x.dtype):
    raise TypeError(f"jnp.bincount: x must have an integer type, got {x.dtype}.")
  minlength = _concrete_int("bincount", "minlength", minlength)
  if minlength < 0:
    raise ValueError(f"jnp.bincount: minlength must be non-negative, got {minlength}.")
  if length is None:
    values = core.concrete_or_error(
        np.asarray, x, "The length of jnp.bincount's result is max(x) + 1, which a traced x "
                       "does not have: pass a static length= (e.g. length=x_max + 1).")
    length = max(minlength, int(values.max()) + 1 if values.size else 0)
  length = _concrete_int("bincount", "length", length)
  if weights is None:
    weights = np.ones((), dtypes.default_int_dtype())
  else:
    weights = lax_numpy.asarray(weights)
  counts = lax_numpy.zeros(length, dtypes.dtype(weights, canonicalize=True))
  return counts.at[ufuncs.maximum(x, 0)].add(weights, mode="drop")


# ----------------------------------------------------------------------------- convolutions

_CONV_MODES = ("full", "same", "valid")


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Any:
  """The discrete linear convolution of 1-D `a` and `v`: `out[k] = sum_n a[n] v[k - n]`.
  `mode` 'full' gives every overlap (length N + M - 1), 'same' the length max(N, M)
  centred, 'valid' only complete overlaps (length max(N, M) - min(N, M) + 1).

  Example: `jnp.convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., .5]))` is
  `[0., 1., 2.5, 4., 1.5]`.
  """
  return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
  """The cross-correlation of 1-D `a` and `v`: `out[k] = sum_n a[n + k] conj(v[n])`, with
  `convolve`'s modes (default 'valid')."""
  return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


def _conv1d(fun_name: str, a: Any, v: Any, mode: str, precision: Any,
            preferred_element_type: Any) -> Any:
  """Both as `conv_general_dilated` (a correlation) of the longer operand with the
  shorter; a convolution flips the kernel, and a correlation whose operands were swapped
  reverses its output."""
  if mode not in _CONV_MODES:
    raise ValueError(f"jnp.{fun_name}: mode must be one of {_CONV_MODES}, got {mode!r}.")
  a, v = _vector(fun_name, "a", a), _vector(fun_name, "v", v)
  if a.shape[0] == 0 or v.shape[0] == 0:
    raise ValueError(f"jnp.{fun_name}: inputs cannot be empty, got shapes {a.shape} and "
                     f"{v.shape}.")
  a, v = _inexact_arrays(fun_name, a, v)
  swapped = a.shape[0] < v.shape[0]
  if swapped:
    a, v = v, a
  if fun_name == "convolve":
    v = jnp_shape.flip(v)
  elif dtypes.is_complex(v.dtype):
    v = ufuncs.conj(v) if not swapped else v
    a = ufuncs.conj(a) if swapped else a
  m = v.shape[0]
  padding = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}[mode]
  out = convolution.conv_general_dilated(
      a[None, None, :], v[None, None, :], (1,), [padding], precision=precision,
      preferred_element_type=preferred_element_type)[0, 0]
  return jnp_shape.flip(out) if swapped and fun_name == "correlate" else out


# ----------------------------------------------------------------------------- polynomials
# Coefficients run from the highest power down, as in NumPy's `poly*` functions.

def _poly(fun_name: str, *coefficients: Any) -> list[Any]:
  arrays = [_vector(fun_name, "the coefficients", c) for c in coefficients]
  return _inexact_arrays(fun_name, *arrays)


def polyval(p: Any, x: Any, *, unroll: int | bool = 16) -> Any:
  """The polynomial with coefficients `p` (highest power first) at `x`, by Horner's rule.

  The rule is a `scan` over the coefficients, as in JAX, so a long `p` compiles to a loop;
  `unroll` steps run per trip of it (True: all of them, 0 and False: one).

  Example: `jnp.polyval(jnp.array([1., 0., -1.]), 3.)` is 8. Integer coefficients at
  integer points stay integers (wrapping around on overflow), as in JAX.
  """
  p = _vector("polyval", "p", p)
  if not isinstance(unroll, (int, np.integer)):
    raise TypeError(f"jnp.polyval: unroll must be a bool or a non-negative int, got "
                    f"{unroll!r}.")
  if unroll < 0:
    raise ValueError(f"jnp.polyval: unroll must be a bool or a non-negative int, got "
                     f"{unroll}.")
  p, x = [lax_numpy.asarray(a) for a in util.promote_args("polyval", p, x)]
  horner = lambda y, c: (ufuncs.add(ufuncs.multiply(y, x), c), None)
  return scan(horner, lax.full_like(x, 0), p,
              unroll=unroll if isinstance(unroll, bool) else max(int(unroll), 1))[0]


def _align(a1: Any, a2: Any) -> tuple[Any, Any]:
  """The coefficient vectors padded with leading zeros to one length."""
  n = max(a1.shape[0], a2.shape[0])
  return tuple(pad(a, (n - a.shape[0], 0)) for a in (a1, a2))


def polyadd(a1: Any, a2: Any) -> Any:
  """The sum of two polynomials."""
  return ufuncs.add(*_align(*_poly("polyadd", a1, a2)))


def polysub(a1: Any, a2: Any) -> Any:
  """The difference of two polynomials."""
  return ufuncs.subtract(*_align(*_poly("polysub", a1, a2)))


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
  """The product of two polynomials (the convolution of their coefficients). With
  `trim_leading_zeros` (which needs concrete inputs) leading zero coefficients of the
  inputs are dropped first."""
  a1, a2 = _poly("polymul", a1, a2)
  if trim_leading_zeros:
    a1, a2 = (searching.trim_zeros(a, "f") for a in (a1, a2))
  return convolve(a1, a2)


def polyder(p: Any, m: int = 1) -> Any:
  """The `m`-th derivative of the polynomial `p`.

  Example: `jnp.polyder(jnp.array([1., 1., 1.]))` is `[2., 1.]`.
  """
  (p,) = _poly("polyder", p)
  m = _concrete_int("polyder", "m", m)
  if m < 0:
    raise ValueError(f"jnp.polyder: the order of derivative must be non-negative, got {m}.")
  n = p.shape[0]
  if m >= n:
    return _take_along(p, 0, 0, 0)
  powers = np.arange(n - 1, m - 1, -1)
  factors = np.prod([powers - i for i in range(m)], axis=0) if m else np.ones(n)
  return ufuncs.multiply(_take_along(p, 0, n - m, 0), factors.astype(p.dtype))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
  """The `m`-th antiderivative of the polynomial `p`; the integration constants `k` (a
  scalar used for every step, or one per step, the first for the first integration)
  default to zero.

  Example: `jnp.polyint(jnp.array([3., 2., 1.]))` is `[1., 1., 1., 0.]`.
  """
  (p,) = _poly("polyint", p)
  m = _concrete_int("polyint", "m", m)
  if m < 0:
    raise ValueError(f"jnp.polyint: the order of integral must be non-negative, got {m}.")
  k = lax_numpy.asarray(0 if k is None else k, p.dtype)
  if k.ndim == 0 or k.shape == (1,):
    k = jnp_shape.broadcast_to(jnp_shape.ravel(k), (m,))
  if k.shape != (m,):
    raise ValueError(f"jnp.polyint: k must be a scalar or have {m} elements, got shape "
                     f"{k.shape}.")
  for i in range(m):
    n = p.shape[0]
    scaled = ufuncs.divide(p, np.arange(n, 0, -1).astype(p.dtype))
    p = jnp_shape.concatenate([scaled, k[i:i + 1]])
  return p


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
  """The Vandermonde matrix of the vector `x`: its columns are powers of `x`, from
  `x ** (N - 1)` down to `x ** 0` (up, with `increasing`). Powers are running products,
  as in NumPy.

  Example: `jnp.vander(jnp.array([2, 3]), 3)` is `[[4, 2, 1], [9, 3, 1]]`.
  """
  x = _vector("vander", "x", x)
  N = x.shape[0] if N is None else _concrete_int("vander", "N", N)
  if N < 0:
    raise ValueError(f"jnp.vander: N must be non-negative, got {N}.")
  columns = [lax.full_like(x, 1)] if N else []
  for _ in range(N - 1):
    columns.append(ufuncs.multiply(columns[-1], x))
  if not increasing:
    columns.reverse()
  return jnp_shape.stack(columns, axis=1) if columns else lax.full_like(x, 0, shape=(x.shape[0], 0))


# ----------------------------------------------------------------------------- selection

def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
  """Elementwise, the entry of `choicelist` whose condition in `condlist` is the first to
  hold, or `default` where none does.

  Example: `jnp.select([x < 0, x > 0], [-1, 1])` is the sign of `x` (0 at 0).
  """
  if len(condlist) != len(choicelist):
    raise ValueError(f"jnp.select: condlist and choicelist must have the same length, got "
                     f"{len(condlist)} and {len(choicelist)}.")
  if not condlist:
    raise ValueError("jnp.select: condlist must not be empty.")
  for i, cond in enumerate(condlist):
    if dtypes.dtype(cond) != np.bool_:
      raise TypeError(f"jnp.select: condlist entry {i} must be a boolean array, got dtype "
                      f"{dtypes.dtype(cond)}.")
  out = default
  for cond, choice in reversed(list(zip(condlist, choicelist))):
    out = ufuncs.where(cond, choice, out)
  return lax_numpy.asarray(out)


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
  """`funclist[i](x, *args, **kw)` (or the constant `funclist[i]`) where `condlist[i]`
  holds, later conditions winning; one extra function is the value where no condition
  holds, and elsewhere the result is 0. The result has `x`'s dtype.

  Every function is evaluated on the whole of `x` (there is no data-dependent shape), so
  they should be elementwise.

  Example: `jnp.piecewise(x, [x < 0], [lambda v: -v, lambda v: v])` is `abs(x)`.
  """
  x = _asarray("piecewise", x)
  conds = lax_numpy.asarray(condlist, np.bool_)
  if conds.ndim == x.ndim:
    conds = conds[None]
  n_conds, n_funcs = conds.shape[0], len(funclist)
  if n_funcs == n_conds + 1:
    otherwise = ufuncs.logical_not(reductions.any(conds, axis=0, keepdims=True))
    conds = jnp_shape.concatenate([conds, otherwise])
  elif n_funcs != n_conds:
    raise ValueError(f"jnp.piecewise: with {n_conds} conditions, funclist must have "
                     f"{n_conds} or {n_conds + 1} entries, got {n_funcs}.")
  out = lax.full_like(x, 0)
  for i, fun in enumerate(funclist):
    value = fun(x, *args, **kw) if callable(fun) else fun
    out = ufuncs.where(conds[i], lax._convert_element_type(value, x.dtype), out)
  return out


# ----------------------------------------------------------------------------- differences

@memoize_eager_operations
def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
  """The `n`-th discrete difference along `axis` (`a[1:] - a[:-1]`, repeated; "not equal"
  for booleans), after joining `prepend` and `append` (scalars are broadcast) to `a`.

  Example: `jnp.diff(jnp.array([1, 4, 9, 16]))` is `[3, 5, 7]`.
  """
  a = _asarray("diff", a)
  n = _concrete_int("diff", "n", n)
  if n < 0:
    raise ValueError(f"jnp.diff: order must be non-negative, got {n}.")
  if a.ndim == 0:
    raise ValueError("jnp.diff requires an input that is at least one-dimensional.")
  if n == 0:
    return a
  axis = lax_utils.canonicalize_axis(operator.index(axis), a.ndim)
  parts = [_edge(a, x, axis) for x in (prepend,) if x is not None]
  parts += [a] + [_edge(a, x, axis) for x in (append,) if x is not None]
  a = jnp_shape.concatenate(parts, axis) if len(parts) > 1 else a
  difference = ufuncs.not_equal if a.dtype == np.bool_ else ufuncs.subtract
  for _ in range(n):
    if a.shape[axis] == 0:
      break
    a = difference(_take_along(a, 1, None, axis), _take_along(a, None, -1, axis))
  return a


def _edge(a: Any, value: Any, axis: int) -> Any:
  """`prepend`/`append`: a scalar becomes a slab of size 1 along `axis`."""
  value = lax_numpy.asarray(value)
  if value.ndim == 0:
    edge_shape = list(a.shape)
    edge_shape[axis] = 1
    return jnp_shape.broadcast_to(value, edge_shape)
  return value


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
  """The differences of consecutive elements of `ary` flattened, with `to_begin` and
  `to_end` (flattened, converted to the result's dtype) around them."""
  out = diff(jnp_shape.ravel(_asarray("ediff1d", ary)))
  parts = [jnp_shape.ravel(lax_numpy.asarray(x, out.dtype)) for x in (to_begin,)
           if x is not None]
  parts += [out] + [jnp_shape.ravel(lax_numpy.asarray(x, out.dtype)) for x in (to_end,)
                    if x is not None]
  return jnp_shape.concatenate(parts) if len(parts) > 1 else out


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: int | None = None) -> Any:
  """The gradient of sampled values `f` by second-order central differences inside and
  first- (or, with `edge_order=2`, second-) order one-sided differences at the ends.

  `varargs` give the spacing: none (1 everywhere), one for every axis, or one per axis;
  each a scalar step or a vector of the sample coordinates along its axis. The result is
  one array per axis (a list), or a single array for a single axis.

  Example: `jnp.gradient(jnp.array([1., 4., 9., 16.]))` is `[3., 4., 6., 7.]`.
  """
  (f,) = _inexact_arrays("gradient", f)
  axes = (tuple(range(f.ndim)) if axis is None
          else tuple(lax_utils.canonicalize_axis(ax, f.ndim)
                     for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))))
  edge_order = 1 if edge_order is None else edge_order
  if edge_order not in (1, 2):
    raise ValueError(f"jnp.gradient: edge_order must be 1 or 2, got {edge_order}.")
  if not varargs:
    spacings: list[Any] = [1.0] * len(axes)
  elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
    spacings = list(varargs) * len(axes)
  elif len(varargs) == len(axes):
    spacings = list(varargs)
  else:
    raise TypeError(f"jnp.gradient: expected 0, 1 or {len(axes)} spacing arguments, got "
                    f"{len(varargs)}.")
  out = [_gradient_along(f, h, ax, edge_order) for h, ax in zip(spacings, axes)]
  return out[0] if len(out) == 1 else out


def _gradient_along(f: Any, h: Any, axis: int, edge_order: int) -> Any:
  n = f.shape[axis]
  if n < edge_order + 1:
    raise ValueError(f"jnp.gradient: the array is too small along axis {axis} (size {n}) "
                     f"to calculate a numerical gradient; at least edge_order + 1 = "
                     f"{edge_order + 1} elements are required.")
  h = lax_numpy.asarray(h, f.dtype)
  if h.ndim == 0:
    h = lax.full_like(h, 0, shape=(n - 1,)) + h
  elif h.shape != (n,):
    raise ValueError(f"jnp.gradient: the coordinates along axis {axis} must have length "
                     f"{n}, got shape {h.shape}.")
  else:
    h = diff(h)

  def at(start: int | None, stop: int | None) -> Any:
    return _take_along(f, start, stop, axis)

  def spacing(i: int) -> Any:
    """The i-th step, broadcast along `axis` of `f`."""
    step = slicing.index_in_dim(h, i % (n - 1), keepdims=False)
    return lax.broadcast_in_dim(step, (1,) * f.ndim, ())

  def weighted(*terms: tuple[Any, Any]) -> Any:
    total = None
    for weight, value in terms:
      term = ufuncs.multiply(weight, value)
      total = term if total is None else ufuncs.add(total, term)
    return total

  parts = []
  if edge_order == 1:
    parts.append(ufuncs.divide(ufuncs.subtract(at(1, 2), at(0, 1)), spacing(0)))
  else:
    d1, d2 = spacing(0), spacing(1)
    parts.append(weighted(
        (ufuncs.negative(ufuncs.divide(2 * d1 + d2, d1 * (d1 + d2))), at(0, 1)),
        (ufuncs.divide(d1 + d2, d1 * d2), at(1, 2)),
        (ufuncs.negative(ufuncs.divide(d1, d2 * (d1 + d2))), at(2, 3))))
  if n > 2:
    d1 = _interior_steps(h, 0, f.ndim, axis)
    d2 = _interior_steps(h, 1, f.ndim, axis)
    parts.append(weighted(
        (ufuncs.negative(ufuncs.divide(d2, d1 * (d1 + d2))), at(None, -2)),
        (ufuncs.divide(d2 - d1, d1 * d2), at(1, -1)),
        (ufuncs.divide(d1, d2 * (d1 + d2)), at(2, None))))
  if edge_order == 1:
    parts.append(ufuncs.divide(ufuncs.subtract(at(-1, None), at(-2, -1)), spacing(-1)))
  else:
    d1, d2 = spacing(-2), spacing(-1)
    parts.append(weighted(
        (ufuncs.divide(d2, d1 * (d1 + d2)), at(-3, -2)),
        (ufuncs.negative(ufuncs.divide(d1 + d2, d1 * d2)), at(-2, -1)),
        (ufuncs.divide(2 * d2 + d1, d2 * (d1 + d2)), at(-1, None))))
  return jnp_shape.concatenate(parts, axis)


def _interior_steps(h: Any, start: int, ndim: int, axis: int) -> Any:
  """h[start : start + n - 2] laid along `axis` of an `ndim`-dimensional array."""
  steps = _take_along(h, start, h.shape[0] - 1 + start, 0)
  out_shape = [1] * ndim
  out_shape[axis] = steps.shape[0]
  return lax.broadcast_in_dim(steps, out_shape, (axis,))


# ----------------------------------------------------------------------------- float bits

def _float_bits(dtype: np.dtype) -> tuple[Any, np.dtype]:
  info = dtypes.finfo(dtype)
  return info, np.dtype(f"uint{info.bits}")


def _exponent(x: Any) -> Any:
  """The exponent `e` with `x = m * 2**e`, 0.5 <= |m| < 1 (0 for zero, inf and NaN), as
  int32; read from the bits, with subnormals first scaled into the normal range."""
  info, uint = _float_bits(x.dtype)
  bias = info.maxexp - 1
  subnormal = ufuncs.logical_and(ufuncs.not_equal(x, 0),
                                 ufuncs.less(ufuncs.abs(x), info.smallest_normal))
  scaled = ufuncs.where(subnormal, ufuncs.multiply(x, 2.0 ** info.nmant), x)
  bits = lax.bitcast_convert_type(scaled, uint)
  field = lax.bitwise_and(lax.shift_right_logical(bits, np.array(info.nmant, uint)),
                          np.array((1 << info.nexp) - 1, uint))
  exponent = ufuncs.subtract(lax.convert_element_type(field, np.int32), bias - 1)
  exponent = ufuncs.subtract(exponent, ufuncs.where(subnormal, np.int32(info.nmant), 0))
  special = ufuncs.logical_or(ufuncs.equal(x, 0), ufuncs.logical_not(ufuncs.isfinite(x)))
  return ufuncs.where(special, np.int32(0), exponent)


def _pow2(k: Any, dtype: np.dtype) -> Any:
  """2**k exactly, for integer arrays k in the normal exponent range of `dtype`."""
  info, uint = _float_bits(dtype)
  biased = lax.convert_element_type(ufuncs.add(k, info.maxexp - 1), uint)
  return lax.bitcast_convert_type(lax.shift_left(biased, np.array(info.nmant, uint)), dtype)


def _scale(x: Any, exponents: Sequence[Any]) -> Any:
  """x * 2**e1 * 2**e2 * …, multiplied in order (each factor exact)."""
  for e in exponents:
    x = ufuncs.multiply(x, _pow2(e, x.dtype))
  return x


def frexp(x: Any, /) -> tuple[Any, Any]:
  """The mantissa m and exponent e of `x = m * 2**e`, 0.5 <= |m| < 1 (m = x and e = 0 for
  zero, inf and NaN); e is int32.

  Example: `jnp.frexp(8.)` is `(0.5, 4)`.
  """
  (x,) = _inexact_arrays("frexp", x)
  if dtypes.is_complex(x.dtype):
    raise TypeError("jnp.frexp does not support complex inputs.")
  e = _exponent(x)
  half = ufuncs.floor_divide(ufuncs.negative(e), 2)  # -e in two steps: 2**-e may overflow
  return _scale(x, [half, ufuncs.subtract(ufuncs.negative(e), half)]), e


def ldexp(x1: Any, x2: Any, /) -> Any:
  """`x1 * 2**x2` for integer `x2`, exact (rounded once where the result is subnormal,
  infinite where it overflows), and differentiable in `x1`.

  Example: `jnp.ldexp(0.5, 4)` is 8.
  """
  util.check_arraylike("ldexp", x1, x2)
  if not dtypes.is_integer(dtypes.dtype(x2)):
    raise TypeError(f"jnp.ldexp: x2 must be an integer, got dtype {dtypes.dtype(x2)}.")
  (x1,) = _inexact_arrays("ldexp", x1)
  if dtypes.is_complex(x1.dtype):
    raise TypeError("jnp.ldexp does not support complex inputs.")
  info = dtypes.finfo(x1.dtype)
  limit = 2 * info.maxexp + info.nmant + 4  # beyond it every result is 0 or inf
  x2 = lax.convert_element_type(ufuncs.clip(x2, -limit, limit), np.int32)
  x1, x2 = jnp_shape.broadcast_arrays(x1, x2)
  mantissa, e = frexp(x1)
  total = ufuncs.add(e, x2)
  # 2**a keeps mantissa * 2**a normal; the last factor, 2**b, rounds once (or overflows).
  a = ufuncs.clip(total, info.minexp + 1, info.maxexp - 1)
  b = ufuncs.clip(ufuncs.subtract(total, a), -(info.nmant + 3), 2)
  return _scale(mantissa, [a, b])


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
  """The fractional and integral parts of `x`, both with `x`'s sign (the fraction of an
  infinity is ±0). `out` is NumPy's, for signature compatibility: jaxon arrays are
  immutable, so only None is accepted.

  Example: `jnp.modf(-2.5)` is `(-0.5, -2.0)`.
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.modf is not supported: jaxon "
                              "arrays are immutable; use the returned arrays instead.")
  (x,) = _inexact_arrays("modf", x)
  whole = ufuncs.trunc(x)
  fraction = ufuncs.where(ufuncs.isinf(x), 0, ufuncs.subtract(x, whole))
  return ufuncs.copysign(fraction, x), whole


# ----------------------------------------------------------------------------- integers

def _euclid_steps(dtype: np.dtype) -> int:
  """An upper bound on the steps of Euclid's algorithm for `dtype` (consecutive Fibonacci
  numbers are the worst case, and they grow by the golden ratio)."""
  return math.ceil(dtype.itemsize * 8 / math.log2((1 + math.sqrt(5)) / 2)) + 2


def _promote_integers(name: str, x1: Any, x2: Any) -> list[Any]:
  x1, x2 = util.promote_args(name, x1, x2)
  dtype = dtypes.dtype(x1, canonicalize=True)
  if not dtypes.is_integer(dtype):
    raise ValueError(f"jnp.{name} requires integer arguments, got dtype {dtype}: use "
                     f"integer arrays (convert with .astype(int)).")
  return [x1, x2]


def gcd(x1: Any, x2: Any) -> Any:
  """The elementwise greatest common divisor of integers (non-negative; gcd(0, 0) = 0),
  by Euclid's algorithm run for its worst-case number of steps.

  Example: `jnp.gcd(12, 18)` is 6.
  """
  x1, x2 = _promote_integers("gcd", x1, x2)
  a, b = jnp_shape.broadcast_arrays(ufuncs.abs(x1), ufuncs.abs(x2))
  for _ in range(_euclid_steps(dtypes.dtype(a))):
    done = ufuncs.equal(b, 0)
    a, b = (ufuncs.where(done, a, b),
            ufuncs.where(done, 0, lax.rem(a, ufuncs.where(done, lax.full_like(b, 1), b))))
  return a


def lcm(x1: Any, x2: Any) -> Any:
  """The elementwise least common multiple of integers (non-negative unless it overflows,
  as in NumPy; 0 if either is 0).

  Example: `jnp.lcm(4, 6)` is 12.
  """
  x1, x2 = _promote_integers("lcm", x1, x2)
  divisor = gcd(x1, x2)
  zero = ufuncs.equal(divisor, 0)
  quotient = ufuncs.floor_divide(ufuncs.abs(x1), ufuncs.where(zero, 1, divisor))
  return ufuncs.where(zero, 0, ufuncs.multiply(quotient, ufuncs.abs(x2)))
