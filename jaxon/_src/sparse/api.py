"""Format-independent sparse API: `todense` (a primitive over any sparse pytree's
buffers, so a function can densify its argument under every transformation), `empty`,
`eye`, and `random_bcoo`."""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, dtypes, tree_util
from jaxon._src.api import vmap
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.random import split
from jaxon._src.random_continuous import uniform
from jaxon._src.random_discrete import choice
from jaxon._src.sparse import bcoo_prims
from jaxon._src.sparse.base import JAXSparse
from jaxon._src.sparse.bcoo import BCOO
from jaxon._src.sparse.coo_csr import COO, CSC, CSR
from jaxon._src.xla import deferred

# ----------------------------------------------------------------------------- todense

todense_p = core.Primitive("todense")


def todense(arr: Any) -> Any:
  """The dense array of a sparse one; a dense input passes through."""
  bufs, tree = tree_util.tree_flatten(arr)
  return todense_p.bind(*bufs, tree=tree)


def _todense_impl(*bufs: Any, tree: Any) -> Any:
  arr = tree_util.tree_unflatten(tree, bufs)
  return arr.todense() if isinstance(arr, JAXSparse) else arr


def _todense_abstract_eval(*bufs: ShapedArray, tree: Any) -> ShapedArray:
  arr = tree_util.tree_unflatten(tree, bufs)
  if isinstance(arr, ShapedArray):
    return arr
  return ShapedArray(tuple(arr.shape), arr.dtype, weak_type=arr.data.weak_type)


def _todense_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, tree: Any
                 ) -> tuple[Any, Any]:
  """Linear in the first buffer (the data); the others (indices) carry no tangent."""
  out = todense_p.bind(*primals, tree=tree)
  data_dot = tangents[0]
  if type(data_dot) is ad.Zero:
    return out, ad.Zero(core.get_aval(out).to_tangent_aval())
  return out, todense_p.bind(data_dot, *primals[1:], tree=tree)


def _todense_transpose(ct: Any, *bufs: Any, tree: Any) -> list:
  standin = object()
  obj = tree_util.tree_unflatten(tree, [standin] * len(bufs))
  if obj is standin:
    return [ct]
  if any(ad.is_undefined_primal(b) for b in bufs[1:]):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if isinstance(obj, BCOO):
    return [bcoo_prims.bcoo_extract_buffers(bufs[1], ct), None]
  if isinstance(obj, COO):
    return [ct.at[bufs[1], bufs[2]].get(mode="fill", fill_value=0), None, None]
  raise NotImplementedError(f"todense_transpose for {type(obj).__name__}")


def _todense_batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *, tree: Any
                        ) -> tuple[Any, int]:
  return vmap(lambda *bufs: _todense_impl(*bufs, tree=tree), tuple(dims))(*vals), 0


todense_p.def_impl(lambda *bufs, tree: deferred.apply_primitive(todense_p, *bufs, tree=tree))
todense_p.def_abstract_eval(_todense_abstract_eval)
mlir.register_lowering(todense_p, mlir.lower_fun(_todense_impl, multiple_results=False))
ad.primitive_jvps[todense_p] = _todense_jvp
ad.primitive_transposes[todense_p] = _todense_transpose
batching.primitive_batchers[todense_p] = _todense_batch_rule


# ----------------------------------------------------------------------------- creation

def _formats() -> dict[str, type]:
  from jaxon._src.sparse.bcsr import BCSR  # built on this module's BCOO helpers
  return {"bcoo": BCOO, "bcsr": BCSR, "coo": COO, "csr": CSR, "csc": CSC}


def empty(shape: Sequence[int], dtype: Any = None, index_dtype: Any = "int32",
          sparse_format: str = "bcoo", **kwds: Any) -> JAXSparse:
  """An all-zero sparse array of `shape` (`nse=0` unless `nse=` is given)."""
  formats = _formats()
  if sparse_format not in formats:
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of "
                     f"{list(formats)}")
  return formats[sparse_format]._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype,
                                       **kwds)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None,
        index_dtype: Any = "int32", sparse_format: str = "bcoo", **kwds: Any) -> JAXSparse:
  """A sparse 2-D array with ones on its k-th diagonal."""
  formats = _formats()
  if sparse_format not in formats:
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of "
                     f"{list(formats)}")
  N = core.concrete_or_error(operator.index, N, "the N argument of sparse.eye")
  M = N if M is None else core.concrete_or_error(operator.index, M, "the M argument")
  k = core.concrete_or_error(operator.index, k, "the k argument of sparse.eye")
  return formats[sparse_format]._eye(N, M, k, dtype=dtype, index_dtype=index_dtype, **kwds)


def random_bcoo(key: Any, shape: Sequence[int], *, dtype: Any = float,
                indices_dtype: Any = None, nse: float | int = 0.2, n_batch: int = 0,
                n_dense: int = 0, unique_indices: bool = True, sorted_indices: bool = False,
                generator: Callable[..., Any] = uniform, **kwds: Any) -> BCOO:
  """A random BCOO array: `nse` stored elements per batch (a fraction of the sparse size
  when 0 < nse < 1) at random positions (distinct ones with `unique_indices`), values
  from `generator(key, shape=, dtype=, **kwds)`."""
  shape = tuple(map(operator.index, shape))
  n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
  if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
    raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
  n_sparse = len(shape) - n_batch - n_dense
  batch_shape = shape[:n_batch]
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  dense_shape = shape[n_batch + n_sparse:]
  sparse_size = math.prod(sparse_shape)
  if not 0 <= nse < sparse_size:
    raise ValueError(f"got nse={nse}, expected to be between 0 and {sparse_size}")
  if 0 < nse < 1:
    nse = int(math.ceil(nse * sparse_size))
  nse = operator.index(nse)
  indices_dtype = np.dtype(indices_dtype or dtypes.default_int_dtype())
  if sparse_size > np.iinfo(indices_dtype).max:
    raise ValueError(f"indices_dtype={indices_dtype} does not have enough range to "
                     f"generate sparse indices of size {sparse_size}.")

  def one_batch_indices(k):
    if not sparse_shape:
      return jnp.zeros((nse, n_sparse), indices_dtype)
    flat = choice(k, sparse_size, shape=(nse,), replace=not unique_indices)
    return jnp.stack(jnp.unravel_index(flat, sparse_shape), -1).astype(indices_dtype)
  keys = split(key, math.prod(batch_shape) + 1)
  data = generator(keys[0], shape=(*batch_shape, nse, *dense_shape), dtype=dtype, **kwds)
  indices = vmap(one_batch_indices)(keys[1:]).reshape((*batch_shape, nse, n_sparse))
  mat = BCOO((data, indices), shape=shape)
  return mat.sort_indices() if sorted_indices else mat
