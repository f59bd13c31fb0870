"""jaxon.interpreters.mlir: lowering rules (seed 000's `mlir.register_lowering`)."""
from jaxon._src.interpreters.mlir import (
    LoweringRuleContext as LoweringRuleContext,
    aval_to_ir_type as aval_to_ir_type,
    dtype_to_ir_type as dtype_to_ir_type,
    ir_constant as ir_constant,
    lower_fun as lower_fun,
    register_lowering as register_lowering,
)
from jaxon._src.interpreters.mlir import (
    LoweringRule as LoweringRule,
    ModuleContext as ModuleContext,
    make_ir_context as make_ir_context,
)
from jaxon._src.interpreters.mlir_api import (
    aval_to_ir_types as aval_to_ir_types,
    dense_int_array as dense_int_array,
    dense_int_elements as dense_int_elements,
    flatten_ir_types as flatten_ir_types,
    flatten_ir_values as flatten_ir_values,
    i32_attr as i32_attr,
    i64_attr as i64_attr,
    ir_attribute as ir_attribute,
    ir_constants as ir_constants,
    ir_tree_registry as ir_tree_registry,
    module_to_bytecode as module_to_bytecode,
    module_to_string as module_to_string,
    token_type as token_type,
    unflatten_ir_values_like_types as unflatten_ir_values_like_types,
)
from jaxlib.mlir.ir import Value as Value  # what lowering rules take and return
