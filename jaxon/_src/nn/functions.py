"""jaxon.nn: activation functions, softmax, one-hot encoding and standardization.

Functions with kinks are written so that their derivative at the kink is JAX's (which comes
from custom JVP rules there; jaxon has no `custom_jvp` yet): `relu` and `relu6` select
rather than take a maximum, so the derivative at 0 (and 6) is 0, not the 1/2 a maximum of
two equal values would give. `softmax` and `log_softmax` subtract the maximum as a
constant to differentiation (`stop_gradient`), which is exact: the result does not depend
on it.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.interpreters.ad import stop_gradient
from jaxon._src.lax import lax
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import reductions, shape, ufuncs
from jaxon._src.numpy.ufuncs import _promote_args_inexact
from jaxon._src.scipy.special import logsumexp as logsumexp

Axis = int | Sequence[int] | None


def _inexact(name: str, x: Any) -> Any:
  (x,) = _promote_args_inexact(name, x)
  return shape._ensure_array(name, x)


def _zeros(x: Any) -> Any:
  return lax.full_like(x, 0)


# ----------------------------------------------------------------------------- rectifiers

def relu(x: Any) -> Any:
  """Rectified linear unit, max(x, 0), with derivative 0 at 0 (as JAX's).

  Example: `relu(jnp.array([-1., 0., 2.]))` is `[0., 0., 2.]`."""
  x = shape._ensure_array("relu", x)
  return lax.select(lax.le(x, np.zeros((), x.dtype)), _zeros(x), x)


def relu6(x: Any) -> Any:
  """min(max(x, 0), 6), with derivative 0 at 0 and at 6 (as JAX's)."""
  x = _inexact("relu6", x)
  six = lax.full_like(x, 6)
  return lax.select(lax.le(x, _zeros(x)), _zeros(x), lax.select(lax.ge(x, six), six, x))


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
  """x for x >= 0, negative_slope * x below."""
  x = _inexact("leaky_relu", x)
  return ufuncs.where(lax.ge(x, _zeros(x)), x, ufuncs.multiply(negative_slope, x))


def elu(x: Any, alpha: Any = 1.0) -> Any:
  """Exponential linear unit: x for x > 0, alpha (exp(x) - 1) below."""
  x = _inexact("elu", x)
  positive = lax.gt(x, _zeros(x))
  safe_x = lax.select(positive, _zeros(x), x)  # keeps exp from overflowing where unused
  return ufuncs.where(positive, x, ufuncs.multiply(alpha, lax.expm1(safe_x)))


def celu(x: Any, alpha: Any = 1.0) -> Any:
  """Continuously differentiable ELU: max(x, 0) + alpha (exp(min(x, 0) / alpha) - 1)."""
  x = _inexact("celu", x)
  negative_part = ufuncs.expm1(ufuncs.divide(ufuncs.minimum(x, 0.0), alpha))
  return ufuncs.add(ufuncs.maximum(x, 0.0), ufuncs.multiply(alpha, negative_part))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Any) -> Any:
  """Scaled ELU with the self-normalizing constants of Klambauer et al. (2017)."""
  return ufuncs.multiply(_SELU_SCALE, elu(x, _SELU_ALPHA))


def gelu(x: Any, approximate: bool = True) -> Any:
  """Gaussian error linear unit x * Phi(x); with `approximate`, the tanh approximation
  x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
  x = _inexact("gelu", x)
  half = np.array(0.5, x.dtype)
  if approximate:
    inner = lax.mul(np.array(math.sqrt(2 / math.pi), x.dtype),
                    lax.add(x, lax.mul(np.array(0.044715, x.dtype), lax.integer_pow(x, 3))))
    return lax.mul(lax.mul(half, x), lax.add(np.array(1, x.dtype), lax.tanh(inner)))
  return lax.mul(lax.mul(half, x), lax.erfc(lax.mul(np.array(-math.sqrt(0.5), x.dtype), x)))


# ----------------------------------------------------------------------------- sigmoids

def sigmoid(x: Any) -> Any:
  """The logistic function 1 / (1 + exp(-x))."""
  return lax.logistic(_inexact("sigmoid", x))


def log_sigmoid(x: Any) -> Any:
  """log(sigmoid(x)) = -softplus(-x), accurate for large |x|."""
  return ufuncs.negative(softplus(ufuncs.negative(_inexact("log_sigmoid", x))))


def softplus(x: Any) -> Any:
  """log(1 + exp(x)), without overflow."""
  return ufuncs.logaddexp(_inexact("softplus", x), 0.0)


def soft_sign(x: Any) -> Any:
  """x / (|x| + 1)."""
  x = _inexact("soft_sign", x)
  return lax.div(x, lax.add(lax.abs(x), np.array(1, x.dtype)))


def silu(x: Any) -> Any:
  """Sigmoid linear unit (swish), x * sigmoid(x)."""
  x = _inexact("silu", x)
  return lax.mul(x, lax.logistic(x))


swish = silu


def hard_tanh(x: Any) -> Any:
  """-1 below -1, 1 above 1, x in between."""
  x = _inexact("hard_tanh", x)
  one = lax.full_like(x, 1)
  return lax.select(lax.gt(x, one), one, lax.select(lax.lt(x, lax.neg(one)), lax.neg(one), x))


def hard_sigmoid(x: Any) -> Any:
  """relu6(x + 3) / 6, a piecewise-linear sigmoid."""
  x = _inexact("hard_sigmoid", x)
  return lax.div(relu6(lax.add(x, np.array(3, x.dtype))), np.array(6, x.dtype))


def hard_silu(x: Any) -> Any:
  """x * hard_sigmoid(x) (hard swish)."""
  x = _inexact("hard_silu", x)
  return lax.mul(x, hard_sigmoid(x))


hard_swish = hard_silu


def mish(x: Any) -> Any:
  """x * tanh(softplus(x))."""
  x = _inexact("mish", x)
  return lax.mul(x, lax.tanh(softplus(x)))


def squareplus(x: Any, b: Any = 4) -> Any:
  """(x + sqrt(x^2 + b)) / 2, a smooth relu."""
  x = _inexact("squareplus", x)
  return ufuncs.divide(ufuncs.add(x, ufuncs.sqrt(ufuncs.add(ufuncs.square(x), b))), 2.0)


def tanh(x: Any) -> Any:
  """Hyperbolic tangent (`jnp.tanh`)."""
  return ufuncs.tanh(x)


def glu(x: Any, axis: int = -1) -> Any:
  """Gated linear unit: the first half of `x` along `axis` times the sigmoid of the
  second half (the axis must have even size)."""
  x = _inexact("glu", x)
  size = x.shape[lax_utils.canonicalize_axis(axis, x.ndim)]
  if size % 2:
    raise ValueError(f"glu: axis {axis} of x (shape {x.shape}) must have even size, got "
                     f"{size}.")
  first, second = shape.split(x, 2, axis)
  return lax.mul(first, lax.logistic(second))


# ----------------------------------------------------------------------------- softmax

def _shifted(name: str, x: Any, axis: Axis, where: Any) -> tuple[Any, Axis]:
  """x minus its maximum over `axis` (0 where that maximum is infinite), the maximum held
  constant under differentiation."""
  x = _inexact(name, x)
  axes = reductions._canonical_axes(name, axis, x.ndim)
  x_max = reductions.max(x, axes, keepdims=True, where=where, initial=-np.inf)
  x_max = stop_gradient(ufuncs.where(ufuncs.isfinite(x_max), x_max, np.zeros((), x.dtype)))
  return ufuncs.subtract(x, x_max), axes


def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
  """exp(x) / sum(exp(x)) over `axis`, computed after subtracting the maximum (no
  overflow). With `where`, masked-out entries are 0 and do not count.

  Example: `softmax(jnp.array([0., jnp.log(3.)]))` is `[0.25, 0.75]`."""
  shifted, axes = _shifted("softmax", x, axis, where)
  unnormalized = ufuncs.exp(shifted)
  if where is not None:
    unnormalized = ufuncs.where(where, unnormalized, np.zeros((), unnormalized.dtype))
  total = reductions.sum(unnormalized, axes, keepdims=True, where=where)
  out = ufuncs.divide(unnormalized, total)
  if where is not None:
    out = ufuncs.where(where, out, np.zeros((), out.dtype))
  return out


def log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
  """x - log(sum(exp(x))) over `axis`, stable for large |x| in value and gradient. With
  `where`, masked-out entries are -inf."""
  shifted, axes = _shifted("log_softmax", x, axis, where)
  total = reductions.sum(ufuncs.exp(shifted), axes, keepdims=True, where=where)
  out = ufuncs.subtract(shifted, ufuncs.log(total))
  if where is not None:
    out = ufuncs.where(where, out, np.array(-np.inf, out.dtype))
  return out


# ----------------------------------------------------------------------------- encodings

def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
  """One-hot encoding: a new axis of size `num_classes` at `axis`, 1 where its index
  equals the value of `x` and 0 elsewhere (all 0 for values outside [0, num_classes)).

  Example: `one_hot(jnp.array([0, 2]), 3)` is `[[1., 0., 0.], [0., 0., 1.]]`."""
  num_classes = core.concrete_or_error(
      operator.index, num_classes,
      "The num_classes argument of one_hot must be static (it decides the output's shape).")
  x = shape._ensure_array("one_hot", x)
  dtype = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)
  out_axis = lax_utils.canonicalize_axis(axis, x.ndim + 1)
  labels = shape.expand_dims(x, out_axis)
  classes_shape = [1] * (x.ndim + 1)
  classes_shape[out_axis] = num_classes
  classes = lax.broadcasted_iota(x.dtype, classes_shape, out_axis)
  return lax.convert_element_type(ufuncs.equal(labels, classes), dtype)


def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None) -> Any:
  """(x - mean) / sqrt(variance + epsilon) over `axis`; the mean and the variance
  (E[x^2] - E[x]^2, as JAX computes it) come from `x` unless given."""
  x = _inexact("standardize", x)
  axes = reductions._canonical_axes("standardize", axis, x.ndim)
  if mean is None:
    mean = reductions.mean(x, axes, keepdims=True, where=where)
  if variance is None:
    mean_square = reductions.mean(ufuncs.square(x), axes, keepdims=True, where=where)
    variance = ufuncs.subtract(mean_square, ufuncs.square(mean))
  return ufuncs.multiply(ufuncs.subtract(x, mean),
                         lax.rsqrt(ufuncs.add(variance, np.array(epsilon, x.dtype))))
