"""JAX's `out_sharding=` keyword on lax's and jnp's array-making functions beyond creation
(`lax.broadcast_in_dim`, `lax.reshape`, `lax.reduce_sum`, `jnp.repeat`, …) and `sharding=`
on `lax.full`/`lax.full_like`.

jaxon's arrays carry no sharding type, so each is a layout request (see
`sharding_constraint.apply_out_sharding`): None and a sharding over the empty mesh (what
`jaxon.typeof(x).sharding` gives outside `set_mesh`) ask for nothing; a NamedSharding over
`Explicit` mesh axes lays the result out, eagerly and under `jit`; `Auto` axes are refused,
as JAX refuses them. `lax.full`'s `sharding=` is JAX's placement of a new array, taken over
any axis type.
"""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon.example_libraries import stax
from jaxon.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding


def _mesh(axis_type: AxisType) -> Mesh:
  return Mesh(np.array(jaxon.devices()[:2]), ("x",), (axis_type,))


X4 = np.arange(4.0, dtype=np.float32)
M24 = np.arange(8.0, dtype=np.float32).reshape(2, 4)

# name -> (the call, given its out_sharding; the result it must have). Each result's
# leading dimension is even, so P("x") splits it over the 2-device mesh.
CASES = {
    "broadcast": (lambda s: lax.broadcast(X4, (2,), out_sharding=s), np.tile(X4, (2, 1))),
    "broadcast_in_dim": (lambda s: lax.broadcast_in_dim(X4, (2, 4), (1,), out_sharding=s),
                         np.tile(X4, (2, 1))),
    "broadcasted_iota": (lambda s: lax.broadcasted_iota(np.int32, (2, 4), 1, out_sharding=s),
                         np.tile(np.arange(4, dtype=np.int32), (2, 1))),
    "reshape": (lambda s: lax.reshape(X4, (2, 2), out_sharding=s), X4.reshape(2, 2)),
    "reduce": (lambda s: lax.reduce(M24, np.float32(0), lax.add, (1,), out_sharding=s),
               M24.sum(1)),
    "reduce_max": (lambda s: lax.reduce(M24, -np.inf, lax.max, (1,), s), M24.max(1)),
    "reduce_variadic": (
        lambda s: lax.reduce((M24, M24), (np.float32(0), np.float32(1)),
                             lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,), out_sharding=s),
        (M24.sum(1), M24.prod(1))),
    "reduce_sum": (lambda s: lax.reduce_sum(M24, (1,), out_sharding=s), M24.sum(1)),
    "conv_general_dilated": (
        lambda s: lax.conv_general_dilated(M24[:, None], np.ones((1, 1, 2), np.float32), (1,),
                                           "VALID", out_sharding=s),
        (M24[:, :-1] + M24[:, 1:])[:, None]),
    "dot_general": (lambda s: lax.dot_general(M24, M24.T, (((1,), (0,)), ((), ())),
                                              out_sharding=s), M24 @ M24.T),
    "dot": (lambda s: lax.dot(M24, M24.T, out_sharding=s), M24 @ M24.T),
    "ragged_dot": (lambda s: lax.ragged_dot(M24.T, np.ones((2, 2, 2), np.float32),
                                            np.array([2, 2], np.int32), out_sharding=s),
                   np.ones((4, 2), np.float32) * M24.sum(0)[:, None]),
    "empty": (lambda s: lax.empty((2, 4), np.float32, out_sharding=s),
              np.zeros((2, 4), np.float32)),
    "segment_sum": (lambda s: jaxon.ops.segment_sum(X4, np.array([0, 0, 1, 1]), 2,
                                              out_sharding=s), np.array([1.0, 5.0], np.float32)),
    "repeat": (lambda s: jnp.repeat(X4, 2, out_sharding=s), np.repeat(X4, 2)),
    "repeat_total": (lambda s: jnp.repeat(X4, 2, total_repeat_length=6, out_sharding=s),
                     np.repeat(X4, 2)[:6]),
    "bincount": (lambda s: jnp.bincount(np.array([0, 1, 1, 3]), length=4, out_sharding=s),
                 np.array([1, 2, 0, 1], np.int32)),
    "percentile": (lambda s: jnp.percentile(M24, 50.0, axis=1, out_sharding=s),
                   np.percentile(M24, 50.0, axis=1).astype(np.float32)),
    "initializers.ones": (lambda s: jaxon.nn.initializers.ones(None, (2, 4), out_sharding=s),
                          np.ones((2, 4), np.float32)),
    "initializers.zeros": (lambda s: jaxon.nn.initializers.zeros(None, (2, 4), jnp.int32, s),
                           np.zeros((2, 4), np.int32)),
    "stax.ones": (lambda s: stax.ones(None, (2, 4), out_sharding=s),
                  np.ones((2, 4), np.float32)),
    "stax.zeros": (lambda s: stax.zeros(None, (2, 4), out_sharding=s),
                   np.zeros((2, 4), np.float32)),
}
# `sharding=` of lax.full and lax.full_like: a placement, over any axis type
FULL_CASES = {
    "full": (lambda s: lax.full((2, 4), 3.0, sharding=s), np.full((2, 4), 3.0, np.float32)),
    "full_like": (lambda s: lax.full_like(M24, 3, np.int32, None, s),
                  np.full((2, 4), 3, np.int32)),
    "full_like_shape": (lambda s: lax.full_like(X4, 3.0, shape=(4, 2), sharding=s),
                        np.full((4, 2), 3.0, np.float32)),
}
ALL_CASES = {**CASES, **FULL_CASES}


def _check(out, want, sharding=None) -> None:
  for o, w in zip(jaxon.tree.leaves(out), jaxon.tree.leaves(want)):
    np.testing.assert_allclose(np.asarray(o), w, rtol=1e-6)
    assert o.dtype == w.dtype
    if sharding is not None:
      assert o.sharding == sharding


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_none_and_the_empty_mesh_ask_for_nothing(name):
  make, want = ALL_CASES[name]
  unplaced = make(None)
  _check(unplaced, want)
  empty = jaxon.typeof(jnp.ones((2, 4))).sharding  # what optax passes on
  _check(make(empty), want, jaxon.tree.leaves(unplaced)[0].sharding)


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_explicit_axes_lay_the_result_out(name):
  make, want = ALL_CASES[name]
  rows = NamedSharding(_mesh(AxisType.Explicit), PartitionSpec("x"))
  _check(make(rows), want, rows)
  with jaxon.set_mesh(rows.mesh):  # a PartitionSpec is over the context mesh
    _check(make(PartitionSpec("x")), want, rows)


def test_explicit_axes_lay_the_result_out_under_jit():
  """All cases in one program (one compilation)."""
  rows = NamedSharding(_mesh(AxisType.Explicit), PartitionSpec("x"))
  outs = jaxon.jit(lambda: {name: make(rows) for name, (make, _) in ALL_CASES.items()})()
  for name, (_, want) in ALL_CASES.items():
    _check(outs[name], want, rows)


@pytest.mark.parametrize("name", sorted(CASES))
def test_auto_axes_are_refused(name):
  make, _ = CASES[name]
  rows = NamedSharding(_mesh(AxisType.Auto), PartitionSpec("x"))
  with pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
    make(rows)
  with pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
    jaxon.jit(lambda: make(rows))()


def test_full_sharding_takes_any_axis_type_and_sharding():
  """JAX's lax.full commits the new array to the sharding it is given, whatever its axis
  types, as jnp's `device=` does; under jit jaxon lays a NamedSharding out (JAX ignores
  it there)."""
  rows = NamedSharding(_mesh(AxisType.Auto), PartitionSpec("x"))
  one = SingleDeviceSharding(jaxon.devices()[1])
  outs = jaxon.jit(lambda: [make(rows) for make, _ in FULL_CASES.values()])()
  for (make, want), out in zip(FULL_CASES.values(), outs):
    _check(make(rows), want, rows)
    _check(out, want, rows)
    _check(make(one), want, one)
  _check(jaxon.jit(lambda: lax.full((2, 4), 3.0, sharding=one))(),
         np.full((2, 4), 3.0, np.float32))


def test_iota_sharding_is_out_sharding():
  rows = NamedSharding(_mesh(AxisType.Explicit), PartitionSpec("x"))
  _check(lax.iota(np.int32, 4, sharding=rows), np.arange(4, dtype=np.int32), rows)


def test_out_sharding_is_not_a_string():
  with pytest.raises(TypeError, match="only supports instances of `NamedSharding`"):
    lax.broadcast_in_dim(X4, (2, 4), (1,), out_sharding="x")


def test_grad_and_vmap_through_out_sharding():
  rows = NamedSharding(_mesh(AxisType.Explicit), PartitionSpec("x"))
  grad = jaxon.grad(lambda v: lax.reduce_sum(
      lax.broadcast_in_dim(v, (2, 4), (1,), out_sharding=rows), (0, 1)))(X4)
  np.testing.assert_array_equal(grad, np.full(4, 2.0, np.float32))
  batched = jaxon.vmap(lambda v: lax.reshape(v, (2, 2), out_sharding=rows))(M24)
  np.testing.assert_array_equal(batched, M24.reshape(2, 2, 2))


def test_rng_bit_generator_lays_out_its_bits():
  rows = NamedSharding(_mesh(AxisType.Explicit), PartitionSpec("x"))
  key = np.array([1, 2, 3, 4], np.uint32)
  plain = lax.rng_bit_generator(key, (4, 2))
  new_key, bits = lax.rng_bit_generator(key, (4, 2), out_sharding=rows)
  _check((new_key, bits), [np.asarray(v) for v in plain])
  assert bits.sharding == rows


def test_full_like_is_laid_out_as_a_committed_operand():
  """JAX's full_like (and jnp's zeros_like, ones_like, empty_like, full_like) lays its
  result out as a committed operand is, when it keeps the operand's shape and has a strong
  dtype; otherwise, and for uncommitted operands, the result is on the default device."""
  rows = NamedSharding(_mesh(AxisType.Explicit), PartitionSpec("x"))
  default = SingleDeviceSharding(jaxon.devices()[0])
  on_1 = SingleDeviceSharding(jaxon.devices()[1])
  likes = [jnp.zeros_like, jnp.ones_like, jnp.empty_like, lambda a: jnp.full_like(a, 2),
           lambda a: lax.full_like(a, 3), lambda a: jnp.zeros_like(a, jnp.int32)]
  for place in (rows, on_1):
    x = jaxon.device_put(X4, place)
    for like in likes:
      assert like(x).sharding == place
    assert lax.full_like(x, 1.0, shape=(2, 2)).sharding == default  # another shape
    assert jnp.zeros_like(x, device=jaxon.devices()[0]).sharding == default
  weak = jaxon.device_put(jnp.asarray(1.0), on_1)
  assert weak.weak_type and jnp.zeros_like(weak).sharding == default
  assert jnp.zeros_like(jnp.asarray(X4)).sharding == default
