"""The error classes JAX raises when a traced value is used where a concrete one is needed,
and the one a failed computation raises.

Each message says what was traced, and what to do instead.
"""
from __future__ import annotations

from jaxlib import _jax

# What a computation that failed while running raises (a host callback that raised, an
# executable that could not run): jaxlib's class itself, as JAX's `jax.errors` has it, so
# `except JaxRuntimeError` catches what jaxlib raises.
JaxRuntimeError = _jax.JaxRuntimeError

_CONCRETE_HELP = (
    "This happens when Python code needs a concrete value (an `if`, a `bool()`, an `int()`, a "
    "shape) from a value that is only known abstractly while a transformation traces the "
    "function. If the value does not depend on the function's array arguments, compute it "
    "with NumPy instead; if it is an argument of a jitted function, mark it static with "
    "`static_argnums`/`static_argnames`; for control flow on traced values use `lax.cond`, "
    "`lax.switch`, `lax.while_loop` or `jnp.where`.")


class JAXTypeError(TypeError):
  """Base class of the errors about misused traced values."""


class JAXIndexError(IndexError):
  pass


class JaxprTypeError(TypeError):
  """A jaxpr that is not well typed: a variable used before it is bound, or an equation
  whose outputs are not what its primitive gives (`core.check_jaxpr`)."""


class ConcretizationTypeError(JAXTypeError):
  def __init__(self, tracer, context: str = ""):
    super().__init__(
        f"Abstract tracer value encountered where a concrete value is expected: {tracer}\n"
        f"{context}\n{_CONCRETE_HELP}".replace("\n\n", "\n"))


class TracerBoolConversionError(ConcretizationTypeError):
  def __init__(self, tracer):
    JAXTypeError.__init__(
        self,
        f"Attempted boolean conversion of traced array with shape {tracer.aval.str_short()}.\n"
        f"The traced value is {tracer}.\n{_CONCRETE_HELP}")


class TracerIntegerConversionError(JAXTypeError):
  def __init__(self, tracer):
    super().__init__(
        f"The __index__() method was called on traced array with shape "
        f"{tracer.aval.str_short()}.\nThe traced value is {tracer}.\n{_CONCRETE_HELP}")


class TracerArrayConversionError(JAXTypeError):
  def __init__(self, tracer):
    super().__init__(
        f"The numpy.ndarray conversion method __array__() was called on traced array with "
        f"shape {tracer.aval.str_short()}. A traced value cannot become a NumPy array: use "
        f"jaxon.numpy functions on it instead of numpy ones, or move the NumPy code outside "
        f"the transformed function.\nThe traced value is {tracer}.")


class UnexpectedTracerError(JAXTypeError):
  """A tracer used where it cannot be: outside the transformation that created it (it
  escaped), or where only non-traced values are allowed. A TypeError, as in JAX."""

  def __init__(self, msg: str, escaped: bool = True):
    if escaped:
      msg += ("\nA tracer escaped the transformation that created it: it was saved to a "
              "global, a closure or an object attribute during tracing and used after the "
              "transformed function returned. Return the value from the function instead, "
              "or pass it in as an argument.")
    super().__init__(msg)


class KeyReuseError(JAXTypeError):
  pass


class CustomVJPException(Exception):
  """A `custom_vjp` function differentiated with respect to a value it closes over: its
  rule cannot say how (JAX's exception)."""

  def __init__(self) -> None:
    super().__init__(
        "Detected differentiation of a custom_vjp function with respect to a closed-over "
        "value. That isn't supported because the custom VJP rule only specifies how to "
        "differentiate the custom_vjp function with respect to explicit input parameters. "
        "Try passing the closed-over value into the custom_vjp function as an argument, and "
        "adapting the custom_vjp fwd and bwd rules (jaxon.closure_convert does this).")
