"""jaxon.scipy.stats.vonmises: the von Mises distribution (re-exports only)."""
from jaxon._src.scipy.stats.shape_continuous import (
    vonmises_logpdf as logpdf,
    vonmises_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
