"""`jnp.ufunc`, NumPy's universal-function object, and `jnp.frompyfunc`.

A ufunc wraps an elementwise function of `nin` scalars and gives it NumPy's methods:
broadcasting calls, `reduce`, `accumulate`, `reduceat`, `outer` and `at`. Built from a
plain function, the methods apply it one step at a time along the axis (as NumPy's loop
does), so they are right for any function (`subtract.reduce` is `((a0 - a1) - a2) - …`);
the steps are a `fori_loop` or `scan`, so `func` is traced once whatever the length. A
ufunc with a faster equivalent passes it in (`reduce=jnp.sum` for `add`), as the wrapped
binaries below do.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes, traceback_util
from jaxon._src.interpreters.ad import stop_gradient
from jaxon._src.lax import lax, slicing
from jaxon._src.lax import utils as lax_utils
from jaxon._src.lax.control_flow import loops
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.numpy import lax_numpy, reductions, ufuncs, util
from jaxon._src.numpy import shape as jnp_shape
from jaxon._src.numpy.vectorize import vectorize


def _as_index(indices: Any) -> Any:
  """NumPy's ufunc.at takes a list of positions; jnp indexing asks for an array."""
  return lax_numpy.asarray(indices) if isinstance(indices, list) else indices


def _no_out(method: str, out: Any) -> None:
  if out is not None:
    raise NotImplementedError(f"ufunc.{method}: the 'out' argument is not supported (jaxon "
                              "arrays are immutable); use the returned array.")


class ufunc:
  """A universal function: an elementwise `func` of `nin` arguments and `nout` results,
  with NumPy's ufunc methods.

  Args:
    func: the elementwise function, written in jnp (it is traced and vmapped).
    nin, nout: its numbers of arguments and results.
    name: the ufunc's name (default: `func.__name__`).
    identity: the value `reduce` starts from when it has no elements (None: no identity,
      so reducing an empty axis is an error).
    call, reduce, accumulate, at, reduceat: faster implementations of those methods, with
      their signatures; by default each is derived from `func`.

  Example:
    >>> logaddexp = jnp.frompyfunc(jnp.logaddexp, nin=2, nout=1, identity=-jnp.inf)
    >>> logaddexp.reduce(jnp.array([0.0, 0.0]))  # log(2)
  """

  def __init__(self, func: Callable, /, nin: int, nout: int, *, name: str | None = None,
               nargs: int | None = None, identity: Any = None, call: Callable | None = None,
               reduce: Callable | None = None, accumulate: Callable | None = None,
               at: Callable | None = None, reduceat: Callable | None = None):
    self.nin, self.nout = operator.index(nin), operator.index(nout)
    self.nargs = self.nin + self.nout if nargs is None else operator.index(nargs)
    self.identity = identity
    self.__name__ = name or getattr(func, "__name__", "ufunc")
    self._func = func
    self._call = call or vectorize(func)
    self._reduce, self._accumulate = reduce, accumulate
    self._at, self._reduceat = at, reduceat

  def __repr__(self) -> str:
    return f"<jnp.ufunc '{self.__name__}'>"

  @traceback_util.inline_api_boundary
  def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
    try:  # an API boundary (`jnp.add(x, y)` is eager code's usual entry), inline: it's hot
      if out is None and where is None and len(args) == self.nin:  # jnp.add(x, y): one call
        return self._call(*args)
      _no_out("__call__", out)
      if where is not None:
        raise NotImplementedError(f"{self.__name__}: the 'where' argument is not supported; "
                                  "use jnp.where on the result.")
      if len(args) != self.nin:
        raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}.")
      return self._call(*args)
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise

  def _require_binary(self, method: str) -> None:
    if self.nin != 2 or self.nout != 1:
      raise ValueError(f"{self.__name__}.{method} only applies to ufuncs of two arguments "
                       f"and one result (this one has nin={self.nin}, nout={self.nout}).")

  # --------------------------------------------------------------------------- reduce

  def reduce(self, a: Any, axis: int | Sequence[int] | None = 0, dtype: Any = None,
             out: None = None, keepdims: bool = False, initial: Any = None,
             where: Any = None) -> Any:
    """`a` combined along `axis` (all axes if None; several in turn if a tuple):
    `func(…func(func(initial, a0), a1)…, an)`, starting at `a0` without `initial`.
    `where=False` entries are skipped (they need `initial` or an identity)."""
    self._require_binary("reduce")
    _no_out("reduce", out)
    if self._reduce is not None:
      return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                          where=where)
    a = lax_numpy.asarray(a, dtype)
    axes = (tuple(range(a.ndim)) if axis is None else
            tuple(sorted({lax_utils.canonicalize_axis(x, a.ndim) for x in
                          (axis if isinstance(axis, (tuple, list)) else (axis,))})))
    start = self.identity if initial is None else initial
    if where is not None:
      if start is None:
        raise ValueError(f"{self.__name__}.reduce: where= needs an initial value, since "
                         f"the ufunc has no identity.")
      a = ufuncs.where(where, a, lax_numpy.asarray(start).astype(a.dtype))
    # The reduced axes, moved to the front and flattened into one.
    rest = [d for d in range(a.ndim) if d not in axes]
    moved = jnp_shape.transpose(a, (*axes, *rest))
    n = math.prod(a.shape[d] for d in axes)
    steps = jnp_shape.reshape(moved, (n, *(a.shape[d] for d in rest)))
    result = self._fold(steps, initial, n)
    return jnp_shape.expand_dims(result, axes) if keepdims else result

  def _fold(self, steps: Any, initial: Any, n: int) -> Any:
    if n == 0:
      start = self.identity if initial is None else initial
      if start is None:
        raise ValueError(f"{self.__name__}.reduce: zero-size reduction with no identity; "
                         f"pass initial=.")
      return lax_numpy.full(steps.shape[1:], start, steps.dtype)
    acc = steps[0] if initial is None else self._call(
        lax_numpy.asarray(initial).astype(steps.dtype), steps[0])
    return loops.fori_loop(1, n, lambda i, acc: self._call(acc, steps[i]).astype(acc.dtype),
                           acc)

  # --------------------------------------------------------------------------- accumulate

  def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
    """The running reductions along `axis`: entry i is `reduce(a[:i + 1])`."""
    self._require_binary("accumulate")
    _no_out("accumulate", out)
    if self._accumulate is not None:
      return self._accumulate(a, axis=axis, dtype=dtype)
    a = lax_numpy.asarray(a, dtype)
    if a.ndim == 0:
      raise TypeError(f"{self.__name__}.accumulate: cannot accumulate a 0-d array.")
    axis = lax_utils.canonicalize_axis(axis, a.ndim)
    steps = jnp_shape.moveaxis(a, axis, 0)
    if steps.shape[0] == 0:
      return a
    def step(acc: Any, x: Any) -> tuple[Any, Any]:
      acc = self._call(acc, x).astype(acc.dtype)
      return acc, acc
    _, rest = scan(step, steps[0], steps[1:])
    outs = jnp_shape.concatenate([steps[:1], rest.astype(steps.dtype)], axis=0)
    return jnp_shape.moveaxis(outs, 0, axis)

  # --------------------------------------------------------------------------- reduceat

  def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None,
               out: None = None) -> Any:
    """Reductions of the slices `a[indices[i]:indices[i + 1]]` along `axis` (the last
    running to the end); where `indices[i] >= indices[i + 1]` the entry is
    `a[indices[i]]`. `indices` decide shapes, so they must be concrete."""
    self._require_binary("reduceat")
    _no_out("reduceat", out)
    if self._reduceat is not None:
      return self._reduceat(a, indices, axis=axis, dtype=dtype)
    a = lax_numpy.asarray(a, dtype)
    axis = lax_utils.canonicalize_axis(axis, a.ndim)
    starts = core.concrete_or_error(
        np.asarray, indices, f"{self.__name__}.reduceat: indices must be concrete (they "
                             f"decide the result's shape).").reshape(-1)
    n = a.shape[axis]
    if starts.size and not ((starts >= 0) & (starts < n)).all():
      raise IndexError(f"{self.__name__}.reduceat: indices {starts.tolist()} must lie in "
                       f"[0, {n}).")
    stops = [*starts[1:].tolist(), n]
    pieces = []
    for start, stop in zip(starts.tolist(), stops):
      stop = stop if start < stop else start + 1
      segment = slicing.slice_in_dim(a, start, stop, axis=axis)
      pieces.append(self.reduce(segment, axis=axis, keepdims=True))
    return jnp_shape.concatenate(pieces, axis=axis)

  # --------------------------------------------------------------------------- outer, at

  def outer(self, A: Any, B: Any, /) -> Any:
    """`func(A[i, j, …], B[k, l, …])` for all pairs: the result has shape
    `A.shape + B.shape`."""
    self._require_binary("outer")
    A, B = lax_numpy.asarray(A), lax_numpy.asarray(B)
    return self(jnp_shape.reshape(A, A.shape + (1,) * B.ndim), B)

  def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
    """`a` with `func` applied at `a[indices]` (with `b` as second argument for a binary
    ufunc), unbuffered like NumPy's: a repeated index applies `func` once per occurrence.
    Arrays are immutable, so `inplace=False` is required and the result returned."""
    if inplace:
      raise NotImplementedError(f"{self.__name__}.at: jaxon arrays are immutable; pass "
                                f"inplace=False and use the returned array.")
    if self.nout != 1 or self.nin not in (1, 2) or (b is None) != (self.nin == 1):
      raise ValueError(f"{self.__name__}.at applies to ufuncs of one result, with b given "
                       f"exactly when the ufunc takes two arguments.")
    indices = _as_index(indices)
    if self._at is not None:
      return self._at(a, indices, b)
    a = lax_numpy.asarray(a)
    # Each update site as a flat position, in order (the index may be any NumPy index).
    sites = jnp_shape.reshape(lax.iota(dtypes.default_int_dtype(), a.size), a.shape)[indices]
    positions, flat = jnp_shape.ravel(sites), jnp_shape.ravel(a)
    if b is not None:
      b = jnp_shape.ravel(jnp_shape.broadcast_to(lax_numpy.asarray(b), sites.shape))
    def update(i: Any, flat: Any) -> Any:
      args = (flat[positions[i]],) if b is None else (flat[positions[i]], b[i])
      return flat.at[positions[i]].set(self._call(*args))
    flat = loops.fori_loop(0, positions.shape[0], update, flat)
    return jnp_shape.reshape(flat, a.shape)


def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
  """A `jnp.ufunc` from an elementwise jnp function of `nin` arguments and `nout` results.

  Example: `jnp.frompyfunc(lambda x, y: x * y + 1, 2, 1).outer(x, y)`.
  """
  return ufunc(func, nin, nout, identity=identity)


# ----------------------------------------------------------------------------- wrapped binaries

def _scatter_at(method: str) -> Callable[[Any, Any, Any], Any]:
  """`add.at` and friends: one scatter (the scatter combines repeated indices)."""
  return lambda a, indices, b: getattr(lax_numpy.asarray(a).at[indices], method)(b)


def _cumulative(fn: Callable) -> Callable[..., Any]:
  return lambda a, axis=0, dtype=None: fn(a, axis=axis, dtype=dtype)


def _reduction(fn: Callable, boolean: bool = False) -> Callable[..., Any]:
  """A ufunc's reduce from a jnp reduction (`dtype` is not an argument of the boolean
  ones: they cast first)."""
  def reduce(a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
             initial: Any = None, where: Any = None) -> Any:
    if boolean:
      if initial is not None:
        raise NotImplementedError("reduce: 'initial' is not supported for logical ufuncs.")
      a = lax_numpy.asarray(a, dtype)
      return fn(a, axis=axis, keepdims=keepdims, where=where)
    if dtype is None:
      return fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    return fn(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
  return reduce


def max_shifted_exp_sum(a: Any, axes: tuple[int, ...], where: Any = None,
                        weights: Any = None) -> tuple[Any, Any]:
  """The core of a log-sum-exp as JAX computes one: (sum of weights * exp(a - m), m) over
  `axes`, both keeping them as size-1 axes, with m the maximum of a's real part there,
  replaced by 0 where it is not finite and held constant to differentiation. The reduction
  of `logaddexp` and `scipy.special.logsumexp` are built on it."""
  real = ufuncs.real(a) if dtypes.issubdtype(a.dtype, np.complexfloating) else a
  top = reductions.max(real, axis=axes, keepdims=True, where=where, initial=-np.inf)
  top = stop_gradient(lax.select(ufuncs.isfinite(top), top, lax.full_like(top, 0)))
  shifted = ufuncs.exp(ufuncs.subtract(a, top.astype(a.dtype)))
  if weights is not None:
    shifted = ufuncs.multiply(shifted, weights)
  return reductions.sum(shifted, axis=axes, keepdims=True, where=where), top


def _log_sum_exp(base: float) -> Callable[..., Any]:
  """`logaddexp.reduce` (base e) or `logaddexp2.reduce` (base 2) as JAX computes them: a
  log-sum-exp with the maximum taken out first (base 2 through base e, scaled by ln 2), not a
  loop of pairwise `logaddexp`s, which took 3.3 times JAX's time on f32[256,256]. `dtype`
  is accepted and, as in JAX, not used; `initial` joins the result by `logaddexp`."""
  def reduce(a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
             initial: Any = None, where: Any = None) -> Any:
    del dtype
    (a,) = util.promote_args_inexact("logaddexp.reduce", a)
    ln_base = math.log(base)
    if base != math.e:
      a = ufuncs.multiply(a, ln_base)
      initial = None if initial is None else ufuncs.multiply(initial, ln_base)
    axes = reductions._canonical_axes("logaddexp.reduce", axis, a.ndim)
    total, top = max_shifted_exp_sum(a, axes, where)
    out = ufuncs.add(ufuncs.log(total), top.astype(total.dtype))
    out = out if keepdims else jnp_shape.squeeze(out, axes)
    if initial is not None:
      out = ufuncs.logaddexp(initial, out)
    return out if base == math.e else ufuncs.divide(out, ln_base)
  return reduce


def _extremum(fn: Callable) -> Callable[..., Any]:
  def reduce(a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
             initial: Any = None, where: Any = None) -> Any:
    return fn(lax_numpy.asarray(a, dtype), axis=axis, keepdims=keepdims, initial=initial,
              where=where)
  return reduce


add = ufunc(ufuncs.add, 2, 1, identity=0, call=ufuncs.add,
            reduce=_reduction(reductions.sum), accumulate=_cumulative(reductions.cumsum),
            at=_scatter_at("add"))
multiply = ufunc(ufuncs.multiply, 2, 1, identity=1, call=ufuncs.multiply,
                 reduce=_reduction(reductions.prod), accumulate=_cumulative(reductions.cumprod),
                 at=_scatter_at("multiply"))
maximum = ufunc(ufuncs.maximum, 2, 1, call=ufuncs.maximum,
                reduce=_extremum(reductions.max), at=_scatter_at("max"))
minimum = ufunc(ufuncs.minimum, 2, 1, call=ufuncs.minimum,
                reduce=_extremum(reductions.min), at=_scatter_at("min"))
logical_and = ufunc(ufuncs.logical_and, 2, 1, identity=True, call=ufuncs.logical_and,
                    reduce=_reduction(reductions.all, boolean=True))
logical_or = ufunc(ufuncs.logical_or, 2, 1, identity=False, call=ufuncs.logical_or,
                   reduce=_reduction(reductions.any, boolean=True))
subtract = ufunc(ufuncs.subtract, 2, 1, call=ufuncs.subtract,
                 at=lambda a, indices, b: lax_numpy.asarray(a).at[indices].add(
                     ufuncs.negative(b)))
negative = ufunc(ufuncs.negative, 1, 1, call=ufuncs.negative)
logical_xor = ufunc(ufuncs.logical_xor, 2, 1, identity=False, call=ufuncs.logical_xor)
bitwise_and = ufunc(ufuncs.bitwise_and, 2, 1, identity=-1, call=ufuncs.bitwise_and)
bitwise_or = ufunc(ufuncs.bitwise_or, 2, 1, identity=0, call=ufuncs.bitwise_or)
bitwise_xor = ufunc(ufuncs.bitwise_xor, 2, 1, identity=0, call=ufuncs.bitwise_xor)
logaddexp = ufunc(ufuncs.logaddexp, 2, 1, identity=-np.inf, call=ufuncs.logaddexp,
                  reduce=_log_sum_exp(math.e))
logaddexp2 = ufunc(ufuncs.logaddexp2, 2, 1, identity=-np.inf, call=ufuncs.logaddexp2,
                   reduce=_log_sum_exp(2.0))
