"""jaxon.scipy.stats.multivariate_normal: the multivariate normal distribution (re-exports only)."""
from jaxon._src.scipy.stats.multivariate import (
    multivariate_normal_logpdf as logpdf,
    multivariate_normal_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
