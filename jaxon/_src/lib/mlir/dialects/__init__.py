"""The MLIR dialects lowering rules build with (seed 000 imports `hlo` from here)."""
from jaxlib.mlir.dialects import chlo as chlo
from jaxlib.mlir.dialects import func as func
from jaxlib.mlir.dialects import stablehlo as hlo
