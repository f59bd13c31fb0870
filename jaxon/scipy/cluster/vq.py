"""jaxon.scipy.cluster.vq: vector quantisation (re-exports only)."""
from jaxon._src.scipy.cluster import vq as vq
