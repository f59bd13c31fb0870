"""The MLIR dialects lowering rules build with (seed 000 imports `hlo` from here)."""
from jaxlib.mlir.dialects import chlo, func
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["chlo", "func", "hlo"]
