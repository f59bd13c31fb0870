"""jaxon.scipy.stats.pareto: the Pareto distribution (re-exports only)."""
from jaxon._src.scipy.stats.shape_continuous import (
    pareto_cdf as cdf,
    pareto_logcdf as logcdf,
    pareto_logpdf as logpdf,
    pareto_logsf as logsf,
    pareto_pdf as pdf,
    pareto_ppf as ppf,
    pareto_sf as sf,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
