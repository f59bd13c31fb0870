"""jaxon.scipy.stats.bernoulli: the Bernoulli distribution (re-exports only)."""
from jaxon._src.scipy.stats.discrete import (
    bernoulli_cdf as cdf,
    bernoulli_logpmf as logpmf,
    bernoulli_pmf as pmf,
    bernoulli_ppf as ppf,
)

__all__ = ["cdf", "logpmf", "pmf", "ppf"]
