"""jaxon.extend.xla: XLA compiler extensions. JAX's hooks that rewrite HLO modules before
compilation (`register_hlo_module_transformation`) have no jaxon counterpart yet."""
