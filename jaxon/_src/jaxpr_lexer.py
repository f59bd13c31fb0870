"""The words of a jaxpr's text (`jaxpr_parser` reads their grammar): tokens, the scalar
literals they write, and dtypes by the names jaxprs print them with."""
from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import dtypes, prng_keys

# ----------------------------------------------------------------------------- tokens

_PUNCTUATION = frozenset("{}[](),;:=")


class Token(NamedTuple):
  kind: str  # "word", "punct" or "end"
  text: str
  pos: int


class Lexer:
  """Splits the text into punctuation and words. A word runs to whitespace or punctuation,
  except inside `<...>` (`<lambda>`, `key<fry>`, `<function f at 0xXX>`); a `.` ends a word
  only when whitespace follows (`f32[]. let` against `Precision.HIGH`, `0.5`)."""

  def __init__(self, text: str):
    self.text = text
    self._pos = 0
    self._ahead: list[Token] = []

  def peek(self, k: int = 0) -> Token:
    while len(self._ahead) <= k:
      self._ahead.append(self._scan())
    return self._ahead[k]

  def next(self) -> Token:
    token = self.peek()
    self._ahead.pop(0)
    return token

  def expect(self, text: str, what: str | None = None) -> Token:
    token = self.next()
    if token.text != text or token.kind == "end":
      raise self.error(f"expected {what or repr(text)}, found {describe(token)}", token.pos)
    return token

  def expect_word(self, what: str) -> Token:
    token = self.next()
    if token.kind != "word":
      raise self.error(f"expected {what}, found {describe(token)}", token.pos)
    return token

  def error(self, message: str, pos: int) -> ValueError:
    line = self.text.count("\n", 0, pos) + 1
    start = self.text.rfind("\n", 0, pos) + 1
    end = self.text.find("\n", pos)
    source = self.text[start:end if end >= 0 else len(self.text)]
    return ValueError(f"jaxpr text, line {line}, column {pos - start + 1}: {message}\n"
                      f"  {source}\n  {' ' * (pos - start)}^")

  def _scan(self) -> Token:
    text, n = self.text, len(self.text)
    i = self._pos
    while i < n and text[i].isspace():
      i += 1
    if i == n:
      self._pos = i
      return Token("end", "", i)
    if text.startswith("<-", i):  # a ref write or read: `r[0] <- v`, `x:f32[] <- r[0]`
      self._pos = i + 2
      return Token("word", "<-", i)
    if text[i] in _PUNCTUATION or (text[i] == "." and _ends_word(text, i)):
      self._pos = i + 1
      return Token("punct", text[i], i)
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
    return Token("word", text[start:i], start)


def _ends_word(text: str, i: int) -> bool:
  return i + 1 == len(text) or text[i + 1].isspace()


def describe(token: Token) -> str:
  return "the end of the text" if token.kind == "end" else repr(token.text)


_INT = re.compile(r"[+-]?\d+")
_UNSIGNED_FLOAT = r"(\d+(\.\d*)?([eE][+-]?\d+)?|inf|nan)"
_FLOAT = re.compile(rf"[+-]?{_UNSIGNED_FLOAT}")
_COMPLEX = re.compile(rf"[+-]?({_UNSIGNED_FLOAT}[+-])?{_UNSIGNED_FLOAT}j")  # 1j, -0-1j


def literal_kind(text: str) -> str | None:
  """The kind of scalar `text` writes (see `core.literal_kind`), or None if it is no number."""
  if text in ("True", "False"):
    return "b"
  if _INT.fullmatch(text):
    return "i"
  if _FLOAT.fullmatch(text):
    return "f"
  return "c" if _COMPLEX.fullmatch(text) else None


# Dtypes by name (`float32`, as dtype params print) and by short name (`f32`, as types print).
DTYPES_BY_NAME: dict[str, np.dtype] = {np.dtype(t).name: np.dtype(t) for t in (
    bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128, dtypes.bfloat16,
    dtypes.float8_e4m3fn, dtypes.float8_e5m2, dtypes.float8_e4m3b11fnuz, dtypes.float8_e4m3,
    dtypes.float8_e3m4, dtypes.float8_e4m3fnuz, dtypes.float8_e5m2fnuz,
    dtypes.float8_e8m0fnu, dtypes.float4_e2m1fn, dtypes.float6_e2m3fn, dtypes.float6_e3m2fn)}
_DTYPES_BY_SHORT_NAME: dict[str, np.dtype] = {
    dtypes.short_name(d): d for d in (*DTYPES_BY_NAME.values(), dtypes.float0)}
# Extension point: the PRNG implementations whose keys (`key<fry>`) and `impl=fry` params
# can be read, by tag.
PRNG_IMPLS: dict[str, prng_keys.PRNGImpl] = {
    prng_keys.threefry_prng_impl.tag: prng_keys.threefry_prng_impl}


def dtype_from_short_name(name: str) -> Any:
  """The dtype jaxprs print as `name` (`f32`, `bool`, `key<fry>`), or None."""
  if name.startswith("key<") and name.endswith(">"):
    impl = PRNG_IMPLS.get(name[4:-1])
    return prng_keys.KeyTy(impl) if impl is not None else None
  return _DTYPES_BY_SHORT_NAME.get(name)
