"""jaxon.api_util: argument handling for transformations built on `WrappedFun`s
(re-exports only)."""
from jaxon._src.api_util import (
    argnums_partial as argnums_partial,
    debug_info as debug_info,
    donation_vector as donation_vector,
    flatten_axes as flatten_axes,
    flatten_fun as flatten_fun,
    flatten_fun_nokwargs as flatten_fun_nokwargs,
    rebase_donate_argnums as rebase_donate_argnums,
    safe_map as safe_map,
    shaped_abstractify as shaped_abstractify,
)
