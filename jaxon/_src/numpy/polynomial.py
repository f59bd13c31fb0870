"""Polynomials of jaxon.numpy that need linear algebra or division: `polyfit` (least
squares on a Vandermonde matrix), `roots` (eigenvalues of the companion matrix), `poly`
(coefficients from roots) and `polydiv` (long division).

Coefficients run from the highest power down, as in NumPy's `poly*` functions. The
arithmetic ones (`polyval`, `polyadd`, `polysub`, `polymul`, `polyder`, `polyint`) live in
misc.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import lax
from jaxon._src.numpy import (creation, lax_numpy, linalg, reductions, searching, sorting, ufuncs,
                              util)
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy.padding import pad
from jaxon._src.numpy.misc import _concrete_int, _inexact_arrays, _vector, vander


def _coefficients(fun_name: str, p: Any) -> Any:
  """`p` as a 1-D inexact coefficient vector (a scalar is a constant polynomial)."""
  (p,) = _inexact_arrays(fun_name, jnp_shape.atleast_1d(p))
  if p.ndim != 1:
    raise ValueError(f"jnp.{fun_name}: the coefficients must be one-dimensional, got shape "
                     f"{p.shape}.")
  return p


# ----------------------------------------------------------------------------- roots

def roots(p: Any, *, strip_zeros: bool = True) -> Any:
  """The roots of the polynomial with coefficients `p` (highest power first), as the
  eigenvalues of its companion matrix; always complex.

  With `strip_zeros` (the default) leading zeros of `p` are dropped and trailing ones give
  exact zero roots, as in NumPy; this needs a concrete `p`, because the number of roots
  depends on it. Under `jit` pass `strip_zeros=False`: the result then always has
  `len(p) - 1` entries, and each leading zero of `p` turns one of them (at the end) into NaN.

  Example: `jnp.roots(jnp.array([1., -3., 2.]))` is `[2.+0.j, 1.+0.j]`.
  """
  p = _coefficients("roots", p)
  complex_dtype = dtypes.promote_types(p.dtype, np.complex64)
  if strip_zeros:
    host = core.concrete_or_error(
        np.asarray, p, "jnp.roots(strip_zeros=True) needs a concrete p: the number of roots "
        "depends on its leading zeros. Under jit pass strip_zeros=False (leading zeros then "
        "give NaN roots).")
    nonzero = np.flatnonzero(host)
    if nonzero.size == 0:
      return lax.full((0,), 0, complex_dtype)
    first, last = int(nonzero[0]), int(nonzero[-1])
    zeros = lax.full((p.shape[0] - 1 - last,), 0, complex_dtype)
    return jnp_shape.concatenate([_companion_roots(p[first:last + 1], complex_dtype), zeros])
  n = p.shape[0]
  if n < 2:
    return lax.full((0,), 0, complex_dtype)
  leading = ufuncs.where(reductions.all(p == 0), n, reductions.argmin(p == 0))
  # Shift the leading zeros to the end: the polynomial becomes p(x) x^k, and the k extra
  # roots come from a decoupled zero block of the companion matrix.
  shifted = searching.take(p, ufuncs.remainder(creation.arange(n) + leading, n))
  shifted = ufuncs.where(leading == n, lax.full_like(p, 1), shifted)
  degree = n - 1 - leading
  found = _companion_roots(shifted, complex_dtype, degree)
  padding = creation.arange(n - 1) >= degree
  found = ufuncs.where(padding, 0, found)
  # Stable sort: the exact zeros (the padding among them) move to the end, in order.
  order = searching.take(creation.arange(n - 1), sorting.argsort(found == 0, stable=True))
  return ufuncs.where(padding, complex(np.nan, np.nan), searching.take(found, order))


def _companion_roots(p: Any, complex_dtype: np.dtype, degree: Any = None) -> Any:
  """Eigenvalues of the companion matrix of `p` (p[0] != 0). With a (traced) `degree`
  below len(p) - 1, only its top-left `degree` block is the companion matrix; the rest is
  a zero block, decoupled, whose eigenvalues are exact zeros."""
  n = p.shape[0] - 1
  if n < 1:
    return lax.full((0,), 0, complex_dtype)
  first_row = ufuncs.negative(ufuncs.divide(p[1:], p[0]))
  rows = creation.arange(n)[:, None]
  cols = creation.arange(n)[None, :]
  companion = ufuncs.where(rows == 0, first_row[None, :], (rows == cols + 1).astype(p.dtype))
  if degree is not None:
    companion = ufuncs.where((rows < degree) & (cols < degree), companion, 0)
  return linalg.eigvals(companion).astype(complex_dtype)


# ----------------------------------------------------------------------------- poly, polydiv

def poly(seq_of_zeros: Any) -> Any:
  """The coefficients (highest power first, leading 1) of the monic polynomial whose roots
  are `seq_of_zeros`; for a square matrix, the roots are its eigenvalues (so the result is
  complex, where NumPy returns real coefficients when they are conjugate pairs).

  Example: `jnp.poly(jnp.array([1., 2.]))` is `[1., -3., 2.]`.
  """
  util.check_arraylike("jnp.poly", seq_of_zeros)
  (zeros,) = _inexact_arrays("poly", jnp_shape.atleast_1d(seq_of_zeros))
  if zeros.ndim == 2 and zeros.shape[0] == zeros.shape[1] and zeros.shape[0]:
    zeros = linalg.eigvals(zeros)
  if zeros.ndim != 1:
    raise ValueError(f"jnp.poly: input must be 1d or non-empty square 2d array, got shape "
                     f"{zeros.shape}.")
  a = lax.full((1,), 1, zeros.dtype)
  if zeros.shape[0] == 0:
    return lax.full((), 1, zeros.dtype)
  zero = lax.full((1,), 0, zeros.dtype)
  for k in range(zeros.shape[0]):  # multiply by (x - z_k)
    a = ufuncs.subtract(jnp_shape.concatenate([a, zero]),
                        ufuncs.multiply(zeros[k], jnp_shape.concatenate([zero, a])))
  return a


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
  """The quotient and remainder of dividing polynomial `u` by `v`, by long division.

  The remainder keeps `u`'s length (leading zeros included), so the shapes are static;
  `trim_leading_zeros` (which needs concrete inputs) drops its leading entries smaller than
  sqrt(eps), keeping at least one, as NumPy does.

  Example: `jnp.polydiv(jnp.array([1., -3., 2.]), jnp.array([1., -1.]))` is
  `([1., -2.], [0., 0., 0.])`.
  """
  u = _vector("polydiv", "u", jnp_shape.atleast_1d(u))
  v = _vector("polydiv", "v", jnp_shape.atleast_1d(v))
  u, v = _inexact_arrays("polydiv", u, v)
  m, n = u.shape[0] - 1, v.shape[0] - 1
  scale = ufuncs.divide(1, v[0])
  quotient = []
  for k in range(m - n + 1):
    d = ufuncs.multiply(scale, u[k])
    quotient.append(d)
    u = ufuncs.subtract(u, pad(ufuncs.multiply(d, v), (k, m - n - k)))
  q = jnp_shape.stack(quotient) if quotient else lax.full((1,), 0, u.dtype)
  if trim_leading_zeros:
    u = _trim_small_leading(u)
  return q, u


def _trim_small_leading(r: Any) -> Any:
  host = core.concrete_or_error(
      np.asarray, r, "jnp.polydiv(trim_leading_zeros=True) needs concrete inputs: the "
      "remainder's length depends on its values.")
  tol = np.sqrt(np.finfo(dtypes.to_inexact_dtype(r.dtype)).eps)
  large = np.flatnonzero(np.abs(host) > tol)
  start = min(int(large[0]) if large.size else r.shape[0], r.shape[0] - 1)
  return r[start:]


# ----------------------------------------------------------------------------- polyfit

def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
            w: Any = None, cov: bool | str = False) -> Any:
  """Least-squares fit of a polynomial of degree `deg` to the points (x, y).

  Args:
    x: the sample points, shape (M,).
    y: the values, shape (M,), or (M, K) for K fits sharing `x`.
    deg: the degree (static).
    rcond: relative cutoff for small singular values; default len(x) * eps.
    full: also return the residuals (squared, summed), the rank and singular values of the
      scaled Vandermonde matrix, and `rcond`.
    w: weights applied to the unsquared residuals (1/sigma for Gaussian errors).
    cov: also return the covariance of the coefficients, scaled by the residuals over
      M - deg - 1 degrees of freedom, or unscaled with `cov='unscaled'`.

  Returns:
    the coefficients, highest power first (shape (deg + 1,) or (deg + 1, K)); with `full`
    the tuple `(coefficients, residuals, rank, singular_values, rcond)`; with `cov` the
    pair `(coefficients, covariance)`.

  Example: `jnp.polyfit(jnp.array([0., 1., 2.]), jnp.array([1., 3., 5.]), 1)` is `[2., 1.]`.
  """
  x, y = _inexact_arrays("polyfit", x, y)
  deg = _concrete_int("polyfit", "deg", deg)
  order = deg + 1
  if deg < 0:
    raise ValueError(f"jnp.polyfit: expected deg >= 0, got {deg}.")
  if x.ndim != 1 or x.shape[0] == 0:
    raise (TypeError if x.ndim != 1 else ValueError)(
        f"jnp.polyfit: expected a non-empty 1-D x, got shape {x.shape}.")
  if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
    raise TypeError(f"jnp.polyfit: expected a 1-D or 2-D y with x's length {x.shape[0]}, "
                    f"got shape {y.shape}.")
  rcond = x.shape[0] * float(np.finfo(x.dtype).eps) if rcond is None else rcond
  lhs, rhs = vander(x, order), y
  if w is not None:
    (w,) = _inexact_arrays("polyfit", w)
    if w.shape != x.shape:
      raise TypeError(f"jnp.polyfit: expected w of x's shape {x.shape}, got {w.shape}.")
    w = w.astype(x.dtype)
    lhs = ufuncs.multiply(lhs, w[:, None])
    rhs = ufuncs.multiply(rhs, w if rhs.ndim == 1 else w[:, None])
  # Scaling the columns to unit norm improves the conditioning of the least squares.
  scale = ufuncs.sqrt(reductions.sum(ufuncs.multiply(lhs, lhs), axis=0))
  lhs = ufuncs.divide(lhs, scale)
  c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
  c = ufuncs.divide(c, scale if c.ndim == 1 else scale[:, None])
  if full:
    return c, resids, rank, s, lax_numpy.asarray(rcond, x.dtype)
  if not cov:
    return c
  covariance = linalg.inv(_gram(lhs))
  covariance = ufuncs.divide(covariance, ufuncs.multiply(scale[:, None], scale[None, :]))
  if cov == "unscaled":
    factor = lax_numpy.asarray(1, x.dtype)
  else:
    if x.shape[0] <= order:
      raise ValueError("jnp.polyfit: the number of data points must exceed order to scale "
                       "the covariance matrix; pass cov='unscaled' otherwise.")
    factor = ufuncs.divide(resids, x.shape[0] - order)
  if y.ndim == 1:
    return c, ufuncs.multiply(covariance, factor)
  return c, ufuncs.multiply(covariance[:, :, None], factor)


def _gram(a: Any) -> Any:
  """aᴴ a."""
  return ufuncs.conj(a).T @ a
