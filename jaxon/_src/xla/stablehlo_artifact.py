"""StableHLO portable artifacts (VHLO bytecode), the form `jaxon.export` saves programs in,
and running them: jaxlib's serializer, shape refinement and compiler.

The serializer lowers CHLO to StableHLO first, as JAX's export does, and writes VHLO for a
target StableHLO version; a reader at any StableHLO version from the target on loads it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from jaxon._src import compiler
from jaxon._src.core import ShapedArray
from jaxon._src.xla import client


def serialize(module: ir.Module, target_version: str, keep_shardy: bool = False) -> bytes:
  """`module` as a portable artifact readable by StableHLO `target_version` and later.
  `keep_shardy` keeps an SPMD module's `sdy` mesh and shardings as they are (JAX's mixed
  serialization), rather than turning them into `mhlo.sharding` attributes."""
  bytecode = module.operation.get_asm(binary=True, enable_debug_info=False)
  return _jax.mlir.serialize_portable_artifact(bytecode, target_version, keep_shardy)


def deserialize(artifact: bytes, context: ir.Context) -> ir.Module:
  """The StableHLO module of a portable artifact, in `context`."""
  return stablehlo.deserialize_portable_artifact(context, artifact)


def refine_shapes(bytecode: bytes) -> bytes:
  """A module whose `main` has static argument types, with the shapes inside it refined
  from them (shape assertions checked at compile time)."""
  return _jax.mlir.refine_polymorphic_shapes(bytecode, enable_shape_assertions=True,
                                             validate_static_shapes=True)


def compile_and_run(bytecode: bytes, args: Sequence[Any],
                    out_avals: Sequence[ShapedArray]) -> list[Any]:
  """Compiles a static-shaped module and runs it on NumPy arguments; NumPy results."""
  from jaxon._src.xla.executable import to_buffer
  loaded = compiler.backend_compile_and_load(client.backend(), bytecode,
                                             client.device_list(), _compile_options())
  bufs = [to_buffer(x, ShapedArray(x.shape, x.dtype)) for x in args]
  sharding = client.default_sharding()
  handlers = [_jax.array_result_handler(a, sharding, True, _skip_checks=True)
              for a in out_avals]
  results = loaded.execute_sharded(bufs).consume_with_handlers(handlers)
  return [r._single_device_array_to_np_array_did_copy()[0] for r in results]


def _compile_options() -> Any:
  from jaxlib import xla_client
  return xla_client.CompileOptions()


def target_version() -> str:
  """The StableHLO version artifacts are written for: the one 12 weeks old (JAX's choice),
  so that runtimes built up to 12 weeks before this jaxlib read them."""
  return stablehlo.get_version_from_compatibility_requirement(
      stablehlo.StablehloCompatibilityRequirement.WEEK_12)
