"""Records, for the public functions and classes of JAX 0.10.2's user-facing modules, the
parameters a caller can pass by keyword. `tests/test_api_signatures.py` checks that jaxon
accepts each of them (a name that exists in both but takes other keywords breaks a port as
surely as a missing name).

Run once with an interpreter that has the real `jax` (never jaxon's venv), after
`tools/record_jax_api.py`, whose list of public names it reads:

  /tmp/jaxenv/bin/python tools/record_jax_signatures.py \
      tests/data/jax_0_10_2_public_api.json tests/data/jax_0_10_2_signatures.json

Positional-only parameters are not recorded (their names are not part of a call), and
neither are the internals' modules (`jax.interpreters`, `jax.extend`, `jax.core`, …), whose
signatures are JAX's implementation.
"""
from __future__ import annotations

import importlib
import inspect
import json
import sys

USER_MODULES = [
    "jax", "jax.numpy", "jax.numpy.fft", "jax.numpy.linalg", "jax.lax", "jax.lax.linalg",
    "jax.random", "jax.nn", "jax.nn.initializers", "jax.scipy.special", "jax.scipy.linalg",
    "jax.scipy.signal", "jax.scipy.optimize", "jax.scipy.sparse.linalg",
    "jax.scipy.integrate", "jax.scipy.ndimage", "jax.scipy.fft", "jax.scipy.cluster.vq",
    "jax.scipy.interpolate", "jax.scipy.spatial.transform", "jax.scipy.stats",
    "jax.tree_util", "jax.tree", "jax.dtypes", "jax.sharding", "jax.custom_derivatives",
    "jax.custom_batching", "jax.ad_checkpoint", "jax.debug", "jax.image", "jax.ops",
    "jax.flatten_util", "jax.test_util", "jax.export", "jax.profiler", "jax.dlpack",
    "jax.experimental.checkify", "jax.experimental.ode", "jax.experimental.shard_map",
    "jax.experimental.jet", "jax.experimental.sparse",
    "jax.example_libraries.stax", "jax.example_libraries.optimizers",
]
KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def keywords(obj: object) -> list[str] | None:
  """The names `obj` takes by keyword, or None when it has no signature to read."""
  try:
    signature = inspect.signature(obj)
  except (TypeError, ValueError):
    return None
  return [p.name for p in signature.parameters.values() if p.kind in KEYWORD_KINDS]


def record(public_api: dict) -> dict:
  import jax
  modules = [m for m in public_api["modules"]
             if m in USER_MODULES or m.startswith("jax.scipy.stats.")]
  signatures = {}
  for module_name in modules:
    module = importlib.import_module(module_name)
    for name in public_api["modules"][module_name]:
      obj = getattr(module, name, None)
      if not callable(obj) or isinstance(obj, type) and issubclass(obj, BaseException):
        continue
      names = keywords(obj)
      if names:
        signatures[f"{module_name}.{name}"] = names
  return {"jax_version": jax.__version__, "signatures": signatures}


def main() -> None:
  if len(sys.argv) != 3:
    sys.exit(__doc__)
  with open(sys.argv[1]) as f:
    data = record(json.load(f))
  lines = [f" {json.dumps(name)}: {json.dumps(names)}"
           for name, names in sorted(data["signatures"].items())]
  with open(sys.argv[2], "w") as f:  # one signature per line, for readable diffs
    f.write(f'{{"jax_version": {json.dumps(data["jax_version"])}, "signatures": {{\n')
    f.write(",\n".join(lines) + "\n}}\n")
  print(f"JAX {data['jax_version']}: {len(data['signatures'])} signatures")


if __name__ == "__main__":
  main()
