"""jaxon.scipy.ndimage: interpolation of N-dimensional arrays (re-exports only)."""
from jaxon._src.scipy.ndimage import map_coordinates as map_coordinates
