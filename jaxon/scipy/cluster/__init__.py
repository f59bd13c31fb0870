"""jaxon.scipy.cluster: clustering (re-exports only)."""
from jaxon.scipy.cluster import vq as vq
