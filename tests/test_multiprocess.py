"""Multi-process jobs: 2 processes x 2 CPU devices on loopback (`tests/multiprocess/worker.py`).

Starting a pair of processes is the slow part (about 2 s), so one job runs every check in
sequence and the tests below read its report. Every wait is bounded: the job's own
timeouts (connecting, heartbeats, shutdown) and the subprocess timeouts here; processes
still running when a test ends are killed. The expected values of the multihost_utils
calls were printed by JAX 0.10.2 running the same calls in 2 processes.
"""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest

import jaxon
from jaxon._src import distributed
from jaxon.experimental import multihost_utils
from jaxon.sharding import NamedSharding, PartitionSpec
from tests.multiprocess import worker

ROOT = pathlib.Path(__file__).resolve().parent.parent
JOB_TIMEOUT_S = 120


def free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


@contextlib.contextmanager
def job(mode: str, logs: pathlib.Path, heartbeat_timeout: int = 10
        ) -> Iterator[list[subprocess.Popen]]:
  """Two worker processes of `mode`, their output in files under `logs` (pipes could
  fill and stall them); whatever still runs at the end is killed."""
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
             TF_CPP_MIN_LOG_LEVEL="1", JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
  address = f"127.0.0.1:{free_port()}"
  processes = []
  try:
    for pid in range(2):
      with open(logs / f"out{pid}", "w") as out, open(logs / f"err{pid}", "w") as err:
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "tests.multiprocess.worker", address, "2", str(pid), mode,
             str(heartbeat_timeout)], cwd=ROOT, env=env, stdout=out, stderr=err))
    yield processes
  finally:
    for p in processes:
      if p.poll() is None:
        p.kill()
      p.wait(timeout=10)


def read(logs: pathlib.Path, name: str) -> str:
  return (logs / name).read_text()


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[dict]:
  """Each process's report of the `checks` job."""
  logs = tmp_path_factory.mktemp("checks")
  with job("checks", logs) as processes:
    codes = [p.wait(timeout=JOB_TIMEOUT_S) for p in processes]
  results = []
  for pid, code in enumerate(codes):
    lines = [ln for ln in read(logs, f"out{pid}").splitlines() if ln.startswith("RESULT ")]
    assert code == 0 and lines, f"exit codes {codes}\n" + "\n".join(
        f"--- process {p} stderr:\n" + read(logs, f"err{p}")[-3000:] for p in range(2))
    results.append(json.loads(lines[-1][len("RESULT "):]))
  return results


def test_each_process_sees_all_devices_and_its_own(reports):
  for pid, report in enumerate(reports):
    assert report["initialized"]
    assert report["process_index"] == pid
    assert report["device_ids"] == [0, 1, 2048, 2049]
    assert report["local_device_ids"] == [[0, 1], [2048, 2049]][pid]


def test_initialize_twice_raises(reports):
  for report in reports:
    assert report["initialize_twice"] == "distributed.initialize should only be called once."


def test_collective_program_spans_the_processes(reports):
  for report in reports:  # psum of the device ids 0 + 1 + 2048 + 2049, on each local device
    assert report["raw_all_reduce"] == [4098.0, 4098.0]


# What JAX 0.10.2 printed for the same calls, as [type, dtype, shape, values]; the same in
# both processes.
JAX_MULTIHOST = {
    "ag_f64": ["ndarray", "float32", [2, 3], [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]]],
    "ag_f64_tiled": ["ndarray", "float32", [6], [0.0, 1.0, 2.0, 1.0, 2.0, 3.0]],
    "ag_scalar": ["ndarray", "int32", [2], [0, 1]],
    "ag_scalar_tiled": ["ndarray", "int32", [2], [0, 1]],
    "ag_jnp": ["ndarray", "int32", [2, 2], [[0, 1], [0, 2]]],
    "ag_tree": {"a": ["ndarray", "float32", [2], [0.0, 1.0]],
                "b": [["ndarray", "int8", [2, 2, 2], [[[0, 0], [0, 0]], [[1, 1], [1, 1]]]]]},
    "bc": ["ndarray", "float32", [3], [0.0, 1.0, 2.0]],
    "bc_int": ["ndarray", "int32", [], 5],
    "bc_src1": ["ndarray", "int32", [2], [1, 2]],
    "bc_bool": ["ndarray", "bool", [2], [True, True]],
    "ag_bf16": ["ndarray", "bfloat16", [2, 2], [[0.5, 0.5], [1.5, 1.5]]],
}


@pytest.mark.parametrize("name", sorted(JAX_MULTIHOST))
def test_multihost_utils_match_jax(reports, name):
  for pid, report in enumerate(reports):
    assert report[name] == JAX_MULTIHOST[name], f"{name} in process {pid}"


def test_sync_global_devices_with_different_names_raises(reports):
  # JAX's message, hashes included (crc32 of 'name0' and 'name1').
  for pid, report in enumerate(reports):
    assert report["sync_mismatch"] == (
        f"sync_global_devices name mismatch ('name{pid}'). Expected: [ 501635434 1793157628]; "
        f"got: {[501635434, 1793157628][pid]}.")


def test_global_array_from_process_local_data_matches_jax(reports):
  """Rows [0:2] from process 0 and [2:4] from process 1, over the job's 4 devices."""
  shards = [[[0, [[0, 1], [0, 2]], [[0.0, 1.0]]], [1, [[1, 2], [0, 2]], [[2.0, 3.0]]]],
            [[2048, [[2, 3], [0, 2]], [[10.0, 11.0]]], [2049, [[3, 4], [0, 2]], [[12.0, 13.0]]]]]
  for pid, report in enumerate(reports):
    got = report["global_array"]
    assert "error" not in got, got
    assert got["global_shape"] == [4, 2] and not got["global_fully_addressable"]
    assert got["global_shards"] == shards[pid]
    assert got["global_gathered"] == ["ndarray", "float32", [4, 2],
                                      [[0.0, 1.0], [2.0, 3.0], [10.0, 11.0], [12.0, 13.0]]]
    assert got["global_untiled"] == [
        "ValueError", "Gathering global non-fully-addressable arrays only supports tiled=True"]


def test_global_array_to_numpy_raises_as_jax(reports):
  for report in reports:
    assert report["global_array"].get("global_asarray") == [
        "RuntimeError", "Fetching value for `jax.Array` that spans non-addressable (non process "
        "local) devices is not possible. You can use "
        "`jax.experimental.multihost_utils.process_allgather` to print the global array or use "
        "`.addressable_shards` method of jax.Array to inspect the addressable (process local) "
        "shards."]
    # What JAX 0.10.2 gave for `host_value_checks` (in each process).
    assert report["global_array"]["one_block_split"] == "RuntimeError"
    assert report["global_array"]["one_block_replicated"] == [0.0, 1.0, 2.0, 3.0]
    assert report["global_array"]["split_within_each_process"] == [0, 1, 2, 3]


@pytest.fixture(scope="module")
def single_process_training() -> dict:
  """The numbers the data-parallel runs must give: the same steps on the whole batch, on
  one device of this process."""
  params, x, y = worker.training_data()
  step = jaxon.jit(worker.sgd_step)
  losses = []
  for _ in range(worker.TRAIN_STEPS):
    params, loss = step(params, x, y)
    losses.append(float(loss))
  return {"losses": losses, "params": {k: np.asarray(v) for k, v in params.items()}}


def check_training(report: dict, expected: dict) -> None:
  assert "error" not in report, report["error"]
  np.testing.assert_allclose(report["losses"], expected["losses"], rtol=1e-5)
  for name, want in expected["params"].items():
    np.testing.assert_allclose(report["params"][name], want, rtol=1e-5, atol=1e-6,
                               err_msg=name)


def test_data_parallel_training_with_sharded_jit(reports, single_process_training):
  for report in reports:
    check_training(report["train_sharded_jit"], single_process_training)


def test_data_parallel_training_with_pmap(reports, single_process_training):
  for report in reports:
    check_training(report["train_pmap"], single_process_training)


def test_pmap_spans_the_processes(reports):
  """Each process maps its 2 members (global indices 2p, 2p+1); all_gather sees all 4."""
  for pid, report in enumerate(reports):
    assert report["pmap_members"] == {"index": [[0, 1], [2, 3]][pid],
                                      "gathered": [[0.0, 1.0, 10.0, 11.0]] * 2,
                                      "local_shape": [2, 4]}


@pytest.mark.parametrize("victim", [0, 1])
def test_a_killed_process_takes_the_other_down_within_30s(tmp_path, victim):
  """The survivor is inside a collective when its peer dies: the coordination service
  notices (process 0 at once, process 1 after the heartbeat timeout) and aborts it."""
  with job("crash", tmp_path, heartbeat_timeout=5) as processes:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not all("READY" in read(tmp_path, f"out{pid}") for pid in range(2)):
      assert time.monotonic() < deadline and all(p.poll() is None for p in processes), (
          "the job did not start:\n" + read(tmp_path, "err0")[-2000:]
          + read(tmp_path, "err1")[-2000:])
      time.sleep(0.05)
    processes[victim].kill()
    start = time.monotonic()
    survivor = processes[1 - victim]
    try:
      code = survivor.wait(timeout=30)
    except subprocess.TimeoutExpired:
      pytest.fail("the survivor still runs 30 s after its peer died")
    took = time.monotonic() - start
  err = read(tmp_path, f"err{1 - victim}")
  assert code != 0, err[-2000:]
  assert "Terminating process because the JAX distributed service detected fatal errors" in err
  assert took < 30


# ------------------------------------------------------------------ in this one process


def test_single_process_helpers_need_no_job():
  assert not jaxon.distributed.is_initialized()
  x = np.arange(3.0)
  np.testing.assert_array_equal(multihost_utils.process_allgather(x), x[None])
  assert multihost_utils.process_allgather(x).dtype == np.float64  # as JAX: no canonicalizing
  np.testing.assert_array_equal(multihost_utils.process_allgather(x, tiled=True), x)
  tree = multihost_utils.broadcast_one_to_all({"a": 1, "b": jaxon.numpy.ones(2)})
  assert isinstance(tree["b"], np.ndarray) and tree["a"] == 1
  multihost_utils.sync_global_devices("alone")
  multihost_utils.assert_equal({"a": np.arange(2), "b": 3})
  jaxon.distributed.shutdown()  # nothing to shut down: no error


@pytest.fixture
def backend_not_started(monkeypatch):
  """Argument checks come after the backend check, which this process has long passed."""
  monkeypatch.setattr(distributed.global_state, "backend_started", False)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(num_processes=2, process_id=0), ValueError, "coordinator_address should be defined."),
    (dict(coordinator_address="127.0.0.1:1", process_id=0), ValueError,
     "Number of processes must be defined."),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2), ValueError,
     "The process id of the current process must be defined."),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id="0"), TypeError,
     "process_id must be a nonnegative int. Got process_id=0 of type <class 'str'>."),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2.0, process_id=0), TypeError,
     "num_processes must be a positive int. Got num_processes=2.0 of type <class 'float'>."),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id=2), ValueError,
     "process_id and num_processes must be nonnegative, with process_id < num_processes. "
     "Got process_id=2, num_processes=2."),
])
def test_initialize_argument_errors_are_jaxs(backend_not_started, monkeypatch, kwargs, error,
                                             message):
  monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)
  with pytest.raises(error) as info:
    jaxon.distributed.initialize(**kwargs)
  assert str(info.value) == message
  assert not jaxon.distributed.is_initialized()


def test_initialize_after_the_backend_started_raises():
  jaxon.devices()
  with pytest.raises(RuntimeError, match=r"must be called before any JAX calls that might "
                     r"initialise the XLA backend"):
    jaxon.distributed.initialize("127.0.0.1:1", 2, 0)


# ------------------------------------------- global arrays from pieces, in this one process


def grid_sharding(spec: tuple) -> NamedSharding:
  return NamedSharding(jaxon.make_mesh((2, 2), ("x", "y"), devices=jaxon.devices()[:4]),
                       PartitionSpec(*spec))


def blocks_of(x: jaxon.Array) -> np.ndarray:
  """The whole value, from the shards (each device's block at its index)."""
  out = np.full(x.shape, np.nan, np.float64)
  for shard in x.addressable_shards:
    out[shard.index] = np.asarray(shard.data)
  return out


FULL = np.arange(32.0, dtype=np.float32).reshape(4, 8)


@pytest.mark.parametrize("spec", [("x", "y"), ("x",), (None, ("x", "y")), ()])
def test_make_array_from_callback_single_device_arrays_and_local_data(spec):
  sharding = grid_sharding(spec)
  asked = []
  a = jaxon.make_array_from_callback(FULL.shape, sharding,
                                     lambda index: asked.append(index) or FULL[index])
  assert len(asked) == 4 and a.sharding == sharding and a.dtype == np.float32
  np.testing.assert_array_equal(blocks_of(a), FULL)
  shards = [s.data for s in a.addressable_shards][::-1]  # any order
  b = jaxon.make_array_from_single_device_arrays(FULL.shape, sharding, shards)
  np.testing.assert_array_equal(blocks_of(b), FULL)
  c = jaxon.make_array_from_process_local_data(sharding, FULL)  # one process: the whole
  assert c.sharding == sharding
  np.testing.assert_array_equal(blocks_of(c), FULL)
  np.testing.assert_array_equal(jaxon.jit(lambda v: v * 2)(c), FULL * 2)


def test_make_array_from_process_local_data_canonicalizes_and_maps_pytrees():
  sharding = grid_sharding(("x",))
  out = jaxon.make_array_from_process_local_data(
      sharding, {"f": FULL.astype(np.float64), "i": np.arange(4)})
  assert out["f"].dtype == np.float32 and out["i"].dtype == np.int32
  np.testing.assert_array_equal(blocks_of(out["i"]), np.arange(4))


def test_make_array_errors_name_the_block():
  sharding = grid_sharding(("x", "y"))
  with pytest.raises(ValueError, match=r"has shape \(4, 8\), but .* block of shape \(2, 4\)"):
    jaxon.make_array_from_callback(FULL.shape, sharding, lambda index: FULL)
  shards = [s.data for s in jaxon.make_array_from_callback(
      FULL.shape, sharding, lambda index: FULL[index]).addressable_shards]
  with pytest.raises(ValueError, match="expected one array on each addressable device"):
    jaxon.make_array_from_single_device_arrays(FULL.shape, sharding, shards[:3])
  with pytest.raises(ValueError, match=r"global_shape \(8, 8\) does not fit local data"):
    jaxon.make_array_from_process_local_data(sharding, FULL, (8, 8))
  with pytest.raises(TypeError, match="must be a NamedSharding or SingleDeviceSharding"):
    jaxon.make_array_from_callback(FULL.shape, PartitionSpec("x"), lambda index: FULL)


def test_host_local_arrays_become_one_global_array_and_back(reports):
  for pid, report in enumerate(reports):
    assert report["host_local_global"] == {
        "global_shape": [8], "sum": 52.0, "back": (np.arange(4.0) + 10 * pid).tolist()}
