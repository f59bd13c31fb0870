"""jaxon.scipy.integrate: numerical integration (re-exports only)."""
from jaxon._src.scipy.integrate import trapezoid as trapezoid
