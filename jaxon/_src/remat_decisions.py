"""What a `checkpoint` policy may return besides a bool (JAX's `Saveable`, `Recompute`,
`Offloadable`): jaxon's remat reads a policy's answer as a truth value, so these are
values whose truth says whether the residual is saved."""
from __future__ import annotations

from typing import NamedTuple


class SaveableType:
  """The residual is saved for the backward pass."""

  def __bool__(self) -> bool:
    return True

  def __repr__(self) -> str:
    return "Saveable"


class RecomputeType:
  """The residual is recomputed in the backward pass."""

  def __bool__(self) -> bool:
    return False

  def __repr__(self) -> str:
    return "Recompute"


Saveable = SaveableType()
Recompute = RecomputeType()


class Offloadable(NamedTuple):
  """The residual is saved in memory `dst` (moved from `src`). jaxon has one memory per
  device, so an offloaded residual is saved where it is, as `Saveable`: the same values,
  without the memory savings."""
  src: str
  dst: str

  def __bool__(self) -> bool:
    return True
