"""jaxon.flatten_util: pytrees as flat vectors (re-exports only)."""
from jaxon._src.flatten_util import ravel_pytree as ravel_pytree
