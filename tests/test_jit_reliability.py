"""`jit` under long-running and debugging use: bounded caches and `clear_caches`, compile
logs, cache-miss explanations, buffer donation, argument checks, `disable_jit`, and the
compiled program's analyses.

Error and warning messages are JAX 0.10.2's (recorded with it); cache-miss explanations
follow JAX's wording and name the argument."""
from __future__ import annotations

import functools
import gc
import logging
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from jaxlib import _jax

import jaxon
import jaxon.numpy as jnp
from jaxon import jit, lax
from jaxon._src import core
from jaxon._src import jit as jit_mod
from jaxon._src.interpreters import ad
from jaxon._src.lax.control_flow import common
from jaxon._src.xla import cpp_dispatch, deferred, executable


class Counted:
  """Wraps a function and counts how often it runs in Python (is traced, under jit)."""

  def __init__(self, fun: Callable):
    self.fun = fun
    self.calls = 0
    functools.update_wrapper(self, fun)

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    self.calls += 1
    return self.fun(*args, **kwargs)


# ----------------------------------------------------------------------------- caches


def test_clear_caches_empties_every_cache():
  f = Counted(lambda x: lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x))
  g = jit(f)
  x = jnp.ones(3)
  g(x)
  jaxon.grad(lambda y: jit(jnp.sin)(y).sum())(x)
  assert g._cache_size() == 1 and len(executable._jaxpr_executables) > 0
  assert ad.jvp_jaxpr.cache_info().currsize > 0
  lax.cond(True, jnp.sin, jnp.cos, x)  # eager control flow caches its traced branches
  assert len(common._trace_cache) > 0
  jaxon.clear_caches()
  assert g._cache_size() == 0 and len(jit_mod._lru) == 0
  assert len(executable._jaxpr_executables) == 0 and len(common._trace_cache) == 0
  assert ad.jvp_jaxpr.cache_info().currsize == 0 and not deferred._signatures
  g(x)
  assert f.calls == 2, "traced again after clear_caches"
  np.testing.assert_allclose(g(x), np.sin(1.0) * np.ones(3), rtol=1e-6)


def test_cache_is_least_recently_used_over_all_functions(monkeypatch):
  """The Python path's cache of traced signatures (jaxlib's C++ cache kept out of it)."""
  monkeypatch.setattr(jit_mod, "CACHE_CAPACITY", 3)
  monkeypatch.setattr(cpp_dispatch, "fastpath", lambda *args: None)
  jaxon.clear_caches()
  f, g = Counted(lambda x: x + 1.0), Counted(lambda x: x * 2.0)
  jf, jg = jit(f), jit(g)
  a, b, c = np.ones(1, np.float32), np.ones(2, np.float32), np.ones(3, np.float32)
  jf(a), jf(b), jg(a)
  jf(a)  # a's entry is used again: b's is now the oldest
  jg(c)  # a fourth entry evicts b's
  assert (jf._cache_size(), jg._cache_size(), len(jit_mod._lru)) == (1, 2, 3)
  calls = f.calls
  jf(a)
  assert f.calls == calls, "the recently used signature stayed"
  jf(b)
  assert f.calls == calls + 1, "the least recently used one was evicted"


def test_cpp_cache_is_least_recently_used_over_all_functions(monkeypatch):
  """jaxlib's cache of the signatures it answers holds a bounded number over all jitted
  functions (8192, as JAX's); an evicted one goes back to the Python path, which still
  has its trace."""
  assert cpp_dispatch._cache.capacity() == 8192
  monkeypatch.setattr(cpp_dispatch, "_cache", _jax.PjitFunctionCache(capacity=3))
  f, g = Counted(lambda x: x + 1.0), Counted(lambda x: x * 2.0)
  jf, jg = jit(f), jit(g)
  a, b, c = (jnp.ones(n) for n in (1, 2, 3))
  jf(a), jf(b), jg(a)
  python_calls = cpp_dispatch.stats["python_calls"]
  jf(a)  # a's entry is used again: b's is now the oldest
  jg(c)  # a fourth entry evicts b's
  assert cpp_dispatch.stats["python_calls"] == python_calls + 1
  jf(a)
  assert cpp_dispatch.stats["python_calls"] == python_calls + 1, "a's stayed in C++"
  jf(b)
  assert cpp_dispatch.stats["python_calls"] == python_calls + 2, "b's was evicted"
  assert f.calls == 2, "and not traced again"


def test_dead_functions_leave_the_cache():
  """Both caches: jaxon's traces and jaxlib's C++ entries (the C++ function holds what
  keys them), as the function dies, without waiting for the garbage collector."""
  jaxon.clear_caches()
  x = jnp.ones(2)
  for i in range(5):
    f = jit(lambda x, i=i: x + i)  # a new function each time, as in a careless loop
    f(x), f(x)
    assert cpp_dispatch._cache.size() == 1
    del f
    assert len(jit_mod._lru) == 0 and cpp_dispatch._cache.size() == 0
  for i in range(5):
    jit(lambda x, i=i: x + i)(1.0)
  gc.collect()
  assert len(jit_mod._lru) == 0


def test_retracing_keeps_a_bounded_number_of_executables(monkeypatch):
  """A function called with ever new shapes keeps CACHE_CAPACITY compiled programs, not
  one per shape (without a bound: +365 kB of process memory per signature)."""
  monkeypatch.setattr(jit_mod, "CACHE_CAPACITY", 4)
  jaxon.clear_caches()
  f = jit(lambda x: x * 2.0)

  def live_executables() -> int:
    gc.collect()
    return sum(isinstance(o, executable.Executable) for o in gc.get_objects())
  for n in range(1, 9):
    f(np.ones(n, np.float32))
  before = live_executables()
  for n in range(9, 25):
    f(np.ones(n, np.float32))
  assert f._cache_size() == 4
  assert live_executables() <= before


# ----------------------------------------------------------------------------- logging


@pytest.fixture
def jaxon_logs(caplog):
  caplog.set_level(logging.WARNING, logger="jaxon")
  return caplog


def _messages(caplog) -> list[str]:
  return [r.getMessage() for r in caplog.records]


def test_log_compiles(jaxon_logs):
  def scale(x, y):
    return x * y
  f = jit(scale)
  f(jnp.ones(3), 2.0)
  assert not _messages(jaxon_logs), "off by default"
  x = np.ones(4, np.float32)
  with jaxon.log_compiles():
    f(x, 2.0)
    f(x, 3.0)  # the same signature: nothing compiles
  messages = _messages(jaxon_logs)
  assert len(messages) == 4, messages
  assert messages[0].startswith("Finished tracing scale for jit in ")
  assert messages[1] == ("Compiling jit(scale) with global shapes and types "
                         "(ShapedArray(float32[4]), ShapedArray(float32[], weak_type=True)).")
  assert messages[2].startswith("Finished jaxpr to MLIR module conversion jit(scale) in ")
  assert messages[3].startswith("Finished XLA compilation of jit(scale) in ")
  assert messages[3].endswith(" sec")
  assert all(r.levelno == logging.WARNING for r in jaxon_logs.records)


def test_log_compiles_by_config_update(jaxon_logs):
  jaxon.config.update("jax_log_compiles", True)
  try:
    jit(lambda x: x - 1.0)(jnp.ones(5))
  finally:
    jaxon.config.update("jax_log_compiles", False)
  assert any("Compiling jit(<lambda>)" in m for m in _messages(jaxon_logs))


def _explain(jaxon_logs, calls: Callable[[], Any]) -> list[str]:
  with jaxon.explain_cache_misses():
    calls()
  return [m for m in _messages(jaxon_logs) if m.startswith("TRACING CACHE MISS")]


def _weighted(x, w=1.0):
  return jaxon.tree_map(lambda v: v * w, x)


def test_explain_first_trace_and_new_shape(jaxon_logs):
  f = jit(_weighted)
  misses = _explain(jaxon_logs, lambda: (f(jnp.ones(3)), f(jnp.ones(3)), f(jnp.ones(4))))
  assert len(misses) == 2, misses
  first, second = (m.splitlines() for m in misses)
  assert first[0].startswith(f"TRACING CACHE MISS at {__file__}:")
  assert first[1:3] == ["  never seen function:",
                        f"    _weighted id={id(_weighted)} defined at {__file__}:"
                        f"{_weighted.__code__.co_firstlineno}"]
  assert second[1:] == [
      f"  for _weighted defined at {__file__}:{_weighted.__code__.co_firstlineno}",
      "  all previously seen cache keys differ. For the closest previous key:",
      "  different input types:", "  * at x, now f32[4] and before f32[3]"]


EXPLAIN_CASES = [
    # (id, first call, second call, the explanation's lines after the header)
    ("dtype", lambda f: f(jnp.ones(3)), lambda f: f(jnp.ones(3, jnp.int32)),
     ["  different input types:", "  * at x, now i32[3] and before f32[3]"]),
    ("weak_type", lambda f: f(jnp.ones(3), 2.0), lambda f: f(jnp.ones(3), jnp.float32(2.0)),
     ["  different input types:",
      "  * at w, now f32[]{weak_type=False} and before f32[]{weak_type=True}",
      "  (on weak types: https://docs.jax.dev/en/latest/type_promotion.html#weak-types)"]),
    ("pytree_leaf", lambda f: f({"a": jnp.ones(2)}), lambda f: f({"a": jnp.ones(2, jnp.int32)}),
     ["  different input types:", "  * at x['a'], now i32[2] and before f32[2]"]),
    ("pytree_structure", lambda f: f({"a": 1.0}), lambda f: f({"a": 1.0, "b": 2.0}),
     ["  different input pytree:",
      "  * at x, now PyTreeDef({'a': *, 'b': *}) and before PyTreeDef({'a': *})"]),
    ("keyword", lambda f: f(1.0, 2.0), lambda f: f(1.0, w=2.0),
     ["  different input pytree:", "  * now 1 positional arguments and before 2",
      "  * now keyword arguments ['w'] and before []"]),
    ("context", lambda f: f(jnp.ones(3)),
     lambda f: jaxon.default_matmul_precision("float32")(f)(jnp.ones(3)),
     ["  Tracing context doesn't match, e.g. due to config or context manager.",
      "  * jax_default_matmul_precision differs: now float32 and before None"]),
]


@pytest.mark.parametrize("name,first,second,expected", EXPLAIN_CASES,
                         ids=[c[0] for c in EXPLAIN_CASES])
def test_explain_what_changed(jaxon_logs, name, first, second, expected):
  f = jit(_weighted)
  first(f)
  (miss,) = _explain(jaxon_logs, lambda: second(f))
  assert miss.splitlines()[3:] == expected, miss


def test_explain_static_argument(jaxon_logs):
  f = jit(_weighted, static_argnames="w")
  f(jnp.ones(2), w=2)
  (miss,) = _explain(jaxon_logs, lambda: f(jnp.ones(2), w=3))
  assert miss.splitlines()[3:] == ["  different static arguments:",
                                   "  * at w, now 3 and before 2"]


def test_explain_redefinition_in_a_loop(jaxon_logs):
  def loop():
    for _ in range(2):
      jit(lambda x: x + 1.0)(1.0)
  misses = _explain(jaxon_logs, loop)
  assert len(misses) == 2 and "never seen function" in misses[1]
  assert misses[1].endswith("but seen another function defined on the same line; maybe the "
                            "function is\n  being re-defined repeatedly, preventing caching?")


def test_explain_skips_jaxon_internal_functions(jaxon_logs):
  assert not _explain(jaxon_logs, lambda: jaxon.random.normal(jaxon.random.PRNGKey(1), (7,)))


# ----------------------------------------------------------------------------- donation


def test_donated_argument_is_marked_deleted_and_its_memory_reused():
  f = jit(lambda x, y: (x + y, y * 2.0), donate_argnums=0)
  x, y = jnp.arange(1000.0), jnp.ones(1000)
  assert "%arg0: tensor<1000xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<1000xf32>)" \
      in f.lower(x, y).as_text()
  pointer = x.unsafe_buffer_pointer()
  out, twice = f(x, y)
  assert x.is_deleted() and not y.is_deleted()
  assert out.unsafe_buffer_pointer() == pointer, "the output took the donated buffer"
  np.testing.assert_allclose(out, np.arange(1000.0) + 1.0)
  np.testing.assert_allclose(twice, 2.0)
  for use in (lambda: x + 1.0, lambda: np.asarray(x), lambda: f(x, y)):
    with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[1000\]"):
      use()


def test_donation_next_to_closed_over_constants():
  """Constants too large to embed become the program's leading arguments: they are never
  donated (small ones are part of the program)."""
  c = jnp.arange(300.0)  # 1200 bytes: past `EMBEDDED_CONST_BYTES`
  f = jit(lambda x: x + c, donate_argnums=0)
  assert "(%arg0: tensor<300xf32>, %arg1: tensor<300xf32> {tf.aliasing_output = 0 : i32})" \
      in f.lower(jnp.ones(300)).as_text()
  x = jnp.ones(300)
  np.testing.assert_allclose(f(x), np.arange(300.0) + 1.0)
  assert x.is_deleted() and not c.is_deleted()
  small = jnp.arange(3.0)
  g = jit(lambda x: x + small, donate_argnums=0)
  assert "(%arg0: tensor<3xf32> {tf.aliasing_output = 0 : i32})" in \
      g.lower(jnp.ones(3)).as_text()
  x = jnp.ones(3)
  np.testing.assert_allclose(g(x), [1.0, 2.0, 3.0])
  assert x.is_deleted() and not small.is_deleted()


def test_donate_argnames_and_pytrees():
  f = jit(lambda params, lr: {"w": params["w"] - lr * params["g"]}, donate_argnames="params")
  params = {"w": jnp.ones(4), "g": jnp.full(4, 2.0)}
  with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[4\]\."):
    out = f(params, 0.5)
  np.testing.assert_allclose(out["w"], np.zeros(4))
  # outputs take donated inputs in order: 'g' (flattened first) is the one used
  assert params["g"].is_deleted() and not params["w"].is_deleted()


def test_unusable_donation_warns_and_keeps_the_argument():
  f = jit(lambda x: x.sum(), donate_argnums=0)
  x = jnp.ones(3)
  with pytest.warns(UserWarning) as record:
    f(x)
  assert str(record[0].message) == (
      "Some donated buffers were not usable: float32[3].\nSee an explanation at "
      "https://docs.jax.dev/en/latest/faq.html#buffer-donation.")
  assert record[0].filename == __file__, "the warning points at the user's line"
  assert not x.is_deleted()


def test_donating_pending_and_host_values():
  f = jit(lambda x: x * 2.0, donate_argnums=0)
  x = jnp.arange(3.0) + 1.0  # a pending eager result
  y = x * 3.0                # a pending operation that reads it
  out = f(x)
  assert x.is_deleted()
  np.testing.assert_allclose(y, [3.0, 6.0, 9.0])
  np.testing.assert_allclose(out, [2.0, 4.0, 6.0])
  two = jnp.asarray(2.0) * 1.0
  np.testing.assert_allclose(f(2.0), 4.0)  # a Python scalar: its own buffer is donated
  np.testing.assert_allclose(f(np.ones(2, np.float32)), [2.0, 2.0])
  np.testing.assert_allclose(two + 2.0, 4.0)  # the shared scalar constants are intact


def test_donation_with_a_held_host_view_copies_instead():
  """As in JAX: while NumPy holds a view of the buffer, XLA cannot take it."""
  f = jit(lambda x: x * 2.0, donate_argnums=0)
  x = jnp.arange(3.0)
  view = np.asarray(x)
  out = f(x)
  assert not x.is_deleted()
  np.testing.assert_allclose(view, [0.0, 1.0, 2.0])
  np.testing.assert_allclose(out, [0.0, 2.0, 4.0])


def test_donation_is_ignored_under_transformations():
  f = jit(lambda x: (x * 2.0).sum(), donate_argnums=0)
  x = jnp.ones(3)
  np.testing.assert_allclose(jaxon.grad(f)(x), 2.0 * np.ones(3))
  assert not x.is_deleted()


# ----------------------------------------------------------------------------- arguments


def _f(x, n):
  return x * n


def _positional_only(x, /, y):
  return x


ARGUMENT_ERRORS = [
    # (id, jit(...) call, error class, JAX's message)
    ("unknown_static_name", lambda: jit(_f, static_argnames="y"), ValueError,
     "Jitted function has invalid argnames {'y'} in static_argnames. Function does not take "
     "these args."),
    ("static_argnums_past_end", lambda: jit(_f, static_argnums=2), ValueError,
     "Jitted function has static_argnums=(2,), but only accepts 2 positional arguments."),
    ("static_argnums_before_start", lambda: jit(_f, static_argnums=-3), ValueError,
     "Jitted function has static_argnums=(-3,), but only accepts 2 positional arguments."),
    ("positional_only_name", lambda: jit(_positional_only, static_argnames="x"), ValueError,
     "Jitted function has invalid argnames {'x'} in static_argnames. These are "
     "positional-only"),
    ("static_and_donated_nums", lambda: jit(_f, static_argnums=0, donate_argnums=0),
     ValueError, "static_argnames and donate_argnames cannot intersect. Argument names {'x'} "
     "appear in both static_argnames and donate_argnames"),
    ("static_and_donated_names", lambda: jit(_f, static_argnames="x", donate_argnames="x"),
     ValueError, "static_argnames and donate_argnames cannot intersect. Argument names {'x'} "
     "appear in both static_argnames and donate_argnames"),
    ("donate_argnums_past_end", lambda: jit(_f, donate_argnums=5), ValueError,
     "Jitted function has donate_argnums=(5,), but only accepts 2 positional arguments."),
    ("unknown_donate_name", lambda: jit(_f, donate_argnames="c"), ValueError,
     "Jitted function has invalid argnames {'c'} in donate_argnames. Function does not take "
     "these args."),
    ("argnums_not_ints", lambda: jit(_f, static_argnums="a"), TypeError,
     "'str' object cannot be interpreted as an integer"),
    ("argnames_not_strings", lambda: jit(_f, static_argnames=1), TypeError,
     "'int' object is not iterable"),
    ("unhashable_static_list", lambda: jit(_f, static_argnums=1)(1.0, [2]), ValueError,
     "Non-hashable static arguments are not supported. An error occurred while trying to "
     "hash an object of type <class 'list'>, [2]. The error was:\nTypeError: unhashable "
     "type: 'list'\n"),
    ("unhashable_static_array", lambda: jit(_f, static_argnames="n")(1.0, n=np.ones(2)),
     ValueError, "Non-hashable static arguments are not supported. An error occurred while "
     "trying to hash an object of type <class 'numpy.ndarray'>, [1. 1.]. The error was:\n"
     "TypeError: unhashable type: 'numpy.ndarray'\n"),
    ("missing_argument", lambda: jit(_f, static_argnums=1)(1.0), TypeError,
     "_f() missing 1 required positional argument: 'n'"),
    ("shardings", lambda: jit(_f, in_shardings=0), TypeError,
     "in_shardings leaf specifications are expected to be PartitionSpec instances or None, "
     "but got 0"),
]


@pytest.mark.parametrize("name,call,error,message", ARGUMENT_ERRORS,
                         ids=[c[0] for c in ARGUMENT_ERRORS])
def test_argument_errors(name, call, error, message):
  with pytest.raises(error) as info:
    call()
  assert str(info.value) == message


def test_static_eq_that_raises():
  class Weird:
    def __hash__(self) -> int:
      return 1

    def __eq__(self, other: object) -> bool:
      raise ValueError("boom")
  h = jit(lambda x, s: x, static_argnums=1)
  h(1.0, Weird())
  with pytest.raises(ValueError, match="static arguments should be comparable using __eq__"):
    h(1.0, Weird())


def test_names_and_positions_complete_each_other():
  for kwargs in (dict(static_argnames="n"), dict(static_argnums=1)):
    g = jit(Counted(_f), **kwargs)
    g(2.0, 3), g(2.0, n=3)  # either way `n` is static: a Python int inside
    assert "%arg1" not in g.lower(2.0, n=3).as_text()
  both = jit(_f, static_argnums=0, static_argnames="n")  # both given: used as they are
  assert "tensor<i32>" in both.lower(2, 3).as_text()   # `n` by position stays dynamic


# ----------------------------------------------------------------------------- disable_jit


def test_disable_jit_runs_python_on_concrete_values():
  seen = []

  @jit
  def f(x):
    seen.append(isinstance(x, core.Tracer))
    return x * 2.0
  with jaxon.disable_jit():
    np.testing.assert_allclose(f(jnp.ones(2)), 2.0)
    f(jnp.ones(2))
  f(jnp.ones(2))
  assert seen == [False, False, True]


def _control_flow(x):
  """Each control-flow construct, bodies recording whether they see concrete values."""
  concrete = []

  def note(v):
    concrete.append(not isinstance(v, core.Tracer))
    return v
  a = lax.cond(x[0] > 0, lambda v: note(v) + 1.0, lambda v: note(v) - 1.0, x)
  b = lax.switch(2, [lambda v: v, lambda v: v * 2.0, lambda v: note(v) * 3.0], x)
  c = lax.while_loop(lambda v: note(v)[0] < 5.0, lambda v: v * 2.0, x)
  d = lax.fori_loop(0, 3, lambda i, v: note(v) + i, x)
  e = lax.fori_loop(2, 2, lambda i, v: v + 100.0, x)  # zero trips
  carry, ys = lax.scan(lambda s, v: (note(s) + v, s * v), 0.0, x)
  m = lax.map(lambda v: note(v) ** 2, x)
  return (a, b, c, d, e, carry, ys, m), concrete


def test_disable_jit_runs_control_flow_in_python():
  x = jnp.array([1.0, 2.0, 3.0])
  expected, traced = jit(lambda v: _control_flow(v)[0])(x), _control_flow(x)[1]
  with jaxon.disable_jit():
    got, concrete = _control_flow(x)
  assert not any(traced[:2]) and all(concrete) and len(concrete) >= 12
  for g, e in zip(got, expected):
    np.testing.assert_allclose(g, e, rtol=1e-6)


def test_disable_jit_zero_length_scan():
  with jaxon.disable_jit(), pytest.raises(ValueError, match="zero-length scan is not "
                                          "supported in disable_jit\\(\\) mode"):
    lax.scan(lambda c, x: (c, x), 0.0, jnp.ones(0))


def test_disable_jit_while_loop_under_vmap_stages_the_loop():
  with jaxon.disable_jit():
    out = jaxon.vmap(lambda v: lax.while_loop(lambda u: u < 10, lambda u: u * 2, v))(
        jnp.array([1, 3]))
  np.testing.assert_array_equal(out, [16, 12])


def test_disable_jit_is_thread_local():
  seen = {}
  f = jit(lambda x: seen.setdefault(threading.current_thread().name, type(x).__name__) and x)
  started, done = threading.Event(), threading.Event()

  def worker():
    with jaxon.disable_jit():
      started.set()
      done.wait(10)
      f(jnp.ones(1))
  thread = threading.Thread(target=worker, name="worker")
  thread.start()
  started.wait(10)
  f(jnp.ones(2))
  done.set()
  thread.join(10)
  assert seen["worker"] == "Array" and seen["MainThread"] != "Array"


# ----------------------------------------------------------------------------- stages


def test_compiled_analyses_and_text():
  lowered = jit(lambda x, y: x * 2.0 + y).lower(jnp.ones(1000), jnp.ones(1000))
  assert lowered.compiler_ir() is not None and "stablehlo.multiply" in str(lowered.compiler_ir())
  assert "HloModule" in lowered.as_text("hlo") and "multiply" in lowered.as_text("hlo")
  with pytest.raises(ValueError, match="unknown dialect: mhlo2"):
    lowered.compiler_ir("mhlo2")
  compiled = lowered.compile()
  cost = compiled.cost_analysis()
  assert cost["flops"] == 2000.0 and cost["bytes accessed"] == 12000.0
  memory = compiled.memory_analysis()
  assert memory.argument_size_in_bytes == 8000 and memory.output_size_in_bytes == 4000
  assert compiled.as_text().startswith("HloModule")


def test_inline_stages_the_equations_in_place():
  inner = jit(lambda x: jnp.sin(x) * 2.0, inline=True)
  jaxpr = jaxon.make_jaxpr(lambda x: inner(x) + 1.0)(1.0)
  assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "mul", "add"]
  np.testing.assert_allclose(jit(lambda x: inner(x) + 1.0)(0.5), np.sin(0.5) * 2.0 + 1.0,
                             rtol=1e-6)


def test_warnings_filter_is_left_alone():
  """The donation warning goes through `warnings`, so users can silence it."""
  f = jit(lambda x: x.sum(), donate_argnums=0)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    with pytest.raises(UserWarning, match="Some donated buffers were not usable"):
      f(jnp.ones(5))
