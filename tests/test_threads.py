"""Threads: jaxon called from many threads at once computes what one thread computes, bit for
bit, and one thread's failures never reach another."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon._src.xla import deferred

TOO_LARGE = (2**40,)  # fails when it runs (out of memory), not when it is recorded


def _start_threads(target, count: int) -> Callable[[], None]:
  """Starts `target(index)` in `count` threads. The returned function waits for them,
  re-raises the first error any of them hit, and fails on a thread still running after two
  minutes (a deadlock)."""
  errors: list[BaseException] = []

  def guarded(index):
    try:
      target(index)
    except BaseException as e:  # handed to the test's thread
      errors.append(e)
  threads = [threading.Thread(target=guarded, args=(i,), daemon=True) for i in range(count)]
  for t in threads:
    t.start()

  def join() -> None:
    for t in threads:
      t.join(120)
    assert not any(t.is_alive() for t in threads), "threads still running: deadlock?"
    if errors:
      raise errors[0]
  return join


def _run_threads(target, count: int) -> None:
  _start_threads(target, count)()


def _loss(w, x):
  return jnp.sum(jnp.tanh(x @ w) ** 2)


def _eager(w, x, shared):
  y = x @ w + shared
  return jnp.sum(jnp.exp(-y * y) * 0.5 + y * 1.5, axis=0)


def _shared_value():
  return jnp.linspace(-1.0, 1.0, 3) * 3.0


@pytest.fixture
def always_defer(monkeypatch, request):
  """Every eager operation recorded (the deferred path alone), or, with the parameter
  False, run at once or recorded as the code's repetition decides."""
  monkeypatch.setattr(deferred, "ALWAYS_DEFER", getattr(request, "param", True))
  return deferred.ALWAYS_DEFER


@pytest.mark.parametrize("always_defer", [True, False], indirect=True)
def test_concurrent_jit_grad_and_eager_calls_give_single_threaded_bits(always_defer):
  w = jnp.asarray(np.linspace(-0.5, 0.5, 12, dtype=np.float32).reshape(4, 3))
  xs = [jnp.asarray(np.arange(8, dtype=np.float32).reshape(2, 4) / 7 + t) for t in range(8)]
  predict = jaxon.jit(lambda w, x: jnp.tanh(x @ w) * 2.0 + 1.0)
  grad_jit = jaxon.jit(jaxon.grad(_loss))
  grad_eager = jaxon.grad(_loss)

  def calls(shared):
    return (lambda x: predict(w, x), lambda x: grad_jit(w, x),
            lambda x: _eager(w, x, shared))
  expected = [[np.asarray(call(x)).tobytes() for call in calls(_shared_value())] for x in xs]
  expected_grads = [np.asarray(grad_eager(w, x)).tobytes() for x in xs]
  shared = _shared_value()  # if left pending, the first thread to need it runs our batch
  assert (shared._pending is not None) == always_defer

  def work(t):
    each = calls(shared)
    for i in range(2000):  # one call an iteration, in turn: keeps the test quick
      assert np.asarray(each[i % 3](xs[t])).tobytes() == expected[t][i % 3], (t, i)
      if i % 100 == 0:
        assert np.asarray(grad_eager(w, xs[t])).tobytes() == expected_grads[t], (t, i)
  _run_threads(work, 8)


def test_one_threads_failures_do_not_reach_the_others():
  a = jnp.linspace(0.0, 1.0, 16)
  expected = np.asarray(jnp.sin(a) * 2.0 + 1.0)
  correct_threads_done = []
  failures = []

  def work(index):
    if index == 0:  # fails again and again until the others are done
      while len(correct_threads_done) < 4:
        with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
          np.asarray(jnp.ones(TOO_LARGE) + 1.0)
        failures.append(1)
      return
    try:
      for _ in range(500):
        np.testing.assert_array_equal(np.asarray(jnp.sin(a) * 2.0 + 1.0), expected)
    finally:
      correct_threads_done.append(index)
  _run_threads(work, 5)
  assert failures


@pytest.mark.usefixtures("always_defer")
def test_a_pending_value_is_computed_in_whichever_thread_needs_it():
  handed_over: queue.Queue = queue.Queue()
  used = threading.Event()

  def producer(_):
    x = jnp.arange(4.0)
    handed_over.put(jnp.sin(x) * 2.0)  # pending in this thread's batch
    used.wait(30)
    later = x + 1.0  # the main thread ran our batch: this starts a new one
    np.testing.assert_array_equal(np.asarray(later), np.arange(4.0) + 1)
  join = _start_threads(producer, 1)
  value = handed_over.get(timeout=30)
  assert value._pending is not None
  np.testing.assert_allclose(np.asarray(value), np.sin(np.arange(4.0)) * 2, rtol=1e-6)
  used.set()
  join()


@pytest.mark.usefixtures("always_defer")
def test_threads_using_each_others_pending_values_do_not_deadlock():
  rounds = 200
  boxes = [queue.Queue(), queue.Queue()]

  def work(index):
    x = jnp.full(3, float(index))
    for r in range(rounds):
      mine = x * 2.0 + float(r)  # pending in this thread's batch
      boxes[1 - index].put(mine)
      theirs = boxes[index].get(timeout=30)
      x = jnp.minimum(theirs + mine, 1e6) * 0.0 + float(index)  # needs both batches
      expected = 2.0 * (1 - index) + r + 2.0 * index + r
      np.testing.assert_array_equal(np.asarray(theirs + mine), np.full(3, expected))
  _run_threads(work, 2)


@pytest.mark.usefixtures("always_defer")
def test_deleting_an_array_runs_other_threads_pending_operations_on_it():
  x = jnp.arange(3.0).block_until_ready()
  recorded, deleted = threading.Event(), threading.Event()

  def work(_):
    y = jnp.cos(x) + 1.0  # pending in this thread's batch
    recorded.set()
    deleted.wait(30)
    np.testing.assert_allclose(np.asarray(y), np.cos(np.arange(3.0)) + 1, rtol=1e-6)
  join = _start_threads(work, 1)
  recorded.wait(30)
  x.delete()
  deleted.set()
  join()


@pytest.mark.usefixtures("always_defer")
def test_each_thread_records_into_its_own_batch():
  batches = {}

  def work(index):
    y = jnp.ones(2) * float(index)
    batches[index] = y._pending[0]
    assert deferred._thread.batch is batches[index]
    np.testing.assert_array_equal(np.asarray(y), [index, index])
  _run_threads(work, 3)
  assert len(set(map(id, batches.values()))) == 3


_FIRST_USE_IN_THREADS = """
import threading
import numpy as np
import jaxon, jaxon.numpy as jnp

results, errors = [], []
def first_use(seed):
  try:
    results.append(float(np.asarray(jaxon.jit(lambda x: x * 2.0)(jnp.float32(seed)))))
  except Exception as e:
    errors.append(repr(e))
threads = [threading.Thread(target=first_use, args=(s,)) for s in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(sorted(results), errors)
"""


def test_threads_that_first_use_jaxon_at_once_share_one_client():
  """Each thread racing to start the backend used to make its own CPU client, whose
  buffers the others' executables reject ('Buffer ... is on device cpu:0, but replica is
  assigned to device cpu:0')."""
  import subprocess
  import sys
  out = subprocess.run([sys.executable, "-c", _FIRST_USE_IN_THREADS], capture_output=True,
                       text=True, timeout=120, check=True).stdout
  assert out.strip() == "[0.0, 2.0, 4.0, 6.0] []"
