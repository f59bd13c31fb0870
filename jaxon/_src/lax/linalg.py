"""Linear-algebra primitives: Cholesky, triangular solve, LU, QR, SVD, and the Hermitian and
general eigendecompositions.

Every primitive works on the last two dimensions of its operands and treats the leading ones
as a batch, so batching a primitive only moves the mapped dimension to the front.

Lowering: on the CPU every primitive calls one of the LAPACK kernels jaxlib ships (registered
by `jaxon._src.xla.lapack`) through typed-FFI custom calls, as JAX does. LAPACK stores
matrices column-major, so the custom calls give XLA column-major layouts for their matrix
operands and results, and XLA does any transposing. Where a kernel reports failure
(`info != 0`), its results become NaN, as in JAX. `cholesky` and `triangular_solve` also
lower to native StableHLO ops, on a GPU and for programs TensorFlow's XLA runs (jax2tf),
which has no LAPACK kernels; XLA expands those ops into loops, several times slower on the
CPU. (`mlir.current_platform` says which platform is lowered for.)

Derivatives are the standard ones (each rule names its source): they are written with these
primitives, `dot_general` and elementwise ops, so they can be differentiated again and, being
linear in the tangents, transposed for reverse mode. Only `triangular_solve` needs a transpose
rule of its own (it is linear in its right-hand side).

This module gathers the public names; the code lives beside it:
  linalg_helpers.py         shared matrix utilities, checks, batching and lowering helpers
  linalg_triangular.py      triangular_solve
  linalg_decompositions.py  cholesky (and symmetrize), lu (lu_pivots_to_permutation,
                            lu_solve) and qr
  linalg_eigen.py           eigh, svd and eig, and the enums that pick their algorithms
"""
from jaxon._src.lax.linalg_decompositions import (
    cholesky as cholesky,
    cholesky_p as cholesky_p,
    lu as lu,
    lu_p as lu_p,
    lu_pivots_to_permutation as lu_pivots_to_permutation,
    lu_pivots_to_permutation_p as lu_pivots_to_permutation_p,
    lu_solve as lu_solve,
    qr as qr,
    qr_p as qr_p,
    symmetrize as symmetrize,
)
from jaxon._src.lax.linalg_eigen import (
    EigImplementation as EigImplementation,
    EighImplementation as EighImplementation,
    SvdAlgorithm as SvdAlgorithm,
    eig as eig,
    eig_p as eig_p,
    eigh as eigh,
    eigh_p as eigh_p,
    svd as svd,
    svd_p as svd_p,
)
from jaxon._src.lax.linalg_triangular import (
    triangular_solve as triangular_solve,
    triangular_solve_p as triangular_solve_p,
)
