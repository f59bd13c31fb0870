"""jaxon.experimental.sparse.linalg: sparse linear solves."""
from jaxon._src.sparse.linalg import spsolve as spsolve
