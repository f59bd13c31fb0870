"""Global configuration flags, read the way JAX reads them.

`config.update("jax_enable_x64", True)` or the environment variable `JAX_ENABLE_X64=1`
switches on 64-bit types; `jax_threefry_partitionable` picks the PRNG bit layout.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def _env_bool(name: str, default: bool) -> bool:
  value = os.environ.get(name.upper())
  if value is None:
    return default
  return value.strip().lower() in ("1", "true", "yes", "on")


class Config:
  """Holds the flags; attribute access reads a flag, `update` writes one."""

  def __init__(self) -> None:
    object.__setattr__(self, "_values", {})
    object.__setattr__(self, "_listeners", [])

  def define(self, name: str, default: Any, help: str) -> None:
    self._values[name] = default

  def update(self, name: str, value: Any) -> None:
    if name not in self._values:
      raise AttributeError(f"Unrecognized config option: {name!r}; "
                           f"known options are {sorted(self._values)}")
    self._values[name] = value
    for listener in self._listeners:
      listener(name, value)

  def on_update(self, listener: Callable[[str, Any], None]) -> None:
    """Registers a callback run after every update (caches that depend on flags)."""
    self._listeners.append(listener)

  def read(self, name: str) -> Any:
    return self._values[name]

  def __getattr__(self, name: str) -> Any:
    try:
      return self._values[name]
    except KeyError:
      raise AttributeError(f"Unrecognized config option: {name!r}") from None

  def __setattr__(self, name: str, value: Any) -> None:
    raise AttributeError("use config.update(name, value) to change a flag")


config = Config()
config.define("jax_enable_x64", _env_bool("jax_enable_x64", False),
              "Enable 64-bit types (float64, int64, complex128).")
config.define("jax_threefry_partitionable", _env_bool("jax_threefry_partitionable", True),
              "Generate random bits in a way that shards without communication.")
config.define("jax_default_matmul_precision", None,
              "Default precision of dot_general and conv_general_dilated.")
config.define("jax_disable_jit", _env_bool("jax_disable_jit", False),
              "Run jit-decorated functions op by op, for debugging.")


def x64_enabled() -> bool:
  return config._values["jax_enable_x64"]
