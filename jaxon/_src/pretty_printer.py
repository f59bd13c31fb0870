"""A small Wadler-style document printer, used to lay out jaxprs.

A document is text, concatenations, breaks, nests and groups. A group is printed on one
line when it fits in the remaining width; otherwise each break directly inside it becomes a
newline indented by the enclosing nests.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class Doc:
  def __add__(self, other: Doc) -> Doc:
    return concat([self, other])

  def format(self, width: int = 80) -> str:
    return _format(self, width)


@dataclass(frozen=True)
class _Text(Doc):
  text: str


@dataclass(frozen=True)
class _Concat(Doc):
  children: tuple[Doc, ...]


@dataclass(frozen=True)
class _Break(Doc):
  text: str


@dataclass(frozen=True)
class _Nest(Doc):
  indent: int
  child: Doc


@dataclass(frozen=True)
class _Group(Doc):
  child: Doc


def text(s: str) -> Doc:
  return _Text(s)


def nil() -> Doc:
  return _Concat(())


def concat(docs: Iterable[Doc]) -> Doc:
  return _Concat(tuple(docs))


def brk(sep: str = " ") -> Doc:
  return _Break(sep)


def nest(indent: int, child: Doc) -> Doc:
  return _Nest(indent, child)


def group(child: Doc) -> Doc:
  return _Group(child)


def join(sep: Doc, docs: Iterable[Doc]) -> Doc:
  out: list[Doc] = []
  for i, d in enumerate(docs):
    if i:
      out.append(sep)
    out.append(d)
  return concat(out)


def _flat_width_fits(doc: Doc, width: int) -> bool:
  stack = [doc]
  while stack and width >= 0:
    d = stack.pop()
    if isinstance(d, (_Text, _Break)):
      width -= len(d.text)
    elif isinstance(d, _Concat):
      stack.extend(reversed(d.children))
    else:
      stack.append(d.child)
  return width >= 0


def _format(doc: Doc, width: int) -> str:
  out: list[str] = []
  column = 0
  agenda: list[tuple[int, bool, Doc]] = [(0, False, doc)]  # (indent, flat, doc)
  while agenda:
    indent, flat, d = agenda.pop()
    if isinstance(d, _Text):
      out.append(d.text)
      column += len(d.text)
    elif isinstance(d, _Concat):
      agenda.extend((indent, flat, c) for c in reversed(d.children))
    elif isinstance(d, _Break):
      if flat:
        out.append(d.text)
        column += len(d.text)
      else:
        out.append("\n" + " " * indent)
        column = indent
    elif isinstance(d, _Nest):
      agenda.append((indent + d.indent, flat, d.child))
    else:
      fits = flat or _flat_width_fits(d.child, width - column)
      agenda.append((indent, fits, d.child))
  return "".join(out)
