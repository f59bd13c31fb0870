"""Stax: neural networks as pairs of pure functions, built from layers and combinators.

A layer is an `(init_fun, apply_fun)` pair:

    init_fun(rng, input_shape) -> (output_shape, params)
    apply_fun(params, inputs, **kwargs) -> outputs

`init_fun` only does shape arithmetic besides drawing parameters, so an input shape may hold
-1 for a dimension not known yet (usually the batch): a network is initialized without
committing to a batch size. Layers that need randomness when applied (`Dropout`) take a PRNG
key as the keyword `rng`; `serial` and `parallel` split it among their layers.

Parameter pytrees, initializers and key splitting follow JAX's `jax.example_libraries.stax`,
so one key gives bit-identical parameters in both and ported code can reuse checkpoints.
Layer constructors are CamelCase (`Conv`, `Relu`), as in Keras, to tell them apart from the
functions (`lax.conv`, `nn.relu`) they wrap.

Example, a small classifier for 28x28 grey images:

    init, apply = serial(Conv(32, (3, 3), padding='SAME'), Relu, MaxPool((2, 2)), Flatten,
                         Dense(10), LogSoftmax)
    out_shape, params = init(random.PRNGKey(0), (-1, 28, 28, 1))   # out_shape: (-1, 10)
    log_probs = apply(params, images)
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon import lax, random
from jaxon.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from jaxon.nn.initializers import Initializer, glorot_normal, normal, ones, zeros

# The names JAX's stax has always exported for its default initializers and log-softmax.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

Shape = Any  # a tuple of ints (-1 for unknown), or a list of them for several inputs
InitFun = Callable[[Any, Shape], tuple[Shape, Any]]
ApplyFun = Callable[..., Any]
Layer = tuple[InitFun, ApplyFun]

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
    "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "Log", "LogSoftmax", "MaxPool", "Relu",
    "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "glorot",
    "glorot_normal", "logsoftmax", "normal", "ones", "parallel", "randn", "serial",
    "shape_dependent", "zeros",
]


def _check_rank(layer: str, input_shape: Shape, rank: int, layout: str) -> None:
  if len(input_shape) != rank:
    raise ValueError(f"{layer} expects inputs of rank {rank} (layout {layout!r}), got input "
                     f"shape {tuple(input_shape)}.")


# ----------------------------------------------------------------------------- dense, conv

def Dense(out_dim: int, W_init: Initializer = glorot_normal(),
          b_init: Initializer = normal()) -> Layer:
  """A fully-connected layer, `inputs @ W + b`, acting on the last axis."""
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    k_w, k_b = random.split(rng)
    params = W_init(k_w, (input_shape[-1], out_dim)), b_init(k_b, (out_dim,))
    return tuple(input_shape[:-1]) + (out_dim,), params

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    W, b = params
    return jnp.dot(inputs, W) + b
  return init_fun, apply_fun


def _windowed_size(size: int, kernel: int, stride: int, pads: tuple[int, int]) -> int:
  """How many windows (of a convolution or a pooling) fit along one padded dimension."""
  return max(0, (size + pads[0] + pads[1] - kernel) // stride + 1)


def _conv_transpose_spatial_size(size: int, kernel: int, stride: int, padding: Any) -> int:
  """The size `lax.conv_transpose` gives: it convolves the input dilated by `stride`."""
  if padding == "SAME":
    return size * stride
  if padding == "VALID":
    return (size - 1) * stride + max(kernel, stride)
  if isinstance(padding, str):
    raise ValueError(f"conv transpose padding must be 'SAME', 'VALID' or (low, high) pairs, "
                     f"got {padding!r}.")
  low, high = padding
  return (size - 1) * stride + 1 + low + high - kernel + 1


def _general_conv(transpose: bool, dimension_numbers: tuple[str, str, str], out_chan: int,
                  filter_shape: Sequence[int], strides: Sequence[int] | None, padding: Any,
                  W_init: Initializer | None, b_init: Initializer) -> Layer:
  """A (transposed) convolution layer; the two differ only in the lax function applied and
  in the output size it gives."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  layer = "GeneralConvTranspose" if transpose else "GeneralConv"
  spatial = [c for c in rhs_spec if c not in "OI"]
  filter_shape = tuple(filter_shape)
  if len(filter_shape) != len(spatial):
    raise ValueError(f"{layer}: filter_shape {filter_shape} must have one size per spatial "
                     f"dimension of the kernel spec {rhs_spec!r} ({len(spatial)}).")
  one = (1,) * len(filter_shape)
  strides = tuple(strides) if strides else one
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    _check_rank(layer, input_shape, len(lhs_spec), lhs_spec)
    sizes = dict(zip(spatial, filter_shape), O=out_chan, I=input_shape[lhs_spec.index("C")])
    kernel_shape = tuple(sizes[c] for c in rhs_spec)
    in_sizes = [input_shape[lhs_spec.index(c)] for c in spatial]
    if transpose:
      pads = [padding] * len(spatial) if isinstance(padding, str) else padding
      out_sizes = map(_conv_transpose_spatial_size, in_sizes, filter_shape, strides, pads)
    else:
      pads = (lax.padtype_to_pads(in_sizes, filter_shape, strides, padding)
              if isinstance(padding, str) else padding)
      out_sizes = map(_windowed_size, in_sizes, filter_shape, strides, pads)
    out_dims = dict(zip(spatial, out_sizes), N=input_shape[lhs_spec.index("N")], C=out_chan)
    output_shape = tuple(out_dims[c] for c in out_spec)
    bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
    k_w, k_b = random.split(rng)
    return output_shape, (W_init(k_w, kernel_shape), b_init(k_b, bias_shape))

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    W, b = params
    if transpose:
      out = lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)
    else:
      out = lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                     dimension_numbers=dimension_numbers)
    return out + b
  return init_fun, apply_fun


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                padding: Any = "VALID", W_init: Initializer | None = None,
                b_init: Initializer = normal(1e-6)) -> Layer:
  """A convolution layer with layouts given as strings, e.g. `('NHWC', 'HWIO', 'NHWC')`.

  The kernel gets `out_chan` output features and the input's features; `filter_shape` gives
  its spatial sizes in the order of the kernel spec. The default kernel initializer is
  Glorot-normal with fan-in/out read from the kernel spec; the bias is nearly zero.
  """
  return _general_conv(False, dimension_numbers, out_chan, filter_shape, strides, padding,
                       W_init, b_init)


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                         padding: Any = "VALID", W_init: Initializer | None = None,
                         b_init: Initializer = normal(1e-6)) -> Layer:
  """A transposed-convolution layer (`lax.conv_transpose`), which upsamples by `strides`;
  arguments as for `GeneralConv`."""
  return _general_conv(True, dimension_numbers, out_chan, filter_shape, strides, padding,
                       W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))


# ----------------------------------------------------------------------------- normalization

def BatchNorm(axis: int | Sequence[int] = (0, 1, 2), epsilon: float = 1e-5,
              center: bool = True, scale: bool = True, beta_init: Initializer = zeros,
              gamma_init: Initializer = ones) -> Layer:
  """Standardizes inputs over the batch axes `axis` (by default N, H and W of NHWC), then
  applies a learned scale `gamma` and offset `beta` with one entry per remaining position.

  It uses the statistics of the batch being applied: there are no running averages (the
  layer keeps no state), as in JAX's stax. A disabled `center`/`scale` leaves `()` in place
  of its parameter so the params pytree keeps its shape.
  """
  axes = (axis,) if jnp.isscalar(axis) else tuple(axis)

  def normalized_axes(ndim: int) -> tuple[int, ...]:
    for a in axes:
      if not -ndim <= a < ndim:
        raise ValueError(f"BatchNorm axis {a} is out of range for inputs of rank {ndim}.")
    return tuple(a % ndim for a in axes)

  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    reduced = normalized_axes(len(input_shape))
    shape = tuple(d for i, d in enumerate(input_shape) if i not in reduced)
    k_beta, k_gamma = random.split(rng)
    beta = beta_init(k_beta, shape) if center else ()
    gamma = gamma_init(k_gamma, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params: Any, x: Any, **kwargs: Any) -> Any:
    beta, gamma = params
    reduced = normalized_axes(jnp.ndim(x))
    z = standardize(x, reduced, epsilon=epsilon)
    # The parameters lack the reduced axes; indexing with None puts them back as size 1.
    broadcast = tuple(None if i in reduced else slice(None) for i in range(jnp.ndim(x)))
    if scale:
      z = gamma[broadcast] * z
    if center:
      z = z + beta[broadcast]
    return z
  return init_fun, apply_fun


# ----------------------------------------------------------------------------- elementwise

def elementwise(fun: Callable[..., Any], **fun_kwargs: Any) -> Layer:
  """A parameterless layer applying `fun(inputs, **fun_kwargs)`."""
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    return input_shape, ()

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
Log = elementwise(jnp.log)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# ----------------------------------------------------------------------------- pooling

def _window_counts(spatial_shape: Sequence[int], window: Sequence[int],
                   strides: Sequence[int], padding: str) -> np.ndarray:
  """How many real (unpadded) inputs each pooling window covers, per output position.

  Windows are boxes, so the count is the product of one count per spatial dimension; it
  is known when tracing, which makes average pooling one division by a constant.
  """
  pads = lax.padtype_to_pads(spatial_shape, window, strides, padding)
  per_dim = []
  for size, w, s, pad in zip(spatial_shape, window, strides, pads):
    starts = np.arange(_windowed_size(size, w, s, pad)) * s - pad[0]
    per_dim.append(np.minimum(starts + w, size) - np.maximum(starts, 0))
  return functools.reduce(np.multiply.outer, per_dim, np.array(1))


def _pooling_layer(name: str, reducer: Callable[[Any, Any], Any], init_val: float,
                   average: bool = False) -> Callable[..., Layer]:
  def PoolingLayer(window_shape: Sequence[int], strides: Sequence[int] | None = None,
                   padding: str = "VALID", spec: str | None = None) -> Layer:
    window_shape = tuple(window_shape)
    strides = tuple(strides) if strides else (1,) * len(window_shape)
    rank = len(window_shape) + 2
    if spec is not None and len(spec) != rank:
      raise ValueError(f"{name}: spec {spec!r} must name {rank} dimensions, for a window "
                       f"shape {window_shape} with batch and feature dimensions.")
    non_spatial = (0, rank - 1) if spec is None else (spec.index("N"), spec.index("C"))
    full_window, full_strides = window_shape, strides
    for i in sorted(non_spatial):  # batch and features are pooled over windows of one
      full_window = full_window[:i] + (1,) + full_window[i:]
      full_strides = full_strides[:i] + (1,) + full_strides[i:]

    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
      _check_rank(name, input_shape, rank, spec or "N...C")
      pads = lax.padtype_to_pads(input_shape, full_window, full_strides, padding)
      sizes = map(_windowed_size, input_shape, full_window, full_strides, pads)
      # Batch and features pass through, so an unknown (-1) batch stays unknown; JAX's
      # arithmetic clamps it to 0.
      return tuple(d if i in non_spatial else size
                   for i, (d, size) in enumerate(zip(input_shape, sizes))), ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
      out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides, padding)
      if not average:
        return out
      if padding.upper() == "VALID":
        return out / math.prod(window_shape)
      spatial_shape = [d for i, d in enumerate(inputs.shape) if i not in non_spatial]
      counts = _window_counts(spatial_shape, window_shape, strides, padding)
      return out / jnp.asarray(np.expand_dims(counts, sorted(non_spatial)), inputs.dtype)
    return init_fun, apply_fun
  PoolingLayer.__name__ = PoolingLayer.__qualname__ = name
  PoolingLayer.__doc__ = (
      f"{name} over windows of `window_shape` (spatial dimensions only) stepping by "
      "`strides`, with 'VALID' or 'SAME' padding; `spec` (e.g. 'NCHW') places the batch and "
      "feature dimensions, which default to first and last.")
  return PoolingLayer


MaxPool = _pooling_layer("MaxPool", lax.max, -np.inf)
SumPool = _pooling_layer("SumPool", lax.add, 0.0)
# The average divides by the number of real inputs a window covers: padding is not counted.
AvgPool = _pooling_layer("AvgPool", lax.add, 0.0, average=True)


# ----------------------------------------------------------------------------- shape, fan

def _flatten() -> Layer:
  """Flattens all but the leading (batch) dimension."""
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    return (input_shape[0], math.prod(input_shape[1:])), ()

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return jnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


Flatten = _flatten()
Identity = elementwise(lambda x: x)


def FanOut(num: int) -> Layer:
  """Passes its input on as a list of `num` copies, for `parallel` branches."""
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    return [input_shape] * num, ()

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return [inputs] * num
  return init_fun, apply_fun


def _fan_in_sum() -> Layer:
  """Sums a list of inputs of one shape (a residual connection's join)."""
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    return input_shape[0], ()

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return sum(inputs)
  return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis: int = -1) -> Layer:
  """Concatenates a list of inputs along `axis`."""
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    first = tuple(input_shape[0])
    ax = axis % len(first)
    size = sum(shape[ax] for shape in input_shape)
    return first[:ax] + (size,) + first[ax + 1:], ()

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return jnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
  """Dropout in mode 'train'; any other mode passes inputs through.

  As in JAX's stax, `rate` is the probability of *keeping* an input: kept inputs are scaled
  by 1 / rate so the expected output equals the input. The key comes as `rng`.
  """
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    return input_shape, ()

  def apply_fun(params: Any, inputs: Any, rng: Any = None, **kwargs: Any) -> Any:
    if mode != "train":
      return inputs
    if rng is None:
      raise ValueError("Dropout in 'train' mode needs a PRNG key: call its apply_fun as "
                       "apply_fun(params, inputs, rng=key), e.g. with key = "
                       "jaxon.random.PRNGKey(0).")
    keep = random.bernoulli(rng, rate, inputs.shape)
    return jnp.where(keep, inputs / rate, 0)
  return init_fun, apply_fun


# ----------------------------------------------------------------------------- combinators

def _split_or_none(rng: Any, num: int) -> Any:
  return (None,) * num if rng is None else random.split(rng, num)


def serial(*layers: Layer) -> Layer:
  """Composes layers one after another; the params are a list with one entry per layer.

  `init_fun` splits its key before each layer (keeping one half for the rest) and
  `apply_fun` splits an `rng` keyword into one key per layer; other keywords go to every
  layer.
  """
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, layer_params = init(layer_rng, input_shape)
      params.append(layer_params)
    return input_shape, params

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    rngs = _split_or_none(kwargs.pop("rng", None), len(layers))
    for apply, layer_params, layer_rng in zip(apply_funs, params, rngs):
      inputs = apply(layer_params, inputs, rng=layer_rng, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
  """Applies layer i to input i of a sequence (often after `FanOut`, before `FanInSum` or
  `FanInConcat`); shapes, params and outputs are sequences with one entry per layer."""
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    if len(input_shape) != len(layers):
      raise ValueError(f"parallel of {len(layers)} layers needs {len(layers)} input shapes, "
                       f"got {len(input_shape)}: {input_shape}.")
    results = [init(key, shape)
               for init, key, shape in zip(init_funs, random.split(rng, len(layers)),
                                           input_shape)]
    return tuple(r[0] for r in results), tuple(r[1] for r in results)

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    rngs = _split_or_none(kwargs.pop("rng", None), len(layers))
    return [apply(p, x, rng=r, **kwargs)
            for apply, p, x, r in zip(apply_funs, params, inputs, rngs)]
  return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Shape], Layer]) -> Layer:
  """A layer built by `make_layer(input_shape)` once the input shape is known: at init from
  the given shape, at apply from the inputs' shape."""
  def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun
