"""The extension API: `jaxon.extend`, `jaxon.api_util`, and the rule-writing helpers of
`jaxon.interpreters`. A primitive defined the way JAX's docs define one (with
`jax.extend.core.Primitive` and the interpreters' tables) must work under every
transformation; the helpers are checked against values recorded from JAX 0.10.2."""
from __future__ import annotations

import collections

import numpy as np
import pytest
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

import jaxon
import jaxon.numpy as jnp
from jaxon import ad_checkpoint, api_util, export, extend, tree_util
from jaxon.core import ShapedArray
from jaxon.example_libraries import optimizers
from jaxon.experimental import mesh_utils, ode
from jaxon.extend import linear_util as lu
from jaxon.interpreters import ad, batching, mlir
from jaxon.test_util import check_grads

# ----------------------------------------------------------------------------- a primitive
# x * y + z, as in JAX's "How primitives work", with every rule.

multiply_add_p = extend.core.Primitive("test_multiply_add")


def multiply_add(x, y, z):
  return multiply_add_p.bind(x, y, z)


multiply_add_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
multiply_add_p.def_abstract_eval(lambda x, y, z: ShapedArray(x.shape, x.dtype))


def _multiply_add_lowering(ctx, x, y, z):
  return [hlo.add(hlo.multiply(x, y), z)]


def _multiply_add_jvp(primals, tangents):
  x, y, z = primals
  tx, ty, tz = (ad.instantiate_zeros(t) for t in tangents)
  return multiply_add(x, y, z), multiply_add(tx, y, multiply_add(x, ty, tz))


def _multiply_add_transpose(ct, x, y, z):
  # linear in z and in one of x, y (the other one known): what the JVP above stages
  zero = jnp.zeros_like(ct)
  ct_x = multiply_add(ct, y, zero) if ad.is_undefined_primal(x) else None
  ct_y = multiply_add(x, ct, zero) if ad.is_undefined_primal(y) else None
  return [ct_x, ct_y, ct if ad.is_undefined_primal(z) else None]


def _multiply_add_batch(args, dims):
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  args = [batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
  return multiply_add(*args), 0


mlir.register_lowering(multiply_add_p, _multiply_add_lowering)
ad.primitive_jvps[multiply_add_p] = _multiply_add_jvp
ad.primitive_transposes[multiply_add_p] = _multiply_add_transpose
batching.primitive_batchers[multiply_add_p] = _multiply_add_batch


def test_a_user_primitive_works_under_jit_grad_and_vmap():
  x, y, z = (np.array([1.0, 2.0, 3.0], np.float32) * k for k in (1, 2, 3))

  @jaxon.jit
  def all_transforms(x, y, z):
    f = lambda x, y, z: multiply_add(x, y, z).sum()
    return (multiply_add(x, y, z), jaxon.grad(f, argnums=(0, 1, 2))(x, y, z),
            jaxon.vmap(multiply_add, in_axes=(0, None, 0))(x[:, None] * y, y, z[:, None] * y))
  out, grads, batched = all_transforms(x, y, z)
  np.testing.assert_allclose(out, x * y + z)
  for g, expected in zip(grads, (y, x, np.ones(3))):
    np.testing.assert_allclose(g, expected)
  np.testing.assert_allclose(batched, (x[:, None] * y) * y + z[:, None] * y)
  np.testing.assert_allclose(multiply_add(x, y, z), x * y + z)  # its impl, eagerly
  assert "test_multiply_add" in str(jaxon.make_jaxpr(multiply_add)(x, y, z))
  check_grads(lambda x, y: multiply_add(x, y, x), (x / 4, y / 8), order=2,
              modes=("fwd", "rev"))


def test_rule_helpers_define_bilinear_and_output_using_rules():
  prod_p = extend.core.Primitive("test_prod")
  prod_p.def_impl(np.multiply)
  prod_p.def_abstract_eval(lambda x, y: ShapedArray(x.shape, x.dtype))
  mlir.register_lowering(prod_p, lambda ctx, x, y: [hlo.multiply(x, y)])
  ad.defbilinear(prod_p, lambda ct, x, y: prod_p.bind(ct, y), lambda ct, x, y: prod_p.bind(x, ct))
  exp_p = extend.core.Primitive("test_exp")
  exp_p.def_impl(np.exp)
  exp_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
  mlir.register_lowering(exp_p, lambda ctx, x: [hlo.exponential(x)])
  ad.defjvp2(exp_p, lambda g, ans, x: prod_p.bind(g, ans))  # d exp = exp * dx, from ans
  x, y = np.float32(0.5), np.float32(-1.5)
  check_grads(lambda x, y: prod_p.bind(exp_p.bind(x), y), (x, y), order=2,
              modes=("fwd", "rev"))
  assert ad.get_primitive_transpose(prod_p) is ad.primitive_transposes[prod_p]
  with pytest.raises(NotImplementedError, match="test_exp"):
    ad.get_primitive_transpose(exp_p)
  np.testing.assert_allclose(ad.add_jaxvals(jnp.ones(2), jnp.ones(2)), [2.0, 2.0])
  jvp_fun, aux = ad.jvp(lu.wrap_init(lambda x: ([prod_p.bind(x, x)], "aux")), has_aux=True)
  primals_out, tangents_out = jvp_fun.call_wrapped([np.float32(3)], [np.float32(1)])
  assert (primals_out, tangents_out, aux()) == ([9.0], [6.0], "aux")
  np.testing.assert_array_equal(batching.broadcast(jnp.arange(2), 3, 1),
                                np.broadcast_to(np.arange(2)[:, None], (2, 3)))


# ----------------------------------------------------------------------------- api_util


def test_api_util_matches_jax():
  ts = tree_util.tree_structure
  # Golden values recorded from JAX 0.10.2.
  assert api_util.flatten_axes("in_axes", ts((1, (2, 3))), (0, None)) == [0, None, None]
  assert api_util.flatten_axes("in_axes", ts(((1, (2, 3)), {})), (0, None), kws=True) == [0] * 3
  with pytest.raises(ValueError, match="in_axes specification must be a tree prefix"):
    api_util.flatten_axes("in_axes", ts((1, 2)), (0, 0, 0))
  assert api_util.donation_vector((0,), (), ts(((1, 2), {}))) == (True, False)
  assert api_util.donation_vector((1,), ("z",), ts((((1, 1), 2), {"z": 3}))) == (
      False, False, True, True)
  assert api_util.rebase_donate_argnums((1, 3), (0, 2)) == (0, 1)
  assert api_util.shaped_abstractify(jnp.ones(3)) == ShapedArray((3,), jnp.float32)
  assert api_util.shaped_abstractify(1.0).weak_type
  with pytest.raises(TypeError, match="is not a valid JAX type"):
    api_util.shaped_abstractify("a")

  def f(x, y, *, z=1):
    return x
  info = api_util.debug_info("jit", f, (1, {"a": 2}), {"z": 3}, static_argnums=(0,))
  assert info.traced_for == "jit" and info.func_name == "f"
  assert info.arg_names == ("y['a']", "z")
  assert api_util.safe_map(lambda a, b: a + b, [1, 2], [3, 4]) == [4, 6]
  with pytest.raises(ValueError, match="length mismatch"):
    api_util.safe_map(lambda a, b: a, [1], [1, 2])


def test_wrapped_funs_flatten_fix_static_args_and_store_aux():
  ts = tree_util.tree_structure
  wrapped, out_tree = api_util.flatten_fun_nokwargs(
      lu.wrap_init(lambda a, b: (a + b, [a])), ts((1, 2)))
  assert wrapped.call_wrapped(1, 2) == [3, 1]
  assert out_tree() == ts((0, [0]))
  flat, out_tree = api_util.flatten_fun(lu.wrap_init(lambda a, *, k: {"s": a * k}),
                                        ts(((1,), {"k": 2})))
  assert flat.call_wrapped(3, 4) == [12] and out_tree() == ts({"s": 0})
  partial, dyn = api_util.argnums_partial(lu.wrap_init(lambda a, b, c: a * b + c), (0, 2),
                                          (2, 3, 4))
  assert dyn == (2, 4) and partial.call_wrapped(*dyn) == 10
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    api_util.argnums_partial(lu.wrap_init(lambda a, b: a), (0,), (1, [2]))

  # old-style generator transformations, with and without an auxiliary output
  def scale(factor, x):
    ans = yield (x * factor,), {}
    yield ans + 1
  assert lu.transformation(scale, lu.wrap_init(lambda x: x * 10), 2).call_wrapped(1) == 21

  def with_aux(x):
    ans = yield (x,), {}
    yield ans, "aux"
  fun, aux = lu.transformation_with_aux(with_aux, lu.wrap_init(lambda x: -x))
  assert fun.call_wrapped(5) == -5 and aux() == "aux"
  with pytest.raises(lu.StoreException):
    lu.transformation_with_aux(with_aux, lu.wrap_init(lambda x: x))[1]()
  assert lu.merge_linear_aux(aux, lambda: (_ for _ in ()).throw(lu.StoreException())) == (
      True, "aux")

  calls = []
  traced = lu.cache(lambda fun, n: calls.append(n) or fun.call_wrapped(n))
  base = lambda x: x + 1  # noqa: E731
  assert traced(lu.wrap_init(base), 1) == traced(lu.wrap_init(base), 1) == 2
  assert calls == [1]


# ----------------------------------------------------------------------------- core, mlir


def test_extend_core_helpers():
  aval = ShapedArray((2, 3, 4), jnp.float32)
  assert extend.core.mapped_aval(3, 1, aval) == ShapedArray((2, 4), jnp.float32)
  assert extend.core.unmapped_aval(5, 0, ShapedArray((2,), jnp.float32)).shape == (5, 2)
  assert extend.core.primal_dtype_to_tangent_dtype(np.int32) == jaxon.dtypes.float0
  assert extend.core.primal_dtype_to_tangent_dtype(np.float16) == np.float16
  seen = {}

  @jaxon.jit
  def f(x):
    seen["jit"] = extend.core.unsafe_am_i_under_a_jit_DO_NOT_USE()
    with jaxon.ensure_compile_time_eval():
      y = jnp.sin(2.0)
    seen["concrete"] = isinstance(y, jaxon.Array)
    jaxon.vmap(lambda v: seen.setdefault("vmap",
                                         extend.core.unsafe_am_i_under_a_vmap_DO_NOT_USE())
               or v)(x)
    return x * y
  np.testing.assert_allclose(f(jnp.ones(2)), np.sin(2.0) * np.ones(2), rtol=1e-6)
  assert seen == {"jit": True, "concrete": True, "vmap": True}
  assert not extend.core.unsafe_am_i_under_a_jit_DO_NOT_USE()
  closed = jaxon.make_jaxpr(lambda x: jaxon.lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0)
  assert len(list(extend.core.subjaxprs(closed.jaxpr))) == 2
  var = extend.core.gensym()(ShapedArray((2,), jnp.float32))
  eqn = extend.core.new_jaxpr_eqn([var], [extend.core.gensym()(var.aval)], jaxon.lax.neg_p,
                                  {}, None)
  jaxpr = extend.core.Jaxpr([], [var], eqn.outvars, [eqn])
  extend.core.check_jaxpr(jaxpr)
  np.testing.assert_allclose(extend.core.jaxpr_as_fun(extend.core.ClosedJaxpr(jaxpr, []))(
      np.ones(2, np.float32))[0], [-1.0, -1.0])


def test_mlir_attribute_helpers_match_jax():
  # The attributes JAX 0.10.2's `mlir.ir_attribute` makes of the same values.
  cases = [(np.float32(2), "2.000000e+00 : f32"), (3, "3 : i64"), (2.5, "2.500000e+00 : f64"),
           (True, "true"), ("a", '"a"'), (np.array([1, 2], np.int32),
                                          "dense<[1, 2]> : tensor<2xi32>"),
           (np.dtype("float32"), "f32"), ((1, "b"), '[1, "b"]'),
           ({"k": np.int8(1)}, "{k = 1 : i8}"),
           (np.array(3.0), "dense<3.000000e+00> : tensor<f64>")]
  with mlir.make_ir_context(), ir.Location.unknown():
    for value, text in cases:
      assert str(mlir.ir_attribute(value)) == text, value
    assert str(mlir.i32_attr(5)) == "5 : i32" and str(mlir.i64_attr(5)) == "5 : i64"
    assert str(mlir.dense_int_elements([1, 2])) == "dense<[1, 2]> : tensor<2xi64>"
    assert str(mlir.dense_int_array([1, 2])) == "array<i64: 1, 2>"
    assert [str(t) for t in mlir.aval_to_ir_types(None, ShapedArray((2,), jnp.int8))] == [
        "tensor<2xi8>"]
    with pytest.raises(TypeError, match="No attribute handler"):
      mlir.ir_attribute(object())


def test_backend_helpers():
  backend = extend.backend.get_backend()
  assert extend.backend.backends() == {"cpu": backend}
  assert extend.backend.get_default_device() == jaxon.devices()[0]
  options = extend.backend.get_compile_options(num_replicas=1, num_partitions=1)
  assert options.num_replicas == 1 and options.num_partitions == 1
  with pytest.raises(RuntimeError, match="Unknown backend"):
    extend.backend.get_backend("tpu")


# ----------------------------------------------------------------------------- leftovers


class _Box:
  """A custom pytree node with auxiliary data, for export serialization."""

  def __init__(self, value, tag):
    self.value, self.tag = value, tag


tree_util.register_pytree_node(_Box, lambda b: ((b.value,), b.tag),
                               lambda tag, children: _Box(children[0], tag))
_Pair = collections.namedtuple("_Pair", "a b")


def test_exported_programs_with_custom_pytrees_serialize_once_registered():
  f = lambda p, d: _Box(p.a * 2 + d["k"], "tagged")  # noqa: E731
  args = (_Pair(jnp.ones(2), jnp.zeros(2)), {"k": jnp.arange(2.0)})
  exp = export.export(jaxon.jit(f))(*args)
  with pytest.raises(ValueError, match="unregistered type"):
    exp.serialize()
  assert export.register_namedtuple_serialization(_Pair, serialized_name="test._Pair") is _Pair
  export.register_pytree_node_serialization(
      _Box, serialized_name="test._Box", serialize_auxdata=str.encode,
      deserialize_auxdata=bytes.decode)
  with pytest.raises(ValueError, match="Duplicate serialization registration"):
    export.register_namedtuple_serialization(_Pair, serialized_name="test.other")
  with pytest.raises(ValueError, match="not a namedtuple"):
    export.register_namedtuple_serialization(dict, serialized_name="test.dict")
  out = export.deserialize(exp.serialize()).call(*args)
  assert isinstance(out, _Box) and out.tag == "tagged"
  np.testing.assert_allclose(out.value, [2.0, 3.0])


def test_policies_may_answer_saveable_or_recompute():
  def sin_sin(policy_answer):
    return jaxon.checkpoint(lambda x: jnp.sin(jnp.sin(x)),
                            policy=lambda prim, *args, **params: policy_answer)
  saved = str(jaxon.make_jaxpr(jaxon.grad(sin_sin(ad_checkpoint.Saveable)))(1.0))
  recomputed = str(jaxon.make_jaxpr(jaxon.grad(sin_sin(ad_checkpoint.Recompute)))(1.0))
  assert "_:f32[] b:f32[] c:f32[] = remat2" in saved  # cos x and cos(sin x) saved
  assert "_:f32[] = remat2" in recomputed
  assert bool(ad_checkpoint.Offloadable("device", "pinned_host"))  # saved, as Saveable


def test_utility_names_jax_modules_reexport():
  with pytest.raises(ValueError, match="length mismatch"):
    optimizers.zip([1], [1, 2])
  assert optimizers.unzip2([(1, "a"), (2, "b")]) == ((1, 2), ("a", "b"))
  y0 = jnp.array([1.0, 2.0])
  step = jaxon.jit(lambda y0: ode.runge_kutta_step(lambda y, t: -y, y0, -y0, 0.0,
                                                    jnp.float32(0.1))[0])
  y1 = step(y0)
  np.testing.assert_allclose(y1, np.exp(-0.1) * np.array([1.0, 2.0]), rtol=1e-6)
  n = len(jaxon.devices())  # one process: one granule
  mesh = mesh_utils.create_hybrid_device_mesh((n, 1), (1, 1))
  assert mesh.shape == (n, 1) and list(mesh[:, 0]) == jaxon.devices()
  with pytest.raises(ValueError, match="must equal the product of dcn_mesh_shape"):
    mesh_utils.create_hybrid_device_mesh((n,), (2,))
