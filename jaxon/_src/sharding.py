"""`Sharding`: how an array's data is laid out over devices.

jaxon runs on one device, but every array's `.sharding` is still one of jaxlib's sharding
objects (replicated over that device). Their common base class is jaxlib's `Sharding`,
which is the very class JAX exports as `jax.sharding.Sharding`; so
`isinstance(x.sharding, Sharding)` holds as in JAX, and annotations written against
`jax.sharding.Sharding` resolve. Meshes, `NamedSharding` and `PartitionSpec` come with
multi-device support."""
from __future__ import annotations

from jaxlib import _jax

Sharding = _jax.Sharding
