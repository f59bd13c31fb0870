"""`linear_call`: a linear function paired with the function that is its transpose.

Reverse mode transposes a linear function equation by equation; `linear_call` lets the
user say instead what the transpose is (a matrix-free operator and its adjoint, a
division by a residual and its transpose). `fun(residuals, linear_args)` must be linear in
`linear_args`, and `fun_transpose(residuals, cotangents)` its transpose in them.

The primitive carries the callee as a closed jaxpr and the transpose as a thunk (traced
only if a transpose is needed). Being linear in its linear operands, its JVP applies the
same call to the tangents; its transpose is a `linear_call` of `fun_transpose` whose own
transpose is `fun` again. As in JAX it has no batching rule.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import core, tree_util
from jaxon._src.core import ClosedJaxpr
from jaxon._src.interpreters import ad, mlir
from jaxon._src.interpreters import partial_eval as pe

linear_call_p = core.Primitive("linear_call")
linear_call_p.multiple_results = True


def _trace(fun: Callable, in_tree: Any, avals: Sequence[Any], out_tree: list[Any]
           ) -> tuple[ClosedJaxpr, list[Any]]:
  """`fun` (taking the unflattened `in_tree` arguments) as a closed jaxpr whose invars are
  its closed-over values then the flat arguments, and those values."""
  def flat_fun(*leaves: Any) -> list[Any]:
    outs, tree = tree_util.tree_flatten(fun(*in_tree.unflatten(leaves)))
    out_tree.append(tree)
    return outs
  jaxpr, consts = pe.trace_to_jaxpr(flat_fun, avals)
  return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any,
                linear_args: Any) -> Any:
  """`fun(residual_args, linear_args)`, differentiated in reverse mode by
  `fun_transpose(residual_args, cotangents)` instead of by transposing `fun`.

  Args:
    fun: linear in its second argument (the pytree `linear_args`).
    fun_transpose: the transpose of `fun` in that argument: takes the residuals and a
      pytree like `fun`'s output; returns a pytree like `linear_args`.
    residual_args: a pytree of arrays `fun` need not be linear in (not transposed).
    linear_args: a pytree of arrays `fun` is linear in.

  Returns:
    `fun(residual_args, linear_args)`.

  Example:
    >>> def div_by(r, x): return x / r
    >>> linear_call(div_by, div_by, 2.0, 1.0)  # x / r is its own transpose in x
  """
  res_leaves, res_tree = tree_util.tree_flatten(residual_args)
  lin_leaves, lin_tree = tree_util.tree_flatten(linear_args)
  res_avals = [core.get_aval(x) for x in res_leaves]
  lin_avals = [core.get_aval(x) for x in lin_leaves]
  out_tree: list[Any] = []
  callee, consts = _trace(fun, tree_util.treedef_tuple((res_tree, lin_tree)),
                          [*res_avals, *lin_avals], out_tree)

  @functools.cache
  def transpose_thunk() -> tuple[ClosedJaxpr, list[Any]]:
    t_out_tree: list[Any] = []
    transpose, t_consts = _trace(fun_transpose,
                                 tree_util.treedef_tuple((res_tree, out_tree[0])),
                                 [*res_avals, *callee.out_avals], t_out_tree)
    if t_out_tree[0] != lin_tree:
      raise TypeError("transpose output pytree structure must match that of linear inputs, "
                      f"got output structure {t_out_tree[0]} and input structure "
                      f"{lin_tree}.")
    return transpose, t_consts

  outs = linear_call_p.bind(*consts, *res_leaves, *lin_leaves, callee=callee,
                            transpose_thunk=transpose_thunk, num_callee_consts=len(consts),
                            num_res=len(res_leaves))
  return out_tree[0].unflatten(outs)


def _impl(*args: Any, callee: ClosedJaxpr, **_: Any) -> list[Any]:
  return core.eval_jaxpr(callee.jaxpr, callee.consts, *args)


def _abstract_eval(*avals: Any, callee: ClosedJaxpr, **_: Any) -> list[Any]:
  return list(callee.out_avals)


def _jvp(primals: Sequence[Any], tangents: Sequence[Any], *, num_callee_consts: int,
         num_res: int, **params: Any) -> tuple[list[Any], list[Any]]:
  """Linear in the linear operands: the tangent is the same call on their tangents. The
  residuals and closed-over values must not be perturbed (the call is not linear in
  them)."""
  fixed = num_callee_consts + num_res
  if any(type(t) is not ad.Zero for t in tangents[:fixed]):
    raise TypeError("linear_call: differentiating with respect to residual arguments (or "
                    "values the function closes over) is not supported; the function is "
                    "linear only in its linear arguments.")
  params.update(num_callee_consts=num_callee_consts, num_res=num_res)
  primals_out = linear_call_p.bind(*primals, **params)
  tangents_in = [ad.instantiate_zeros(t) for t in tangents[fixed:]]
  return primals_out, linear_call_p.bind(*primals[:fixed], *tangents_in, **params)


def _transpose(cts: Sequence[Any], *args: Any, callee: ClosedJaxpr,
               transpose_thunk: Callable, num_callee_consts: int, num_res: int) -> list[Any]:
  transpose, t_consts = transpose_thunk()
  consts, residuals = args[:num_callee_consts], args[num_callee_consts:num_callee_consts
                                                       + num_res]
  cts = [ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct
         for ct, a in zip(cts, callee.out_avals)]
  cts_in = linear_call_p.bind(*t_consts, *residuals, *cts, callee=transpose,
                              transpose_thunk=lambda: (callee, list(consts)),
                              num_callee_consts=len(t_consts), num_res=num_res)
  return [None] * (num_callee_consts + num_res) + list(cts_in)


linear_call_p.def_impl(_impl)
linear_call_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[linear_call_p] = _jvp
ad.primitive_transposes[linear_call_p] = _transpose
mlir.register_lowering(linear_call_p, mlir.lower_fun(_impl, multiple_results=True))
