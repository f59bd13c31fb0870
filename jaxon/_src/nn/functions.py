"""jaxon.nn: activation functions, softmax, one-hot encoding and standardization.

Where JAX gives a function a custom JVP rule, so does jaxon, with the same rule, so that
derivatives agree at the points where the formula alone would say something else: `relu` and
`relu6` have derivative 0 at their kinks (a maximum of two equal values would give 1/2), and
`log1mexp`'s derivative is 1/expm1(x) (inf at 0) rather than what its two branches give.
`softmax` and `log_softmax` subtract the maximum as a constant to differentiation
(`stop_gradient`), which is exact, the result not depending on it; that is JAX's default
(its custom-JVP softmax sits behind the off-by-default flag `jax_softmax_custom_jvp`).
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.interpreters.ad import stop_gradient
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax
from jaxon._src.lax import utils as lax_utils
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.numpy import reductions, shape, ufuncs
from jaxon._src.numpy.einsum import einsum
from jaxon._src.numpy.ufuncs import _promote_args_inexact
from jaxon._src.scipy.special import logsumexp as logsumexp
from jaxon._src.xla.eager_plans import memoize_eager_operations

Axis = int | Sequence[int] | None


def _inexact(name: str, x: Any) -> Any:
  (x,) = _promote_args_inexact(name, x)
  return shape._ensure_array(name, x)


def _zeros(x: Any) -> Any:
  return lax.full_like(x, 0)


# ----------------------------------------------------------------------------- rectifiers

def identity(x: Any) -> Any:
  """`x` unchanged, as an array: the activation of a layer that has none."""
  return shape._ensure_array("identity", x)


def _pass_tangent_where(inside: Any, g: Any) -> Any:
  """The tangent `g` where `inside` holds, 0 elsewhere (kinks included)."""
  return lax.select(inside, g, lax.full_like(g, 0))


@custom_jvp
def relu(x: Any) -> Any:
  """Rectified linear unit, max(x, 0). Its custom JVP makes the derivative at 0 be 0, as
  JAX's, rather than the 1/2 of a maximum of equal values (see Bertoin et al., 2021,
  "Numerical influence of ReLU'(0) on backpropagation").

  Example: `relu(jnp.array([-1., 0., 2.]))` is `[0., 0., 2.]`."""
  return ufuncs.maximum(shape._ensure_array("relu", x), 0)


relu.defjvps(lambda g, ans, x: _pass_tangent_where(ufuncs.greater(x, 0), g))


@custom_jvp
def relu6(x: Any) -> Any:
  """min(max(x, 0), 6); its custom JVP makes the derivative 0 at both kinks, 0 and 6, as
  JAX's."""
  return ufuncs.minimum(ufuncs.maximum(shape._ensure_array("relu6", x), 0), 6.0)


relu6.defjvps(lambda g, ans, x: _pass_tangent_where(
    ufuncs.logical_and(ufuncs.greater(x, 0), ufuncs.less(x, 6)), g))


@memoize_eager_operations
def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
  """x for x >= 0, negative_slope * x below."""
  x = _inexact("leaky_relu", x)
  return ufuncs.where(lax.ge(x, _zeros(x)), x, ufuncs.multiply(negative_slope, x))


@memoize_eager_operations
def elu(x: Any, alpha: Any = 1.0) -> Any:
  """Exponential linear unit: x for x > 0, alpha (exp(x) - 1) below."""
  x = _inexact("elu", x)
  positive = lax.gt(x, _zeros(x))
  safe_x = lax.select(positive, _zeros(x), x)  # keeps exp from overflowing where unused
  return ufuncs.where(positive, x, ufuncs.multiply(alpha, transcendental.expm1(safe_x)))


@memoize_eager_operations
def celu(x: Any, alpha: Any = 1.0) -> Any:
  """Continuously differentiable ELU: max(x, 0) + alpha (exp(min(x, 0) / alpha) - 1)."""
  x = _inexact("celu", x)
  negative_part = ufuncs.expm1(ufuncs.divide(ufuncs.minimum(x, 0.0), alpha))
  return ufuncs.add(ufuncs.maximum(x, 0.0), ufuncs.multiply(alpha, negative_part))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@memoize_eager_operations
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
    return lax.mul(lax.mul(half, x), lax.add(np.array(1, x.dtype), transcendental.tanh(inner)))
  return lax.mul(lax.mul(half, x),
                 transcendental.erfc(lax.mul(np.array(-math.sqrt(0.5), x.dtype), x)))


# ----------------------------------------------------------------------------- sigmoids

@memoize_eager_operations
def sigmoid(x: Any) -> Any:
  """The logistic function 1 / (1 + exp(-x))."""
  return transcendental.logistic(_inexact("sigmoid", x))


@memoize_eager_operations
def log_sigmoid(x: Any) -> Any:
  """log(sigmoid(x)) = -softplus(-x), accurate for large |x|."""
  return ufuncs.negative(softplus(ufuncs.negative(_inexact("log_sigmoid", x))))


@memoize_eager_operations
def softplus(x: Any) -> Any:
  """log(1 + exp(x)), without overflow."""
  return ufuncs.logaddexp(_inexact("softplus", x), 0.0)


def sparse_plus(x: Any) -> Any:
  """0 below -1, x above 1 and (x + 1)^2 / 4 in between: a softplus that is exactly 0 and
  exactly linear outside [-1, 1] (Martins & Astudillo, 2016), with a continuous derivative.

  Example: `sparse_plus(jnp.array([-2., 0., 2.]))` is `[0., 0.25, 2.]`."""
  x = _inexact("sparse_plus", x)
  one = lax.full_like(x, 1)
  quadratic = lax.div(lax.integer_pow(lax.add(x, one), 2), lax.full_like(x, 4))
  inner = lax.select(lax.ge(x, one), x, quadratic)
  return lax.select(lax.le(x, lax.neg(one)), _zeros(x), inner)


def sparse_sigmoid(x: Any) -> Any:
  """(clip(x, -1, 1) + 1) / 2, the derivative of `sparse_plus`: a sigmoid that reaches 0
  and 1 exactly (at -1 and 1)."""
  x = _inexact("sparse_sigmoid", x)
  clipped = ufuncs.clip(lax.add(x, lax.full_like(x, 1)), 0.0, 2.0)
  return lax.mul(np.array(0.5, x.dtype), clipped)


def soft_sign(x: Any) -> Any:
  """x / (|x| + 1)."""
  x = _inexact("soft_sign", x)
  return lax.div(x, lax.add(lax.abs(x), np.array(1, x.dtype)))


@memoize_eager_operations
def silu(x: Any) -> Any:
  """Sigmoid linear unit (swish), x * sigmoid(x)."""
  x = _inexact("silu", x)
  return lax.mul(x, transcendental.logistic(x))


swish = silu


@memoize_eager_operations
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
  return lax.mul(x, transcendental.tanh(softplus(x)))


def squareplus(x: Any, b: Any = 4) -> Any:
  """(x + sqrt(x^2 + b)) / 2, a smooth relu."""
  x = _inexact("squareplus", x)
  return ufuncs.divide(ufuncs.add(x, ufuncs.sqrt(ufuncs.add(ufuncs.square(x), b))), 2.0)


def tanh(x: Any) -> Any:
  """Hyperbolic tangent (`jnp.tanh`)."""
  return ufuncs.tanh(x)


@memoize_eager_operations
def glu(x: Any, axis: int = -1) -> Any:
  """Gated linear unit: the first half of `x` along `axis` times the sigmoid of the
  second half (the axis must have even size)."""
  x = _inexact("glu", x)
  size = x.shape[lax_utils.canonicalize_axis(axis, x.ndim)]
  if size % 2:
    raise ValueError(f"glu: axis {axis} of x (shape {x.shape}) must have even size, got "
                     f"{size}.")
  first, second = shape.split(x, 2, axis)
  return lax.mul(first, transcendental.logistic(second))


# ----------------------------------------------------------------------------- softmax

def _shifted(name: str, x: Any, axis: Axis, where: Any) -> tuple[Any, Axis]:
  """x minus its maximum over `axis`, the maximum held constant under differentiation, with
  masked-out entries -inf. As in JAX, an infinite maximum is not special-cased: a +inf
  entry (or a slice with nothing but -inf) makes the slice NaN, inf - inf being undefined."""
  x = _inexact(name, x)
  axes = reductions._canonical_axes(name, axis, x.ndim)
  x_max = reductions.max(x, axes, keepdims=True, where=where, initial=-np.inf)
  if where is not None:
    x = ufuncs.where(where, x, np.array(-np.inf, x.dtype))
  return ufuncs.subtract(x, stop_gradient(x_max)), axes


@memoize_eager_operations
def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
  """exp(x) / sum(exp(x)) over `axis`, computed after subtracting the maximum (no
  overflow). With `where`, masked-out entries are 0 and do not count.

  Example: `softmax(jnp.array([0., jnp.log(3.)]))` is `[0.25, 0.75]`."""
  shifted, axes = _shifted("softmax", x, axis, where)
  unnormalized = ufuncs.exp(shifted)
  total = reductions.sum(unnormalized, axes, keepdims=True, where=where)
  out = ufuncs.divide(unnormalized, total)
  if where is not None:
    out = ufuncs.where(where, out, np.zeros((), out.dtype))
  return out


@memoize_eager_operations
def log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
  """x - log(sum(exp(x))) over `axis`, stable for large |x| in value and gradient. With
  `where`, masked-out entries are -inf."""
  shifted, axes = _shifted("log_softmax", x, axis, where)
  total = reductions.sum(ufuncs.exp(shifted), axes, keepdims=True, where=where)
  out = ufuncs.subtract(shifted, ufuncs.log(total))
  if where is not None:
    out = ufuncs.where(where, out, np.array(-np.inf, out.dtype))
  return out


@memoize_eager_operations
def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
  """log(mean(exp(x))) over `axis`, without overflow: `logsumexp` minus the log of the
  number of entries averaged (those `where` selects, if given).

  Example: `logmeanexp(jnp.log(jnp.array([1., 3.])))` is `log(2.)`."""
  x = _inexact("logmeanexp", x)
  axes = reductions._canonical_axes("logmeanexp", axis, x.ndim)
  total = logsumexp(x, axes, keepdims=keepdims, where=where)
  if where is None:
    count = np.array(math.prod(x.shape[a] for a in axes), x.dtype)
  else:
    selected = shape.broadcast_to(where, x.shape)
    count = reductions.sum(selected, axes, dtype=x.dtype, keepdims=keepdims)
  return ufuncs.subtract(total, ufuncs.log(count))


@custom_jvp
def log1mexp(x: Any) -> Any:
  """log(1 - exp(-x)) for x > 0, accurate at both ends: log(-expm1(-x)) where 1 - exp(-x)
  is small (x < log 2), log1p(-exp(-x)) where exp(-x) is (Maechler, 2012). The custom JVP
  (JAX's) differentiates the function, not the branch: 1/expm1(x), inf at 0.

  Example: `log1mexp(jnp.log(2.))` is `-log(2.)`."""
  x = _inexact("log1mexp", x)
  neg_x = lax.neg(x)
  near_zero = transcendental.log(lax.neg(transcendental.expm1(neg_x)))
  far = transcendental.log1p(lax.neg(transcendental.exp(neg_x)))
  return lax.select(lax.lt(x, lax.full_like(x, math.log(2))), near_zero, far)


log1mexp.defjvps(lambda g, ans, x: ufuncs.divide(g, ufuncs.expm1(x)))


# ----------------------------------------------------------------------------- encodings

@memoize_eager_operations
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


@memoize_eager_operations
def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None, *, algorithm: str = "fast") -> Any:
  """(x - mean) / sqrt(variance + epsilon) over `axis`; the mean and the variance come
  from `x` unless given. `algorithm` "fast" (JAX's default) takes the variance as
  E[x^2] - E[x]^2, clipped at 0 where rounding makes it negative; "stable" as
  E[(x - E[x])^2], which does not cancel."""
  if algorithm not in ("fast", "stable"):
    raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  x = _inexact("standardize", x)
  axes = reductions._canonical_axes("standardize", axis, x.ndim)
  if mean is None:
    mean = reductions.mean(x, axes, keepdims=True, where=where)
  if variance is None and algorithm == "stable":
    variance = reductions.mean(ufuncs.square(ufuncs.subtract(x, mean)), axes, keepdims=True,
                               where=where)
  elif variance is None:
    mean_square = reductions.mean(ufuncs.square(x), axes, keepdims=True, where=where)
    variance = ufuncs.maximum(ufuncs.subtract(mean_square, ufuncs.square(mean)), 0)
  return ufuncs.multiply(ufuncs.subtract(x, mean),
                         transcendental.rsqrt(ufuncs.add(variance, np.array(epsilon, x.dtype))))


# ----------------------------------------------------------------------------- attention

def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None,
                          mask: Any = None, *, scale: Any = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None, return_residual: bool = False
                          ) -> Any:
  """Scaled dot-product attention, softmax(scale * query key^T + bias) value, as JAX's.

  Shapes use B (batch), T (query length), S (key length), N (query heads), K (key/value
  heads) and H (head size); the batch dimension may be left out of all the arrays.

  Args:
    query: (B, T, N, H).
    key, value: (B, S, K, H), of `query`'s dtype. When K < N (grouped-query attention),
      K must divide N and query head n attends with key/value head n // (N // K).
    bias: added to the logits; 4-D, broadcastable to (B, N, T, S).
    mask: boolean, True where a query may attend to a key; 4-D, broadcastable to
      (B, N, T, S).
    scale: multiplies the logits; default 1 / sqrt(H).
    is_causal: query t attends only to keys s <= t.
    query_seq_lengths, key_value_seq_lengths: int32 (B,) valid lengths: padding queries
      and keys beyond them take no part (and when both are given, the outputs of padding
      queries are 0).
    local_window_size: (left, right) (or one int for both): query t attends only to keys
      in [t - left, t + right].
    implementation: None or "xla" (the same here); "cudnn" is not available in jaxon.
    return_residual: also return the log-sum-exp of each query's (masked) logits, shaped
      (B, T, N) (without B if `query` has none) in `key`'s dtype, with no gradient: what a
      flash-attention backward pass needs (FlashAttention-2, section 3.1.1).

  Returns:
    The attended values, of `query`'s shape and dtype; with `return_residual`, the pair
    (values, residual).

  Masked-out logits become -0.7 times the dtype's largest value (JAX's choice: large
  enough to vanish in the softmax, far enough from the limit that adding to it cannot
  overflow), so a row with every key masked out averages all of them, as in JAX. The
  logits and the softmax are computed in at least float32 (float64 inputs keep float64).

  Example:
    >>> q = k = v = jnp.ones((2, 4, 8, 16))
    >>> dot_product_attention(q, k, v, is_causal=True).shape
    (2, 4, 8, 16)
  """
  if implementation == "cudnn":
    raise NotImplementedError("dot_product_attention: implementation='cudnn' needs "
                              "NVIDIA's cuDNN kernels, which jaxon does not have; use "
                              "implementation=None or 'xla'.")
  if implementation not in (None, "xla"):
    raise ValueError(f"dot_product_attention: unsupported implementation "
                     f"{implementation!r}; use None or 'xla'.")
  output_shape = np.shape(query)
  query, key, value = (_attention_operand(name, x) for name, x in
                       (("query", query), ("key", key), ("value", value)))
  _check_attention_operands(query, key, value)
  batch, head_size = key.shape[0], key.shape[3]
  if scale is None:
    scale = 1 / math.sqrt(head_size)
  logits = _attention_logits(query, key, scale, bias)
  lengths = [_seq_lengths(name, x, batch) for name, x in (
      ("query_seq_lengths", query_seq_lengths),
      ("key_value_seq_lengths", key_value_seq_lengths))]
  if local_window_size is not None and np.ndim(local_window_size) == 0:
    local_window_size = (local_window_size, local_window_size)
  allowed = _allowed(logits.shape, mask, is_causal, local_window_size, *lengths)
  if allowed is not None:
    large_negative = np.array(-0.7 * dtypes.finfo(logits.dtype).max, logits.dtype)
    logits = ufuncs.where(allowed, logits, large_negative)
  probs = lax.convert_element_type(softmax(logits, axis=-1), key.dtype)
  out = einsum("gbkts,bskh->btkgh", probs, value)
  if lengths[0] is not None and lengths[1] is not None:
    valid_query = _positions_below(lengths[0], out.shape[1], 1, out.ndim, 0)
    out = lax.mul(out, lax.convert_element_type(valid_query, out.dtype))
  out = shape.reshape(out, output_shape)
  if not return_residual:
    return out
  residual = shape.transpose(logsumexp(logits, axis=-1), (1, 3, 2, 0))  # (B, T, K, G)
  residual = lax.convert_element_type(residual, key.dtype)
  return out, stop_gradient(shape.reshape(residual, output_shape[:-1]))


def _attention_operand(name: str, x: Any) -> Any:
  """`x` as an array of rank 4, with leading axes of size 1 added to lower ranks."""
  x = shape._ensure_array("dot_product_attention", x)
  if x.ndim > 4:
    raise ValueError(f"dot_product_attention: {name} must have at most 4 dimensions "
                     f"((B, T, N, H) for operands, (B, N, T, S) for bias and mask), got shape "
                     f"{x.shape}.")
  return shape.reshape(x, (1,) * (4 - x.ndim) + x.shape)


def _check_attention_operands(query: Any, key: Any, value: Any) -> None:
  if not dtypes.issubdtype(key.dtype, np.floating):
    raise TypeError(f"dot_product_attention: key must have a floating dtype, got "
                    f"{key.dtype}.")
  for name, x in (("query", query), ("value", value)):
    if x.dtype != key.dtype:
      raise ValueError(f"dot_product_attention: {name} dtype should be {key.dtype} (key's "
                       f"dtype), but got {x.dtype}.")
  batch, _, kv_heads, head_size = key.shape
  if value.shape != key.shape:
    raise ValueError(f"dot_product_attention: value shape should be key's {key.shape} "
                     f"(B, S, K, H), but got {value.shape}.")
  if query.shape[0] != batch or query.shape[3] != head_size:
    raise ValueError(f"dot_product_attention: query shape should be (B, T, N, H) = "
                     f"({batch}, T, N, {head_size}) to match key {key.shape}, but got "
                     f"{query.shape}.")
  if query.shape[2] % kv_heads:
    raise ValueError(f"dot_product_attention: the number of query heads must be a "
                     f"multiple of key/value heads, but got {query.shape[2]} vs {kv_heads}.")


def _attention_logits(query: Any, key: Any, scale: Any, bias: Any) -> Any:
  """scale * query . key (+ bias), shaped (G, B, K, T, S): query head n = k G + g reads
  key head k, so grouped-query attention needs no copies of the keys. The group axis comes
  first, where JAX's attention (a vmap over it) has it: with one group, a size-1 axis between
  the others made XLA copy the logits out of the matmul (attention 1.4x JAX's time)."""
  batch, length, heads, head_size = query.shape
  kv_heads = key.shape[2]
  logits_dtype = dtypes.promote_types(query.dtype, np.float32)
  grouped = shape.reshape(query, (batch, length, kv_heads, heads // kv_heads, head_size))
  logits = einsum("btkgh,bskh->gbkts", grouped, key, preferred_element_type=logits_dtype)
  logits = lax.mul(logits, lax.convert_element_type(scale, logits_dtype))
  if bias is None:
    return logits
  bias = _grouped(_attention_operand("bias", bias), "bias", logits.shape)
  return lax.convert_element_type(ufuncs.add(logits, bias), logits_dtype)


def _grouped(x: Any, name: str, logits_shape: tuple[int, ...]) -> Any:
  """A bias or mask broadcastable to (B, N, T, S), reshaped to broadcast against the
  (G, B, K, T, S) logits."""
  groups, batch, kv_heads, length, kv_length = logits_shape
  target = (batch, kv_heads * groups, length, kv_length)
  try:
    fits = lax.broadcast_shapes(x.shape, target) == target
  except ValueError:
    fits = False
  if not fits:
    raise ValueError(f"dot_product_attention: {name} of shape {x.shape} does not "
                     f"broadcast to (B, N, T, S) = {target}.")
  if x.shape[1] == 1 or groups == 1:
    return shape.reshape(x, (1, *x.shape))
  x = shape.reshape(x, (x.shape[0], kv_heads, groups, *x.shape[2:]))
  return shape.transpose(x, (2, 0, 1, 3, 4))


def _seq_lengths(name: str, lengths: Any, batch: int) -> Any:
  if lengths is None:
    return None
  lengths = shape._ensure_array("dot_product_attention", lengths)
  if lengths.shape != (batch,) or lengths.dtype != np.int32:
    raise ValueError(f"dot_product_attention: {name} should be an int32 array of shape "
                     f"({batch},) (one length per batch entry), got {lengths.dtype} "
                     f"{lengths.shape}.")
  return lengths


def _allowed(logits_shape: tuple[int, ...], mask: Any, is_causal: bool,
             window: tuple[int, int] | None, query_lengths: Any, kv_lengths: Any) -> Any:
  """Where queries may attend to keys, broadcastable to the (G, B, K, T, S) logits (None:
  everywhere)."""
  length, kv_length = logits_shape[-2:]
  conditions = []
  if mask is not None:
    mask = _attention_operand("mask", mask)
    if mask.dtype != np.bool_:
      raise ValueError(f"dot_product_attention: mask dtype should be bool (True where a "
                       f"query may attend), but got {mask.dtype}; pass additive masks as "
                       f"bias.")
    conditions.append(_grouped(mask, "mask", logits_shape))
  if is_causal or window is not None:
    query_pos, key_pos = (lax.broadcasted_iota(np.int32, (length, kv_length), axis)
                          for axis in (0, 1))
  if is_causal:
    conditions.append(lax.ge(query_pos, key_pos))
  if window is not None:
    left, right = (operator.index(w) for w in window)
    conditions.append(ufuncs.logical_and(
        lax.le(lax.sub(query_pos, key_pos), np.array(left, np.int32)),
        lax.le(lax.sub(key_pos, query_pos), np.array(right, np.int32))))
  if query_lengths is not None:
    conditions.append(_positions_below(query_lengths, length, 3, len(logits_shape), 1))
  if kv_lengths is not None:
    conditions.append(_positions_below(kv_lengths, kv_length, 4, len(logits_shape), 1))
  return functools.reduce(ufuncs.logical_and, conditions) if conditions else None


def _positions_below(lengths: Any, size: int, axis: int, ndim: int, batch_axis: int) -> Any:
  """Booleans, batch on `batch_axis` and positions 0..size-1 on `axis`: position < length."""
  positions_shape = [1] * ndim
  positions_shape[axis] = size
  positions = lax.broadcasted_iota(lengths.dtype, positions_shape, axis)
  lengths_shape = [1] * ndim
  lengths_shape[batch_axis] = -1
  return ufuncs.less(positions, shape.reshape(lengths, tuple(lengths_shape)))
