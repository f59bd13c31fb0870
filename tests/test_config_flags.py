"""Configuration flags under JAX's names: defaults, validation, environment variables,
context managers (restored on exit, thread-local) and what each flag changes.

Defaults and error messages are JAX 0.10.2's (recorded with it)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon._src import config as config_mod
from jaxon._src import core
from jaxon._src.xla import client

config = jaxon.config

# (flag, JAX 0.10.2's default)
DEFAULTS = [
    ("jax_enable_x64", False), ("jax_disable_jit", False), ("jax_platform_name", ""),
    ("jax_platforms", None), ("jax_default_matmul_precision", None),
    ("jax_debug_nans", False), ("jax_debug_infs", False), ("jax_check_tracer_leaks", False),
    ("jax_traceback_filtering", "auto"), ("jax_log_compiles", False),
    ("jax_explain_cache_misses", False), ("jax_numpy_rank_promotion", "allow"),
    ("jax_enable_checks", False), ("jax_default_prng_impl", "threefry2x32"),
    ("jax_threefry_partitionable", True),
]


@pytest.mark.parametrize("name,default", DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_defaults(name, default):
  assert config.values[name] == default
  assert getattr(config, name) == default and config.read(name) == default


# (flag, bad value, message): JAX's ValueError for enum flags.
BAD_VALUES = [
    ("jax_numpy_rank_promotion", "bad",
     "new enum value must be in ['allow', 'warn', 'raise'], got bad of type <class 'str'>."),
    ("jax_default_matmul_precision", "bad",
     "new enum value must be None or in ['default', 'high', 'highest', 'bfloat16', "
     "'tensorfloat32', 'float32'], got bad of type <class 'str'>."),
    ("jax_traceback_filtering", "bad",
     "new enum value must be in ['off', 'tracebackhide', 'remove_frames', "
     "'quiet_remove_frames', 'auto'], got bad of type <class 'str'>."),
    ("jax_default_prng_impl", "rbg",
     "new enum value must be in ['threefry2x32'], got rbg of type <class 'str'>."),
]


@pytest.mark.parametrize("name,value,message", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_bad_values_are_rejected_and_leave_the_flag(name, value, message):
  before = config.read(name)
  with pytest.raises(ValueError) as info:
    config.update(name, value)
  assert str(info.value) == message
  assert config.read(name) == before


def test_context_managers_check_values_too():
  with pytest.raises(ValueError, match="new enum value must be in"):
    jaxon.numpy_rank_promotion("bad")


def test_bool_flags_store_bools():
  try:
    config.update("jax_debug_infs", 1)
    assert config.jax_debug_infs is True
  finally:
    config.update("jax_debug_infs", False)


def test_platform_name():
  config.update("jax_platform_name", "cpu")
  try:
    assert config.jax_platform_name == "cpu"
    with pytest.raises(RuntimeError, match="Unknown backend: 'gpu' requested, but no "
                       "platforms that are instances of gpu are present. Platforms present "
                       "are: cpu"):
      config.update("jax_platform_name", "gpu")
  finally:
    config.update("jax_platform_name", "")


@pytest.mark.parametrize("platforms,error", [
    ("cpu", None), ("cuda,cpu", None), ("tpu,cuda,cpu", None), ("", None), (None, None),
    ("gpu", "gpu"), ("tpu", "tpu"), ("foo,cpu", "foo"), ("cuda", "cuda")])
def test_platforms_list(platforms, error):
  """JAX reads `jax_platforms` when the backend starts: the CPU must be on the list,
  after only platform names JAX knows."""
  if error is None:
    client._check_platforms(platforms)
    return
  with pytest.raises(RuntimeError, match=f"Unable to initialize backend '{error}': Backend "
                     f"'{error}' is not in the list of known backends: \\['cpu'\\]"):
    client._check_platforms(platforms)


def test_environment_variables_are_read_at_import():
  env = dict(os.environ, JAX_DEBUG_NANS="1", JAX_NUMPY_RANK_PROMOTION="raise",
             JAX_DEFAULT_MATMUL_PRECISION="float32", JAX_LOG_COMPILES="true",
             JAX_ENABLE_CHECKS="off", JAX_PLATFORMS="tpu")
  script = ("import jaxon, jaxon.numpy as jnp\n"
            "v = jaxon.config.values\n"
            "print(v['jax_debug_nans'], v['jax_numpy_rank_promotion'],"
            " v['jax_default_matmul_precision'], v['jax_log_compiles'], v['jax_enable_checks'])\n"
            "try:\n  jnp.ones(2)\nexcept RuntimeError as e:\n  print(e)\n")
  out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                       text=True, timeout=120)
  lines = out.stdout.splitlines()
  assert lines[0] == "True raise float32 True False", out.stderr
  assert lines[1].startswith("Unable to initialize backend 'tpu'"), out.stdout


def test_unparseable_bool_environment_variable():
  env = dict(os.environ, JAX_DEBUG_INFS="maybe")
  out = subprocess.run([sys.executable, "-c", "import jaxon"], env=env, capture_output=True,
                       text=True, timeout=120)
  assert "invalid truth value 'maybe' for environment variable JAX_DEBUG_INFS" in out.stderr


# ----------------------------------------------------------------------------- contexts

CONTEXTS = [
    # (context manager factory, flag, value inside)
    (jaxon.debug_nans, "jax_debug_nans", True),
    (jaxon.debug_infs, "jax_debug_infs", True),
    (jaxon.log_compiles, "jax_log_compiles", True),
    (jaxon.explain_cache_misses, "jax_explain_cache_misses", True),
    (jaxon.enable_checks, "jax_enable_checks", True),
    (jaxon.checking_leaks, "jax_check_tracer_leaks", True),
    (jaxon.disable_jit, "jax_disable_jit", True),
    (lambda: jaxon.numpy_rank_promotion("warn"), "jax_numpy_rank_promotion", "warn"),
    (lambda: jaxon.default_matmul_precision("highest"), "jax_default_matmul_precision",
     "highest"),
]


@pytest.mark.parametrize("make,name,value", CONTEXTS, ids=[c[1] for c in CONTEXTS])
def test_context_managers_set_and_restore(make, name, value):
  before = config.read(name)
  with make():
    assert config.read(name) == value and config.values[name] == value
  assert config.read(name) == before
  with pytest.raises(KeyError), make():  # restored on an exception too
    raise KeyError
  assert config.read(name) == before


def test_contexts_nest_and_decorate():
  with jaxon.debug_nans(True):
    with jaxon.debug_nans(False):
      assert not config.jax_debug_nans
    assert config.jax_debug_nans

  @jaxon.numpy_rank_promotion("raise")
  def inside():
    return config.jax_numpy_rank_promotion
  assert inside() == "raise" and config.jax_numpy_rank_promotion == "allow"


def test_context_outlives_a_global_update_inside_it():
  with jaxon.log_compiles(True):
    config.update("jax_log_compiles", False)
    try:
      assert config.jax_log_compiles  # this thread's setting wins inside the block
    finally:
      config.update("jax_log_compiles", False)
  assert not config.jax_log_compiles


def test_contexts_without_a_default_need_a_value():
  with pytest.raises(TypeError, match="Context manager for default_matmul_precision config "
                     "option requires an argument representing the new value"):
    jaxon.default_matmul_precision()
  with pytest.raises(TypeError, match="bool\\(\\) not supported"):
    bool(jaxon.debug_nans)
  assert jaxon.debug_nans.value is False


def test_contexts_are_thread_local():
  """A context manager changes its own thread only; `config.update` changes every thread
  that has not overridden the flag."""
  entered, checked = threading.Event(), threading.Event()
  seen = {}

  def worker():
    with jaxon.disable_jit(), jaxon.default_matmul_precision("float32"):
      seen["inside"] = (config.jax_disable_jit, config_mod.trace_context())
      entered.set()
      checked.wait(10)
    seen["after"] = config.jax_disable_jit
  thread = threading.Thread(target=worker)
  thread.start()
  entered.wait(10)
  seen["main"] = (config.jax_disable_jit, config_mod.trace_context())
  checked.set()
  thread.join(10)
  assert seen["inside"][0] is True and "float32" in seen["inside"][1]
  assert seen["main"][0] is False and "float32" not in seen["main"][1]
  assert seen["after"] is False

  result = []
  config.update("jax_debug_infs", True)
  try:
    thread = threading.Thread(target=lambda: result.append(config.jax_debug_infs))
    thread.start()
    thread.join(10)
  finally:
    config.update("jax_debug_infs", False)
  assert result == [True]


def test_unknown_names():
  with pytest.raises(AttributeError, match="Unrecognized config option: 'jax_nope'"):
    config.read("jax_nope")
  with pytest.raises(AttributeError, match="Unrecognized config option: 'jax_nope'"):
    config.jax_nope  # noqa: B018
  with pytest.raises(AttributeError, match="config.update"):
    config.jax_enable_x64 = True


# ----------------------------------------------------------------------------- effects


def test_default_matmul_precision_reaches_the_program_and_the_cache_key():
  f = jaxon.jit(lambda a, b: a @ b)
  a = jnp.ones((2, 2))
  assert "precision" not in f.lower(a, a).as_text()
  with jaxon.default_matmul_precision("float32"):
    text = f.lower(a, a).as_text()
    assert "precision = [HIGHEST, HIGHEST]" in text, text  # as JAX lowers it
    np.testing.assert_allclose(f(a, a), 2.0 * np.ones((2, 2)))
  assert f._cache_size() == 2  # one signature per precision
  assert "precision" not in f.lower(a, a).as_text()


RANK_PROMOTION_MESSAGE = {
    "warn": "Following NumPy automatic rank promotion for add on shapes (3,) (2, 3). Set the "
            "jax_numpy_rank_promotion config option to 'allow' to disable this warning; for "
            "more information, see https://docs.jax.dev/en/latest/rank_promotion_warning.html.",
    "raise": "Operands could not be broadcast together for add on shapes (3,) (2, 3) and with "
             "the config option jax_numpy_rank_promotion='raise'. For more information, see "
             "https://docs.jax.dev/en/latest/rank_promotion_warning.html.",
}


def test_rank_promotion():
  x, y = jnp.ones(3), jnp.ones((2, 3))
  f = jaxon.jit(jnp.add)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert (x + y).shape == (2, 3) and f(x, y).shape == (2, 3)  # 'allow'
    with jaxon.numpy_rank_promotion("raise"):
      assert (x + 1.0).shape == (3,) and (y * y).shape == (2, 3)  # equal ranks, scalars
  with jaxon.numpy_rank_promotion("warn"), pytest.warns(UserWarning) as record:
    jnp.add(x, y)
  assert str(record[0].message) == RANK_PROMOTION_MESSAGE["warn"]
  with jaxon.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError) as info:
      jnp.add(x, y)
    assert str(info.value) == RANK_PROMOTION_MESSAGE["raise"]
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
      f(x, y)  # traced again: the flag is part of the cache key


def test_enable_checks_type_checks_traced_jaxprs(monkeypatch):
  checked = []
  monkeypatch.setattr(core, "check_jaxpr", checked.append)
  f = jaxon.jit(lambda x: jnp.sin(x) * 2.0)
  f(1.0)
  assert not checked
  with jaxon.enable_checks(True):
    f(jnp.ones(2))
  assert len(checked) == 1 and "sin" in str(checked[0])
