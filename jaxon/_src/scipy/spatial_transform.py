"""jaxon.scipy.spatial.transform: rotations in three dimensions (`Rotation`) and their
spherical linear interpolation (`Slerp`), after SciPy's classes of the same names.

A `Rotation` holds unit quaternions in scalar-last order (x, y, z, w): one (shape (4,)) or a
stack of them (shape (N, 4)). Both classes are NamedTuples, so they are pytrees and pass
through `jit`, `vmap` and `grad` as JAX's do. Every conversion works on the last axis of
its operand and treats leading axes as a batch; the Euler-angle conversions follow Bernardes
and Viollet (2022, "Quaternion to Euler angles conversion: a direct, general and
computationally efficient method"), as SciPy and JAX do.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

import jaxon.numpy as jnp
from jaxon._src.random_continuous import normal as _random_normal
from jaxon._src.numpy import linalg as jnp_linalg

# Below this angle (radians) rotation-vector conversions use Taylor series, which are exact
# to rounding there, instead of sin(θ/2)/θ forms that lose precision.
_SMALL_ANGLE = 1e-3
# Euler angles whose middle angle is this close to 0 or π are gimbal-locked.
_GIMBAL_TOLERANCE = 1e-7
_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


def _inexact(x: Any) -> Any:
  """`x` as an array of the default (or its own) floating dtype."""
  x = jnp.asarray(x)
  return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.zeros(()).dtype)


def _last_axis(name: str, x: Any, size: int, what: str) -> Any:
  x = _inexact(x)
  if x.ndim < 1 or x.shape[-1] != size:
    raise ValueError(f"Rotation.{name}: expected {what} of shape (..., {size}), got shape "
                     f"{x.shape}.")
  return x


def _norm(v: Any) -> Any:
  return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(quat: Any) -> Any:
  return quat / _norm(quat)[..., None]


def _vector_and_scalar(quat: Any) -> tuple[Any, Any]:
  return quat[..., :3], quat[..., 3]


def _compose(p: Any, q: Any) -> Any:
  """The Hamilton product p q: the rotation q followed by p."""
  pv, pw = _vector_and_scalar(p)
  qv, qw = _vector_and_scalar(q)
  vector = pw[..., None] * qv + qw[..., None] * pv + jnp.cross(pv, qv)
  scalar = pw * qw - jnp.sum(pv * qv, axis=-1)
  return jnp.concatenate([vector, scalar[..., None]], axis=-1)


def _inverse(quat: Any) -> Any:
  return quat * jnp.array([-1, -1, -1, 1], dtype=quat.dtype)


def _as_matrix(quat: Any) -> Any:
  x, y, z, w = (quat[..., i] for i in range(4))
  rows = [[x * x - y * y - z * z + w * w, 2 * (x * y - z * w), 2 * (x * z + y * w)],
          [2 * (x * y + z * w), -x * x + y * y - z * z + w * w, 2 * (y * z - x * w)],
          [2 * (x * z - y * w), 2 * (y * z + x * w), -x * x - y * y + z * z + w * w]]
  return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(matrix: Any) -> Any:
  """Shepperd's method: of the four ways to read a quaternion off the matrix, take the one
  whose pivot (a diagonal entry, or the trace) is largest, which divides by the largest
  component and so stays accurate for every rotation."""
  def m(i: int, j: int) -> Any:
    return matrix[..., i, j]

  trace = m(0, 0) + m(1, 1) + m(2, 2)
  candidates = []
  for i in range(3):
    j, k = (i + 1) % 3, (i + 2) % 3
    quat = [None] * 4
    quat[i] = 1 - trace + 2 * m(i, i)
    quat[j] = m(j, i) + m(i, j)
    quat[k] = m(k, i) + m(i, k)
    quat[3] = m(k, j) - m(j, k)
    candidates.append(jnp.stack(quat, axis=-1))
  candidates.append(jnp.stack([m(2, 1) - m(1, 2), m(0, 2) - m(2, 0), m(1, 0) - m(0, 1),
                               1 + trace], axis=-1))
  pivots = jnp.stack([m(0, 0), m(1, 1), m(2, 2), trace], axis=-1)
  choice = jnp.argmax(pivots, axis=-1)[..., None, None]
  quat = jnp.take_along_axis(jnp.stack(candidates, axis=-2), choice, axis=-2)[..., 0, :]
  return _normalize(quat)


def _from_rotvec(rotvec: Any) -> Any:
  angle = _norm(rotvec)
  angle2 = angle * angle
  small = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
  safe_angle = jnp.where(angle <= _SMALL_ANGLE, 1, angle)
  scale = jnp.where(angle <= _SMALL_ANGLE, small, jnp.sin(safe_angle / 2) / safe_angle)
  return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(quat: Any) -> Any:
  quat = jnp.where(quat[..., 3:] < 0, -quat, quat)  # w ≥ 0 keeps the angle in [0, π]
  vector, scalar = _vector_and_scalar(quat)
  angle = 2 * jnp.arctan2(_norm(vector), scalar)
  angle2 = angle * angle
  small = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
  safe_angle = jnp.where(angle <= _SMALL_ANGLE, 1, angle)
  scale = jnp.where(angle <= _SMALL_ANGLE, small, safe_angle / jnp.sin(safe_angle / 2))
  return scale[..., None] * vector


def _from_mrp(mrp: Any) -> Any:
  norm2_plus_1 = jnp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
  return jnp.concatenate([2 * mrp, 2 - norm2_plus_1], axis=-1) / norm2_plus_1


def _as_mrp(quat: Any) -> Any:
  """The MRP of the quaternion with w ≥ 0 (of q and -q, which are the same rotation), so
  the result has norm at most 1."""
  vector, scalar = _vector_and_scalar(quat)
  sign = jnp.where(scalar < 0, -1, 1).astype(quat.dtype)
  return (sign / (1 + sign * scalar))[..., None] * vector


def _canonical(quat: Any) -> Any:
  """Of q and -q, the one whose first nonzero component in the order w, x, y, z is
  positive."""
  negative, zero = quat < 0, quat == 0
  flip = negative[..., 3]
  leading_zeros = zero[..., 3]
  for i in range(3):
    flip = flip | (leading_zeros & negative[..., i])
    leading_zeros = leading_zeros & zero[..., i]
  return jnp.where(flip[..., None], -quat, quat)


def _parse_euler_seq(seq: str, lengths: Sequence[int]) -> tuple[list[int], bool]:
  """The axis indices of an Euler sequence, and whether it is extrinsic (lower case)."""
  if len(seq) not in lengths:
    want = "3" if lengths == (3,) else "1 to 3"
    raise ValueError(f"Expected {want} axes in the Euler sequence, got {seq!r}.")
  extrinsic = re.fullmatch(r"[xyz]+", seq) is not None
  if not extrinsic and re.fullmatch(r"[XYZ]+", seq) is None:
    raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] (extrinsic) or "
                     f"['X', 'Y', 'Z'] (intrinsic), not mixed, got {seq!r}.")
  if any(a == b for a, b in zip(seq, seq[1:])):
    raise ValueError(f"Expected consecutive axes to be different, got {seq!r}.")
  return [_AXIS_INDEX[c] for c in seq.lower()], extrinsic


def _from_euler(angles: Any, axes: list[int], extrinsic: bool) -> Any:
  """The product of one elementary rotation per axis: extrinsic rotations compose on the
  left (each about a fixed axis), intrinsic ones on the right (about the moved axes)."""
  result = None
  for i, axis in enumerate(axes):
    half = angles[..., i] / 2
    parts = [jnp.zeros_like(half)] * 3 + [jnp.cos(half)]
    parts[axis] = jnp.sin(half)
    quat = jnp.stack(parts, axis=-1)
    if result is None:
      result = quat
    else:
      result = _compose(quat, result) if extrinsic else _compose(result, quat)
  return result


def _as_euler(quat: Any, axes: list[int], extrinsic: bool) -> Any:
  if not extrinsic:
    axes = axes[::-1]
  i, j, k = axes
  symmetric = i == k
  if symmetric:
    k = 3 - i - j
  sign = (i - j) * (j - k) * (k - i) // 2  # +1 for a cyclic (i, j, k), -1 otherwise
  def q(n: int) -> Any:
    return quat[..., n]

  if symmetric:
    a, b, c, d = q(3), q(i), q(j), q(k) * sign
  else:
    a, b, c, d = q(3) - q(j), q(i) + q(k) * sign, q(j) + q(3), q(k) * sign - q(i)
  middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
  half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
  near_zero = jnp.abs(middle) <= _GIMBAL_TOLERANCE
  near_pi = jnp.abs(middle - np.pi) <= _GIMBAL_TOLERANCE
  regular = ~(near_zero | near_pi)
  # Gimbal lock: only the sum (or difference) of the outer angles is determined; the whole of
  # it goes to the angle of output position 0 and the other outer angle is 0.
  locked = jnp.where(near_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
  zero = jnp.zeros_like(middle)
  first, third = (0, 2) if extrinsic else (2, 0)
  outer = {first: half_sum - half_diff, third: half_sum + half_diff}
  angles = [jnp.where(regular, outer[pos], locked if pos == 0 else zero) for pos in (0, 2)]
  angles.insert(1, middle)
  if not symmetric:
    angles[third] = angles[third] * sign
    angles[1] = angles[1] - np.pi / 2
  angles = jnp.stack(angles, axis=-1)
  return (angles + np.pi) % (2 * np.pi) - np.pi


class Rotation(NamedTuple):
  """Rotations in three dimensions, as unit quaternions (x, y, z, w): JAX's version of
  `scipy.spatial.transform.Rotation`.

  Example:
    >>> r = Rotation.from_euler('z', 90, degrees=True)
    >>> r.apply(jnp.array([1., 0., 0.]))  # ≈ [0, 1, 0]
  """
  quat: Any

  @classmethod
  def concatenate(cls, rotations: Sequence[Rotation]) -> Rotation:
    """One `Rotation` holding all of `rotations` (each single or a stack), in order."""
    return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

  @classmethod
  def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> Rotation:
    """From Euler angles about the axes of `seq` ("xyz": extrinsic, about fixed axes;
    "XYZ": intrinsic, about the rotating body's axes); `angles` (..., len(seq)), or for one
    axis a scalar or (N,) array."""
    axes, extrinsic = _parse_euler_seq(seq, (1, 2, 3))
    angles = jnp.atleast_1d(_inexact(angles))
    if angles.shape[-1] != len(axes):
      if len(axes) != 1 or angles.ndim != 1:
        raise ValueError(f"Rotation.from_euler: expected angles of shape (..., {len(axes)}) "
                         f"for the sequence {seq!r}, got shape {angles.shape}.")
      angles = angles[:, None]
    if degrees:
      angles = jnp.deg2rad(angles)
    return cls(_from_euler(angles, axes, extrinsic))

  @classmethod
  def from_matrix(cls, matrix: Any) -> Rotation:
    """From rotation matrices (..., 3, 3) (the nearest rotation when not orthogonal)."""
    matrix = _inexact(matrix)
    if matrix.ndim < 2 or matrix.shape[-2:] != (3, 3):
      raise ValueError("Rotation.from_matrix: expected matrices of shape (..., 3, 3), got "
                       f"shape {matrix.shape}.")
    return cls(_from_matrix(matrix))

  @classmethod
  def from_mrp(cls, mrp: Any) -> Rotation:
    """From Modified Rodrigues Parameters (..., 3): the axis times tan(angle / 4)."""
    return cls(_from_mrp(_last_axis("from_mrp", mrp, 3, "MRPs")))

  @classmethod
  def from_quat(cls, quat: Any) -> Rotation:
    """From quaternions (..., 4) in scalar-last order; they are normalized."""
    return cls(_normalize(_last_axis("from_quat", quat, 4, "quaternions")))

  @classmethod
  def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> Rotation:
    """From rotation vectors (..., 3): the axis times the angle."""
    rotvec = _last_axis("from_rotvec", rotvec, 3, "rotation vectors")
    return cls(_from_rotvec(jnp.deg2rad(rotvec) if degrees else rotvec))

  @classmethod
  def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
    """The identity rotation, or `num` of them."""
    quat = jnp.array([0., 0., 0., 1.], dtype=dtype)
    return cls(quat if num is None else jnp.tile(quat, (num, 1)))

  @classmethod
  def random(cls, random_key: Any, num: int | None = None) -> Rotation:
    """Rotations uniformly distributed over SO(3): normalized 4-vectors of independent
    standard normals are uniform on the unit sphere of quaternions."""
    shape = (4,) if num is None else (num, 4)
    return cls(_normalize(_random_normal(random_key, shape)))

  def __getitem__(self, indexer: Any) -> Rotation:
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __len__(self) -> int:
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __mul__(self, other: Rotation) -> Rotation:
    """The composition: `other` first, then `self`."""
    return Rotation.from_quat(_compose(self.quat, other.quat))

  def apply(self, vectors: Any, inverse: bool = False) -> Any:
    """Rotates `vectors` (3,) or (N, 3); with `inverse`, by the inverse rotation(s)."""
    vectors = _inexact(vectors)
    if vectors.ndim < 1 or vectors.shape[-1] != 3:
      raise ValueError(f"Rotation.apply: expected vectors of shape (3,) or (N, 3), got shape "
                       f"{vectors.shape}.")
    matrix = self.as_matrix()
    if inverse:
      matrix = jnp.swapaxes(matrix, -1, -2)
    return jnp.matmul(matrix, vectors[..., None])[..., 0]

  def as_euler(self, seq: str, degrees: bool = False) -> Any:
    """Euler angles (..., 3) about the axes of `seq` (see `from_euler`); the first and last
    lie in [-π, π), the middle one in [0, π] (symmetric sequences such as "zxz") or
    [-π/2, π/2]."""
    axes, extrinsic = _parse_euler_seq(seq, (3,))
    angles = _as_euler(self.quat, axes, extrinsic)
    return jnp.rad2deg(angles) if degrees else angles

  def as_matrix(self) -> Any:
    """Rotation matrices (..., 3, 3)."""
    return _as_matrix(self.quat)

  def as_mrp(self) -> Any:
    """Modified Rodrigues Parameters (..., 3), of norm at most 1."""
    return _as_mrp(self.quat)

  def as_rotvec(self, degrees: bool = False) -> Any:
    """Rotation vectors (..., 3), with angles in [0, π]."""
    rotvec = _as_rotvec(self.quat)
    return jnp.rad2deg(rotvec) if degrees else rotvec

  def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
    """Quaternions (..., 4), scalar-last unless `scalar_first`; `canonical` picks, of q and
    -q, the one with w > 0 (or the first nonzero of x, y, z positive when w = 0)."""
    quat = _canonical(self.quat) if canonical else self.quat
    return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

  def inv(self) -> Rotation:
    return Rotation(_inverse(self.quat))

  def magnitude(self) -> Any:
    """The rotation angles, in [0, π]."""
    vector, scalar = _vector_and_scalar(self.quat)
    return 2 * jnp.arctan2(_norm(vector), jnp.abs(scalar))

  def mean(self, weights: Any = None) -> Rotation:
    """The rotation minimizing the weighted sum of squared chordal distances to these ones:
    the eigenvector of Σ wᵢ qᵢ qᵢᵀ with the largest eigenvalue (Markley et al. 2007)."""
    n = len(self)
    dtype = self.quat.dtype
    w = jnp.ones(n, dtype) if weights is None else jnp.asarray(weights, dtype)
    if w.ndim != 1:
      raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
    if w.shape[0] != n:
      raise ValueError(f"Expected `weights` to have number of values equal to number of "
                       f"rotations, got {w.shape[0]} values and {n} rotations.")
    k = jnp.matmul((w[:, None] * self.quat).T, self.quat)
    _, vectors = jnp_linalg.eigh(k)
    return Rotation(vectors[:, -1])

  @property
  def single(self) -> bool:
    """Whether this holds one rotation rather than a stack."""
    return self.quat.ndim == 1


class Slerp(NamedTuple):
  """Spherical linear interpolation between key rotations at increasing key times: JAX's
  version of `scipy.spatial.transform.Slerp`. Build it with `Slerp.init(times, rotations)`;
  between keys i and i + 1 the rotation turns at constant angular velocity about one axis.

  Times outside the key range extrapolate the first or last interval (JAX's behaviour;
  SciPy raises).
  """
  times: Any
  timedelta: Any
  rotations: Rotation
  rotvecs: Any

  @classmethod
  def init(cls, times: Any, rotations: Rotation) -> Slerp:
    """Interpolates `rotations` (at least two) given at the increasing `times`."""
    if not isinstance(rotations, Rotation):
      raise TypeError("`rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
    times = jnp.asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError(f"Expected times to be specified in a 1 dimensional array, got "
                       f"{times.ndim} dimensions.")
    if times.shape[0] != len(rotations):
      raise ValueError(f"Expected number of rotations to be equal to number of timestamps "
                       f"given, got {len(rotations)} rotations and {times.shape[0]} "
                       "timestamps.")
    starts, ends = rotations[:-1], rotations[1:]
    return cls(times=times, timedelta=jnp.diff(times), rotations=starts,
               rotvecs=(starts.inv() * ends).as_rotvec())

  def __call__(self, times: Any) -> Rotation:
    """The interpolated rotation(s) at `times` (a scalar gives a single rotation)."""
    times = jnp.asarray(times, dtype=self.times.dtype)
    if times.ndim > 1:
      raise ValueError(f"`times` must be at most 1-dimensional, got shape {times.shape}.")
    flat = jnp.atleast_1d(times)
    interval = jnp.maximum(jnp.searchsorted(self.times, flat) - 1, 0)
    fraction = (flat - self.times[interval]) / self.timedelta[interval]
    turn = Rotation.from_rotvec(self.rotvecs[interval] * fraction[:, None])
    result = self.rotations[interval] * turn
    return result[0] if times.ndim == 0 else result
