"""jaxon.scipy.linalg's matrix functions and the decompositions under them: the Schur and
Hessenberg forms, matrix square roots and general matrix functions, the Fréchet derivative
of expm, Sylvester equations and the eigenvalues of tridiagonal matrices.

Most of these are sequential recurrences over the entries of a triangular matrix (Björck and
Hammarling's square root, Parlett's recurrence, Bartels–Stewart's back substitution) or
bisection to convergence. They are written as `fori_loop`/`while_loop`/`scan`, as JAX writes
them, so a jaxpr stays small whatever the matrix size and the loop bounds may be traced.
The Schur decomposition behind them is LAPACK's gees, so they run on the CPU only.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.api import jvp
from jaxon._src.lax import slicing
from jaxon._src.lax import linalg_lapack
from jaxon._src.lax.control_flow.conditionals import cond
from jaxon._src.lax.control_flow.loops import fori_loop
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.dot_general import Precision
from jaxon._src.numpy import util
from jaxon._src.scipy.linalg import expm, solve


def _square(fun_name: str, a: Any) -> Any:
  a = jnp.asarray(a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"jax.scipy.linalg.{fun_name} takes square matrices (…, n, n), got an "
                     f"array of shape {a.shape}.")
  return a


def _complex_dtype(dtype: Any) -> np.dtype:
  return np.result_type(dtypes.to_inexact_dtype(dtype), np.complex64)


def _adjoint(x: Any) -> Any:
  return jnp.conj(jnp.swapaxes(x, -1, -2))


# ----------------------------------------------------------------------------- Schur, Hessenberg

def schur(a: Any, output: str = "real") -> tuple[Any, Any]:
  """The Schur decomposition a = Z T Zᴴ with Z unitary.

  Args:
    a: square matrices (…, n, n).
    output: "real" gives, for real a, a quasi-upper-triangular T whose 2×2 diagonal blocks
      hold complex conjugate eigenvalue pairs; "complex" computes in complex arithmetic, so T
      is upper triangular with the eigenvalues on its diagonal.

  Example: `schur(jnp.array([[1., 2.], [0., 3.]]))[0]` is upper triangular with 1 and 3 on
  its diagonal.
  """
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got {output=}.")
  a = _square("schur", a)
  if output == "complex":
    a = a.astype(_complex_dtype(a.dtype))
  return linalg_lapack.schur(a)


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:
  """Turns a real Schur form (T, Z) into the complex one, whose T is truly triangular: each
  2×2 block is split by a Givens rotation that brings one of its eigenvalues to the top.
  Leading axes of T and Z are broadcast batch axes.

  Example: `rsf2csf(*schur(a))` gives (T, Z) with a = Z T Zᴴ and T upper triangular.
  """
  T, Z = jnp.asarray(T), jnp.asarray(Z)
  if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
    raise ValueError("Input 'T' must be square.")
  if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
    raise ValueError("Input 'Z' must be square.")
  if T.shape[-1] != Z.shape[-1]:
    raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
  return jnp.vectorize(_rsf2csf, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


def _rsf2csf(T: Any, Z: Any) -> tuple[Any, Any]:
  """Sweeps the subdiagonal from the bottom up, splitting each block that is still coupled
  (its subdiagonal entry not negligible against its diagonal), then zeroing that entry."""
  dtype = _complex_dtype(jnp.result_type(T, Z))
  T, Z = T.astype(dtype), Z.astype(dtype)
  n = T.shape[-1]
  if n == 1:
    return T, Z
  eps = np.finfo(dtype).eps
  index = jnp.arange(n)

  def split_block(m: Any, T: Any, Z: Any) -> tuple[Any, Any]:
    # The rotation G = [[c̄, s], [-s, c]] maps the eigenvector of the block for eigenvalue
    # mu + T[m, m] onto the first axis: rows m-1, m of T from G, columns from Gᴴ.
    mu = jnp.linalg.eigvals(slicing.dynamic_slice(T, (m - 1, m - 1), (2, 2))) - T[m, m]
    r = jnp.linalg.norm(jnp.stack([mu[0], T[m, m - 1]])).astype(dtype)
    c, s = mu[0] / r, T[m, m - 1] / r
    G = jnp.stack([jnp.stack([jnp.conj(c), s]), jnp.stack([-s, c])])
    rows = slicing.dynamic_slice_in_dim(T, m - 1, 2, axis=0)
    right = index >= m - 1
    rows = jnp.where(right, G @ jnp.where(right, rows, 0), rows)
    T = slicing.dynamic_update_slice_in_dim(T, rows, m - 1, axis=0)
    cols = slicing.dynamic_slice_in_dim(T, m - 1, 2, axis=1)
    above = index[:, None] < m + 1
    cols = jnp.where(above, jnp.where(above, cols, 0) @ _adjoint(G), cols)
    T = slicing.dynamic_update_slice_in_dim(T, cols, m - 1, axis=1)
    Z_cols = slicing.dynamic_slice_in_dim(Z, m - 1, 2, axis=1) @ _adjoint(G)
    return T, slicing.dynamic_update_slice_in_dim(Z, Z_cols, m - 1, axis=1)

  def step(i: Any, TZ: tuple[Any, Any]) -> tuple[Any, Any]:
    T, Z = TZ
    m = n - i
    coupled = jnp.abs(T[m, m - 1]) > eps * (jnp.abs(T[m - 1, m - 1]) + jnp.abs(T[m, m]))
    T, Z = cond(coupled, split_block, lambda m, T, Z: (T, Z), m, T, Z)
    return T.at[m, m - 1].set(0), Z

  return fori_loop(1, n, step, (T, Z))


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
  """The Hessenberg form a = Q H Qᴴ: H is zero below its first subdiagonal.

  Returns:
    H, or (H, Q) when `calc_q`.

  Example: `hessenberg(a, calc_q=True)` gives (H, Q) with `Q @ H @ Q.conj().T ≈ a`.
  """
  a = _square("hessenberg", a)
  n = a.shape[-1]
  if n == 0:
    return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
  packed, taus = linalg_lapack.hessenberg(a)
  h = jnp.triu(packed, -1)
  if not calc_q:
    return h
  # Q acts on rows and columns 1…n-1: its reflectors sit below the first subdiagonal.
  q = linalg_lapack.householder_product(packed[..., 1:, :-1], taus)
  pad = [(0, 0)] * (a.ndim - 2) + [(1, 0), (1, 0)]
  q = jnp.pad(q, pad).at[..., 0, 0].set(1)
  return h, q


# ----------------------------------------------------------------------------- matrix functions

def sqrtm(A: Any, blocksize: int = 1) -> Any:
  """The principal matrix square root, by the complex Schur method (Björck and Hammarling
  1983, "A Schur method for the square root of a matrix"): with A = Z T Zᴴ, the root of the
  triangular T is found one column at a time, bottom to top. The result is complex.

  Args:
    A: a square matrix (n, n).
    blocksize: only 1 (JAX has no blocked version).

  Example: `sqrtm(jnp.array([[4., 0.], [0., 9.]]))` is `[[2, 0], [0, 3]]` (complex).
  """
  if blocksize > 1:
    raise NotImplementedError("Blocked version is not implemented yet.")
  T, Z = schur(A, output="complex")
  U = _sqrtm_triangular(T)
  matmul = functools.partial(jnp.matmul, precision=Precision.HIGHEST)
  return matmul(matmul(Z, U), jnp.conj(Z.T))


def _sqrtm_triangular(T: Any) -> Any:
  """U upper triangular with U² = T: U[i, j] = (T[i, j] - Σ_{i<k<j} U[i, k] U[k, j]) /
  (U[i, i] + U[j, j]), entries above the diagonal of column j from the bottom up."""
  diag = jnp.sqrt(jnp.diagonal(T))
  n = diag.shape[0]
  index = jnp.arange(n)

  def entry(l: Any, jU: tuple[Any, Any]) -> tuple[Any, Any]:
    j, U = jU
    i = j - 1 - l
    between = (index > i) & (index < j)
    s = jnp.sum(jnp.where(between, U[i, :] * U[:, j], 0))
    value = jnp.where(T[i, j] == s, 0, (T[i, j] - s) / (diag[i] + diag[j]))
    return j, U.at[i, j].set(value)

  def column(j: Any, U: Any) -> Any:
    return fori_loop(0, j, entry, (j, U))[1]

  return fori_loop(0, n, column, jnp.diag(diag))


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:
  """f(A) for a scalar function `func` applied to A's eigenvalues, by Parlett's recurrence
  on the complex Schur form (Golub and Van Loan, "Matrix Computations", Algorithm 11.1.1).
  The result is complex; the recurrence divides by eigenvalue differences, so it is
  inaccurate for close eigenvalues.

  Args:
    A: a square matrix (n, n).
    func: elementwise function, e.g. `jnp.exp`.
    disp: when False, also return an estimate of the relative error.

  Returns:
    f(A), or (f(A), err) when not `disp`.

  Example: `funm(a, jnp.exp)` is close to `expm(a)`.
  """
  A = jnp.asarray(A)
  if A.ndim != 2 or A.shape[0] != A.shape[1]:
    raise ValueError("expected square array_like input")
  T, Z = rsf2csf(*schur(A))
  F = jnp.diag(func(jnp.diagonal(T))).astype(T.dtype)
  F, min_gap = _parlett(F, T)
  F = Z @ F @ jnp.conj(Z.T)
  if disp:
    return F
  tol = np.finfo(np.float32 if F.dtype == np.complex64 else np.float64).eps
  min_gap = jnp.where(min_gap == 0, tol, min_gap)
  err = jnp.where(jnp.any(jnp.isinf(F)), np.inf, jnp.minimum(1, jnp.maximum(
      tol, (tol / min_gap) * jnp.linalg.norm(jnp.triu(T, 1), 1))))
  return F, err


def _parlett(F: Any, T: Any) -> tuple[Any, Any]:
  """Fills F = f(T) above its diagonal, superdiagonal p = 1, 2, … in turn (F commutes with
  T); also returns the smallest eigenvalue gap divided by, for the error estimate."""
  n = T.shape[0]
  index = jnp.arange(n)

  def entry(i: Any, pFm: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
    p, F, min_gap = pFm
    j = i + p  # 1-based, as the algorithm is stated
    between = (index >= i) & (index < j - 1)
    s = T[i - 1, j - 1] * (F[j - 1, j - 1] - F[i - 1, i - 1])
    s = s + (jnp.where(between, T[i - 1], 0) @ jnp.where(between, F[:, j - 1], 0)
             - jnp.where(between, F[i - 1], 0) @ jnp.where(between, T[:, j - 1], 0))
    gap = T[j - 1, j - 1] - T[i - 1, i - 1]
    s = jnp.where(gap != 0, s / gap, s)
    return p, F.at[i - 1, j - 1].set(s), jnp.minimum(min_gap, jnp.abs(gap))

  def superdiagonal(p: Any, Fm: tuple[Any, Any]) -> tuple[Any, Any]:
    _, F, min_gap = fori_loop(1, n - p + 1, entry, (p, *Fm))
    return F, min_gap

  return fori_loop(1, n, superdiagonal, (F, jnp.abs(T[0, 0])))


def expm_frechet(A: Any, E: Any, *, method: str | None = None, compute_expm: bool = True
                 ) -> Any:
  """The Fréchet derivative of expm at A in the direction E: the forward-mode derivative of
  `expm` (which differentiates its Padé approximant and squarings exactly).

  Args:
    A, E: square matrices (…, n, n) of one shape.
    method: accepted for SciPy compatibility and ignored.
    compute_expm: also return expm(A).

  Returns:
    (expm(A), L(A, E)), or L(A, E).

  Example: `expm_frechet(jnp.zeros((2, 2)), E)` is `(I, E)`.
  """
  A, E = jnp.asarray(A), jnp.asarray(E)
  if A.ndim < 2 or A.shape[-2] != A.shape[-1]:
    raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={A.shape}")
  if E.ndim < 2 or E.shape[-2] != E.shape[-1]:
    raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={E.shape}")
  if A.shape != E.shape:
    raise ValueError("expected A and E to be the same shape, got "
                     f"A.shape={A.shape} E.shape={E.shape}")
  expm_A, frechet = jvp(functools.partial(expm, upper_triangular=False, max_squarings=16),
                        (A,), (E,))
  return (expm_A, frechet) if compute_expm else frechet


# ----------------------------------------------------------------------------- Sylvester

def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur", tol: float = 1e-8
                    ) -> Any:
  """Solves A X + X B = C, which has a unique solution when no eigenvalue of A is the
  negative of one of B; the result is NaN when such a sum is below `tol` in magnitude.

  Args:
    A: (…, m, m); B: (…, n, n); C: (…, m, n); batch axes broadcast.
    method: "schur" (Bartels–Stewart: triangularize both, then back-substitute entry by
      entry) or "eigen" (diagonalize both; faster, less accurate for non-normal matrices).

  Example: `solve_sylvester(2 * I, 3 * I, C)` is `C / 5`.
  """
  if method not in ("schur", "eigen"):
    raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                     "\"schur\" or \"eigen\".")
  A, B, C = util.promote_args_inexact("jax.scipy.linalg.solve_sylvester", A, B, C)
  m, n = C.shape[-2:]
  if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
    raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\nB: "
                     f"{B.shape}\nC: {C.shape}")
  return jnp.vectorize(functools.partial(_solve_sylvester, method=method, tol=tol),
                       signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)


def _solve_sylvester(A: Any, B: Any, C: Any, *, method: str, tol: float) -> Any:
  if method == "schur":
    R, U = schur(A, output="complex")
    S, V = schur(_adjoint(B), output="complex")
    F = _adjoint(U) @ C.astype(R.dtype) @ V
    X = U @ _triangular_sylvester(R, _adjoint(S), F) @ _adjoint(V)
  else:
    wa, UA = jnp.linalg.eig(A)
    wb, UB = jnp.linalg.eig(B)
    Y = solve(UA, C.astype(wa.dtype) @ UB) / (wa[:, None] + wb[None, :])
    X = UA @ Y @ jnp.linalg.inv(UB)
  if not dtypes.issubdtype(C.dtype, np.complexfloating):
    X = X.real
  sums = jnp.linalg.eigvals(A)[:, None] + jnp.linalg.eigvals(B)[None, :]
  return cond(jnp.any(jnp.abs(sums) < tol), lambda: jnp.full_like(X, np.nan), lambda: X)


def _triangular_sylvester(R: Any, S: Any, F: Any) -> Any:
  """Y with R Y + Y S = F for upper triangular R and lower triangular S: Y[i, j] depends on
  the entries below and to its right, so a scan visits them from the bottom-right corner."""
  m, n = F.shape

  def solve_entry(Y: Any, flat: Any) -> tuple[Any, None]:
    i, j = flat // n, flat % n
    row = jnp.sum(jnp.where(jnp.arange(m) > i, R[i, :] * Y[:, j], 0))
    col = jnp.sum(jnp.where(jnp.arange(n) > j, Y[i, :] * S[:, j], 0))
    return Y.at[i, j].set((F[i, j] - row - col) / (R[i, i] + S[j, j])), None

  return scan(solve_entry, jnp.zeros_like(F), jnp.arange(m * n - 1, -1, -1))[0]


# ----------------------------------------------------------------------------- tridiagonal

def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key: Any = None) -> Any:
  """Eigenvalues (ascending) of the real symmetric (or Hermitian) tridiagonal matrix with
  diagonal d and off-diagonal e, by bisection on Sturm sequence counts: all eigenvalues are
  bisected together until their intervals are below `tol` (or machine precision).

  Args:
    d: (n,) the diagonal; e: (n - 1,) the off-diagonal, of d's dtype.
    eigvals_only: must be True: eigenvectors (inverse iteration) are not implemented.
    select: "a" for all eigenvalues, "i" for those with indices select_range[0] …
      select_range[1] (inclusive); "v" (by value) is not implemented, as in JAX.

  Example: `eigh_tridiagonal(jnp.array([2., 2.]), jnp.array([1.]), eigvals_only=True)` is
  `[1., 3.]`.
  """
  alpha, beta = jnp.asarray(d), jnp.asarray(e)
  if alpha.dtype != beta.dtype:
    raise TypeError("diagonal and off-diagonal values must have same dtype, "
                    f"got {alpha.dtype} and {beta.dtype}")
  if alpha.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
    raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                    f"jax.scipy.linalg.eigh_tridiagonal, got {alpha.dtype} and {beta.dtype}")
  n = alpha.shape[0]
  if n <= 1:
    return jnp.real(alpha) if eigvals_only else (jnp.real(alpha), jnp.eye(n, dtype=alpha.dtype))
  if not eigvals_only:
    raise NotImplementedError("jaxon's eigh_tridiagonal computes eigenvalues only "
                              "(eigvals_only=True).")
  if select == "a":
    targets = jnp.arange(n, dtype=np.int32)
  elif select == "i":
    if select_range is None:
      raise ValueError("for select='i', select_range must be specified.")
    if select_range[0] > select_range[1]:
      raise ValueError("Got empty index range in select_range.")
    targets = jnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
  elif select == "v":
    raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
  else:
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
  return _bisect(alpha, beta, targets, tol)


def _bisect(alpha: Any, beta: Any, targets: Any, tol: float | None) -> Any:
  """Eigenvalue k is the point where the number of eigenvalues below x passes k. The search
  starts from the Gershgorin interval, a little widened; pivmin keeps the Sturm recurrence's
  divisions away from zero (as LAPACK's stebz does)."""
  beta_sq = jnp.real(beta * jnp.conj(beta))
  alpha, beta_abs = jnp.real(alpha), jnp.sqrt(beta_sq)
  finfo = np.finfo(alpha.dtype)
  row_sums = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
  lambda_max, lambda_min = jnp.max(alpha + row_sums), jnp.min(alpha - row_sums)
  t_norm = jnp.maximum(jnp.abs(lambda_min), jnp.abs(lambda_max))
  one = np.ones((), alpha.dtype)
  safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
  pivmin = safemin * jnp.maximum(1, jnp.max(beta_sq))
  alpha0_perturbation = jnp.square(finfo.eps * beta_abs[0])
  abs_tol = finfo.eps * t_norm
  if tol is not None:
    abs_tol = jnp.maximum(tol, abs_tol)
  fudge = 2.1
  slack = jnp.array(alpha.shape[0], alpha.dtype) * fudge * finfo.eps * t_norm
  lower = jnp.broadcast_to(lambda_min - slack - 2 * fudge * pivmin, targets.shape)
  upper = jnp.broadcast_to(lambda_max + slack + fudge * pivmin, targets.shape)

  def count_below(x: Any) -> Any:
    # q_0 = alpha_0 - x, q_i = alpha_i - beta_{i-1}² / q_{i-1} - x; eigenvalues below x are
    # the negative q's. Exactly x == alpha_0 would divide by zero next: perturb it.
    q = alpha[0] - x
    count = (q < 0).astype(np.int32)
    q = jnp.where(alpha[0] == x, alpha0_perturbation, q)

    def step(i: Any, qc: tuple[Any, Any]) -> tuple[Any, Any]:
      q, count = qc
      q = alpha[i] - beta_sq[i - 1] / q - x
      small = q <= pivmin
      return jnp.where(small, jnp.minimum(q, -pivmin), q), count + small
    return fori_loop(1, alpha.shape[0], step, (q, count))[1]

  def unconverged(state: tuple[Any, Any, Any, Any]) -> Any:
    i, lower, _, upper = state
    return (i < finfo.nmant + 1) & (abs_tol < jnp.max(upper - lower))

  def halve(state: tuple[Any, Any, Any, Any]) -> tuple[Any, Any, Any, Any]:
    i, lower, mid, upper = state
    counts = count_below(mid)
    lower = jnp.where(counts <= targets, mid, lower)
    upper = jnp.where(counts > targets, mid, upper)
    return i + 1, lower, 0.5 * (lower + upper), upper

  return while_loop(unconverged, halve, (0, lower, 0.5 * (lower + upper), upper))[2]
