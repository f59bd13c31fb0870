"""jaxon.nn.initializers: functions `init(key, shape, dtype)` that make parameter arrays.

Each public constructor (`normal(stddev)`, `glorot_uniform()`, …) returns an initializer;
`zeros` and `ones` are initializers themselves. They draw from `jaxon.random`, so for a
given key they give JAX's arrays.

The variance-scaling family sizes the spread by the layer's fan-in and fan-out: for a
kernel of shape (…, in, out) those are in and out times the receptive field (the product
of the remaining dimensions), which is right for dense layers (2-D) and for convolution
kernels in the HWIO layout.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src import random, random_continuous
from jaxon._src.numpy import creation, lax_numpy, linalg, ufuncs
from jaxon._src.numpy import shape as jnp_shape

Array = Any
KeyArray = Any
Initializer = Callable[..., Array]
Axes = int | Sequence[int]

# The standard deviation of a standard normal truncated to (-2, 2), and of the modulus of a
# standard complex normal truncated to modulus 2.
_TRUNCATED_NORMAL_STDDEV = .87962566103423978
_COMPLEX_TRUNCATED_NORMAL_STDDEV = .95311164380491208


def _shape(shape: Any) -> tuple[int, ...]:
  return random._shape("initializer", shape)


def zeros(key: KeyArray, shape: Sequence[int], dtype: Any = float,
          out_sharding: Any = None) -> Array:
  """An initializer of zeros (the key is unused), laid out as `out_sharding` if given (see
  `jnp.zeros`).

  Example:
    >>> zeros(PRNGKey(0), (2, 3)).shape
    (2, 3)
  """
  return lax_numpy.zeros(_shape(shape), dtypes.canonicalize_dtype(dtype),
                         out_sharding=out_sharding)


def ones(key: KeyArray, shape: Sequence[int], dtype: Any = float,
         out_sharding: Any = None) -> Array:
  """An initializer of ones (the key is unused), laid out as `out_sharding` if given."""
  return lax_numpy.ones(_shape(shape), dtypes.canonicalize_dtype(dtype),
                        out_sharding=out_sharding)


def constant(value: Any, dtype: Any = float) -> Initializer:
  """An initializer filling arrays with `value`.

  Example:
    >>> constant(-7.)(PRNGKey(0), (2,))
    Array([-7., -7.], dtype=float32)
  """
  def init(key: KeyArray, shape: Sequence[int], dtype: Any = dtype) -> Array:
    return lax_numpy.full(_shape(shape), value, dtype=dtypes.canonicalize_dtype(dtype))
  return init


def _scaled(sample: Callable[..., Array], scale: Any, default_dtype: Any) -> Initializer:
  """An initializer drawing from `sample(key, shape, dtype)` times `scale`."""
  def init(key: KeyArray, shape: Sequence[int], dtype: Any = default_dtype) -> Array:
    dtype = dtypes.canonicalize_dtype(dtype)
    return sample(key, shape, dtype) * lax_numpy.array(scale, dtype)
  return init


def uniform(scale: Any = 1e-2, dtype: Any = float) -> Initializer:
  """An initializer drawing uniformly from [0, scale).

  Example:
    >>> uniform(10.)(PRNGKey(0), (2, 3)).shape
    (2, 3)
  """
  return _scaled(random_continuous.uniform, scale, dtype)


def normal(stddev: Any = 1e-2, dtype: Any = float) -> Initializer:
  """An initializer drawing from a normal distribution of mean 0 and `stddev`.

  Example:
    >>> normal(5.)(PRNGKey(0), (2, 3)).shape
    (2, 3)
  """
  return _scaled(random_continuous.normal, stddev, dtype)


def truncated_normal(stddev: Any = 1e-2, dtype: Any = float, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
  """An initializer drawing `stddev` times a standard normal truncated to (lower, upper)
  (so the result's standard deviation is below `stddev`).

  Example:
    >>> truncated_normal(5.)(PRNGKey(0), (2, 3)).shape
    (2, 3)
  """
  def init(key: KeyArray, shape: Sequence[int], dtype: Any = dtype) -> Array:
    dtype = dtypes.canonicalize_dtype(dtype)
    return (random_continuous.truncated_normal(key, lower, upper, shape, dtype)
            * lax_numpy.array(stddev, dtype))
  return init


# ----------------------------------------------------------------------------- variance scaling


def _axes_size(shape: tuple[int, ...], axes: Axes) -> int:
  if isinstance(axes, int):
    return shape[axes]
  return math.prod(shape[i] for i in axes)


def _compute_fans(shape: tuple[int, ...], in_axis: Axes = -2, out_axis: Axes = -1,
                  batch_axis: Axes = ()) -> tuple[float, float]:
  """(fan_in, fan_out): the input and output sizes, each times the receptive field size
  (the product of the dimensions that are neither input, output nor batch)."""
  if len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                     "weights tensor. Must be at least 2D.")
  in_size, out_size = _axes_size(shape, in_axis), _axes_size(shape, out_axis)
  receptive_field_size = (math.prod(shape) / in_size / out_size
                          / _axes_size(shape, batch_axis))
  return in_size * receptive_field_size, out_size * receptive_field_size


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def _denominator(mode: str, fan_in: float, fan_out: float) -> float:
  if mode == "fan_in":
    return fan_in
  if mode == "fan_out":
    return fan_out
  if mode == "fan_avg":
    return (fan_in + fan_out) / 2
  return (fan_in * fan_out) ** 0.5


def variance_scaling(scale: Any, mode: str, distribution: str, in_axis: Axes = -2,
                     out_axis: Axes = -1, batch_axis: Axes = (), dtype: Any = float
                     ) -> Initializer:
  """An initializer whose samples have variance `scale / n`, n set by `mode` from the fans.

  Args:
    scale: the variance before dividing by n.
    mode: "fan_in", "fan_out", "fan_avg" (their mean) or "fan_geo_avg" (geometric mean).
    distribution: "truncated_normal" (truncated to two standard deviations, rescaled to
      keep the variance), "normal" or "uniform".
    in_axis, out_axis: the input and output dimension(s) of the shape.
    batch_axis: dimensions that index independent kernels (not counted in the fans).
    dtype: the default dtype (complex dtypes draw complex samples).

  Example:
    >>> w = variance_scaling(2.0, "fan_in", "normal")(PRNGKey(0), (64, 32))  # var ~ 2/64
  """
  if mode not in _MODES:
    raise ValueError(f"invalid mode for variance scaling initializer: {mode!r}; expected "
                     f"one of {_MODES}")
  if distribution not in _DISTRIBUTIONS:
    raise ValueError(f"invalid distribution for variance scaling initializer: "
                     f"{distribution!r}; expected one of {_DISTRIBUTIONS}")

  def init(key: KeyArray, shape: Sequence[int], dtype: Any = dtype) -> Array:
    shape = _shape(shape)
    dtype = dtypes.canonicalize_dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    variance = lax_numpy.array(scale / _denominator(mode, fan_in, fan_out), dtype=dtype)
    is_complex = dtypes.issubdtype(dtype, np.complexfloating)
    if distribution == "truncated_normal":
      if is_complex:
        stddev = ufuncs.sqrt(variance) / lax_numpy.array(_COMPLEX_TRUNCATED_NORMAL_STDDEV,
                                                         dtype)
        return _complex_truncated_normal(key, 2, shape, dtype) * stddev
      stddev = ufuncs.sqrt(variance) / lax_numpy.array(_TRUNCATED_NORMAL_STDDEV, dtype)
      return random_continuous.truncated_normal(key, -2, 2, shape, dtype) * stddev
    if distribution == "normal":
      return random_continuous.normal(key, shape, dtype) * ufuncs.sqrt(variance)
    if is_complex:
      return _complex_uniform(key, shape, dtype) * ufuncs.sqrt(variance)
    return random_continuous.uniform(key, shape, dtype, -1) * ufuncs.sqrt(3 * variance)
  return init


def _complex_polar(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype,
                   modulus: Callable[[Array], Array]) -> Array:
  """r e^{i theta}: theta uniform on [0, 2 pi), r = modulus(u) for a uniform u."""
  key_r, key_theta = random.split(key)
  real_dtype = np.finfo(dtype).dtype
  r = modulus(random_continuous.uniform(key_r, shape, real_dtype).astype(dtype))
  theta = 2 * np.pi * random_continuous.uniform(key_theta, shape, real_dtype).astype(dtype)
  return r * ufuncs.exp(1j * theta)


def _complex_uniform(key: KeyArray, shape: tuple[int, ...], dtype: np.dtype) -> Array:
  """Uniform on the disk of radius sqrt(2) (variance 1)."""
  return _complex_polar(key, shape, dtype, lambda u: ufuncs.sqrt(2 * u))


def _complex_truncated_normal(key: KeyArray, upper: float, shape: tuple[int, ...],
                              dtype: np.dtype) -> Array:
  """A standard complex normal conditioned on modulus < upper (inverse CDF of r)."""
  def modulus(u: Array) -> Array:
    t = (1 - ufuncs.exp(lax_numpy.array(-(upper ** 2), dtype))) * u
    return ufuncs.sqrt(-ufuncs.log(1 - t))
  return _complex_polar(key, shape, dtype, modulus)


def _variance_scaling_preset(name: str, scale: float, mode: str, distribution: str,
                             doc: str) -> Callable[..., Initializer]:
  def preset(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
             dtype: Any = float) -> Initializer:
    return variance_scaling(scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)
  preset.__name__ = preset.__qualname__ = name
  preset.__doc__ = (f"{doc}: `variance_scaling({scale}, {mode!r}, {distribution!r})`.\n\n"
                    f"  Example:\n    >>> w = {name}()(PRNGKey(0), (64, 32))\n  ")
  return preset


glorot_uniform = _variance_scaling_preset(
    "glorot_uniform", 1.0, "fan_avg", "uniform", "Glorot (Xavier) uniform initializer")
glorot_normal = _variance_scaling_preset(
    "glorot_normal", 1.0, "fan_avg", "truncated_normal", "Glorot (Xavier) normal initializer")
lecun_uniform = _variance_scaling_preset(
    "lecun_uniform", 1.0, "fan_in", "uniform", "LeCun uniform initializer")
lecun_normal = _variance_scaling_preset(
    "lecun_normal", 1.0, "fan_in", "truncated_normal", "LeCun normal initializer")
he_uniform = _variance_scaling_preset(
    "he_uniform", 2.0, "fan_in", "uniform", "He (Kaiming) uniform initializer")
he_normal = _variance_scaling_preset(
    "he_normal", 2.0, "fan_in", "truncated_normal", "He (Kaiming) normal initializer")
xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


# ----------------------------------------------------------------------------- orthogonal


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = float) -> Initializer:
  """An initializer of `scale` times a random orthogonal matrix: the shape is read as
  (rows, columns) with the columns along `column_axis` and the rows all other dimensions;
  the columns (or rows, if fewer) are orthonormal.

  Example:
    >>> q = orthogonal()(PRNGKey(0), (3, 3))  # q.T @ q is the identity
  """
  def init(key: KeyArray, shape: Sequence[int], dtype: Any = dtype) -> Array:
    shape = _shape(shape)
    dtype = dtypes.canonicalize_dtype(dtype)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    n_cols = shape[column_axis]
    n_rows = math.prod(shape) // n_cols
    matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
    q, r = linalg.qr(random_continuous.normal(key, matrix_shape, dtype))
    q = q * ufuncs.sign(creation.diag(r))  # signs fixed: Haar-distributed
    if n_rows < n_cols:
      q = q.T
    q = jnp_shape.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
    return lax_numpy.array(scale, dtype) * jnp_shape.moveaxis(q, -1, column_axis)
  return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = float
                     ) -> Initializer:
  """An initializer for 1-3-D convolution kernels (3-5-D shapes, spatial dimensions first):
  zero except at the spatial center, which holds an orthogonal (in, out) matrix, so the
  convolution preserves norms (Xiao et al., 2018). Needs in <= out.

  Example:
    >>> w = delta_orthogonal()(PRNGKey(0), (3, 3, 4, 4))
  """
  def init(key: KeyArray, shape: Sequence[int], dtype: Any = dtype) -> Array:
    shape = _shape(shape)
    dtype = dtypes.canonicalize_dtype(dtype)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    center = tuple((k - 1) // 2 for k in shape[:-2])
    return lax_numpy.zeros(shape, dtype).at[center].set(ortho)
  return init
