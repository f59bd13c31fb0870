"""Event listeners (`jax.monitoring`): a program or a library registers callbacks, and
whoever records an event, a duration, a time span or a scalar calls every listener of that
kind with it. Nothing is stored; with no listener, recording costs one loop over an empty
list, so recording sites can stay on hot paths.

jaxon itself records no events yet (JAX records compilation and cache statistics here);
the registry exists so that libraries that record or listen through `jax.monitoring`
(profilers, metric exporters) run unchanged.
"""
from __future__ import annotations

from collections.abc import Callable

EventListener = Callable[..., None]

# One list per kind of record, in registration order (a listener may appear twice).
_listeners: dict[str, list[EventListener]] = {
    "event": [], "duration": [], "time_span": [], "scalar": []}


def _register(kind: str, callback: EventListener) -> None:
  if not callable(callback):
    raise TypeError(f"a monitoring listener must be callable, got {callback!r}")
  _listeners[kind].append(callback)


def _unregister(kind: str, callback: EventListener) -> None:
  # AssertionError, as JAX's, for a callback that was never registered (or already removed).
  if callback not in _listeners[kind]:
    raise AssertionError(f"{callback!r} is not a registered {kind} listener")
  _listeners[kind].remove(callback)


def record_event(event: str, **kwargs: str | int) -> None:
  """Calls `listener(event, **kwargs)` for every event listener."""
  for callback in list(_listeners["event"]):
    callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
  """Calls `listener(event, duration, **kwargs)` for every duration listener."""
  for callback in list(_listeners["duration"]):
    callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
  """Calls `listener(event, start_time, end_time, **kwargs)` for every time-span
  listener (times in seconds)."""
  for callback in list(_listeners["time_span"]):
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
  """Calls `listener(event, value, **kwargs)` for every scalar listener."""
  for callback in list(_listeners["scalar"]):
    callback(event, value, **kwargs)


def register_event_listener(callback: EventListener) -> None:
  _register("event", callback)


def register_event_duration_secs_listener(callback: EventListener) -> None:
  _register("duration", callback)


def register_event_time_span_listener(callback: EventListener) -> None:
  _register("time_span", callback)


def register_scalar_listener(callback: EventListener) -> None:
  _register("scalar", callback)


def unregister_event_listener(callback: EventListener) -> None:
  _unregister("event", callback)


def unregister_event_duration_listener(callback: EventListener) -> None:
  _unregister("duration", callback)


def unregister_event_time_span_listener(callback: EventListener) -> None:
  _unregister("time_span", callback)


def unregister_scalar_listener(callback: EventListener) -> None:
  _unregister("scalar", callback)


def clear_event_listeners() -> None:
  """Removes every listener of every kind."""
  for callbacks in _listeners.values():
    callbacks.clear()
