"""jaxon.scipy.stats.expon: the exponential distribution (re-exports only)."""
from jaxon._src.scipy.stats.location_scale import (
    expon_cdf as cdf,
    expon_logcdf as logcdf,
    expon_logpdf as logpdf,
    expon_logsf as logsf,
    expon_pdf as pdf,
    expon_ppf as ppf,
    expon_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
