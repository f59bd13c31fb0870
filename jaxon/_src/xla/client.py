"""The XLA CPU client and its devices: the runtime's connection to jaxlib."""
from __future__ import annotations

import functools
import threading

from jaxlib import _jax, xla_client

from jaxon._src.config import config

Device = _jax.Device


_backend_lock = threading.Lock()


@functools.cache
def backend() -> _jax.Client:
  # Locked: threads that first use jaxon at the same moment would each make a client, and
  # buffers of one client cannot be arguments of another's executables.
  with _backend_lock:
    return _make_backend()


@functools.cache
def _make_backend() -> _jax.Client:
  _check_platforms(config.jax_platforms)
  # jaxlib records a Python traceback with every execution unless told not to (JAX turns
  # it off when imported; without JAX nobody does): about 80 bytes a call, never freed.
  _jax.set_tracebacks_enabled(False)
  return xla_client.make_cpu_client()


# Platforms JAX knows; jaxon skips them (as JAX skips one without its plugin) when the CPU
# comes later in `jax_platforms`.
_OTHER_PLATFORMS = ("cuda", "rocm", "gpu", "tpu", "METAL")


def _check_platforms(platforms: str | None) -> None:
  """Honours `jax_platforms`, read when the backend starts (as JAX reads it): jaxon has
  the CPU only, so the list must name it, after nothing JAX does not know."""
  if not platforms:
    return
  names = [p.strip() for p in platforms.split(",")]
  for name in names:
    if name == "cpu":
      return
    if name not in _OTHER_PLATFORMS or name == names[-1]:
      raise RuntimeError(f"Unable to initialize backend '{name}': Backend '{name}' is not in "
                         "the list of known backends: ['cpu']. (set JAX_PLATFORMS='' to "
                         "automatically choose an available backend)")


def devices(backend_name: str | None = None) -> list[Device]:
  """The devices jaxon computes on (the CPU)."""
  if backend_name not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {backend_name!r}: jaxon runs on 'cpu'")
  return list(backend().devices())


def local_devices() -> list[Device]:
  return list(backend().local_devices())


def device_count() -> int:
  return backend().device_count()


def default_backend() -> str:
  return "cpu"


@functools.cache
def device_list() -> xla_client.DeviceList:
  return xla_client.DeviceList((devices()[0],))


@functools.cache
def default_sharding() -> _jax.GSPMDSharding:
  """A replicated sharding over the default device, the one every array lives on."""
  return _jax.GSPMDSharding(device_list(), xla_client.HloSharding.replicate())
