"""jaxon.extend.core: primitives, jaxprs and traces (re-exports only)."""
from jaxon._src.core import (
    ClosedJaxpr as ClosedJaxpr,
    DropVar as DropVar,
    Jaxpr as Jaxpr,
    JaxprEqn as JaxprEqn,
    Literal as Literal,
    Primitive as Primitive,
    Var as Var,
    check_jaxpr as check_jaxpr,
    concrete_or_error as concrete_or_error,
    jaxpr_as_fun as jaxpr_as_fun,
    set_current_trace as set_current_trace,
    valid_jaxtype as valid_jaxtype,
)
from jaxon._src.errors import JaxprTypeError as JaxprTypeError
from jaxon._src.export.shape_poly import (
    InconclusiveDimensionOperation as InconclusiveDimensionOperation,
)
from jaxon._src.extend_core import (
    array_types as array_types,
    find_top_trace as find_top_trace,
    gensym as gensym,
    get_opaque_trace_state as get_opaque_trace_state,
    jaxprs_in_params as jaxprs_in_params,
    mapped_aval as mapped_aval,
    new_jaxpr_eqn as new_jaxpr_eqn,
    nonempty_axis_env_DO_NOT_USE as nonempty_axis_env_DO_NOT_USE,
    primal_dtype_to_tangent_dtype as primal_dtype_to_tangent_dtype,
    subjaxprs as subjaxprs,
    take_current_trace as take_current_trace,
    unmapped_aval as unmapped_aval,
    unsafe_am_i_under_a_jit_DO_NOT_USE as unsafe_am_i_under_a_jit_DO_NOT_USE,
    unsafe_am_i_under_a_vmap_DO_NOT_USE as unsafe_am_i_under_a_vmap_DO_NOT_USE,
    unsafe_get_axis_names_DO_NOT_USE as unsafe_get_axis_names_DO_NOT_USE,
)
from jaxon._src.linear_util import DebugInfo as DebugInfo
