"""Shared pieces of the sparse formats: the static description of a sparse array
(`SparseInfo`, a primitive param), the efficiency warnings, and helpers that map a
per-batch function over the leading batch dimensions of a sparse buffer (whose size-1
batch dimensions broadcast, as BCOO's do)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, jaxpr_param_readers, tree_util
from jaxon._src.api import vmap
from jaxon._src.interpreters import mlir
from jaxon._src.lax import shape_ops
from jaxon._src.xla import deferred


class SparseEfficiencyError(ValueError):
  pass


class SparseEfficiencyWarning(UserWarning):
  pass


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
  pass


class SparseInfo(NamedTuple):
  """What a sparse primitive needs to know beyond its buffers: the logical shape and the
  layout facts that let an op skip sorting or de-duplication."""
  shape: tuple[int, ...]
  indices_sorted: bool = False
  unique_indices: bool = False


# A printed `spinfo=SparseInfo(shape=(3, 4), ...)` reads back by calling the class.
jaxpr_param_readers.CONSTRUCTORS["SparseInfo"] = SparseInfo


def broadcasting_vmap(fun: Callable, in_axes: Any = 0) -> Callable:
  """`vmap`, except that operands whose mapped dimension has size 1 are broadcast (passed
  unmapped) when another operand's has a larger size: BCOO's batch dims broadcast."""
  @functools.wraps(fun)
  def batched(*args):
    flat, tree = tree_util.tree_flatten(args)
    axes = (tree_util.tree_flatten(in_axes)[0] if isinstance(in_axes, tuple)
            else [in_axes] * len(flat))
    size = max(np.shape(x)[a] for x, a in zip(flat, axes) if a is not None)
    if size > 1:
      if any(a is not None and np.shape(x)[a] not in (1, size) for x, a in zip(flat, axes)):
        raise ValueError("broadcasting_vmap: mismatched batch sizes "
                         f"{[np.shape(x) for x in flat]} for in_axes {axes}")
      pairs = [(x, None) if a is None else (shape_ops.squeeze(x, (a,)), None)
               if np.shape(x)[a] == 1 else (x, a) for x, a in zip(flat, axes)]
      flat, axes = [p[0] for p in pairs], [p[1] for p in pairs]
    return vmap(fun, in_axes=tuple(axes))(*flat)
  return batched


def nfold_vmap(fun: Callable, n: int, *, broadcasted: bool = True, in_axes: Any = 0
               ) -> Callable:
  """`fun` mapped over `n` leading dimensions of its operands."""
  wrap = broadcasting_vmap if broadcasted else vmap
  for _ in range(n):
    fun = wrap(fun, in_axes=in_axes)
  return fun


def count_stored_elements_per_batch(mat: Any, n_batch: int = 0, n_dense: int = 0) -> Any:
  """The number of nonzero entries (blocks, with dense dims) in each batch of `mat`."""
  mask = jnp.asarray(mat) != 0
  if n_dense:
    mask = mask.any(tuple(range(mask.ndim - n_dense, mask.ndim)))
  return mask.sum(tuple(range(n_batch, mask.ndim)))


def count_stored_elements(mat: Any, n_batch: int = 0, n_dense: int = 0) -> Any:
  return count_stored_elements_per_batch(mat, n_batch, n_dense).max(initial=0)


def sparse_primitive(name: str, impl: Callable, abstract_eval: Callable,
                     multiple_results: bool = False) -> core.Primitive:
  """A primitive evaluated (eagerly and under jit) by compiling `impl`'s lowering."""
  prim = core.Primitive(name)
  prim.multiple_results = multiple_results
  prim.def_impl(functools.partial(deferred.apply_primitive, prim))
  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=multiple_results))
  return prim
