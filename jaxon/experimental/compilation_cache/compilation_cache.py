"""The persistent compilation cache's public functions, as JAX's."""
from jaxon._src.xla.compilation_cache import reset_cache as reset_cache
from jaxon._src.xla.compilation_cache import set_cache_dir as set_cache_dir
