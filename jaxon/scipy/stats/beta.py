"""jaxon.scipy.stats.beta: the beta distribution (re-exports only)."""
from jaxon._src.scipy.stats.shape_continuous import (
    beta_cdf as cdf,
    beta_logcdf as logcdf,
    beta_logpdf as logpdf,
    beta_logsf as logsf,
    beta_pdf as pdf,
    beta_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
