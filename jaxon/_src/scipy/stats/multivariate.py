"""Multivariate distributions: dirichlet, multinomial and multivariate_normal. Public modules
`jaxon.scipy.stats.<name>` re-export the `<name>_*` functions under SciPy's names.

Shapes follow JAX's: a Dirichlet's components run along the FIRST axis of `x` (SciPy's
convention), while multinomial and multivariate-normal vectors run along the LAST axis with
any leading batch dimensions.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.lax import linalg as lax_linalg
from jaxon._src.numpy.ufuncs import _promote_args_numeric
from jaxon._src.numpy.util import promote_args_inexact
from jaxon._src.scipy import special
from jaxon._src.scipy.stats._util import LOG_2PI, outside_support, promote

# ----------------------------------------------------------------------------- dirichlet

_SIMPLEX_TOLERANCE = 1e-6  # how far from 1 the components' sum may be (JAX's value)


def dirichlet_logpdf(x: Any, alpha: Any) -> Any:
  """Dirichlet log-density, sum((alpha - 1) log x) - log B(alpha), -inf off the simplex.

  `alpha` is one-dimensional with K entries; `x` has K (or K - 1, the last implied as
  1 - sum) entries along its first axis. JAX implementation of `scipy.stats.dirichlet.logpdf`.
  """
  x, alpha = promote_args_inexact("dirichlet.logpdf", x, alpha)
  if alpha.ndim != 1:
    raise ValueError(f"dirichlet.logpdf: `alpha` must be one-dimensional; got alpha.shape="
                     f"{alpha.shape}")
  if x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("dirichlet.logpdf: `x` must have either the same number of entries as "
                     f"`alpha` or one entry fewer along its first axis; got x.shape={x.shape},"
                     f" alpha.shape={alpha.shape}")
  if x.shape[0] != alpha.shape[0]:
    x = jnp.concatenate([x, 1 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
  log_beta = jnp.sum(special.gammaln(alpha)) - special.gammaln(jnp.sum(alpha))
  alpha = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
  log_probs = jnp.sum(special.xlogy(alpha - 1, x), axis=0) - log_beta
  on_simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < _SIMPLEX_TOLERANCE)
  return outside_support(log_probs, ~on_simplex)


def dirichlet_pdf(x: Any, alpha: Any) -> Any:
  """Dirichlet density. JAX implementation of `scipy.stats.dirichlet.pdf`."""
  return jnp.exp(dirichlet_logpdf(x, alpha))

# ----------------------------------------------------------------------------- multinomial


def multinomial_logpmf(x: Any, n: Any, p: Any) -> Any:
  """Multinomial log-mass, log n! + sum(x log p - log x!), -inf where sum(x) != n.

  `x` and `n` must be integers. JAX implementation of `scipy.stats.multinomial.logpmf`."""
  p, = promote("multinomial.logpmf", p)
  x, n = _promote_args_numeric("multinomial.logpmf", x, n)
  if not dtypes.issubdtype(x.dtype, np.integer):
    raise ValueError("multinomial.logpmf: x and n must be of integer type; got "
                     f"x.dtype={x.dtype}, n.dtype={n.dtype}")
  x, n = x.astype(p.dtype), n.astype(p.dtype)
  log_probs = special.gammaln(n + 1) + jnp.sum(special.xlogy(x, p) - special.gammaln(x + 1),
                                               axis=-1)
  return outside_support(log_probs, jnp.sum(x, axis=-1) != n)


def multinomial_pmf(x: Any, n: Any, p: Any) -> Any:
  """Multinomial mass. JAX implementation of `scipy.stats.multinomial.pmf`."""
  return jnp.exp(multinomial_logpmf(x, n, p))

# ----------------------------------------------------------------------------- normal


def _whiten(cholesky_factor: Any, centered: Any) -> Any:
  """L^-1 (x - mean), so that its squared norm is the Mahalanobis distance; the batch
  dimensions of the factor and the vectors broadcast. Vectorized as JAX's is: the vectors
  that share a factor are the rows of one solve (x L^T = x - mean), where broadcasting the
  factor to every vector made one small solve each (256 points: 3.2x JAX's time)."""
  solve = functools.partial(lax_linalg.triangular_solve, lower=True, transpose_a=True)
  return jnp.vectorize(solve, signature="(n,n),(n)->(n)")(cholesky_factor, centered)


def multivariate_normal_logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None
                               ) -> Any:
  """Multivariate normal log-density along the last axis of `x` and `mean`.

  `cov` may be a scalar (an isotropic covariance) or (batches of) d x d positive-definite
  matrices, factored by Cholesky; a 0-d `mean` gives the univariate density.
  JAX implementation of `scipy.stats.multivariate_normal.logpdf`."""
  if allow_singular is not None:
    raise NotImplementedError("multivariate_normal.logpdf: the allow_singular argument is "
                              "not supported; pass a positive-definite `cov`.")
  x, mean, cov = promote_args_inexact("multivariate_normal.logpdf", x, mean, cov)
  if not mean.shape:
    return -0.5 * jnp.square(x - mean) / cov - 0.5 * (LOG_2PI + jnp.log(cov))
  d = mean.shape[-1]
  centered = x - mean
  if not cov.shape:
    squared = jnp.einsum("...i,...i->...", centered, centered)
    return -0.5 * squared / cov - d / 2 * (LOG_2PI + jnp.log(cov))
  if cov.ndim < 2 or cov.shape[-2:] != (d, d):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes: `cov` must be a "
                     f"scalar or end in ({d}, {d}) to match mean.shape={mean.shape}; got "
                     f"cov.shape={cov.shape}")
  factor = lax_linalg.cholesky(cov)
  whitened = _whiten(factor, centered)
  log_det_half = jnp.sum(jnp.log(jnp.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
  return (-0.5 * jnp.einsum("...i,...i->...", whitened, whitened) - d / 2 * LOG_2PI
          - log_det_half)


def multivariate_normal_pdf(x: Any, mean: Any, cov: Any) -> Any:
  """Multivariate normal density. JAX implementation of
  `scipy.stats.multivariate_normal.pdf`."""
  return jnp.exp(multivariate_normal_logpdf(x, mean, cov))

