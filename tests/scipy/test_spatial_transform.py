"""jaxon.scipy.spatial.transform (Rotation, Slerp) against SciPy's classes, against values
recorded from JAX 0.10.2 where the two differ (gimbal lock, extrapolation), and under jit,
vmap and grad (both classes are pytrees)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SciRotation
from scipy.spatial.transform import Slerp as SciSlerp

import jaxon
import jaxon.numpy as jnp
from jaxon.scipy.spatial.transform import Rotation, Slerp
from tests.util import check_grads

TOL = dict(rtol=2e-5, atol=2e-5)
# Random rotations, the identity, a half turn (w = 0) and a rotation by 1e-5 rad (the
# small-angle series of the rotation-vector conversions).
QUATS = np.concatenate([np.random.RandomState(0).standard_normal((4, 4)),
                        [[0., 0., 0., 1.], [0., 0., 1., 0.], [5e-6, 0., 0., 1.]]])
QUATS = (QUATS / np.linalg.norm(QUATS, axis=1, keepdims=True)).astype(np.float32)
SEQS = ["xyz", "ZXZ"]  # extrinsic and asymmetric; intrinsic and symmetric
# JAX 0.10.2: as_euler(seq) of QUATS[4:6], the identity and the half turn about z, where
# SciPy warns of gimbal lock and chooses differently.
GIMBAL_LOCK_EULER = {"xyz": [[0., 0., 0.], [0., 0., -3.1415927410125732]],
                     "ZXZ": [[0., 0., 0.], [-3.1415927410125732, 0., 0.]]}


@jaxon.jit
def _conversions(quat):
  r = Rotation.from_quat(quat)
  return dict(matrix=r.as_matrix(), rotvec=r.as_rotvec(), mrp=r.as_mrp(),
              magnitude=r.magnitude(), canonical=r.as_quat(canonical=True),
              euler={seq: r.as_euler(seq) for seq in SEQS},
              from_matrix=Rotation.from_matrix(r.as_matrix()).as_quat(canonical=True),
              from_rotvec=Rotation.from_rotvec(r.as_rotvec()).as_matrix(),
              from_mrp=Rotation.from_mrp(r.as_mrp()).as_matrix(),
              from_euler={seq: Rotation.from_euler(seq, r.as_euler(seq)).as_matrix()
                          for seq in SEQS})


def test_conversions_match_scipy_and_jax():
  ours = _conversions(QUATS)
  sci = SciRotation.from_quat(QUATS)
  for name, want in [("matrix", sci.as_matrix()), ("rotvec", sci.as_rotvec()),
                     ("mrp", sci.as_mrp()), ("magnitude", sci.magnitude()),
                     ("canonical", sci.as_quat(canonical=True)),
                     ("from_matrix", sci.as_quat(canonical=True)),
                     ("from_rotvec", sci.as_matrix()), ("from_mrp", sci.as_matrix())]:
    np.testing.assert_allclose(ours[name], want, err_msg=name, **TOL)
  for seq in SEQS:
    np.testing.assert_allclose(ours["from_euler"][seq], sci.as_matrix(), err_msg=seq, **TOL)
    np.testing.assert_allclose(ours["euler"][seq][:4], sci[:4].as_euler(seq), err_msg=seq,
                               **TOL)
    np.testing.assert_allclose(ours["euler"][seq][4:6], GIMBAL_LOCK_EULER[seq], atol=1e-6)


@jaxon.jit
def _compose_apply_mean(quat, vectors, weights):
  r = Rotation.from_quat(quat)
  return dict(compose=(r * r.inv()[::-1]).as_matrix(),
              apply_inverse=r.apply(vectors, inverse=True), apply_single=r[1].apply(vectors),
              mean=r.mean(weights).as_matrix(), scalar_first=r.as_quat(scalar_first=True),
              concatenate=Rotation.concatenate([r, r[0]]).quat,
              quarter_turn=Rotation.from_euler("z", 90, degrees=True).apply(vectors[0]))


def test_composition_application_and_mean():
  sci = SciRotation.from_quat(QUATS[:4])
  vectors = np.random.RandomState(1).standard_normal((4, 3)).astype(np.float32)
  weights = np.array([1., 2., 3., 4.], np.float32)
  ours = _compose_apply_mean(QUATS[:4], vectors, weights)
  quarter = SciRotation.from_euler("z", 90, degrees=True)
  for name, want in [("compose", (sci * sci.inv()[::-1]).as_matrix()),
                     ("apply_inverse", sci.apply(vectors, inverse=True)),
                     ("apply_single", sci[1].apply(vectors)),
                     ("mean", sci.mean(weights).as_matrix()),
                     ("scalar_first", np.roll(QUATS[:4], 1, axis=1)),
                     ("concatenate", np.concatenate([QUATS[:4], QUATS[:1]])),
                     ("quarter_turn", quarter.apply(vectors[0]))]:
    np.testing.assert_allclose(ours[name], want, err_msg=name, **TOL)
  # JAX's single-axis form: a scalar angle gives one rotation; identity and random.
  assert Rotation.from_euler("z", 90, degrees=True).single
  assert Rotation.identity().quat.dtype == np.float32
  np.testing.assert_allclose(Rotation.identity(2).quat, [[0., 0., 0., 1.]] * 2)
  random = Rotation.random(jaxon.random.PRNGKey(0), 3).quat
  np.testing.assert_allclose(np.linalg.norm(random, axis=1), 1., rtol=1e-6)


@jaxon.jit
def _slerps(quat, times, query):
  # JAX 0.10.2's docstring example as the second output.
  keys = Rotation.from_euler("zxy", jnp.array([[90, 0, 0], [0, 45, 0], [0, 0, -30]]),
                             degrees=True)
  doc = Slerp.init(jnp.array([0., 1., 2.]), keys)(jnp.array([0., 0.5, 1., 1.5, 2.]))
  return Slerp.init(times, Rotation.from_quat(quat))(query).as_matrix(), doc.as_euler("zxy")


def test_slerp_matches_scipy_and_jax():
  times = np.array([0., 1., 3.], np.float32)
  query = np.array([0., 0.25, 1., 2.5, 3.], np.float32)
  ours, doc_example = _slerps(QUATS[:3], times, query)
  np.testing.assert_allclose(ours, SciSlerp(times, SciRotation.from_quat(QUATS[:3]))(
      query).as_matrix(), **TOL)
  np.testing.assert_allclose(
      doc_example,
      [[1.570796251296997, 0., 0.], [0.8530902862548828, 0.3871195316314697, 0.1776864528656],
       [0., 0.7853982448577881, 0.], [-0.05666804313659668, 0.39213132858276367,
                                      -0.283475399017334], [0., 0., -0.5235989093780518]],
      atol=2e-6)


def test_pytree_vmap_and_grad():
  r = Rotation.from_quat(QUATS[:3])
  leaves, tree = jaxon.tree_util.tree_flatten(r)
  assert len(leaves) == 1 and isinstance(jaxon.tree_util.tree_unflatten(tree, leaves), Rotation)
  assert jaxon.jit(lambda r: r.inv())(r).quat.shape == (3, 4)
  euler = jaxon.jit(lambda q: Rotation.from_quat(q).as_euler("xyz"))
  np.testing.assert_allclose(jaxon.vmap(euler)(QUATS[:3]), _conversions(QUATS)["euler"]["xyz"][:3],
                             **TOL)
  rotate = jaxon.jit(lambda rotvec, v: Rotation.from_rotvec(rotvec).apply(v))
  check_grads(rotate, (np.array([0.3, -0.2, 0.5]), np.array([1., 2., -1.])), order=1,
              modes=("rev",))


def test_bad_input():
  with pytest.raises(ValueError, match="consecutive axes"):
    Rotation.from_euler("xxy", jnp.zeros(3))
  with pytest.raises(ValueError, match="not mixed"):
    Rotation.from_euler("xY", jnp.zeros(2))
  with pytest.raises(ValueError, match="Expected 3 axes"):
    Rotation.identity().as_euler("xy")
  with pytest.raises(ValueError, match=r"quaternions of shape \(..., 4\)"):
    Rotation.from_quat(jnp.ones(3))
  with pytest.raises(TypeError, match="Single rotation has no len"):
    len(Rotation.identity())
  with pytest.raises(ValueError, match="at least 2 rotations"):
    Slerp.init([0.], Rotation.from_quat(QUATS[:1]))
