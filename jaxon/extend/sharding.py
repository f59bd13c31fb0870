"""jaxon.extend.sharding: XLA sharding protos (re-exports only)."""
from jaxon._src.extend import (
    get_hlo_sharding_from_serialized_proto as get_hlo_sharding_from_serialized_proto,
    get_op_sharding_from_serialized_proto as get_op_sharding_from_serialized_proto,
    get_serialized_proto_from_hlo_sharding as get_serialized_proto_from_hlo_sharding,
)
