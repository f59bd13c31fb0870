"""Times jaxon, and JAX when it is importable, on the same workloads in one process.

Repetitions of the two frameworks alternate (jaxon, JAX, JAX, jaxon, …) so that drift in the
machine's speed affects both alike; each workload reports the median time per unit of work
and the ratio jaxon/JAX (below 1 means jaxon is faster).

    python benchmarks/run.py                     # every workload
    python benchmarks/run.py --only eager_ops --repeat 50
    python benchmarks/run.py --list
    python benchmarks/run.py --only jit_scalar_add --json results.jsonl

JAX is optional (`pip install -e '.[bench]'`, in a separate virtual environment: the test
environment must not have `jax` installed). A workload is a function registered with
`@workload`: given a `Framework`, it prepares its inputs and returns a `run()` that performs
one repetition and returns its result (compared across frameworks once, as a sanity check).
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import itertools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Framework:
  """The handful of entry points a workload may use, from jaxon or from JAX."""
  name: str
  jit: Callable
  jnp: ModuleType
  device_put: Callable
  block_until_ready: Callable
  tree_leaves: Callable
  grad: Callable
  vmap: Callable
  hessian: Callable
  lax: ModuleType
  make_jaxpr: Callable
  random: ModuleType
  nn: ModuleType


class Unsupported(Exception):
  """Raised by a workload's setup when the framework lacks something it needs."""


@dataclasses.dataclass(frozen=True)
class Workload:
  name: str
  description: str
  unit: str  # what one measured time is the cost of
  units_per_run: int  # how many of those one run() performs
  repeat: int  # default number of timed repetitions per framework
  setup: Callable[[Framework], Callable[[], Any]]
  warmup: int  # untimed repetitions first (unless --warmup says otherwise)


WORKLOADS: dict[str, Workload] = {}


def workload(name: str, unit: str, units_per_run: int = 1, repeat: int = 30, warmup: int = 2
             ) -> Callable[[Callable], Callable]:
  """Registers `setup(framework) -> run` under `name`; its docstring's first line is the
  description printed with the results."""
  def register(setup: Callable[[Framework], Callable[[], Any]]) -> Callable:
    description = " ".join((setup.__doc__ or name).split("\n\n")[0].split())
    WORKLOADS[name] = Workload(name, description, unit, units_per_run, repeat, setup,
                               warmup)
    return setup
  return register


def require(fw: Framework, *names: str) -> None:
  missing = [n for n in names if not hasattr(fw.jnp, n)]
  if missing:
    raise Unsupported(f"{fw.name}.numpy lacks {', '.join(missing)}")


# ----------------------------------------------------------------------------- workloads

CALLS = 200
EAGER_STEPS = 100  # each step is two ops


@workload("jit_scalar_add", unit="call", units_per_run=CALLS)
def jit_scalar_add(fw: Framework) -> Callable[[], Any]:
  """jit(lambda x: x + 1.0) on a scalar Array: the fixed cost of calling a jitted function."""
  f = fw.jit(lambda x: x + 1.0)
  x = fw.device_put(np.float32(1.0))

  def run() -> Any:
    for _ in range(CALLS):
      out = f(x)
    return fw.block_until_ready(out)
  return run


@workload("jit_scalar_add_blocking", unit="call", units_per_run=CALLS)
def jit_scalar_add_blocking(fw: Framework) -> Callable[[], Any]:
  """jit(lambda x: x + 1.0) on a scalar Array, waiting for each result: a call's whole
  round trip, dispatch and execution."""
  f = fw.jit(lambda x: x + 1.0)
  x = fw.device_put(np.float32(1.0))

  def run() -> Any:
    for _ in range(CALLS):
      out = fw.block_until_ready(f(x))
    return out
  return run


@workload("jit_dict_10", unit="call", units_per_run=CALLS)
def jit_dict_10(fw: Framework) -> Callable[[], Any]:
  """jit of {k: v + 1.0} on a dict of 10 small arrays: pytree flattening on every call."""
  f = fw.jit(lambda d: {k: v + 1.0 for k, v in d.items()})
  d = {f"p{i}": fw.device_put(np.full((4,), i, np.float32)) for i in range(10)}

  def run() -> Any:
    for _ in range(CALLS):
      out = f(d)
    return fw.block_until_ready(out)
  return run


@workload("eager_ops", unit="op", units_per_run=2 * EAGER_STEPS, warmup=20)
def eager_ops(fw: Framework) -> Callable[[], Any]:
  """200 eager elementwise ops (sin, then * 1.0001) on a float32[16]: op-by-op dispatch.

  Timed once the loop has repeated (20 untimed runs): jaxon compiles a repeated batch of
  eager operations into one program after about 2000 of them (`xla/deferred.py`).
  """
  require(fw, "sin")
  x0 = fw.device_put(np.linspace(0.0, 1.0, 16, dtype=np.float32))

  def run() -> Any:
    x = x0
    for _ in range(EAGER_STEPS):
      x = fw.jnp.sin(x)
      x = x * 1.0001
    return fw.block_until_ready(x)
  return run


@workload("eager_ops_unrepeated", unit="op", units_per_run=2 * EAGER_STEPS)
def eager_ops_unrepeated(fw: Framework) -> Callable[[], Any]:
  """200 eager elementwise ops in an order that changes on every run (sin, cos, exp, tanh,
  then * 1.0001): eager code that never repeats, which jaxon runs op by op."""
  require(fw, "sin", "cos", "exp", "tanh")
  x0 = fw.device_put(np.linspace(0.0, 1.0, 16, dtype=np.float32))
  ops = [fw.jnp.sin, fw.jnp.cos, fw.jnp.exp, fw.jnp.tanh]
  rng = np.random.default_rng(0)

  def run() -> Any:
    x = x0
    for i in rng.integers(0, len(ops), EAGER_STEPS):
      x = ops[i](x)
      x = x * 1.0001
    return fw.block_until_ready(x)
  return run


EAGER_CALLS = 10


@workload("eager_library_calls", unit="call", units_per_run=7 * EAGER_CALLS, warmup=5)
def eager_library_calls(fw: Framework) -> Callable[[], Any]:
  """Eager `jnp`/`nn` functions of several primitives on a float32[8, 8] (mean, var, std,
  argmax, linalg.norm, nn.softmax, nn.logsumexp), each result waited for: JAX runs each as
  one jitted program; jaxon replays its primitives as one compiled program
  (`xla/eager_plans.py`)."""
  x = fw.device_put(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32))
  jnp, nn = fw.jnp, fw.nn
  calls = [jnp.mean, jnp.var, jnp.std, jnp.argmax, jnp.linalg.norm,
           lambda a: nn.softmax(a, axis=-1), nn.logsumexp]

  def run() -> Any:
    results = []
    for _ in range(EAGER_CALLS):
      results = [fw.block_until_ready(call(x)) for call in calls]
    return results
  return run


SPLITS = 100


@workload("random_split_unpack", unit="split", units_per_run=SPLITS)
def random_split_unpack(fw: Framework) -> Callable[[], Any]:
  """Eager `key, sub = random.split(key)`, 100 times in a chain: the usual way a program
  draws keys (one threefry program and an unpacking of its result per split)."""
  key0 = fw.random.PRNGKey(0)

  def run() -> Any:
    key = key0
    for _ in range(SPLITS):
      key, _ = fw.random.split(key)
    return fw.block_until_ready(key)
  return run


MLP_SIZES = (784, 512, 512, 10)
MLP_BATCH = 128


_compile_runs = itertools.count(1)


def _fresh_scale() -> float:
  """A factor near 1 that differs on every call. The compile workloads scale their result by
  it, so each run's program differs from the last: jaxon does not compile a program its
  process has compiled before, and these rows time compilation."""
  return 1.0 + next(_compile_runs) * 2.0**-20


@workload("mlp_compile", unit="trace+compile", repeat=7)
def mlp_compile(fw: Framework) -> Callable[[], Any]:
  """3-layer MLP forward (784-512-512-10, batch 128, dot + tanh): jit of a fresh function to
  its first result."""
  require(fw, "dot", "tanh")
  rng = np.random.default_rng(0)
  params = [(fw.device_put(rng.normal(0, 0.05, (m, n)).astype(np.float32)),
             fw.device_put(np.zeros(n, np.float32)))
            for m, n in zip(MLP_SIZES[:-1], MLP_SIZES[1:])]
  x = fw.device_put(rng.normal(size=(MLP_BATCH, MLP_SIZES[0])).astype(np.float32))

  def run() -> Any:
    scale = _fresh_scale()

    def forward(params, x):  # a new function and program each time: no cache can answer
      for w, b in params:
        x = fw.jnp.tanh(fw.jnp.dot(x, w) + b)
      return x * scale
    return fw.block_until_ready(fw.jit(forward)(params, x))
  return run


# ----------------------------------------------------------------------------- training


def _mlp_setup(fw: Framework) -> tuple[list, Any, Any, Callable]:
  """MLP parameters, a batch of inputs and one-hot targets, and the softmax cross-entropy."""
  require(fw, "dot", "tanh", "max", "log", "sum", "exp", "mean")
  rng = np.random.default_rng(0)
  params = [(fw.device_put(rng.normal(0, 0.05, (m, n)).astype(np.float32)),
             fw.device_put(np.zeros(n, np.float32)))
            for m, n in zip(MLP_SIZES[:-1], MLP_SIZES[1:])]
  x = fw.device_put(rng.normal(size=(MLP_BATCH, MLP_SIZES[0])).astype(np.float32))
  y = fw.device_put(np.eye(MLP_SIZES[-1], dtype=np.float32)[rng.integers(0, 10, MLP_BATCH)])
  jnp = fw.jnp

  def loss(params, x, y):
    for w, b in params[:-1]:
      x = jnp.tanh(jnp.dot(x, w) + b)
    w, b = params[-1]
    logits = jnp.dot(x, w) + b
    shifted = logits - jnp.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True))
    return -jnp.mean(jnp.sum(log_probs * y, axis=-1))
  return params, x, y, loss


def _sgd_step(fw: Framework, loss: Callable, average: Callable = lambda grads: grads
              ) -> Callable:
  """One SGD step; `average` combines the gradients of data-parallel members (pmean)."""
  def step(params, x, y):
    grads = average(fw.grad(loss)(params, x, y))
    return [(w - 0.01 * dw, b - 0.01 * db) for (w, b), (dw, db) in zip(params, grads)]
  return step


def _chained(step: Callable, state: Any, *args: Any, fw: Framework, n: int = 10
             ) -> Callable[[], Any]:
  """A run of `n` calls, each taking the state the previous returned, waiting at the end."""
  def run() -> Any:
    out = state
    for _ in range(n):
      out = step(out, *args)
    return fw.block_until_ready(out)
  return run


@workload("mlp_grad_compile", unit="trace+compile", repeat=7)
def mlp_grad_compile(fw: Framework) -> Callable[[], Any]:
  """jit(grad(loss)) of the MLP 784-512-512-10 (batch 128, softmax cross-entropy): a fresh
  function traced, differentiated and compiled to its first result."""
  return _mlp_grad_first_result(fw, fresh_program=True)


@workload("mlp_grad_rejit", unit="trace+compile", repeat=7)
def mlp_grad_rejit(fw: Framework) -> Callable[[], Any]:
  """mlp_grad_compile's jit(grad(loss)) made anew for the same program (a jitted closure
  rebuilt per call): JAX compiles it again; jaxon reuses the program it compiled."""
  return _mlp_grad_first_result(fw, fresh_program=False)


def _mlp_grad_first_result(fw: Framework, fresh_program: bool) -> Callable[[], Any]:
  params, x, y, loss = _mlp_setup(fw)

  def run() -> Any:
    scale = _fresh_scale() if fresh_program else 1.0

    def fresh_loss(*args):  # a new function object each time
      return loss(*args) * scale
    return fw.block_until_ready(fw.jit(fw.grad(fresh_loss))(params, x, y))
  return run


@workload("mlp_grad_make_jaxpr", unit="trace", repeat=15)
def mlp_grad_make_jaxpr(fw: Framework) -> Callable[[], Any]:
  """make_jaxpr(grad(loss)) of the MLP 784-512-512-10 for a fresh function: tracing and
  differentiation alone, no compilation."""
  params, x, y, loss = _mlp_setup(fw)

  def run() -> Any:
    def fresh_loss(*args):  # a new function object each time: no cache can answer
      return loss(*args)
    jaxpr = fw.make_jaxpr(fw.grad(fresh_loss))(params, x, y)
    return np.float32(len(jaxpr.jaxpr.eqns))
  return run


@workload("mlp_sgd_step", unit="step", units_per_run=10)
def mlp_sgd_step(fw: Framework) -> Callable[[], Any]:
  """Steady state of a jitted SGD step of the MLP 784-512-512-10 at batch 128."""
  params, x, y, loss = _mlp_setup(fw)
  return _chained(fw.jit(_sgd_step(fw, loss)), params, x, y, fw=fw)


@workload("per_example_grads", unit="batch", repeat=15)
def per_example_grads(fw: Framework) -> Callable[[], Any]:
  """jit(vmap(grad(loss), in_axes=(None, 0, 0))) of the MLP: 128 per-example gradients."""
  params, x, y, loss = _mlp_setup(fw)
  f = fw.jit(fw.vmap(fw.grad(loss), in_axes=(None, 0, 0)))
  return lambda: fw.block_until_ready(f(params, x, y))


@workload("jit_hessian", unit="call", units_per_run=CALLS)
def jit_hessian(fw: Framework) -> Callable[[], Any]:
  """jit(hessian(f)) of a small function (f(x) = sum(tanh(x) * x**2), x: float32[4])."""
  require(fw, "tanh", "sum")
  f = fw.jit(fw.hessian(lambda x: fw.jnp.sum(fw.jnp.tanh(x) * x ** 2)))
  x = fw.device_put(np.linspace(-1, 1, 4).astype(np.float32))

  def run() -> Any:
    for _ in range(CALLS - 1):
      f(x)
    return fw.block_until_ready(f(x))
  return run


GP_POINTS = 128


@workload("gp_nll_grad", unit="call", units_per_run=10)
def gp_nll_grad(fw: Framework) -> Callable[[], Any]:
  """jit(grad) of a Gaussian process's negative log marginal likelihood in its length scale
  and noise (128 points, RBF kernel): Cholesky and triangular solves, and their derivatives.
  """
  jnp, rng = fw.jnp, np.random.default_rng(0)
  x = np.sort(rng.uniform(-3, 3, GP_POINTS)).astype(np.float32)
  y = fw.device_put((np.sin(2 * x) + 0.1 * rng.normal(size=GP_POINTS)).astype(np.float32))
  sq_dist = fw.device_put(np.square(x[:, None] - x[None, :]))

  def nll(log_params):
    length, noise = jnp.exp(log_params[0]), jnp.exp(log_params[1])
    k = jnp.exp(-0.5 * sq_dist / length ** 2) + (noise + 1e-3) * jnp.eye(GP_POINTS)
    chol = jnp.linalg.cholesky(k)
    z = fw.lax.linalg.triangular_solve(chol, y[:, None], left_side=True, lower=True)
    return 0.5 * jnp.sum(z ** 2) + jnp.sum(jnp.log(jnp.diagonal(chol)))
  g = fw.jit(fw.grad(nll))
  log_params = fw.device_put(np.array([0.0, -2.0], np.float32))

  def run() -> Any:
    for _ in range(10):
      out = g(log_params)
    return fw.block_until_ready(out)
  return run


@workload("jit_library_calls", unit="call", units_per_run=10)
def jit_library_calls(fw: Framework) -> Callable[[], Any]:
  """A jitted function of library calls whose lowering decides their speed: top_k and
  interp of f32[4096], a bilinear resize of f32[8,16,16,8], solve and cholesky of
  f32[32,32] (each was 1.8 to 50 times JAX's time before it lowered as JAX's does)."""
  import importlib
  image, jnp, rng = importlib.import_module(f"{fw.name}.image"), fw.jnp, np.random.default_rng(0)
  values = fw.device_put(rng.normal(size=4096).astype(np.float32))
  img = fw.device_put(rng.normal(size=(8, 16, 16, 8)).astype(np.float32))
  m = rng.normal(size=(32, 32)).astype(np.float32)
  spd = fw.device_put(m @ m.T + 32 * np.eye(32, dtype=np.float32))
  rhs = fw.device_put(rng.normal(size=(32, 4)).astype(np.float32))

  @fw.jit
  def library_calls(values, img, a, b):
    points = jnp.linspace(-3.0, 3.0, 64)
    top, _ = fw.lax.top_k(values, 16)
    return (top.sum() + jnp.interp(values, points, jnp.sin(points)).sum()
            + image.resize(img, (8, 32, 32, 8), "bilinear").sum()
            + jnp.linalg.solve(a, b).sum() + jnp.linalg.cholesky(a).sum())

  def run() -> Any:
    for _ in range(10):
      out = library_calls(values, img, spd, rhs)
    return fw.block_until_ready(out)
  return run


# ----------------------------------------------------------------------------- control flow

RNN_H, RNN_T, RNN_B, RNN_D = 256, 100, 32, 64


@workload("scan_rnn_grad", unit="step", units_per_run=5, repeat=10)
def scan_rnn_grad(fw: Framework) -> Callable[[], Any]:
  """jit(grad) of a lax.scan tanh RNN, h = tanh(h @ Wh + x_t @ Wx + b) (H=256, T=100, B=32,
  D=64; loss = sum of the final h + mean of the ys): steady state of one gradient."""
  require(fw, "tanh", "dot", "sum", "mean")
  jnp, rng = fw.jnp, np.random.default_rng(0)
  params = {"wh": fw.device_put(rng.normal(0, 0.05, (RNN_H, RNN_H)).astype(np.float32)),
            "wx": fw.device_put(rng.normal(0, 0.1, (RNN_D, RNN_H)).astype(np.float32)),
            "b": fw.device_put(np.zeros(RNN_H, np.float32))}
  xs = fw.device_put(rng.normal(size=(RNN_T, RNN_B, RNN_D)).astype(np.float32))

  def loss(p, xs):
    def step(h, x):
      h = jnp.tanh(jnp.dot(h, p["wh"]) + jnp.dot(x, p["wx"]) + p["b"])
      return h, h
    h, ys = fw.lax.scan(step, jnp.zeros((RNN_B, RNN_H), jnp.float32), xs)
    return jnp.sum(h) + jnp.mean(ys)
  g = fw.jit(fw.grad(loss))

  def run() -> Any:
    for _ in range(5):
      out = g(params, xs)
    return fw.block_until_ready(out)
  return run


NEWTON_STEPS = 1000


@workload("while_newton", unit="call", units_per_run=20)
def while_newton(fw: Framework) -> Callable[[], Any]:
  """A jitted lax.while_loop of 1000 scalar Newton steps for sqrt(a): a loop whose body is
  tiny, so the per-trip cost of the loop itself dominates."""
  def sqrt(a):
    def body(c):
      x, i = c
      return 0.5 * (x + a / x), i + 1
    return fw.lax.while_loop(lambda c: c[1] < NEWTON_STEPS, body, (a, 0))[0]
  f = fw.jit(sqrt)
  a = fw.device_put(np.float32(2.0))

  def run() -> Any:
    for _ in range(20):
      out = f(a)
    return fw.block_until_ready(out)
  return run


LOOP_STEPS = 1000


def _loop_compile(fw: Framework, unrolled: bool) -> Callable[[], Any]:
  x = fw.device_put(np.linspace(0.0, 1.0, 8, dtype=np.float32))

  def run() -> Any:
    scale = _fresh_scale()

    def loop(x):  # a new function and program each time: no cache can answer
      step = lambda h, _: (fw.jnp.sin(h) * 0.9 + 0.1, None)  # noqa: E731
      if not unrolled:
        return fw.lax.scan(step, x, None, length=LOOP_STEPS)[0] * scale
      for _ in range(LOOP_STEPS):
        x, _ = step(x, None)
      return x * scale
    return fw.block_until_ready(fw.jit(loop)(x))
  return run


@workload("scan_1000_compile", unit="trace+compile", repeat=7)
def scan_1000_compile(fw: Framework) -> Callable[[], Any]:
  """jit of a fresh 1000-step lax.scan (h = sin(h) * 0.9 + 0.1 on float32[8]) to its first
  result: trace and compile time of a loop kept rolled."""
  require(fw, "sin")
  return _loop_compile(fw, unrolled=False)


@workload("unrolled_1000_compile", unit="trace+compile", repeat=5, warmup=1)
def unrolled_1000_compile(fw: Framework) -> Callable[[], Any]:
  """The same 1000 steps unrolled in Python under jit (3000 equations): trace and compile
  time to compare with scan_1000_compile."""
  require(fw, "sin")
  return _loop_compile(fw, unrolled=True)


# ----------------------------------------------------------------------------- ODE

NODE_DIM, NODE_HIDDEN = 8, 32


@workload("odeint_node_grad", unit="call", units_per_run=5, repeat=10)
def odeint_node_grad(fw: Framework) -> Callable[[], Any]:
  """jit(grad) of an odeint solve of a small neural ODE (vector field: MLP 8-32-8 with
  tanh; t in [0, 1], 5 outputs; rtol = atol = 1e-5): adaptive Dormand-Prince forward,
  adjoint ODE backward (custom_vjp), all inside while_loop/scan."""
  import importlib
  odeint = importlib.import_module(f"{fw.name}.experimental.ode").odeint
  jnp, rng = fw.jnp, np.random.default_rng(0)
  params = {"w1": fw.device_put(rng.normal(0, 0.3, (NODE_DIM, NODE_HIDDEN)).astype(np.float32)),
            "b1": fw.device_put(np.zeros(NODE_HIDDEN, np.float32)),
            "w2": fw.device_put(rng.normal(0, 0.3, (NODE_HIDDEN, NODE_DIM)).astype(np.float32))}
  y0 = fw.device_put(rng.normal(size=NODE_DIM).astype(np.float32))
  ts = fw.device_put(np.linspace(0.0, 1.0, 5, dtype=np.float32))

  def field(y, t, p):
    return jnp.dot(jnp.tanh(jnp.dot(y, p["w1"]) + p["b1"]), p["w2"])

  def loss(p, y0):
    return jnp.sum(odeint(field, y0, ts, p, rtol=1e-5, atol=1e-5) ** 2)
  g = fw.jit(fw.grad(loss, argnums=(0, 1)))

  def run() -> Any:
    for _ in range(5):
      out = g(params, y0)
    return fw.block_until_ready(out)
  return run


# ----------------------------------------------------------------------------- example libraries

CNN_BATCH, ADAM_STEPS = 32, 10


def _example_library(fw: Framework, name: str) -> ModuleType:
  import importlib
  return importlib.import_module(f"{fw.name}.example_libraries.{name}")


@workload("stax_cnn_adam_step", unit="step", units_per_run=ADAM_STEPS, repeat=15)
def stax_cnn_adam_step(fw: Framework) -> Callable[[], Any]:
  """Steady state of a jitted adam training step of a stax CNN (Conv 32 3x3 SAME, Relu,
  Conv 32 3x3 SAME, Relu, AvgPool 2x2, Flatten, Dense 10, LogSoftmax) on 8x8x1 images at
  batch 32, parameters from the library's own init."""
  import importlib
  stax, optimizers = _example_library(fw, "stax"), _example_library(fw, "optimizers")
  random, jnp = importlib.import_module(f"{fw.name}.random"), fw.jnp
  init, apply = stax.serial(
      stax.Conv(32, (3, 3), padding="SAME"), stax.Relu,
      stax.Conv(32, (3, 3), padding="SAME"), stax.Relu,
      stax.AvgPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(10), stax.LogSoftmax)
  _, params = init(random.PRNGKey(0), (-1, 8, 8, 1))
  rng = np.random.default_rng(0)
  x = fw.device_put(rng.normal(size=(CNN_BATCH, 8, 8, 1)).astype(np.float32))
  y = fw.device_put(np.eye(10, dtype=np.float32)[rng.integers(0, 10, CNN_BATCH)])
  opt_init, opt_update, get_params = optimizers.adam(1e-3)

  def loss(params, x, y):
    return -jnp.mean(jnp.sum(apply(params, x) * y, axis=-1))

  @fw.jit
  def step(i, opt_state, x, y):
    return opt_update(i, fw.grad(loss)(get_params(opt_state), x, y), opt_state)
  state0 = opt_init(params)

  def run() -> Any:
    state = state0
    for i in range(ADAM_STEPS):
      state = step(i, state, x, y)
    return fw.block_until_ready(get_params(state))
  return run


@workload("adam_update_1m", unit="update", units_per_run=ADAM_STEPS)
def adam_update_1m(fw: Framework) -> Callable[[], Any]:
  """A jitted optimizers.adam update of a 1M-parameter pytree (a dict of four 512x512
  matrices), gradients given: the optimizer's own cost, per call."""
  optimizers = _example_library(fw, "optimizers")
  rng = np.random.default_rng(0)
  params = {f"w{k}": fw.device_put(rng.normal(size=(512, 512)).astype(np.float32))
            for k in range(4)}
  grads = {k: fw.device_put(rng.normal(size=(512, 512)).astype(np.float32)) for k in params}
  opt_init, opt_update, get_params = optimizers.adam(1e-3)
  update = fw.jit(opt_update)
  state0 = opt_init(params)

  def run() -> Any:
    state = state0
    for i in range(ADAM_STEPS):
      state = update(i, grads, state)
    return fw.block_until_ready(get_params(state))
  return run


# ----------------------------------------------------------------------------- several devices
# Run with XLA_FLAGS=--xla_force_host_platform_device_count=2 (both frameworks read it).


def _pmap_of(fw: Framework) -> Callable:
  pmap = getattr(sys.modules[fw.name], "pmap", None)
  if pmap is None or len(sys.modules[fw.name].devices()) < 2:
    raise Unsupported("needs pmap and 2 devices (XLA_FLAGS="
                      "--xla_force_host_platform_device_count=2)")
  return pmap


@workload("pmap_mlp_step", unit="step", units_per_run=10)
def pmap_mlp_step(fw: Framework) -> Callable[[], Any]:
  """Data-parallel SGD step of the MLP 784-512-512-10 with pmap over 2 devices (batch 64
  each, gradients averaged with pmean), parameters kept replicated on the devices."""
  pmap = _pmap_of(fw)
  params, x, y, loss = _mlp_setup(fw)

  step = pmap(_sgd_step(fw, loss, lambda grads: fw.lax.pmean(grads, "batch")),
              axis_name="batch")
  replicated = [(fw.jnp.stack([w, w]), fw.jnp.stack([b, b])) for w, b in params]
  xs, ys = x.reshape(2, MLP_BATCH // 2, -1), y.reshape(2, MLP_BATCH // 2, -1)
  return _chained(step, replicated, xs, ys, fw=fw)


@workload("sharded_jit_mlp_step", unit="step", units_per_run=10)
def sharded_jit_mlp_step(fw: Framework) -> Callable[[], Any]:
  """The SGD step of pmap_mlp_step as a `jit` with shardings: the batch of 128 split over a
  2-device mesh, the parameters replicated; XLA's partitioner adds the gradient all-reduce."""
  import importlib
  _pmap_of(fw)  # needs 2 devices
  sharding = importlib.import_module(f"{fw.name}.sharding")
  params, x, y, loss = _mlp_setup(fw)
  mesh = sharding.Mesh(np.array(sys.modules[fw.name].devices()[:2]), ("batch",))
  rows = sharding.NamedSharding(mesh, sharding.PartitionSpec("batch"))
  replicated = sharding.NamedSharding(mesh, sharding.PartitionSpec())
  step = fw.jit(_sgd_step(fw, loss), in_shardings=(replicated, rows, rows),
                out_shardings=replicated)
  params = fw.device_put(params, replicated)
  return _chained(step, params, fw.device_put(x, rows), fw.device_put(y, rows), fw=fw)


@workload("pmap_psum_1mb", unit="call", units_per_run=10)
def pmap_psum_1mb(fw: Framework) -> Callable[[], Any]:
  """pmap(psum) of 1 MB per device (float32[262144]) over 2 devices, 10 chained calls."""
  pmap = _pmap_of(fw)
  f = pmap(lambda v: fw.lax.psum(v, "i") * 0.5, axis_name="i")
  return _chained(f, f(np.ones((2, 262144), np.float32)), fw=fw)


# ----------------------------------------------------------------------------- runner


def load_frameworks(with_jax: bool) -> list[Framework]:
  import jaxon
  import jaxon.lax
  import jaxon.nn
  import jaxon.numpy
  import jaxon.random
  frameworks = [Framework("jaxon", jaxon.jit, jaxon.numpy, jaxon.device_put,
                          jaxon.block_until_ready, jaxon.tree_leaves, jaxon.grad, jaxon.vmap,
                          jaxon.hessian, jaxon.lax, jaxon.make_jaxpr, jaxon.random,
                          jaxon.nn)]
  if with_jax:
    try:
      import jax
      import jax.lax
      import jax.nn
      import jax.numpy
      import jax.random
    except ImportError:
      print("(jax is not importable: timing jaxon alone; install the 'bench' extra in a "
            "separate environment to compare)")
    else:
      frameworks.append(Framework("jax", jax.jit, jax.numpy, jax.device_put,
                                  jax.block_until_ready, jax.tree_util.tree_leaves, jax.grad,
                                  jax.vmap, jax.hessian, jax.lax, jax.make_jaxpr,
                                  jax.random, jax.nn))
  return frameworks


def _time_once(run: Callable[[], Any]) -> float:
  start = time.perf_counter()
  run()
  return time.perf_counter() - start


def _check_agreement(name: str, results: dict[str, Any], frameworks: list[Framework]) -> None:
  """Warns when the frameworks' results differ: a fast wrong answer is not a result."""
  if len(results) < 2:
    return
  fw_by_name = {fw.name: fw for fw in frameworks}
  leaves = {n: [np.asarray(x) for x in fw_by_name[n].tree_leaves(r)] for n, r in results.items()}
  first, *others = leaves.values()
  for other in others:
    if len(other) != len(first) or not all(
        a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5)
        for a, b in zip(first, other)):
      print(f"  warning: {name}: results differ between frameworks", file=sys.stderr)


def measure(wl: Workload, frameworks: list[Framework], repeat: int, warmup: int
            ) -> dict[str, list[float] | str]:
  """Per-unit times for each framework (or the reason it was skipped), interleaved."""
  runs: dict[str, Callable[[], Any]] = {}
  times: dict[str, list[float] | str] = {}
  for fw in frameworks:
    try:
      runs[fw.name] = wl.setup(fw)
    except Unsupported as e:
      times[fw.name] = f"skipped: {e}"
  results = {}
  for name, run in runs.items():
    for _ in range(warmup):
      results[name] = run()
    times[name] = []
  _check_agreement(wl.name, results, frameworks)
  gc.collect()
  order = list(runs)
  for rep in range(repeat):
    for name in (order if rep % 2 == 0 else order[::-1]):
      times[name].append(_time_once(runs[name]) / wl.units_per_run)
  return times


def _fmt(seconds: float) -> str:
  for scale, suffix in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
    if seconds >= scale:
      return f"{seconds / scale:7.2f} {suffix}"
  return f"{seconds * 1e9:7.1f} ns"


def report(wl: Workload, times: dict[str, list[float] | str]) -> dict[str, Any]:
  """Prints one workload's results; returns them as a JSON-ready record."""
  print(f"\n{wl.name}: {wl.description}")
  record: dict[str, Any] = {"workload": wl.name, "unit": wl.unit, "frameworks": {}}
  medians = {}
  for name, ts in times.items():
    if isinstance(ts, str):
      print(f"  {name:6} {ts}")
      record["frameworks"][name] = {"skipped": ts}
      continue
    medians[name] = statistics.median(ts)
    record["frameworks"][name] = {"median_s": medians[name], "min_s": min(ts), "times_s": ts}
    print(f"  {name:6} {_fmt(medians[name])} per {wl.unit}   (min {_fmt(min(ts)).strip()}, "
          f"{len(ts)} reps)")
  if "jaxon" in medians and "jax" in medians:
    record["ratio"] = medians["jaxon"] / medians["jax"]
    print(f"  jaxon/jax = {record['ratio']:.2f}")
  return record


def write_json(path: str, frameworks: list[Framework], records: list[dict[str, Any]]) -> None:
  """Appends this run as one line of JSON (JSON Lines: the file keeps every run's record)."""
  run = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "versions": {fw.name: sys.modules[fw.name].__version__ for fw in frameworks},
         "python": sys.version.split()[0], "machine": platform.machine(),
         "cpus": os.cpu_count(), "workloads": records}
  with open(path, "a") as f:
    f.write(json.dumps(run) + "\n")


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--only", action="append", metavar="NAME",
                      help="run only this workload (repeatable, or comma-separated)")
  parser.add_argument("--repeat", type=int, help="timed repetitions per framework")
  parser.add_argument("--warmup", type=int, default=None,
                      help="untimed repetitions first (default: the workload's own)")
  parser.add_argument("--no-jax", action="store_true", help="time jaxon alone")
  parser.add_argument("--json", metavar="PATH",
                      help="append this run's results to PATH as one line of JSON")
  parser.add_argument("--list", action="store_true", help="list the workloads and exit")
  args = parser.parse_args(argv)
  if args.list:
    for wl in WORKLOADS.values():
      print(f"{wl.name:24} {wl.description}")
    return 0
  names = [n for item in args.only or [] for n in item.split(",")] or list(WORKLOADS)
  unknown = [n for n in names if n not in WORKLOADS]
  if unknown:
    parser.error(f"unknown workload(s) {unknown}; known: {sorted(WORKLOADS)}")
  frameworks = load_frameworks(with_jax=not args.no_jax)
  print("frameworks: " + ", ".join(
      f"{fw.name} {sys.modules[fw.name].__version__}" for fw in frameworks))
  records = []
  for name in names:
    wl = WORKLOADS[name]
    records.append(report(wl, measure(wl, frameworks, args.repeat or wl.repeat,
                                      wl.warmup if args.warmup is None else args.warmup)))
  if args.json:
    write_json(args.json, frameworks, records)
  return 0


if __name__ == "__main__":
  sys.exit(main())
