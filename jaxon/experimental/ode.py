"""jaxon.experimental.ode: adaptive ODE integration (re-exports only)."""
from jaxon._src.ode import odeint as odeint
