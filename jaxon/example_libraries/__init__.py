"""jaxon.example_libraries: the small example libraries JAX ships next to its core API.

`stax` builds neural networks as `(init_fun, apply_fun)` pairs and `optimizers` models
first-order optimizers as `(init_fun, update_fun, get_params)` triples. They exist so that
programs written against `jax.example_libraries` run unchanged, and as short examples of
libraries built on the transformations; larger projects usually want a fuller library.
Each submodule is imported on its own (`from jaxon.example_libraries import stax`).
"""
