"""jaxon.custom_batching: functions with hand-written batching rules (JAX's
`jax.custom_batching`)."""
from jaxon._src.custom_batching import (
    custom_vmap as custom_vmap,
    sequential_vmap as sequential_vmap,
)
