"""jaxon.scipy: SciPy's API on jaxon arrays."""
from jaxon.scipy import linalg as linalg
from jaxon.scipy import special as special
from jaxon.scipy import stats as stats
from jaxon.scipy import sparse as sparse
from jaxon.scipy import optimize as optimize
