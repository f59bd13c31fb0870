"""The user-facing transformations: `jit`, `make_jaxpr`, and device placement."""
from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes, tree_util
from jaxon._src.config import config
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
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
  return tuple([x.aval if type(x) is Array else _abstractify(x) for x in leaves])


_aval_of = operator.attrgetter("aval")
_ONLY_ARRAYS = frozenset([Array])


@functools.lru_cache(maxsize=64)
def _positional_leaves_tree(n: int) -> tree_util.PyTreeDef:
  """The input tree of a call with `n` Array arguments and no keywords, the usual call.
  It is one object per `n`, so comparing cache keys compares it by identity."""
  return tree_util.tree_structure(((0,) * n, {}))


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


# ----------------------------------------------------------------------------- jit


class _CacheEntry:
  """What tracing one signature of a jitted function gave, and the executable that runs it
  (compiled on the first eager call; a call under another transformation stages `pjit`)."""

  __slots__ = ("jaxpr", "const_args", "in_tree", "out_tree", "executable", "returns_leaf")

  def __init__(self, jaxpr: ClosedJaxpr, const_args: list[Any], in_tree: tree_util.PyTreeDef,
               out_tree: tree_util.PyTreeDef):
    self.jaxpr = jaxpr  # consts that are tracers of an enclosing trace become leading args
    self.const_args = const_args
    self.in_tree = in_tree
    self.out_tree = out_tree
    self.executable: executable.Executable | None = None  # set by `compile`
    # A function returning one array (the usual case) needs no unflattening.
    self.returns_leaf = out_tree == tree_util.tree_structure(0)

  def compile(self, name: str) -> executable.Executable:
    if self.executable is None:
      self.executable = executable.executable_for(self.jaxpr, name)
    return self.executable


def _trace_for_jit(fun: Callable, name: str, in_tree: tree_util.PyTreeDef,
                   avals: Sequence[ShapedArray]) -> _CacheEntry:
  out_tree_store: list = []
  flat_fun = _flatten_fun(fun, in_tree, out_tree_store)
  jaxpr, consts = pe.trace_to_jaxpr(flat_fun, avals)
  if any(isinstance(c, core.Tracer) for c in consts):
    return _CacheEntry(ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts, in_tree,
                       out_tree_store[0])
  return _CacheEntry(ClosedJaxpr(jaxpr, consts), [], in_tree, out_tree_store[0])


# `jax_disable_jit`, kept current by a config listener: every jitted call reads it, and
# reading the config costs a Python call.
_jit_disabled = config.read("jax_disable_jit")


def _track_disable_jit(name: str, value: Any) -> None:
  global _jit_disabled
  if name == "jax_disable_jit":
    _jit_disabled = bool(value)


config.on_update(_track_disable_jit)

# Flags that change what a function traces to (dtypes, PRNG bit layout, matmul precision):
# part of every jit cache key, so flipping one retraces instead of reusing old programs.
_TRACE_CONTEXT_FLAGS = ("jax_enable_x64", "jax_threefry_partitionable",
                        "jax_default_matmul_precision")
_trace_context = tuple(config.read(f) for f in _TRACE_CONTEXT_FLAGS)


def _track_trace_context(name: str, value: Any) -> None:
  global _trace_context
  if name in _TRACE_CONTEXT_FLAGS:
    _trace_context = tuple(config.read(f) for f in _TRACE_CONTEXT_FLAGS)


config.on_update(_track_trace_context)


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
    # The key and entry of the last call: a call that repeats its signature (the usual
    # case) is found by comparing keys, without hashing them (aval hashing runs Python).
    self._last: tuple[Hashable, _CacheEntry | None] = (None, None)

  def _split_statics(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple[tuple, dict]]:
    """(static values, (dynamic args, dynamic kwargs))."""
    statics = tuple(args[i] for i in self._static_argnums if i < len(args)) + tuple(
        (k, kwargs[k]) for k in self._static_argnames if k in kwargs)
    dyn_args = tuple(a for i, a in enumerate(args) if i not in self._static_argnums)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
    return statics, (dyn_args, dyn_kwargs)

  def _entry(self, args: tuple, kwargs: dict) -> tuple[Sequence[Any], _CacheEntry]:
    """The flat dynamic arguments and the cache entry of their signature: (input tree,
    static values, avals). Runs on every call, so it does no more than that."""
    statics, dynamic = (), (args, kwargs)
    if self._static_argnums or self._static_argnames:
      statics, dynamic = self._split_statics(args, kwargs)
    in_tree = None
    if not kwargs and not statics and _ONLY_ARRAYS.issuperset(map(type, args)):
      # The usual call, Arrays by position: no flattening, and the avals are the signature
      # (as for any call whose arguments are leaves, NumPy arrays or scalars too).
      leaves, avals = args, tuple(map(_aval_of, args))
      key: tuple = (avals, _trace_context)
    else:
      leaves, in_tree = tree_util.registry.flatten(dynamic)
      try:  # Arrays and tracers: `map` runs in C, without a Python call per leaf
        avals = tuple(map(_aval_of, leaves))
      except AttributeError:
        avals = _flat_avals(leaves)
      positional = not statics and in_tree == _positional_leaves_tree(len(leaves))
      key = (avals, _trace_context) if positional else (in_tree, statics, avals,
                                                         _trace_context)
    last_key, last_entry = self._last
    if not statics and key == last_key:  # statics may not compare safely (arrays)
      return leaves, last_entry
    try:
      entry = self._cache.get(key)
    except TypeError as e:
      raise ValueError(f"Non-hashable static arguments are not supported: jit({self._name}) "
                       f"got static values {statics}. Static arguments must be hashable "
                       "(use a tuple instead of a list).") from e
    if entry is None:
      entry = self._trace(args, kwargs, statics,
                          _positional_leaves_tree(len(args)) if in_tree is None else in_tree,
                          avals)
      if not entry.const_args:
        self._cache[key] = entry
    if not entry.const_args:
      self._last = (key, entry)
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
    # Every step of this path is paid on each call of a jitted function: keep it short.
    if _jit_disabled:
      return self._fun(*args, **kwargs)
    leaves, entry = self._entry(args, kwargs)
    if core.is_eval_trace_current():
      outs = (entry.executable or entry.compile(self._name))(leaves)
    else:
      outs = pjit_p.bind(*entry.const_args, *leaves, jaxpr=entry.jaxpr, name=self._name)
    return outs[0] if entry.returns_leaf else entry.out_tree.unflatten(outs)

  def lower(self, *args: Any, **kwargs: Any) -> Lowered:
    _, entry = self._entry(args, kwargs)
    return Lowered(entry, self._name)

  def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
    _, entry = self._entry(args, kwargs)
    return entry.out_tree.unflatten(
        [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in entry.jaxpr.out_avals])

  def _cache_size(self) -> int:
    return len(self._cache)

  def __get__(self, obj: Any, objtype: Any = None) -> Any:
    return self if obj is None else functools.partial(self, obj)

  def __repr__(self) -> str:
    return f"<jitted function {self._name}>"


class Lowered:
  """A jitted function lowered for one signature: its StableHLO text, and compilation."""

  def __init__(self, entry: _CacheEntry, name: str):
    self._entry = entry
    self._name = name

  def as_text(self) -> str:
    return str(mlir.lower_jaxpr_to_module(self._entry.jaxpr.jaxpr, self._name))

  def compile(self) -> Compiled:
    if self._entry.const_args:
      raise TypeError(f"jit({self._name}).lower(...).compile(): the function closes over "
                      "values traced by an enclosing transformation, so it cannot be "
                      "compiled on its own; call the jitted function instead.")
    return Compiled(self._entry, self._name)


class Compiled:
  """A jitted function compiled for one signature. As in JAX, it is called with the
  dynamic arguments only (static ones were fixed by `lower`), in the same pytree structure
  and with the same shapes and dtypes."""

  def __init__(self, entry: _CacheEntry, name: str):
    self._entry = entry
    self._name = name
    self._executable = entry.compile(name)

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != self._entry.in_tree:
      raise TypeError(f"Function compiled with input pytree {self._entry.in_tree} does not "
                      f"match the input pytree it was called with, {in_tree}.")
    for want, got in zip(self._executable.in_avals, _flat_avals(leaves)):
      if (want.shape, want.dtype) != (got.shape, got.dtype):
        self._raise_type_mismatch(args, kwargs)
    return self._entry.out_tree.unflatten(self._executable(leaves))

  def _raise_type_mismatch(self, args: tuple, kwargs: dict) -> None:
    paths, _ = tree_util.tree_flatten_with_path((args, kwargs))
    mismatches = []
    for (path, leaf), want in zip(paths, self._executable.in_avals):
      got = _abstractify(leaf)
      if (want.shape, want.dtype) != (got.shape, got.dtype):
        where = ("args", "kwargs")[path[0].idx] + tree_util.keystr(path[1:])
        mismatches.append(f"argument {where} compiled with {want.str_short(False)} and "
                          f"called with {got.str_short(False)}")
    raise TypeError("Argument types differ from the types for which this computation was "
                    "compiled: " + "; ".join(mismatches))

  def as_text(self) -> str:
    return self._executable.loaded.hlo_modules()[0].to_string()

  def __repr__(self) -> str:
    return f"<compiled function {self._name}>"


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
  if not has_varargs and any(not -len(positional) <= n < len(positional) for n in nums):
    raise ValueError(f"Jitted function has static_argnums={nums}, but only accepts "
                     f"{len(positional)} positional arguments.")
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
      shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
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
  """Places each leaf of `x` on the device as an Array (a traced leaf, already staged on
  the device, is returned as it is, as in JAX)."""
  return tree_util.tree_map(
      lambda leaf: leaf if isinstance(leaf, core.Tracer) else executable.device_put(leaf), x)


def device_get(x: Any) -> Any:
  """Copies each Array leaf of `x` to a NumPy array."""
  return tree_util.tree_map(lambda a: np.asarray(a) if isinstance(a, Array) else a, x)


def block_until_ready(x: Any) -> Any:
  """Waits until every Array leaf of `x` has been computed; returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    if isinstance(leaf, Array):
      leaf.block_until_ready()
  return x


# ----------------------------------------------------------------------------- autodiff


def _check_input_dtype(x: Any, argnum: int, holomorphic: bool, allow_int: bool,
                       transform: str) -> None:
  dt = core.get_aval(x).dtype
  if holomorphic and not dtypes.is_complex(dt):
    raise TypeError(f"{transform} with holomorphic=True requires inputs with complex dtype, "
                    f"but argument {argnum} has dtype {dt.name}.")
  if not allow_int and not dtypes.is_inexact(dt):
    raise TypeError(f"{transform} requires real- or complex-valued inputs (input dtype that "
                    f"is a sub-dtype of np.inexact), but argument {argnum} has dtype "
                    f"{dt.name}. If you want to use Boolean- or integer-valued inputs, use "
                    "vjp or set allow_int to True.")


def _argnums_partial(fun: Callable, argnums: int | Sequence[int], args: tuple, kwargs: dict,
                     transform: str, holomorphic: bool = False, allow_int: bool = False
                     ) -> tuple[Callable, tuple]:
  """`fun` as a function of `args[argnums]` only (the other arguments fixed), and those
  arguments; checks their dtypes for differentiation."""
  nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
  for n in nums:
    if not -len(args) <= n < len(args):
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at "
                      f"least {n + 1} positional arguments, got {len(args)}")
  nums = tuple(n % len(args) for n in nums)
  dyn = tuple(args[n] for n in nums)
  for n, x in zip(nums, dyn):
    for leaf in tree_util.tree_leaves(x):
      _check_input_dtype(leaf, n, holomorphic, allow_int, transform)

  def partial_fun(*dyn_args: Any) -> Any:
    full = list(args)
    for n, a in zip(nums, dyn_args):
      full[n] = a
    return fun(*full, **kwargs)
  return partial_fun, dyn


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> Any:
  """Forward mode: `(fun(*primals), J·tangents)`.

  Example:
    >>> jvp(jnp.sin, (0.0,), (1.0,))
    (Array(0., dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
  """
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("jvp expects primals and tangents to be tuples or lists of arguments, "
                    f"got {type(primals).__name__} and {type(tangents).__name__}")
  if len(primals) != len(tangents):
    raise ValueError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
  flat_primals, in_tree = tree_util.tree_flatten((tuple(primals), {}))
  flat_tangents, tangent_tree = tree_util.tree_flatten((tuple(tangents), {}))
  if in_tree != tangent_tree:
    raise TypeError(f"primal and tangent arguments to jvp must have the same tree structure; "
                    f"primals have tree structure {in_tree} whereas tangents have {tangent_tree}")
  for p, t in zip(flat_primals, flat_tangents):
    p_aval, t_aval = core.get_aval(p), core.get_aval(t)
    if p_aval.to_tangent_aval().dtype != t_aval.dtype or p_aval.shape != t_aval.shape:
      raise TypeError(f"primal and tangent arguments to jvp must have matching shapes and "
                      f"tangent dtypes; got primal {p_aval.str_short()} with tangent "
                      f"{t_aval.str_short()} (expected tangent dtype "
                      f"{p_aval.to_tangent_aval().dtype.name})")
  out_tree_store: list = []
  flat_fun = _flatten_fun(fun, in_tree, out_tree_store)
  primal_outs, tangent_outs = ad.jvp_flat(flat_fun, flat_primals, flat_tangents)
  tangent_outs = [ad.instantiate_zeros(t) for t in tangent_outs]
  out_tree = out_tree_store[0]
  if has_aux:
    return _split_aux(out_tree, primal_outs, tangent_outs)
  return out_tree.unflatten(primal_outs), out_tree.unflatten(tangent_outs)


def _split_aux(out_tree: tree_util.PyTreeDef, primal_outs: list, tangent_outs: list) -> tuple:
  main_tree, aux_tree = out_tree.children()
  n = main_tree.num_leaves
  return (main_tree.unflatten(primal_outs[:n]), main_tree.unflatten(tangent_outs[:n]),
          aux_tree.unflatten(primal_outs[n:]))


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
  """`(fun(*primals), f_jvp)` where `f_jvp(*tangents)` evaluates the linearized function."""
  flat_primals, in_tree = tree_util.tree_flatten((primals, {}))
  out_tree_store: list = []
  flat_fun = _flatten_fun(fun, in_tree, out_tree_store)
  primal_outs, jaxpr, residuals, _ = ad.linearize_flat(flat_fun, flat_primals)
  out_tree = out_tree_store[0]
  n_main = out_tree.children()[0].num_leaves if has_aux else len(primal_outs)

  def f_jvp(*tangents: Any) -> Any:
    flat_tangents = tree_util.tree_leaves(tangents)
    outs = core.eval_jaxpr(jaxpr, residuals, *flat_tangents)
    return (out_tree.children()[0] if has_aux else out_tree).unflatten(outs[:n_main])
  if has_aux:
    main_tree, aux_tree = out_tree.children()
    return (main_tree.unflatten(primal_outs[:n_main]), f_jvp,
            aux_tree.unflatten(primal_outs[n_main:]))
  return out_tree.unflatten(primal_outs), f_jvp


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
  """Reverse mode: `(fun(*primals), f_vjp)` where `f_vjp(cotangent)` returns the
  cotangents of `primals` (a tuple)."""
  flat_primals, in_tree = tree_util.tree_flatten((primals, {}))
  out_tree_store: list = []
  flat_fun = _flatten_fun(fun, in_tree, out_tree_store)
  primal_outs, jaxpr, residuals, tangent_avals = ad.linearize_flat(flat_fun, flat_primals)
  out_tree = out_tree_store[0]
  main_tree = out_tree.children()[0] if has_aux else out_tree
  n_main = main_tree.num_leaves
  primal_in_avals = [core.get_aval(p) for p in flat_primals]
  undefined_primals = [ad.UndefinedPrimal(v.aval) for v in jaxpr.invars]

  def f_vjp(cotangent: Any) -> tuple:
    flat_cts, ct_tree = tree_util.tree_flatten(cotangent)
    if ct_tree != main_tree:
      raise TypeError(f"Tree structure of cotangent input {ct_tree} does not match the "
                      f"structure of the primal output {main_tree}")
    for ct, aval in zip(flat_cts, tangent_avals):
      ct_aval = core.get_aval(ct)
      if ct_aval.shape != aval.shape:
        raise ValueError(f"Shape of cotangent input to vjp pullback function "
                         f"{ct_aval.shape} must be the same as the shape of corresponding "
                         f"primal input {aval.shape}.")
    cts_out = list(flat_cts) + [ad.Zero(a) for a in tangent_avals[n_main:]]
    cts_in = ad.backward_pass(jaxpr, residuals, undefined_primals, cts_out)
    cts_in = [_materialize_cotangent(ct, aval) for ct, aval in zip(cts_in, primal_in_avals)]
    args_cts, _ = in_tree.unflatten(cts_in)
    return args_cts
  if has_aux:
    aux_tree = out_tree.children()[1]
    return (main_tree.unflatten(primal_outs[:n_main]), f_vjp,
            aux_tree.unflatten(primal_outs[n_main:]))
  return out_tree.unflatten(primal_outs), f_vjp


def _materialize_cotangent(ct: Any, primal_aval: ShapedArray) -> Any:
  """A cotangent as an array of the primal's tangent type. A function that returns an
  input unchanged hands back the seed cotangent itself, a host constant: it becomes an
  Array too, as JAX's."""
  tangent_aval = primal_aval.to_tangent_aval()
  if type(ct) is ad.Zero:
    return ad.zeros_like_aval(tangent_aval)
  if isinstance(ct, (core.Tracer, Array)) or tangent_aval.dtype == dtypes.float0:
    return ct
  if tangent_aval.weak_type:
    return executable.device_put(ct)
  return executable.device_put(np.asarray(ct, tangent_aval.dtype))


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
  """A function returning `(fun(*args), grad of fun w.r.t. args[argnums])`; `fun` must
  return a real scalar (or a complex one with holomorphic=True)."""
  single = isinstance(argnums, int)

  @functools.wraps(fun)
  def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
    partial_fun, dyn = _argnums_partial(fun, argnums, args, kwargs, "grad", holomorphic,
                                        allow_int)
    if has_aux:
      out, f_vjp, aux = vjp(partial_fun, *dyn, has_aux=True)
    else:
      out, f_vjp = vjp(partial_fun, *dyn)
    _check_scalar_output(out, holomorphic)
    ones = tree_util.tree_map(_one_like, out)
    grads = f_vjp(ones)
    grads = grads[0] if single else tuple(grads)
    return ((out, aux), grads) if has_aux else (out, grads)
  return value_and_grad_f


def _one_like(x: Any) -> Any:
  """The seed cotangent 1 for a scalar output: a constant (it stages as a literal) with the
  output's dtype and weak type."""
  aval = core.get_aval(x)
  if aval.weak_type:
    return complex(1) if dtypes.is_complex(aval.dtype) else 1.0
  return np.ones((), aval.dtype)


def _check_scalar_output(out: Any, holomorphic: bool) -> None:
  leaves = tree_util.tree_leaves(out)
  if len(leaves) != 1 or core.get_aval(leaves[0]).shape != ():
    shape = core.get_aval(leaves[0]).shape if len(leaves) == 1 else f"a pytree {out!r}"
    raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                    f"{shape}.")
  dt = core.get_aval(leaves[0]).dtype
  if not holomorphic and not dtypes.is_float(dt):
    raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
                    "holomorphic=True. For differentiation of non-holomorphic functions "
                    "involving complex outputs, use jax.vjp directly.")


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
  """The gradient of scalar-valued `fun` with respect to `args[argnums]`.

  Example:
    >>> grad(jnp.tanh)(1.0)
    Array(0.41997433, dtype=float32, weak_type=True)
  """
  value_and_grad_f = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @functools.wraps(fun)
  def grad_f(*args: Any, **kwargs: Any) -> Any:
    if has_aux:
      (_, aux), g = value_and_grad_f(*args, **kwargs)
      return g, aux
    _, g = value_and_grad_f(*args, **kwargs)
    return g
  return grad_f


def _std_basis(leaves: Sequence[Any]) -> list[np.ndarray]:
  """The standard basis of the flattened space of `leaves`, one block per leaf: leaf i gets
  an array of shape (N,) + leaf.shape, N the total number of elements."""
  avals = [core.get_aval(x) for x in leaves]
  sizes = [int(np.prod(a.shape)) for a in avals]
  total = sum(sizes)
  blocks, start = [], 0
  for aval, size in zip(avals, sizes):
    block = np.eye(total, size, -start, dtype=aval.to_tangent_aval().dtype)
    blocks.append(block.reshape((total,) + aval.shape))
    start += size
  return blocks


def _split_jacobian_axis(jac: Any, axis: int, avals: Sequence[ShapedArray]) -> list[Any]:
  """Splits the flattened axis `axis` of `jac` into one block per aval, each reshaped to the
  aval's shape."""
  from jaxon._src.lax import shape_ops, slicing
  shape = core.get_aval(jac).shape
  blocks, start = [], 0
  for aval in avals:
    size = int(np.prod(aval.shape))
    block = slicing.slice_in_dim(jac, start, start + size, axis=axis)
    blocks.append(shape_ops.reshape(block, shape[:axis] + aval.shape + shape[axis + 1:]))
    start += size
  return blocks


def _check_output_dtype(x: Any, holomorphic: bool, transform: str) -> None:
  dt = core.get_aval(x).dtype
  if holomorphic and not dtypes.is_complex(dt):
    raise TypeError(f"{transform} with holomorphic=True requires outputs with complex "
                    f"dtype, but got {dt.name}.")
  if not holomorphic and not dtypes.is_float(dt):
    raise TypeError(f"{transform} requires real-valued outputs (output dtype that is a "
                    f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex outputs, use vjp directly.")


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
  """The Jacobian of `fun` by forward mode: one JVP per input element, vectorized with
  vmap. Output leaves of shape S get Jacobian blocks of shape S + input shape.

  Example:
    >>> jacfwd(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
  """
  @functools.wraps(fun)
  def jacfwd_f(*args: Any, **kwargs: Any) -> Any:
    partial_fun, dyn = _argnums_partial(fun, argnums, args, kwargs, "jacfwd", holomorphic)
    flat_dyn, dyn_tree = tree_util.tree_flatten(dyn)

    def push_forward(*flat_tangents: Any) -> Any:
      tangents = dyn_tree.unflatten(flat_tangents)
      return jvp(partial_fun, dyn, tangents, has_aux=has_aux)
    outs = vmap(push_forward, out_axes=(None, -1, None) if has_aux else (None, -1))(
        *_std_basis(flat_dyn))
    y, jac = outs[0], outs[1]
    for leaf in tree_util.tree_leaves(y):
      _check_output_dtype(leaf, holomorphic, "jacfwd")
    in_avals = [core.get_aval(x) for x in flat_dyn]
    jac = tree_util.tree_map(
        lambda j: _unflatten_in_tree(_split_jacobian_axis(j, core.get_aval(j).ndim - 1,
                                                          in_avals), dyn_tree, argnums), jac)
    return (jac, outs[2]) if has_aux else jac
  return jacfwd_f


def _unflatten_in_tree(blocks: list[Any], dyn_tree: tree_util.PyTreeDef,
                       argnums: int | Sequence[int]) -> Any:
  """Jacobian blocks arranged like the differentiated arguments: the argument itself for
  an int `argnums`, a tuple of them otherwise."""
  tree = dyn_tree.unflatten(blocks)
  return tree[0] if isinstance(argnums, int) else tree


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
  """The Jacobian of `fun` by reverse mode: one VJP per output element, vectorized with
  vmap. Output leaves of shape S get Jacobian blocks of shape S + input shape.

  Example:
    >>> jacrev(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
  """
  @functools.wraps(fun)
  def jacrev_f(*args: Any, **kwargs: Any) -> Any:
    partial_fun, dyn = _argnums_partial(fun, argnums, args, kwargs, "jacrev", holomorphic,
                                        allow_int)
    if has_aux:
      y, pullback, aux = vjp(partial_fun, *dyn, has_aux=True)
    else:
      y, pullback = vjp(partial_fun, *dyn)
    flat_y, y_tree = tree_util.tree_flatten(y)
    for leaf in flat_y:
      _check_output_dtype(leaf, holomorphic, "jacrev")

    def pull_back(*flat_cotangents: Any) -> Any:
      return pullback(y_tree.unflatten(flat_cotangents))
    flat_jac_by_input = tree_util.tree_leaves(vmap(pull_back)(*_std_basis(flat_y)))
    y_avals = [core.get_aval(x) for x in flat_y]
    blocks_by_input = [_split_jacobian_axis(j, 0, y_avals) for j in flat_jac_by_input]
    dyn_tree = tree_util.tree_structure(dyn)
    jac = y_tree.unflatten([
        _unflatten_in_tree([blocks[i] for blocks in blocks_by_input], dyn_tree, argnums)
        for i in range(len(flat_y))])
    return (jac, aux) if has_aux else jac
  return jacrev_f


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
  """The Hessian of scalar-valued `fun`: `jacfwd(jacrev(fun))` (forward over reverse, the
  efficient order for a dense Hessian).

  Example:
    >>> hessian(lambda x: x @ x)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 2.]], dtype=float32)
  """
  return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence[Any] = ()
                     ) -> Callable:
  """The transpose of the linear function `fun`, as a function of an output cotangent
  that returns a tuple of input cotangents. `primals` give the input shapes and dtypes.

  Example:
    >>> f_t = linear_transpose(lambda x: 2.0 * x, 1.0)
    >>> f_t(3.0)
    (Array(6., dtype=float32, weak_type=True),)
  """
  flat_primals, in_tree = tree_util.tree_flatten((primals, {}))
  in_avals = [_abstractify(x) for x in flat_primals]
  for aval in in_avals:
    if not dtypes.is_inexact(aval.dtype):
      raise TypeError(f"linear_transpose only supports [float or complex] -> [float or "
                      f"complex] functions, but got an input of dtype {aval.dtype.name}")
  out_tree_store: list = []
  jaxpr, consts = pe.trace_to_jaxpr(_flatten_fun(fun, in_tree, out_tree_store), in_avals)
  out_tree = out_tree_store[0]
  out_avals = [v.aval for v in jaxpr.outvars]

  def transposed(out_cotangent: Any) -> tuple:
    flat_cts, ct_tree = tree_util.tree_flatten(out_cotangent)
    if ct_tree != out_tree:
      raise TypeError(f"linear_transpose: cotangent tree structure {ct_tree} does not match "
                      f"the function's output structure {out_tree}")
    for ct, aval in zip(flat_cts, out_avals):
      ct_aval = core.get_aval(ct)
      if ct_aval.shape != aval.shape or ct_aval.dtype != aval.dtype:
        raise TypeError(f"linear_transpose: cotangent {ct_aval.str_short()} does not match "
                        f"the function's output {aval.str_short()}")
    cts_in = ad.backward_pass(jaxpr, consts, [ad.UndefinedPrimal(a) for a in in_avals],
                              flat_cts)
    cts_in = [_materialize_cotangent(ct, aval) for ct, aval in zip(cts_in, in_avals)]
    args_cts, _ = in_tree.unflatten(cts_in)
    return args_cts
  return transposed


# ----------------------------------------------------------------------------- vmap


def _mapped_axis_size(leaves: Sequence[Any], dims: Sequence[int | None]) -> int:
  sizes = {core.get_aval(x).shape[d] for x, d in zip(leaves, dims) if d is not None}
  if not sizes:
    raise ValueError("vmap must have at least one non-None value in in_axes (or pass "
                     "axis_size)")
  if len(sizes) > 1:
    detail = ", ".join(f"axis {d} of an argument of shape {core.get_aval(x).shape}"
                       for x, d in zip(leaves, dims) if d is not None)
    raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped: {detail}")
  return sizes.pop()


def _broadcast_prefix(prefix: Any, tree: Any, what: str) -> list[Any]:
  """`prefix` (e.g. in_axes) expanded to one entry per leaf of `tree`."""
  leaves_tree = tree_util.tree_structure(tree)
  try:
    out: list[Any] = []
    tree_util.tree_map(lambda p, sub: out.extend([p] * tree_util.tree_structure(sub)
                                                 .num_leaves),
                       prefix, tree, is_leaf=lambda x: x is None)
    return out
  except ValueError as e:
    raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                     f"value, got specification {prefix} for value tree {leaves_tree}.") from e


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Hashable | None = None,
         axis_size: int | None = None) -> Callable:
  """Vectorizes `fun` over the axes `in_axes` of its arguments; outputs are stacked along
  `out_axes`. `None` marks an argument or output that is not mapped.

  Example:
    >>> vmap(lambda x, y: x * y, in_axes=(0, None))(jnp.arange(3.0), 2.0)
    Array([0., 2., 4.], dtype=float32)
  """
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)

  @functools.wraps(fun)
  def vmap_f(*args: Any, **kwargs: Any) -> Any:
    axes = in_axes if not isinstance(in_axes, (int, type(None))) else (in_axes,) * len(args)
    if isinstance(axes, tuple) and len(axes) != len(args):
      raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                       f"corresponding to the positional arguments passed to the function, "
                       f"but got len(in_axes)={len(axes)}, len(args)={len(args)}")
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    dims = _broadcast_prefix((tuple(axes), 0), (args, kwargs), "in_axes")
    dims = [None if d is None else _normalize_axis(d, core.get_aval(x).shape)
            for x, d in zip(leaves, dims)]
    size = axis_size if axis_size is not None else _mapped_axis_size(leaves, dims)
    out_tree_store: list = []
    flat_fun = _flatten_fun(fun, in_tree, out_tree_store)
    outs, out_dims = batching.batch_flat(flat_fun, leaves, dims, size, axis_name)
    out_tree = out_tree_store[0]
    want = _broadcast_prefix(out_axes, out_tree.unflatten([0] * out_tree.num_leaves),
                             "out_axes")
    outs = [_move_out_axis(o, d, w, size) for o, d, w in zip(outs, out_dims, want)]
    return out_tree.unflatten(outs)
  return vmap_f


def _normalize_axis(d: int, shape: tuple[int, ...]) -> int:
  if not isinstance(d, int):
    raise TypeError(f"vmap in_axes must be ints, None, or pytrees of those; got {d!r}")
  ndim = len(shape)
  if not -ndim <= d < ndim:
    raise ValueError(f"vmap was requested to map its argument along axis {d}, which "
                     f"implies that its rank should be at least {max(d + 1, -d)}, but is "
                     f"only {ndim} (its shape is {shape})")
  return d % ndim


def _move_out_axis(x: Any, have: int | None, want: int | None, size: int) -> Any:
  from jaxon._src.lax import lax
  if want is None:
    if have is not None:
      raise ValueError("vmap has mapped output but out_axes is None")
    return x
  if have is None:
    x = lax.broadcast(x, (size,))
    have = 0
  ndim = core.get_aval(x).ndim
  return batching.moveaxis(x, have, want % ndim)
