"""jaxon.scipy.stats.gamma: the gamma distribution (re-exports only)."""
from jaxon._src.scipy.stats.shape_continuous import (
    gamma_cdf as cdf,
    gamma_logcdf as logcdf,
    gamma_logpdf as logpdf,
    gamma_logsf as logsf,
    gamma_pdf as pdf,
    gamma_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
