"""Records the public API surface of JAX 0.10.2 as data: for each public module, the sorted
names a user can reach as `module.name`. `tests/test_api_surface.py` compares jaxon with it.

Run once with an interpreter that has the real `jax` (never jaxon's venv):

  /tmp/jaxenv/bin/python tools/record_jax_api.py tests/data/jax_0_10_2_public_api.json

A public name is one that `dir(module)` lists without a leading underscore, minus what a
module only uses: modules it imported from elsewhere (`np`, `functools`), standard-library
helpers imported under their own names (`Any`, `partial`) and
`from __future__ import annotations`. Its own submodules (`jax.numpy.linalg`) count, and so
do type aliases (`ArrayLike`).
"""
from __future__ import annotations
import __future__

import builtins
import collections
import collections.abc
import dataclasses
import enum
import functools
import importlib
import itertools
import json
import operator
import sys
import types
import typing

# The modules that programs and libraries (optax, chex, flax, …) import. A module whose
# import fails here (jax2tf needs TensorFlow) is written down with the reason, not skipped
# silently.
MODULES = [
    "jax", "jax.numpy", "jax.numpy.fft", "jax.numpy.linalg", "jax.lax", "jax.lax.linalg",
    "jax.random", "jax.nn", "jax.nn.initializers",
    "jax.scipy", "jax.scipy.special", "jax.scipy.linalg", "jax.scipy.signal",
    "jax.scipy.optimize", "jax.scipy.sparse", "jax.scipy.sparse.linalg",
    "jax.scipy.integrate", "jax.scipy.ndimage", "jax.scipy.fft", "jax.scipy.cluster",
    "jax.scipy.cluster.vq", "jax.scipy.interpolate", "jax.scipy.spatial",
    "jax.scipy.spatial.transform", "jax.scipy.stats",
    "jax.tree_util", "jax.tree", "jax.typing", "jax.dtypes", "jax.errors", "jax.sharding",
    "jax.stages", "jax.test_util", "jax.api_util", "jax.flatten_util",
    "jax.custom_derivatives", "jax.custom_batching", "jax.ad_checkpoint", "jax.debug",
    "jax.core", "jax.interpreters.ad", "jax.interpreters.batching", "jax.interpreters.mlir",
    "jax.image", "jax.ops", "jax.profiler", "jax.monitoring", "jax.export", "jax.dlpack",
    "jax.distributed", "jax.ffi",
    "jax.example_libraries.stax", "jax.example_libraries.optimizers",
    "jax.experimental", "jax.experimental.checkify", "jax.experimental.ode",
    "jax.experimental.shard_map", "jax.experimental.multihost_utils",
    "jax.experimental.mesh_utils", "jax.experimental.pjit", "jax.experimental.jet",
    "jax.experimental.sparse", "jax.experimental.custom_partitioning",
    "jax.experimental.jax2tf",
    "jax.extend", "jax.extend.core", "jax.extend.linear_util", "jax.extend.backend",
]
STATS_PARENT = "jax.scipy.stats"
STDLIB_HELPERS = (builtins, collections, collections.abc, dataclasses, enum, functools,
                  itertools, operator, typing)
_ABSENT = object()


def stats_submodules() -> list[str]:
  """Every distribution module of `jax.scipy.stats` (`norm`, `beta`, …)."""
  stats = importlib.import_module(STATS_PARENT)
  return sorted(f"{STATS_PARENT}.{name}" for name, value in vars(stats).items()
                if isinstance(value, types.ModuleType)
                and value.__name__ == f"{STATS_PARENT}.{name}")


def public_names(module: types.ModuleType) -> list[str]:
  names = []
  for name in dir(module):
    if name.startswith("_"):
      continue
    value = getattr(module, name, None)
    if isinstance(value, __future__._Feature):
      continue
    if isinstance(value, types.ModuleType) and value.__name__ != f"{module.__name__}.{name}":
      continue
    if any(value is getattr(helper, name, _ABSENT) for helper in STDLIB_HELPERS):
      continue
    names.append(name)
  return sorted(names)


def record() -> dict:
  import jax
  modules, not_importable = {}, {}
  for name in MODULES + stats_submodules():
    try:
      importlib.import_module(name)
    except Exception as e:  # noqa: BLE001  (any failure is the recorded fact)
      not_importable[name] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
  # Names are read once everything is imported, so submodule attributes are all present.
  for name in MODULES + stats_submodules():
    if name not in not_importable:
      modules[name] = public_names(sys.modules[name])
  return {"jax_version": jax.__version__, "modules": modules,
          "not_importable": not_importable}


def main() -> None:
  if len(sys.argv) != 2:
    sys.exit(__doc__)
  data = record()
  with open(sys.argv[1], "w") as f:
    json.dump(data, f, indent=1, sort_keys=True)
    f.write("\n")
  total = sum(len(names) for names in data["modules"].values())
  print(f"JAX {data['jax_version']}: {len(data['modules'])} modules, {total} names; "
        f"not importable: {sorted(data['not_importable'])}")


if __name__ == "__main__":
  main()
