"""jaxon.experimental.sparse.util: shared sparse helpers and warnings."""
from jaxon._src.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning, SparseEfficiencyError as
    SparseEfficiencyError, SparseEfficiencyWarning as SparseEfficiencyWarning,
    SparseInfo as SparseInfo, nfold_vmap as nfold_vmap)
