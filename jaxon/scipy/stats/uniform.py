"""jaxon.scipy.stats.uniform: the uniform distribution on [loc, loc + scale] (re-exports only)."""
from jaxon._src.scipy.stats.location_scale import (
    uniform_cdf as cdf,
    uniform_logpdf as logpdf,
    uniform_pdf as pdf,
    uniform_ppf as ppf,
)

__all__ = ["cdf", "logpdf", "pdf", "ppf"]
