"""`shard_map`'s replication check: which mesh axes each value of a body may vary over.

An `out_specs` entry that leaves a mesh axis out promises that the output is the same on
every device along that axis; `shard_map` then keeps one copy of it. A body that breaks
the promise would silently return one device's value, so with `check_vma=True` (the
default) the promise is checked when the body is traced, by an abstract interpretation of
its jaxpr over sets of mesh axes ("varying manual axes", JAX's vma):

- an input varies over the mesh axes its `in_specs` entry splits it over; constants and
  literals vary over none;
- an ordinary primitive's outputs vary over the union of its inputs' axes;
- `psum`, `pmax` and `pmin` make their result the same along the axes they reduce over;
  every other collective (`axis_index`, `ppermute`, `all_gather`, `psum_scatter`,
  `all_to_all`) gives each member its own value: the result varies over its axes;
- `cond` varies where its branches' outputs do; loops carry the union of what goes in and
  what comes out of each iteration, to a fixpoint; `pjit`, `remat` and custom-derivative
  calls recurse.

A value called varying may happen to be equal on every device (then pass
`check_vma=False`). As in JAX 0.10.2, a branch index or loop predicate that varies does
not make the results vary: the check trusts the body there.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import core
from jaxon._src.core import ClosedJaxpr, Jaxpr, JaxprEqn
from jaxon._src.interpreters import batching
from jaxon._src.lax import parallel
from jaxon._src.lax.control_flow import conditionals, scan, while_loop

Vma = frozenset  # the mesh axes a value may vary over
NONE: Vma = frozenset()

# The collectives whose result is the same on every member of the axes they act over.
_REDUCING = {parallel.psum_p, parallel.pmax_p, parallel.pmin_p}


def _union(vmas: Sequence[Vma]) -> Vma:
  return NONE.union(*vmas)


def jaxpr_vma(jaxpr: Jaxpr, in_vma: Sequence[Vma], mesh_axes: Vma) -> list[Vma]:
  """The axes each output of `jaxpr` may vary over, its constvars varying over none."""
  env: dict[core.Var, Vma] = dict.fromkeys(jaxpr.constvars, NONE)
  env.update(zip(jaxpr.invars, in_vma, strict=True))

  def read(atom: Any) -> Vma:
    return NONE if type(atom) is core.Literal else env[atom]

  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    rule = _rules.get(eqn.primitive, _default_rule)
    env.update(zip(eqn.outvars, rule(eqn, ins, mesh_axes)))
  return [read(v) for v in jaxpr.outvars]


def _open(j: Jaxpr | ClosedJaxpr) -> Jaxpr:
  return j.jaxpr if isinstance(j, ClosedJaxpr) else j


def _sub_jaxprs(params: dict) -> list[Jaxpr]:
  found = []
  for value in params.values():
    for leaf in value if isinstance(value, (tuple, list)) else (value,):
      if isinstance(leaf, (Jaxpr, ClosedJaxpr)):
        found.append(_open(leaf))
  return found


def _collective_axes(eqn: JaxprEqn, mesh_axes: Vma) -> Vma:
  names = batching.collective_axis_names[eqn.primitive](eqn.params)
  return mesh_axes.intersection(n for n in names if not isinstance(n, int))


def _default_rule(eqn: JaxprEqn, ins: list[Vma], mesh_axes: Vma) -> list[Vma]:
  """A collective per `_REDUCING`; a call whose one jaxpr takes the equation's operands in
  order is interpreted; any other primitive varies where its operands do (and, if it holds
  jaxprs nobody taught this module, over every axis a collective inside names)."""
  if eqn.primitive in batching.collective_axis_names:
    axes = _collective_axes(eqn, mesh_axes)
    out = _union(ins) - axes if eqn.primitive in _REDUCING else _union(ins) | axes
    return [out] * len(eqn.outvars)
  subs = _sub_jaxprs(eqn.params)
  if len(subs) == 1 and len(subs[0].invars) == len(ins) \
      and len(subs[0].outvars) == len(eqn.outvars):
    return jaxpr_vma(subs[0], ins, mesh_axes)
  return [_union(ins) | _union([_mentioned_axes(j, mesh_axes) for j in subs])] \
      * len(eqn.outvars)


def _mentioned_axes(jaxpr: Jaxpr, mesh_axes: Vma) -> Vma:
  """Every mesh axis a collective anywhere in `jaxpr` acts over."""
  found: set = set()
  for eqn in jaxpr.eqns:
    if eqn.primitive in batching.collective_axis_names:
      found |= _collective_axes(eqn, mesh_axes)
    for sub in _sub_jaxprs(eqn.params):
      found |= _mentioned_axes(sub, mesh_axes)
  return frozenset(found)


def _cond_rule(eqn: JaxprEqn, ins: list[Vma], mesh_axes: Vma) -> list[Vma]:
  per_branch = [jaxpr_vma(_open(b), ins[1:], mesh_axes) for b in eqn.params["branches"]]
  return [_union(outs) for outs in zip(*per_branch)]


def _carry_fixpoint(step: Callable[[list[Vma]], list[Vma]], init: list[Vma]) -> list[Vma]:
  """The least carry typing, at least `init`, that one more iteration does not widen."""
  carry = init
  while True:
    wider = [c | out for c, out in zip(carry, step(carry))]
    if wider == carry:
      return carry
    carry = wider


def _while_rule(eqn: JaxprEqn, ins: list[Vma], mesh_axes: Vma) -> list[Vma]:
  p = eqn.params
  body_consts = ins[p["cond_nconsts"]:p["cond_nconsts"] + p["body_nconsts"]]
  init = ins[p["cond_nconsts"] + p["body_nconsts"]:]
  body = _open(p["body_jaxpr"])
  return _carry_fixpoint(lambda carry: jaxpr_vma(body, body_consts + carry, mesh_axes), init)


def _scan_rule(eqn: JaxprEqn, ins: list[Vma], mesh_axes: Vma) -> list[Vma]:
  p = eqn.params
  n_consts, n_carry = p["num_consts"], p["num_carry"]
  consts, init, xs = ins[:n_consts], ins[n_consts:n_consts + n_carry], ins[n_consts + n_carry:]
  body = _open(p["jaxpr"])
  carry = _carry_fixpoint(
      lambda c: jaxpr_vma(body, consts + c + xs, mesh_axes)[:n_carry], init)
  return carry + jaxpr_vma(body, consts + carry + xs, mesh_axes)[n_carry:]


_rules: dict[core.Primitive, Callable[[JaxprEqn, list[Vma], Vma], list[Vma]]] = {
    conditionals.cond_p: _cond_rule,
    while_loop.while_p: _while_rule,
    scan.scan_p: _scan_rule,
}


# ----------------------------------------------------------------------------- the check


def _ordered(mesh: Any, axes: Any) -> str:
  return ",".join(str(n) for n in mesh.axis_names if n in axes)


def check_out_specs(f: Callable, mesh: Any, body: Jaxpr, in_vma: Sequence[Vma],
                    out_spec_entries: Sequence[tuple[str, Any]], out_dims: Sequence[tuple]
                    ) -> None:
  """Raises JAX's ValueError if an output may vary over a mesh axis its `out_specs` entry
  leaves out. `out_spec_entries` holds, for each output, the key path (as text) in
  `out_specs` of the entry that covers it and that entry; `out_dims` the entries
  normalized."""
  out_vma = jaxpr_vma(body, in_vma, frozenset(mesh.axis_names))
  messages = []
  for vma, (path, spec), dims in zip(out_vma, out_spec_entries, out_dims):
    named = {a for d in dims for a in d}
    unmentioned = [n for n in mesh.axis_names if n not in named]
    if not vma.intersection(unmentioned):
      continue
    shown = f"out_specs{path} is {spec}"
    if len(unmentioned) > 1:
      messages.append(
          f"* {shown} which implies that the corresponding output value is only varying "
          f"across mesh axes {{{_ordered(mesh, named)}}} and not "
          f"{{{_ordered(mesh, vma.intersection(unmentioned))}}}, but it was inferred to be "
          f"possibly varying over {{{_ordered(mesh, vma)}}}")
    else:
      messages.append(
          f"* {shown} which implies that the corresponding output value is replicated across "
          f"mesh axis '{unmentioned[0]}', but could not infer replication over any axes")
  if not messages:
    return
  if len(messages) == 1:
    messages = [messages[0][2:]]
  fun_name = getattr(f, "__name__", str(f))
  raise ValueError(
      f"shard_map applied to the function '{fun_name}' was given out_specs which require "
      "replication which can't be statically inferred given the mesh:\n\n"
      f"The mesh given has shape {tuple(mesh.devices.shape)} with corresponding axis names "
      f"{tuple(mesh.axis_names)}.\n\n" + "\n\n".join(messages) + "\n\n"
      "Check if these output values are meant to be replicated over those mesh axes. If "
      "not, consider revising the corresponding out_specs entries. If so, consider disabling "
      "the check by passing the check_vma=False argument to `jaxon.shard_map`.")
