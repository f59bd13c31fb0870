"""jaxon.experimental.shard_map: the older spelling of `jaxon.shard_map` (JAX deprecates it),
with positional `mesh`, `in_specs`, `out_specs` and `check_rep` for `check_vma`."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from jaxon._src.shard_map import shard_map as _shard_map


def shard_map(f: Callable, mesh: Any, in_specs: Any, out_specs: Any,
              check_rep: bool = True) -> Callable:
  warnings.warn("jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map "
                "instead.", DeprecationWarning, stacklevel=2)
  return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                    check_vma=check_rep)
