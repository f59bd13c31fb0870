"""jaxon.core: primitives, abstract values, tracers and jaxprs (seed 000's `jax.core`)."""
from jaxon._src.core import (
    AbstractValue as AbstractValue,
    ClosedJaxpr as ClosedJaxpr,
    DropVar as DropVar,
    EvalTrace as EvalTrace,
    Jaxpr as Jaxpr,
    JaxprEqn as JaxprEqn,
    Literal as Literal,
    Primitive as Primitive,
    ShapedArray as ShapedArray,
    Trace as Trace,
    Tracer as Tracer,
    Var as Var,
    check_jaxpr as check_jaxpr,
    concrete_or_error as concrete_or_error,
    eval_jaxpr as eval_jaxpr,
    get_aval as get_aval,
    jaxpr_as_fun as jaxpr_as_fun,
    max_dim as max_dim,
    min_dim as min_dim,
    raise_to_shaped as raise_to_shaped,
    valid_jaxtype as valid_jaxtype,
)
from jaxon._src.core import Atom as Atom
from jaxon._src.extend_core import (
    ParamDict as ParamDict,
    Value as Value,
    ensure_compile_time_eval as ensure_compile_time_eval,
    eval_context as eval_context,
)
from jaxon._src.jaxpr_parser import (
    jaxpr_from_text as jaxpr_from_text,
    jaxpr_to_text as jaxpr_to_text,
)
