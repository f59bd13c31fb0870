"""`custom_root` and `custom_linear_solve`: solvers differentiated implicitly.

Differentiating through an iterative solver's loop is slow, inaccurate and, for a
`while_loop`, impossible in reverse mode. At a solution the equations themselves say how
the solution moves: for a root `f(m, u*) = 0` the implicit function theorem gives
`du* = -(d_u f)^{-1} d_m f dm`, and for a linear system `A x = b`,
`dx = A^{-1} (db - dA x)`. Both derivatives are again solves, done by the user's solver.

`custom_root` is a `custom_jvp` function. `custom_linear_solve` is a primitive, because
its reverse mode needs a transpose rule (the transposed solve, `transpose_solve` with the
transposed operator `vecmat`). Its operands are the consts of the four jaxprs it carries
(`matvec`, `vecmat`, `solve`, `transpose_solve`, in that order) and then `b`; the
`const_lengths` parameter says how many consts each jaxpr takes.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, traceback_util, tree_util
from jaxon._src.api import linear_transpose, linearize
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow import common
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.xla import deferred


def _trace(fun: Callable, args: tuple) -> tuple[ClosedJaxpr, list[Any], tree_util.PyTreeDef]:
  """`fun(*args)` traced to a jaxpr taking its consts, then the flat `args`."""
  leaves, in_tree = tree_util.tree_flatten(args)
  return common.trace_to_jaxpr(fun, in_tree, [common.abstractify(x) for x in leaves])


def _check_tree(func_name: str, expected_name: str, actual: tree_util.PyTreeDef,
                expected: tree_util.PyTreeDef, has_aux: bool) -> None:
  if has_aux:
    children = actual.children()
    if actual.num_nodes == 1 or len(children) != 2:
      raise TypeError(f"{func_name}() with has_aux=True must return a pair (output, aux), "
                      f"got {actual}")
    actual = children[0]
  if actual != expected:
    raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, "
                    f"got {actual} and {expected}.")


def _split(args: Sequence[Any], lengths: Sequence[int]) -> tuple[list[list[Any]], list[Any]]:
  """(one list of consts per jaxpr, the rest)."""
  *consts, rest = common.split_list(args, lengths)
  return consts, rest


# ----------------------------------------------------------------------------- custom_root


class _RootJaxprs(NamedTuple):
  f: ClosedJaxpr
  solve: ClosedJaxpr
  linearize_and_solve: ClosedJaxpr


@traceback_util.api_boundary
def custom_root(f: Callable, initial_guess: Any, solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux: bool = False) -> Any:
  """`solve(f, initial_guess)`, differentiated as a root of `f` rather than through
  `solve`'s iterations: gradients flow to the values `f` closes over, by the implicit
  function theorem.

  Args:
    f: the function whose root is sought; returns a pytree shaped like its input.
    initial_guess: the starting point handed to `solve`.
    solve: `solve(f, guess) -> root` (or `(root, aux)` with `has_aux`); need not be
      differentiable.
    tangent_solve: `tangent_solve(g, y) -> x` with `g(x) = y`, for the linear `g` that is
      `f` linearized at the root: `lambda g, y: y / g(1.0)` for a scalar.
    has_aux: whether `solve` also returns auxiliary data (which gets zero derivative).

  Example:
    >>> def sqrt(x):
    ...   newton = lambda f, y0: lax.fori_loop(0, 20, lambda _, y: y - f(y) / (2 * y), y0)
    ...   return custom_root(lambda y: y ** 2 - x, 1.0, newton, lambda g, y: y / g(1.0))
    >>> grad(sqrt)(4.0)   # 1 / (2 sqrt(4))
    Array(0.25, dtype=float32, weak_type=True)
  """
  guess_flat, guess_tree = tree_util.tree_flatten(initial_guess)
  f_jaxpr, f_consts, f_tree = _trace(f, (initial_guess,))
  _check_tree("f", "initial_guess", f_tree, guess_tree, False)
  solve_jaxpr, solve_consts, solution_tree = _trace(functools.partial(solve, f),
                                                    (initial_guess,))
  _check_tree("solve", "initial_guess", solution_tree, guess_tree, has_aux)

  def linearize_and_solve(x: Any, b: Any) -> Any:
    _, f_jvp = linearize(f, x)
    return tangent_solve(f_jvp, b)
  ls_jaxpr, ls_consts, ls_tree = _trace(linearize_and_solve, (initial_guess, initial_guess))
  _check_tree("tangent_solve", "x", ls_tree, guess_tree, False)
  jaxprs = _RootJaxprs(f_jaxpr, solve_jaxpr, ls_jaxpr)
  lengths = (len(f_consts), len(solve_consts), len(ls_consts))
  outs = _custom_root(lengths, jaxprs, *f_consts, *solve_consts, *ls_consts, *guess_flat)
  return solution_tree.unflatten(outs)


@functools.partial(custom_jvp, nondiff_argnums=(0, 1))
def _custom_root(lengths: tuple[int, ...], jaxprs: _RootJaxprs, *args: Any) -> list[Any]:
  (_, solve_consts, _), guess = _split(args, lengths)
  return core.jaxpr_as_fun(jaxprs.solve)(*solve_consts, *guess)


@_custom_root.defjvp
def _custom_root_jvp(lengths: tuple[int, ...], jaxprs: _RootJaxprs, primals: Sequence[Any],
                     tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
  """f(m, u*(m)) = 0 for all m, so d_m f + d_u f du* = 0 and
  du* = -(d_u f)^{-1} (d_m f dm): one tangent solve at the root."""
  (f_consts, _, ls_consts), _ = _split(primals, lengths)
  (f_consts_dot, _, _), _ = _split(tangents, lengths)
  outs = _custom_root(lengths, jaxprs, *primals)
  n = len(jaxprs.f.out_avals)
  solution, aux = outs[:n], outs[n:]
  _, rhs = ad.jvp_flat(lambda *m: core.jaxpr_as_fun(jaxprs.f)(*m, *solution), f_consts,
                       f_consts_dot)
  rhs = [ad.instantiate_zeros(t) for t in rhs]
  solve_tangents = core.jaxpr_as_fun(jaxprs.linearize_and_solve)
  solution_dot = [lax.neg(t) for t in solve_tangents(*ls_consts, *solution, *rhs)]
  aux_dot = [ad.zeros_like_aval(core.get_aval(a).to_tangent_aval()) for a in aux]
  return outs, solution_dot + aux_dot


# ----------------------------------------------------------------------------- custom_linear_solve


class _SolveJaxprs(NamedTuple):
  """The jaxprs of `custom_linear_solve` (also used for their const counts)."""
  matvec: Any
  vecmat: Any
  solve: Any
  transpose_solve: Any

  def transpose(self) -> _SolveJaxprs:
    """The same tuple for the transposed system: A^T takes A's place."""
    return _SolveJaxprs(self.vecmat, self.matvec, self.transpose_solve, self.solve)


custom_linear_solve_p = core.Primitive("custom_linear_solve")
custom_linear_solve_p.multiple_results = True


@traceback_util.api_boundary
def custom_linear_solve(matvec: Callable, b: Any, solve: Callable[[Callable, Any], Any],
                        transpose_solve: Callable[[Callable, Any], Any] | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
  """`solve(matvec, b)`, differentiated as the solution of `matvec(x) = b` rather than
  through `solve`: derivatives are further solves (with `solve` for forward mode, with
  `transpose_solve` on the transposed operator for reverse mode).

  Args:
    matvec: the linear map A (differentiable, may close over values being differentiated).
    b: the right-hand side, any pytree of arrays.
    solve: `solve(matvec, b) -> x` (or `(x, aux)` with `has_aux`); need not be
      differentiable.
    transpose_solve: the same for the transposed map; needed for reverse mode unless
      `symmetric`, in which case it defaults to `solve`.
    symmetric: A is symmetric, so its transpose is `matvec` itself.
    has_aux: whether the solves return auxiliary data as a second output.

  Example:
    >>> a = jnp.array([[2., 1.], [1., 3.]])
    >>> custom_linear_solve(lambda x: a @ x, jnp.ones(2),
    ...                     lambda mv, b: jnp.linalg.solve(a, b), symmetric=True)
    Array([0.4, 0.2], dtype=float32)
  """
  if transpose_solve is None and symmetric:
    transpose_solve = solve
  b_flat, b_tree = tree_util.tree_flatten(b)
  b_shapes = [np.shape(x) for x in b_flat]

  def shape_checked(fun: Callable, name: str, aux: bool) -> Callable:
    def checked(x: Any) -> Any:
      out = fun(x)
      y = out[0] if aux else out
      shapes = [np.shape(v) for v in tree_util.tree_leaves(y)]
      if shapes != b_shapes:
        raise ValueError(f"{name}() output shapes must match b, got {shapes} and "
                         f"{b_shapes}")
      return out
    return checked

  matvec_jaxpr, matvec_consts, out_tree = _trace(shape_checked(matvec, "matvec", False),
                                                 (b,))
  _check_tree("matvec", "b", out_tree, b_tree, False)
  solve_jaxpr, solve_consts, solution_tree = _trace(
      shape_checked(functools.partial(solve, matvec), "solve", has_aux), (b,))
  _check_tree("solve", "b", solution_tree, b_tree, has_aux)
  vecmat_jaxpr = tr_solve_jaxpr = None
  vecmat_consts: list[Any] = []
  tr_solve_consts: list[Any] = []
  if transpose_solve is not None:
    if symmetric:
      vecmat, vecmat_jaxpr, vecmat_consts = matvec, matvec_jaxpr, matvec_consts
    else:
      vecmat = _transpose_one_output(matvec, b)
      vecmat_jaxpr, vecmat_consts, _ = _trace(vecmat, (b,))
    tr_solve_jaxpr, tr_solve_consts, tr_tree = _trace(
        shape_checked(functools.partial(transpose_solve, vecmat), "transpose_solve",
                      has_aux), (b,))
    _check_tree("transpose_solve", "b", tr_tree, b_tree, has_aux)
  jaxprs = _SolveJaxprs(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr)
  consts = _SolveJaxprs(matvec_consts, vecmat_consts, solve_consts, tr_solve_consts)
  outs = custom_linear_solve_p.bind(*[c for cs in consts for c in cs], *b_flat,
                                    const_lengths=_SolveJaxprs(*map(len, consts)),
                                    jaxprs=jaxprs)
  return solution_tree.unflatten(outs)


def _transpose_one_output(linear_fun: Callable, primal: Any) -> Callable:
  transposed = linear_transpose(linear_fun, primal)
  return lambda x: transposed(x)[0]


def _linear_solve_abstract_eval(*avals: ShapedArray, const_lengths: _SolveJaxprs,
                                jaxprs: _SolveJaxprs) -> list[ShapedArray]:
  b_avals = list(avals[sum(const_lengths):])
  return b_avals + jaxprs.solve.out_avals[len(b_avals):]


def _linear_solve_lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value,
                           const_lengths: _SolveJaxprs, jaxprs: _SolveJaxprs
                           ) -> list[ir.Value]:
  consts, b = _split(args, const_lengths)
  return mlir.closed_jaxpr_subcomp(ctx.module_context, jaxprs.solve,
                                   [*consts[2], *b])


def _linear_solve_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
                      const_lengths: _SolveJaxprs, jaxprs: _SolveJaxprs
                      ) -> tuple[list[Any], list[Any]]:
  """A x = b, so dA x + A dx = db and dx = A^{-1} (db - dA x): one more solve, of the
  same system. Tangents of the solvers' consts do not matter (the solution does not
  depend on how it was found)."""
  params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
  x = custom_linear_solve_p.bind(*primals, **params)
  consts, _ = _split(primals, const_lengths)
  consts_dot, b_dot = _split(tangents, const_lengths)
  x_leaves = x[:len(b_dot)]
  rhs = list(b_dot)
  if any(type(t) is not ad.Zero for t in consts_dot[0]):
    zeros = [ad.Zero.from_primal_value(v) for v in x_leaves]
    _, matvec_dot = ad.jvp_flat(core.jaxpr_as_fun(jaxprs.matvec),
                                [*consts[0], *x_leaves], [*consts_dot[0], *zeros])
    rhs = [ad.add_tangents(r, t if type(t) is ad.Zero else lax.neg(t))
           for r, t in zip(rhs, matvec_dot)]
  rhs = [ad.instantiate_zeros(t) for t in rhs]
  x_dot = custom_linear_solve_p.bind(*[c for cs in consts for c in cs], *rhs, **params)
  aux_dot = [ad.Zero.from_primal_value(a) for a in x[len(b_dot):]]
  return x, x_dot[:len(b_dot)] + aux_dot


def _linear_solve_transpose(cts: Sequence[Any], *args: Any, const_lengths: _SolveJaxprs,
                            jaxprs: _SolveJaxprs) -> list[Any]:
  """x = A^{-1} b is linear in b; its transpose is the solve with A^T."""
  if jaxprs.transpose_solve is None:
    raise TypeError("transpose_solve required for backwards mode automatic "
                    "differentiation of custom_linear_solve")
  consts, b = _split(args, const_lengths)
  if any(ad.is_undefined_primal(c) for cs in consts for c in cs):
    raise NotImplementedError("custom_linear_solve is linear only in b, not in the values "
                              "its functions close over")
  x_cts = [ad.instantiate_zeros(ct) for ct in cts[:len(b)]]
  tr_consts = _SolveJaxprs(*consts).transpose()
  b_cts = custom_linear_solve_p.bind(*[c for cs in tr_consts for c in cs], *x_cts,
                                     const_lengths=const_lengths.transpose(),
                                     jaxprs=jaxprs.transpose())
  return [None] * sum(const_lengths) + b_cts[:len(b)]


def _batch_flags(jaxpr: ClosedJaxpr, axis_data: batching.AxisData, in_bat: Sequence[bool],
                 force_out: Sequence[bool]) -> tuple[ClosedJaxpr, list[bool]]:
  """`jaxpr` batched along axis 0 of its batched inputs; the outputs marked in `force_out`
  come out batched along axis 0 even if batching alone would leave them unmapped."""
  in_dims = tuple(0 if b else None for b in in_bat)
  out_dims = tuple(0 if f else None for f in force_out)
  batched, dims = batching.batch_jaxpr(jaxpr, axis_data, in_dims, out_dims)
  return batched, [d is not None for d in dims]


def _linear_solve_batch(axis_data: batching.AxisData, args: Sequence[Any],
                        dims: Sequence[int | None], *, const_lengths: _SolveJaxprs,
                        jaxprs: _SolveJaxprs) -> tuple[list[Any], list[int | None]]:
  """Batches the four jaxprs consistently. x is what `solve` and `vecmat` produce and
  what `matvec` and `transpose_solve` consume, and b the other way round; the transpose
  rule swaps the two, so one set of batched leaves serves for both, found as a fixpoint
  (a leaf is batched if b's is or if any of the jaxprs makes it so). Aux outputs are
  always batched."""
  consts, b = _split(args, const_lengths)
  const_dims, b_dims = _split(dims, const_lengths)
  const_bat = [[d is not None for d in ds] for ds in const_dims]
  n_aux = len(jaxprs.solve.out_avals) - len(b)
  bat = [d is not None for d in b_dims]
  while True:
    batched = [None if j is None else
               _batch_flags(j, axis_data, cb + bat, bat + [True] * (len(j.out_avals)
                                                                    - len(bat)))
               for j, cb in zip(jaxprs, const_bat)]
    new_bat = [any(out[i] for _, out in filter(None, batched)) for i in range(len(bat))]
    if new_bat == bat:
      break
    bat = new_bat
  new_consts = [batching.moveaxis(c, d, 0) if d is not None else c
                for cs, ds in zip(consts, const_dims) for c, d in zip(cs, ds)]
  new_b = [batching.bdim_at_front(x, d, axis_data.size) if is_bat else x
           for x, d, is_bat in zip(b, b_dims, bat)]
  outs = custom_linear_solve_p.bind(
      *new_consts, *new_b, const_lengths=const_lengths,
      jaxprs=_SolveJaxprs(*[None if bj is None else bj[0] for bj in batched]))
  return outs, [0 if is_bat else None for is_bat in bat] + [0] * n_aux


custom_linear_solve_p.def_impl(functools.partial(deferred.apply_primitive,
                                                 custom_linear_solve_p))
custom_linear_solve_p.def_abstract_eval(_linear_solve_abstract_eval)
mlir.register_lowering(custom_linear_solve_p, _linear_solve_lowering)
ad.primitive_jvps[custom_linear_solve_p] = _linear_solve_jvp
ad.primitive_transposes[custom_linear_solve_p] = _linear_solve_transpose
batching.fancy_primitive_batchers[custom_linear_solve_p] = _linear_solve_batch
