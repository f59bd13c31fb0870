"""jaxon.experimental.multihost_utils: host values across the processes of a job (JAX's
`jax.experimental.multihost_utils`)."""
from jaxon._src.multihost_arrays import (
    global_array_to_host_local_array as global_array_to_host_local_array,
    global_array_to_host_local_array_impl as global_array_to_host_local_array_impl,
    global_array_to_host_local_array_p as global_array_to_host_local_array_p,
    gtl_abstract_eval as gtl_abstract_eval,
    host_local_array_to_global_array as host_local_array_to_global_array,
    host_local_array_to_global_array_impl as host_local_array_to_global_array_impl,
    host_local_array_to_global_array_p as host_local_array_to_global_array_p,
    ltg_abstract_eval as ltg_abstract_eval,
    ltg_batcher as ltg_batcher,
)
from jaxon._src.multihost_utils import (
    ProcessFailureError as ProcessFailureError,
    assert_equal as assert_equal,
    broadcast_one_to_all as broadcast_one_to_all,
    live_devices as live_devices,
    process_allgather as process_allgather,
    reached_preemption_sync_point as reached_preemption_sync_point,
    sync_global_devices as sync_global_devices,
)
from jaxon._src.tree_util import tree_flatten as tree_flatten, tree_unflatten as tree_unflatten
from jaxon._src.sharding_impls import PartitionSpec as P  # noqa: F401 (JAX's module has it)
from jaxon._src.util import safe_zip as safe_zip
