"""lax.fft and jnp.fft against NumPy (eager and jit, float32 and float64), their derivatives
to order 2 in every type and norm (finite differences), and vmap against a loop."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from tests.transform_util import check_vmap
from tests.util import check_grads

NORMS = [None, "ortho", "forward"]


def _real(rng, shape, dtype=np.float32):
  return rng.standard_normal(shape).astype(dtype)


def _complex(rng, shape, dtype=np.complex64):
  return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _tol(dtype):
  return dict(rtol=1e-4, atol=1e-4) if np.dtype(dtype) in (np.float32, np.complex64) else \
      dict(rtol=1e-10, atol=1e-10)


def _check_numpy(fn, np_fn, x, what):
  """`fn(x)` eagerly and under jit equals NumPy's answer (in NumPy's dtype narrowed to
  x's precision)."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    expected = np.asarray(np_fn(x))
  single = np.asarray(x).dtype in (np.float32, np.complex64, np.int32)
  if single:
    expected = expected.astype(np.complex64 if np.iscomplexobj(expected) else np.float32)
  for mode, f in (("eager", fn), ("jit", jaxon.jit(fn))):
    out = np.asarray(f(x))
    assert out.shape == expected.shape, f"{what} ({mode}): shape {out.shape}"
    assert out.dtype == expected.dtype, f"{what} ({mode}): dtype {out.dtype}"
    np.testing.assert_allclose(out, expected, err_msg=f"{what} ({mode})",
                               **_tol(expected.dtype))


# ----------------------------------------------------------------------------- lax.fft

# (fft_type, input shape, fft_lengths, NumPy reference)
LAX_CASES = [
    ("fft", (5,), (5,), np.fft.fft),
    ("fft", (2, 3, 4), (3, 4), np.fft.fft2),
    ("ifft", (2, 6), (6,), np.fft.ifft),
    ("ifft", (2, 3, 2, 4), (3, 2, 4), lambda x: np.fft.ifftn(x, axes=(1, 2, 3))),
    ("rfft", (3, 8), (8,), np.fft.rfft),
    ("rfft", (3, 7), (3, 7), np.fft.rfft2),
    ("rfft", (2, 3, 4, 5), (3, 4, 5), lambda x: np.fft.rfftn(x, axes=(1, 2, 3))),
    ("irfft", (3, 5), (8,), lambda x: np.fft.irfft(x, 8)),
    ("irfft", (3, 4), (7,), lambda x: np.fft.irfft(x, 7)),
    ("irfft", (2, 3, 3), (3, 4), lambda x: np.fft.irfft2(x, (3, 4))),
]


def _lax_input(rng, fft_type, shape, dtype=np.float32):
  if fft_type == "rfft":
    return _real(rng, shape, dtype)
  return _complex(rng, shape, np.complex64 if dtype == np.float32 else np.complex128)


@pytest.mark.parametrize("fft_type,shape,lengths,np_fn", LAX_CASES)
def test_lax_fft_matches_numpy(fft_type, shape, lengths, np_fn):
  x = _lax_input(np.random.RandomState(0), fft_type, shape)
  _check_numpy(lambda x: lax.fft(x, fft_type, lengths), np_fn, x,
               f"lax.fft {fft_type} {shape} {lengths}")


@pytest.mark.parametrize("fft_type,shape,lengths,np_fn", LAX_CASES[::3])
def test_lax_fft_float64(x64, fft_type, shape, lengths, np_fn):
  x = _lax_input(np.random.RandomState(1), fft_type, shape, np.float64)
  _check_numpy(lambda x: lax.fft(x, lax.FftType[fft_type.upper()], lengths), np_fn, x,
               f"lax.fft {fft_type} float64")


@pytest.mark.parametrize("fft_type,shape,lengths,np_fn", LAX_CASES)
def test_lax_fft_grads(fft_type, shape, lengths, np_fn):
  x = _lax_input(np.random.RandomState(2), fft_type, shape)
  check_grads(lambda x: lax.fft(x, fft_type, lengths), (x,), order=2)


def test_real_transforms_transpose_as_jax():
  """RFFT's transpose is a half-spectrum IRFFT and IRFFT's an RFFT, weighted in the program:
  no full complex FFT, no weights passed as an argument. Values are JAX 0.10.2's (its
  gradient of |rfftn(x)|.sum() at this x, recorded)."""
  x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5 / 7
  grad = jaxon.jit(jaxon.grad(lambda a: jnp.abs(jnp.fft.rfftn(a)).sum()))
  text = grad.lower(x).as_text()
  assert "IRFFT" in text and "type = FFT" not in text, text
  assert "%arg1" not in text, text  # x is the only argument
  want = [[0.99260634, -1.00872803, -0.49593896, -1.90605688],
          [-1.3649404, 1.12368536, 0.35275394, 2.96164131],
          [-1.61100101, 3.63418078, 2.12652016, 7.19527721]]
  np.testing.assert_allclose(grad(x), want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("fft_type,shape,lengths", [c[:3] for c in LAX_CASES[::2]])
def test_lax_fft_vmap(fft_type, shape, lengths):
  x = _lax_input(np.random.RandomState(3), fft_type, shape)
  check_vmap(lambda x: lax.fft(x, fft_type, lengths), (x,))


def test_lax_fft_jaxpr_and_errors():
  x = np.ones((2, 4), np.float32)
  text = str(jaxon.make_jaxpr(lambda x: lax.fft(x, "rfft", (4,)))(x))
  assert "fft[fft_lengths=(4,) fft_type=FftType.RFFT]" in text, text
  assert "c64[2,3]" in text, text
  with pytest.raises(ValueError, match="trailing dimensions"):
    lax.fft(x, "fft", (3,))
  with pytest.raises(ValueError, match="real input"):
    lax.fft(x.astype(np.complex64), "rfft", (4,))
  with pytest.raises(ValueError, match="fft_type"):
    lax.fft(x, "dft", (4,))
  with pytest.raises(ValueError, match="1 to 3"):
    lax.fft(np.ones((2,) * 4, np.complex64), "fft", (2,) * 4)


# ----------------------------------------------------------------------------- jnp.fft

# (id, jnp function, NumPy function, kwargs, input shape, real input?)
NP_CASES = [
    ("fft", jnp.fft.fft, np.fft.fft, {}, (3, 5), False),
    ("fft_n_pad", jnp.fft.fft, np.fft.fft, dict(n=7, axis=0), (3, 5), False),
    ("fft_n_crop", jnp.fft.fft, np.fft.fft, dict(n=3), (2, 5), False),
    ("fft_real_input", jnp.fft.fft, np.fft.fft, {}, (6,), True),
    ("ifft", jnp.fft.ifft, np.fft.ifft, dict(axis=1), (2, 4, 3), False),
    ("rfft", jnp.fft.rfft, np.fft.rfft, dict(n=6), (3, 5), True),
    ("irfft", jnp.fft.irfft, np.fft.irfft, {}, (2, 5), False),
    ("irfft_n_odd", jnp.fft.irfft, np.fft.irfft, dict(n=7, axis=0), (4, 2), False),
    ("hfft", jnp.fft.hfft, np.fft.hfft, dict(n=5), (3, 4), False),
    ("ihfft", jnp.fft.ihfft, np.fft.ihfft, {}, (3, 6), True),
    ("fft2", jnp.fft.fft2, np.fft.fft2, {}, (2, 3, 4), False),
    ("ifft2", jnp.fft.ifft2, np.fft.ifft2, dict(s=(2, 5), axes=(0, 2)), (2, 3, 4), False),
    ("rfft2", jnp.fft.rfft2, np.fft.rfft2, {}, (3, 4, 5), True),
    ("irfft2", jnp.fft.irfft2, np.fft.irfft2, dict(s=(3, 5)), (2, 3, 3), False),
    ("fftn_all", jnp.fft.fftn, np.fft.fftn, {}, (2, 3, 2, 2), False),
    ("ifftn_axes", jnp.fft.ifftn, np.fft.ifftn, dict(axes=(2, 0)), (2, 3, 4), False),
    ("rfftn", jnp.fft.rfftn, np.fft.rfftn, dict(axes=(2, 0, 3, 1)), (2, 3, 2, 4), True),
    ("irfftn", jnp.fft.irfftn, np.fft.irfftn, dict(s=(2, 3, 2, 5)), (2, 3, 2, 3), False),
]


def _np_input(rng, shape, real, dtype=np.float32):
  if real:
    return _real(rng, shape, dtype)
  return _complex(rng, shape, np.complex64 if dtype == np.float32 else np.complex128)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,fn,np_fn,kwargs,shape,real",
                         [pytest.param(*c, id=c[0]) for c in NP_CASES])
def test_jnp_fft_matches_numpy(name, fn, np_fn, kwargs, shape, real, norm):
  x = _np_input(np.random.RandomState(4), shape, real)
  _check_numpy(lambda x: fn(x, norm=norm, **kwargs), lambda x: np_fn(x, norm=norm, **kwargs),
               x, f"jnp.fft.{name} norm={norm}")


@pytest.mark.parametrize("name,fn,np_fn,kwargs,shape,real",
                         [pytest.param(*c, id=c[0]) for c in NP_CASES[::4]])
def test_jnp_fft_float64(x64, name, fn, np_fn, kwargs, shape, real):
  x = _np_input(np.random.RandomState(5), shape, real, np.float64)
  _check_numpy(lambda x: fn(x, **kwargs), lambda x: np_fn(x, **kwargs), x,
               f"jnp.fft.{name} float64")


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,fn,np_fn,kwargs,shape,real",
                         [pytest.param(*c, id=c[0]) for c in NP_CASES if c[0] in (
                             "fft_n_pad", "ifft", "rfft", "irfft_n_odd", "hfft", "ihfft",
                             "rfft2", "irfft2", "ifftn_axes")])
def test_jnp_fft_grads(name, fn, np_fn, kwargs, shape, real, norm):
  x = _np_input(np.random.RandomState(6), shape, real)
  check_grads(lambda x: fn(x, norm=norm, **kwargs), (x,), order=2)


@pytest.mark.parametrize("name,fn,np_fn,kwargs,shape,real",
                         [pytest.param(*c, id=c[0]) for c in NP_CASES if c[0] in (
                             "fft_n_crop", "rfft", "irfft", "rfftn", "irfft2")])
def test_jnp_fft_vmap(name, fn, np_fn, kwargs, shape, real):
  x = _np_input(np.random.RandomState(7), shape, real)
  check_vmap(lambda x: fn(x, **kwargs), (x,), axes=(0, -1))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_fftn_random_axes_and_sizes(shape, data):
  """Random rank, axes (any order) and sizes s (cropping and padding) for the four
  n-dimensional transforms."""
  ndim = len(shape)
  axes = data.draw(st.permutations(range(ndim)).map(
      lambda p: p[:data.draw(st.integers(1, ndim))]))
  s = [data.draw(st.integers(1, 6)) for _ in axes]
  kind = data.draw(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn"]))
  norm = data.draw(st.sampled_from(NORMS))
  rng = np.random.RandomState(len(shape))
  x = _np_input(rng, tuple(shape), real=kind == "rfftn")
  fn = functools.partial(getattr(jnp.fft, kind), s=s, axes=axes, norm=norm)
  np_fn = functools.partial(getattr(np.fft, kind), s=s, axes=axes, norm=norm)
  _check_numpy(fn, np_fn, x, f"{kind} shape={shape} s={s} axes={axes} norm={norm}")


# ----------------------------------------------------------------------------- helpers

@pytest.mark.parametrize("n", [1, 4, 7])
def test_fftfreq(n):
  np.testing.assert_allclose(jnp.fft.fftfreq(n, 0.3), np.fft.fftfreq(n, 0.3), rtol=1e-6)
  np.testing.assert_allclose(jnp.fft.rfftfreq(n), np.fft.rfftfreq(n), rtol=1e-6)
  assert jnp.fft.fftfreq(n).dtype == np.float32
  d = jaxon.jit(lambda d: jnp.fft.fftfreq(n, d))(np.float32(2.0))
  np.testing.assert_allclose(d, np.fft.fftfreq(n, 2.0), rtol=1e-6)


@pytest.mark.parametrize("axes", [None, 0, (1,), (0, 1)])
def test_fftshift(axes):
  x = np.arange(15.0, dtype=np.float32).reshape(3, 5)
  np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
  np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
  np.testing.assert_array_equal(jnp.fft.ifftshift(jnp.fft.fftshift(x, axes), axes), x)


def test_jnp_fft_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError, match="norm"):
    jnp.fft.fft(x, norm="unitary")
  with pytest.raises(ValueError, match="data points"):
    jnp.fft.fft(x, n=0)
  with pytest.raises(ValueError, match="repeated axes"):
    jnp.fft.fftn(x, axes=(0, 0))
  with pytest.raises(ValueError, match="same length"):
    jnp.fft.fftn(x, s=(2, 3), axes=(0,))
  with pytest.raises(ValueError, match="two axes"):
    jnp.fft.fft2(x, axes=(0,))
