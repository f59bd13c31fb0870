"""jaxon's public API against JAX 0.10.2's, name by name.

`data/jax_0_10_2_public_api.json` holds every public name of JAX's public modules (recorded
once by `tools/record_jax_api.py`); `data/jax_api_missing.json` lists, per module, the
names jaxon lacks and why (a string instead of a dict: the whole module is missing). Each
JAX name must exist in jaxon or be listed; a listed name that jaxon now has fails too, so
the list stays the true account of what a port can still trip on.

The names added so that libraries written for JAX import (`typing`, `stages`, `sharding`,
`Device`) are checked for behaviour below, not only for existence."""
from __future__ import annotations

import importlib
import importlib.util
import json
import pathlib
import types

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp

DATA = pathlib.Path(__file__).resolve().parent / "data"
API = json.loads((DATA / "jax_0_10_2_public_api.json").read_text())
MISSING = json.loads((DATA / "jax_api_missing.json").read_text())


def jaxon_name(jax_module: str) -> str:
  return "jaxon" + jax_module[len("jax"):]


def import_jaxon(jax_module: str) -> types.ModuleType | None:
  try:
    return importlib.import_module(jaxon_name(jax_module))
  except ModuleNotFoundError:
    return None


def has_name(module: types.ModuleType, name: str) -> bool:
  """An attribute, or a submodule not imported yet (`jaxon.scipy.stats.norm`)."""
  if hasattr(module, name):
    return True
  try:
    return importlib.util.find_spec(f"{module.__name__}.{name}") is not None
  except ImportError:
    return False


@pytest.mark.parametrize("jax_module", sorted(API["modules"]))
def test_every_jax_name_exists_in_jaxon_or_is_listed_missing(jax_module):
  listed = MISSING.get(jax_module, {})
  module = import_jaxon(jax_module)
  where = f"tests/data/jax_api_missing.json[{jax_module!r}]"
  if isinstance(listed, str):
    assert module is None, (f"{jaxon_name(jax_module)} exists now: in {where}, replace the "
                            "whole-module entry by the names it still lacks")
    return
  assert module is not None, (f"{jaxon_name(jax_module)} is missing: implement it, or give "
                              f"{where} the reason as a string")
  absent = {name for name in API["modules"][jax_module] if not has_name(module, name)}
  unlisted = sorted(absent - set(listed))
  stale = sorted(set(listed) - absent)
  assert not unlisted, f"{jax_module}: JAX names jaxon lacks, not in {where}: {unlisted}"
  assert not stale, f"{jax_module}: jaxon has these now; remove them from {where}: {stale}"


def test_the_missing_list_names_only_recorded_names_each_with_a_reason():
  for jax_module, listed in MISSING.items():
    assert jax_module in API["modules"], f"{jax_module} is not a recorded JAX module"
    reasons = {"(whole module)": listed} if isinstance(listed, str) else listed
    for name, reason in reasons.items():
      assert isinstance(reason, str) and reason.strip(), f"{jax_module}.{name}: no reason"
    if isinstance(listed, dict):
      assert set(listed) <= set(API["modules"][jax_module]), (
          f"{jax_module}: not JAX names: {sorted(set(listed) - set(API['modules'][jax_module]))}")


def test_typing_annotations_accept_what_jax_accepts():
  from jaxon.typing import ArrayLike, DTypeLike

  accepted = [jnp.ones(2), np.ones(2), np.float32(1), np.bool_(True), True, 3, 2.5, 1j]
  assert all(isinstance(x, ArrayLike) for x in accepted)
  assert not any(isinstance(x, ArrayLike) for x in ([1, 2], (1.0,), "1", None))
  assert jaxon.Array in ArrayLike.__args__
  # DTypeLike: names, scalar types, np.dtype and anything with a `.dtype` (jnp.float32).
  assert {str, np.dtype}.issubset(DTypeLike.__args__)
  supports_dtype = DTypeLike.__args__[-1]
  assert isinstance(jnp.float32, supports_dtype) and isinstance(jnp.ones(1), supports_dtype)
  assert not isinstance(3, supports_dtype)


def test_stages_are_the_classes_that_lower_and_compile_return():
  lowered = jaxon.jit(lambda x: x * 2).lower(np.float32(1))
  assert isinstance(lowered, jaxon.stages.Lowered)
  compiled = lowered.compile()
  assert isinstance(compiled, jaxon.stages.Compiled)
  assert float(compiled(np.float32(3))) == 6.0


def test_sharding_and_device_are_the_classes_of_arrays_and_devices():
  from jaxlib import _jax

  x = jnp.arange(3.0)
  y = jaxon.jit(lambda v: v + 1)(x)
  assert isinstance(x.sharding, jaxon.sharding.Sharding)
  assert isinstance(y.sharding, jaxon.sharding.Sharding)
  assert jaxon.sharding.Sharding is _jax.Sharding  # the class JAX exports there too
  assert all(isinstance(d, jaxon.Device) for d in jaxon.devices())


def test_arrays_are_instances_of_jaxon_array():
  assert isinstance(jnp.ones(2), jaxon.Array) and not isinstance(np.ones(2), jaxon.Array)


def test_tracers_are_instances_of_jaxon_array_as_in_jax():
  seen = []

  def record(x):
    seen.append(isinstance(x, jaxon.Array))
    return x.sum()

  jaxon.jit(record)(jnp.ones(2))
  jaxon.grad(record)(jnp.ones(2))
  jaxon.vmap(record)(jnp.ones((2, 2)))
  assert seen == [True, True, True]
