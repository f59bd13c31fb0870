"""Round-trip golden: every jaxpr the golden tests print reads back (`jaxpr_from_text`) as
an equal jaxpr that prints identically; saved programs (`jaxpr_to_text`) keep custom
derivative rules and symbolic shapes."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import export, make_jaxpr
from jaxon._src import core
from jaxon._src.jaxpr_parser import jaxpr_from_text, jaxpr_to_text
from tests import test_jaxpr_golden as golden
from tests.test_jaxpr_parser import _assert_same


def _golden_jaxprs() -> list[tuple[str, core.ClosedJaxpr]]:
  out = [(f"seed_{name}", make()) for name, make, _ in golden.SEED_CASES]
  out += [(f"small_{name}", make_jaxpr(fun)(*args)) for name, fun, args, _ in golden.SMALL_CASES]
  out += [(f"pjit_{name}", make_jaxpr(fun)(golden._x1)) for name, fun, _ in golden.PJIT_CASES]
  return out


def test_golden_jaxprs_read_back_equal():
  """One pass over all golden cases (cheap: no compilation)."""
  jaxprs = _golden_jaxprs()
  assert len(jaxprs) >= 24
  for name, jaxpr in jaxprs:
    text = str(jaxpr)
    parsed = jaxpr_from_text(text, jaxpr.consts)
    assert str(parsed) == text, name
    _assert_same(jaxpr, parsed, name, {})


@jaxon.custom_jvp
def _softplus(x):
  return jnp.log1p(jnp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] * jaxon.nn.sigmoid(p[0]) * 2.0))


@jaxon.custom_vjp
def _clip_gradient(x, n):
  return jnp.sin(x) * n


_clip_gradient.defvjp(lambda x, n: (_clip_gradient(x, n), (jnp.cos(x), n)),
                      lambda res, g: (jnp.clip(g * res[0] * res[1], -0.5, 0.5), None))


def _custom_program(x):
  return _softplus(x) + _clip_gradient(x, 3) + jaxon.nn.relu(x)


def test_custom_rules_print_and_read_back_without_rules():
  """Plain text names the rules only: it reads back, prints the same and computes the
  same, and differentiating says the rule was not saved."""
  jaxpr = make_jaxpr(_custom_program)(1.0)
  parsed = jaxpr_from_text(str(jaxpr))
  assert str(parsed) == str(jaxpr)
  np.testing.assert_allclose(core.jaxpr_as_fun(parsed)(0.3)[0], _custom_program(0.3), rtol=1e-6)
  with pytest.raises(ValueError, match="does not carry it"):
    jaxon.grad(lambda x: core.jaxpr_as_fun(parsed)(x)[0])(0.3)


def test_saved_text_keeps_custom_rules_to_second_order():
  text, consts = jaxpr_to_text(make_jaxpr(_custom_program)(1.0))
  loaded = jaxpr_from_text(text, consts)
  fun = lambda x: core.jaxpr_as_fun(loaded)(x)[0]  # noqa: E731
  xs = np.array([-1.0, 0.3, 2.0], np.float32)
  for f in (jaxon.grad, lambda f: jaxon.grad(jaxon.grad(f))):
    want = jaxon.vmap(f(_custom_program))(xs)
    np.testing.assert_allclose(jaxon.vmap(f(fun))(xs), want, rtol=1e-6)
  assert str(jaxpr_from_text(text, consts)) == text


def test_symbolic_shapes_print_and_read_back():
  b, = export.symbolic_shape("b")
  spec = jaxon.ShapeDtypeStruct((b, 3), np.float32)
  jaxpr = make_jaxpr(lambda x: jnp.concatenate([x, x[1:]]).reshape(-1).sum() * 2.0
                     + jnp.mean(x))(spec)
  text = str(jaxpr)
  assert "f32[2*b - 1,3]" in text and "f32[6*b - 3]" in text
  parsed = jaxpr_from_text(text, jaxpr.consts)
  assert str(parsed) == text


def test_sharding_collective_and_float0_params_read_back():
  """Meshes (over `jaxon.devices()` in order), shardings, partition specs, shard_map's
  specs, axis names of collectives (bound by `axis_env` as `make_jaxpr`'s), and a float0
  literal (the gradient of a function of an int) read back equal."""
  from jaxon.sharding import Mesh, NamedSharding
  from jaxon.sharding import PartitionSpec as P
  mesh = Mesh(np.array(jaxon.devices()[:8]).reshape(4, 2), ("x", "y"))
  sharded = jaxon.jit(lambda a, b: jnp.sin(a) * b,
                      in_shardings=(NamedSharding(mesh, P("x", None)), None),
                      out_shardings=NamedSharding(mesh, P("y")))
  x8 = np.ones((8, 4), np.float32)
  mesh1d = Mesh(np.array(jaxon.devices()[:4]), ("i",))
  mapped = jaxon.shard_map(lambda x: jax_psum(x), mesh=mesh1d, in_specs=P("i"),
                           out_specs=P(), check_vma=False)
  cases = [(make_jaxpr(sharded)(x8, x8), None),
           (make_jaxpr(mapped)(np.arange(8.0, dtype=np.float32)), None),
           (make_jaxpr(lambda x: jaxon.lax.all_to_all(jax_psum(x), "i", 0, 0, tiled=True),
                       axis_env=[("i", 4)])(np.ones(4, np.float32)), [("i", 4)]),
           (make_jaxpr(jaxon.grad(lambda n: n * 2.0, allow_int=True))(2), None)]
  for jaxpr, axis_env in cases:
    text = str(jaxpr)
    parsed = jaxpr_from_text(text, jaxpr.consts, axis_env=axis_env)
    assert str(parsed) == text
    _assert_same(jaxpr, parsed, text, {})
  np.testing.assert_array_equal(core.jaxpr_as_fun(jaxpr_from_text(str(cases[1][0])))(
      np.arange(8.0, dtype=np.float32))[0], [12.0, 16.0])


def jax_psum(x):
  return jaxon.lax.psum(x, "i")


def test_the_suite_wide_check_fails_on_text_that_does_not_read_back():
  """`tests/jaxpr_readback.py` (autouse): every jaxpr a test prints must read back."""
  from tests.jaxpr_readback import check_reads_back
  check_reads_back(str(make_jaxpr(jax_psum, axis_env=[("i", 2)])(1.0)), [("i", 2)])
  with pytest.raises(AssertionError, match="does not read back"):
    check_reads_back("{ lambda ; a:f32[]. let b:f32[] = sin[bogus=<x>] a in (b,) }")


def test_parser_modules_read_in_one_sitting():
  """The reader is split by concern (words, param values, grammar), each file short."""
  from pathlib import Path
  src = Path(core.__file__).parent
  for name in ("jaxpr_lexer", "jaxpr_param_readers", "jaxpr_parser", "jaxpr_parser_sharding"):
    assert len((src / f"{name}.py").read_text().splitlines()) < 600, name


def test_float0_avals_print_as_jax():
  """JAX 0.10.2 prints `ShapedArray(float0[])` (NumPy names the dtype `void`)."""
  tangent = core.ShapedArray((2,), np.int32).to_tangent_aval()
  assert repr(tangent) == "ShapedArray(float0[2])"
  assert repr(core.ShapedArray((), tangent.dtype)) == "ShapedArray(float0[])"
  assert tangent.str_short() == "float0[2]"


def test_narrow_float_literals_print_as_floats_and_read_back():
  """ml_dtypes' scalars print whole values as integers (`1`): jaxprs print them as `1.0`,
  which a reader takes for a float of the equation's dtype, not an int32."""
  jaxpr = jaxon.make_jaxpr(lambda x: x * jnp.bfloat16(1) - jnp.bfloat16(-2))(
      jnp.ones(2, jnp.bfloat16))
  text = str(jaxpr)
  assert "mul a 1.0" in text and "sub b -2.0" in text
  parsed = jaxpr_from_text(text, jaxpr.consts)
  assert str(parsed) == text
  assert [str(e.invars[1].aval.dtype) for e in parsed.jaxpr.eqns] == ["bfloat16"] * 2
