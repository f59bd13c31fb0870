"""jaxon.scipy.stats.truncnorm: the truncated normal distribution (re-exports only)."""
from jaxon._src.scipy.stats.truncnorm import (
    cdf as cdf,
    logcdf as logcdf,
    logpdf as logpdf,
    logsf as logsf,
    pdf as pdf,
    sf as sf,
)
