"""Elementwise functions of jaxon.numpy: promote the arguments, then apply a lax op."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxon._src.lax import lax
from jaxon._src.numpy import util


def _unary_inexact(name: str, lax_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
  def fn(x: Any, /) -> Any:
    (x,) = util.promote_args_inexact(name, x)
    return lax_fn(x)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"Elementwise `numpy.{name}`, computed in floating point."
  return fn


def _binary(name: str, lax_fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
  def fn(x: Any, y: Any, /) -> Any:
    x, y = util.promote_args(name, x, y)
    return lax_fn(x, y)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"Elementwise `numpy.{name}` with JAX's dtype promotion."
  return fn


sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
tanh = _unary_inexact("tanh", lax.tanh)
exp = _unary_inexact("exp", lax.exp)
log = _unary_inexact("log", lax.log)

add = _binary("add", lax.add)
subtract = _binary("subtract", lax.sub)
multiply = _binary("multiply", lax.mul)
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)


def negative(x: Any, /) -> Any:
  """Elementwise `numpy.negative`."""
  (x,) = util.promote_args("negative", x)
  return lax.neg(x)


def true_divide(x: Any, y: Any, /) -> Any:
  """Elementwise division in floating point (integers divide as floats)."""
  x, y = util.promote_args_inexact("true_divide", x, y)
  return lax.div(x, y)


divide = true_divide
