"""`jnp.pad`: every NumPy padding mode ('constant', 'edge', 'wrap', 'reflect', 'symmetric',
'linear_ramp', the statistics 'maximum', 'minimum', 'mean', 'median', and 'empty'), one
axis at a time, with the lax shape primitives.

Pad widths, statistic lengths and per-axis option pairs decide the shapes of the results, so
they must be static; a scalar `constant_values` or `end_values` may be traced. An eager pad
with static options compiles whole, as JAX's `_pad` is jitted.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import api, core, dtypes
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.numpy import reductions
from jaxon._src.numpy.shape import _ensure_array, _size_along, _static_ints, tile
from jaxon._src.xla.eager_plans import memoize_eager_operations

_STAT_MODES = ("maximum", "minimum", "mean", "median")
_PAD_KWARGS = {"constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "linear_ramp": {"end_values"}, **{m: {"stat_length"} for m in _STAT_MODES}}


@memoize_eager_operations
def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
  """Pads `array` with `pad_width` elements before and after each axis, as `numpy.pad`.

  `pad_width` is an int, a `(before, after)` pair, or one pair per axis. Modes:
    'constant': `constant_values` (a scalar or per-axis `(before, after)` values; default 0).
    'empty': zeros (NumPy leaves them undefined).
    'edge': repeats the edge element.
    'wrap': periodic.
    'reflect' / 'symmetric': mirror without / with repeating the edge; with
      `reflect_type='odd'` the mirror image is taken through the edge value (2 edge - x).
    'linear_ramp': runs linearly from `end_values` (default 0, same forms as
      `constant_values`) at the outer end to the edge element.
    'maximum', 'minimum', 'mean', 'median': the statistic of the `stat_length` elements
      nearest each end (an int, pair or per-axis pairs; default None, the whole axis).
      Integer arrays round the mean and median to the nearest even integer, as NumPy does.

  Axes are padded in order, so the corners of later axes use the padding of earlier ones.

  Example: `jnp.pad(jnp.array([1, 2, 3]), (2, 1), mode='reflect')` is `[3, 2, 1, 2, 3, 2]`.
  """
  array = _ensure_array("pad", array)
  widths = _pad_widths(pad_width, array.ndim)
  if callable(mode):
    raise NotImplementedError("jnp.pad: a callable mode is not supported; pass one of "
                              f"{', '.join(sorted(_PAD_KWARGS))}.")
  if mode not in _PAD_KWARGS:
    raise NotImplementedError(f"jnp.pad: mode {mode!r} is not supported; supported modes "
                              f"are {', '.join(sorted(_PAD_KWARGS))}.")
  unexpected = set(kwargs) - _PAD_KWARGS[mode]
  if unexpected:
    raise ValueError(f"jnp.pad: unsupported keyword arguments for mode {mode!r}: "
                     f"{sorted(unexpected)}.")
  if mode in ("constant", "empty"):
    return _pad_constant(array, widths, kwargs.get("constant_values", 0))
  if any(n == 0 and any(w) for n, w in zip(array.shape, widths)):
    axis = next(i for i, (n, w) in enumerate(zip(array.shape, widths)) if n == 0 and any(w))
    raise ValueError(f"jnp.pad: can't extend empty axis {axis} using modes other than "
                     f"'constant' or 'empty' (mode {mode!r}, shape {array.shape}).")
  if math.prod(array.shape) == 0:
    return _pad_constant(array, widths, 0)  # nothing to read the padding from, and no room
  options = _static_options(kwargs)
  if options is not None and core.is_eval_trace_current():
    return _pad_as_one_program(array, tuple(widths), mode, options)
  return _pad_axes(array, widths, mode, kwargs)


def _pad_axes(array: Any, widths: Sequence[tuple[int, int]], mode: str,
              kwargs: dict[str, Any]) -> Any:
  pad_axis = _axis_padder(array, mode, kwargs)
  for axis, (before, after) in enumerate(widths):
    array = pad_axis(array, axis, before, after)
  return array


@functools.partial(api.jit, static_argnums=(1, 2, 3))
def _pad_as_one_program(array: Any, widths: tuple[tuple[int, int], ...], mode: str,
                        options: tuple[tuple[str, Any], ...]) -> Any:
  """An eager pad, compiled whole as JAX's `_pad` is: XLA then fuses a ramp's float
  multiply-add as in JAX, and an integer ramp floors as JAX's does (op by op, jaxon keeps
  them apart, and a value just below an integer could floor differently)."""
  return _pad_axes(array, widths, mode, dict(options))


def _static_options(kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
  """The mode's options as a hashable tuple of Python values (NumPy arrays as nested
  tuples), or None if one is not concrete."""
  options = []
  for name, value in sorted(kwargs.items()):
    try:
      value = np.asarray(value).tolist() if not isinstance(value, (str, type(None))) else value
    except Exception:  # a tracer
      return None
    options.append((name, _nested_tuple(value)))
  return tuple(options)


def _nested_tuple(value: Any) -> Any:
  return tuple(map(_nested_tuple, value)) if isinstance(value, list) else value


def _pad_widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
  """One (before, after) pair per axis, broadcast as NumPy does."""
  widths = _static_ints("pad", "pad_width", pad_width)
  if np.any(widths < 0):
    raise ValueError(f"jnp.pad: pad_width can't contain negative values, got {pad_width!r}.")
  return _pairs(widths, ndim, "pad_width", pad_width)


def _pairs(values: np.ndarray, ndim: int, what: str, given: Any) -> list[tuple[Any, Any]]:
  """A scalar, a (before, after) pair or one pair per axis, as one pair per axis."""
  try:
    pairs = np.broadcast_to(values, (ndim, 2))
  except ValueError:
    raise ValueError(f"jnp.pad: {what} {given!r} does not broadcast to one (before, after) "
                     f"pair for each of the {ndim} axes.") from None
  return [(pair[0].item(), pair[1].item()) for pair in pairs]


def _pad_constant(array: Any, widths: list[tuple[int, int]], constant_values: Any) -> Any:
  if np.ndim(constant_values) == 0:
    value = lax._convert_element_type(constant_values, array.dtype, array.weak_type)
    return shape_ops.pad(array, value, [(b, a, 0) for b, a in widths])
  values = _per_axis_values(array, constant_values, "constant_values")
  for axis, ((before, after), (v_before, v_after)) in enumerate(zip(widths, values)):
    for lo, hi, v in ((before, 0, v_before), (0, after, v_after)):
      config = [(0, 0, 0)] * array.ndim
      config[axis] = (lo, hi, 0)
      array = shape_ops.pad(array, lax._convert_element_type(v, array.dtype,
                                                             array.weak_type), config)
  return array


def _per_axis_values(array: Any, values: Any, what: str) -> list[tuple[Any, Any]]:
  """`values` (a scalar, possibly traced, or static pairs) as one (before, after) pair per
  axis."""
  if np.ndim(values) == 0:
    return [(values, values)] * array.ndim
  static = core.concrete_or_error(
      np.asarray, values, f"jnp.pad: per-axis {what} must be static; a traced value is "
      "supported as a scalar.")
  return _pairs(static, array.ndim, what, values)


def _axis_padder(array: Any, mode: str, kwargs: dict[str, Any]) -> Callable[..., Any]:
  """The function `(x, axis, before, after) -> padded x` of `mode`, its options bound."""
  if mode in ("reflect", "symmetric"):
    odd = _reflect_type(array, kwargs.get("reflect_type", "even"))
    return lambda x, axis, before, after: _pad_periodic(x, axis, before, after, mode, odd)
  if mode == "wrap":
    return lambda x, axis, before, after: _pad_periodic(x, axis, before, after, mode, False)
  if mode == "edge":
    return lambda x, axis, before, after: _pad_with(x, axis, before, after, _edges(x, axis))
  if mode == "linear_ramp":
    ends = _per_axis_values(array, kwargs.get("end_values", 0), "end_values")
    return lambda x, axis, before, after: _pad_linear_ramp(x, axis, before, after, ends[axis])
  lengths = _stat_lengths(kwargs.get("stat_length"), array.ndim)

  def pad_stat(x: Any, axis: int, before: int, after: int) -> Any:
    if before == after == 0:
      return x
    return _pad_with(x, axis, before, after, _stats(x, axis, lengths[axis], mode))
  return pad_stat


def _reflect_type(array: Any, reflect_type: str) -> bool:
  """Whether `reflect_type` asks for odd reflection."""
  if reflect_type not in ("even", "odd"):
    raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}.")
  if reflect_type == "odd" and array.dtype == np.bool_:
    raise TypeError("jnp.pad: reflect_type='odd' computes 2 * edge - x, which booleans "
                    "don't support; convert the array to an integer type first.")
  return reflect_type == "odd"


def _edges(x: Any, axis: int) -> tuple[Any, Any]:
  """The first and last elements along `axis`, keeping it (size 1)."""
  n = x.shape[axis]
  return slicing.slice_in_dim(x, 0, 1, axis=axis), slicing.slice_in_dim(x, n - 1, n, axis=axis)


def _pad_with(x: Any, axis: int, before: int, after: int, fills: tuple[Any, Any]) -> Any:
  """`x` between `before` copies of fills[0] and `after` copies of fills[1] (each of size 1
  along `axis`)."""
  if before == after == 0:
    return x
  parts = [_size_along(fills[0], before, axis), x, _size_along(fills[1], after, axis)]
  return shape_ops.concatenate(parts, axis)


def _pad_periodic(x: Any, axis: int, before: int, after: int, mode: str, odd: bool) -> Any:
  """'wrap', 'reflect' and 'symmetric': the padded axis repeats a period (x and its mirror
  image for the mirroring modes). An odd mirror image (2 edge - x) also shifts each period
  by twice the rise from the first to the last element, as repeating the odd reflection
  about each new edge does."""
  n = x.shape[axis]
  if before == after == 0:
    return x
  if mode == "reflect" and n == 1:
    return _pad_with(x, axis, before, after, (x, x))
  first, last = _edges(x, axis) if odd else (None, None)
  # the mirror image's entry i is x[mirror_end - i]; 'reflect' leaves out both edges
  mirror_end, mirror_size = {"wrap": (0, 0), "symmetric": (n - 1, n),
                             "reflect": (n - 2, n - 2)}[mode]
  m = n + mirror_size

  def mirrored(start: int, stop: int) -> Any:
    """Entries start..stop of the mirror image: x[mirror_end - i] for each i."""
    part = shape_ops.rev(slicing.slice_in_dim(x, mirror_end + 1 - stop, mirror_end + 1 - start,
                                              axis=axis), (axis,))
    return lax.sub(lax.add(last, last), part) if odd else part

  if before + after <= 2 * m:
    out = shape_ops.concatenate(
        [mirrored(a, b) if in_mirror else slicing.slice_in_dim(x, a, b, axis=axis)
         for in_mirror, a, b in _period_runs(-before, n + after, n, m)], axis)
  else:  # many periods: tile one, and slice the padded range out of the tiles
    period = shape_ops.concatenate([x, mirrored(0, m - n)], axis) if m > n else x
    reps_before = -(-before // m)
    reps = [1] * x.ndim
    reps[axis] = reps_before - (-(n + after) // m)
    start = reps_before * m - before
    out = slicing.slice_in_dim(tile(period, reps), start, start + before + n + after, axis=axis)
  if not odd:
    return out
  shift = lax.sub(last, first)
  periods = np.arange(-before, n + after) // m
  steps = lax.broadcast_in_dim(periods.astype(x.dtype) * 2, out.shape, (axis,))
  return lax.add(out, lax.mul(steps, _size_along(shift, out.shape[axis], axis)))


def _period_runs(lo: int, hi: int, n: int, m: int) -> list[tuple[bool, int, int]]:
  """Positions lo..hi of a sequence of period m, whose first n entries are x and the rest its
  mirror image, as runs (in the mirror image?, start, stop) within x or the mirror image. A
  narrow pad is then a few slices, as JAX's: tiling a whole period and slicing it out costs
  2.5x as much in a compiled program."""
  runs = []
  while lo < hi:
    offset = lo % m
    in_mirror = offset >= n
    start = offset - n if in_mirror else offset
    stop = min((m - n) if in_mirror else n, start + hi - lo)
    runs.append((in_mirror, start, stop))
    lo += stop - start
  return runs


def _pad_linear_ramp(x: Any, axis: int, before: int, after: int, ends: tuple[Any, Any]
                     ) -> Any:
  """Ramps from each end value to the edge element, excluding the edge: NumPy's
  `linspace(end, edge, width, endpoint=False)`, floored for integer arrays."""
  compute = x.dtype if dtypes.is_inexact(x.dtype) else dtypes.default_float_dtype()
  ramps = []
  for edge, end, width, towards_edge in zip(_edges(x, axis), ends, (before, after),
                                            (True, False)):
    end = lax._convert_element_type(end, compute)
    step = lax.div(lax.sub(lax._convert_element_type(edge, compute), end),
                   lax._convert_element_type(max(width, 1), compute))
    index = np.arange(width) if towards_edge else np.arange(width - 1, -1, -1)
    shape = list(x.shape)
    shape[axis] = width
    ramp = lax.add(lax.mul(lax.broadcast_in_dim(index.astype(compute), shape, (axis,)),
                           _size_along(step, width, axis)), end)
    if dtypes.is_integer(x.dtype):
      ramp = lax.floor(ramp)
    ramps.append(lax._convert_element_type(ramp, x.dtype, x.weak_type))
  return shape_ops.concatenate([ramps[0], x, ramps[1]], axis)


def _stat_lengths(stat_length: Any, ndim: int) -> list[tuple[int | None, int | None]]:
  if stat_length is None:
    return [(None, None)] * ndim
  lengths = _static_ints("pad", "stat_length", stat_length)
  if np.any(lengths < 0):
    raise ValueError(f"jnp.pad: stat_length can't contain negative values, got "
                     f"{stat_length!r}.")
  return _pairs(lengths, ndim, "stat_length", stat_length)


def _stats(x: Any, axis: int, lengths: tuple[int | None, int | None], mode: str
           ) -> tuple[Any, Any]:
  """The statistic of the first and of the last `lengths` elements along `axis` (all of
  them for None), size 1 along `axis`, in x's dtype (rounded to even for integers)."""
  reduce = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
            "median": reductions.median}[mode]
  n = x.shape[axis]
  lengths = tuple(n if length is None else min(length, n) for length in lengths)
  if 0 in lengths and mode in ("maximum", "minimum"):
    raise ValueError(f"jnp.pad: stat_length of 0 yields no value for padding mode {mode!r} "
                     f"(axis {axis}).")

  def stat(lo: int, hi: int) -> Any:
    value = reduce(slicing.slice_in_dim(x, lo, hi, axis=axis), axis=axis, keepdims=True)
    if not dtypes.is_inexact(x.dtype) and dtypes.is_inexact(value.dtype):
      value = lax.round(value, lax.RoundingMethod.TO_NEAREST_EVEN)
    return lax._convert_element_type(value, x.dtype, x.weak_type)
  before = stat(0, lengths[0])
  return before, (before if lengths == (n, n) else stat(n - lengths[1], n))
