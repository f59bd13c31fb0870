"""jaxon.scipy.integrate: numerical integration of sampled functions."""
from __future__ import annotations

from typing import Any

from jaxon._src.api import jit
from jaxon._src.numpy import statistics


@jit(static_argnames=("axis",))
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
  """Integrates samples `y` along `axis` with the trapezoid rule (SciPy's `trapezoid`).

  Args:
    y: the samples.
    x: their abscissas (broadcastable to `y`, or 1-D along `axis`); if None they are
      spaced `dx` apart.
    dx: the sample spacing when `x` is None.
    axis: the axis to integrate over.

  Returns:
    The integral, `y` with `axis` removed, promoted to an inexact dtype.

  Example:
    >>> trapezoid(jnp.array([1.0, 2.0, 3.0]))
    Array(4., dtype=float32)
  """
  return statistics.trapezoid(y, x, dx, axis)
