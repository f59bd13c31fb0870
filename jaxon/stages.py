"""The stages of ahead-of-time compilation: `jit(f).lower(*args)` gives a `Lowered`, and its
`.compile()` a `Compiled`, as in `jax.stages`."""
from jaxon._src.jit import Compiled as Compiled, Lowered as Lowered
