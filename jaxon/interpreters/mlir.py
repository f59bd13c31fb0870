"""jaxon.interpreters.mlir: lowering rules (seed 000's `mlir.register_lowering`)."""
from jaxon._src.interpreters.mlir import (
    LoweringRuleContext as LoweringRuleContext,
    aval_to_ir_type as aval_to_ir_type,
    dtype_to_ir_type as dtype_to_ir_type,
    ir_constant as ir_constant,
    lower_fun as lower_fun,
    register_lowering as register_lowering,
)
