"""Symbolic dimensions: array dimensions that are expressions in dimension variables
(`b`, `2*b`, `b + 1`, `floordiv(b, 2)`), for shape-polymorphic export.

A `DimExpr` is a polynomial with integer coefficients over *atoms*: dimension variables,
the non-exact `floordiv`/`mod` of an expression by a constant, and the `max`/`min` of two
expressions that no comparison decides (`core.max_dim(b, 5)`, `x[:5]` on a dimension `b`).
Arithmetic keeps it normalized (so equal polynomials are equal objects, hash equally and
print identically, their terms in JAX's order) and gives a plain `int` as soon as the result
is constant, so code written for int shapes keeps working wherever it only does arithmetic
and equality on dimensions.

Arithmetic with anything else (a float, an array, a traced value) and true division `/`
compute with the dimension as a value, as JAX does: the expression becomes a weakly typed
int scalar (`dim_as_value`, registered by `lax/dimension_value.py`), so `x * x.shape[0]`
and `x.sum(0) / x.shape[0]` work in shape-polymorphic code.

Comparisons follow JAX: `==` is True only if the difference is provably 0 (it is False when
that cannot be shown); `>=`, `>`, `<=`, `<` are decided from bounds (every variable is at least
1, and the scope's constraints hold; a `max`/`min` atom by the cases it stands for) and
raise `InconclusiveDimensionOperation` when these do not decide. Converting a non-constant
expression to an int raises the same error.

Dimension variables live in a `SymbolicScope`, which holds the user's constraints
(`"b >= 4"`, `"a <= b"`, `"a == 2*b"` for a variable alone on the left); expressions from
different scopes do not mix.
"""
from __future__ import annotations

import itertools
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

import numpy as np

from jaxon._src import core

DimSize = Union[int, "DimExpr"]


class InconclusiveDimensionOperation(Exception):
  """A comparison or conversion of symbolic dimensions that holds for some values of the
  variables and not for others."""


_DOCS = ("\nThis error arises for comparison operations with shapes that\nare non-constant, "
         "and the result of the operation cannot be represented as\na boolean value for all "
         "values of the symbolic dimensions involved.\n\nPlease see https://docs.jax.dev/en/"
         "latest/export/shape_poly.html#comparison-of-symbolic-dimensions-is-partially-"
         "supported\nfor more details.")


class SymbolicScope:
  """The dimension variables that may be used together, and the constraints they obey.
  `constraints` are strings such as `"b >= 4"`, `"a <= 2*b"`, `"a == 2*b"`."""

  def __init__(self, constraints_str: Sequence[str] = ()):
    constraints = constraints_str
    if isinstance(constraints, str):
      raise ValueError("The symbolic constraints should be a sequence of strings. Got "
                       f"{constraints!r}")
    self._constraints_str = tuple(constraints)
    self.substitutions: dict[str, DimExpr | int] = {}  # from `v == expr` constraints
    self.geq0: list[DimExpr] = []  # each known to be >= 0
    for text in constraints:
      self._add_constraint(text)
    self._location = _caller_location()

  def _add_constraint(self, text: str) -> None:
    match = re.fullmatch(r"(.+?)\s*(>=|<=|==|>|<)\s*(.+)", text.strip())
    if match is None:
      raise ValueError(f"Constraint parsing error: must contain one of '==', '>=', '<=', "
                       f"'>', '<' in {text!r}")
    left, op, right = match.groups()
    lhs = _parse_dim(left, self, text)
    rhs = _parse_dim(right, self, text)
    if op == "==":
      if not (isinstance(lhs, DimExpr) and lhs._as_variable() is not None):
        raise ValueError(f"Equality constraint {text!r}: jaxon supports only a dimension "
                         "variable alone on the left of '=='")
      self.substitutions[lhs._as_variable()] = rhs
      return
    diff = {">=": lhs - rhs, ">": lhs - rhs - 1, "<=": rhs - lhs, "<": rhs - lhs - 1}[op]
    if isinstance(diff, DimExpr):
      self.geq0.append(diff)
    elif diff < 0:
      raise ValueError(f"The constraint {text!r} is false for every value of the dimension "
                       "variables")

  def __str__(self) -> str:
    return f"SymbolicScope({', '.join(self._constraints_str)})"

  __repr__ = __str__

  def _check_same_scope(self, other: DimExpr, when: str) -> None:
    if other.scope is not self:
      raise ValueError(f"Invalid mixing of symbolic scopes {when}: '{other}' belongs to a "
                       f"scope created at {other.scope._location}, and the current one was "
                       f"created at {self._location}. Create all the symbolic dimensions of "
                       "one export with one `symbolic_shape` call, or pass the same `scope=`.")


def _caller_location() -> str:
  frame = sys._getframe(1)
  while frame is not None and frame.f_code.co_filename == __file__:
    frame = frame.f_back
  return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


# ----------------------------------------------------------------------------- expressions
# An atom is ("var", name), ("floordiv" | "mod", DimExpr operand, int divisor) or
# ("max" | "min", DimSize, DimSize), operands in the order given. A monomial is a sorted
# tuple of (atom, power); the polynomial maps monomials to nonzero coefficients, the
# constant under the empty monomial.

Atom = tuple
Monomial = tuple


def _atom_key(atom: Atom) -> tuple:
  """JAX's syntactic order of factors (smaller first): by size, then a variable's name, or
  an operation's name and its operands' order. Terms print largest first, and the factors
  of a term smallest first, as JAX prints them."""
  if atom[0] == "var":
    return (1, atom[1])
  operands = tuple(_expr_key(o) for o in atom[1:])
  return (1 + sum(size for size, _ in operands), atom[0], operands)


def _monomial_key(m: Monomial) -> tuple:
  factors = tuple((_atom_key(a), p) for a, p in m)[::-1]  # largest first, as JAX keeps them
  return (sum(1 + p * key[0] for key, p in factors), factors)


def _expr_key(e: DimSize) -> tuple:
  terms = [((), int(e))] if _is_int(e) else e._sorted_terms()
  keys = tuple((_monomial_key(m), c) for m, c in terms)
  return (sum(1 + abs(c) * key[0] for key, c in keys), keys)


def _atom_str(atom: Atom) -> str:
  return atom[1] if atom[0] == "var" else f"{atom[0]}({atom[1]}, {atom[2]})"


def _monomial_mul(m1: Monomial, m2: Monomial) -> Monomial:
  powers = dict(m1)
  for atom, p in m2:
    powers[atom] = powers.get(atom, 0) + p
  return tuple(sorted(powers.items(), key=lambda ap: _atom_key(ap[0])))


def _monomial_str(m: Monomial) -> str:
  return "*".join(_atom_str(a) + (f"^{p}" if p > 1 else "") for a, p in m)


def _normalize(terms: Mapping[Monomial, int], scope: SymbolicScope) -> DimSize:
  terms = {m: c for m, c in terms.items() if c != 0}
  if not terms:
    return 0
  if set(terms) == {()}:
    return terms[()]
  return DimExpr(terms, scope)


_dimension_as_value: Any = None  # set by `lax/dimension_value.py`


def register_dimension_as_value(fun: Any) -> None:
  """The function that turns a DimExpr into a traced integer scalar (from the lax layer)."""
  global _dimension_as_value
  _dimension_as_value = fun


def _with_value(name: str, binary: Any) -> Any:
  """The DimExpr operator `__name__`: `_name` of two DimExprs, or, when the other operand
  is no dimension or int, `binary` of the expression's value and it (JAX's implicit
  `dim_as_value`)."""
  def op(self: DimExpr, other: Any) -> Any:
    o = self._lift(other)
    if o is None:
      return binary(self.__jax_array__(), other)
    return getattr(self, f"_{name}")(o)
  op.__name__ = f"__{name}__"
  return op


class DimExpr:
  """A symbolic dimension: a normalized polynomial over dimension variables (see the module
  docstring). Build them with `symbolic_shape`."""

  __slots__ = ("terms", "scope", "_hash")
  __array_priority__ = 1000  # `np.int64(2) * b` asks DimExpr, not NumPy

  def __init__(self, terms: Mapping[Monomial, int], scope: SymbolicScope):
    self.terms = dict(terms)
    self.scope = scope
    self._hash = hash(tuple(sorted(((str(_monomial_str(m)), c) for m, c in terms.items()))))

  @staticmethod
  def variable(name: str, scope: SymbolicScope) -> DimSize:
    if name in scope.substitutions:
      return scope.substitutions[name]
    return DimExpr({((("var", name), 1),): 1}, scope)

  def _as_variable(self) -> str | None:
    if len(self.terms) == 1:
      ((m, c),) = self.terms.items()
      if c == 1 and len(m) == 1 and m[0][1] == 1 and m[0][0][0] == "var":
        return m[0][0][1]
    return None

  def _lift(self, other: Any) -> DimExpr | None:
    if isinstance(other, DimExpr):
      if other.scope is not self.scope:
        self.scope._check_same_scope(other, "in an operation on symbolic dimensions")
      return other
    if _is_int(other):
      return DimExpr({(): int(other)} if int(other) else {}, self.scope)
    return None

  # arithmetic (each `_name` takes a DimExpr; `__name__` also other values, see `_with_value`)
  def _add(self, o: DimExpr) -> DimSize:
    terms = dict(self.terms)
    for m, c in o.terms.items():
      terms[m] = terms.get(m, 0) + c
    return _normalize(terms, self.scope)

  def _radd(self, o: DimExpr) -> DimSize:
    return o._add(self)

  def __neg__(self) -> DimSize:
    return _normalize({m: -c for m, c in self.terms.items()}, self.scope)

  def _sub(self, o: DimExpr) -> DimSize:
    terms = dict(self.terms)
    for m, c in o.terms.items():
      terms[m] = terms.get(m, 0) - c
    return _normalize(terms, self.scope)

  def _rsub(self, o: DimExpr) -> DimSize:
    return o._sub(self)

  def _mul(self, o: DimExpr) -> DimSize:
    terms: dict[Monomial, int] = {}
    for (m1, c1), (m2, c2) in itertools.product(self.terms.items(), o.terms.items()):
      m = _monomial_mul(m1, m2)
      terms[m] = terms.get(m, 0) + c1 * c2
    return _normalize(terms, self.scope)

  def _rmul(self, o: DimExpr) -> DimSize:
    return o._mul(self)

  def _floordiv(self, o: DimExpr) -> DimSize:
    return self._divmod(o)[0]

  def _rfloordiv(self, o: DimExpr) -> DimSize:
    return o._divmod(self)[0]

  def _mod(self, o: DimExpr) -> DimSize:
    return self._divmod(o)[1]

  def _rmod(self, o: DimExpr) -> DimSize:
    return o._divmod(self)[1]

  __add__ = _with_value("add", lambda x, y: x + y)
  __radd__ = _with_value("radd", lambda x, y: y + x)
  __sub__ = _with_value("sub", lambda x, y: x - y)
  __rsub__ = _with_value("rsub", lambda x, y: y - x)
  __mul__ = _with_value("mul", lambda x, y: x * y)
  __rmul__ = _with_value("rmul", lambda x, y: y * x)
  __floordiv__ = _with_value("floordiv", lambda x, y: x // y)
  __rfloordiv__ = _with_value("rfloordiv", lambda x, y: y // x)
  __mod__ = _with_value("mod", lambda x, y: x % y)
  __rmod__ = _with_value("rmod", lambda x, y: y % x)

  def __divmod__(self, other: Any) -> Any:
    o = self._lift(other)
    return divmod(self.__jax_array__(), other) if o is None else self._divmod(o)

  def __truediv__(self, other: Any) -> Any:
    """`/` gives a float, as for ints: it computes with the dimension's value."""
    return self.__jax_array__() / other

  def __rtruediv__(self, other: Any) -> Any:
    return other / self.__jax_array__()

  def max(self, other: DimSize) -> DimSize:
    return max_dim(self, other)

  def rmax(self, other: DimSize) -> DimSize:
    return max_dim(other, self)

  def min(self, other: DimSize) -> DimSize:
    return min_dim(self, other)

  def rmin(self, other: DimSize) -> DimSize:
    return min_dim(other, self)

  def __jax_array__(self) -> Any:
    """The dimension as a weakly typed int scalar (traced: `dim_as_value[dim=...]`)."""
    if _dimension_as_value is None:
      raise TypeError(f"Symbolic dimension '{self}' used as a value before "
                      "jaxon._src.lax.dimension_value was imported")
    return _dimension_as_value(self)

  @property
  def aval(self) -> core.ShapedArray:
    """What the dimension is as an array operand: a weakly typed int scalar."""
    from jaxon._src import dtypes
    return core.ShapedArray((), dtypes.default_int_dtype(), weak_type=True)

  @property
  def dtype(self) -> np.dtype:
    return self.aval.dtype

  def _divmod(self, o: DimExpr) -> tuple[DimSize, DimSize]:
    if not o.terms:
      raise ZeroDivisionError(f"Symbolic dimension {self} divided by 0")
    if set(o.terms) == {()}:  # by a constant: exact when every coefficient divides
      d = o.terms[()]
      if all(c % d == 0 for c in self.terms.values()):
        return _normalize({m: c // d for m, c in self.terms.items()}, self.scope), 0
      if d < 0:
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension division by a negative constant: {self} // {d}")
      quotient = DimExpr({((("floordiv", self, d), 1),): 1}, self.scope)
      remainder = DimExpr({((("mod", self, d), 1),): 1}, self.scope)
      return quotient, remainder
    quotient = _exact_quotient(self, o)
    if quotient is None:
      raise InconclusiveDimensionOperation(
          f"Cannot divide '{self}' by '{o}'.\nSee https://docs.jax.dev/en/latest/export/"
          "shape_poly.html#division-of-symbolic-dimensions-is-partially-supported.")
    return quotient, 0

  # comparisons
  def __eq__(self, other: Any) -> bool:
    o = self._lift(other) if isinstance(other, DimExpr) or _is_int(other) else None
    if o is None:
      return False
    diff = self - o
    if _is_int(diff):
      return diff == 0
    return False

  def __ne__(self, other: Any) -> bool:
    return not self == other

  def __ge__(self, other: Any) -> bool:
    return _geq(self, other)

  def __gt__(self, other: Any) -> bool:
    return _geq(self, other + 1 if _is_int(other) or isinstance(other, DimExpr) else other)

  def __le__(self, other: Any) -> bool:
    return _geq(other, self)

  def __lt__(self, other: Any) -> bool:
    return _geq(other, self + 1)

  def __hash__(self) -> int:
    return self._hash

  def __int__(self) -> int:
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension '{self}' used in a context that requires a constant" + _DOCS)

  __index__ = __int__

  def __bool__(self) -> bool:
    return True  # a dimension expression is never the empty dimension 0

  def _sorted_terms(self) -> list[tuple[Monomial, int]]:
    """(monomial, coefficient) pairs, largest first in JAX's order (the constant last)."""
    return sorted(self.terms.items(), key=lambda mc: _monomial_key(mc[0]), reverse=True)

  def __str__(self) -> str:
    out = ""
    for i, (m, c) in enumerate(self._sorted_terms()):
      body = _monomial_str(m)
      magnitude = str(abs(c)) if not body else (body if abs(c) == 1 else f"{abs(c)}*{body}")
      if i == 0:
        out = ("- " if c < 0 else "") + magnitude
      else:
        out += (" - " if c < 0 else " + ") + magnitude
    return out

  __repr__ = __str__

  # evaluation
  def evaluate(self, env: Mapping[str, Any]) -> Any:
    """The value of the expression with each variable `v` replaced by `env[v]` (ints,
    DimExprs, or traced integer scalars)."""
    total: Any = 0
    for m, c in self.terms.items():
      value: Any = c
      for atom, p in m:
        a = _atom_value(atom, env)
        for _ in range(p):
          value = value * a
      total = total + value
    return total

  def variables(self) -> set[str]:
    out: set[str] = set()
    for m in self.terms:
      for atom, _ in m:
        if atom[0] == "var":
          out.add(atom[1])
        else:
          for operand in atom[1:]:
            out |= operand.variables() if isinstance(operand, DimExpr) else set()
    return out

  def bounds(self) -> tuple[float, float]:
    """Lower and upper bounds over all values of the variables (each >= 1)."""
    lo, hi = 0.0, 0.0
    for m, c in self.terms.items():
      mlo, mhi = 1.0, 1.0
      for atom, p in m:
        alo, ahi = _atom_bounds(atom)
        mlo, mhi = mlo * alo ** p, mhi * ahi ** p
      if c >= 0:
        lo, hi = lo + c * mlo, hi + c * mhi
      else:
        lo, hi = lo + c * mhi, hi + c * mlo
    return lo, hi


def _exact_quotient(dividend: DimExpr, divisor: DimExpr) -> DimSize | None:
  """`dividend / divisor` when it is a polynomial with integer coefficients, else None.
  Long division by leading terms in graded lexicographic order (a monomial order, so the
  leading term of an exact quotient times the divisor's is the dividend's)."""
  atoms = sorted({a for e in (dividend, divisor) for m in e.terms for a, _ in m},
                 key=_atom_key)

  def leading(e: DimExpr) -> tuple[Monomial, int]:
    def order(m: Monomial) -> tuple:
      powers = dict(m)
      return (sum(powers.values()), tuple(powers.get(a, 0) for a in atoms))
    m = max(e.terms, key=order)
    return m, e.terms[m]

  divisor_m, divisor_c = leading(divisor)
  quotient: DimSize = 0
  rest: DimSize = dividend
  while isinstance(rest, DimExpr):
    m, c = leading(rest)
    powers = dict(m)
    for atom, p in divisor_m:
      powers[atom] = powers.get(atom, 0) - p
    if c % divisor_c or any(p < 0 for p in powers.values()):
      return None
    q_m = tuple(sorted(((a, p) for a, p in powers.items() if p), key=lambda ap: _atom_key(ap[0])))
    q = _normalize({q_m: c // divisor_c}, dividend.scope)
    quotient = quotient + q
    rest = rest - q * divisor
  return quotient if rest == 0 else None


def _atom_value(atom: Atom, env: Mapping[str, Any]) -> Any:
  if atom[0] == "var":
    if atom[1] not in env:
      raise KeyError(f"no value for the dimension variable '{atom[1]}'")
    return env[atom[1]]
  if atom[0] in ("max", "min"):
    a, b = (o.evaluate(env) if isinstance(o, DimExpr) else o for o in atom[1:])
    return _value_max_min(atom[0], a, b)
  operand = atom[1].evaluate(env)
  return operand // atom[2] if atom[0] == "floordiv" else operand % atom[2]


def _value_max_min(op: str, a: Any, b: Any) -> Any:
  """`max`/`min` of two dimension values: ints, DimExprs, or values that compute (the
  lowering's `tensor<i32>` values) with methods `max`, `rmax`, `min`, `rmin`."""
  if _is_int(a) and _is_int(b):
    return max(a, b) if op == "max" else min(a, b)
  if not _is_int(a):
    return getattr(a, op)(b)
  return getattr(b, "r" + op)(a)


def _bounds(d: DimSize) -> tuple[float, float]:
  return d.bounds() if isinstance(d, DimExpr) else (float(d), float(d))


def _atom_bounds(atom: Atom) -> tuple[float, float]:
  if atom[0] == "var":
    return 1.0, math.inf
  if atom[0] == "mod":
    return 0.0, float(atom[2] - 1)
  if atom[0] in ("max", "min"):
    (lo1, hi1), (lo2, hi2) = _bounds(atom[1]), _bounds(atom[2])
    pick = max if atom[0] == "max" else min
    return pick(lo1, lo2), pick(hi1, hi2)
  lo, hi = atom[1].bounds()
  return math.floor(lo / atom[2]), (math.inf if hi == math.inf else math.floor(hi / atom[2]))


def _geq(e1: Any, e2: Any) -> bool:
  """Whether e1 >= e2 for every value of the variables (raises if that depends on them)."""
  decided = _decide_geq0(e1 - e2)
  if decided is None:
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension comparison '{e1}' >= '{e2}' is inconclusive." + _DOCS)
  return decided


def _decide_geq0(diff: DimSize) -> bool | None:
  """Whether diff >= 0 for every value of the variables, None if that depends on them."""
  if _is_int(diff):
    return diff >= 0
  lo, hi = diff.bounds()
  if lo >= 0:
    return True
  if hi < 0:
    return False
  for known in diff.scope.geq0:  # diff >= known >= 0, or diff <= -1 - known < 0
    rest = diff - known
    if (rest >= 0 if _is_int(rest) else rest.bounds()[0] >= 0):
      return True
    rest = -1 - known - diff
    if (rest >= 0 if _is_int(rest) else rest.bounds()[0] >= 0):
      return False
  return _decide_by_cases(diff)


def _decide_by_cases(diff: DimExpr) -> bool | None:
  """Decides diff >= 0 through a `max`/`min` atom of it, which equals one of its two
  operands at every point: the answer for both replacements is the answer. Where the atom
  is a lone term `c*max(x, y)` (or min), one replacement decides one way: `max(x, y) >= x`,
  so with c > 0, diff >= diff[max -> x]."""
  atom = next((a for m in diff.terms for a, _ in m if a[0] in ("max", "min")), None)
  if atom is None:
    return None
  cases = [_decide_geq0(_substitute(diff, atom, operand)) for operand in atom[1:]]
  if cases[0] is not None and cases[0] == cases[1]:
    return cases[0]
  c = diff.terms.get(((atom, 1),), 0)
  at_least_each_case = (c > 0) == (atom[0] == "max")  # diff >= diff[atom -> operand]
  if c and at_least_each_case and True in cases:
    return True
  if c and not at_least_each_case and False in cases:
    return False
  return None


def _substitute(e: DimExpr, atom: Atom, value: DimSize) -> DimSize:
  total: DimSize = 0
  for m, c in e.terms.items():
    term: DimSize = c
    for a, p in m:
      factor = value if a == atom else DimExpr({((a, 1),): 1}, e.scope)
      for _ in range(p):
        term = term * factor
    total = total + term
  return total


def max_dim(a: DimSize, b: DimSize) -> DimSize:
  """The larger of two dimensions: one of them where a comparison decides, else the
  symbolic `max(a, b)` (its operands in this order, as JAX keeps them)."""
  return _max_or_min("max", a, b)


def min_dim(a: DimSize, b: DimSize) -> DimSize:
  return _max_or_min("min", a, b)


def _max_or_min(op: str, a: DimSize, b: DimSize) -> DimSize:
  if _is_int(a) and _is_int(b):
    return max(a, b) if op == "max" else min(a, b)
  scope = (a if isinstance(a, DimExpr) else b).scope
  a_lifted, b_lifted = (DimExpr({}, scope)._lift(x) for x in (a, b))
  if a_lifted is None or b_lifted is None:
    raise TypeError(f"{op}_dim takes dimensions (ints or symbolic ones), got {a!r} and {b!r}")
  a_is_larger = _decide_geq0(a_lifted - b_lifted)
  if a_is_larger is None and _decide_geq0(b_lifted - a_lifted):
    a_is_larger = False
  if a_is_larger is not None:
    return a if a_is_larger == (op == "max") else b
  return DimExpr({(((op, a, b), 1),): 1}, scope)


def _is_int(x: Any) -> bool:
  return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


core.register_symbolic_dim_type(DimExpr)


def is_symbolic_dim(p: Any) -> bool:
  """Whether `p` is a symbolic dimension (not an int)."""
  return isinstance(p, DimExpr)


# ----------------------------------------------------------------------------- parsing

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|\.\.\.|[-+*%^(),]))")


class _DimParser:
  """Recursive descent over `expr := term (('+'|'-') term)*`, `term := factor (('*'|'//'|
  '%') factor)*`, `factor := '-' factor | atom ('^' INT)?`, `atom := INT | NAME |
  NAME '(' expr ',' expr ')' | '(' expr ')'`."""

  def __init__(self, text: str, scope: SymbolicScope, whole: str):
    self.text, self.scope, self.whole = text, scope, whole
    self.tokens: list[tuple[str, int]] = []
    pos = 0
    while pos < len(text):
      match = _TOKEN.match(text, pos)
      if match is None:
        if text[pos:].strip() == "":
          break
        raise self.error(f"unexpected character {text[pos]!r}")
      self.tokens.append((match.group(match.lastindex), match.start(match.lastindex)))
      pos = match.end()
    self.i = 0

  def error(self, message: str) -> ValueError:
    return ValueError(f"syntax error in symbolic shape {self.whole!r}: {message} "
                      f"(in {self.text!r})")

  def peek(self) -> str | None:
    return self.tokens[self.i][0] if self.i < len(self.tokens) else None

  def take(self) -> str:
    token = self.peek()
    if token is None:
      raise self.error("unexpected end of the expression")
    self.i += 1
    return token

  def parse(self) -> DimSize:
    value = self.expr()
    if self.peek() is not None:
      raise self.error(f"unexpected {self.peek()!r}")
    return value

  def expr(self) -> Any:
    value = self.term()
    while self.peek() in ("+", "-"):
      value = value + self.term() if self.take() == "+" else value - self.term()
    return value

  def term(self) -> Any:
    value = self.factor()
    while self.peek() in ("*", "//", "%"):
      op, rhs = self.take(), self.factor()
      value = value * rhs if op == "*" else value // rhs if op == "//" else value % rhs
    return value

  def factor(self) -> Any:
    if self.peek() == "-":
      self.take()
      return -self.factor()
    value = self.atom()
    if self.peek() == "^":
      self.take()
      power = self.take()
      if not power.isdigit():
        raise self.error(f"expected a power, found {power!r}")
      value = math.prod([value] * int(power))
    return value

  def atom(self) -> Any:
    token = self.take()
    if token.isdigit():
      return int(token)
    if token == "(":
      value = self.expr()
      self.expect(")")
      return value
    if re.fullmatch(r"[A-Za-z_]\w*", token):
      if self.peek() == "(":
        self.take()
        lhs = self.expr()
        self.expect(",")
        rhs = self.expr()
        self.expect(")")
        functions = {"floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
                     "max": max_dim, "min": min_dim}
        if token not in functions:
          raise self.error(f"unknown function {token!r}")
        return functions[token](lhs, rhs)
      return DimExpr.variable(token, self.scope)
    raise self.error(f"unexpected {token!r}")

  def expect(self, token: str) -> None:
    found = self.take()
    if found != token:
      raise self.error(f"expected {token!r}, found {found!r}")


def _parse_dim(text: str, scope: SymbolicScope, whole: str) -> DimSize:
  return _DimParser(text, scope, whole).parse()


def parse_dim(text: str, scope: SymbolicScope) -> DimSize:
  """One dimension from its printed text (as jaxpr types print it)."""
  return _parse_dim(text, scope, text)


def _split_top_level(text: str) -> list[str]:
  parts, depth, start = [], 0, 0
  for i, ch in enumerate(text):
    depth += ch == "("
    depth -= ch == ")"
    if ch == "," and depth == 0:
      parts.append(text[start:i])
      start = i + 1
  parts.append(text[start:])
  return parts


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: SymbolicScope | None = None,
                   like: Sequence[int | None] | None = None) -> tuple[DimSize, ...]:
  """The dimensions `shape_spec` writes (`"b, 2*b"`, `"(b, ...)"`), each an int or a
  `DimExpr`. With `like`, `_` takes that dimension of `like` and `...` the rest of it."""
  if scope is not None and constraints:
    raise ValueError("Cannot specify both a `scope` and `constraints`.")
  scope = scope if scope is not None else SymbolicScope(constraints)
  spec = "..." if shape_spec is None else shape_spec.strip()
  if spec.startswith("(") and spec.endswith(")") and _balanced(spec[1:-1]):
    spec = spec[1:-1]
  parts = [p.strip() for p in _split_top_level(spec)] if spec.strip() else []
  if parts and parts[-1] == "" and len(parts) > 1:
    parts.pop()  # "(b,)"
  dims: list[DimSize] = []
  for i, part in enumerate(parts):
    if part == "...":
      if i != len(parts) - 1:
        raise ValueError(f"syntax error in symbolic shape {shape_spec!r}: '...' must be last")
      if like is None:
        raise ValueError(f"symbolic shape {shape_spec!r}: '...' needs `like`")
      dims.extend(_like_dim(like, j, shape_spec) for j in range(len(dims), len(like)))
      break
    if part == "_":
      if like is None:
        raise ValueError(f"symbolic shape {shape_spec!r}: '_' needs `like`")
      dims.append(_like_dim(like, i, shape_spec))
      continue
    if part == "":
      raise ValueError(f"syntax error in symbolic shape {shape_spec!r}: empty dimension {i}")
    dims.append(_parse_dim(part, scope, shape_spec))
  if like is not None and len(dims) != len(like):
    raise ValueError(f"symbolic shape {shape_spec!r} has {len(dims)} dimensions but the "
                     f"shape it is like, {tuple(like)}, has {len(like)}")
  if like is not None:
    for i, (d, known) in enumerate(zip(dims, like)):
      if _is_int(d) and known is not None and d != known:
        raise ValueError(f"symbolic shape {shape_spec!r}: dimension {i} is {d} but the "
                         f"shape it is like has {known}")
  return tuple(dims)


def _balanced(text: str) -> bool:
  depth = 0
  for ch in text:
    depth += (ch == "(") - (ch == ")")
    if depth < 0:
      return False
  return depth == 0


def _like_dim(like: Sequence[int | None], i: int, spec: str) -> int:
  if i >= len(like) or like[i] is None:
    raise ValueError(f"symbolic shape {spec!r}: dimension {i} is '_' or '...' but the shape "
                     "it is like does not give it")
  return int(like[i])


def symbolic_args_specs(args: Any, shapes_specs: Any, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None) -> Any:
  """ShapeDtypeStructs for `args` (a pytree of arrays) with the symbolic shapes
  `shapes_specs` (one string for every arg, or a pytree prefix of `args` of strings)."""
  from jaxon._src import tree_util
  from jaxon._src.jit import ShapeDtypeStruct
  scope = scope if scope is not None else SymbolicScope(constraints)
  leaves, tree = tree_util.tree_flatten(args)
  if isinstance(shapes_specs, str) or shapes_specs is None:
    specs = [shapes_specs] * len(leaves)
  elif isinstance(args, (tuple, list)) and len(shapes_specs) == len(args):
    specs = [spec for spec, arg in zip(shapes_specs, args)
             for _ in tree_util.tree_leaves(arg)]
  else:
    raise ValueError("symbolic_args_specs takes one shape specification for all the args or "
                     f"one for each of them; got {shapes_specs!r} for {len(leaves)} arrays")
  return tree.unflatten([
      ShapeDtypeStruct(symbolic_shape(spec, like=np.shape(x), scope=scope), x.dtype)
      for spec, x in zip(specs, leaves)])


def evaluate_shape(shape: Iterable[DimSize], env: Mapping[str, Any]) -> tuple[Any, ...]:
  return tuple(d.evaluate(env) if isinstance(d, DimExpr) else d for d in shape)
