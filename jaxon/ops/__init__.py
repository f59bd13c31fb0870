"""jaxon.ops: segment reductions (`segment_sum(data, segment_ids)` and its kin), and the
functional index updates of early JAX (`index_update(x, idx, y)` for `x[idx] = y`, …),
kept for programs written against that API; `x.at[idx]` is the modern spelling.
`index[...]` builds an index tuple (NumPy's `index_exp`)."""
from jaxon._src.numpy.indexing import (
    index as index,
    index_add as index_add,
    index_max as index_max,
    index_min as index_min,
    index_mul as index_mul,
    index_update as index_update,
)
from jaxon._src.numpy.segment_ops import (
    segment_max as segment_max,
    segment_min as segment_min,
    segment_prod as segment_prod,
    segment_sum as segment_sum,
)
