"""jaxon.extend: access to jaxon's internal machinery for libraries that extend it (JAX's
`jax.extend`; re-exports only). Like JAX's, it offers no compatibility guarantee."""
from jaxon.extend import (
    backend as backend,
    core as core,
    linear_util as linear_util,
    lowering as lowering,
    mlir as mlir,
    random as random,
    sharding as sharding,
    source_info_util as source_info_util,
    xla as xla,
)
