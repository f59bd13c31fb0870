"""JAX's small sequence utilities (`jax._src.util`), which some of its public modules
re-export (`example_libraries.optimizers`, `experimental.ode`, ...)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any


def safe_zip(*args: Sequence[Any]) -> list[tuple[Any, ...]]:
  """`zip` to a list, refusing sequences of different lengths."""
  n = len(args[0])
  for arg in args[1:]:
    if len(arg) != n:
      raise ValueError(f"length mismatch: {list(map(len, args))}")
  return list(zip(*args))


def safe_map(f: Callable[..., Any], *args: Sequence[Any]) -> list[Any]:
  """`map` to a list, refusing sequences of different lengths."""
  n = len(args[0])
  for arg in args[1:]:
    if len(arg) != n:
      raise ValueError(f"length mismatch: {list(map(len, args))}")
  return list(map(f, *args))


def unzip2(xys: Iterable[tuple[Any, Any]]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
  """The firsts and the seconds of the pairs `xys`, as two tuples."""
  firsts, seconds = [], []
  for first, second in xys:
    firsts.append(first)
    seconds.append(second)
  return tuple(firsts), tuple(seconds)
