"""Every jnp function through every transformation, one table row each: the value against
NumPy, `jit` against eager, `vmap` against a loop of single examples (also under jit), and,
for differentiable functions, derivatives to order 2 forward and reverse against finite
differences. Inputs live in each function's smooth domain (positive for log, away from the
kinks of abs and max, from the jumps of floor and round, from ties for sort).

Functions already checked this way elsewhere are left out (their files in brackets):
einsum [test_einsum]; sum, mean, var, std, max, min, prod, cumsum, cumprod, argmax, argmin,
all, any [test_reductions_transforms]; take, take_along_axis, put_along_axis, choose, insert,
delete, compress, unique, searchsorted, isin, nonzero, intersect1d, setxor1d, argpartition
[test_searching]; convolve, correlate, cross, diff, interp, ldexp, piecewise, polyval,
polyder, polyint, polymul, gcd [test_misc]; diag, diagonal, trace, tril, triu, linspace
[test_creation]. Not array functions, so not here: einsum_path, broadcast_shapes.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from tests.util import check_grads

f32, c64, i32, i8 = (np.dtype(t) for t in (np.float32, np.complex64, np.int32, np.int8))


def rand(shape: tuple[int, ...], domain: str = "real", seed: int = 0,
         dtype: np.dtype = f32) -> np.ndarray:
  """Values of `domain`: 'real' (-2, 2); 'pos' (0.5, 3); 'unit' (-0.8, 0.8); 'gt1' (1.2, 3);
  'nonzero' |x| in (0.3, 2); 'frac' k + 0.2..0.4 or k + 0.6..0.8 (away from the jumps of
  floor, ceil, round and of bin edges at integers); 'distinct' spaced at least 0.3 apart
  (no ties for sort, max, median); 'int' in [-4, 5); 'nat' in [0, 5); 'bool'. Complex
  dtypes add an imaginary part in (-1, 1)."""
  rng = np.random.RandomState(seed)
  if domain == "bool":
    return rng.rand(*shape) > 0.5
  if domain in ("int", "nat"):
    return rng.randint(-4 if domain == "int" else 0, 5, shape).astype(dtype)
  if domain == "frac":
    x = rng.randint(-2, 2, shape) + rng.choice([0.3, 0.7], shape) + rng.uniform(-.1, .1, shape)
  elif domain == "distinct":
    n = int(np.prod(shape))
    x = (rng.permutation(n) - n / 2) * 0.4 + rng.uniform(0, 0.1, n)
    x = x.reshape(shape)
  else:
    lo, hi = {"real": (-2, 2), "nonzero": (0.3, 2), "pos": (0.5, 3), "unit": (-0.8, 0.8),
              "gt1": (1.2, 3)}[domain]
    x = rng.uniform(lo, hi, shape)
    if domain == "nonzero":
      x = x * rng.choice([-1, 1], shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.uniform(-1, 1, shape)
  return np.asarray(x, dtype)


def with_nan(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
  x = rand(shape, "distinct", seed)
  x.reshape(-1)[1] = np.nan
  return x


def multiples(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
  """x (2, 3) and y (3,) with x / y at least 0.2 away from an integer: floor_divide,
  remainder and fmod are smooth there."""
  rng = np.random.RandomState(seed)
  y = np.array([0.7, -1.3, 1.9], np.float32)
  x = y * (rng.randint(-2, 3, (2, 3)) + rng.choice([0.3, 0.6], (2, 3)))
  return x.astype(np.float32), y


class Case(NamedTuple):
  """`fun(*args)`: `ref` is NumPy's version (None: the oracle lives elsewhere); `grad` says
  whether it is differentiable; `vmap` is False for functions of static arguments only."""
  name: str
  fun: Callable
  args: tuple
  ref: Callable | None
  grad: bool = True
  vmap: bool = True

  def __repr__(self) -> str:
    return self.name


def unary(name: str, domain: str = "real", grad: bool = True, dtype: np.dtype = f32,
          shape: tuple = (2, 3)) -> Case:
  return Case(name, getattr(jnp, name), (rand(shape, domain, 0, dtype),), getattr(np, name),
              grad)


def binary(name: str, dx: str = "real", dy: str = "real", grad: bool = True,
           dtype: np.dtype = f32) -> Case:
  """(2, 3) against (3,): broadcasting on the way."""
  args = (rand((2, 3), dx, 1, dtype), rand((3,), dy, 2, dtype))
  return Case(name, getattr(jnp, name), args, getattr(np, name), grad)


def nondiff(name: str, fun: Callable, args: tuple, ref: Callable | None) -> Case:
  return Case(name, fun, args, ref, grad=False)


def padded(x: np.ndarray, size: int) -> np.ndarray:
  """NumPy's data-dependent result cut or zero-padded to `size` along axis 0, as JAX's
  `size=` gives it (with the default fill value 0)."""
  x = x[:size]
  return np.concatenate([x, np.zeros((size - len(x),) + x.shape[1:], x.dtype)])


def static(name: str, fun: Callable, ref: Callable) -> Case:
  """A constructor of static arguments only: jit against eager against NumPy."""
  return Case(name, fun, (), ref, grad=False, vmap=False)


X23, X3, X4 = rand((2, 3)), rand((3,), seed=1), rand((4,), seed=2)
XNZ = np.array([[0.12, -1.33, 2.71], [0.46, -0.28, 1.07]], np.float32)  # 10 x: not k + .5
INTS, INTS_NZ = rand((2, 3), "int", dtype=i32), np.array([3, -2, 4], np.int32)
MX, MY = multiples()
SORTED_BINS = np.array([-1.5, -0.2, 0.4, 1.1], np.float32)

UFUNCS = [
    *(unary(n, "unit") for n in ("arcsin", "asin", "arccos", "acos", "arctanh", "atanh",
                                 "tan")),
    *(unary(n, "gt1") for n in ("arccosh", "acosh")),
    *(unary(n, "pos") for n in ("sqrt", "log", "log2", "log10", "log1p")),
    *(unary(n) for n in ("arcsinh", "asinh", "arctan", "atan", "cos", "cosh", "deg2rad",
                         "degrees", "exp", "exp2", "expm1", "negative", "positive",
                         "rad2deg", "radians", "sin", "sinh", "square", "tanh")),
    *(unary(n, "nonzero") for n in ("abs", "absolute", "cbrt", "reciprocal", "sign")),
    *(unary(n, "frac") for n in ("around", "ceil", "fix", "floor", "rint", "round", "trunc")),
    *(unary(n, dtype=c64) for n in ("angle", "conj", "conjugate", "imag", "real")),
    Case("sinc", jnp.sinc, (np.array([-1.3, -0.4, 0.0, 0.02, 0.6, 1.7], np.float32),),
         np.sinc),
    *(binary(n) for n in ("add", "subtract", "multiply", "logaddexp", "logaddexp2",
                          "maximum", "minimum", "fmax", "fmin")),
    *(binary(n, dy="nonzero") for n in ("divide", "true_divide")),
    *(binary(n, "nonzero", "nonzero") for n in ("arctan2", "atan2", "copysign", "hypot")),
    *(binary(n, "pos") for n in ("power", "pow", "float_power")),
    binary("heaviside", "nonzero"),
    *(Case(n, getattr(jnp, n), (MX, MY), getattr(np, n))
      for n in ("floor_divide", "remainder", "mod", "fmod", "divmod")),
    Case("clip", lambda x: jnp.clip(x, -1.0, 1.0), (rand((2, 3), "frac"),),
         lambda x: np.clip(x, -1.0, 1.0)),
    Case("clip_bounds", jnp.clip, (rand((2, 3), "frac"), np.float32(-1.0), np.float32(0.5)),
         np.clip),
    Case("where", jnp.where, (rand((2, 3), "bool"), X23, X3), np.where),
    *(nondiff(n, getattr(jnp, n), (X23, X3), getattr(np, n))
      for n in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
                "nextafter")),
    *(nondiff(n, getattr(jnp, n), (rand((2, 3), "bool"), rand((3,), "bool", 1)),
              getattr(np, n)) for n in ("logical_and", "logical_or", "logical_xor")),
    *(nondiff(n, getattr(jnp, n), (rand((2, 3), "int", dtype=i32), rand((3,), "nat", 1, i32)),
              getattr(np, n))
      for n in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
                "bitwise_left_shift", "bitwise_right_shift")),
    *(nondiff(n, getattr(jnp, n), (rand((2, 3), "int", dtype=i32),), getattr(np, n))
      for n in ("bitwise_not", "bitwise_invert", "invert")),
    *(nondiff(n, getattr(jnp, n), (np.array([1.0, -np.inf, np.nan, -0.0], np.float32),),
              getattr(np, n)) for n in ("isfinite", "isinf", "isnan", "signbit")),
    nondiff("logical_not", jnp.logical_not, (X23,), np.logical_not),
    # keyword and dtype variants that take other code paths
    Case("power_int", lambda x: jnp.power(x, 3), (X23,), lambda x: np.power(x, 3)),
    Case("power_neg_int", lambda x: jnp.power(x, -2), (XNZ,), lambda x: np.power(x, -2.0)),
    Case("round_decimals", lambda x: jnp.round(x, 1), (XNZ,), lambda x: np.round(x, 1)),
    Case("angle_deg", lambda z: jnp.angle(z, deg=True), (rand((2, 3), dtype=c64),),
         lambda z: np.angle(z, deg=True)),
    Case("abs_complex", jnp.abs, (rand((2, 3), "nonzero", dtype=c64),), np.abs),
    Case("logaddexp_neg_inf", jnp.logaddexp, (X23, np.full(3, -np.inf, np.float32)),
         np.logaddexp),
    *(Case(f"{n}_ties", getattr(jnp, n), (X23, X23[0]), getattr(np, n))  # smooth there
      for n in ("logaddexp", "logaddexp2")),
    *(nondiff(f"{n}_int", getattr(jnp, n), (INTS, INTS_NZ), getattr(np, n))
      for n in ("floor_divide", "remainder", "fmod", "divmod")),
    nondiff("power_int_arrays", jnp.power, (INTS, rand((3,), "nat", 1, i32)), np.power),
]

LINEAR = [
    Case("dot", jnp.dot, (X23, X3), np.dot),
    Case("inner", jnp.inner, (X23, rand((4, 3), seed=1)), np.inner),
    Case("outer", jnp.outer, (X3, X4), np.outer),
    Case("vdot", jnp.vdot, (X23, rand((2, 3), seed=1)), np.vdot),
    Case("kron", jnp.kron, (rand((2, 2)), X23), np.kron),
    Case("matmul", jnp.matmul, (X23, rand((3, 2), seed=1)), np.matmul),
    Case("matmul_batched", jnp.matmul, (rand((2, 2, 3)), rand((3, 2), seed=1)), np.matmul),
    Case("tensordot", lambda a, b: jnp.tensordot(a, b, 1), (X23, rand((3, 2), seed=1)),
         lambda a, b: np.tensordot(a, b, 1)),
    Case("tensordot_pairs", lambda a, b: jnp.tensordot(a, b, ([0], [1])),
         (X23, rand((4, 2), seed=1)), lambda a, b: np.tensordot(a, b, ([0], [1]))),
    Case("matmul_vector", jnp.matmul, (X3, rand((3, 2), seed=1)), np.matmul),
    Case("dot_scalar", lambda a: jnp.dot(a, np.float32(2.0)), (X23,),
         lambda a: np.dot(a, np.float32(2.0))),
    Case("inner_vectors", jnp.inner, (X3, rand((3,), seed=2)), np.inner),
    Case("kron_mixed_rank", jnp.kron, (X3, rand((2, 2), seed=1)), np.kron),
    Case("vdot_complex", jnp.vdot, (rand((2, 3), dtype=c64), rand((2, 3), seed=1, dtype=c64)),
         np.vdot),
]

MISC = [
    nondiff("isclose", jnp.isclose, (X23, X3), np.isclose),
    nondiff("allclose", jnp.allclose, (X23, X23 + 1e-7), np.allclose),
    nondiff("array_equal", jnp.array_equal, (X23, X23), np.array_equal),
    nondiff("array_equiv", jnp.array_equiv, (X23, X3), np.array_equiv),
    Case("bincount", lambda x, w: jnp.bincount(x, w, length=5),
         (rand((6,), "nat", dtype=i32), rand((6,), seed=1)),
         lambda x, w: np.bincount(x, w, minlength=5)),
    nondiff("digitize", lambda x: jnp.digitize(x, SORTED_BINS), (X23,),
            lambda x: np.digitize(x, SORTED_BINS)),
    Case("ediff1d", lambda x: jnp.ediff1d(x, to_begin=x[:1], to_end=2.0), (X4,),
         lambda x: np.ediff1d(x, to_begin=x[:1], to_end=2.0)),
    nondiff("frexp", jnp.frexp, (rand((2, 3), "nonzero"),), np.frexp),
    nondiff("lcm", jnp.lcm, (rand((2, 3), "int", dtype=i8), rand((3,), "nat", 1, i8)),
            np.lcm),  # int8: Euclid's fixed number of steps grows with the bit width
    Case("gradient", jnp.gradient, (rand((3, 4)),), np.gradient),
    Case("gradient_spacing", lambda f: jnp.gradient(f, 0.5, axis=0, edge_order=2),
         (rand((3, 4)),), lambda f: np.gradient(f, 0.5, axis=0, edge_order=2)),
    Case("histogram", lambda a, w: jnp.histogram(a, 4, (-2, 2), weights=w),
         (rand((6,), "frac"), rand((6,), seed=1)),
         lambda a, w: np.histogram(a, 4, (-2, 2), weights=w)),
    Case("histogram_bin_edges", lambda a: jnp.histogram_bin_edges(a, 3),
         (rand((5,), "distinct"),), lambda a: np.histogram_bin_edges(a, 3)),
    Case("modf", jnp.modf, (rand((2, 3), "frac"),), np.modf),
    Case("polyadd", jnp.polyadd, (X3, rand((2,), seed=1)), np.polyadd),
    Case("polysub", jnp.polysub, (X3, rand((2,), seed=1)), np.polysub),
    Case("select", lambda x: jnp.select([x < -0.5, x > 0.5], [x, x ** 2], -1.0),
         (rand((2, 3), "frac"),), lambda x: np.select([x < -0.5, x > 0.5], [x, x ** 2], -1.0)),
    Case("vander", lambda x: jnp.vander(x, 3), (X4,), lambda x: np.vander(x, 3)),
]

SEARCHING = [
    Case("append", jnp.append, (X23, X3), np.append),
    Case("append_axis", lambda a, b: jnp.append(a, b, axis=0), (X23, rand((1, 3), seed=1)),
         lambda a, b: np.append(a, b, axis=0)),
    Case("extract", lambda c, x: jnp.extract(c, x, size=3), (rand((6,), "bool"), rand((6,))),
         lambda c, x: padded(np.extract(c, x), 3)),
    Case("resize", lambda x: jnp.resize(x, (3, 3)), (X4,), lambda x: np.resize(x, (3, 3))),
    nondiff("argwhere", lambda x: jnp.argwhere(x > 0, size=6), (X23,),
            lambda x: padded(np.argwhere(x > 0), 6)),
    nondiff("flatnonzero", lambda x: jnp.flatnonzero(x > 0, size=6), (X23,),
            lambda x: padded(np.flatnonzero(x > 0), 6)),
    nondiff("ravel_multi_index",
            lambda i, j: jnp.ravel_multi_index((i, j), (5, 5), mode="clip"),
            (rand((4,), "nat", dtype=i32), rand((4,), "nat", 1, i32)),
            lambda i, j: np.ravel_multi_index((i, j), (5, 5), mode="clip")),
    nondiff("unravel_index", lambda i: jnp.unravel_index(i, (2, 3)),
            (np.array([0, 5, 3, 2], np.int32),), lambda i: np.unravel_index(i, (2, 3))),
    *(nondiff(n, lambda a, b, n=n: getattr(jnp, n)(a, b, size=6, fill_value=0.0),
              (rand((5,), "int"), rand((4,), "int", 1)),
              lambda a, b, n=n: padded(getattr(np, n)(a, b), 6))
      for n in ("setdiff1d", "union1d")),
    *(nondiff(n, lambda a, n=n: getattr(jnp, n)(a, size=5, fill_value=0.0),
              (rand((6,), "int"),), None)
      for n in ("unique_all", "unique_counts", "unique_inverse", "unique_values")),
]

SORTING = [
    Case("sort", jnp.sort, (rand((2, 4), "distinct"),), np.sort),
    Case("sort_axis0", lambda x: jnp.sort(x, axis=0), (rand((3, 2), "distinct"),),
         lambda x: np.sort(x, axis=0)),
    Case("sort_complex", jnp.sort_complex, (rand((4,), "distinct"),), np.sort_complex),
    Case("partition", lambda x: jnp.partition(x, 2), (rand((2, 5), "distinct"),), None),
    Case("sort_descending", lambda x: jnp.sort(x, descending=True), (rand((2, 4), "distinct"),),
         lambda x: -np.sort(-x)),
    nondiff("argsort", jnp.argsort, (rand((2, 4), "distinct"),), np.argsort),
    nondiff("argsort_descending_ties", lambda x: jnp.argsort(x, descending=True),
            (np.array([1, 3, 1, 2, 3], np.int32),), lambda x: np.argsort(-x, kind="stable")),
    nondiff("lexsort", lambda a, b: jnp.lexsort((a, b)),
            (rand((5,), "int"), rand((5,), "int", 1)), lambda a, b: np.lexsort((a, b))),
]

# reductions.py (helper H2's file)
REDUCTIONS = [
    Case("amax", lambda x: jnp.amax(x, axis=1), (rand((2, 3), "distinct"),),
         lambda x: np.amax(x, axis=1)),
    Case("amin", jnp.amin, (rand((2, 3), "distinct"),), np.amin),
    Case("ptp", lambda x: jnp.ptp(x, axis=0), (rand((2, 3), "distinct"),),
         lambda x: np.ptp(x, axis=0)),
    Case("average", lambda x, w: jnp.average(x, axis=1, weights=w),
         (X23, rand((3,), "pos", 1)), lambda x, w: np.average(x, axis=1, weights=w)),
    Case("median", lambda x: jnp.median(x, axis=1), (rand((2, 3), "distinct"),),
         lambda x: np.median(x, axis=1)),
    Case("median_even", jnp.median, (rand((2, 2), "distinct"),), np.median),
    Case("quantile", lambda x: jnp.quantile(x, 0.3, axis=-1), (rand((2, 4), "distinct"),),
         lambda x: np.quantile(x, 0.3, axis=-1)),
    Case("percentile", lambda x, q: jnp.percentile(x, q), (rand((5,), "distinct"),
                                                          np.array([20.0, 65.0], np.float32)),
         np.percentile),
    Case("cumulative_sum", lambda x: jnp.cumulative_sum(x, axis=1, include_initial=True),
         (X23,), lambda x: np.cumulative_sum(x, axis=1, include_initial=True)),
    Case("cumulative_prod", lambda x: jnp.cumulative_prod(x, axis=0), (X23,),
         lambda x: np.cumulative_prod(x, axis=0)),
    *(Case(n, lambda x, n=n: getattr(jnp, n)(x, axis=1), (with_nan((2, 3)),),
           lambda x, n=n: getattr(np, n)(x, axis=1))
      for n in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
                "nancumsum", "nancumprod")),
    *(Case(n, lambda x, n=n, q=q: getattr(jnp, n)(x, *q, axis=1), (with_nan((2, 3)),),
           lambda x, n=n, q=q: getattr(np, n)(x, *q, axis=1))
      for n, q in (("nanmedian", ()), ("nanquantile", (0.3,)), ("nanpercentile", (40.0,)))),
    *(nondiff(n, lambda x, n=n: getattr(jnp, n)(x, axis=1), (with_nan((2, 3)),),
              lambda x, n=n: getattr(np, n)(x, axis=1)) for n in ("nanargmax", "nanargmin")),
    nondiff("count_nonzero", lambda x: jnp.count_nonzero(x > 0, axis=0), (X23,),
            lambda x: np.count_nonzero(x > 0, axis=0)),
]

# shape.py (helper H2's file)
SHAPE = [
    Case(name, fun, args, ref) for name, fun, ref, args in [
        ("reshape", lambda x: jnp.reshape(x, (3, 2)), lambda x: np.reshape(x, (3, 2)), (X23,)),
        ("ravel", jnp.ravel, np.ravel, (X23,)),
        ("transpose", jnp.transpose, np.transpose, (X23,)),
        ("permute_dims", lambda x: jnp.permute_dims(x, (1, 0)),
         lambda x: np.permute_dims(x, (1, 0)), (X23,)),
        ("matrix_transpose", jnp.matrix_transpose, np.matrix_transpose, (rand((2, 2, 3)),)),
        ("swapaxes", lambda x: jnp.swapaxes(x, 0, 1), lambda x: np.swapaxes(x, 0, 1), (X23,)),
        ("moveaxis", lambda x: jnp.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1),
         (rand((2, 3, 2)),)),
        ("squeeze", jnp.squeeze, np.squeeze, (rand((1, 3)),)),
        ("expand_dims", lambda x: jnp.expand_dims(x, 1), lambda x: np.expand_dims(x, 1),
         (X23,)),
        ("atleast_1d", jnp.atleast_1d, np.atleast_1d, (np.float32(0.5),)),
        ("atleast_2d", jnp.atleast_2d, np.atleast_2d, (X3,)),
        ("atleast_3d", jnp.atleast_3d, np.atleast_3d, (X23,)),
        ("astype", lambda x: jnp.astype(x, np.float64), lambda x: x.astype(np.float32),
         (X23,)),
        ("broadcast_to", lambda x: jnp.broadcast_to(x, (2, 3)),
         lambda x: np.broadcast_to(x, (2, 3)), (X3,)),
        ("broadcast_arrays", jnp.broadcast_arrays, np.broadcast_arrays,
         (rand((2, 1)), X3)),
        ("flip", jnp.flip, np.flip, (X23,)),
        ("fliplr", jnp.fliplr, np.fliplr, (X23,)),
        ("flipud", jnp.flipud, np.flipud, (X23,)),
        ("rot90", jnp.rot90, np.rot90, (X23,)),
        ("roll", lambda x: jnp.roll(x, 2, axis=1), lambda x: np.roll(x, 2, axis=1), (X23,)),
        ("tile", lambda x: jnp.tile(x, (2, 1)), lambda x: np.tile(x, (2, 1)), (X3,)),
        ("repeat", lambda x: jnp.repeat(x, 2, axis=0), lambda x: np.repeat(x, 2, axis=0),
         (X23,)),
        ("repeat_counts", lambda x: jnp.repeat(x, [1, 0, 2], axis=1),
         lambda x: np.repeat(x, [1, 0, 2], axis=1), (X23,)),
        ("pad", lambda x: jnp.pad(x, ((1, 0), (0, 2))),
         lambda x: np.pad(x, ((1, 0), (0, 2))), (X23,)),
        ("pad_reflect", lambda x: jnp.pad(x, 2, mode="reflect"),
         lambda x: np.pad(x, 2, mode="reflect"), (X4,)),
        ("pad_edge", lambda x: jnp.pad(x, 1, mode="edge"), lambda x: np.pad(x, 1, mode="edge"),
         (X23,)),
        ("concatenate", lambda a, b: jnp.concatenate([a, b], axis=0),
         lambda a, b: np.concatenate([a, b], axis=0), (X23, rand((1, 3), seed=1))),
        ("concat", lambda a, b: jnp.concat([a, b]), lambda a, b: np.concat([a, b]),
         (X3, X4)),
        ("stack", lambda a, b: jnp.stack([a, b], axis=1),
         lambda a, b: np.stack([a, b], axis=1), (X3, rand((3,), seed=2))),
        *((n, lambda a, b, n=n: getattr(jnp, n)([a, b]),
           lambda a, b, n=n: getattr(np, n)([a, b]), (X23, rand((2, 3), seed=1)))
          for n in ("hstack", "vstack", "dstack", "column_stack")),
        *((n, lambda x, n=n: getattr(jnp, n)(x, 2), lambda x, n=n: getattr(np, n)(x, 2),
           (rand((2, 2, 2)),)) for n in ("split", "array_split", "hsplit", "vsplit",
                                         "dsplit")),
        ("array_split_uneven", lambda x: jnp.array_split(x, 2),
         lambda x: np.array_split(x, 2), (rand((5,)),)),
    ]
]

# creation.py (helper H3's file)
CREATION = [
    static("arange", lambda: jnp.arange(1, 7, 2), lambda: np.arange(1, 7, 2)),
    static("eye", lambda: jnp.eye(3, 4, 1), lambda: np.eye(3, 4, 1)),
    static("identity", lambda: jnp.identity(3), lambda: np.identity(3)),
    static("tri", lambda: jnp.tri(3, 4, -1), lambda: np.tri(3, 4, -1)),
    static("indices", lambda: jnp.indices((2, 3)), lambda: np.indices((2, 3))),
    static("diag_indices", lambda: jnp.diag_indices(3), lambda: np.diag_indices(3)),
    static("tril_indices", lambda: jnp.tril_indices(3, 1), lambda: np.tril_indices(3, 1)),
    static("triu_indices", lambda: jnp.triu_indices(3, 0, 4),
           lambda: np.triu_indices(3, 0, 4)),
    static("mask_indices", lambda: jnp.mask_indices(3, jnp.triu, size=6),
           lambda: np.mask_indices(3, np.triu)),
    static("fromfunction", lambda: jnp.fromfunction(lambda i, j: i * 3 + j, (2, 3)),
           lambda: np.fromfunction(lambda i, j: i * 3 + j, (2, 3))),
    *(nondiff(n, getattr(jnp, n), (rand((3, 3)),), getattr(np, n))
      for n in ("diag_indices_from", "tril_indices_from", "triu_indices_from")),
    Case("diagflat", lambda x: jnp.diagflat(x, 1), (rand((2, 2)),),
         lambda x: np.diagflat(x, 1)),
    Case("meshgrid", jnp.meshgrid, (X3, rand((2,), seed=1)), np.meshgrid),
    Case("meshgrid_ij", lambda a, b: jnp.meshgrid(a, b, indexing="ij"),
         (X3, rand((2,), seed=1)), lambda a, b: np.meshgrid(a, b, indexing="ij")),
    Case("logspace", lambda a, b: jnp.logspace(a, b, 4), (np.float32(0.2), np.float32(1.1)),
         lambda a, b: np.logspace(a, b, 4)),
    Case("geomspace", lambda a, b: jnp.geomspace(a, b, 4), (np.float32(0.5), np.float32(3.0)),
         lambda a, b: np.geomspace(a, b, 4)),
]

CASES = UFUNCS + LINEAR + MISC + SEARCHING + SORTING + REDUCTIONS + SHAPE + CREATION


# ----------------------------------------------------------------------------- the checks

def _leaves(x: Any) -> list[np.ndarray]:
  return [np.asarray(leaf) for leaf in jaxon.tree_leaves(x)]


def _assert_close(actual: Any, expected: Any, what: str, rtol: float, atol: float) -> None:
  a_leaves, e_leaves = _leaves(actual), _leaves(expected)
  assert len(a_leaves) == len(e_leaves), f"{what}: {len(a_leaves)} != {len(e_leaves)} outputs"
  for a, e in zip(a_leaves, e_leaves):
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


def _of_inexact_args(fun: Callable, args: tuple) -> tuple[Callable, list]:
  """`fun` as a function of its float arguments only, the others closed over: check_grads
  differentiates every argument, and integer ones have no derivative."""
  where = [i for i, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype, np.inexact)]

  def of_inexact(*xs: Any) -> Any:
    full = list(args)
    for i, x in zip(where, xs):
      full[i] = x
    return fun(*full)
  return of_inexact, [args[i] for i in where]


def _example(x: Any, rng: np.random.RandomState) -> np.ndarray:
  """Another example like `x`: floats moved a little, integers and bools permuted (so
  that index arguments stay in range but still differ between examples)."""
  x = np.asarray(x)
  if np.issubdtype(x.dtype, np.inexact):
    return (x + 0.05 * rng.standard_normal(x.shape)).astype(x.dtype)
  return rng.permutation(x.reshape(-1)).reshape(x.shape)


def check_vmap_against_loop(fun: Callable, args: tuple) -> None:
  """`jit(vmap(fun))` equals a loop of eager `fun` over 2 examples, with every argument
  mapped at 0 and, for several arguments, with the first alone mapped.

  Lighter than check_vmap (which maps each argument alone, at 3 axes, and runs vmap eagerly
  too): eagerly, each primitive compiles once per shape, and the batched shapes would
  double this file's run time; tests/lax covers the batching rules' axes.
  """
  rng = np.random.RandomState(0)
  choices = [(0,) * len(args)] + ([(0,) + (None,) * (len(args) - 1)] if len(args) > 1 else [])
  for in_axes in choices:
    examples = [list(args), [_example(a, rng) if ax == 0 else a
                             for a, ax in zip(args, in_axes)]]
    batched = [np.stack([ex[i] for ex in examples]) if ax == 0 else a
               for i, (a, ax) in enumerate(zip(args, in_axes))]
    expected = [np.stack(leaves) for leaves in zip(*(_leaves(fun(*ex)) for ex in examples))]
    _assert_close(jaxon.jit(jaxon.vmap(fun, in_axes))(*batched), expected,
                  f"jit(vmap) with in_axes={in_axes}", 1e-5, 1e-6)


def _check(fun: Callable, args: tuple, refs: list, grad: bool, vmap: bool) -> None:
  """All checks on `fun` (which returns one output per entry of `refs`)."""
  out = fun(*args)
  _assert_close(jaxon.jit(fun)(*args), out, "jit != eager", 1e-5, 1e-6)
  for got, ref in zip(out, refs):
    if ref is not None:
      with np.errstate(all="ignore"):
        _assert_close(got, ref(*args), "against NumPy", 1e-4, 1e-5)
  if grad:
    check_grads(*_of_inexact_args(fun, args), order=2, modes=("fwd", "rev"))
  if vmap:
    check_vmap_against_loop(fun, args)


# Reverse mode is checked through one inner product over all outputs, whose tolerance
# grows with its size: few cases per group keep one wrong derivative from hiding.
GROUP_SIZE = 6


class Group(NamedTuple):
  """Cases of the same arguments and checks, run as one function returning a tuple: one
  compilation, one finite-difference sweep, one vmap for the lot."""
  cases: tuple

  def __repr__(self) -> str:
    return "+".join(c.name for c in self.cases)


def _groups() -> list:
  def key(c: Case) -> tuple:
    arrays = tuple((np.asarray(a).dtype.str, np.shape(a), np.asarray(a).tobytes())
                   for a in c.args)
    return arrays, c.grad, c.vmap
  grouped: dict[tuple, list] = {}
  for c in CASES:
    grouped.setdefault(key(c), []).append(c)
  chunks = [tuple(cs[i:i + GROUP_SIZE]) for cs in grouped.values()
            for i in range(0, len(cs), GROUP_SIZE)]
  return [pytest.param(Group(cs), id=repr(Group(cs))) for cs in chunks]


@pytest.mark.parametrize("group", _groups())
def test_transforms(group: Group) -> None:
  first = group.cases[0]
  combined = lambda *args: tuple(c.fun(*args) for c in group.cases)  # noqa: E731
  try:
    _check(combined, first.args, [c.ref for c in group.cases], first.grad, first.vmap)
  except Exception:
    if len(group.cases) == 1:
      raise
    for c in group.cases:  # which one? Each alone, so that the failure names it
      try:
        _check(lambda *args, c=c: (c.fun(*args),), c.args, [c.ref], c.grad, c.vmap)
      except Exception as e:
        raise AssertionError(f"jnp {c.name}: {type(e).__name__}: {e}") from e
    raise


def test_trim_zeros():
  """Not in the table: its result's length depends on its values, so (as in JAX) it works
  on concrete inputs only: eager values and derivatives, and a clear error under jit."""
  x = np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0], np.float32)
  for trim in ("fb", "f", "b"):
    _assert_close(jnp.trim_zeros(x, trim), np.trim_zeros(x, trim), f"trim_zeros {trim}", 0, 0)
  mask = (x != 0).astype(np.float32)  # perturbations must keep the zeros zero
  check_grads(lambda v: jnp.trim_zeros(v * mask) ** 2, (x + 1,), order=2, modes=("fwd", "rev"))
  with pytest.raises(jaxon.errors.ConcretizationTypeError, match="concrete"):
    jaxon.jit(jnp.trim_zeros)(x)


def test_sinc_derivatives_at_zero():
  """sinc is smooth at 0: its derivatives there are its Maclaurin series' (sin z / z =
  1 - z**2/6 + z**4/120 - ... at z = pi x), not the zero derivatives of a constant, and
  near 0 they are not lost to cancellation in sin(z)/z."""
  derivatives = [jnp.sinc]
  for _ in range(4):
    derivatives.append(jaxon.grad(derivatives[-1]))
  want = [1.0, 0.0, -np.pi ** 2 / 3, 0.0, np.pi ** 4 / 5]
  for order, (d, w) in enumerate(zip(derivatives, want)):
    for how, f in (("eager", d), ("jit", jaxon.jit(d))):
      for x in (0.0,):  # at 1e-20 JAX's own sin(z)/z branch gives -inf: not a contract
        np.testing.assert_allclose(f(np.float32(x)), w, rtol=1e-6, atol=1e-6,
                                   err_msg=f"sinc derivative {order} at {x} ({how})")
  second_fwd = jaxon.jacfwd(jaxon.jacfwd(jnp.sinc))
  np.testing.assert_allclose(second_fwd(np.float32(0.0)), -np.pi ** 2 / 3, rtol=1e-6)


def test_logaddexp_at_ties_and_limits():
  """logaddexp is smooth where its arguments are equal: softplus(x) = logaddexp(x, 0) has
  derivative 1/2 at 0 (a max + log1p(exp(-|x1 - x2|)) form gives 0 there); small terms
  keep log1p's relative accuracy; at infinities the derivatives are JAX's (its rule reads
  an infinite term's weight as 1, and gives NaN when both are -inf)."""
  assert jnp.logaddexp(1.0, 2.0).weak_type, "Python scalars give a weak result"
  for fn, base in ((jnp.logaddexp, np.e), (jnp.logaddexp2, 2.0)):
    name = fn.__name__
    np.testing.assert_allclose(jaxon.grad(fn, argnums=(0, 1))(0.0, 0.0), (0.5, 0.5),
                               err_msg=f"{name} at a tie")
    np.testing.assert_allclose(jaxon.jit(jaxon.grad(lambda x, fn=fn: fn(x, 0.0)))(0.0), 0.5,
                               err_msg=f"jit {name} at a tie")
    np.testing.assert_allclose(fn(np.float32(-30), np.float32(0)), np.log1p(base ** -30.0)
                               / np.log(base), rtol=1e-6, err_msg=f"{name} small term")
    for x, y, grads in ((-np.inf, 1.0, (0, 1)), (np.inf, 1.0, (1, base)),
                        (-np.inf, -np.inf, (np.nan, np.nan))):
      np.testing.assert_array_equal(fn(x, y), np.logaddexp(x, y), err_msg=f"{name}({x}, {y})")
      np.testing.assert_allclose(jaxon.grad(fn, argnums=(0, 1))(x, y), grads,
                                 err_msg=f"{name}'({x}, {y})")
