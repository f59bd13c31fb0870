"""Errors: concrete values demanded from tracers, escaped tracers, type errors that name the
shapes and dtypes involved, and misuse of arrays and configuration."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import errors, jit, lax, make_jaxpr


def test_error_hierarchy():
  assert issubclass(errors.ConcretizationTypeError, TypeError)
  assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
  assert issubclass(errors.TracerIntegerConversionError, TypeError)
  assert issubclass(errors.TracerArrayConversionError, TypeError)
  assert jaxon.TracerBoolConversionError is errors.TracerBoolConversionError


# ----------------------------------------------------------------------------- tracers


def _if_on_array(x):
  if x:
    return x
  return -x


def _int_of(x):
  return jnp.zeros(()) + int(x)


def _float_of(x):
  return jnp.zeros(()) + float(x)


def _range_of(n):
  return jnp.zeros(()) + sum(range(n))


def _numpy_on_tracer(x):
  return np.asarray(x)


def _numpy_ufunc_on_tracer(x):
  return np.sin(x)


CONCRETE_VALUE_CASES = [
    # (id, function, argument, error class, pattern the message must contain)
    ("if_on_vector", _if_on_array, jnp.ones(3), errors.TracerBoolConversionError,
     r"(?s)boolean conversion.*f32\[3\].*static_argnums.*lax\.cond"),
    ("if_on_scalar", _if_on_array, 1.0, errors.TracerBoolConversionError, r"f32\[\]"),
    ("int", _int_of, 1.0, errors.ConcretizationTypeError, r"(?s)`int`.*f32\[\]"),
    ("float", _float_of, jnp.ones((), jnp.int32), errors.ConcretizationTypeError,
     r"(?s)`float`.*i32\[\]"),
    ("range", _range_of, 3, errors.TracerIntegerConversionError, r"__index__.*i32\[\]"),
    ("np_asarray", _numpy_on_tracer, 1.0, errors.TracerArrayConversionError,
     r"__array__.*f32\[\]"),
    ("np_ufunc", _numpy_ufunc_on_tracer, jnp.ones(2), errors.TracerArrayConversionError,
     r"f32\[2\]"),
]


@pytest.mark.parametrize("name,fun,arg,error,pattern", CONCRETE_VALUE_CASES,
                         ids=[c[0] for c in CONCRETE_VALUE_CASES])
@pytest.mark.parametrize("transform", ["jit", "make_jaxpr"])
def test_concrete_value_of_tracer(name: str, fun: Callable, arg, error: type, pattern: str,
                                  transform: str):
  with pytest.raises(error, match=pattern):
    (jit if transform == "jit" else make_jaxpr)(fun)(arg)


def test_if_on_comparison_of_tracer():
  if not hasattr(jnp, "greater"):
    pytest.skip("comparison operators are not in jaxon.numpy yet")

  def relu(x):
    return x if x > 0 else 0.0 * x
  with pytest.raises(errors.TracerBoolConversionError, match=r"bool\[\]"):
    jit(relu)(1.0)
  assert relu(jnp.ones(())) == 1.0  # fine eagerly
  np.testing.assert_allclose(jit(relu, static_argnums=0)(2.0), 2.0)


def test_same_code_runs_eagerly():
  """The errors above are about tracing: the same Python runs on concrete arrays."""
  assert float(_int_of(jnp.array(2.5))) == 2.0
  assert float(_range_of(jnp.array(3))) == 3.0
  assert float(_if_on_array(jnp.array(2.0))) == 2.0


# ----------------------------------------------------------------------------- escaped tracers


_saved = None


def _leak() -> jaxon.core.Tracer:
  """Runs a jitted function that saves its traced argument to a global, and returns it."""
  @jit
  def f(x):
    global _saved
    _saved = x
    return x
  f(1.0)
  return _saved


ESCAPE_CASES = [
    ("eager_op", lambda t: jnp.sin(t)),
    ("eager_operator", lambda t: t + 1.0),
    ("other_jit", lambda t: jit(lambda y: y + t)(1.0)),
    ("make_jaxpr", lambda t: make_jaxpr(lambda y: y * t)(1.0)),
]


@pytest.mark.parametrize("name,use", ESCAPE_CASES, ids=[c[0] for c in ESCAPE_CASES])
def test_escaped_tracer(name: str, use: Callable):
  leaked = _leak()
  with pytest.raises(errors.UnexpectedTracerError, match=r"(?s)f32\[\].*escaped"):
    use(leaked)


# ----------------------------------------------------------------------------- type errors

_f3, _f4 = jnp.ones(3), jnp.ones(4)

TYPE_ERROR_CASES = [
    # (id, thunk, error class, pattern)
    ("add_shapes", lambda: lax.add(_f3, _f4), TypeError, r"add.*\(3,\).*\(4,\)"),
    ("add_dtypes", lambda: lax.add(jnp.ones(3, jnp.int32), _f3), TypeError,
     r"add.*i32\[3\].*f32\[3\]"),
    ("sin_int", lambda: lax.sin(jnp.ones(2, jnp.int32)), TypeError, r"sin.*int32"),
    ("neg_bool", lambda: lax.neg(jnp.ones(2, jnp.bool_)), TypeError, r"neg.*bool"),
    ("broadcast_in_dim", lambda: lax.broadcast_in_dim(_f3, (4,), (0,)), TypeError,
     r"broadcast_in_dim.*\(3,\).*\(4,\)"),
    ("broadcast_dims_rank", lambda: lax.broadcast_in_dim(_f3, (3, 4), (1, 0, 2)), TypeError,
     r"broadcast_dimensions.*\(1, 0, 2\)"),
    ("reduce_sum_axes", lambda: lax.reduce_sum(_f3, (1,)), ValueError, r"\(1,\).*\(3,\)"),
    ("jnp_sum_axis", lambda: jnp.sum(_f3, axis=2), ValueError, r"axis 2"),
    ("bad_dtype", lambda: lax.convert_element_type(_f3, np.str_), TypeError, r"'str'"),
]


@pytest.mark.parametrize("name,thunk,error,pattern", TYPE_ERROR_CASES,
                         ids=[c[0] for c in TYPE_ERROR_CASES])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_type_errors_name_shapes_and_dtypes(name: str, thunk: Callable, error: type,
                                            pattern: str, mode: str):
  with pytest.raises(error, match=pattern):
    (jit(thunk) if mode == "jit" else thunk)()


def test_invalid_argument_types():
  with pytest.raises(TypeError, match="not a valid JAX type"):
    jit(lambda x: x)("a string")
  with pytest.raises(TypeError, match="not a valid"):
    make_jaxpr(lambda x: x)(object())
  with pytest.raises(TypeError, match="str"):
    jit(lambda x: "a string")(1.0)


# ----------------------------------------------------------------------------- arrays, config


ARRAY_MISUSE_CASES = [
    ("setitem", lambda a: a.__setitem__(0, 1.0), TypeError, r"immutable.*\.at\["),
    ("hash", lambda a: hash(a), TypeError, "unhashable"),
    ("bool_of_vector", lambda a: bool(a), ValueError, r"ambiguous"),
    ("float_of_vector", lambda a: float(a), TypeError, r"\(3,\)"),
    ("index_of_float", lambda a: a.__index__(), TypeError, r"f32\[3\]"),
]


@pytest.mark.parametrize("name,use,error,pattern", ARRAY_MISUSE_CASES,
                         ids=[c[0] for c in ARRAY_MISUSE_CASES])
def test_array_misuse(name: str, use: Callable, error: type, pattern: str):
  with pytest.raises(error, match=pattern):
    use(jnp.ones(3))


def test_len_of_scalar():
  with pytest.raises(TypeError, match="unsized"):
    len(jnp.array(1.0))


def test_unknown_config_option():
  with pytest.raises(AttributeError, match="Unrecognized config option: 'jax_no_such_flag'"):
    jaxon.config.update("jax_no_such_flag", True)
  with pytest.raises(AttributeError, match="jax_no_such_flag"):
    jaxon.config.jax_no_such_flag  # noqa: B018


def test_primitive_without_rules():
  p = jaxon.core.Primitive("no_rules")
  with pytest.raises(NotImplementedError, match="Evaluation rule for 'no_rules'"):
    p.bind(1.0)
  with pytest.raises(NotImplementedError, match="Abstract evaluation for 'no_rules'"):
    jit(p.bind)(1.0)


def test_unexpected_tracer_error_is_a_type_error():
  """As in JAX, so code catching TypeError catches it."""
  assert issubclass(errors.UnexpectedTracerError, TypeError)


def test_python_int_out_of_range_raises_overflow_error():
  with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert to "
                     "int32"):
    jnp.array(2**40)
  with pytest.raises(OverflowError, match="too large to convert to int32"):
    jnp.array([1, -2**40])
  assert int(jnp.array(2**31 - 1)) == 2**31 - 1


def test_copies_are_new_buffers():
  import copy
  x = jnp.ones(3)
  for c in (copy.copy(x), copy.deepcopy(x), jnp.array(x), jnp.copy(x)):
    assert c is not x
    c.delete()
  assert float(x.sum()) == 3.0
