"""jaxon.experimental.sparse.transform: the `sparsify` transformation."""
from jaxon._src.sparse.transform import (eval_sparse as eval_sparse, sparse_rules_bcoo as
                                         sparse_rules_bcoo, sparsify as sparsify)
