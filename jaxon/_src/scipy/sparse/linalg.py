"""Krylov solvers for `A x = b` with `A` given as a function: `cg`, `bicgstab`, `gmres`.

Each solver is a `while_loop` wrapped in `lax.custom_linear_solve`, so derivatives of the
solution are further solves of the same kind (implicit differentiation), never
backpropagation through the iterations, which a `while_loop` does not allow anyway. The
vectors may be pytrees of arrays: the solvers only add, scale and take inner products.
Tolerances follow SciPy's non-legacy rule, `norm(residual) <= max(tol * norm(b), atol)`.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax
from jaxon._src.lax.control_flow.loops import fori_loop
from jaxon._src.lax.control_flow.solves import custom_linear_solve
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.dot_general import Precision
from jaxon._src.scipy import linalg as jsp_linalg
from jaxon._src.tree_util import tree_leaves, tree_map, tree_reduce, tree_structure

# Inner products decide convergence; reduced-precision matmuls would stall it.
_dot = functools.partial(jnp.dot, precision=Precision.HIGHEST)
_vdot = functools.partial(jnp.vdot, precision=Precision.HIGHEST)
_einsum = functools.partial(jnp.einsum, precision=Precision.HIGHEST)


# ----------------------------------------------------------------------------- pytree vectors


def _vdot_real_part(x: Any, y: Any) -> Any:
  """Re <x, y> without the cross terms: the solvers only take it for z^H M z with M
  Hermitian positive definite, whose value is real."""
  result = _vdot(x.real, y.real)
  if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
    result += _vdot(x.imag, y.imag)
  return result


def _vdot_real_tree(x: Any, y: Any) -> Any:
  return sum(tree_leaves(tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x: Any, y: Any) -> Any:
  return sum(tree_leaves(tree_map(_vdot, x, y)))


def _norm(x: Any) -> Any:
  return jnp.sqrt(_vdot_real_tree(x, x))


def _mul(scalar: Any, tree: Any) -> Any:
  return tree_map(lambda v: scalar * v, tree)


def _add(x: Any, y: Any) -> Any:
  return tree_map(operator.add, x, y)


def _sub(x: Any, y: Any) -> Any:
  return tree_map(operator.sub, x, y)


def _where(pred: Any, x: Any, y: Any) -> Any:
  return tree_map(lambda a, b: jnp.where(pred, a, b), x, y)


def _identity(x: Any) -> Any:
  return x


def _normalize_matvec(f: Any) -> Callable:
  """A function computing `A @ x` from a function, a square matrix or a matmul-able."""
  if callable(f):
    return f
  if hasattr(f, "__matmul__") and hasattr(f, "shape"):
    if len(f.shape) != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return functools.partial(_dot, f) if hasattr(f, "dtype") else \
        functools.partial(operator.matmul, f)
  raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _shapes(tree: Any) -> list[tuple[int, ...]]:
  return [np.shape(x) for x in tree_leaves(tree)]


def _check_x0(x0: Any, b: Any) -> None:
  if tree_structure(x0) != tree_structure(b):
    raise ValueError("x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  if _shapes(x0) != _shapes(b):
    raise ValueError(f"arrays in x0 and b must have matching shapes: {_shapes(x0)} vs "
                     f"{_shapes(b)}")


def _tolerance2(b: Any, tol: float, atol: float) -> Any:
  """The squared residual norm at which to stop."""
  return jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))


# ----------------------------------------------------------------------------- cg, bicgstab


def _cg_solve(A: Callable, b: Any, x0: Any, *, maxiter: int, tol: float, atol: float,
              M: Callable) -> Any:
  """Preconditioned conjugate gradients. Without a preconditioner, gamma = r.r is the
  squared residual norm, so the stopping test costs nothing."""
  atol2 = _tolerance2(b, tol, atol)

  def cond_fun(value: tuple) -> Any:
    _, r, gamma, _, k = value
    rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
    return (rs > atol2) & (k < maxiter)

  def body_fun(value: tuple) -> tuple:
    x, r, gamma, p, k = value
    ap = A(p)
    alpha = gamma / _vdot_real_tree(p, ap).astype(dtype)
    x = _add(x, _mul(alpha, p))
    r = _sub(r, _mul(alpha, ap))
    z = M(r)
    gamma_new = _vdot_real_tree(r, z).astype(dtype)
    p = _add(z, _mul(gamma_new / gamma, p))
    return x, r, gamma_new, p, k + 1

  r0 = _sub(b, A(x0))
  z0 = M(r0)
  dtype = dtypes.result_type(*tree_leaves(z0))
  gamma0 = _vdot_real_tree(r0, z0).astype(dtype)
  return while_loop(cond_fun, body_fun, (x0, r0, gamma0, z0, 0))[0]


def _bicgstab_solve(A: Callable, b: Any, x0: Any, *, maxiter: int, tol: float, atol: float,
                    M: Callable) -> Any:
  """Preconditioned BiCGSTAB. A breakdown (rho, alpha or omega reaching zero) stops the
  loop by setting the counter negative."""
  atol2 = _tolerance2(b, tol, atol)

  def cond_fun(value: tuple) -> Any:
    r, k = value[1], value[-1]
    return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body_fun(value: tuple) -> tuple:
    x, r, rhat, alpha, omega, rho, p, q, k = value
    rho_new = _vdot_tree(rhat, r)
    beta = rho_new / rho * alpha / omega
    p = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
    phat = M(p)
    q = A(phat)
    alpha = rho_new / _vdot_tree(rhat, q)
    s = _sub(r, _mul(alpha, q))
    converged_at_s = _vdot_real_tree(s, s) < atol2
    shat = M(s)
    t = A(shat)
    omega = _vdot_tree(t, s) / _vdot_tree(t, t)
    x = _where(converged_at_s, _add(x, _mul(alpha, phat)),
               _add(x, _add(_mul(alpha, phat), _mul(omega, shat))))
    r = _where(converged_at_s, s, _sub(s, _mul(omega, t)))
    k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
    k = jnp.where(rho_new == 0, -10, k)
    return x, r, rhat, alpha, omega, rho_new, p, q, k

  r0 = _sub(b, A(x0))
  dtype, weak = dtypes.result_type(*tree_leaves(b), return_weak_type_flag=True)
  one = lax._convert_element_type(1, dtype, weak_type=weak)
  return while_loop(cond_fun, body_fun, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _isolve(solve: Callable, A: Any, b: Any, x0: Any, *, tol: float, atol: float,
            maxiter: int | None, M: Any, check_symmetric: bool) -> tuple[Any, None]:
  if x0 is None:
    x0 = tree_map(jnp.zeros_like, b)
  b, x0 = tree_map(jnp.asarray, (b, x0))
  if maxiter is None:
    maxiter = 10 * sum(np.size(x) for x in tree_leaves(b))  # SciPy's default
  A = _normalize_matvec(A)
  M = _identity if M is None else _normalize_matvec(M)
  _check_x0(x0, b)
  isolve = functools.partial(solve, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
  # A real positive-definite operator is symmetric; a complex one is Hermitian, not so.
  symmetric = check_symmetric and not any(jnp.iscomplexobj(x) for x in tree_leaves(b))
  x = custom_linear_solve(A, b, solve=isolve, transpose_solve=isolve, symmetric=symmetric)
  return x, None


def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
  """Solves `A x = b` for Hermitian positive-definite `A` by conjugate gradients.

  Args:
    A: the operator: a function `x -> A @ x`, a square matrix, or anything with `@`.
    b: the right-hand side, an array or pytree of arrays.
    x0: the starting guess (zeros by default), shaped like `b`.
    tol, atol: stop when `norm(b - A x) <= max(tol * norm(b), atol)`.
    maxiter: the most iterations (10 times the size of `b` by default).
    M: a preconditioner approximating the inverse of `A`.

  Returns:
    `(x, None)`: the solution, and SciPy's `info` slot (not reported).

  Derivatives are another `cg` solve (implicit differentiation), accurate when both
  solves converge.

  Example:
    >>> a = jnp.array([[4., 1.], [1., 3.]])
    >>> cg(a, jnp.array([1., 2.]))[0]
    Array([0.09090909, 0.6363636 ], dtype=float32)
  """
  return _isolve(_cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=True)


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
  """Solves `A x = b` for a general (non-symmetric) `A` by BiCGSTAB; the arguments are
  `cg`'s. Derivatives are further `bicgstab` solves, with the transposed operator for
  reverse mode."""
  return _isolve(_bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=False)


# ----------------------------------------------------------------------------- gmres


def _safe_normalize(x: Any, thresh: Any = None) -> tuple[Any, Any]:
  """(x / norm(x), norm(x)), or (0, 0) when the norm is at most `thresh` (the dtype's
  epsilon by default): a vanishing Krylov vector means an invariant subspace was found."""
  norm = _norm(x)
  dtype, weak = dtypes.result_type(*tree_leaves(x), return_weak_type_flag=True)
  if thresh is None:
    thresh = dtypes.finfo(norm.dtype).eps
  thresh = jnp.asarray(thresh).astype(dtype).real
  use_norm = norm > thresh
  norm_cast = lax._convert_element_type(norm, dtype, weak_type=weak)
  normalized = tree_map(lambda y: jnp.where(use_norm, y / norm_cast, 0.0), x)
  return normalized, jnp.where(use_norm, norm, 0.0)


def _project_on_columns(Q: Any, v: Any) -> Any:
  """Q^H v, for Q a pytree of matrices whose last axis indexes the columns."""
  return tree_reduce(operator.add, tree_map(
      lambda X, y: _einsum("...n,...->n", X.conj(), y), Q, v))


def _iterative_classical_gram_schmidt(Q: Any, x: Any, xnorm: Any, max_iterations: int = 2
                                      ) -> tuple[Any, Any]:
  """x orthogonalized against Q's orthonormal columns, and its overlaps with them.
  Classical Gram-Schmidt loses orthogonality; repeating it ("twice is enough") restores
  it, and is skipped once the remainder keeps more than 1/sqrt(2) of the norm."""
  q0 = tree_leaves(Q)[0]
  r = jnp.zeros(q0.shape[-1], dtype=q0.dtype)

  def body(carry: tuple) -> tuple:
    k, q, r, _ = carry
    h = _project_on_columns(Q, q)
    q = _sub(q, tree_map(lambda X: _dot(X, h), Q))
    _, qnorm = _safe_normalize(q)
    return k + 1, q, _add(r, h), qnorm / jnp.sqrt(2.0)

  def cond(carry: tuple) -> Any:
    k, _, r, qnorm_scaled = carry
    _, rnorm = _safe_normalize(r)
    return (k < max_iterations - 1) & (rnorm < qnorm_scaled)

  carry = body((0, x, r, xnorm / jnp.sqrt(2.0)))
  _, q, r, _ = while_loop(cond, body, carry)
  return q, r


def _kth_arnoldi_iteration(k: Any, A: Callable, M: Callable, V: Any, H: Any
                           ) -> tuple[Any, Any, Any]:
  """Adds the k+1-th orthonormal Krylov vector M(A(V[:, k])) to V and its overlaps to row
  k of H; `breakdown` says the new vector vanished (the subspace is invariant)."""
  dtype = dtypes.result_type(*tree_leaves(V))
  eps = dtypes.finfo(dtype).eps
  v = M(A(tree_map(lambda X: X[..., k], V)))
  _, v_norm_0 = _safe_normalize(v)
  v, h = _iterative_classical_gram_schmidt(V, v, v_norm_0)
  unit_v, v_norm_1 = _safe_normalize(v, thresh=eps * v_norm_0)
  V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
  h = h.at[k + 1].set(v_norm_1.astype(dtype))
  return V, H.at[k, :].set(h), v_norm_1 == 0.


def _rotate_vectors(H: Any, i: Any, cs: Any, sn: Any) -> Any:
  x, y = H[i], H[i + 1]
  H = H.at[i].set(cs.conj() * x - sn.conj() * y)
  return H.at[i + 1].set(sn * x + cs * y)


def _givens_rotation(a: Any, b: Any) -> tuple[Any, Any]:
  """(cos, sin) of the rotation that zeroes b against a, without overflow."""
  b_zero = abs(b) == 0
  a_lt_b = abs(a) < abs(b)
  t = -jnp.where(a_lt_b, a, b) / jnp.where(a_lt_b, b, a)
  r = transcendental.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
  cs = jnp.where(b_zero, 1, jnp.where(a_lt_b, r * t, r))
  sn = jnp.where(b_zero, 0, jnp.where(a_lt_b, r, r * t))
  return cs, sn


def _apply_givens_rotations(H_row: Any, givens: Any, k: Any) -> tuple[Any, Any]:
  """Row k of H rotated by the k rotations so far, then by a new one (stored in
  `givens`) that zeroes its subdiagonal entry."""
  R_row = fori_loop(0, k, lambda i, row: _rotate_vectors(row, i, *givens[i, :]), H_row)
  factors = _givens_rotation(R_row[k], R_row[k + 1])
  return _rotate_vectors(R_row, k, *factors), givens.at[k, :].set(jnp.stack(factors))


def _initial_krylov_basis(unit_residual: Any, restart: int) -> Any:
  return tree_map(lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
                  unit_residual)


def _gmres_incremental(A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Any,
                       ptol: Any, restart: int, M: Callable) -> tuple[Any, Any, Any]:
  """One restart of GMRES that builds the QR factorization of the Hessenberg matrix with
  Givens rotations as the Arnoldi process goes, so the residual norm is known at each
  step and the restart can end early."""
  V = _initial_krylov_basis(unit_residual, restart)
  dtype = dtypes.result_type(*tree_leaves(b))
  R = jnp.eye(restart, restart + 1, dtype=dtype)  # eye: nonsingular if it ends early
  givens = jnp.zeros((restart, 2), dtype=dtype)
  beta = jnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

  def cond(carry: tuple) -> Any:
    k, err = carry[:2]
    return (k < restart) & (err > ptol)

  def arnoldi_qr_step(carry: tuple) -> tuple:
    k, _, V, R, beta, givens = carry
    V, H, _ = _kth_arnoldi_iteration(k, A, M, V, R)
    R_row, givens = _apply_givens_rotations(H[k, :], givens, k)
    R = R.at[k, :].set(R_row)
    beta = _rotate_vectors(beta, k, *givens[k, :])
    return k + 1, abs(beta[k + 1]), V, R, beta, givens

  _, _, V, R, beta, _ = while_loop(cond, arnoldi_qr_step,
                                   (0, residual_norm, V, R, beta, givens))
  y = jsp_linalg.solve_triangular(R[:, :-1].T, beta[:-1])
  return _restart_result(A, M, b, x0, V, y)


def _gmres_batched(A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Any,
                   ptol: Any, restart: int, M: Callable) -> tuple[Any, Any, Any]:
  """One restart of GMRES that builds the whole Krylov basis first and solves the small
  least-squares problem at the end: no early exit, but less work per step."""
  del ptol  # no residual estimate along the way to compare it with
  V = _initial_krylov_basis(unit_residual, restart)
  dtype, weak = dtypes.result_type(*tree_leaves(b), return_weak_type_flag=True)
  H = lax._convert_element_type(jnp.eye(restart, restart + 1, dtype=dtype), dtype,
                               weak_type=weak)

  def cond(carry: tuple) -> Any:
    _, _, breakdown, k = carry
    return (k < restart) & jnp.logical_not(breakdown)

  def arnoldi(carry: tuple) -> tuple:
    V, H, _, k = carry
    V, H, breakdown = _kth_arnoldi_iteration(k, A, M, V, H)
    return V, H, breakdown, k + 1

  V, H, _, _ = while_loop(cond, arnoldi, (V, H, False, 0))
  beta = jnp.zeros(restart + 1, dtype=H.dtype).at[0].set(residual_norm.astype(dtype))
  # The normal equations of min |H^T y - beta|: cheaper than a general least squares.
  Ht = H.T
  y = jsp_linalg.solve(_dot(Ht.T.conj(), Ht), _dot(Ht.T.conj(), beta), assume_a="pos")
  return _restart_result(A, M, b, x0, V, y)


def _restart_result(A: Callable, M: Callable, b: Any, x0: Any, V: Any, y: Any
                    ) -> tuple[Any, Any, Any]:
  """The new iterate x0 + V y, and its (preconditioned) residual's direction and norm."""
  x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
  unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
  return x, unit_residual, residual_norm


def _gmres_solve(A: Callable, b: Any, x0: Any, atol: Any, ptol: Any, restart: int,
                 maxiter: int, M: Callable, gmres_func: Callable) -> Any:
  """Restarts GMRES from its last iterate until the residual is below `atol` or
  `maxiter` restarts have run."""
  unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

  def cond(value: tuple) -> Any:
    _, k, _, residual_norm = value
    return (k < maxiter) & (residual_norm > atol)

  def body(value: tuple) -> tuple:
    x, k, unit_residual, residual_norm = value
    x, unit_residual, residual_norm = gmres_func(A, b, x, unit_residual, residual_norm,
                                                 ptol, restart, M)
    return x, k + 1, unit_residual, residual_norm

  return while_loop(cond, body, (x0, 0, unit_residual, residual_norm))[0]


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
          restart: int = 20, maxiter: int | None = None, M: Any = None,
          solve_method: str = "batched") -> tuple[Any, Any]:
  """Solves `A x = b` for a general `A` by restarted GMRES.

  Args:
    A, b, x0, tol, atol, M: as for `cg`.
    restart: the dimension of the Krylov subspace built between restarts (at most the
      size of `b`).
    maxiter: the most restarts (10 times the size of `b` by default).
    solve_method: "batched" solves the small least-squares problem once per restart;
      "incremental" keeps a QR factorization up to date, which can stop a restart early
      and is more stable.

  Returns:
    `(x, info)`: the solution, and -1 if it is NaN, else 0.
  """
  if x0 is None:
    x0 = tree_map(jnp.zeros_like, b)
  A = _normalize_matvec(A)
  M = _identity if M is None else _normalize_matvec(M)
  b, x0 = tree_map(jnp.asarray, (b, x0))
  size = sum(np.size(x) for x in tree_leaves(b))
  if maxiter is None:
    maxiter = 10 * size  # SciPy's default
  restart = min(restart, size)
  _check_x0(x0, b)
  gmres_func = {"incremental": _gmres_incremental, "batched": _gmres_batched}.get(
      solve_method)
  if gmres_func is None:
    raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' "
                     "or 'batched'")
  b_norm = _norm(b)
  atol = jnp.maximum(tol * b_norm, atol)
  ptol = _norm(M(b)) * jnp.minimum(1.0, atol / b_norm)

  def solve(A: Callable, b: Any) -> Any:
    return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, gmres_func)
  x = custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
  info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
  return x, info
