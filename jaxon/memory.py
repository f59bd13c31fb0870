"""jaxon.memory: the memory spaces of arrays (JAX's `jax.memory`)."""
from jaxon._src.memory import MemorySpace as Space  # noqa: F401 (JAX's public name)
