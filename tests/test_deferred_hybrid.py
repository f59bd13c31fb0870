"""Eager dispatch runs new code at once and records code that repeats (`xla/deferred.py`):
which one happens is invisible except in speed, and both give the same bits."""
import numpy as np
import pytest

import jaxon.numpy as jnp
from jaxon._src.xla import deferred

FUSE_WORK = 12  # a sequence is hot after this many operations run at once


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch):
  """Hot sequences and compiled batches of other tests would decide for these ones."""
  monkeypatch.setattr(deferred, "FUSE_WORK", FUSE_WORK)
  monkeypatch.setattr(deferred, "ALWAYS_DEFER", False)
  deferred.flush()
  deferred.clear_caches()
  yield
  deferred.flush()
  deferred.clear_caches()


def _step(a, b, c):
  """Four operations whose fused form would contract a multiply into an add."""
  return ((a * c + b) * c + a) * 0.5


def _inputs():
  rng = np.random.default_rng(0)
  return [jnp.asarray(rng.uniform(0.5, 3.0, 33).astype(np.float32)) for _ in range(3)]


def test_new_code_runs_at_once():
  a, b, c = _inputs()
  y = _step(a, b, c)
  assert y._pending is None
  assert not deferred._thread.batch.nodes
  np.testing.assert_allclose(np.asarray(y), _step(*map(np.asarray, (a, b, c))), rtol=1e-6)


def test_repeated_code_is_recorded_then_compiled_once_with_the_same_bits():
  a, b, c = _inputs()
  results, pending = [], []
  for _ in range(8):
    y = _step(a, b, c)
    pending.append(y._pending is not None)
    results.append(np.asarray(y).tobytes())  # a sync point: each window is one step
  # Three windows of four operations run at once; the fourth is recorded and runs op by
  # op (a structure not seen before), the fifth is compiled; later ones reuse it.
  assert pending == [False] * 3 + [True] * 5
  assert len(deferred._fused) == 1
  assert len(set(results)) == 1


def test_block_until_ready_ends_a_window_as_host_reads_do():
  a, b, c = _inputs()
  for _ in range(3):
    _step(a, b, c).block_until_ready()
  y = _step(a, b, c)
  assert y._pending is not None
  y.block_until_ready()
  assert y._pending is None


def test_leaving_the_hot_sequence_runs_what_was_recorded_and_the_rest_at_once():
  a, b, c = _inputs()
  for _ in range(3):
    expected = np.asarray(_step(a, b, c))
  first = a * c  # the hot sequence's first operation: recorded
  assert first._pending is not None
  other = jnp.sin(first)  # not in the hot sequence
  assert first._pending is None and other._pending is None
  np.testing.assert_allclose(np.asarray(other), np.sin(np.asarray(a) * np.asarray(c)),
                             rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(_step(a, b, c)), expected)


def test_a_hot_sequence_whose_structure_keeps_changing_goes_cold():
  """The same operations, wired differently each time: no batch would repeat, so compiling
  never pays, and the sequence runs at once again."""
  x = jnp.asarray(np.linspace(0.5, 1.5, 8, dtype=np.float32))
  rng = np.random.default_rng(1)
  pending = []
  for _ in range(12):
    values = [x]
    for _ in range(6):  # each operation reads one of the earlier values, at random
      values.append(values[rng.integers(len(values))] * 1.5)
    pending.append(values[-1]._pending is not None)
    np.asarray(values[-1])
  assert not deferred._fused
  # Two windows make the sequence hot; two recorded windows of new structures, cold again.
  assert pending[:6] == [False, False, True, True, False, False]


def test_one_operation_windows_never_turn_hot():
  x = jnp.ones(4)
  for _ in range(3 * FUSE_WORK):
    y = jnp.sum(x)
    assert y._pending is None
    float(y)


def test_failures_of_operations_run_at_once_are_raised_there():
  with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
    jnp.ones((2**40,))
  np.testing.assert_array_equal(np.asarray(jnp.ones(2) + 1.0), [2.0, 2.0])


def test_hybrid_state_is_bounded_and_cleared(monkeypatch):
  monkeypatch.setattr(deferred, "_MAX_TRACKED", 3)
  monkeypatch.setattr(deferred, "_MAX_HOT_PREFIXES", 10)
  for n in range(1, 9):  # distinct shapes: distinct sequences
    x = jnp.arange(float(n))
    for _ in range(4):
      np.asarray(jnp.sin(x) * 2.0 + x)
    assert len(deferred._sequence_work) <= 3 and len(deferred._misses) <= 3
    assert len(deferred._hot) <= 10
  deferred.clear_caches()
  assert not (deferred._sequence_work or deferred._hot or deferred._misses)


def test_an_eager_loop_is_compiled_as_under_jit_and_never_batched():
  """As in JAX, an eager `fori_loop` is one program compiled as `jit` compiles it, with
  XLA's algebraic rewrites (here (x/3)/7 and exp(x)*exp(-x)): the same bits as under
  `jit`, wherever it runs, hot or not."""
  import jaxon
  from jaxon import lax

  def body(i, x):
    return (x / 3.0) / 7.0 * jnp.exp(x) * jnp.exp(-x) + x * 0.5
  x = jnp.linspace(0.1, 2.0, 64, dtype=np.float32)
  jitted = np.asarray(jaxon.jit(lambda x: lax.fori_loop(0, 5, body, x))(x))
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(lax.fori_loop(0, 5, body, jnp.sin(x) * 0 + x)),
                                  jitted)
