"""JAX's `linear_util`: functions wrapped with a stack of transformations, applied when
the function is finally called, each able to leave an auxiliary output in a store.

jaxon's own transformations are plain Python closures; this module exists for libraries
written against `jax.extend.linear_util` / `jax.api_util` (which wrap functions in
`WrappedFun` before flattening them), so it follows JAX's contract: `transformation2`
generators take the inner function first, `transformation` and
`transformation_with_aux` ones are old-style generators that yield the arguments to call
with and receive the answer.
"""
from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple


class StoreException(Exception):
  """A store read before it was written, or written twice."""


_EMPTY = object()


class Store:
  """Holds one value, written once: the auxiliary output of a transformation."""
  __slots__ = ("_val",)

  def __init__(self) -> None:
    self._val: Any = _EMPTY

  def store(self, val: Any) -> None:
    if self._val is not _EMPTY:
      raise StoreException("Store occupied")
    self._val = val

  def reset(self) -> None:
    self._val = _EMPTY

  @property
  def val(self) -> Any:
    if self._val is _EMPTY:
      raise StoreException("Store empty")
    return self._val

  def __bool__(self) -> bool:
    return self._val is not _EMPTY


class EqualStore(Store):
  """A store that accepts a second write of an equal value (a function traced twice)."""
  __slots__ = ()

  def store(self, val: Any) -> None:
    if self._val is not _EMPTY:
      try:
        equal = bool(self._val == val)
      except Exception:  # noqa: BLE001 (values whose == fails count as different)
        equal = False
      if not equal:
        raise StoreException("Store occupied with not-equal value")
      return
    self._val = val


class DebugInfo(NamedTuple):
  """What a traced function was traced for, its name and location, and the names of its
  flat arguments and results (None when unknown)."""
  traced_for: str
  func_src_info: str
  arg_names: tuple[str, ...] | None
  result_paths: tuple[str, ...] | Callable[[], tuple[str, ...]] | None

  @property
  def func_name(self) -> str:
    return self.func_src_info.split(" ")[0]

  def resolve_result_paths(self) -> DebugInfo:
    if callable(self.result_paths):
      return self._replace(result_paths=tuple(self.result_paths()))
    return self


def _fun_name(f: Any) -> str:
  if isinstance(f, functools.partial):
    return _fun_name(f.func)
  return getattr(f, "__name__", "<unnamed function>")


def _src_info(f: Callable) -> str:
  code = getattr(getattr(f, "__wrapped__", f), "__code__", None)
  if code is None:
    return _fun_name(f)
  return f"{_fun_name(f)} at {code.co_filename}:{code.co_firstlineno}"


class WrappedFun:
  """`f` with `transforms` applied on the way in and out: calling `call_wrapped` runs the
  outermost transformation, which calls the next, down to `f(*args, **params)`."""
  __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type",
               "debug_info")

  def __init__(self, f: Callable, f_transformed: Callable,
               transforms: tuple[tuple[Callable, tuple], ...], stores: tuple[Store | None, ...],
               params: tuple[tuple[str, Any], ...], in_type: Any, debug_info: DebugInfo):
    self.f = f
    self.f_transformed = f_transformed
    self.transforms = transforms
    self.stores = stores
    self.params = params
    self.in_type = in_type
    self.debug_info = debug_info

  @property
  def __name__(self) -> str:
    return _fun_name(self.f)

  def wrap(self, gen: Callable, gen_static_args: tuple, out_store: Store | None
           ) -> WrappedFun:
    """This function with one more transformation (outermost), writing to `out_store`."""
    extra = () if out_store is None else (out_store,)
    inner = functools.partial(gen, self.f_transformed, *extra, *gen_static_args)
    return WrappedFun(self.f, inner, ((gen, gen_static_args), *self.transforms),
                      (out_store, *self.stores), self.params, None, self.debug_info)

  def populate_stores(self, stores: tuple[Store | None, ...]) -> None:
    """Copies the values of another call's `stores` into this one's (a cache hit)."""
    for mine, theirs in zip(self.stores, stores):
      if mine is not None:
        mine.store(theirs.val)

  def call_wrapped(self, *args: Any, **kwargs: Any) -> Any:
    return self.f_transformed(*args, **kwargs)

  def replace_debug_info(self, debug_info: DebugInfo) -> WrappedFun:
    return WrappedFun(self.f, self.f_transformed, self.transforms, self.stores, self.params,
                      self.in_type, debug_info)

  def __repr__(self) -> str:
    stack = "\n".join(f"{i}   : {_fun_name(gen)}   {args}"
                      for i, (gen, args) in enumerate(self.transforms))
    return f"Wrapped function:\n{stack}\nCore: {_fun_name(self.f)}\n"

  def __hash__(self) -> int:
    return hash((self.f, self.transforms, self.params, self.in_type))

  def __eq__(self, other: object) -> bool:
    return (isinstance(other, WrappedFun) and self.f == other.f
            and self.transforms == other.transforms and self.params == other.params
            and self.in_type == other.in_type)


def wrap_init(f: Callable, params: dict[str, Any] | None = None, *,
              debug_info: DebugInfo | None = None) -> WrappedFun:
  """`f` as a WrappedFun with no transformation yet; `params` are passed to `f` as
  keyword arguments on every call."""
  params_tuple = () if params is None else tuple(sorted(params.items()))
  if debug_info is None:
    debug_info = DebugInfo("unknown", _src_info(f), None, None)

  def call_f(*args: Any, **kwargs: Any) -> Any:
    return f(*args, **dict(params_tuple), **kwargs)
  return WrappedFun(f, call_f, (), (), params_tuple, None, debug_info)


def _curry(transform: Callable) -> Callable:
  """`transform(gen)` gives `fun, *static -> ...`; `transform(gen, fun, *static)` applies."""
  @functools.wraps(transform)
  def curried(gen: Callable, *rest: Any, **kwargs: Any) -> Any:
    if not rest:
      return functools.partial(transform, gen, **kwargs)
    return transform(gen, *rest, **kwargs)
  return curried


@_curry
def transformation2(gen: Callable, fun: WrappedFun, *gen_static_args: Hashable) -> WrappedFun:
  """Adds `gen(inner_f, *gen_static_args, *args, **kwargs)` around `fun`."""
  return fun.wrap(gen, gen_static_args, None)


@_curry
def transformation_with_aux2(gen: Callable, fun: WrappedFun, *gen_static_args: Hashable,
                             use_eq_store: bool = False, unk_names: bool = False
                             ) -> tuple[WrappedFun, Callable[[], Any]]:
  """Adds `gen(inner_f, store, *gen_static_args, *args, **kwargs)` around `fun`; returns
  the new function and a thunk reading what `gen` stored (after a call)."""
  out_store = EqualStore() if use_eq_store else Store()
  return fun.wrap(gen, gen_static_args, out_store), lambda: out_store.val


def _run_generator(gen: Callable, f: Callable, args: tuple, kwargs: dict) -> Any:
  instance = gen(*args, **kwargs)
  inner_args, inner_kwargs = next(instance)
  return instance.send(f(*inner_args, **inner_kwargs))


@_curry
def transformation(gen: Callable, fun: WrappedFun, *gen_static_args: Hashable) -> WrappedFun:
  """Adds an old-style generator `gen(*gen_static_args, *args, **kwargs)` around `fun`:
  it yields `(args, kwargs)` for the inner call, receives its answer, yields its own."""
  def gen2(f: Callable, *args: Any, **kwargs: Any) -> Any:
    return _run_generator(gen, f, args, kwargs)
  return fun.wrap(gen2, gen_static_args, None)


@_curry
def transformation_with_aux(gen: Callable, fun: WrappedFun, *gen_static_args: Hashable
                            ) -> tuple[WrappedFun, Callable[[], Any]]:
  """As `transformation`, but the generator's last yield is `(answer, aux)`; `aux` goes
  to the returned thunk."""
  def gen2(f: Callable, store: Store, *args: Any, **kwargs: Any) -> Any:
    ans, aux = _run_generator(gen, f, args, kwargs)
    store.store(aux)
    return ans
  return transformation_with_aux2(gen2, fun, *gen_static_args)


def merge_linear_aux(aux1: Callable[[], Any], aux2: Callable[[], Any]) -> tuple[bool, Any]:
  """Of two auxiliary-output thunks exactly one of which was written: `(True, value)` if
  the first, `(False, value)` if the second."""
  try:
    out1 = aux1()
  except StoreException:
    try:
      out2 = aux2()
    except StoreException:
      raise StoreException("neither store occupied") from None
    return False, out2
  try:
    aux2()
  except StoreException:
    return True, out1
  raise StoreException("both stores occupied")


def cache(call: Callable, *, explain: Callable | None = None) -> Callable:
  """Memoizes `call(fun: WrappedFun, *args)` on `(fun, args)`, weakly in `fun.f`: a hit
  refills `fun`'s stores from the first call's."""
  tables: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()

  def memoized(fun: WrappedFun, *args: Any) -> Any:
    table = tables.setdefault(fun.f, {})
    key = (fun.transforms, fun.params, fun.in_type, args)
    hit = table.get(key)
    if hit is not None:
      result, stores = hit
      fun.populate_stores(stores)
      return result
    if explain is not None:
      explain(fun, False, table, key, 0.0)
    result = call(fun, *args)
    table[key] = (result, fun.stores)
    return result

  memoized.cache_clear = lambda: tables.clear()  # type: ignore[attr-defined]
  return memoized
