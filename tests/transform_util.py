"""The generic rule harness: every primitive's JVP, transpose and batching rules checked the
same way — finite differences to order 2 (forward and reverse), vmap against stacking
per-example results with the batch axis at 0, 1 and -1 (and mixed with unmapped
arguments), and jit of each transformation against the transformation itself."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import jaxon
from jaxon._src import dtypes
from tests.util import check_grads


def _stack_along(xs: Sequence[np.ndarray], axis: int) -> np.ndarray:
  return np.stack([np.asarray(x) for x in xs], axis=axis)


def _batched(x: Any, size: int, axis: int, rng: np.random.RandomState) -> np.ndarray:
  """`size` perturbed copies of `x` stacked along `axis` (integers stay integers)."""
  x = np.asarray(x)
  copies = []
  for _ in range(size):
    if np.issubdtype(x.dtype, np.inexact):
      copies.append((x + rng.standard_normal(x.shape).astype(x.dtype) * 0.1).astype(x.dtype))
    else:
      copies.append(x)
  return _stack_along(copies, axis)


def _assert_trees_close(actual: Any, expected: Any, tol: dict, what: str) -> None:
  a_leaves, e_leaves = jaxon.tree_leaves(actual), jaxon.tree_leaves(expected)
  assert len(a_leaves) == len(e_leaves), what
  for a, e in zip(a_leaves, e_leaves):
    a, e = np.asarray(a), np.asarray(e)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    assert a.dtype == e.dtype, f"{what}: dtype {a.dtype} != {e.dtype}"
    np.testing.assert_allclose(a, e, err_msg=what, **tol)


def _default_tol(args: Sequence[Any]) -> dict:
  dts = [np.asarray(a).dtype for a in args]
  if any(d in (np.float64, np.complex128) for d in dts):
    return dict(rtol=1e-10, atol=1e-10)
  if any(d in (np.float16,) or d.name == "bfloat16" for d in dts):
    return dict(rtol=2e-2, atol=2e-2)
  return dict(rtol=1e-5, atol=1e-5)


def check_vmap(f: Callable, args: Sequence[Any], size: int = 3,
               axes: Sequence[int] = (0, 1, -1), tol: dict | None = None,
               seed: int = 0) -> None:
  """`vmap(f, in_axes)(xs)` equals stacking `f(x)` for each example, for every in_axes
  choice: all args mapped at each axis in `axes` (where the rank allows), and each single
  argument mapped at 0 with the others unmapped (`None`). The first choice is checked
  eagerly and under `jit`, the others under `jit` only: the batching rules are the same,
  and each eager batched operation is one more compilation."""
  tol = tol or _default_tol(args)
  rng = np.random.RandomState(seed)
  choices: list[tuple] = []
  for ax in axes:
    if all(-np.ndim(a) - 1 <= ax <= np.ndim(a) for a in args):
      choices.append(tuple(ax for _ in args))
  if len(args) > 1:
    for i in range(len(args)):
      choices.append(tuple(0 if j == i else None for j in range(len(args))))
  for in_axes in choices:
    batched = [a if ax is None else _batched(a, size, ax, rng) for a, ax in zip(args, in_axes)]
    examples = [[a if ax is None else np.take(b, k, axis=ax)
                 for a, b, ax in zip(args, batched, in_axes)] for k in range(size)]
    per_example = [f(*ex) for ex in examples]
    expected = jaxon.tree_map(lambda *xs: _stack_along(xs, 0), *per_example)
    if in_axes == choices[0]:
      actual = jaxon.vmap(f, in_axes=in_axes)(*batched)
      _assert_trees_close(actual, expected, tol, f"vmap with in_axes={in_axes}")
    jitted = jaxon.jit(jaxon.vmap(f, in_axes=in_axes))(*batched)
    _assert_trees_close(jitted, expected, tol, f"jit(vmap) with in_axes={in_axes}")


def check_jit_transforms(f: Callable, args: Sequence[Any], tol: dict | None = None) -> None:
  """jit of jvp, of vjp's pullback and of vmap agree with the un-jitted transformations."""
  tol = tol or _default_tol(args)
  rng = np.random.RandomState(0)
  tangents = tuple(np.asarray(rng.standard_normal(np.shape(a)), np.asarray(a).dtype)
                   if np.issubdtype(np.asarray(a).dtype, np.inexact)
                   else np.zeros(np.shape(a), dtypes.float0) for a in args)

  def f_jvp(primals: tuple, tangents: tuple) -> Any:
    return jaxon.jvp(f, primals, tangents)
  _assert_trees_close(jaxon.jit(f_jvp)(tuple(args), tangents), f_jvp(tuple(args), tangents),
                      tol, "jit(jvp)")

  def f_vjp(*primals: Any) -> Any:
    out, pullback = jaxon.vjp(f, *primals)
    return pullback(out)
  _assert_trees_close(jaxon.jit(f_vjp)(*args), f_vjp(*args), tol, "jit(vjp)")


def check_transforms(f: Callable, args: Sequence[Any], order: int = 2,
                     modes: Sequence[str] = ("fwd", "rev"), grad_tol: dict | None = None,
                     vmap_axes: Sequence[int] = (0, 1, -1), differentiable: bool = True
                     ) -> None:
  """The whole harness on one function: grads, vmap and jit of the transformations."""
  if differentiable:
    check_grads(f, args, order=order, modes=modes, **(grad_tol or {}))
    check_jit_transforms(f, args)
  check_vmap(f, args, axes=vmap_axes)


class Case(NamedTuple):
  """`fun` of float arrays of `shapes`, checked in float32 (and float64 if `f64`)."""
  name: str
  fun: Any
  shapes: tuple
  f64: bool = False

  def __repr__(self) -> str:
    return self.name
