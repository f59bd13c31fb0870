"""State discharge: a program that reads and writes refs, as a functional one.

`run_with_cells` evaluates a jaxpr in which each ref is a cell (a `Ref` whose value may be
a tracer): reads and writes become slices and updates of the cell's value. Tracing it
gives the discharged jaxpr, whose refs are extra inputs and final values extra outputs:
how a jit that takes or makes refs is compiled, and how loops, `cond` and nested jits
that close over refs run: their refs become loop carries, branch operands and results.

Primitives that carry jaxprs get a bind hook: applied to refs (or to jaxprs that use refs)
outside of plain staging, they read each ref, run their discharged form, and write the
results back. Under `make_jaxpr` they stage as they are, with `Ref{...}` operands, as in
JAX; compiling that jaxpr discharges it.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import caches, core, jit, tree_util
from jaxon._src.core import ClosedJaxpr, Jaxpr, Literal
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax.control_flow import common
from jaxon._src.lax.control_flow.conditionals import cond_p
from jaxon._src.lax.control_flow.scan import scan_p
from jaxon._src.lax.control_flow.while_loop import while_p
from jaxon._src.pjit import pjit_p
from jaxon._src.sharding_impls import UNSPECIFIED
from jaxon._src.state import primitives as sp
from jaxon._src.state import types
from jaxon._src.state.types import AbstractRef, Ref
from jaxon._src.xla import executable

# rule(values, slots, params) -> (outputs, new values of the distinct refs): `values` are
# the operands with each ref replaced by its current value, `slots[i]` the index of
# operand i's ref among the distinct refs (None for a value).
discharge_rules: dict[core.Primitive, Callable] = {}


def run_with_cells(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
  """Evaluates `jaxpr` where `args` may hold cells (`Ref`s over traced values), whose
  values the reads and writes of the jaxpr update."""
  env: dict[core.Var, Any] = {}

  def read(atom: core.Atom) -> Any:
    return atom.val if type(atom) is Literal else env[atom]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    vals = list(map(read, eqn.invars))
    if eqn.primitive in sp.REF_PRIMITIVES:
      outs = eqn.primitive.impl(*vals, **eqn.params)  # on the cells' traced values
    elif any(type(v) is Ref for v in vals) or _uses_refs(eqn.params):
      outs = discharge_call(eqn.primitive, vals, eqn.params)
    else:
      outs = eqn.primitive.bind(*vals, **eqn.params)
    env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
  return [read(v) for v in jaxpr.outvars]


def _cells(avals: Sequence[core.AbstractValue], values: Sequence[Any]) -> list[Ref]:
  return [Ref(a, v) for a, v in zip(avals, values)]


@caches.lru_cache(maxsize=1024)
def discharge_jaxpr(closed: ClosedJaxpr, is_ref: tuple[bool, ...]) -> ClosedJaxpr:
  """`closed` with its ref inputs taking values instead, and the final value of each of
  them returned after its outputs."""
  in_avals = closed.in_avals
  for aval in closed.out_avals:
    if type(aval) is AbstractRef:
      raise ValueError(f"a function traced for jit returned a mutable array reference of "
                       f"type {aval}, but mutable array references cannot be returned.")

  def discharged(*args: Any) -> list[Any]:
    cells = _cells([a for a, r in zip(in_avals, is_ref) if r],
                   [x for x, r in zip(args, is_ref) if r])
    it = iter(cells)
    outs = run_with_cells(closed.jaxpr, closed.consts,
                          [next(it) if r else x for x, r in zip(args, is_ref)])
    return [*outs, *(c._value for c in cells)]
  avals = [a.inner_aval if r else a for a, r in zip(in_avals, is_ref)]
  with core.set_current_trace(core.EvalTrace()):
    jaxpr, consts = pe.trace_to_jaxpr(discharged, avals)
  return ClosedJaxpr(jaxpr, consts)


def _check_distinct(refs: Sequence[Any], what: str) -> None:
  seen: set[int] = set()
  for r in refs:
    if id(r) in seen:
      raise ValueError(f"only one reference to a mutable array may be passed as an argument "
                       f"to a function, but {what} got the mutable array reference of type "
                       f"{core.get_aval(r)} more than once.")
    seen.add(id(r))


def ref_program(closed: ClosedJaxpr, name: str) -> Callable[[Sequence[Any]], list[Any]]:
  """How a jit whose program takes or makes refs runs: the discharged program, compiled,
  reads the refs passed in and its extra results are written back to them."""
  is_ref = tuple(type(a) is AbstractRef for a in closed.in_avals)
  try:
    discharged = discharge_jaxpr(closed, is_ref)
  except ValueError as e:
    raise ValueError(str(e).replace("a function", f"function {name}")) from None
  exe = executable.executable_for(discharged, name)
  n_out = len(closed.out_avals)

  def run(args: Sequence[Any]) -> list[Any]:
    refs = [a for a, r in zip(args, is_ref) if r]
    _check_distinct(refs, f"{name} (traced for jit)")
    outs = exe([a._value if r else a for a, r in zip(args, is_ref)])
    for ref, value in zip(refs, outs[n_out:]):
      ref._value = value
    return list(outs[:n_out])
  return run


# ----------------------------------------------------------------------------- bind hook


_uses_refs_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _jaxpr_uses_refs(closed: ClosedJaxpr | Jaxpr) -> bool:
  found = _uses_refs_cache.get(closed)
  if found is None:
    found = _uses_refs_cache[closed] = types.jaxpr_uses_refs(
        closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed)
  return found


def _uses_refs(params: dict) -> bool:
  for p in params.values():
    for j in (p if type(p) is tuple else (p,)):
      if isinstance(j, (ClosedJaxpr, Jaxpr)) and _jaxpr_uses_refs(j):
        return True
  return False


def _discharging_hook(primitive: core.Primitive, trace: core.Trace, args: Sequence[Any],
                      params: dict) -> Any:
  if type(trace) is pe.DynamicJaxprTrace or not (
      any(map(types.is_ref, args)) or _uses_refs(params)):
    return trace.process_primitive(primitive, args, params)
  return discharge_call(primitive, args, params)


def discharge_call(primitive: core.Primitive, args: Sequence[Any], params: dict) -> Any:
  """Applies `primitive` to `args` (some of them refs) through its discharged form."""
  distinct: dict[int, Any] = {}
  slots = []
  for a in args:
    slots.append(distinct.setdefault(id(a), (len(distinct), a))[0]
                 if types.is_ref(a) else None)
  refs = [r for _, r in distinct.values()]
  current = [r._value if type(r) is Ref else sp.get_p.bind(r, indexer=()) for r in refs]
  values = [current[s] if s is not None else a for a, s in zip(args, slots)]
  outs, new_values = discharge_rules[primitive](values, tuple(slots), params)
  for ref, value in zip(refs, new_values):
    if type(ref) is Ref:
      ref._value = value
    else:
      sp.swap_p.bind(ref, value, indexer=())
  return outs


def _n_distinct(slots: Sequence[int | None]) -> int:
  return len({s for s in slots if s is not None})


def _trace_flat(fun: Callable[..., list[Any]], avals: Sequence[core.AbstractValue]
                ) -> tuple[ClosedJaxpr, list[Any]]:
  """`fun` as a closed jaxpr taking its constants first (how loop bodies are passed)."""
  with core.set_current_trace(core.EvalTrace()):
    jaxpr, consts = pe.trace_to_jaxpr(fun, avals)
  return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts


def _with_cells(args: Sequence[Any], slots: Sequence[int | None], in_avals: Sequence[Any],
                ref_values: Sequence[Any]) -> tuple[list[Any], list[Ref]]:
  """`args` with each ref slot filled by its (shared) cell, and the cells."""
  cells: dict[int, Ref] = {}
  it = iter(args)
  full = []
  for s, aval in zip(slots, in_avals):
    if s is None:
      full.append(next(it))
    else:
      if s not in cells:
        cells[s] = Ref(aval, ref_values[s])
      full.append(cells[s])
  return full, [cells[s] for s in sorted(cells)]


def _ref_avals(in_avals: Sequence[Any], slots: Sequence[int | None]) -> list[Any]:
  first: dict[int, Any] = {}
  for s, a in zip(slots, in_avals):
    if s is not None:
      first.setdefault(s, a.inner_aval)
  return [first[s] for s in sorted(first)]


# ----------------------------------------------------------------------------- rules


def _pjit_discharge(values: Sequence[Any], slots: tuple, params: dict
                    ) -> tuple[list[Any], list[Any]]:
  refs = [s for s in slots if s is not None]
  _check_distinct(refs, f"{params['name']} (traced for jit)")
  jaxpr = params["jaxpr"]
  discharged = discharge_jaxpr(jaxpr, tuple(s is not None for s in slots))
  new_params = dict(params, jaxpr=discharged)
  n_out = len(jaxpr.out_avals)
  if "out_shardings" in params:
    new_params["out_shardings"] = (*params["out_shardings"],
                                   *[UNSPECIFIED] * (len(discharged.out_avals) - n_out))
  outs = pjit_p.bind(*values, **new_params)
  return outs[:n_out], outs[n_out:]


def _outside_consts_error(primitive: str) -> ValueError:
  return ValueError(f"a mutable array reference may be closed over by a {primitive} body, "
                    "but it cannot be passed as a loop carry or scanned-over value, nor "
                    "returned: mutable array references cannot be returned.")


@caches.lru_cache(maxsize=512)
def _scan_body(jaxpr: ClosedJaxpr, slots: tuple, num_consts: int
               ) -> tuple[ClosedJaxpr, list[Any]]:
  n_refs = _n_distinct(slots)
  in_avals = jaxpr.in_avals
  k = num_consts - sum(s is not None for s in slots)

  def body(*args: Any) -> list[Any]:
    consts, rest = args[:k], args[k + n_refs:]
    full, cells = _with_cells(consts, slots, in_avals, args[k:k + n_refs])
    outs = run_with_cells(jaxpr.jaxpr, jaxpr.consts, [*full, *rest])
    return [*(c._value for c in cells), *outs]
  avals = [a for a, s in zip(in_avals, slots) if s is None]
  return _trace_flat(body, [*avals, *_ref_avals(in_avals, slots), *in_avals[num_consts:]])


def _scan_discharge(values: Sequence[Any], slots: tuple, params: dict
                    ) -> tuple[list[Any], list[Any]]:
  nc = params["num_consts"]
  if any(s is not None for s in slots[nc:]):
    raise _outside_consts_error("scan")
  body, extra = _scan_body(params["jaxpr"], slots[:nc], nc)
  n_refs = _n_distinct(slots)
  consts = [v for v, s in zip(values[:nc], slots) if s is None]
  ref_values = _distinct_values(values, slots)
  operands = [*extra, *consts, *ref_values, *values[nc:]]
  outs = scan_p.bind(*operands, **dict(
      params, jaxpr=body, num_consts=len(extra) + len(consts),
      num_carry=n_refs + params["num_carry"], linear=(False,) * len(operands)))
  return outs[n_refs:], outs[:n_refs]


def _distinct_values(values: Sequence[Any], slots: Sequence[int | None]) -> list[Any]:
  first: dict[int, Any] = {}
  for v, s in zip(values, slots):
    if s is not None:
      first.setdefault(s, v)
  return [first[s] for s in sorted(first)]


@caches.lru_cache(maxsize=512)
def _while_parts(cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, slots: tuple,
                 cond_nconsts: int, body_nconsts: int) -> tuple:
  n_refs = _n_distinct(slots)
  cond_slots, body_slots = slots[:cond_nconsts], slots[cond_nconsts:][:body_nconsts]
  ref_avals = _ref_avals([*cond_jaxpr.in_avals[:cond_nconsts],
                          *body_jaxpr.in_avals[:body_nconsts]], slots[:cond_nconsts
                                                                       + body_nconsts])
  carry_avals = body_jaxpr.in_avals[body_nconsts:]

  def part(jaxpr: ClosedJaxpr, part_slots: tuple, is_body: bool) -> tuple:
    k = sum(s is None for s in part_slots)

    def fun(*args: Any) -> list[Any]:
      full, _ = _with_cells(args[:k], part_slots, jaxpr.in_avals, args[k:k + n_refs])
      cells = {s: c for s, c in zip(part_slots, full) if s is not None}
      outs = run_with_cells(jaxpr.jaxpr, jaxpr.consts, [*full, *args[k + n_refs:]])
      if not is_body:
        return outs
      values = [cells[s]._value if s in cells else args[k + s] for s in range(n_refs)]
      return [*values, *outs]
    avals = [a for a, s in zip(jaxpr.in_avals, part_slots) if s is None]
    return _trace_flat(fun, [*avals, *ref_avals, *carry_avals])
  return part(cond_jaxpr, cond_slots, False), part(body_jaxpr, body_slots, True)


def _while_discharge(values: Sequence[Any], slots: tuple, params: dict
                     ) -> tuple[list[Any], list[Any]]:
  cn, bn = params["cond_nconsts"], params["body_nconsts"]
  if any(s is not None for s in slots[cn + bn:]):
    raise _outside_consts_error("while_loop")
  (cond, cond_extra), (body, body_extra) = _while_parts(
      params["cond_jaxpr"], params["body_jaxpr"], slots, cn, bn)
  n_refs = _n_distinct(slots)
  cond_consts = [v for v, s in zip(values[:cn], slots[:cn]) if s is None]
  body_consts = [v for v, s in zip(values[cn:cn + bn], slots[cn:cn + bn]) if s is None]
  outs = while_p.bind(*cond_extra, *cond_consts, *body_extra, *body_consts,
                      *_distinct_values(values, slots), *values[cn + bn:],
                      cond_nconsts=len(cond_extra) + len(cond_consts), cond_jaxpr=cond,
                      body_nconsts=len(body_extra) + len(body_consts), body_jaxpr=body)
  return outs[n_refs:], outs[:n_refs]


def _cond_discharge(values: Sequence[Any], slots: tuple, params: dict
                    ) -> tuple[list[Any], list[Any]]:
  index, ops, op_slots = values[0], values[1:], slots[1:]
  branches = params["branches"]
  n_refs = _n_distinct(op_slots)
  in_avals = branches[0].in_avals

  def discharged(branch: ClosedJaxpr) -> Callable[..., list[Any]]:
    def fun(*args: Any) -> list[Any]:
      k = len(args) - n_refs
      full, cells = _with_cells(args[:k], op_slots, in_avals, args[k:])
      outs = run_with_cells(branch.jaxpr, branch.consts, full)
      return [*outs, *(c._value for c in cells)]
    return fun
  avals = [*(a for a, s in zip(in_avals, op_slots) if s is None),
           *_ref_avals(in_avals, op_slots)]
  in_tree = tree_util.tree_structure(tuple(range(len(avals))))
  with core.set_current_trace(core.EvalTrace()):
    jaxprs, consts, _ = common.trace_with_common_consts(
        [discharged(b) for b in branches], in_tree, avals)
  operands = [*consts, *(v for v, s in zip(ops, op_slots) if s is None),
              *_distinct_values(ops, op_slots)]
  outs = cond_p.bind(index, *operands, branches=tuple(jaxprs))
  n_out = len(branches[0].out_avals)
  return outs[:n_out], outs[n_out:]


discharge_rules[pjit_p] = _pjit_discharge
discharge_rules[scan_p] = _scan_discharge
discharge_rules[while_p] = _while_discharge
discharge_rules[cond_p] = _cond_discharge
for _p in discharge_rules:
  _p.bind_hook = _discharging_hook


def _program_if_refs(closed: ClosedJaxpr, name: str) -> Any:
  """A jit's program that takes or makes mutable refs runs discharged (`ref_program`)."""
  return ref_program(closed, name) if types.jaxpr_uses_refs(closed.jaxpr) else None


jit.special_programs.append(_program_if_refs)
