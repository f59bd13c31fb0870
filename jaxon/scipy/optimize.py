"""jaxon.scipy.optimize: minimization (re-exports only)."""
from jaxon._src.scipy.optimize import (
    OptimizeResults as OptimizeResults,
    minimize as minimize,
)
