"""Every keyword JAX 0.10.2's public functions and classes take, jaxon's take too.

`data/jax_0_10_2_signatures.json` (recorded once from the real JAX by
`tools/record_jax_signatures.py`) lists, for each public callable of the user-facing
modules, the parameters a caller can pass by keyword. A port that passes one of them must
not fail with "unexpected keyword argument": each must be accepted by jaxon's callable of
the same name (or by its `**kwargs`), or be listed in `data/jax_signature_gaps.json` with
the reason jaxon does not take it.
"""
from __future__ import annotations

import importlib
import inspect
import json
import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parent / "data"
SIGNATURES = json.loads((DATA / "jax_0_10_2_signatures.json").read_text())["signatures"]
GAPS = json.loads((DATA / "jax_signature_gaps.json").read_text())
KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def jaxon_callable(qualified: str) -> object | None:
  module_name, _, name = qualified.rpartition(".")
  try:
    module = importlib.import_module("jaxon" + module_name[len("jax"):])
  except ModuleNotFoundError:
    return None  # a whole module jaxon lacks: test_api_surface keeps those listed
  return getattr(module, name, None)


def missing_keywords(qualified: str) -> list[str]:
  obj = jaxon_callable(qualified)
  if obj is None:
    return []
  params = inspect.signature(obj).parameters.values()
  if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
    return []
  accepted = {p.name for p in params if p.kind in KEYWORD_KINDS}
  return [name for name in SIGNATURES[qualified] if name not in accepted]


def test_jaxon_takes_every_keyword_jax_takes_or_lists_why_not():
  unlisted, stale = {}, {}
  for qualified in SIGNATURES:
    missing = set(missing_keywords(qualified))
    listed = set(GAPS.get(qualified, {}))
    if missing - listed:
      unlisted[qualified] = sorted(missing - listed)
    if listed - missing:
      stale[qualified] = sorted(listed - missing)
  assert not unlisted, ("JAX keywords jaxon does not take, not in "
                        f"tests/data/jax_signature_gaps.json: {unlisted}")
  assert not stale, f"jaxon takes these now; remove them from the gaps file: {stale}"


@pytest.mark.parametrize("qualified", sorted(GAPS))
def test_each_gap_is_a_recorded_jax_keyword_with_a_reason(qualified):
  assert qualified in SIGNATURES, f"{qualified} is not a recorded JAX callable"
  for name, reason in GAPS[qualified].items():
    assert name in SIGNATURES[qualified], f"{qualified} has no keyword {name!r} in JAX"
    assert isinstance(reason, str) and reason.strip(), f"{qualified}({name}=): no reason"
