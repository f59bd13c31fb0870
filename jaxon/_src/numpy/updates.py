"""NumPy's in-place writers `fill_diagonal`, `place` and `put` as pure functions.

jaxon arrays are immutable, so, as in JAX, each takes `inplace=False` and returns the
updated array; the default `inplace=True` raises, so that NumPy code that relies on the
mutation fails loudly instead of silently doing nothing. Values are cast to the array's
dtype and repeated cyclically to fill the positions written, as NumPy does.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxon._src import core
from jaxon._src.lax import lax
from jaxon._src.numpy import lax_numpy, reductions, ufuncs
from jaxon._src.numpy import shape as jnp_shape


def _check_not_inplace(fun_name: str, inplace: bool) -> None:
  if inplace:
    raise NotImplementedError(f"jnp.{fun_name}: jaxon arrays are immutable, so the update "
                              f"cannot happen in place; call jnp.{fun_name}(..., "
                              f"inplace=False) and use the array it returns.")


def _cycled(values: Any, n: int, dtype: Any, fun_name: str) -> Any:
  """The flattened `values` as `dtype`, repeated or cut to length `n` (NumPy's rule for
  assigning into `n` positions)."""
  flat = jnp_shape.ravel(lax.convert_element_type(lax_numpy.asarray(values), dtype))
  if flat.shape[0] == 0:
    raise ValueError(f"jnp.{fun_name}: cannot fill {n} positions from an empty array of "
                     f"values.")
  return jnp_shape.tile(flat, math.ceil(n / flat.shape[0]))[:n]


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
  """`a` with its main diagonal (the entries `a[i, i, …, i]`) set to `val` (repeated
  cyclically if it has fewer entries). All dimensions must be equal unless `a` is 2-D; a
  tall 2-D matrix with `wrap=True` restarts the diagonal every `a.shape[1] + 1` rows, as
  in NumPy.

  Example: `jnp.fill_diagonal(jnp.zeros((3, 3)), 7.0, inplace=False)` is `7 * eye(3)`.
  """
  _check_not_inplace("fill_diagonal", inplace)
  a = lax_numpy.asarray(a)
  if a.ndim < 2:
    raise ValueError(f"jnp.fill_diagonal: the array must be at least 2-d, got shape "
                     f"{a.shape}.")
  if a.ndim == 2:
    step = a.shape[1] + 1
    end = None if wrap else a.shape[1] * a.shape[1]
  else:
    if len(set(a.shape)) != 1:
      raise ValueError(f"jnp.fill_diagonal: all dimensions of the input must be of equal "
                       f"length, got shape {a.shape}.")
    step, end = 1 + int(np.cumprod(a.shape[:-1]).sum()), None
  positions = np.arange(a.size)[:end:step]
  values = _cycled(val, len(positions), a.dtype, "fill_diagonal")
  return jnp_shape.ravel(a).at[positions].set(values, unique_indices=True).reshape(a.shape)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
  """`arr` with its entries where `mask` is True replaced, in order, by the entries of
  `vals` (repeated cyclically). `mask` may be traced: the k-th True position takes
  `vals[k % len(vals)]`.

  Example: `jnp.place(jnp.zeros(4), jnp.array([1, 0, 1, 1]), jnp.array([5., 6.]),
  inplace=False)` is `[5, 0, 6, 5]`.
  """
  _check_not_inplace("place", inplace)
  arr = lax_numpy.asarray(arr)
  mask = jnp_shape.ravel(ufuncs.not_equal(lax_numpy.asarray(mask), False))
  if mask.shape[0] != arr.size:
    raise ValueError(f"jnp.place: mask and arr must have the same size, got {mask.shape[0]} "
                     f"and {arr.size}.")
  vals = jnp_shape.ravel(lax.convert_element_type(lax_numpy.asarray(vals), arr.dtype))
  if vals.shape[0] == 0:
    if core.concrete_or_error(None, reductions.any(mask),
                              "jnp.place: vals is empty, so mask must be concrete."):
      raise ValueError("jnp.place: cannot insert from an empty array of values.")
    return arr
  rank = reductions.cumsum(mask.astype(np.int32)) - 1  # the k of each True position
  chosen = vals[ufuncs.remainder(rank, vals.shape[0])]
  return ufuncs.where(mask, chosen, jnp_shape.ravel(arr)).reshape(arr.shape)


_PUT_MODES = ("raise", "wrap", "clip")


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
  """`a` with its flattened entries at `ind` replaced by `v` (repeated cyclically).

  Out-of-bound indices: `mode=None` (JAX's default) drops them; 'wrap' takes them modulo
  `a.size`; 'clip' clamps them (negative ones to 0); 'raise' checks them, so needs `ind`
  concrete. Otherwise negative indices count from the end. With repeated indices the value
  written is one of theirs, unspecified which.

  Example: `jnp.put(jnp.zeros(4), jnp.array([0, 2]), 1.0, inplace=False)` is `[1, 0, 1, 0]`.
  """
  _check_not_inplace("put", inplace)
  if mode is not None and mode not in _PUT_MODES:
    raise ValueError(f"jnp.put: mode must be one of {_PUT_MODES} or None, got {mode!r}.")
  a = lax_numpy.asarray(a)
  flat_ind = jnp_shape.ravel(lax_numpy.asarray(ind))
  if flat_ind.dtype.kind not in "iu":
    raise TypeError(f"jnp.put: ind must hold integers, got {flat_ind.dtype}.")
  if flat_ind.shape[0] == 0 or np.size(v) == 0:
    return a
  if mode == "raise":
    bad = core.concrete_or_error(
        np.asarray, flat_ind, "jnp.put with mode='raise' checks the indices, so they must be "
                              "concrete; under jit use mode=None, 'wrap' or 'clip'.")
    bad = bad[(bad < -a.size) | (bad >= a.size)]
    if bad.size:
      raise IndexError(f"jnp.put: index {bad[0]} is out of bounds for size {a.size}.")
  elif mode == "wrap":
    flat_ind = ufuncs.remainder(flat_ind, a.size)
  elif mode == "clip":
    flat_ind = lax.clamp(np.zeros((), flat_ind.dtype), flat_ind,
                         np.array(a.size - 1, flat_ind.dtype))
  values = _cycled(v, flat_ind.shape[0], a.dtype, "put")
  return jnp_shape.ravel(a).at[flat_ind].set(values, mode="drop").reshape(a.shape)
