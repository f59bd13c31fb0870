"""`accuracy=` of the transcendental lax functions, `lax.mul(..., out_dtype=)` and
`lax.conv_transpose(..., use_consistent_padding=)`: values against golden values recorded
from JAX 0.10.2, lowered StableHLO and printed jaxprs as JAX's, derivatives by finite
differences, vmap, jaxpr text read back, and compile caches shared by equal Tolerances."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from jaxon.core import jaxpr_as_fun, jaxpr_from_text, jaxpr_to_text
from jaxon.experimental import jet, sparse
from tests.util import check_grads

HIGHEST = lax.AccuracyMode.HIGHEST
TOL = lax.Tolerance(atol=1e-3, rtol=1e-4, ulps=2)
NAMES = ("exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
         "sqrt", "rsqrt", "cbrt")
X = np.array([0.25, -1.25, 2.0, 9.5], np.float32)
Z = np.array([0.5 + 1j, -1.25 - 0.5j], np.complex64)


def arg(name):
  """X, or |X| for the functions of non-negative arguments."""
  return np.abs(X) if name in ("log", "log1p", "sqrt", "rsqrt") else X


# JAX 0.10.2 on CPU, f(arg(name), accuracy=HIGHEST): equal to the plain function's values.
JAX_F32 = {
    "exp": [1.2840254306793213, 0.2865048050880432, 7.389056205749512, 13359.7265625],
    "exp2": [1.1892070770263672, 0.4204482138156891, 4.0, 724.0771484375],
    "log": [-1.3862943649291992, 0.2231435477733612, 0.6931471824645996, 2.2512917518615723],
    "log1p": [0.2231435477733612, 0.8109301924705505, 1.0986123085021973, 2.3513753414154053],
    "expm1": [0.2840254008769989, -0.7134951949119568, 6.389056205749512, 13358.7265625],
    "tanh": [0.24491865932941437, -0.8482836484909058, 0.9640275835990906, 1.0],
    "logistic": [0.562176525592804, 0.22270013391971588, 0.8807970285415649,
                 0.9999251365661621],
    "sin": [0.24740396440029144, -0.9489846229553223, 0.9092974066734314,
            -0.07515112310647964],
    "cos": [0.9689124226570129, 0.3153223693370819, -0.416146844625473, -0.9971721768379211],
    "tan": [0.25534191727638245, -3.0095696449279785, -2.185039758682251, 0.07536423951387405],
    "sqrt": [0.5, 1.1180340051651, 1.4142135381698608, 3.082206964492798],
    "rsqrt": [2.0, 0.8944271802902222, 0.7071067690849304, 0.3244428336620331],
    "cbrt": [0.6299605369567871, -1.0772173404693604, 1.2599210739135742, 2.1179118156433105],
}
# JAX 0.10.2, vmap(grad(lambda v: f(v, accuracy=HIGHEST)))(arg(name)): HIGHEST's formulas
# for expm1, tanh and logistic.
JAX_GRAD = {
    "expm1": [1.2840254306793213, 0.2865048050880432, 7.389056205749512, 13359.7265625],
    "tanh": [0.9400148987770081, 0.2804148495197296, 0.07065082341432571,
             2.2411185796045174e-08],
    "logistic": [0.24613410234451294, 0.17310479283332825, 0.10499357432126999,
                 7.484062371077016e-05],
    "sin": [0.9689124226570129, 0.3153223693370819, -0.416146844625473, -0.9971721768379211],
    "cos": [-0.24740396440029144, 0.9489846229553223, -0.9092974066734314,
            0.07515112310647964],
}
# JAX 0.10.2, f(Z, accuracy=HIGHEST) of complex64: XLA's complex log, log1p and sqrt given
# the attribute are others than the plain ones (an ulp apart here).
JAX_C64 = {
    "log": [0.1115717962384224 + 1.1071487665176392j, 0.2973535358905792 - 2.7610862255096436j],
    "log1p": [0.5893274545669556 + 0.588002622127533j, -0.5815753936767578 - 2.0344438552856445j],
    "sqrt": [0.8994536995887756 + 0.5558930039405823j, 0.21942108869552612 - 1.13936185836792j],
    "sin": [0.7397922277450562 + 1.0313360691070557j, -1.0700997114181519 - 0.16431300342082977j],
    "exp": [0.8908078074455261 + 1.3873510360717773j, 0.2514316141605377 - 0.13735772669315338j],
}
# The attribute as JAX's lowering prints it.
HIGHEST_ATTR = ("{result_accuracy = #stablehlo.result_accuracy<mode = "
                "#stablehlo.result_accuracy_mode<HIGHEST>>}")
TOL_ATTR = ("{result_accuracy = #stablehlo.result_accuracy<atol = 1.000000e-03, rtol = "
            "1.000000e-04, ulps = 2, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>}")
HLO_OP = {"exp": "exponential", "exp2": "exponential", "log": "log", "log1p": "log_plus_one",
          "expm1": "exponential_minus_one", "tanh": "tanh", "sin": "sine", "cos": "cosine",
          "tan": "tan", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt"}


def hlo_lines(text):
  return [line.strip() for line in text.splitlines() if "stablehlo." in line or "chlo." in line]


# ----------------------------------------------------------------------------- values


def test_values_are_jaxs_and_the_plain_functions():
  """One program computes every function plain, with HIGHEST and with a Tolerance."""
  def all_of(x, xp):
    return {name: [getattr(lax, name)(xp if name in ("log", "log1p", "sqrt", "rsqrt") else x,
                                      **kw) for kw in ({}, {"accuracy": HIGHEST},
                                                       {"accuracy": TOL})]
            for name in NAMES}
  results = jaxon.jit(all_of)(X, np.abs(X))
  for name in NAMES:
    plain, highest, tol = map(np.asarray, results[name])
    np.testing.assert_array_equal(highest, plain, err_msg=name)
    np.testing.assert_array_equal(tol, plain, err_msg=name)
    np.testing.assert_allclose(highest, np.float32(JAX_F32[name]), rtol=3e-7, err_msg=name)


def test_complex_values_are_jaxs():
  results = jaxon.jit(lambda z: {name: getattr(lax, name)(z, accuracy=HIGHEST)
                                 for name in JAX_C64})(Z)
  for name, want in JAX_C64.items():
    np.testing.assert_allclose(np.asarray(results[name]), np.complex64(want), rtol=3e-7,
                               err_msg=name)


def test_eager_with_accuracy():
  np.testing.assert_array_equal(np.asarray(lax.exp(X, accuracy=TOL)), np.asarray(lax.exp(X)))
  assert lax.sqrt(4.0, accuracy=HIGHEST) == 2.0


def test_accuracy_must_be_a_tolerance_or_a_mode():
  with pytest.raises(TypeError, match="accuracy"):
    lax.exp(X, accuracy="highest")
  with pytest.raises(ValueError, match="At least one"):
    lax.Tolerance()
  with pytest.raises(ValueError, match="non-negative"):
    lax.Tolerance(atol=-1.0)


# ----------------------------------------------------------------------------- lowering


@pytest.mark.parametrize("name", sorted(HLO_OP))
def test_lowering_sets_result_accuracy_as_jax(name):
  f = getattr(lax, name)
  for accuracy, attr in ((HIGHEST, HIGHEST_ATTR), (TOL, TOL_ATTR)):
    lines = hlo_lines(jaxon.jit(lambda x, a=accuracy: f(x, accuracy=a)).lower(X).as_text())
    ops = [line for line in lines if f"stablehlo.{HLO_OP[name]} " in line]
    assert len(ops) == 1 and attr in ops[0], lines
  assert "result_accuracy" not in jaxon.jit(f).lower(X).as_text()


def test_lowerings_without_the_attribute_as_jax():
  """JAX lowers logistic as 1 / (1 + exp(-x)) and complex sin and cos from real parts,
  none of them with the attribute; the plain tan stays CHLO's."""
  def text(f, x):
    return jaxon.jit(f).lower(x).as_text()
  assert "result_accuracy" not in text(lambda x: lax.logistic(x, accuracy=HIGHEST), X)
  for f in (lax.sin, lax.cos):
    assert "result_accuracy" not in text(lambda z, f=f: f(z, accuracy=TOL), Z)
  assert "result_accuracy" in text(lambda z: lax.exp(z, accuracy=TOL), Z)
  assert any(line.startswith("%0 = chlo.tan") for line in hlo_lines(text(lax.tan, X)))


# ----------------------------------------------------------------------------- derivatives


@pytest.mark.parametrize("name", NAMES)
def test_derivatives_with_highest(name):
  f = jaxon.jit(lambda x: getattr(lax, name)(x, accuracy=HIGHEST))
  check_grads(f, (np.array([0.3, 0.7, 1.6], np.float32),), order=2)


def test_derivatives_are_jaxs():
  grads = jaxon.jit(lambda x: {name: jaxon.vmap(jaxon.grad(
      lambda v, f=getattr(lax, name): f(v, accuracy=HIGHEST)))(x) for name in JAX_GRAD})(X)
  for name, want in JAX_GRAD.items():
    np.testing.assert_allclose(np.asarray(grads[name]), np.float32(want), rtol=2e-6,
                               err_msg=name)


def test_jvp_of_jvp_and_vmap():
  def second(f):
    return jaxon.vmap(jaxon.grad(jaxon.grad(f)))
  got = jaxon.jit(lambda x: (second(lambda v: lax.tanh(v, accuracy=HIGHEST))(x),
                             second(lax.tanh)(x)))(X[:3])
  np.testing.assert_allclose(*map(np.asarray, got), rtol=1e-5)
  batched = jaxon.vmap(lambda v: lax.sin(v, accuracy=TOL), in_axes=1)(np.stack([X, 2 * X]))
  np.testing.assert_array_equal(np.asarray(batched), np.asarray(lax.sin(np.stack([X, 2 * X]).T)))
  eqn, = jaxon.make_jaxpr(jaxon.vmap(lambda v: lax.sin(v, accuracy=TOL)))(X).eqns
  assert eqn.params == {"accuracy": TOL}


# ----------------------------------------------------------------------------- jaxprs


def normalized(text):
  """JAX's text less the types it prints on literals that jaxon's leaves implicit."""
  return re.sub(r"(\d):f32\[\]", r"\1", text)


# JAX 0.10.2, make_jaxpr(lambda x: jvp(lambda x: f(x, accuracy=HIGHEST), (x,), (x,)))(X[:3]).
JAX_JVP_JAXPRS = {
    "tanh": """{ lambda ; a:f32[3]. let
    b:f32[3] = tanh[accuracy=AccuracyMode.HIGHEST] a
    c:f32[3] = mul 2.0:f32[] a
    d:f32[3] = logistic[accuracy=AccuracyMode.HIGHEST] c
    e:f32[3] = mul -2.0:f32[] a
    f:f32[3] = logistic[accuracy=AccuracyMode.HIGHEST] e
    g:f32[3] = mul d f
    h:f32[3] = mul 4.0:f32[] g
    i:f32[3] = mul a h
  in (b, i) }""",
    "expm1": """{ lambda ; a:f32[3]. let
    b:f32[3] = expm1[accuracy=AccuracyMode.HIGHEST] a
    c:f32[3] = exp[accuracy=AccuracyMode.HIGHEST] a
    d:f32[3] = mul a c
  in (b, d) }""",
    "logistic": """{ lambda ; a:f32[3]. let
    b:f32[3] = logistic[accuracy=AccuracyMode.HIGHEST] a
    c:f32[3] = neg a
    d:f32[3] = logistic c
    e:f32[3] = mul b d
    f:f32[3] = mul a e
  in (b, f) }""",
    "cos": """{ lambda ; a:f32[3]. let
    b:f32[3] = cos[accuracy=AccuracyMode.HIGHEST] a
    c:f32[3] = sin[accuracy=AccuracyMode.HIGHEST] a
    d:f32[3] = mul a c
    e:f32[3] = neg d
  in (b, e) }""",
}


@pytest.mark.parametrize("name", list(JAX_JVP_JAXPRS))
def test_jvp_jaxprs_print_as_jaxs(name):
  f = getattr(lax, name)
  jaxpr = jaxon.make_jaxpr(lambda x: jaxon.jvp(lambda x: f(x, accuracy=HIGHEST), (x,),
                                               (x,)))(X[:3])
  assert str(jaxpr) == normalized(JAX_JVP_JAXPRS[name])


def test_printing_hides_an_absent_accuracy():
  """No accuracy, no param: the jaxpr is the plain function's (JAX hides its None)."""
  for f in (lambda x: lax.exp(x), lambda x: lax.exp(x, accuracy=None)):
    eqn, = jaxon.make_jaxpr(f)(X).eqns
    assert eqn.params == {}
  assert str(jaxon.make_jaxpr(lax.exp)(X)) == (
      "{ lambda ; a:f32[4]. let b:f32[4] = exp a in (b,) }")
  assert "b:f32[4] = exp[accuracy=AccuracyMode.HIGHEST] a" in str(
      jaxon.make_jaxpr(lambda x: lax.exp(x, accuracy=HIGHEST))(X))


def test_jaxpr_text_reads_back():
  def f(x):
    return (lax.exp(x, accuracy=HIGHEST) + lax.tanh(x, accuracy=TOL)
            + lax.log1p(lax.abs(x), accuracy=lax.AccuracyMode.DEFAULT))
  original = jaxon.make_jaxpr(f)(X)
  text = str(original)
  assert "accuracy=Tolerance(atol=0.001, rtol=0.0001, ulps=2)" in text
  assert "accuracy=AccuracyMode.DEFAULT" in text
  parsed = jaxpr_from_text(*jaxpr_to_text(original))
  assert str(parsed) == text
  assert [e.params for e in parsed.eqns] == [e.params for e in original.eqns]
  want, got = jaxon.jit(lambda x: (jaxpr_as_fun(original)(x), jaxpr_as_fun(parsed)(x)))(X)
  np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))


# ----------------------------------------------------------------------------- Tolerance


def test_tolerance_is_a_value():
  same = lax.Tolerance(atol=1e-3, rtol=1e-4, ulps=2)
  assert same == TOL and hash(same) == hash(TOL) and same is not TOL
  assert lax.Tolerance(ulps=2) != lax.Tolerance(ulps=3)
  assert TOL != HIGHEST
  assert repr(TOL) == "Tolerance(atol=0.001, rtol=0.0001, ulps=2)"


def test_an_equal_tolerance_reuses_the_compiled_program():
  f = jaxon.jit(lambda x, tol: lax.exp(x, accuracy=tol), static_argnums=1)
  f(X, lax.Tolerance(ulps=2))
  f(X, lax.Tolerance(ulps=2))
  assert f._cache_size() == 1
  f(X, lax.Tolerance(ulps=3))
  assert f._cache_size() == 2


# ----------------------------------------------------------------------------- mul


A_BF16 = np.array([1.5, 2.25, -0.375], jnp.bfloat16)
B_F32 = np.array([3.1, -0.7, 0.3], np.float32)


def test_mul_out_dtype_values_are_jaxs():
  wide, narrow = jaxon.jit(lambda a, b: (lax.mul(a, b, out_dtype=jnp.float32),
                                         lax.mul(a, b, out_dtype=jnp.bfloat16)))(A_BF16, B_F32)
  assert (wide.dtype, narrow.dtype) == (np.float32, jnp.bfloat16)
  np.testing.assert_array_equal(np.asarray(wide), np.float32(
      [4.649999618530273, -1.5749999284744263, -0.11250000447034836]))
  np.testing.assert_array_equal(np.asarray(narrow).astype(np.float32),
                                np.float32([4.625, -1.5703125, -0.11279296875]))
  weak = lax.mul(2.0, 3.0, out_dtype=jnp.float32)
  assert weak.dtype == np.float32 and weak.aval.weak_type
  with pytest.raises(TypeError, match="same dtypes"):
    lax.mul(A_BF16, B_F32)


def test_mul_out_dtype_jaxpr_lowering_and_read_back():
  jaxpr = jaxon.make_jaxpr(lambda a, b: lax.mul(a, b, out_dtype=jnp.float32))(A_BF16, B_F32)
  assert "c:f32[3] = mul[out_dtype=float32] a b" in str(jaxpr)
  assert jaxon.make_jaxpr(lax.mul)(B_F32, B_F32).eqns[0].params == {}
  parsed = jaxpr_from_text(*jaxpr_to_text(jaxpr))
  assert parsed.eqns[0].params == {"out_dtype": np.dtype(np.float32)}
  lines = hlo_lines(jaxon.jit(lambda a, b: lax.mul(a, b, out_dtype=jnp.float32)).lower(
      A_BF16, B_F32).as_text())
  assert lines == ["%0 = stablehlo.convert %arg0 : (tensor<3xbf16>) -> tensor<3xf32>",
                   "%1 = stablehlo.multiply %0, %arg1 : tensor<3xf32>"]


def test_mul_out_dtype_derivatives_and_vmap():
  """Cotangents come back in each operand's dtype (JAX's values)."""
  ga, gb = jaxon.jit(jaxon.grad(lambda a, b: lax.mul(a, b, out_dtype=jnp.float32).sum(),
                                argnums=(0, 1)))(A_BF16, B_F32)
  assert (ga.dtype, gb.dtype) == (jnp.bfloat16, np.float32)
  np.testing.assert_array_equal(np.asarray(ga).astype(np.float32),
                                np.float32([3.09375, -0.69921875, 0.30078125]))
  np.testing.assert_array_equal(np.asarray(gb), np.float32([1.5, 2.25, -0.375]))
  a64 = np.array([0.5, -1.5, 2.0])
  check_grads(jaxon.jit(lambda a, b: lax.mul(a, b, out_dtype=jnp.float32)),
              (np.float32(a64), B_F32), order=2)
  batched = jaxon.vmap(lambda a, b: lax.mul(a, b, out_dtype=jnp.float32), in_axes=(0, None))(
      np.stack([A_BF16, A_BF16]), B_F32)
  np.testing.assert_array_equal(np.asarray(batched),
                                np.stack([np.float32(A_BF16) * B_F32] * 2))


# ----------------------------------------------------------------------------- conv_transpose


LHS = np.array([[[0.13, -0.13], [0.64, 0.1], [-0.54, 0.36], [1.3, 0.95]]], np.float32)
RHS = np.array([[[-0.7, -1.27, -0.62], [0.04, -2.33, -0.22]],
                [[-1.25, -0.73, -0.54], [-0.32, 0.41, 1.04]],
                [[-0.13, 1.37, -0.67], [0.35, 0.9, 0.09]]], np.float32)
# JAX 0.10.2, conv_transpose(LHS, RHS, (2,), [(0, 2)], use_consistent_padding=...).
_ROWS = [[-0.06239999830722809, 0.06109999865293503, -0.09879999607801437],
         [-0.120899997651577, -0.14819999039173126, -0.2053999900817871],
         [-0.1443999856710434, 1.104599952697754, -0.47179996967315674],
         [-0.8319999575614929, -0.4262000024318695, -0.24160000681877136],
         [-0.24779996275901794, -1.4616000652313232, -0.024599969387054443],
         [0.5598000288009644, 0.5418000221252441, 0.6660000085830688],
         [0.5559000372886658, 2.482999801635742, -0.5298999547958374],
         [-1.9290000200271606, -0.5595000386238098, 0.28599992394447327],
         [-0.871999979019165, -3.864499807357788, -1.0149999856948853]]
JAX_CONV = {False: [_ROWS[2:]], True: [_ROWS[:7]]}
# ... and with rhs_dilation=(2,), [(2, 1)], use_consistent_padding=True.
JAX_CONV_DILATED = [[[-0.16910000145435333, 0.8185999393463135, -0.6251999735832214],
                     [0.0, 0.0, 0.0],
                     [-0.7319999933242798, -0.704200029373169, 0.10060003399848938],
                     [0.0, 0.0, 0.0],
                     [0.2793000340461731, 2.131999969482422, -0.5382999777793884],
                     [0.0, 0.0, 0.0],
                     [-1.5365999937057495, -0.7125000357627869, 0.5415999889373779],
                     [0.0, 0.0, 0.0]]]


def test_conv_transpose_consistent_padding_values_are_jaxs():
  def both(lhs, rhs):
    return ([lax.conv_transpose(lhs, rhs, (2,), [(0, 2)], use_consistent_padding=c)
             for c in (False, True)]
            + [lax.conv_transpose(lhs, rhs, (2,), [(2, 1)], rhs_dilation=(2,),
                                  use_consistent_padding=True)]
            + [lax.conv_transpose(lhs, rhs, (2,), "VALID", use_consistent_padding=c)
               for c in (False, True)])
  inconsistent, consistent, dilated, valid, valid_consistent = jaxon.jit(both)(LHS, RHS)
  for got, want in ((inconsistent, JAX_CONV[False]), (consistent, JAX_CONV[True]),
                    (dilated, JAX_CONV_DILATED), (valid, [_ROWS])):
    np.testing.assert_allclose(np.asarray(got), np.float32(want), rtol=1e-6, atol=1e-6)
  np.testing.assert_array_equal(np.asarray(valid_consistent), np.asarray(valid))


def test_conv_transpose_consistent_padding_is_the_gradient_of_conv():
  """As PyTorch's: given the forward convolution's padding and strides (and the kernel
  transposed), the transposed convolution is that convolution's input gradient."""
  x = np.arange(2 * 5 * 5 * 3, dtype=np.float32).reshape(2, 5, 5, 3) / 50
  w = np.linspace(-1, 1, 3 * 3 * 3 * 4, dtype=np.float32).reshape(3, 3, 3, 4)
  dn, padding = ("NHWC", "HWIO", "NHWC"), [(1, 1), (2, 0)]

  def both(x, w):
    y, vjp = jaxon.vjp(lambda x: lax.conv_general_dilated(x, w, (2, 2), padding,
                                                          dimension_numbers=dn), x)
    ct = jnp.cos(y)
    return vjp(ct)[0], lax.conv_transpose(ct, w, (2, 2), padding, dimension_numbers=dn,
                                          transpose_kernel=True, use_consistent_padding=True)
  want, got = jaxon.jit(both)(x, w)
  assert got.shape == want.shape == x.shape
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_conv_transpose_consistent_padding_errors():
  with pytest.raises(ValueError, match="one \\(low, high\\) pair per spatial"):
    lax.conv_transpose(LHS, RHS, (2,), [(0, 2), (1, 1)], use_consistent_padding=True)


def test_jet_and_sparsify_take_the_new_params():
  """jet's series ignore the accuracy (as JAX's rules do); sparsify's product converts
  both operands to `out_dtype`."""
  highest = lax.AccuracyMode.HIGHEST
  for f in (lax.exp, lax.log, lax.tanh, lax.logistic, lax.sin, lax.cos):
    got = jet.jet(lambda x, f=f: f(x, accuracy=highest), (1.5,), ((1.0, 0.0),))
    want = jet.jet(f, (1.5,), ((1.0, 0.0),))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
  m = sparse.BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]], jnp.bfloat16))
  out = sparse.sparsify(lambda m, d: lax.mul(m, d, out_dtype=jnp.float32))(
      m, jnp.full((2, 2), 3.0))
  assert out.dtype == jnp.float32
  np.testing.assert_array_equal(out.todense(), [[3.0, 0.0], [0.0, 6.0]])
