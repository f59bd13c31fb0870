"""Bessel functions of integer order (`bessel_jn`) and spherical harmonics (`sph_harm_y`)
of `jaxon.scipy.special`, both built from recurrences run in `scan`.

`bessel_jn` is Miller's backward recurrence (Zhang and Jin, "Computation of Special
Functions", 1996, routine BJNDD), as JAX 0.10.2 computes it: J_{k-1} = (2k/z) J_k - J_{k+1}
from an arbitrary small start at k = n_iter, normalized by 1 = J_0 + 2 (J_2 + J_4 + ...).
`sph_harm_y` evaluates the fully normalized associated Legendre functions P_l^m by the
standard recurrences: the diagonal P_m^m in closed form, then upward in l. Both are
compositions of differentiable ops, so their derivatives come from the recurrences.
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, dtypes
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.scipy.special_error import _real_only


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
  """The Bessel functions of the first kind J_0(z) ... J_v(z) of real z, stacked on a
  new leading axis (shape (v + 1, *z.shape)). `n_iter` is where the backward recurrence
  starts; it must exceed v and |z| by a margin for the result to be accurate (the smallest
  n with 0.5 log10(6.28 + n) - n log10(1.36 + |z|/n) > 20 is enough).

  JAX implementation of `scipy.special.jv` at integer orders."""
  (z,) = _real_only("bessel_jn", z)
  v = core.concrete_or_error(operator.index, v, "The argument v of bessel_jn")
  n_iter = core.concrete_or_error(int, n_iter, "The argument n_iter of bessel_jn")

  def step(carry: tuple, k: Any) -> tuple:
    f_above, f, even_sum = carry
    f_below = 2 * (k + 1) * f / z - f_above
    even_sum = jnp.where(k % 2 == 0, even_sum + 2 * f_below, even_sum)
    return (f, f_below, even_sum), f_below

  zeros = jnp.zeros_like(z)
  init = (zeros, jnp.full_like(z, 1e-16), zeros)
  (_, _, even_sum), f = scan(step, init, jnp.arange(n_iter + 1, dtype=z.dtype), reverse=True)
  return f[:v + 1] / (even_sum - f[0])


# ----------------------------------------------------------------------------- sph_harm_y

def _legendre_coefficients(l_max: int) -> tuple[np.ndarray, np.ndarray]:
  """d0[l, m], d1[l, m] of the upward recurrence P_l^m = d0 x P_{l-1}^m - d1 P_{l-2}^m of
  the normalized functions, zero where m >= l - 1 (those come from the diagonal)."""
  l, m = np.meshgrid(np.arange(l_max + 1.), np.arange(l_max + 1.), indexing="ij")
  with np.errstate(invalid="ignore", divide="ignore"):  # the entries masked out below
    d0 = np.sqrt((4 * l * l - 1) / (l * l - m * m))
    d1 = np.sqrt((2 * l + 1) * ((l - 1) ** 2 - m * m) / ((2 * l - 3) * (l * l - m * m)))
  valid = m < l - 1
  return np.where(valid, d0, 0), np.where(valid, d1, 0)


def _normalized_legendre(l_max: int, x: Any) -> Any:
  """P_l^m(x) for 0 <= l, m <= l_max, shape (l_max + 1, l_max + 1, len(x)), normalized so
  that P_l^m(cos theta) e^(i m phi) is orthonormal on the sphere (Condon-Shortley phase)."""
  dtype = dtypes.dtype(x)
  m = np.arange(1, l_max + 1)
  diag_factor = np.cumprod(-np.sqrt(1 + 0.5 / m)).astype(dtype)
  sin_powers = jnp.cumprod(jnp.broadcast_to(jnp.sqrt(1 - x * x), (l_max, x.shape[0])), axis=0)
  first = np.array(0.5 / math.sqrt(math.pi), dtype)
  diag = jnp.concatenate([jnp.full((1, x.shape[0]), first),
                          first * diag_factor[:, None] * sin_powers])
  below_diag = np.sqrt(2 * np.arange(l_max + 1) + 3).astype(dtype)[:, None] * x * diag
  d0, d1 = (c.astype(dtype)[..., None] for c in _legendre_coefficients(l_max))
  orders = np.arange(l_max + 1)[:, None]

  def step(carry: tuple, inputs: tuple) -> tuple:
    p1, p2 = carry
    l, c0, c1 = inputs
    p = jnp.where(orders == l, diag,
                  jnp.where(orders == l - 1, below_diag,
                            jnp.where(orders < l - 1, c0 * x * p1 - c1 * p2, 0)))
    return (p, p1), p

  zeros = jnp.zeros((l_max + 1, x.shape[0]), dtype)
  return scan(step, (zeros, zeros), (jnp.arange(l_max + 1), d0, d1))[1]


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None,
               n_max: int | None = None) -> Any:
  """The spherical harmonics Y_n^m(theta, phi) = N P_n^|m|(cos theta) e^(i m phi), theta
  the polar and phi the azimuthal angle, orthonormal on the sphere. `n` is 1-D; `n_max`
  (static) bounds it, and degrees above it are clipped to it; without it, `n` must be
  concrete.

  JAX implementation of `scipy.special.sph_harm_y` (no `diff_n`)."""
  if diff_n is not None:
    raise NotImplementedError("sph_harm_y's diff_n argument is not supported.")
  theta, phi = _real_only("sph_harm_y", theta, phi)
  theta = jnp.atleast_1d(theta)
  if n_max is None:
    n_max = np.max(n)
  n_max = core.concrete_or_error(
      int, n_max, "sph_harm_y needs a static n_max to be used inside transformations")
  n, m = jnp.asarray(n), jnp.asarray(m)
  legendre = _normalized_legendre(n_max, jnp.cos(theta))
  value = legendre.at[n, jnp.abs(m), jnp.arange(n.shape[0])].get(mode="clip")
  angle = jnp.abs(m) * phi
  y = lax.complex(value * jnp.cos(angle), value * jnp.sin(angle))
  return jnp.where(m < 0, (-1.0) ** jnp.abs(m) * jnp.conjugate(y), y)
