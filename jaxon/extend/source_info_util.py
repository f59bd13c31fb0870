"""jaxon.extend.source_info_util: source locations of traced operations. jaxon's jaxprs
record no per-equation source info or name stacks, so JAX's helpers here have no
counterpart yet; the module exists so that `jax.extend`'s layout imports."""
