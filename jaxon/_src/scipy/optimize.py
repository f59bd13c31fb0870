"""`scipy.optimize.minimize` with BFGS, as JAX provides it.

Everything is `lax` control flow (a `while_loop` of BFGS iterations, each with a
strong-Wolfe line search that is itself a `while_loop`, whose zoom phase is another), so a
whole minimization compiles into one program under `jit`. Branches are written as
`where` on both alternatives rather than `cond`, which suits accelerators and `vmap`.

The algorithms are Wright & Nocedal, "Numerical Optimization" (1999): BFGS is algorithm
6.1, the line search algorithm 3.5 with zoom algorithm 3.6.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.api import value_and_grad
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.dot_general import Precision

_dot = functools.partial(jnp.dot, precision=Precision.HIGHEST)
_einsum = functools.partial(jnp.einsum, precision=Precision.HIGHEST)


class OptimizeResults(NamedTuple):
  """The outcome of `minimize`.

  Attributes:
    x: the solution found.
    success: whether the method converged.
    status: 0 converged, 1 the most iterations reached, 3 the line search's zoom failed,
      5 the line search's most iterations reached, -1 otherwise.
    fun, jac: the objective and its gradient at `x`.
    hess_inv: the final inverse-Hessian estimate.
    nfev, njev: how often the objective and its gradient were evaluated.
    nit: the number of iterations.
  """
  x: Any
  success: Any
  status: Any
  fun: Any
  jac: Any
  hess_inv: Any
  nfev: Any
  njev: Any
  nit: Any


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str,
             tol: float | None = None, options: Mapping[str, Any] | None = None
             ) -> OptimizeResults:
  """Minimizes `fun(x, *args)` over the 1-D array `x` from `x0`, with gradients from
  automatic differentiation.

  Args:
    fun: the scalar objective.
    x0: the starting point, shape `(n,)`.
    args: further arguments of `fun`, held fixed.
    method: "BFGS" (required, as in JAX).
    tol: accepted for SciPy's signature; control convergence with `options["gtol"]`.
    options: `maxiter` (default 200 n), `norm` (of the gradient in the convergence test,
      default inf), `gtol` (default 1e-5), `line_search_maxiter` (default 10).

  Example:
    >>> rosen = lambda x: jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> minimize(rosen, jnp.array([0.5, 1.5, -0.5]), method="BFGS").x
    Array([1., 1., 1.], dtype=float32)
  """
  del tol  # as in JAX: only the solver's own options set the tolerance
  if not isinstance(args, tuple):
    raise TypeError(f"args argument to jaxon.scipy.optimize.minimize must be a tuple, got "
                    f"{args}")
  if method.lower() != "bfgs":
    raise ValueError(f"Method {method} not recognized")
  state = _minimize_bfgs(lambda x: fun(x, *args), x0, **(options or {}))
  return OptimizeResults(x=state.x_k, success=state.converged & ~state.failed,
                         status=state.status, fun=state.f_k, jac=state.g_k,
                         hess_inv=state.H_k, nfev=state.nfev, njev=state.ngev, nit=state.k)


# ----------------------------------------------------------------------------- BFGS


class _BFGSState(NamedTuple):
  converged: Any
  failed: Any
  k: Any
  nfev: Any
  ngev: Any
  x_k: Any
  f_k: Any
  g_k: Any
  H_k: Any  # the inverse-Hessian estimate
  old_old_fval: Any  # f at the iterate before, for the line search's first step
  status: Any
  line_search_status: Any


def _minimize_bfgs(fun: Callable, x0: Any, maxiter: int | None = None,
                   norm: float = np.inf, gtol: float = 1e-5, line_search_maxiter: int = 10
                   ) -> _BFGSState:
  if maxiter is None:
    maxiter = np.size(x0) * 200
  x0 = jnp.asarray(x0)
  d = x0.shape[0]
  f_0, g_0 = value_and_grad(fun)(x0)
  state = _BFGSState(
      converged=jnp.linalg.norm(g_0, ord=norm) < gtol, failed=jnp.asarray(False), k=0,
      nfev=1, ngev=1, x_k=x0, f_k=f_0, g_k=g_0, H_k=jnp.eye(d, dtype=x0.dtype),
      old_old_fval=f_0 + jnp.linalg.norm(g_0) / 2, status=0, line_search_status=0)

  def cond_fun(state: _BFGSState) -> Any:
    return ~state.converged & ~state.failed & (state.k < maxiter)

  def body_fun(state: _BFGSState) -> _BFGSState:
    p_k = -_dot(state.H_k, state.g_k)
    ls = line_search(fun, state.x_k, p_k, old_fval=state.f_k,
                     old_old_fval=state.old_old_fval, gfk=state.g_k,
                     maxiter=line_search_maxiter)
    s_k = ls.a_k.astype(p_k.dtype) * p_k
    y_k = ls.g_k - state.g_k
    rho_k = jnp.reciprocal(_dot(y_k, s_k))
    # H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T, skipped when y.s = 0.
    w = jnp.eye(d, dtype=rho_k.dtype) - rho_k * jnp.outer(s_k, y_k)
    H_kp1 = _einsum("ij,jk,lk", w, state.H_k, w) + rho_k * jnp.outer(s_k, s_k)
    H_kp1 = jnp.where(jnp.isfinite(rho_k), H_kp1, state.H_k)
    return state._replace(
        converged=jnp.linalg.norm(ls.g_k, ord=norm) < gtol, failed=ls.failed,
        k=state.k + 1, nfev=state.nfev + ls.nfev, ngev=state.ngev + ls.ngev,
        x_k=state.x_k + s_k, f_k=ls.f_k, g_k=ls.g_k, H_k=H_kp1, old_old_fval=state.f_k,
        line_search_status=ls.status)

  state = while_loop(cond_fun, body_fun, state)
  status = jnp.where(state.converged, 0,
                     jnp.where(state.k == maxiter, 1,
                               jnp.where(state.failed, 2 + state.line_search_status, -1)))
  return state._replace(status=status)


# ----------------------------------------------------------------------------- line search


class _LineSearchResults(NamedTuple):
  failed: Any
  nit: Any
  nfev: Any
  ngev: Any
  k: Any
  a_k: Any  # the step length
  f_k: Any
  g_k: Any
  status: Any  # 0 success, 1 zoom failed, 3 the most iterations reached


def _replace_where(pred: Any, state: NamedTuple, **new: Any) -> Any:
  """`state` with the fields in `new` replaced where `pred` holds."""
  return state._replace(**{k: jnp.where(pred, v, getattr(state, k)) for k, v in new.items()})


def _cubicmin(a: Any, fa: Any, fpa: Any, b: Any, fb: Any, c: Any, fc: Any) -> Any:
  """The minimizer of the cubic through (a, fa), (b, fb), (c, fc) with slope fpa at a."""
  dtype = dtypes.result_type(a, fa, fpa, b, fb, c, fc)
  db, dc = b - a, c - a
  denom = (db * dc) ** 2 * (db - dc)
  d1 = jnp.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dtype)
  d2 = jnp.array([fb - fa - fpa * db, fc - fa - fpa * dc], dtype=dtype)
  A, B = _dot(d1, d2) / denom
  return a + (-B + jnp.sqrt(B * B - 3. * A * fpa)) / (3. * A)


def _quadmin(a: Any, fa: Any, fpa: Any, b: Any, fb: Any) -> Any:
  """The minimizer of the parabola through (a, fa), (b, fb) with slope fpa at a."""
  db = b - a
  B = (fb - fa - fpa * db) / (db ** 2)
  return a - fpa / (2. * B)


class _ZoomState(NamedTuple):
  done: Any
  failed: Any
  j: Any
  a_lo: Any
  phi_lo: Any
  dphi_lo: Any
  a_hi: Any
  phi_hi: Any
  dphi_hi: Any
  a_rec: Any  # the previous a_hi or a_lo, a third point for the cubic
  phi_rec: Any
  a_star: Any
  phi_star: Any
  dphi_star: Any
  g_star: Any
  nfev: Any
  ngev: Any


def _zoom(phi_dphi_g: Callable, wolfe_one: Callable, wolfe_two: Callable, a_lo: Any,
          phi_lo: Any, dphi_lo: Any, a_hi: Any, phi_hi: Any, dphi_hi: Any, g_0: Any,
          pass_through: Any) -> _ZoomState:
  """Shrinks the bracket [a_lo, a_hi], which holds a step satisfying the strong Wolfe
  conditions, by cubic, then quadratic interpolation, then bisection, whichever lands
  safely inside. Does nothing when `pass_through`."""
  state = _ZoomState(
      done=False, failed=False, j=0, a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi,
      phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2., phi_rec=(phi_lo + phi_hi) / 2.,
      a_star=1., phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0, nfev=0, ngev=0)
  delta1, delta2 = 0.2, 0.1  # how far inside the bracket a cubic/quadratic step must land

  def body(state: _ZoomState) -> _ZoomState:
    dalpha = state.a_hi - state.a_lo
    lo = jnp.minimum(state.a_hi, state.a_lo)
    hi = jnp.maximum(state.a_hi, state.a_lo)
    # A bracket this small means no progress is possible: stop, failed.
    threshold = jnp.where(dtypes.finfo(dalpha.dtype).bits < 64, 1e-5, 1e-10)
    state = state._replace(failed=state.failed | (dalpha <= threshold))
    a_cubic = _cubicmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi,
                        state.a_rec, state.phi_rec)
    use_cubic = (state.j > 0) & (a_cubic > lo + delta1 * dalpha) & \
        (a_cubic < hi - delta1 * dalpha)
    a_quad = _quadmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
    use_quad = ~use_cubic & (a_quad > lo + delta2 * dalpha) & (a_quad < hi - delta2 * dalpha)
    a_j = jnp.where(use_cubic, a_cubic, state.a_rec)
    a_j = jnp.where(use_quad, a_quad, a_j)
    a_j = jnp.where(~use_cubic & ~use_quad, (state.a_lo + state.a_hi) / 2., a_j)
    phi_j, dphi_j, g_j = phi_dphi_g(a_j)
    phi_j = phi_j.astype(state.phi_lo.dtype)
    dphi_j = dphi_j.astype(state.dphi_lo.dtype)
    g_j = g_j.astype(state.g_star.dtype)
    state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

    hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= state.phi_lo)
    star_to_j = wolfe_two(dphi_j) & ~hi_to_j
    hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.) & ~hi_to_j & ~star_to_j
    lo_to_j = ~hi_to_j & ~star_to_j
    state = _replace_where(hi_to_j, state, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j,
                           a_rec=state.a_hi, phi_rec=state.phi_hi)
    state = _replace_where(star_to_j, state, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j,
                           g_star=g_j)
    state = state._replace(done=star_to_j | state.done)
    state = _replace_where(hi_to_lo, state, a_hi=state.a_lo, phi_hi=state.phi_lo,
                           dphi_hi=state.dphi_lo, a_rec=state.a_hi, phi_rec=state.phi_hi)
    state = _replace_where(lo_to_j & ~hi_to_lo, state, a_rec=state.a_lo,
                           phi_rec=state.phi_lo)
    state = _replace_where(lo_to_j, state, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
    # More iterations than SciPy's 10: float32 needs them.
    return state._replace(j=state.j + 1, failed=state.failed | (state.j + 1 >= 30))

  return while_loop(lambda s: ~s.done & ~pass_through & ~s.failed, body, state)


class _LineSearchState(NamedTuple):
  done: Any
  failed: Any
  i: Any
  a_i1: Any  # the previous trial step
  phi_i1: Any
  dphi_i1: Any
  nfev: Any
  ngev: Any
  a_star: Any
  phi_star: Any
  dphi_star: Any
  g_star: Any


def line_search(f: Callable, xk: Any, pk: Any, old_fval: Any = None,
                old_old_fval: Any = None, gfk: Any = None, c1: float = 1e-4,
                c2: float = 0.9, maxiter: int = 20) -> _LineSearchResults:
  """A step along the descent direction `pk` from `xk` satisfying the strong Wolfe
  conditions (sufficient decrease, c1; small enough slope, c2). Trial steps double until
  one qualifies or a bracket is found, which `_zoom` then shrinks."""
  dtype = dtypes.result_type(xk, pk, float)
  xk, pk = jnp.asarray(xk, dtype), jnp.asarray(pk, dtype)

  def phi_dphi_g(t: Any) -> tuple[Any, Any, Any]:
    phi, g = value_and_grad(f)(xk + jnp.asarray(t, dtype=pk.dtype) * pk)
    return phi, jnp.real(_dot(g, pk)), g

  have_start = old_fval is not None and gfk is not None
  if have_start:
    phi_0, dphi_0 = old_fval, jnp.real(_dot(gfk, pk))
  else:
    phi_0, dphi_0, gfk = phi_dphi_g(0)
  if old_old_fval is None:
    start_value = 1
  else:
    candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
    start_value = jnp.where(candidate > 1, 1.0, candidate)

  def wolfe_one(a_i: Any, phi_i: Any) -> Any:  # sufficient decrease fails
    return phi_i > phi_0 + c1 * a_i * dphi_0

  def wolfe_two(dphi_i: Any) -> Any:  # curvature condition holds
    return jnp.abs(dphi_i) <= -c2 * dphi_0

  # Wright & Nocedal count from 1 (SciPy from 0, scipy/scipy#12157).
  state = _LineSearchState(
      done=jnp.asarray(False), failed=jnp.asarray(False), i=1, a_i1=0., phi_i1=phi_0,
      dphi_i1=dphi_0, nfev=0 if have_start else 1, ngev=0 if have_start else 1, a_star=0.,
      phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)

  def body(state: _LineSearchState) -> _LineSearchState:
    a_i = jnp.where(state.i == 1, start_value, state.a_i1 * 2.)
    phi_i, dphi_i, g_i = phi_dphi_g(a_i)
    star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
    star_to_i = wolfe_two(dphi_i) & ~star_to_zoom1
    star_to_zoom2 = (dphi_i >= 0.) & ~star_to_zoom1 & ~star_to_i
    zoom1 = _zoom(phi_dphi_g, wolfe_one, wolfe_two, state.a_i1, state.phi_i1, state.dphi_i1,
                  a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
    zoom2 = _zoom(phi_dphi_g, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, state.a_i1,
                  state.phi_i1, state.dphi_i1, gfk, ~star_to_zoom2)
    state = state._replace(nfev=state.nfev + 1 + zoom1.nfev + zoom2.nfev,
                           ngev=state.ngev + 1 + zoom1.ngev + zoom2.ngev)
    for pred, found in ((star_to_zoom1, zoom1), (star_to_zoom2, zoom2)):
      state = _replace_where(pred, state, a_star=found.a_star, phi_star=found.phi_star,
                             dphi_star=found.dphi_star, g_star=found.g_star)
      state = state._replace(done=pred | state.done,
                             failed=(pred & found.failed) | state.failed)
    state = _replace_where(star_to_i, state, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i,
                           g_star=g_i)
    return state._replace(done=star_to_i | state.done, i=state.i + 1, a_i1=a_i,
                          phi_i1=phi_i, dphi_i1=dphi_i)

  state = while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
  status = jnp.where(state.failed, 1, jnp.where(state.i > maxiter, 3, 0))
  # In 32 bits a tiny step would leave the iterate stuck: keep it at least 1e-8.
  alpha_k = jnp.asarray(state.a_star)
  alpha_k = jnp.where((dtypes.finfo(alpha_k.dtype).bits != 64) & (jnp.abs(alpha_k) < 1e-8),
                      jnp.sign(alpha_k) * 1e-8, alpha_k)
  return _LineSearchResults(failed=state.failed | ~state.done, nit=state.i - 1,
                            nfev=state.nfev, ngev=state.ngev, k=state.i, a_k=alpha_k,
                            f_k=state.phi_star, g_k=state.g_star, status=status)
