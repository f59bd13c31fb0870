"""`jaxon.install_as_jax()` and `python -m jaxon`: code written for `jax` runs on jaxon.

The alias is installed in subprocesses only, so it never leaks into the test process (where
`import jax` must keep failing: the suite runs without jax)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest


def run_python(*args: str, cwd=None) -> str:
  """Runs a fresh interpreter; its stdout, or the test fails with its stderr."""
  proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                        timeout=300)
  assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr}"
  return proc.stdout


def run_code(code: str, *argv: str) -> dict:
  """Runs `code` (which prints one JSON object last) in a fresh interpreter."""
  return json.loads(run_python("-c", textwrap.dedent(code), *argv).strip().splitlines()[-1])


def test_importing_jax_gives_jaxons_modules(tmp_path):
  installed = tmp_path / "jax"  # a `jax` package on the path, as where JAX is installed
  installed.mkdir()
  (installed / "__init__.py").write_text("raise ImportError('the installed jax was imported')")
  out = run_code("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import jaxon
    returned = jaxon.install_as_jax()
    import jax
    import jax.numpy as jnp
    import jax.lax, jax.random, jax.tree_util, jax.scipy.special, jax.nn.initializers
    import jax.typing, jax.stages, jax.experimental.checkify, jax._src.api
    from jax.scipy.special import logsumexp
    from jax import numpy as jnp_from
    star = {}
    exec("from jax import *", star)
    pairs = {name: (sys.modules["jax" + name[5:]], sys.modules[name]) for name in [
        "jaxon.numpy", "jaxon.lax", "jaxon.random", "jaxon.tree_util", "jaxon.scipy.special",
        "jaxon.nn.initializers", "jaxon.typing", "jaxon.stages",
        "jaxon.experimental.checkify", "jaxon._src.api"]}
    print(json.dumps({
        "same_modules": {name: a is b for name, (a, b) in pairs.items()},
        "attributes": [jax.numpy is jaxon.numpy, jnp is jaxon.numpy, jnp_from is jaxon.numpy,
                       jax.scipy.special.logsumexp is logsumexp, jax.grad is jaxon.grad,
                       jax.Array is jaxon.Array, returned is jax],
        "versions": [jax.__version__, list(jax.__version_info__), jaxon.__version__],
        "jaxon_spec_untouched": jaxon.numpy.__spec__.name,
        "dir_has": ["numpy" in dir(jax), "grad" in dir(jax)],
        "star": [star["grad"] is jaxon.grad, star["numpy"] is jaxon.numpy],
        "again": jaxon.install_as_jax() is jax,
    }))
  """, str(tmp_path))
  assert all(out["same_modules"].values()), out["same_modules"]
  assert all(out["attributes"]), out["attributes"]
  assert out["versions"][:2] == ["0.10.2", [0, 10, 2]]
  assert out["versions"][2] != "0.10.2"  # jaxon keeps its own version
  assert out["jaxon_spec_untouched"] == "jaxon.numpy"
  assert out["dir_has"] == [True, True] and out["star"] == [True, True]
  assert out["again"]


def test_a_program_written_for_jax_runs():
  out = run_code("""
    import json
    import jaxon
    jaxon.install_as_jax()
    import jax
    import jax.numpy as jnp

    def loss(w, x, y):
      return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    x = jnp.arange(12.0).reshape(4, 3) / 10
    y = jnp.array([0.1, -0.2, 0.3, 0.0])
    w = jnp.array([0.5, -1.0, 0.25])
    g = jax.jit(jax.grad(loss))(w, x, y)
    per_row = jax.vmap(lambda row: jnp.dot(row, w))(x)
    key = jax.random.PRNGKey(0)
    leaves = jax.tree_util.tree_leaves({"a": w, "b": (x, y)})
    from jaxon._src.xla import cpp_dispatch
    scaled = jax.jit(lambda v, s: v * s)
    scaled(w, 2.0)
    before = cpp_dispatch.stats["python_calls"]
    scaled(w, 2.0)  # the alias is not JAX: jaxlib answers Python scalars too
    answered_in_cpp = cpp_dispatch.stats["python_calls"] == before
    print(json.dumps({"grad": g.tolist(), "per_row": per_row.tolist(),
                      "normal": jax.random.normal(key, (3,)).tolist(),
                      "n_leaves": len(leaves), "cpp": answered_in_cpp}))
  """)
  x = np.arange(12.0).reshape(4, 3) / 10
  y = np.array([0.1, -0.2, 0.3, 0.0])
  w = np.array([0.5, -1.0, 0.25])
  t = np.tanh(x @ w)
  want_grad = x.T @ (2 * (t - y) * (1 - t ** 2)) / len(y)
  np.testing.assert_allclose(out["grad"], want_grad, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(out["per_row"], x @ w, rtol=1e-6)
  np.testing.assert_allclose(out["normal"], [1.6226422, 2.0252647, -0.43359444], rtol=1e-6)
  assert out["n_leaves"] == 3 and out["cpp"]


def _numpy_adam(params, grad_of, steps, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
  """Adam as its paper states it, in float64."""
  m, v = np.zeros_like(params), np.zeros_like(params)
  for t in range(1, steps + 1):
    g = grad_of(params)
    m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g ** 2
    params = params - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
  return params


# A jitted optimizer step with its state in a NamedTuple pytree, as optax writes one; with
# OPTIMIZER = "optax" the same step uses optax itself. Prints the parameters after 3 steps.
_OPTIMIZER_STEP = """
  import json, sys
  from typing import NamedTuple
  import jaxon
  jaxon.install_as_jax()
  import jax, jax.numpy as jnp
  from jax.typing import ArrayLike

  class AdamState(NamedTuple):
    count: jax.Array
    mu: dict
    nu: dict

  def adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def init(params):
      zeros = jax.tree.map(jnp.zeros_like, params)
      return AdamState(jnp.zeros([], jnp.int32), zeros, zeros)
    def update(grads, state, params=None):
      count = state.count + 1
      mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
      nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.nu, grads)
      def step(m, v) -> ArrayLike:
        m_hat, v_hat = m / (1 - b1 ** count), v / (1 - b2 ** count)
        return -lr * m_hat / (jnp.sqrt(v_hat) + eps)
      return jax.tree.map(step, mu, nu), AdamState(count, mu, nu)
    return init, update

  if sys.argv[1] == "optax":
    import optax
    optimizer = optax.adam(0.1)
    init, update, apply_updates = optimizer.init, optimizer.update, optax.apply_updates
  else:
    init, update = adam(0.1)
    apply_updates = lambda p, u: jax.tree.map(lambda a, b: a + b, p, u)

  @jax.jit
  def train_step(params, state):
    grads = jax.grad(lambda p: jnp.sum(p["w"] ** 2) + jnp.sum(p["b"]))(params)
    updates, state = update(grads, state, params)
    return apply_updates(params, updates), state

  params = {"w": jnp.array([1.0, -2.0, 0.5]), "b": jnp.array([0.25])}
  state = init(params)
  for _ in range(3):
    params, state = train_step(params, state)
  print(json.dumps({k: v.tolist() for k, v in params.items()}))
"""


def _check_three_adam_steps(out: dict) -> None:
  np.testing.assert_allclose(out["w"], _numpy_adam(np.array([1.0, -2.0, 0.5]),
                                                   lambda w: 2 * w, 3), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(out["b"], _numpy_adam(np.array([0.25]), np.ones_like, 3),
                             rtol=1e-5, atol=1e-5)


def test_a_jitted_optimizer_step_written_as_optax_writes_it_runs():
  _check_three_adam_steps(run_code(_OPTIMIZER_STEP, "inline"))


@pytest.mark.skipif(importlib.util.find_spec("optax") is None,
                    reason="optax is not installed here (tools/run_optax_chex_tests.py runs "
                           "its whole test suite in a scratch venv)")
def test_a_jitted_optax_update_runs():
  _check_three_adam_steps(run_code(_OPTIMIZER_STEP, "optax"))


def test_missing_pieces_fail_as_jax_would_and_patching_jax_patches_jaxon():
  out = run_code("""
    import json, sys
    from unittest import mock
    import jaxon
    jaxon.install_as_jax()
    import jax
    errors = []
    try:
      import jax.no_such_module
    except ModuleNotFoundError as e:
      errors.append([type(e).__name__, e.name, "jax.no_such_module" in str(e)])
    try:
      jax.no_such_attribute
    except AttributeError as e:
      errors.append([type(e).__name__, "no_such_attribute" in str(e)])
    original = jaxon.jit
    with mock.patch("jax.jit", lambda f: f):
      patched = jax.jit is jaxon.jit and jaxon.jit is not original
    print(json.dumps({"errors": errors, "patched": patched,
                      "restored": jax.jit is original and jaxon.jit is original,
                      "leaked": "jax.no_such_module" in sys.modules}))
  """)
  assert out["errors"] == [["ModuleNotFoundError", "jax.no_such_module", True],
                           ["AttributeError", True]]
  assert out["patched"] and out["restored"] and not out["leaked"]


def test_jaxlibs_own_hidden_import_of_jax_is_harmless():
  """jaxlib imports `jax` inside some ArrayImpl methods; under the alias it gets jaxon, reads
  `jax.core.ShapedArray`, fails to find `jax._src.sharding_impls`, and goes on."""
  out = run_code("""
    import json, sys
    import jaxon
    jaxon.install_as_jax()
    import numpy as np
    import jaxon.numpy as jnp
    x = jnp.arange(4.0) * 2
    shards = x._buf._arrays
    values = shards[0]._single_device_array_to_np_array_did_copy()[0]
    print(json.dumps({"n": len(shards), "values": values.tolist(),
                      "core": sys.modules["jax.core"] is jaxon.core,
                      "after": (x + 1).tolist()}))
  """)
  assert out == {"n": 1, "values": [0.0, 2.0, 4.0, 6.0], "core": True,
                 "after": [1.0, 3.0, 5.0, 7.0]}


def test_it_refuses_when_another_jax_is_already_imported():
  out = run_code("""
    import json, sys, types
    sys.modules["jax"] = types.ModuleType("jax")
    import jaxon
    try:
      jaxon.install_as_jax()
      print(json.dumps({"raised": None}))
    except RuntimeError as e:
      print(json.dumps({"raised": str(e), "jax_untouched": type(sys.modules["jax"]) is
                        types.ModuleType}))
  """)
  assert out["raised"] is not None and "already imported" in out["raised"]
  assert "before anything imports jax" in out["raised"] and out["jax_untouched"]


def test_python_m_jaxon_runs_a_script_and_a_module(tmp_path):
  (tmp_path / "helper_mod.py").write_text("VALUE = 3\n")
  (tmp_path / "prog.py").write_text(textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp
    import helper_mod  # found beside the script, as `python prog.py` would find it
    print(json.dumps({"argv": sys.argv[1:], "name": __name__, "version": jax.__version__,
                      "value": float(jax.grad(lambda x: x ** helper_mod.VALUE)(2.0))}))
  """))
  out = json.loads(run_python("-m", "jaxon", str(tmp_path / "prog.py"), "a", "--b"))
  assert out == {"argv": ["a", "--b"], "name": "__main__", "version": "0.10.2",
                 "value": 12.0}
  out = json.loads(run_python("-m", "jaxon", "-m", "prog", "c", cwd=tmp_path))
  assert out["argv"] == ["c"] and out["name"] == "__main__" and out["value"] == 12.0


def test_python_m_jaxon_without_a_program_prints_usage():
  proc = subprocess.run([sys.executable, "-m", "jaxon"], capture_output=True, text=True,
                        timeout=120)
  assert proc.returncode == 2 and "usage: python -m jaxon script.py" in proc.stderr


def test_jaxon_alone_leaves_jax_alone():
  """Importing jaxon installs nothing: `jax` stays whatever the environment has (here,
  nothing)."""
  import jaxon  # noqa: F401
  assert "jax" not in sys.modules
  assert not any(type(finder).__module__.startswith("jaxon") for finder in sys.meta_path)
