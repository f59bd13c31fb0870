"""Exporting jitted functions as serializable programs, and symbolic shapes (`jax.export`)."""
from jaxon._src.export._export import (
    DisabledSafetyCheck as DisabledSafetyCheck,
)
from jaxon._src.export._export import (
    Exported as Exported,
)
from jaxon._src.export._export import (
    default_export_platform as default_export_platform,
)
from jaxon._src.export._export import (
    export as export,
)
from jaxon._src.export._export import (
    maximum_supported_calling_convention_version as maximum_supported_calling_convention_version,
)
from jaxon._src.export._export import (
    minimum_supported_calling_convention_version as minimum_supported_calling_convention_version,
)
from jaxon._src.export.serialization import deserialize as deserialize
from jaxon._src.export.shape_poly import (
    InconclusiveDimensionOperation as InconclusiveDimensionOperation,
)
from jaxon._src.export.shape_poly import SymbolicScope as SymbolicScope
from jaxon._src.export.shape_poly import is_symbolic_dim as is_symbolic_dim
from jaxon._src.export.shape_poly import symbolic_args_specs as symbolic_args_specs
from jaxon._src.export.shape_poly import symbolic_shape as symbolic_shape
from jaxon._src.export.serialization import (
    register_namedtuple_serialization as register_namedtuple_serialization,
)
from jaxon._src.export.serialization import (
    register_pytree_node_serialization as register_pytree_node_serialization,
)
