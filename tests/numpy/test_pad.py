"""jnp.pad's statistic, ramp and odd-reflection modes against numpy.pad: every pad_width
form, integer and float dtypes, eagerly and under jit; second-order gradients and vmap
against a loop. (The basic modes are tested in test_shape.py and test_numpy_properties.py.)
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from tests.transform_util import check_jit_transforms, check_vmap
from tests.util import check_grads

MODES = [("linear_ramp", {}), ("linear_ramp", {"end_values": (1, -2)}),
         ("linear_ramp", {"end_values": ((1, -2), (3, 0))}),
         ("maximum", {}), ("minimum", {"stat_length": 2}), ("mean", {"stat_length": (1, 3)}),
         ("mean", {}), ("median", {}), ("median", {"stat_length": ((2, 1), (3, 2))}),
         ("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"})]
WIDTHS = [2, (3, 0), ((1, 2),), ((0, 5), (7, 1)), ((9, 4), (2, 6))]


def _data(shape, dtype, seed=0):
  x = np.random.RandomState(seed).standard_normal(shape) * 5
  return x.astype(dtype)


def _fit(kwargs, ndim):
  """Per-axis option pairs cut to `ndim` axes."""
  return {k: v[:ndim] if np.ndim(v) == 2 else v for k, v in kwargs.items()}


def _same(got, want, dtype, what, floored_ramp=False):
  """`floored_ramp`: an integer linear ramp, computed in float32 and floored (as JAX does;
  NumPy computes it in float64). Under `jit` XLA fuses the ramp's multiply-add, so a value
  that is exactly an integer in float64 may land just below it and floor one lower: JAX
  0.10.2 pads [-2, 0, -10, 8] by (9, 4) with end_values (1, -2) with a -1 where NumPy has
  0. Such values may differ by one."""
  got = np.asarray(got)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  assert got.dtype == np.dtype(dtype), f"{what}: dtype {got.dtype} != {dtype}"
  if np.issubdtype(got.dtype, np.integer) and floored_ramp:
    np.testing.assert_allclose(got, want, rtol=0, atol=1, err_msg=what)
  elif np.issubdtype(got.dtype, np.integer):
    np.testing.assert_array_equal(got, want, err_msg=what)
  else:
    tol = 1e-12 if got.dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10, err_msg=what)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(MODES), st.sampled_from(WIDTHS),
       st.sampled_from([(4,), (2, 3), (3, 1), (1, 2)]),
       st.sampled_from([np.float32, np.int32, np.int8]), st.integers(0, 20))
def test_modes_match_numpy_under_jit(mode_kwargs, widths, shape, dtype, seed):
  mode, kwargs = mode_kwargs
  x = _data(shape, dtype, seed)
  kwargs = _fit(kwargs, len(shape))
  if len(np.shape(widths)) == 2 and np.shape(widths)[0] not in (1, len(shape)):
    widths = widths[:len(shape)]
  want = np.pad(x, widths, mode, **kwargs)
  got = jaxon.jit(lambda a: jnp.pad(a, widths, mode, **kwargs))(x)
  _same(got, want, dtype, f"pad {mode} {kwargs} {widths} {shape} {np.dtype(dtype).name}",
        floored_ramp=mode == "linear_ramp")


PERIODIC = [("wrap", {}), ("reflect", {}), ("symmetric", {}),
            ("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"})]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_periodic_modes_narrow_and_wide(n):
  """Widths within a period (a few slices of x and its mirror image) and across many
  (tiled periods), every periodic mode, in one jitted program per length."""
  x = _data((n, 2), np.float32, n)
  widths = [(0, 1), (1, 0), (n - 1, n), (n + 1, 2 * n - 1), (2 * n, 1), (3 * n + 2, 5 * n)]
  cases = [(w, mode, kwargs) for w in widths for mode, kwargs in PERIODIC]
  got = jaxon.jit(lambda a: [jnp.pad(a, (w, (0, 0)), mode, **kwargs)
                             for w, mode, kwargs in cases])(x)
  for out, (w, mode, kwargs) in zip(got, cases):
    _same(out, np.pad(x, (w, (0, 0)), mode, **kwargs), np.float32, f"{mode} {kwargs} {w}")


@pytest.mark.parametrize("mode,kwargs", MODES[1::2], ids=lambda v: str(v))
def test_modes_eager(mode, kwargs):
  x = _data((2, 3), np.float32)
  widths = ((3, 1), (2, 4))
  _same(jnp.pad(x, widths, mode, **kwargs), np.pad(x, widths, mode, **kwargs), np.float32,
        f"pad {mode} {kwargs}")


def test_integer_ramp_rounds_as_jax_eagerly_and_under_jit():
  """The case of `_same`'s docstring, with JAX 0.10.2's result (the same eagerly: JAX's pad
  is one compiled program, and so is jaxon's eager pad)."""
  x = np.array([-2, 0, -10, 8], np.int32)
  want = [1, 0, 0, -1, -1, -1, -1, -2, -2, -2, 0, -10, 8, 5, 3, 0, -2]
  pad = lambda a: jnp.pad(a, (9, 4), "linear_ramp", end_values=(1, -2))  # noqa: E731
  np.testing.assert_array_equal(jaxon.jit(pad)(x), want)
  np.testing.assert_array_equal(pad(x), want)
  np.testing.assert_array_equal(
      jnp.pad(x, (9, 4), "linear_ramp", end_values=np.array([1, -2])), want)


def test_float64_and_integer_rounding(x64):
  x = _data((5,), np.float64)
  ints = np.array([5, 1, 2, 8, -3], np.int64)  # mean 2.6, median 2; ramps floor
  for mode, kwargs in MODES:
    kwargs = _fit(kwargs, 1)
    fn = jaxon.jit(lambda a, mode=mode, kwargs=kwargs: jnp.pad(a, (6, 3), mode, **kwargs))
    _same(fn(x), np.pad(x, (6, 3), mode, **kwargs), np.float64, f"pad {mode} f64")
    _same(fn(ints), np.pad(ints, (6, 3), mode, **kwargs), np.int64, f"pad {mode} int64")


def test_half_integers_round_to_even():
  x = np.array([1, 2, 3, 6], np.int32)  # mean 3, median 2.5 -> 2; [1, 2] -> 1.5 -> 2
  for mode, kwargs in [("median", {}), ("mean", {"stat_length": 2}),
                       ("median", {"stat_length": (2, 3)})]:
    _same(jnp.pad(x, 2, mode, **kwargs), np.pad(x, 2, mode, **kwargs), np.int32, mode)


def test_nan_propagates_through_statistics():
  x = np.array([1., np.nan, 3.], np.float32)
  for mode in ("maximum", "minimum", "mean", "median"):
    np.testing.assert_array_equal(np.isnan(jnp.pad(x, 1, mode)),
                                  np.isnan(np.pad(x, 1, mode)), err_msg=mode)


def test_empty_arrays():
  x = np.zeros((0, 3), np.float32)
  for mode, kwargs in MODES:
    got = jnp.pad(x, ((0, 0), (1, 2)), mode, **kwargs)
    assert got.shape == (0, 6), mode
    with pytest.raises(ValueError, match="empty axis 0"):
      jnp.pad(x, 1, mode, **kwargs)


def test_traced_end_values():
  x = _data((4,), np.float32)
  got = jaxon.jit(lambda a, e: jnp.pad(a, 2, "linear_ramp", end_values=e))(x, np.float32(3))
  _same(got, np.pad(x, 2, "linear_ramp", end_values=3), np.float32, "traced end_values")


ERRORS = [
    (lambda: jnp.pad(np.ones(3), 1, "maximum", stat_length=0), ValueError, "stat_length of 0"),
    (lambda: jnp.pad(np.ones(3), 1, "mean", stat_length=-1), ValueError, "negative"),
    (lambda: jnp.pad(np.ones((2, 2)), 1, "mean", stat_length=(1, 2, 3)), ValueError,
     "stat_length"),
    (lambda: jnp.pad(np.ones(3), 1, "reflect", reflect_type="sideways"), ValueError,
     "reflect_type"),
    (lambda: jnp.pad(np.ones(3, bool), 1, "reflect", reflect_type="odd"), TypeError, "bool"),
    (lambda: jnp.pad(np.ones(3), 1, "bogus"), NotImplementedError, "bogus"),
    (lambda: jnp.pad(np.ones(3), 1, "mean", end_values=1), ValueError, "unsupported keyword"),
    (lambda: jaxon.jit(lambda e: jnp.pad(np.ones((2, 2)), 1, "linear_ramp",
                                         end_values=e))(np.ones((2, 2))),
     jaxon.errors.ConcretizationTypeError, "end_values"),
]


@pytest.mark.parametrize("thunk,exc,match", ERRORS)
def test_errors(thunk, exc, match):
  with pytest.raises(exc, match=match):
    thunk()


@pytest.mark.parametrize("mode,kwargs", [MODES[1], MODES[3], MODES[7], MODES[9]],
                         ids=lambda v: str(v))
def test_transforms(mode, kwargs):
  x = _data((2, 3), np.float32) / 5
  fn = lambda a: jnp.pad(a, ((2, 1), (1, 3)), mode, **kwargs)  # noqa: E731
  # median's second derivative through the sort is slow to build in forward mode
  check_grads(jaxon.jit(fn), [x], order=2, modes=("rev",) if mode == "median" else ("fwd", "rev"))
  check_vmap(fn, [x], axes=(0,))


def test_jit_of_transforms():
  x = _data((2, 3), np.float32) / 5
  check_jit_transforms(lambda a: jnp.pad(a, ((2, 1), (1, 3)), "symmetric", reflect_type="odd"),
                       [x])


def test_vmap_integer_odd_reflection():
  x = np.arange(12, dtype=np.int32).reshape(3, 4) ** 2
  check_vmap(lambda a: jnp.pad(a, (5, 6), "symmetric", reflect_type="odd"), [x], axes=(1,))
