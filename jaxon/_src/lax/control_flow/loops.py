"""Loops built on the `while` and `scan` primitives: `fori_loop`, `map` and
`associative_scan`."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src import core, dtypes, traceback_util, tree_util
from jaxon._src.config import config
from jaxon._src.errors import ConcretizationTypeError
from jaxon._src.interpreters import batching
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.lax.control_flow.while_loop import while_loop


@traceback_util.api_boundary
def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any,
              *, unroll: int | bool | None = None) -> Any:
  """`val = init_val; for i in range(lower, upper): val = body_fun(i, val); return val`.

  With concrete bounds the loop is a `scan` (so reverse mode works, and `unroll` applies);
  with traced bounds it is a `while_loop`.

  Example:
    >>> fori_loop(0, 4, lambda i, x: x + i, 0)
    Array(6, dtype=int32, weak_type=True)
  """
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  lower_dtype = dtypes.canonicalize_dtype(dtypes.dtype(lower))
  upper_dtype = dtypes.canonicalize_dtype(dtypes.dtype(upper))
  if lower_dtype != upper_dtype:
    dtype = dtypes.result_type(lower, upper)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
  try:
    lower_, upper_ = int(lower), int(upper)
  except ConcretizationTypeError:
    if unroll is not None and unroll is not False and unroll != 1:
      raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                       "statically known.") from None
    _, _, result = while_loop(_fori_cond, _fori_while_body(body_fun), (lower, upper, init_val))
    return result

  def scan_body(carry: tuple, _: Any) -> tuple:
    i, x = carry
    return (lax.add(i, lax._const(i, 1)), body_fun(i, x)), None
  length = max(upper_ - lower_, 0)
  if length == 0 and config.read("jax_disable_jit"):
    return init_val  # the Python loop of a scan cannot run zero times (JAX's shortcut)
  start = lower if isinstance(lower, core.Tracer) else np.array(lower_, lower_dtype)
  (_, result), _ = scan(scan_body, (start, init_val), None, length=length,
                        unroll=False if unroll is None else unroll)
  return result


def _fori_cond(carry: tuple) -> Any:
  i, upper, _ = carry
  return lax.lt(i, upper)


def _fori_while_body(body_fun: Callable) -> Callable:
  def body(carry: tuple) -> tuple:
    i, upper, x = carry
    return lax.add(i, lax._const(i, 1)), upper, body_fun(i, x)
  return body


@traceback_util.api_boundary
def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:
  """`stack([f(x) for x in xs])` over the leading axis of the pytree `xs`, as a `scan`.
  With `batch_size`, `f` is vmapped over chunks of that many examples per iteration.

  Example:
    >>> map(lambda x: x * 2, jnp.arange(3))
    Array([0, 2, 4], dtype=int32)
  """
  if batch_size is None:
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys
  leaves, tree = tree_util.tree_flatten(xs)
  n = leaves[0].shape[0]
  num_batches, rest = divmod(n, batch_size)
  head = [slicing.slice_in_dim(x, 0, num_batches * batch_size) for x in leaves]
  head = [shape_ops.reshape(x, (num_batches, batch_size, *x.shape[1:])) for x in head]
  def batched_f(*chunk: Any) -> Any:
    out_tree = []

    def flat_f(*xs: Any) -> list:
      leaves_out, t = tree_util.tree_flatten(f(tree.unflatten(xs)))
      out_tree.append(t)
      return leaves_out
    outs, dims = batching.batch_flat(flat_f, chunk, [0] * len(chunk), batch_size, None)
    return out_tree[0].unflatten([batching.bdim_at_front(o, d, batch_size)
                                  for o, d in zip(outs, dims)])
  ys = map(lambda chunk: batched_f(*chunk), head)
  ys = tree_util.tree_map(lambda y: shape_ops.reshape(y, (num_batches * batch_size,
                                                          *y.shape[2:])), ys)
  if rest:
    tail = [slicing.slice_in_dim(x, num_batches * batch_size, n) for x in leaves]
    ys_tail = batched_f(*tail)
    ys = tree_util.tree_map(lambda a, b: shape_ops.concatenate([a, b], 0), ys, ys_tail)
  return ys


@traceback_util.api_boundary
def associative_scan(fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False,
                     axis: int = 0) -> Any:
  """All prefix combinations of `elems` along `axis` under the associative `fn`, in
  O(log n) parallel steps (Blelloch's scan): `fn` is applied to whole slices at once.

  Example:
    >>> associative_scan(jnp.add, jnp.arange(5))
    Array([ 0,  1,  3,  6, 10], dtype=int32)
  """
  leaves, tree = tree_util.tree_flatten(elems)
  if not leaves:
    return elems
  axis = axis % np.ndim(leaves[0])
  sizes = {np.shape(x)[axis] for x in leaves}
  if len(sizes) != 1:
    raise ValueError(f"Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[np.shape(x) for x in leaves]})")
  if reverse:
    leaves = [shape_ops.rev(x, (axis,)) for x in leaves]

  def combine(a: list, b: list) -> list:
    out_leaves, out_tree = tree_util.tree_flatten(fn(tree.unflatten(a), tree.unflatten(b)))
    if out_tree != tree:
      raise ValueError(f"The structure of the output of `fn` ({out_tree}) does not match "
                       f"the structure of the input elements ({tree}).")
    return out_leaves

  def every_other(xs: list, start: int, stop: int | None = None) -> list:
    return [slicing.slice_in_dim(x, start, stop, 2, axis) for x in xs]

  def prefix(xs: list) -> list:
    n = np.shape(xs[0])[axis]
    if n < 2:
      return xs
    odd = prefix(combine(every_other(xs, 0, -1), every_other(xs, 1)))
    if n % 2:
      even = combine(odd, every_other(xs, 2))
    else:
      even = combine([slicing.slice_in_dim(x, 0, -1, axis=axis) for x in odd],
                     every_other(xs, 2))
    even = [shape_ops.concatenate([slicing.slice_in_dim(x, 0, 1, axis=axis), e], axis)
            for x, e in zip(xs, even)]
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]

  out = prefix(leaves)
  if reverse:
    out = [shape_ops.rev(x, (axis,)) for x in out]
  return tree.unflatten(out)


def _interleave(a: Any, b: Any, axis: int) -> Any:
  """a[0], b[0], a[1], b[1], … along `axis` (`a` as long as `b` or one longer), by
  interior padding both with zeros and adding."""
  ndim = np.ndim(a)
  same = np.shape(a)[axis] == np.shape(b)[axis]
  pad_a = [(0, 0, 0)] * ndim
  pad_b = [(0, 0, 0)] * ndim
  pad_a[axis] = (0, 1 if same else 0, 1)
  pad_b[axis] = (1, 0 if same else 1, 1)
  zero = lax._const(a, 0)
  combine = lax.bitwise_or if core.get_aval(a).dtype == np.bool_ else lax.add
  return combine(shape_ops.pad(a, zero, pad_a), shape_ops.pad(b, lax._const(b, 0), pad_b))
