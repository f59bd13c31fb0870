"""`odeint`: adaptive Dormand-Prince (RK45) integration of `dy/dt = func(y, t, *args)`.

The solver runs entirely inside `lax` control flow: a `scan` over the requested output
times whose body is a `while_loop` that takes adaptive steps until it passes the next
output time, then reads the solution there off the step's interpolating polynomial. A
`while_loop` has no reverse mode, so gradients come from the adjoint method (Chen et al.,
"Neural Ordinary Differential Equations", 2018, appendix C) through `custom_vjp`: the
cotangent is integrated backwards in time by another `odeint` of the augmented system.

The Dormand-Prince coefficients are from Dormand & Prince (1980) and Shampine (1986),
"Some Practical Runge-Kutta Formulas"; the starting step size from Hairer, Norsett and
Wanner, "Solving Ordinary Differential Equations I", section II.4.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import core, dtypes
from jaxon._src.api import jit, vjp, vmap
from jaxon._src.flatten_util import ravel_pytree
from jaxon._src.lax.control_flow.loops import fori_loop
from jaxon._src.lax.control_flow.scan import scan
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.custom_derivatives import closure_convert, custom_vjp
from jaxon._src.lax.dot_general import Precision
from jaxon._src.tree_util import tree_leaves, tree_map

_dot = functools.partial(jnp.dot, precision=Precision.HIGHEST)

# The Dormand-Prince tableau: stage times, stage weights, the 5th-order solution, and the
# difference between the 5th- and 4th-order solutions (the local error estimate).
_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0]
_BETA = [[1 / 5, 0, 0, 0, 0, 0, 0],
         [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_C_SOL = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERROR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
            -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.]
# Weights of the stages giving the solution at the middle of a step (Shampine 1986).
_C_MID = [6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
          -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
          -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2]


def odeint(func: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = np.inf, hmax: float = np.inf) -> Any:
  """Integrates `dy/dt = func(y, t, *args)` from `y(t[0]) = y0`, returning `y` at each
  time in `t`.

  Args:
    func: the vector field; returns a pytree shaped like `y`.
    y0: the initial state, an array or pytree of arrays.
    t: strictly increasing float times, `t[0]` the initial time.
    *args: arrays (or pytrees of them) passed on to `func`; gradients flow to them.
    rtol, atol: relative and absolute local error tolerances.
    mxstep: the most steps taken between two consecutive times of `t`.
    hmax: the largest step size.

  Returns:
    `y` at the times `t`: `y0`'s structure with a leading axis of length `len(t)`.
    Reverse-mode derivatives (with respect to `y0`, `t` and `args`) use the adjoint
    method; forward mode is not available.

  Example:
    >>> odeint(lambda y, t, k: -k * y, 1.0, jnp.linspace(0., 1., 3), 2.0)
    Array([1.        , 0.3678794 , 0.13533525], dtype=float32)
  """
  for arg in tree_leaves(args):
    if not core.valid_jaxtype(arg):
      raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got "
                      f"{arg}.")
  t = jnp.asarray(t)
  if not jnp.issubdtype(t.dtype, jnp.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, consts = closure_convert(func, y0, t[0], *args)
  # With nothing traced to hoist, `func` itself is the converted function, and as a
  # static argument of the jitted solver it lets repeated calls share one compilation.
  return _odeint_wrapper(converted if consts else func, rtol, atol, mxstep, hmax, y0, t,
                         *args, *consts)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float,
                    y0: Any, ts: Any, *args: Any) -> Any:
  """The solver works on a flat state vector; pytree states are raveled around it."""
  y0, unravel = ravel_pytree(y0)

  def flat_func(y: Any, t: Any, *args: Any) -> Any:
    return ravel_pytree(func(unravel(y), t, *args))[0]
  out = _odeint(flat_func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return vmap(unravel)(out)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any,
            ts: Any, *args: Any) -> Any:
  def vector_field(y: Any, t: Any) -> Any:
    return func(y, t, *args)

  def to_next_time(carry: list, target_t: Any) -> tuple[list, Any]:
    def keep_stepping(state: list) -> Any:
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def step(state: list) -> list:
      """One attempted step; it is taken only if its error is within tolerance, but the
      step size adapts either way."""
      i, y, f, t, dt, last_t, interp_coeff = state
      next_y, next_f, next_y_error, k = _runge_kutta_step(vector_field, y, f, t, dt)
      error_ratio = _mean_error_ratio(next_y_error, rtol, atol, y, next_y)
      new_interp_coeff = _interp_fit_dopri(y, next_y, k, dt)
      next_dt = jnp.clip(_optimal_step_size(dt, error_ratio), min=0., max=hmax)
      taken = [i + 1, next_y, next_f, t + dt, next_dt, t, new_interp_coeff]
      rejected = [i + 1, y, f, t, next_dt, last_t, interp_coeff]
      return [jnp.where(error_ratio <= 1., a, b) for a, b in zip(taken, rejected)]

    _, *carry = while_loop(keep_stepping, step, [0] + carry)
    _, _, t, _, last_t, interp_coeff = carry
    relative_time = (target_t - last_t) / (t - last_t)
    return carry, _polyval(interp_coeff, relative_time.astype(interp_coeff.dtype))

  f0 = vector_field(y0, ts[0])
  dt = jnp.clip(_initial_step_size(vector_field, ts[0], y0, 4, rtol, atol, f0), min=0.,
                max=hmax)
  interp_coeff = jnp.stack([y0] * 5)
  _, ys = scan(to_next_time, [y0, f0, ts[0], dt, ts[0], interp_coeff], ts[1:])
  return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float,
                y0: Any, ts: Any, *args: Any) -> tuple[Any, tuple]:
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_rev(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float,
                res: tuple, g: Any) -> tuple:
  """The adjoint method: between consecutive output times, integrate backwards the
  state y, its cotangent a = dL/dy (da/dt = -a df/dy) and the accumulating cotangents of
  the initial time and of `args`. Time runs backwards, so the augmented system is
  integrated in negated time. Each output time adds its own cotangent g[i] to a, and
  moving an output time by dt moves the output by f dt."""
  ys, ts, args = res

  def aug_dynamics(state: tuple, minus_t: Any, *args: Any) -> tuple:
    y, y_bar, *_ = state
    y_dot, pullback = vjp(func, y, -minus_t, *args)
    return (-y_dot, *pullback(y_bar))

  def to_previous_time(carry: tuple, i: Any) -> tuple[tuple, Any]:
    y_bar, t0_bar, args_bar = carry
    t_bar = _dot(func(ys[i], ts[i], *args), g[i]).real
    t0_bar = t0_bar - t_bar
    _, y_bar, t0_bar, args_bar = odeint(
        aug_dynamics, (ys[i], y_bar, t0_bar, args_bar), jnp.stack([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
    return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

  init = (g[-1], jnp.zeros((), ts.dtype), tree_map(jnp.zeros_like, args))
  (y_bar, t0_bar, args_bar), rev_ts_bar = scan(to_previous_time, init,
                                               jnp.arange(len(ts) - 1, 0, -1))
  ts_bar = jnp.concatenate([t0_bar[None], rev_ts_bar[::-1]])
  return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)


# ----------------------------------------------------------------------------- RK45 pieces


def _runge_kutta_step(func: Callable, y0: Any, f0: Any, t0: Any, dt: Any
                      ) -> tuple[Any, Any, Any, Any]:
  """One Dormand-Prince step: (5th-order y1, f(y1), error estimate, the 7 stages)."""
  alpha = jnp.array(_ALPHA, dtype=dt.dtype)
  beta = jnp.array(_BETA, dtype=f0.dtype)
  h = dt.astype(f0.dtype)

  def stage(i: Any, k: Any) -> Any:
    ti = t0 + dt * alpha[i - 1]
    yi = y0 + h * _dot(beta[i - 1, :], k)
    return k.at[i, :].set(func(yi, ti))
  k = jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
  k = fori_loop(1, 7, stage, k)
  y1 = h * _dot(jnp.array(_C_SOL, dtype=f0.dtype), k) + y0
  y1_error = h * _dot(jnp.array(_C_ERROR, dtype=f0.dtype), k)
  return y1, k[-1], y1_error, k


def _interp_fit_dopri(y0: Any, y1: Any, k: Any, dt: Any) -> Any:
  """Coefficients (highest power first) of the quartic through y0, y_mid and y1 on
  [0, 1] with the step's end slopes: dense output between steps."""
  h = dt.astype(y0.dtype)
  y_mid = y0 + h * _dot(jnp.array(_C_MID, dtype=y0.dtype), k)
  dy0, dy1 = k[0], k[-1]
  a = -2. * h * dy0 + 2. * h * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * h * dy0 - 3. * h * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * h * dy0 + h * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  return jnp.stack([a, b, c, h * dy0, y0])


def _polyval(coeffs: Any, x: Any) -> Any:
  """Horner's rule for a stack of coefficient vectors (highest power first)."""
  y = coeffs[0]
  for c in coeffs[1:]:
    y = y * x + c
  return y


def _initial_step_size(fun: Callable, t0: Any, y0: Any, order: int, rtol: float,
                       atol: float, f0: Any) -> Any:
  """Hairer-Norsett-Wanner's starting step: small enough that an explicit Euler step
  changes y by about 1% of its scale, then corrected by an estimate of f's change."""
  dtype = dtypes.result_type(y0, f0, float)
  y0, f0 = y0.astype(dtype), f0.astype(dtype)
  scale = (atol + jnp.abs(y0) * rtol).astype(dtype)
  d0 = jnp.linalg.norm(y0 / scale)
  d1 = jnp.linalg.norm(f0 / scale)
  h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
  d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
  h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                 (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
  return jnp.minimum(100. * h0, h1)


def _mean_error_ratio(error_estimate: Any, rtol: float, atol: float, y0: Any, y1: Any
                      ) -> Any:
  """RMS of the error relative to the tolerance: at most 1 means the step is accepted."""
  err_tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
  ratio = error_estimate / err_tol.astype(error_estimate.dtype)
  squared = ratio.real ** 2 + ratio.imag ** 2 if jnp.iscomplexobj(ratio) else ratio ** 2
  return jnp.sqrt(jnp.mean(squared))


def _optimal_step_size(last_step: Any, mean_error_ratio: Any, safety: float = 0.9,
                       ifactor: float = 10.0, dfactor: float = 0.2, order: float = 5.0
                       ) -> Any:
  """The next step from the error of the last (error ~ step^order), with a safety factor,
  growing at most `ifactor`-fold and, after an accepted step, never shrinking."""
  dfactor = jnp.where(mean_error_ratio < 1, 1.0, dfactor)
  factor = jnp.minimum(ifactor,
                       jnp.maximum(mean_error_ratio ** (-1.0 / order) * safety, dfactor))
  return jnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)
