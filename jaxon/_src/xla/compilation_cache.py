"""The persistent compilation cache: compiled programs saved to a directory, so that a later
process running the same program loads it instead of compiling it again.

Set by `jax_compilation_cache_dir` (or `set_cache_dir`), as in JAX. An entry's name is a
SHA-256 fingerprint of everything that decides the compiled code: the StableHLO module's
bytes, the serialized compile options, the jaxlib version, the backend's platform and
version, its devices, and the host CPU (a program compiled for one machine's vector
instructions must not run on another). Only programs that took at least
`jax_persistent_cache_min_compile_time_secs` to compile are written (JAX's default: 1 s), and
programs that call back into Python (`jax.debug.print`, `pure_callback`) never are: their
callbacks are Python objects of the process that compiled them.

An entry is a header (magic, format version, the fingerprint again, a SHA-256 of the
payload, the compile time) followed by the zlib-compressed serialized executable. It is
written to a temporary file and renamed into place, so readers see a whole entry or none.
An entry that is truncated, corrupt or written for another fingerprint is ignored with a
warning (and overwritten by the fresh compilation); a directory that cannot be written
warns and compiles. Deserializing an executable may run code from the file, so, as JAX
warns, the cache directory must be trusted.
"""
from __future__ import annotations

import collections
import hashlib
import logging
import os
import platform
import re
import struct
import tempfile
import threading
import time
import warnings
import zlib
from typing import Any

import jaxlib
from jaxlib import _jax, xla_client

from jaxon._src import caches, compiler
from jaxon._src import config as config_mod

logger = logging.getLogger(__name__)

_MAGIC = b"JAXONXC\x01"
_HEADER = struct.Struct(">8s32s32sd")  # magic, fingerprint, payload digest, compile secs
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")  # what a program's name may put in a file name

# What the cache did in this process, for tests and for users checking that it is used.
stats = {"hits": 0, "misses": 0, "writes": 0, "errors": 0}


def enabled() -> bool:
  values = config_mod.values
  return values.jax_compilation_cache_dir is not None and values.jax_enable_compilation_cache


def set_cache_dir(path: str) -> None:
  """Sets the persistent compilation cache directory (as `jax_compilation_cache_dir`).

  The cache is trusted: loading an entry may run code from it, so do not point it at a
  directory that others can write.
  """
  config_mod.config.update("jax_compilation_cache_dir", path)


def reset_cache() -> None:
  """Forgets this process's cache statistics; the directory and the flag are kept (jaxon
  opens the directory afresh on every compilation, so there is nothing else to reset)."""
  for name in stats:
    stats[name] = 0


# Programs compiled in this process, by their text, options and devices, most recently used
# last: a jitted function made anew (`jit(lambda ...)` in a loop, or a test), or an eager
# operation whose signature was evicted, gets the same module again; it is not compiled
# twice. Bounded: each holds its machine code. While the compiler hook is replaced (chex's
# `restrict_backends` vetoes compilations through it) every program goes to the hook, as in
# JAX, which compiles a function made anew again.
_MAX_LOADED = 512
_loaded: collections.OrderedDict[tuple, _jax.LoadedExecutable] = collections.OrderedDict()
_loaded_lock = threading.Lock()
caches.register(_loaded.clear)
_UNWATCHED_HOOK = compiler.backend_compile_and_load


def compile_and_load(backend: _jax.Client, module_bytes: bytes,
                     devices: xla_client.DeviceList, options: xla_client.CompileOptions,
                     name: str) -> _jax.LoadedExecutable:
  """`backend.compile_and_load`, answered from this process's programs, else from the
  cache directory when it holds this program; saves what it compiles there when it is
  worth it."""
  if compiler.backend_compile_and_load is not _UNWATCHED_HOOK:
    return _compile_and_load(backend, module_bytes, devices, options, name)
  key = (id(backend), module_bytes, options.SerializeAsString(),
         tuple(d.id for d in devices))
  with _loaded_lock:
    loaded = _loaded.get(key)
  if loaded is None:
    loaded = _compile_and_load(backend, module_bytes, devices, options, name)
  with _loaded_lock:
    _loaded[key] = loaded
    _loaded.move_to_end(key)
    if len(_loaded) > _MAX_LOADED:
      _loaded.popitem(last=False)
  return loaded


def _compile_and_load(backend: _jax.Client, module_bytes: bytes,
                      devices: xla_client.DeviceList, options: xla_client.CompileOptions,
                      name: str) -> _jax.LoadedExecutable:
  if not enabled():
    return compiler.backend_compile_and_load(backend, module_bytes, devices, options)
  key = _fingerprint(backend, module_bytes, devices, options)
  file_name = f"{_SAFE_NAME.sub('_', name)[:64]}-{key.hex()}"
  path = os.path.join(config_mod.values.jax_compilation_cache_dir, file_name)
  loaded = _guarded(f"reading persistent compilation cache entry for '{name}'",
                    _read, backend, path, key, devices, options)
  if loaded is not None:
    stats["hits"] += 1
    _log(logging.WARNING if config_mod.values.jax_log_compiles else logging.DEBUG,
         "Persistent compilation cache hit for '%s' with key %r", name, path)
    return loaded
  stats["misses"] += 1
  _log(_explain_level(), "PERSISTENT COMPILATION CACHE MISS for '%s' with key %r", name, path)
  start = time.monotonic()
  loaded = compiler.backend_compile_and_load(backend, module_bytes, devices, options)
  compile_secs = time.monotonic() - start
  min_secs = config_mod.values.jax_persistent_cache_min_compile_time_secs
  if compile_secs < min_secs:
    _log(_explain_level(), "Not writing persistent cache entry for '%s' because it took "
         "< %.2f seconds to compile (%.2fs)", name, min_secs, compile_secs)
  else:
    _guarded(f"writing persistent compilation cache entry for '{name}'",
             _write, loaded, path, key, compile_secs)
  return loaded


def _read(backend: _jax.Client, path: str, key: bytes, devices: xla_client.DeviceList,
          options: xla_client.CompileOptions) -> _jax.LoadedExecutable | None:
  try:
    with open(path, "rb") as f:
      entry = f.read()
  except (FileNotFoundError, NotADirectoryError):  # not written yet (or cannot be)
    return None
  if len(entry) < _HEADER.size:
    raise ValueError(f"the entry {path} is truncated ({len(entry)} bytes)")
  magic, stored_key, digest, _ = _HEADER.unpack_from(entry)
  payload = entry[_HEADER.size:]
  if magic != _MAGIC or stored_key != key:
    raise ValueError(f"{path} is not an entry of this jaxon cache for this program")
  if hashlib.sha256(payload).digest() != digest:  # never hand jaxlib damaged bytes
    raise ValueError(f"the entry {path} is corrupt (its checksum does not match)")
  return backend.deserialize_executable(zlib.decompress(payload), devices, options)


def _write(loaded: _jax.LoadedExecutable, path: str, key: bytes, compile_secs: float) -> None:
  payload = zlib.compress(loaded.serialize(), 1)
  entry = _HEADER.pack(_MAGIC, key, hashlib.sha256(payload).digest(), compile_secs) + payload
  min_size = config_mod.values.jax_persistent_cache_min_entry_size_bytes
  if len(entry) < min_size:
    _log(_explain_level(), "Not writing persistent cache entry %r since its size (%d bytes) "
         "is less than threshold (%d bytes)", path, len(entry), min_size)
    return
  directory = os.path.dirname(path)
  os.makedirs(directory, exist_ok=True)
  fd, temp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
  try:
    with os.fdopen(fd, "wb") as f:
      f.write(entry)
    os.replace(temp, path)  # atomic: a concurrent reader sees the old entry or this one
  except BaseException:
    os.unlink(temp)
    raise
  stats["writes"] += 1
  _log(_explain_level(), "Writing %r to persistent compilation cache", path)


def _guarded(what: str, action: Any, *args: Any) -> Any:
  """Runs a cache read or write; a failure warns (or raises, with
  `jax_raise_persistent_cache_errors`) and the program compiles as without a cache."""
  try:
    return action(*args)
  except Exception as e:
    if config_mod.values.jax_raise_persistent_cache_errors:
      raise
    stats["errors"] += 1
    warnings.warn(f"Error {what}: {type(e).__name__}: {e}", stacklevel=3)
    return None


def _fingerprint(backend: _jax.Client, module_bytes: bytes, devices: xla_client.DeviceList,
                 options: xla_client.CompileOptions) -> bytes:
  h = hashlib.sha256()
  for part in (module_bytes, options.SerializeAsString(), _environment(backend),
               repr([(d.id, d.device_kind) for d in devices]).encode()):
    h.update(len(part).to_bytes(8, "little"))
    h.update(part)
  return h.digest()


_environments: dict[int, bytes] = {}


def _environment(backend: _jax.Client) -> bytes:
  """jaxlib, backend and host CPU: what else decides the compiled code. Computed once."""
  env = _environments.get(id(backend))
  if env is None:
    parts = [jaxlib.__version__, str(xla_client._version), backend.platform,
             backend.platform_version, str(backend.device_count()), platform.machine(),
             _cpu_features()]
    env = _environments[id(backend)] = "\0".join(parts).encode()
  return env


def _cpu_features() -> str:
  try:
    with open("/proc/cpuinfo") as f:
      return next((line for line in f if line.startswith(("flags", "Features"))), "")
  except OSError:
    return platform.processor()


def _explain_level() -> int:
  return logging.WARNING if config_mod.values.jax_explain_cache_misses else logging.DEBUG


def _log(level: int, message: str, *args: Any) -> None:
  if logger.isEnabledFor(level):
    logger.log(level, message, *args)
