"""The array operations the interpreters build values with: a filled array, a broadcast, a
transpose, an addition and a sum.

They are lax primitives, and lax sits above the interpreters (DESIGN.md's layers), so the
interpreters cannot import them. Instead lax hands them over once, when it is imported
(`install`); the interpreters call them through this module and never import lax.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def _not_installed(*args: Any, **kwargs: Any) -> Any:
  raise RuntimeError("jaxon's lax module has not been imported: import jaxon first")


# full(shape, fill_value, dtype) -> array
full: Callable[[Sequence[int], Any, Any], Any] = _not_installed
# broadcast_in_dim(x, shape, broadcast_dimensions) -> array
broadcast_in_dim: Callable[[Any, Sequence[int], Sequence[int]], Any] = _not_installed
# transpose(x, permutation) -> array
transpose: Callable[[Any, Sequence[int]], Any] = _not_installed
# add(x, y) -> array (same shape and dtype)
add: Callable[[Any, Any], Any] = _not_installed
# reduce_sum(x, axes) -> array
reduce_sum: Callable[[Any, Sequence[int]], Any] = _not_installed


def install(*, full_fn: Callable, broadcast_in_dim_fn: Callable, transpose_fn: Callable,
            add_fn: Callable, reduce_sum_fn: Callable) -> None:
  global full, broadcast_in_dim, transpose, add, reduce_sum
  full, broadcast_in_dim, transpose, add = full_fn, broadcast_in_dim_fn, transpose_fn, add_fn
  reduce_sum = reduce_sum_fn
