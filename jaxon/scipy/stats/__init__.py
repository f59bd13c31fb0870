"""jaxon.scipy.stats: SciPy's statistical distributions (re-exports only)."""
from jaxon.scipy.stats import norm as norm
