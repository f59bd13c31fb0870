"""The user-facing transformations: `jit`, `make_jaxpr`, and device placement."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import core, dtypes, tree_util
from jaxon._src.config import config
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.interpreters import mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.pjit import pjit_p
from jaxon._src.xla import client, executable
from jaxon._src.xla.array import Array


def _abstractify(x: Any, where: str = "") -> ShapedArray:
  try:
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument {where}{x!r} of type {type(x)} is not a valid JAX type: "
                    "pass arrays, NumPy values, Python scalars or pytrees of those, or mark "
                    "the argument static with static_argnums/static_argnames.") from None


def _flat_avals(leaves: Sequence[Any]) -> tuple[ShapedArray, ...]:
  return tuple(x.aval if type(x) is Array else _abstractify(x) for x in leaves)


def _flatten_fun(fun: Callable, in_tree: tree_util.PyTreeDef, out_tree_store: list
                 ) -> Callable[..., list[Any]]:
  """`fun` on flat inputs to flat outputs; the output structure lands in `out_tree_store`."""
  def flat_fun(*flat_args: Any) -> list[Any]:
    args, kwargs = in_tree.unflatten(flat_args)
    out = fun(*args, **kwargs)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_store.append(out_tree)
    return out_leaves
  return flat_fun


def _check_outputs(out_leaves: Sequence[Any], name: str) -> None:
  for x in out_leaves:
    if not core.valid_jaxtype(x):
      raise TypeError(f"the function {name} returned a value of type {type(x).__name__} "
                      f"({x!r}), which is not a valid JAX type")


# ----------------------------------------------------------------------------- jit


class _CacheEntry(NamedTuple):
  jaxpr: ClosedJaxpr  # consts that are tracers of an enclosing trace become leading args
  const_args: list[Any]
  out_tree: tree_util.PyTreeDef


def _trace_for_jit(fun: Callable, name: str, in_tree: tree_util.PyTreeDef,
                   avals: Sequence[ShapedArray]) -> _CacheEntry:
  out_tree_store: list = []
  flat_fun = _flatten_fun(fun, in_tree, out_tree_store)
  jaxpr, consts = pe.trace_to_jaxpr(flat_fun, avals)
  if any(isinstance(c, core.Tracer) for c in consts):
    return _CacheEntry(ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts,
                       out_tree_store[0])
  return _CacheEntry(ClosedJaxpr(jaxpr, consts), [], out_tree_store[0])


class JitFunction:
  """A function compiled with XLA on first call for each distinct signature."""

  def __init__(self, fun: Callable, static_argnums: tuple[int, ...],
               static_argnames: tuple[str, ...]):
    functools.update_wrapper(self, fun)
    self._fun = fun
    self._name = getattr(fun, "__name__", type(fun).__name__)
    self._static_argnums = static_argnums
    self._static_argnames = static_argnames
    self._cache: dict[Hashable, _CacheEntry] = {}

  def _signature(self, args: tuple, kwargs: dict) -> tuple:
    """(flat dynamic args, input tree, static values): what the cache is keyed on."""
    if self._static_argnums or self._static_argnames:
      statics = tuple(args[i] for i in self._static_argnums if i < len(args)) + tuple(
          (k, kwargs[k]) for k in self._static_argnames if k in kwargs)
      args = tuple(a for i, a in enumerate(args) if i not in self._static_argnums)
      kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
    else:
      statics = ()
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    return leaves, in_tree, statics

  def _entry(self, args: tuple, kwargs: dict) -> tuple[list[Any], _CacheEntry]:
    leaves, in_tree, statics = self._signature(args, kwargs)
    key = (in_tree, statics, _flat_avals(leaves))
    try:
      entry = self._cache.get(key)
    except TypeError as e:
      raise ValueError(f"Non-hashable static arguments are not supported: jit({self._name}) "
                       f"got static values {statics}. Static arguments must be hashable "
                       "(use a tuple instead of a list).") from e
    if entry is None:
      entry = self._trace(args, kwargs, statics, in_tree, key[2])
      if not entry.const_args:
        self._cache[key] = entry
    return leaves, entry

  def _trace(self, args: tuple, kwargs: dict, statics: tuple, in_tree: tree_util.PyTreeDef,
             avals: Sequence[ShapedArray]) -> _CacheEntry:
    static_args = dict(zip((i for i in self._static_argnums if i < len(args)), statics))
    static_kwargs = {k: kwargs[k] for k in self._static_argnames if k in kwargs}

    def fun_of_dynamic(*dyn_args: Any, **dyn_kwargs: Any) -> Any:
      full = list(dyn_args)
      for i in sorted(static_args):
        full.insert(i, static_args[i])
      return self._fun(*full, **dyn_kwargs, **static_kwargs)
    return _trace_for_jit(fun_of_dynamic, self._name, in_tree, avals)

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    if config.jax_disable_jit:
      return self._fun(*args, **kwargs)
    leaves, entry = self._entry(args, kwargs)
    if core.is_eval_trace_current():
      outs = executable.executable_for(entry.jaxpr, self._name)(leaves)
    else:
      outs = pjit_p.bind(*entry.const_args, *leaves, jaxpr=entry.jaxpr, name=self._name)
    return entry.out_tree.unflatten(outs)

  def lower(self, *args: Any, **kwargs: Any) -> Lowered:
    _, entry = self._entry(args, kwargs)
    return Lowered(entry.jaxpr, self._name)

  def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
    _, entry = self._entry(args, kwargs)
    return entry.out_tree.unflatten(
        [ShapeDtypeStruct(a.shape, a.dtype) for a in entry.jaxpr.out_avals])

  def _cache_size(self) -> int:
    return len(self._cache)

  def __get__(self, obj: Any, objtype: Any = None) -> Any:
    return self if obj is None else functools.partial(self, obj)

  def __repr__(self) -> str:
    return f"<jitted function {self._name}>"


class Lowered:
  """A jitted function lowered for one signature: its StableHLO text, and compilation."""

  def __init__(self, jaxpr: ClosedJaxpr, name: str):
    self._jaxpr = jaxpr
    self._name = name

  def as_text(self) -> str:
    return str(mlir.lower_jaxpr_to_module(self._jaxpr.jaxpr, self._name))

  def compile(self) -> executable.Executable:
    return executable.executable_for(self._jaxpr, self._name)


def _normalize_static(fun: Callable, static_argnums: int | Sequence[int] | None,
                      static_argnames: str | Sequence[str] | None
                      ) -> tuple[tuple[int, ...], tuple[str, ...]]:
  """Static positions and names, each inferred from the other through the signature."""
  nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
  names = (static_argnames,) if isinstance(static_argnames, str) else tuple(
      static_argnames or ())
  try:
    params = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError):
    return tuple(sorted(nums)), names
  positional = [p.name for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  has_varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
  nums = tuple(sorted(n % len(positional) if n < 0 and not has_varargs else n for n in nums))
  names = names + tuple(positional[n] for n in nums
                        if n < len(positional) and positional[n] not in names)
  nums = tuple(sorted(set(nums) | {positional.index(n) for n in names if n in positional}))
  return nums, names


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: Any = None, inline: bool = False, **unused: Any) -> Any:
  """Compiles `fun` with XLA: traced once per signature of its arguments (shapes, dtypes,
  weak types, tree structure and static values), then run as one executable.

  Args:
    fun: the function; arrays and pytrees of arrays in, arrays and pytrees out.
    static_argnums: positions of arguments that are compile-time constants (hashable).
    static_argnames: names of such arguments.

  Example:
    >>> f = jit(lambda x: x * 2.0 + 1.0)
    >>> f(jnp.arange(3.0))
    Array([1., 3., 5.], dtype=float32)
  """
  if fun is None:
    return functools.partial(jit, static_argnums=static_argnums,
                             static_argnames=static_argnames)
  if not callable(fun):
    raise TypeError(f"jit expected a callable, got {fun!r}")
  nums, names = _normalize_static(fun, static_argnums, static_argnames)
  return JitFunction(fun, nums, names)


# ----------------------------------------------------------------------------- make_jaxpr


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable[..., Any]:
  """A function that returns the jaxpr of `fun` traced at the given arguments.

  Example:
    >>> print(make_jaxpr(jnp.sin)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
  """
  static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
  def make_jaxpr_f(*args: Any, **kwargs: Any) -> Any:
    static_vals = {i: args[i] for i in static if i < len(args)}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in static_vals)

    def with_statics(*dyn: Any, **kw: Any) -> Any:
      full = list(dyn)
      for i in sorted(static_vals):
        full.insert(i, static_vals[i])
      return fun(*full, **kw)
    leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
    out_tree_store: list = []
    avals = [_abstractify(x) for x in leaves]
    jaxpr, consts = pe.trace_to_jaxpr(_flatten_fun(with_statics, in_tree, out_tree_store),
                                      avals)
    closed = ClosedJaxpr(jaxpr, consts)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
      return closed, out_tree_store[0].unflatten(shapes)
    return closed
  return make_jaxpr_f


class ShapeDtypeStruct:
  """A shape and dtype standing in for an array (what `eval_shape` returns)."""

  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
    self.shape = tuple(shape)
    self.dtype = np.dtype(dtype)
    self.weak_type = weak_type

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape)))

  def __eq__(self, other: object) -> bool:
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype)

  def __hash__(self) -> int:
    return hash((self.shape, self.dtype))

  def __repr__(self) -> str:
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


core.register_aval_handler(
    ShapeDtypeStruct, lambda s: ShapedArray(s.shape, dtypes.canonicalize_dtype(s.dtype),
                                            s.weak_type))


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
  """The shapes and dtypes `fun` would return, computed without running it."""
  closed, shapes = make_jaxpr(fun, return_shape=True)(*args, **kwargs)
  return shapes


# ----------------------------------------------------------------------------- devices


def devices(backend: str | None = None) -> list[client.Device]:
  return client.devices(backend)


def local_devices() -> list[client.Device]:
  return client.local_devices()


def device_count() -> int:
  return client.device_count()


def local_device_count() -> int:
  return len(client.local_devices())


def default_backend() -> str:
  return client.default_backend()


def device_put(x: Any, device: Any = None) -> Any:
  """Places each leaf of `x` on the device as an Array."""
  return tree_util.tree_map(executable.device_put, x)


def device_get(x: Any) -> Any:
  """Copies each Array leaf of `x` to a NumPy array."""
  return tree_util.tree_map(lambda a: np.asarray(a) if isinstance(a, Array) else a, x)


def block_until_ready(x: Any) -> Any:
  """Waits until every Array leaf of `x` has been computed; returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    if isinstance(leaf, Array):
      leaf.block_until_ready()
  return x
