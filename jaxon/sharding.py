"""jaxon.sharding: the layout of arrays over devices (JAX's `jax.sharding`)."""
from jaxon._src.mesh import AbstractMesh as AbstractMesh, AxisType as AxisType, Mesh as Mesh
from jaxon._src.sharding import Sharding as Sharding
from jaxon._src.sharding_impls import (
    NamedSharding as NamedSharding,
    PartitionSpec as PartitionSpec,
    SingleDeviceSharding as SingleDeviceSharding,
)
