"""The round-trip golden over the whole suite (issue 13): every jaxpr a test prints with
`str(jaxpr)` must read back with `jaxpr_from_text` into a jaxpr that prints the same.

An autouse fixture records the text of each `str(jaxpr)` a test makes and, after the test,
reads every text back (the structure only: the values of constvars play no part in the
text). So the golden tests of every issue (seeds, control flow, custom derivatives,
collectives, shard_map, sharded pjit, shape polymorphism) feed the check without listing
their cases, and a new primitive or param whose printed form cannot be read back fails the
test that first prints it. Texts documented as unreadable are skipped (saving them is
refused at export instead): those of host callbacks, `custom_lin` and checkify's `check`,
and params that are Python functions, which print by name only (`<function f at 0xXX>`).

A jaxpr made with `make_jaxpr(..., axis_env=...)` names axes it does not bind; it reads
back with the axis names and sizes the test bound (every `extend_axis_env` of the test).

Reading costs no compilation: about a millisecond a jaxpr.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from jaxon._src import core
from jaxon._src.jaxpr_parser import UNREADABLE_PRIMITIVES, jaxpr_structure_from_text


def _documented_unreadable(text: str) -> bool:
  return " at 0xX" in text or any(f" {name}[" in text or f" {name} " in text
                                  for name in UNREADABLE_PRIMITIVES)


def check_reads_back(text: str, axis_env: Sequence[tuple[Any, int]] = ()) -> None:
  """`text` (a printed jaxpr) reads back into a jaxpr that prints as `text`."""
  if _documented_unreadable(text):
    return
  try:
    again = str(jaxpr_structure_from_text(text, axis_env))
  except ValueError as e:
    raise AssertionError(f"a printed jaxpr does not read back: {e}\n{text}") from None
  assert again == text, f"a printed jaxpr reads back differently:\n{text}\n---\n{again}"


@pytest.fixture(autouse=True)
def _printed_jaxprs_read_back(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
  printed: dict[str, core.Jaxpr] = {}  # kept alive: its primitives are found by name
  axes: dict[Any, int] = {}
  print_jaxpr, bind_axes = core.Jaxpr.__str__, core.extend_axis_env

  def recording_str(jaxpr: core.Jaxpr) -> str:
    text = print_jaxpr(jaxpr)
    printed[text] = jaxpr
    return text

  @contextlib.contextmanager
  def recording_extend_axis_env(frames: Sequence[tuple[Any, int]]) -> Iterator[None]:
    frames = tuple(frames)
    axes.update(frames)
    with bind_axes(frames):
      yield
  monkeypatch.setattr(core.Jaxpr, "__str__", recording_str)
  monkeypatch.setattr(core, "extend_axis_env", recording_extend_axis_env)
  yield
  monkeypatch.undo()
  for text in printed:
    check_reads_back(text, tuple(axes.items()))
