"""jaxon.scipy.stats.geom: the geometric distribution (re-exports only)."""
from jaxon._src.scipy.stats.discrete import (
    geom_logpmf as logpmf,
    geom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
