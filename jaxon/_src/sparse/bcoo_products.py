"""BCOO products: sparse x dense (`bcoo_dot_general`), dense x dense sampled at sparse
indices (`bcoo_dot_general_sampled`, the transpose of the first in its sparse operand) and
sparse x sparse (`bcoo_spdot_general`).

`bcoo_dot_general` lowers to a dense formulation (the sparse operand scattered into a dense
array, then XLA's dot): exact, at the dense operand's memory cost. `bcoo_spdot_general`
pairs every stored element of lhs with every one of rhs (products whose contracted
coordinates differ are zero), as JAX does, so its output holds `lhs.nse * rhs.nse`
elements (fewer only when the dense output is smaller; then duplicates are summed).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching
from jaxon._src.lax import dot_general as dg
from jaxon._src.lax import shape_ops
from jaxon._src.sparse import bcoo_prims as prims
from jaxon._src.sparse.bcoo_prims import validate_bcoo
from jaxon._src.sparse.util import SparseInfo, nfold_vmap, sparse_primitive


def _dense_dot_aval(lhs_shape: Sequence[int], lhs_dtype: Any, rhs: ShapedArray,
                    dimension_numbers: tuple, preferred_element_type: Any) -> ShapedArray:
  return dg.dot_general_p.abstract_eval(
      ShapedArray(tuple(lhs_shape), lhs_dtype), rhs, dimension_numbers=dimension_numbers,
      precision=None, preferred_element_type=preferred_element_type, out_sharding=None)


def _dot(lhs: Any, rhs: Any, dimension_numbers: tuple, preferred_element_type: Any) -> Any:
  return dg.dot_general(lhs, rhs, dimension_numbers,
                        preferred_element_type=preferred_element_type)


def _canonical_dnums(dimension_numbers: Any) -> tuple:
  return dg._canonical_dimension_numbers(dimension_numbers)


# ----------------------------------------------------------------------------- dot_general

def _dot_general_impl(lhs_data: Any, lhs_indices: Any, rhs: Any, *, dimension_numbers: tuple,
                      preferred_element_type: Any, lhs_spinfo: SparseInfo) -> Any:
  lhs = prims._todense_impl(lhs_data, lhs_indices, spinfo=lhs_spinfo)
  return _dot(lhs, rhs, dimension_numbers, preferred_element_type)


def _dot_general_abstract_eval(lhs_data: ShapedArray, lhs_indices: ShapedArray,
                               rhs: ShapedArray, *, dimension_numbers: tuple,
                               preferred_element_type: Any, lhs_spinfo: SparseInfo
                               ) -> ShapedArray:
  validate_bcoo(lhs_data, lhs_indices, lhs_spinfo.shape)
  return _dense_dot_aval(lhs_spinfo.shape, lhs_data.dtype, rhs, dimension_numbers,
                         preferred_element_type)


bcoo_dot_general_p = sparse_primitive("bcoo_dot_general", _dot_general_impl,
                                       _dot_general_abstract_eval)


def bcoo_dot_general_buffers(lhs_data: Any, lhs_indices: Any, rhs: Any, *,
                             dimension_numbers: Any, preferred_element_type: Any = None,
                             lhs_spinfo: SparseInfo) -> Any:
  if preferred_element_type is not None:
    preferred_element_type = np.dtype(preferred_element_type)
  return bcoo_dot_general_p.bind(
      jnp.asarray(lhs_data), jnp.asarray(lhs_indices), jnp.asarray(rhs),
      dimension_numbers=_canonical_dnums(dimension_numbers),
      preferred_element_type=preferred_element_type, lhs_spinfo=lhs_spinfo)


def _dot_general_transpose(ct: Any, lhs_data: Any, lhs_indices: Any, rhs: Any, *,
                           dimension_numbers: tuple, preferred_element_type: Any,
                           lhs_spinfo: SparseInfo) -> list:
  """Bilinear in (lhs_data, rhs): the dense product's transpose, then for the sparse
  operand the values of that dense cotangent at its indices."""
  if ad.is_undefined_primal(lhs_indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  params = dict(dimension_numbers=dimension_numbers, precision=None,
                preferred_element_type=preferred_element_type, out_sharding=None)
  if ad.is_undefined_primal(lhs_data):
    if type(ct) is ad.Zero:
      return [ad.Zero(lhs_data.aval.to_tangent_aval()), None, None]
    dense = ad.UndefinedPrimal(ShapedArray(tuple(lhs_spinfo.shape), lhs_data.aval.dtype))
    ct_dense = dg._dot_general_transpose(ct, dense, rhs, **params)[0]
    ct_data = prims.bcoo_extract_buffers(lhs_indices, ct_dense)
    ct_data = prims._unbroadcast(lhs_data.aval, ct_data).astype(lhs_data.aval.dtype)
    return [ct_data, None, None]
  if type(ct) is ad.Zero:
    return [None, None, ad.Zero(rhs.aval.to_tangent_aval())]
  lhs = prims.bcoo_todense_buffers(lhs_data, lhs_indices, spinfo=lhs_spinfo)
  ct_rhs = dg._dot_general_transpose(ct, lhs, rhs, **params)[1]
  return [None, None, ct_rhs.astype(rhs.aval.dtype)]


def _shift(dims: Sequence[int]) -> tuple[int, ...]:
  return tuple(d + 1 for d in dims)


def _dot_general_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                            dimension_numbers: tuple, preferred_element_type: Any,
                            lhs_spinfo: SparseInfo) -> tuple[Any, int]:
  """A mapped sparse operand gets the axis as a new leading batch dim; it is a batch dim
  of the product when rhs is mapped too, otherwise a free dim of lhs."""
  lhs_data, lhs_indices, rhs = vals
  (lc, rc), (lb, rb) = dimension_numbers
  lhs_ndim = len(lhs_spinfo.shape)
  lhs_mapped = dims[0] is not None or dims[1] is not None
  if lhs_mapped:
    size = None if dims[2] is None else np.shape(rhs)[dims[2]]
    lhs_data, lhs_indices, lhs_spinfo = prims.batch_dims_to_front(
        lhs_data, lhs_indices, dims[:2], lhs_spinfo, size)
  if lhs_mapped and dims[2] is not None:
    rhs = batching.moveaxis(rhs, dims[2], 0)
    dnums = ((_shift(lc), _shift(rc)), ((0, *_shift(lb)), (0, *_shift(rb))))
    out_dim = 0
  elif lhs_mapped:
    dnums = ((_shift(lc), rc), (_shift(lb), rb))
    out_dim = len(lb)
  else:
    rhs = batching.moveaxis(rhs, dims[2], 0)
    dnums = ((lc, _shift(rc)), (lb, _shift(rb)))
    out_dim = len(lb) + lhs_ndim - len(lc) - len(lb)
  out = bcoo_dot_general_buffers(lhs_data, lhs_indices, rhs, dimension_numbers=dnums,
                                 preferred_element_type=preferred_element_type,
                                 lhs_spinfo=lhs_spinfo)
  return out, out_dim


ad.defjvp(bcoo_dot_general_p,
          lambda t, data, indices, rhs, **params: bcoo_dot_general_p.bind(
              t, indices, rhs, **params),
          None,
          lambda t, data, indices, rhs, **params: bcoo_dot_general_p.bind(
              data, indices, t, **params))
ad.primitive_transposes[bcoo_dot_general_p] = _dot_general_transpose
batching.primitive_batchers[bcoo_dot_general_p] = _dot_general_batch_rule


# ----------------------------------------------------------------------------- sampled

def _sampled_impl(A: Any, B: Any, indices: Any, *, dimension_numbers: tuple) -> Any:
  return prims._extract_impl(indices, _dot(A, B, dimension_numbers, None),
                             assume_unique=True)


def _sampled_abstract_eval(A: ShapedArray, B: ShapedArray, indices: ShapedArray, *,
                           dimension_numbers: tuple) -> ShapedArray:
  dense = _dense_dot_aval(A.shape, A.dtype, B, dimension_numbers, None)
  return prims._extract_abstract_eval(indices, dense, assume_unique=True)


bcoo_dot_general_sampled_p = sparse_primitive(
    "bcoo_dot_general_sampled", _sampled_impl, _sampled_abstract_eval)


def bcoo_dot_general_sampled(A: Any, B: Any, indices: Any, *,
                             dimension_numbers: Any) -> Any:
  """The product `dot_general(A, B)` evaluated only at `indices` (its BCOO data)."""
  return bcoo_dot_general_sampled_p.bind(jnp.asarray(A), jnp.asarray(B),
                                         jnp.asarray(indices),
                                         dimension_numbers=_canonical_dnums(dimension_numbers))


def _sampled_transpose(ct: Any, A: Any, B: Any, indices: Any, *,
                       dimension_numbers: tuple) -> list:
  if ad.is_undefined_primal(indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  a_aval = A.aval if ad.is_undefined_primal(A) else core.get_aval(A)
  b_aval = B.aval if ad.is_undefined_primal(B) else core.get_aval(B)
  dense_aval = _dense_dot_aval(a_aval.shape, a_aval.dtype, b_aval, dimension_numbers, None)
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval.to_tangent_aval()) if ad.is_undefined_primal(x) else None
            for x in (A, B)] + [None]
  ct_dense = prims.bcoo_todense_buffers(ct, indices, spinfo=SparseInfo(dense_aval.shape))
  cts = dg._dot_general_transpose(ct_dense, A, B, dimension_numbers=dimension_numbers,
                                  precision=None, preferred_element_type=None,
                                  out_sharding=None)
  return [*cts, None]


def _sampled_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                        dimension_numbers: tuple) -> tuple[Any, int]:
  """Every operand gets the axis in front (broadcast where unmapped): a batch dim of the
  product and of the indices."""
  size = next(np.shape(x)[d] for x, d in zip(vals, dims) if d is not None)
  A, B = (batching.bdim_at_front(x, d, size) for x, d in zip(vals[:2], dims[:2]))
  indices = vals[2]
  indices = (shape_ops.expand_dims(indices, (0,)) if dims[2] is None
             else batching.moveaxis(indices, dims[2], 0))
  (lc, rc), (lb, rb) = dimension_numbers
  dnums = ((_shift(lc), _shift(rc)), ((0, *_shift(lb)), (0, *_shift(rb))))
  return bcoo_dot_general_sampled(A, B, indices, dimension_numbers=dnums), 0


ad.defjvp(bcoo_dot_general_sampled_p,
          lambda t, A, B, indices, **params: bcoo_dot_general_sampled_p.bind(
              t, B, indices, **params),
          lambda t, A, B, indices, **params: bcoo_dot_general_sampled_p.bind(
              A, t, indices, **params),
          None)
ad.primitive_transposes[bcoo_dot_general_sampled_p] = _sampled_transpose
batching.primitive_batchers[bcoo_dot_general_sampled_p] = _sampled_batch_rule


# ----------------------------------------------------------------------------- spdot_general

def _spdot_layout(lhs_data: Any, lhs_indices: Any, rhs_data: Any, rhs_indices: Any,
                  lhs_spinfo: SparseInfo, rhs_spinfo: SparseInfo, dimension_numbers: tuple
                  ) -> tuple[int, tuple[int, ...], int]:
  """(out n_batch, out batch shape, out nse), with the layouts this product supports."""
  lhs = validate_bcoo(lhs_data, lhs_indices, lhs_spinfo.shape)
  rhs = validate_bcoo(rhs_data, rhs_indices, rhs_spinfo.shape)
  (lc, rc), (lb, rb) = dimension_numbers
  if lhs.n_dense or rhs.n_dense:
    raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
  if tuple(lb) != tuple(range(lhs.n_batch)) or tuple(rb) != tuple(range(rhs.n_batch)):
    raise NotImplementedError(
        "bcoo_spdot_general: the batch dimensions of the product must be exactly the "
        f"(leading) batch dimensions of both sparse operands; got lhs_batch={lb} with "
        f"n_batch={lhs.n_batch} and rhs_batch={rb} with n_batch={rhs.n_batch}.")
  for name, dims, props in (("lhs", lc, lhs), ("rhs", rc, rhs)):
    if any(not props.n_batch <= d < props.n_batch + props.n_sparse for d in dims):
      raise NotImplementedError("bcoo_spdot_general only supports contraction of sparse "
                                f"indices; got {name}_contracting={dims}.")
  out_shape = _dense_dot_aval(lhs_spinfo.shape, np.float32,
                              ShapedArray(tuple(rhs_spinfo.shape), np.float32),
                              dimension_numbers, None).shape
  n_batch = len(lb)
  nse = ((lhs.nse if lhs.n_sparse > len(lc) else 1) *
         (rhs.nse if rhs.n_sparse > len(rc) else 1))
  nse = min(nse, math.prod(out_shape[n_batch:]))
  return n_batch, tuple(out_shape[:n_batch]), nse


def _spdot_one_batch(ld: Any, li: Any, rd: Any, ri: Any, *, lc: Sequence[int],
                     rc: Sequence[int], out_sparse_shape: tuple[int, ...], nse: int,
                     preferred_element_type: Any) -> tuple[Any, Any]:
  """Every pair of stored elements: its product where the contracted coordinates agree
  (zero elsewhere), at the lhs and rhs free coordinates."""
  lkept = [d for d in range(li.shape[-1]) if d not in lc]
  rkept = [d for d in range(ri.shape[-1]) if d not in rc]
  match = (li[:, None, list(lc)] == ri[None, :, list(rc)]).all(-1)
  dtype = preferred_element_type or jnp.result_type(ld, rd)
  data = jnp.where(match, ld[:, None].astype(dtype) * rd[None, :].astype(dtype),
                   jnp.zeros((), dtype))
  idx = jnp.concatenate([jnp.broadcast_to(li[:, None, lkept], (*match.shape, len(lkept))),
                         jnp.broadcast_to(ri[None, :, rkept], (*match.shape, len(rkept)))],
                        axis=-1)
  if not lkept:
    data, idx = data.sum(0, keepdims=True), idx[:1]
  if not rkept:
    data, idx = data.sum(1, keepdims=True), idx[:, :1]
  data, idx = data.reshape(-1), idx.reshape(-1, idx.shape[-1])
  if data.shape[0] != nse:
    data, idx = prims._sum_duplicates_impl(data, idx, spinfo=SparseInfo(out_sparse_shape),
                                           nse=nse)
  return data, idx


def _spdot_general_impl(lhs_data: Any, lhs_indices: Any, rhs_data: Any, rhs_indices: Any, *,
                        lhs_spinfo: SparseInfo, rhs_spinfo: SparseInfo,
                        dimension_numbers: tuple, preferred_element_type: Any
                        ) -> tuple[Any, Any]:
  n_batch, _, nse = _spdot_layout(lhs_data, lhs_indices, rhs_data, rhs_indices, lhs_spinfo,
                                  rhs_spinfo, dimension_numbers)
  (lc, rc), _ = dimension_numbers
  out_shape = _dense_dot_aval(lhs_spinfo.shape, np.float32,
                              ShapedArray(tuple(rhs_spinfo.shape), np.float32),
                              dimension_numbers, None).shape
  one = lambda *bufs: _spdot_one_batch(
      *bufs, lc=[d - n_batch for d in lc], rc=[d - n_batch for d in rc],
      out_sparse_shape=out_shape[n_batch:], nse=nse,
      preferred_element_type=preferred_element_type)
  return nfold_vmap(one, n_batch)(lhs_data, lhs_indices, rhs_data, rhs_indices)


def _spdot_general_abstract_eval(lhs_data: ShapedArray, lhs_indices: ShapedArray,
                                 rhs_data: ShapedArray, rhs_indices: ShapedArray, *,
                                 lhs_spinfo: SparseInfo, rhs_spinfo: SparseInfo,
                                 dimension_numbers: tuple, preferred_element_type: Any
                                 ) -> list[ShapedArray]:
  n_batch, batch_shape, nse = _spdot_layout(lhs_data, lhs_indices, rhs_data, rhs_indices,
                                            lhs_spinfo, rhs_spinfo, dimension_numbers)
  out = _dense_dot_aval(lhs_spinfo.shape, lhs_data.dtype,
                        ShapedArray(tuple(rhs_spinfo.shape), rhs_data.dtype),
                        dimension_numbers, preferred_element_type)
  n_sparse = len(out.shape) - n_batch
  return [ShapedArray((*batch_shape, nse), out.dtype),
          ShapedArray((*batch_shape, nse, n_sparse), lhs_indices.dtype)]


bcoo_spdot_general_p = sparse_primitive("bcoo_spdot_general", _spdot_general_impl,
                                         _spdot_general_abstract_eval, multiple_results=True)


def bcoo_spdot_general_buffers(lhs_data: Any, lhs_indices: Any, rhs_data: Any,
                               rhs_indices: Any, *, lhs_spinfo: SparseInfo,
                               rhs_spinfo: SparseInfo, dimension_numbers: Any,
                               preferred_element_type: Any = None) -> tuple[Any, Any]:
  if preferred_element_type is not None:
    preferred_element_type = np.dtype(preferred_element_type)
  return tuple(bcoo_spdot_general_p.bind(
      lhs_data, lhs_indices, rhs_data, rhs_indices, lhs_spinfo=lhs_spinfo,
      rhs_spinfo=rhs_spinfo, dimension_numbers=_canonical_dnums(dimension_numbers),
      preferred_element_type=preferred_element_type))


def _spdot_general_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
                       ) -> tuple[list, list]:
  """Bilinear in the two data buffers (the indices only place the products)."""
  lhs_data, lhs_indices, rhs_data, rhs_indices = primals
  data, indices = bcoo_spdot_general_p.bind(*primals, **params)
  data_dot = ad.Zero(core.get_aval(data).to_tangent_aval())
  if type(tangents[0]) is not ad.Zero:
    data_dot = ad.add_tangents(data_dot, bcoo_spdot_general_p.bind(
        tangents[0], lhs_indices, rhs_data, rhs_indices, **params)[0])
  if type(tangents[2]) is not ad.Zero:
    data_dot = ad.add_tangents(data_dot, bcoo_spdot_general_p.bind(
        lhs_data, lhs_indices, tangents[2], rhs_indices, **params)[0])
  return [data, indices], [data_dot, ad.Zero(core.get_aval(indices).to_tangent_aval())]


def _spdot_general_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                              lhs_spinfo: SparseInfo, rhs_spinfo: SparseInfo,
                              dimension_numbers: tuple, preferred_element_type: Any
                              ) -> tuple[list, list]:
  size = next(np.shape(x)[d] for x, d in zip(vals, dims) if d is not None)
  lhs_data, lhs_indices, lhs_spinfo = prims.batch_dims_to_front(
      *vals[:2], dims[:2], lhs_spinfo, size)
  rhs_data, rhs_indices, rhs_spinfo = prims.batch_dims_to_front(
      *vals[2:], dims[2:], rhs_spinfo, size)
  (lc, rc), (lb, rb) = dimension_numbers
  dnums = ((_shift(lc), _shift(rc)), ((0, *_shift(lb)), (0, *_shift(rb))))
  outs = bcoo_spdot_general_p.bind(lhs_data, lhs_indices, rhs_data, rhs_indices,
                                   lhs_spinfo=lhs_spinfo, rhs_spinfo=rhs_spinfo,
                                   dimension_numbers=dnums,
                                   preferred_element_type=preferred_element_type)
  outs = [jnp.broadcast_to(x, (size, *np.shape(x)[1:])) for x in outs]
  return outs, [0, 0]


ad.primitive_jvps[bcoo_spdot_general_p] = _spdot_general_jvp
batching.primitive_batchers[bcoo_spdot_general_p] = _spdot_general_batch_rule
