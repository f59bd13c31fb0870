"""jaxon.experimental.sparse.ad: differentiation with sparse arguments."""
from jaxon._src.sparse.ad import (flatten_fun_for_sparse_ad as flatten_fun_for_sparse_ad,
                                  grad as grad, jacfwd as jacfwd, jacobian as jacobian,
                                  jacrev as jacrev, value_and_grad as value_and_grad)
