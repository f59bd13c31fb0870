"""Eager calls of `jnp`'s one-operation functions replay their primitive from the second
call of a kind on (`xla/eager_plans.py`): invisible except in speed, so every test here
compares against the function run in full."""
import functools

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon._src import dtypes
from jaxon._src.xla import array as array_mod
from jaxon._src.xla import deferred, eager_plans
from jaxon._src.xla.array import Array


@pytest.fixture(autouse=True)
def no_plans():
  jaxon.clear_caches()
  yield
  jaxon.clear_caches()


def _counting(fn):
  """`fn` wrapped for replay, with a count of the calls that ran its body."""
  runs = []

  def body(*args, **kwargs):
    runs.append(1)
    return fn(*args, **kwargs)
  return eager_plans.memoize_eager_operations(body), runs


X = np.array([0.5, -1.25, 3.0], np.float32)
Y = np.array([2.0, 0.75, -0.5], np.float32)


def test_a_kind_seen_before_replays_the_primitive_on_new_values():
  mul, runs = _counting(lambda a, b: jnp.multiply(a, b))
  for a, b in [(X, Y), (Y, X), (X + 1, Y * 3)]:
    out = mul(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_array_equal(np.asarray(out), a * b)
  assert len(runs) == 1


def test_scalar_operands_are_keyed_by_value_and_type():
  mul, runs = _counting(lambda a, b: jnp.multiply(a, b))
  x, xi = jnp.asarray(X), jnp.asarray(np.array([1, 2, 3], np.int32))
  for s in [2.5, 2.5, 3.0, 2, 2.0]:
    np.testing.assert_array_equal(np.asarray(mul(x, s)), X * np.float32(s))
    np.testing.assert_array_equal(np.asarray(mul(s, x)), np.float32(s) * X)
  assert len(runs) == 8  # 2.5, 3.0, 2 and 2.0 on each side; the second 2.5s replay
  assert mul(xi, 2).dtype == np.int32 and mul(xi, 2.0).dtype == np.float32  # 2 == 2.0


def test_float_zeros_keep_their_signs_and_nans_are_not_keyed():
  mul, runs = _counting(lambda a, b: jnp.multiply(a, b))
  x = jnp.asarray(X)
  for _ in range(2):
    np.testing.assert_array_equal(np.signbit(np.asarray(mul(x, 0.0))), np.signbit(X * 0.0))
    np.testing.assert_array_equal(np.signbit(np.asarray(mul(x, -0.0))), np.signbit(X * -0.0))
    assert np.isnan(np.asarray(mul(x, float("nan")))).all()
  assert len(runs) == 2 + 2  # 0.0 and -0.0 once each; NaN runs in full every time


def test_an_argument_passed_twice_is_a_kind_of_its_own():
  mul, runs = _counting(lambda a, b: jnp.multiply(a, b))
  x, y = jnp.asarray(X), jnp.asarray(Y)
  np.testing.assert_array_equal(np.asarray(mul(x, x)), X * X)
  np.testing.assert_array_equal(np.asarray(mul(x, y)), X * Y)  # not x * x replayed
  np.testing.assert_array_equal(np.asarray(mul(y, y)), Y * Y)
  np.testing.assert_array_equal(np.asarray(mul(y, x)), Y * X)
  assert len(runs) == 2  # x * x and x * y kept plans, which y * y and y * x replay
  add3, runs3 = _counting(lambda a, b, c: jnp.add(jnp.multiply(a, b), c))
  for a, b, c in [(x, y, x), (x, x, y), (y, x, y), (y, y, x), (x, y, y)]:
    want = np.asarray(a) * np.asarray(b) + np.asarray(c)
    np.testing.assert_array_equal(np.asarray(add3(a, b, c)), want)
  assert len(runs3) == 3  # (x, y, x) replayed by (y, x, y); (x, x, y) by (y, y, x)


def test_lists_and_tuples_are_keyed_by_their_type_length_and_elements():
  stack, runs = _counting(lambda arrays, axis=0: jnp.stack(arrays, axis))
  x, y, z = jnp.asarray(X), jnp.asarray(Y), jnp.asarray(X * 2)
  calls = [([x, y], 0), ([y, z], 0), ((x, y), 0), ([x, y], 1), ([x, y, z], 0), ([x, x], 0),
           ([y, y], 0), ([z, x, y], 0)]
  for arrays, axis in calls:
    want = np.stack([np.asarray(a) for a in arrays], axis)
    got = stack(arrays, axis)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)
  assert len(runs) == 5  # [x, y] replayed by [y, z]; the tuple, axis 1, three, [x, x] not
  nested, nested_runs = _counting(lambda rows: jnp.stack([jnp.stack(r) for r in rows]))
  for _ in range(2):
    np.testing.assert_array_equal(np.asarray(nested([[x, y], [y, z]])),
                                  np.stack([np.stack([X, Y]), np.stack([Y, X * 2])]))
  assert len(nested_runs) == 2  # a list of lists is of no kind: it runs in full


def test_a_call_that_reads_an_arguments_value_keeps_no_plan():
  """The kind holds avals, not values: a call whose primitives follow from a value read
  from an argument, or from a result computed from one, runs in full every time."""
  scale, runs = _counting(lambda a, n: jnp.multiply(a, int(n)))
  by_sum, runs_sum = _counting(lambda a: jnp.multiply(a, float(jnp.sum(a))))
  x = jnp.asarray(X)
  for n in (2, 3, 4):
    np.testing.assert_array_equal(np.asarray(scale(x, jnp.asarray(n))), X * n)
    shifted = X + n
    np.testing.assert_allclose(np.asarray(by_sum(jnp.asarray(shifted))),
                               shifted * shifted.sum(), rtol=1e-6)
  assert len(runs) == len(runs_sum) == 3
  total, runs_total = _counting(lambda a: jnp.add(a, jnp.zeros(3).sum()))  # reads its own
  for _ in range(3):  # constant (`zeros` copies a scalar's value): still planned
    np.testing.assert_array_equal(np.asarray(total(x)), X)
  assert len(runs_total) == 1


def test_operands_in_another_order_than_the_arguments():
  sub, runs = _counting(lambda a, b: lax.sub(b, a))
  x, y = jnp.asarray(X), jnp.asarray(Y)
  np.testing.assert_array_equal(np.asarray(sub(x, y)), Y - X)
  np.testing.assert_array_equal(np.asarray(sub(y, x)), X - Y)
  assert len(runs) == 1


def test_functions_of_several_operations_replay_them_in_order():
  fn, runs = _counting(lambda a, b: lax.sub(lax.add(lax.mul(a, b), a), lax.mul(a, b)))
  for shift in (0.0, 1.5, -2.0):
    a, b = X + shift, Y - shift
    np.testing.assert_array_equal(np.asarray(fn(jnp.asarray(a), jnp.asarray(b))),
                                  (a * b + a) - a * b)
  assert len(runs) == 1


def test_functions_that_return_an_argument_or_apply_too_many_operations_run_in_full():
  same, runs_same = _counting(lambda a: a)
  long, runs_long = _counting(
      lambda a: functools.reduce(lambda v, _: lax.add(v, a), range(eager_plans._MAX_STEPS + 1), a))
  x = jnp.asarray(X)
  for _ in range(2):
    assert same(x) is x
    np.testing.assert_array_equal(np.asarray(long(x)), X * (eager_plans._MAX_STEPS + 2))
  assert len(runs_same) == len(runs_long) == 2


def test_mean_and_where_replay():
  for shift in (0.0, 1.5):
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5 + shift
    x = jnp.asarray(a)
    np.testing.assert_allclose(np.asarray(x.mean()), a.mean(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.mean(x, 1)), a.mean(1), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(jnp.where(x > 0, x, 0.5)), np.where(a > 0, a, 0.5))
    np.testing.assert_array_equal(np.asarray(jnp.where(x > 0)[0]), np.where(a > 0)[0])


def test_a_trace_context_flag_change_records_again():
  to_float, runs = _counting(
      lambda a: lax.convert_element_type(a, dtypes.canonicalize_dtype(np.float64)))
  assert to_float(jnp.asarray(np.array([1, 2], np.int32))).dtype == np.float32
  with jaxon.enable_x64(True):
    assert to_float(jnp.asarray(np.array([1, 2], np.int32))).dtype == np.float64
  assert to_float(jnp.asarray(np.array([1, 2], np.int32))).dtype == np.float32
  assert len(runs) == 3


def test_debug_nans_checks_replayed_operations():
  x = jnp.asarray(np.array([4.0, 9.0], np.float32))
  jnp.sqrt(x), jnp.sqrt(x)  # a plan for f32[2]
  with jaxon.debug_nans(True):
    with pytest.raises(FloatingPointError):
      jnp.sqrt(jnp.asarray(np.array([-1.0, 4.0], np.float32)))


def test_tracers_trace_the_function():
  x = jnp.asarray(X)
  jnp.sin(x), jnp.sin(x)
  jaxpr = jaxon.make_jaxpr(lambda a: jnp.sin(a) * 2.5)(x)
  assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "mul"]
  np.testing.assert_allclose(jaxon.grad(lambda a: jnp.sin(a).sum())(x), np.cos(X), rtol=1e-6)


def test_a_deleted_constant_is_made_again():
  x = jnp.asarray(X)
  np.testing.assert_array_equal(np.asarray(x * 3.5), X * np.float32(3.5))
  const = array_mod.scalar_constant(3.5, np.dtype(np.float32), False)
  const.delete()
  np.testing.assert_array_equal(np.asarray(x * 3.5), X * np.float32(3.5))
  np.testing.assert_array_equal(np.asarray(x * 3.5), X * np.float32(3.5))


def test_errors_are_those_of_the_function():
  x = jnp.asarray(X)
  jnp.add(x, jnp.asarray(Y))
  with pytest.raises(TypeError, match="add"):
    jnp.add(x, jnp.asarray(np.ones(2, np.float32)))
  deleted = jnp.asarray(Y)
  deleted.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    jnp.add(x, deleted)


def test_results_are_arrays_with_the_functions_avals():
  x = jnp.asarray(X)
  for _ in range(2):
    out = jnp.exp(x)
    assert type(out) is Array and out.aval == x.aval
    assert jnp.greater(x, 0.0).dtype == np.bool_


def test_keywords_of_plain_values_are_part_of_the_kind():
  total, runs = _counting(lambda a, axis=None, keepdims=False: jnp.sum(a, axis, keepdims=keepdims))
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  for shift in (0.0, 2.0):
    x = jnp.asarray(a + shift)
    for kwargs in ({"axis": 0}, {"axis": 1}, {"axis": (0, 1)}, {"axis": 1, "keepdims": True},
                   {"keepdims": True, "axis": 1}):
      np.testing.assert_allclose(np.asarray(total(x, **kwargs)), (a + shift).sum(**kwargs),
                                 rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.sum(x, axis=0, where=x > 3)),
                               np.where(a + shift > 3, a + shift, 0).sum(0), rtol=1e-6)
  # One per kind of keywords (the same keywords in another order are another kind): the
  # second shift replays them.
  assert len(runs) == 5


def test_float_keywords_are_keyed_with_their_type_and_sign():
  """`min=1` and `min=1.0` give different dtypes for an int array; 0.0 and -0.0 differ."""
  clip, runs = _counting(lambda a, **bounds: jnp.clip(a, **bounds))
  i = jnp.asarray(np.array([-2, 0, 3], np.int32))
  for _ in range(2):
    assert clip(i, min=1).dtype == np.int32
    assert clip(i, min=1.0).dtype == np.float32
    x = jnp.asarray(np.array([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(np.signbit(np.asarray(clip(x, max=-0.0))), [True, True])
    np.testing.assert_array_equal(np.signbit(np.asarray(clip(x, max=0.0))), [True, False])
  assert len(runs) == 4  # four kinds of keywords; the second round replays them


def test_reductions_and_matmul_replay():
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  b = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
  for shift in (0.0, 1.5):
    x, y = jnp.asarray(a + shift), jnp.asarray(b - shift)
    np.testing.assert_allclose(np.asarray(x @ y), (a + shift) @ (b - shift), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x.sum()), (a + shift).sum(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.sum(x, 0)), (a + shift).sum(0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.sum(x, 1)), (a + shift).sum(1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.sum(x, axis=1, keepdims=True)),
                               (a + shift).sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(jnp.max(x, 1)), (a + shift).max(1))


def test_a_replayed_primitive_still_runs_its_config_check(monkeypatch):
  """A check every application must pass (`Primitive.config_check`) runs on replays too."""
  prim = jaxon.lax.reduce_sum_p
  original, checks = prim.config_check, []

  def check(*avals, **params):
    checks.append(avals)
    if original is not None:
      original(*avals, **params)
  monkeypatch.setattr(prim, "config_check", check)
  total, runs = _counting(lambda v: lax.reduce_sum(v, (0,)))
  v = jnp.asarray(np.ones(4, np.float32))
  total(v)
  before = len(checks)
  for _ in range(3):
    assert float(total(v)) == 4.0
  assert len(runs) == 1 and len(checks) == before + 3


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "deg2rad", "rad2deg",
                                  "logaddexp", "logaddexp2"])
def test_predicates_scalings_and_logaddexp_replay(name):
  """Memoized by their factories: the second call of a kind replays, with NumPy's values."""
  a = np.array([0.5, -np.inf, np.nan, 3.0], np.float32)
  b = np.array([1.0, 2.0, -1.0, np.inf], np.float32)
  fn = getattr(jnp, name)
  for shift in (0.0, 1.0):
    args = (a + shift, b) if name.startswith("logaddexp") else (a + shift,)
    want = getattr(np, name)(*args)
    got = np.asarray(fn(*map(jnp.asarray, args)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


# jnp functions of several primitives: from the `_COMPOSE_AFTER`th replay of a kind on, one
# compiled program (`deferred.Composite`) computes what the primitives compute one by one.
_SEVERAL_OPERATIONS = {
    "mean": lambda x: jnp.mean(x, axis=0),
    "var": lambda x: jnp.var(x, ddof=1),
    "std": lambda x: jnp.std(x, axis=1, keepdims=True),
    "softmax": lambda x: jaxon.nn.softmax(x, axis=0),
    "log_softmax": jaxon.nn.log_softmax,
    "logsumexp": lambda x: jaxon.scipy.special.logsumexp(x, axis=1),
    "norm": jnp.linalg.norm,
    "argmax": jnp.argmax,
    "ptp": lambda x: jnp.ptp(x, axis=0),
}
_NUMPY = {
    "mean": lambda a: a.mean(0), "var": lambda a: a.var(ddof=1),
    "std": lambda a: a.std(1, keepdims=True),
    "softmax": lambda a: np.exp(a - a.max(0)) / np.exp(a - a.max(0)).sum(0),
    "log_softmax": lambda a: a - a.max(-1, keepdims=True) - np.log(
        np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "logsumexp": lambda a: np.log(np.exp(a).sum(1)), "norm": np.linalg.norm,
    "argmax": np.argmax, "ptp": lambda a: np.ptp(a, 0),
}


def _one_by_one_runs(monkeypatch):
  """A list that grows by one for each primitive run on its own."""
  runs, run_now = [], deferred._run_now
  monkeypatch.setattr(deferred, "_run_now", lambda *a: runs.append(1) or run_now(*a))
  return runs


@pytest.mark.parametrize("name", sorted(_SEVERAL_OPERATIONS))
def test_functions_of_several_operations_become_one_program_with_the_same_bits(
    name, monkeypatch):
  fn = _SEVERAL_OPERATIONS[name]
  a = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
  x = jnp.asarray(a)
  first = np.asarray(fn(x))  # recorded: the function runs in full
  np.testing.assert_allclose(first, _NUMPY[name](a), rtol=2e-6, atol=1e-6)
  for _ in range(eager_plans._COMPOSE_AFTER):  # replayed one by one; then composed
    np.testing.assert_array_equal(np.asarray(fn(x)), first)
  runs = _one_by_one_runs(monkeypatch)
  np.testing.assert_array_equal(np.asarray(fn(x)), first)  # bit for bit
  shifted = jnp.asarray(a * 2 - 1)
  np.testing.assert_allclose(np.asarray(fn(shifted)), _NUMPY[name](a * 2 - 1), rtol=2e-6,
                             atol=1e-6)
  assert runs == []  # one program, no primitive on its own


def test_a_composed_function_of_a_pending_or_deleted_operand_runs_one_by_one(monkeypatch):
  a = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
  x = jnp.asarray(a)
  want = np.asarray(jnp.var(x))
  for _ in range(eager_plans._COMPOSE_AFTER + 1):
    jnp.var(x)
  runs = _one_by_one_runs(monkeypatch)
  monkeypatch.setattr(deferred, "ALWAYS_DEFER", True)
  pending = x + 0.0
  assert pending._pending is not None
  got = jnp.var(pending)  # its operations join the batch that computes `pending`
  monkeypatch.setattr(deferred, "ALWAYS_DEFER", False)
  np.testing.assert_array_equal(np.asarray(got), want)
  deleted = jnp.asarray(a)
  deleted.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    jnp.var(deleted)
  assert runs  # the deleted operand's error came from running one by one


def test_a_composed_function_of_an_operand_on_another_device_runs_there():
  a = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
  want = np.asarray(jnp.var(jnp.asarray(a)))
  for _ in range(eager_plans._COMPOSE_AFTER + 1):
    jnp.var(jnp.asarray(a))
  elsewhere = jaxon.device_put(a, jaxon.devices()[1])
  got = jnp.var(elsewhere)
  assert got.devices() == {jaxon.devices()[1]}
  np.testing.assert_array_equal(np.asarray(got), want)


def test_a_composed_function_runs_its_config_checks(monkeypatch):
  prim = jaxon.lax.reduce_sum_p
  original, checks = prim.config_check, []

  def check(*avals, **params):
    checks.append(avals)
    original(*avals, **params)
  monkeypatch.setattr(prim, "config_check", check)
  x = jnp.asarray(np.ones((2, 3), np.float32))
  for _ in range(eager_plans._COMPOSE_AFTER + 1):
    jnp.mean(x)
  runs = _one_by_one_runs(monkeypatch)
  before = len(checks)
  assert float(jnp.mean(x)) == 1.0
  assert runs == [] and len(checks) == before + 1


_M = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)
_V = np.random.default_rng(4).standard_normal(4).astype(np.float32)
_I = np.array([3, 0, 2, 1], np.int32)
_MEMOIZED = {  # name: (function, arguments); each Array argument varies between calls
    "softplus": (jaxon.nn.softplus, (_M,)), "silu": (jaxon.nn.silu, (_M,)),
    "sigmoid": (jaxon.nn.sigmoid, (_M,)), "elu": (jaxon.nn.elu, (_M,)),
    "leaky_relu": (lambda m: jaxon.nn.leaky_relu(m, 0.2), (_M,)),
    "glu": (jaxon.nn.glu, (_M,)), "one_hot": (lambda i: jaxon.nn.one_hot(i, 5), (_I,)),
    "standardize": (jaxon.nn.standardize, (_M,)),
    "clip": (lambda m: jnp.clip(m, -0.5, 0.25), (_M,)),
    "isclose": (lambda m, n: jnp.isclose(m, n, atol=0.5), (_M, _M[::-1])),
    "allclose": (jnp.allclose, (_M, _M)), "cumsum": (lambda m: jnp.cumsum(m, axis=1), (_M,)),
    "cumprod": (jnp.cumprod, (_V,)), "average": (lambda m: jnp.average(m, axis=0), (_M,)),
    "nanmean": (jnp.nanmean, (_M,)), "cov": (jnp.cov, (_M,)), "corrcoef": (jnp.corrcoef, (_M,)),
    "diag": (jnp.diag, (_V,)), "diagonal": (lambda m: jnp.diagonal(m, 1), (_M,)),
    "tril": (lambda m: jnp.tril(m, -1), (_M,)), "trace": (jnp.trace, (_M,)),
    "take": (jnp.take, (_V, _I)), "linspace": (lambda: jnp.linspace(0.5, 2.0, 7), ()),
    "outer": (jnp.outer, (_V, _V)), "kron": (jnp.kron, (_V, _M)), "vdot": (jnp.vdot, (_V, _V)),
    "cross": (jnp.cross, (_V[:3], _V[1:])), "diff": (jnp.diff, (_M,)),
    "ravel": (jnp.ravel, (_M,)), "moveaxis": (lambda m: jnp.moveaxis(m, 0, 1), (_M,)),
    "flip": (jnp.flip, (_M,)), "roll": (lambda m: jnp.roll(m, 2, axis=1), (_M,)),
    "round": (lambda m: jnp.round(m, 2), (_M,)), "hypot": (jnp.hypot, (_M, _M.T)),
    "sinc": (jnp.sinc, (_M,)), "heaviside": (jnp.heaviside, (_M, _M.T)),
    "argmin": (lambda m: jnp.argmin(m, axis=1), (_M,)),
    "count_nonzero": (jnp.count_nonzero, (_I,)),
    "sort": (jnp.sort, (_M,)), "argsort": (jnp.argsort, (_V,)), "median": (jnp.median, (_M,)),
    "quantile": (lambda m: jnp.quantile(m, 0.25, axis=0), (_M,)),
    "solve": (jnp.linalg.solve, (_M + 4 * np.eye(4, dtype=np.float32), _V)),
    "inv": (jnp.linalg.inv, (_M + 4 * np.eye(4, dtype=np.float32),)),
    "det": (jnp.linalg.det, (_M,)),
    "cholesky": (jnp.linalg.cholesky, (_M @ _M.T + np.eye(4, dtype=np.float32),)),
    "stack": (lambda m, n: jnp.stack([m, n], axis=1), (_M, _M.T)),
    "stack_tuple": (lambda v, w: jnp.stack((v, w, v)), (_V, _V[::-1])),
    "concatenate": (lambda m, n: jnp.concatenate([m, n], axis=1), (_M, _M[:, :2])),
    "hstack": (lambda v, w: jnp.hstack([v, w]), (_V, _V[::-1])),
    "vstack": (lambda m, v: jnp.vstack([m, v]), (_M, _V)),
    "dstack": (lambda m, n: jnp.dstack((m, n)), (_M, _M.T)),
    "column_stack": (lambda v, m: jnp.column_stack([v, m]), (_V, _M)),
    "moveaxis_tuples": (lambda m: jnp.moveaxis(m, (0, 1), (1, 0)), (_M,)),
    "roll_tuples": (lambda m: jnp.roll(m, (1, 2), (0, 1)), (_M,)),
    "fft": (jnp.fft.fft, (_V,)), "ifft": (lambda m: jnp.fft.ifft(m, axis=0), (_M,)),
    "rfft": (lambda v: jnp.fft.rfft(v, 6), (_V,)), "irfft": (jnp.fft.irfft, (_M,)),
    "tile": (lambda v: jnp.tile(v, (2, 2)), (_V,)), "pad": (lambda m: jnp.pad(m, 2), (_M,)),
    "pad_values": (lambda v: jnp.pad(v, (1, 2), constant_values=-1.5), (_V,)),
    "take_along_axis": (lambda m, i: jnp.take_along_axis(m, i, axis=1), (_M, _I[:, None])),
}


@pytest.mark.parametrize("name", sorted(_MEMOIZED))
def test_memoized_functions_replay_and_compose_what_they_compute_in_full(name, monkeypatch):
  """Against the function run in full (NumPy arguments are not a kind: they run it), bit
  for bit, over a recording, replays one by one, and replays as one program."""
  fn, args = _MEMOIZED[name]
  runs = _one_by_one_runs(monkeypatch)
  for call in range(eager_plans._COMPOSE_AFTER + 3):
    varied = tuple(a * (call + 1) if a.dtype.kind == "f" else (a + call) % 4 for a in args)
    want = np.asarray(fn(*varied))
    runs.clear()
    got = fn(*map(jnp.asarray, varied))
    assert type(got) is Array and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
  assert len(runs) <= 1  # one program: the primitive, or the composite of several


def test_lapack_results_need_no_fence_on_the_cpu(monkeypatch):
  """A fence keeps a multiply from being contracted into the next operation's add. A LAPACK
  call's results (lu, the triangular solves of `inv`) leave the call as values: fencing
  them put a small composite over XLA's cost for running in the calling thread."""
  programs, batch_jaxpr = [], deferred._batch_jaxpr
  monkeypatch.setattr(deferred, "_batch_jaxpr",
                      lambda *a: programs.append(batch_jaxpr(*a)) or programs[-1])
  a = jnp.asarray(_M + 4 * np.eye(4, dtype=np.float32))
  for _ in range(eager_plans._COMPOSE_AFTER + 1):
    np.testing.assert_allclose(jnp.linalg.inv(a), np.linalg.inv(np.asarray(a)), rtol=1e-5)
  names = [e.primitive.name for e in programs[-1].eqns]
  assert "lu" in names and "eager_fence" not in names, names


_MEMOIZED_SEVERAL = {  # functions that return a tuple, list or named tuple of Arrays
    "svd": (jnp.linalg.svd, (_M,)), "eigh": (jnp.linalg.eigh, (_M @ _M.T,)),
    "qr": (jnp.linalg.qr, (_M,)), "slogdet": (jnp.linalg.slogdet, (_M,)),
    "split": (lambda v: jnp.split(v, 2), (_V,)),
    "array_split": (lambda m: jnp.array_split(m, 3, axis=1), (_M,)),
    "divmod": (jnp.divmod, (_M, _M.T + 3.0)),
}


@pytest.mark.parametrize("name", sorted(_MEMOIZED_SEVERAL))
def test_functions_of_several_results_replay_and_compose_them(name, monkeypatch):
  fn, args = _MEMOIZED_SEVERAL[name]
  runs = _one_by_one_runs(monkeypatch)
  for call in range(eager_plans._COMPOSE_AFTER + 3):
    varied = tuple(a * (call + 1) for a in args)
    want = fn(*varied)
    runs.clear()
    got = fn(*map(jnp.asarray, varied))
    assert type(got) is type(want) and len(got) == len(want)
    for g, w in zip(got, want):
      assert type(g) is Array and g.dtype == w.dtype
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  assert len(runs) <= 1


def test_the_oldest_composites_are_dropped_past_the_bound(monkeypatch):
  monkeypatch.setattr(eager_plans, "_MAX_COMPOSITES", 2)
  inputs = [jnp.asarray(np.ones(n, np.float32)) for n in (2, 3, 4)]
  for x in inputs:  # three kinds of var, each composed
    for _ in range(eager_plans._COMPOSE_AFTER + 1):
      jnp.var(x)
  assert len(eager_plans._composed) == 2
  runs = _one_by_one_runs(monkeypatch)
  assert float(jnp.var(inputs[0])) == 0.0  # its composite was dropped: one by one again
  assert runs
  runs.clear()
  assert float(jnp.var(inputs[2])) == 0.0
  assert runs == []
