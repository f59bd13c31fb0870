"""jaxon.scipy.stats.norm: the normal distribution (re-exports only)."""
from jaxon._src.scipy.stats.norm import (
    cdf as cdf,
    isf as isf,
    logcdf as logcdf,
    logpdf as logpdf,
    logsf as logsf,
    pdf as pdf,
    ppf as ppf,
    sf as sf,
)
