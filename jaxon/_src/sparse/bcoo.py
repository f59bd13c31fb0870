"""BCOO, the batched-COO sparse array, and its user-facing functions over the primitives
of `bcoo_prims` / `bcoo_products` (see `bcoo_prims` for the storage layout).

Layout-changing functions (reshape, slice, concatenate, ...) work on the index buffer
directly: they never form the dense array. The ones that cannot stay sparse in general
(raising `n_batch` or `n_dense`, gather, convolution) go through a dense array, with the
number of stored elements fixed statically so that they trace under `jit`.
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, tree_util
from jaxon._src.lax import shape_ops
from jaxon._src.sparse import bcoo_prims as prims
from jaxon._src.sparse import bcoo_products as products
from jaxon._src.sparse.base import JAXSparse
from jaxon._src.sparse.bcoo_prims import (bcoo_extract_p, bcoo_fromdense_p,  # noqa: F401
                                          bcoo_sort_indices_p, bcoo_sum_duplicates_p,
                                          bcoo_todense_p, bcoo_transpose_p, validate_bcoo)
from jaxon._src.sparse.bcoo_products import (bcoo_dot_general_p,  # noqa: F401
                                             bcoo_dot_general_sampled,
                                             bcoo_dot_general_sampled_p, bcoo_spdot_general_p)
from jaxon._src.sparse.util import (SparseEfficiencyError, SparseEfficiencyWarning,
                                    SparseInfo, count_stored_elements, nfold_vmap)

_TRACED_NSE = ("the number of stored elements (nse) of a sparse result must be concrete: "
               "pass nse= explicitly to use this function under jit or other transformations")


def _concrete_nse(nse: Any) -> int:
  return core.concrete_or_error(operator.index, nse, _TRACED_NSE)


@tree_util.register_pytree_node_class
class BCOO(JAXSparse):
  """A batched COO sparse array.

  Args:
    args: `(data, indices)`: `data` of shape `(*batch, nse, *dense)` holds the stored
      values, `indices` of shape `(*batch, nse, n_sparse)` their sparse coordinates
      (duplicates are summed; coordinates at or past the shape are padding).
    shape: the shape of the array, `(*batch, *sparse, *dense)`.
    indices_sorted, unique_indices: promises about the indices that let ops skip work.

  Example:
    >>> M = BCOO.fromdense(jnp.array([[0., 2., 0.], [1., 0., 4.]]))
    >>> M
    BCOO(float32[2, 3], nse=3)
    >>> M.indices
    Array([[0, 1],
           [1, 0],
           [1, 2]], dtype=int32)
  """

  def __init__(self, args: tuple[Any, Any], *, shape: Sequence[int],
               indices_sorted: bool = False, unique_indices: bool = False):
    data, indices = args
    self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
    self.indices_sorted = bool(indices_sorted)
    self.unique_indices = bool(unique_indices)
    super().__init__(args, shape=shape)
    validate_bcoo(self.data, self.indices, self.shape)

  @property
  def _info(self) -> SparseInfo:
    return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

  @property
  def _bufs(self) -> tuple[Any, Any]:
    return self.data, self.indices

  @property
  def nse(self) -> int:
    return self.indices.shape[-2]

  @property
  def dtype(self) -> np.dtype:
    return self.data.dtype

  @property
  def n_batch(self) -> int:
    return self.indices.ndim - 2

  @property
  def n_sparse(self) -> int:
    return self.indices.shape[-1]

  @property
  def n_dense(self) -> int:
    return self.data.ndim - 1 - self.n_batch

  def _repr_extra(self) -> str:
    return ((f", n_batch={self.n_batch}" if self.n_batch else "")
            + (f", n_dense={self.n_dense}" if self.n_dense else ""))

  def tree_flatten(self) -> tuple[tuple[Any, Any], dict]:
    return (self.data, self.indices), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data: dict, children: Sequence[Any]) -> BCOO:
    if set(aux_data) != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCOO.tree_unflatten: invalid aux_data={aux_data}")
    obj = object.__new__(cls)
    obj.data, obj.indices = children
    obj.__dict__.update(aux_data)
    return obj

  # ---- construction
  @classmethod
  def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                n_dense: int = 0, n_batch: int = 0) -> BCOO:
    """A BCOO array holding the nonzeros of the dense array `mat`."""
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0,
                        n_batch: int = 0) -> BCOO:
    """A BCOO array from a `scipy.sparse` matrix or array (via its COO form)."""
    if n_dense or n_batch:
      raise NotImplementedError("BCOO.from_scipy_sparse with nonzero n_dense/n_batch")
    mat = mat.tocoo()
    indices = np.column_stack((mat.row, mat.col)).astype(index_dtype or np.int32)
    return cls((jnp.asarray(mat.data), jnp.asarray(indices)), shape=mat.shape)

  @classmethod
  def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32",
             n_dense: int = 0, n_batch: int = 0, nse: int = 0) -> BCOO:
    shape = tuple(shape)
    n_sparse = len(shape) - n_dense - n_batch
    if min(n_sparse, n_dense, n_batch, nse) < 0:
      raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, "
                       f"n_batch={n_batch}, nse={nse}")
    batch = shape[:n_batch]
    sparse = shape[n_batch:n_batch + n_sparse]
    dense = shape[n_batch + n_sparse:]
    data = jnp.zeros((*batch, nse, *dense), dtype)
    indices = jnp.broadcast_to(jnp.asarray(sparse, index_dtype), (*batch, nse, n_sparse))
    return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

  @classmethod
  def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32",
           n_batch: int = 0, n_dense: int = 0) -> BCOO:
    if n_batch or n_dense:  # these layouts store the zeros anyway
      return cls.fromdense(jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch,
                           n_dense=n_dense, index_dtype=index_dtype)
    diag = min(N, M - k) if k > 0 else min(N + k, M)
    if diag <= 0:
      return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
    idx = np.arange(diag)
    indices = np.stack([idx - min(k, 0), idx + max(k, 0)], axis=1).astype(index_dtype)
    return cls((jnp.ones(diag, dtype), jnp.asarray(indices)), shape=(N, M),
               indices_sorted=True, unique_indices=True)

  # ---- methods
  def todense(self) -> Any:
    return bcoo_todense(self)

  def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
    perm = tuple(range(self.ndim)[::-1] if axes is None else axes)
    return bcoo_transpose(self, permutation=perm)

  def update_layout(self, *, n_batch: int | None = None, n_dense: int | None = None,
                    on_inefficient: str | None = "error") -> BCOO:
    return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                              on_inefficient=on_inefficient)

  def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCOO:
    """Duplicates summed, indices sorted, and (with `remove_zeros`) explicit zeros
    dropped; pass `nse` to use it under jit."""
    if remove_zeros:
      return bcoo_eliminate_zeros(self, nse=nse)
    return bcoo_sum_duplicates(self, nse=nse)

  def sort_indices(self) -> BCOO:
    return bcoo_sort_indices(self)

  def reshape(self, *args: Any, **kwargs: Any) -> BCOO:
    new_sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    new_sizes = kwargs.pop("new_sizes", new_sizes)
    from jaxon._src.sparse.bcoo_structural import bcoo_reshape  # built on this module
    return bcoo_reshape(self, new_sizes=tuple(new_sizes), **kwargs)

  def astype(self, dtype: Any) -> BCOO:
    return BCOO((self.data.astype(dtype), self.indices), **self._info._asdict())

  def sum(self, axis: int | Sequence[int] | None = None) -> BCOO:
    axes = (range(self.ndim) if axis is None else
            (axis,) if isinstance(axis, int) else axis)
    return bcoo_reduce_sum(self, axes=tuple(a % self.ndim for a in axes))

  def __neg__(self) -> BCOO:
    return BCOO((-self.data, self.indices), **self._info._asdict())

  def __pos__(self) -> BCOO:
    return self

  def __matmul__(self, other: Any) -> Any:
    return _matmul(self, other)

  def __rmatmul__(self, other: Any) -> Any:
    return _matmul(other, self)

  def __mul__(self, other: Any) -> Any:
    return _multiply(self, other)

  def __rmul__(self, other: Any) -> Any:
    return _multiply(self, other)

  def __truediv__(self, other: Any) -> BCOO:
    if isinstance(other, JAXSparse) or np.ndim(other):
      raise NotImplementedError("BCOO division by an array; only scalars are supported")
    return BCOO((self.data / other, self.indices), **self._info._asdict())

  def __add__(self, other: Any) -> Any:
    return _add(self, other)

  def __radd__(self, other: Any) -> Any:
    return _add(other, self)

  def __sub__(self, other: Any) -> Any:
    return _add(self, -other)

  def __rsub__(self, other: Any) -> Any:
    return _add(other, -self)


def _matmul(lhs: Any, rhs: Any) -> Any:
  """`@` with numpy's matmul dimension rules for 1-D and 2-D operands."""
  lhs_ndim = lhs.ndim if isinstance(lhs, BCOO) else np.ndim(lhs)
  rhs_ndim = rhs.ndim if isinstance(rhs, BCOO) else np.ndim(rhs)
  if lhs_ndim == 0 or rhs_ndim == 0 or lhs_ndim > 2 or rhs_ndim > 2:
    raise NotImplementedError("BCOO matmul is implemented for 1- and 2-dimensional "
                              f"operands; got ndims {lhs_ndim} and {rhs_ndim}.")
  dnums = (((lhs_ndim - 1,), (0,)), ((), ()))
  return bcoo_dot_general(lhs, rhs, dimension_numbers=dnums)


def _multiply(sp: BCOO, other: Any) -> Any:
  if isinstance(other, BCOO):
    return bcoo_multiply_sparse(sp, other)
  if isinstance(other, JAXSparse):
    return NotImplemented
  other = jnp.asarray(other)
  if other.ndim == 0:
    return BCOO((sp.data * other, sp.indices), **sp._info._asdict())
  return BCOO((bcoo_multiply_dense(sp, other), sp.indices), **sp._info._asdict())


def _add(lhs: Any, rhs: Any) -> Any:
  """Sparse + sparse of one shape and layout concatenates the stored elements; anything
  else is dense."""
  if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
    if lhs.shape != rhs.shape:
      raise NotImplementedError(f"addition of BCOO arrays of different shapes {lhs.shape} "
                                f"and {rhs.shape}")
    rhs = bcoo_update_layout(rhs, n_batch=lhs.n_batch, n_dense=lhs.n_dense)
    data_axis = lhs.n_batch
    shape = (*map(max, lhs.data.shape[:data_axis], rhs.data.shape[:data_axis]),)
    datas = [jnp.broadcast_to(m.data, (*shape, m.nse, *m.data.shape[data_axis + 1:]))
             for m in (lhs, rhs)]
    idx_shape = (*map(max, lhs.indices.shape[:data_axis], rhs.indices.shape[:data_axis]),)
    idxs = [jnp.broadcast_to(m.indices, (*idx_shape, *m.indices.shape[data_axis:]))
            for m in (lhs, rhs)]
    return BCOO((jnp.concatenate(datas, axis=data_axis),
                 jnp.concatenate(idxs, axis=data_axis)), shape=lhs.shape)
  dense = lambda x: x.todense() if isinstance(x, BCOO) else x
  return dense(lhs) + dense(rhs)


# ----------------------------------------------------------------------------- primitives

def bcoo_todense(mat: BCOO) -> Any:
  """The dense array `mat` represents (duplicates summed)."""
  return prims.bcoo_todense_buffers(mat.data, mat.indices, spinfo=mat._info)


def bcoo_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCOO:
  """A BCOO array of the nonzeros of `mat`; `nse` (the number stored per batch) must be
  given under jit, else it is counted."""
  mat = jnp.asarray(mat)
  if nse is None:
    nse = count_stored_elements(mat, n_batch, n_dense)
  nse = _concrete_nse(nse)
  bufs = bcoo_fromdense_p.bind(mat, nse=nse, n_batch=int(n_batch), n_dense=int(n_dense),
                               index_dtype=np.dtype(index_dtype))
  return BCOO(bufs, shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_extract(sparr: BCOO, arr: Any, *, assume_unique: bool | None = None) -> BCOO:
  """A BCOO array with `sparr`'s indices and the values of the dense `arr` there."""
  if not isinstance(sparr, BCOO):
    raise TypeError(f"First argument to bcoo_extract should be a BCOO array. "
                    f"Got {type(sparr)}")
  arr = jnp.asarray(arr)
  if arr.shape != sparr.shape:
    raise ValueError(f"shape mismatch: sparr.shape={sparr.shape} arr.shape={arr.shape}")
  if assume_unique is None:
    assume_unique = sparr.unique_indices
  data = prims.bcoo_extract_buffers(sparr.indices, arr, assume_unique=assume_unique)
  return BCOO((data, sparr.indices), **sparr._info._asdict())


def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
  """`lax.transpose` of a BCOO array; the permutation must keep batch, sparse and dense
  dimensions within their groups."""
  permutation = tuple(int(p) for p in permutation)
  data, indices = prims.bcoo_transpose_buffers(mat.data, mat.indices,
                                               permutation=permutation, spinfo=mat._info)
  sparse_perm = permutation[mat.n_batch:mat.n_batch + mat.n_sparse]
  keeps_order = sparse_perm == tuple(range(mat.n_batch, mat.n_batch + mat.n_sparse))
  return BCOO((data, indices), shape=tuple(mat.shape[p] for p in permutation),
              indices_sorted=mat.indices_sorted and keeps_order,
              unique_indices=mat.unique_indices)


def bcoo_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: None = None,
                     preferred_element_type: Any = None, out_sharding: None = None) -> Any:
  """`lax.dot_general` with BCOO operands: dense when either operand is, else BCOO."""
  del precision, out_sharding
  if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
    shape = products._dense_dot_aval(
        lhs.shape, lhs.dtype, core.ShapedArray(rhs.shape, rhs.dtype),
        products._canonical_dnums(dimension_numbers), None).shape
    bufs = products.bcoo_spdot_general_buffers(
        lhs.data, lhs.indices, rhs.data, rhs.indices, lhs_spinfo=lhs._info,
        rhs_spinfo=rhs._info, dimension_numbers=dimension_numbers,
        preferred_element_type=preferred_element_type)
    return BCOO(bufs, shape=shape)
  if isinstance(lhs, BCOO):
    return products.bcoo_dot_general_buffers(
        lhs.data, lhs.indices, rhs, dimension_numbers=dimension_numbers,
        preferred_element_type=preferred_element_type, lhs_spinfo=lhs._info)
  if isinstance(rhs, BCOO):
    (lc, rc), (lb, rb) = products._canonical_dnums(dimension_numbers)
    out = products.bcoo_dot_general_buffers(
        rhs.data, rhs.indices, lhs, dimension_numbers=((rc, lc), (rb, lb)),
        preferred_element_type=preferred_element_type, lhs_spinfo=rhs._info)
    n_batch, n_rhs_free = len(lb), rhs.ndim - len(rc) - len(rb)
    perm = (*range(n_batch), *range(n_batch + n_rhs_free, out.ndim),
            *range(n_batch, n_batch + n_rhs_free))
    return shape_ops.transpose(out, perm)
  from jaxon._src.lax import dot_general as dg
  return dg.dot_general(lhs, rhs, dimension_numbers,
                        preferred_element_type=preferred_element_type)


def bcoo_sort_indices(mat: BCOO) -> BCOO:
  """`mat` with its indices in lexicographic order (duplicates kept)."""
  data, indices = bcoo_sort_indices_p.bind(mat.data, mat.indices, spinfo=mat._info)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
              unique_indices=mat.unique_indices)


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
  """`mat` with duplicate indices summed and indices sorted; `nse` sets the stored size
  (needed under jit; by default the number of distinct indices)."""
  if nse is None:
    nse = _distinct_count(mat)
  data, indices = bcoo_sum_duplicates_p.bind(mat.data, mat.indices, spinfo=mat._info,
                                             nse=_concrete_nse(nse))
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def _distinct_count(mat: BCOO) -> int:
  """The largest number of distinct in-bounds indices in a batch (at least 1)."""
  if not mat.n_sparse:
    return 1
  indices = np.asarray(core.concrete_or_error(None, mat.indices, _TRACED_NSE))
  sparse_shape = np.array(mat.shape[mat.n_batch:mat.n_batch + mat.n_sparse])
  rows = indices.reshape(-1, mat.nse, mat.n_sparse)
  counts = [len({tuple(r) for r in batch if (r < sparse_shape).all()}) for batch in rows]
  return max(counts, default=0)


def bcoo_eliminate_zeros(mat: BCOO, nse: int | None = None) -> BCOO:
  """`mat` without its explicitly stored zeros (and with duplicates summed)."""
  data_axes = tuple(range(mat.n_batch + 1, mat.data.ndim))
  zero = (mat.data == 0).all(data_axes) if data_axes else mat.data == 0
  fill = jnp.asarray(mat.shape[mat.n_batch:mat.n_batch + mat.n_sparse], mat.indices.dtype)
  indices = jnp.where(zero[..., None], fill, mat.indices)
  return bcoo_sum_duplicates(BCOO((mat.data, indices), shape=mat.shape), nse=nse)


# ----------------------------------------------------------------------------- layout

def bcoo_update_layout(mat: BCOO, *, n_batch: int | None = None, n_dense: int | None = None,
                       on_inefficient: str | None = "error") -> BCOO:
  """`mat` stored with `n_batch` batch and `n_dense` dense dimensions.

  Fewer batch or dense dims costs nothing extra; more of either stores zeros (each new
  batch or dense position of every element), which raises `SparseEfficiencyError`
  unless `on_inefficient` is "warn" or None (the new dims of size <= 1 are free)."""
  n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
  n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
  if on_inefficient not in ("error", "warn", None):
    raise ValueError(f"on_inefficient={on_inefficient!r}; expected 'error', 'warn' or None")
  if not (0 <= n_batch <= mat.ndim - n_dense and 0 <= n_dense <= mat.ndim):
    raise ValueError(f"Invalid layout n_batch={n_batch}, n_dense={n_dense} for "
                     f"shape={mat.shape}")
  if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
    return mat
  grown = [*mat.shape[mat.n_batch:n_batch], *mat.shape[mat.ndim - n_dense:
                                                        mat.ndim - mat.n_dense]]
  if any(s > 1 for s in grown) and on_inefficient is not None:
    message = (f"BCOO.update_layout(n_batch={n_batch}, n_dense={n_dense}) of {mat} stores "
               "many zeros; pass on_inefficient=None to allow it")
    if on_inefficient == "error":
      raise SparseEfficiencyError(message)
    warnings.warn(message, SparseEfficiencyWarning, stacklevel=2)
  if n_batch > mat.n_batch or n_dense > mat.n_dense:
    # Elements per new batch: at most the old count times the positions of the dims
    # that become sparse.
    nse = mat.nse * math.prod(mat.shape[n_batch:mat.n_batch]) * math.prod(
        mat.shape[mat.ndim - mat.n_dense:mat.ndim - n_dense])
    nse = min(nse, math.prod(mat.shape[n_batch:mat.ndim - n_dense]))
    dense = bcoo_todense(mat)
    return bcoo_fromdense(dense, nse=nse, n_batch=n_batch, n_dense=n_dense,
                          index_dtype=mat.indices.dtype)
  if n_dense < mat.n_dense:
    mat = _dense_to_sparse(mat, mat.n_dense - n_dense)
  if n_batch < mat.n_batch:
    mat = _batch_to_sparse(mat, mat.n_batch - n_batch)
  return mat


def _dense_to_sparse(mat: BCOO, count: int) -> BCOO:
  """The first `count` dense dims become sparse: each block splits into its entries."""
  nb, ns = mat.n_batch, mat.n_sparse
  moved = mat.shape[nb + ns:nb + ns + count]
  grid = np.stack(np.meshgrid(*map(np.arange, moved), indexing="ij"), -1).reshape(-1, count)
  k = grid.shape[0]
  indices = jnp.concatenate([
      jnp.broadcast_to(mat.indices[..., :, None, :], (*mat.indices.shape[:-1], k, ns)),
      jnp.broadcast_to(jnp.asarray(grid, mat.indices.dtype),
                       (*mat.indices.shape[:-1], k, count))], axis=-1)
  indices = indices.reshape((*mat.indices.shape[:-2], mat.nse * k, ns + count))
  rest = mat.data.shape[nb + 1 + count:]
  data = mat.data.reshape((*mat.data.shape[:nb], mat.nse * k, *rest))
  return BCOO((data, indices), shape=mat.shape)


def _batch_to_sparse(mat: BCOO, count: int) -> BCOO:
  """The last `count` batch dims become sparse: their coordinates join the indices."""
  nb = mat.n_batch
  keep = nb - count
  batch_shape = mat.shape[:nb]
  data = jnp.broadcast_to(mat.data, (*batch_shape, *mat.data.shape[nb:]))
  indices = jnp.broadcast_to(mat.indices, (*batch_shape, *mat.indices.shape[nb:]))
  coords = jnp.stack(jnp.meshgrid(*[jnp.arange(s, dtype=indices.dtype)
                                    for s in batch_shape[keep:]], indexing="ij"), -1)
  coords = jnp.broadcast_to(coords.reshape((1,) * keep + batch_shape[keep:] + (1, count)),
                            (*batch_shape, mat.nse, count))
  indices = jnp.concatenate([coords, indices], axis=-1)
  nse = mat.nse * math.prod(batch_shape[keep:])
  return BCOO((data.reshape((*batch_shape[:keep], nse, *data.shape[nb + 1:])),
               indices.reshape((*batch_shape[:keep], nse, indices.shape[-1]))),
              shape=mat.shape)


# ----------------------------------------------------------------------------- elementwise

def bcoo_multiply_dense(sp_mat: BCOO, v: Any) -> Any:
  """The data of `sp_mat * v` (same indices) for a dense `v` broadcasting to its shape."""
  v = jnp.asarray(v)
  if v.ndim == 0:
    return sp_mat.data * v
  if v.shape == sp_mat.shape:
    return sp_mat.data * prims.bcoo_extract_buffers(sp_mat.indices, v)
  if np.broadcast_shapes(v.shape, sp_mat.shape) != sp_mat.shape:
    raise NotImplementedError(
        "multiplication between sparse and dense is only implemented for cases where the "
        f"output shape matches the sparse matrix shape. Got shape={sp_mat.shape}, "
        f"v.shape={v.shape}")
  v = v.reshape((1,) * (sp_mat.ndim - v.ndim) + v.shape)
  nb = sp_mat.n_batch

  def one_batch(d, i, w):
    coords = tuple(i[:, k] if s != 1 else 0 for k, s in enumerate(w.shape[:i.shape[1]]))
    return d * w[coords]
  return nfold_vmap(one_batch, nb)(sp_mat.data, sp_mat.indices, v)


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
  """Elementwise product of two BCOO arrays of one rank (broadcasting size-1 dims)."""
  if lhs.ndim != rhs.ndim:
    raise TypeError("bcoo_multiply_sparse: arrays must have same number of dimensions, "
                    f"got {lhs.shape}, {rhs.shape}")
  if lhs.n_dense != rhs.n_dense:
    raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of "
                              f"dense dimensions: {lhs}, {rhs}")
  n_batch = min(lhs.n_batch, rhs.n_batch)
  lhs = bcoo_update_layout(lhs, n_batch=n_batch)
  rhs = bcoo_update_layout(rhs, n_batch=n_batch)
  shape = tuple(np.broadcast_shapes(lhs.shape, rhs.shape))
  matched = [k for k, (a, b) in enumerate(zip(lhs.shape[n_batch:n_batch + lhs.n_sparse],
                                              rhs.shape[n_batch:])) if a != 1 and b != 1]

  def one_batch(ld, li, rd, ri):
    nse = li.shape[0] * ri.shape[0]
    mask = (li[:, None, matched] == ri[None, :, matched]).all(-1)
    il, ir = jnp.nonzero(mask, size=nse, fill_value=(li.shape[0], ri.shape[0]))
    data = (ld.at[il].get(mode="fill", fill_value=0) *
            rd.at[ir].get(mode="fill", fill_value=0))
    fill = max(shape, default=0)
    indices = jnp.maximum(li.at[il].get(mode="fill", fill_value=fill),
                          ri.at[ir].get(mode="fill", fill_value=fill))
    return data, indices
  data, indices = nfold_vmap(one_batch, n_batch)(lhs.data, lhs.indices, rhs.data,
                                                 rhs.indices)
  return BCOO((data, indices), shape=shape)


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
  """Sum over `axes`: dense axes sum the data, sparse axes drop their coordinate, batch
  axes fold into the stored elements."""
  shape, nb, ns = mat.shape, mat.n_batch, mat.n_sparse
  axes = sorted({operator.index(a) for a in axes})
  if any(not 0 <= a < len(shape) for a in axes):
    raise ValueError(f"bcoo_reduce_sum: axes {axes} out of range for shape {shape}")
  data, indices = mat.data, mat.indices
  data = data.sum(tuple(a - ns + 1 for a in axes if a >= nb + ns))
  if ns:
    in_bounds = (indices < jnp.asarray(shape[nb:nb + ns], indices.dtype)).all(-1)
    in_bounds = in_bounds.reshape(in_bounds.shape + (1,) * (data.ndim - in_bounds.ndim))
    data = jnp.where(in_bounds, data, jnp.zeros((), data.dtype))
  kept = [k for k in range(ns) if k + nb not in axes]
  indices = indices[..., kept] if kept else indices[..., :0]
  batch_axes = [a for a in axes if a < nb]
  full = (*shape[:nb],)
  data = jnp.broadcast_to(data, (*full, *data.shape[nb:]))
  indices = jnp.broadcast_to(indices, (*full, *indices.shape[nb:]))
  kept_batch = [d for d in range(nb) if d not in batch_axes]
  order = (*kept_batch, *batch_axes)
  data = data.transpose((*order, *range(nb, data.ndim)))
  indices = indices.transpose((*order, *range(nb, indices.ndim)))
  nse = mat.nse * math.prod(shape[a] for a in batch_axes)
  new_batch = tuple(shape[d] for d in kept_batch)
  data = data.reshape((*new_batch, nse, *data.shape[nb + 1:]))
  indices = indices.reshape((*new_batch, nse, indices.shape[-1]))
  return BCOO((data, indices), shape=tuple(s for d, s in enumerate(shape) if d not in axes))
