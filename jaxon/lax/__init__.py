"""jaxon.lax: the primitives, one function each, with XLA's semantics (no implicit
promotion or broadcasting beyond scalars)."""
# --- elementwise, conversion, broadcasting (jaxon/_src/lax/lax.py)
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

# --- reshape, transpose, squeeze, expand_dims, rev, concatenate, pad (shape_ops.py)

# --- slice, dynamic_slice, dynamic_update_slice, gather, scatter (slicing.py)

# --- reductions, argmax/argmin, cumulative and windowed reductions (reductions.py)
from jaxon._src.lax.reductions import reduce_sum as reduce_sum

# --- dot_general (dot_general.py), conv_general_dilated (convolution.py)

# --- sort, top_k (sorting.py)
