"""jaxon.scipy.stats.gaussian_kde: kernel density estimation with a Gaussian kernel.

The estimator is a frozen dataclass registered as a pytree (its five arrays are the leaves),
so it can be passed through `jit`, `vmap` and `grad`. Densities are evaluated in whitened
coordinates: with L the Cholesky factor of the kernel's precision matrix, the kernel
exponent (x - x_i)^T P (x - x_i) is the squared distance between L^T x and L^T x_i.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jaxon.numpy as jnp
import jaxon.random as jrandom
from jaxon._src import dtypes
from jaxon._src.api import vmap
from jaxon._src.jit import jit
from jaxon._src.numpy.util import check_arraylike, promote_args_inexact
from jaxon._src.scipy import linalg, special
from jaxon._src.tree_util import register_pytree_node_class

BandwidthMethod = None | str | Any | Callable[[Any], Any]


def _reject_complex(what: str, x: Any) -> None:
  if dtypes.issubdtype(dtypes.dtype(x), np.complexfloating):
    raise NotImplementedError(f"gaussian_kde does not support complex {what}")


@register_pytree_node_class
@dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:  # noqa: N801 (SciPy's name)
  """Gaussian kernel density estimate of the columns of a (d, n) `dataset`.

  Args:
    dataset: the n points, shape (d, n) (a 1-D array is n points in one dimension).
    bw_method: the bandwidth factor: 'scott' (default, neff^(-1/(d+4))), 'silverman', a
      scalar, or a callable taking the estimator.
    weights: optional non-negative weights of the points (normalised to sum to 1).

  JAX implementation of `scipy.stats.gaussian_kde`."""
  neff: Any
  dataset: Any
  weights: Any
  covariance: Any
  inv_cov: Any

  def __init__(self, dataset: Any, bw_method: BandwidthMethod = None, weights: Any = None):
    check_arraylike("gaussian_kde", dataset)
    _reject_complex("data", dataset)
    dataset = jnp.atleast_2d(dataset)
    if not dataset.size > 1:
      raise ValueError(f"gaussian_kde: `dataset` input should have multiple elements; got "
                       f"shape {dataset.shape}")
    d, n = dataset.shape
    if weights is None:
      dataset, = promote_args_inexact("gaussian_kde", dataset)
      weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
    else:
      check_arraylike("gaussian_kde", weights)
      dataset, weights = promote_args_inexact("gaussian_kde", dataset, weights)
      weights = jnp.atleast_1d(weights)
      if weights.ndim != 1:
        raise ValueError(f"gaussian_kde: `weights` input should be one-dimensional; got "
                         f"shape {weights.shape}")
      if weights.shape[0] != n:
        raise ValueError(f"gaussian_kde: `weights` input should be of length n={n}; got "
                         f"{weights.shape[0]}")
      weights = weights / jnp.sum(weights)
    self._set("dataset", dataset)
    self._set("weights", weights)
    neff = self._set("neff", 1 / jnp.sum(weights ** 2))
    factor = self._bandwidth_factor(bw_method, neff, d)
    covariance, inv_cov = _kernel_covariance(dataset, weights, factor)
    self._set("covariance", covariance)
    self._set("inv_cov", inv_cov)

  def _bandwidth_factor(self, bw_method: BandwidthMethod, neff: Any, d: int) -> Any:
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
      return jnp.power(neff, -1.0 / (d + 4))
    if isinstance(bw_method, str) and bw_method == "silverman":
      return jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
    if not isinstance(bw_method, str) and jnp.isscalar(bw_method):
      return bw_method
    if callable(bw_method):
      return bw_method(self)
    raise ValueError("gaussian_kde: `bw_method` should be 'scott', 'silverman', a scalar, or "
                     f"a callable; got {bw_method!r}")

  def _set(self, name: str, value: Any) -> Any:
    """Sets a field of the frozen instance (only while building it)."""
    object.__setattr__(self, name, value)
    return value

  def tree_flatten(self) -> tuple[tuple[Any, ...], None]:
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux_data: None, children: Any) -> gaussian_kde:
    del aux_data
    kde = cls.__new__(cls)
    for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"), children):
      kde._set(name, value)
    return kde

  @property
  def d(self) -> int:
    """The number of dimensions."""
    return self.dataset.shape[0]

  @property
  def n(self) -> int:
    """The number of data points."""
    return self.dataset.shape[1]

  def _reshape_points(self, points: Any) -> Any:
    """Points as a (d, m) array; a length-d vector is one point."""
    _reject_complex("coordinates", points)
    points = jnp.atleast_2d(points)
    d, m = points.shape
    if d != self.d:
      if d == 1 and m == self.d:
        return jnp.reshape(points, (self.d, 1))
      raise ValueError(f"gaussian_kde: points have dimension {d}, dataset has dimension "
                       f"{self.d}")
    return points

  def _log_kernel_terms(self, points: Any) -> Any:
    """log(w_i K(x_j - x_i)), shape (m, n), for the (d, m) `points`."""
    points, dataset, weights, precision = promote_args_inexact(
        "gaussian_kde", points, self.dataset, self.weights, self.inv_cov)
    whitening = jnp.linalg.cholesky(precision)
    data_white = dataset.T @ whitening
    points_white = points.T @ whitening
    squared = jnp.sum(jnp.square(points_white[:, None, :] - data_white[None, :, :]), axis=-1)
    log_norm = jnp.sum(jnp.log(jnp.diag(whitening))) - 0.5 * self.d * math.log(2 * math.pi)
    return jnp.log(weights)[None, :] + log_norm - 0.5 * squared

  def evaluate(self, points: Any) -> Any:
    """The estimated density at `points` ((d, m), or a length-d vector for one point)."""
    check_arraylike("evaluate", points)
    return jnp.sum(jnp.exp(self._log_kernel_terms(self._reshape_points(points))), axis=1)

  def __call__(self, points: Any) -> Any:
    return self.evaluate(points)

  def pdf(self, x: Any) -> Any:
    """The estimated density (same as `evaluate`)."""
    return self.evaluate(x)

  def logpdf(self, x: Any) -> Any:
    """The log of the estimated density, by logsumexp (finite far from the data)."""
    check_arraylike("logpdf", x)
    return special.logsumexp(self._log_kernel_terms(self._reshape_points(x)), axis=1)

  def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
    """The integral of the estimate times the normal density N(mean, cov)."""
    mean = jnp.atleast_1d(jnp.squeeze(mean))
    cov = jnp.atleast_2d(cov)
    if mean.shape != (self.d,):
      raise ValueError(f"integrate_gaussian: mean does not have dimension {self.d}; got shape "
                       f"{mean.shape}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"integrate_gaussian: covariance does not have dimension {self.d}; got "
                       f"shape {cov.shape}")
    return _gaussian_overlap(self.covariance + cov, self.dataset, self.weights, mean)

  def integrate_box_1d(self, low: Any, high: Any) -> Any:
    """The estimate's mass between the scalars `low` and `high` (one-dimensional data only)."""
    if self.d != 1:
      raise ValueError("integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("the limits of integration in integrate_box_1d must be scalars")
    sigma = jnp.sqrt(self.covariance[0, 0])
    data = self.dataset[0]
    return jnp.sum(self.weights * (special.ndtr((high - data) / sigma)
                                   - special.ndtr((low - data) / sigma)))

  def integrate_kde(self, other: gaussian_kde) -> Any:
    """The integral of the product of this estimate and `other`."""
    if other.d != self.d:
      raise ValueError("KDEs are not the same dimensionality")
    covariance = self.covariance + other.covariance
    small, large = (self, other) if self.n < other.n else (other, self)
    overlaps = vmap(_gaussian_overlap, in_axes=(None, None, None, 1))(
        covariance, large.dataset, large.weights, small.dataset)
    return jnp.sum(overlaps * small.weights)

  def resample(self, key: Any, shape: tuple[int, ...] = ()) -> Any:
    """Draws from the estimate: a data point chosen by weight plus kernel noise; the result
    has shape (d,) + shape."""
    return _resample(self, key, shape=(shape,) if isinstance(shape, int) else tuple(shape))

  def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
    """Not supported (as in JAX): use `integrate_box_1d`."""
    del low_bounds, high_bounds, maxpts
    raise NotImplementedError("only 1D box integrations are supported; use "
                              "`integrate_box_1d`")

  def set_bandwidth(self, bw_method: BandwidthMethod = None) -> None:
    """Not supported (as in JAX): the estimator is immutable; build a new one."""
    del bw_method
    raise NotImplementedError("dynamically changing the bandwidth method is not supported")


@jit
def _kernel_covariance(dataset: Any, weights: Any, factor: Any) -> tuple[Any, Any]:
  """The kernel's covariance and precision: the weighted data covariance scaled by the
  bandwidth factor squared (jitted: eager construction would compile op by op)."""
  data_covariance = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
  return data_covariance * factor ** 2, jnp.linalg.inv(data_covariance) / factor ** 2


@partial(jit, static_argnames="shape")
def _resample(kde: gaussian_kde, key: Any, shape: tuple[int, ...]) -> Any:
  index_key, noise_key = jrandom.split(key)
  index = jrandom.choice(index_key, kde.n, shape=shape, p=kde.weights)
  noise = jrandom.multivariate_normal(noise_key, jnp.zeros(kde.d, kde.covariance.dtype),
                                      kde.covariance, shape=shape, dtype=kde.dataset.dtype)
  return kde.dataset[:, index] + jnp.moveaxis(noise, -1, 0)


def _gaussian_overlap(covariance: Any, points: Any, weights: Any, mean: Any) -> Any:
  """sum_i w_i N(points_i; mean, covariance), by a Cholesky solve."""
  factor = linalg.cho_factor(covariance)
  centered = points - mean[:, None]
  mahalanobis = jnp.sum(centered * linalg.cho_solve(factor, centered), axis=0)
  norm = math.sqrt(2 * math.pi) ** covariance.shape[0] * jnp.prod(jnp.diag(factor[0]))
  return jnp.sum(jnp.exp(-0.5 * mahalanobis) * weights) / norm
