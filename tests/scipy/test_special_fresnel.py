"""jaxon.scipy.special.fresnel: values recorded from JAX 0.10.2 (float32 and float64, every
branch of Cephes' algorithm: series, asymptotic expansion, huge and infinite x, negative x),
SciPy in float64, the custom derivatives by finite differences, vmap and dtypes."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp

import jaxon
import jaxon.numpy as jnp
from jaxon.scipy.special import fresnel
from tests.conftest import flag_set
from tests.util import check_grads

X = [-3.7, -0.5, 0., 0.3, 1.0, 1.6, 2.5, 7.3, 50.5, 4e4, np.inf, -np.inf]
# JAX 0.10.2 on CPU: jax.scipy.special.fresnel(jnp.array(X, dtype)) -> (S, C)
GOLDEN = {
    np.float32: (
        [-0.5749803185462952, -0.06473243236541748, 0.0, 0.014116998761892319,
         0.43825915455818176, 0.6388876438140869, 0.619181752204895, 0.5189474821090698,
         0.5058236718177795, 0.5, 0.5, -0.5],
        [-0.5419456958770752, -0.4923442304134369, 0.0, 0.2994009852409363,
         0.7798933982849121, 0.3654617965221405, 0.457412987947464, 0.5392679572105408,
         0.4975886046886444, 0.5, 0.5, -0.5]),
    np.float64: (
        [-0.5749803498874729, -0.06473243285999929, 0.0, 0.014116998006576587,
         0.4382591473903547, 0.6388876835093806, 0.6191817558195929, 0.5189473278581443,
         0.5058236669122538, 0.4999920422528454, 0.5, -0.5],
        [-0.5419456621544875, -0.4923442258714464, 0.0, 0.2994009760520472,
         0.779893400376823, 0.3654616834404876, 0.45741300964177706, 0.5392680156584624,
         0.4975886097332198, 0.5, 0.5, -0.5]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_jax_and_scipy(dtype):
  with flag_set("jax_enable_x64", dtype == np.float64):
    s, c = jaxon.jit(fresnel)(np.array(X, dtype))
    assert s.dtype == c.dtype == dtype
    rtol = 2e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(s, GOLDEN[dtype][0], rtol=rtol, err_msg="S")
    np.testing.assert_allclose(c, GOLDEN[dtype][1], rtol=rtol, err_msg="C")
    if dtype == np.float64:
      finite = np.array(X[:-3])  # SciPy's huge-x branch differs from Cephes' limits
      want_s, want_c = osp.fresnel(finite)
      np.testing.assert_allclose(s[:-3], want_s, rtol=1e-13, atol=1e-15)
      np.testing.assert_allclose(c[:-3], want_c, rtol=1e-13, atol=1e-15)
      check_grads(jaxon.jit(fresnel), (np.array([-1.3, 0.4, 2.2, 5.1]),), order=1,
                  modes=("rev",))


def test_derivative_vmap_and_dtypes():
  # The derivatives are the integrands: S' = sin(πx²/2), C' = cos(πx²/2).
  x = np.array([0.3, 1.7, -2.4], np.float32)
  grads = jaxon.jit(jaxon.vmap(jaxon.grad(lambda x: fresnel(x)[0] + 2 * fresnel(x)[1])))(x)
  np.testing.assert_allclose(grads, np.sin(np.pi * x ** 2 / 2) + 2 * np.cos(np.pi * x ** 2 / 2),
                             rtol=1e-5, atol=1e-6)
  assert fresnel(jnp.array([1, 2]))[0].dtype == np.float32
  assert fresnel(jnp.array([1.], jnp.bfloat16))[1].dtype == jnp.bfloat16
  with pytest.raises(NotImplementedError, match="complex"):
    fresnel(jnp.array([1j]))
