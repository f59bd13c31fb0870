"""Deferred eager dispatch: eager operations are recorded and run in batches, and nothing a
program can observe depends on it except the speed."""
import threading
import weakref

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax, nn
from jaxon._src.xla import deferred
from jaxon.scipy.special import logsumexp

rng = np.random.default_rng(0)
A, B, C = (rng.uniform(0.5, 3.0, 257).astype(np.float32) for _ in range(3))

# Each pair of operations here is one XLA would rewrite in a jitted program, changing the
# result: (a/b)/c -> a/(b*c), exp(a)*exp(b) -> exp(a+b), log(exp(a)) -> a.
PROGRAMS = {
    "div_div": lambda a, b, c: (a / b) / c,
    "exp_mul": lambda a, b, c: jnp.exp(a) * jnp.exp(b),
    "log_exp": lambda a, b, c: jnp.log(jnp.exp(a)) + c,
    "erf_inv": lambda a, b, c: lax.erf_inv(a / 4) * b,
    "logsumexp": lambda a, b, c: logsumexp(a) + b,
    "digamma_div": lambda a, b, c: lax.digamma(a) / b / c,
}
# A multiply feeding an add may become one fused multiply-add in a batch: one rounding.
FMA_PROGRAMS = {
    "mul_add": lambda a, b, c: a * b + c,
    "logistic": lambda a, b, c: lax.logistic(a) * b + c,
    "lgamma": lambda a, b, c: lax.lgamma(a) * b + jnp.exp(c),
    "gelu": lambda a, b, c: nn.gelu(a) * b + c,
}
ULP = float(np.finfo(np.float32).eps)


@pytest.fixture
def fuse_soon(monkeypatch):
  """Batches are compiled on their second run instead of after thousands of operations."""
  monkeypatch.setattr(deferred, "FUSE_WORK", 2)


@pytest.mark.parametrize("name", sorted(PROGRAMS) + sorted(FMA_PROGRAMS))
def test_batched_values_equal_one_by_one_values(name, fuse_soon):
  """The first run of a batch goes op by op, later ones as one compiled program: the bits
  agree, up to one rounding where a multiply-add was contracted."""
  f = PROGRAMS.get(name) or FMA_PROGRAMS[name]
  a, b, c = map(jnp.asarray, (A, B, C))
  fused_before = len(deferred._fused)
  runs = [np.asarray(f(a, b, c)) for _ in range(4)]
  assert len(deferred._fused) == fused_before + 1
  for later in runs[1:]:
    if name in PROGRAMS:
      np.testing.assert_array_equal(runs[0], later)
    else:
      np.testing.assert_allclose(runs[0], later, rtol=ULP, atol=0)
  np.testing.assert_allclose(runs[0], np.asarray(jaxon.jit(f)(a, b, c)), rtol=2e-5, atol=1e-6)


def test_results_are_pending_until_needed():
  x = jnp.arange(4.0)
  y = jnp.sin(x) * 2.0
  assert y._pending is not None
  assert y.shape == (4,) and y.dtype == np.float32  # known without running anything
  np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(4.0)) * 2, rtol=1e-6)
  assert y._pending is None


@pytest.mark.parametrize("use", [np.asarray, repr, float, bool, lambda y: y.item(),
                                 lambda y: jaxon.jit(lambda v: v + 1)(y),
                                 jaxon.block_until_ready, jaxon.device_get])
def test_every_use_of_the_value_runs_the_batch(use):
  y = jnp.exp(jnp.asarray(1.0)) - 1.0
  use(y)
  assert y._pending is None
  assert float(y) == pytest.approx(np.e - 1, rel=1e-6)


def test_errors_are_raised_at_the_operation():
  x = jnp.ones((2, 3))
  with pytest.raises(TypeError, match="add"):
    lax.add(x, jnp.ones((3, 2)))
  with pytest.raises(TypeError, match=r"\(2, 3\).*\(4,\)"):
    jnp.add(x, jnp.ones(4))


def test_repeated_batch_compiles_once_and_keeps_values(fuse_soon):
  def step(x):
    for _ in range(10):
      x = jnp.tanh(x) * 1.5
    return x
  x0 = jnp.linspace(-1.0, 1.0, 5)
  expected = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
  for _ in range(10):
    expected = np.tanh(expected) * np.float32(1.5)
  x0.block_until_ready()
  fused_before = len(deferred._fused)
  results = [np.asarray(step(x0)) for _ in range(5)]
  assert len(deferred._fused) == fused_before + 1
  for r in results:
    np.testing.assert_array_equal(r, results[0])
    np.testing.assert_allclose(r, expected, rtol=1e-5)


def test_batches_are_compiled_only_after_enough_repetition():
  x = jnp.linspace(0.0, 1.0, 7).block_until_ready()
  fused_before = len(deferred._fused)
  for _ in range(deferred.FUSE_WORK // 4):  # four operations a batch
    np.asarray(jnp.cos(jnp.sin(x) + 0.25) * 3.0)
  assert len(deferred._fused) == fused_before
  np.asarray(jnp.cos(jnp.sin(x) + 0.25) * 3.0)
  assert len(deferred._fused) == fused_before + 1


def test_long_eager_loops_run_in_bounded_batches():
  x = jnp.zeros(3)
  for _ in range(3 * deferred.MAX_BATCH + 7):
    x = x + 1.0
    assert len(deferred._current.nodes) <= deferred.MAX_BATCH
  np.testing.assert_array_equal(np.asarray(x), np.full(3, 3 * deferred.MAX_BATCH + 7.0))


def test_live_intermediates_get_values_dead_ones_do_not_run():
  x = jnp.arange(3.0)
  kept = x * 2.0
  result = jnp.sin(kept) + 1.0
  jnp.cos(x)  # dropped at once: it is not an output of the batch
  np.testing.assert_allclose(np.asarray(result), np.sin(np.arange(3.0) * 2) + 1, rtol=1e-6)
  assert kept._pending is None
  np.testing.assert_array_equal(np.asarray(kept), [0.0, 2.0, 4.0])


def test_multiple_result_primitives_and_shared_operands():
  keys = jnp.asarray([3, 1, 2])
  vals = jnp.asarray([30.0, 10.0, 20.0])
  sorted_keys, sorted_vals = lax.sort((keys, vals), num_keys=1)
  both = sorted_vals + sorted_vals
  np.testing.assert_array_equal(np.asarray(sorted_keys), [1, 2, 3])
  np.testing.assert_array_equal(np.asarray(both), [20.0, 40.0, 60.0])


def test_mutating_a_numpy_operand_later_does_not_change_the_result():
  host = np.ones(3, np.float32)
  y = jnp.add(jnp.zeros(3), host)
  host[:] = 5.0
  np.testing.assert_array_equal(np.asarray(y), np.ones(3))


def test_deleted_operand_fails_at_the_operation():
  x = jnp.ones(2)
  pending = x * 3.0
  x.delete()  # runs what was pending first
  np.testing.assert_array_equal(np.asarray(pending), [3.0, 3.0])
  with pytest.raises(RuntimeError, match="deleted"):
    jnp.sin(x)


def test_threads_record_and_run_concurrently():
  def work(seed, out):
    x = jnp.full(4, float(seed))
    for _ in range(300):
      x = x * 1.0 + 1.0
    out[seed] = np.asarray(x)
  out: dict = {}
  threads = [threading.Thread(target=work, args=(s, out)) for s in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  for s in range(4):
    np.testing.assert_array_equal(out[s], np.full(4, s + 300.0))


def test_pending_values_under_transformations():
  """Pending Arrays captured by traced functions are constants like any Array."""
  c = jnp.arange(3.0) * 2.0
  f = jaxon.jit(lambda x: x * c)
  np.testing.assert_array_equal(np.asarray(f(jnp.ones(3))), [0.0, 2.0, 4.0])
  g = jaxon.grad(lambda x: jnp.sum(jnp.sin(x) * (c + 1.0)))
  np.testing.assert_allclose(np.asarray(g(jnp.ones(3))), np.cos(1.0) * np.array([1, 3, 5.0]),
                             rtol=1e-6)


def test_one_by_one_runs_free_intermediates_after_their_last_use(monkeypatch):
  """A batch run op by op keeps at most the buffers still to be read."""
  from jaxon._src.xla import executable
  alive: list = []
  run = executable.Executable.run

  def counting_run(self, bufs, args=()):
    outs = run(self, bufs, args)
    alive.extend(weakref.ref(b) for b in outs)
    alive[:] = [w for w in alive if w() is not None]
    peak.append(len(alive))
    return outs
  peak: list = []
  monkeypatch.setattr(executable.Executable, "run", counting_run)
  x = jnp.ones(1000)
  y = x
  for _ in range(50):
    y = jnp.sin(y) + 1.0
  np.asarray(y)
  assert max(peak) <= 3


def test_a_failed_batch_is_reported_where_its_values_are_used(monkeypatch):
  from jaxon._src.xla import executable

  def failing_run(self, bufs, args=()):
    raise MemoryError("out of device memory")
  x = jnp.arange(3.0)
  x.block_until_ready()
  y = jnp.cos(x) * 4.0
  monkeypatch.setattr(executable.Executable, "run", failing_run)
  with pytest.raises(MemoryError):
    np.asarray(y)
  monkeypatch.undo()
  with pytest.raises(RuntimeError, match="earlier eager operation failed"):
    np.asarray(y)
  with pytest.raises(RuntimeError, match="earlier eager operation failed"):
    y + 1.0
  np.testing.assert_allclose(np.asarray(jnp.cos(x) * 4.0), np.cos(np.arange(3.0)) * 4,
                             rtol=1e-6)
