"""jaxon.image against golden values recorded from JAX 0.10.2 (no SciPy function has the
same kernels), plus gradients, vmap and the argument errors."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.image import ResizeMethod, resize, scale_and_translate
from jaxon.test_util import check_grads

# A (3, 4) image that is not linear in its indices, so every kernel shows.
IMAGE = (np.arange(12.0).reshape(3, 4) ** 1.5 / 10).astype(np.float32)

# jax.image.resize(IMAGE, (2, 6), method, antialias) in JAX 0.10.2: the first axis
# shrinks (antialias matters), the second grows. Without antialias: the plain kernel
# path (linear, lanczos3) and the edge-padded one (cubic-pytorch).
RESIZE_GOLDEN = {
    ("linear", True): [[0.3, 0.390881, 0.522788, 0.686887, 0.873591, 1.01927],
                       [1.71421, 1.91049, 2.1769, 2.45743, 2.75112, 2.97469]],
    ("linear", False): [[0.2, 0.277254, 0.392016, 0.542048, 0.716137, 0.852718],
                        [1.89706, 2.10078, 2.37695, 2.66669, 2.96918, 3.19922]],
    ("cubic", True): [[0.209955, 0.28798, 0.427977, 0.587216, 0.794306, 0.932425],
                      [1.7564, 1.94794, 2.25722, 2.54415, 2.88414, 3.10318]],
    ("lanczos3", True): [[0.162586, 0.229141, 0.374059, 0.518435, 0.745032, 0.870243],
                         [1.78868, 1.96581, 2.30651, 2.57403, 2.95014, 3.1527]],
    ("lanczos3", False): [[0.0511049, 0.102164, 0.22029, 0.348964, 0.557097, 0.672794],
                          [2.0148, 2.19938, 2.55394, 2.83133, 3.22002, 3.42911]],
    ("lanczos5", True): [[0.132974, 0.225149, 0.34503, 0.494623, 0.707205, 0.852461],
                         [1.78374, 2.01008, 2.31549, 2.59652, 2.9412, 3.19002]],
    ("area", True): [[0.266667, 0.353006, 0.439345, 0.67846, 0.821106, 0.963752],
                     [1.77516, 1.97392, 2.17268, 2.59808, 2.82381, 3.04953]],
    ("cubic-pytorch", True): [[0.209955, 0.28798, 0.427977, 0.587216, 0.794306, 0.932425],
                              [1.7564, 1.94794, 2.25722, 2.54415, 2.88414, 3.10318]],
    ("cubic-pytorch", False): [[0.117221, 0.182066, 0.31419, 0.440483, 0.645649, 0.781439],
                               [1.92319, 2.12687, 2.46913, 2.72359, 3.09589, 3.32876]],
}

# jax.image.scale_and_translate(IMAGE, (4, 3), (0, 1), [1.4, 0.8], [0.3, -0.2], method)
# in JAX 0.10.2: the plain and the edge-padded kernel paths.
SCALE_TRANSLATE_GOLDEN = {
    "linear": [[0.0416667, 0.206658, 0.460422], [0.359826, 0.605412, 0.923287],
               [1.04054, 1.44078, 1.8829], [2.12084, 2.61684, 3.14743]],
    "cubic-pytorch": [[-0.0680832, 0.0869613, 0.340962], [0.233324, 0.488394, 0.813211],
                      [0.994151, 1.44943, 1.91922], [2.18137, 2.75469, 3.32502]],
}


@pytest.mark.parametrize("method,antialias", list(RESIZE_GOLDEN))
def test_resize_matches_jax(method, antialias):
  out = resize(IMAGE, (2, 6), method, antialias=antialias)
  assert out.dtype == np.float32 and out.shape == (2, 6)
  np.testing.assert_allclose(out, RESIZE_GOLDEN[method, antialias], rtol=2e-5, atol=2e-6,
                             err_msg=f"{method} antialias={antialias}")


def test_resize_nearest_keeps_dtype_and_matches_jax():
  out = resize(np.arange(12, dtype=np.int32).reshape(3, 4), (2, 6), ResizeMethod.NEAREST)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, [[0, 1, 1, 2, 3, 3], [8, 9, 9, 10, 11, 11]])  # JAX 0.10.2


def test_scale_and_translate_matches_jax_and_is_jittable():
  apply = jaxon.jit(scale_and_translate, static_argnums=(1, 2, 5))
  for method, expected in SCALE_TRANSLATE_GOLDEN.items():
    out = apply(IMAGE, (4, 3), (0, 1), jnp.array([1.4, 0.8]), jnp.array([0.3, -0.2]), method)
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-6, err_msg=method)


def test_identity_resize_and_method_names():
  for name in ("bilinear", "trilinear", "triangle", "bicubic", "tricubic", "bicubic-pytorch"):
    assert isinstance(ResizeMethod.from_string(name), ResizeMethod)
  np.testing.assert_allclose(resize(IMAGE, IMAGE.shape, "lanczos3"), IMAGE, rtol=1e-6)


def test_resize_gradient_and_vmap():
  linear = jaxon.jit(lambda im: resize(im, (2, 6), "linear"))
  check_grads(linear, (IMAGE,), order=1, modes=("fwd", "rev"), eps=1e-2, atol=1e-2, rtol=1e-2)
  batch = np.stack([IMAGE, IMAGE[::-1], 2 * IMAGE])
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(linear))(batch),
                             np.stack([linear(im) for im in batch]), rtol=1e-5, atol=1e-6)


def test_errors():
  with pytest.raises(ValueError, match="shape must have length"):
    resize(IMAGE, (2,), "linear")
  with pytest.raises(ValueError, match="Unknown resize method"):
    resize(IMAGE, (2, 6), "bogus")
  with pytest.raises(ValueError, match="Nearest neighbor"):
    scale_and_translate(IMAGE, (2, 6), (0, 1), [1.0, 1.0], [0.0, 0.0], "nearest")
  with pytest.raises(ValueError, match="one scale and one translation"):
    scale_and_translate(IMAGE, (2, 6), (0, 1), [1.0], [0.0, 0.0], "linear")
