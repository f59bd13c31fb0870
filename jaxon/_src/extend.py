"""What `jaxon.extend.backend`, `.random` and `.sharding` offer beyond re-exports: the
XLA client jaxon runs on, compile options, user-defined PRNG implementations and
sharding protos, in JAX's signatures."""
from __future__ import annotations

from typing import Any

import numpy as np
from jaxlib import _jax, xla_client

from jaxon._src import caches, prng_keys
from jaxon._src.xla import client


def backends() -> dict[str, _jax.Client]:
  """The started backends by platform: jaxon runs on one."""
  return {client.default_backend(): client.backend()}


def get_backend(platform: str | _jax.Client | None = None) -> _jax.Client:
  """The XLA client for `platform` (None: the default one)."""
  if platform is None or isinstance(platform, _jax.Client):
    return platform or client.backend()
  if platform.lower() != client.default_backend():
    raise RuntimeError(f"Unknown backend {platform}; jaxon runs on "
                       f"{client.default_backend()!r}.")
  return client.backend()


def backend_xla_version(platform: str | None = None) -> int | None:
  """The XLA version the backend reports, or None if it does not say."""
  return getattr(get_backend(platform), "xla_version", None)


def get_default_device() -> Any:
  """The device computations run on when nothing says otherwise."""
  return client.devices()[0]


def clear_in_memory_compilation_cache() -> None:
  caches.clear_all()


def register_backend_cache(cache: Any, for_what: str) -> None:
  """Registers a cache (with `cache_clear()`) to empty whenever jaxon's caches are."""
  caches.register(cache.cache_clear)


def get_compile_options(num_replicas: int, num_partitions: int,
                        device_assignment: Any = None,
                        env_options_overrides: dict[str, str] | None = None,
                        fdo_profile: bytes | None = None, detailed_logging: bool = True,
                        backend: Any = None) -> xla_client.CompileOptions:
  """XLA compile options for a program over `num_replicas` x `num_partitions` devices
  (`device_assignment`: device ids, replicas by partitions, default in order)."""
  options = xla_client.CompileOptions()
  build = options.executable_build_options
  build.num_replicas = num_replicas
  build.num_partitions = num_partitions
  options.num_replicas = num_replicas
  options.num_partitions = num_partitions
  if num_partitions > 1:
    build.use_spmd_partitioning = True
  if device_assignment is not None:
    ids = np.vectorize(lambda d: getattr(d, "id", d), otypes=[np.int32])(
        np.asarray(device_assignment, dtype=object))
    if ids.shape != (num_replicas, num_partitions):
      raise ValueError(f"device_assignment has shape {ids.shape}, not (num_replicas, "
                       f"num_partitions) = ({num_replicas}, {num_partitions})")
    options.device_assignment = xla_client.DeviceAssignment.create(ids)
  if env_options_overrides:
    options.env_option_overrides = list(env_options_overrides.items())
  if fdo_profile is not None:
    build.fdo_profile = fdo_profile
  return options


# ----------------------------------------------------------------------------- random


def seed_with_impl(impl: Any, seed: Any) -> Any:
  return prng_keys.random_seed(seed, prng_keys.resolve_impl(impl))


# ----------------------------------------------------------------------------- sharding


def get_op_sharding_from_serialized_proto(sharding: bytes) -> xla_client.OpSharding:
  proto = xla_client.OpSharding()
  proto.ParseFromString(sharding)
  return proto


def get_hlo_sharding_from_serialized_proto(sharding: bytes) -> xla_client.HloSharding:
  return xla_client.HloSharding.from_proto(get_op_sharding_from_serialized_proto(sharding))


def get_serialized_proto_from_hlo_sharding(sharding: xla_client.HloSharding) -> bytes:
  return sharding.to_proto().SerializeToString()

