"""Eager calls of library functions that apply one primitive: the primitive alone, from
the second call of a kind on.

An eager `x * 2.0` or `jnp.sin(x)` passes through several layers (the operator, NumPy's
promotion rules, the scalar's conversion, `lax`, `bind`) before it reaches its one
primitive, and in code that never repeats those layers cost as much again as running the
operation. JAX skips them by jitting its `jnp` functions (its C++ dispatch keys the call
by argument types). Here a function wrapped by `memoize_single_operation` watches its
first eager call of each kind (the avals of its Array arguments, the values and types of
its Python scalars, the trace-context flags) and, when that call applied exactly one
primitive and returned its result, keeps a *plan*: the primitive, its parameters and where
each operand came from (an argument, or a constant the function made, such as the
scalar's device copy). Later calls of that kind apply the primitive directly (with its
eager signature, found once, where it runs through `deferred.apply_primitive`), so eager
batching (`deferred.py`) sees the same operation as before.

A plan is only right for functions whose primitive and constants follow from the kind
alone: functions that never read their operands' values (`power` looks at its exponent's
type, which the kind holds, as it holds a scalar's value). The wrapped functions are chosen
by hand: `jnp`'s elementwise arithmetic, comparisons and math functions, `sum`, `prod`,
`max`, `min`, `matmul` (`@`) and `dot`. A call of any other kind (a tracer, a keyword, a
NumPy array, a float zero, whose sign the key would lose) runs the function, as does every
call while `jax_debug_nans` or `jax_debug_infs` may be on (their checks are made as
primitives are bound). A warning the function gives is given on the call that records its
plan, not on the calls that replay it.
"""
from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Callable
from typing import Any

from jaxon._src import caches, core
from jaxon._src.config import values as config_values
from jaxon._src.core import EvalTrace
from jaxon._src.xla import deferred
from jaxon._src.xla.array import Array

_MAX_PLANS = 512  # per function: a key holds a scalar's value, and code may vary it
_NO_PLAN = False  # a kind whose call applies other than one primitive: run the function
_plan_tables: list[dict] = []
_record_lock = threading.Lock()


def memoize_single_operation(fn: Callable[..., Any]) -> Callable[..., Any]:
  """`fn`, replaying its one primitive on eager calls of a kind seen before (see the
  module's docstring); a call with keyword arguments runs `fn`."""
  plans: dict[Any, Any] = {}
  _plan_tables.append(plans)

  def call(*args: Any, **kwargs: Any) -> Any:
    if kwargs:
      return fn(*args, **kwargs)
    key = _kind(args)
    trace = core.current_trace()
    if (key is None or type(trace) is not EvalTrace or trace.observed is not None
        or core.eval_output_check is not None):
      return fn(*args)
    plan = plans.get(key)
    if plan is None or plan is not _NO_PLAN and plan[0] is not config_values.trace_context:
      return _record(plans, key, fn, args, trace)
    if plan is _NO_PLAN:
      return fn(*args)
    _, apply, operation, take, consts = plan
    try:
      return apply(operation, args if take is None else take(args + consts))
    except Exception:  # a deleted constant, say: the function says what is wrong, or mends it
      plans.pop(key, None)
      return fn(*args)

  return functools.wraps(fn)(call)


def _kind(args: tuple) -> Any:
  """The dict key of a call: the aval of each Array argument, the value and type of each
  Python int and nonzero float (0.0 == -0.0, whose signs differ); None for a call of any
  other kind. (1 == 1.0, hence the type; an aval equals neither, so no two kinds
  collide.)"""
  if len(args) == 1:  # the common kinds first, without a loop
    x, = args
    return (x.aval,) if type(x) is Array else None
  if len(args) == 2:
    x, y = args
    if type(x) is Array:
      if type(y) is Array:
        return x.aval, y.aval
      if type(y) is int or type(y) is float and y:
        return x.aval, y, type(y)
  key = []
  for x in args:
    t = type(x)
    if t is Array:
      key.append(x.aval)
    elif t is int or t is float and x:
      key.append(x)
      key.append(t)
    else:
      return None
  return tuple(key)


def _record(plans: dict, key: Any, fn: Callable[..., Any], args: tuple,
            trace: EvalTrace) -> Any:
  """Runs `fn` watching its primitives, and keeps the plan they make (or `_NO_PLAN`). A
  call that passes one Array twice (`x * x`) keeps nothing: its operands would not say
  which argument each one is, and `x * y` has the same key."""
  if len({id(x) for x in args}) != len(args):
    return fn(*args)
  trace.observed = observed = []
  try:
    out = fn(*args)
  finally:
    trace.observed = None
  plan = _plan(observed, args, out)
  with _record_lock:
    if len(plans) >= _MAX_PLANS:
      del plans[next(iter(plans))]  # first in, first out
    plans[key] = plan
  return out


def _plan(observed: list[tuple], args: tuple, out: Any) -> Any:
  """The plan of a call that applied one primitive of one result (without a bind hook) and
  returned that result: (trace context, `apply`, `operation`, operand getter (None: the
  arguments themselves), constants), where `apply(operation, operands)` applies it."""
  if len(observed) != 1:
    return _NO_PLAN
  prim, operands, params, result = observed[0]
  if prim.multiple_results or prim.bind_hook is not None or result is not out:
    return _NO_PLAN
  consts: list[Any] = []
  positions = []
  for x in operands:
    position = next((i for i, arg in enumerate(args) if arg is x), None)
    if position is None:
      if isinstance(x, core.Tracer):
        return _NO_PLAN
      position = len(args) + len(consts)
      consts.append(x)
    positions.append(position)
  if positions == list(range(len(args))):
    take = None  # the operands are the arguments, as in `jnp.sin(x)` and `x + y`
  elif len(positions) == 1:
    take = functools.partial(_take_one, positions[0])
  else:
    take = operator.itemgetter(*positions)
  signature = deferred.known_signature(prim, operands, params)
  if signature is None:
    apply, operation = _apply_impl, (prim, params)
  elif prim.config_check is None:
    apply, operation = deferred.apply_signature, signature
  else:
    apply, operation = _apply_checked, signature
  return config_values.trace_context, apply, operation, take, tuple(consts)


def _apply_checked(signature: Any, operands: tuple) -> Any:
  """Applies a signature whose primitive has a check that every application must pass."""
  signature.prim.config_check(*signature.in_avals, **signature.params)
  return deferred.apply_signature(signature, operands)


def _apply_impl(operation: tuple, operands: tuple) -> Any:
  prim, params = operation
  return prim.impl(*operands, **params)


def _take_one(position: int, operands: tuple) -> tuple:
  return (operands[position],)


@caches.register
def _clear_plans() -> None:
  for plans in _plan_tables:
    plans.clear()
