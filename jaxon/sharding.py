"""jaxon.sharding: the layout of arrays over devices (JAX's `jax.sharding`)."""
from jaxon._src.mesh import AbstractMesh as AbstractMesh, AxisType as AxisType, Mesh as Mesh
from jaxon._src.sharding import Sharding as Sharding
from jaxon._src.sharding_impls import (
    NamedSharding as NamedSharding,
    PartitionSpec as PartitionSpec,
    SingleDeviceSharding as SingleDeviceSharding,
)
from jaxon._src.explicit_sharding import (
    AbstractDevice as AbstractDevice,
    ManualAxisType as ManualAxisType,
    auto_axes as auto_axes,
    explicit_axes as explicit_axes,
    get_abstract_mesh as get_abstract_mesh,
    get_mesh as get_mesh,
    make_single_device_sharding as make_single_device_sharding,
    reshard as reshard,
    set_mesh as set_mesh,
    use_abstract_mesh as use_abstract_mesh,
)
