"""One process of a multi-process job, launched by `tests/test_multiprocess.py`.

Usage: `python -m tests.multiprocess.worker COORDINATOR NUM_PROCESSES PROCESS_ID MODE`.
Mode `checks` runs every check in sequence inside the one job (starting processes is the
slow part) and prints one line `RESULT {json}` for the launcher to compare; mode `crash`
joins the job, says `READY`, and runs collectives until a peer dies, which must end this
process with an error, not hang it.
"""
from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client

import jaxon
import jaxon.numpy as jnp
from jaxon._src.xla import client
from jaxon.experimental import multihost_utils as mhu
from jaxon.sharding import Mesh, NamedSharding
from jaxon.sharding import PartitionSpec as P

TRAIN_STEPS = 3


def describe(tree: Any) -> Any:
  """Each leaf as [type, dtype, shape, values]: what the launcher compares with JAX's."""
  return jaxon.tree_util.tree_map(
      lambda a: [type(a).__name__, np.asarray(a).dtype.name, list(np.shape(a)),
                 np.asarray(a).tolist()], tree)


def raw_all_reduce() -> list[float]:
  """psum over every device of the job, compiled straight through jaxlib: the runtime's
  wiring (distributed client and gloo in the backend) without jaxon's pmap or jit."""
  backend = client.backend()
  devices = backend.devices()
  n = len(devices)
  module = f"""
  module @psum attributes {{mhlo.num_replicas = {n} : i32, mhlo.num_partitions = 1 : i32}} {{
    func.func public @main(%x: tensor<1xf32>) -> tensor<1xf32> {{
      %r = "stablehlo.all_reduce"(%x) <{{replica_groups = dense<[{list(range(n))}]>
          : tensor<1x{n}xi64>}}> ({{
        ^bb0(%a: tensor<f32>, %b: tensor<f32>):
          %s = stablehlo.add %a, %b : tensor<f32>
          stablehlo.return %s : tensor<f32>
      }}) : (tensor<1xf32>) -> tensor<1xf32>
      return %r : tensor<1xf32>
    }}
  }}"""
  options = xla_client.CompileOptions()
  options.num_replicas, options.num_partitions = n, 1
  options.device_assignment = xla_client.DeviceAssignment.create(
      np.array([[d.id] for d in devices], np.int32))
  exe = backend.compile_and_load(module, xla_client.DeviceList(tuple(devices)), options)
  local = exe.local_devices()

  class Aval:
    shape, dtype, weak_type = (n,), np.dtype(np.float32), False

  sharding = _jax.GSPMDSharding(xla_client.DeviceList(tuple(devices)),
                                xla_client.HloSharding.iota_tile([n]))
  pieces = [np.array([float(d.id)], np.float32) for d in local]
  x = _jax.batched_device_put(Aval(), sharding, pieces, local, True, False,
                              enable_x64=False)
  outs = exe.execute_sharded([x]).disassemble_into_single_device_arrays()[0]
  return [float(np.asarray(o)[0]) for o in outs]


def multihost_checks(pid: int) -> dict:
  """The same calls as the JAX 0.10.2 run whose printout the launcher holds."""
  out = {
      "ag_f64": mhu.process_allgather(np.arange(3.0) + pid),
      "ag_f64_tiled": mhu.process_allgather(np.arange(3.0) + pid, tiled=True),
      "ag_scalar": mhu.process_allgather(pid),
      "ag_scalar_tiled": mhu.process_allgather(pid, tiled=True),
      "ag_jnp": mhu.process_allgather(jnp.arange(2) * (pid + 1)),
      "ag_tree": mhu.process_allgather({"a": np.float32(pid),
                                        "b": [np.ones((2, 2), np.int8) * pid]}),
      "bc": mhu.broadcast_one_to_all(np.arange(3.0) + pid),
      "bc_int": mhu.broadcast_one_to_all(pid + 5),
      "bc_src1": mhu.broadcast_one_to_all(np.arange(2, dtype=np.int32) + pid,
                                          is_source=pid == 1),
      "bc_bool": mhu.broadcast_one_to_all(np.array([pid == 0, True])),
      "ag_bf16": mhu.process_allgather(jnp.full((2,), pid + 0.5, jnp.bfloat16)),
  }
  result = describe(out)
  mhu.sync_global_devices("same name")
  try:
    mhu.sync_global_devices(f"name{pid}")
  except AssertionError as e:
    result["sync_mismatch"] = str(e)
  return result


def global_array_checks(pid: int) -> dict:
  """A global array from each process's rows, as JAX 0.10.2 printed it."""
  mesh = Mesh(np.array(jaxon.devices()), ("x",))
  g = jaxon.make_array_from_process_local_data(
      NamedSharding(mesh, P("x")), np.arange(4.0, dtype=np.float32).reshape(2, 2) + 10 * pid)
  out = {"global_shape": list(g.shape), "global_fully_addressable": g.is_fully_addressable,
         "global_shards": [[s.device.id, [sl.indices(n)[:2] for sl, n in zip(s.index, g.shape)],
                            np.asarray(s.data).tolist()] for s in g.addressable_shards],
         "global_gathered": describe(mhu.process_allgather(g, tiled=True))}
  for name, read in [("global_asarray", np.asarray), ("global_untiled", mhu.process_allgather)]:
    try:
      read(g)
    except (RuntimeError, ValueError) as e:
      out[name] = [type(e).__name__, str(e)]
  return {**out, **host_value_checks(pid)}


def host_value_checks(pid: int) -> dict:
  """`np.asarray` of global arrays as JAX 0.10.2 answers it: split over one device of each
  process (one block here) it raises; replicated across the processes, or split only
  over each process's own devices, every process holds the whole value and gets it."""
  one_each = Mesh(np.array(jaxon.devices()[::2]), ("x",))
  grid = Mesh(np.array(jaxon.devices()).reshape(2, 2), ("p", "d"))
  cases = {"one_block_split": (one_each, P("x"), np.full((2, 2), pid, np.float32)),
           "one_block_replicated": (one_each, P(), np.arange(4.0, dtype=np.float32)),
           "split_within_each_process": (grid, P("d"), np.arange(4, dtype=np.int32))}
  out = {}
  for name, (mesh, spec, local) in cases.items():
    g = jaxon.make_array_from_process_local_data(NamedSharding(mesh, spec), local)
    try:
      out[name] = np.asarray(g).tolist()
    except RuntimeError as e:
      out[name] = type(e).__name__
  return out


def mlp_loss(params: dict, x: Any, y: Any) -> Any:
  hidden = jnp.tanh(x @ params["w1"] + params["b1"])
  return jnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


def sgd_step(params: dict, x: Any, y: Any) -> tuple[dict, Any]:
  loss, grads = jaxon.value_and_grad(mlp_loss)(params, x, y)
  return jaxon.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


def training_data() -> tuple[dict, np.ndarray, np.ndarray]:
  """The same params and global batch of 8 rows in every process (and in the launcher)."""
  rng = np.random.default_rng(0)
  params = {"w1": rng.normal(size=(3, 5)).astype(np.float32),
            "b1": np.zeros(5, np.float32),
            "w2": rng.normal(size=(5, 1)).astype(np.float32),
            "b2": np.zeros(1, np.float32)}
  x = rng.normal(size=(8, 3)).astype(np.float32)
  return params, x, np.sin(x.sum(1, keepdims=True)).astype(np.float32)


def train_sharded_jit(pid: int, steps: int) -> dict:
  """Data parallel over the 4 devices of the job: each process loads its 4 rows."""
  params, x, y = training_data()
  mesh = Mesh(np.array(jaxon.devices()), ("batch",))
  rows, replicated = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())
  params = jaxon.make_array_from_process_local_data(replicated, params)
  mine = slice(4 * pid, 4 * pid + 4)
  xs, ys = (jaxon.make_array_from_process_local_data(rows, v[mine]) for v in (x, y))
  step = jaxon.jit(sgd_step, in_shardings=(replicated, rows, rows),
                   out_shardings=(replicated, replicated))
  losses = []
  for _ in range(steps):
    params, loss = step(params, xs, ys)
    losses.append(float(np.asarray(loss.addressable_data(0))))
  return {"losses": losses, "params": {k: np.asarray(v.addressable_data(0)).tolist()
                                       for k, v in params.items()}}


def train_pmap(pid: int, steps: int) -> dict:
  """pmap over this process's 2 devices; pmean spans the job's 4 devices."""
  params, x, y = training_data()

  def step(params, x, y):
    loss, grads = jaxon.value_and_grad(mlp_loss)(params, x, y)
    grads = jaxon.lax.pmean(grads, "i")
    return (jaxon.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads),
            jaxon.lax.pmean(loss, "i"))

  pstep = jaxon.pmap(step, axis_name="i")
  stacked = jaxon.tree_util.tree_map(lambda p: np.stack([p, p]), params)
  xs, ys = (v[4 * pid:4 * pid + 4].reshape(2, 2, -1) for v in (x, y))
  losses = []
  for _ in range(steps):
    stacked, loss = pstep(stacked, xs, ys)
    losses.append(float(np.asarray(loss)[0]))
  return {"losses": losses, "params": {k: np.asarray(v)[0].tolist()
                                       for k, v in stacked.items()}}


def attempt(check: Any, *args: Any) -> Any:
  """A check's report, or the error it raised (so that one missing piece does not hide
  the others' results)."""
  try:
    return check(*args)
  except Exception as e:  # noqa: BLE001 (reported to the launcher, which fails the test)
    return {"error": f"{type(e).__name__}: {e}"}


def run_checks(pid: int) -> dict:
  backend = client.backend()
  return {
      "process_index": backend.process_index(),
      "device_ids": [d.id for d in backend.devices()],
      "local_device_ids": [d.id for d in backend.local_devices()],
      "raw_all_reduce": raw_all_reduce(),
      **multihost_checks(pid),
      "global_array": attempt(global_array_checks, pid),
      "train_sharded_jit": attempt(train_sharded_jit, pid, TRAIN_STEPS),
      "train_pmap": attempt(train_pmap, pid, TRAIN_STEPS),
      "pmap_members": attempt(pmap_members),
      "host_local_global": attempt(host_local_global, pid),
  }


def host_local_global(pid: int) -> dict:
  """Each process's 4 values become its half of one global (8,) array split over the
  job's 4 devices, and back (JAX's documented example)."""
  from jaxon.experimental import multihost_utils
  from jaxon.sharding import PartitionSpec

  mesh = jaxon.make_mesh((4,), ("x",))
  local = np.arange(4.0) + 10 * pid
  glob = multihost_utils.host_local_array_to_global_array(local, mesh, PartitionSpec("x"))
  back = multihost_utils.global_array_to_host_local_array(glob, mesh, PartitionSpec("x"))
  return {"global_shape": list(glob.shape), "sum": float(jaxon.jit(jaxon.numpy.sum)(glob)),
          "back": np.asarray(back).tolist()}


def pmap_members() -> dict:
  """Which members of the job's pmap this process holds, and what gathering them gives."""
  out = jaxon.pmap(lambda x: (jaxon.lax.axis_index("i"), jaxon.lax.all_gather(x, "i")),
                   "i")(np.arange(2.0) + 10 * client.process_index())
  return {"index": np.asarray(out[0]).tolist(), "gathered": np.asarray(out[1]).tolist(),
          "local_shape": list(out[1].shape)}


def main(coordinator: str, num_processes: str, process_id: str, mode: str,
         heartbeat_timeout: str = "10") -> None:
  jaxon.distributed.initialize(coordinator, int(num_processes), int(process_id),
                               initialization_timeout=30,
                               heartbeat_timeout_seconds=int(heartbeat_timeout),
                               shutdown_timeout_seconds=20)
  if mode == "checks":
    try:
      jaxon.distributed.initialize(coordinator, int(num_processes), int(process_id))
    except RuntimeError as e:
      twice = str(e)
    result = {"initialized": jaxon.distributed.is_initialized(), "initialize_twice": twice,
              **run_checks(int(process_id))}
    print("RESULT " + json.dumps(result), flush=True)
  elif mode == "crash":
    raw_all_reduce()
    print("READY", flush=True)
    while True:
      raw_all_reduce()
  jaxon.distributed.shutdown()


if __name__ == "__main__":
  main(*sys.argv[1:])
