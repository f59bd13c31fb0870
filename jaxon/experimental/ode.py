"""jaxon.experimental.ode: adaptive ODE integration (re-exports only). Besides `odeint`,
JAX's module exposes the Dormand-Prince steps it is built from, and its utilities."""
from jaxon._src import ode as _ode
from jaxon._src.flatten_util import ravel_pytree as ravel_pytree
from jaxon._src.ode import odeint as odeint
from jaxon._src.tree_util import tree_leaves as tree_leaves, tree_map as tree_map
from jaxon._src.util import safe_map as safe_map, safe_zip as safe_zip

initial_step_size = _ode._initial_step_size
interp_fit_dopri = _ode._interp_fit_dopri
mean_error_ratio = _ode._mean_error_ratio
optimal_step_size = _ode._optimal_step_size
runge_kutta_step = _ode._runge_kutta_step
map = safe_map  # noqa: A001 (JAX's module exports its length-checking map as `map`)
zip = safe_zip  # noqa: A001
