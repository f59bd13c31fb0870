"""How jaxprs print: JAX's text, with variables named `a`, `b`, … in order of first
mention, literals typed only where a reader could not tell their dtype, and per-primitive
rules (`pp_eqn_rules`) for the primitives that print themselves specially. Everything
jaxon prints is read back by `jaxpr_parser`."""
from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src import pretty_printer as pp
from jaxon._src.core import (
    Atom,
    ClosedJaxpr,
    DropVar,
    Jaxpr,
    JaxprEqn,
    Literal,
    Primitive,
    Var,
    _open,
)

def _alphabetic_name(n: int) -> str:
  s = ""
  while not s or n:
    n, i = divmod(n, 26)
    s = chr(97 + i) + s
  return s


class PrintContext:
  """Names variables `a`, `b`, … in the order a jaxpr's text first mentions them."""

  def __init__(self) -> None:
    self.names: dict[Var, str] = {}
    self._counter = itertools.count()

  def name(self, v: Var) -> str:
    if isinstance(v, DropVar):
      return "_"
    name = self.names.get(v)
    if name is None:
      name = self.names[v] = _alphabetic_name(next(self._counter))
    return name

  def atom(self, a: Atom, context_dtypes: Sequence[Any] = ()) -> str:
    return pp_literal(a, context_dtypes) if type(a) is Literal else self.name(a)


# A literal prints as its value alone, as seed 001's jaxprs show them, when a reader can tell
# its dtype: the first dtype of its kind among the equation's other operands and its
# outputs (`context_dtypes`), else the kind's default below. Any other literal also prints
# its type, as JAX 0.10.2 prints every literal (`3:i8[]`), so the text is never ambiguous.
_LITERAL_DEFAULT_DTYPES = {"b": np.dtype(bool), "i": np.dtype(np.int32),
                           "f": np.dtype(np.float32), "c": np.dtype(np.complex64)}


def literal_kind(dtype: Any) -> str | None:
  """The kind a scalar's text shows: `b` (True), `i` (2), `f` (2.0), `c` (2j); None for
  dtypes whose values have no literal text (extended dtypes, float0)."""
  if dtypes.is_extended(dtype) or dtype == dtypes.float0:
    return None
  if dtypes.is_bool(dtype):
    return "b"
  if dtypes.is_integer(dtype):
    return "i"
  return "c" if dtypes.is_complex(dtype) else "f" if dtypes.is_float(dtype) else None


def literal_dtype_in_context(kind: str, context_dtypes: Sequence[Any]) -> np.dtype:
  """The dtype of a literal of `kind` printed without one, among `context_dtypes`."""
  return next((d for d in context_dtypes if literal_kind(d) == kind),
              _LITERAL_DEFAULT_DTYPES[kind])


def pp_literal(literal: Literal, context_dtypes: Sequence[Any]) -> str:
  dtype = literal.aval.dtype
  kind = literal_kind(dtype)
  if kind is not None and literal_dtype_in_context(kind, context_dtypes) == dtype:
    return repr(literal)
  return f"{literal!r}:{literal.aval.str_short()}"


# Primitives that print themselves specially (pjit names its inner variables after the
# outer ones): rule(eqn, context) -> Doc.
pp_eqn_rules: dict[Primitive, Callable[[JaxprEqn, PrintContext], pp.Doc]] = {}


def pp_binders(vars_: Sequence[Var], context: PrintContext) -> pp.Doc:
  return pp.text(" ".join(f"{context.name(v)}:{v.aval.str_short()}" for v in vars_))


def pp_param(key: str, value: Any, context: PrintContext) -> pp.Doc:
  if isinstance(value, (Jaxpr, ClosedJaxpr)):
    body = pp_jaxpr(_open(value), context)
  elif type(value) is tuple and value and all(
      isinstance(j, (Jaxpr, ClosedJaxpr)) for j in value):
    body = pp.group(pp.nest(2, pp.concat([
        pp.text("("), pp.brk(""),
        pp.join(pp.brk(), [pp_jaxpr(_open(j), context) for j in value])]))
        + pp.brk("") + pp.text(")"))
  else:  # object addresses (a callback's function) vary from run to run: JAX masks them
    body = pp.text(_ADDRESS.sub(lambda m: " at 0x" + "X" * len(m.group(1)), str(value)))
  return pp.text(f"{key}=") + body


_ADDRESS = re.compile(r" at 0x([0-9a-fA-F]+)")



def pp_params(params: dict, context: PrintContext, order: Sequence[str] | None = None
              ) -> pp.Doc:
  if not params:
    return pp.nil()
  pairs = [pp_param(k, params[k], context) for k in (order or sorted(params))]
  return pp.group(pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pp.join(pp.brk(), pairs)]))
                  + pp.brk("") + pp.text("]"))


def pp_eqn(eqn: JaxprEqn, context: PrintContext) -> pp.Doc:
  rule = pp_eqn_rules.get(eqn.primitive)
  return rule(eqn, context) if rule is not None else pp_standard_eqn(eqn, context)


def pp_standard_eqn(eqn: JaxprEqn, context: PrintContext,
                    param_order: Sequence[str] | None = None) -> pp.Doc:
  """`outs = name[params] operands`: the binders are named before the params are printed;
  params print sorted by name unless `param_order` says otherwise."""
  lhs = pp_binders(eqn.outvars, context)
  eqn_dtypes = [a.aval.dtype for a in (*eqn.invars, *eqn.outvars) if type(a) is not Literal]
  rhs = [pp.text(eqn.primitive.name), pp_params(eqn.params, context, param_order),
         pp.text(" " + " ".join(context.atom(a, eqn_dtypes) for a in eqn.invars))]
  return pp.concat([lhs, pp.text(" = "), *rhs]) if eqn.outvars else pp.concat(rhs)


def pp_jaxpr(jaxpr: Jaxpr, context: PrintContext) -> pp.Doc:
  constvars = pp_binders(jaxpr.constvars, context)
  invars = pp_binders(jaxpr.invars, context)
  eqns = pp.join(pp.brk("; "), [pp_eqn(e, context) for e in jaxpr.eqns])
  outs = ", ".join(context.atom(a) for a in jaxpr.outvars)
  outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
  return pp.group(pp.nest(2, pp.concat([
      pp.text("{ lambda "), constvars, pp.text("; "), invars, pp.text(". let"),
      pp.nest(2, pp.brk() + eqns), pp.brk(), pp.text("in " + outs)])) + pp.text(" }"))
