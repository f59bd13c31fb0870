"""jaxon.extend.backend: the XLA client jaxon runs on (re-exports only)."""
from jaxon._src.extend import (
    backend_xla_version as backend_xla_version,
    backends as backends,
    clear_in_memory_compilation_cache as clear_in_memory_compilation_cache,
    get_backend as get_backend,
    get_compile_options as get_compile_options,
    get_default_device as get_default_device,
    register_backend_cache as register_backend_cache,
)
