"""The one piece of JAX's `jax._src.xla_bridge` that libraries read: `_backends`, the
backends started so far by platform (chex's `set_n_cpu_devices` checks it is empty before
setting `XLA_FLAGS`, which only count before the CPU backend starts)."""
from __future__ import annotations

from typing import Any

from jaxon._src.xla import client


def __getattr__(name: str) -> Any:
  if name == "_backends":
    return {client.default_backend(): client.backend()} if client.backend_started() else {}
  raise AttributeError(f"module 'jaxon._src.xla_bridge' has no attribute {name!r}")
