"""jaxon.scipy.stats.cauchy: the Cauchy distribution (re-exports only)."""
from jaxon._src.scipy.stats.location_scale import (
    cauchy_cdf as cdf,
    cauchy_isf as isf,
    cauchy_logcdf as logcdf,
    cauchy_logpdf as logpdf,
    cauchy_logsf as logsf,
    cauchy_pdf as pdf,
    cauchy_ppf as ppf,
    cauchy_sf as sf,
)

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
