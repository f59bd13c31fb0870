"""jaxon.extend.mlir: jaxlib's StableHLO serialization entry points (re-exports only)."""
from jaxlib._jax.mlir import (
    deserialize_portable_artifact as deserialize_portable_artifact,
    hlo_to_stablehlo as hlo_to_stablehlo,
    refine_polymorphic_shapes as refine_polymorphic_shapes,
    serialize_portable_artifact as serialize_portable_artifact,
)
