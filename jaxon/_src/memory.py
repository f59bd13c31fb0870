"""Memory spaces an array's type may name (JAX's `jax.memory.Space`). On the CPU every
array is in `Device` memory, which is the host's; jaxon's avals carry no memory space."""
from __future__ import annotations

import enum


class MemorySpace(enum.Enum):
  Device = enum.auto()
  Host = enum.auto()
  Any = enum.auto()

  def __repr__(self) -> str:
    return f"MemorySpace.{self.name}"

  __hash__ = object.__hash__  # by identity, as JAX's (Enum's hashes the name)

