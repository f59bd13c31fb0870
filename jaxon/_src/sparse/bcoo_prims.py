"""The BCOO primitives: conversions between a batched-COO buffer pair and dense arrays,
layout changes (transpose, sorting, de-duplication) and products.

A BCOO array of `shape = (*batch, *sparse, *dense)` is stored as two buffers:
`data` of shape `(*batch, nse, *dense)` and `indices` of shape `(*batch, nse, n_sparse)`
(row k of a batch holds the sparse coordinates of its k-th stored block). Batch dims of
either buffer may be 1 and then broadcast. Indices equal to or past the shape mark padding:
conversions to dense drop them, extraction reads zeros for them.

Each primitive's impl is its lowering (written with jaxon.numpy on one batch, mapped over
the batch dims with vmap), compiled through XLA like any other primitive. The products use
a dense formulation: the sparse operand is scattered into a dense array and multiplied with
XLA's dot; that is exact, but costs the dense operand's memory.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching
from jaxon._src.lax import lax
from jaxon._src.lax import shape_ops, sorting
from jaxon._src.sparse.util import SparseInfo, nfold_vmap, sparse_primitive


class BCOOProperties(NamedTuple):
  n_batch: int
  n_sparse: int
  n_dense: int
  nse: int


def validate_indices(indices: Any, shape: Sequence[int]) -> BCOOProperties:
  """The layout `indices` implies for an array of `shape`, with clear errors."""
  ishape = np.shape(indices)
  if len(ishape) < 2:
    raise ValueError(f"BCOO indices must have at least 2 dimensions (..., nse, n_sparse); "
                     f"got indices.shape={ishape}.")
  if not np.issubdtype(np.dtype(indices.dtype), np.integer):
    raise TypeError(f"BCOO indices must have an integer dtype; got {indices.dtype}.")
  nse, n_sparse = ishape[-2:]
  n_batch = len(ishape) - 2
  n_dense = len(shape) - n_batch - n_sparse
  if n_dense < 0:
    raise ValueError(f"BCOO indices.shape={ishape} need n_batch + n_sparse = "
                     f"{n_batch + n_sparse} dimensions, but shape={tuple(shape)} has "
                     f"only {len(shape)}.")
  if any(i not in (1, s) for i, s in zip(ishape[:n_batch], shape[:n_batch])):
    raise ValueError(f"indices batch dimensions not compatible for indices.shape={ishape}, "
                     f"shape={tuple(shape)}.")
  return BCOOProperties(n_batch, n_sparse, n_dense, nse)


def validate_bcoo(data: Any, indices: Any, shape: Sequence[int]) -> BCOOProperties:
  props = validate_indices(indices, shape)
  dshape, shape = np.shape(data), tuple(shape)
  n_batch = props.n_batch
  if len(dshape) < n_batch or any(
      d not in (1, s) for d, s in zip(dshape[:n_batch], shape[:n_batch])):
    raise ValueError(f"data batch dimensions not compatible for data.shape={dshape}, "
                     f"shape={shape}.")
  if dshape[n_batch:] != (props.nse, *shape[n_batch + props.n_sparse:]):
    raise ValueError(f"Invalid data.shape={dshape} for nse={props.nse}, n_batch={n_batch}, "
                     f"n_dense={props.n_dense} and shape={shape}.")
  return props


def batch_dims_to_front(data: Any, indices: Any, dims: Sequence[int | None],
                        spinfo: SparseInfo, size: int | None = None
                        ) -> tuple[Any, Any, SparseInfo]:
  """The vmapped dimension becomes a new leading batch dimension of the sparse array (of
  size 1, broadcasting, in a buffer that is not mapped)."""
  data_dim, indices_dim = dims
  data, indices = (shape_ops.expand_dims(x, (0,)) if d is None else batching.moveaxis(x, d, 0)
                   for x, d in ((data, data_dim), (indices, indices_dim)))
  if size is None:
    size = max(np.shape(x)[0] for x, d in ((data, data_dim), (indices, indices_dim))
               if d is not None)
  return data, indices, spinfo._replace(shape=(size, *spinfo.shape))


def _coordinates(indices: Any) -> tuple[Any, ...]:
  return tuple(indices[:, k] for k in range(indices.shape[-1]))


def _zero_tangent(x: Any) -> ad.Zero:
  return ad.Zero(core.get_aval(x).to_tangent_aval())


# ----------------------------------------------------------------------------- todense

def _todense_impl(data: Any, indices: Any, *, spinfo: SparseInfo) -> Any:
  n_batch, n_sparse, _, _ = validate_bcoo(data, indices, spinfo.shape)
  block_shape = spinfo.shape[n_batch:]

  def one_batch(d, i):
    if not n_sparse:
      return d.sum(0)
    return jnp.zeros(block_shape, d.dtype).at[_coordinates(i)].add(d, mode="drop")
  out = nfold_vmap(one_batch, n_batch)(data, indices)
  return jnp.broadcast_to(out, spinfo.shape)


def _todense_abstract_eval(data: ShapedArray, indices: ShapedArray, *,
                           spinfo: SparseInfo) -> ShapedArray:
  validate_bcoo(data, indices, spinfo.shape)
  return ShapedArray(tuple(spinfo.shape), data.dtype)


bcoo_todense_p = sparse_primitive("bcoo_todense", _todense_impl, _todense_abstract_eval)


def bcoo_todense_buffers(data: Any, indices: Any, *, spinfo: SparseInfo) -> Any:
  return bcoo_todense_p.bind(jnp.asarray(data), jnp.asarray(indices), spinfo=spinfo)


def _unbroadcast(aval: ShapedArray, x: Any) -> Any:
  """Sums `x` over the batch dims that `aval` holds with size 1 (a broadcast buffer)."""
  dims = tuple(i for i, (a, b) in enumerate(zip(aval.shape, np.shape(x))) if a == 1 != b)
  return x.sum(dims, keepdims=True) if dims else x


def _todense_transpose(ct: Any, data: Any, indices: Any, *, spinfo: SparseInfo) -> list:
  if ad.is_undefined_primal(indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if type(ct) is ad.Zero:
    return [ad.Zero(data.aval.to_tangent_aval()), None]
  return [_unbroadcast(data.aval, bcoo_extract_buffers(indices, ct)), None]


def _todense_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                        spinfo: SparseInfo) -> tuple[Any, int]:
  data, indices, spinfo = batch_dims_to_front(*vals, dims, spinfo)
  return bcoo_todense_buffers(data, indices, spinfo=spinfo), 0


ad.defjvp(bcoo_todense_p,
          lambda t, data, indices, *, spinfo: bcoo_todense_buffers(t, indices, spinfo=spinfo),
          None)
ad.primitive_transposes[bcoo_todense_p] = _todense_transpose
batching.primitive_batchers[bcoo_todense_p] = _todense_batch_rule


# ----------------------------------------------------------------------------- extract

def _first_occurrences(indices: Any) -> Any:
  """For one batch, whether each row of `indices` is the first one holding its index."""
  nse, n_sparse = indices.shape
  if not n_sparse:
    return jnp.arange(nse) == 0
  *_, perm = sorting.sort((*_coordinates(indices), lax.iota(np.int32, nse)), num_keys=n_sparse)
  ordered = indices[perm]
  first = jnp.concatenate([jnp.ones((1,), bool),
                           (ordered[1:] != ordered[:-1]).any(-1)])
  return jnp.zeros(nse, bool).at[perm].set(first)


def _extract_impl(indices: Any, arr: Any, *, assume_unique: bool) -> Any:
  n_batch, n_sparse, _, nse = validate_indices(indices, arr.shape)

  def one_batch(i, a):
    if not n_sparse:
      return jnp.broadcast_to(a[None], (nse, *a.shape))
    values = a.at[_coordinates(i)].get(mode="fill", fill_value=0)
    if assume_unique:
      return values
    first = _first_occurrences(i).reshape((nse,) + (1,) * (values.ndim - 1))
    return jnp.where(first, values, jnp.zeros((), values.dtype))
  return nfold_vmap(one_batch, n_batch)(indices, arr)


def _extract_abstract_eval(indices: ShapedArray, arr: ShapedArray, *,
                           assume_unique: bool) -> ShapedArray:
  n_batch, _, n_dense, nse = validate_indices(indices, arr.shape)
  return ShapedArray((*arr.shape[:n_batch], nse, *arr.shape[arr.ndim - n_dense:]), arr.dtype)


bcoo_extract_p = sparse_primitive("bcoo_extract", _extract_impl, _extract_abstract_eval)


def bcoo_extract_buffers(indices: Any, arr: Any, *, assume_unique: bool = True) -> Any:
  return bcoo_extract_p.bind(jnp.asarray(indices), jnp.asarray(arr),
                             assume_unique=bool(assume_unique))


def _extract_transpose(ct: Any, indices: Any, arr: Any, *, assume_unique: bool) -> list:
  if ad.is_undefined_primal(indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if not assume_unique:
    raise NotImplementedError("transpose of bcoo_extract with assume_unique=False")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(arr.aval.to_tangent_aval())]
  return [None, bcoo_todense_buffers(ct, indices, spinfo=SparseInfo(arr.aval.shape))]


def _extract_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                        assume_unique: bool) -> tuple[Any, int]:
  indices, arr = vals
  indices_dim, arr_dim = dims
  if indices_dim is None:
    indices, arr = shape_ops.expand_dims(indices, (0,)), batching.moveaxis(arr, arr_dim, 0)
  else:
    indices = batching.moveaxis(indices, indices_dim, 0)
    size = np.shape(indices)[0]
    arr = batching.bdim_at_front(arr, arr_dim, size)
  return bcoo_extract_buffers(indices, arr, assume_unique=assume_unique), 0


ad.defjvp(bcoo_extract_p, None,
          lambda t, indices, arr, *, assume_unique: bcoo_extract_buffers(
              indices, t, assume_unique=assume_unique))
ad.primitive_transposes[bcoo_extract_p] = _extract_transpose
batching.primitive_batchers[bcoo_extract_p] = _extract_batch_rule


# ----------------------------------------------------------------------------- fromdense

def _fromdense_impl(mat: Any, *, nse: int, n_batch: int, n_dense: int,
                    index_dtype: Any) -> tuple[Any, Any]:
  n_sparse = mat.ndim - n_batch - n_dense
  mask = mat != 0
  if n_dense:
    mask = mask.any(tuple(range(mask.ndim - n_dense, mask.ndim)))

  def one_batch(m):
    if not n_sparse:
      return jnp.zeros((nse, 0), index_dtype)
    where = jnp.nonzero(m, size=nse, fill_value=m.shape)
    return jnp.stack(where, axis=-1).astype(index_dtype)
  indices = nfold_vmap(one_batch, n_batch, broadcasted=False)(mask)
  data = _extract_impl(indices, mat, assume_unique=True)
  true_nse = mask.sum(tuple(range(n_batch, mask.ndim)))[..., None]
  kept = lax.broadcasted_iota(true_nse.dtype, (1,) * n_batch + (nse,), n_batch) < true_nse
  kept = kept.reshape(kept.shape + (1,) * n_dense)
  return jnp.where(kept, data, jnp.zeros((), data.dtype)), indices


def _fromdense_abstract_eval(mat: ShapedArray, *, nse: int, n_batch: int, n_dense: int,
                             index_dtype: Any) -> list[ShapedArray]:
  n_sparse = mat.ndim - n_batch - n_dense
  if n_sparse < 0 or n_batch < 0 or n_dense < 0:
    raise ValueError(f"bcoo_fromdense: n_batch={n_batch} and n_dense={n_dense} must be "
                     f"non-negative with sum at most mat.ndim={mat.ndim}.")
  return [ShapedArray((*mat.shape[:n_batch], nse, *mat.shape[n_batch + n_sparse:]),
                      mat.dtype),
          ShapedArray((*mat.shape[:n_batch], nse, n_sparse), np.dtype(index_dtype))]


bcoo_fromdense_p = sparse_primitive("bcoo_fromdense", _fromdense_impl,
                                     _fromdense_abstract_eval, multiple_results=True)


def _fromdense_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
                   ) -> tuple[list, list]:
  data, indices = bcoo_fromdense_p.bind(*primals, **params)
  mat_dot, = tangents
  data_dot = (_zero_tangent(data) if type(mat_dot) is ad.Zero
              else bcoo_extract_buffers(indices, mat_dot))
  return [data, indices], [data_dot, _zero_tangent(indices)]


def _fromdense_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *, n_batch: int,
                          **params: Any) -> tuple[list, list]:
  mat = batching.moveaxis(vals[0], dims[0], 0)
  return bcoo_fromdense_p.bind(mat, n_batch=n_batch + 1, **params), [0, 0]


ad.primitive_jvps[bcoo_fromdense_p] = _fromdense_jvp
batching.primitive_batchers[bcoo_fromdense_p] = _fromdense_batch_rule


# ----------------------------------------------------------------------------- transpose

def _split_permutation(permutation: Sequence[int], props: BCOOProperties
                       ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
  """(batch, sparse, dense) parts of `permutation`, each relative to its own group: a
  BCOO transpose cannot move a dimension from one group to another."""
  n_batch, n_sparse, n_dense, _ = props
  ndim = n_batch + n_sparse + n_dense
  if tuple(sorted(permutation)) != tuple(range(ndim)):
    raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {tuple(permutation)} for ndim={ndim}.")
  batch = tuple(permutation[:n_batch])
  sparse = tuple(p - n_batch for p in permutation[n_batch:n_batch + n_sparse])
  dense = tuple(p - n_batch - n_sparse for p in permutation[n_batch + n_sparse:])
  if (sorted(batch) != list(range(n_batch)) or sorted(sparse) != list(range(n_sparse))
      or sorted(dense) != list(range(n_dense))):
    raise NotImplementedError(
        f"BCOO transpose permutation={tuple(permutation)} mixes batch, sparse and dense "
        f"dimensions (n_batch={n_batch}, n_sparse={n_sparse}, n_dense={n_dense}); convert "
        "the layout with bcoo_update_layout first.")
  return batch, sparse, dense


def _data_permutation(batch: Sequence[int], dense: Sequence[int]) -> tuple[int, ...]:
  n_batch = len(batch)
  return (*batch, n_batch, *(n_batch + 1 + d for d in dense))


def _transpose_impl(data: Any, indices: Any, *, permutation: tuple[int, ...],
                    spinfo: SparseInfo) -> tuple[Any, Any]:
  props = validate_bcoo(data, indices, spinfo.shape)
  batch, sparse, dense = _split_permutation(permutation, props)
  n_batch = props.n_batch
  indices = shape_ops.transpose(indices, (*batch, n_batch, n_batch + 1))
  return (shape_ops.transpose(data, _data_permutation(batch, dense)),
          indices[..., list(sparse)] if sparse else indices)


def _transpose_abstract_eval(data: ShapedArray, indices: ShapedArray, *,
                             permutation: tuple[int, ...], spinfo: SparseInfo
                             ) -> list[ShapedArray]:
  props = validate_bcoo(data, indices, spinfo.shape)
  batch, _, dense = _split_permutation(permutation, props)
  n_batch = props.n_batch
  data_shape = tuple(data.shape[p] for p in _data_permutation(batch, dense))
  indices_shape = (*(indices.shape[p] for p in batch), *indices.shape[n_batch:])
  return [ShapedArray(data_shape, data.dtype, data.weak_type),
          ShapedArray(indices_shape, indices.dtype)]


bcoo_transpose_p = sparse_primitive("bcoo_transpose", _transpose_impl,
                                     _transpose_abstract_eval, multiple_results=True)


def bcoo_transpose_buffers(data: Any, indices: Any, *, permutation: Sequence[int],
                           spinfo: SparseInfo) -> tuple[Any, Any]:
  permutation = tuple(int(p) for p in permutation)
  if permutation == tuple(range(len(spinfo.shape))):
    return data, indices
  return tuple(bcoo_transpose_p.bind(data, indices, permutation=permutation, spinfo=spinfo))


def _transpose_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
                   ) -> tuple[list, list]:
  data_out, indices_out = bcoo_transpose_p.bind(*primals, **params)
  data_dot = tangents[0]
  if type(data_dot) is ad.Zero:
    data_dot_out = _zero_tangent(data_out)
  else:
    data_dot_out = bcoo_transpose_p.bind(data_dot, primals[1], **params)[0]
  return [data_out, indices_out], [data_dot_out, _zero_tangent(indices_out)]


def _transpose_transpose(cts: Sequence[Any], data: Any, indices: Any, *,
                         permutation: tuple[int, ...], spinfo: SparseInfo) -> list:
  """Only the data moves (its batch and dense dims are permuted): its cotangent is the
  inverse transpose of the output data's."""
  if ad.is_undefined_primal(indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  ct_data = cts[0]
  if type(ct_data) is ad.Zero:
    return [ad.Zero(data.aval.to_tangent_aval()), None]
  props = validate_bcoo(data.aval, indices, spinfo.shape)
  batch, _, dense = _split_permutation(permutation, props)
  perm = _data_permutation(batch, dense)
  return [shape_ops.transpose(ct_data, tuple(int(i) for i in np.argsort(perm))), None]


def _transpose_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                          permutation: tuple[int, ...], spinfo: SparseInfo) -> tuple[list, list]:
  data, indices, spinfo = batch_dims_to_front(*vals, dims, spinfo)
  outs = bcoo_transpose_p.bind(data, indices, permutation=(0, *(p + 1 for p in permutation)),
                               spinfo=spinfo)
  return _squeeze_unmapped(outs, dims)


def _squeeze_unmapped(outs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list, list]:
  """Outputs of a buffer that was not mapped lose the size-1 batch dim they got."""
  return ([shape_ops.squeeze(x, (0,)) if d is None else x for x, d in zip(outs, dims)],
          [None if d is None else 0 for d in dims])


ad.primitive_jvps[bcoo_transpose_p] = _transpose_jvp
ad.primitive_transposes[bcoo_transpose_p] = _transpose_transpose
batching.primitive_batchers[bcoo_transpose_p] = _transpose_batch_rule


# ----------------------------------------------------------------------------- sort_indices

def _sort_permutation(indices: Any) -> Any:
  """For one batch, the order that sorts the rows of `indices` lexicographically (stable)."""
  nse, n_sparse = indices.shape
  *_, perm = sorting.sort((*_coordinates(indices), lax.iota(np.int32, nse)), num_keys=n_sparse)
  return perm


def _permute_rows(x: Any, perm: Any) -> Any:
  return x[perm]


def _sort_indices_with_permutation(data: Any, indices: Any, n_batch: int
                                   ) -> tuple[Any, Any, Any]:
  perm = nfold_vmap(_sort_permutation, n_batch, broadcasted=False)(indices)
  permute = nfold_vmap(_permute_rows, n_batch)
  return permute(data, perm), permute(indices, perm), perm


def _sort_indices_impl(data: Any, indices: Any, *, spinfo: SparseInfo) -> tuple[Any, Any]:
  props = validate_bcoo(data, indices, spinfo.shape)
  if not props.n_sparse:
    return data, indices
  data, indices, _ = _sort_indices_with_permutation(data, indices, props.n_batch)
  return data, indices


def _batched_data_aval(data: ShapedArray, indices: ShapedArray, props: BCOOProperties,
                       nse: int) -> ShapedArray:
  """Data of an op whose output data takes the batch shape of both buffers."""
  batch = tuple(map(max, data.shape[:props.n_batch], indices.shape[:props.n_batch]))
  return ShapedArray((*batch, nse, *data.shape[props.n_batch + 1:]), data.dtype,
                     data.weak_type)


def _sort_indices_abstract_eval(data: ShapedArray, indices: ShapedArray, *,
                                spinfo: SparseInfo) -> list[ShapedArray]:
  props = validate_bcoo(data, indices, spinfo.shape)
  if not props.n_sparse:
    return [data, indices]
  return [_batched_data_aval(data, indices, props, props.nse), indices]


bcoo_sort_indices_p = sparse_primitive("bcoo_sort_indices", _sort_indices_impl,
                                        _sort_indices_abstract_eval, multiple_results=True)


def _sort_indices_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, spinfo: SparseInfo
                      ) -> tuple[list, list]:
  """The permutation depends on the indices only: the tangent is permuted the same way,
  with gathers (which transpose)."""
  data, indices = primals
  props = validate_bcoo(data, indices, spinfo.shape)
  if not props.n_sparse:
    return list(primals), list(tangents)
  data_out, indices_out, perm = _sort_indices_with_permutation(data, indices, props.n_batch)
  data_dot = tangents[0]
  data_dot_out = (_zero_tangent(data_out) if type(data_dot) is ad.Zero
                  else nfold_vmap(_permute_rows, props.n_batch)(data_dot, perm))
  return [data_out, indices_out], [data_dot_out, _zero_tangent(indices_out)]


def _sort_indices_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                             spinfo: SparseInfo) -> tuple[list, list]:
  data, indices, spinfo = batch_dims_to_front(*vals, dims, spinfo)
  data_out, indices_out = bcoo_sort_indices_p.bind(data, indices, spinfo=spinfo)
  if dims[1] is None:  # unmapped indices stay unmapped; data is mapped in any case
    return [data_out, shape_ops.squeeze(indices_out, (0,))], [0, None]
  return [data_out, indices_out], [0, 0]


ad.primitive_jvps[bcoo_sort_indices_p] = _sort_indices_jvp
batching.primitive_batchers[bcoo_sort_indices_p] = _sort_indices_batch_rule


# ----------------------------------------------------------------------------- sum_duplicates

def _unique_rows(indices: Any, sparse_shape: Sequence[int], nse: int) -> tuple[Any, Any]:
  """For one batch: the sorted distinct in-bounds rows of `indices`, padded (or cut) to
  `nse` rows with the out-of-bounds fill `sparse_shape`, and where each row went."""
  fill = jnp.asarray(sparse_shape, indices.dtype)[None, :]
  indices = jnp.where((indices >= fill).any(-1, keepdims=True), fill, indices)
  unique, inverse = jnp.unique(indices, axis=0, size=max(nse, indices.shape[0]),
                               return_inverse=True, fill_value=fill)
  # The fill rows (out-of-bounds entries) collect no data.
  inverse = jnp.where((indices == fill).all(-1), nse, inverse.reshape(-1))
  return unique[:nse], inverse


def _sum_duplicates_parts(data: Any, indices: Any, spinfo: SparseInfo, nse: int
                          ) -> tuple[Any, Any, Callable]:
  props = validate_bcoo(data, indices, spinfo.shape)
  sparse_shape = spinfo.shape[props.n_batch:props.n_batch + props.n_sparse]
  unique = nfold_vmap(lambda i: _unique_rows(i, sparse_shape, nse), props.n_batch,
                      broadcasted=False)
  indices_out, mapping = unique(indices)
  out_aval = _batched_data_aval(core.get_aval(data), core.get_aval(indices), props, nse)

  def gather_sums(d):  # sums d's rows into their unique slot: linear in d
    def one_batch(m, x):
      return jnp.zeros((nse, *x.shape[1:]), x.dtype).at[m].add(x, mode="drop")
    out = nfold_vmap(one_batch, props.n_batch)(mapping, d)
    return jnp.broadcast_to(out, out_aval.shape)
  return indices_out, mapping, gather_sums


def _sum_duplicates_impl(data: Any, indices: Any, *, spinfo: SparseInfo, nse: int
                         ) -> tuple[Any, Any]:
  if not indices.shape[-1]:  # no sparse dims: every stored block is at the one index
    n_batch = indices.ndim - 2
    summed = data.sum(n_batch, keepdims=True)
    pad = [(0, 0)] * n_batch + [(0, nse - 1)] + [(0, 0)] * (data.ndim - n_batch - 1)
    return (jnp.pad(summed, pad) if nse >= 1 else summed[..., :0, :],
            jnp.zeros((*indices.shape[:-2], nse, 0), indices.dtype))
  indices_out, _, gather_sums = _sum_duplicates_parts(data, indices, spinfo, nse)
  return gather_sums(data), indices_out


def _sum_duplicates_abstract_eval(data: ShapedArray, indices: ShapedArray, *,
                                  spinfo: SparseInfo, nse: int) -> list[ShapedArray]:
  props = validate_bcoo(data, indices, spinfo.shape)
  return [_batched_data_aval(data, indices, props, nse),
          ShapedArray((*indices.shape[:props.n_batch], nse, props.n_sparse), indices.dtype)]


bcoo_sum_duplicates_p = sparse_primitive("bcoo_sum_duplicates", _sum_duplicates_impl,
                                          _sum_duplicates_abstract_eval,
                                          multiple_results=True)


def _sum_duplicates_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
                        spinfo: SparseInfo, nse: int) -> tuple[list, list]:
  data, indices = primals
  data_dot = tangents[0]
  if not np.shape(indices)[-1]:
    out = bcoo_sum_duplicates_p.bind(data, indices, spinfo=spinfo, nse=nse)
    dot = (_zero_tangent(out[0]) if type(data_dot) is ad.Zero else
           bcoo_sum_duplicates_p.bind(data_dot, indices, spinfo=spinfo, nse=nse)[0])
    return list(out), [dot, _zero_tangent(out[1])]
  indices_out, _, gather_sums = _sum_duplicates_parts(data, indices, spinfo, nse)
  data_out = gather_sums(data)
  data_dot_out = (_zero_tangent(data_out) if type(data_dot) is ad.Zero
                  else gather_sums(data_dot))
  return [data_out, indices_out], [data_dot_out, _zero_tangent(indices_out)]


def _sum_duplicates_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                               spinfo: SparseInfo, nse: int) -> tuple[list, list]:
  data, indices, spinfo = batch_dims_to_front(*vals, dims, spinfo)
  data_out, indices_out = bcoo_sum_duplicates_p.bind(data, indices, spinfo=spinfo, nse=nse)
  if dims[1] is None:
    return [data_out, shape_ops.squeeze(indices_out, (0,))], [0, None]
  return [data_out, indices_out], [0, 0]


ad.primitive_jvps[bcoo_sum_duplicates_p] = _sum_duplicates_jvp
batching.primitive_batchers[bcoo_sum_duplicates_p] = _sum_duplicates_batch_rule
