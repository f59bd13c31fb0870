"""Reductions of jaxon.numpy: `sum`, `mean`, `var`, `argmax`, `quantile`, `cumsum`, their NaN-
ignoring twins, … with NumPy's `axis`, `keepdims`, `dtype`, `where` and `initial` arguments.

Dtypes follow JAX: bools and integers narrower than the default integer sum and multiply in
the default (unsigned) integer; means and variances of integers are floats; float16 and
bfloat16 accumulate in float32 and convert back; results are strongly typed, even of weakly
typed input. `out=` cannot work on immutable arrays and raises NotImplementedError. (This
module defines `sum`, `max`, `any`, …: Python's own are `builtins.sum` & co. here.)
"""
from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.lax import transcendental
from jaxon._src.lax import gather_scatter, lax, reductions, shape_ops, slicing, sorting
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy import util
from jaxon._src.xla.eager_plans import memoize_eager_operations

Axis = int | Sequence[int] | None


# ----------------------------------------------------------------------------- arguments

def _check_out(name: str, out: Any) -> None:
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported: jaxon "
                              "arrays are immutable; use the returned array instead.")


def _canonical_axes(name: str, axis: Axis, ndim: int) -> tuple[int, ...]:
  """`axis` (None, an int or a sequence; negative ones count from the end) as non-negative
  ints."""
  if axis is None:
    return tuple(range(ndim))
  axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
  result = []
  for a in axes:
    try:
      a = operator.index(a)
    except TypeError:
      raise TypeError(f"jnp.{name}: axis must be None, an int or a tuple of ints, got "
                      f"{axis!r}.") from None
    if not -ndim <= a < ndim:
      # AxisError is a ValueError and an IndexError: JAX raises the one or the other
      raise np.exceptions.AxisError(
          f"jnp.{name}: axis {a} is out of bounds for array of dimension {ndim}")
    result.append(a % ndim)
  if len(set(result)) != len(result):
    raise ValueError(f"jnp.{name}: duplicate value in 'axis': {axis}")
  return tuple(result)


def _single_axis(name: str, axis: Any, ndim: int) -> int:
  if isinstance(axis, (tuple, list)):
    raise TypeError(f"jnp.{name}: axis must be an int or None, got {axis!r}")
  return _canonical_axes(name, axis, ndim)[0]


def _reduced_size(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
  return math.prod(shape[i] for i in axes)


def _promote_integer_dtype(dtype: np.dtype) -> np.dtype:
  """NumPy's accumulator for sums and products: the default integer for bools and narrower
  signed integers, the default unsigned integer for narrower unsigned ones."""
  if dtypes.is_bool(dtype):
    return dtypes.default_int_dtype()
  if dtypes.issubdtype(dtype, np.unsignedinteger):
    default_uint = dtypes.canonicalize_dtype(np.uint64)
    return default_uint if dtype.itemsize < default_uint.itemsize else dtype
  if dtypes.is_integer(dtype) and dtype.itemsize < dtypes.default_int_dtype().itemsize:
    return dtypes.default_int_dtype()
  return dtype


def _upcast_f16(dtype: np.dtype) -> np.dtype:
  """Half-precision floats lose too much accumulating in themselves; sum in float32."""
  if np.dtype(dtype) in (np.dtype(np.float16), np.dtype(dtypes.bfloat16)):
    return np.dtype(np.float32)
  return np.dtype(dtype)


def _isnan(x: Any) -> Any:
  return lax.ne(x, x)


def _where(mask: Any, x: Any, fill: Any) -> Any:
  """`x` where `mask` (broadcast to x's shape) holds, the scalar `fill` elsewhere."""
  shape, dtype = np.shape(x), dtypes.dtype(x, canonicalize=True)
  mask = jnp_shape.broadcast_to(lax._convert_element_type(mask, np.bool_), shape)
  return lax.select_n(mask, lax.full(shape, fill, dtype), x)


def _replace_nan(x: Any, fill: Any) -> Any:
  if not dtypes.is_inexact(dtypes.dtype(x)):
    return x
  return _where(lax.bitwise_not(_isnan(x)), x, fill)


def _count(shape: tuple[int, ...], axes: tuple[int, ...], where: Any, keepdims: bool,
           dtype: Any) -> Any:
  """How many elements each reduction sees: the axes' size, or the `where` mask's count."""
  if where is None:
    # a symbolic size (shape-polymorphic export) converts as its `dim_as_value`
    return lax._convert_element_type(_reduced_size(shape, axes), dtype)
  mask = jnp_shape.broadcast_to(lax._convert_element_type(where, np.bool_), shape)
  return sum(mask, axes, dtype=dtype, keepdims=keepdims)


# ----------------------------------------------------------------------------- sum, max, all, …

class _Reducer(NamedTuple):
  """How a NumPy reduction maps onto a lax one."""
  name: str
  reduce: Callable[[Any, tuple[int, ...]], Any]
  combine: Callable[[Any, Any], Any]  # folds `initial` into the result
  identity: Callable[[np.dtype], Any]  # what elements masked out by `where` become
  has_identity: bool = True  # False: reducing nothing needs an `initial`
  promote_integers: bool = False
  upcast_f16: bool = False
  boolean: bool = False  # reduces truth values


_SUM = _Reducer("sum", reductions.reduce_sum, lax.add, lambda dt: 0, promote_integers=True,
                upcast_f16=True)
_PROD = _Reducer("prod", reductions.reduce_prod, lax.mul, lambda dt: 1,
                 promote_integers=True, upcast_f16=True)
_MAX = _Reducer("max", reductions.reduce_max, lax.max, reductions.get_max_identity,
                has_identity=False)
_MIN = _Reducer("min", reductions.reduce_min, lax.min, reductions.get_min_identity,
                has_identity=False)
_ALL = _Reducer("all", reductions.reduce_and, lax.bitwise_and, lambda dt: True, boolean=True)
_ANY = _Reducer("any", reductions.reduce_or, lax.bitwise_or, lambda dt: False, boolean=True)
_BOOLEAN_REDUCERS = {"sum": _ANY, "prod": _ALL}


def _reduce(r: _Reducer, a: Any, axis: Axis, dtype: Any, out: Any, keepdims: bool,
            initial: Any, where: Any, promote_integers: bool = True) -> Any:
  _check_out(r.name, out)
  util.check_arraylike(f"jnp.{r.name}", a)
  aval = core.get_aval(a)
  axes = _canonical_axes(r.name, axis, aval.ndim)
  if r.boolean:
    result_dtype = np.dtype(np.bool_)
  elif dtype is not None:
    result_dtype = dtypes.canonicalize_dtype(dtype)
  elif r.promote_integers and promote_integers:
    result_dtype = _promote_integer_dtype(aval.dtype)
  else:
    result_dtype = aval.dtype
  if result_dtype == np.bool_ and not r.boolean:
    r = _BOOLEAN_REDUCERS.get(r.name, r)  # a sum of truth values is whether any is true
  compute_dtype = _upcast_f16(result_dtype) if r.upcast_f16 else result_dtype
  x = lax._convert_element_type(a, compute_dtype)
  if not r.has_identity and initial is None:
    _check_reducible(r.name, aval.shape, axes, where)
  if where is not None:
    x = _where(where, x, r.identity(compute_dtype))
  result = r.reduce(x, axes)
  if initial is not None:
    if np.shape(initial) != ():
      raise ValueError(f"jnp.{r.name}: initial must be a scalar, got shape "
                       f"{np.shape(initial)}")
    result = r.combine(result, lax._convert_element_type(initial, compute_dtype))
  if keepdims:
    result = shape_ops.expand_dims(result, axes)
  return lax._convert_element_type(result, result_dtype)


def _check_reducible(name: str, shape: tuple[int, ...], axes: tuple[int, ...],
                     where: Any) -> None:
  """max/min have no identity: they need an element, or `initial`, in every reduction."""
  if where is not None:
    raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                     "where mask one has to specify 'initial'")
  if builtins.any(shape[i] == 0 for i in axes):
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                     f"(array shape {shape}, axes {axes}); pass 'initial'")


@memoize_eager_operations
def sum(a: Any, axis: Axis = None, dtype: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None, promote_integers: bool = True) -> Any:
  """Sum of the elements over `axis` (all axes if None), plus `initial` if given.

  Bools and narrow integers sum in the default integer type unless
  `promote_integers=False`; `where` (a bool array broadcasting to `a`) selects the elements
  that count. Example: `jnp.sum(jnp.array([[1, 2], [3, 4]]), axis=0)` is `[4, 6]`.
  """
  return _reduce(_SUM, a, axis, dtype, out, keepdims, initial, where, promote_integers)


@memoize_eager_operations
def prod(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, initial: Any = None, where: Any = None,
         promote_integers: bool = True) -> Any:
  """Product of the elements over `axis`, times `initial` if given (dtypes as in `sum`)."""
  return _reduce(_PROD, a, axis, dtype, out, keepdims, initial, where, promote_integers)


@memoize_eager_operations
def max(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
  """Maximum over `axis`; NaN propagates. Reducing an empty axis, or using `where`, needs
  `initial` (ValueError otherwise)."""
  return _reduce(_MAX, a, axis, None, out, keepdims, initial, where)


@memoize_eager_operations
def min(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
  """Minimum over `axis`; NaN propagates. Reducing an empty axis, or using `where`, needs
  `initial` (ValueError otherwise)."""
  return _reduce(_MIN, a, axis, None, out, keepdims, initial, where)


amax = max
amin = min


@memoize_eager_operations
def all(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
  """Whether every element over `axis` is true (nonzero; NaN counts as true)."""
  return _reduce(_ALL, a, axis, None, out, keepdims, None, where)


@memoize_eager_operations
def any(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
  """Whether any element over `axis` is true (nonzero; NaN counts as true)."""
  return _reduce(_ANY, a, axis, None, out, keepdims, None, where)


@memoize_eager_operations
def ptp(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False) -> Any:
  """Range (maximum minus minimum) over `axis`."""
  _check_out("ptp", out)
  return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


@memoize_eager_operations
def count_nonzero(a: Any, axis: Axis = None, keepdims: bool = False) -> Any:
  """Number of nonzero (true) elements over `axis`, as the default integer type."""
  util.check_arraylike("jnp.count_nonzero", a)
  return sum(lax._convert_element_type(a, np.bool_), axis, dtype=dtypes.default_int_dtype(),
             keepdims=keepdims)


# ----------------------------------------------------------------------------- argmax, argmin

@memoize_eager_operations
def argmax(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None
           ) -> Any:
  """Index of the maximum along `axis` (into the flattened array if None); the first of
  equal maxima, and the first NaN if there is one."""
  return _arg_reduce("argmax", reductions.argmax, a, axis, out, keepdims)


@memoize_eager_operations
def argmin(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None
           ) -> Any:
  """Index of the minimum along `axis` (into the flattened array if None); the first of
  equal minima, and the first NaN if there is one."""
  return _arg_reduce("argmin", reductions.argmin, a, axis, out, keepdims)


def _arg_reduce(name: str, lax_fn: Callable[..., Any], a: Any, axis: int | None, out: Any,
                keepdims: bool | None) -> Any:
  _check_out(name, out)
  util.check_arraylike(f"jnp.{name}", a)
  shape = np.shape(a)
  if axis is None:
    a, reduced = shape_ops.reshape(a, (math.prod(shape),)), 0
  else:
    reduced = _single_axis(name, axis, len(shape))
  if np.shape(a)[reduced] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence (array shape {shape})")
  result = lax_fn(a, reduced, dtypes.default_int_dtype())
  if keepdims:
    result = shape_ops.expand_dims(result, range(len(shape)) if axis is None else (reduced,))
  return result


# ----------------------------------------------------------------------------- mean, var, std

def _mean_dtypes(a_dtype: np.dtype, dtype: Any) -> tuple[np.dtype, np.dtype]:
  """(the dtype to compute in, the result dtype): integer means are floats."""
  result = (dtypes.to_inexact_dtype(a_dtype) if dtype is None
            else dtypes.canonicalize_dtype(dtype))
  return _upcast_f16(result), result


@memoize_eager_operations
def mean(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, *, where: Any = None) -> Any:
  """Arithmetic mean over `axis`; integers and bools average as the default float type.
  An empty reduction is NaN."""
  _check_out("mean", out)
  util.check_arraylike("jnp.mean", a)
  aval = core.get_aval(a)
  compute_dtype, result_dtype = _mean_dtypes(aval.dtype, dtype)
  axes = _canonical_axes("mean", axis, aval.ndim)
  total = sum(a, axes, dtype=compute_dtype, keepdims=keepdims, where=where)
  count = _count(aval.shape, axes, where, keepdims, compute_dtype)
  return lax._convert_element_type(lax.div(total, count), result_dtype)


def _check_inexact_dtype(name: str, dtype: Any, error: type[Exception]) -> None:
  """Variances are computed in `dtype`: an integer one would truncate the mean. (JAX
  computes var and nanvar in integer arithmetic then; jaxon refuses, with JAX's error for
  std.)"""
  if dtype is not None and not dtypes.is_inexact(dtypes.canonicalize_dtype(dtype)):
    raise error(f"dtype argument to jnp.{name} must be inexact; got "
                f"{np.dtype(dtype).name}. Pass a float dtype, or none for the default.")


def _var_dtypes(name: str, a_dtype: np.dtype, dtype: Any) -> tuple[np.dtype, np.dtype]:
  """(the dtype to compute in, the result dtype): the variance of complex numbers is real."""
  if dtype is not None:
    dtype = dtypes.canonicalize_dtype(dtype)
    if dtypes.is_complex(a_dtype) and not dtypes.is_complex(dtype):
      raise ValueError(f"jnp.var of complex values ({a_dtype.name}) with real dtype "
                       f"{dtype.name} is not supported; pass a complex dtype or none")
    _check_inexact_dtype(name, dtype, TypeError if dtype == np.bool_ else ValueError)
    return _upcast_f16(dtype), dtype
  if not dtypes.is_inexact(a_dtype):
    inexact = dtypes.to_inexact_dtype(a_dtype)
    return _upcast_f16(inexact), inexact
  real = np.dtype(np.finfo(a_dtype).dtype) if dtypes.is_complex(a_dtype) else a_dtype
  return _upcast_f16(a_dtype), real


def _given_mean(name: str, a_mean: Any, shape: tuple[int, ...]) -> Any:
  """A `mean=` argument, which must broadcast against `a` axis by axis (as JAX's, it is
  not broadcast NumPy's way from the right: a mean of shape (4,) for `a` of shape (3, 4)
  is refused, one of shape (1, 4) accepted)."""
  util.check_arraylike(f"jnp.{name}", a_mean)
  m_shape = np.shape(a_mean)
  if m_shape and (len(m_shape) != len(shape)
                  or builtins.any(m not in (1, d) for m, d in zip(m_shape, shape))):
    raise TypeError(f"jnp.{name}: mean of shape {m_shape} does not match a of shape {shape}: "
                    "it must be a scalar or have a's rank with sizes 1 or a's (as "
                    "mean(a, axis, keepdims=True) gives).")
  return a_mean


def _correction(name: str, ddof: int, correction: int | float | None) -> Any:
  if correction is None:
    return ddof
  if ddof != 0:
    raise ValueError(f"jnp.{name}: ddof and correction can't be provided simultaneously.")
  return correction


def _abs2(x: Any) -> Any:
  """|x|², real even for complex x."""
  if dtypes.is_complex(dtypes.dtype(x)):
    return lax.real(lax.mul(x, lax.conj(x)))
  return lax.mul(x, x)


@memoize_eager_operations
def var(a: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
  """Variance over `axis`: the mean squared deviation, dividing by N - ddof (NaN when that
  is not positive). `correction` is the array-API name of `ddof`. `mean` (NumPy 2's) is
  the mean when the caller already has it, saving its computation: a scalar or an array
  shaped as `mean(a, axis, keepdims=True)`."""
  return _variance("var", a, axis, dtype, out, _correction("var", ddof, correction), keepdims,
                   where, mean, ignore_nan=False)


@memoize_eager_operations
def std(a: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
  """Standard deviation over `axis`: the square root of `var`."""
  _check_inexact_dtype("std", dtype, ValueError)
  return transcendental.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where,
                                 mean=mean, correction=correction))


def _variance(name: str, a: Any, axis: Axis, dtype: Any, out: Any, ddof: Any,
              keepdims: bool, where: Any, a_mean: Any, ignore_nan: bool) -> Any:
  _check_out(name, out)
  util.check_arraylike(f"jnp.{name}", a)
  aval = core.get_aval(a)
  compute_dtype, result_dtype = _var_dtypes(name, aval.dtype, dtype)
  axes = _canonical_axes(name, axis, aval.ndim)
  x = lax._convert_element_type(a, compute_dtype)
  if a_mean is None:
    a_mean = (nanmean if ignore_nan else mean)(x, axes, keepdims=True, where=where)
  else:
    a_mean = lax._convert_element_type(_given_mean(name, a_mean, aval.shape), compute_dtype)
  centered = lax.sub(x, a_mean)
  if ignore_nan:
    centered = _replace_nan(centered, 0)
    where = _valid_mask(x, where)
  squares = _abs2(centered)
  real_dtype = dtypes.dtype(squares)
  count = _count(aval.shape, axes, where, keepdims, real_dtype)
  normalizer = lax.sub(count, lax._convert_element_type(ddof, real_dtype))
  result = lax.div(sum(squares, axes, keepdims=keepdims, where=where), normalizer)
  # N - ddof <= 0 is NaN (not inf or a negative variance), as in JAX
  result = _where(lax.gt(normalizer, lax._convert_element_type(0, real_dtype)), result, np.nan)
  return lax._convert_element_type(result, result_dtype)


@memoize_eager_operations
def average(a: Any, axis: Axis = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
  """Weighted mean over `axis`: sum(a * weights) / sum(weights).

  `weights` has `a`'s shape, or is 1-D with the length of the single `axis`. With
  `returned=True` the result is `(average, sum_of_weights)`, the weights broadcast to the
  average's shape.
  """
  util.check_arraylike("jnp.average", a)
  if weights is None:
    avg = mean(a, axis, keepdims=keepdims)
    ndim = np.ndim(a)
    count = _reduced_size(np.shape(a), _canonical_axes("average", axis, ndim))
    weights_sum = lax.full(np.shape(avg), count, dtypes.dtype(avg))
  else:
    a, weights = util.promote_args_inexact("jnp.average", a, weights)
    axes = _canonical_axes("average", axis, np.ndim(a))
    weights = _broadcast_weights(np.shape(a), weights, axis, axes)
    weights_sum = sum(weights, axes, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, weights), axes, keepdims=keepdims), weights_sum)
  return (avg, weights_sum) if returned else avg


def _broadcast_weights(shape: tuple[int, ...], weights: Any, axis: Axis,
                       axes: tuple[int, ...]) -> Any:
  w_shape = np.shape(weights)
  if w_shape == shape:
    return weights
  if axis is None:
    raise ValueError(f"jnp.average: axis must be specified when the shapes of a {shape} and "
                     f"weights {w_shape} differ.")
  if len(w_shape) != 1 or len(axes) != 1:
    raise ValueError(f"jnp.average: 1D weights expected when the shapes of a {shape} and "
                     f"weights {w_shape} differ (with a single axis, got {axis}).")
  if w_shape[0] != shape[axes[0]]:
    raise ValueError(f"jnp.average: length of weights {w_shape[0]} is not compatible with "
                     f"axis {axis} of a, whose shape is {shape}.")
  return lax.broadcast_in_dim(weights, shape, axes)


# ----------------------------------------------------------------------------- quantiles

_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


@memoize_eager_operations
def quantile(a: Any, q: Any, axis: Axis = None, out: None = None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
             weights: Any = None, interpolation: None = None) -> Any:
  """The `q`-th quantiles (q in [0, 1]) of `a` over `axis`, from its sorted values.

  `method` says what to do between two sorted values: 'linear' interpolates, 'lower',
  'higher' and 'nearest' pick one, 'midpoint' averages them. 'inverted_cdf' takes the
  first sorted value at which the running sum of `weights` (all ones by default) reaches
  q of their total; it is the only method that takes `weights` (as in NumPy), which have
  `a`'s shape or that of the reduced axes (in `axis`'s order). A negative or NaN weight
  makes its slice's result NaN (it cannot raise on traced weights). The result has `q`'s
  shape followed by the reduced shape; a slice containing NaN gives NaN.
  """
  return _quantile("quantile", a, q, axis, out, method, keepdims, interpolation, weights)


@memoize_eager_operations
def percentile(a: Any, q: Any, axis: Axis = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None, interpolation: None = None,
               out_sharding: Any = None) -> Any:
  """The `q`-th percentiles (q in [0, 100]) of `a` over `axis`, laid out as `out_sharding`
  if given; see `quantile`."""
  if out_sharding is not None:
    return util.out_sharded(percentile(a, q, axis, out, overwrite_input, method, keepdims,
                                       weights=weights, interpolation=interpolation),
                            out_sharding, "percentile")
  q = _percent_to_fraction("percentile", q)
  return _quantile("percentile", a, q, axis, out, method, keepdims, interpolation, weights)


def _percent_to_fraction(name: str, q: Any) -> Any:
  """q / 100, on the host in float64 when q is known: XLA may compile a division by a
  constant as a multiplication by its (rounded) reciprocal, which turns 100 / 100 into
  0.99999994 and so picks the wrong neighbour."""
  util.check_arraylike(f"jnp.{name}", q)
  if isinstance(q, core.Tracer):
    return lax.div(*util.promote_args_inexact(f"jnp.{name}", q, 100))
  dtype = dtypes.to_inexact_dtype(dtypes.dtype(q, canonicalize=True))
  return lax._convert_element_type(np.asarray(q, np.float64) / 100, dtype,
                                   dtypes.is_weakly_typed(q))


@memoize_eager_operations
def median(a: Any, axis: Axis = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
  """The median over `axis`: the middle sorted value, or the mean of the two middle ones."""
  return _quantile("median", a, 0.5, axis, out, "midpoint", keepdims, None, None)


def nanquantile(a: Any, q: Any, axis: Axis = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: Any = None,
                interpolation: None = None) -> Any:
  """`quantile` of the elements that are not NaN (NaN where a slice has none; the weights
  of NaN elements count as zero)."""
  return _quantile("nanquantile", a, q, axis, out, method, keepdims, interpolation, weights,
                   ignore_nan=True)


def nanpercentile(a: Any, q: Any, axis: Axis = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None,
                  interpolation: None = None) -> Any:
  """`percentile` of the elements that are not NaN (NaN where a slice has none)."""
  q = _percent_to_fraction("nanpercentile", q)
  return _quantile("nanpercentile", a, q, axis, out, method, keepdims, interpolation,
                   weights, ignore_nan=True)


def nanmedian(a: Any, axis: Axis = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
  """`median` of the elements that are not NaN (NaN where a slice has none)."""
  return _quantile("nanmedian", a, 0.5, axis, out, "midpoint", keepdims, None, None,
                   ignore_nan=True)


def _quantile(name: str, a: Any, q: Any, axis: Axis, out: Any, method: str, keepdims: bool,
              interpolation: Any, weights: Any, ignore_nan: bool = False) -> Any:
  _check_out(name, out)
  if interpolation is not None:
    raise TypeError(f"jnp.{name}: the 'interpolation' argument was renamed 'method'")
  if method not in _QUANTILE_METHODS:
    raise ValueError(f"jnp.{name}: method must be one of {_QUANTILE_METHODS}, got {method!r}")
  util.check_arraylike(f"jnp.{name}", a, q)
  if weights is not None:
    _check_quantile_weights(name, weights, method)
  if dtypes.is_complex(dtypes.dtype(a)):
    raise ValueError(f"jnp.{name} does not support complex input (got "
                     f"{dtypes.dtype(a).name}): complex numbers have no natural order.")
  _check_quantiles(name, q)
  ignore_nan = ignore_nan and dtypes.is_inexact(dtypes.dtype(a, canonicalize=True))
  # the result has the type of `a` (and the weights) made inexact, whatever q's: an int32
  # `a` gives float32 even next to a float64 q under x64 (JAX's)
  if weights is None:
    (a,) = util.promote_args_inexact(f"jnp.{name}", a)
  else:
    a, weights = util.promote_args_inexact(f"jnp.{name}", a, weights)
  q = lax._convert_element_type(q, dtypes.dtype(a))
  shape, q_shape = np.shape(a), np.shape(q)
  axes = _canonical_axes(name, axis, len(shape))
  if weights is not None:
    weights = _quantile_weights_like(name, weights, shape, axis, axes)
  kept = [i for i in range(len(shape)) if i not in axes]
  n = _reduced_size(shape, axes)
  # The reduced axes, moved last and flattened into one, then sorted (NaN sorts last),
  # the weights with them.
  def flatten(v: Any) -> Any:
    return shape_ops.reshape(v, [shape[i] for i in kept] + [n], dimensions=kept + list(axes))
  x = flatten(a)
  out_shape = q_shape + tuple(1 if i in axes else d for i, d in enumerate(shape)
                              if keepdims or i not in axes)
  if n == 0:
    return lax.full(out_shape, np.nan, dtypes.dtype(a))
  if weights is None:
    x = sorting.sort(x, dimension=-1)
  else:
    x, weights = sorting.sort((x, flatten(weights)), dimension=-1, num_keys=1)
  if ignore_nan:  # each slice's own count of numbers: its NaNs sort past them
    count = sum(lax.bitwise_not(_isnan(x)), -1, dtype=dtypes.dtype(x))
    undefined = lax.eq(count, lax._convert_element_type(0, dtypes.dtype(x)))
  else:
    count = n
    undefined = _isnan(slicing.index_in_dim(x, n - 1, axis=-1, keepdims=False))
  if method == "inverted_cdf":
    result = _inverted_cdf(x, weights, q, count)
    if weights is not None:  # a negative or NaN weight: NaN, as JAX (it cannot raise)
      bad = lax.bitwise_not(lax.ge(weights, lax.full_like(weights, 0)))
      undefined = lax.bitwise_or(undefined, any(bad, -1))
  else:
    result = _interpolate(x, q, count, method)
  undefined = lax.broadcast_in_dim(undefined, np.shape(result),
                                   range(len(q_shape), result.ndim))
  result = _where(lax.bitwise_not(undefined), result, np.nan)
  return result if np.shape(result) == out_shape else shape_ops.reshape(result, out_shape)


def _check_quantile_weights(name: str, weights: Any, method: str) -> None:
  util.check_arraylike(f"jnp.{name}", weights)
  if dtypes.is_complex(dtypes.dtype(weights)):
    raise ValueError(f"jnp.{name}: weights cannot be complex, got "
                     f"{dtypes.dtype(weights).name}.")
  if method != "inverted_cdf":
    raise NotImplementedError(f"jnp.{name}: method {method!r} does not support weights; "
                              "only method='inverted_cdf' does.")


def _quantile_weights_like(name: str, weights: Any, shape: tuple[int, ...], axis: Axis,
                           axes: tuple[int, ...]) -> Any:
  """`weights` broadcast to `a`'s shape: they have it already, or that of the reduced axes
  taken in `axis`'s order (JAX's rule; NumPy's 1-D weights for one axis are a case)."""
  w_shape = np.shape(weights)
  if w_shape == shape:
    return weights
  if axis is None:
    raise ValueError(f"jnp.{name}: weights of shape {w_shape} must have a's shape {shape} "
                     "when axis is None.")
  reduced = tuple(shape[i] for i in axes)
  if w_shape != reduced:
    raise ValueError(f"jnp.{name}: weights of shape {w_shape} must have a's shape {shape} "
                     f"or that of the reduced axes {axes}, {reduced}.")
  order = sorted(range(len(axes)), key=lambda i: axes[i])
  return lax.broadcast_in_dim(shape_ops.transpose(weights, order), shape,
                              [axes[i] for i in order])


def _check_quantiles(name: str, q: Any) -> None:
  """Concrete quantiles must lie in [0, 1] (traced ones cannot be checked)."""
  if isinstance(q, core.Tracer):
    return
  values = np.asarray(q, np.float64)
  if np.any((values < 0) | (values > 1)):
    scale = "[0, 100]" if name.endswith("percentile") else "[0, 1]"
    raise ValueError(f"jnp.{name}: quantiles must be in the range {scale}")


def _interpolate(x: Any, q: Any, n: int | Any, method: str) -> Any:
  """Values at fractional positions q * (n - 1) of the last axis of the sorted `x`: shape
  q's shape + x's leading shape. `n` is the length of every slice, or an array (x's leading
  shape) with each slice's own length."""
  const = lambda v: lax._convert_element_type(v, dtypes.dtype(x))
  if isinstance(n, int):
    position = lax.clamp(const(0), lax.mul(q, const(n - 1)), const(n - 1))
    take = _take_last
  else:
    lead = np.shape(x)[:-1]
    full = np.shape(q) + lead
    last = lax.broadcast_in_dim(lax.sub(n, const(1)), full, range(np.ndim(q), len(full)))
    position = lax.mul(lax.broadcast_in_dim(q, full, range(np.ndim(q))), last)
    position = lax.max(lax.min(position, last), const(0))
    take = _take_last_per_slice
  low, high = lax.floor(position), lax.ceil(position)
  low_value, high_value = take(x, low), take(x, high)
  frac = lax.sub(position, low)
  if method == "lower":
    return low_value
  if method == "higher":
    return high_value
  if method == "nearest":  # round half to even, as NumPy does
    low_is_odd = lax.ne(lax.rem(low, const(2)), const(0))
    pick_high = lax.bitwise_or(lax.gt(frac, const(0.5)),
                               lax.bitwise_and(lax.eq(frac, const(0.5)), low_is_odd))
    return lax.select_n(_broadcast_like(pick_high, low_value), low_value, high_value)
  if method == "midpoint":
    frac = lax.mul(lax._convert_element_type(lax.gt(frac, const(0)), dtypes.dtype(x)),
                   const(0.5))
  return _lerp(low_value, high_value, _broadcast_like(frac, low_value))


def _inverted_cdf(x: Any, weights: Any, q: Any, n: int | Any) -> Any:
  """For each quantile q and slice of the sorted `x` (its last axis; `weights`, sorted
  with it, None for all ones): the first value whose running weight reaches q of the
  slice's total, among the first `n` (an int, or each slice's count of numbers). NaN
  values, and negative or NaN weights (whose slices the caller makes NaN), weigh
  nothing."""
  zero = lax.full_like(x, 0)
  ignored = _isnan(x)
  if weights is None:
    weights = lax.full_like(x, 1)
  else:
    ignored = lax.bitwise_or(ignored, lax.bitwise_not(lax.ge(weights, zero)))
  running = cumsum(lax.select_n(ignored, weights, zero), axis=-1)
  lead, n_q = np.shape(x)[:-1], np.ndim(q)
  full = np.shape(q) + lead
  total = slicing.index_in_dim(running, -1, axis=-1, keepdims=False)
  target = lax.mul(lax.broadcast_in_dim(q, full, range(n_q)),
                   lax.broadcast_in_dim(total, full, range(n_q, len(full))))
  wide = full + np.shape(x)[-1:]
  below = lax.lt(lax.broadcast_in_dim(running, wide, range(n_q, len(wide))),
                 lax.broadcast_in_dim(target, wide, range(len(full))))
  index = sum(below, -1, dtype=np.int32)
  if isinstance(n, int):
    last = lax.full_like(index, n - 1)
  else:  # a slice of NaNs only (n = 0) reads entry 0: its result is NaN anyway
    last = lax.max(lax.sub(lax.convert_element_type(n, np.int32), _int32(1)), _int32(0))
    last = lax.broadcast_in_dim(last, full, range(n_q, len(full)))
  return _take_last_per_slice(x, lax.min(index, last))


def _int32(value: int) -> Any:
  return lax._convert_element_type(value, np.int32)


def _take_last(x: Any, index: Any) -> Any:
  """x[..., index] for each element of the (float) `index` array: shape index's shape +
  x's leading shape."""
  lead = np.shape(x)[:-1]
  idx = lax.convert_element_type(index, np.int32)
  idx = lax.broadcast_in_dim(idx, np.shape(idx) + (1,), range(np.ndim(idx)))
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=tuple(range(np.ndim(index), np.ndim(index) + len(lead))),
      collapsed_slice_dims=(len(lead),), start_index_map=(len(lead),))
  return gather_scatter.gather(x, idx, dnums, lead + (1,), mode="clip")


def _take_last_per_slice(x: Any, index: Any) -> Any:
  """x[i, index[k, i]] for the (float) `index` of shape q's shape + x's leading shape: one
  position per quantile k and slice i."""
  lead = np.shape(x)[:-1]
  n_q = np.ndim(index) - len(lead)
  idx = lax.convert_element_type(index, np.int32)
  idx = lax.broadcast_in_dim(idx, np.shape(idx) + (1,), range(np.ndim(idx)))
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(len(lead),), start_index_map=(len(lead),),
      operand_batching_dims=tuple(range(len(lead))),
      start_indices_batching_dims=tuple(range(n_q, n_q + len(lead))))
  return gather_scatter.gather(x, idx, dnums, (1,) * np.ndim(x), mode="clip")


def _broadcast_like(per_quantile: Any, values: Any) -> Any:
  """Broadcasts a q-shaped array along the trailing (reduced-shape) dims of `values`."""
  return lax.broadcast_in_dim(per_quantile, np.shape(values), range(np.ndim(per_quantile)))


def _lerp(a: Any, b: Any, t: Any) -> Any:
  """a + (b - a) t, computed from the nearer end (as NumPy does) so that t = 1 gives b."""
  diff = lax.sub(b, a)
  one = lax._convert_element_type(1, dtypes.dtype(t))
  from_low = lax.add(a, lax.mul(diff, t))
  from_high = lax.sub(b, lax.mul(diff, lax.sub(one, t)))
  return lax.select_n(lax.ge(t, lax._convert_element_type(0.5, dtypes.dtype(t))), from_low,
                      from_high)


# ----------------------------------------------------------------------------- NaN-ignoring

def _valid_mask(a: Any, where: Any) -> Any:
  """Elements that are not NaN and (if given) selected by `where`."""
  valid = lax.bitwise_not(_isnan(a))
  if where is None:
    return valid
  return lax.bitwise_and(valid, jnp_shape.broadcast_to(
      lax._convert_element_type(where, np.bool_), np.shape(a)))


@memoize_eager_operations
def nansum(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
           keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
  """`sum` treating NaN as zero."""
  util.check_arraylike("jnp.nansum", a)
  return sum(_replace_nan(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
  """`prod` treating NaN as one."""
  util.check_arraylike("jnp.nanprod", a)
  return prod(_replace_nan(a, 1), axis, dtype, out, keepdims, initial, where)


@memoize_eager_operations
def nanmax(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
  """`max` ignoring NaN; NaN where every element is NaN (and no `initial` is given)."""
  return _nan_extremum(max, reductions.get_max_identity, a, axis, out, keepdims, initial,
                       where)


def nanmin(a: Any, axis: Axis = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
  """`min` ignoring NaN; NaN where every element is NaN (and no `initial` is given)."""
  return _nan_extremum(min, reductions.get_min_identity, a, axis, out, keepdims, initial,
                       where)


def _nan_extremum(reduce: Callable[..., Any], identity: Callable[[Any], Any], a: Any,
                  axis: Axis, out: Any, keepdims: bool, initial: Any, where: Any) -> Any:
  util.check_arraylike(f"jnp.nan{reduce.__name__}", a)
  dtype = dtypes.dtype(a, canonicalize=True)
  if not dtypes.is_inexact(dtype):
    return reduce(a, axis, out, keepdims, initial, where)
  result = reduce(_replace_nan(a, identity(dtype)), axis, out, keepdims, initial, where)
  if initial is not None:
    return result
  all_nan = all(_isnan(a), axis, keepdims=keepdims, where=where)
  return _where(lax.bitwise_not(all_nan), result, np.nan)


@memoize_eager_operations
def nanmean(a: Any, axis: Axis = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, *, where: Any = None) -> Any:
  """`mean` of the elements that are not NaN (NaN if there are none)."""
  _check_out("nanmean", out)
  util.check_arraylike("jnp.nanmean", a)
  aval = core.get_aval(a)
  if not dtypes.is_inexact(aval.dtype):
    return mean(a, axis, dtype, keepdims=keepdims, where=where)
  compute_dtype, result_dtype = _mean_dtypes(aval.dtype, dtype)
  axes = _canonical_axes("nanmean", axis, aval.ndim)
  valid = _valid_mask(a, where)
  total = sum(_replace_nan(a, 0), axes, dtype=compute_dtype, keepdims=keepdims, where=valid)
  count = sum(valid, axes, dtype=compute_dtype, keepdims=keepdims)
  return lax._convert_element_type(lax.div(total, count), result_dtype)


def nanvar(a: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, *, where: Any = None, mean: Any = None) -> Any:
  """`var` of the elements that are not NaN (NaN where fewer than ddof + 1 remain); `mean`
  as in `var`, the mean of those elements."""
  if not dtypes.is_inexact(dtypes.dtype(a, canonicalize=True)):
    return var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean)
  return _variance("nanvar", a, axis, dtype, out, ddof, keepdims, where, mean,
                   ignore_nan=True)


def nanstd(a: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, *, where: Any = None, mean: Any = None) -> Any:
  """`std` of the elements that are not NaN: the square root of `nanvar`."""
  if not dtypes.is_complex(dtypes.dtype(a)):  # complex input: nanvar's ValueError first
    _check_inexact_dtype("nanstd", dtype, TypeError)
  return transcendental.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean))


def nanargmax(a: Any, axis: int | None = None, out: None = None,
              keepdims: bool | None = None) -> Any:
  """`argmax` ignoring NaN; -1 where every element is NaN."""
  return _nan_arg_reduce("nanargmax", argmax, reductions.get_max_identity, a, axis, out,
                         keepdims)


def nanargmin(a: Any, axis: int | None = None, out: None = None,
              keepdims: bool | None = None) -> Any:
  """`argmin` ignoring NaN; -1 where every element is NaN."""
  return _nan_arg_reduce("nanargmin", argmin, reductions.get_min_identity, a, axis, out,
                         keepdims)


def _nan_arg_reduce(name: str, arg_reduce: Callable[..., Any], identity: Callable[[Any], Any],
                    a: Any, axis: int | None, out: Any, keepdims: bool | None) -> Any:
  util.check_arraylike(f"jnp.{name}", a)
  dtype = dtypes.dtype(a, canonicalize=True)
  if not dtypes.is_inexact(dtype):
    return arg_reduce(a, axis, out, keepdims)
  result = arg_reduce(_replace_nan(a, identity(dtype)), axis, out, keepdims)
  all_nan = all(_isnan(a), axis, keepdims=bool(keepdims))
  return _where(lax.bitwise_not(all_nan), result, -1)


# ----------------------------------------------------------------------------- cumulative

@memoize_eager_operations
def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
  """Running sums along `axis` (of the flattened array if None); the input's dtype
  (bools count as the default integer), unlike `sum`, as in JAX."""
  return _cumulative("cumsum", reductions.cumsum, a, axis, dtype, out)


@memoize_eager_operations
def cumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
  """Running products along `axis` (of the flattened array if None); dtypes as `cumsum`'s."""
  return _cumulative("cumprod", reductions.cumprod, a, axis, dtype, out)


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
  """`cumsum` treating NaN as zero."""
  util.check_arraylike("jnp.nancumsum", a)
  return _cumulative("nancumsum", reductions.cumsum, _replace_nan(a, 0), axis, dtype, out)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
  """`cumprod` treating NaN as one."""
  util.check_arraylike("jnp.nancumprod", a)
  return _cumulative("nancumprod", reductions.cumprod, _replace_nan(a, 1), axis, dtype, out)


def _cumulative(name: str, lax_fn: Callable[..., Any], a: Any, axis: int | None, dtype: Any,
                out: Any) -> Any:
  _check_out(name, out)
  util.check_arraylike(f"jnp.{name}", a)
  a_dtype = dtypes.dtype(a, canonicalize=True)
  if axis is None:
    a, axis = shape_ops.reshape(a, (math.prod(np.shape(a)),)), 0
  axis = _single_axis(name, axis, np.ndim(a))
  # As JAX: narrow integers keep their dtype (unlike `sum`); bools accumulate as the
  # default integer, even when a bool result is asked for.
  if dtype is None:
    result_dtype = dtypes.default_int_dtype() if dtypes.is_bool(a_dtype) else a_dtype
  else:
    result_dtype = dtypes.canonicalize_dtype(dtype)
  compute_dtype = (_promote_integer_dtype(result_dtype) if dtypes.is_bool(result_dtype)
                   else result_dtype)
  result = lax_fn(lax._convert_element_type(a, compute_dtype), axis)
  return lax._convert_element_type(result, result_dtype)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
  """The array API's running sum: `axis` may be omitted only for 1-D arrays, and
  `include_initial=True` prepends the empty sum (zero)."""
  return _cumulative_api("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
  """The array API's running product: `axis` may be omitted only for 1-D arrays, and
  `include_initial=True` prepends the empty product (one)."""
  return _cumulative_api("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial)


def _cumulative_api(name: str, cumulative: Callable[..., Any], initial: int, x: Any,
                    axis: int | None, dtype: Any, include_initial: bool) -> Any:
  util.check_arraylike(f"jnp.{name}", x)
  shape = np.shape(x)
  if not shape:
    raise ValueError(f"jnp.{name}: the input must be non-scalar, got shape {shape}")
  if axis is None:
    if len(shape) > 1:
      raise ValueError(f"jnp.{name}: axis must be given for arrays of more than one "
                       f"dimension, got shape {shape}")
    axis = 0
  axis = _single_axis(name, axis, len(shape))
  if dtype is None:  # the array API's cumulative functions promote as `sum` does
    dtype = _promote_integer_dtype(dtypes.dtype(x, canonicalize=True))
  result = cumulative(x, axis, dtype)
  if not include_initial:
    return result
  first_shape = tuple(1 if i == axis else d for i, d in enumerate(shape))
  first = lax.full(first_shape, initial, dtypes.dtype(result))
  return shape_ops.concatenate([first, result], axis)

