"""jaxon.scipy.stats.t: Student's t distribution (re-exports only)."""
from jaxon._src.scipy.stats.shape_continuous import (
    t_logpdf as logpdf,
    t_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
