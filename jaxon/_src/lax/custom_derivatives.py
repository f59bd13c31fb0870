"""`custom_jvp` and `custom_vjp`: functions whose derivatives are given by rules (seed 002).

A call of such a function binds a call primitive that reaches every trace with the Python
callables (`Trace.process_custom_jvp_call`/`process_custom_vjp_call`): differentiation
applies the rule, vmap batches the function and its rules together, evaluation just runs
the function. Nothing is traced up front, so Python control flow on concrete values works
in the function and in its rules. A staging trace (jit, make_jaxpr, the body of a
control-flow primitive) records an initial-style equation instead: the function's jaxpr,
with the rules kept as callables traced when needed. Evaluating that equation under a
transformation binds the call again, so the rules survive staging (seed 002's "initial-style
wrinkle").
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from jaxon._src import core, dtypes, traceback_util, tree_util
from jaxon._src import pretty_printer as pp
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.errors import UnexpectedTracerError
from jaxon._src.interpreters import ad, mlir
from jaxon._src.interpreters import partial_eval as pe


class SymbolicZero:
  """A zero tangent or cotangent passed to a rule defined with `symbolic_zeros=True`."""

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)

  def __repr__(self) -> str:
    return f"SymbolicZero({self.aval.str_short()})"


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
  """A zero tangent per leaf of `val` (of its tangent type: float0 for integers), as a
  SymbolicZero when `symbolic_zeros`, else as an array of zeros."""
  def zero(x: Any) -> Any:
    aval = core.get_aval(x).to_tangent_aval()
    return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)
  return tree_util.tree_map(zero, val)


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
  """An argument leaf of a `custom_vjp` forward rule defined with `symbolic_zeros=True`:
  the primal `value`, and whether it is `perturbed` (has a nonzero tangent). jaxon's
  forward rule runs before tangents are inspected, so `perturbed` is always True (the
  safe answer: the backward rule then computes every cotangent)."""
  value: Any
  perturbed: bool


def custom_vjp_primal_tree_values(tree: Any) -> Any:
  """`tree` with each CustomVJPPrimal leaf replaced by its value (TypeError for any other
  leaf): a forward rule with `symbolic_zeros=True` uses it to get its plain arguments."""
  def value(leaf: Any) -> Any:
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_util.tree_map(value, tree)


def _to_user(t: Any) -> Any:
  return SymbolicZero(t.aval) if type(t) is ad.Zero else t


def _from_user(t: Any, aval: ShapedArray) -> Any:
  if t is None or type(t) is SymbolicZero:
    return ad.Zero(aval.to_tangent_aval())
  return t


def _resolve_kwargs(fun: Callable, args: tuple, kwargs: dict) -> tuple:
  """Keyword arguments as positions (seed 002: supported where `inspect` can say)."""
  if not kwargs:
    return args
  try:
    bound = inspect.signature(fun).bind(*args, **kwargs)
  except (TypeError, ValueError) as e:
    raise TypeError(f"keyword arguments could not be resolved to positions: {e}") from None
  bound.apply_defaults()
  if bound.kwargs:
    raise TypeError("keyword arguments could not be resolved to positions: "
                    f"{list(bound.kwargs)} are keyword-only")
  return bound.args


def _nondiff_positions(fun: Callable, argnums: Sequence[int], argnames: Sequence[str]
                       ) -> tuple[int, ...]:
  """`nondiff_argnums` and the positions of the parameters `nondiff_argnames` names, sorted
  (the rules receive the non-differentiable arguments in positional order)."""
  positions = set(argnums)
  names = (argnames,) if isinstance(argnames, str) else tuple(argnames)
  if names:
    params = list(inspect.signature(fun).parameters.values())
    for name in names:
      found = [i for i, p in enumerate(params) if p.name == name
               and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
      if not found:
        raise ValueError(f"nondiff_argnames names {name!r}, which is not a parameter of "
                         f"{_name(fun)} that can be passed by position: its parameters are "
                         f"{[p.name for p in params]}.")
      positions.add(found[0])
  return tuple(sorted(positions))


def _split_nondiff(args: tuple, nondiff_argnums: tuple[int, ...]) -> tuple[list, list]:
  nondiff = [args[i] for i in nondiff_argnums]
  diff = [a for i, a in enumerate(args) if i not in nondiff_argnums]
  return nondiff, diff


def _merge_nondiff(nondiff: Sequence[Any], diff: Sequence[Any],
                   nondiff_argnums: tuple[int, ...]) -> list[Any]:
  out, diff_it, nondiff_map = [], iter(diff), dict(zip(nondiff_argnums, nondiff))
  for i in range(len(nondiff) + len(diff)):
    out.append(nondiff_map[i] if i in nondiff_map else next(diff_it))
  return out


def _name(f: Any) -> str:
  return getattr(f, "__name__", type(f).__name__)


# ----------------------------------------------------------------------------- custom_jvp


class custom_jvp:  # noqa: N801 (JAX's name)
  """A function with a custom JVP rule, set with `defjvp` (or `defjvps`).

  Example:
    >>> @custom_jvp
    ... def f(x):
    ...   return jnp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...   (x,), (t,) = primals, tangents
    ...   return f(x), jnp.cos(x) * t
  """

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
               nondiff_argnames: Sequence[str] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
    self.jvp: Callable | None = None
    self.symbolic_zeros = False

  def __get__(self, obj: Any, objtype: Any = None) -> Any:
    return self if obj is None else functools.partial(self, obj)

  def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
    """`jvp(primals, tangents) -> (primal_out, tangent_out)`; with `nondiff_argnums`, the
    non-differentiable arguments come first: `jvp(*nondiff, primals, tangents)`."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps: Callable | None) -> None:
    """One rule per argument, `jvp_i(tangent_i, primal_out, *primals) -> tangent_out`
    (None for an argument the output does not depend on); the output tangent is their
    sum."""
    if self.nondiff_argnums:
      raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

    def jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
      primal_out = self(*primals)
      zeros = tree_util.tree_map(lambda x: ad.zeros_like_aval(
          core.get_aval(x).to_tangent_aval()), primal_out)
      tangent_out = zeros
      for rule, t in zip(jvps, tangents):
        if rule is not None:
          tangent_out = tree_util.tree_map(ad.add_tangents, tangent_out,
                                           rule(t, primal_out, *primals))
      return primal_out, tangent_out
    self.defjvp(jvp)

  @traceback_util.api_boundary
  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {_name(self.fun)} using "
                           "defjvp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
    flat, in_tree = tree_util.tree_flatten(tuple(diff))
    out_tree: list[tree_util.PyTreeDef] = []
    fun, rule = self.fun, self.jvp
    argnums = self.nondiff_argnums
    symbolic = self.symbolic_zeros

    def flat_fun(*xs: Any) -> list[Any]:
      out = fun(*_merge_nondiff(nondiff, in_tree.unflatten(xs), argnums))
      leaves, tree = tree_util.tree_flatten(out)
      out_tree.append(tree)
      return leaves

    def flat_jvp(*xs: Any) -> list[Any]:
      n = len(xs) // 2
      primals = in_tree.unflatten(xs[:n])
      tangents = in_tree.unflatten([_to_user(t) if symbolic else t for t in xs[n:]])
      result = rule(*nondiff, primals, tangents)
      if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError("Custom JVP rule must produce a pair (list or tuple of length two) "
                        f"representing primal and tangent outputs, got {result}.")
      primal_leaves, primal_tree = tree_util.tree_flatten(result[0])
      tangent_leaves, tangent_tree = tree_util.tree_flatten(result[1], is_leaf=lambda t: (
          t is None or type(t) is SymbolicZero))
      if primal_tree != tangent_tree:
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with equal "
                        f"container (pytree) structures, but got {primal_tree} and "
                        f"{tangent_tree} respectively.")
      out_tree.append(primal_tree)
      primal_avals = [core.get_aval(p) for p in primal_leaves]
      tangent_leaves = [_from_user(t, a) for t, a in zip(tangent_leaves, primal_avals)]
      _check_tangents(primal_avals, tangent_leaves)
      return [*primal_leaves, *tangent_leaves]
    flat_fun.rule_name = _name(fun)  # type: ignore[attr-defined]
    flat_jvp.rule_name = _name(rule)  # type: ignore[attr-defined]
    outs = custom_jvp_call_p.bind_call(flat_fun, flat_jvp, flat, symbolic)
    return out_tree[-1].unflatten(outs)


def _check_tangents(primal_avals: Sequence[ShapedArray], tangents: Sequence[Any]) -> None:
  for p, t in zip(primal_avals, tangents):
    expected = p.to_tangent_aval()
    got = t.aval if type(t) is ad.Zero else core.get_aval(t)
    if (got.shape, got.dtype) != (expected.shape, expected.dtype):
      raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                      "corresponding shapes and dtypes. Expected "
                      f"{expected.str_short(False)} (tangent type of {p.str_short(False)}) "
                      f"but got {got.str_short(False)}.")


class CustomJVPCallPrimitive(core.Primitive):
  """`custom_jvp_call`: binding it hands (function, rule) to the current trace. A staged
  equation holds `call_jaxpr` and a memoized tracer of the rule, `jvp_jaxpr_fun`; binding
  it again turns those back into callables."""

  multiple_results = True

  def bind_call(self, fun: Callable, jvp: Callable, args: Sequence[Any],
                symbolic_zeros: bool) -> list[Any]:
    return core.current_trace().process_custom_jvp_call(self, fun, jvp, args, symbolic_zeros)

  def bind(self, *args: Any, call_jaxpr: ClosedJaxpr, jvp_jaxpr_fun: Callable,
           num_consts: int, symbolic_zeros: bool, name: str, jvp: str) -> list[Any]:
    @_named(jvp)
    def staged_jvp(*xs: Any) -> list[Any]:
      n = len(xs) // 2
      primals, tangents = xs[num_consts:n], xs[n + num_consts:]
      if any(type(t) is not ad.Zero for t in xs[n:n + num_consts]):
        raise TypeError(f"Detected differentiation of the custom_jvp function {name} with "
                        "respect to a closed-over value. That isn't supported because the "
                        "custom JVP rule only specifies how to differentiate the function "
                        "with respect to its explicit inputs; pass the value as an "
                        "argument (or use jaxon.closure_convert).")
      if not symbolic_zeros:
        tangents = [ad.instantiate_zeros(t) for t in tangents]
      jaxpr = jvp_jaxpr_fun(tuple(type(t) is ad.Zero for t in tangents))
      return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *primals,
                             *[t for t in tangents if type(t) is not ad.Zero])
    return self.bind_call(_named(name)(core.jaxpr_as_fun(call_jaxpr)), staged_jvp, args,
                          True)

  def stage(self, trace: pe.DynamicJaxprTrace, rules: tuple[Callable, Callable],
            args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    fun, jvp = rules
    in_avals = [core.get_aval(x) for x in args]
    jaxpr, consts = pe.trace_to_jaxpr(fun, in_avals)
    call_jaxpr = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])
    tangent_avals = [a.to_tangent_aval() for a in in_avals]

    @functools.cache
    def jvp_jaxpr_fun(zeros: tuple[bool, ...]) -> ClosedJaxpr:
      def nonzero_jvp(*xs: Any) -> list[Any]:
        primals, nonzero = xs[:len(in_avals)], iter(xs[len(in_avals):])
        tangents = [ad.Zero(a) if z else next(nonzero) for a, z in zip(tangent_avals, zeros)]
        return [ad.instantiate_zeros(o) for o in jvp(*primals, *tangents)]
      return pe.trace_to_closed_jaxpr(
          nonzero_jvp, in_avals + [a for a, z in zip(tangent_avals, zeros) if not z])
    return trace.stage(self, [*consts, *args], dict(
        call_jaxpr=call_jaxpr, jvp_jaxpr_fun=jvp_jaxpr_fun, num_consts=len(consts),
        symbolic_zeros=symbolic_zeros, name=_rule_name(fun), jvp=_rule_name(jvp)))


def _rule_name(rule: Callable) -> str:
  """The name of the user's function or rule behind a flat wrapper (printed in jaxprs)."""
  return getattr(rule, "rule_name", _name(rule))


def _named(name: str) -> Callable[[Callable], Callable]:
  def name_it(f: Callable) -> Callable:
    f.rule_name = name  # type: ignore[attr-defined]
    return f
  return name_it


custom_jvp_call_p = CustomJVPCallPrimitive("custom_jvp_call")
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
mlir.register_lowering(custom_jvp_call_p, lambda ctx, *args, call_jaxpr, **_:
                       mlir.closed_jaxpr_subcomp(ctx.module_context, call_jaxpr, args))


def _custom_jvp_call_transpose(cts_out: Sequence[Any], *args: Any, call_jaxpr: ClosedJaxpr,
                               **params: Any) -> list[Any]:
  """A JVP rule may apply its own function to tangents (a⁻¹ b's rule solves for
  db - da x), where it is linear: reverse mode over forward mode then transposes it. Its
  jaxpr's transpose, as JAX's: the custom rule has no part in a transpose."""
  return ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, args, cts_out)


ad.primitive_transposes[custom_jvp_call_p] = _custom_jvp_call_transpose


def _pp_custom_call(eqn: core.JaxprEqn, context: core.PrintContext) -> pp.Doc:
  """JAX's layout: `name` first, then the jaxpr and the rules' names, sorted; the rule
  tracers and a zero const count stay out of the text."""
  params = {k: v for k, v in eqn.params.items()
            if (k not in ("jvp_jaxpr_fun", "fwd_jaxpr_thunk", "name")
                or isinstance(v, _SavedRule))  # a saved program's rules print as jaxprs
            and not (k == "num_consts" and v == 0)}
  shown = eqn.replace(params={"name": eqn.params["name"], **params})
  return core.pp_standard_eqn(shown, context, ["name", *sorted(params)])


core.pp_eqn_rules[custom_jvp_call_p] = _pp_custom_call


# ----------------------------------------------------------------------------- custom_vjp


class custom_vjp:  # noqa: N801 (JAX's name)
  """A function with a custom VJP, set with `defvjp(fwd, bwd)`: `fwd(*args) -> (out,
  residuals)` and `bwd(residuals, out_cotangent) -> tuple of input cotangents`. The
  backward rule runs as Python during the backward pass (print and pdb work there).

  Example:
    >>> @custom_vjp
    ... def f(x):
    ...   return jnp.sin(x)
    >>> f.defvjp(lambda x: (f(x), jnp.cos(x)), lambda cos_x, g: (cos_x * g,))
  """

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
               nondiff_argnames: Sequence[str] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
    self.fwd: Callable | None = None
    self.bwd: Callable | None = None
    self.symbolic_zeros = False

  def __get__(self, obj: Any, objtype: Any = None) -> Any:
    return self if obj is None else functools.partial(self, obj)

  def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
    self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

  @traceback_util.api_boundary
  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    if self.fwd is None or self.bwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {_name(self.fun)} using "
                           "defvjp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
    for i in self.nondiff_argnums:
      if any(isinstance(x, core.Tracer) for x in tree_util.tree_leaves(args[i])):
        raise UnexpectedTracerError(
            "Found a JAX Tracer object passed as an argument to a custom_vjp function in a "
            "position indicated by nondiff_argnums as non-differentiable. Tracers cannot be "
            "passed as non-differentiable arguments to custom_vjp functions; instead, "
            "nondiff_argnums should only be used for arguments that can't be or contain "
            "JAX tracers, e.g. function-valued arguments. In particular, array-valued "
            "arguments should typically not be indicated as nondiff_argnums.", escaped=False)
    flat, in_tree = tree_util.tree_flatten(tuple(diff))
    in_avals = [core.get_aval(x) for x in flat]
    out_tree: list[tree_util.PyTreeDef] = []
    res_tree: list[tree_util.PyTreeDef] = []
    fun, fwd, bwd = self.fun, self.fwd, self.bwd
    argnums, symbolic = self.nondiff_argnums, self.symbolic_zeros
    # The backward rule needs only the arguments' structures and types: holding the
    # arguments themselves (tracers) would keep them alive after their trace ends.
    arg_trees = [tree_util.tree_structure(arg) for arg in diff]

    def flat_fun(*xs: Any) -> list[Any]:
      leaves, tree = tree_util.tree_flatten(
          fun(*_merge_nondiff(nondiff, in_tree.unflatten(xs), argnums)))
      out_tree.append(tree)
      return leaves

    def flat_fwd(*xs: Any) -> tuple[list[Any], list[Any]]:
      if symbolic:
        xs = [CustomVJPPrimal(x, True) for x in xs]
      result = fwd(*_merge_nondiff(nondiff, in_tree.unflatten(xs), argnums))
      if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError("Custom VJP fwd rule must produce a pair (list or tuple of length "
                        f"two) representing primal outputs and residuals, got {result}.")
      outs, tree = tree_util.tree_flatten(result[0])
      residuals, rtree = tree_util.tree_flatten(result[1])
      out_tree.append(tree)
      res_tree.append(rtree)
      return outs, residuals

    def flat_bwd(residuals: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
      cts = [_to_user(ct) for ct in cts] if symbolic else list(cts)
      result = bwd(*nondiff, res_tree[-1].unflatten(residuals), out_tree[-1].unflatten(cts))
      if not isinstance(result, (tuple, list)):
        result_tree = tree_util.tree_structure(result)
      else:
        result = tuple(result)
        result_tree = tree_util.tree_structure(tuple(None if r is None else 0
                                                     for r in result))
      if not isinstance(result, tuple) or len(result) != len(arg_trees):
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) "
            "structure as the args tuple of the primal function, and in particular must "
            "produce a tuple of length equal to the number of arguments to the primal "
            f"function, but got bwd output structure {result_tree} for primal input "
            f"structure {in_tree}.")
      leaves = []
      avals = iter(in_avals)
      for arg_tree, ct in zip(arg_trees, result):
        arg_avals = [next(avals) for _ in range(arg_tree.num_leaves)]
        if ct is None:
          leaves.extend(ad.Zero(a.to_tangent_aval()) for a in arg_avals)
          continue
        ct_leaves, ct_tree = tree_util.tree_flatten(ct, is_leaf=lambda t: (
            t is None or type(t) is SymbolicZero))
        if ct_tree != arg_tree:
          raise TypeError(f"Custom VJP bwd rule must produce an output with the same "
                          f"container (pytree) structure as the primal input, but got "
                          f"{ct_tree} for primal input {arg_tree}.")
        leaves.extend(_from_user(c, a) for c, a in zip(ct_leaves, arg_avals))
      for leaf, aval in zip(leaves, in_avals):
        got = leaf.aval if type(leaf) is ad.Zero else core.get_aval(leaf)
        want = aval.to_tangent_aval()
        if got.shape != want.shape:
          raise ValueError(f"Custom VJP bwd rule must produce an output with the same shape "
                           f"as the primal input: got {got.str_short()} for primal "
                           f"{aval.str_short()}.")
      return leaves
    for f, named in ((flat_fun, fun), (flat_fwd, fwd), (flat_bwd, bwd)):
      f.rule_name = _name(named)  # type: ignore[attr-defined]
    outs = custom_vjp_call_p.bind_call(flat_fun, flat_fwd, flat_bwd, flat, symbolic)
    return out_tree[-1].unflatten(outs)


class CustomVJPCallPrimitive(core.Primitive):
  """`custom_vjp_call`: binding it hands (function, fwd, bwd) to the current trace. A
  staged equation holds `call_jaxpr`, a memoized tracer of the forward rule and the
  backward rule; binding it again turns those back into callables."""

  multiple_results = True

  def bind_call(self, fun: Callable, fwd: Callable, bwd: Callable, args: Sequence[Any],
                symbolic_zeros: bool) -> list[Any]:
    return core.current_trace().process_custom_vjp_call(self, fun, fwd, bwd, args,
                                                        symbolic_zeros)

  def bind(self, *args: Any, call_jaxpr: ClosedJaxpr, fwd_jaxpr_thunk: Callable,
           bwd: Callable, num_consts: int, symbolic_zeros: bool, name: str, fwd: str
           ) -> list[Any]:
    @_named(fwd)
    def staged_fwd(*xs: Any) -> tuple[list[Any], list[Any]]:
      jaxpr, num_outs = fwd_jaxpr_thunk()
      outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs[num_consts:])
      return outs[:num_outs], outs[num_outs:]

    staged_fwd.num_consts = num_consts  # type: ignore[attr-defined]

    @_named(str(bwd))
    def staged_bwd(residuals: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
      return [None] * num_consts + list(bwd(residuals, cts))
    return self.bind_call(_named(name)(core.jaxpr_as_fun(call_jaxpr)), staged_fwd,
                          staged_bwd, args, symbolic_zeros)

  def stage(self, trace: pe.DynamicJaxprTrace, rules: tuple[Callable, Callable, Callable],
            args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    fun, fwd, bwd = rules
    in_avals = [core.get_aval(x) for x in args]
    jaxpr, consts = pe.trace_to_jaxpr(fun, in_avals)
    call_jaxpr = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])

    @functools.cache
    def fwd_jaxpr_thunk() -> tuple[ClosedJaxpr, int]:
      num_outs: list[int] = []

      def flat_fwd(*xs: Any) -> list[Any]:
        outs, residuals = fwd(*xs)
        num_outs.append(len(outs))
        return [*outs, *residuals]
      return pe.trace_to_closed_jaxpr(flat_fwd, in_avals), num_outs[0]
    return trace.stage(self, [*consts, *args], dict(
        call_jaxpr=call_jaxpr, fwd_jaxpr_thunk=fwd_jaxpr_thunk, bwd=_NamedRule(bwd),
        num_consts=len(consts), symbolic_zeros=symbolic_zeros,
        name=_rule_name(fun), fwd=_rule_name(fwd)))


class _NamedRule:
  """A rule callable that prints as its name (jaxpr params print with `str`)."""

  def __init__(self, rule: Callable):
    self.rule = rule

  def __call__(self, *args: Any) -> Any:
    return self.rule(*args)

  def __str__(self) -> str:
    return _rule_name(self.rule)


custom_vjp_call_p = CustomVJPCallPrimitive("custom_vjp_call")
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
mlir.register_lowering(custom_vjp_call_p, lambda ctx, *args, call_jaxpr, **_:
                       mlir.closed_jaxpr_subcomp(ctx.module_context, call_jaxpr, args))
core.pp_eqn_rules[custom_vjp_call_p] = _pp_custom_call


# ----------------------------------------------------------------------------- saved rules
# A program saved as text (`jaxon.export`) keeps its custom derivatives: `save_rules`
# rewrites each custom_jvp_call/custom_vjp_call equation to hold its rules traced to jaxprs,
# as objects that are closed jaxprs (so they print, and read back, as jaxprs) and also serve
# as the rule params the primitives call. Tangents and cotangents of integer values (float0)
# are left out of the saved jaxprs; `complete_saved_rules` gives the rules read back from
# text the avals that say which those are.


class _SavedRule(ClosedJaxpr):
  """A rule of a custom_jvp/custom_vjp call, traced to a jaxpr for saving."""

  __slots__ = ("arg_avals", "out_avals_of_call")

  def __init__(self, closed: ClosedJaxpr):
    super().__init__(closed.jaxpr, closed.consts)
    self.arg_avals: list[ShapedArray] = []
    self.out_avals_of_call: list[ShapedArray] = []

  def bind_avals(self, arg_avals: Sequence[ShapedArray],
                 out_avals: Sequence[ShapedArray]) -> _SavedRule:
    self.arg_avals, self.out_avals_of_call = list(arg_avals), list(out_avals)
    return self


def _differentiable(avals: Sequence[ShapedArray]) -> list[bool]:
  return [a.to_tangent_aval().dtype != dtypes.float0 for a in avals]


class SavedJVPRule(_SavedRule):
  """`jvp_jaxpr_fun`: the rule's jaxpr takes the primals and the tangents of the
  differentiable ones; other sets of symbolic-zero tangents are filled with zeros."""

  __slots__ = ()

  def __call__(self, zeros: tuple[bool, ...]) -> ClosedJaxpr:
    saved_zeros = tuple(not d for d in _differentiable(self.arg_avals))
    if zeros == saved_zeros:
      return self
    tangent_avals = [a.to_tangent_aval() for a in self.arg_avals]

    def with_zeros(*xs: Any) -> list[Any]:
      primals, given = xs[:len(self.arg_avals)], iter(xs[len(self.arg_avals):])
      tangents = [ad.zeros_like_aval(a) if z else next(given)
                  for a, z in zip(tangent_avals, zeros)]
      return core.eval_jaxpr(self.jaxpr, self.consts, *primals,
                             *[t for t, s in zip(tangents, saved_zeros) if not s])
    return pe.trace_to_closed_jaxpr(
        with_zeros, [*self.arg_avals, *[a for a, z in zip(tangent_avals, zeros) if not z]])


class SavedFwdRule(_SavedRule):
  """`fwd_jaxpr_thunk`: the forward rule's jaxpr, outputs then residuals."""

  __slots__ = ()

  def __call__(self) -> tuple[ClosedJaxpr, int]:
    return self, len(self.out_avals_of_call)


class SavedBwdRule(_SavedRule):
  """`bwd`: the backward rule's jaxpr, from the residuals and the cotangents of the
  differentiable outputs to the cotangents of the differentiable arguments."""

  __slots__ = ()

  def __call__(self, residuals: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
    given = [ad.instantiate_zeros(ct) for ct, d in
             zip(cts, _differentiable(self.out_avals_of_call)) if d]
    outs = iter(core.eval_jaxpr(self.jaxpr, self.consts, *residuals, *given))
    return [next(outs) if d else ad.Zero(a.to_tangent_aval())
            for a, d in zip(self.arg_avals, _differentiable(self.arg_avals))]


class UnsavedRuleError(ValueError):
  """A custom derivative rule was needed that the program's text did not carry."""


class UnsavedRule:
  """The rule of a custom derivative read back from text that does not carry it (plain
  `str(jaxpr)`): it prints as its name, and says so when differentiation needs it."""

  def __init__(self, name: str):
    self.name = name

  def __call__(self, *args: Any) -> Any:
    raise UnsavedRuleError(f"the custom derivative rule {self.name} of this jaxpr was read back "
                     "from text that does not carry it: save programs with `jaxon.export` "
                     "(or `jaxpr_parser.jaxpr_to_text`) to keep their rules, which are saved "
                     f"for derivatives up to order {SAVED_RULE_DEPTH}")

  def __str__(self) -> str:
    return self.name


def complete_saved_rules(params: dict) -> dict:
  """Gives a custom call's saved rules, read back from text, the avals of the call's
  arguments and outputs (which say which tangents the saved jaxprs leave out)."""
  call_jaxpr = params["call_jaxpr"]
  arg_avals = call_jaxpr.in_avals[params.get("num_consts", 0):]
  for value in params.values():
    if isinstance(value, _SavedRule):
      value.bind_avals(arg_avals, call_jaxpr.out_avals)
  return params


# A rule often calls its own function (`f.defjvp(lambda p, t: (f(p[0]), ...))`), so the
# saved rule holds a call with a rule of its own, and so on: rules are saved this many levels
# deep, which keeps derivatives of that many orders custom. Deeper calls keep their
# function and print their rules by name; differentiating them raises (`UnsavedRule`).
SAVED_RULE_DEPTH = 4


def save_rules(closed: ClosedJaxpr, depth: int = 0) -> ClosedJaxpr:
  """`closed` with the rules of its custom_jvp/custom_vjp calls (nested ones included, to
  `SAVED_RULE_DEPTH` levels of rules within rules) traced to saved jaxprs."""
  return ClosedJaxpr(_save_rules_in(closed.jaxpr, depth), closed.consts)


def _save_rules_in(jaxpr: core.Jaxpr, depth: int) -> core.Jaxpr:
  eqns = []
  for eqn in jaxpr.eqns:
    params = {k: _save_rules_in_param(v, depth) for k, v in eqn.params.items()}
    if eqn.primitive in (custom_jvp_call_p, custom_vjp_call_p) and depth < SAVED_RULE_DEPTH:
      params = _saved_rule_params(eqn.primitive, params, depth + 1)
    eqns.append(eqn.replace(params=params))
  return core.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def _save_rules_in_param(value: Any, depth: int) -> Any:
  if isinstance(value, _SavedRule):
    return value
  if isinstance(value, ClosedJaxpr):
    return save_rules(value, depth)
  if isinstance(value, core.Jaxpr):
    return _save_rules_in(value, depth)
  if type(value) is tuple and any(isinstance(v, (ClosedJaxpr, core.Jaxpr)) for v in value):
    return tuple(_save_rules_in_param(v, depth) for v in value)
  return value


def _saved_rule_params(primitive: core.Primitive, params: dict, depth: int) -> dict:
  """`params` with the rules saved; a rule that needs a rule its program was read back
  without (a program loaded from text, saved again after a derivative: the VJP of a loaded
  program) is left unsaved, so the saved orders of derivatives go down by one."""
  try:
    return _save_rule_params(primitive, dict(params), depth)
  except UnsavedRuleError:
    if primitive is custom_jvp_call_p:
      return dict(params, jvp_jaxpr_fun=UnsavedRule("the JVP rule"))
    return dict(params, fwd_jaxpr_thunk=UnsavedRule("the forward rule"),
                bwd=UnsavedRule(str(params["bwd"])))


def _save_rule_params(primitive: core.Primitive, params: dict, depth: int) -> dict:
  call_jaxpr = params["call_jaxpr"]
  arg_avals = call_jaxpr.in_avals[params["num_consts"]:]
  out_avals = call_jaxpr.out_avals
  if primitive is custom_jvp_call_p:
    if not isinstance(params["jvp_jaxpr_fun"], _SavedRule):
      zeros = tuple(not d for d in _differentiable(arg_avals))
      rule = save_rules(params["jvp_jaxpr_fun"](zeros), depth)
      params["jvp_jaxpr_fun"] = SavedJVPRule(rule).bind_avals(arg_avals, out_avals)
    return params
  if not isinstance(params["fwd_jaxpr_thunk"], _SavedRule):
    fwd, num_outs = params["fwd_jaxpr_thunk"]()
    res_avals = fwd.out_avals[num_outs:]
    bwd = params["bwd"]
    out_differentiable = _differentiable(out_avals)

    def dense_bwd(*xs: Any) -> list[Any]:
      residuals, given = xs[:len(res_avals)], iter(xs[len(res_avals):])
      cts = [next(given) if d else ad.zeros_like_aval(a.to_tangent_aval())
             for a, d in zip(out_avals, out_differentiable)]
      return [ad.instantiate_zeros(ct) for ct, d in
              zip(bwd(residuals, cts), _differentiable(arg_avals)) if d]
    ct_avals = [a.to_tangent_aval() for a, d in zip(out_avals, out_differentiable) if d]
    bwd_jaxpr = pe.trace_to_closed_jaxpr(dense_bwd, [*res_avals, *ct_avals])
    params["fwd_jaxpr_thunk"] = SavedFwdRule(save_rules(fwd, depth)).bind_avals(
        arg_avals, out_avals)
    params["bwd"] = SavedBwdRule(save_rules(bwd_jaxpr, depth)).bind_avals(arg_avals,
                                                                         out_avals)
  return params


# ----------------------------------------------------------------------------- built on them


def custom_gradient(fun: Callable) -> Callable:
  """`fun(*args) -> (out, vjp)` where `vjp(out_cotangent)` returns the input cotangents:
  a custom VJP written as one function.

  Example:
    >>> @custom_gradient
    ... def f(x):
    ...   return x ** 2, lambda g: (g * x,)
  """
  @custom_vjp
  def wrapped(*args: Any, **kwargs: Any) -> Any:
    out, _ = fun(*args, **kwargs)
    return out

  def fwd(*args: Any, **kwargs: Any) -> tuple[Any, _TracedRule]:
    out, rule = fun(*args, **kwargs)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    in_trees: list[tree_util.PyTreeDef] = []

    def flat_rule(*cts: Any) -> list[Any]:
      leaves, tree = tree_util.tree_flatten(rule(out_tree.unflatten(cts)))
      in_trees.append(tree)
      return leaves
    jaxpr, consts = pe.trace_to_jaxpr(
        flat_rule, [core.get_aval(x).to_tangent_aval() for x in out_leaves])
    return out, _TracedRule(jaxpr, in_trees[0], consts)

  def bwd(res: _TracedRule, ct: Any) -> Any:
    cts_in = core.eval_jaxpr(res.jaxpr, res.consts, *tree_util.tree_leaves(ct))
    cts_in = res.in_tree.unflatten(cts_in)
    return cts_in if isinstance(cts_in, tuple) else (cts_in,)
  wrapped.defvjp(fwd, bwd)
  return wrapped


class _TracedRule:
  """A `custom_gradient` rule traced to a jaxpr: a residual whose leaves are the values
  the rule closes over."""

  def __init__(self, jaxpr: core.Jaxpr, in_tree: tree_util.PyTreeDef, consts: list[Any]):
    self.jaxpr, self.in_tree, self.consts = jaxpr, in_tree, consts


tree_util.register_pytree_node(
    _TracedRule, lambda r: (r.consts, (r.jaxpr, r.in_tree)),
    lambda aux, consts: _TracedRule(aux[0], aux[1], list(consts)))


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list[Any]]:
  """`(converted, consts)`: `converted(*args, *consts)` computes `fun(*args)` with the
  traced floating-point values `fun` closes over passed explicitly, so a custom rule can
  differentiate with respect to them (a `custom_vjp` must not close over them).

  Example:
    >>> f, consts = closure_convert(lambda x: x * w, x0)   # w traced: consts == [w]
  """
  flat, in_tree = tree_util.tree_flatten(example_args)
  out_trees: list[tree_util.PyTreeDef] = []

  def flat_fun(*xs: Any) -> list[Any]:
    leaves, tree = tree_util.tree_flatten(fun(*in_tree.unflatten(xs)))
    out_trees.append(tree)
    return leaves
  jaxpr, consts = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat])
  hoist = [isinstance(c, core.Tracer) and dtypes.is_inexact(c.aval.dtype) for c in consts]
  kept = [c for c, h in zip(consts, hoist) if not h]
  hoisted = [c for c, h in zip(consts, hoist) if h]
  num_args = len(flat)

  def converted(*args: Any) -> Any:
    xs, hoisted_vals = args[:len(args) - len(hoisted)], args[len(args) - len(hoisted):]
    leaves = tree_util.tree_leaves(xs)
    if len(leaves) != num_args:
      raise TypeError(f"closure_convert: the converted function takes {num_args} array "
                      f"arguments and then the consts, got {len(leaves)}")
    vals, it_kept, it_hoisted = [], iter(kept), iter(hoisted_vals)
    for h in hoist:
      vals.append(next(it_hoisted) if h else next(it_kept))
    return out_trees[0].unflatten(core.eval_jaxpr(jaxpr, vals, *leaves))
  return converted, hoisted
