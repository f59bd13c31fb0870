"""jaxon.custom_derivatives: functions with custom JVP and VJP rules (seed 002)."""
from jaxon._src.lax.custom_derivatives import (
    CustomVJPPrimal as CustomVJPPrimal,
    SymbolicZero as SymbolicZero,
    closure_convert as closure_convert,
    custom_gradient as custom_gradient,
    custom_jvp as custom_jvp,
    custom_jvp_call_p as custom_jvp_call_p,
    custom_vjp as custom_vjp,
    custom_vjp_call_p as custom_vjp_call_p,
    custom_vjp_primal_tree_values as custom_vjp_primal_tree_values,
    zero_from_primal as zero_from_primal,
)
from jaxon._src.linear_call import linear_call as linear_call
