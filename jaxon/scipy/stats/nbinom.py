"""jaxon.scipy.stats.nbinom: the negative binomial distribution (re-exports only)."""
from jaxon._src.scipy.stats.discrete import (
    nbinom_logpmf as logpmf,
    nbinom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
