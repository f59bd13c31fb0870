"""Profiling (`jax.profiler`) through jaxlib's profiler, the one JAX uses: traces written
for TensorBoard's profile plugin (an `.xplane.pb` under `log_dir/plugins/profile/<run>/`),
named spans that show in them, a profiler server a TensorBoard can attach to, and the
device memory profile in pprof format.

Like `tree_util`, this touches jaxlib directly: the profiler is a process-wide service of
jaxlib's, apart from the compile-and-run runtime in `xla/`.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from jaxlib import _profile_data, _profiler

from jaxon._src.xla import client

ProfileData = _profile_data.ProfileData
ProfileEvent = _profile_data.ProfileEvent
ProfilePlane = _profile_data.ProfilePlane
ProfileOptions = _profiler.ProfileOptions


class TraceAnnotation(_profiler.TraceMe):
  """A named span in the trace (a context manager): the time spent inside the `with`
  block shows under `name` in TensorBoard, with the keyword arguments as its metadata.
  Costs next to nothing while no trace is being taken."""


class StepTraceAnnotation(TraceAnnotation):
  """A span that marks one training step: TensorBoard's overview groups the trace by the
  `step_num` keyword argument (which must be given)."""

  def __init__(self, name: str, **kwargs: Any):
    if "step_num" not in kwargs:
      raise TypeError("StepTraceAnnotation needs the step number: "
                      f"StepTraceAnnotation({name!r}, step_num=...)")
    super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable, name: str | None = None,
                      **decorator_kwargs: Any) -> Callable:
  """`func` with every call traced as a span named `name` (its qualified name by
  default); usable as `@annotate_function` or `functools.partial(annotate_function,
  name=...)`."""
  name = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def annotated(*args: Any, **kwargs: Any) -> Any:
    with TraceAnnotation(name, **decorator_kwargs):
      return func(*args, **kwargs)
  return annotated


class _TraceState:
  """The one trace a process may take at a time, and the one profiler server."""

  def __init__(self) -> None:
    self.lock = threading.Lock()
    self.session: Any = None
    self.log_dir: str | None = None
    self.server: Any = None


_state = _TraceState()


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
  """Starts taking a trace of this process (Python, runtime and XLA activity); `stop_trace`
  writes it under `log_dir` for TensorBoard.

  Raises:
    RuntimeError: a trace is already being taken (only one at a time, as in JAX).
    NotImplementedError: a Perfetto link or trace file was asked for.
  """
  if create_perfetto_link or create_perfetto_trace:
    raise NotImplementedError("jaxon's start_trace writes TensorBoard traces only; "
                              "create_perfetto_link and create_perfetto_trace are not "
                              "implemented.")
  with _state.lock:
    if _state.session is not None:
      raise RuntimeError("Profile has already been started. Only one profile may be run "
                         "at a time.")
    client.backend()  # the runtime must exist for its activity to be traced
    options = profiler_options if profiler_options is not None else ProfileOptions()
    _state.session = _profiler.ProfilerSession(options)
    _state.log_dir = os.fspath(log_dir)


def stop_trace() -> None:
  """Stops the trace `start_trace` began and writes it to its `log_dir`.

  Raises:
    RuntimeError: no trace is being taken.
  """
  with _state.lock:
    if _state.session is None:
      raise RuntimeError("No profile started")
    session, log_dir = _state.session, _state.log_dir
    _state.session = _state.log_dir = None
    session.export(session.stop(), log_dir)


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None) -> Iterator[None]:
  """`start_trace` for the `with` block, `stop_trace` after it (also when it raises)."""
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


def start_server(port: int, requires_backend: bool = True) -> Any:
  """Starts the profiler server on `port`, so TensorBoard can take traces on demand.

  Raises:
    ValueError: a server is already running in this process.
  """
  if _state.server is not None:
    raise ValueError("Only one profiler server can be active at a time.")
  if requires_backend:
    client.backend()
  _state.server = _profiler.start_server(port)
  return _state.server


def stop_server() -> None:
  """Stops the server `start_server` started.

  Raises:
    ValueError: none is running.
  """
  if _state.server is None:
    raise ValueError("No active profiler server.")
  _state.server = None  # jaxlib stops it when the last reference goes


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
  """Includes the profiler server of process `pid` (listening on `port`) in this
  process's traces; returns the function that stops doing so."""
  return _profiler.register_subprocess(pid, port)


def device_memory_profile(backend: str | None = None) -> bytes:
  """A snapshot of what the device memory holds, by allocation site, as a profile in
  pprof's protobuf format (`pprof --web` shows it)."""
  if backend not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend: {backend!r}; jaxon has the CPU backend only.")
  return client.backend().heap_profile()


def save_device_memory_profile(filename: os.PathLike | str, backend: str | None = None
                               ) -> None:
  """Writes `device_memory_profile(backend)` to `filename`."""
  profile = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(profile)
