"""jaxon.experimental.sparse.random: random sparse arrays."""
from jaxon._src.sparse.api import random_bcoo as random_bcoo
