"""jaxon.debug: printing, logging, callbacks and breakpoints that work under every
transformation (JAX's `jax.debug`)."""
from jaxon._src.debugging_sharding import (
    inspect_array_sharding as inspect_array_sharding,
    visualize_array_sharding as visualize_array_sharding,
    visualize_sharding as visualize_sharding,
)
from jaxon._src.debugging import (
    DebugEffect as DebugEffect,
    OrderedDebugEffect as OrderedDebugEffect,
    breakpoint as breakpoint,
    debug_callback as callback,
    debug_log as log,
    debug_print as print,
)

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback", "log", "print",
           "inspect_array_sharding", "visualize_array_sharding", "visualize_sharding"]
