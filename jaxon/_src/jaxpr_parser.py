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

import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import core, dtypes, prng_keys
from jaxon._src.config import config
from jaxon._src.core import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from jaxon._src.lax import convolution, fft, lax, slicing
from jaxon._src.lax.control_flow import remat, solves
from jaxon._src.lax.dot_general import Precision

# ----------------------------------------------------------------------------- tokens

_PUNCTUATION = frozenset("{}[](),;:=")


class _Token(NamedTuple):
  kind: str  # "word", "punct" or "end"
  text: str
  pos: int


class _Lexer:
  """Splits the text into punctuation and words. A word runs to whitespace or punctuation,
  except inside `<...>` (`<lambda>`, `key<fry>`, `<function f at 0xXX>`); a `.` ends a word
  only when whitespace follows (`f32[]. let` against `Precision.HIGH`, `0.5`)."""

  def __init__(self, text: str):
    self.text = text
    self._pos = 0
    self._ahead: list[_Token] = []

  def peek(self, k: int = 0) -> _Token:
    while len(self._ahead) <= k:
      self._ahead.append(self._scan())
    return self._ahead[k]

  def next(self) -> _Token:
    token = self.peek()
    self._ahead.pop(0)
    return token

  def expect(self, text: str, what: str | None = None) -> _Token:
    token = self.next()
    if token.text != text or token.kind == "end":
      raise self.error(f"expected {what or repr(text)}, found {_describe(token)}", token.pos)
    return token

  def expect_word(self, what: str) -> _Token:
    token = self.next()
    if token.kind != "word":
      raise self.error(f"expected {what}, found {_describe(token)}", token.pos)
    return token

  def error(self, message: str, pos: int) -> ValueError:
    line = self.text.count("\n", 0, pos) + 1
    start = self.text.rfind("\n", 0, pos) + 1
    end = self.text.find("\n", pos)
    source = self.text[start:end if end >= 0 else len(self.text)]
    return ValueError(f"jaxpr text, line {line}, column {pos - start + 1}: {message}\n"
                      f"  {source}\n  {' ' * (pos - start)}^")

  def _scan(self) -> _Token:
    text, n = self.text, len(self.text)
    i = self._pos
    while i < n and text[i].isspace():
      i += 1
    if i == n:
      self._pos = i
      return _Token("end", "", i)
    if text[i] in _PUNCTUATION or (text[i] == "." and _ends_word(text, i)):
      self._pos = i + 1
      return _Token("punct", text[i], i)
    start, depth = i, 0
    while i < n:
      ch = text[i]
      if ch == "<":
        depth += 1
      elif ch == ">" and depth:
        depth -= 1
      elif depth == 0 and (ch.isspace() or ch in _PUNCTUATION
                           or (ch == "." and _ends_word(text, i))):
        break
      i += 1
    if depth:
      raise self.error("unbalanced '<' in a word", start)
    self._pos = i
    return _Token("word", text[start:i], start)


def _ends_word(text: str, i: int) -> bool:
  return i + 1 == len(text) or text[i + 1].isspace()


def _describe(token: _Token) -> str:
  return "the end of the text" if token.kind == "end" else repr(token.text)


# ----------------------------------------------------------------------------- values
# A param's text parses to a tree of these (and tuples and lists of them); `_read_value`
# turns the tree into the param's Python value.


class _Word(NamedTuple):
  text: str


class _Call(NamedTuple):
  """`Name(a, key=b)`: a named tuple's (or another constructor's) text."""
  name: str
  args: tuple
  kwargs: dict


class _ParsedJaxpr(NamedTuple):
  jaxpr: Jaxpr
  consts: list[Any]


class _Unreadable(Exception):
  """A param value the reader cannot turn back into Python (its message says why)."""


_INT = re.compile(r"[+-]?\d+")
_UNSIGNED_FLOAT = r"(\d+(\.\d*)?([eE][+-]?\d+)?|inf|nan)"
_FLOAT = re.compile(rf"[+-]?{_UNSIGNED_FLOAT}")
_COMPLEX = re.compile(rf"[+-]?({_UNSIGNED_FLOAT}[+-])?{_UNSIGNED_FLOAT}j")  # 1j, -0-1j


def _literal_kind(text: str) -> str | None:
  """The kind of scalar `text` writes (see `core.literal_kind`), or None if it is no number."""
  if text in ("True", "False"):
    return "b"
  if _INT.fullmatch(text):
    return "i"
  if _FLOAT.fullmatch(text):
    return "f"
  return "c" if _COMPLEX.fullmatch(text) else None


# Dtypes by name (`float32`, as dtype params print) and by short name (`f32`, as types print).
_DTYPES_BY_NAME: dict[str, np.dtype] = {np.dtype(t).name: np.dtype(t) for t in (
    bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128, dtypes.bfloat16,
    dtypes.float8_e4m3fn, dtypes.float8_e5m2, dtypes.float8_e4m3b11fnuz, dtypes.float8_e4m3,
    dtypes.float8_e3m4, dtypes.float8_e4m3fnuz, dtypes.float8_e5m2fnuz,
    dtypes.float8_e8m0fnu, dtypes.float4_e2m1fn)}
_DTYPES_BY_SHORT_NAME: dict[str, np.dtype] = {
    dtypes.short_name(d): d for d in (*_DTYPES_BY_NAME.values(), dtypes.float0)}
# Extension point: the PRNG implementations whose keys (`key<fry>`) and `impl=fry` params
# can be read, by tag.
PRNG_IMPLS: dict[str, prng_keys.PRNGImpl] = {
    prng_keys.threefry_prng_impl.tag: prng_keys.threefry_prng_impl}


def _dtype_from_short_name(name: str) -> Any:
  """The dtype jaxprs print as `name` (`f32`, `bool`, `key<fry>`), or None."""
  if name.startswith("key<") and name.endswith(">"):
    impl = PRNG_IMPLS.get(name[4:-1])
    return prng_keys.KeyTy(impl) if impl is not None else None
  return _DTYPES_BY_SHORT_NAME.get(name)


# Named tuples whose text `Name(field=value, ...)` is read back by calling them, and enums
# whose members print as `Name.MEMBER`.
_CONSTRUCTORS: dict[str, Callable[..., Any]] = {c.__name__: c for c in (
    slicing.GatherDimensionNumbers, slicing.ScatterDimensionNumbers,
    convolution.ConvDimensionNumbers, solves._SolveJaxprs)}
_ENUMS: dict[str, Any] = {e.__name__: e for e in (
    Precision, slicing.GatherScatterMode, fft.FftType)}


def _read_value(node: Any) -> Any:
  """A param's value from its parsed text, as far as the text says its type."""
  if type(node) is tuple:
    return tuple(map(_read_value, node))
  if type(node) is list:
    return list(map(_read_value, node))
  if type(node) is _ParsedJaxpr:
    return ClosedJaxpr(node.jaxpr, node.consts)
  if type(node) is _Call:
    constructor = _CONSTRUCTORS.get(node.name)
    if constructor is None:
      raise _Unreadable(f"`{node.name}(...)` is not a value jaxprs can be read back with")
    return constructor(*map(_read_value, node.args),
                       **{k: _read_value(v) for k, v in node.kwargs.items()})
  return _read_word(node.text)


def _read_word(text: str) -> Any:
  if text in ("None", "True", "False"):
    return {"None": None, "True": True, "False": False}[text]
  kind = _literal_kind(text)
  if kind == "i":
    return int(text)
  if kind == "f":
    return float(text)
  enum_name, _, member = text.partition(".")
  if enum_name in _ENUMS and member in _ENUMS[enum_name].__members__:
    return _ENUMS[enum_name][member]
  if text in _DTYPES_BY_NAME:
    return _DTYPES_BY_NAME[text]
  if " at 0x" in text:
    raise _Unreadable(f"{text} is a Python object, which a jaxpr's text shows by name only")
  raise _Unreadable(f"`{text}` is not a value jaxprs can be read back with")


def _read_string(node: Any) -> str:
  if type(node) is not _Word:
    raise _Unreadable("expected a name")
  return node.text


def _read_open_jaxpr(node: Any) -> Jaxpr:
  if type(node) is not _ParsedJaxpr or node.jaxpr.constvars:
    raise _Unreadable("expected a jaxpr without constvars")
  return node.jaxpr


def _read_prng_impl(node: Any) -> prng_keys.PRNGImpl:
  impl = PRNG_IMPLS.get(_read_string(node))
  if impl is None:
    raise _Unreadable(f"unknown PRNG implementation `{node.text}` (known: {list(PRNG_IMPLS)})")
  return impl


_POLICIES: dict[str, Callable[..., bool]] = {
    f.__qualname__: f for f in map(functools.partial(getattr, remat.checkpoint_policies),
                                   vars(remat.checkpoint_policies))
    if inspect.isfunction(f)}
_FUNCTION_TEXT = re.compile(r"<function (\S+) at 0xX+>")


def _read_policy(node: Any) -> Callable[..., bool] | None:
  """`checkpoint`'s policy: None, or one of `checkpoint_policies` (known by its name). Other
  functions, the `save_*_names` policies among them, are closures the text cannot carry."""
  text = _read_string(node)
  if text == "None":
    return None
  match = _FUNCTION_TEXT.fullmatch(text)
  policy = _POLICIES.get(match.group(1)) if match else None
  if policy is None:
    raise _Unreadable(f"{text} cannot be read back: it is a Python function, and only the "
                      "policies of `checkpoint_policies` that take no arguments are known "
                      "by name")
  return policy


def _read_dot_dimension_numbers(node: Any) -> tuple:
  """`(([1], [0]), ([], []))`: JAX prints the axes as lists; jaxon keeps tuples."""
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = _read_value(node)
  return ((tuple(lhs_contract), tuple(rhs_contract)), (tuple(lhs_batch), tuple(rhs_batch)))


# Readers of params whose text does not say their type, by (primitive name, param name);
# a None primitive name applies to every primitive. Extension point.
PARAM_READERS: dict[tuple[str | None, str], Callable[[Any], Any]] = {
    (None, "name"): _read_string,
    ("dot_general", "dimension_numbers"): _read_dot_dimension_numbers,
    ("round", "rounding_method"): lambda node: lax.RoundingMethod(_read_value(node)),
    ("random_seed", "impl"): _read_prng_impl,
    ("random_wrap", "impl"): _read_prng_impl,
    ("remat2", "jaxpr"): _read_open_jaxpr,
    ("remat2", "policy"): _read_policy,
}

# Params the printer leaves out, by primitive: their values, made when read. Extension point.
HIDDEN_PARAMS: dict[str, dict[str, Callable[[], Any]]] = {
    "dot_general": {"precision": lambda: None, "preferred_element_type": lambda: None,
                    "out_sharding": lambda: None},
    "random_split": {"partitionable": lambda: config.jax_threefry_partitionable},
    "random_bits": {"partitionable": lambda: config.jax_threefry_partitionable},
}

# Primitives that cannot be read back, and why. Extension point.
UNREADABLE_PRIMITIVES: dict[str, str] = {
    "custom_jvp_call": "its custom JVP rule is a Python function, which the text names only",
    "custom_vjp_call": ("its custom forward and backward rules are Python functions, which "
                        "the text names only"),
    "custom_lin": "its backward rule is a Python function, which the text names only",
    "pure_callback": "it calls a Python function on the host (a host callback)",
    "io_callback": "it calls a Python function on the host (a host callback)",
    "debug_callback": "it calls a Python function on the host (a host callback)",
    "debug_print": "it prints from the host (a host callback)",
    "check": "checkify's error messages are not in the text",
}


# ----------------------------------------------------------------------------- primitives

_primitives_by_name: dict[str, core.Primitive] = {}


def _primitive(name: str) -> core.Primitive | None:
  """The primitive named `name`: every primitive jaxon defines is a module attribute of a
  jaxon module; modules imported since the last look are looked through on a miss."""
  if name not in _primitives_by_name:
    for module_name, module in list(sys.modules.items()):
      if module_name.startswith("jaxon.") and module is not None:
        for value in list(vars(module).values()):
          if isinstance(value, core.Primitive):
            _primitives_by_name.setdefault(value.name, value)
  return _primitives_by_name.get(name)


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

  def __init__(self, text: str, consts: Sequence[Any] | None):
    self.lex = _Lexer(text)
    self.consts = None if consts is None else iter(consts)
    self.n_consts_taken = 0
    self.jaxprs_in_text_order: list[Jaxpr | None] = []  # as their constvars appear

  def parse(self) -> ClosedJaxpr:
    parsed = self.jaxpr()
    token = self.lex.peek()
    if token.kind != "end":
      raise self.lex.error(f"expected the end of the text, found {_describe(token)}",
                           token.pos)
    return ClosedJaxpr(parsed.jaxpr, parsed.consts)

  def jaxpr(self) -> _ParsedJaxpr:
    self.lex.expect("{", "'{' (a jaxpr)")
    lambda_token = self.lex.next()
    if lambda_token.text != "lambda":
      raise self.lex.error(f"expected 'lambda', found {_describe(lambda_token)}",
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
      raise self.lex.error(f"expected 'let', found {_describe(let)}", let.pos)
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
    return _ParsedJaxpr(jaxpr, consts)

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
    token = self.lex.expect_word("a type such as f32[2,3]")
    dtype = _dtype_from_short_name(token.text)
    if dtype is None:
      raise self.lex.error(f"unknown dtype {token.text!r}", token.pos)
    self.lex.expect("[", "'[' and the shape")
    shape = []
    while self.lex.peek().text != "]":
      dim = self.lex.expect_word("a dimension")
      if not dim.text.isdigit():
        raise self.lex.error(f"expected a dimension, found {dim.text!r}", dim.pos)
      shape.append(int(dim.text))
      if self.lex.peek().text == ",":
        self.lex.next()
    self.lex.next()
    return ShapedArray(shape, dtype)

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
      while self.lex.peek().text != "=":
        outvars.append(self.binder(scope))
      self.lex.next()
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
    invars = self.operands(scope, outvars)
    eqn = JaxprEqn(invars, outvars, primitive, params)
    self.check_types(eqn, name)
    return eqn

  def params(self, primitive: str) -> dict[str, Any]:
    self.lex.expect("[")
    params = {}
    while self.lex.peek().text != "]":
      key = self.lex.expect_word("a param name or ']'")
      self.lex.expect("=", f"'=' after {key.text}")
      value_pos = self.lex.peek().pos
      node = self.value()
      reader = (PARAM_READERS.get((primitive, key.text)) or PARAM_READERS.get((None, key.text))
                or _read_value)
      try:
        params[key.text] = reader(node)
      except (_Unreadable, TypeError, ValueError) as e:
        raise self.lex.error(f"param {key.text} of `{primitive}`: {e}", value_pos) from None
    self.lex.next()
    return params

  def value(self) -> Any:
    token = self.lex.peek()
    if token.text == "{" and token.kind == "punct":
      return self.jaxpr()
    if token.kind == "word" and self.lex.peek(1).text == "(":
      self.lex.next()
      args, kwargs = [], {}
      for key, node in self.sequence("(", ")", keywords=True):
        if key is None:
          args.append(node)
        else:
          kwargs[key] = node
      return _Call(token.text, tuple(args), kwargs)
    if token.text in ("(", "["):
      items = [node for _, node in self.sequence(token.text, ")]"[token.text == "["])]
      return tuple(items) if token.text == "(" else items
    return _Word(self.lex.expect_word("a param value").text)

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
      yield key, self.value()
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
      elif _literal_kind(token.text) is not None and following != "[":
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
      elif token.kind == "word" and _literal_kind(token.text) is not None:
        atoms.append(self.literal(*self.literal_text(), ()))
      else:
        raise self.lex.error(f"expected an output variable or literal, found "
                             f"{_describe(token)}", token.pos)
      if self.lex.peek().text == ",":
        self.lex.next()
    self.lex.next()
    return atoms

  def literal_text(self) -> tuple[str, int, ShapedArray | None]:
    token = self.lex.next()
    return token.text, token.pos, self.literal_type()

  def complex_literal(self) -> tuple[str, int, ShapedArray | None]:
    """`(1+2j)`: Python's text of a complex number with a real part."""
    start = self.lex.next().pos
    body = self.lex.expect_word("a complex number")
    if _literal_kind(body.text) != "c":
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
    kind = _literal_kind(text.strip("()"))
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

  def check_types(self, eqn: JaxprEqn, name: _Token) -> None:
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


# ----------------------------------------------------------------------------- API


def jaxpr_from_text(text: str, consts: Sequence[Any] = ()) -> ClosedJaxpr:
  """The closed jaxpr `text` prints, with `consts` the values of its constvars in the order
  their binders appear in the text (`jaxpr_to_text` gives both).

  `jaxpr_from_text(str(j), j.consts)` rebuilds `j` (up to weak types, see the module
  docstring) when no nested jaxpr closes over values, and `str` of the result is `str(j)`.
  The result runs with `jaxpr_as_fun` and transforms like any jaxpr.

  Raises:
    TypeError: `text` is not a string.
    ValueError: the text is malformed (with its line and column), names a primitive whose
      params cannot be read back (custom derivative rules, host callbacks), does not
      type-check, or has more or fewer constvars than `consts` has values.
  """
  if not isinstance(text, str):
    raise TypeError(f"jaxpr_from_text takes the text of a jaxpr (str(jaxpr)), got "
                    f"{type(text).__name__}")
  parser = _Parser(text, consts)
  closed = parser.parse()
  if parser.n_consts_taken != len(consts):
    raise ValueError(f"jaxpr_from_text: {len(consts)} consts given for the "
                     f"{parser.n_consts_taken} constvars of the text")
  return closed


def jaxpr_to_text(jaxpr: ClosedJaxpr) -> tuple[str, list[Any]]:
  """`jaxpr`'s text and the values of its constvars in the order `jaxpr_from_text` takes
  them (nested closed jaxprs included). Reads the text back first, so that a jaxpr that
  cannot be read back (a custom derivative rule, a host callback) says so now, when a
  program is saved, rather than when it is loaded."""
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
