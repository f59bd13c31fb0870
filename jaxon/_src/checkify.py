"""`checkify`: run-time checks (user `check`s, NaNs, division by zero, out-of-bounds
indices) turned into an error value a function returns, so they survive `jit`.

A staged program cannot raise a Python exception in the middle of running, so `checkify(f)`
functionalizes the failure: it stages `f` to a jaxpr (as JAX 0.10.2 does, closing over the
arguments), then interprets the jaxpr equation by equation, threading an `Error` value
through it. Each primitive may have a rule in `error_checks` that binds the primitive and
folds a new failure condition into the error; primitives that carry jaxprs (`pjit`, `cond`,
`while`, `scan`, `remat2`, custom derivatives) get rules that checkify their jaxprs and
thread the error through as extra operands and results. The interpreter binds through the
current trace, so `jit`, `vmap` and `grad` compose with it in both orders.

An `Error` keeps, per kind of failure (an `ErrorEffect`: the exception class and the types
of its run-time payload), whether it happened, a code naming the check that failed first,
and that check's payload. Codes are unique per check site and ordered by tracing order:
when several kinds fail, the one whose check was traced first is reported, as in JAX.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import linecache
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import caches, core, tree_util
from jaxon._src import pretty_printer as pp
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.lax import lax, reductions, shape_ops, slicing
from jaxon._src.xla.array import Array

# ----------------------------------------------------------------------------- source locations


class SourceLocation(NamedTuple):
  """Where a check was written: the innermost frame of user code (outside jaxon)."""
  filename: str
  lineno: int
  function: str

  def format(self) -> str:
    """Formatted like a traceback entry, so the note reads as part of the traceback."""
    line = linecache.getline(self.filename, self.lineno).strip()
    entry = f'  File "{self.filename}", line {self.lineno}, in {self.function}'
    return f"{entry}\n    {line}" if line else entry


def user_location() -> SourceLocation | None:
  """The innermost caller outside jaxon: where the user wrote the operation or check."""
  frame, _ = core.user_frame(sys._getframe(1))
  if frame is None:
    return None
  return SourceLocation(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


class _LocationState(threading.local):
  location: SourceLocation | None = None


_location_state = _LocationState()


def current_location() -> SourceLocation | None:
  """The source location of the equation being checkified (None when unknown): rules
  attach it to the exceptions they create."""
  return _location_state.location


@contextmanager
def _located_at(location: SourceLocation | None) -> Iterator[None]:
  """Makes `location` current; None keeps the enclosing one (the equations of a nested
  jaxpr have no locations of their own: they get that of the equation that holds them)."""
  if location is None:
    yield
    return
  previous, _location_state.location = _location_state.location, location
  try:
    yield
  finally:
    _location_state.location = previous


class _LocatingJaxprTrace(pe.DynamicJaxprTrace):
  """Stages like `DynamicJaxprTrace`, remembering for each equation the user's line that
  created it (JAX keeps a source location on every equation; jaxon only needs them here)."""

  def __init__(self, parent: core.Trace):
    super().__init__(parent)
    self.locations: list[SourceLocation | None] = []

  def stage(self, primitive: core.Primitive, args: Sequence[Any], params: dict) -> Any:
    out = super().stage(primitive, args, params)
    self.locations.append(user_location())
    return out


# ----------------------------------------------------------------------------- exceptions


class JaxRuntimeError(ValueError):
  """Raised when a failed check is thrown (`Error.throw`, `check_error`, or `check` outside
  `checkify`). A ValueError, as JAX's checkify error is."""


class JaxException(Exception):
  """A failure a check can report. Subclasses are pytrees: their run-time values (the
  payload) are the leaves, what is known when tracing is the static part, so an error's
  metadata can rebuild the exception from the payload an executed program returns."""

  def __init__(self, traceback_info: SourceLocation | None):
    super().__init__()
    self.traceback_info = traceback_info

  def __init_subclass__(cls, **kwargs: Any) -> None:
    super().__init_subclass__(**kwargs)
    tree_util.register_pytree_node(cls, lambda e: e._flatten(), cls._unflatten)

  def _flatten(self) -> tuple[list[Any], tuple]:
    return [], (self.traceback_info,)

  @classmethod
  def _unflatten(cls, static: tuple, payload: Sequence[Any]) -> JaxException:
    return cls(*static)

  def effect(self) -> ErrorEffect:
    return ErrorEffect(type(self), ())


class DivisionByZeroError(JaxException):
  def __str__(self) -> str:
    return "division by zero"


class NaNError(JaxException):
  def __init__(self, traceback_info: SourceLocation | None, primitive_name: str):
    super().__init__(traceback_info)
    self.prim = primitive_name

  def _flatten(self) -> tuple[list[Any], tuple]:
    return [], (self.traceback_info, self.prim)

  def __str__(self) -> str:
    return f"nan generated by primitive: {self.prim}."


class OOBError(JaxException):
  """Payload: an int32[3] of (the first out-of-bounds index, its axis, that axis's size)."""

  def __init__(self, traceback_info: SourceLocation | None, primitive_name: str,
               operand_shape: tuple[int, ...], payload: Any):
    super().__init__(traceback_info)
    self.prim = primitive_name
    self.operand_shape = operand_shape
    self._payload = payload

  def _flatten(self) -> tuple[list[Any], tuple]:
    return [self._payload], (self.traceback_info, self.prim, self.operand_shape)

  @classmethod
  def _unflatten(cls, static: tuple, payload: Sequence[Any]) -> OOBError:
    return cls(*static, payload[0])

  def __str__(self) -> str:
    index, axis, size = (int(v) for v in np.asarray(self._payload))
    return (f"out-of-bounds indexing for array of shape {self.operand_shape}: index {index} "
            f"is out of bounds for axis {axis} with size {size}. ")

  def effect(self) -> ErrorEffect:
    return ErrorEffect(OOBError, (ShapedArray((3,), np.int32),))


class FailedCheckError(JaxException):
  """A user `check` failed; its format arguments are the payload."""

  def __init__(self, traceback_info: SourceLocation | None, fmt_string: str,
               *fmt_args: Any, **fmt_kwargs: Any):
    super().__init__(traceback_info)
    self.fmt_string = fmt_string
    self.fmt_args = fmt_args
    self.fmt_kwargs = fmt_kwargs

  def _flatten(self) -> tuple[list[Any], tuple]:
    leaves, tree = tree_util.tree_flatten((self.fmt_args, self.fmt_kwargs))
    return leaves, (self.traceback_info, self.fmt_string, tree)

  @classmethod
  def _unflatten(cls, static: tuple, payload: Sequence[Any]) -> FailedCheckError:
    location, fmt_string, tree = static
    fmt_args, fmt_kwargs = tree.unflatten(payload)
    return cls(location, fmt_string, *fmt_args, **fmt_kwargs)

  def __str__(self) -> str:
    return self.fmt_string.format(*self.fmt_args, **self.fmt_kwargs) + " (`check` failed)"

  def effect(self) -> ErrorEffect:
    leaves = tree_util.tree_leaves((self.fmt_args, self.fmt_kwargs))
    return ErrorEffect(FailedCheckError,
                       tuple(core.get_aval(x).strip_weak_type() for x in leaves))


class BatchedError(JaxException):
  """The failures of a vmapped checkified function, per mapped index that failed."""

  def __init__(self, error_mapping: dict[tuple[int, ...], JaxException]):
    super().__init__(next(iter(error_mapping.values())).traceback_info)
    self.error_mapping = error_mapping

  def _flatten(self) -> tuple[list[Any], tuple]:
    return list(self.error_mapping.values()), tuple(self.error_mapping)

  @classmethod
  def _unflatten(cls, static: tuple, payload: Sequence[Any]) -> BatchedError:
    return cls(dict(zip(static, payload)))

  def __str__(self) -> str:
    return "\n".join(f"at mapped index {', '.join(map(str, idx))}: {e}"
                     for idx, e in self.error_mapping.items())


ErrorCategory = type[JaxException]


@dataclasses.dataclass(frozen=True)
class ErrorEffect:
  """A kind of failure an `Error` tracks: errors of one effect share one slot (whether it
  happened, which check, its payload), so the payload types are part of the effect."""
  error_type: type[JaxException]
  shape_dtypes: tuple[ShapedArray, ...]

  def __post_init__(self) -> None:  # hashed on every unflattening of an Error: once here
    object.__setattr__(self, "_hash", hash((self.error_type, self.shape_dtypes)))

  def __hash__(self) -> int:
    return self._hash

  def _sort_key(self) -> tuple:
    return (self.error_type.__name__,
            tuple((a.shape, a.dtype.name) for a in self.shape_dtypes))

  def __lt__(self, other: ErrorEffect) -> bool:  # pytrees sort dict keys
    return self._sort_key() < other._sort_key()


# ----------------------------------------------------------------------------- the error value


@dataclasses.dataclass(frozen=True, eq=False)
class Error:
  """What `checkify(f)` returns next to `f`'s outputs: which checks failed, if any.

  A pytree (so it can be returned from `jit` or `vmap`): per effect a boolean (failed), an
  int32 code (which check) and the check's payload are leaves; the map from codes to the
  exceptions they stand for is static.
  """
  _pred: dict[ErrorEffect, Any]
  _code: dict[ErrorEffect, Any]
  _metadata: dict[int, tree_util.PyTreeDef]
  _payload: dict[ErrorEffect, list[Any]]

  def get(self) -> str | None:
    """The message of the first failed check, or None if none failed."""
    exc = self.get_exception()
    return None if exc is None else str(exc)

  def get_exception(self) -> JaxException | None:
    """The exception of the first failed check (a `BatchedError` listing each failed
    example for a vmapped error), or None if none failed."""
    if any(np.ndim(p) for p in self._pred.values()):
      return self._batched_exception()
    failed = [(int(self._code[e]), e) for e in self._effects if bool(self._pred[e])]
    if not failed:
      return None
    code, effect = min(failed, key=lambda c: c[0])
    return self._exception(code, self._payload[effect])

  def throw(self) -> None:
    """Raises `JaxRuntimeError` with the message of the first failed check, if any."""
    _check_error(self)

  def __str__(self) -> str:
    return f"Error({self.get()})"

  @property
  def _effects(self) -> tuple[ErrorEffect, ...]:
    return tuple(sorted(self._pred))

  def _exception(self, code: int, payload: Sequence[Any]) -> JaxException:
    exc = self._metadata[code].unflatten(payload)
    if exc.traceback_info is not None:
      exc.add_note(exc.traceback_info.format())
    return exc

  def _batched_exception(self) -> BatchedError | None:
    preds = {e: np.asarray(p) for e, p in self._pred.items()}
    codes = {e: np.asarray(c) for e, c in self._code.items()}
    shape = np.shape(next(iter(preds.values())))
    mapping: dict[tuple[int, ...], JaxException] = {}
    for idx in np.ndindex(*shape):
      failed = [(int(np.broadcast_to(codes[e], shape)[idx]), e) for e in self._effects
                if np.broadcast_to(preds[e], shape)[idx]]
      if failed:
        code, effect = min(failed, key=lambda c: c[0])
        payload = [np.asarray(x)[idx] for x in self._payload[effect]]
        mapping[idx] = self._exception(code, payload)
    return BatchedError(mapping) if mapping else None

  def _add_placeholder_effects(self, effects: set[ErrorEffect]) -> Error:
    """This error with a slot (never failing) for each of `effects` it lacks: the branches
    of a `cond` and the iterations of a loop must all return errors of the same type."""
    missing = [e for e in sorted(effects) if e not in self._pred]
    if not missing:
      return self
    return Error({**self._pred, **{e: np.bool_(False) for e in missing}},
                 {**self._code, **{e: np.int32(-1) for e in missing}}, self._metadata,
                 {**self._payload, **{e: [np.ones(a.shape, a.dtype) for a in e.shape_dtypes]
                                      for e in missing}})


tree_util.register_pytree_node(
    Error,
    lambda e: ((e._pred, e._code, e._payload), tuple(sorted(e._metadata.items()))),
    lambda metadata, data: Error(data[0], data[1], dict(metadata), data[2]))

init_error = Error({}, {}, {}, {})

_next_code = itertools.count(1).__next__  # unique per check site, in tracing order


def error_treedef(effects: Sequence[ErrorEffect],
                  metadata: dict[int, tree_util.PyTreeDef]) -> tree_util.PyTreeDef:
  """The pytree structure of an error with `effects` (the order of its leaves)."""
  return tree_util.tree_structure(Error({e: 0 for e in effects}, {e: 0 for e in effects},
                                        metadata, {e: [0] * len(e.shape_dtypes)
                                                   for e in effects}))


def error_avals(effects: Sequence[ErrorEffect]) -> list[ShapedArray]:
  """The types of the leaves of an error with `effects`, in leaf order."""
  flag, code = ShapedArray((), np.bool_), ShapedArray((), np.int32)
  return tree_util.tree_leaves(Error({e: flag for e in effects}, {e: code for e in effects},
                                     {}, {e: list(e.shape_dtypes) for e in effects}))


def assert_func(error: Error, pred: Any, exc: JaxException) -> Error:
  """`error` updated with a new check: `exc` happened where the boolean `pred` holds."""
  code = _next_code()
  payload, treedef = tree_util.tree_flatten(exc)
  return update_error(error, pred, np.int32(code), {code: treedef}, payload, exc.effect())


def update_error(error: Error, pred: Any, code: Any, metadata: dict[int, Any],
                 payload: Sequence[Any], effect: ErrorEffect) -> Error:
  """Folds one failure condition into `error`: an effect that already failed keeps its
  code and payload (the first failure is the one reported)."""
  failed = error._pred.get(effect)
  if failed is None:
    new_pred, new_code, new_payload = pred, code, list(payload)
  else:
    new_pred = lax.bitwise_or(failed, pred)
    new_code = lax.select(failed, error._code[effect], code)
    new_payload = [lax.select(failed, old, new)
                   for old, new in zip(error._payload[effect], payload)]
  return Error({**error._pred, effect: new_pred}, {**error._code, effect: new_code},
               {**error._metadata, **metadata}, {**error._payload, effect: new_payload})


# ----------------------------------------------------------------------------- interpreter

# rule(error, enabled_errors, *operands, **params) -> (error, outputs): binds the primitive
# and folds its failure conditions (those of a kind in `enabled_errors`) into the error.
ErrorCheckRule = Callable[..., tuple[Error, Any]]
error_checks: dict[core.Primitive, ErrorCheckRule] = {}


def checkify_jaxpr(jaxpr: core.Jaxpr, consts: Sequence[Any], enabled_errors: frozenset,
                   error: Error, *args: Any,
                   locations: Sequence[SourceLocation | None] | None = None
                   ) -> tuple[Error, list[Any]]:
  """Evaluates `jaxpr` through the current trace, threading `error` through the rules in
  `error_checks`; returns the final error and the outputs."""
  env: dict[core.Var, Any] = {}

  def read(atom: core.Atom) -> Any:
    return atom.val if type(atom) is core.Literal else env[atom]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for i, eqn in enumerate(jaxpr.eqns):
    invals = [read(a) for a in eqn.invars]
    rule = error_checks.get(eqn.primitive)
    with _located_at(locations[i] if locations is not None else None):
      if rule is None:
        outs = eqn.primitive.bind(*invals, **eqn.params)
      else:
        error, outs = rule(error, enabled_errors, *invals, **eqn.params)
    env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
  return error, [read(v) for v in jaxpr.outvars]


class CheckedJaxpr(NamedTuple):
  """A checkified jaxpr: `jaxpr` maps (error leaves, inputs) to (error leaves, outputs).
  The output error has `out_effects`; `metadata` names the codes of its new checks."""
  jaxpr: ClosedJaxpr
  out_effects: tuple[ErrorEffect, ...]
  metadata: dict[int, tree_util.PyTreeDef]

  @property
  def num_error_leaves(self) -> int:
    return len(error_avals(self.out_effects))

  def split_outputs(self, outs: Sequence[Any], in_error: Error) -> tuple[Error, list[Any]]:
    """The output error (knowing the checks of `in_error` and the new ones) and the
    outputs, from the results of applying `jaxpr`."""
    n = self.num_error_leaves
    treedef = error_treedef(self.out_effects, {**in_error._metadata, **self.metadata})
    return treedef.unflatten(outs[:n]), list(outs[n:])


@caches.lru_cache(maxsize=4096)
def checkify_closed_jaxpr(jaxpr: ClosedJaxpr, enabled_errors: frozenset,
                          in_effects: tuple[ErrorEffect, ...]) -> CheckedJaxpr:
  """`jaxpr` checkified for an input error with `in_effects`, staged to a jaxpr. Cached
  per (jaxpr, errors, effects): a new jaxpr would mean a new compilation on every call.
  The input error's own codes are not part of the key; callers add them back
  (`CheckedJaxpr.split_outputs`)."""
  in_treedef = error_treedef(in_effects, {})
  num_in = in_treedef.num_leaves
  # What the traced function learns of its output error: its effects and metadata, never
  # the Error itself, whose leaves are this trace's tracers (they must die with it).
  result: list[tuple[tuple[ErrorEffect, ...], dict[int, tree_util.PyTreeDef]]] = []

  def checked(*args: Any) -> list[Any]:
    error, outs = checkify_jaxpr(jaxpr.jaxpr, jaxpr.consts, enabled_errors,
                                 in_treedef.unflatten(args[:num_in]), *args[num_in:])
    result.append((error._effects, error._metadata))
    return [*tree_util.tree_leaves(error), *outs]
  closed = pe.trace_to_closed_jaxpr(checked, [*error_avals(in_effects), *jaxpr.in_avals])
  return CheckedJaxpr(closed, *result[0])


# ----------------------------------------------------------------------------- check_p

check_p = core.Primitive("check")
check_p.multiple_results = True  # no results: it only raises
check_p.effectful = True  # so dead-code elimination keeps it, though nothing reads it

_FUNCTIONALIZATION_ERROR = (
    "Cannot abstractly evaluate a checkify.check which was not functionalized. This probably "
    "means you tried to stage (jit/scan/pmap/...) a `check` without functionalizing it "
    "through `checkify.checkify`.")


def _check_impl(*args: Any, err_tree: tree_util.PyTreeDef, debug: bool) -> list[Any]:
  if debug:  # a debug_check does nothing unless checkified
    return []
  exc = err_tree.unflatten(args).get_exception()
  if exc is not None:
    raise JaxRuntimeError(str(exc)) from exc
  return []


def _check_lowering(ctx: mlir.LoweringRuleContext, *args: Any,
                    err_tree: tree_util.PyTreeDef, debug: bool) -> list[Any]:
  """A compiled program cannot raise: a `check` must be checkified before it is staged."""
  if debug:
    return []
  raise ValueError(_FUNCTIONALIZATION_ERROR)


def _check_batch(vals: Sequence[Any], dims: Sequence[int | None], *,
                 err_tree: tree_util.PyTreeDef, debug: bool) -> tuple[list, list]:
  """A check of a vmapped error raises if any example failed (reporting the last one)."""
  size = next(core.get_aval(x).shape[d] for x, d in zip(vals, dims) if d is not None)
  vals = [batching.bdim_at_front(x, d, size) for x, d in zip(vals, dims)]
  _check_error(err_tree.unflatten(vals), debug=debug)
  return [], []


def _check_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
               err_tree: tree_util.PyTreeDef, debug: bool) -> tuple[list, list]:
  check_p.bind(*primals, err_tree=err_tree, debug=debug)
  return [], []


def _check_pp(eqn: core.JaxprEqn, context: core.PrintContext) -> pp.Doc:
  """JAX prints a check without its error structure."""
  shown = eqn.replace(params={k: v for k, v in eqn.params.items() if k != "err_tree"})
  return core.pp_standard_eqn(shown, context)


def _check_discharge(error: Error, enabled_errors: frozenset, *args: Any,
                     err_tree: tree_util.PyTreeDef, debug: bool) -> tuple[Error, list]:
  """Under `checkify`, a check (or a `check_error`) joins the threaded error instead of
  raising; failures of kinds not enabled are dropped, as in JAX."""
  new_error = err_tree.unflatten(args)
  for effect in new_error._effects:
    if effect.error_type in enabled_errors:
      error = update_error(error, new_error._pred[effect], new_error._code[effect], {},
                           new_error._payload[effect], effect)
  merged = dataclasses.replace(error, _metadata={**new_error._metadata, **error._metadata})
  return merged, []


check_p.def_impl(_check_impl)
check_p.def_abstract_eval(lambda *avals, err_tree, debug: [])
mlir.register_lowering(check_p, _check_lowering)
batching.primitive_batchers[check_p] = _check_batch
ad.primitive_jvps[check_p] = _check_jvp
core.pp_eqn_rules[check_p] = _check_pp
error_checks[check_p] = _check_discharge


def _reduce_batched_error(error: Error) -> Error:
  """A vmapped error (every leaf with the same leading batch dimensions) as one error: per
  effect, that of the last example that failed (JAX's choice)."""
  preds, codes, payloads = {}, {}, {}
  for effect in error._effects:
    failed = error._pred[effect]
    batch_ndim = core.get_aval(failed).ndim
    size = core.get_aval(failed).size
    positions = lax.iota(np.int32, size)
    last = reductions.argmax(lax.select(shape_ops.reshape(failed, (size,)), positions,
                                        lax.full((size,), -1, np.int32)), 0, np.int32)

    def pick(x: Any, last: Any = last, batch_ndim: int = batch_ndim, size: int = size
             ) -> Any:
      rest = core.get_aval(x).shape[batch_ndim:]
      return slicing.dynamic_index_in_dim(shape_ops.reshape(x, (size, *rest)), last,
                                          keepdims=False, allow_negative_indices=False)
    preds[effect] = pick(failed)
    codes[effect] = pick(error._code[effect])
    payloads[effect] = [pick(x) for x in error._payload[effect]]
  return Error(preds, codes, error._metadata, payloads)


def _check_error(error: Error, *, debug: bool = False) -> None:
  if any(np.ndim(p) for p in error._pred.values()):
    error = _reduce_batched_error(error)
  leaves, treedef = tree_util.tree_flatten(error)
  check_p.bind(*leaves, err_tree=treedef, debug=debug)


# ----------------------------------------------------------------------------- public API

user_checks: frozenset[ErrorCategory] = frozenset({FailedCheckError})
nan_checks: frozenset[ErrorCategory] = frozenset({NaNError})
index_checks: frozenset[ErrorCategory] = frozenset({OOBError})
div_checks: frozenset[ErrorCategory] = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


def _enabled_errors(errors: Any) -> frozenset:
  if isinstance(errors, (set, frozenset)) and all(
      isinstance(e, type) and issubclass(e, JaxException) for e in errors):
    return frozenset(errors)
  raise TypeError("checkify errors must be a set of error categories, such as "
                  "checkify.user_checks, checkify.nan_checks, checkify.index_checks, "
                  "checkify.div_checks or a union of them (checkify.float_checks | "
                  f"checkify.user_checks), got {errors!r}.")


def checkify(f: Callable[..., Any], errors: frozenset[ErrorCategory] = user_checks
             ) -> Callable[..., tuple[Error, Any]]:
  """`f` returning `(error, out)`: its `check`s, and the automatic checks selected by
  `errors`, become an `Error` value instead of exceptions, so they work under `jit`.

  `err.get()` is the message of the first failed check (None if none failed);
  `err.throw()` raises it as a `JaxRuntimeError`. Checks: `user_checks` (`check`),
  `nan_checks` (a floating-point primitive produced a NaN), `div_checks` (a division by
  zero), `index_checks` (an out-of-bounds gather, scatter or dynamic slice index);
  `float_checks`, `automatic_checks` and `all_checks` combine them (and sets combine with
  `|` and `-`).

  Example:
    >>> err, out = checkify(lambda x: jnp.log(x), errors=nan_checks)(-1.)
    >>> err.get()
    'nan generated by primitive: log.'
  """
  if not callable(f):
    raise TypeError(f"checkify expects a callable, got {f!r} of type {type(f).__name__}.")
  enabled = _enabled_errors(errors)

  @functools.wraps(f)
  def checked_fun(*args: Any, **kwargs: Any) -> tuple[Error, Any]:
    # The arguments are closed over, not abstracted (as in JAX): Python control flow on
    # them works, and non-array arguments pass through.
    trace = _LocatingJaxprTrace(core.current_trace())
    try:
      with core.set_current_trace(trace):
        out = f(*args, **kwargs)
      out_leaves, out_tree = tree_util.tree_flatten(out)
      jaxpr, consts = trace.to_jaxpr(out_leaves)
    finally:
      trace.invalidate()
    error, outs = checkify_jaxpr(jaxpr, consts, enabled, init_error,
                                 locations=trace.locations)
    return error, out_tree.unflatten(outs)
  return checked_fun


def _is_scalar_pred(pred: Any) -> bool:
  if isinstance(pred, bool):
    return True
  return (isinstance(pred, (Array, core.Tracer)) and core.get_aval(pred).shape == ()
          and core.get_aval(pred).dtype == np.bool_)


def _check(pred: Any, msg: str, debug: bool, fmt_args: tuple, fmt_kwargs: dict) -> None:
  if not _is_scalar_pred(pred):
    raise TypeError(f"{'debug_check' if debug else 'check'} takes a scalar pred as "
                    f"argument, got {pred}")
  for arg in tree_util.tree_leaves((fmt_args, fmt_kwargs)):
    if not isinstance(arg, (Array, np.ndarray, core.Tracer)):
      raise TypeError("Formatting arguments to checkify.check need to be PyTrees of arrays, "
                      f"but got {arg!r} of type {type(arg)}.")
  failed = np.bool_(not pred) if isinstance(pred, bool) else lax.bitwise_not(pred)
  exc = FailedCheckError(user_location(), msg, *fmt_args, **fmt_kwargs)
  _check_error(assert_func(init_error, failed, exc), debug=debug)


def check(pred: Any, msg: str, *fmt_args: Any, debug: bool = False, **fmt_kwargs: Any
          ) -> None:
  """Fails with `msg` (formatted with `fmt_args`/`fmt_kwargs`, which may be traced arrays)
  unless the scalar boolean `pred` holds. Outside `checkify` it raises `JaxRuntimeError`
  at once; inside, it becomes part of the returned error. Staging it without `checkify`
  (under `jit`) is an error, as in JAX.

  Example:
    >>> def f(x):
    ...   check(x > 0, "{x} needs to be positive!", x=x)
    ...   return 1 / x
    >>> err, _ = jit(checkify(f))(-3.)
    >>> err.get()
    '-3.0 needs to be positive! (`check` failed)'
  """
  _check(pred, msg, debug, fmt_args, fmt_kwargs)


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
  """A `check` that only runs under `checkify`; elsewhere (eager, `jit`) it does nothing."""
  _check(pred, msg, True, fmt_args, fmt_kwargs)


def check_error(error: Error) -> None:
  """Raises `JaxRuntimeError` if `error` holds a failure; under `checkify`, joins the
  returned error instead (the inverse of `checkify`).

  Example:
    >>> err, out = jit(checkify(f))(x)
    >>> check_error(err)   # raises here, outside the jitted function
  """
  if not isinstance(error, Error):
    raise TypeError(f"check_error takes an Error as argument, got type {type(error)} "
                    "instead.")
  _check_error(error)


# The rules for the primitives register themselves into `error_checks`.
from jaxon._src import checkify_rules as _checkify_rules  # noqa: E402, F401
