"""Where the time of tracing goes: cProfile of `jit(grad(mlp))` to its first result and of
`make_jaxpr(grad(loss))`, with XLA's compile time and the Python share printed apart.

    python tools/profile_tracing.py              # both workloads, top 25 by self time
    python tools/profile_tracing.py --top 40 --only make_jaxpr

Each workload runs once untimed (imports, first-use caches), then `--runs` times on a fresh
function (no cache can answer) under the profiler. The MLP and loss are the benchmark's
(`benchmarks/run.py`: 784-512-512-10, batch 128, softmax cross-entropy).
"""
from __future__ import annotations

import argparse
import cProfile
import logging
import pathlib
import pstats
import re
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import jaxon

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
import run as benchmarks  # noqa: E402  (the MLP and loss the benchmarks time)

# Functions inside which the time is XLA's (compiling), not Python's.
_XLA_COMPILE = ("compile_and_load",)


def _workloads() -> dict[str, Callable[[], Any]]:
  jaxon_framework = benchmarks.load_frameworks(with_jax=False)[0]
  params, x, y, loss = benchmarks._mlp_setup(jaxon_framework)

  def jit_grad() -> Any:
    def fresh(*args):  # a new function object each time: no cache can answer
      return loss(*args)
    return jaxon.block_until_ready(jaxon.jit(jaxon.grad(fresh))(params, x, y))

  def make_jaxpr() -> Any:
    def fresh(*args):
      return loss(*args)
    return jaxon.make_jaxpr(jaxon.grad(fresh))(params, x, y)
  return {"jit_grad": jit_grad, "make_jaxpr": make_jaxpr}


def _compile_seconds(stats: pstats.Stats) -> float:
  """Time spent inside XLA's compile calls (cumulative: their callees are XLA's too)."""
  return sum(cum for (_, _, name), (_, _, _, cum, _) in stats.stats.items()
             if name in _XLA_COMPILE or any(f"'{c}'" in name for c in _XLA_COMPILE))


class _Phases(logging.Handler):
  """Sums the durations jaxon logs at DEBUG ("Finished tracing … in 0.01 sec", "Finished
  jaxpr to MLIR module conversion …", "Finished XLA compilation …") by phase."""

  _EVENT = re.compile(r"Finished (tracing|jaxpr to MLIR|XLA compilation).* in ([0-9.e-]+) sec")

  def __init__(self) -> None:
    super().__init__(logging.DEBUG)
    self.seconds: dict[str, float] = {}

  def emit(self, record: logging.LogRecord) -> None:
    match = self._EVENT.match(record.getMessage())
    if match:
      phase = match.group(1)
      self.seconds[phase] = self.seconds.get(phase, 0.0) + float(match.group(2))


def _timed_by_phase(run: Callable[[], Any], runs: int) -> tuple[list[float], dict[str, float]]:
  """Wall times of `runs` unprofiled runs, and the logged phases' seconds a run."""
  phases, log = _Phases(), logging.getLogger("jaxon")
  level = log.level
  log.addHandler(phases)
  log.setLevel(logging.DEBUG)
  try:
    wall = []
    for _ in range(runs):
      start = time.perf_counter()
      run()
      wall.append(time.perf_counter() - start)
  finally:
    log.removeHandler(phases)
    log.setLevel(level)
  return wall, {k: v / runs for k, v in phases.seconds.items()}


def profile(name: str, run: Callable[[], Any], runs: int, top: int) -> None:
  run()  # imports and first-use caches are not what this measures
  wall = []
  profiler = cProfile.Profile()
  for _ in range(runs):
    start = time.perf_counter()
    profiler.enable()
    run()
    profiler.disable()
    wall.append(time.perf_counter() - start)
  stats = pstats.Stats(profiler)
  total = stats.total_tt / runs
  compile_s = _compile_seconds(stats) / runs
  print(f"\n=== {name}: {runs} runs; under the profiler {total * 1e3:.1f} ms a run, of which "
        f"XLA compile {compile_s * 1e3:.1f} ms, Python {(total - compile_s) * 1e3:.1f} ms "
        f"({(total - compile_s) / total:.0%}); wall with profiling {np.median(wall) * 1e3:.1f} ms")
  unprofiled, phases = _timed_by_phase(run, runs)
  compiling = phases.get("XLA compilation", 0.0)
  print(f"    without the profiler: median {np.median(unprofiled) * 1e3:.1f} ms "
        f"(min {min(unprofiled) * 1e3:.1f}); by phase (mean ms): "
        + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in phases.items())
        + f"; the rest (Python) {(np.mean(unprofiled) - compiling) * 1e3:.1f}")
  stats.sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--only", choices=["jit_grad", "make_jaxpr"], action="append")
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--top", type=int, default=25)
  args = parser.parse_args(argv)
  for name, run in _workloads().items():
    if not args.only or name in args.only:
      profile(name, run, args.runs, args.top)
  return 0


if __name__ == "__main__":
  sys.exit(main())
