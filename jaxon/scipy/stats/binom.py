"""jaxon.scipy.stats.binom: the binomial distribution (re-exports only)."""
from jaxon._src.scipy.stats.discrete import (
    binom_logpmf as logpmf,
    binom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
