"""jaxon.scipy.stats.dirichlet: the Dirichlet distribution (re-exports only)."""
from jaxon._src.scipy.stats.multivariate import (
    dirichlet_logpdf as logpdf,
    dirichlet_pdf as pdf,
)

__all__ = ["logpdf", "pdf"]
