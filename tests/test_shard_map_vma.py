"""shard_map's replication check (`check_vma=True`, the default): an output whose out_specs
entry leaves a mesh axis out must be one the body makes equal along that axis. Which
programs pass and the error's text are what JAX 0.10.2 gives for the same programs
(traced with `make_jaxpr`, so nothing compiles)."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon.experimental import shard_map as experimental_shard_map
from jaxon.sharding import Mesh
from jaxon.sharding import PartitionSpec as P
from tests.util import check_grads

pytestmark = pytest.mark.skipif(jaxon.device_count() < 8, reason="needs 8 devices")


@pytest.fixture(scope="module")
def mesh():
  return Mesh(np.array(jaxon.devices()[:8]).reshape(4, 2), ("x", "y"))


def _ring(x):
  return lax.ppermute(lax.psum(x, "x"), "x", [(0, 1), (1, 2), (2, 3), (3, 0)])


def _scan_adding(step, init=lambda x: jnp.zeros(2)):
  return lambda x: lax.scan(lambda c, _: (c + step(x), None), init(x), None, length=3)[0]


def _while_adding(x):
  return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + x),
                        (0, jnp.zeros_like(x)))[1]


# name: (body, in_specs, out_specs, whether JAX 0.10.2 accepts it). Bodies take x: f32[8]
# (f32[8, 4] where in_specs splits two dimensions).
CASES = {
    "identity": (lambda x: x, P("x"), P(), False),
    "psum": (lambda x: lax.psum(x, "x"), P("x"), P(), True),
    "psum_other_axis": (lambda x: lax.psum(x, "y"), P("x"), P(), False),
    "psum_keeps_split_axis": (lambda x: lax.psum(x, "y"), P("x", "y"), P("x"), True),
    "pmax_both_axes": (lambda x: lax.pmax(x, ("x", "y")), P("x"), P(), True),
    "pmin_other_axis": (lambda x: lax.pmin(x, "x"), P("y"), P(), False),
    "axis_index": (lambda x: x * lax.axis_index("y"), P(), P(), False),
    "axis_index_both": (lambda x: x + lax.axis_index(("x", "y")), P("x"), P("x"), False),
    "all_gather": (lambda x: lax.all_gather(x, "x"), P("x"), P(), False),
    "ppermute": (_ring, P("x"), P(), False),
    "psum_scatter": (lambda x: lax.psum_scatter(x, "x", tiled=True), P(), P(), False),
    "all_to_all": (lambda x: lax.all_to_all(x, "y", 0, 0, tiled=True), P("x"), P("x"), False),
    "constant": (lambda x: jnp.ones(3), P("x"), P(), True),
    # A carry that starts replicated and takes a varying value varies (JAX types
    # `zeros_like(x)` as varying already; jaxon finds it at the fixpoint).
    "scan_carry": (_scan_adding(lambda x: x, jnp.zeros_like), P("x"), P(), False),
    "scan_carry_split": (_scan_adding(lambda x: x, jnp.zeros_like), P("x"), P("x"), True),
    "while_carry": (_while_adding, P("x"), P(), False),
    "scan_carry_psum": (_scan_adding(lambda x: lax.psum(x, "x")), P("x"), P(), True),
    "scan_xs": (lambda x: lax.scan(lambda c, r: (c, r * 2), 0.0, x)[1], P("x"), P("x"), True),
    "fori_loop_psum": (lambda x: lax.fori_loop(0, 3, lambda i, c: c + lax.psum(x, "x"),
                                               jnp.zeros(2)), P("x"), P(), True),
    "while_varying_predicate": (lambda x: lax.while_loop(lambda c: c < x.sum(),
                                                         lambda c: c + 1.0, 0.0),
                                P("x"), P(), True),
    "cond_varying_branch": (lambda x: lax.cond(x.sum() > 3, lambda: x,
                                               lambda: jnp.zeros_like(x)), P("x"), P(), False),
    "cond_replicated_branches": (lambda x: lax.cond(x.sum() > 3, lambda: lax.psum(x, "x"),
                                                    lambda: jnp.zeros(2)), P("x"), P(), True),
    "cond_varying_index": (lambda x: lax.cond(x.sum() > 3, lambda: 1.0, lambda: 2.0),
                           P("x"), P(), True),
    "jit_inside": (jaxon.jit(lambda x: x + 1), P("x"), P(), False),
    "jit_psum_inside": (jaxon.jit(lambda x: lax.psum(x, "x")), P("x"), P(), True),
    "checkpoint_psum": (jaxon.checkpoint(lambda x: lax.psum(jnp.sin(x), "x")), P("x"), P(),
                        True),
    "custom_jvp_after_psum": (lambda x: jaxon.nn.relu(lax.psum(x, "x")), P("x"), P(), True),
    "vmap_inside": (lambda x: jaxon.vmap(lambda r: lax.psum(r, "x"))(x.reshape(2, 1)),
                    P("x"), P(), True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_accepts_and_rejects_as_jax(mesh, name):
  body, in_specs, out_specs, accepted = CASES[name]
  x = np.ones((8, 4) if len(in_specs) == 2 else 8, np.float32)
  trace = jaxon.make_jaxpr(jaxon.shard_map(body, mesh=mesh, in_specs=in_specs,
                                           out_specs=out_specs))
  if accepted:
    trace(x)
  else:
    with pytest.raises(ValueError, match="require replication which can't be statically"):
      trace(x)
  # The check off, every one of them traces.
  jaxon.make_jaxpr(jaxon.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                   check_vma=False))(x)


_FOOTER = ("Check if these output values are meant to be replicated over those mesh axes. If "
           "not, consider revising the corresponding out_specs entries. If so, consider "
           "disabling the check by passing the check_vma=False argument to `jaxon.shard_map`.")


def test_error_text_is_jaxs(mesh):
  """JAX 0.10.2's message (naming `jax.shard_map` where this names `jaxon.shard_map`): one
  failing output unbulleted, several as bullets with their out_specs key paths."""
  def block(x):
    return x

  def pair(x):
    return {"a": x, "b": lax.psum(x, "x") * lax.axis_index("y")}
  head = ("shard_map applied to the function '{}' was given out_specs which require "
          "replication which can't be statically inferred given the mesh:\n\nThe mesh given "
          "has shape (4, 2) with corresponding axis names ('x', 'y').\n\n")
  expected = [
      (block, P(), head.format("block")
       + "out_specs is P() which implies that the corresponding output value is only varying "
       "across mesh axes {} and not {x}, but it was inferred to be possibly varying over "
       "{x}\n\n" + _FOOTER),
      (pair, {"a": P(), "b": P("x")}, head.format("pair")
       + "* out_specs['a'] is P() which implies that the corresponding output value is only "
       "varying across mesh axes {} and not {x}, but it was inferred to be possibly varying "
       "over {x}\n\n* out_specs['b'] is P('x',) which implies that the corresponding output "
       "value is replicated across mesh axis 'y', but could not infer replication over any "
       "axes\n\n" + _FOOTER)]
  for f, out_specs, message in expected:
    mapped = jaxon.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=out_specs)
    with pytest.raises(ValueError) as info:
      mapped(np.ones(8, np.float32))
    assert str(info.value) == message


def test_unchecked_output_takes_one_devices_value(mesh):
  """With the check off an output declared replicated is read from the first device
  along each axis its spec leaves out, as in JAX."""
  x = np.arange(8.0, dtype=np.float32)
  out = jaxon.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P(),
                        check_vma=False)(x)
  np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0])
  with pytest.warns(DeprecationWarning):
    legacy = experimental_shard_map.shard_map(lambda b: b, mesh, P("x"), P(), check_rep=False)
  np.testing.assert_array_equal(np.asarray(legacy(x)), [0.0, 1.0])


def test_grad_through_a_checked_shard_map(mesh):
  """A replicated weight and a split batch: the cotangent of the weight sums every
  device's share (against NumPy, and finite differences to first order: second order
  compiles a dozen 8-device programs, and `test_shard_map.py` covers it unchecked)."""
  def loss(x, w):
    def body(xb, w):
      total = lax.psum(jnp.sum(jnp.sin(xb) * w[0] + xb * xb * w[1]), "x")
      return lax.fori_loop(0, 2, lambda i, c: c * 0.5 + lax.psum(w[1] * xb[0], "x"), total)
    return jaxon.shard_map(body, mesh=mesh, in_specs=(P("x"), P()), out_specs=P())(x, w)
  x = np.linspace(-1.0, 2.0, 8).astype(np.float32)
  w = np.array([1.5, -0.5], np.float32)
  gx, gw = jaxon.jit(jaxon.grad(loss, argnums=(0, 1)))(x, w)
  firsts = x[::2]  # xb[0] of each of the 4 blocks
  np.testing.assert_allclose(np.asarray(gw), [0.25 * np.sin(x).sum(),
                                              0.25 * (x * x).sum() + 1.5 * firsts.sum()],
                             rtol=1e-5)
  expected_gx = 0.25 * (np.cos(x) * w[0] + 2 * x * w[1])
  expected_gx[::2] += 1.5 * w[1]
  np.testing.assert_allclose(np.asarray(gx), expected_gx, rtol=1e-5, atol=1e-6)
  check_grads(jaxon.jit(loss), (x, w), order=1, modes=["fwd", "rev"], atol=2e-2, rtol=2e-2)
