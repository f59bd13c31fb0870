"""`scan` and the `scan` primitive (seed 001): a loop of a known number of iterations over
the leading axis of its `xs`, carrying a value and stacking per-iteration outputs.

Operands: the body's consts, the initial carry, then the xs; the body jaxpr maps (consts,
carry, x slices) to (carry, y slices). The trip count is static, so unlike `while` a scan
is reverse-differentiable: linearizing it saves the per-iteration residuals as stacked
outputs of the known loop, and its transpose is a scan running the other way.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import caches, core, traceback_util, tree_util
from jaxon._src.config import config
from jaxon._src.core import ClosedJaxpr, JaxprEqn, ShapedArray, Var
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.lax.control_flow import common
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.xla import deferred

scan_p = core.Primitive("scan")
scan_p.multiple_results = True


# ----------------------------------------------------------------------------- API


@traceback_util.api_boundary
def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None,
         length: int | None = None, reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False) -> tuple[Any, Any]:
  """Loops `f` over the leading axis of `xs`, carrying a value:

      carry = init
      for x in xs:                # reversed(xs) with reverse=True
        carry, y = f(carry, x)
        ys.append(y)
      return carry, stack(ys)

  `init`, `xs` and the outputs may be pytrees; the carry keeps its structure, shapes and
  dtypes. `xs=None` with `length=n` loops n times with `x=None`. `unroll` iterations run
  per loop trip (True: all of them).

  Example:
    >>> scan(lambda c, x: (c + x, c), 0., jnp.arange(3.))
    (Array(3., dtype=float32), Array([0., 0., 1.], dtype=float32))
  """
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  xs_flat, xs_tree = tree_util.tree_flatten(xs)
  length = _scan_length(xs_flat, length)
  if config.read("jax_disable_jit"):
    return _scan_in_python(f, init, xs_flat, xs_tree, length, reverse)
  init_flat, init_tree = tree_util.tree_flatten(init)
  jaxpr, consts, out_tree = _trace_body(f, init_flat, init_tree, xs_flat, xs_tree)
  carry_tree = out_tree.children()[0]
  init_flat, changed = common.promote_weak_carry(init_flat,
                                                 jaxpr.out_avals[:len(init_flat)])
  if changed:
    jaxpr, consts, out_tree = _trace_body(f, init_flat, init_tree, xs_flat, xs_tree)
  common.check_carry_type("scan body", f, init_tree.unflatten(init_flat), carry_tree,
                          jaxpr.out_avals[:carry_tree.num_leaves])
  unroll = core.concrete_or_error(None, unroll, "The `unroll` argument to `scan` expects a "
                                  "concrete `int` or `bool` value.")
  if isinstance(unroll, bool):
    unroll = max(length, 1) if unroll else 1
  if unroll < 1:
    raise ValueError("`unroll` must be a `bool` or a positive `int`.")
  args = [*consts, *init_flat, *xs_flat]
  outs = scan_p.bind(*args, reverse=bool(reverse), length=length, jaxpr=jaxpr,
                     num_consts=len(consts), num_carry=len(init_flat),
                     linear=(False,) * len(args), unroll=int(unroll),
                     _split_transpose=bool(_split_transpose))
  return out_tree.unflatten(outs)


def _scan_length(xs_flat: Sequence[Any], length: int | None) -> int:
  try:
    lengths = [x.shape[0] if np.ndim(x) else None for x in xs_flat]
  except AttributeError:
    lengths = [np.shape(x)[0] if np.ndim(x) else None for x in xs_flat]
  if None in lengths:
    bad = [x for x, n in zip(xs_flat, lengths) if n is None]
    raise ValueError(f"scan got value with no leading axis to scan over: "
                     f"{', '.join(str(x) for x in bad)}.")
  if length is not None:
    length = core.concrete_or_error(int, length, "The `length` argument to `scan` expects a "
                                    "concrete `int` value.")
    if not all(n == length for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                       f"leading axis sizes {lengths}.")
    return length
  if len(set(lengths)) > 1:
    raise ValueError(f"scan got values with different leading axis sizes: "
                     f"{', '.join(map(str, lengths))}.")
  if not lengths:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  return lengths[0]


def _trace_body(f: Callable, init_flat: Sequence[Any], init_tree: tree_util.PyTreeDef,
                xs_flat: Sequence[Any], xs_tree: tree_util.PyTreeDef) -> tuple:
  x_avals = [common.abstractify(x) for x in xs_flat]
  x_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
  in_tree = tree_util.tree_structure((init_tree.unflatten([0] * init_tree.num_leaves),
                                      xs_tree.unflatten([0] * xs_tree.num_leaves)))
  avals = [common.abstractify(x) for x in init_flat] + x_avals
  jaxpr, consts, out_tree = common.trace_to_jaxpr(f, in_tree, avals)
  out = out_tree.unflatten([a.str_short() for a in jaxpr.out_avals])
  if not (isinstance(out, (tuple, list)) and len(out) == 2):
    raise TypeError(f"scan body output must be a pair, got {out}.")
  return jaxpr, consts, out_tree


def _scan_in_python(f: Callable, init: Any, xs_flat: list, xs_tree: tree_util.PyTreeDef,
                    length: int, reverse: bool) -> tuple[Any, Any]:
  """`jax_disable_jit`: the loop runs in Python, so `print` and `pdb` see values."""
  carry, ys = init, []
  for i in (reversed(range(length)) if reverse else range(length)):
    carry, y = f(carry, xs_tree.unflatten([slicing.index_in_dim(x, i, keepdims=False)
                                           for x in xs_flat]))
    ys.append(y)
  if reverse:
    ys.reverse()
  if not ys:
    raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                     "output type is unknown.")
  return carry, tree_util.tree_map(lambda *y: shape_ops.concatenate(
      [lax.broadcast(v, (1,)) for v in y], 0), *ys)


# ----------------------------------------------------------------------------- rules


def _split(args: Sequence[Any], num_consts: int, num_carry: int) -> list[list[Any]]:
  """(consts, carry, xs) of the operands."""
  return common.split_list(args, [num_consts, num_carry])


def _stacked(aval: ShapedArray, length: int) -> ShapedArray:
  return aval.update(shape=(length, *aval.shape))


def _scan_abstract_eval(*avals: ShapedArray, reverse: bool, length: int, jaxpr: ClosedJaxpr,
                        num_consts: int, num_carry: int, linear: tuple[bool, ...],
                        unroll: int, _split_transpose: bool) -> list[ShapedArray]:
  _, carry, xs = _split(avals, num_consts, num_carry)
  if not all(map(common.typematch, carry, jaxpr.out_avals[:num_carry])):
    raise TypeError(f"scan body maps the carry ({common.avals_short(carry)}) to "
                    f"{common.avals_short(jaxpr.out_avals[:num_carry])}")
  if any(x.shape[:1] != (length,) for x in xs):
    raise TypeError(f"scan of length {length} got xs {common.avals_short(xs)}")
  carry_out, ys = common.split_list(jaxpr.out_avals, [num_carry])
  return carry_out + [_stacked(a, length) for a in ys]


def _scan_impl(*args: Any, reverse: bool, length: int, jaxpr: ClosedJaxpr, num_consts: int,
               num_carry: int, unroll: int, **_: Any) -> list[Any]:
  """A scan as a `while_loop` (what it lowers to): each trip runs `unroll` iterations,
  reading x slices with `dynamic_index_in_dim` and writing y slices into preallocated
  buffers; the iterations left over run after the loop. The loop index is never negative, so
  it is used as is: a wrap-around select inside the body would sit in every fused loop that
  reads a slice (a scan's gradient ran 1.4x slower with it)."""
  consts, init, xs = _split(args, num_consts, num_carry)
  y_avals = jaxpr.out_avals[num_carry:]
  ys = [lax.full((length, *a.shape), 0, a.dtype) for a in y_avals]

  def iteration(i: Any, carry: list, ys: list) -> tuple[list, list]:
    index = lax.sub(np.int32(length - 1), i) if reverse else i
    x = [slicing.dynamic_index_in_dim(v, index, keepdims=False, allow_negative_indices=False)
         for v in xs]
    carry, y = common.split_list(core.jaxpr_as_fun(jaxpr)(*consts, *carry, *x), [num_carry])
    ys = [slicing.dynamic_update_index_in_dim(buf, v, index, 0, allow_negative_indices=False)
          for buf, v in zip(ys, y)]
    return carry, ys

  def trip(state: tuple) -> tuple:
    i, carry, ys = state
    first = lax.mul(i, np.int32(unroll)) if unroll > 1 else i
    for k in range(unroll):
      carry, ys = iteration(lax.add(first, np.int32(k)) if k else first, carry, ys)
    return lax.add(i, np.int32(1)), carry, ys

  trips, left_over = divmod(length, unroll)
  state = (np.int32(0), list(init), ys)
  if trips == 1:
    state = trip(state)
  elif trips > 1:
    state = while_loop(lambda s: lax.lt(s[0], np.int32(trips)), trip, state)
  _, carry, ys = state
  for k in range(trips * unroll, length):
    carry, ys = iteration(np.int32(k), carry, ys)
  return [*carry, *ys]


def _scan_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, reverse: bool,
              length: int, jaxpr: ClosedJaxpr, num_consts: int, num_carry: int,
              linear: tuple[bool, ...], unroll: int, _split_transpose: bool
              ) -> tuple[list[Any], list[Any]]:
  """One scan over primals and tangents; a carry has a tangent if its initial value has
  one or the body gives it one (a fixpoint over the carries)."""
  consts, init, xs = _split(primals, num_consts, num_carry)
  const_dots, init_dots, xs_dots = _split(tangents, num_consts, num_carry)
  nz = lambda ts: [type(t) is not ad.Zero for t in ts]  # noqa: E731
  const_nz, carry_nz, xs_nz = nz(const_dots), nz(init_dots), nz(xs_dots)
  num_ys = len(jaxpr.out_avals) - num_carry
  for _ in range(num_carry + 1):
    _, out_nz = ad.jvp_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz))
    new_nz = [a or b for a, b in zip(carry_nz, out_nz[:num_carry])]
    if new_nz == carry_nz:
      break
    carry_nz = new_nz
  jvp, out_nz = ad.jvp_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz),
                             tuple(carry_nz) + (False,) * num_ys)
  ys_nz = list(out_nz[num_carry:])
  n_in = [num_consts, num_carry, len(xs)]
  n_dot = [sum(const_nz), sum(carry_nz), sum(xs_nz)]
  jvp = common.move_binders(jvp, common.interleave(*_ranges(n_in + n_dot)))
  # outputs (carry, ys, carry tangents, ys tangents) -> (carry, carry tangents, ys, ...)
  jvp = common.move_outputs(jvp, common.interleave(
      *_ranges([num_carry, num_ys, sum(carry_nz), sum(ys_nz)])))
  lin_c, lin_carry, lin_x = _split(linear, num_consts, num_carry)
  new_linear = (*lin_c, *[True] * n_dot[0], *lin_carry, *[True] * n_dot[1], *lin_x,
                *[True] * n_dot[2])
  outs = scan_p.bind(
      *consts, *[t for t in const_dots if type(t) is not ad.Zero],
      *init, *[ad.instantiate_zeros(t) for t, z in zip(init_dots, carry_nz) if z],
      *xs, *[t for t in xs_dots if type(t) is not ad.Zero],
      reverse=reverse, length=length, jaxpr=jvp, num_consts=num_consts + n_dot[0],
      num_carry=num_carry + n_dot[1], linear=new_linear, unroll=unroll,
      _split_transpose=_split_transpose)
  carry, carry_dots, ys, ys_dots = common.split_list(outs, [num_carry, n_dot[1], num_ys])
  out_avals = _scan_abstract_eval(*map(core.get_aval, primals), reverse=reverse,
                                  length=length, jaxpr=jaxpr, num_consts=num_consts,
                                  num_carry=num_carry, linear=linear, unroll=unroll,
                                  _split_transpose=_split_transpose)
  dots = iter(carry_dots + ys_dots)
  return carry + ys, [next(dots) if z else ad.Zero(a.to_tangent_aval())
                      for a, z in zip(out_avals, carry_nz + ys_nz)]


def _ranges(sizes: Sequence[int]) -> tuple[list[range], list[range]]:
  """The position ranges of consecutive groups of `sizes`, as (first half of the groups,
  second half): the primal groups and their tangent groups."""
  starts = np.cumsum([0, *sizes])
  ranges = [range(starts[i], starts[i + 1]) for i in range(len(sizes))]
  half = len(sizes) // 2
  return ranges[:half], ranges[half:]


def _scan_partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]
                       ) -> tuple[JaxprEqn | None, JaxprEqn | None, list[bool]]:
  """The known scan runs the known part of every iteration now and returns the
  iteration's residuals stacked, as extra ys; the unknown scan reads them as xs. A
  residual that is a known const or x of the body is passed as itself, not stacked."""
  p = eqn.params
  nc, ncarry, jaxpr, length = p["num_consts"], p["num_carry"], p["jaxpr"], p["length"]
  const_uk, carry_uk, xs_uk = _split(list(unknowns), nc, ncarry)
  num_ys = len(jaxpr.out_avals) - ncarry
  for _ in range(ncarry + 1):
    _, _, out_uk, _ = pe.partial_eval_jaxpr(jaxpr, tuple(const_uk + carry_uk + xs_uk),
                                          tuple(carry_uk) + (False,) * num_ys)
    new_uk = [a or b for a, b in zip(carry_uk, out_uk[:ncarry])]
    if new_uk == carry_uk:
      break
    carry_uk = new_uk
  in_uk = const_uk + carry_uk + xs_uk
  known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(
      jaxpr, tuple(in_uk), tuple(carry_uk) + (False,) * num_ys)
  ys_uk = out_uk[ncarry:]
  if not any(in_uk):
    return eqn, None, list(out_uk)
  known_in = [v for v, u in zip(jaxpr.jaxpr.invars, in_uk) if not u]
  outer_known_in = [a for a, u in zip(eqn.invars, in_uk) if not u]
  n_known_c, n_known_carry = nc - sum(const_uk), ncarry - sum(carry_uk)
  known_linear = tuple(l for l, u in zip(p["linear"], in_uk) if not u)
  n_known_out = len(known.out_avals) - num_res
  if not any(out_uk):  # unknown inputs no output reads (a tangent that only integers see)
    body, _ = pe.dce_jaxpr(known.jaxpr, [True] * n_known_out + [False] * num_res)
    return eqn.replace(invars=outer_known_in, params=dict(
        p, jaxpr=ClosedJaxpr(body, known.consts), num_consts=n_known_c,
        num_carry=n_known_carry, linear=known_linear)), None, list(out_uk)
  const_pos = {v: i for i, v in enumerate(known_in[:n_known_c])}
  x_pos = {v: i for i, v in enumerate(known_in[n_known_c + n_known_carry:])}
  res_vars = known.jaxpr.outvars[n_known_out:]
  # Each residual is a known const, a known x, or a value to stack.
  kinds = ["const" if v in const_pos else "x" if v in x_pos else "stack" for v in res_vars]
  known_body, _ = pe.dce_jaxpr(known.jaxpr, [True] * n_known_out
                               + [k == "stack" for k in kinds])
  stacked = [Var(_stacked(v.aval, length)) for v, k in zip(res_vars, kinds) if k == "stack"]
  known_eqn = None
  if known_body.outvars or core.jaxpr_has_effects(known_body):
    known_eqn = JaxprEqn(
        outer_known_in,
        [v for v, u in zip(eqn.outvars, carry_uk + ys_uk) if not u] + stacked, scan_p,
        dict(p, jaxpr=ClosedJaxpr(known_body, known.consts), num_consts=n_known_c,
             num_carry=n_known_carry, linear=known_linear))
  const_ins, carry_ins, xs_ins = _split(eqn.invars, nc, ncarry)
  known_consts = [a for a, u in zip(const_ins, const_uk) if not u]
  known_xs = [a for a, u in zip(xs_ins, xs_uk) if not u]
  res_outer, stacked_iter = [], iter(stacked)
  for v, k in zip(res_vars, kinds):
    res_outer.append(known_consts[const_pos[v]] if k == "const" else
                     known_xs[x_pos[v]] if k == "x" else next(stacked_iter))
  # The unknown body takes (residuals, unknown consts, carry, xs); the scan wants the
  # const residuals among its consts and the others among its xs.
  const_res = [i for i, k in enumerate(kinds) if k == "const"]
  x_res = [i for i, k in enumerate(kinds) if k != "const"]
  n_uk = [sum(const_uk), sum(carry_uk), sum(xs_uk)]
  starts = np.cumsum([num_res, *n_uk])
  order = (const_res + list(range(starts[0], starts[1])) + list(range(starts[1], starts[2]))
           + x_res + list(range(starts[2], starts[3])))
  unknown_ins = ([res_outer[i] for i in const_res]
                 + [a for a, u in zip(const_ins, const_uk) if u]
                 + [a for a, u in zip(carry_ins, carry_uk) if u]
                 + [res_outer[i] for i in x_res]
                 + [a for a, u in zip(xs_ins, xs_uk) if u])
  lin_c, lin_carry, lin_x = _split(p["linear"], nc, ncarry)
  unknown_linear = ((False,) * len(const_res) + tuple(l for l, u in zip(lin_c, const_uk) if u)
                    + tuple(l for l, u in zip(lin_carry, carry_uk) if u)
                    + (False,) * len(x_res) + tuple(l for l, u in zip(lin_x, xs_uk) if u))
  unknown_eqn = JaxprEqn(
      unknown_ins, [v for v, u in zip(eqn.outvars, carry_uk + ys_uk) if u], scan_p,
      dict(p, jaxpr=common.move_binders(unknown, order),
           num_consts=len(const_res) + n_uk[0], num_carry=n_uk[1], linear=unknown_linear))
  return known_eqn, unknown_eqn, carry_uk + ys_uk


def _scan_transpose(cts: Sequence[Any], *args: Any, reverse: bool, length: int,
                    jaxpr: ClosedJaxpr, num_consts: int, num_carry: int,
                    linear: tuple[bool, ...], unroll: int, _split_transpose: bool
                    ) -> list[Any]:
  """A scan running the other way: its carry holds the carry's cotangent and the sums of
  the linear consts' cotangents; the linear xs' cotangents come out as its ys."""
  consts, init, xs = _split(args, num_consts, num_carry)
  # Every carry of a linear scan is linear. One may still arrive defined: a tangent carry
  # whose initial value is a known (zero) constant; it gets no cotangent.
  const_lin = tuple(map(ad.is_undefined_primal, consts))
  xs_lin = tuple(map(ad.is_undefined_primal, xs))
  ct_carry, ct_ys = common.split_list(cts, [num_carry])
  ys_nz = tuple(type(ct) is not ad.Zero for ct in ct_ys)
  body = _transposed_body(jaxpr, num_consts, num_carry, const_lin, xs_lin, ys_nz)
  res_consts = [c for c, lin in zip(consts, const_lin) if not lin]
  res_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
  ct_consts = [ad.zeros_like_aval(c.aval.to_tangent_aval())
               for c, lin in zip(consts, const_lin) if lin]
  ct_carry = [ad.instantiate_zeros(ct) for ct in ct_carry]
  outs = scan_p.bind(*res_consts, *ct_consts, *ct_carry,
                     *[ct for ct in ct_ys if type(ct) is not ad.Zero], *res_xs,
                     reverse=not reverse, length=length, jaxpr=body,
                     num_consts=len(res_consts), num_carry=len(ct_consts) + num_carry,
                     linear=(False,) * len(body.in_avals), unroll=unroll,
                     _split_transpose=_split_transpose)
  ct_consts, ct_init, ct_xs = _split(outs, len(ct_consts), num_carry)
  ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
  return ([next(ct_consts) if lin else None for lin in const_lin]
          + [ct if ad.is_undefined_primal(x) else None for ct, x in zip(ct_init, init)]
          + [next(ct_xs) if lin else None for lin in xs_lin])


@caches.lru_cache(maxsize=4096)
def _transposed_body(jaxpr: ClosedJaxpr, num_consts: int, num_carry: int,
                     const_lin: tuple[bool, ...], xs_lin: tuple[bool, ...],
                     ys_nz: tuple[bool, ...]) -> ClosedJaxpr:
  """The body of the transposed scan: (residual consts; const cotangent sums, carry
  cotangent; nonzero y cotangents, residual xs) to (new sums, carry input cotangent;
  linear x cotangents)."""
  consts_avals, carry_avals, x_avals = _split(jaxpr.in_avals, num_consts, num_carry)
  y_avals = jaxpr.out_avals[num_carry:]
  res_c = [a for a, lin in zip(consts_avals, const_lin) if not lin]
  lin_c = [a for a, lin in zip(consts_avals, const_lin) if lin]
  res_x = [a for a, lin in zip(x_avals, xs_lin) if not lin]
  ct_y = [a for a, nz in zip(y_avals, ys_nz) if nz]

  def transposed(*args: Any) -> list[Any]:
    rc, sums, ct_carry, cy, rx = common.split_list(
        args, [len(res_c), len(lin_c), num_carry, len(ct_y)])[:5]
    rc, cy, rx = iter(rc), iter(cy), iter(rx)
    primals = ([ad.UndefinedPrimal(a) if lin else next(rc)
                for a, lin in zip(consts_avals, const_lin)]
               + [ad.UndefinedPrimal(a) for a in carry_avals]
               + [ad.UndefinedPrimal(a) if lin else next(rx)
                  for a, lin in zip(x_avals, xs_lin)])
    cts_out = list(ct_carry) + [next(cy) if nz else ad.Zero(a.to_tangent_aval())
                                for a, nz in zip(y_avals, ys_nz)]
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, cts_out)
    ct_consts, ct_carry_in, ct_xs = _split(cts_in, num_consts, num_carry)
    ct_consts = [ct for ct, lin in zip(ct_consts, const_lin) if lin]
    new_sums = [ad.add_tangents(s, ct) if type(ct) is not ad.Zero else s
                for s, ct in zip(sums, ct_consts)]
    return (new_sums + [ad.instantiate_zeros(ct) for ct in ct_carry_in]
            + [ad.instantiate_zeros(ct) for ct, lin in zip(ct_xs, xs_lin) if lin])
  return pe.trace_to_closed_jaxpr(
      transposed, res_c + lin_c + [a.to_tangent_aval() for a in carry_avals] + ct_y + res_x)


def _scan_batch(axis_data: batching.AxisData, vals: Sequence[Any],
                dims: Sequence[int | None], *, reverse: bool, length: int,
                jaxpr: ClosedJaxpr, num_consts: int, num_carry: int,
                linear: tuple[bool, ...], unroll: int, _split_transpose: bool
                ) -> tuple[list[Any], list[int | None]]:
  """Batched consts and carries move the batch axis to 0, batched xs to 1 (0 is the
  scanned axis), so inside the body every batched value has it at 0; a carry batched on
  one iteration is batched on all (a fixpoint)."""
  size = axis_data.size
  const_dims, carry_dims, xs_dims = _split(dims, num_consts, num_carry)
  bat = lambda ds: [d is not batching.not_mapped for d in ds]  # noqa: E731
  const_bat, carry_bat, xs_bat = bat(const_dims), bat(carry_dims), bat(xs_dims)
  dims_of = lambda bats: tuple(0 if b else None for b in bats)  # noqa: E731
  for _ in range(num_carry + 1):
    _, out_dims = batching.batch_jaxpr(jaxpr, axis_data,
                                       dims_of(const_bat + carry_bat + xs_bat))
    new_bat = [b or d is not None for b, d in zip(carry_bat, out_dims[:num_carry])]
    if new_bat == carry_bat:
      break
    carry_bat = new_bat
  ys_bat = [d is not None for d in out_dims[num_carry:]]
  body, _ = batching.batch_jaxpr(jaxpr, axis_data, dims_of(const_bat + carry_bat + xs_bat),
                                 dims_of(carry_bat + ys_bat))
  consts, init, xs = _split(vals, num_consts, num_carry)
  consts = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(consts, const_dims)]
  init = [batching.bdim_at_front(x, d, size) if b else x
          for x, d, b in zip(init, carry_dims, carry_bat)]
  xs = [x if d is None else batching.moveaxis(x, d, 1) for x, d in zip(xs, xs_dims)]
  outs = scan_p.bind(*consts, *init, *xs, reverse=reverse, length=length, jaxpr=body,
                     num_consts=num_consts, num_carry=num_carry, linear=linear,
                     unroll=unroll, _split_transpose=_split_transpose)
  return outs, [0 if b else None for b in carry_bat] + [1 if b else None for b in ys_bat]


scan_p.def_impl(functools.partial(deferred.apply_primitive, scan_p))
scan_p.def_abstract_eval(_scan_abstract_eval)
mlir.register_lowering(scan_p, mlir.lower_fun(_scan_impl))
ad.primitive_jvps[scan_p] = _scan_jvp
ad.primitive_transposes[scan_p] = _scan_transpose
pe.partial_eval_jaxpr_custom_rules[scan_p] = _scan_partial_eval
batching.fancy_primitive_batchers[scan_p] = _scan_batch
