"""jaxon.scipy.spatial: SciPy's spatial algorithms (the `transform` submodule)."""
from jaxon.scipy.spatial import transform as transform
