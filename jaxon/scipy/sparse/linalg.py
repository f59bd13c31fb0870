"""jaxon.scipy.sparse.linalg: iterative linear solvers (re-exports only)."""
from jaxon._src.scipy.sparse.linalg import (
    bicgstab as bicgstab,
    cg as cg,
    gmres as gmres,
)
