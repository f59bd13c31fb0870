"""jaxon.scipy.sparse: SciPy's sparse solvers on jaxon arrays."""
from jaxon.scipy.sparse import linalg as linalg
