"""Products of jaxon.numpy: dot, vdot, inner, outer, matmul, tensordot, kron.

Each is one `lax.dot_general` (plus reshapes where NumPy's semantics need them) of the
operands promoted to their common dtype, which is also passed as `preferred_element_type`
as JAX does: a product of an int8 and an int32 array is int32, a product of bools is a bool
(the logical "or" of "and"s), and a Python scalar takes the array's dtype.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src.lax import dot_general as lax_dot
from jaxon._src.lax import lax, shape_ops
from jaxon._src.lax import utils as lax_utils
from jaxon._src.numpy import ufuncs, util
from jaxon._src.xla.eager_plans import memoize_eager_operations


def _contract(a: Any, b: Any, contract: tuple[Sequence[int], Sequence[int]],
              batch: tuple[Sequence[int], Sequence[int]], precision: lax_dot.PrecisionLike,
              preferred_element_type: Any) -> Any:
  """`dot_general` of the operands promoted to their common dtype, accumulating in that
  dtype or in `preferred_element_type`; the result is weakly typed only when both operands
  are (and no `preferred_element_type` was asked for)."""
  a, b = util.promote_dtypes(a, b)
  if preferred_element_type is None:
    out_dtype, weak = dtypes.result_type(a, b, return_weak_type_flag=True)
  else:
    out_dtype, weak = dtypes.canonicalize_dtype(preferred_element_type), False
  out = lax_dot.dot_general(a, b, (contract, batch), precision=precision,
                            preferred_element_type=out_dtype)
  return lax._convert_element_type(out, out_dtype, weak)


def _ravel(x: Any) -> Any:
  return shape_ops.reshape(x, (math.prod(np.shape(x)),))


@memoize_eager_operations
def dot(a: Any, b: Any, *, precision: lax_dot.PrecisionLike = None,
        preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
  """NumPy's `dot`: a scalar operand multiplies; otherwise the last axis of `a` contracts
  with `b`'s only axis (1-D) or its second-to-last axis, and the result has `a`'s other axes
  followed by `b`'s (they are stacked, not broadcast as in `matmul`).

  Example: `dot(jnp.ones((2, 3)), jnp.ones((4, 3, 5))).shape` is `(2, 4, 5)`.
  """
  util.check_arraylike("dot", a, b)
  a_ndim, b_ndim = np.ndim(a), np.ndim(b)
  if a_ndim == 0 or b_ndim == 0:
    contract: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
  else:
    contract = ((a_ndim - 1,), (max(b_ndim - 2, 0),))
    _check_contracted_sizes("dot", a, b, contract)
  out = _contract(a, b, contract, ((), ()), precision, preferred_element_type)
  return out if out_sharding is None else util.out_sharded(out, out_sharding, "dot")


@memoize_eager_operations
def vdot(a: Any, b: Any, *, precision: lax_dot.PrecisionLike = None,
         preferred_element_type: Any = None) -> Any:
  """The dot product of `a` and `b` flattened, conjugating `a` when it is complex.

  Example: `vdot(jnp.array([1j, 2j]), jnp.array([1., 2.]))` is `-5j`.
  """
  util.check_arraylike("vdot", a, b)
  if np.size(a) != np.size(b):
    raise ValueError(f"vdot requires operands of equal size, got shapes {np.shape(a)} and "
                     f"{np.shape(b)}.")
  if dtypes.is_complex(dtypes.dtype(a)):
    a = lax.conj(a)
  return dot(_ravel(a), _ravel(b), precision=precision,
             preferred_element_type=preferred_element_type)


@memoize_eager_operations
def inner(a: Any, b: Any, *, precision: lax_dot.PrecisionLike = None,
          preferred_element_type: Any = None) -> Any:
  """Contracts the last axes of `a` and `b` (a scalar operand multiplies); the result has
  `a`'s other axes followed by `b`'s."""
  util.check_arraylike("inner", a, b)
  a_ndim, b_ndim = np.ndim(a), np.ndim(b)
  contract = ((), ()) if a_ndim == 0 or b_ndim == 0 else ((a_ndim - 1,), (b_ndim - 1,))
  _check_contracted_sizes("inner", a, b, contract)
  return _contract(a, b, contract, ((), ()), precision, preferred_element_type)


@memoize_eager_operations
def outer(a: Any, b: Any, out: None = None) -> Any:
  """`outer(a, b)[i, j] = a.ravel()[i] * b.ravel()[j]`."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.outer is not supported: jaxon "
                              "arrays are immutable.")
  util.check_arraylike("outer", a, b)
  return ufuncs.multiply(shape_ops.reshape(a, (np.size(a), 1)),
                         shape_ops.reshape(b, (1, np.size(b))))


def tensordot(a: Any, b: Any, axes: int | Sequence[Any] = 2, *,
              precision: lax_dot.PrecisionLike = None,
              preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
  """Sums products over the given axes: `axes=k` contracts the last k axes of `a` with the
  first k of `b`; `axes=(a_axes, b_axes)` pairs them explicitly. The result has `a`'s
  remaining axes followed by `b`'s.

  Example: `tensordot(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5))).shape` is `(2, 5)`.
  """
  util.check_arraylike("tensordot", a, b)
  contract = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
  _check_contracted_sizes("tensordot", a, b, contract)
  out = _contract(a, b, contract, ((), ()), precision, preferred_element_type)
  return out if out_sharding is None else util.out_sharded(out, out_sharding, "tensordot")


def _tensordot_axes(axes: Any, a_ndim: int, b_ndim: int
                    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
  if isinstance(axes, (int, np.integer)):
    if not 0 <= axes <= min(a_ndim, b_ndim):
      raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                      f"({a_ndim} and {b_ndim}) or is negative.")
    return tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))
  if isinstance(axes, (list, tuple)) and len(axes) == 2:
    a_axes, b_axes = (tuple(x) if isinstance(x, (list, tuple)) else (x,) for x in axes)
    if len(a_axes) != len(b_axes):
      raise TypeError(f"tensordot requires axes lists to have equal length, got {a_axes} and "
                      f"{b_axes}.")
    return (tuple(lax_utils.canonicalize_axis(int(i), a_ndim) for i in a_axes),
            tuple(lax_utils.canonicalize_axis(int(i), b_ndim) for i in b_axes))
  raise TypeError(f"tensordot axes argument must be an int or a pair of axis sequences, got "
                  f"{axes!r}.")


def _check_contracted_sizes(fun_name: str, a: Any, b: Any,
                            contract: tuple[Sequence[int], Sequence[int]]) -> None:
  a_shape, b_shape = np.shape(a), np.shape(b)
  a_sizes = tuple(a_shape[i] for i in contract[0])
  b_sizes = tuple(b_shape[i] for i in contract[1])
  if a_sizes != b_sizes:
    raise TypeError(f"{fun_name}: shapes {a_shape} and {b_shape} are not aligned: contracted "
                    f"axes {tuple(contract[0])} and {tuple(contract[1])} have sizes {a_sizes} "
                    f"and {b_sizes}.")


@memoize_eager_operations
def matmul(a: Any, b: Any, *, precision: lax_dot.PrecisionLike = None,
           preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
  """NumPy's `matmul` (the `@` operator): matrix products over the last two axes, with the
  leading (batch) axes broadcast against each other. A 1-D operand is a vector: its axis
  is contracted and does not appear in the result.

  Example: `matmul(jnp.ones((5, 1, 2, 3)), jnp.ones((4, 3, 6))).shape` is `(5, 4, 2, 6)`.
  """
  util.check_arraylike("matmul", a, b)
  for i, x in enumerate((a, b)):
    if np.ndim(x) < 1:
      raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                       f"shape {np.shape(x)}; use jnp.multiply for scalars.")
  a_mat, b_mat = np.ndim(a) > 1, np.ndim(b) > 1
  plan = _MatmulPlan(np.shape(a), np.shape(b))
  a = shape_ops.squeeze(a, plan.a_squeeze) if plan.a_squeeze else a
  b = shape_ops.squeeze(b, plan.b_squeeze) if plan.b_squeeze else b
  contract = ((np.ndim(a) - 1,), (np.ndim(b) - 1 - b_mat,))
  _check_contracted_sizes("matmul", a, b, contract)
  out = _contract(a, b, contract, (plan.a_batch, plan.b_batch), precision,
                  preferred_element_type)
  # dot_general puts batch axes first, then a's free axes, then b's; NumPy interleaves them.
  order = plan.batch + plan.a_free + [plan.n_batch] * a_mat + plan.b_free + [
      plan.n_batch + a_mat] * b_mat
  perm = tuple(int(i) for i in np.argsort(order))
  out = out if perm == tuple(range(len(perm))) else shape_ops.transpose(out, perm)
  return out if out_sharding is None else util.out_sharded(out, out_sharding, "matmul")


class _MatmulPlan:
  """How matmul maps each broadcast batch axis onto dot_general: as a batch dimension of
  both operands (equal sizes), or as a free dimension of the operand that has it while the
  other has none or size 1 (which is squeezed away)."""

  def __init__(self, a_shape: tuple[int, ...], b_shape: tuple[int, ...]):
    a_lead = a_shape[:-2] if len(a_shape) > 1 else ()
    b_lead = b_shape[:-2] if len(b_shape) > 1 else ()
    self.n_batch = n = max(len(a_lead), len(b_lead))
    self.batch: list[int] = []      # output axes that are dot_general batch dimensions
    self.a_free: list[int] = []     # output axes taken from a alone
    self.b_free: list[int] = []
    self.a_squeeze: tuple[int, ...] = ()
    self.b_squeeze: tuple[int, ...] = ()
    a_batch, b_batch = [], []
    for i in range(n):
      ia, ib = i - (n - len(a_lead)), i - (n - len(b_lead))
      sa = a_lead[ia] if ia >= 0 else None
      sb = b_lead[ib] if ib >= 0 else None
      if sa is not None and sa == sb:
        self.batch.append(i)
        a_batch.append(ia)
        b_batch.append(ib)
      elif sa is None or (sa == 1 and sb is not None):
        self.b_free.append(i)
        self.a_squeeze += (ia,) if sa is not None else ()
      elif sb is None or sb == 1:
        self.a_free.append(i)
        self.b_squeeze += (ib,) if sb is not None else ()
      else:
        raise ValueError(f"matmul: batch dimensions of shapes {a_shape} and {b_shape} do not "
                         "broadcast.")
    self.a_batch = _after_squeeze(a_batch, self.a_squeeze)
    self.b_batch = _after_squeeze(b_batch, self.b_squeeze)


def _after_squeeze(dims: Sequence[int], squeezed: Sequence[int]) -> tuple[int, ...]:
  return tuple(d - sum(s < d for s in squeezed) for d in dims)


@memoize_eager_operations
def kron(a: Any, b: Any) -> Any:
  """The Kronecker product: block `(i, j, …)` of the result is `a[i, j, …] * b` (the
  operands are first given equal ranks by leading size-1 axes)."""
  util.check_arraylike("kron", a, b)
  a_shape, b_shape = np.shape(a), np.shape(b)
  ndim = max(len(a_shape), len(b_shape))
  a_shape = (1,) * (ndim - len(a_shape)) + a_shape
  b_shape = (1,) * (ndim - len(b_shape)) + b_shape
  # a's axes interleaved with size-1 axes, b's the other way round: their product broadcasts
  # to (a0, b0, a1, b1, …), which reshapes to (a0 * b0, a1 * b1, …).
  a_spread = shape_ops.reshape(a, tuple(d for s in a_shape for d in (s, 1)))
  b_spread = shape_ops.reshape(b, tuple(d for s in b_shape for d in (1, s)))
  out = ufuncs.multiply(a_spread, b_spread)
  return shape_ops.reshape(out, tuple(x * y for x, y in zip(a_shape, b_shape)))

