"""The contract of a jitted call, whatever dispatches it: a seen signature is never traced
again; a new shape, dtype, weak type, static value, tree structure or trace context traces
again exactly as JAX would; NumPy values, Python scalars, pending eager Arrays, keys and
their uint32 data, donated and deleted buffers all give JAX's results or errors."""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
import jaxon.random as jr
from jaxon._src import jit as jaxon_jit


def traces_of(fun):
  """`fun` jitted, and a list that grows by one each time it is traced."""
  traced = []

  def counted(*args, **kwargs):
    traced.append(1)
    return fun(*args, **kwargs)
  return jaxon.jit(counted), traced


def test_a_seen_signature_is_never_traced_again():
  f, traced = traces_of(lambda x, y: x * 2.0 + y)
  x, y = jnp.arange(3.0), jnp.ones(3)
  for _ in range(1000):
    out = f(x, y)
  assert len(traced) == 1 and f._cache_size() == 1
  assert type(out) is jaxon.Array and out.dtype == np.float32
  np.testing.assert_allclose(np.asarray(out), np.arange(3.0) * 2 + 1)


def test_pytrees_in_and_out():
  f, traced = traces_of(lambda d: {"sum": d["a"] + d["b"], "pair": (d["a"], 2 * d["b"])})
  d = {"a": jnp.arange(4.0), "b": jnp.ones(4)}
  first = f(d)
  for _ in range(100):
    out = f(d)
  assert len(traced) == 1
  assert jaxon.tree_structure(out) == jaxon.tree_structure(first)
  for got, want in zip(jaxon.tree_leaves(out), jaxon.tree_leaves(first)):
    assert type(got) is jaxon.Array
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("change", ["shape", "dtype", "weak_type", "tree", "kwargs"])
def test_retraces_exactly_when_the_signature_changes(change):
  f, traced = traces_of(lambda *a, **k: sum(jaxon.tree_leaves((a, k))))
  base = jnp.ones(3)
  other = {"shape": (jnp.ones(4),), "dtype": (jnp.ones(3, jnp.int32),),
           "weak_type": (jnp.asarray(1.0) + 0,), "tree": ((base, base),),
           "kwargs": ()}[change]
  f(base)
  f(base)
  assert len(traced) == 1
  if change == "kwargs":
    f(x=base)
  else:
    f(*other)
  assert len(traced) == 2
  f(base)  # the first signature is still compiled
  assert len(traced) == 2


def test_weak_and_strong_scalars_differ():
  """Golden from JAX 0.10.2: two traces; the weakly typed argument gives a weak result."""
  f, traced = traces_of(lambda x: x + 1)
  weak = f(jaxon.device_put(2.0))
  strong = f(jaxon.device_put(np.float32(2.0)))
  again = f(jaxon.device_put(2.0))
  assert len(traced) == 2
  assert (weak.weak_type, strong.weak_type, again.weak_type) == (True, False, True)
  assert repr(weak) == "Array(3., dtype=float32, weak_type=True)"
  assert repr(strong) == "Array(3., dtype=float32)"


def test_static_arguments_retrace_on_new_values():
  f = jaxon.jit(lambda x, n: x * n, static_argnums=1)
  x = jnp.arange(3.0)
  np.testing.assert_allclose(np.asarray(f(x, 2)), np.arange(3.0) * 2)
  np.testing.assert_allclose(np.asarray(f(x, 3)), np.arange(3.0) * 3)


def test_trace_context_changes_retrace():
  f, traced = traces_of(lambda x: x + 1.0)
  x = jnp.ones(2)
  f(x)
  with jaxon.numpy_rank_promotion("raise"):
    f(x)
  f(x)
  assert len(traced) == 2


def test_numpy_scalars_and_pending_arrays_give_the_same_results():
  f = jaxon.jit(lambda x, y: x * y)
  want = np.arange(3.0, dtype=np.float32) * 2
  for x, y in [(np.arange(3.0, dtype=np.float32), 2.0), (jnp.arange(3.0), 2),
               (jnp.arange(3.0), np.float32(2))]:
    out = f(x, y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), want)
  pending = jnp.sin(jnp.arange(3.0)) * 0.0 + jnp.arange(3.0)  # not run yet
  np.testing.assert_allclose(np.asarray(f(pending, jnp.float32(2))), want)


def test_deleted_argument_raises_a_clear_error():
  f = jaxon.jit(lambda x: x + 1.0)
  x = jnp.arange(3.0)
  f(x)
  x.delete()
  with pytest.raises(RuntimeError, match="Array has been deleted"):
    f(x)


def test_donated_arguments_are_consumed():
  f = jaxon.jit(lambda x: x + 1.0, donate_argnums=0)
  x = jnp.arange(3.0)
  out = f(x)
  assert x.is_deleted()
  np.testing.assert_allclose(np.asarray(out), np.arange(3.0) + 1)
  with pytest.raises(RuntimeError, match="Array has been deleted"):
    f(x)


def test_keys_and_their_uint32_data_never_share_a_program():
  """A threefry key's buffer is uint32[2], as a raw key is: a dispatcher keyed on buffers
  alone would mix them up."""
  f = jaxon.jit(lambda k: jr.split(k))
  raw = jr.PRNGKey(0)
  typed = jr.key(0)
  out_raw = f(raw)
  out_typed = f(typed)
  assert out_raw.dtype == np.uint32 and out_raw.shape == (2, 2)
  assert jaxon.dtypes.issubdtype(out_typed.dtype, jaxon.dtypes.prng_key)
  assert out_typed.shape == (2,)
  np.testing.assert_array_equal(np.asarray(jr.key_data(out_typed)), np.asarray(out_raw))
  again_raw = f(raw)
  assert again_raw.dtype == np.uint32


def test_programs_with_constants_and_effects_run_correctly():
  table = np.arange(5.0, dtype=np.float32)
  f = jaxon.jit(lambda x: x + jnp.asarray(table))
  x = jnp.ones(5)
  for _ in range(3):
    np.testing.assert_allclose(np.asarray(f(x)), table + 1)
  seen = []
  g = jaxon.jit(lambda x: jaxon.debug.callback(lambda v: seen.append(float(v)), x) or x)
  for _ in range(3):
    g(jnp.float32(1.0))
  assert seen == [1.0, 1.0, 1.0]


def test_disable_jit_and_clear_cache():
  f, traced = traces_of(lambda x: x + 1.0)
  x = jnp.ones(2)
  f(x)
  with jaxon.disable_jit():
    f(x)
  assert len(traced) == 2  # run as Python
  f.clear_cache()
  f(x)
  assert len(traced) == 3


def test_nested_under_transformations_traces_through():
  f = jaxon.jit(lambda x: jnp.sin(x) * 2.0)
  x = jnp.arange(3.0)
  f(x)
  g = jaxon.grad(lambda x: f(x).sum())(x)
  np.testing.assert_allclose(np.asarray(g), 2 * np.cos(np.arange(3.0)), rtol=1e-6)
  v = jaxon.vmap(f)(jnp.ones((2, 3)))
  np.testing.assert_allclose(np.asarray(v), 2 * np.sin(np.ones((2, 3))), rtol=1e-6)


def test_repeated_eager_key_code_is_compiled_as_a_batch():
  """Eager key code that repeats past `deferred.FUSE_WORK` operations gets its batch
  compiled (fencing it failed on the key dtype); JAX 0.10.2's key after 100 splits."""
  for _ in range(25):
    key = jr.PRNGKey(0)
    for _ in range(100):
      key, _ = jr.split(key)
    jaxon.block_until_ready(key)
  np.testing.assert_array_equal(np.asarray(key), np.array([547840628, 543358469], np.uint32))


# ----------------------------------------------------------------------------- jaxlib's C++ path

def python_calls() -> int:
  from jaxon._src.xla import cpp_dispatch
  return cpp_dispatch.stats["python_calls"]


@pytest.mark.parametrize("args", ["arrays", "numpy", "scalars", "pytree"])
def test_a_seen_signature_is_answered_in_cpp(args):
  """After a signature's first call, jaxlib's C++ jit answers it: jaxon's Python path is not
  entered again over 1,000 calls."""
  f = jaxon.jit(lambda x, y: jaxon.tree_map(lambda a: a * 2.0 + y, x))
  x, y = {"arrays": (jnp.arange(3.0), jnp.float32(1)),
          "numpy": (np.arange(3.0, dtype=np.float32), np.float32(1)),
          "scalars": (2.0, 1),
          "pytree": ({"a": jnp.arange(3.0), "b": [jnp.ones(2)]}, jnp.float32(1))}[args]
  first = f(x, y)
  before = python_calls()
  for _ in range(1000):
    out = f(x, y)
  assert python_calls() == before
  jaxon.tree_map(lambda o, w: np.testing.assert_array_equal(np.asarray(o), np.asarray(w)),
                 out, first)
  assert all(type(o) is jaxon.Array for o in jaxon.tree_leaves(out))


def test_key_arguments_are_answered_in_cpp_apart_from_their_uint32_data():
  """A key Array's node in jaxlib's signature carries its key type: a function of keys is
  answered in C++, and never with the program of a uint32 argument of the same buffer."""
  f = jaxon.jit(lambda k: jnp.zeros(jnp.shape(k)) + jr.normal(k, ()) * 0.0)
  typed, raw = jr.key(0), jr.key_data(jr.key(0))
  f(typed), f(raw)
  before = python_calls()
  for _ in range(100):
    assert f(typed).shape == () and f(raw).shape == (2,)
  assert python_calls() == before


def test_what_cpp_does_not_answer_goes_to_the_python_path():
  """Key results (which jaxlib would give as their uint32 data), tracers and jit under a
  trace stay on the Python path; so does every call while NaN checks are on, even of a
  signature jaxlib answered before."""
  f = jaxon.jit(lambda x: x * 2.0)
  x, nans = jnp.arange(3.0), jnp.full(3, np.nan)
  f(x), f(nans)
  before = python_calls()
  jaxpr = jaxon.make_jaxpr(lambda y: f(x) + y)(1.0)  # a concrete argument, under a trace
  assert "pjit" in str(jaxpr)
  with jaxon.debug_nans(True):
    f(x)
    with pytest.raises(FloatingPointError):
      f(nans)
  assert python_calls() == before + 3
  k = jaxon.jit(lambda k: jr.split(k))
  key = jr.key(0)
  k(key), k(key)
  assert python_calls() == before + 5


def test_a_flag_set_in_another_thread_is_that_threads_alone():
  import threading
  f, traced = traces_of(lambda x: x @ x)
  x = jnp.ones((2, 2))
  f(x)
  seen = []

  def other():
    with jaxon.default_matmul_precision("float32"):
      seen.append(f(x))
  thread = threading.Thread(target=other)
  thread.start()
  thread.join()
  assert len(traced) == 2 and len(seen) == 1  # traced again for the other context
  f(x)
  assert len(traced) == 2  # this thread's context is as before


def test_a_function_of_many_arrays_is_answered_in_cpp():
  f, traced = traces_of(lambda xs: [x * 2.0 for x in xs])
  xs = [jnp.full(2, float(i)) for i in range(30)]
  f(xs)
  before = python_calls()
  for _ in range(5):
    out = f(xs)
  assert python_calls() == before and len(traced) == 1
  np.testing.assert_array_equal(np.asarray(out[3]), [6.0, 6.0])


_FAKE_JAX_CONFIG = """
from jaxlib import _jax
# JAX's jit states, registered with jaxlib as JAX registers its own
enable_x64 = _jax.config.Config("jax_enable_x64", {x64}, include_in_jit_key=True)
_jax.jax_jit.set_enable_x64_state(enable_x64)
_jax.jax_jit.set_disable_jit_state(_jax.config.Config("jax_disable_jit", False))
_jax.jax_jit.set_post_hook_state(_jax.config.Config("post_hook", None))
"""


@pytest.mark.parametrize("jax_x64", [False, True])
def test_with_jax_in_the_process_scalars_take_cpp_only_when_x64_agrees(tmp_path, jax_x64):
  """With JAX imported first, jaxlib canonicalizes Python scalars by JAX's x64 state: jaxlib
  answers a signature with a Python scalar when that state is jaxon's (here off), and
  never when it is not, so the result keeps jaxon's dtype. A stand-in `jax` package on the
  path registers its x64 state with jaxlib as JAX does (the suite never imports JAX)."""
  import subprocess
  import sys
  import textwrap
  (tmp_path / "jax" / "_src").mkdir(parents=True)
  (tmp_path / "jax" / "_src" / "__init__.py").write_text("")
  (tmp_path / "jax" / "_src" / "config.py").write_text(_FAKE_JAX_CONFIG.format(x64=jax_x64))
  (tmp_path / "jax" / "__init__.py").write_text(
      "import types\nfrom jax._src import config as _config\n"
      f"config = types.SimpleNamespace(jax_enable_x64={jax_x64})\n")
  code = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import jax
    import jaxon, jaxon.numpy as jnp
    from jaxon._src.xla import cpp_dispatch
    f = jaxon.jit(lambda x, s: x * s)
    x = jnp.arange(3.0)
    f(x, 2.0)
    before = cpp_dispatch.stats["python_calls"]
    out = [f(x, 2.0) for _ in range(100)][-1]
    print(cpp_dispatch.stats["python_calls"] - before, out.dtype, out.tolist())
  """)
  proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                        text=True, timeout=300)
  assert proc.returncode == 0, proc.stderr
  python_path_calls, dtype, values = proc.stdout.split(maxsplit=2)
  assert int(python_path_calls) == (100 if jax_x64 else 0)
  assert dtype == "float32" and values.strip() == "[0.0, 2.0, 4.0]"


def _double(x):
  """Doubles x."""
  return x * 2.0


def test_jit_returns_jaxlibs_cpp_function_with_jits_api():
  """A call that jaxlib answers runs no Python: `jit` returns jaxlib's `PjitFunction`
  itself, carrying the function's name, docstring and signature and the stages' API.
  Donation, shardings and inlining keep to jaxon's Python `PjitFunction`."""
  f = jaxon.jit(_double)
  x = jnp.arange(3.0)
  assert type(f).__module__ == "jaxlib._jax" and type(f).__name__ == "PjitFunction"
  assert (f.__name__, f.__doc__, f.__wrapped__) == ("_double", "Doubles x.", _double)
  assert repr(f) == f"<PjitFunction of {_double!r}>"
  assert str(inspect.signature(f)) == "(x)"
  assert "mul" in f.lower(x).as_text() and f.trace(x).jaxpr.eqns
  assert f.eval_shape(x).shape == (3,)
  np.testing.assert_array_equal(np.asarray(f(x)), [0.0, 2.0, 4.0])
  assert f._cache_size() == 1
  f.clear_cache()
  assert f._cache_size() == 0
  np.testing.assert_array_equal(np.asarray(f(x)), [0.0, 2.0, 4.0])

  class Scaler:  # bound as a method, as a function is
    double = jaxon.jit(lambda self, x: x * 2.0, static_argnums=0)
  np.testing.assert_array_equal(np.asarray(Scaler().double(x)), [0.0, 2.0, 4.0])
  for python_path in (jaxon.jit(_double, donate_argnums=0), jaxon.jit(_double, inline=True)):
    assert type(python_path) is jaxon_jit.PjitFunction
    assert repr(python_path) == f"<PjitFunction of {_double!r}>"
  assert jaxon_jit.is_jitted(f) and not jaxon_jit.is_jitted(_double)
  assert not jaxon_jit.is_jitted(functools.wraps(f)(lambda x: f(x) + 1.0))


def test_transfer_guards_see_every_call_with_host_values(caplog):
  f = jaxon.jit(lambda x: x + 1.0)
  x = np.ones(3, np.float32)
  f(x), f(x)  # answered in C++ from now on, while no guard is set
  with jaxon.transfer_guard("log"):
    f(x), f(x)
  assert sum("host-to-device transfer" in r.getMessage() for r in caplog.records) == 2
  with jaxon.transfer_guard("disallow"):
    f(jnp.ones(3))  # an Array: no transfer
    with pytest.raises(jaxon.errors.JaxRuntimeError, match="Disallowed host-to-device"):
      f(x)


def test_static_arguments_are_keyed_in_cpp():
  """jaxlib keys static arguments by hash and equality, positional or by name: a seen value
  is answered in C++, a new one traces."""
  f, traced = traces_of(lambda x, n, *, k=1.0: x * n + k)
  f = jaxon.jit(f.__wrapped__, static_argnums=1, static_argnames="k")
  x = jnp.ones(2)
  f(x, 2), f(x, 2, k=5.0)
  before = python_calls()
  for _ in range(100):
    out = f(x, 2, k=5.0)
  assert python_calls() == before and len(traced) == 2
  np.testing.assert_array_equal(np.asarray(out), [7.0, 7.0])
  np.testing.assert_array_equal(np.asarray(f(x, 3)), [4.0, 4.0])
  assert len(traced) == 3 and python_calls() == before + 1
  with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
    f(x, [2])
