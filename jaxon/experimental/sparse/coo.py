"""jaxon.experimental.sparse.coo: the 2-D COO format and its primitives."""
from jaxon._src.sparse.coo_csr import (
    COO as COO, COOInfo as COOInfo, coo_fromdense as coo_fromdense,
    coo_fromdense_p as coo_fromdense_p, coo_matmat as coo_matmat, coo_matmat_p as coo_matmat_p,
    coo_matvec as coo_matvec, coo_matvec_p as coo_matvec_p, coo_todense as coo_todense,
    coo_todense_p as coo_todense_p)
