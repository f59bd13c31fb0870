"""jaxon.sharding: the layout of arrays over devices (JAX's `jax.sharding`; jaxon has one
device, so only the base class is here yet)."""
from jaxon._src.sharding import Sharding as Sharding
