"""jaxon.lax: the primitives, one function each, with XLA's semantics (no implicit
promotion or broadcasting beyond scalars)."""
from jaxon._src.lax.lax import (
    add as add,
    broadcast as broadcast,
    broadcast_in_dim as broadcast_in_dim,
    convert_element_type as convert_element_type,
    cos as cos,
    div as div,
    exp as exp,
    full as full,
    log as log,
    max as max,
    min as min,
    mul as mul,
    neg as neg,
    sin as sin,
    sub as sub,
    tanh as tanh,
    zeros_like_array as zeros_like_array,
)
from jaxon._src.lax.reductions import reduce_sum as reduce_sum
