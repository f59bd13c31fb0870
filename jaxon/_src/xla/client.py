"""The XLA CPU client and its devices: the runtime's connection to jaxlib."""
from __future__ import annotations

import functools
from jaxlib import _jax, xla_client

Device = _jax.Device


@functools.cache
def backend() -> _jax.Client:
  # jaxlib records a Python traceback with every execution unless told not to (JAX turns
  # it off when imported; without JAX nobody does): about 80 bytes a call, never freed.
  _jax.set_tracebacks_enabled(False)
  return xla_client.make_cpu_client()


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
