"""Seed 000 ("JAX Internals: primitives") run as a test, with `jax` replaced by `jaxon`: a
`multiply_add` primitive defined from scratch, given an impl, an abstract evaluation rule
and a lowering, jitted with and without static arguments, then taught forward
differentiation, transposition (for reverse mode) and batching, each also under jit.

The seed's code is kept as written (its `trace` helpers included). Each test builds a fresh
primitive with the rules the seed has registered at that point, so the tests do not depend
on running in order; each `NotImplementedError` the seed expects is checked where it marks.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import core, lax
from jaxon._src import api
from jaxon._src.lib.mlir.dialects import hlo
from jaxon.interpreters import ad, batching, mlir


def _equals(x, expected: float) -> bool:
  """The seed's `assert f(...) == 14.`: uses Array `==` where jaxon.numpy defines it (until
  then `==` on an Array is Python's identity test)."""
  result = x == expected
  return bool(result) if isinstance(result, jaxon.Array) else float(x) == expected


# ----------------------------------------------------------------------------- seed helpers

_indentation = 0


@pytest.fixture(autouse=True)
def _reset_indentation():
  """The seed's `expectNotImplementedError` resets the indentation after an expected error;
  each test starts from zero the same way."""
  global _indentation
  _indentation = 0


def _trace(msg=None):
  """Print a message at current indentation."""
  if msg is not None:
    print("  " * _indentation + msg)


def _trace_indent(msg=None):
  """Print a message and then indent the rest."""
  global _indentation
  _trace(msg)
  _indentation = 1 + _indentation


def _trace_unindent(msg=None):
  """Unindent then print a message."""
  global _indentation
  _indentation = _indentation - 1
  _trace(msg)


def trace(name):
  """A decorator for functions to trace arguments and results."""

  def trace_func(func):
    def pp(v):
      """Print certain values more succinctly"""
      vtype = str(type(v))
      if ("partial_eval.JaxprTracer" in vtype or "batching.BatchTracer" in vtype
          or "ad.JVPTracer" in vtype):
        return f"Traced<{v.aval}>"
      elif isinstance(v, tuple):
        return f"({pp_values(v)})"
      else:
        return str(v)

    def pp_values(args):
      return ", ".join([pp(arg) for arg in args])

    @functools.wraps(func)
    def func_wrapper(*args):
      _trace_indent(f"call {name}({pp_values(args)})")
      res = func(*args)
      _trace_unindent(f"|<- {name} = {pp(res)}")
      return res

    return func_wrapper

  return trace_func


# ------------------------------------------------------------------- using existing primitives


def multiply_add_lax(x, y, z):
  """Implementation of multiply-add using the `jax.lax` primitives."""
  return lax.add(lax.mul(x, y), z)


def square_add_lax(a, b):
  """A square-add function using the newly defined multiply-add."""
  return multiply_add_lax(a, a, b)


@trace("multiply_add_numpy")
def multiply_add_numpy(x, y, z):
  return jnp.add(jnp.multiply(x, y), z)


@trace("square_add_numpy")
def square_add_numpy(a, b):
  return multiply_add_numpy(a, a, b)


def test_using_existing_primitives(capsys):
  assert _equals(square_add_lax(2., 10.), 14.)
  assert _equals(square_add_numpy(2., 10.), 14.)
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == "call square_add_numpy(2.0, 10.0)"
  assert lines[1] == "  call multiply_add_numpy(2.0, 2.0, 10.0)"
  assert lines[-1] == "|<- square_add_numpy = 14.0"


# ----------------------------------------------------------------------------- a new primitive


@trace("multiply_add_impl")
def multiply_add_impl(x, y, z):
  """Concrete implementation of the primitive; ordinary NumPy, not traceable."""
  return np.add(np.multiply(x, y), z)


@trace("multiply_add_abstract_eval")
def multiply_add_abstract_eval(xs, ys, zs):
  """Abstract evaluation of the primitive: shapes and dtypes only."""
  assert xs.shape == ys.shape
  assert xs.shape == zs.shape
  return core.ShapedArray(xs.shape, xs.dtype)


@trace("multiply_add_lowering")
def multiply_add_lowering(ctx, xc, yc, zc):
  """The compilation to XLA of the primitive."""
  return [hlo.AddOp(hlo.MulOp(xc, yc), zc).result]


def define_multiply_add(impl: bool = True, abstract_eval: bool = True, lowering: bool = True,
                        jvp: bool = False, transpose: bool = False, batch: bool = False):
  """The seed's primitive and wrappers, with the rules registered so far in its narrative."""
  multiply_add_p = core.Primitive("multiply_add")  # Create the primitive

  @trace("multiply_add_prim")
  def multiply_add_prim(x, y, z):
    """The JAX-traceable way to use the JAX primitive."""
    return multiply_add_p.bind(x, y, z)

  @trace("square_add_prim")
  def square_add_prim(a, b):
    """A square-add function implemented using the new JAX-primitive."""
    return multiply_add_prim(a, a, b)

  if impl:
    multiply_add_p.def_impl(multiply_add_impl)
  if abstract_eval:
    multiply_add_p.def_abstract_eval(multiply_add_abstract_eval)
  if lowering:
    mlir.register_lowering(multiply_add_p, multiply_add_lowering, platform='cpu')
  if jvp:
    ad.primitive_jvps[multiply_add_p] = make_value_and_jvp(multiply_add_prim)
  if transpose:
    ad.primitive_transposes[multiply_add_p] = make_transpose(multiply_add_prim)
  if batch:
    batching.primitive_batchers[multiply_add_p] = make_batch(multiply_add_prim)
  return multiply_add_p, square_add_prim


def test_no_rules_yet():
  _, square_add_prim = define_multiply_add(impl=False, abstract_eval=False, lowering=False)
  with pytest.raises(NotImplementedError, match="Evaluation rule for 'multiply_add'"):
    square_add_prim(2., 10.)


def test_primal_evaluation(capsys):
  _, square_add_prim = define_multiply_add(abstract_eval=False, lowering=False)
  assert square_add_prim(2., 10.) == 14.
  assert "call multiply_add_impl(2.0, 2.0, 10.0)" in capsys.readouterr().out


def test_jit_needs_abstract_evaluation():
  _, square_add_prim = define_multiply_add(abstract_eval=False, lowering=False)
  with pytest.raises(NotImplementedError, match="Abstract evaluation for 'multiply_add'"):
    api.jit(square_add_prim)(2., 10.)


def test_jit_needs_lowering(capsys):
  _, square_add_prim = define_multiply_add(lowering=False)
  with pytest.raises(NotImplementedError, match="MLIR translation rule.*multiply_add"):
    api.jit(square_add_prim)(2., 10.)
  out = capsys.readouterr().out
  assert "call multiply_add_abstract_eval(ShapedArray(float32[], weak_type=True)" in out


def test_jit(capsys):
  _, square_add_prim = define_multiply_add()
  assert _equals(api.jit(lambda x, y: square_add_prim(x, y))(2., 10.), 14.)
  out = capsys.readouterr().out
  assert "call multiply_add_abstract_eval(" in out and "call multiply_add_lowering(" in out
  assert "multiply_add_impl" not in out, "under jit the impl rule is not used"


def test_jit_static_argnums(capsys):
  _, square_add_prim = define_multiply_add()
  assert _equals(api.jit(lambda x, y: square_add_prim(x, y), static_argnums=1)(2., 10.), 14.)
  out = capsys.readouterr().out
  # The static second argument reaches the primitive as a constant: still abstract here.
  assert "call multiply_add_abstract_eval(" in out


def test_jit_on_arrays():
  _, square_add_prim = define_multiply_add()
  a, b = np.array([2., 3.], np.float32), np.array([10., 20.], np.float32)
  np.testing.assert_allclose(api.jit(square_add_prim)(a, b), [14., 29.])
  np.testing.assert_allclose(square_add_prim(a, b), [14., 29.])


def test_jaxpr_of_the_new_primitive():
  _, square_add_prim = define_multiply_add()
  jaxpr = api.make_jaxpr(square_add_prim)(2., 10.)
  assert str(jaxpr) == "{ lambda ; a:f32[] b:f32[]. let c:f32[] = multiply_add a a b in (c,) }"


# ----------------------------------------------------------------------------- forward mode
# The seed's rules use its global `multiply_add_prim`; each test defines a fresh primitive, so
# the rules here are made per primitive by functions that take its `multiply_add_prim`.


def make_value_and_jvp(multiply_add_prim):
  @trace("multiply_add_value_and_jvp")
  def multiply_add_value_and_jvp(arg_values, arg_tangents):
    """Evaluates the primal output and the tangents (Jacobian-vector product)."""
    return seed_value_and_jvp(multiply_add_prim, arg_values, arg_tangents)
  return multiply_add_value_and_jvp


def seed_value_and_jvp(multiply_add_prim, arg_values, arg_tangents):
  """The body of the seed's `multiply_add_value_and_jvp`."""
  x, y, z = arg_values
  xt, yt, zt = arg_tangents
  _trace("Primal evaluation:")
  primal_out = multiply_add_prim(x, y, z)

  _trace("Tangent evaluation:")

  def make_zero(tan):
    return lax.zeros_like_array(x) if type(tan) is ad.Zero else tan

  output_tangent = multiply_add_prim(make_zero(xt), y,
                                     multiply_add_prim(x, make_zero(yt), make_zero(zt)))
  return (primal_out, output_tangent)


def test_jvp_needs_a_rule():
  _, square_add_prim = define_multiply_add()
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'multiply_add'"):
    api.jvp(square_add_prim, (2., 10.), (1., 1.))


def test_jvp(capsys):
  _, square_add_prim = define_multiply_add(jvp=True)
  # Tangent is: xt*y + x*yt + zt = 1.*2. + 2.*1. + 1. = 5.
  assert api.jvp(square_add_prim, (2., 10.), (1., 1.)) == (14., 5.)
  out = capsys.readouterr().out
  assert "call multiply_add_value_and_jvp(" in out
  assert out.count("call multiply_add_impl(") == 3, "primal and two tangent evaluations"


def test_jit_of_jvp(capsys):
  _, square_add_prim = define_multiply_add(jvp=True)
  assert api.jit(lambda arg_values, arg_tangents:
                 api.jvp(square_add_prim, arg_values, arg_tangents))(
      (2., 10.), (1., 1.)) == (14., 5.)
  out = capsys.readouterr().out
  assert out.count("call multiply_add_abstract_eval(") == 3
  assert out.count("call multiply_add_lowering(") == 3
  assert "multiply_add_impl" not in out


# ----------------------------------------------------------------------------- reverse mode


def make_transpose(multiply_add_prim):
  @trace("multiply_add_transpose")
  def multiply_add_transpose(ct, x, y, z):
    """Evaluates the transpose of a linear primitive."""
    return seed_transpose(multiply_add_prim, ct, x, y, z)
  return multiply_add_transpose


def seed_transpose(multiply_add_prim, ct, x, y, z):
  """The body of the seed's `multiply_add_transpose`."""
  if not ad.is_undefined_primal(x):
    # This use of multiply_add is with a constant "x".
    assert ad.is_undefined_primal(y)
    ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else multiply_add_prim(
        x, ct, lax.zeros_like_array(x))
    res = None, ct_y, ct
  else:
    # This use of multiply_add is with a constant "y".
    assert ad.is_undefined_primal(x)
    ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else multiply_add_prim(
        ct, y, lax.zeros_like_array(y))
    res = ct_x, None, ct
  return res


def test_grad_needs_a_transpose_rule(capsys):
  _, square_add_prim = define_multiply_add(jvp=True)
  with pytest.raises(NotImplementedError, match="Transpose rule.*multiply_add"):
    api.grad(square_add_prim)(2., 10.)
  out = capsys.readouterr().out
  # The JVP ran with concrete values for the point and abstract tangents, `Zero` for the
  # argument not differentiated; its make_zero turned that into a constant 0.0.
  assert "call multiply_add_value_and_jvp((2.0, 2.0, 10.0), (Traced<" in out
  assert "Zero(f32[])))" in out
  assert "call multiply_add_impl(2.0, 2.0, 10.0)" in out
  assert "call multiply_add_prim(2.0, Traced<f32[]>with<LinearizeTrace>, 0.0)" in out


def test_grad(capsys):
  _, square_add_prim = define_multiply_add(jvp=True, transpose=True)
  assert api.grad(square_add_prim)(2., 10.) == 4.
  out = capsys.readouterr().out
  assert out.count("call multiply_add_transpose(") == 2
  # The first transpose call is for the last use, multiply_add_prim(xt, y, ...), y = 2.0.
  first = next(line for line in out.splitlines() if "multiply_add_transpose(" in line)
  assert "UndefinedPrimal" in first and ", 2.0, " in first


def test_jit_of_grad(capsys):
  _, square_add_prim = define_multiply_add(jvp=True, transpose=True)
  assert api.jit(api.grad(square_add_prim))(2., 10.) == 4.
  out = capsys.readouterr().out
  assert out.count("call multiply_add_transpose(") == 2
  assert "multiply_add_impl" not in out


# ----------------------------------------------------------------------------- batching


def make_batch(multiply_add_prim):
  @trace("multiply_add_batch")
  def multiply_add_batch(vector_arg_values, batch_axes):
    """Computes the batched version of the primitive."""
    return seed_batch(multiply_add_prim, vector_arg_values, batch_axes)
  return multiply_add_batch


def seed_batch(multiply_add_prim, vector_arg_values, batch_axes):
  """The body of the seed's `multiply_add_batch`."""
  assert batch_axes[0] == batch_axes[1]
  assert batch_axes[0] == batch_axes[2]
  _trace("Using multiply_add to compute the batch:")
  res = multiply_add_prim(*vector_arg_values)
  return res, batch_axes[0]


def test_vmap_needs_a_rule():
  _, square_add_prim = define_multiply_add(jvp=True, transpose=True)
  with pytest.raises(NotImplementedError, match="Batching rule for 'multiply_add'"):
    api.vmap(square_add_prim, in_axes=0, out_axes=0)(np.array([2., 3.]),
                                                     np.array([10., 20.]))


def test_vmap(capsys):
  _, square_add_prim = define_multiply_add(jvp=True, transpose=True, batch=True)
  assert np.allclose(api.vmap(square_add_prim, in_axes=0, out_axes=0)(
      np.array([2., 3.]), np.array([10., 20.])), [14., 29.])
  assert "call multiply_add_batch(" in capsys.readouterr().out


def test_jit_of_vmap():
  _, square_add_prim = define_multiply_add(jvp=True, transpose=True, batch=True)
  assert np.allclose(api.jit(api.vmap(square_add_prim, in_axes=0, out_axes=0))
                     (np.array([2., 3.]), np.array([10., 20.])), [14., 29.])

