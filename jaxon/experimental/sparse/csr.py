"""jaxon.experimental.sparse.csr: the 2-D CSR and CSC formats and their primitives."""
from jaxon._src.sparse.coo_csr import (
    CSC as CSC, CSR as CSR, csr_fromdense as csr_fromdense, csr_fromdense_p as csr_fromdense_p,
    csr_matmat as csr_matmat, csr_matmat_p as csr_matmat_p, csr_matvec as csr_matvec,
    csr_matvec_p as csr_matvec_p, csr_todense as csr_todense, csr_todense_p as csr_todense_p)
