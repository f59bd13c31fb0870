"""Names for the operations a function stages (`named_scope`, `named_call`).

JAX adds the names to the HLO operations' metadata, so profiles and dumps show them; jaxon
keeps the stack (`current_name_stack`) but does not attach it to lowered operations yet.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_name_stack = threading.local()


@contextmanager
def named_scope(name: str) -> Iterator[None]:
  """Names the operations staged inside (JAX adds the name to their HLO metadata;
  jaxon keeps the stack, readable with `current_name_stack`)."""
  if not isinstance(name, str):
    raise TypeError(f"named_scope name argument must be a string, got {name!r}")
  stack = getattr(_name_stack, "names", ())
  _name_stack.names = (*stack, name)
  try:
    yield
  finally:
    _name_stack.names = stack


def current_name_stack() -> str:
  return "/".join(getattr(_name_stack, "names", ()))


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
  """`fun` run inside `named_scope(name)` (default: its `__name__`)."""
  scope = name or getattr(fun, "__name__", "named_call")

  @functools.wraps(fun)
  def named(*args: Any, **kwargs: Any) -> Any:
    with named_scope(scope):
      return fun(*args, **kwargs)
  return named
