"""Gradient checking against finite differences (`jaxon.test_util.check_grads`).

Forward mode is checked by comparing `jvp` with a central difference along a random
tangent; reverse mode by the adjoint identity <vjp(ct), t> = <ct, J t>, with J t again a
central difference. Higher orders check the JVP and VJP functions themselves.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import api, dtypes, tree_util

# (finite-difference step, default tolerance) by dtype: the step balances truncation error
# against rounding error in the function's own precision.
_FD_SETTINGS = {
    np.dtype(np.float16): (1e-1, 1e-1),
    np.dtype(dtypes.bfloat16): (1e-1, 1e-1),
    np.dtype(np.float32): (1e-3, 2e-2),
    np.dtype(np.complex64): (1e-3, 2e-2),
    np.dtype(np.float64): (1e-6, 1e-5),
    np.dtype(np.complex128): (1e-6, 1e-5),
}


def _settings(x: Any) -> tuple[float, float]:
  dtype = dtypes.canonicalize_dtype(np.result_type(x))
  return _FD_SETTINGS.get(np.dtype(dtype), (1e-3, 2e-2))


def _inexact_leaves(tree: Any) -> list[Any]:
  return [x for x in tree_util.tree_leaves(tree) if dtypes.is_inexact(np.result_type(x))]


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
  """A random tangent for `x`: normal values of its dtype, float0 zeros for integers."""
  x = np.asarray(x)
  if not dtypes.is_inexact(x.dtype):
    return np.zeros(x.shape, dtypes.float0)
  r = rng.standard_normal(x.shape)
  if dtypes.is_complex(x.dtype):
    r = r + 1j * rng.standard_normal(x.shape)
  return np.asarray(r, x.dtype)


def _add_scaled(x: Any, t: Any, scale: float) -> Any:
  """x + scale * t for inexact x; integer inputs are unchanged (their tangent is float0)."""
  x = np.asarray(x)
  if not dtypes.is_inexact(x.dtype):
    return x
  return np.asarray(x + scale * np.asarray(t, x.dtype), x.dtype)


def _conj(x: Any) -> Any:
  x = np.asarray(x)
  return np.conj(x) if dtypes.is_inexact(x.dtype) else x


def _inner_product(xs: Any, ys: Any) -> float:
  """Real inner product of two pytrees: sum over leaves of Re(conj(x) · y)."""
  total = 0.0
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    x, y = np.asarray(x), np.asarray(y)
    if not dtypes.is_inexact(x.dtype) or not dtypes.is_inexact(y.dtype):
      continue
    total += float(np.real(np.vdot(x.astype(np.complex128).ravel(),
                                   y.astype(np.complex128).ravel())))
  return total


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any],
                  eps: float) -> Any:
  """Central difference of `f` at `primals` along `tangents`."""
  plus = f(*[tree_util.tree_map(lambda x, t: _add_scaled(x, t, eps), p, t)
             for p, t in zip(primals, tangents)])
  minus = f(*[tree_util.tree_map(lambda x, t: _add_scaled(x, t, -eps), p, t)
              for p, t in zip(primals, tangents)])
  def difference(a: Any, b: Any) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    if not dtypes.is_inexact(a.dtype):  # integer outputs have float0 tangents
      return np.zeros(a.shape, dtypes.float0)
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    return (a.astype(wide) - b.astype(wide)) / (2 * eps)
  return tree_util.tree_map(difference, plus, minus)


def _check_close(actual: Any, expected: Any, atol: float, rtol: float, what: str) -> None:
  a_leaves, e_leaves = tree_util.tree_leaves(actual), tree_util.tree_leaves(expected)
  if len(a_leaves) != len(e_leaves):
    raise AssertionError(f"{what}: got {len(a_leaves)} leaves, expected {len(e_leaves)}")
  for a, e in zip(a_leaves, e_leaves):
    a, e = np.asarray(a), np.asarray(e)
    if not dtypes.is_inexact(a.dtype):
      continue
    np.testing.assert_allclose(a.astype(np.complex128), e.astype(np.complex128),
                               atol=atol, rtol=rtol, err_msg=what)


def _tolerances(args: Sequence[Any], atol: float | None, rtol: float | None,
                eps: float | None) -> tuple[float, float, float]:
  leaves = _inexact_leaves(args)
  settings = [_settings(x) for x in leaves] or [(1e-3, 2e-2)]
  default_eps = max(s[0] for s in settings)
  default_tol = max(s[1] for s in settings)
  return (default_tol if atol is None else atol, default_tol if rtol is None else rtol,
          default_eps if eps is None else eps)


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float | None = None, err_msg: str = "") -> None:
  """Checks `f_jvp(args, tangents)` (like `partial(jvp, f)`) against finite differences."""
  atol, rtol, eps = _tolerances(args, atol, rtol, eps)
  rng = np.random.RandomState(0)
  tangents = tree_util.tree_map(lambda x: _rand_like(rng, x), tuple(args))
  out, tangent_out = f_jvp(tuple(args), tangents)
  _check_close(out, f(*args), atol, rtol, f"{err_msg} primal output")
  expected = numerical_jvp(f, args, tangents, eps)
  _check_close(tangent_out, expected, atol, rtol, f"{err_msg} tangent output")


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float | None = None, err_msg: str = "") -> None:
  """Checks `f_vjp(*args)` (like `partial(vjp, f)`) by the adjoint identity."""
  atol, rtol, eps = _tolerances(args, atol, rtol, eps)
  rng = np.random.RandomState(1)
  out, pullback = f_vjp(*args)
  _check_close(out, f(*args), atol, rtol, f"{err_msg} primal output")
  tangents = tree_util.tree_map(lambda x: _rand_like(rng, x), tuple(args))
  tangent_out = numerical_jvp(f, args, tangents, eps)
  cotangent = tree_util.tree_map(lambda x: _rand_like(rng, x), out)
  conj = functools.partial(tree_util.tree_map, _conj)
  cotangent_in = conj(tree_util.tree_map(np.asarray, pullback(conj(cotangent))))
  ip = _inner_product(tangents, cotangent_in)
  ip_expected = _inner_product(tangent_out, cotangent)
  scale = max(1.0, abs(ip_expected))
  np.testing.assert_allclose(ip, ip_expected, atol=atol * scale, rtol=rtol,
                             err_msg=f"{err_msg} <vjp(ct), t> != <ct, jvp(t)>")


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None) -> None:
  """Checks the derivatives of `f` at `args` up to `order` against finite differences, in
  forward mode ("fwd") and/or reverse mode ("rev").

  Example:
    >>> check_grads(jnp.sin, (0.5,), order=2)
  """
  def check(f: Callable, args: tuple, order: int, what: str) -> None:
    if "fwd" in modes:
      fwd_what = f"JVP of {what}" if what else "JVP"
      check_jvp(f, functools.partial(api.jvp, f), args, atol, rtol, eps, fwd_what)
      if order > 1:
        check(functools.partial(api.jvp, f), (args, args), order - 1, fwd_what)
    if "rev" in modes:
      rev_what = f"VJP of {what}" if what else "VJP"
      check_vjp(f, functools.partial(api.vjp, f), args, atol, rtol, eps, rev_what)
      if order > 1:
        def vjp_of_f(*primals: Any) -> Any:
          out, pullback = api.vjp(f, *primals)
          return pullback(out)
        check(vjp_of_f, args, order - 1, rev_what)
  check(f, tuple(args), order, "")
