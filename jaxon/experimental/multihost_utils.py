"""jaxon.experimental.multihost_utils: host values across the processes of a job (JAX's
`jax.experimental.multihost_utils`)."""
from jaxon._src.multihost_utils import (
    assert_equal as assert_equal,
    broadcast_one_to_all as broadcast_one_to_all,
    process_allgather as process_allgather,
    sync_global_devices as sync_global_devices,
)
from jaxon._src.tree_util import tree_flatten as tree_flatten, tree_unflatten as tree_unflatten
