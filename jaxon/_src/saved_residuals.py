"""What reverse mode saves: `print_saved_residuals(f, *args)` lists the values that the
forward pass of `vjp(f, *args)` keeps for the backward pass, and where each comes from.

It is the tool for tuning `checkpoint` policies: the residuals are found by staging
`vjp` itself into a jaxpr whose outputs are the linearized function's residuals, then
tracing each one back to what produced it there (an argument, a constant, a literal, or
an equation: its primitive, or the `checkpoint_name` it was given). jaxon's equations do
not record source lines, so unlike JAX the text names no file and line.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import api_util, core, tree_util
from jaxon._src.interpreters import ad
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax.control_flow.remat import name_p


def saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> list[tuple[Any, str]]:
  """(aval, where it comes from) for each residual reverse mode saves for `f(*args,
  **kwargs)`."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  arg_names = api_util.debug_info("saved_residuals", f, args, kwargs).arg_names

  def flat_f(*xs: Any) -> list[Any]:
    call_args, call_kwargs = in_tree.unflatten(xs)
    return tree_util.tree_leaves(f(*call_args, **call_kwargs))

  def residuals_of(*xs: Any) -> list[Any]:
    return ad.linearize_flat(flat_f, xs)[2]

  jaxpr, _ = pe.trace_to_jaxpr(residuals_of, [core.get_aval(x) for x in leaves])
  return _sources(jaxpr, arg_names)


def _sources(jaxpr: core.Jaxpr, arg_names: Sequence[str]) -> list[tuple[Any, str]]:
  """Each output of `jaxpr` (the residuals) with its origin, grouped as JAX orders them:
  literals, constants, arguments, then equation outputs in program order."""
  outs = jaxpr.outvars
  produced = {v for v in outs if not isinstance(v, core.Literal)}
  found = [(v.aval, "from a literal") for v in outs if isinstance(v, core.Literal)]
  found += [(v.aval, "from a constant") for v in jaxpr.constvars if v in produced]
  found += [(v.aval, f"from the argument {name}" if name else
             f"from the argument at flattened index {i}")
            for i, (v, name) in enumerate(zip(jaxpr.invars, arg_names)) if v in produced]
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      if v in produced:
        if eqn.primitive is name_p:
          found.append((v.aval, f"named '{eqn.params['name']}'"))
        elif eqn.primitive.name == "pjit":
          found.append((v.aval, f"output of jitted function '{eqn.params['name']}'"))
        else:
          found.append((v.aval, f"output of {eqn.primitive.name}"))
  return found


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
  """Prints, one per line, each residual that `vjp(f, *args, **kwargs)` saves for the
  backward pass: its type and where it comes from (`f32[3] from the argument x`,
  `f32[] output of cos`, `f32[3] named 'hidden'`).

  Example:
    >>> print_saved_residuals(lambda x: jnp.sin(jnp.sin(x)), 1.0)
    f32[] output of cos
    f32[] output of cos
  """
  for aval, source in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {source}")
