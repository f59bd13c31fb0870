"""jaxon.interpreters.batching: batching rule table (seed 000's `jax.interpreters.batching`)."""
from jaxon._src.interpreters.batching import (
    BatchTrace as BatchTrace,
    BatchTracer as BatchTracer,
    defbroadcasting as defbroadcasting,
    defvectorized as defvectorized,
    not_mapped as not_mapped,
    primitive_batchers as primitive_batchers,
)
from jaxon._src.interpreters.batching import (
    bdim_at_front as bdim_at_front,
    fancy_primitive_batchers as fancy_primitive_batchers,
)
from jaxon._src.interpreters.rule_helpers import (
    broadcast as broadcast,
    defreducer as defreducer,
)
