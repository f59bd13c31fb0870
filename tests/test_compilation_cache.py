"""The persistent compilation cache (`jax_compilation_cache_dir`): a second process loads
what the first compiled; damaged, foreign or unwritable entries warn and never crash."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon._src.xla import compilation_cache
from jaxon.experimental.compilation_cache import compilation_cache as public_cc


@pytest.fixture
def cache_dir(tmp_path):
  """A fresh cache directory, every compiled program written to it; flags restored after."""
  jaxon.config.update("jax_compilation_cache_dir", str(tmp_path))
  jaxon.config.update("jax_persistent_cache_min_compile_time_secs", 0)
  try:
    yield tmp_path
  finally:
    jaxon.config.update("jax_compilation_cache_dir", None)
    jaxon.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def compile_fresh(scale: float = 3.0):
  """A jitted function never seen before (so it is traced and compiled now, the process's
  own programs forgotten), and its result on [0, 1, 2, 3]: a NumPy oracle checks it."""
  jaxon.clear_caches()

  def affine(x):
    return x * scale + 1.0
  out = jaxon.jit(affine)(jnp.arange(4.0))
  np.testing.assert_allclose(np.asarray(out), np.arange(4.0) * scale + 1.0)


def entries(directory: pathlib.Path) -> list[pathlib.Path]:
  return sorted(p for p in directory.iterdir() if p.name.startswith("affine-"))


def counts() -> dict[str, int]:
  return dict(compilation_cache.stats)


def test_flags_have_jaxs_defaults_and_set_cache_dir_sets_the_flag(tmp_path):
  config = jaxon.config
  assert config.jax_compilation_cache_dir is None
  assert config.jax_enable_compilation_cache is True
  assert config.jax_persistent_cache_min_compile_time_secs == 1.0
  assert config.jax_persistent_cache_min_entry_size_bytes == 0
  assert config.jax_persistent_cache_enable_xla_caches == "xla_gpu_per_fusion_autotune_cache_dir"
  assert config.jax_raise_persistent_cache_errors is False
  with pytest.raises(ValueError, match="must be None or of type str"):
    config.update("jax_compilation_cache_dir", tmp_path)  # as JAX: a str, not a Path
  try:
    public_cc.set_cache_dir(str(tmp_path))
    assert config.jax_compilation_cache_dir == str(tmp_path)
  finally:
    config.update("jax_compilation_cache_dir", None)


def test_second_compilation_loads_the_entry(cache_dir):
  before = counts()
  compile_fresh()
  assert len(entries(cache_dir)) == 1
  assert counts()["writes"] > before["writes"]
  before = counts()
  compile_fresh()
  after = counts()
  assert after["hits"] == before["hits"] + 1 and after["writes"] == before["writes"]


def test_a_program_compiled_in_this_process_is_not_compiled_again(monkeypatch):
  """A jitted function made anew gives the same module: the process's compiled program
  answers, without XLA and without the cache directory."""
  compiled = []
  original = compilation_cache._compile_and_load
  monkeypatch.setattr(compilation_cache, "_compile_and_load",
                      lambda *a, **k: compiled.append(1) or original(*a, **k))
  for _ in range(3):
    out = jaxon.jit(lambda x: x * 7.5 - 2.0)(jnp.arange(4.0))
    np.testing.assert_array_equal(out, np.arange(4.0) * 7.5 - 2.0)
  assert len(compiled) == 1
  jaxon.clear_caches()
  jaxon.jit(lambda x: x * 7.5 - 2.0)(jnp.arange(4.0))
  assert len(compiled) == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign", "empty"])
def test_damaged_entry_warns_is_ignored_and_rewritten(cache_dir, damage):
  compile_fresh(3.0)
  (entry,) = entries(cache_dir)
  compile_fresh(5.0)
  (other,) = [p for p in entries(cache_dir) if p != entry]  # another program's entry
  good = entry.read_bytes()  # (a fresh compilation may differ in its bytes)
  damaged = {"flip": good[:-10] + bytes(b ^ 0xFF for b in good[-10:]),
             "truncate": good[:20], "foreign": other.read_bytes(), "empty": b""}[damage]
  entry.write_bytes(damaged)
  with pytest.warns(UserWarning, match="Error reading persistent compilation cache entry"):
    compile_fresh(3.0)
  assert entry.read_bytes() != damaged  # compiled again and written whole:
  before = counts()
  compile_fresh(3.0)
  assert counts()["hits"] == before["hits"] + 1


def test_unwritable_directory_warns_and_computes(tmp_path):
  not_a_dir = tmp_path / "file"
  not_a_dir.write_text("")
  jaxon.config.update("jax_persistent_cache_min_compile_time_secs", 0)
  jaxon.config.update("jax_compilation_cache_dir", str(not_a_dir / "cache"))
  try:
    with pytest.warns(UserWarning, match="Error writing persistent compilation cache entry"):
      compile_fresh()
  finally:
    jaxon.config.update("jax_compilation_cache_dir", None)
    jaxon.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def test_raise_persistent_cache_errors_raises(cache_dir):
  compile_fresh()
  (entry,) = entries(cache_dir)
  entry.write_bytes(b"garbage")
  jaxon.config.update("jax_raise_persistent_cache_errors", True)
  try:
    with pytest.raises(ValueError, match="not an entry of this jaxon cache|truncated"):
      compile_fresh()
  finally:
    jaxon.config.update("jax_raise_persistent_cache_errors", False)


def test_fast_compilations_and_callbacks_are_not_written(cache_dir):
  jaxon.config.update("jax_persistent_cache_min_compile_time_secs", 1000.0)
  compile_fresh()
  assert entries(cache_dir) == []
  jaxon.config.update("jax_persistent_cache_min_compile_time_secs", 0)

  def affine_printing(x):  # its program holds a Python callback: never written
    jaxon.debug.callback(lambda v: None, x)
    return x + 1.0
  jaxon.jit(affine_printing)(jnp.arange(4.0)).block_until_ready()
  assert not [p for p in cache_dir.iterdir() if p.name.startswith("affine_printing")]


def test_disabled_cache_reads_and_writes_nothing(cache_dir):
  jaxon.config.update("jax_enable_compilation_cache", False)
  try:
    before = counts()
    compile_fresh()
    assert counts() == before and list(cache_dir.iterdir()) == []
  finally:
    jaxon.config.update("jax_enable_compilation_cache", True)


_PROGRAM = """
import jaxon, jaxon.numpy as jnp
from jaxon._src.xla import compilation_cache
def loss(w, x):
  return jnp.sum(jnp.tanh(x @ w) ** 2)
g = jaxon.jit(jaxon.grad(loss))(jnp.ones((8, 4)) * 0.1, jnp.ones((2, 8)))
print(float(g.sum()), compilation_cache.stats["hits"], compilation_cache.stats["writes"])
"""


def test_a_second_process_skips_compilation(tmp_path):
  """The environment variables set the cache, as JAX's do; the second process compiles
  nothing that the first wrote."""
  env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(tmp_path),
             JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")

  def run() -> tuple[str, int, int]:
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    value, hits, writes = out.stdout.split()
    return value, int(hits), int(writes)
  value, hits, writes = run()
  assert hits == 0 and writes >= 1
  value_again, hits, writes = run()
  assert value_again == value and hits >= 1 and writes == 0
