"""Eager calls of library functions: the primitives they apply, alone, from the second
call of a kind on.

An eager `x * 2.0` or `jnp.sin(x)` passes through several layers (the operator, NumPy's
promotion rules, the scalar's conversion, `lax`, `bind`) before it reaches its primitive,
and in code that never repeats those layers cost as much again as running the operation.
JAX skips them by jitting its `jnp` functions (its C++ dispatch keys the call by argument
types). Here a function wrapped by `memoize_eager_operations` watches its first eager call
of each kind (the avals of its Array arguments, the values and types of its Python
scalars, the type and length of each list or tuple argument and the same of its elements,
the trace-context flags) and, when that call applied at most `_MAX_STEPS` primitives and
returned results of them (one, or a tuple, list or named tuple of them), keeps a *plan*:
the primitives, their parameters and where each operand came from (an argument, a constant
the function made, such as the scalar's device copy, or an earlier primitive's result).
Later calls of that kind apply the primitives directly, in order (each with its eager
signature, found once, where it runs through `deferred.apply_primitive`), so eager
batching (`deferred.py`) sees the same operations as before. A plan of several primitives
(`mean`, `var`, `softmax`) that comes again is compiled into one program, fenced as a
batch is so that it computes what the primitives compute one by one, and runs as one
executable call, as JAX runs its jitted `jnp` functions (`_Steps`). A primitive that is
the identity when evaluated (`stop_gradient`) is left out of a plan.

A plan is only right for functions whose primitives and constants follow from the kind
alone. A call that reads the value of an argument, or of a result computed from one
(`Array._value`, where every host read goes; `int(n)` of a count given as an Array), keeps
no plan; values read from constants the function made are fine. Not caught: state other
than the trace-context flags. The wrapped functions are chosen by hand among those whose
primitives follow from shapes, dtypes and plain parameters: `jnp`'s elementwise
arithmetic, comparisons and math functions (those of the `_ufunc` table, `clip`,
`isclose`, …), `where` of three arguments, the reductions and statistics (`sum` to `std`,
`cumsum`, `average`, `cov`, …), products (`@`, `dot`, `outer`, `kron`, …), moves of axes
and diagonals (`ravel`, `moveaxis`, `tril`, `diag`, `take`, `take_along_axis`, …), joins
(`stack`, `concatenate`, `hstack`, `vstack`, `dstack`, `column_stack`), `pad`, `tile`, the
one-dimensional FFTs (`fft`, `ifft`, `rfft`, `irfft`), `split`, `array_split`, `divmod`,
sorting (`sort`, `median`, `quantile`), `linspace`, `linalg`'s `norm`, `solve`, `inv`,
`det`, `slogdet`, `cholesky`, `qr`, `svd` and `eigh`, `logsumexp`, and the activations
of `nn` (not the `custom_jvp` ones, `relu` and `relu6`).
Keyword arguments are part of the kind when they are None, bools, ints, floats or tuples
of ints (`axis=0`, `keepdims=True`, `atol=0.5`). A call of any other kind (a tracer, a
NumPy array, a list of lists, a NaN, whose sign and payload the key would lose, a keyword
of another type) runs the function, as does every call while `jax_debug_nans` or
`jax_debug_infs` may be on (their checks are made as primitives are bound). A warning the
function gives is given on the call that records its plan, not on the calls that replay
it.
"""
from __future__ import annotations

import collections
import functools
import operator
import threading
from collections.abc import Callable
from typing import Any

from jaxon._src import caches, core
from jaxon._src.config import values as config_values
from jaxon._src.core import EvalTrace
from jaxon._src.xla import array as array_mod
from jaxon._src.xla import deferred, executable
from jaxon._src.xla.array import Array

_MAX_PLANS = 512  # per function: a key holds a scalar's value, and code may vary it
_MAX_STEPS = 32  # primitives in a plan: the wrapped functions apply a few (logsumexp 21)
_NO_PLAN = False  # a kind whose call makes no plan (see `_plan`): run the function
_SAME_AS_FIRST = ("same as", 0)
_plan_tables: list[dict] = []
_record_lock = threading.Lock()


def memoize_eager_operations(fn: Callable[..., Any]) -> Callable[..., Any]:
  """`fn`, replaying its primitives on eager calls of a kind seen before (see the module's
  docstring)."""
  plans: dict[Any, Any] = {}
  _plan_tables.append(plans)

  def call(*args: Any, **kwargs: Any) -> Any:
    key = _kind(args)
    f = fn
    if key is _SEQUENCES:
      f, args, key = _of_elements(fn, args)
    if kwargs and key is not None:
      key = _with_keywords(key, kwargs)
    trace = core.current_trace()
    if (key is None or type(trace) is not EvalTrace or trace.observed is not None
        or core.eval_output_check is not None):
      return f(*args, **kwargs)
    plan = plans.get(key)
    if plan is None or plan is not _NO_PLAN and plan[0] is not config_values.trace_context:
      return _record(plans, key, functools.partial(f, **kwargs) if kwargs else f, args,
                     trace)
    if plan is _NO_PLAN:
      return f(*args, **kwargs)
    _, apply, operation, take, consts = plan
    try:
      return apply(operation, args if take is None else take(args + consts))
    except Exception:  # a deleted constant, say: the function says what is wrong, or mends it
      plans.pop(key, None)
      return f(*args, **kwargs)

  return functools.wraps(fn)(call)


def _kind(args: tuple) -> Any:
  """The dict key of a call: the aval of each Array argument (or, for an Array passed
  again, `("same as", its first position)`: `x * x` is not of `x * y`'s kind), the value
  and type of each Python int and float; `_SEQUENCES` for a call with a list or tuple
  argument (see `_of_elements`); None for a call of any other kind. (1 == 1.0,
  hence the type; an aval equals neither, so no two kinds collide. A float zero is keyed
  by its text, which tells 0.0 from -0.0; a NaN, whose sign and payload its text would
  lose, is not keyed.)"""
  if len(args) == 1:  # the common kinds first, without a loop
    x, = args
    if type(x) is Array:
      return (x.aval,)
  elif len(args) == 2:
    x, y = args
    if type(x) is Array:
      if type(y) is Array:
        return x.aval, (y.aval if y is not x else _SAME_AS_FIRST)
      if type(y) is int or type(y) is float and y and y == y:
        return x.aval, y, type(y)
  key: list = []
  first: dict[int, int] = {}
  for i, x in enumerate(args):
    if type(x) is Array:
      j = first.setdefault(id(x), i)
      key.append(x.aval if j == i else ("same as", j))
    elif (number := _number_key(x)) is not None:
      key.extend(number)
    elif type(x) is list or type(x) is tuple:
      return _SEQUENCES
    else:
      return None
  return tuple(key)


_SEQUENCES = object()  # `_kind` of a call with a list or tuple argument: see `_of_elements`


def _of_elements(fn: Callable[..., Any], args: tuple) -> tuple[Callable[..., Any], tuple, Any]:
  """A call with lists or tuples among its arguments (`stack([x, y])`, `roll(x, (1, 2), (0, 1))`)
  as a call of their elements: a function of the elements that rebuilds the sequences
  and calls `fn`, the elements in their places, and the kind of that call, with each
  sequence's type and length (None when an element is of no kind: a nested list)."""
  elements: list = []
  layout = []
  for x in args:
    if type(x) is list or type(x) is tuple:
      elements.extend(x)
      layout.append((type(x), len(x)))
    else:
      elements.append(x)
      layout.append(None)

  def of_elements(*values: Any, **kwargs: Any) -> Any:
    rebuilt, i = [], 0
    for part in layout:
      if part is None:
        rebuilt.append(values[i])
        i += 1
      else:
        sequence, n = part
        rebuilt.append(sequence(values[i:i + n]))
        i += n
    return fn(*rebuilt, **kwargs)
  elements = tuple(elements)
  key = _kind(elements)
  if key is None or key is _SEQUENCES:
    return of_elements, elements, None
  return of_elements, elements, (*key, tuple(layout))


def _number_key(x: Any) -> tuple[Any, type] | None:
  """A Python int's or float's part of a key: (value, type), a float zero keyed by its
  text; None for a NaN or any other object. (`_kind`'s two-argument path inlines it.)"""
  t = type(x)
  if t is int or t is float and x == x:
    return (x if x else repr(x)), t
  return None


def _with_keywords(key: tuple, kwargs: dict) -> tuple | None:
  """`key` with the call's keyword arguments (`axis=0`, `keepdims=True`, `atol=0.5`), in
  the order given (another order is another kind, which records a plan of its own), when
  each is None, a bool, an int, a tuple of ints or a float (keyed as positional ones are,
  with its type); None otherwise. (Their tuple never equals an element of the positional
  key.)"""
  items = []
  for name, value in kwargs.items():
    t = type(value)
    if t is int or t is bool or value is None or t is tuple and all(type(i) is int
                                                                   for i in value):
      items.append((name, value, t))
    elif (number := _number_key(value)) is not None:
      items.append((name, *number))
    else:
      return None
  return (*key, tuple(items))


def _record(plans: dict, key: Any, fn: Callable[..., Any], args: tuple,
            trace: EvalTrace) -> Any:
  """Runs `fn` watching its primitives, and keeps the plan they make (or `_NO_PLAN`). A
  call that read an argument's value, or a value computed from one (a count or an index
  given as an Array), keeps none: the kind does not hold values."""
  array_mod.value_reads.arrays = reads = []
  trace.observed = observed = []
  try:
    out = fn(*args)
  finally:
    trace.observed = array_mod.value_reads.arrays = None
  plan = _NO_PLAN if _read_a_value(reads, args, observed) else _plan(observed, args, out)
  with _record_lock:
    if len(plans) >= _MAX_PLANS:
      del plans[next(iter(plans))]  # first in, first out
    plans[key] = plan
  return out


def _read_a_value(reads: list[Array], args: tuple, observed: list[tuple]) -> bool:
  """Whether an argument or a primitive's result is among the Arrays `reads` (those
  whose values were read; a constant the function made is not one of them)."""
  if not reads:
    return False
  depends = {id(x) for x in args} | {id(result) for *_, result in observed}
  return any(id(x) in depends for x in reads)


def _plan(observed: list[tuple], args: tuple, out: Any) -> Any:
  """The plan of a call that applied up to `_MAX_STEPS` primitives (without bind hooks)
  and returned one of their results: (trace context, `apply`, `operation`, operand getter
  (None: the arguments themselves), constants), where `apply(operation, operands)` applies
  the primitives. A primitive's operands come from the arguments, from constants the
  function made, and from the results of those before it. Values live in one list,
  arguments then constants then results (each output of a primitive of several), and are
  taken from it by position."""
  if not observed or len(observed) > _MAX_STEPS:
    return _NO_PLAN
  sources = {id(x): ("arg", i) for i, x in enumerate(args)}
  consts: list[Any] = []
  steps = []
  results = 0
  for prim, operands, params, result in observed:
    if prim.bind_hook is not None:
      return _NO_PLAN
    outs = result if prim.multiple_results else (result,)
    if any(r is x for r in outs for x in operands):
      if prim.multiple_results:
        return _NO_PLAN
      continue  # an identity when evaluated (`stop_gradient`): its operand stands for it
    refs = []
    for x in operands:
      ref = sources.get(id(x))
      if ref is None:
        if isinstance(x, core.Tracer):
          return _NO_PLAN
        ref = sources[id(x)] = ("const", len(consts))
        consts.append(x if type(x) is Array else executable.as_array(x))
      refs.append(ref)
    steps.append((_applier(prim, [v if ref[0] != "const" else consts[ref[1]]
                                  for v, ref in zip(operands, refs)], params), refs,
                  prim.multiple_results))
    for r in outs:
      sources[id(r)] = ("result", results)
      results += 1
  returned = _returned(out, sources)
  if returned is None:
    return _NO_PLAN
  returned_refs, rebuild = returned
  start = {"arg": 0, "const": len(args), "result": len(args) + len(consts)}
  def position(ref: tuple[str, int]) -> int:
    return start[ref[0]] + ref[1]
  if len(steps) > 1 or steps[0][2] or rebuild is not None:
    program = _Steps(tuple((apply, operation, tuple(map(position, refs)), multiple)
                           for (apply, operation), refs, multiple in steps),
                     tuple(consts), tuple(map(position, returned_refs)), rebuild)
    return config_values.trace_context, _replay_steps, program, None, ()
  # One primitive, the usual case, replays without `_replay_steps`'s list of values: that
  # list cost eager code 0.3-0.4 µs an operation (2-core machine, 200-operation chains).
  (apply, operation), refs, _ = steps[0]
  positions = list(map(position, refs))
  if positions == list(range(len(args))):
    take = None  # the operands are the arguments, as in `jnp.sin(x)` and `x + y`
  else:
    take = _getter(positions)
  return config_values.trace_context, apply, operation, take, tuple(consts)


def _returned(out: Any, sources: dict[int, tuple[str, int]]
              ) -> tuple[tuple[tuple[str, int], ...], Callable[[Any], Any] | None] | None:
  """Where a call's result comes from: the source of each Array it returns, and how to
  make the result of them (None for one Array; its tuple, list or named tuple type for
  several, `svd`'s `(u, s, vh)`); None unless every returned value is a primitive's
  result."""
  if type(out) is Array:
    outs, rebuild = (out,), None
  elif type(out) is tuple or type(out) is list:
    outs, rebuild = out, type(out)
  elif isinstance(out, tuple) and hasattr(out, "_make"):
    outs, rebuild = out, type(out)._make
  else:
    return None
  refs = tuple(sources.get(id(x)) if type(x) is Array else None for x in outs)
  if not refs or any(ref is None or ref[0] != "result" for ref in refs):
    return None
  return refs, rebuild


def _applier(prim: core.Primitive, operands: tuple, params: dict) -> tuple[Callable, Any]:
  """(`apply`, `operation`) for one primitive: its eager signature where it has one."""
  replay = deferred.signature_replay(prim, operands, params)
  return replay if replay is not None else (_apply_impl, (prim, params))


class _Steps:
  """A plan of several primitives, or of one with several results, or returning several:
  (`apply`, `operation`, operand positions, whether it has several results) for each, the
  constants, the positions of the returned values and how to make the result of them
  (None: the one value itself). From its `_COMPOSE_AFTER`th replay on, the primitives
  run as one compiled program where they run at once (`composite`, reading the values that
  `leaves` takes); until then, and where none can be made, one by one. Compiling costs as
  much as a few thousand eager operations, so only a kind that comes again gets one."""

  __slots__ = ("steps", "consts", "returned", "rebuild", "replays", "composite", "leaves")

  def __init__(self, steps: tuple, consts: tuple, returned: tuple[int, ...],
               rebuild: Callable[[Any], Any] | None):
    self.steps, self.consts, self.returned, self.rebuild = steps, consts, returned, rebuild
    self.replays = 0
    self.composite: deferred.Composite | None = None
    self.leaves: Callable[[tuple], tuple] | None = None

  def compose(self, args: tuple) -> None:
    """Makes the composite, if every step is an operation with a signature that may join
    one. Its arguments are the values the steps read (Arrays: a Python scalar argument
    reaches a primitive as a constant it was made into)."""
    if not all(apply in _SIGNATURE_APPLIERS and deferred.Composite.can_compose(sig)
               for apply, sig, *_ in self.steps):
      return
    values = (*args, *self.consts)
    read = sorted({p for _, _, positions, _ in self.steps for p in positions
                   if p < len(values)})
    leaf = {p: k for k, p in enumerate(read)}
    outputs = [(k, i) for k, (_, sig, *_) in enumerate(self.steps)
               for i in range(len(sig.out_avals))]
    def ref(p: int) -> int | tuple[int, int]:
      return leaf[p] if p < len(values) else outputs[p - len(values)]
    self.leaves = _getter(read)
    self.composite = deferred.Composite(
        [values[p].aval for p in read],
        [(sig, tuple(map(ref, positions))) for _, sig, positions, _ in self.steps],
        [ref(p) for p in self.returned])
    with _record_lock:  # each holds an executable: the oldest are dropped, to be made again
      _composed.append(self)  # if their kinds come back
      if len(_composed) > _MAX_COMPOSITES:
        oldest = _composed.popleft()
        oldest.composite, oldest.replays = None, 0


def _getter(positions: list[int]) -> Callable[[tuple], tuple]:
  """The function that takes the values at `positions` from a tuple, as a tuple."""
  if len(positions) > 1:
    return operator.itemgetter(*positions)
  if positions:
    return functools.partial(_take_one, positions[0])
  return lambda values: ()


_COMPOSE_AFTER = 2
_MAX_COMPOSITES = 512  # over every function, as deferred bounds its compiled batches
_composed: collections.deque[_Steps] = collections.deque()
_SIGNATURE_APPLIERS = (deferred.apply_signature, deferred.apply_checked_signature)


def _replay_steps(program: _Steps, args: tuple) -> Any:
  composite = program.composite
  if composite is not None:
    outs = deferred.apply_composite(composite, program.leaves((*args, *program.consts)))
    if outs is not None:
      return outs[0] if program.rebuild is None else program.rebuild(outs)
  elif program.replays < _COMPOSE_AFTER:
    program.replays += 1
    if program.replays == _COMPOSE_AFTER:
      program.compose(args)
  values = [*args, *program.consts]
  for apply, operation, positions, multiple in program.steps:
    out = apply(operation, [values[p] for p in positions])
    if multiple:
      values.extend(out)
    else:
      values.append(out)
  if program.rebuild is None:
    return values[program.returned[0]]
  return program.rebuild([values[p] for p in program.returned])


def _apply_impl(operation: tuple, operands: tuple) -> Any:
  prim, params = operation
  return prim.impl(*operands, **params)


def _take_one(position: int, operands: tuple) -> tuple:
  return (operands[position],)


@caches.register
def _clear_plans() -> None:
  for plans in _plan_tables:
    plans.clear()
  _composed.clear()
