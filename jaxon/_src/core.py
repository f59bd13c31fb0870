"""The core: primitives, abstract values, traces and tracers, and the jaxpr language.

Terms used throughout jaxon:

- An *abstract value* (aval) describes a set of arrays by shape, dtype and weak type
  (`ShapedArray`); abstract evaluation computes output avals from input avals.
- A *primitive* is a named operation (`add`, `sin`, `pjit`) with rules registered per
  transformation: impl (run it), abstract eval, JVP, transpose, batching, lowering.
- A *trace* interprets primitives. `Primitive.bind` hands the primitive to the *current*
  trace; eager evaluation is just the bottom trace (`EvalTrace`). A transformation installs
  its trace (with the previous one as its parent), wraps the inputs in *tracers* that belong
  to it, and runs the function. Rules run with the parent trace current, so transformations
  nest; a trace treats tracers of other traces as constants, which is what keeps nested
  derivatives from confusing their perturbations.
- A *jaxpr* is the staged program: typed variables, equations `outvars = prim[params] invars`
  and outputs. A `ClosedJaxpr` pairs a jaxpr with the values of its constant variables.
- *Tangents* are the perturbations of forward mode; *cotangents* flow backward in reverse
  mode.
"""
from __future__ import annotations

import itertools
import math
import operator
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src import traceback_util
from jaxon._src.errors import (
    ConcretizationTypeError,
    JaxprTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

# ----------------------------------------------------------------------------- abstract values


class AbstractValue:
  __slots__ = ()


class ShapedArray(AbstractValue):
  """The abstract value of an array: its shape, dtype and whether its type is weak."""

  __slots__ = ("shape", "dtype", "weak_type", "_hash")
  array_abstraction_level = 1

  def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
    self.shape = tuple(d if type(d) in _symbolic_dim_types else int(d) for d in shape)
    try:
      self.dtype = np.dtype(dtype)
    except TypeError:
      if not dtypes.is_extended(dtype):
        raise
      self.dtype = dtype
    self.weak_type = bool(weak_type)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: math.prod(self.shape))

  @property
  def sharding(self) -> Any:
    """The type-level sharding: a `NamedSharding` over the empty abstract mesh, with one
    `None` per dimension (jaxon's types record no mesh axes; libraries such as optax read
    `jax.typeof(x).sharding.spec`). Built by the sharding layer, above core."""
    return _aval_sharding(self.ndim)

  def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self) -> ShapedArray:
    return self.update(weak_type=False) if self.weak_type else self

  def to_tangent_aval(self) -> ShapedArray:
    """Tangents of integer, boolean and extended-dtype (key) values have dtype float0 (they
    carry no data)."""
    if dtypes.is_inexact(self.dtype):
      return self
    return ShapedArray(self.shape, dtypes.float0)

  def str_short(self, short_dtypes: bool = True) -> str:
    if short_dtypes:
      name = dtypes.short_name(self.dtype)
    else:  # NumPy names float0's structured dtype `void`; JAX prints `float0`
      name = "float0" if self.dtype == dtypes.float0 else self.dtype.name
    return f"{name}[{','.join(map(str, self.shape))}]"

  def __eq__(self, other: object) -> bool:
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self) -> int:
    """Computed once: avals key every cache of the runtime, and are never changed."""
    try:
      return self._hash
    except AttributeError:
      self._hash = hash((self.shape, self.dtype, self.weak_type))
      return self._hash

  def __repr__(self) -> str:
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

  __str__ = __repr__


def _no_sharding_layer(ndim: int) -> Any:
  raise AttributeError("'ShapedArray' has no sharding before jaxon.sharding is imported")


_aval_sharding: Callable[[int], Any] = _no_sharding_layer


def set_aval_sharding(rule: Callable[[int], Any]) -> None:
  """Installed by `sharding_impls`: the `sharding` of an aval of rank `ndim`."""
  global _aval_sharding
  _aval_sharding = rule


# Symbolic dimensions (shape-polymorphic export, `export/shape_poly.py`): a dimension may be
# an object of one of these types instead of an int. It stands for an int: it does arithmetic
# with ints and other dimensions, compares equal only to an equal expression, hashes, and
# prints as JAX prints it (`f32[b,2*b]`); converting it to an int raises.
_symbolic_dim_types: set[type] = set()


def register_symbolic_dim_type(t: type) -> None:
  _symbolic_dim_types.add(t)


def is_symbolic_dim(d: Any) -> bool:
  return type(d) in _symbolic_dim_types


def is_constant_shape(shape: Sequence[Any]) -> bool:
  return not any(type(d) in _symbolic_dim_types for d in shape)


def max_dim(d1: Any, d2: Any) -> Any:
  """The larger of two dimensions; for symbolic ones that no comparison orders, the
  expression `max(d1, d2)` (the slice `x[-5:]` of a dimension `b` starts at `max(0, b - 5)`)."""
  if is_symbolic_dim(d1):
    return d1.max(d2)
  if is_symbolic_dim(d2):
    return d2.rmax(d1)
  return max(operator.index(d1), operator.index(d2))


def min_dim(d1: Any, d2: Any) -> Any:
  """The smaller of two dimensions, or the expression `min(d1, d2)` (`x[:5]`)."""
  if is_symbolic_dim(d1):
    return d1.min(d2)
  if is_symbolic_dim(d2):
    return d2.rmin(d1)
  return min(operator.index(d1), operator.index(d2))


def physical_aval(aval: ShapedArray) -> ShapedArray:
  """The aval of the data behind `aval`: for an extended dtype, the element dtype with the
  element shape appended (`key<fry>[4]` is stored as `u32[4,2]`); other avals as they are."""
  dtype = aval.dtype
  if not dtypes.is_extended(dtype):
    return aval
  return ShapedArray(aval.shape + dtype.element_shape, dtype.element_dtype)


def raise_to_shaped(aval: ShapedArray, weak_type: bool | None = None) -> ShapedArray:
  return aval if weak_type is None else aval.update(weak_type=weak_type)


_aval_handlers: dict[type, Callable[[Any], ShapedArray]] = {}


def _python_scalar_aval(x: Any) -> ShapedArray:
  """A Python int becomes the default int, so one that int cannot hold is rejected here,
  where every transformation and primitive bind first sees it (JAX's abstractification)."""
  dtype = dtypes.canonicalize_dtype(dtypes.dtype(x))
  if type(x) is int:
    bounds = np.iinfo(dtype)
    if not bounds.min <= x <= bounds.max:
      raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")
  return ShapedArray((), dtype, weak_type=type(x) is not bool)


def _numpy_aval(x: Any) -> ShapedArray:
  return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype))


for _t in (bool, int, float, complex):
  _aval_handlers[_t] = _python_scalar_aval
_aval_handlers[np.ndarray] = _numpy_aval


def get_aval(x: Any) -> ShapedArray:
  """The abstract value of a tracer, an array, a NumPy value or a Python scalar."""
  if isinstance(x, Tracer):
    return x.aval
  handler = _aval_handlers.get(type(x))
  if handler is not None:
    return handler(x)
  if isinstance(x, np.generic):
    return _numpy_aval(x)
  raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid jaxon type: "
                  "arguments of transformed functions must be arrays, NumPy values, "
                  "Python scalars, or pytrees of those.")


def register_aval_handler(t: type, handler: Callable[[Any], ShapedArray]) -> None:
  _aval_handlers[t] = handler


def valid_jaxtype(x: Any) -> bool:
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


# ----------------------------------------------------------------------------- primitives


# The latest live primitive of each name: how a jaxpr's text, which names its primitives,
# is read back (`jaxpr_parser`), user-defined primitives included.
primitives_by_name: weakref.WeakValueDictionary[str, Primitive] = weakref.WeakValueDictionary()


class Primitive:
  """A named operation whose meaning is given by rules registered per transformation."""

  multiple_results = False
  # Whether applying it acts outside the program (calls into Python to print or do I/O):
  # its equations are kept even when nothing reads their outputs (see `eqn_has_effects`).
  effectful = False
  # A check of the configuration (`jax_allow_f16_reductions`) that every application must
  # pass: abstract evaluation results are cached (`lax.utils.standard_primitive`, eager
  # signatures), so such a check cannot live in the rules.
  config_check: Callable[..., None] | None = None

  def __init__(self, name: str):
    self.name = name
    primitives_by_name[name] = self

  def __repr__(self) -> str:
    return self.name

  # `hook(primitive, trace, args, params)`, when set, stands in for `trace.process_primitive`:
  # how primitives that may take mutable refs (loops, cond, pjit) discharge them (`state`).
  bind_hook: Callable[[Primitive, Trace, Sequence[Any], dict], Any] | None = None

  def bind(self, *args: Any, **params: Any) -> Any:
    """Applies the primitive through the current trace."""
    if self.bind_hook is not None:
      return self.bind_hook(self, _trace_state.trace, args, params)
    return _trace_state.trace.process_primitive(self, args, params)

  def bind_with_trace(self, trace: Trace, args: Sequence[Any], params: dict) -> Any:
    with set_current_trace(trace):
      if self.bind_hook is not None:
        return self.bind_hook(self, trace, args, params)
      return trace.process_primitive(self, args, params)

  def impl(self, *args: Any, **params: Any) -> Any:
    raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")

  def abstract_eval(self, *avals: ShapedArray, **params: Any) -> Any:
    raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented")

  def def_impl(self, impl: Callable) -> Callable:
    self.impl = impl
    return impl

  def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
    self.abstract_eval = abstract_eval
    return abstract_eval

  def is_effectful(self, params: dict) -> bool:
    """Whether an application with `params` is effectful; a primitive whose params decide
    (an FFI call declared with a side effect) overrides it."""
    return self.effectful


# ----------------------------------------------------------------------------- traces


class Trace:
  """Interprets primitives applied to its tracers. Subclasses define `process_primitive`.

  Each trace remembers where the user entered jaxon to start it (`_origin`: one stack walk
  per trace), so that a tracer used after its transformation returned can say where it
  came from. While leak checking is on, `_tracer_sites` maps id(tracer) to the line that
  created it (see `set_tracer_creation_hook`)."""

  _tracer_sites: dict[int, str] | None = None

  def __init__(self) -> None:
    self._invalidated = False
    self._origin = _entry_site(sys._getframe(1))

  def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    raise NotImplementedError

  def invalidate(self) -> None:
    """Called when the transformation that owns this trace returns."""
    self._invalidated = True
    if trace_end_hook is not None:
      trace_end_hook(self)

  # A function with a custom derivative reaches each trace as a call (seed 002's
  # final-style `custom_jvp_call`/`custom_vjp_call`): the trace sees the Python callables,
  # not a jaxpr. `fun(*args)` gives the outputs; `jvp(*primals, *tangents)` the primal
  # then the tangent outputs; `fwd(*args)` the pair (outputs, residuals); `bwd(residuals,
  # output cotangents)` the input cotangents. Differentiation uses the rules, everything
  # else passes through to `fun`.

  def process_custom_jvp_call(self, primitive: Primitive, fun: Callable, jvp: Callable,
                              args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    raise NotImplementedError(f"{type(self).__name__} does not handle custom_jvp functions")

  def process_custom_vjp_call(self, primitive: Primitive, fun: Callable, fwd: Callable,
                              bwd: Callable, args: Sequence[Any], symbolic_zeros: bool
                              ) -> list[Any]:
    raise NotImplementedError(f"{type(self).__name__} does not handle custom_vjp functions")

  def check_not_escaped(self, x: Any) -> None:
    """Raises if `x` is a tracer of a transformation that has already returned."""
    if isinstance(x, Tracer) and x._trace._invalidated:
      raise escaped_tracer_error(x, f"while a {type(self).__name__} was tracing")

  def __repr__(self) -> str:
    return f"{type(self).__name__}"


class EvalTrace(Trace):
  """The bottom trace: runs each primitive's impl rule on concrete values."""

  def __init__(self) -> None:  # it never ends, and is made outside any user call
    self._invalidated = False
    self._origin = None
    # While not None, each application appends (primitive, args, params, outputs) here:
    # how `xla/eager_plans.py` learns which operation a library function applies. Each
    # thread has its own EvalTrace, so this is the calling thread's.
    self.observed: list[tuple] | None = None

  def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    for arg in args:
      if isinstance(arg, Tracer):
        if arg._trace._invalidated:
          raise escaped_tracer_error(arg, f"in eager evaluation of '{primitive.name}'")
        raise UnexpectedTracerError(
            f"Primitive '{primitive.name}' received the tracer {arg} outside of the "
            "transformation that created it.")
    out = primitive.impl(*args, **params)
    if eval_output_check is not None:
      eval_output_check(primitive, args, params, out)
    if self.observed is not None:
      self.observed.append((primitive, args, params, out))
    return out

  def process_custom_jvp_call(self, primitive: Primitive, fun: Callable, jvp: Callable,
                              args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    return fun(*args)

  def process_custom_vjp_call(self, primitive: Primitive, fun: Callable, fwd: Callable,
                              bwd: Callable, args: Sequence[Any], symbolic_zeros: bool
                              ) -> list[Any]:
    return fun(*args)


class _TraceState(threading.local):
  def __init__(self) -> None:
    self.trace: Trace = EvalTrace()


_trace_state = _TraceState()


def current_trace() -> Trace:
  return _trace_state.trace


# Where jaxlib's C++ jit learns whether a jitted call may run (`xla/cpp_dispatch.py`
# installs it): `staging_hook(True)` while a trace other than evaluation is current or a
# named axis is bound, when a call must go to `jit`'s Python path (to stage `pjit`, or to
# see the axes), and `staging_hook(False)` when that ends.
staging_hook: Callable[[bool], None] = lambda staging: None


def _refresh_staging_key() -> None:
  staging_hook(type(_trace_state.trace) is not EvalTrace or bool(_axis_env.frames))


@contextmanager
def set_current_trace(trace: Trace) -> Iterator[None]:
  state = _trace_state
  prev = state.trace
  state.trace = trace
  _refresh_staging_key()
  try:
    yield
  finally:
    state.trace = prev
    _refresh_staging_key()


def is_eval_trace_current() -> bool:
  return type(_trace_state.trace) is EvalTrace


# ----------------------------------------------------------------------------- axis environment
# The named axes in scope (vmap(axis_name=), pmap, shard_map), innermost last. A collective
# over a named axis looks its size up here rather than on its operands' tracers: its operand
# may not be mapped at all (`psum(1, 'i')`, a closed-over constant), and `axis_index` has no
# operand. Staging keeps the names in the jaxpr; the transformation that bound a name gives
# it meaning (a vmap performs the collective over its batch dimension, a shard_map lowers it
# to a cross-device collective).


class _AxisEnv(threading.local):
  def __init__(self) -> None:
    self.frames: tuple[tuple[Any, int], ...] = ()


_axis_env = _AxisEnv()


@contextmanager
def extend_axis_env(frames: Sequence[tuple[Any, int]]) -> Iterator[None]:
  """Binds each (name, size) in `frames` for the dynamic extent of the block."""
  prev = _axis_env.frames
  _axis_env.frames = prev + tuple(frames)
  _refresh_staging_key()
  try:
    yield
  finally:
    _axis_env.frames = prev
    _refresh_staging_key()


def axis_frames() -> tuple[tuple[Any, int], ...]:
  """The bound (name, size) pairs, outermost first: part of what a trace depends on."""
  return _axis_env.frames


def axis_size(name: Any) -> int:
  """The size of the innermost axis bound to `name`; NameError when none is."""
  for bound, size in reversed(_axis_env.frames):
    if bound == name:
      return size
  raise NameError(f"unbound axis name: {name}")


def axis_is_bound(name: Any) -> bool:
  return any(bound == name for bound, _ in _axis_env.frames)


# ----------------------------------------------------------------------------- debugging hooks
# Installed by jaxon's debugging modules (debug_nans, the leak checker) while their flags
# are on. When None, each costs one global read where it is consulted.

# `check(primitive, args, params, outputs)`: run on every eagerly evaluated primitive.
eval_output_check: Callable[[Primitive, Sequence[Any], dict, Any], None] | None = None
# `hook(trace)`: run as each transformation returns, once its trace is invalidated.
trace_end_hook: Callable[[Trace], None] | None = None


def set_tracer_creation_hook(hook: Callable[[Tracer, Trace], None] | None) -> None:
  """Runs `hook(tracer, trace)` as each tracer is created (None: stops). While set, each
  tracer class's `__init__` is wrapped (every one takes its trace first); unset, the
  originals are back, so creating a tracer costs nothing extra."""
  for cls, init in _unhooked_inits.items():
    cls.__init__ = init  # type: ignore[method-assign]
  _unhooked_inits.clear()
  if hook is None:
    return
  classes = [Tracer]
  while classes:
    cls = classes.pop()
    classes.extend(cls.__subclasses__())
    init = cls.__dict__.get("__init__")
    if init is not None:
      _unhooked_inits[cls] = init
      cls.__init__ = _with_hook(init, hook)  # type: ignore[method-assign]


_unhooked_inits: dict[type, Callable] = {}


def _with_hook(init: Callable, hook: Callable[[Tracer, Trace], None]) -> Callable:
  def hooked_init(self: Tracer, trace: Trace, *args: Any, **kwargs: Any) -> None:
    init(self, trace, *args, **kwargs)
    hook(self, trace)
  return hooked_init


# jaxon's own source files: their frames are skipped when naming the user's line.
_JAXON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_frame(frame: types.FrameType | None
               ) -> tuple[types.FrameType | None, types.CodeType | None]:
  """The innermost frame at or above `frame` that is not jaxon's, and the code of the jaxon
  function it called: the API the user entered (`vmap.<locals>.vmap_f`, …)."""
  entry = None
  while frame is not None and frame.f_code.co_filename.startswith(_JAXON_DIR):
    if frame.f_code is not traceback_util.WRAPPER_CODE:  # `api_boundary` passing calls on
      entry = frame.f_code
    frame = frame.f_back
  return frame, entry


def describe_frame(frame: types.FrameType) -> str:
  """`file:line:column (function)`, the column of the call the frame is making."""
  code = frame.f_code
  position = next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None), None)
  column = f":{position[2]}" if position and position[2] is not None else ""
  return f"{code.co_filename}:{frame.f_lineno}{column} ({code.co_name})"


def _entry_site(frame: types.FrameType | None) -> tuple[str, str, int, str] | None:
  """(the jaxon API the user called, and the file, line and function that called it)."""
  frame, entry = user_frame(frame)
  if frame is None or entry is None:
    return None
  api = entry.co_qualname.partition(".")[0]
  # A jitted call's Python path is entered from jaxlib's C++ function, through the
  # `cache_miss` that `xla/cpp_dispatch.pjit` gives it, or through `PjitFunction`.
  api = {"PjitFunction": "jit", "pjit": "jit", "PmapFunction": "pmap"}.get(api, api)
  return (api, frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


class Tracer:
  """A value being traced: it belongs to one trace and has an abstract value.

  Operators (`+`, `[]`, `.sum()`, …) are installed by `jaxon.numpy`, which sits above this
  layer; here live the conversions that need a concrete value and so must fail loudly.
  """

  __slots__ = ("_trace",)
  __array_priority__ = 1000

  @property
  def aval(self) -> ShapedArray:
    raise NotImplementedError

  def to_concrete_value(self) -> Any:
    """The concrete value behind this tracer, if the trace knows one (else None)."""
    return None

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  def _concrete(self, error: Callable[[Tracer], Exception]) -> Any:
    value = self.to_concrete_value()
    if value is None:
      raise error(self)
    return value

  def __bool__(self) -> bool:
    return bool(self._concrete(TracerBoolConversionError))

  def __int__(self) -> int:
    return int(self._concrete(lambda t: ConcretizationTypeError(
        t, f"The problem arose with the `int` function applied to {t.aval.str_short()}.")))

  def __float__(self) -> float:
    return float(self._concrete(lambda t: ConcretizationTypeError(
        t, f"The problem arose with the `float` function applied to {t.aval.str_short()}.")))

  def __complex__(self) -> complex:
    return complex(self._concrete(lambda t: ConcretizationTypeError(
        t, f"The problem arose with the `complex` function applied to {t.aval.str_short()}.")))

  def __index__(self) -> int:
    return int(self._concrete(TracerIntegerConversionError))

  def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
    raise TracerArrayConversionError(self)

  def __len__(self) -> int:
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self) -> Iterator[Any]:
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))

  def __hash__(self) -> int:
    raise TypeError(f"unhashable type: {type(self).__name__} (a traced array); "
                    "use it as a static argument only if it is a Python value")

  def __setitem__(self, idx: Any, value: Any) -> None:
    raise TypeError("jaxon arrays are immutable and do not support in-place item "
                    "assignment. Instead of x[idx] = y, use x = x.at[idx].set(y).")

  def __repr__(self) -> str:
    return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"


def escaped_tracer_error(tracer: Tracer, context: str) -> UnexpectedTracerError:
  """The error for `tracer` used after its transformation returned (`context` says how):
  it names the transformation, the user's line that called it and, if leak checking
  recorded it, the line that created the tracer."""
  trace = tracer._trace
  origin = trace._origin
  where = (f" (started inside `{origin[0]}`, called at {origin[1]}:{origin[2]} in "
           f"{origin[3]})" if origin else "")
  created = (trace._tracer_sites or {}).get(id(tracer))
  if created is not None:
    how = f"The leaked intermediate value was created on line {created}."
  else:
    how = ("To catch the leak earlier, and learn which line created the tracer, set the "
           "environment variable JAX_CHECK_TRACER_LEAKS=1 or use the "
           "`jaxon.checking_leaks()` context manager.")
  return UnexpectedTracerError(
      "Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
      "allowing for a reference to an intermediate value with type "
      f"{tracer.aval.str_short(short_dtypes=False)} wrapped in a {type(tracer).__name__} to "
      "escape the scope of the transformation.\nJAX transformations require that functions "
      "explicitly return their outputs, and disallow saving intermediate values to global "
      f"state.\nThe tracer {tracer} escaped from a {type(trace).__name__}{where}, which has "
      f"already returned, and was used again {context}.\n{how}", escaped=False)


def concrete_or_none(value: Any) -> Any:
  """The concrete value of `value` (itself unless it is a tracer), or None if unknown."""
  return value.to_concrete_value() if isinstance(value, Tracer) else value


def concrete_or_error(force: Callable[[Any], Any] | None, value: Any, context: str = "") -> Any:
  """`force(value)` if `value` is concrete; a ConcretizationTypeError naming `context` if not."""
  force = force or (lambda x: x)
  if isinstance(value, Tracer):
    concrete = value.to_concrete_value()
    if concrete is None:
      raise ConcretizationTypeError(value, context)
    return force(concrete)
  return force(value)


# ----------------------------------------------------------------------------- jaxprs


class Var:
  """A jaxpr variable: a typed name bound once."""

  __slots__ = ("aval",)

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  def __repr__(self) -> str:
    return f"Var({self.aval.str_short()})"


class DropVar(Var):
  """An equation output nothing reads; printed as `_`."""

  __slots__ = ()


class Literal:
  """A scalar constant written inline in a jaxpr."""

  __slots__ = ("val", "aval")

  def __init__(self, val: Any, aval: ShapedArray):
    self.val = val
    self.aval = aval

  def __repr__(self) -> str:
    text = str(self.val)
    # ml_dtypes' floats (bfloat16, float8_*) print whole values as integers: a reader
    # would take `1` for an int32.
    if (np.dtype(self.aval.dtype).kind in "fV" and self.aval.dtype != dtypes.float0
        and not any(c in text for c in ".eEin")):
      text += ".0"
    return text


Atom = Var | Literal


class JaxprEqn:
  __slots__ = ("invars", "outvars", "primitive", "params")

  def __init__(self, invars: list[Atom], outvars: list[Var], primitive: Primitive,
               params: dict):
    self.invars = invars
    self.outvars = outvars
    self.primitive = primitive
    self.params = params

  def replace(self, **kw: Any) -> JaxprEqn:
    fields = {k: getattr(self, k) for k in self.__slots__}
    fields.update(kw)
    return JaxprEqn(**fields)

  def __repr__(self) -> str:
    return pp_eqn(self, PrintContext()).format()


class Jaxpr:
  __slots__ = ("constvars", "invars", "outvars", "eqns")

  def __init__(self, constvars: list[Var], invars: list[Var], outvars: list[Atom],
               eqns: list[JaxprEqn]):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)

  in_avals = property(lambda self: [v.aval for v in self.invars])
  out_avals = property(lambda self: [v.aval for v in self.outvars])

  def __str__(self) -> str:
    return pp_jaxpr(self, PrintContext()).format()

  __repr__ = __str__

  def pretty_print(self, width: int = 80) -> str:
    return pp_jaxpr(self, PrintContext()).format(width)


class ClosedJaxpr:
  """A jaxpr with the values of its constant variables."""

  __slots__ = ("jaxpr", "consts", "__weakref__")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
    assert len(consts) == len(jaxpr.constvars)
    self.jaxpr = jaxpr
    self.consts = list(consts)

  in_avals = property(lambda self: self.jaxpr.in_avals)
  out_avals = property(lambda self: self.jaxpr.out_avals)
  eqns = property(lambda self: self.jaxpr.eqns)

  def __str__(self) -> str:
    return str(self.jaxpr)

  __repr__ = __str__

  def pretty_print(self, width: int = 80) -> str:
    return self.jaxpr.pretty_print(width)


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
  """Evaluates `jaxpr` by binding each equation's primitive through the current trace."""
  env: dict[Var, Any] = {}

  def read(atom: Atom) -> Any:
    return atom.val if type(atom) is Literal else env[atom]

  if len(args) != len(jaxpr.invars):
    raise TypeError(f"eval_jaxpr: the jaxpr takes {len(jaxpr.invars)} arguments, "
                    f"got {len(args)}")
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
    if not eqn.primitive.multiple_results:
      outs = (outs,)
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr) -> Callable[..., list[Any]]:
  return lambda *args: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def jaxprs_in(params: dict) -> Iterator[Jaxpr | ClosedJaxpr]:
  """The jaxprs a primitive's `params` carry (a loop body, branches, a nested jit)."""
  for value in params.values():
    for j in value if type(value) is tuple else (value,):
      if isinstance(j, (Jaxpr, ClosedJaxpr)):
        yield j


def has_effects(primitive: Primitive, params: dict) -> bool:
  """Whether applying `primitive` with `params` must happen even if nothing reads its
  outputs: it is effectful, or a jaxpr it carries has an effectful equation."""
  return primitive.is_effectful(params) or any(map(jaxpr_has_effects, jaxprs_in(params)))


def carries_jaxprs(params: dict) -> bool:
  return next(jaxprs_in(params), None) is not None


def eqn_has_effects(eqn: JaxprEqn) -> bool:
  return has_effects(eqn.primitive, eqn.params)


def jaxpr_has_effects(jaxpr: Jaxpr | ClosedJaxpr) -> bool:
  return any(map(eqn_has_effects, _open(jaxpr).eqns))


def check_jaxpr(jaxpr: Jaxpr) -> None:
  """Checks every variable is bound before use and every equation's types by abstract eval."""
  bound: set[Var] = set(jaxpr.constvars) | set(jaxpr.invars)
  for eqn in jaxpr.eqns:
    for atom in eqn.invars:
      if type(atom) is not Literal and atom not in bound:
        raise JaxprTypeError(f"jaxpr variable {atom} used before it is bound, in {eqn}")
    out = eqn.primitive.abstract_eval(*[a.aval for a in eqn.invars], **eqn.params)
    out_avals = out if eqn.primitive.multiple_results else [out]
    for v, aval in zip(eqn.outvars, out_avals):
      if v.aval.shape != aval.shape or v.aval.dtype != aval.dtype:
        raise JaxprTypeError(f"equation {eqn} binds {v.aval.str_short()} but its primitive "
                        f"gives {aval.str_short()}")
    bound.update(eqn.outvars)
  for atom in jaxpr.outvars:
    if type(atom) is not Literal and atom not in bound:
      raise JaxprTypeError(f"jaxpr output {atom} is never bound")


def _open(j: Jaxpr | ClosedJaxpr) -> Jaxpr:
  return j.jaxpr if isinstance(j, ClosedJaxpr) else j


# Printing lives in `core_printing`; its names stay reachable as `core.X` (the jaxpr
# classes above print through them).
from jaxon._src.core_printing import (  # noqa: E402
    PrintContext as PrintContext,
    literal_dtype_in_context as literal_dtype_in_context,
    literal_kind as literal_kind,
    pp_binders as pp_binders,
    pp_eqn as pp_eqn,
    pp_eqn_rules as pp_eqn_rules,
    pp_jaxpr as pp_jaxpr,
    pp_literal as pp_literal,
    pp_param as pp_param,
    pp_params as pp_params,
    pp_standard_eqn as pp_standard_eqn,
)
