"""jaxon.experimental: APIs JAX keeps outside its stable surface. Submodules are imported
on their own (`from jaxon.experimental.ode import odeint`)."""
