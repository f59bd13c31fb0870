"""Deferred eager dispatch: eager operations are recorded and run in batches, and nothing a
program can observe depends on it except the speed."""
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
M = rng.uniform(-1.0, 1.0, (9, 17)).astype(np.float32)


def _chain(x, c, steps=30):
  for _ in range(steps):
    x = x * 0.97 + c * 0.05
  return x


def _layernorm(a, b, c):
  mean = jnp.mean(a)
  return (a - mean) / jnp.sqrt(jnp.mean((a - mean) ** 2) + 1e-5) * b + c


# Common eager computations. In a jitted program XLA would rewrite some of them, changing
# the result ((a/b)/c -> a/(b*c), exp(a)*exp(b) -> exp(a+b), log(exp(a)) -> a), and its CPU
# backend contracts a multiply feeding an add into one fused multiply-add (mul_add, horner,
# chain: up to thousands of ulp where an add cancels); eager results must not change.
PROGRAMS = {
    "div_div": lambda a, b, c: (a / b) / c,
    "exp_mul": lambda a, b, c: jnp.exp(a) * jnp.exp(b),
    "log_exp": lambda a, b, c: jnp.log(jnp.exp(a)) + c,
    "erf_inv": lambda a, b, c: lax.erf_inv(a / 4) * b,
    "digamma_div": lambda a, b, c: lax.digamma(a) / b / c,
    "mul_add": lambda a, b, c: a * b + c,
    "mul_sub": lambda a, b, c: a - b * c,
    "exp_mul_add": lambda a, b, c: jnp.exp(a) * b + c,
    "log_mul_sub": lambda a, b, c: jnp.log(a) * b - c,
    "tanh_mul_add": lambda a, b, c: jnp.tanh(a) * b + c,
    "sin_cos": lambda a, b, c: jnp.sin(a) * jnp.cos(b) + jnp.sin(b) * jnp.cos(a),
    "horner": lambda a, b, c: ((a * c + b) * c + a) * c + 1.0,
    "hypot": lambda a, b, c: jnp.sqrt(a * a + b * b),
    "logistic": lambda a, b, c: lax.logistic(a) * b + c,
    "lgamma": lambda a, b, c: lax.lgamma(a) * b + jnp.exp(c),
    "gelu": lambda a, b, c: nn.gelu(a) * b + c,
    "softmax": lambda a, b, c: (lambda e: e / jnp.sum(e))(jnp.exp(a - jnp.max(a))),
    "logsumexp": lambda a, b, c: logsumexp(a * b) + c,
    "sum_of_products": lambda a, b, c: jnp.sum(a * b) + c,
    "variance": lambda a, b, c: jnp.mean(a * a) - jnp.mean(a) ** 2,
    "layernorm": _layernorm,
    "cumsum": lambda a, b, c: jnp.cumsum(a * b) + c,
    "where": lambda a, b, c: jnp.where(a > 1.5, a * b + c, a * c - b),
    "matmul_bias": lambda a, b, c: jnp.asarray(M) @ jnp.asarray(M.T) * 0.5 + c[:9],
    "einsum_transposed": lambda a, b, c: jnp.einsum("ij,ik->jk", jnp.asarray(M) * 1.5,
                                                    jnp.asarray(M) + 0.5) * 3.0 - 1.0,
    "mlp": lambda a, b, c: jnp.tanh(jnp.asarray(M) @ (b[:17] * 0.5) + c[:9]) @ a[:9],
    "chain": lambda a, b, c: _chain(a, c),
    "bfloat16_chain": lambda a, b, c: _chain(a.astype(jnp.bfloat16), c.astype(jnp.bfloat16)),
    "complex_chain": lambda a, b, c: _chain(a + 1j * b, c - 0.5j),
    "signed_zeros": lambda a, b, c: (a * 0.0) * -1.0 + (-0.0),
}


@pytest.fixture(autouse=True)
def always_defer(monkeypatch):
  """These tests pin the deferred path itself: every operation is recorded, as in hot
  code (`test_deferred_hybrid.py` tests when operations run at once)."""
  monkeypatch.setattr(deferred, "ALWAYS_DEFER", True)


@pytest.fixture
def fuse_soon(monkeypatch):
  """Batches are compiled on their second run instead of after thousands of operations."""
  monkeypatch.setattr(deferred, "FUSE_WORK", 2)


@pytest.mark.parametrize("name", PROGRAMS)
def test_compiled_batches_give_the_bits_of_one_by_one_runs(name, fuse_soon):
  """The first run of a batch goes op by op, later ones as one compiled program: same
  code, same inputs, same bits, every time."""
  f = PROGRAMS[name]
  a, b, c = map(jnp.asarray, (A, B, C))
  fused_before = len(deferred._fused)
  runs = [np.asarray(f(a, b, c)) for _ in range(3)]
  assert len(deferred._fused) == fused_before + 1
  for later in runs[1:]:
    assert later.tobytes() == runs[0].tobytes()
  expected = np.asarray(jaxon.jit(f)(a, b, c))
  np.testing.assert_allclose(runs[0], expected, rtol=1e-2 if name.startswith("bf") else 2e-5,
                             atol=1e-5)


def test_compiled_batches_keep_the_bits_in_64_bits(x64, fuse_soon):
  a, b, c = (jnp.asarray(v.astype(np.float64)) for v in (A, B, C))
  for name in ("horner", "chain", "complex_chain"):  # complex: the fence of each part
    runs = [np.asarray(PROGRAMS[name](a, b, c)) for _ in range(3)]
    assert runs[0].dtype in (np.float64, np.complex128)
    assert runs[1].tobytes() == runs[0].tobytes() == runs[2].tobytes()


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
  with pytest.raises(ValueError, match=r"\(2, 3\).*\(4,\)"):  # ranks differ: JAX's class
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
    assert len(deferred._thread.batch.nodes) <= deferred.MAX_BATCH
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


# Too large to allocate: fails when it runs, not when it is recorded (JAX: at dispatch).
TOO_LARGE = (2**40,)


def test_a_failing_operation_fails_only_the_values_computed_from_it():
  x = jnp.arange(3.0).block_until_ready()
  huge = jnp.ones(TOO_LARGE)  # recorded: abstract evaluation has nothing against it
  fine = jnp.cos(x) * 4.0
  dependent = huge[:3] + fine
  np.testing.assert_allclose(np.asarray(fine), np.cos(np.arange(3.0)) * 4, rtol=1e-6)
  for value in (huge, dependent, huge):  # every use raises, the same error each time
    with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED") as error:
      np.asarray(value)
    assert type(error.value).__name__ == "JaxRuntimeError"
    assert "broadcast_in_dim" in str(error.value.__notes__)
  with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
    dependent * 2.0  # used as an operand: raised at the operation
  np.testing.assert_allclose(np.asarray(jnp.sin(x) + 1.0), np.sin(np.arange(3.0)) + 1,
                             rtol=1e-6)  # the next batch is not poisoned


def test_a_failing_compiled_batch_falls_back_to_one_by_one(fuse_soon):
  """The compiled batch fails as a whole, here after the call returned (XLA allocates the
  temporary as it runs); op by op, the failure stays with its values."""
  x = jnp.arange(3.0).block_until_ready()
  fused_before = len(deferred._fused)
  for _ in range(3):
    huge = jnp.ones(TOO_LARGE) + 1.0
    fine = jnp.cos(x) * 4.0
    np.testing.assert_allclose(np.asarray(fine), np.cos(np.arange(3.0)) * 4, rtol=1e-6)
    with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
      np.asarray(huge)
  assert len(deferred._fused) == fused_before + 1


def test_a_failed_run_is_reported_at_every_use(monkeypatch):
  from jaxon._src.xla import executable

  def failing_run(self, bufs, args=()):
    raise MemoryError("out of device memory")
  x = jnp.arange(3.0).block_until_ready()
  y = jnp.cos(x) * 4.0
  monkeypatch.setattr(executable.Executable, "run", failing_run)
  with pytest.raises(MemoryError, match="out of device memory"):
    np.asarray(y)
  monkeypatch.undo()
  with pytest.raises(MemoryError, match="out of device memory"):
    float(y[0])
  np.testing.assert_allclose(np.asarray(jnp.cos(x) * 4.0), np.cos(np.arange(3.0)) * 4,
                             rtol=1e-6)


def test_caches_are_bounded(monkeypatch, fuse_soon):
  monkeypatch.setattr(deferred, "_MAX_SIGNATURES", 8)
  monkeypatch.setattr(deferred, "_MAX_FUSED", 2)
  monkeypatch.setattr(deferred, "_MAX_TRACKED", 3)
  deferred.clear_caches()
  for n in range(1, 8):  # distinct shapes: distinct signatures and batches
    x = jnp.arange(float(n))
    for _ in range(3):
      np.testing.assert_array_equal(np.asarray(jnp.sin(x) * 0.0 + x), np.arange(float(n)))
    assert len(deferred._signatures) <= 8
    assert len(deferred._fused) <= 2
    assert len(deferred._work_done) <= 3
  assert len(deferred._fused) == 2


def test_clear_caches_forgets_compiled_programs_not_pending_values(fuse_soon):
  x = jnp.arange(4.0)
  for _ in range(3):
    np.asarray(jnp.exp(x) - 1.0)
  pending = jnp.exp(x) - 1.0
  deferred.clear_caches()
  assert not (deferred._signatures or deferred._fused or deferred._work_done)
  np.testing.assert_allclose(np.asarray(pending), np.expm1(np.arange(4.0)), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(jnp.exp(x) - 1.0), np.expm1(np.arange(4.0)),
                             rtol=1e-6)


def test_a_run_stopped_early_is_reported_at_later_uses(monkeypatch):
  def interrupted(batch, live):
    raise KeyboardInterrupt
  x = jnp.arange(3.0).block_until_ready()
  y = jnp.cos(x) * 4.0
  monkeypatch.setattr(deferred, "_run_one_by_one", interrupted)
  with pytest.raises(KeyboardInterrupt):
    np.asarray(y)
  monkeypatch.undo()
  with pytest.raises(RuntimeError, match="stopped early: KeyboardInterrupt"):
    np.asarray(y)
  np.testing.assert_allclose(np.asarray(jnp.cos(x) * 4.0), np.cos(np.arange(3.0)) * 4,
                             rtol=1e-6)
