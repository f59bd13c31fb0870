"""jaxon.experimental: APIs JAX keeps outside its stable surface: `io_callback` here, the
rest in submodules imported on their own (`from jaxon.experimental.ode import odeint`)."""
from jaxon._src.callback import io_callback as io_callback
