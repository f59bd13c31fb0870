"""Devices and platforms: the 8 CPU devices of the test process (conftest), the
`jax_num_cpu_devices` flag, and finding the CUDA PJRT plugin (no GPU here: a fake one)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import jaxon
from jaxon._src.xla import client


def test_eight_cpu_devices_and_process_queries():
  devices = jaxon.devices()
  assert len(devices) == 8 and jaxon.device_count() == 8 and jaxon.local_device_count() == 8
  assert [d.id for d in devices] == list(range(8)) and jaxon.local_devices() == devices
  assert jaxon.process_index() == 0 and jaxon.process_count() == 1
  assert jaxon.numpy.ones(2).devices() == {devices[0]}  # the default device


def test_num_cpu_devices_cannot_change_after_the_backend_started():
  with pytest.raises(RuntimeError, match="jax_num_cpu_devices config should be updated "
                     "before backends are initialized"):
    jaxon.config.update("jax_num_cpu_devices", 2)


@pytest.mark.parametrize("how", ["flag", "xla_flags"])
def test_device_count_from_flag_or_xla_flags(how):
  env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="")
  code = "import jaxon; "
  if how == "flag":
    code += "jaxon.config.update('jax_num_cpu_devices', 3); "
  else:
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=3"
  code += "print(jaxon.device_count())"
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
  assert out.stdout.strip() == "3", out.stderr


def test_cuda_plugin_discovery(tmp_path, monkeypatch):
  monkeypatch.delenv("PJRT_NAMES_AND_LIBRARY_PATHS", raising=False)
  assert client.find_cuda_plugin([str(tmp_path)]) is None
  plugin = tmp_path / "jax_plugins" / "xla_cuda12" / "xla_cuda_plugin.so"
  plugin.parent.mkdir(parents=True)
  plugin.write_bytes(b"")
  assert client.find_cuda_plugin([str(tmp_path)]) == str(plugin)
  monkeypatch.setenv("PJRT_NAMES_AND_LIBRARY_PATHS", f"cuda{os.pathsep}/opt/cuda_plugin.so")
  assert client.find_cuda_plugin([str(tmp_path)]) == "/opt/cuda_plugin.so"


def test_platform_choice_with_and_without_plugin(monkeypatch):
  monkeypatch.setattr(client, "find_cuda_plugin", lambda search_path=None: "/x/plugin.so")
  assert client._check_platforms(None) == "cuda"
  assert client._check_platforms("cpu") == "cpu"  # JAX_PLATFORMS=cpu keeps the CPU
  monkeypatch.setattr(client, "find_cuda_plugin", lambda search_path=None: None)
  assert client._check_platforms(None) == "cpu"
  assert client._check_platforms("cuda,cpu") == "cpu"


def _run_with_plugin(tmp_path, platforms):
  """A process whose `sys.path` holds a CUDA plugin that cannot start (as on a machine
  with the wheel but no GPU)."""
  plugin = tmp_path / "jax_plugins" / "xla_cuda12" / "xla_cuda_plugin.so"
  plugin.parent.mkdir(parents=True, exist_ok=True)
  plugin.write_bytes(b"not a shared library")
  env = {**os.environ, "PYTHONPATH": str(tmp_path), "JAX_PLATFORMS": platforms}
  env.pop("PJRT_NAMES_AND_LIBRARY_PATHS", None)
  code = "import jaxon; print(jaxon.default_backend(), jaxon.numpy.ones(2).sum())"
  return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                        text=True, timeout=120)


def test_a_plugin_that_cannot_start_falls_back_to_the_cpu(tmp_path):
  out = _run_with_plugin(tmp_path, "")
  assert out.returncode == 0 and out.stdout.split() == ["cpu", "2.0"], out.stderr
  assert "falling back to cpu" in out.stderr


def test_asking_for_the_gpu_by_name_fails_loudly(tmp_path):
  out = _run_with_plugin(tmp_path, "cuda")
  assert out.returncode != 0 and "Unable to initialize backend 'cuda'" in out.stderr


def test_mesh_utils_create_device_mesh():
  from jaxon.experimental import mesh_utils
  grid = mesh_utils.create_device_mesh((4, 2))
  assert grid.shape == (4, 2) and [d.id for d in grid.flat] == list(range(8))
  assert [d.id for d in mesh_utils.create_device_mesh((2, 2), jaxon.devices()[4:]).flat] == [
      4, 5, 6, 7]
  with pytest.raises(ValueError, match=r"Number of devices 8 must equal the product of "
                     r"mesh_shape \(3,\)"):
    mesh_utils.create_device_mesh((3,))


def test_eager_operations_on_another_device_run_there_without_xla_errors():
  """An eager operation (one at a time, a library call replayed, a jitted call) on Arrays
  committed to a device other than the default runs there and keeps them there; it used
  to try the default device first, which failed with an error XLA logs to stderr."""
  code = """if True:
    import numpy as np, jaxon, jaxon.numpy as jnp
    d1 = jaxon.devices()[1]
    x = jaxon.device_put(np.arange(4.0, dtype=np.float32), d1)
    outs = [x + 1, jnp.sin(x), x.sum(), jnp.mean(x), jaxon.jit(lambda a: a * 3)(x),
            jnp.ones(4) + x, x.copy(), jnp.array(x), jnp.zeros_like(x)]
    assert all(o.devices() == {d1} for o in outs), [o.devices() for o in outs]
    np.testing.assert_allclose(outs[0], np.arange(4.0) + 1)
    print("ok")"""
  env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=2")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
  assert out.stdout.strip() == "ok", out.stderr
  assert "Execute" not in out.stderr, out.stderr


def test_a_copy_stays_where_its_array_is():
  mesh = jaxon.make_mesh((2,), ("x",), devices=jaxon.devices()[:2])
  rows = jaxon.sharding.NamedSharding(mesh, jaxon.sharding.PartitionSpec("x"))
  for place in (rows, jaxon.devices()[3]):
    x = jaxon.device_put(jaxon.numpy.arange(4.0), place)
    for copy in (x.copy(), jaxon.numpy.array(x), jaxon.numpy.array(x, copy=True)):
      assert copy.sharding == x.sharding and copy._buf is not x._buf
      assert (copy == x).all()


def test_copying_a_deleted_array_is_an_error():
  for place in (jaxon.devices()[0], jaxon.devices()[3]):
    x = jaxon.device_put(jaxon.numpy.arange(3.0), place)
    x.delete()
    with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[3\]"):
      x.copy()
