"""The stages of ahead-of-time compilation: `jit(f).trace(*args)` gives a `Traced`, its
`.lower()` a `Lowered`, and that one's `.compile()` a `Compiled`, as in `jax.stages`."""
from jaxon._src.jit import Compiled as Compiled, Lowered as Lowered
from jaxon._src.stages import (
    ArgInfo as ArgInfo,
    CompilerOptions as CompilerOptions,
    Traced as Traced,
    Wrapped as Wrapped,
)
