"""jaxon.scipy.stats.wrapcauchy: the wrapped Cauchy distribution (re-exports only)."""
from jaxon._src.scipy.stats.shape_continuous import (
    wrapcauchy_logpdf as logpdf,
    wrapcauchy_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
