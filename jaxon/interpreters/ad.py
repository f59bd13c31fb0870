"""jaxon.interpreters.ad: JVP and transpose rule tables (seed 000's `jax.interpreters.ad`)."""
from jaxon._src.interpreters.ad import (
    JVPTrace as JVPTrace,
    JVPTracer as JVPTracer,
    UndefinedPrimal as UndefinedPrimal,
    Zero as Zero,
    add_jaxvals_p as add_jaxvals_p,
    backward_pass as backward_pass,
    defjvp as defjvp,
    deflinear as deflinear,
    instantiate_zeros as instantiate_zeros,
    is_undefined_primal as is_undefined_primal,
    primitive_jvps as primitive_jvps,
    primitive_transposes as primitive_transposes,
)
from jaxon._src.interpreters.ad import (
    add_tangents as add_tangents,
    zeros_like_aval as zeros_like_aval,
)
from jaxon._src.interpreters.rule_helpers import (
    add_jaxvals as add_jaxvals,
    defbilinear as defbilinear,
    defjvp2 as defjvp2,
    deflinear2 as deflinear2,
    get_primitive_transpose as get_primitive_transpose,
    jvp as jvp,
)
