"""Reading jaxprs back from their text: `jaxpr_from_text(str(jaxpr), consts)` gives a jaxpr
that prints the same and computes the same, so a program saved as text can be loaded and
run, differentiated and batched again (issue 13).

The text is the printer's (`core.pp_jaxpr`); what it leaves out comes from elsewhere:

- The values of constvars: `consts`, in the order their binders appear in the text (the
  outer jaxpr's first, then those of nested closed jaxprs, such as a `pjit` that closes
  over an array, as they appear). `jaxpr_to_text` gives a jaxpr's text with its consts in
  that order.
- Weak types: the text shows none (nor does JAX's). Constvars take the weak type of their
  values; invars (of nested jaxprs too) and literals are strong; each equation's outputs
  take the weak type its primitive's abstract evaluation gives. So a value that was weak
  only because a Python scalar flowed into it (a `while_loop` counter started at `0`) reads
  back strong: it computes the same, but promotes as a strong value would.
- The dtype of a literal printed bare (`mul b 3.0`) is read from the equation around it
  (`core.literal_dtype_in_context`); the printer adds the type (`3:i8[]`) where that reading
  would be wrong.
- Params the printer leaves out get their values back: `dot_general`'s params that are
  None, and the PRNG bit layout of `random_split`/`random_bits`, which is read from the
  `jax_threefry_partitionable` flag as JAX reads it when it lowers.

Params print as `str(value)`; reading them back is mostly driven by the text (a tuple, a
list, a number, `None`, an enum member `Precision.HIGHEST`, a dtype name, a named tuple
`GatherDimensionNumbers(...)`, a jaxpr), with a small table (`PARAM_READERS`) for params
whose text does not say their type. Primitives whose params are Python callables (custom
derivative rules, host callbacks) cannot be read back: they are refused with an error that
names them, which `jaxpr_to_text` raises when a program is saved. Parse errors are
ValueErrors that give the line and column and what was expected there.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src import jaxpr_parser_sharding  # noqa: F401  (fills the readers' tables)
from jaxon._src.core import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from jaxon._src.export import shape_poly
from jaxon._src.jaxpr_lexer import Lexer, Token, describe, dtype_from_short_name, literal_kind
from jaxon._src.jaxpr_param_readers import (
    AXIS_BINDING_PARAMS, HIDDEN_PARAMS, PARAM_COMPLETIONS, PARAM_READERS,
    UNREADABLE_PRIMITIVES, Braces, Call, Dims, Pair, ParsedJaxpr, Unreadable, Word,
    current_dims, read_value)
from jaxon._src.lax import custom_derivatives as cd
from jaxon._src.state.types import AbstractRef, indexed_shape

# ----------------------------------------------------------------------------- primitives

_primitives_by_name: dict[str, core.Primitive] = {}


def _primitive(name: str) -> core.Primitive | None:
  """The primitive named `name`: every primitive jaxon defines is a module attribute of a
  jaxon module; modules imported since the last look are looked through on a miss. Other
  primitives (a user's `core.Primitive("multiply_add")`) are found while they live."""
  if name not in _primitives_by_name:
    for module_name, module in list(sys.modules.items()):
      if module_name.startswith("jaxon.") and module is not None:
        for value in list(vars(module).values()):
          if isinstance(value, core.Primitive):
            _primitives_by_name.setdefault(value.name, value)
  return _primitives_by_name.get(name) or core.primitives_by_name.get(name)


# ----------------------------------------------------------------------------- the parser


class _Parser:
  """Recursive descent over the printed grammar:

      jaxpr    := '{' 'lambda' binder* ';' binder* '.' 'let' (eqn ';'?)* 'in' outs '}'
      binder   := NAME ':' TYPE                      TYPE := DTYPE '[' (INT ','?)* ']'
      eqn      := (binder+ '=')? PRIM ('[' (NAME '=' value)* ']')? atom*
      atom     := NAME | LITERAL (':' TYPE)?         outs := '(' (atom ','?)* ')'
      value    := jaxpr | '(' (value ','?)* ')' | '[' (value ','?)* ']'
                | WORD '(' ((NAME '=')? value ','?)* ')' | WORD

  Each jaxpr is a scope of its own (jaxprs are closed), so nested jaxprs may reuse the outer
  names, as `pjit`'s printing does. `consts` is None when reading only the structure
  (`jaxpr_to_text`): constvars then get None values."""

  def __init__(self, text: str, consts: Sequence[Any] | None, dims: Dims | None = None):
    self.lex = Lexer(text)
    self.dims = dims if dims is not None else Dims(None)
    self.consts = None if consts is None else iter(consts)
    self.n_consts_taken = 0
    self.jaxprs_in_text_order: list[Jaxpr | None] = []  # as their constvars appear

  def parse(self) -> ClosedJaxpr:
    token = current_dims.set(self.dims)
    try:
      parsed = self.jaxpr()
    finally:
      current_dims.reset(token)
    token = self.lex.peek()
    if token.kind != "end":
      raise self.lex.error(f"expected the end of the text, found {describe(token)}",
                           token.pos)
    return ClosedJaxpr(parsed.jaxpr, parsed.consts)

  def jaxpr(self) -> ParsedJaxpr:
    self.lex.expect("{", "'{' (a jaxpr)")
    lambda_token = self.lex.next()
    if lambda_token.text != "lambda":
      raise self.lex.error(f"expected 'lambda', found {describe(lambda_token)}",
                           lambda_token.pos)
    scope: dict[str, Var] = {}
    constvars = self.binders(scope, ";")
    self.lex.expect(";", "';' after the constvars")
    consts = self.take_consts(constvars)
    text_order = len(self.jaxprs_in_text_order)
    self.jaxprs_in_text_order.append(None)  # this jaxpr's place, known once it is read
    invars = self.binders(scope, ".")
    self.lex.expect(".", "'.' after the invars")
    let = self.lex.next()
    if let.text != "let":
      raise self.lex.error(f"expected 'let', found {describe(let)}", let.pos)
    eqns = []
    while not (self.lex.peek().text == "in" and self.lex.peek(1).text == "("):
      if self.lex.peek().text == ";":
        self.lex.next()
      else:
        eqns.append(self.eqn(scope))
    self.lex.next()
    outvars = self.outs(scope)
    self.lex.expect("}", "'}' closing the jaxpr")
    jaxpr = self.jaxprs_in_text_order[text_order] = Jaxpr(constvars, invars, outvars, eqns)
    return ParsedJaxpr(jaxpr, consts)

  def binders(self, scope: dict[str, Var], end: str) -> list[Var]:
    binders = []
    while self.lex.peek().text != end and self.lex.peek().kind == "word":
      binders.append(self.binder(scope))
    return binders

  def binder(self, scope: dict[str, Var]) -> Var:
    name = self.lex.expect_word("a variable name")
    self.lex.expect(":", f"':' and the type of {name.text}")
    aval = self.type()
    if name.text == "_":
      return DropVar(aval)
    if name.text in scope:
      raise self.lex.error(f"variable {name.text} is bound twice", name.pos)
    var = scope[name.text] = Var(aval)
    return var

  def type(self) -> ShapedArray:
    if self.lex.peek().text == "Ref" and self.lex.peek(1).text == "{":  # a mutable ref
      self.lex.next()
      self.lex.next()
      inner = self.type()
      self.lex.expect("}", "'}' closing the Ref type")
      return AbstractRef(inner)
    token = self.lex.expect_word("a type such as f32[2,3]")
    dtype = dtype_from_short_name(token.text)
    if dtype is None:
      raise self.lex.error(f"unknown dtype {token.text!r}", token.pos)
    self.lex.expect("[", "'[' and the shape")
    shape = []
    while self.lex.peek().text != "]":
      shape.append(self.dimension())
      if self.lex.peek().text == ",":
        self.lex.next()
    self.lex.next()
    return ShapedArray(shape, dtype)

  def dimension(self) -> Any:
    """An int, or a symbolic dimension's text (`2*b`, `b + 1`, `floordiv(b, 2)`)."""
    first = self.lex.peek()
    parts, depth = [], 0
    while True:
      token = self.lex.peek()
      if token.kind == "end" or (depth == 0 and token.text in (",", "]")):
        break
      depth += (token.text == "(") - (token.text == ")")
      parts.append(self.lex.next().text)
    if not parts:
      raise self.lex.error(f"expected a dimension, found {describe(first)}", first.pos)
    text = " ".join(parts)
    if text.isdigit():
      return int(text)
    try:
      return self.dims.read(text, in_type=True)
    except (ValueError, KeyError, shape_poly.InconclusiveDimensionOperation) as e:
      raise self.lex.error(f"bad dimension {text!r}: {e}", first.pos) from None

  def take_consts(self, constvars: list[Var]) -> list[Any]:
    if self.consts is None:
      return [None] * len(constvars)
    values = []
    for var in constvars:
      value = next(self.consts, _MISSING)
      if value is _MISSING:
        raise ValueError(f"jaxpr_from_text: the text has more constvars than the "
                         f"{self.n_consts_taken} consts given")
      aval = core.get_aval(value)
      if (aval.shape, aval.dtype) != (var.aval.shape, var.aval.dtype):
        raise ValueError(f"jaxpr_from_text: const {self.n_consts_taken} is "
                         f"{aval.str_short()} but its constvar is {var.aval.str_short()}")
      var.aval = var.aval.update(weak_type=dtypes.is_weakly_typed(value))
      values.append(value)
      self.n_consts_taken += 1
    return values

  def eqn(self, scope: dict[str, Var]) -> JaxprEqn:
    outvars = []
    if self.lex.peek(1).text == ":":
      while self.lex.peek().text not in ("=", "<-", ","):
        outvars.append(self.binder(scope))
      if self.lex.peek().text != "=":
        return self.ref_eqn(scope, outvars)
      self.lex.next()
    elif self.lex.peek(1).text == "[" and type(getattr(
        scope.get(self.lex.peek().text), "aval", None)) is AbstractRef:
      return self.ref_eqn(scope, outvars)
    name = self.lex.expect_word("an equation")
    if name.text in UNREADABLE_PRIMITIVES:
      raise self.lex.error(f"`{name.text}` cannot be read back from a jaxpr's text: "
                           f"{UNREADABLE_PRIMITIVES[name.text]}", name.pos)
    primitive = _primitive(name.text)
    if primitive is None:
      raise self.lex.error(f"{name.text!r} is not a primitive, a variable or a literal",
                           name.pos)
    params = self.params(name.text) if self.lex.peek().text == "[" else {}
    for key, make in HIDDEN_PARAMS.get(name.text, {}).items():
      params.setdefault(key, make())
    if name.text in PARAM_COMPLETIONS:
      params = PARAM_COMPLETIONS[name.text](params)
    invars = self.operands(scope, outvars)
    eqn = JaxprEqn(invars, outvars, primitive, params)
    self.check_types(eqn, name)
    return eqn

  def ref_eqn(self, scope: dict[str, Var], outvars: list[Var]) -> JaxprEqn:
    """A ref's read `x <- r[i]`, write `r[i] <- v` (`x, r[i] <- r[i], v` when the old
    value is used) or accumulation `r[i] += v` (JAX's forms)."""
    start = self.lex.peek()
    if start.text == "<-":  # a read
      self.lex.next()
      ref, indexer, idx = self.ref_index(scope)
      return JaxprEqn([ref, *idx], outvars, _primitive("get"), {"indexer": indexer})
    if start.text == ",":
      self.lex.next()
    ref, indexer, idx = self.ref_index(scope)
    name = "swap"
    if self.lex.peek().text == "+" and self.lex.peek(1).text == "=":
      self.lex.next()
      self.lex.next()
      name = "addupdate"
    else:
      self.lex.expect("<-", "'<-' or '+=' after a ref's index")
      if outvars:
        self.ref_index(scope)
        self.lex.expect(",", "',' before the written value")
      else:
        outvars = [DropVar(ShapedArray(indexed_shape(indexer, ref.aval.shape),
                                       ref.aval.dtype))]
    value = self.operands(scope, [ref, *outvars])
    if len(value) != 1:
      raise self.lex.error("expected one value written to the ref", start.pos)
    eqn = JaxprEqn([ref, *idx, *value], outvars, _primitive(name), {"indexer": indexer})
    self.check_types(eqn, start)
    return eqn

  def ref_index(self, scope: dict[str, Var]) -> tuple[Var, tuple, list[core.Atom]]:
    """`r[...]`, `r[1:3,i]`, `r[d:d+2,:]`: the ref, its indexer and the index operands."""
    token = self.lex.expect_word("a ref")
    ref = scope.get(token.text)
    if ref is None or type(ref.aval) is not AbstractRef:
      raise self.lex.error(f"{token.text} is not a ref", token.pos)
    self.lex.expect("[", "'[' and the ref's index")
    entries: list[list[str]] = [[]]
    while self.lex.peek().text != "]":
      text = self.lex.next().text
      if text == ",":
        entries.append([])
      else:
        entries[-1].append(text)
    self.lex.next()
    if entries == [["..."]]:
      return ref, (), []
    indexer, idx = [], []
    for parts, n in zip(entries, ref.aval.shape):
      if ":" not in parts:
        indexer.append(("int",))
        text = parts[0]
        idx.append(scope[text] if text in scope else
                   self.literal(text, token.pos, None, [np.dtype(np.int32)]))
      elif parts[0] in scope:  # `d:d+size[:stride]`
        indexer.append(("dslice", int(parts[2].rpartition("+")[2]),
                        int(parts[4]) if len(parts) > 4 else 1))
        idx.append(scope[parts[0]])
      else:
        bounds = " ".join(parts).split(":")
        start, stop, stride = slice(*[int(b) if b.strip() else None for b in bounds]
                                    ).indices(n)
        indexer.append(("slice", start, max(0, -(-(stop - start) // stride)), stride))
    return ref, tuple(indexer), idx

  def params(self, primitive: str) -> dict[str, Any]:
    self.lex.expect("[")
    params = {}
    with core.extend_axis_env(self.axes_bound_by_params(primitive)):
      while self.lex.peek().text != "]":
        key = self.lex.expect_word("a param name or ']'")
        self.lex.expect("=", f"'=' after {key.text}")
        value_pos = self.lex.peek().pos
        node = self.value()
        reader = (PARAM_READERS.get((primitive, key.text))
                  or PARAM_READERS.get((None, key.text)) or read_value)
        try:
          params[key.text] = reader(node)
        except (Unreadable, TypeError, ValueError) as e:
          raise self.lex.error(f"param {key.text} of `{primitive}`: {e}", value_pos) from None
    self.lex.next()
    return params

  def axes_bound_by_params(self, primitive: str) -> Sequence[tuple[Any, int]]:
    """The axes one param binds for the others (shard_map's `mesh`, for the collectives
    of its body), read ahead of its turn: params print in name order."""
    binder = AXIS_BINDING_PARAMS.get(primitive)
    if binder is None:
      return ()
    name, axes_of = binder
    depth, k = 0, 0
    while True:
      token = self.lex.peek(k)
      if token.kind == "end" or (depth == 0 and token.text == "]"):
        return ()
      if depth == 0 and token.text == name and self.lex.peek(k + 1).text == "=":
        break
      if token.kind == "punct":
        depth += (token.text in "([{") - (token.text in ")]}")
      k += 1
    ahead = _Parser(self.lex.text[self.lex.peek(k + 2).pos:], None, self.dims)
    try:
      return axes_of(read_value(ahead.value()))
    except Unreadable as e:
      raise self.lex.error(f"param {name} of `{primitive}`: {e}", token.pos) from None

  def value(self) -> Any:
    token = self.lex.peek()
    if token.text == "{" and token.kind == "punct":
      if self.lex.peek(1).text == "lambda":
        return self.jaxpr()
      return Braces(tuple(node for _, node in self.sequence("{", "}")))
    if token.kind == "word" and self.lex.peek(1).text == "(":
      self.lex.next()
      args, kwargs = [], {}
      for key, node in self.sequence("(", ")", keywords=True):
        if key is None:
          args.append(node)
        else:
          kwargs[key] = node
      return Call(token.text, tuple(args), kwargs)
    if token.text in ("(", "["):
      items = [node for _, node in self.sequence(token.text, ")]"[token.text == "["])]
      return tuple(items) if token.text == "(" else items
    words = [self.lex.expect_word("a param value").text]
    while (self.lex.peek().text in ("+", "-") and self.lex.peek(1).kind == "word"
           and self.lex.peek(2).text != "="):  # a symbolic dimension, `b + 1`
      words += [self.lex.next().text, self.lex.next().text]
    return Word(" ".join(words))

  def sequence(self, open_: str, close: str, keywords: bool = False
               ) -> Iterator[tuple[str | None, Any]]:
    """The items of `(a, b)`, `[a, b]`, `Name(k=a, b)`: (keyword or None, value) pairs.
    Commas are optional, as a tuple of jaxprs prints one jaxpr a line without them."""
    self.lex.expect(open_)
    while self.lex.peek().text != close:
      key = None
      if keywords and self.lex.peek(1).text == "=":
        key = self.lex.next().text
        self.lex.next()
      node = self.value()
      if self.lex.peek().text == ":":
        self.lex.next()
        node = Pair(node, self.value())
      yield key, node
      if self.lex.peek().text == ",":
        self.lex.next()
      elif self.lex.peek().kind == "end":
        raise self.lex.error(f"expected {close!r}, found the end of the text",
                             self.lex.peek().pos)
    self.lex.next()

  def operands(self, scope: dict[str, Var], outvars: list[Var]) -> list[core.Atom]:
    """The atoms after the primitive: names bound in scope and literals, up to the next
    equation (a binder `x:`, or a primitive without outputs) or `in (`. Literals printed
    bare take their dtype from the equation's other operands and outputs."""
    atoms: list[Any] = []
    while True:
      token = self.lex.peek()
      following = self.lex.peek(1).text
      if token.kind == "punct" and token.text == "(":
        atoms.append(self.complex_literal())
      elif token.kind != "word" or (token.text == "in" and following == "("):
        break
      elif token.text in scope and following not in (":", "["):
        atoms.append(scope[self.lex.next().text])
      elif literal_kind(token.text) is not None and following != "[":
        atoms.append(self.literal_text())
      elif following in (":", "[") or _primitive(token.text) is not None:
        break  # the next equation
      else:
        raise self.lex.error(f"variable {token.text} is not bound", token.pos)
    context = [a.aval.dtype for a in (*atoms, *outvars) if isinstance(a, Var)]
    return [self.literal(*a, context) if type(a) is tuple else a for a in atoms]

  def outs(self, scope: dict[str, Var]) -> list[core.Atom]:
    self.lex.expect("(", "'(' and the outputs")
    atoms = []
    while self.lex.peek().text != ")":
      token = self.lex.peek()
      if token.kind == "punct" and token.text == "(":
        atoms.append(self.literal(*self.complex_literal(), ()))
      elif token.text in scope:
        atoms.append(scope[self.lex.next().text])
      elif token.kind == "word" and literal_kind(token.text) is not None:
        atoms.append(self.literal(*self.literal_text(), ()))
      else:
        raise self.lex.error(f"expected an output variable or literal, found "
                             f"{describe(token)}", token.pos)
      if self.lex.peek().text == ",":
        self.lex.next()
    self.lex.next()
    return atoms

  def literal_text(self) -> tuple[str, int, ShapedArray | None]:
    token = self.lex.next()
    return token.text, token.pos, self.literal_type()

  def complex_literal(self) -> tuple[str, int, ShapedArray | None]:
    """`(1+2j)`: Python's text of a complex number with a real part; or `(b'',)`, the
    text of a float0 zero (a tangent of an integer value)."""
    start = self.lex.next().pos
    body = self.lex.expect_word("a complex number")
    if body.text == "b''" and self.lex.peek().text == ",":
      self.lex.next()
      self.lex.expect(")")
      return _FLOAT0_TEXT, start, self.literal_type()
    if literal_kind(body.text) != "c":
      raise self.lex.error(f"expected a complex number, found {body.text!r}", body.pos)
    self.lex.expect(")")
    return f"({body.text})", start, self.literal_type()

  def literal_type(self) -> ShapedArray | None:
    if self.lex.peek().text != ":":
      return None
    self.lex.next()
    return self.type()

  def literal(self, text: str, pos: int, aval: ShapedArray | None,
              context: Sequence[Any]) -> Literal:
    if text == _FLOAT0_TEXT:
      if aval is None or aval.shape or aval.dtype != dtypes.float0:
        raise self.lex.error(f"literal {text} is a float0 scalar and must be typed "
                             f"float0[]", pos)
      return Literal(np.zeros((), dtypes.float0)[()], ShapedArray((), dtypes.float0))
    kind = literal_kind(text.strip("()"))
    dtype = core.literal_dtype_in_context(kind, context) if aval is None else aval.dtype
    if aval is not None and aval.shape:
      raise self.lex.error(f"a literal is a scalar, not {aval.str_short()}", pos)
    if core.literal_kind(dtype) != kind:
      raise self.lex.error(f"literal {text} cannot have dtype {dtype}", pos)
    value = text == "True" if kind == "b" else complex(text) if kind == "c" else (
        int(text) if kind == "i" else float(text))
    if kind == "i" and not dtypes.iinfo(dtype).min <= value <= dtypes.iinfo(dtype).max:
      raise self.lex.error(f"literal {text} does not fit {dtype}", pos)
    return Literal(np.asarray(value).astype(dtype)[()], ShapedArray((), dtype))

  def check_types(self, eqn: JaxprEqn, name: Token) -> None:
    """The equation's output types are its primitive's abstract evaluation of its operands
    (which also gives their weak types, which the text does not show)."""
    try:
      out = eqn.primitive.abstract_eval(*[a.aval for a in eqn.invars], **eqn.params)
    except Exception as e:  # noqa: BLE001  (any rule's complaint is the text's fault)
      raise self.lex.error(f"`{name.text}` rejects these operands or params: "
                           f"{type(e).__name__}: {e}", name.pos) from None
    out_avals = list(out) if eqn.primitive.multiple_results else [out]
    printed = [v.aval for v in eqn.outvars]
    if [(a.shape, a.dtype) for a in out_avals] != [(a.shape, a.dtype) for a in printed]:
      raise self.lex.error(
          f"`{name.text}` gives {' '.join(a.str_short() for a in out_avals) or 'nothing'} "
          f"but the text binds {' '.join(a.str_short() for a in printed) or 'nothing'}",
          name.pos)
    for var, aval in zip(eqn.outvars, out_avals):
      var.aval = aval


_MISSING = object()
_FLOAT0_TEXT = "(b'',)"  # how NumPy prints a float0 scalar


# ----------------------------------------------------------------------------- API


def jaxpr_from_text(text: str, consts: Sequence[Any] = (),
                    axis_env: Sequence[tuple[Any, int]] | None = None) -> ClosedJaxpr:
  """The closed jaxpr `text` prints, with `consts` the values of its constvars in the order
  their binders appear in the text (`jaxpr_to_text` gives both). `axis_env`, as for
  `make_jaxpr`, binds the axis names that collectives in the text use without binding
  them (`psum[axes=('i',)]` outside a `shard_map`).

  `jaxpr_from_text(str(j), j.consts)` rebuilds `j` (up to weak types, see the module
  docstring) when no nested jaxpr closes over values, and `str` of the result is `str(j)`.
  The result runs with `jaxpr_as_fun` and transforms like any jaxpr.

  Raises:
    TypeError: `text` is not a string.
    ValueError: the text is malformed (with its line and column), names a primitive whose
      params cannot be read back (custom derivative rules, host callbacks), does not
      type-check, or has more or fewer constvars than `consts` has values.
  """
  with core.extend_axis_env(axis_env or ()):
    return read_jaxpr_text(text, consts)


def read_jaxpr_text(text: str, consts: Sequence[Any] = (),
                    scope: shape_poly.SymbolicScope | None = None,
                    dim_values: dict[str, Any] | None = None) -> ClosedJaxpr:
  """`jaxpr_from_text` with the text's symbolic dimensions read in `scope` (a new one by
  default) and, given `dim_values` (a value for each dimension variable), evaluated: a
  shape-polymorphic program then reads back with the shapes of one call."""
  if not isinstance(text, str):
    raise TypeError(f"jaxpr_from_text takes the text of a jaxpr (str(jaxpr)), got "
                    f"{type(text).__name__}")
  parser = _Parser(text, consts, Dims(scope, dim_values))
  closed = parser.parse()
  if parser.n_consts_taken != len(consts):
    raise ValueError(f"jaxpr_from_text: {len(consts)} consts given for the "
                     f"{parser.n_consts_taken} constvars of the text")
  return closed


def value_from_text(text: str) -> Any:
  """A value as a param prints it (`NamedSharding(mesh=Mesh('x': 2), spec=P('x',), ...)`,
  `(1, 2)`): for data saved beside a jaxpr's text, such as an export's shardings. A mesh
  reads back over the first devices (see `jaxpr_parser_sharding`)."""
  parser = _Parser(text, None)
  try:
    value = read_value(parser.value())
  except Unreadable as e:
    raise ValueError(f"cannot read back {text!r}: {e}") from None
  token = parser.lex.peek()
  if token.kind != "end":
    raise parser.lex.error(f"expected the end of the text, found {describe(token)}",
                           token.pos)
  return value


def jaxpr_structure_from_text(text: str, axis_env: Sequence[tuple[Any, int]] | None = None
                              ) -> ClosedJaxpr:
  """The jaxpr `text` prints, with None for the values of its constvars: checks that a
  printed jaxpr reads back (it prints the same), when the values are not at hand."""
  with core.extend_axis_env(axis_env or ()):
    return _Parser(text, None).parse()


def jaxpr_to_text(jaxpr: ClosedJaxpr) -> tuple[str, list[Any]]:
  """`jaxpr`'s text and the values of its constvars in the order `jaxpr_from_text` takes
  them (nested closed jaxprs included). Reads the text back first, so that a jaxpr that
  cannot be read back (a custom derivative rule, a host callback) says so now, when a
  program is saved, rather than when it is loaded."""
  jaxpr = cd.save_rules(jaxpr)
  text = str(jaxpr)
  parser = _Parser(text, None)
  parsed = parser.parse()
  originals: dict[int, ClosedJaxpr] = {}
  _match_closed_jaxprs(jaxpr, parsed, originals)
  consts = [c for j in parser.jaxprs_in_text_order if id(j) in originals
            for c in originals[id(j)].consts]
  return text, consts


def _match_closed_jaxprs(original: Any, parsed: Any, out: dict[int, ClosedJaxpr]) -> None:
  """Pairs the closed jaxprs of `parsed` (by id of their jaxpr) with those of `original`,
  which has the same structure."""
  if isinstance(original, ClosedJaxpr):
    out[id(parsed.jaxpr)] = original
    _match_closed_jaxprs(original.jaxpr, parsed.jaxpr, out)
  elif isinstance(original, Jaxpr):
    for eqn, parsed_eqn in zip(original.eqns, parsed.eqns):
      for key in eqn.params.keys() & parsed_eqn.params.keys():
        _match_closed_jaxprs(eqn.params[key], parsed_eqn.params[key], out)
  elif isinstance(original, (tuple, list)):
    for o, p in zip(original, parsed):
      _match_closed_jaxprs(o, p, out)

