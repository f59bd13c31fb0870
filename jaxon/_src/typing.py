"""Type annotations for arrays and dtypes, with JAX's meanings, for annotating code that
runs on jaxon (and for libraries that import them from `jax.typing`)."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from jaxon._src.xla.array import Array

# What jaxon.numpy functions accept as an array argument: arrays, NumPy arrays and scalars,
# Python scalars. (Lists and tuples are not: JAX refuses them, to avoid silent copies.)
ArrayLike = Array | np.ndarray | np.bool_ | np.number | bool | int | float | complex


@runtime_checkable
class SupportsDType(Protocol):
  """Anything with a `dtype`: arrays, and jaxon.numpy's scalar types such as `jnp.float32`."""

  @property
  def dtype(self, /) -> np.dtype: ...


# What a `dtype=` argument accepts: a name ('float32'), a scalar type (np.float32, float),
# a np.dtype, or anything with a `.dtype`.
DTypeLike = str | type[Any] | np.dtype | SupportsDType
