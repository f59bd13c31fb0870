"""jaxon.scipy.stats.laplace: the Laplace distribution (re-exports only)."""
from jaxon._src.scipy.stats.location_scale import (
    laplace_cdf as cdf,
    laplace_logpdf as logpdf,
    laplace_pdf as pdf,
)

__all__ = ["cdf", "logpdf", "pdf"]
