"""jaxon.scipy.spatial.transform: 3-D rotations and their interpolation (re-exports only)."""
from jaxon._src.scipy.spatial_transform import (
    Rotation as Rotation,
    Slerp as Slerp,
)
