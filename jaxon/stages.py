"""The stages of ahead-of-time compilation: `jit(f).trace(*args)` gives a `Traced`, its
`.lower()` a `Lowered`, and that one's `.compile()` a `Compiled`, as in `jax.stages`."""
from jaxon._src.stages import (
    ArgInfo as ArgInfo,
    Compiled as Compiled,
    CompilerOptions as CompilerOptions,
    Lowered as Lowered,
    Traced as Traced,
    Wrapped as Wrapped,
)
