"""Several processes computing as one: jaxlib's distributed runtime and gloo collectives.

Process 0 runs the coordination *service*; every process (0 included) connects a *client*
to it. The client is what the CPU backend needs to see the other processes' devices
(device ids of process k start at k * 2048) and what gloo uses to find its peers for the
collectives of a program that spans processes. The service also health-checks: when a
process stops sending heartbeats for `heartbeat_timeout_seconds`, it aborts the others,
so a job whose process died stops instead of waiting forever in a collective.

The state is global because the backend is: `initialize` must run before the backend
starts (the backend captures the client once), and every program compiled afterwards
sees all processes' devices. This module sits below the runtime (`xla/client.py` reads
`backend_options()` when it makes the backend), so it imports nothing of jaxon's above
the config.
"""
from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Sequence

from jaxlib import _jax

logger = logging.getLogger(__name__)


class State:
  """This process's place in the job: its id, the number of processes, and the
  service (process 0 only) and client of the distributed runtime."""

  def __init__(self) -> None:
    self.process_id = 0
    self.num_processes = 1
    self.coordinator_address: str | None = None
    self.service: _jax.DistributedRuntimeService | None = None
    self.client: _jax.DistributedRuntimeClient | None = None
    self.backend_started = False

  def connect(self, coordinator_address: str, num_processes: int, process_id: int, *,
              bind_address: str, initialization_timeout: int, heartbeat_timeout: int,
              shutdown_timeout: int) -> None:
    if self.client is not None or self.service is not None:
      raise RuntimeError("distributed.initialize should only be called once.")
    if process_id == 0:
      logger.info("Starting the jaxon distributed service on %s", bind_address)
      self.service = _jax.get_distributed_runtime_service(
          bind_address, num_processes, heartbeat_timeout=heartbeat_timeout,
          shutdown_timeout=shutdown_timeout)
    client = _jax.get_distributed_runtime_client(
        coordinator_address, process_id, init_timeout=initialization_timeout,
        heartbeat_timeout=heartbeat_timeout, shutdown_timeout=shutdown_timeout,
        use_compression=True)
    logger.info("Connecting to the jaxon distributed service on %s", coordinator_address)
    try:
      client.connect()
    except BaseException:
      self.shutdown()  # the service of process 0 must not outlive a failed start
      raise
    self.client = client
    self.coordinator_address = coordinator_address
    self.process_id = process_id
    self.num_processes = num_processes

  def shutdown(self) -> None:
    # The client first: the service waits (up to its shutdown timeout) for every client.
    if self.client is not None:
      self.client.shutdown()
      self.client = None
    if self.service is not None:
      self.service.shutdown()
      self.service = None


global_state = State()


def initialize(coordinator_address: str | None = None,
               num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None,
               initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None,
               slice_index: int | None = None,
               partition_index: int | None = None) -> None:
  """Joins this process to a job of `num_processes` processes, before any computation.

  Every process calls it with the same `coordinator_address` (host:port of process 0,
  which starts the coordination service there) and its own `process_id` in
  `0 .. num_processes-1`. Afterwards `jaxon.devices()` lists every process's devices,
  `jaxon.local_devices()` this process's, and a program over devices of several
  processes runs its collectives over TCP (gloo). Missing arguments are read from
  `JAX_COORDINATOR_ADDRESS`, `JAX_LOCAL_DEVICE_IDS` and `JAX_COORDINATOR_BIND_ADDRESS`,
  as JAX reads them; jaxon detects no cluster managers (Slurm, MPI, TPU pods).

  Args:
    coordinator_address: "host:port" of process 0, reachable from every process.
    num_processes: how many processes the job has.
    process_id: this process's index.
    local_device_ids: the devices this process may use. On the CPU every process uses
      its own CPU devices (`jax_num_cpu_devices` of them), so this is accepted and unused.
    cluster_detection_method: "deactivate", or a cluster manager jaxon cannot detect
      (logged, as JAX logs one it cannot find).
    initialization_timeout: seconds to wait for every process to connect.
    heartbeat_timeout_seconds: a process silent this long counts as dead; the service
      then aborts the others.
    shutdown_timeout_seconds: how long `shutdown` waits for the other processes.
    coordinator_bind_address: where process 0's service listens (default: every
      interface, on the port of `coordinator_address`).
    slice_index, partition_index: accepted for JAX's signature; unused on the CPU.

  Raises:
    RuntimeError: if called twice, or after the backend started (any computation or
      device query starts it), since the backend would not see the other processes.
    ValueError, TypeError: on missing or malformed arguments.
  """
  del local_device_ids, slice_index, partition_index  # the CPU has no device masks
  if global_state.backend_started:
    raise RuntimeError("jax.distributed.initialize() must be called before any JAX calls "
                       "that might initialise the XLA backend. This includes any "
                       "computation, but also calls to jax.devices, jax.device_put, and "
                       "others.")
  if cluster_detection_method not in (None, "deactivate"):
    logger.error("Automatic Distributed initialization can not proceed: %s is not "
                 "supported.", cluster_detection_method)
  coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
  _check_process_arguments(coordinator_address, num_processes, process_id)
  assert coordinator_address is not None and num_processes is not None
  assert process_id is not None
  bind_address = (coordinator_bind_address
                  or os.environ.get("JAX_COORDINATOR_BIND_ADDRESS")
                  or "[::]:" + coordinator_address.rsplit(":", 1)[1])
  global_state.connect(coordinator_address, num_processes, process_id,
                       bind_address=bind_address,
                       initialization_timeout=initialization_timeout,
                       heartbeat_timeout=heartbeat_timeout_seconds,
                       shutdown_timeout=shutdown_timeout_seconds)
  # Leaving without telling the service reads to it as a crash, and it would abort the
  # other processes: shut down at exit, as JAX does.
  atexit.register(shutdown)


def _check_process_arguments(coordinator_address: str | None, num_processes: object,
                             process_id: object) -> None:
  if coordinator_address is None:
    raise ValueError("coordinator_address should be defined.")
  if num_processes is None:
    raise ValueError("Number of processes must be defined.")
  if process_id is None:
    raise ValueError("The process id of the current process must be defined.")
  if not isinstance(process_id, int):
    raise TypeError("process_id must be a nonnegative int. "
                    f"Got process_id={process_id} of type {type(process_id)}.")
  if not isinstance(num_processes, int):
    raise TypeError("num_processes must be a positive int. "
                    f"Got num_processes={num_processes} of type {type(num_processes)}.")
  if not 0 <= process_id < num_processes:
    raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                     f"num_processes. Got process_id={process_id}, "
                     f"num_processes={num_processes}.")


def is_initialized() -> bool:
  """Whether `initialize` has connected this process to a job."""
  return global_state.client is not None


def shutdown() -> None:
  """Leaves the job (waiting for the other processes, up to the shutdown timeout).
  Does nothing when not initialized."""
  global_state.shutdown()


def backend_options() -> dict:
  """The keyword arguments of `make_cpu_client` that join the backend to the job (none
  outside one). Called by the runtime as it makes the backend, which is why it also
  records that the backend started: `initialize` after that point would be ignored by
  the backend, so it raises instead."""
  global_state.backend_started = True
  client = global_state.client
  if client is None:
    return {}
  return dict(distributed_client=client, node_id=global_state.process_id,
              num_nodes=global_state.num_processes,
              collectives=_jax.make_gloo_tcp_collectives(distributed_client=client))
