"""jaxon.image: resampling images with separable kernels.

Every method except nearest-neighbour is a linear map along each resized axis: output pixel
`o` of an axis of length `n` samples the input (length `m`) at the half-pixel-centred
position `(o + 0.5) / scale - translation / scale - 0.5` and mixes input pixels `i` with
weights `kernel(|position - i| / kernel_scale)`. So each axis gets an (m, n) weight matrix,
and the image is contracted with one matrix per axis; jit, grad and vmap then need nothing
special. When shrinking with `antialias`, the kernel is widened by 1/scale (so every input
pixel contributes) — the behaviour of TensorFlow's `scale_and_translate` that JAX follows.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src.api import jit
from jaxon._src.lax.dot_general import Precision
from jaxon._src.lax.utils import canonicalize_axis, canonicalize_shape
from jaxon._src.numpy.util import promote_args_inexact

# A column of weights whose sum is below this is treated as "no input pixel in reach".
_MIN_WEIGHT_SUM = 1000.0 * float(np.finfo(np.float32).eps)


class ResizeMethod(enum.Enum):
  """How `resize` and `scale_and_translate` interpolate between input pixels.

  NEAREST: the input pixel whose centre is nearest (resize only).
  LINEAR: the triangle kernel of radius 1 (bilinear, trilinear, ...).
  LANCZOS3, LANCZOS5: the Lanczos windowed sinc of radius 3 or 5.
  CUBIC: Keys' cubic kernel (a = -0.5), radius 2.
  CUBIC_PYTORCH: the a = -0.75 cubic of OpenCV/PyTorch with edge pixels repeated; with
    antialias it is CUBIC, as in JAX.
  AREA: each output pixel averages the input it covers (a box filter when enlarging).
  """
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str) -> ResizeMethod:
    """The method a name like 'bilinear' or 'lanczos3' stands for (JAX's spellings)."""
    try:
      return _METHOD_NAMES[s]
    except (KeyError, TypeError):
      raise ValueError(f'Unknown resize method "{s}"') from None


_METHOD_NAMES = {
    "nearest": ResizeMethod.NEAREST,
    **dict.fromkeys(["linear", "bilinear", "trilinear", "triangle"], ResizeMethod.LINEAR),
    "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5,
    **dict.fromkeys(["cubic", "bicubic", "tricubic"], ResizeMethod.CUBIC),
    **dict.fromkeys(["cubic-pytorch", "bicubic-pytorch"], ResizeMethod.CUBIC_PYTORCH),
    "area": ResizeMethod.AREA,
}


# Kernels take non-negative distances |position - pixel| (already divided by the kernel scale).

def _triangle(x: Any) -> Any:
  return jnp.maximum(0, 1 - x)


def _cubic(a: float) -> Callable[[Any], Any]:
  """The cubic convolution kernel with free parameter `a` (Keys: -0.5; OpenCV: -0.75)."""
  def kernel(x: Any) -> Any:
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return jnp.where(x >= 2, 0.0, jnp.where(x >= 1, far, near))
  return kernel


def _lanczos(radius: float) -> Callable[[Any], Any]:
  """sinc(x) sinc(x / radius) on |x| <= radius; near 0 the quotient is replaced by its
  limit 1 (the division would lose all precision there)."""
  def kernel(x: Any) -> Any:
    numerator = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
    safe_x = jnp.where(x > 1e-3, x, 1.0)
    value = jnp.where(x > 1e-3, numerator / (np.pi ** 2 * safe_x * safe_x), 1.0)
    return jnp.where(x > radius, 0.0, value)
  return kernel


_AREA = "area"  # marks the area method, whose weights are interval overlaps, not a kernel

# method -> (kernel radius, kernel)
_KERNELS: dict[ResizeMethod, tuple[int, Any]] = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalize_columns(weights: Any) -> Any:
  """Each output pixel's weights summing to 1; all-zero where nothing is in reach."""
  total = jnp.sum(weights, axis=0, keepdims=True)
  reachable = jnp.abs(total) > _MIN_WEIGHT_SUM
  return jnp.where(reachable, weights / jnp.where(total != 0, total, 1), 0)


def _fold_edges(weights: Any, pad: int, in_size: int) -> Any:
  """Rows of the `pad` virtual pixels beyond each edge added onto the edge pixel they
  repeat: a product with a constant 0/1 matrix (exact at HIGHEST precision)."""
  if pad == 0:
    return weights
  virtual = np.arange(-pad, in_size + pad)
  fold = np.zeros((in_size, virtual.size), weights.dtype)
  fold[np.clip(virtual, 0, in_size - 1), np.arange(virtual.size)] = 1
  return jnp.matmul(fold, weights, precision=Precision.HIGHEST)


def _weight_matrix(in_size: int, out_size: int, scale: Any, translation: Any,
                   method: ResizeMethod, antialias: bool) -> Any:
  """The (in_size, out_size) matrix mapping one axis of the input to the output."""
  radius, kernel = _KERNELS[method]
  dtype = jnp.result_type(scale, translation)
  inv_scale = 1.0 / scale
  out_pos = jnp.arange(out_size, dtype=dtype)
  sample = (out_pos + 0.5) * inv_scale - translation * inv_scale - 0.5
  if kernel is _AREA:  # overlap of output cell [l, l + 1/scale) with input cell [i, i + 1)
    left = out_pos * inv_scale - translation * inv_scale
    pixels = jnp.arange(in_size, dtype=dtype)[:, None]
    overlap = (jnp.minimum(left[None] + inv_scale, pixels + 1)
               - jnp.maximum(left[None], pixels))
    return _zero_outside(_normalize_columns(jnp.maximum(0.0, overlap)), sample, in_size)
  # CUBIC_PYTORCH reaches here only without antialias (with it, it is CUBIC), so the
  # kernel reaches `radius` virtual pixels beyond each edge.
  edge_padding = method == ResizeMethod.CUBIC_PYTORCH
  pad = radius if edge_padding else 0
  pixels = jnp.arange(-pad, in_size + pad, dtype=dtype)[:, None]
  kernel_scale = jnp.maximum(inv_scale, 1.0) if antialias else 1.0
  weights = kernel(jnp.abs(sample[None] - pixels) / kernel_scale)
  if edge_padding:  # edge pixels repeat forever: every output pixel has inputs in reach
    return _normalize_columns(_fold_edges(weights, pad, in_size))
  return _zero_outside(_normalize_columns(weights), sample, in_size)


def _zero_outside(weights: Any, sample: Any, in_size: int) -> Any:
  """Output pixels sampling outside the input (beyond half a pixel) get no weight."""
  inside = (sample >= -0.5) & (sample <= in_size - 0.5)
  return jnp.where(inside[None], weights, 0)


def _resample(image: Any, shape: tuple[int, ...], spatial_dims: Sequence[int],
              scale: Sequence[Any], translation: Sequence[Any], method: ResizeMethod,
              antialias: bool, precision: Any) -> Any:
  """Contracts each axis in `spatial_dims` with its weight matrix, in one `einsum` as JAX
  does: its contraction order is JAX's, and so are the products XLA runs (contracting one
  axis after another, each moved back into place, took 1.8 times JAX's time)."""
  in_indices = list(range(image.ndim))
  out_indices = list(in_indices)
  contractions: list[Any] = []
  for i, d in enumerate(spatial_dims):
    d = canonicalize_axis(d, image.ndim, "spatial_dims entry")
    weights = _weight_matrix(image.shape[d], shape[d], scale[i], translation[i], method,
                             antialias).astype(image.dtype)
    contractions += [weights, [d, image.ndim + i]]
    out_indices[d] = image.ndim + i
  if not contractions:
    return image
  return jnp.einsum(image, in_indices, *contractions, out_indices, precision=precision)


def _method(method: str | ResizeMethod) -> ResizeMethod:
  if isinstance(method, ResizeMethod):
    return method
  return ResizeMethod.from_string(method)


def _check_rank(shape: tuple[int, ...], image: Any) -> None:
  if len(shape) != image.ndim:
    raise ValueError("shape must have length equal to the number of dimensions of x; "
                     f" {shape} vs {image.shape}")


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int],
                        scale: Any, translation: Any, method: str | ResizeMethod,
                        antialias: bool = True,
                        precision: Any = Precision.HIGHEST) -> Any:
  """Resamples `image` so that input location x lands at `x * scale + translation`.

  Pixel centres sit at half-integers; output pixels that map outside the input are 0.
  `scale` and `translation` may be traced (one entry per axis of `spatial_dims`), so the
  warp can be learned. With `scale = (n - 1) / (m - 1)` and
  `translation = 0.5 * (1 - scale)` this reproduces PyTorch's `align_corners=True`.

  Args:
    image: the input array.
    shape: the output shape, one entry per dimension of `image`.
    spatial_dims: the K dimensions the warp applies to.
    scale: K scale factors.
    translation: K translations (in output pixels).
    method: a `ResizeMethod` or its name; every method but NEAREST.
    antialias: widen the kernel when shrinking, so every input pixel contributes.
    precision: precision of the contractions.

  Returns:
    The resampled image, promoted to an inexact dtype.
  """
  shape = canonicalize_shape(shape, "of scale_and_translate")
  _check_rank(shape, image)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  if len(spatial_dims) != len(scale) or len(spatial_dims) != len(translation):
    raise ValueError(f"scale_and_translate needs one scale and one translation per spatial "
                     f"dimension; got spatial_dims={tuple(spatial_dims)}, "
                     f"{len(scale)} scales and {len(translation)} translations.")
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  image, = promote_args_inexact("scale_and_translate", image)
  scale, translation = promote_args_inexact("scale_and_translate", scale, translation)
  return _resample(image, shape, spatial_dims, scale, translation, method, antialias,
                   precision)


def _resize_nearest(image: Any, shape: tuple[int, ...]) -> Any:
  """Output pixel o takes input pixel floor((o + 0.5) * m / n), computed in float32 as
  JAX does (so ties fall the same way)."""
  for d, (m, n) in enumerate(zip(image.shape, shape)):
    if m == n:
      continue
    source = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m)
    source = np.floor(source / np.float32(n)).astype(np.int32)
    image = jnp.take(image, source, axis=d)
  return image


@jit(static_argnums=(1, 2, 3, 4))
def _resize(image: Any, shape: tuple[int, ...], method: ResizeMethod, antialias: bool,
            precision: Any) -> Any:
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  image, = promote_args_inexact("resize", image)
  spatial_dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
  scale = [shape[d] / image.shape[d] if shape[d] else 1.0 for d in spatial_dims]
  return _resample(image, shape, spatial_dims, scale, [0.0] * len(spatial_dims), method,
                   antialias, precision)


def resize(image: Any, shape: Sequence[int], method: str | ResizeMethod,
           antialias: bool = True, precision: Any = Precision.HIGHEST) -> Any:
  """Resizes `image` to `shape` (every dimension; leave batch and channel sizes as they are).

  Args:
    image: the input array.
    shape: the output shape, one entry per dimension of `image`.
    method: a `ResizeMethod` or a name: 'nearest', 'linear' ('bilinear', 'trilinear',
      'triangle'), 'cubic' ('bicubic', 'tricubic'), 'cubic-pytorch', 'lanczos3',
      'lanczos5', 'area'.
    antialias: widen the kernel when shrinking (ignored by 'nearest').
    precision: precision of the contractions (ignored by 'nearest').

  Returns:
    The resized image: the input dtype for 'nearest', else promoted to inexact.

  Example:
    >>> resize(jnp.arange(4.0).reshape(2, 2), (4, 4), "nearest").shape
    (4, 4)
  """
  shape = canonicalize_shape(shape, "of resize")
  _check_rank(shape, image)
  return _resize(image, shape, _method(method), antialias, precision)
