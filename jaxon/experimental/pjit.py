"""`jax.experimental.pjit.pjit`: JAX's older name for `jit` with shardings, deprecated in
JAX 0.10.2 (which warns on use) and kept so that older code runs."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from jaxon._src.jit import jit


def pjit(fun: Callable, in_shardings: Any = None, out_shardings: Any = None,
         **jit_kwargs: Any) -> Any:
  """`jaxon.jit(fun, in_shardings=..., out_shardings=..., **jit_kwargs)`."""
  warnings.warn("jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` "
                "instead.", DeprecationWarning, stacklevel=2)
  return jit(fun, in_shardings=in_shardings, out_shardings=out_shardings, **jit_kwargs)
