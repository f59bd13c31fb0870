"""JVP, transpose and batching rules of the slicing primitives (slice, dynamic_slice,
dynamic_update_slice, gather and the scatter family), checked by the generic harness:
finite differences to order 2 (forward and reverse), jit of the transformations, and vmap
against per-example results with the batch axis at 0, 1 and -1 and mixed with unmapped
arguments.

Index operands are integers, so `check_grads` sees functions that close over them, while
vmap maps them too. Index arrays repeat indices on purpose (scatter's winners, gather's
summed cotangents); scatter-min/max inputs have no ties except in the test about ties."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
import pytest

import jaxon
from jaxon import lax
from tests.transform_util import check_transforms, check_vmap
from tests.util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
GDN, SDN = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers


def rand(shape, dtype, seed=0):
  """Values away from zero and at least 0.05 apart, also across arrays of different seeds
  (0, 1, 2): no ties for scatter-min/max, even after finite-difference steps."""
  rng = np.random.RandomState(seed)
  n = int(np.prod(shape))
  magnitudes = 0.3 + 0.05 * (3 * rng.permutation(n) + seed)
  return (magnitudes * rng.choice([-1.0, 1.0], n)).reshape(shape).astype(dtype)


def ints(values):
  return np.asarray(values, np.int32)


def x64_if(dtype, request):
  if dtype == F64:
    request.getfixturevalue("x64")


class Case(NamedTuple):
  """`fun(*arrays, *indices)`: `arrays` are float shapes, `indices` integer arrays."""
  name: str
  fun: Any
  shapes: tuple
  indices: tuple = ()

  def __repr__(self) -> str:
    return self.name


def with_dtypes(cases, f64_names):
  """Every case in float32; the named ones in float64 as well (under the x64 fixture)."""
  params = [pytest.param(c, F32, id=f"{c.name}-float32") for c in cases]
  return params + [pytest.param(c, F64, id=f"{c.name}-float64") for c in cases
                   if c.name in f64_names]


def check_case(case: Case, dtype: np.dtype) -> None:
  arrays = tuple(rand(s, dtype, seed) for seed, s in enumerate(case.shapes))
  closed = lambda *xs: case.fun(*xs, *case.indices)  # noqa: E731
  check_transforms(closed, arrays, vmap_axes=())
  check_vmap(case.fun, (*arrays, *case.indices))


# ----------------------------------------------------------------------------- slice, dynamic

SLICE_CASES = [
    Case("slice-1d", lambda x: lax.slice(x, (1,), (5,)), ((6,),)),
    Case("slice-strided", lambda x: lax.slice(x, (0, 1, 1), (3, 4, 5), (2, 2, 3)),
         ((3, 4, 5),)),
    Case("slice-empty", lambda x: lax.slice(x, (2, 3), (2, 5)), ((4, 6),)),
    Case("slice_in_dim", lambda x: lax.slice_in_dim(x, 1, -1, 2, axis=1), ((3, 6),)),
    Case("dynamic_slice-clamped", lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)),
         ((4, 5),), (ints(1), ints(3))),
    Case("dynamic_slice-negative", lambda x, i, j, k: lax.dynamic_slice(x, (i, j, k),
                                                                       (2, 2, 3)),
         ((3, 4, 5),), (ints(-2), ints(0), ints(7))),
    Case("dynamic_slice_in_dim", lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=1),
         ((3, 5),), (ints(2),)),
    Case("dynamic_index_in_dim", lambda x, i: lax.dynamic_index_in_dim(x, i, 0, False),
         ((4, 3),), (ints(3),)),
    Case("dynamic_update_slice-1d",
         lambda x, u, i: lax.dynamic_update_slice(x, u, (i,)), ((6,), (2,)), (ints(3),)),
    Case("dynamic_update_slice-clamped",
         lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)), ((4, 5), (2, 3)),
         (ints(3), ints(-1))),
    Case("dynamic_update_slice-3d",
         lambda x, u, i, j, k: lax.dynamic_update_slice(x, u, (i, j, k)),
         ((2, 4, 3), (1, 2, 3)), (ints(1), ints(1), ints(0))),
    Case("dynamic_update_index_in_dim",
         lambda x, u, i: lax.dynamic_update_index_in_dim(x, u, i, 1), ((3, 4), (3,)),
         (ints(2),)),
]


@pytest.mark.parametrize("case,dtype", with_dtypes(SLICE_CASES, {
    "slice-strided", "dynamic_slice-clamped", "dynamic_update_slice-clamped"}))
def test_slices(request, case, dtype):
  x64_if(dtype, request)
  check_case(case, dtype)


# ----------------------------------------------------------------------------- gather

def _gather(dnums, slice_sizes, **kw):
  return lambda x, idx: lax.gather(x, idx, dnums, slice_sizes, **kw)


GATHER_CASES = [
    Case("rows", _gather(GDN((1,), (0,), (0,)), (1, 5)), ((4, 5),),
         (ints([[1], [3], [1]]),)),
    Case("points", _gather(GDN((), (0, 1), (0, 1)), (1, 1)), ((4, 5),),
         (ints([[[0, 1], [3, 4]], [[0, 1], [2, 0]]]),)),
    Case("windows", _gather(GDN((1, 2), (), (1,)), (4, 2)), ((4, 5),),
         (ints([[0], [3], [2]]),)),
    Case("window-first", _gather(GDN((0, 2), (1,), (1,)), (2, 1, 3)), ((3, 4, 5),),
         (ints([[2], [0]]),)),
    Case("scalar-index", _gather(GDN((0,), (0,), (0,)), (1, 3)), ((4, 3),), (ints([2]),)),
    Case("batching-dims", _gather(GDN((), (1,), (1,), (0,), (0,)), (1, 1)), ((3, 4),),
         (ints([[1], [3], [0]]),)),
    Case("clip", _gather(GDN((1,), (0,), (0,)), (1, 3), mode="clip"), ((4, 3),),
         (ints([[-2], [7], [1]]),)),
    Case("fill", _gather(GDN((1,), (0,), (0,)), (1, 3), mode="fill", fill_value=2.0),
         ((4, 3),), (ints([[-2], [7], [1]]),)),
]


@pytest.mark.parametrize("case,dtype", with_dtypes(GATHER_CASES, {"rows", "batching-dims"}))
def test_gather(request, case, dtype):
  x64_if(dtype, request)
  check_case(case, dtype)


# ----------------------------------------------------------------------------- scatter

SCATTERS = {"scatter": lax.scatter, "scatter_add": lax.scatter_add,
            "scatter_sub": lax.scatter_sub, "scatter_mul": lax.scatter_mul,
            "scatter_min": lax.scatter_min, "scatter_max": lax.scatter_max}

SCATTER_LAYOUTS = {  # name: (dnums, operand shape, updates shape, indices, params)
    "rows": (SDN((1,), (0,), (0,)), (4, 3), (3, 3), ints([[1], [3], [1]]), {}),
    "points": (SDN((), (0, 1), (0, 1)), (4, 3), (2, 2), ints([[[0, 1], [2, 2]],
                                                              [[0, 1], [1, 0]]]), {}),
    "windows": (SDN((1, 2), (), (1,)), (4, 3), (2, 4, 2), ints([[0], [1]]), {}),
    "batching-dims": (SDN((), (1,), (1,), (0,), (0,)), (4, 3), (4,),
                      ints([[1], [2], [0], [2]]), {}),
    "dropped": (SDN((1,), (0,), (0,)), (4, 3), (3, 3), ints([[1], [7], [-1]]), {}),
    "clip": (SDN((1,), (0,), (0,)), (4, 3), (3, 3), ints([[1], [7], [-1]]),
             {"mode": "clip"}),
    "unique": (SDN((1,), (0,), (0,)), (4, 3), (2, 3), ints([[2], [0]]),
               {"unique_indices": True}),
}
# Every scatter with repeated, batched and dropped indices; the other layouts exercise the
# shared batching and transpose code, so they run for a few scatters only.
COMMON_LAYOUTS = ("rows", "batching-dims", "dropped")
MORE_LAYOUTS = {"scatter": ("points", "windows", "unique"),
                "scatter_add": ("points", "windows", "clip"), "scatter_mul": ("unique",),
                "scatter_max": ("clip",)}


def _scatter_case(name: str, layout: str) -> Case:
  dn, xs, us, idx, kw = SCATTER_LAYOUTS[layout]
  fun = functools.partial(lambda x, u, idx, fn, dn, kw: fn(x, idx, u, dn, **kw),
                          fn=SCATTERS[name], dn=dn, kw=kw)
  return Case(f"{name}-{layout}", fun, (xs, us), (idx,))


SCATTER_CASES = [_scatter_case(name, layout) for name in SCATTERS
                 for layout in COMMON_LAYOUTS + MORE_LAYOUTS.get(name, ())]
SCATTER_CASE = {c.name: c for c in SCATTER_CASES}


@pytest.mark.parametrize("case,dtype", with_dtypes(
    SCATTER_CASES, {f"{name}-rows" for name in SCATTERS}))
def test_scatter(request, case, dtype):
  x64_if(dtype, request)
  check_case(case, dtype)


@pytest.mark.parametrize("zeros,order", [([1], 2), ([1, 3], 2), ([0, 1], 1)], ids=str)
def test_scatter_mul_repeated_indices_with_zero_updates(x64, zeros, order):
  """The product of the other updates at an element must not divide by a zero update.
  (Two zero updates at one element lose the second derivative's cross term between them,
  as documented, hence order 1 there.)"""
  idx = ints([[1], [1], [1], [2]])
  updates = rand((4,), F64)
  updates[zeros] = 0
  dn = SDN((), (0,), (0,))
  fun = lambda x, u: lax.scatter_mul(x, idx, u, dn)  # noqa: E731
  check_grads(fun, (rand((3,), F64), updates), order=order)


@pytest.mark.parametrize("name", ["scatter_min", "scatter_max"])
def test_scatter_extremum_ties_share_the_tangent(name):
  """Where the operand and updates tie for the result each gets an equal share of it, as
  in `lax.max`."""
  x = np.array([1.0, 2.0, 3.0], np.float32)
  u = np.array([2.0, 2.0, 5.0 if name == "scatter_max" else -5.0], np.float32)
  idx = ints([[1], [1], [2]])
  fun = lambda x, u: SCATTERS[name](x, idx, u, SDN((), (0,), (0,)))  # noqa: E731
  tx, tu = np.array([10.0, 20.0, 30.0], np.float32), np.array([1.0, 2.0, 4.0], np.float32)
  _, t_out = jaxon.jvp(fun, (x, u), (tx, tu))
  np.testing.assert_allclose(t_out, [10.0, (20.0 + 1.0 + 2.0) / 3, 4.0], rtol=1e-6)
  ct_x, ct_u = jaxon.vjp(fun, x, u)[1](np.ones(3, np.float32))
  np.testing.assert_allclose(ct_x, [1.0, 1 / 3, 0.0], rtol=1e-6)
  np.testing.assert_allclose(ct_u, [1 / 3, 1 / 3, 1.0], rtol=1e-6)


def test_scatter_repeated_indices_tangent_follows_the_winner():
  """With repeated indices the output's tangent is the tangent of the update whose value
  the output holds, whichever XLA picked."""
  x, u = np.zeros(3, np.float32), np.array([1.0, 2.0, 3.0], np.float32)
  idx = ints([[1], [1], [0]])
  fun = lambda x, u: lax.scatter(x, idx, u, SDN((), (0,), (0,)))  # noqa: E731
  out, t_out = jaxon.jvp(fun, (x, u), (np.full(3, 7.0, np.float32), 10 * u))
  np.testing.assert_allclose(t_out, np.where(np.asarray(out) == 0, 7.0, 10 * np.asarray(out)))


# ----------------------------------------------------------------------------- mixed axes

def check_in_axes(fun, args, in_axes, size=3):
  """vmap with explicit in_axes (any mix) equals stacking per-example results."""
  rng = np.random.RandomState(0)
  batched, examples = [], [[] for _ in range(size)]
  for a, ax in zip(args, in_axes):
    if ax is None:
      batched.append(a)
      for ex in examples:
        ex.append(a)
      continue
    if np.issubdtype(a.dtype, np.integer):
      copies = [np.roll(a, k) if a.ndim else a + k for k in range(size)]
    else:
      copies = [a + rng.uniform(-0.5, 0.5, a.shape).astype(a.dtype) for _ in range(size)]
    batched.append(np.stack(copies, axis=ax))
    for ex, c in zip(examples, copies):
      ex.append(c)
  expected = np.stack([np.asarray(fun(*ex)) for ex in examples])
  for f in (jaxon.vmap(fun, in_axes), jaxon.jit(jaxon.vmap(fun, in_axes))):
    np.testing.assert_allclose(f(*batched), expected, rtol=1e-6,
                               err_msg=f"in_axes={in_axes}")


SLICE_CASE = {c.name: c for c in SLICE_CASES}
GATHER_CASE = {c.name: c for c in GATHER_CASES}
MIXED_CASES = [  # (case, in_axes)
    (SLICE_CASE["dynamic_slice-clamped"], (1, None, 0)),
    (SLICE_CASE["dynamic_slice-clamped"], (None, 0, None)),
    (SLICE_CASE["dynamic_update_slice-clamped"], (-1, 0, None, 0)),
    (SLICE_CASE["dynamic_update_slice-clamped"], (None, 1, 0, None)),
    (GATHER_CASE["rows"], (-1, 1)),
    (GATHER_CASE["points"], (1, -1)),
    (GATHER_CASE["batching-dims"], (1, 0)),
    (SCATTER_CASE["scatter-rows"], (None, 1, -1)),
    (SCATTER_CASE["scatter_add-windows"], (2, None, 1)),
    (SCATTER_CASE["scatter_mul-batching-dims"], (-1, 0, 1)),
]


@pytest.mark.parametrize("case,in_axes", MIXED_CASES, ids=repr)
def test_mixed_in_axes(case, in_axes):
  arrays = tuple(rand(s, F32, seed) for seed, s in enumerate(case.shapes))
  check_in_axes(case.fun, (*arrays, *case.indices), in_axes)


@pytest.mark.parametrize("case,in_axes", [
    (SLICE_CASE["dynamic_slice-clamped"], (0, 0, None)),
    (GATHER_CASE["rows"], (1, 0)),
    (SCATTER_CASE["scatter_add-rows"], (0, 1, 0)),
    (SCATTER_CASE["scatter_mul-rows"], (0, None, 0)),
    (SCATTER_CASE["scatter-rows"], (None, 0, 0)),
], ids=repr)
def test_grad_of_vmap(case, in_axes):
  """Derivatives through the batched forms (gathers and scatters with batching dims)."""
  size = 3
  arrays = [rand(s, F32, seed) for seed, s in enumerate(case.shapes)]
  arrays = [a if ax is None else np.stack([a * (k + 1) for k in range(size)], ax)
            for a, ax in zip(arrays, in_axes)]
  indices = [i if ax is None else np.stack([np.roll(i, k) for k in range(size)], ax)
             for i, ax in zip(case.indices, in_axes[len(arrays):])]
  batched = jaxon.vmap(case.fun, in_axes)
  check_transforms(lambda *xs: batched(*xs, *indices), tuple(arrays), vmap_axes=())
