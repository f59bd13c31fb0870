"""jaxon's version, and the jaxlib release it is built against (JAX's `jax.version`).

jaxon pins jaxlib exactly, so the minimum jaxlib version is also the only one."""
__version__ = "0.1.0"
__version_info__ = tuple(int(part) for part in __version__.split("."))
# The JAX release whose public API jaxon follows (`jax.__version__` under install_as_jax).
_jax_api_version = "0.10.2"
_minimum_jaxlib_version = "0.10.2"
_minimum_jaxlib_version_info = tuple(int(part) for part in _minimum_jaxlib_version.split("."))
