"""The one function every XLA compilation in jaxon goes through, under the name JAX gives
it (`jax._src.compiler.backend_compile_and_load`).

Libraries written for JAX wrap it to watch or veto compilations: chex's
`restrict_backends` replaces it with a wrapper that raises for forbidden platforms. So the
runtime calls it as an attribute of this module at each compilation (never a reference
taken at import), and such a replacement sees every program jaxon compiles.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def backend_compile_and_load(backend: Any, module: Any, executable_devices: Any,
                             options: Any, host_callbacks: Sequence[Any] = ()) -> Any:
  """Compiles `module` (StableHLO as bytes or an MLIR module) for `backend` (a jaxlib
  client; `backend.platform` names it) and loads it on `executable_devices`."""
  if host_callbacks:
    return backend.compile_and_load(module, executable_devices=executable_devices,
                                    compile_options=options,
                                    host_callbacks=list(host_callbacks))
  return backend.compile_and_load(module, executable_devices, options)
