"""jaxon.distributed: joining several processes into one job (JAX's `jax.distributed`)."""
from jaxon._src.distributed import (
    initialize as initialize,
    is_initialized as is_initialized,
    shutdown as shutdown,
)
