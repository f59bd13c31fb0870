"""Steady-state calls must not grow the process: measured, not timed."""
from __future__ import annotations

import gc
from collections.abc import Callable

import numpy as np

import jaxon
import jaxon.numpy as jnp


def _resident_mb() -> float:
  with open("/proc/self/statm") as f:
    return int(f.read().split()[1]) * 4096 / 1e6


def _growth_mb(run: Callable[[int], object], warmup: int, measured: int) -> float:
  """How much the process grows over `run(measured)`, after `run(warmup)` has filled every
  cache the steady state uses: the smaller growth of two such windows in a row. Memory kept
  per call grows both; a one-off allocation elsewhere in the process (another thread, the
  allocator) grows one (one CI run read 17 MB once where runs alone read 0)."""
  run(warmup)
  growths = []
  for _ in range(2):
    gc.collect()
    before = _resident_mb()
    run(measured)
    gc.collect()
    growths.append(_resident_mb() - before)
  return min(growths)


def _calls(f: Callable, *args: object) -> Callable[[int], None]:
  def run(n: int) -> None:
    for _ in range(n):
      f(*args)
  return run


def test_jitted_calls_do_not_grow_the_process():
  """jaxlib keeps a traceback per execution unless tracebacks are disabled (80 bytes a
  call: 16 MB per 200,000 calls before the fix)."""
  f = jaxon.jit(lambda x: x * 2.0 + 1.0)
  assert _growth_mb(_calls(f, jnp.ones(16)), 20_000, 200_000) < 5.0


def test_eager_operations_do_not_grow_the_process():
  """Recording, compiling and running eager batches keeps nothing per operation."""
  x = jnp.linspace(0.0, 1.0, 16)

  def run(iterations):
    for i in range(iterations):
      y = x
      for _ in range(10):  # three programs of 40 operations, each value fetched
        if i % 3 == 0:
          y = jnp.tanh(y * 1.01 + 0.1) - 0.05
        elif i % 3 == 1:
          y = jnp.exp(y) - jnp.sum(y * y)
        else:
          y = jnp.maximum(y, 0.5) * jnp.cos(y) + 1.0
      np.asarray(y)
  # After 600 iterations every batch is compiled; 5,000 iterations are 200,000 operations.
  assert _growth_mb(run, 600, 5_000) < 5.0


def test_grad_of_a_jitted_function_does_not_grow_the_process():
  """Each call differentiates through `pjit` (transformed jaxprs and their executables are
  cached, so the steady state allocates nothing that stays). 100,000 calls measured:
  +0.13 MB."""
  g = jaxon.grad(jaxon.jit(lambda x: jnp.sum(jnp.sin(x) * x)))
  assert _growth_mb(_calls(g, jnp.ones(8)), 300, 3_000) < 2.0
