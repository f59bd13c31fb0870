"""Mutable array references (`jax.ref`)."""
from jaxon._src.state.primitives import (
    addupdate as addupdate,
    empty_ref as empty_ref,
    free_ref as free_ref,
    freeze as freeze,
    get as get,
    new_ref as new_ref,
    set as set,
    swap as swap,
)
from jaxon._src.state.types import AbstractRef as AbstractRef, Ref as Ref
import jaxon._src.state.discharge  # noqa: F401  (loops, cond and jit discharge refs)
import jaxon._src.state.tracer_indexing  # noqa: F401  (ref[idx] on traced refs)
