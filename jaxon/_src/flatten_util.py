"""`ravel_pytree`: a pytree of arrays as one flat vector, and the way back.

Algorithms written for a vector (an ODE solver's state, an optimizer's iterate) then accept
any pytree: ravel on the way in, unravel on the way out.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src import dtypes, tree_util
from jaxon._src.lax import lax, shape_ops, slicing


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
  """`(flat, unravel)`: the leaves of `pytree` raveled and concatenated into one 1-D array
  of their promoted dtype, and the function that turns such a vector back into the pytree
  (each leaf with its own shape and dtype). No leaves give an empty float32 vector.

  Example:
    >>> flat, unravel = ravel_pytree({"a": jnp.ones(2), "b": 3.0})
    >>> flat
    Array([1., 1., 3.], dtype=float32)
  """
  leaves, treedef = tree_util.tree_flatten(pytree)
  if not leaves:
    return lax.full((0,), 0, np.float32), lambda _: treedef.unflatten([])
  from_dtypes = [dtypes.dtype(x) for x in leaves]
  to_dtype = dtypes.result_type(*from_dtypes)
  shapes = [np.shape(x) for x in leaves]
  offsets = np.cumsum([0] + [int(np.prod(s)) for s in shapes])
  flat = shape_ops.concatenate(
      [shape_ops.reshape(lax.convert_element_type(x, to_dtype), (int(np.size(x)),))
       for x in leaves], 0)

  def unravel(arr: Any) -> Any:
    if np.shape(arr) != (offsets[-1],):
      raise ValueError(f"The unravel function expected an array of shape "
                       f"{(offsets[-1],)}, got shape {np.shape(arr)}.")
    chunks = [slicing.slice(arr, (int(lo),), (int(hi),)) for lo, hi in zip(offsets[:-1],
                                                                      offsets[1:])]
    # Keep the input's dtype where all leaves shared one: unravel then also serves for
    # tangents and cotangents of another float type.
    same = all(d == to_dtype for d in from_dtypes)
    return treedef.unflatten([
        shape_ops.reshape(c if same else lax.convert_element_type(c, d), s)
        for c, d, s in zip(chunks, from_dtypes, shapes)])
  return flat, unravel
