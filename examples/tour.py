"""A short tour of jaxon: the jaxprs of seed 001's examples, and a jitted function.

Run it with `python examples/tour.py`. Every function below is plain JAX code with the
import changed from `jax` to `jaxon`.
"""
from __future__ import annotations

import time

import numpy as np

import jaxon
import jaxon.numpy as jnp
from jaxon import jit, lax, make_jaxpr


def section(title: str) -> None:
  print(f"\n== {title} " + "=" * max(3, 70 - len(title)))


# ----------------------------------------------------------------------------- jaxprs (seed 001)


def func1(first, second):
  temp = first + jnp.sin(second) * 3.
  return jnp.sum(temp)


def func2(inner, first, second):
  temp = first + inner(second) * 3.
  return jnp.sum(temp)


def inner(second):
  if second.shape[0] > 4:  # Python control flow on shapes is resolved while tracing
    return jnp.sin(second)
  raise ValueError("second must have more than 4 elements")


def func3(first, second):
  return func2(inner, first, second)


def func4(arg):  # `arg` is a pair: pytrees flatten into separate jaxpr inputs
  temp = arg[0] + jnp.sin(arg[1]) * 3.
  return jnp.sum(temp)


def func12(arg):
  @jit
  def inner(x):
    return x + arg * jnp.ones(1)  # closes over `arg`, a value of the outer trace
  return arg + inner(arg - 2.)


def func7(arg):
  return lax.cond(arg >= 0.,
                  lambda xtrue: xtrue + 3.,
                  lambda xfalse: xfalse - 3.,
                  arg)


def func10(arg, n):
  ones = jnp.ones(arg.shape)  # A constant.
  return lax.fori_loop(0, n,
                       lambda i, carry: carry + ones * 3. + arg,
                       arg + ones)


def func11(arr, extra):
  ones = jnp.ones(arr.shape)  # A constant
  def body(carry, aelems):
    ae1, ae2 = aelems
    return (carry + ae1 * ae2 + extra, carry)
  return lax.scan(body, 0., (arr, ones))


def show_jaxprs() -> None:
  section("make_jaxpr: func1, and func3 (Python function calls and `if` are inlined)")
  print(make_jaxpr(func1)(jnp.zeros(8), jnp.ones(8)))
  print(make_jaxpr(func3)(jnp.zeros(8), jnp.ones(8)))
  section("make_jaxpr: func4 (a tuple argument becomes two inputs)")
  print(make_jaxpr(func4)((jnp.zeros(8), jnp.ones(8))))
  section("make_jaxpr: func12 (a nested jit stages a pjit equation)")
  print(make_jaxpr(func12)(1.))
  section("make_jaxpr: func7, func10, func11 (control flow stages cond, while, scan)")
  print(make_jaxpr(func7)(5.))
  print(make_jaxpr(func10)(np.ones(16), 5))
  print(make_jaxpr(func11)(np.ones(16), 5.))


# ----------------------------------------------------------------------------- jit


@jit
def selu(x, alpha=1.67, lmbda=1.05):
  return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


@jit
def softplus_sum(x):
  return jnp.sum(jnp.log(1.0 + jnp.exp(x)))


def show_jit() -> None:
  fun = selu if hasattr(jnp, "where") else softplus_sum
  section(f"jit: {fun.__name__} compiled once per argument signature")
  x = jnp.asarray(np.linspace(-2.0, 2.0, 1_000_000, dtype=np.float32))
  start = time.perf_counter()
  fun(x).block_until_ready()
  first = time.perf_counter() - start
  start = time.perf_counter()
  for _ in range(10):
    out = fun(x).block_until_ready()
  later = (time.perf_counter() - start) / 10
  print(f"first call (trace + compile + run): {first * 1e3:8.2f} ms")
  print(f"later calls (run the executable):   {later * 1e3:8.2f} ms")
  print(f"result: {type(out).__name__} of shape {out.shape}, first values "
        f"{np.asarray(out)[:3]}")
  print("StableHLO, first lines:")
  print("\n".join(fun.lower(x).as_text().splitlines()[:4]))


if __name__ == "__main__":
  print(f"jaxon {jaxon.__version__} on {jaxon.devices()}")
  show_jaxprs()
  show_jit()
