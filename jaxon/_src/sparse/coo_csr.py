"""The older 2-D formats: COO (`data`, `row`, `col`), CSR (`data`, `indices`, `indptr`)
and CSC (CSR of the transpose), with their primitives (`coo_*_p`, `csr_*_p`): to and
from dense, and matrix-vector / matrix-matrix products (optionally with the transpose).

Each CSR primitive computes with the COO form of its operand (the row of each stored
element is found from `indptr`), so both families share one set of helpers: scatter-add
into the dense result, gather from the dense operand. The products are linear in the
data and in the dense operand; their transposes are the transposed product and the
sampled outer product at the stored positions. Batching evaluates the helper under vmap.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, jaxpr_param_readers, tree_util
from jaxon._src.api import vmap
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching
from jaxon._src.sparse.base import JAXSparse
from jaxon._src.sparse.util import count_stored_elements, sparse_primitive


class COOInfo(NamedTuple):
  shape: tuple[int, int]
  rows_sorted: bool = False
  cols_sorted: bool = False


jaxpr_param_readers.CONSTRUCTORS["COOInfo"] = COOInfo


def _primitive(name: str, impl: Callable, abstract_eval: Callable,
               multiple_results: bool = False) -> core.Primitive:
  """A `sparse_primitive`, batched by vmapping `impl`."""
  prim = sparse_primitive(name, impl, abstract_eval, multiple_results)

  def batch_rule(vals: Sequence[Any], dims: Sequence[int | None], **params: Any) -> Any:
    out = vmap(functools.partial(impl, **params), in_axes=tuple(dims))(*vals)
    return out, ([0] * len(out) if multiple_results else 0)
  batching.primitive_batchers[prim] = batch_rule
  return prim


# ----------------------------------------------------------------------------- helpers

def _csr_rows(indptr: Any, nse: int) -> Any:
  """The row of each of the `nse` stored elements of a CSR matrix."""
  return jnp.searchsorted(indptr[1:], jnp.arange(nse, dtype=indptr.dtype), side="right")


def _scatter_dense(data: Any, row: Any, col: Any, shape: Sequence[int]) -> Any:
  return jnp.zeros(tuple(shape), data.dtype).at[row, col].add(data, mode="drop")


def _gather(mat: Any, row: Any, col: Any) -> Any:
  return jnp.asarray(mat).at[row, col].get(mode="fill", fill_value=0)


def _product(data: Any, row: Any, col: Any, x: Any, shape: Sequence[int], transpose: bool
             ) -> Any:
  """`A @ x` (or `A.T @ x`) for the COO matrix A and a vector or matrix x."""
  out_rows, in_idx = (col, row) if transpose else (row, col)
  n_out = shape[1] if transpose else shape[0]
  terms = (data.reshape(data.shape + (1,) * (x.ndim - 1)) * x.at[in_idx].get(
      mode="fill", fill_value=0)).astype(jnp.result_type(data, x))
  return jnp.zeros((n_out, *x.shape[1:]), terms.dtype).at[out_rows].add(terms, mode="drop")


def _product_data_cotangent(ct: Any, row: Any, col: Any, x: Any, transpose: bool) -> Any:
  """d(A @ x)/d data, contracted with ct: ct[out row] . x[in index] for each element."""
  out_rows, in_idx = (col, row) if transpose else (row, col)
  ct, x = jnp.asarray(ct), jnp.asarray(x)
  picked_ct = ct.at[out_rows].get(mode="fill", fill_value=0)
  picked_x = x.at[in_idx].get(mode="fill", fill_value=0)
  return (picked_ct * picked_x).reshape(picked_ct.shape[0], -1).sum(1)


def _zero_like(x: Any) -> ad.Zero:
  return ad.Zero(core.get_aval(x).to_tangent_aval())


def _define_family(prefix: str, index_params: Callable[[dict], tuple[int, int]],
                   to_coo: Callable[..., tuple[Any, Any]]) -> dict[str, core.Primitive]:
  """The four primitives of a format whose buffers `(data, a, b)` give COO coordinates
  `to_coo(data, a, b) -> (row, col)` and whose params give the shape."""
  def todense_impl(data, a, b, **params):
    return _scatter_dense(data, *to_coo(data, a, b), index_params(params))

  def todense_aval(data, a, b, **params):
    return ShapedArray(tuple(index_params(params)), data.dtype)
  todense_p = _primitive(f"{prefix}_todense", todense_impl, todense_aval)

  def todense_transpose(ct, data, a, b, **params):
    if type(ct) is ad.Zero:
      return [ad.Zero(data.aval.to_tangent_aval()), None, None]
    return [_gather(ct, *to_coo(data.aval, a, b)), None, None]
  ad.defjvp(todense_p, lambda t, data, a, b, **params: todense_p.bind(t, a, b, **params),
            None, None)
  ad.primitive_transposes[todense_p] = todense_transpose

  def product(name: str, vector: bool) -> core.Primitive:
    def impl(data, a, b, x, *, transpose, **params):
      return _product(data, *to_coo(data, a, b), x, index_params(params), transpose)

    def aval(data, a, b, x, *, transpose, **params):
      shape = index_params(params)
      n_in, n_out = (shape[0], shape[1]) if transpose else (shape[1], shape[0])
      if x.ndim != (1 if vector else 2) or x.shape[0] != n_in:
        raise TypeError(f"{prefix}_{name}: operand of shape {x.shape} does not match the "
                        f"sparse matrix of shape {tuple(shape)} (transpose={transpose})")
      return ShapedArray((n_out, *x.shape[1:]), np.result_type(data.dtype, x.dtype))
    prim = _primitive(f"{prefix}_{name}", impl, aval)

    def transpose_rule(ct, data, a, b, x, *, transpose, **params):
      if type(ct) is ad.Zero:
        return [ad.Zero(v.aval.to_tangent_aval()) if ad.is_undefined_primal(v) else None
                for v in (data, a, b, x)]
      if ad.is_undefined_primal(x):
        return [None, None, None, prim.bind(data, a, b, ct, transpose=not transpose,
                                            **params).astype(x.aval.dtype)]
      row, col = to_coo(data.aval, a, b)
      return [_product_data_cotangent(ct, row, col, x, transpose).astype(data.aval.dtype),
              None, None, None]
    ad.defjvp(prim, lambda t, data, a, b, x, **p: prim.bind(t, a, b, x, **p), None, None,
              lambda t, data, a, b, x, **p: prim.bind(data, a, b, t, **p))
    ad.primitive_transposes[prim] = transpose_rule
    return prim

  return {"todense": todense_p, "matvec": product("matvec", True),
          "matmat": product("matmat", False)}


def _coo_shape(params: dict) -> tuple[int, int]:
  return params["spinfo"].shape


def _csr_shape(params: dict) -> tuple[int, int]:
  return params["shape"]


_coo = _define_family("coo", _coo_shape, lambda data, row, col: (row, col))
_csr = _define_family("csr", _csr_shape,
                      lambda data, indices, indptr: (_csr_rows(indptr, data.shape[0]),
                                                     indices))
coo_todense_p, coo_matvec_p, coo_matmat_p = _coo["todense"], _coo["matvec"], _coo["matmat"]
csr_todense_p, csr_matvec_p, csr_matmat_p = _csr["todense"], _csr["matvec"], _csr["matmat"]


# ----------------------------------------------------------------------------- fromdense

def _nonzero_coordinates(mat: Any, nse: int, index_dtype: Any) -> tuple[Any, Any, Any]:
  row, col = jnp.nonzero(mat, size=nse, fill_value=0)
  true_nse = (mat != 0).sum()
  kept = jnp.arange(nse) < true_nse
  data = jnp.where(kept, mat[row, col], jnp.zeros((), mat.dtype))
  return data, row.astype(index_dtype), col.astype(index_dtype)


def _coo_fromdense_impl(mat, *, nse, index_dtype):
  return _nonzero_coordinates(mat, nse, index_dtype)


def _csr_fromdense_impl(mat, *, nse, index_dtype):
  data, row, col = _nonzero_coordinates(mat, nse, index_dtype)
  counts = jnp.zeros(mat.shape[0], index_dtype).at[row].add(
      (jnp.arange(nse) < (mat != 0).sum()).astype(index_dtype))
  indptr = jnp.concatenate([jnp.zeros(1, index_dtype), jnp.cumsum(counts).astype(index_dtype)])
  return data, col, indptr


def _fromdense_avals(n_index_bufs: Callable[[ShapedArray, int], list[tuple[int, ...]]]
                     ) -> Callable:
  def aval(mat, *, nse, index_dtype):
    if mat.ndim != 2:
      raise ValueError(f"sparse fromdense: the matrix must be 2-D; got shape {mat.shape}")
    return [ShapedArray((nse,), mat.dtype),
            *(ShapedArray(s, np.dtype(index_dtype)) for s in n_index_bufs(mat, nse))]
  return aval


coo_fromdense_p = _primitive("coo_fromdense", _coo_fromdense_impl,
                             _fromdense_avals(lambda m, nse: [(nse,), (nse,)]),
                             multiple_results=True)
csr_fromdense_p = _primitive("csr_fromdense", _csr_fromdense_impl,
                             _fromdense_avals(lambda m, nse: [(nse,), (m.shape[0] + 1,)]),
                             multiple_results=True)


def _fromdense_jvp(prim: core.Primitive, to_coo: Callable) -> Callable:
  def jvp(primals, tangents, **params):
    outs = prim.bind(*primals, **params)
    mat_dot, = tangents
    data_dot = (_zero_like(outs[0]) if type(mat_dot) is ad.Zero
                else _gather(mat_dot, *to_coo(*outs)))
    return outs, [data_dot, _zero_like(outs[1]), _zero_like(outs[2])]
  return jvp


ad.primitive_jvps[coo_fromdense_p] = _fromdense_jvp(coo_fromdense_p,
                                                    lambda data, row, col: (row, col))
ad.primitive_jvps[csr_fromdense_p] = _fromdense_jvp(
    csr_fromdense_p, lambda data, indices, indptr: (_csr_rows(indptr, data.shape[0]), indices))


def _static_nse(mat: Any, nse: int | None) -> int:
  nse = count_stored_elements(mat) if nse is None else nse
  return core.concrete_or_error(int, nse, "the nse argument of a sparse fromdense (pass "
                                "nse= explicitly to use it under jit)")


# ----------------------------------------------------------------------------- functions

def coo_todense(mat: COO) -> Any:
  return coo_todense_p.bind(mat.data, mat.row, mat.col, spinfo=mat._info)


def coo_fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> COO:
  mat = jnp.asarray(mat)
  data, row, col = coo_fromdense_p.bind(mat, nse=_static_nse(mat, nse),
                                        index_dtype=np.dtype(index_dtype))
  return COO((data, row, col), shape=mat.shape, rows_sorted=True)


def coo_matvec(mat: COO, v: Any, transpose: bool = False) -> Any:
  return coo_matvec_p.bind(mat.data, mat.row, mat.col, jnp.asarray(v), spinfo=mat._info,
                           transpose=bool(transpose))


def coo_matmat(mat: COO, B: Any, *, transpose: bool = False) -> Any:
  return coo_matmat_p.bind(mat.data, mat.row, mat.col, jnp.asarray(B), spinfo=mat._info,
                           transpose=bool(transpose))


def csr_todense(mat: CSR) -> Any:
  return csr_todense_p.bind(mat.data, mat.indices, mat.indptr, shape=mat.shape)


def csr_fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSR:
  mat = jnp.asarray(mat)
  bufs = csr_fromdense_p.bind(mat, nse=_static_nse(mat, nse),
                              index_dtype=np.dtype(index_dtype))
  return CSR(bufs, shape=mat.shape)


def csr_matvec(mat: CSR, v: Any, transpose: bool = False) -> Any:
  return csr_matvec_p.bind(mat.data, mat.indices, mat.indptr, jnp.asarray(v),
                           shape=mat.shape, transpose=bool(transpose))


def csr_matmat(mat: CSR, B: Any, *, transpose: bool = False) -> Any:
  return csr_matmat_p.bind(mat.data, mat.indices, mat.indptr, jnp.asarray(B),
                           shape=mat.shape, transpose=bool(transpose))


# ----------------------------------------------------------------------------- classes

def _check_2d(name: str, shape: Sequence[int]) -> tuple[int, int]:
  shape = tuple(int(s) for s in shape)
  if len(shape) != 2:
    raise ValueError(f"{name} must have ndim=2; got shape={shape}")
  return shape  # type: ignore[return-value]


def _diagonal(N: int, M: int, k: int, index_dtype: Any) -> tuple[np.ndarray, np.ndarray]:
  size = max(min(N, M - k) if k > 0 else min(N + k, M), 0)
  idx = np.arange(size)
  return (idx - min(k, 0)).astype(index_dtype), (idx + max(k, 0)).astype(index_dtype)


def _matmul(mat: Any, other: Any, vec: Callable, mat_fn: Callable) -> Any:
  if isinstance(other, JAXSparse):
    raise NotImplementedError("matmul between two sparse objects.")
  other = jnp.asarray(other)
  dtype = jnp.result_type(mat.data, other)
  promoted = tree_util.tree_unflatten(tree_util.tree_structure(mat),
                                      [mat.data.astype(dtype), *tree_util.tree_leaves(mat)[1:]])
  if other.ndim == 1:
    return vec(promoted, other.astype(dtype))
  if other.ndim == 2:
    return mat_fn(promoted, other.astype(dtype))
  raise NotImplementedError(f"matmul with object of shape {other.shape}")


@tree_util.register_pytree_node_class
class COO(JAXSparse):
  """A 2-D COO sparse matrix: `data[k]` at `(row[k], col[k])`. Prefer BCOO, which
  supports more operations and transformations."""

  def __init__(self, args: tuple[Any, Any, Any], *, shape: Sequence[int],
               rows_sorted: bool = False, cols_sorted: bool = False):
    self.data, self.row, self.col = map(jnp.asarray, args)
    self._rows_sorted, self._cols_sorted = bool(rows_sorted), bool(cols_sorted)
    super().__init__(args, shape=_check_2d("COO", shape))

  @property
  def _info(self) -> COOInfo:
    return COOInfo(self.shape, self._rows_sorted, self._cols_sorted)

  @property
  def nse(self) -> int:
    return self.data.size

  @property
  def dtype(self) -> np.dtype:
    return self.data.dtype

  @classmethod
  def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> COO:
    return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32"
             ) -> COO:
    empty = jnp.zeros(0, index_dtype)
    return cls((jnp.zeros(0, dtype), empty, empty), shape=_check_2d("COO", shape),
               rows_sorted=True, cols_sorted=True)

  @classmethod
  def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32"
           ) -> COO:
    row, col = _diagonal(N, M, k, index_dtype)
    return cls((jnp.ones(row.size, dtype), row, col), shape=(N, M), rows_sorted=True,
               cols_sorted=True)

  def todense(self) -> Any:
    return coo_todense(self)

  def transpose(self, axes: Sequence[int] | None = None) -> COO:
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return COO((self.data, self.col, self.row), shape=self.shape[::-1],
               rows_sorted=self._cols_sorted, cols_sorted=self._rows_sorted)

  def tree_flatten(self) -> tuple[tuple[Any, Any, Any], dict]:
    return (self.data, self.row, self.col), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data: dict, children: Sequence[Any]) -> COO:
    obj = object.__new__(cls)
    obj.data, obj.row, obj.col = children
    obj.shape = aux_data["shape"]
    obj._rows_sorted, obj._cols_sorted = aux_data["rows_sorted"], aux_data["cols_sorted"]
    return obj

  def __matmul__(self, other: Any) -> Any:
    return _matmul(self, other, coo_matvec, coo_matmat)


class _Compressed(JAXSparse):
  """What CSR and CSC share: three buffers (`data`, `indices`, `indptr`) and a shape."""

  def __init__(self, args: tuple[Any, Any, Any], *, shape: Sequence[int]):
    self.data, self.indices, self.indptr = map(jnp.asarray, args)
    super().__init__(args, shape=_check_2d(type(self).__name__, shape))

  @property
  def nse(self) -> int:
    return self.data.size

  @property
  def dtype(self) -> np.dtype:
    return self.data.dtype

  def tree_flatten(self) -> tuple[tuple[Any, Any, Any], dict]:
    return (self.data, self.indices, self.indptr), {"shape": self.shape}

  @classmethod
  def tree_unflatten(cls, aux_data: dict, children: Sequence[Any]) -> JAXSparse:
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    obj.shape = aux_data["shape"]
    return obj


@tree_util.register_pytree_node_class
class CSR(_Compressed):
  """A 2-D compressed-sparse-row matrix: row i holds `data[indptr[i]:indptr[i+1]]` at
  columns `indices[indptr[i]:indptr[i+1]]`."""

  @classmethod
  def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSR:
    return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32"
             ) -> CSR:
    shape = _check_2d("CSR", shape)
    return cls((jnp.zeros(0, dtype), jnp.zeros(0, index_dtype),
                jnp.zeros(shape[0] + 1, index_dtype)), shape=shape)

  @classmethod
  def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32"
           ) -> CSR:
    row, col = _diagonal(N, M, k, index_dtype)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=N))])
    return cls((jnp.ones(row.size, dtype), col, indptr.astype(index_dtype)), shape=(N, M))

  def todense(self) -> Any:
    return csr_todense(self)

  def transpose(self, axes: Sequence[int] | None = None) -> CSC:
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other: Any) -> Any:
    return _matmul(self, other, csr_matvec, csr_matmat)


@tree_util.register_pytree_node_class
class CSC(_Compressed):
  """A 2-D compressed-sparse-column matrix: the CSR buffers of its transpose."""

  @classmethod
  def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSC:
    return csr_fromdense(jnp.asarray(mat).T, nse=nse, index_dtype=index_dtype).T

  @classmethod
  def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32"
             ) -> CSC:
    return CSR._empty(_check_2d("CSC", shape)[::-1], dtype=dtype, index_dtype=index_dtype).T

  @classmethod
  def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32"
           ) -> CSC:
    return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

  def todense(self) -> Any:
    return csr_todense(self.T).T

  def transpose(self, axes: Sequence[int] | None = None) -> CSR:
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other: Any) -> Any:
    return _matmul(self.T, other, lambda m, v: csr_matvec(m, v, transpose=True),
                   lambda m, b: csr_matmat(m, b, transpose=True))
