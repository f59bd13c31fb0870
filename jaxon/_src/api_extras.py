"""Top-level helpers of JAX's API beside the transformations: the forward/backward split
of `vjp` (`fwd_and_bwd`), cache-sensitive user contexts (`make_user_context`), and the
runtime's inventory (`live_arrays`, `copy_to_host_async`, `print_environment_info`)."""
from __future__ import annotations

import gc
import itertools
import platform
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import config as config_mod, tree_util
from jaxon._src.api import _argnums_partial, jit, vjp
from jaxon._src.xla import client
from jaxon._src.xla.array import Array


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
  """`fwd(*args)` gives `(fun(*args), residuals)` (and `aux` with `has_aux`), and
  `bwd(residuals, cotangent)` the cotangents of the `argnums` arguments, as `vjp` would.
  Both are jitted by default, so a training loop compiles `bwd` once.

  JAX's residuals are the values its linearization saved; jaxon's `vjp` keeps them in a
  closure, which `jit` cannot take as an argument, so here the residuals are the arguments
  themselves and `bwd` re-linearizes `fun` at them (inside its one compiled program): the
  same values, at the cost of the forward computation again in `bwd`.
  """
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if not (isinstance(argnums, int) or all(isinstance(n, int) for n in argnums)):
    raise TypeError(f"argnums must be an int or a sequence of ints, got {argnums!r}")

  def pullback(args: tuple) -> tuple:
    partial_fun, dyn = _argnums_partial(fun, argnums, args, {}, lambda leaf, n: None)
    return vjp(partial_fun, *dyn, has_aux=has_aux)

  def fwd(*args: Any) -> tuple:
    out, _, *aux = pullback(args)
    return (out, args, *aux)

  def bwd(residuals: tuple, outgrad: Any) -> Any:
    cotangents = pullback(residuals)[1](outgrad)
    return cotangents[0] if isinstance(argnums, int) else cotangents

  if jitted:
    return jit(fwd), jit(bwd)
  return fwd, bwd


_user_context_ids = itertools.count()


class UserConfig:
  """A value that `jit` caches key on: entering `with ctx(value):` makes jitted functions
  trace (and compile) again for the new value, as a change of `jax_enable_x64` does."""

  def __init__(self, default_value: Any):
    self._flag = config_mod.config.define(
        f"jax_user_context_{next(_user_context_ids)}", default_value,
        "A cache-sensitive user context (make_user_context).", parse=lambda v: v,
        trace_context=True)

  @property
  def value(self) -> Any:
    return self._flag.value

  def get_global(self) -> Any:
    return getattr(config_mod._Values, self._flag.name)

  def set_global(self, new_value: Any) -> None:
    self._flag.set_global(new_value)

  def __call__(self, new_value: Any) -> Any:
    return self._flag(new_value)


def make_user_context(default_value: Any = None) -> UserConfig:
  """A new context whose value is part of every jit cache key (thread-local when set by
  `with`). Making one is not thread-safe; using one is."""
  return UserConfig(default_value)


def live_arrays(platform: str | None = None) -> list[Array]:
  """Every jaxon Array not yet deleted or garbage collected. Found by a walk of the
  garbage collector's objects, so the runtime keeps no registry (nothing on the path of
  creating an Array, no references that could leak): a debugging aid, slow on big heaps."""
  if platform not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {platform!r}: jaxon has 'cpu'")
  return [x for x in gc.get_objects()
          if type(x) is Array and (x._pending is not None or not x.is_deleted())]


def copy_to_host_async(x: Any) -> Any:
  """Starts copying each Array leaf of `x` to the host (leaves without the method are
  left as they are); returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    copy = getattr(leaf, "copy_to_host_async", None)
    if copy is not None:
      copy()
  return x


def print_environment_info(return_string: bool = False) -> str | None:
  """Versions and devices, as JAX prints them for bug reports."""
  import jaxlib.version

  from jaxon.version import __version__
  devices = client.local_devices()
  info = "\n".join([
      f"jaxon:  {__version__}",
      f"jaxlib: {jaxlib.version.__version__}",
      f"numpy:  {np.__version__}",
      f"python: {sys.version}",
      f"device info: cpu-{len(devices)}, {len(devices)} local devices",
      "process_count: 1",
      f"platform: {platform.uname()}",
      ""])
  if return_string:
    return info
  print(info)
  return None
