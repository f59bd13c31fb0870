"""jaxon.scipy.interpolate: interpolation on regular grids (re-exports only)."""
from jaxon._src.scipy.interpolate import RegularGridInterpolator as RegularGridInterpolator
