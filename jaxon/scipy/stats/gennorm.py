"""jaxon.scipy.stats.gennorm: the generalized normal distribution (re-exports only)."""
from jaxon._src.scipy.stats.shape_continuous import (
    gennorm_cdf as cdf,
    gennorm_logpdf as logpdf,
    gennorm_pdf as pdf,
)

__all__ = ["cdf", "logpdf", "pdf"]
