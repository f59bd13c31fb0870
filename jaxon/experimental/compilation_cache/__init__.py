"""jaxon.experimental.compilation_cache: the persistent compilation cache (its functions are
in the `compilation_cache` submodule, as in JAX)."""
