"""The XLA client and its devices: the runtime's connection to jaxlib.

The backend is the CPU, with `jax_num_cpu_devices` devices (or as many as
`XLA_FLAGS=--xla_force_host_platform_device_count=N` asks jaxlib for), unless the CUDA PJRT
plugin of JAX's `jax-cuda*-pjrt` wheel is installed: then the GPU, as JAX chooses it, and
`JAX_PLATFORMS=cpu` keeps the CPU. Device 0 is the default device.
"""
from __future__ import annotations

import functools
import glob
import os
import sys
import threading
import warnings
from collections.abc import Sequence

from jaxlib import _jax, xla_client

from jaxon._src import distributed
from jaxon._src.config import config

Device = _jax.Device


_backend_lock = threading.Lock()
_backend_started = False


def _parse_num_cpu_devices(value: object) -> int:
  """The flag only counts before the backend starts (it is read once, then): JAX refuses
  a later update rather than ignore it, and so does jaxon."""
  if _backend_started:
    raise RuntimeError("jax_num_cpu_devices config should be updated before backends are "
                       "initialized i.e. before any JAX operation is executed. You should "
                       "initialize this config immediately after `import jax`.")
  return int(value)


num_cpu_devices = config.define(
    "jax_num_cpu_devices", -1,
    "Number of CPU devices of the backend (-1: one, or what XLA_FLAGS' "
    "--xla_force_host_platform_device_count says). Set it before the first computation.",
    parse=_parse_num_cpu_devices)


def backend_started() -> bool:
  return _backend_started


@functools.cache
def backend() -> _jax.Client:
  # Locked: threads that first use jaxon at the same moment would each make a client, and
  # buffers of one client cannot be arguments of another's executables.
  with _backend_lock:
    return _make_backend()


@functools.cache
def _make_backend() -> _jax.Client:
  global _backend_started
  platform = _check_platforms(config.jax_platforms)
  # jaxlib records a Python traceback with every execution unless told not to (JAX turns
  # it off when imported; without JAX nobody does): about 80 bytes a call, never freed.
  _jax.set_tracebacks_enabled(False)
  _backend_started = True
  if platform == "cuda":
    try:
      return _make_cuda_backend(find_cuda_plugin())
    except Exception as err:  # noqa: BLE001 (jaxlib raises several classes here)
      if config.jax_platforms:
        raise RuntimeError(f"Unable to initialize backend 'cuda': {err} (set "
                           "JAX_PLATFORMS=cpu to run on the CPU)") from err
      # As JAX: an installed plugin that cannot start (no GPU, no CUDA libraries) leaves
      # the CPU, with a warning, unless the user asked for the GPU by name.
      warnings.warn(f"The CUDA PJRT plugin is installed but could not start ({err}); "
                    "falling back to cpu. Set JAX_PLATFORMS=cpu to silence this warning.",
                    RuntimeWarning, stacklevel=2)
  n = config.jax_num_cpu_devices
  devices = {"num_devices": n} if n > 0 else {}
  return xla_client.make_cpu_client(**distributed.backend_options(), **devices)


# ----------------------------------------------------------------------------- platforms

# Platforms JAX knows; jaxon skips them (as JAX skips one without its plugin) when one it
# has comes later in `jax_platforms`.
_OTHER_PLATFORMS = ("cuda", "rocm", "gpu", "tpu", "METAL")
_PLUGIN_ENV = "PJRT_NAMES_AND_LIBRARY_PATHS"


def find_cuda_plugin(search_path: Sequence[str] | None = None) -> str | None:
  """The CUDA PJRT plugin's shared library, found as JAX finds it without importing its
  `jax_plugins` package (whose `initialize` imports jax): `PJRT_NAMES_AND_LIBRARY_PATHS`
  (`cuda:/path/lib.so`), else `jax_plugins/xla_cuda*/xla_cuda_plugin.so` on `sys.path`
  (what the `jax-cuda12-pjrt` / `jax-cuda13-pjrt` wheels install)."""
  for entry in os.environ.get(_PLUGIN_ENV, "").split(","):
    name, _, path = entry.partition(os.path.pathsep)
    if name == "cuda" and path:
      return path
  for directory in sys.path if search_path is None else search_path:
    found = sorted(glob.glob(os.path.join(directory or ".", "jax_plugins", "xla_cuda*",
                                          "xla_cuda_plugin.so")))
    if found:
      return found[-1]  # cuda13 before cuda12 when both are there
  return None


def _check_platforms(platforms: str | None) -> str:
  """'cuda' or 'cpu', honouring `jax_platforms` (read when the backend starts, as JAX
  reads it): without it, the GPU when its plugin is installed; with it, the first listed
  platform jaxon has, after nothing JAX does not know."""
  if not platforms:
    return "cuda" if find_cuda_plugin() else "cpu"
  names = [p.strip() for p in platforms.split(",")]
  for name in names:
    if name == "cpu":
      return "cpu"
    if name in ("cuda", "gpu") and find_cuda_plugin():
      return "cuda"
    if name not in _OTHER_PLATFORMS or name == names[-1]:
      raise RuntimeError(f"Unable to initialize backend '{name}': Backend '{name}' is not in "
                         "the list of known backends: ['cpu']. (set JAX_PLATFORMS='' to "
                         "automatically choose an available backend)")
  return "cpu"


def _make_cuda_backend(library_path: str) -> _jax.Client:
  """The GPU client of the CUDA PJRT plugin (its own collectives: no gloo). Not run on
  this project's machines, which have no GPU."""
  if not xla_client.pjrt_plugin_loaded("cuda"):
    xla_client.load_pjrt_plugin_dynamically("cuda", library_path)
  if not xla_client.pjrt_plugin_initialized("cuda"):
    xla_client.initialize_pjrt_plugin("cuda")
  state = distributed.global_state
  state.backend_started = True  # `distributed.initialize` after this point is refused
  job = ({"node_id": state.process_id, "num_nodes": state.num_processes}
         if state.client is not None else {})
  return xla_client.make_c_api_client("cuda", job, state.client)


# ----------------------------------------------------------------------------- devices


def devices(backend_name: str | None = None) -> list[Device]:
  """Every device of the backend, all processes' (the default device first)."""
  if backend_name not in (None, default_backend()) and not (
      backend_name == "gpu" and default_backend() == "cuda"):
    raise RuntimeError(f"Unknown backend {backend_name!r}: jaxon runs on "
                       f"{default_backend()!r}")
  return list(backend().devices())


def local_devices() -> list[Device]:
  return list(backend().local_devices())


def device_count() -> int:
  return backend().device_count()


def process_index() -> int:
  return backend().process_index()


def process_count() -> int:
  return len({d.process_index for d in backend().devices()})


def default_backend() -> str:
  return "cuda" if backend().platform in ("cuda", "gpu") else "cpu"


@functools.cache
def device_list() -> xla_client.DeviceList:
  return xla_client.DeviceList((local_devices()[0],))


@functools.cache
def default_sharding() -> _jax.GSPMDSharding:
  """A replicated sharding over the default device, the one every array lives on unless
  placed elsewhere."""
  return _jax.GSPMDSharding(device_list(), xla_client.HloSharding.replicate())
