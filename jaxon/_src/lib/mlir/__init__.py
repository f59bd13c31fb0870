from jaxlib.mlir import ir as ir
