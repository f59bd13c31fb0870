"""JAX's `jax.lib`: the version of the installed jaxlib, which jaxon runs on (its
bridges to jaxlib's internals are in `jaxon._src.lib`)."""
from jaxlib.version import __version__ as __version__
