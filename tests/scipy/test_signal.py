"""jaxon.scipy.signal against scipy.signal: convolutions in every mode (inputs swapped,
complex), detrend, and the spectral estimators; gradients and vmap of convolve; errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.signal as osp_signal

import jaxon
from jaxon.scipy import signal
from jaxon.test_util import check_grads

RNG = np.random.RandomState(0)


def _data(shape, complex_=False):
  x = RNG.standard_normal(shape).astype(np.float32)
  if complex_:
    x = (x + 1j * RNG.standard_normal(shape)).astype(np.complex64)
  return x


MODES = ("full", "same", "valid")


# (function, in1 shape, in2 shape, complex): the larger input first, second, and equal.
CONVOLUTION_CASES = [
    ("convolve", (6,), (3,), False),
    ("correlate", (3,), (6,), True),
    ("fftconvolve", (4, 5), (2, 3), False),
    ("convolve2d", (2, 3), (4, 5), True),
    ("correlate2d", (4, 5), (2, 3), True),
    ("correlate2d", (2, 3), (4, 5), True),
    ("correlate", (3, 3, 2), (2, 3, 2), False),
]


@pytest.mark.parametrize("name,shape1,shape2,complex_", CONVOLUTION_CASES)
def test_convolutions_match_scipy(name, shape1, shape2, complex_):
  in1, in2 = _data(shape1, complex_), _data(shape2, complex_)
  fn = getattr(signal, name)
  outs = jaxon.jit(lambda a, b: [fn(a, b, mode) for mode in MODES])(in1, in2)
  for mode, out in zip(MODES, outs):
    expected = getattr(osp_signal, name)(in1, in2, mode=mode)
    assert out.dtype == in1.dtype and out.shape == expected.shape, (name, mode, out.shape)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=f"{name} {mode}")


def test_convolve_methods_integers_and_fft_axes():
  ints = np.array([1, 2, 3], np.int32)
  out = signal.convolve(ints, np.array([0, 1, 2], np.int32), method="fft")
  assert out.dtype == np.float32  # promoted to inexact, as in JAX
  np.testing.assert_allclose(out, [0, 1, 4, 7, 6], atol=1e-5)
  x, y = _data((3, 5, 2)), _data((3, 2, 2))
  np.testing.assert_allclose(signal.fftconvolve(x, y, "same", axes=1),
                             osp_signal.fftconvolve(x, y, "same", axes=1), atol=1e-5)


def test_convolve_gradients_and_vmap():
  x, k = _data((5,)), _data((3,))
  check_grads(jaxon.jit(lambda a, b: signal.convolve(a, b, "same")), (x, k), order=2,
              modes=("fwd", "rev"), eps=1e-2, atol=1e-2, rtol=1e-2)
  xs = _data((3, 5))
  batched = jaxon.vmap(lambda a: signal.correlate(a, k, "full"))(xs)
  np.testing.assert_allclose(batched, np.stack([osp_signal.correlate(a, k) for a in xs]),
                             rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bp", [0, [2, 5]])
def test_detrend_matches_scipy(bp):
  data = _data((7, 3)) + np.arange(7.0, dtype=np.float32)[:, None] ** 2
  kinds = ("linear", "constant")
  outs = jaxon.jit(lambda d: [signal.detrend(d, axis=0, type=kind, bp=bp) for kind in kinds])(data)
  for kind, out in zip(kinds, outs):
    np.testing.assert_allclose(out,
                               osp_signal.detrend(data, axis=0, type=kind, bp=bp),
                               rtol=1e-4, atol=1e-4, err_msg=f"{kind} bp={bp}")


def _assert_all_close(actual, expected, what, tol=1e-4):
  for a, e in zip(actual, expected):
    assert np.shape(a) == np.shape(e), (what, np.shape(a), np.shape(e))
    np.testing.assert_allclose(a, e, rtol=1e-3, atol=tol, err_msg=what)


SIGNAL = _data((2, 40))
OTHER = _data((2, 33))


@pytest.mark.parametrize("kwargs", [
    dict(nperseg=8),
    dict(nperseg=7, noverlap=2, nfft=10, boundary="odd", padded=False, detrend="linear",
         return_onesided=False),
    dict(nperseg=6, window="hamming", boundary="even"),
])
def test_stft_matches_scipy_and_istft_inverts_it(kwargs):
  f, t, zxx = jaxon.jit(lambda x: signal.stft(x, **kwargs))(SIGNAL)
  _assert_all_close((f, t, zxx), osp_signal.stft(SIGNAL, **kwargs), f"stft {kwargs}")
  inverse = {k: kwargs[k] for k in ("nperseg", "noverlap", "nfft", "window") if k in kwargs}
  inverse["input_onesided"] = kwargs.get("return_onesided", True)
  expected = osp_signal.istft(np.asarray(zxx), **inverse)
  _assert_all_close(jaxon.jit(lambda z: signal.istft(z, **inverse))(zxx), expected,
                    f"istft {inverse}")


def test_stft_and_istft_along_other_axes():
  _assert_all_close(jaxon.jit(lambda x: signal.stft(x, nperseg=8, axis=0))(SIGNAL.T),
                    osp_signal.stft(SIGNAL.T, nperseg=8, axis=0), "stft axis=0")
  _, _, zxx = osp_signal.stft(SIGNAL, nperseg=8)
  zxx = np.moveaxis(zxx, -1, 0).astype(np.complex64)
  istft = jaxon.jit(lambda z: signal.istft(z, nperseg=8, time_axis=0, freq_axis=-1))
  _assert_all_close(istft(zxx),
                    osp_signal.istft(zxx, nperseg=8, time_axis=0, freq_axis=-1), "istft axes")


@pytest.mark.parametrize("kwargs", [
    dict(nperseg=8),
    dict(nperseg=8, noverlap=3, nfft=12, scaling="spectrum", average="median"),
    dict(nperseg=9, detrend="linear", return_onesided=False, fs=3.0),
])
def test_welch_and_csd_match_scipy(kwargs):
  """One jit per case; the last passes fs as a Python float, closed over."""
  both = jaxon.jit(lambda x, y: (signal.welch(x, **kwargs), signal.csd(x, y, **kwargs)))
  welch, csd = both(SIGNAL, OTHER)
  _assert_all_close(welch, osp_signal.welch(SIGNAL, **kwargs), f"welch {kwargs}")
  _assert_all_close(csd, osp_signal.csd(SIGNAL, OTHER, **kwargs), f"csd {kwargs}")


def test_errors():
  x = np.ones(5, np.float32)
  with pytest.raises(ValueError, match="mode must be one of"):
    signal.convolve(x, x, mode="circular")
  with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
    signal.convolve(x, x, method="overlap-add")
  with pytest.raises(ValueError, match="smaller than the other in every dimension"):
    signal.convolve(np.ones((2, 4)), np.ones((3, 3)))
  with pytest.raises(ValueError, match="same number of dimensions"):
    signal.convolve(x, np.ones((2, 2)))
  with pytest.raises(NotImplementedError, match="boundary='fill'"):
    signal.convolve2d(np.ones((2, 2)), np.ones((2, 2)), boundary="wrap")
  with pytest.raises(ValueError, match="2-dimensional"):
    signal.correlate2d(x, x)
  with pytest.raises(ValueError, match="Trend type"):
    signal.detrend(x, type="quadratic")
  with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
    signal.stft(SIGNAL, nperseg=8, noverlap=8)
  with pytest.raises(ValueError, match="nfft must be greater"):
    signal.welch(SIGNAL, nperseg=8, nfft=4)
  with pytest.raises(ValueError, match="Unknown boundary"):
    signal.stft(SIGNAL, nperseg=8, boundary="periodic")
  with pytest.raises(ValueError, match="differing time and frequency"):
    signal.istft(np.ones((5, 4), np.complex64), time_axis=0, freq_axis=0)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    # nperseg longer than the signal: shortened, with a warning
    f, _ = jaxon.jit(lambda x: signal.welch(x, nperseg=16))(x)
  assert f.shape == (3,) and any("nperseg" in str(w.message) for w in caught)
