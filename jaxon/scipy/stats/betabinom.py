"""jaxon.scipy.stats.betabinom: the beta-binomial distribution (re-exports only)."""
from jaxon._src.scipy.stats.discrete import (
    betabinom_logpmf as logpmf,
    betabinom_pmf as pmf,
)

__all__ = ["logpmf", "pmf"]
