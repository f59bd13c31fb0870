"""Structural ops on BCOO arrays (the sparse counterparts of `lax.broadcast_in_dim`,
`concatenate`, `reshape`, `rev`, `squeeze`, `slice`, `dynamic_slice`, `gather` and
`conv_general_dilated`), written on the data and index buffers.

Batch and dense dimensions are plain dimensions of the buffers, so an op on them is the
dense op on `data` (and on `indices` for batch dims). An op on sparse dimensions rewrites
coordinates: elements that leave the result are marked as padding (their coordinates set
to the shape, their data to zero) rather than removed, so shapes stay static.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src.lax import convolution, gather_scatter, shape_ops, slicing
from jaxon._src.lax import lax
from jaxon._src.sparse.bcoo import BCOO, bcoo_fromdense, bcoo_todense, bcoo_update_layout


def _pad_out_of_bounds(data: Any, indices: Any, keep: Any, sparse_shape: Sequence[int]
                       ) -> tuple[Any, Any]:
  """Elements where `keep` is False become padding."""
  fill = jnp.asarray(sparse_shape, indices.dtype)
  indices = jnp.where(keep[..., None], indices, fill)
  keep = keep.reshape(keep.shape + (1,) * (data.ndim - keep.ndim))
  return jnp.where(keep, data, jnp.zeros((), data.dtype)), indices


def bcoo_broadcast_in_dim(mat: BCOO, *, shape: Sequence[int],
                          broadcast_dimensions: Sequence[int], sharding: None = None) -> BCOO:
  """`lax.broadcast_in_dim` of a BCOO array: new dims before its sparse dims become batch
  dims, new trailing dims after dense dims become dense dims, new sparse dims must have
  size 1."""
  shape, bdims = tuple(shape), tuple(broadcast_dimensions)
  if len(bdims) != mat.ndim:
    raise ValueError(f"mat.shape={mat.shape} and broadcast_dimensions={bdims} must have "
                     "the same length")
  nb, ns, nd = mat.n_batch, mat.n_sparse, mat.n_dense
  batch_dims, sparse_dims, dense_dims = bdims[:nb], bdims[nb:nb + ns], bdims[nb + ns:]
  if max(batch_dims, default=0) > min(sparse_dims, default=len(shape)):
    raise ValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
  if max(sparse_dims, default=0) > min(dense_dims, default=len(shape)):
    raise ValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
  new_nb = min(bdims[nb:], default=len(shape))
  new_nd = nd and len(shape) - min(dense_dims)
  new_ns = len(shape) - new_nb - new_nd
  if (math.prod(mat.shape[nb:nb + ns]) != math.prod(shape[new_nb:new_nb + new_ns])):
    raise NotImplementedError("Adding sparse dimensions with lengths != 1")
  data, indices = mat.data, mat.indices
  if (new_nb, new_nd) != (nb, nd):
    data = lax.broadcast_in_dim(
        data, (*shape[:new_nb], mat.nse, *shape[new_nb + new_ns:]),
        (*batch_dims, new_nb, *(d + 1 - new_ns for d in dense_dims)))
    indices = lax.broadcast_in_dim(indices, (*shape[:new_nb], mat.nse, ns),
                                   (*batch_dims, new_nb, new_nb + 1))
  if new_ns != ns:
    where = np.asarray(sparse_dims, int) - new_nb
    indices = jnp.zeros((*indices.shape[:-1], new_ns), indices.dtype).at[..., where].set(
        indices)
  return BCOO((data, indices), shape=shape)


def bcoo_concatenate(operands: Sequence[BCOO], *, dimension: int) -> BCOO:
  """`lax.concatenate` of BCOO arrays: along a sparse dim, the stored elements are
  joined with shifted coordinates; along a batch or dense dim, the buffers are joined."""
  operands = list(operands)
  if not operands or not all(isinstance(op, BCOO) for op in operands):
    raise ValueError("bcoo_concatenate: expected a nonempty sequence of BCOO arrays, got "
                     f"{[type(op).__name__ for op in operands]}")
  ndim = operands[0].ndim
  dimension = operator.index(dimension)
  if not 0 <= dimension < ndim:
    raise ValueError(f"bcoo_concatenate: dimension {dimension} out of range for ndim={ndim}")
  if any(op.shape[:dimension] + op.shape[dimension + 1:] !=
         operands[0].shape[:dimension] + operands[0].shape[dimension + 1:] for op in operands):
    raise ValueError("bcoo_concatenate: all operands must have the same shape except along "
                     f"dimension {dimension}; got {[op.shape for op in operands]}")
  nb = min(op.n_batch for op in operands)
  nd = min(op.n_dense for op in operands)
  operands = [bcoo_update_layout(op, n_batch=nb, n_dense=nd) for op in operands]
  shape = list(operands[0].shape)
  shape[dimension] = sum(op.shape[dimension] for op in operands)
  ns = operands[0].n_sparse
  if dimension < nb:  # batch: join the (broadcast) buffers along it
    full = lambda x, op: jnp.broadcast_to(x, (*op.shape[:nb], *x.shape[nb:]))
    data = jnp.concatenate([full(op.data, op) for op in operands], axis=dimension)
    indices = jnp.concatenate([full(op.indices, op) for op in operands], axis=dimension)
  elif dimension >= nb + ns:  # dense: needs one index set
    if any(op.nse != operands[0].nse for op in operands):
      raise NotImplementedError("bcoo_concatenate along a dense dimension of operands "
                                "with differing nse")
    data = jnp.concatenate([op.data for op in operands], axis=dimension - ns + 1)
    indices = operands[0].indices
  else:  # sparse: shift the coordinates, join the stored elements
    offsets = np.cumsum([0] + [op.shape[dimension] for op in operands[:-1]])
    batch = tuple(np.broadcast_shapes(*(op.data.shape[:nb] for op in operands),
                                      *(op.indices.shape[:nb] for op in operands)))
    datas, idxs = [], []
    for op, offset in zip(operands, offsets):
      shift = np.zeros(ns, int)
      shift[dimension - nb] = offset
      in_bounds = (op.indices < jnp.asarray(op.shape[nb:nb + ns], op.indices.dtype)).all(-1)
      idx = jnp.where(in_bounds[..., None], op.indices + shift.astype(op.indices.dtype),
                      jnp.asarray(shape[nb:nb + ns], op.indices.dtype))
      datas.append(jnp.broadcast_to(op.data, (*batch, *op.data.shape[nb:])))
      idxs.append(jnp.broadcast_to(idx, (*batch, *idx.shape[nb:])))
    data, indices = jnp.concatenate(datas, axis=nb), jnp.concatenate(idxs, axis=nb)
  return BCOO((data, indices), shape=shape)


def bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int],
                 dimensions: Sequence[int] | None = None, sharding: None = None) -> BCOO:
  """`lax.reshape` of a BCOO array: batch dims reshape among themselves, sparse dims among
  themselves (their coordinates are raveled and unraveled); dense dims cannot change."""
  if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
    from jaxon._src.sparse.bcoo import bcoo_transpose
    mat = bcoo_transpose(mat, permutation=dimensions)
  new_sizes = tuple(operator.index(s) for s in new_sizes)
  if math.prod(new_sizes) != mat.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for "
                    f"shape {mat.shape}.")
  nb, ns, nd = mat.n_batch, mat.n_sparse, mat.n_dense
  batch_size = math.prod(mat.shape[:nb])
  cuts = np.cumprod((1,) + new_sizes)
  if batch_size not in cuts:
    raise ValueError(f"bcoo_reshape: new_sizes={new_sizes} must keep the batch dims "
                     f"{mat.shape[:nb]} apart from the sparse ones")
  new_nb = int(np.flatnonzero(cuts == batch_size)[-1 if ns or not nd else 0])
  new_nb = min(new_nb, len(new_sizes) - nd)
  dense_shape = mat.shape[nb + ns:]
  if tuple(new_sizes[len(new_sizes) - nd:] if nd else ()) != dense_shape:
    raise NotImplementedError("bcoo_reshape: reshaping the dense dimensions "
                              f"{dense_shape} is not supported")
  new_batch = new_sizes[:new_nb]
  new_sparse = new_sizes[new_nb:len(new_sizes) - nd]
  data = jnp.broadcast_to(mat.data, (*mat.shape[:nb], *mat.data.shape[nb:]))
  indices = jnp.broadcast_to(mat.indices, (*mat.shape[:nb], *mat.indices.shape[nb:]))
  data = data.reshape((*new_batch, *data.shape[nb:]))
  indices = indices.reshape((*new_batch, *indices.shape[nb:]))
  old_sparse = mat.shape[nb:nb + ns]
  if old_sparse != new_sparse:
    in_bounds = (indices < jnp.asarray(old_sparse, indices.dtype)).all(-1)
    flat = jnp.zeros(indices.shape[:-1], indices.dtype)
    for k, size in enumerate(old_sparse):
      flat = flat * size + indices[..., k]
    coords = jnp.unravel_index(flat, new_sparse) if new_sparse else ()
    indices = (jnp.stack([c.astype(indices.dtype) for c in coords], -1) if new_sparse
               else jnp.zeros((*flat.shape, 0), indices.dtype))
    data, indices = _pad_out_of_bounds(data, indices, in_bounds, new_sparse)
  return BCOO((data, indices), shape=new_sizes)


def bcoo_rev(operand: BCOO, dimensions: Sequence[int]) -> BCOO:
  """`lax.rev` of a BCOO array: reversed batch/dense dims flip the buffers, reversed
  sparse dims map coordinate i to size - 1 - i."""
  nb, ns = operand.n_batch, operand.n_sparse
  dims = sorted({operator.index(d) for d in dimensions})
  data = jnp.broadcast_to(operand.data, (*operand.shape[:nb], *operand.data.shape[nb:]))
  indices = jnp.broadcast_to(operand.indices,
                             (*operand.shape[:nb], *operand.indices.shape[nb:]))
  batch = [d for d in dims if d < nb]
  dense = [d - ns + 1 for d in dims if d >= nb + ns]
  if batch or dense:
    data = jnp.flip(data, (*batch, *dense))
  if batch:
    indices = jnp.flip(indices, batch)
  sparse = [d - nb for d in dims if nb <= d < nb + ns]
  if sparse:
    sizes = jnp.asarray(operand.shape[nb:nb + ns], indices.dtype)
    in_bounds = (indices < sizes).all(-1, keepdims=True)
    flip = np.zeros(ns, bool)
    flip[sparse] = True
    indices = jnp.where(in_bounds & flip, sizes - 1 - indices, indices)
  return BCOO((data, indices), shape=operand.shape)


def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
  """`lax.squeeze` of a BCOO array (the removed dims must have size 1)."""
  dims = sorted({operator.index(d) % max(arr.ndim, 1) for d in dimensions})
  if any(arr.shape[d] != 1 for d in dims):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                     f"one, got shape={arr.shape} and dimensions={tuple(dimensions)}")
  nb, ns = arr.n_batch, arr.n_sparse
  batch = [d for d in dims if d < nb]
  sparse = [d - nb for d in dims if nb <= d < nb + ns]
  dense = [d - ns + 1 for d in dims if d >= nb + ns]
  data = shape_ops.squeeze(arr.data, (*batch, *dense))
  indices = shape_ops.squeeze(arr.indices, batch)
  keep = [k for k in range(ns) if k not in sparse]
  indices = indices[..., keep] if keep else indices[..., :0]
  return BCOO((data, indices), shape=tuple(s for d, s in enumerate(arr.shape) if d not in dims))


def _slice_parts(mat: BCOO, starts: Sequence[Any], sizes: Sequence[int]) -> BCOO:
  """The window at `starts` (static or traced) of `sizes`: batch and dense dims are
  sliced in the buffers; sparse coordinates are shifted, and those outside become
  padding."""
  nb, ns = mat.n_batch, mat.n_sparse
  data = jnp.broadcast_to(mat.data, (*mat.shape[:nb], *mat.data.shape[nb:]))
  indices = jnp.broadcast_to(mat.indices, (*mat.shape[:nb], *mat.indices.shape[nb:]))
  starts = [jnp.clip(jnp.asarray(s), 0, dim - size) if not isinstance(s, int) else s
            for s, dim, size in zip(starts, mat.shape, sizes)]
  data_starts = (*starts[:nb], 0, *starts[nb + ns:])
  data_sizes = (*sizes[:nb], mat.nse, *sizes[nb + ns:])
  data = slicing.dynamic_slice(data, data_starts, data_sizes)
  indices = slicing.dynamic_slice(indices, (*starts[:nb], 0, 0),
                                  (*sizes[:nb], mat.nse, ns))
  if ns:
    lo = jnp.stack([jnp.asarray(s, indices.dtype) for s in starts[nb:nb + ns]])
    new_sparse = tuple(sizes[nb:nb + ns])
    shifted = indices - lo
    keep = ((shifted >= 0) & (shifted < jnp.asarray(new_sparse, indices.dtype))).all(-1)
    data, indices = _pad_out_of_bounds(data, shifted, keep, new_sparse)
  return BCOO((data, indices), shape=tuple(sizes))


def bcoo_slice(mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int],
               strides: Sequence[int] | None = None) -> BCOO:
  """`lax.slice` of a BCOO array (unit strides only)."""
  if not isinstance(mat, BCOO):
    raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
  start_indices = [operator.index(i) for i in start_indices]
  limit_indices = [operator.index(i) for i in limit_indices]
  if strides is not None and any(operator.index(s) != 1 for s in strides):
    raise NotImplementedError(f"bcoo_slice: strides={tuple(strides)} (only unit strides "
                              "are supported)")
  if not len(start_indices) == len(limit_indices) == mat.ndim:
    raise ValueError(f"bcoo_slice: start_indices and limit_indices must have length "
                     f"mat.ndim={mat.ndim}; got {start_indices} and {limit_indices}")
  if any(not 0 <= s <= e <= d for s, e, d in zip(start_indices, limit_indices, mat.shape)):
    raise ValueError(f"bcoo_slice: invalid start_indices={start_indices}, limit_indices="
                     f"{limit_indices} for shape={mat.shape}")
  sizes = [e - s for s, e in zip(start_indices, limit_indices)]
  return _slice_parts(mat, start_indices, sizes)


def bcoo_dynamic_slice(mat: BCOO, start_indices: Sequence[Any],
                       slice_sizes: Sequence[int]) -> BCOO:
  """`lax.dynamic_slice` of a BCOO array (starts are clamped into range, as in lax)."""
  if not isinstance(mat, BCOO):
    raise TypeError(f"bcoo_dynamic_slice: input should be BCOO array, got "
                    f"type(mat)={type(mat)}")
  slice_sizes = [operator.index(s) for s in slice_sizes]
  if not len(start_indices) == len(slice_sizes) == mat.ndim:
    raise ValueError(f"bcoo_dynamic_slice: start_indices and slice_sizes must have length "
                     f"mat.ndim={mat.ndim}")
  if any(not 0 <= s <= d for s, d in zip(slice_sizes, mat.shape)):
    raise TypeError(f"slice_sizes {tuple(slice_sizes)} must be within operand shape "
                    f"{mat.shape}")
  return _slice_parts(mat, [jnp.asarray(s) for s in start_indices], slice_sizes)


def bcoo_gather(operand: BCOO, start_indices: Any, dimension_numbers: Any,
                slice_sizes: Sequence[int], *, unique_indices: bool = False,
                indices_are_sorted: bool = False, mode: Any = None,
                fill_value: Any = None) -> BCOO:
  """`lax.gather` of a BCOO array, through its dense form; the result stores at most as
  many elements as the gathered windows could hold of the operand's."""
  dense = gather_scatter.gather(bcoo_todense(operand), start_indices, dimension_numbers,
                                tuple(slice_sizes), unique_indices=unique_indices,
                                indices_are_sorted=indices_are_sorted, mode=mode,
                                fill_value=fill_value)
  windows = math.prod(np.shape(start_indices)[:-1])
  return bcoo_fromdense(dense, nse=min(operand.nse * max(windows, 1), math.prod(dense.shape)))


def bcoo_conv_general_dilated(lhs: Any, rhs: Any, *, window_strides: Sequence[int],
                              padding: Any, lhs_dilation: Any = None, rhs_dilation: Any = None,
                              dimension_numbers: Any = None, feature_group_count: int = 1,
                              batch_group_count: int = 1, precision: Any = None,
                              preferred_element_type: Any = None,
                              out_sharding: None = None) -> BCOO:
  """`lax.conv_general_dilated` with BCOO operands, through dense forms; the result
  stores all its elements (a convolution spreads each input element over a window)."""
  dense = lambda x: bcoo_todense(x) if isinstance(x, BCOO) else jnp.asarray(x)
  out = convolution.conv_general_dilated(
      dense(lhs), dense(rhs), window_strides, padding, lhs_dilation, rhs_dilation,
      dimension_numbers, feature_group_count, batch_group_count, precision,
      preferred_element_type)
  return bcoo_fromdense(out, nse=math.prod(out.shape))
