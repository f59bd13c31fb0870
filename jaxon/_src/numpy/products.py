"""NumPy 2's vector products of jaxon.numpy: `vecdot`, `matvec` and `vecmat`, with batch
dimensions that broadcast, as generalized ufuncs do. Like NumPy, `vecdot` and `vecmat`
conjugate their vector (the first argument); `matvec` conjugates nothing.
"""
from __future__ import annotations

from typing import Any

from jaxon._src.lax.dot_general import PrecisionLike
from jaxon._src.numpy import lax_numpy, linear, ufuncs, util
from jaxon._src.numpy import shape as jnp_shape


def _arrays(fun_name: str, x1: Any, x2: Any) -> tuple[Any, Any]:
  util.check_arraylike(f"jnp.{fun_name}", x1, x2)
  return lax_numpy.asarray(x1), lax_numpy.asarray(x2)


def _check_length(fun_name: str, n1: int, n2: int, shape1: tuple, shape2: tuple) -> None:
  if n1 != n2:
    raise ValueError(f"jnp.{fun_name}: the contracted dimensions must have equal lengths, "
                     f"got shapes {shape1} and {shape2}.")


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: PrecisionLike = None,
           preferred_element_type: Any = None) -> Any:
  """Σ conj(x1) x2 along `axis`; the other dimensions broadcast.

  Example: `jnp.vecdot(jnp.array([1j, 2.]), jnp.array([1j, 3.]))` is `7+0j`.
  """
  x1, x2 = _arrays("vecdot", x1, x2)
  _check_length("vecdot", x1.shape[axis], x2.shape[axis], x1.shape, x2.shape)
  x1, x2 = jnp_shape.moveaxis(x1, axis, -1), jnp_shape.moveaxis(x2, axis, -1)
  product = linear.matmul(ufuncs.conj(x1)[..., None, :], x2[..., :, None],
                          precision=precision, preferred_element_type=preferred_element_type)
  return product[..., 0, 0]


def matvec(x1: Any, x2: Any, /) -> Any:
  """Matrices (…, m, n) times vectors (…, n): (…, m), batch dimensions broadcast.

  Example: `jnp.matvec(jnp.eye(2), jnp.array([1., 2.]))` is `[1., 2.]`.
  """
  x1, x2 = _arrays("matvec", x1, x2)
  if x1.ndim < 2 or x2.ndim < 1:
    raise ValueError(f"jnp.matvec takes matrices (…, m, n) and vectors (…, n), got shapes "
                     f"{x1.shape} and {x2.shape}.")
  _check_length("matvec", x1.shape[-1], x2.shape[-1], x1.shape, x2.shape)
  return linear.matmul(x1, x2[..., :, None])[..., 0]


def vecmat(x1: Any, x2: Any, /) -> Any:
  """Conjugated vectors (…, n) times matrices (…, n, m): (…, m), batch dimensions
  broadcast.

  Example: `jnp.vecmat(jnp.array([1., 2.]), jnp.eye(2))` is `[1., 2.]`.
  """
  x1, x2 = _arrays("vecmat", x1, x2)
  if x1.ndim < 1 or x2.ndim < 2:
    raise ValueError(f"jnp.vecmat takes vectors (…, n) and matrices (…, n, m), got shapes "
                     f"{x1.shape} and {x2.shape}.")
  _check_length("vecmat", x1.shape[-1], x2.shape[-2], x1.shape, x2.shape)
  return linear.matmul(ufuncs.conj(x1)[..., None, :], x2)[..., 0, :]
