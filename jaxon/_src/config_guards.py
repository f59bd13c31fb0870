"""JAX's remaining config options, and the guards some of them switch on.

Kept beside `config.py` (which holds the registry) so that file stays readable. Each option
is readable as `config.jax_xxx`, settable by `config.update` and, as in JAX, usable as a
thread-local context manager `with jaxon.xxx(value):`. Options jaxon honours:

- `jax_transfer_guard*`: implicit host-to-device transfers (a NumPy array or Python value
  turned into a device array by an operation, `jnp.asarray` or a jitted call) are allowed,
  logged or refused; `device_put` is the explicit transfer, guarded only by the
  `*_explicit` levels. On the CPU the device memory is the host's, so JAX guards no
  device-to-host transfer there, nor does jaxon.
- `jax_no_tracing` / `jax_no_execution`: a jitted function that would trace / run raises.
- `jax_default_device`: accepted when it names the default device (devices()[0]).
- `jax_allow_f16_reductions=False`: `lax.reduce_sum` of half-precision floats raises.
- `jax_enable_x64` (in `config.py`) is a context manager too, as JAX's.

The others are accepted and read by no jaxon code, which (as JAX on the CPU) has nothing
they would change; see each one's help.
"""
from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterator
import contextlib
from typing import Any

from jaxon._src.config import config, enum_parser, values

logger = logging.getLogger("jaxon._src.config_guards")

_TRANSFER_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


def _optional_enum(*choices: str) -> Callable[[Any], Any]:
  return enum_parser(choices, optional=True)


class LegacyPrngKeyState(enum.Enum):
  """What `jax.random` does when handed a raw uint32 key instead of a typed one."""
  ALLOW = "allow"
  WARN = "warn"
  ERROR = "error"


def _parse_default_device(value: Any) -> Any:
  """JAX's check of the value; jaxon runs uncommitted work on devices()[0] only (its
  arrays' placement is decided there), so another device is refused at once rather than
  silently ignored."""
  from jaxon._src.xla import client  # the runtime starts on first use, not at import
  if value is None:
    return None
  if isinstance(value, str):
    if value != "cpu":
      raise ValueError(f"Unknown platform {value!r} for jax_default_device: jaxon has 'cpu'")
    return value
  if not isinstance(value, client.Device):
    raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                     "`jax.devices('cpu')[0]`) or a platform name string like 'cpu' or "
                     f"'gpu', got: {value!r}")
  if value != client.local_devices()[0]:
    raise NotImplementedError(
        f"jax_default_device={value!r}: jaxon places uncommitted arrays and computations on "
        f"{client.local_devices()[0]} only; commit values to another device with "
        "jaxon.device_put(x, device) instead.")
  return value


allow_f16_reductions = config.define(
    "jax_allow_f16_reductions", True,
    "If False, `lax.reduce_sum` of float16 or bfloat16 values raises a ValueError.",
    trace_context=True)  # as JAX's: a jitted function traces again when it changes
array_garbage_collection_guard = config.define(
    "jax_array_garbage_collection_guard", None,
    "What happens when a jax.Array in a reference cycle is garbage collected: None/'allow', "
    "'log' or 'fatal' (accepted; jaxon does not check).",
    parse=_optional_enum("allow", "log", "fatal"))
debug_key_reuse = config.define(
    "jax_debug_key_reuse", False,
    "Track typed PRNG keys' use and raise KeyReuseError on reuse (accepted; jaxon does not "
    "track keys).")
default_device = config.define(
    "jax_default_device", None,
    "The device of uncommitted arrays and computations; jaxon accepts None, 'cpu' or "
    "devices()[0], where they already run.", parse=_parse_default_device, trace_context=True)
enable_custom_prng = config.define(
    "jax_enable_custom_prng", False,
    "JAX's switch to typed-key PRNG internals (accepted; jaxon's keys are always typed "
    "internally).")
jax2tf_associative_scan_reductions = config.define(
    "jax2tf_associative_scan_reductions", False,
    "Lower cumulative reductions for jax2tf with associative_scan instead of reduce_window "
    "(accepted; jaxon's cumulative reductions lower one way on every platform).")
legacy_prng_key = config.define(
    "jax_legacy_prng_key", LegacyPrngKeyState.ALLOW,
    "What jax.random does with raw (uint32) keys: 'allow', 'warn' or 'error' (accepted; "
    "jaxon allows them).", parse=LegacyPrngKeyState)
no_execution = config.define(
    "jax_no_execution", False, "Disallow running jitted computations.")
no_tracing = config.define(
    "jax_no_tracing", False, "Disallow tracing functions for jit.")
auto_pcast = config.define(
    "jax_auto_pcast", True,
    "Insert `pvary` automatically to match the varying manual axes of simple ops' operands "
    "(jaxon's shard_map checks no varying-axes types on ops, so there is nothing to insert).")
remove_size_one_mesh_axis_from_type = config.define(
    "jax_remove_size_one_mesh_axis_from_type", False,
    "Drop mesh axes of size 1 from avals' shardings (accepted; jaxon's avals carry none).")
softmax_custom_jvp = config.define(
    "jax_softmax_custom_jvp", False,
    "Use the custom_jvp rule for jax.nn.softmax (accepted; jaxon's softmax has one "
    "differentiation rule).", trace_context=True)
thread_guard = config.define(
    "jax_thread_guard", False,
    "Raise when a multi-process operation runs in another thread than the guard's "
    "(accepted; jaxon's multi-process operations do not check threads).")
transfer_guard_host_to_device = config.define(
    "jax_transfer_guard_host_to_device", None,
    "The transfer guard level for host-to-device transfers; default 'allow'.",
    parse=_optional_enum(*_TRANSFER_LEVELS))
transfer_guard_device_to_device = config.define(
    "jax_transfer_guard_device_to_device", None,
    "The transfer guard level for device-to-device transfers; default 'allow'.",
    parse=_optional_enum(*_TRANSFER_LEVELS))
transfer_guard_device_to_host = config.define(
    "jax_transfer_guard_device_to_host", None,
    "The transfer guard level for device-to-host transfers; default 'allow' (on the CPU "
    "there are none to guard).", parse=_optional_enum(*_TRANSFER_LEVELS))
_transfer_guard_all = config.define(
    "jax_transfer_guard", None,
    "The transfer guard level for all transfers, under the direction-specific ones.",
    parse=_optional_enum(*_TRANSFER_LEVELS))


@contextlib.contextmanager
def transfer_guard(new_val: str) -> Iterator[None]:
  """Sets the transfer guard level of every direction in this thread, for the block."""
  with contextlib.ExitStack() as stack:
    for flag in (transfer_guard_host_to_device, transfer_guard_device_to_device,
                 transfer_guard_device_to_host, _transfer_guard_all):
      stack.enter_context(flag(new_val))
    yield


class _Explicit(threading.local):
  depth = 0


_explicit = _Explicit()


@contextlib.contextmanager
def explicit_transfer() -> Iterator[None]:
  """Marks the transfers in the block as asked for by the user (`device_put`)."""
  _explicit.depth += 1
  try:
    yield
  finally:
    _explicit.depth -= 1


def host_to_device_level() -> str:
  """The host-to-device guard level this thread sees: its own flag, else the one for all
  transfers."""
  return values.jax_transfer_guard_host_to_device or values.jax_transfer_guard or "allow"


def check_host_to_device(aval: Any, device: Any) -> None:
  """Applies the host-to-device guard to one transfer about to happen. Raises JAX's
  `JaxRuntimeError` (INVALID_ARGUMENT) when the level refuses it."""
  level = host_to_device_level()
  if level == "allow":
    return
  explicit = _explicit.depth > 0
  if explicit and not level.endswith("_explicit"):
    return
  what = (f"host-to-device transfer: aval={aval}, "
          f"dst_sharding=SingleDeviceSharding(device={device!r}, memory_kind=device)")
  if level.startswith("log"):
    logger.warning(what)
    return
  from jaxon._src.errors import JaxRuntimeError
  raise JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed {what}")
