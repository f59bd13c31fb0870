"""Type annotations for jaxon's APIs: `ArrayLike` and `DTypeLike`, as in `jax.typing`."""
from jaxon._src.typing import ArrayLike as ArrayLike, DTypeLike as DTypeLike
