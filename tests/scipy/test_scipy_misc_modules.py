"""The small jaxon.scipy modules against SciPy: fft (DCT-II and its inverse), ndimage
(map_coordinates), interpolate (RegularGridInterpolator), integrate (trapezoid) and
cluster.vq; gradients, vmap and pytree behaviour where they matter; argument errors."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.cluster.vq as osp_vq
import scipy.fft as osp_fft
import scipy.integrate as osp_integrate
import scipy.interpolate as osp_interpolate
import scipy.ndimage as osp_ndimage

import jaxon
import jaxon.numpy as jnp
from jaxon.scipy import fft, integrate, interpolate, ndimage
from jaxon.scipy.cluster import vq
from jaxon.test_util import check_grads

RNG = np.random.RandomState(0)


def _data(shape, dtype=np.float32):
  return RNG.standard_normal(shape).astype(dtype)


# (function, kwargs, complex input): lengths odd and even, padding and truncation, several
# axes; complex input transforms its real and imaginary parts apart.
DCT_CASES = [
    ("dct", dict(norm="ortho", n=7, axis=0), True),
    ("idct", dict(norm="backward", n=3), False),
    ("dctn", dict(s=(6, 3)), False),
    ("idctn", dict(s=(2, 5), axes=(2, 0), norm="ortho"), True),
]


def test_dct_family_matches_scipy():
  x = _data((4, 5, 3))
  z = (x + 1j * _data((4, 5, 3))).astype(np.complex64)
  outs = jaxon.jit(lambda x, z: [getattr(fft, name)(z if complex_ else x, **kwargs)
                                 for name, kwargs, complex_ in DCT_CASES])(x, z)
  for (name, kwargs, complex_), out in zip(DCT_CASES, outs):
    a = z if complex_ else x
    expected = getattr(osp_fft, name)(a, **kwargs)
    assert out.dtype == a.dtype and out.shape == expected.shape, (name, kwargs, a.dtype)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4,
                               err_msg=f"{name} {kwargs} {a.dtype}")


def test_dct_inverts_and_differentiates():
  x = _data((6,))
  roundtrip = jaxon.jit(lambda v: (fft.idct(fft.dct(v, norm="ortho"), norm="ortho"),
                                   fft.idct(fft.dct(v))))
  for out in roundtrip(x):
    np.testing.assert_allclose(out, x, rtol=1e-5, atol=1e-5)
  assert jaxon.jit(fft.dct)(np.arange(4, dtype=np.int32)).dtype == np.float32
  check_grads(jaxon.jit(fft.dct), (x,), order=1, modes=("fwd", "rev"), eps=1e-2,
              atol=1e-2, rtol=1e-2)


def test_fft_errors():
  with pytest.raises(NotImplementedError, match="only DCT type 2"):
    fft.dct(np.ones(4), type=3)
  with pytest.raises(ValueError, match="norm='forward' is not implemented"):
    fft.idctn(np.ones((2, 2)), norm="forward")
  with pytest.raises(ValueError, match="at most x.ndim"):
    fft.dctn(np.ones(4), s=(2, 2))


IMAGE = (np.arange(20.0).reshape(4, 5) ** 1.3).astype(np.float32)
COORDINATES = [np.array([-1.3, -0.6, 0.2, 1.5, 3.4, 3.7, 4.6], np.float32),
               np.array([-2.2, -0.4, 4.3, 0.5, 2.5, 4.6, 6.1], np.float32)]
# jaxon/JAX mode -> the SciPy mode with the same meaning
SCIPY_MODES = {"constant": "grid-constant", "nearest": "nearest", "wrap": "grid-wrap",
               "mirror": "mirror", "reflect": "reflect"}


def test_map_coordinates_matches_scipy():
  cases = [(order, mode) for order in (0, 1) for mode in SCIPY_MODES]
  run_all = jaxon.jit(lambda im, c: [ndimage.map_coordinates(im, c, order, mode, cval=-1.0)
                                     for order, mode in cases])
  for (order, mode), out in zip(cases, run_all(IMAGE, COORDINATES)):
    expected = osp_ndimage.map_coordinates(IMAGE, np.array(COORDINATES), order=order,
                                           mode=SCIPY_MODES[mode], cval=-1.0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5,
                               err_msg=f"order={order} mode={mode}")


def test_map_coordinates_integers_gradient_and_vmap():
  # Integer input: interpolated, then rounded half away from zero (JAX 0.10.2 gives these).
  out = jaxon.jit(ndimage.map_coordinates, static_argnums=2)(
      np.arange(4, dtype=np.int32), [np.array([0.5, 1.5, 2.5, -0.5])], 1)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, [1, 2, 3, 0])
  linear = jaxon.jit(lambda im, c: ndimage.map_coordinates(im, c, 1, "nearest"))
  inner = [np.array([0.3, 1.6, 2.2], np.float32), np.array([3.7, 0.4, 1.1], np.float32)]
  check_grads(linear, (IMAGE, inner), order=1, modes=("fwd", "rev"), eps=1e-3,
              atol=2e-2, rtol=2e-2)
  images = np.stack([IMAGE, 2 * IMAGE, IMAGE[::-1]])
  np.testing.assert_allclose(jaxon.vmap(linear, (0, None))(images, inner),
                             np.stack([linear(im, inner) for im in images]), rtol=1e-6)


def test_map_coordinates_errors():
  with pytest.raises(ValueError, match="sequence of length input.ndim"):
    ndimage.map_coordinates(IMAGE, COORDINATES[:1], order=1)
  with pytest.raises(NotImplementedError, match="order<=1"):
    ndimage.map_coordinates(IMAGE, COORDINATES, order=3)
  with pytest.raises(NotImplementedError, match="does not yet support mode grid-wrap"):
    ndimage.map_coordinates(IMAGE, COORDINATES, order=1, mode="grid-wrap")


GRID = (np.array([0.0, 1.0, 2.5, 4.0], np.float32), np.array([-1.0, 0.0, 2.0], np.float32))
GRID_VALUES = _data((4, 3, 2))
POINTS = np.array([[0.5, -0.5], [3.9, 1.9], [5.0, 0.0], [2.5, 0.0], [-0.1, 1.0]], np.float32)


RGI_CASES = [("linear", np.nan), ("nearest", None)]


def test_regular_grid_interpolator_matches_scipy():
  def interpolate_all(values, points):
    """Every case in one compile; the interpolator also crosses a jit boundary and a
    vmap as a pytree."""
    fs = [interpolate.RegularGridInterpolator(GRID, values, m, fill_value=fill)
          for m, fill in RGI_CASES]
    outs = [jaxon.jit(lambda f, p: f(p))(f, points) for f in fs]
    f = interpolate.RegularGridInterpolator(GRID, values[..., 0])
    tuple_points = f((points[:, :1], points[:, 1:]))  # a tuple of coordinate arrays
    scaled = jaxon.vmap(lambda c: interpolate.RegularGridInterpolator(GRID, c * values)(points))
    return outs, tuple_points, scaled(jnp.array([1.0, 2.0]))

  outs, tuple_points, scaled = jaxon.jit(interpolate_all)(GRID_VALUES, POINTS)
  for (method, fill), out in zip(RGI_CASES, outs):
    expected = osp_interpolate.RegularGridInterpolator(
        GRID, GRID_VALUES, method, bounds_error=False, fill_value=fill)(POINTS)
    assert out.shape == (5, 2) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5,
                               err_msg=f"{method} fill_value={fill}")
  np.testing.assert_allclose(tuple_points[:, 0], outs[0][:, 0], rtol=1e-6)
  np.testing.assert_allclose(scaled, [outs[0], 2 * outs[0]], rtol=1e-6)


def test_regular_grid_interpolator_errors():
  with pytest.raises(ValueError, match="method 'cubic' is not defined"):
    interpolate.RegularGridInterpolator(GRID, GRID_VALUES, method="cubic")
  with pytest.raises(NotImplementedError, match="bounds_error"):
    interpolate.RegularGridInterpolator(GRID, GRID_VALUES, bounds_error=True)
  with pytest.raises(ValueError, match="3 point arrays, but values has 2"):
    interpolate.RegularGridInterpolator(GRID + GRID[:1], GRID_VALUES[..., 0])
  with pytest.raises(ValueError, match="have dimension 3"):
    interpolate.RegularGridInterpolator(GRID, GRID_VALUES)(np.ones((2, 3)))


def test_trapezoid_and_vq_match_scipy():
  y, obs, codes = _data((4, 3)), _data((6, 3)), _data((4, 3))
  x = np.array([0.0, 0.5, 2.0, 2.5], np.float32)

  def all_results(y, x, obs, codes):
    one_feature = vq.vq(jnp.array([0.0, 2.9, 1.2]), jnp.array([0.0, 1.0, 3.0]))[0]
    return (integrate.trapezoid(y, axis=0, dx=0.5), integrate.trapezoid(y.T, x),
            vq.vq(obs, codes), one_feature)
  by_spacing, by_x, (code, dist), one_feature = jaxon.jit(all_results)(y, x, obs, codes)
  np.testing.assert_allclose(by_spacing, osp_integrate.trapezoid(y, axis=0, dx=0.5), rtol=1e-5)
  np.testing.assert_allclose(by_x, osp_integrate.trapezoid(y.T, x), rtol=1e-5)
  expected_code, expected_dist = osp_vq.vq(obs, codes)
  assert code.dtype == np.int32 and dist.dtype == np.float32
  np.testing.assert_array_equal(code, expected_code)
  np.testing.assert_allclose(dist, expected_dist, rtol=1e-5)
  np.testing.assert_array_equal(one_feature, [0, 2, 1])
  with pytest.raises(ValueError, match="same rank"):
    vq.vq(obs, codes[0])
