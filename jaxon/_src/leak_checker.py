"""`jax_check_tracer_leaks`: a transformation that leaves one of its tracers held from
outside (a global, a list, an object attribute, a closure) raises JAX's `Exception: Leaked
trace ...`, rather than failing later wherever the tracer is used.

While the flag is on, each tracer records the user's line that created it, and when a
transformation returns, Python's garbage collector is asked who still refers to its
tracers. Tracers held only by the transformation's own running code (its argument and
output lists) are expected; any other holder is a leak.

Scanning the heap is slow, so it is done once per outermost transformation: a nested
trace that ends is only remembered (weakly), and checked when the outermost one ends, by
which time its own code has returned, so any tracer of it still alive has leaked; a trace
nothing refers to any more costs nothing. So a leak inside a nested transformation is
reported as the outermost one returns. With the flag off, the hooks are not installed.
"""
from __future__ import annotations

import gc
import sys
import threading
import types
import weakref
from typing import Any

from jaxon._src import config, core

_MAX_CHAIN = 10  # holders described per leaked tracer
_CONTAINERS = (list, tuple, dict)


class _Ended(threading.local):
  def __init__(self) -> None:
    self.traces: list[weakref.ref] = []  # nested traces that ended, not yet checked


_ended = _Ended()


def _record_site(tracer: core.Tracer, trace: core.Trace) -> None:
  if not config.check_tracer_leaks.value:
    return
  sites = trace.__dict__.get("_tracer_sites")
  if sites is None:
    sites = trace._tracer_sites = {}
  frame, _ = core.user_frame(sys._getframe(2))
  if frame is not None:
    sites[id(tracer)] = core.describe_frame(frame)


def _trace_ended(trace: core.Trace) -> None:
  """Checks the traces of an outermost transformation that just returned (see the module
  docstring). Nothing is checked while an exception propagates: it is the one to report."""
  if not config.check_tracer_leaks.value:
    return
  outermost = core.is_eval_trace_current()
  if sys.exc_info()[1] is not None:
    if outermost:
      _ended.traces.clear()
    return
  if not outermost:
    _ended.traces.append(weakref.ref(trace))
    return
  alive = [t for t in (ref() for ref in _ended.traces) if t is not None]
  _ended.traces.clear()
  traces = [*alive, trace]
  leaks = _find_leaks(traces)
  if leaks:
    raise Exception(_leak_message(traces, leaks))


def _find_leaks(traces: list[core.Trace]) -> list[tuple[core.Tracer, list[str]]]:
  """The tracers of `traces` held from outside, each with the chain of holders keeping it
  alive. Only if there seem to be some is the heap collected, and the scan redone: tracers
  in unreachable cycles cannot be reached by user code, so they are not leaks."""
  if not _Scan().suspects(traces)[0]:
    return []
  gc.collect()
  scan = _Scan()
  tracers, holders = scan.suspects(traces)
  chains = scan.own([])  # computed before any pair exists: a pair would be a holder too
  for i in range(len(tracers)):
    chains.append(scan.holder_chain(tracers[i], holders[i]))
  return list(zip(tracers, chains))


class _Scan:
  """`gc.get_referrers`, minus the lists this check creates (each would otherwise show up
  as a holder of what it holds). They live until the scan is dropped, so that their ids
  cannot be reused by the objects being examined."""

  def __init__(self) -> None:
    self._own: list[Any] = []
    self._ignored = {id(self._own)}

  def own(self, container: Any) -> Any:
    self._own.append(container)
    self._ignored.add(id(container))
    return container

  def referrers(self, obj: Any) -> list[Any]:
    """What refers to `obj`, but this scan's own lists."""
    return self.own([r for r in gc.get_referrers(obj) if id(r) not in self._ignored])

  def referrers_of_all(self, objs: list[Any]) -> list[Any]:
    """What refers to any of `objs`, in one heap scan; but this scan's own lists, and the
    argument tuple that passing `objs` to `gc.get_referrers` builds."""
    return self.own([r for r in gc.get_referrers(*objs) if id(r) not in self._ignored
                     and not (type(r) is tuple and _same_items(r, objs))])

  def suspects(self, traces: list[core.Trace]) -> tuple[list[core.Tracer], list[Any]]:
    """The tracers of `traces` held from outside running code, and a holder of each: three
    heap scans (the tracers, their holders, the holders of the containers among those)."""
    trace_ids = {id(t) for t in traces}
    tracers = self.own([r for r in self.referrers_of_all(traces)
                        if isinstance(r, core.Tracer) and id(r._trace) in trace_ids])
    found, found_holders = self.own([]), self.own([])
    if not tracers:
      return found, found_holders
    tracer_ids = {id(t) for t in tracers}
    holders = self.referrers_of_all(tracers)
    containers = self.own([h for h in holders if type(h) in _CONTAINERS])
    held_from_outside = self.held_from_outside(containers)
    for holder in holders:
      if isinstance(holder, types.FrameType) or (
          type(holder) in _CONTAINERS and id(holder) not in held_from_outside):
        continue  # running code, or a container only running code holds (its `outs`)
      for x in gc.get_referents(holder):
        if id(x) in tracer_ids:
          tracer_ids.discard(id(x))  # reported once, with the first holder found
          found.append(x)
          found_holders.append(holder)
    return found, found_holders

  def held_from_outside(self, containers: list[Any]) -> set[int]:
    """The ids of `containers` that something other than running code holds: a holder that
    is neither a frame nor a container, or a container itself so held. Followed outward
    through nested containers (the pytree of tracers a transformation unflattens for the
    function it calls is a dict in a dict, held by a frame), up to `_MAX_CHAIN` levels;
    containers still undecided there count as held from outside."""
    holders_of: dict[int, list[int | None]] = {}  # ids only: this check must hold nothing
    visited = {id(c) for c in containers}
    level = containers
    for _ in range(_MAX_CHAIN):
      level_ids = {id(c) for c in level}
      outer_level = self.own([])
      for outer in self.referrers_of_all(level):
        if isinstance(outer, types.FrameType):
          continue
        outer_id = id(outer) if type(outer) in _CONTAINERS else None  # None: not code
        for inner in gc.get_referents(outer):
          if id(inner) in level_ids:
            holders_of.setdefault(id(inner), []).append(outer_id)
        if outer_id is not None and outer_id not in visited:
          visited.add(outer_id)
          outer_level.append(outer)
      level = outer_level
      if not level:
        break
    outside = {id(c) for c in level}  # undecided at the last level
    grew = True
    while grew:
      grew = False
      for container_id, holder_ids in holders_of.items():
        if container_id not in outside and any(h is None or h in outside for h in holder_ids):
          outside.add(container_id)
          grew = True
    return {id(c) for c in containers if id(c) in outside}

  def holder_chain(self, tracer: core.Tracer, holder: Any) -> list[str]:
    """Lines `<A id> is referred to by <B id>[key]`, from the tracer through `holder`
    outward, up to a module variable or a holder nothing else refers to. Plain loops, not
    generator expressions: a closure over a local would be one more holder."""
    lines: list[str] = []
    child, parent, seen = tracer, holder, set()
    while id(child) not in seen and len(lines) < _MAX_CHAIN:
      seen.add(id(child))
      if parent is None:
        for candidate in self.referrers(child):
          if not isinstance(candidate, types.FrameType):
            parent = candidate
            break
        else:
          break
      module = self._module_of_namespace(parent)
      if module is not None:
        lines.append(f"{_label(child)} is referred to by {module.__name__}"
                     f"{_position_in(module, child)}")
        break
      closure = self._function_closing_over(parent)
      if closure is not None:  # cell -> closure tuple -> function: one step, named
        function, name = closure
        lines.append(f"{_label(child)} is referred to by {_label(function)} "
                     f"({function.__qualname__}) closed-over variable {name}")
        child, parent = function, None
        continue
      lines.append(f"{_label(child)} is referred to by {_label(parent)}"
                   f"{_position_in(parent, child)}")
      child, parent = parent, None
    return lines

  def _function_closing_over(self, cell: Any) -> tuple[types.FunctionType, str] | None:
    """The function whose closure holds `cell`, and the variable's name."""
    if not isinstance(cell, types.CellType):
      return None
    for closure in self.referrers(cell):
      if type(closure) is tuple:
        for function in self.referrers(closure):
          if isinstance(function, types.FunctionType) and function.__closure__ is closure:
            for i, c in enumerate(closure):
              if c is cell:
                return function, function.__code__.co_freevars[i]
    return None

  def _module_of_namespace(self, obj: Any) -> types.ModuleType | None:
    if type(obj) is dict:
      for holder in self.referrers(obj):
        if isinstance(holder, types.ModuleType) and vars(holder) is obj:
          return holder
    return None


def _same_items(a: tuple, b: list) -> bool:
  return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _label(obj: Any) -> str:
  return f"<{type(obj).__name__} {id(obj)}>"


def _position_in(container: Any, child: Any) -> str:
  """Where `child` sits in `container`: `[3]`, `['key']`, `.attribute`, or nothing."""
  if isinstance(container, (list, tuple)):
    for i, x in enumerate(container):
      if x is child:
        return f"[{i}]"
    return ""
  attrs = container if isinstance(container, dict) else getattr(container, "__dict__", None)
  if isinstance(attrs, dict):
    for key, value in attrs.items():
      if value is child:
        return f"[{key!r}]" if attrs is container else f".{key}"
  for cls in type(container).__mro__:  # slots: a tracer's value, another tracer's tangent
    for name in getattr(cls, "__slots__", ()):
      if getattr(container, name, None) is child:
        return f".{name}"
  return ""


def _leak_message(traces: list[core.Trace], leaks: list[tuple[core.Tracer, list[str]]]
                  ) -> str:
  """JAX's text, per trace (innermost first): the trace, then each leaked tracer with the
  line that created it and what holds it; jaxon adds the transformation and the user's line
  that called it."""
  by_trace: dict[core.Trace, list[str]] = {trace: [] for trace in traces}
  for tracer, chain in leaks:
    trace = tracer._trace
    site = (trace._tracer_sites or {}).get(id(tracer))
    created = (f"\nThis {type(tracer).__name__} with object id {id(tracer)} was created on "
               f"line:\n  {site}" if site else "")
    origin = trace._origin
    belongs = (f"\nIts {type(trace).__name__} was started inside `{origin[0]}`, called at "
               f"{origin[1]}:{origin[2]} in {origin[3]}." if origin else "")
    by_trace[trace].append(f"{tracer}{created}{belongs}"
                           + "".join("\n" + line for line in chain))
  return "\n\n".join(f"Leaked trace {trace}. Leaked tracer(s):\n\n" + "\n\n".join(parts) + "\n"
                     for trace, parts in by_trace.items() if parts)


def _refresh() -> None:
  """Installs the hooks while the flag may be on in some thread (each then reads its own
  thread's value), removes them otherwise."""
  on = config.check_tracer_leaks.maybe_set
  core.trace_end_hook = _trace_ended if on else None
  core.set_tracer_creation_hook(_record_site if on else None)


config.check_tracer_leaks.watch(_refresh)
_refresh()
