"""jaxon.scipy.stats.logistic: the logistic distribution (re-exports only)."""
from jaxon._src.scipy.stats.location_scale import (
    logistic_cdf as cdf,
    logistic_isf as isf,
    logistic_logpdf as logpdf,
    logistic_pdf as pdf,
    logistic_ppf as ppf,
    logistic_sf as sf,
)

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]
