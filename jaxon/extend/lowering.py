"""jaxon.extend.lowering: what lowering rules receive (re-exports only)."""
from jaxon._src.interpreters.mlir import (
    LoweringRuleContext as LoweringRuleContext,
    make_ir_context as make_ir_context,
)
