"""Registering foreign-function (FFI) handlers with XLA, and the C headers jaxlib ships to
build them against: the runtime side of `jaxon.ffi` (see `jaxon/_src/ffi.py`)."""
from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from typing import Any

import jaxlib
from jaxlib import xla_client


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
  """Registers `fn` with XLA as the custom-call target `name` on `platform`.

  `fn` is a PyCapsule holding a handler (see `pycapsule`), or a dict from FFI stage names
  ("execute", "instantiate", ...) to such capsules. `api_version` 1 is the typed FFI, 0
  the legacy custom-call ABI; `kwargs` go to jaxlib's `register_custom_call_target`."""
  return xla_client.register_custom_call_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
  """Removed in JAX: jaxlib now assigns type ids (use `register_ffi_type`)."""
  raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration: Mapping[str, Any],
                      platform: str = "cpu") -> None:
  """Registers a user type that FFI handlers exchange (`{"type_id": capsule,
  "type_info": capsule}`), so that XLA can pass it between handlers' stages."""
  return xla_client.register_custom_type(name, type_registration, platform=platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
  """Tells XLA's SPMD partitioner that target `name` may be split along its leading
  (batch) dimension."""
  xla_client.register_custom_call_as_batch_partitionable(name)


def include_dir() -> str:
  """The directory of the C headers jaxlib ships (`xla/ffi/api/ffi.h`, ...), to compile
  FFI handlers against."""
  root = jaxlib.__file__ and os.path.dirname(os.path.abspath(jaxlib.__file__))
  return os.path.join(root or list(jaxlib.__path__)[0], "include")


def pycapsule(funcptr: Any) -> Any:
  """A PyCapsule holding the address of `funcptr` (a ctypes function of a loaded
  library), the form `register_ffi_target` takes."""
  destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
  builder = ctypes.pythonapi.PyCapsule_New
  builder.restype = ctypes.py_object
  builder.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
  return builder(funcptr, None, destructor(0))
