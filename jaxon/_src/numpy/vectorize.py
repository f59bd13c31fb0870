"""Functions that lift a function on small arrays to bigger ones with `vmap`: `vectorize`
(NumPy's generalized-ufunc signatures), `apply_along_axis` and `apply_over_axes`.

NumPy loops in Python over the elements; here the function is traced once and batched,
so it must be written in jnp (it may not branch on values), and the result is jittable,
differentiable and itself vmappable.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from jaxon._src import api
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import lax_numpy
from jaxon._src.numpy import shape as jnp_shape

_DIMS = r"\((?:\w+(?:,\w+)*)?\)"
_SIGNATURE = re.compile(rf"^({_DIMS}(?:,{_DIMS})*)->({_DIMS}(?:,{_DIMS})*)$")

CoreDims = tuple[str, ...]


def _parse_signature(signature: str) -> tuple[list[CoreDims], list[CoreDims]]:
  """`'(m,n),(n)->(m)'` as `([('m', 'n'), ('n',)], [('m',)])`."""
  match = _SIGNATURE.match(re.sub(r"\s+", "", signature))
  if match is None:
    raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} (expected "
                     "something like '(m,n),(n)->(m)').")
  def parse(args: str) -> list[CoreDims]:
    return [tuple(d for d in arg.split(",") if d) for arg in re.findall(r"\(([^)]*)\)", args)]
  return parse(match.group(1)), parse(match.group(2))


def _core_sizes(args: Sequence[Any], core_dims: Sequence[CoreDims]
                ) -> tuple[tuple[int, ...], dict[str, int]]:
  """The broadcast shape of the arguments' loop (non-core) dimensions, and the size of
  each named core dimension (which must agree wherever the name appears)."""
  sizes: dict[str, int] = {}
  loop_shapes = []
  for i, (arg, dims) in enumerate(zip(args, core_dims)):
    if arg.ndim < len(dims):
      raise ValueError(f"vectorize: input {i} has shape {arg.shape}, fewer dimensions than "
                       f"its core dimensions {dims} in the signature.")
    for name, size in zip(dims, arg.shape[arg.ndim - len(dims):]):
      if sizes.setdefault(name, size) != size:
        raise ValueError(f"vectorize: core dimension {name!r} has inconsistent sizes "
                         f"{sizes[name]} and {size} (input {i} has shape {arg.shape}).")
    loop_shapes.append(arg.shape[:arg.ndim - len(dims)])
  return jnp_shape.broadcast_shapes(*loop_shapes), sizes


def _checking_outputs(func: Callable, sizes: dict[str, int],
                      out_dims: list[CoreDims] | None) -> Callable:
  """`func`, checking that each output has the core shape the signature promises."""
  if out_dims is None:
    return func

  def checked(*args: Any) -> Any:
    out = func(*args)
    outs = out if len(out_dims) > 1 else (out,)
    if len(out_dims) > 1 and (not isinstance(out, tuple) or len(out) != len(out_dims)):
      raise TypeError(f"vectorize: the signature promises {len(out_dims)} outputs, but the "
                      f"function returned {type(out).__name__}.")
    known = dict(sizes)
    for k, (o, dims) in enumerate(zip(outs, out_dims)):
      o_shape = np.shape(o)
      if len(o_shape) != len(dims):
        raise ValueError(f"vectorize: output {k} has shape {o_shape}, but the signature "
                         f"gives it core dimensions {dims}.")
      for name, size in zip(dims, o_shape):
        if known.setdefault(name, size) != size:
          raise ValueError(f"vectorize: output {k} has shape {o_shape}, inconsistent with "
                           f"core dimension {name!r} of size {known[name]}.")
    return out
  return checked


def _split_excluded(excluded: Collection[int | str], args: tuple, kwargs: dict
                    ) -> tuple[list[int], list[str], list[Any]]:
  """The positions and keywords to vectorize (NumPy's order: positions, then keywords),
  and their values; `None` arguments are passed through like excluded ones."""
  positions = [i for i, a in enumerate(args) if i not in excluded and a is not None]
  names = [k for k, v in kwargs.items() if k not in excluded and v is not None]
  return positions, names, [args[i] for i in positions] + [kwargs[k] for k in names]


def vectorize(pyfunc: Callable, *, excluded: Collection[int | str] = frozenset(),
              signature: str | None = None) -> Callable:
  """`pyfunc` lifted to arrays by broadcasting over its arguments' leading dimensions.

  Without `signature`, `pyfunc` sees scalars (0-d arrays). With a gufunc `signature` such
  as `'(n),(n)->()'`, each argument's trailing dimensions named there are passed whole
  (its "core" dimensions) and the others are looped over, broadcast between arguments.
  The loop is `vmap`, so `pyfunc` is traced once and the result is jittable. Arguments
  whose position or name is in `excluded` are passed through unchanged.

  Example: `jnp.vectorize(jnp.dot, signature='(n),(n)->()')(a, b)` takes row-wise dot
  products of `a` and `b` of shapes (k, n) and (n,).
  """
  if any(not isinstance(e, (int, str)) for e in excluded):
    raise TypeError(f"vectorize: excluded must hold ints and strs, got {excluded!r}.")
  in_dims, out_dims = (_parse_signature(signature) if signature is not None else (None, None))

  @functools.wraps(pyfunc)
  def wrapped(*args: Any, **kwargs: Any) -> Any:
    positions, names, values = _split_excluded(excluded, args, kwargs)
    values = [lax_numpy.asarray(v) for v in values]
    core_dims = in_dims if in_dims is not None else [()] * len(values)
    if len(core_dims) != len(values):
      raise TypeError(f"vectorize: the signature {signature!r} takes {len(core_dims)} "
                      f"arguments, but {len(values)} were vectorized.")

    def call(*vals: Any) -> Any:
      full_args, full_kwargs = list(args), dict(kwargs)
      for i, v in zip(positions, vals):
        full_args[i] = v
      full_kwargs.update(zip(names, vals[len(positions):]))
      return pyfunc(*full_args, **full_kwargs)

    loop_shape, sizes = _core_sizes(values, core_dims)
    return _vmap_over_loop(_checking_outputs(call, sizes, out_dims), values, core_dims,
                           loop_shape)
  return wrapped


def _vmap_over_loop(func: Callable, values: list[Any], core_dims: Sequence[CoreDims],
                    loop_shape: tuple[int, ...]) -> Any:
  """`func` mapped over the loop dimensions. Size-1 loop dimensions of an argument are
  squeezed and left unmapped (no broadcast copies); a loop dimension no argument maps is
  added to the result at the end."""
  squeezed, padded_shapes = [], []
  for v, dims in zip(values, core_dims):
    own = v.shape[:v.ndim - len(dims)]
    padded_shapes.append((1,) * (len(loop_shape) - len(own)) + own)
    squeezed.append(jnp_shape.squeeze(v, tuple(i for i, s in enumerate(own) if s == 1)))
  unmapped = []
  for d in reversed(range(len(loop_shape))):
    in_axes = tuple(None if s[d] == 1 else 0 for s in padded_shapes)
    if all(a is None for a in in_axes):
      unmapped.append(d)
    else:
      func = api.vmap(func, in_axes=in_axes)
  out = func(*squeezed)
  if not unmapped:
    return out
  expand = lambda o: jnp_shape.expand_dims(o, sorted(unmapped))
  return tuple(map(expand, out)) if isinstance(out, tuple) else expand(out)


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any
                     ) -> Any:
  """`func1d(arr[i, …, :, …, j], *args, **kwargs)` for every 1-D slice along `axis`: the
  result's dimensions from `func1d` take the place of `axis`.

  Example: `jnp.apply_along_axis(jnp.diff, 1, x)` differences each row of `x`.
  """
  arr = lax_numpy.asarray(arr)
  axis = lax_utils.canonicalize_axis(axis, arr.ndim)
  func = lambda x: func1d(x, *args, **kwargs)
  for _ in range(axis + 1, arr.ndim):  # the axes after `axis`, their results going last
    func = api.vmap(func, in_axes=-1, out_axes=-1)
  for _ in range(axis):  # the axes before it, in front
    func = api.vmap(func, in_axes=0, out_axes=0)
  return func(arr)


def apply_over_axes(func: Callable, a: Any, axes: int | Sequence[int]) -> Any:
  """`func(a, axis)` applied for each axis in turn, each result feeding the next;
  `func` must keep the rank or reduce it by one (then the axis is put back with size 1).

  Example: `jnp.apply_over_axes(jnp.sum, x, [0, 2])` is `x.sum((0, 2), keepdims=True)`.
  """
  a = lax_numpy.asarray(a)
  for axis in (axes,) if np.ndim(axes) == 0 else axes:
    axis = lax_utils.canonicalize_axis(axis, a.ndim)
    out = lax_numpy.asarray(func(a, axis))
    if out.ndim == a.ndim - 1:
      out = jnp_shape.expand_dims(out, axis)
    elif out.ndim != a.ndim:
      raise ValueError(f"apply_over_axes: func returned an array of rank {out.ndim} for an "
                       f"input of rank {a.ndim}; it must keep the rank or drop the axis.")
    a = out
  return a
