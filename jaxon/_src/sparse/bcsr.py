"""BCSR, the batched compressed-sparse-row format: `data` `(*batch, nse, *dense)`,
`indices` `(*batch, nse)` (columns) and `indptr` `(*batch, rows + 1)`, for arrays of
shape `(*batch, rows, cols, *dense)` (two sparse dims).

Its primitives (`bcsr_todense_p`, `bcsr_fromdense_p`, `bcsr_extract_p`,
`bcsr_dot_general_p`) compute with the equivalent BCOO coordinates (the row of each
stored element is found from `indptr`), reusing the BCOO formulations; their rules mirror
BCOO's. Other BCSR functions convert through BCOO.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching
from jaxon._src.lax import dot_general as dg
from jaxon._src.lax import shape_ops
from jaxon._src.sparse import bcoo_prims as prims
from jaxon._src.sparse import bcoo_products as products
from jaxon._src.sparse.base import JAXSparse
from jaxon._src.sparse.bcoo import BCOO, bcoo_sum_duplicates
from jaxon._src.sparse.util import (SparseInfo, count_stored_elements, nfold_vmap,
                                    sparse_primitive)


def _bcoo_indices(indices: Any, indptr: Any) -> Any:
  """The (row, col) BCOO coordinates of each stored element."""
  def one_batch(cols, ptr):
    rows = jnp.searchsorted(ptr[1:], jnp.arange(cols.shape[0], dtype=ptr.dtype),
                            side="right").astype(cols.dtype)
    return jnp.stack([rows, cols], axis=-1)
  return nfold_vmap(one_batch, np.ndim(indices) - 1)(indices, indptr)


def _bcoo_indices_aval(indices: ShapedArray) -> ShapedArray:
  return ShapedArray((*indices.shape, 2), indices.dtype)


def _to_front(x: Any, d: int | None) -> Any:
  return shape_ops.expand_dims(x, (0,)) if d is None else batching.moveaxis(x, d, 0)


# ----------------------------------------------------------------------------- todense

def _todense_impl(data, indices, indptr, *, spinfo):
  return prims._todense_impl(data, _bcoo_indices(indices, indptr), spinfo=spinfo)


def _todense_aval(data, indices, indptr, *, spinfo):
  return prims._todense_abstract_eval(data, _bcoo_indices_aval(indices), spinfo=spinfo)


bcsr_todense_p = sparse_primitive("bcsr_todense", _todense_impl, _todense_aval)


def _todense_transpose(ct, data, indices, indptr, *, spinfo):
  if type(ct) is ad.Zero:
    return [ad.Zero(data.aval.to_tangent_aval()), None, None]
  return [prims._unbroadcast(data.aval, bcsr_extract(indices, indptr, ct)), None, None]


def _todense_batch_rule(vals, dims, *, spinfo):
  size = next(np.shape(x)[d] for x, d in zip(vals, dims) if d is not None)
  data, indices, indptr = (_to_front(x, d) for x, d in zip(vals, dims))
  return bcsr_todense_p.bind(data, indices, indptr,
                             spinfo=spinfo._replace(shape=(size, *spinfo.shape))), 0


ad.defjvp(bcsr_todense_p, lambda t, data, indices, indptr, **p: bcsr_todense_p.bind(
    t, indices, indptr, **p), None, None)
ad.primitive_transposes[bcsr_todense_p] = _todense_transpose
batching.primitive_batchers[bcsr_todense_p] = _todense_batch_rule


# ----------------------------------------------------------------------------- extract

def _extract_impl(indices, indptr, mat):
  return prims._extract_impl(_bcoo_indices(indices, indptr), mat, assume_unique=True)


def _extract_aval(indices, indptr, mat):
  return prims._extract_abstract_eval(_bcoo_indices_aval(indices), mat, assume_unique=True)


bcsr_extract_p = sparse_primitive("bcsr_extract", _extract_impl, _extract_aval)


def bcsr_extract(indices: Any, indptr: Any, mat: Any) -> Any:
  """The BCSR data of the dense `mat` at the positions `(indices, indptr)` describe."""
  return bcsr_extract_p.bind(jnp.asarray(indices), jnp.asarray(indptr), jnp.asarray(mat))


def _extract_transpose(ct, indices, indptr, mat):
  if type(ct) is ad.Zero:
    return [None, None, ad.Zero(mat.aval.to_tangent_aval())]
  return [None, None, bcsr_todense_p.bind(ct, indices, indptr,
                                          spinfo=SparseInfo(mat.aval.shape))]


def _extract_batch_rule(vals, dims):
  size = next(np.shape(x)[d] for x, d in zip(vals, dims) if d is not None)
  indices, indptr = (_to_front(x, d) for x, d in zip(vals[:2], dims[:2]))
  return bcsr_extract(indices, indptr, batching.bdim_at_front(vals[2], dims[2], size)), 0


ad.defjvp(bcsr_extract_p, None, None,
          lambda t, indices, indptr, mat: bcsr_extract(indices, indptr, t))
ad.primitive_transposes[bcsr_extract_p] = _extract_transpose
batching.primitive_batchers[bcsr_extract_p] = _extract_batch_rule


# ----------------------------------------------------------------------------- fromdense

def _indptr(rows: Any, n_rows: int, dtype: Any) -> Any:
  """Row pointers of the (row-sorted) stored rows; padding rows (== n_rows) count in no
  row."""
  counts = jnp.zeros(n_rows, dtype).at[rows].add(jnp.ones_like(rows), mode="drop")
  return jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(counts).astype(dtype)])


def _fromdense_impl(mat, *, nse, n_batch, n_dense, index_dtype):
  data, coo = prims._fromdense_impl(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                    index_dtype=index_dtype)
  n_rows = mat.shape[n_batch]
  indptr = nfold_vmap(lambda r: _indptr(r, n_rows, index_dtype), n_batch)(coo[..., 0])
  return data, coo[..., 1], indptr


def _fromdense_aval(mat, *, nse, n_batch, n_dense, index_dtype):
  if mat.ndim - n_batch - n_dense != 2:
    raise ValueError(f"bcsr_fromdense: the array of shape {mat.shape} must have exactly 2 "
                     f"sparse dims (n_batch={n_batch}, n_dense={n_dense})")
  data, _ = prims._fromdense_abstract_eval(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                           index_dtype=index_dtype)
  batch = mat.shape[:n_batch]
  return [data, ShapedArray((*batch, nse), np.dtype(index_dtype)),
          ShapedArray((*batch, mat.shape[n_batch] + 1), np.dtype(index_dtype))]


bcsr_fromdense_p = sparse_primitive("bcsr_fromdense", _fromdense_impl, _fromdense_aval,
                              multiple_results=True)


def _fromdense_jvp(primals, tangents, **params):
  data, indices, indptr = bcsr_fromdense_p.bind(*primals, **params)
  zero = lambda x: ad.Zero(core.get_aval(x).to_tangent_aval())
  data_dot = (zero(data) if type(tangents[0]) is ad.Zero
              else bcsr_extract(indices, indptr, tangents[0]))
  return [data, indices, indptr], [data_dot, zero(indices), zero(indptr)]


ad.primitive_jvps[bcsr_fromdense_p] = _fromdense_jvp
batching.primitive_batchers[bcsr_fromdense_p] = lambda vals, dims, *, n_batch, **p: (
    bcsr_fromdense_p.bind(batching.moveaxis(vals[0], dims[0], 0), n_batch=n_batch + 1, **p),
    [0, 0, 0])


# ----------------------------------------------------------------------------- dot_general

def _dot_impl(data, indices, indptr, rhs, **params):
  return products._dot_general_impl(data, _bcoo_indices(indices, indptr), rhs, **params)


def _dot_aval(data, indices, indptr, rhs, **params):
  return products._dot_general_abstract_eval(data, _bcoo_indices_aval(indices), rhs, **params)


bcsr_dot_general_p = sparse_primitive("bcsr_dot_general", _dot_impl, _dot_aval)


def _dot_transpose(ct, data, indices, indptr, rhs, **params):
  """BCOO's rule on the equivalent coordinates (its data cotangent is read at them)."""
  cts = products._dot_general_transpose(ct, data, _bcoo_indices(indices, indptr), rhs,
                                        **params)
  return [cts[0], None, None, cts[2]]


def _dot_batch_rule(vals, dims, **params):
  data, indices, indptr, rhs = vals
  d_data, d_indices, d_indptr, d_rhs = dims
  if d_indices is None and d_indptr is None:
    coo, d_coo = _bcoo_indices(indices, indptr), None
  else:
    size = next(np.shape(x)[d] for x, d in zip(vals[1:3], dims[1:3]) if d is not None)
    coo = _bcoo_indices(batching.bdim_at_front(indices, d_indices, size),
                        batching.bdim_at_front(indptr, d_indptr, size))
    d_coo = 0
  return products._dot_general_batch_rule((data, coo, rhs), (d_data, d_coo, d_rhs), **params)


ad.defjvp(bcsr_dot_general_p,
          lambda t, data, indices, indptr, rhs, **p: bcsr_dot_general_p.bind(
              t, indices, indptr, rhs, **p), None, None,
          lambda t, data, indices, indptr, rhs, **p: bcsr_dot_general_p.bind(
              data, indices, indptr, t, **p))
ad.primitive_transposes[bcsr_dot_general_p] = _dot_transpose
batching.primitive_batchers[bcsr_dot_general_p] = _dot_batch_rule


# ----------------------------------------------------------------------------- BCSR

@tree_util.register_pytree_node_class
class BCSR(JAXSparse):
  """A batched CSR sparse array (see the module docstring for the buffers)."""

  def __init__(self, args: tuple[Any, Any, Any], *, shape: Sequence[int],
               indices_sorted: bool = False, unique_indices: bool = False):
    self.data, self.indices, self.indptr = map(jnp.asarray, args)
    self.indices_sorted, self.unique_indices = bool(indices_sorted), bool(unique_indices)
    super().__init__(args, shape=shape)
    n_batch = self.indices.ndim - 1
    if len(self.shape) - n_batch - self.n_dense != 2:
      raise ValueError(f"BCSR arrays have 2 sparse dims; got shape={self.shape} with "
                       f"indices.shape={self.indices.shape}")
    if self.indptr.shape[n_batch:] != (self.shape[n_batch] + 1,):
      raise ValueError("indptr shape must match the matrix shape plus 1.")

  @property
  def _info(self) -> SparseInfo:
    return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

  @property
  def nse(self) -> int:
    return self.indices.shape[-1]

  @property
  def dtype(self) -> np.dtype:
    return self.data.dtype

  @property
  def n_batch(self) -> int:
    return self.indices.ndim - 1

  @property
  def n_sparse(self) -> int:
    return 2

  @property
  def n_dense(self) -> int:
    return self.data.ndim - 1 - self.n_batch

  def _repr_extra(self) -> str:
    return ((f", n_batch={self.n_batch}" if self.n_batch else "")
            + (f", n_dense={self.n_dense}" if self.n_dense else ""))

  def tree_flatten(self) -> tuple[tuple[Any, Any, Any], dict]:
    return (self.data, self.indices, self.indptr), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data: dict, children: Sequence[Any]) -> BCSR:
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    obj.__dict__.update(aux_data)
    return obj

  @classmethod
  def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                n_dense: int = 0, n_batch: int = 0) -> BCSR:
    return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_bcoo(cls, arr: BCOO) -> BCSR:
    """The BCSR form of a BCOO array with 2 sparse dims (its indices get sorted)."""
    if arr.n_sparse != 2:
      raise NotImplementedError(f"BSCR.from_bcoo requires n_sparse=2; got {arr.n_sparse}")
    if not arr.indices_sorted:
      from jaxon._src.sparse.bcoo import bcoo_sort_indices
      arr = bcoo_sort_indices(arr)
    n_rows = arr.shape[arr.n_batch]
    indptr = nfold_vmap(lambda r: _indptr(r, n_rows, arr.indices.dtype), arr.n_batch)(
        arr.indices[..., 0])
    return cls((arr.data, arr.indices[..., 1], indptr), shape=arr.shape,
               indices_sorted=True, unique_indices=arr.unique_indices)

  def to_bcoo(self) -> BCOO:
    return BCOO((self.data, _bcoo_indices(self.indices, self.indptr)), shape=self.shape,
                indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

  @classmethod
  def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0,
                        n_batch: int = 0) -> BCSR:
    if n_dense or n_batch:
      raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
    mat = mat.tocsr()
    dtype = index_dtype or np.int32
    return cls((jnp.asarray(mat.data), jnp.asarray(mat.indices.astype(dtype)),
                jnp.asarray(mat.indptr.astype(dtype))), shape=mat.shape)

  @classmethod
  def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32",
             n_dense: int = 0, n_batch: int = 0, nse: int = 0) -> BCSR:
    return cls.from_bcoo(BCOO._empty(shape, dtype=dtype, index_dtype=index_dtype,
                                     n_dense=n_dense, n_batch=n_batch, nse=nse))

  @classmethod
  def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32",
           n_batch: int = 0, n_dense: int = 0) -> BCSR:
    return cls.from_bcoo(BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype,
                                   n_batch=n_batch, n_dense=n_dense))

  def todense(self) -> Any:
    return bcsr_todense(self)

  def transpose(self, axes: Sequence[int] | None = None) -> JAXSparse:
    raise NotImplementedError("Tranpose is not implemented.")

  def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCSR:
    return BCSR.from_bcoo(self.to_bcoo().sum_duplicates(nse=nse, remove_zeros=remove_zeros))

  def __matmul__(self, other: Any) -> Any:
    other = jnp.asarray(other)
    return bcsr_dot_general(self, other,
                            dimension_numbers=(((self.ndim - 1,), (0,)), ((), ())))


def bcsr_todense(mat: BCSR) -> Any:
  """The dense array of a BCSR array."""
  return bcsr_todense_p.bind(mat.data, mat.indices, mat.indptr, spinfo=mat._info)


def bcsr_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCSR:
  """A BCSR array of the nonzeros of `mat` (`nse` per batch; required under jit)."""
  mat = jnp.asarray(mat)
  nse = count_stored_elements(mat, n_batch, n_dense) if nse is None else nse
  nse = core.concrete_or_error(operator.index, nse, "the nse argument of bcsr_fromdense "
                               "(pass it explicitly to use it under jit)")
  bufs = bcsr_fromdense_p.bind(mat, nse=nse, n_batch=int(n_batch), n_dense=int(n_dense),
                               index_dtype=np.dtype(index_dtype))
  return BCSR(bufs, shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcsr_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: None = None,
                     preferred_element_type: Any = None, out_sharding: None = None) -> Any:
  """`lax.dot_general` of a BCSR lhs and a dense rhs (dense result)."""
  del precision, out_sharding
  if isinstance(rhs, JAXSparse) or not isinstance(lhs, BCSR):
    raise NotImplementedError("bcsr_dot_general: only BCSR @ dense is supported")
  if preferred_element_type is not None:
    preferred_element_type = np.dtype(preferred_element_type)
  return bcsr_dot_general_p.bind(
      lhs.data, lhs.indices, lhs.indptr, jnp.asarray(rhs),
      dimension_numbers=dg._canonical_dimension_numbers(dimension_numbers),
      preferred_element_type=preferred_element_type, lhs_spinfo=lhs._info)


def bcsr_sum_duplicates(mat: BCSR, nse: int | None = None) -> BCSR:
  """`mat` with duplicate indices summed (through BCOO)."""
  return BCSR.from_bcoo(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_broadcast_in_dim(mat: BCSR, *, shape: Sequence[int],
                          broadcast_dimensions: Sequence[int], sharding: None = None) -> BCSR:
  """`lax.broadcast_in_dim` of a BCSR array (through BCOO; new dims must not be sparse)."""
  from jaxon._src.sparse.bcoo_structural import bcoo_broadcast_in_dim
  return BCSR.from_bcoo(bcoo_broadcast_in_dim(mat.to_bcoo(), shape=shape,
                                              broadcast_dimensions=broadcast_dimensions))


def bcsr_concatenate(operands: Sequence[BCSR], *, dimension: int) -> BCSR:
  """`lax.concatenate` of BCSR arrays (through BCOO)."""
  from jaxon._src.sparse.bcoo_structural import bcoo_concatenate
  return BCSR.from_bcoo(bcoo_concatenate([op.to_bcoo() for op in operands],
                                         dimension=dimension))
