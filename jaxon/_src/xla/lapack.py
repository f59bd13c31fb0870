"""The LAPACK kernels jaxlib ships for the CPU, as XLA custom-call targets.

jaxlib's `_lapack` module holds typed-FFI handlers (`lapack_sgetrf_ffi`, …) whose LAPACK
function pointers it takes from SciPy's Cython bindings when `initialize()` runs; a handler
executed before that dereferences a null pointer. `kernel_name` therefore initializes and
registers every handler with XLA the first time a lowering asks for one (before anything that
calls them is compiled).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
from jaxlib import xla_client
from jaxlib.cpu import _lapack

# LAPACK's type letter for each dtype it supports.
_TYPE_LETTER = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}

# Kernels whose complex (Hermitian/unitary) variants LAPACK names differently.
_COMPLEX_NAMES = {"orgqr": "ungqr", "ormqr": "unmqr", "syevd": "heevd", "sytrd": "hetrd"}


@functools.cache
def _registered_targets() -> frozenset[str]:
  try:
    _lapack.initialize()
  except ImportError as e:
    raise RuntimeError("jaxon's CPU linear algebra calls LAPACK through SciPy, which is not "
                       "installed: `pip install scipy`.") from e
  targets = _lapack.registrations()
  for name, handler in targets.items():
    xla_client.register_custom_call_target(name, handler, platform="cpu", api_version=1)
  return frozenset(targets)


def kernel_name(routine: str, dtype: Any) -> str:
  """The custom-call target of LAPACK `routine` ("getrf", "syevd", …) for `dtype`,
  registered with XLA."""
  dtype = np.dtype(dtype)
  if dtype not in _TYPE_LETTER:
    raise TypeError(f"LAPACK's {routine} does not support dtype {dtype.name}; it works in "
                    "float32, float64, complex64 and complex128.")
  if dtype.kind == "c":
    routine = _COMPLEX_NAMES.get(routine, routine)
  name = f"lapack_{_TYPE_LETTER[dtype]}{routine}_ffi"
  if name not in _registered_targets():
    raise NotImplementedError(f"jaxlib provides no LAPACK kernel named {name}.")
  return name
