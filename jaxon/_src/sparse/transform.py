"""`sparsify`: run a function written for dense arrays on BCOO arguments.

The function is staged to a jaxpr with the sparse arguments standing in as dense arrays
of their shape and dtype; the jaxpr is then evaluated with the real arguments, each
equation that touches a sparse value going through its rule in `sparse_rules_bcoo` (which
calls the sparse ops of `bcoo`), the others binding their primitive as usual. So the dense
array never exists, and an op without a sparse rule fails with a clear error rather than
densifying silently. (JAX's default, tracer-based sparsify gives the same results.)
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxon._src import core, tree_util
from jaxon._src.core import Literal, ShapedArray
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, reductions, shape_ops, slicing
from jaxon._src.lax import dot_general as dg
from jaxon._src.pjit import pjit_p
from jaxon._src.sparse import api
from jaxon._src.sparse.base import JAXSparse
from jaxon._src.sparse.bcoo import (BCOO, bcoo_dot_general, bcoo_reduce_sum, bcoo_sum_duplicates,
                                    bcoo_transpose)
from jaxon._src.sparse import bcoo_structural as structural

sparse_rules_bcoo: dict[core.Primitive, Callable[..., Any]] = {}


def _is_sparse(x: Any) -> bool:
  return isinstance(x, JAXSparse)


def eval_sparse(jaxpr: core.Jaxpr, consts: list[Any], args: list[Any]) -> list[Any]:
  """Evaluates `jaxpr` on a mix of dense arrays and BCOO arrays."""
  env: dict[Any, Any] = {}

  def read(atom: Any) -> Any:
    return atom.val if type(atom) is Literal else env[atom]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    invals = [read(v) for v in eqn.invars]
    if any(map(_is_sparse, invals)):
      rule = sparse_rules_bcoo.get(eqn.primitive)
      if rule is None:
        raise NotImplementedError(f"sparse rule for {eqn.primitive.name} is not implemented.")
      outs = rule(*invals, **eqn.params)
    else:
      outs = eqn.primitive.bind(*invals, **eqn.params)
    if not eqn.primitive.multiple_results:
      outs = [outs]
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def _dense_aval(x: Any) -> ShapedArray:
  if _is_sparse(x):
    return ShapedArray(tuple(x.shape), np.dtype(x.dtype))
  return core.get_aval(x)


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
  """`f`, accepting BCOO arrays wherever it accepts dense ones (and returning BCOO
  arrays where its result is sparse).

  Example:
    >>> M = sparse.BCOO.fromdense(jnp.array([[0., 2.], [1., 0.]]))
    >>> sparse.sparsify(lambda m, v: m @ v + 1)(M, jnp.ones(2))
    Array([3., 2.], dtype=float32)
  """
  del use_tracer  # one implementation serves both of JAX's modes

  @functools.wraps(f)
  def wrapped(*args: Any, **kwargs: Any) -> Any:
    leaves, in_tree = tree_util.tree_flatten((args, kwargs), is_leaf=_is_sparse)
    out_tree: list[Any] = []

    def flat_fun(*flat: Any) -> list[Any]:
      a, kw = tree_util.tree_unflatten(in_tree, flat)
      out, tree = tree_util.tree_flatten(f(*a, **kw))
      out_tree.append(tree)
      return out
    jaxpr, consts = pe.trace_to_jaxpr(flat_fun, [_dense_aval(x) for x in leaves])
    outs = eval_sparse(jaxpr, consts, leaves)
    return tree_util.tree_unflatten(out_tree[0], outs)
  return wrapped


# ----------------------------------------------------------------------------- rules

def _unique(mat: BCOO) -> BCOO:
  """Nonlinear elementwise maps need each index stored once."""
  return mat if mat.unique_indices else bcoo_sum_duplicates(mat, nse=mat.nse)


def _with_data(mat: BCOO, data: Any) -> BCOO:
  return BCOO((data, mat.indices), **mat._info._asdict())


def _zero_preserving_unary(prim: core.Primitive, linear: bool) -> None:
  def rule(mat: BCOO, **params: Any) -> BCOO:
    mat = mat if linear else _unique(mat)
    return _with_data(mat, prim.bind(mat.data, **params))
  sparse_rules_bcoo[prim] = rule


for _prim in (lax.neg_p, lax.real_p, lax.imag_p, lax.conj_p, lax.convert_element_type_p):
  _zero_preserving_unary(_prim, linear=True)
for _prim in (lax.abs_p, lax.sign_p, transcendental.sin_p, transcendental.sqrt_p,
              transcendental.tanh_p, transcendental.expm1_p, transcendental.log1p_p,
              transcendental.tan_p, transcendental.asin_p, transcendental.atan_p,
              transcendental.sinh_p, transcendental.asinh_p):
  _zero_preserving_unary(_prim, linear=False)


def _integer_pow(mat: BCOO, *, y: int) -> BCOO:
  if y <= 0:
    raise NotImplementedError(f"sparse rule for integer_pow with non-positive exponent {y} "
                              "is not implemented because it would result in dense output. "
                              "If this is your intent, use sparse.todense() to convert your "
                              "argument to a dense array.")
  return _with_data(_unique(mat), lax.integer_pow_p.bind(_unique(mat).data, y=y))


sparse_rules_bcoo[lax.integer_pow_p] = _integer_pow


def _mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
  if out_dtype is not None:  # lax.mul(..., out_dtype): both operands in that dtype first
    x, y = x.astype(out_dtype), y.astype(out_dtype)
  if _is_sparse(x) and _is_sparse(y):
    return x * y
  sp, other = (x, y) if _is_sparse(x) else (y, x)
  return sp * other


def _add(x: Any, y: Any) -> Any:
  if not (_is_sparse(x) and _is_sparse(y)):
    raise NotImplementedError("Addition between sparse and dense array is not implemented "
                              "(the result would be dense): use sparse.todense() on the "
                              "sparse operand.")
  return x + y


def _sub(x: Any, y: Any) -> Any:
  return _add(x, -y)


def _div(x: Any, y: Any) -> Any:
  if _is_sparse(y) or np.ndim(y):
    raise NotImplementedError("Division by a sparse array, or of a sparse array by a "
                              "non-scalar, is not implemented.")
  return _with_data(x, lax.div_p.bind(x.data, lax.convert_element_type(y, x.dtype)))


def _dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any,
                 preferred_element_type: Any = None, **params: Any) -> Any:
  return bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                          preferred_element_type=preferred_element_type)


def _pjit(*args: Any, jaxpr: core.ClosedJaxpr, **params: Any) -> list[Any]:
  return eval_sparse(jaxpr.jaxpr, list(jaxpr.consts), list(args))


sparse_rules_bcoo.update({
    lax.mul_p: _mul,
    lax.add_p: _add,
    lax.sub_p: _sub,
    lax.div_p: _div,
    dg.dot_general_p: _dot_general,
    pjit_p: _pjit,
    api.todense_p: lambda mat, *, tree: mat.todense(),
    reductions.reduce_sum_p: lambda mat, *, axes, **_: bcoo_reduce_sum(mat, axes=axes),
    shape_ops.transpose_p: lambda mat, *, permutation, **_: bcoo_transpose(
        mat, permutation=permutation),
    shape_ops.reshape_p: lambda mat, *, new_sizes, dimensions=None, **_: structural.bcoo_reshape(
        mat, new_sizes=new_sizes, dimensions=dimensions),
    shape_ops.squeeze_p: lambda mat, *, dimensions, **_: structural.bcoo_squeeze(
        mat, dimensions=dimensions),
    shape_ops.rev_p: lambda mat, *, dimensions, **_: structural.bcoo_rev(mat, dimensions),
    lax.broadcast_in_dim_p: lambda mat, *dyn, shape, broadcast_dimensions, **_:
        structural.bcoo_broadcast_in_dim(mat, shape=shape,
                                         broadcast_dimensions=broadcast_dimensions),
    shape_ops.concatenate_p: lambda *mats, dimension, **_: structural.bcoo_concatenate(
        [m if _is_sparse(m) else BCOO.fromdense(m) for m in mats], dimension=dimension),
    slicing.slice_p: lambda mat, *, start_indices, limit_indices, strides, **_:
        structural.bcoo_slice(mat, start_indices=start_indices, limit_indices=limit_indices,
                              strides=strides),
})
