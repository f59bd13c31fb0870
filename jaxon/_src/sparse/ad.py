"""Differentiation with sparse arguments: `grad`, `value_and_grad`, `jacfwd`, `jacrev`
(and `jacobian`) that differentiate with respect to the *data* of a sparse argument
(its indices are not differentiable) and return the gradient in the argument's sparse
format, with its indices."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jaxon.numpy as jnp
from jaxon._src import api, tree_util
from jaxon._src.sparse.base import JAXSparse
from jaxon._src.sparse.bcoo import BCOO


def _is_sparse(x: Any) -> bool:
  return isinstance(x, JAXSparse)


def _argnums_tuple(argnums: int | Sequence[int]) -> tuple[int, ...]:
  return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def flatten_fun_for_sparse_ad(fun: Callable, argnums: int | Sequence[int],
                              args: tuple[Any, ...]
                              ) -> tuple[Callable, tuple[int, ...], list, Callable]:
  """`fun` as a function of the flat buffers of `args`, the flat argnums to
  differentiate (only the data buffer of a sparse argument), and how to rebuild the
  gradient pytree (sparse where the argument was) from the flat gradients."""
  argnums_tup = _argnums_tuple(argnums)
  if any(not 0 <= a < len(args) for a in argnums_tup):
    raise ValueError(f"argnums={argnums} out of range for {len(args)} arguments")
  leaves1, tree1 = tree_util.tree_flatten(args, is_leaf=_is_sparse)
  counts1 = [tree_util.tree_structure(a, is_leaf=_is_sparse).num_leaves for a in args]
  starts1 = [sum(counts1[:i]) for i in range(len(args))]
  diff_leaves1 = [j for i in argnums_tup for j in range(starts1[i], starts1[i] + counts1[i])]
  bufs_per_leaf = [len(tree_util.tree_leaves(leaf)) for leaf in leaves1]
  leaf_start = [sum(bufs_per_leaf[:j]) for j in range(len(leaves1))]
  argnums_flat = tuple(leaf_start[j] for j in diff_leaves1)
  args_flat, tree2 = tree_util.tree_flatten(leaves1)

  def fun_flat(*flat: Any, **kwargs: Any) -> Any:
    return fun(*tree_util.tree_unflatten(tree1, tree_util.tree_unflatten(tree2, flat)),
               **kwargs)

  def rebuild(leaf: Any, grad: Any) -> Any:
    if not _is_sparse(leaf):
      return grad
    bufs, tree = tree_util.tree_flatten(leaf)
    extra = grad.ndim - bufs[0].ndim
    if not extra:
      return tree_util.tree_unflatten(tree, [grad, *bufs[1:]])
    if not isinstance(leaf, BCOO):
      raise NotImplementedError(f"sparse jacobians of {type(leaf).__name__} arguments")
    # Output dims of a jacobian lead, as batch dims of the sparse gradient.
    indices = jnp.broadcast_to(leaf.indices, (*grad.shape[:extra], *leaf.indices.shape))
    return BCOO((grad, indices), shape=(*grad.shape[:extra], *leaf.shape))

  def postprocess(grads: Any) -> Any:
    grads = tuple(grads)  # the flat argnums are a tuple: so are the gradients
    leaf_grads: list[Any] = [None] * len(leaves1)
    for j, grad in zip(diff_leaves1, grads):  # one buffer per leaf: a sparse one's data
      leaf_grads[j] = rebuild(leaves1[j], grad)
    grad_args = tree_util.tree_unflatten(tree1, leaf_grads)
    per_arg = [grad_args[i] for i in argnums_tup]
    return per_arg[0] if isinstance(argnums, int) else tuple(per_arg)

  return fun_flat, argnums_flat, args_flat, postprocess


def _sparse_transform(transform: Callable, returns_value: bool = False) -> Callable:
  """The sparse-argument version of a jaxon differentiation transform."""
  def make(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           **kwargs: Any) -> Callable:
    @functools.wraps(fun)
    def wrapped(*args: Any, **fun_kwargs: Any) -> Any:
      fun_flat, argnums_flat, args_flat, post = flatten_fun_for_sparse_ad(fun, argnums, args)
      out = transform(fun_flat, argnums=argnums_flat, has_aux=has_aux, **kwargs)(
          *args_flat, **fun_kwargs)
      if returns_value:
        (value, grads) = out
        return value, post(grads)
      if has_aux:
        return post(out[0]), out[1]
      return post(out)
    return wrapped
  return make


grad = _sparse_transform(api.grad)
grad.__doc__ = """`jaxon.grad`, differentiating a sparse argument with respect to its data;
the gradient of a sparse argument is sparse, with the argument's indices."""
value_and_grad = _sparse_transform(api.value_and_grad, returns_value=True)
value_and_grad.__doc__ = """`jaxon.value_and_grad` with sparse arguments (see `grad`)."""
jacfwd = _sparse_transform(api.jacfwd)
jacfwd.__doc__ = """`jaxon.jacfwd` with sparse arguments (see `grad`)."""
jacrev = _sparse_transform(api.jacrev)
jacrev.__doc__ = """`jaxon.jacrev` with sparse arguments (see `grad`)."""
jacobian = jacrev
