"""jaxon.nn's block-scaled products: `scaled_matmul` against NumPy, and
`scaled_dot_general`'s mxfp8 and nvfp4 quantization (values and custom gradients) against
golden values recorded from JAX 0.10.2, whose CPU backend cannot run the cuDNN kernel:
they were recorded with JAX's own quantization and its documented dequantize-then-einsum
reference in place of the kernel."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import nn

F32 = np.float32


def test_scaled_matmul_against_numpy():
  rng = np.random.RandomState(1)
  a, b = rng.randn(2, 3, 8).astype(F32), rng.randn(2, 4, 8).astype(F32)
  a_scales, b_scales = rng.rand(2, 3, 2).astype(F32), rng.rand(2, 4, 2).astype(F32)
  out = jaxon.jit(nn.scaled_matmul)(a, b, a_scales, b_scales)
  expected = np.einsum("bmk,bnk->bmn", a * np.repeat(a_scales, 4, -1),
                       b * np.repeat(b_scales, 4, -1))
  np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
  one = np.array([0.5], F32).reshape(1, 1, 1)
  example = nn.scaled_matmul(jnp.array([1., 2., 3.]).reshape(1, 1, 3),
                             jnp.array([4., 5., 6.]).reshape(1, 1, 3), one, one)
  np.testing.assert_array_equal(example, [[[8.]]])
  with pytest.raises(ValueError, match="3-dimensional"):
    nn.scaled_matmul(a[0], b[0], a_scales[0], b_scales[0])


RNG = np.random.RandomState(0)
A, B = RNG.randn(1, 2, 32).astype(F32), RNG.randn(1, 3, 32).astype(F32)
A2, B2 = RNG.randn(1, 32, 32).astype(F32), RNG.randn(1, 32, 32).astype(F32)
WEIGHTS = np.linspace(-1, 1, 32 * 32).reshape(1, 32, 32).astype(F32)
DNUMS = (((2,), (2,)), ((0,), (0,)))

# From JAX 0.10.2 (see the module docstring): outputs, then d/dlhs[0, :2, :3] and
# d/drhs[0, :2, :3] of sum(out * WEIGHTS) at (A2, B2).
GOLDEN = {
    "mxfp8": ([[[-8.0281, 4.3582, 0.6881], [-4.7983, -10.171, -4.001]]],
              [[5.0215, 10.4427, 15.5428], [4.689, 9.7626, 14.5121]],
              [[3.6699, 4.1053, 1.02], [3.6656, 4.1088, 1.0243]]),
    "nvfp4": ([[[-7.1035, 3.623, -0.0835], [-4.1199, -9.5703, -3.8679]]],
              [[5.1644, 10.4756, 15.993], [4.8284, 9.7955, 14.9458]],
              [[3.6316, 4.0472, 0.9778], [3.6299, 4.0449, 0.9766]]),
}


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_scaled_dot_general_golden(mode):
  config = nn.get_scaled_dot_general_config(
      mode, None if mode == "mxfp8" else jnp.array([0.5], F32))
  f = lambda a, b: nn.scaled_dot_general(a, b, DNUMS, configs=[config] * 3)
  grad = jaxon.grad(lambda a, b: (f(a, b) * WEIGHTS).sum(), (0, 1))

  out, (grad_lhs, grad_rhs) = jaxon.jit(lambda: (f(A, B), grad(A2, B2)))()
  expected_out, expected_lhs, expected_rhs = GOLDEN[mode]
  np.testing.assert_allclose(out, expected_out, atol=1e-3)
  np.testing.assert_allclose(grad_lhs[0, :2, :3], expected_lhs, atol=1e-3)
  np.testing.assert_allclose(grad_rhs[0, :2, :3], expected_rhs, atol=1e-3)


def test_scaled_dot_general_configs_and_errors():
  config = nn.get_scaled_dot_general_config("mxfp8")
  assert (config.block_size, config.data_type, config.scale_type) == (
      32, jnp.float8_e4m3fn, jnp.float8_e8m0fnu)
  assert nn.get_scaled_dot_general_config("nvfp4").global_scale.tolist() == [1.0]
  with pytest.raises(ValueError, match="Unsupported mode"):
    nn.get_scaled_dot_general_config("int8")
  plain = nn.scaled_dot_general(A[0], B[0], (((1,), (1,)), ((), ())))
  np.testing.assert_allclose(plain, A[0] @ B[0].T, rtol=1e-5, atol=1e-5)
  with pytest.raises(TypeError, match="preferred_element_type"):
    nn.scaled_dot_general(A, B, DNUMS, preferred_element_type=np.int32, configs=[config] * 3)
