"""Gradient checking against finite differences (`jaxon.test_util.check_grads`), with JAX
0.10.2's algorithm and defaults, so that a test written against `jax.test_util` passes or
fails on jaxon as it does on JAX.

Forward mode compares `jvp` with a central difference along a random tangent; reverse
mode checks the adjoint identity <t, vjp(ct)> = <J t, ct>, with J t again a central
difference; "lin" mode checks `linearize`. Higher orders check the JVP and VJP functions
themselves. The step is 1e-4 for every dtype and the difference is taken in the values'
own dtype, as JAX does: a different step or precision moves which discontinuities a
difference crosses (chex's `assert_numerical_grads` tests depend on it).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import api, dtypes, tree_util

EPS = 1e-4

# JAX's `default_gradient_tolerance`: atol and rtol by dtype.
_GRADIENT_TOLERANCE = {
    np.dtype(dtypes.bfloat16): 1e-1,
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3,
    np.dtype(np.complex128): 1e-5,
}


def _dtype(x: Any) -> np.dtype:
  if hasattr(x, "dtype"):
    return np.dtype(x.dtype)
  if isinstance(x, (bool, int, float, complex)):
    return np.dtype(dtypes.canonicalize_dtype(type(x)))
  return np.asarray(x).dtype


def _tolerance(dtype: np.dtype, tol: float | dict | None) -> float:
  """A scalar `tol` as given; else `dtype`'s entry of JAX's table with `tol`'s per-dtype
  entries merged over it (narrow floats not in the table get 1e-1, integers 0)."""
  if tol is not None and not isinstance(tol, dict):
    return tol
  if dtype.kind not in "fc":
    return 0.0
  table = {**_GRADIENT_TOLERANCE, **{np.dtype(k): v for k, v in (tol or {}).items()}}
  return table.get(dtype, 1e-1)


def _is_python_scalar(x: Any) -> bool:
  return not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
  """A standard normal tangent for `x`, drawn as JAX draws it (the same stream, so the
  same directions); integer inputs get float0 zeros, as `jvp` requires."""
  shape, dtype = np.shape(x), _dtype(x)
  r = rng.randn(*shape)
  if dtype.kind == "c":
    r = r + 1j * rng.randn(*shape)
  if dtype.kind not in "fc":
    return np.zeros(shape, dtypes.float0)
  result = np.asarray(r, dtype)
  return result.item() if _is_python_scalar(x) else result


def _scaled(x: Any, t: Any, scale: float) -> Any:
  """x + scale * t in x's dtype; integer inputs are unchanged (their tangent is float0)."""
  dtype = _dtype(x)
  if dtype.kind not in "fc":
    return x
  step = np.multiply(t, np.array(scale, dtype), dtype=dtype)
  result = np.add(x, step, dtype=dtype)
  return result.item() if _is_python_scalar(x) else result


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any],
                  eps: float = EPS) -> Any:
  """Central difference of `f` at `primals` along `tangents`, in the outputs' dtype."""
  shifted = lambda scale: [tree_util.tree_map(lambda x, t: _scaled(x, t, scale), p, t)  # noqa: E731
                           for p, t in zip(primals, tangents)]
  plus, minus = f(*shifted(eps)), f(*shifted(-eps))

  def difference(a: Any, b: Any) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "fc":  # integer outputs have float0 tangents
      return np.zeros(a.shape, dtypes.float0)
    return np.multiply(np.subtract(a, b), np.array(0.5 / eps, a.dtype), dtype=a.dtype)
  return tree_util.tree_map(difference, plus, minus)


def _check_close(actual: Any, expected: Any, atol: Any, rtol: Any, what: str) -> None:
  a_leaves, e_leaves = tree_util.tree_leaves(actual), tree_util.tree_leaves(expected)
  if len(a_leaves) != len(e_leaves):
    raise AssertionError(f"{what}: got {len(a_leaves)} leaves, expected {len(e_leaves)}")
  for a, e in zip(a_leaves, e_leaves):
    dtype = _dtype(a)
    a, e = np.asarray(a), np.asarray(e)
    if dtype.kind not in "fc":
      continue
    wide = np.complex128 if dtype.kind == "c" else np.float64
    np.testing.assert_allclose(a.astype(wide), e.astype(wide), err_msg=what,
                               atol=_tolerance(dtype, atol), rtol=_tolerance(dtype, rtol))


def _inner_product(xs: Any, ys: Any) -> Any:
  """Sum over leaves of Re(conj(x) · y), in the leaves' dtype; float0 leaves add nothing."""
  parts = [np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1)))
           for x, y in zip(map(np.asarray, tree_util.tree_leaves(xs)),
                           map(np.asarray, tree_util.tree_leaves(ys)))
           if x.dtype.kind in "fc" and y.dtype.kind in "fc"]
  return functools.reduce(np.add, parts) if parts else np.float32(0)


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: Any = None,
              rtol: Any = None, eps: float = EPS, err_msg: str = "") -> None:
  """Checks `f_jvp(args, tangents)` (like `partial(jvp, f)`) against finite differences."""
  rng = np.random.RandomState(0)
  tangents = tree_util.tree_map(functools.partial(_rand_like, rng), tuple(args))
  out, tangent_out = f_jvp(tuple(args), tangents)
  _check_close(out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  expected = numerical_jvp(f, args, tangents, eps)
  _check_close(tangent_out, expected, atol, rtol,
               f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: Any = None,
              rtol: Any = None, eps: float = EPS, err_msg: str = "") -> None:
  """Checks `f_vjp(*args)` (like `partial(vjp, f)`) by the adjoint identity."""
  rand = functools.partial(_rand_like, np.random.RandomState(0))
  out, pullback = f_vjp(*args)
  _check_close(out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  tangents = tree_util.tree_map(rand, tuple(args))
  tangent_out = numerical_jvp(f, args, tangents, eps)
  cotangent = tree_util.tree_map(rand, out)
  conj = functools.partial(tree_util.tree_map, lambda x: np.conj(np.asarray(x))
                           if _dtype(x).kind in "fc" else x)
  cotangent_in = conj(tree_util.tree_map(np.asarray, pullback(conj(cotangent))))
  _check_close(_inner_product(tangents, cotangent_in), _inner_product(tangent_out, cotangent),
               atol, rtol, f"{err_msg} cotangent projection" if err_msg
               else "cotangent projection")


def _jvp_from_linearize(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]
                        ) -> tuple[Any, Any]:
  out, f_lin = api.linearize(f, *primals)
  return out, f_lin(*tangents)


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: Any = None,
                rtol: Any = None, eps: float | None = None) -> None:
  """Checks the derivatives of `f` at `args` up to `order` against finite differences, in
  forward mode ("fwd"), reverse mode ("rev") and/or through `linearize` ("lin").

  Example:
    >>> check_grads(jnp.sin, (0.5,), order=2)
  """
  eps = eps or EPS

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
    if "lin" in modes:
      lin_what = f"LIN of {what}" if what else "LIN"
      check_jvp(f, functools.partial(_jvp_from_linearize, f), args, atol, rtol, eps, lin_what)
      if order > 1:
        check(functools.partial(_jvp_from_linearize, f), (args, args), order - 1, lin_what)
  check(f, tuple(args), order, "")
