"""jaxon.scipy.stats.multinomial: the multinomial distribution (re-exports only)."""
from jaxon._src.scipy.stats.multivariate import (
    multinomial_logpmf as logpmf,
    multinomial_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
