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
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from jaxon._src import dtypes
from jaxon._src import pretty_printer as pp
from jaxon._src.errors import (
    ConcretizationTypeError,
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

  __slots__ = ("shape", "dtype", "weak_type")
  array_abstraction_level = 1

  def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
    self.shape = tuple(int(d) for d in shape)
    self.dtype = np.dtype(dtype)
    self.weak_type = bool(weak_type)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self) -> ShapedArray:
    return self.update(weak_type=False) if self.weak_type else self

  def to_tangent_aval(self) -> ShapedArray:
    """Tangents of integer and boolean values have dtype float0 (they carry no data)."""
    if dtypes.is_inexact(self.dtype):
      return self
    return ShapedArray(self.shape, dtypes.float0)

  def str_short(self, short_dtypes: bool = True) -> str:
    name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
    return f"{name}[{','.join(map(str, self.shape))}]"

  def __eq__(self, other: object) -> bool:
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self) -> int:
    return hash((self.shape, self.dtype, self.weak_type))

  def __repr__(self) -> str:
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

  __str__ = __repr__


def raise_to_shaped(aval: ShapedArray, weak_type: bool | None = None) -> ShapedArray:
  return aval if weak_type is None else aval.update(weak_type=weak_type)


_aval_handlers: dict[type, Callable[[Any], ShapedArray]] = {}


def _python_scalar_aval(x: Any) -> ShapedArray:
  dtype = dtypes.canonicalize_dtype(dtypes.dtype(x))
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


class Primitive:
  """A named operation whose meaning is given by rules registered per transformation."""

  multiple_results = False

  def __init__(self, name: str):
    self.name = name

  def __repr__(self) -> str:
    return self.name

  def bind(self, *args: Any, **params: Any) -> Any:
    """Applies the primitive through the current trace."""
    return _trace_state.trace.process_primitive(self, args, params)

  def bind_with_trace(self, trace: Trace, args: Sequence[Any], params: dict) -> Any:
    with set_current_trace(trace):
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


# ----------------------------------------------------------------------------- traces


class Trace:
  """Interprets primitives applied to its tracers. Subclasses define `process_primitive`."""

  def __init__(self) -> None:
    self._invalidated = False

  def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    raise NotImplementedError

  def invalidate(self) -> None:
    """Called when the transformation that owns this trace returns."""
    self._invalidated = True

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
      raise UnexpectedTracerError(
          f"Encountered an unexpected tracer {x} from a transformation that already "
          f"finished, while running {type(self).__name__}.")

  def __repr__(self) -> str:
    return f"{type(self).__name__}"


class EvalTrace(Trace):
  """The bottom trace: runs each primitive's impl rule on concrete values."""

  def process_primitive(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
    for arg in args:
      if isinstance(arg, Tracer):
        self.check_not_escaped(arg)
        raise UnexpectedTracerError(
            f"Primitive '{primitive.name}' received the tracer {arg} outside of the "
            "transformation that created it.")
    return primitive.impl(*args, **params)

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


@contextmanager
def set_current_trace(trace: Trace) -> Iterator[None]:
  state = _trace_state
  prev = state.trace
  state.trace = trace
  try:
    yield
  finally:
    state.trace = prev


def is_eval_trace_current() -> bool:
  return type(_trace_state.trace) is EvalTrace


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
    return str(self.val)


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


def check_jaxpr(jaxpr: Jaxpr) -> None:
  """Checks every variable is bound before use and every equation's types by abstract eval."""
  bound: set[Var] = set(jaxpr.constvars) | set(jaxpr.invars)
  for eqn in jaxpr.eqns:
    for atom in eqn.invars:
      if type(atom) is not Literal and atom not in bound:
        raise TypeError(f"jaxpr variable {atom} used before it is bound, in {eqn}")
    out = eqn.primitive.abstract_eval(*[a.aval for a in eqn.invars], **eqn.params)
    out_avals = out if eqn.primitive.multiple_results else [out]
    for v, aval in zip(eqn.outvars, out_avals):
      if v.aval.shape != aval.shape or v.aval.dtype != aval.dtype:
        raise TypeError(f"equation {eqn} binds {v.aval.str_short()} but its primitive "
                        f"gives {aval.str_short()}")
    bound.update(eqn.outvars)
  for atom in jaxpr.outvars:
    if type(atom) is not Literal and atom not in bound:
      raise TypeError(f"jaxpr output {atom} is never bound")


# ----------------------------------------------------------------------------- printing


def _alphabetic_name(n: int) -> str:
  s = ""
  while not s or n:
    n, i = divmod(n, 26)
    s = chr(97 + i) + s
  return s


class PrintContext:
  """Names variables `a`, `b`, … in the order a jaxpr's text first mentions them."""

  def __init__(self) -> None:
    self.names: dict[Var, str] = {}
    self._counter = itertools.count()

  def name(self, v: Var) -> str:
    if isinstance(v, DropVar):
      return "_"
    name = self.names.get(v)
    if name is None:
      name = self.names[v] = _alphabetic_name(next(self._counter))
    return name

  def atom(self, a: Atom) -> str:
    return repr(a) if type(a) is Literal else self.name(a)


# Primitives that print themselves specially (pjit names its inner variables after the
# outer ones): rule(eqn, context) -> Doc.
pp_eqn_rules: dict[Primitive, Callable[[JaxprEqn, PrintContext], pp.Doc]] = {}


def pp_binders(vars_: Sequence[Var], context: PrintContext) -> pp.Doc:
  return pp.text(" ".join(f"{context.name(v)}:{v.aval.str_short()}" for v in vars_))


def pp_param(key: str, value: Any, context: PrintContext) -> pp.Doc:
  if isinstance(value, (Jaxpr, ClosedJaxpr)):
    body = pp_jaxpr(_open(value), context)
  elif type(value) is tuple and value and all(
      isinstance(j, (Jaxpr, ClosedJaxpr)) for j in value):
    body = pp.group(pp.nest(2, pp.concat([
        pp.text("("), pp.brk(""),
        pp.join(pp.brk(), [pp_jaxpr(_open(j), context) for j in value])]))
        + pp.brk("") + pp.text(")"))
  else:
    body = pp.text(str(value))
  return pp.text(f"{key}=") + body


def _open(j: Jaxpr | ClosedJaxpr) -> Jaxpr:
  return j.jaxpr if isinstance(j, ClosedJaxpr) else j


def pp_params(params: dict, context: PrintContext, order: Sequence[str] | None = None
              ) -> pp.Doc:
  if not params:
    return pp.nil()
  pairs = [pp_param(k, params[k], context) for k in (order or sorted(params))]
  return pp.group(pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pp.join(pp.brk(), pairs)]))
                  + pp.brk("") + pp.text("]"))


def pp_eqn(eqn: JaxprEqn, context: PrintContext) -> pp.Doc:
  rule = pp_eqn_rules.get(eqn.primitive)
  return rule(eqn, context) if rule is not None else pp_standard_eqn(eqn, context)


def pp_standard_eqn(eqn: JaxprEqn, context: PrintContext,
                    param_order: Sequence[str] | None = None) -> pp.Doc:
  """`outs = name[params] operands`: the binders are named before the params are printed;
  params print sorted by name unless `param_order` says otherwise."""
  lhs = pp_binders(eqn.outvars, context)
  rhs = [pp.text(eqn.primitive.name), pp_params(eqn.params, context, param_order),
         pp.text(" " + " ".join(context.atom(a) for a in eqn.invars))]
  return pp.concat([lhs, pp.text(" = "), *rhs]) if eqn.outvars else pp.concat(rhs)


def pp_jaxpr(jaxpr: Jaxpr, context: PrintContext) -> pp.Doc:
  constvars = pp_binders(jaxpr.constvars, context)
  invars = pp_binders(jaxpr.invars, context)
  eqns = pp.join(pp.brk("; "), [pp_eqn(e, context) for e in jaxpr.eqns])
  outs = ", ".join(context.atom(a) for a in jaxpr.outvars)
  outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
  return pp.group(pp.nest(2, pp.concat([
      pp.text("{ lambda "), constvars, pp.text("; "), invars, pp.text(". let"),
      pp.nest(2, pp.brk() + eqns), pp.brk(), pp.text("in " + outs)])) + pp.text(" }"))
