"""jaxon.example_libraries.stax: shapes claimed by init_fun against abstract evaluation of
apply_fun, values against NumPy references, and initial parameters against JAX 0.10.2's."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import nn, random
from jaxon.example_libraries import stax
from jaxon.nn.initializers import normal

KEY = random.PRNGKey(0)
RNG = np.random.default_rng(0)


def randn(*shape):
  return RNG.normal(size=shape).astype(np.float32)


def leaves(tree):
  return [np.asarray(x) for x in jaxon.tree_leaves(tree)]


# ----------------------------------------------------------------------------- shapes

Residual = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                       stax.FanInSum)

# Each layer with input shapes it accepts: NHWC images unless the layer says otherwise.
SHAPE_CASES = {
    "Dense": (stax.Dense(5), [(2, 3), (4, 2, 3)]),
    "Conv": (stax.Conv(4, (3, 2)), [(2, 6, 5, 3), (1, 3, 2, 1)]),
    "Conv_strided_same": (stax.Conv(4, (3, 3), (2, 3), "SAME"), [(2, 7, 8, 3), (1, 1, 1, 2)]),
    "Conv_explicit_pads": (stax.Conv(2, (2, 2), padding=((1, 0), (2, 1))), [(1, 4, 4, 2)]),
    "GeneralConv": (stax.GeneralConv(("NCHW", "OIHW", "NHWC"), 3, (2, 3), (1, 2), "SAME"),
                    [(2, 4, 5, 7), (1, 1, 3, 3)]),
    "GeneralConv_1d": (stax.GeneralConv(("NCH", "OIH", "NCH"), 3, (3,)), [(2, 4, 9)]),
    "ConvTranspose": (stax.ConvTranspose(3, (3, 3), (2, 2), "SAME"), [(2, 3, 4, 2)]),
    "ConvTranspose_valid": (stax.ConvTranspose(3, (2, 3), (3, 1)), [(2, 3, 4, 2)]),
    "Conv1DTranspose": (stax.Conv1DTranspose(2, (3,), (2,)), [(2, 5, 3), (1, 1, 1)]),
    "GeneralConvTranspose": (stax.GeneralConvTranspose(("NCHW", "HWIO", "NHWC"), 2, (3, 2),
                                                       (2, 1), "SAME"), [(2, 3, 4, 5)]),
    "BatchNorm": (stax.BatchNorm(), [(2, 3, 4, 5)]),
    "BatchNorm_axis": (stax.BatchNorm(axis=0, center=False), [(4, 3)]),
    "MaxPool": (stax.MaxPool((2, 2)), [(2, 5, 4, 3), (1, 2, 2, 1)]),
    "MaxPool_same": (stax.MaxPool((3, 2), (2, 2), "SAME"), [(2, 5, 4, 3), (1, 1, 1, 1)]),
    "SumPool": (stax.SumPool((2, 3), (1, 2)), [(2, 5, 7, 3)]),
    "AvgPool_same": (stax.AvgPool((3, 3), (2, 2), "SAME"), [(2, 5, 4, 3)]),
    "AvgPool_nchw": (stax.AvgPool((2,), spec="NCH"), [(2, 3, 5)]),
    "Flatten": (stax.Flatten, [(2, 3, 4, 5), (3, 2)]),
    "Identity": (stax.Identity, [(2, 3)]),
    "Relu": (stax.Relu, [(2, 3)]),
    "LogSoftmax": (stax.LogSoftmax, [(2, 3, 4)]),
    "Dropout": (stax.Dropout(0.5), [(2, 3)]),
    "FanInConcat": (stax.serial(stax.FanOut(3), stax.FanInConcat(1)), [(2, 3, 4)]),
    "Residual": (Residual, [(2, 3), (4, 5, 3)]),
    "cnn": (stax.serial(stax.Conv(8, (3, 3), padding="SAME"), stax.Relu,
                        stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(10),
                        stax.LogSoftmax), [(2, 8, 8, 1), (3, 6, 4, 2)]),
}


def abstract_init(init, input_shape):
  """init_fun's output shape and the shapes of its params, without drawing them."""
  out_shapes = []

  def params_only(key):
    out_shape, params = init(key, input_shape)
    out_shapes.append(out_shape)
    return params
  params = jaxon.eval_shape(params_only, KEY)
  return out_shapes[0], params


@pytest.mark.parametrize("name", SHAPE_CASES)
def test_init_output_shape_matches_apply(name):
  (init, apply), input_shapes = SHAPE_CASES[name]
  for shape in input_shapes:
    out_shape, params = abstract_init(init, shape)
    x = jaxon.ShapeDtypeStruct(shape, np.float32)
    out = jaxon.eval_shape(functools.partial(apply, rng=KEY), params, x)
    assert out.shape == tuple(out_shape), f"{name} on {shape}"
    # An unknown batch size (-1) passes through the shape arithmetic.
    unknown_batch, params_no_batch = abstract_init(init, (-1,) + shape[1:])
    assert tuple(unknown_batch) == (-1,) + tuple(out_shape)[1:], f"{name} on {shape}"
    assert ([p.shape for p in jaxon.tree_leaves(params_no_batch)]
            == [p.shape for p in jaxon.tree_leaves(params)])


def test_fan_out_and_parallel_shapes():
  init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(4), stax.Tanh))
  out_shape, params = abstract_init(init, (-1, 3))
  assert out_shape == ((-1, 4), (-1, 3))
  assert isinstance(params, list) and len(params) == 2 and params[1][1] == ()
  outs = jaxon.eval_shape(apply, params, jaxon.ShapeDtypeStruct((5, 3), np.float32))
  assert [o.shape for o in outs] == [(5, 4), (5, 3)]


# ----------------------------------------------------------------------------- values

def np_same_pads(sizes, window, strides):
  pads = []
  for n, k, s in zip(sizes, window, strides):
    total = max((-(-n // s) - 1) * s + k - n, 0)
    pads.append((total // 2, total - total // 2))
  return pads


def np_windows(x, window, strides):
  """The (N, out..., C, *window) stack of windows of an NHWC array (already padded)."""
  out = [(n - k) // s + 1 for n, k, s in zip(x.shape[1:-1], window, strides)]
  idx = np.ix_(*[np.arange(o) * s for o, s in zip(out, strides)])
  taps = [x[(slice(None),) + tuple(i + d for i, d in zip(idx, offset)) + (slice(None),)]
          for offset in np.ndindex(*window)]
  return np.stack(taps, -1).reshape(x.shape[0], *out, x.shape[-1], *window)


def np_conv(x, w, strides, pads):
  """NHWC x HWIO cross-correlation, the textbook sum over each window."""
  x = np.pad(x, [(0, 0), *pads, (0, 0)])
  windows = np_windows(x, w.shape[:-2], strides)  # N, H, W, C, kh, kw
  return np.einsum("nhwcij,ijco->nhwo", windows, w)


def test_dense_values():
  init, apply = stax.Dense(4)
  x = randn(5, 3)
  _, (W, b) = init(KEY, x.shape)
  np.testing.assert_allclose(jaxon.jit(apply)((W, b), x), x @ np.asarray(W) + b, rtol=1e-5,
                             atol=1e-6)


@pytest.mark.parametrize("strides,padding", [((1, 1), "VALID"), ((2, 1), "SAME"),
                                             ((2, 3), "VALID"), ((1, 1), ((2, 0), (1, 1)))])
def test_conv_values(strides, padding):
  init, apply = stax.Conv(3, (3, 2), strides, padding)
  x = randn(2, 7, 6, 2)
  _, (W, b) = init(KEY, x.shape)
  pads = np_same_pads(x.shape[1:3], (3, 2), strides) if padding == "SAME" else (
      [(0, 0)] * 2 if padding == "VALID" else padding)
  want = np_conv(x, np.asarray(W), strides, pads) + np.asarray(b)
  np.testing.assert_allclose(jaxon.jit(apply)((W, b), x), want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_valid_scatters_the_flipped_kernel():
  """A 'VALID' transposed convolution adds x[i] * w[k - 1 - a] into output i * s + a."""
  init, apply = stax.Conv1DTranspose(2, (3,), (2,))
  x = randn(2, 4, 3)
  _, (W, b) = init(KEY, x.shape)
  w = np.asarray(W)
  want = np.zeros((2, 9, 2), np.float32)
  for i in range(4):
    for a in range(3):
      want[:, 2 * i + a] += x[:, i] @ w[2 - a]
  np.testing.assert_allclose(jaxon.jit(apply)((W, b), x), want + np.asarray(b), rtol=1e-5,
                             atol=1e-5)


POOL_CASES = [((2, 2), None, "VALID"), ((3, 2), (2, 2), "SAME"), ((2, 3), (1, 2), "VALID"),
              ((3, 3), (2, 3), "SAME")]


@pytest.mark.parametrize("window,strides,padding", POOL_CASES)
def test_pooling_values(window, strides, padding):
  x = randn(2, 7, 6, 3)
  pads = np_same_pads(x.shape[1:3], window, strides or (1, 1)) if padding == "SAME" else [
      (0, 0)] * 2

  def np_pool(x, fill, reduce):
    padded = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=fill)
    return reduce(np_windows(padded, window, strides or (1, 1)), axis=(-2, -1))
  counts = np_pool(np.ones_like(x), 0, np.sum)  # padding does not count towards the mean
  want = [np_pool(x, -np.inf, np.max), np_pool(x, 0, np.sum), np_pool(x, 0, np.sum) / counts]
  layers = [make(window, strides, padding) for make in (stax.MaxPool, stax.SumPool,
                                                          stax.AvgPool)]
  got = jaxon.jit(lambda x: [apply((), x) for _, apply in layers])(x)
  for g, w, (init, _) in zip(got, want, layers):
    assert init(KEY, x.shape)[0] == w.shape
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_avg_pool_with_spec_puts_features_first():
  x = randn(2, 3, 5, 4)  # NCHW
  init, apply = stax.AvgPool((2, 3), (1, 1), "SAME", spec="NCHW")
  want = jaxon.jit(stax.AvgPool((2, 3), (1, 1), "SAME")[1])((), x.transpose(0, 2, 3, 1))
  np.testing.assert_allclose(jaxon.jit(apply)((), x), np.asarray(want).transpose(0, 3, 1, 2),
                             rtol=1e-6)
  assert init(KEY, x.shape)[0] == x.shape


@pytest.mark.parametrize("axis,center,scale", [((0, 1, 2), True, True), (0, False, True),
                                               ((0, -1), True, False)])
def test_batch_norm_values(axis, center, scale):
  x = randn(4, 3, 2, 5) * 3 + 1
  init, apply = stax.BatchNorm(axis, center=center, scale=scale, beta_init=normal(1.0),
                               gamma_init=normal(1.0))
  _, (beta, gamma) = init(KEY, x.shape)
  axes = tuple(a % 4 for a in np.atleast_1d(axis))
  want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
  kept_shape = [1 if i in axes else n for i, n in enumerate(x.shape)]
  if scale:
    want = want * np.asarray(gamma).reshape(kept_shape)
  if center:
    want = want + np.asarray(beta).reshape(kept_shape)
  assert (beta == ()) == (not center) and (gamma == ()) == (not scale)
  np.testing.assert_allclose(jaxon.jit(apply)((beta, gamma), x), want, rtol=1e-4, atol=1e-5)


def test_activation_layers_apply_jaxon_nn():
  pairs = {stax.Relu: nn.relu, stax.Tanh: jnp.tanh, stax.Sigmoid: nn.sigmoid,
           stax.Elu: nn.elu, stax.LeakyRelu: nn.leaky_relu, stax.Selu: nn.selu,
           stax.Gelu: nn.gelu, stax.Softplus: nn.softplus, stax.Exp: jnp.exp,
           stax.Log: jnp.log, stax.Softmax: nn.softmax, stax.LogSoftmax: nn.log_softmax}
  x = randn(3, 4)
  got, want = jaxon.jit(lambda x: ([layer[1]((), x) for layer in pairs],
                                   [f(x) for f in pairs.values()]))(np.abs(x))
  for g, w in zip(got, want):
    np.testing.assert_array_equal(g, w)
  assert stax.glorot is nn.initializers.glorot_normal and stax.randn is nn.initializers.normal
  assert stax.logsoftmax is nn.log_softmax


def test_dropout_train_and_test_modes():
  x = jnp.asarray(randn(40, 50))
  _, apply = stax.Dropout(0.7)
  y = np.asarray(jaxon.jit(apply)((), x, rng=random.PRNGKey(1)))
  kept = y != 0
  np.testing.assert_allclose(y[kept], np.asarray(x)[kept] / 0.7, rtol=1e-6)
  assert abs(kept.mean() - 0.7) < 0.03  # `rate` is the probability of keeping an input
  np.testing.assert_array_equal(stax.Dropout(0.7, mode="test")[1]((), x), x)
  with pytest.raises(ValueError, match="PRNG key"):
    apply((), x)


def test_dropout_mask_matches_jax():
  y = stax.Dropout(0.7)[1]((), jnp.ones((10, 10)), rng=random.PRNGKey(1))
  kept = np.flatnonzero(np.asarray(y))
  # JAX 0.10.2 keeps 65 of these 100 inputs, starting with these.
  assert len(kept) == 65 and kept[:10].tolist() == [0, 1, 2, 3, 5, 8, 9, 10, 11, 17]


def test_serial_and_parallel_split_rng_per_layer():
  _, apply = stax.serial(stax.Dropout(0.5), stax.Dropout(0.5))
  x = jnp.ones((4, 6))
  k1, k2 = random.split(KEY)
  drop = stax.Dropout(0.5)[1]
  np.testing.assert_array_equal(apply(((), ()), x, rng=KEY),
                                drop((), drop((), x, rng=k1), rng=k2))
  _, par_apply = stax.parallel(stax.Dropout(0.5), stax.Dropout(0.5))
  ys = par_apply(((), ()), [x, x], rng=KEY)
  np.testing.assert_array_equal(ys[0], drop((), x, rng=k1))
  np.testing.assert_array_equal(ys[1], drop((), x, rng=k2))


def test_fan_in_composition_values():
  x = randn(5, 3)
  init, apply = Residual
  _, params = init(KEY, x.shape)
  (W, b), _ = params[1]
  init_cat, apply_cat = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(2), stax.Tanh),
                                    stax.FanInConcat())
  shape_cat, params_cat = init_cat(KEY, x.shape)
  (Wc, bc), _ = params_cat[1]
  residual, concat = jaxon.jit(lambda x: (apply(params, x), apply_cat(params_cat, x)))(x)
  np.testing.assert_allclose(residual, x @ np.asarray(W) + b + x, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(concat, np.concatenate([x @ np.asarray(Wc) + bc, np.tanh(x)], 1),
                             rtol=1e-5, atol=1e-6)
  assert shape_cat == (5, 5)


def test_shape_dependent_builds_layer_from_input_shape():
  init, apply = stax.shape_dependent(lambda shape: stax.Dense(shape[-1]))
  out_shape, (W, b) = init(KEY, (2, 7))
  assert out_shape == (2, 7) and W.shape == (7, 7)
  assert apply((W, b), jnp.ones((2, 7))).shape == (2, 7)


def test_bad_layer_arguments_raise_early():
  with pytest.raises(ValueError, match="filter_shape"):
    stax.Conv(3, (3, 3, 3))
  with pytest.raises(ValueError, match="rank 4"):
    stax.Conv(3, (3, 3))[0](KEY, (8, 8, 1))
  with pytest.raises(ValueError, match="rank 4"):
    stax.MaxPool((2, 2))[0](KEY, (8, 8))
  with pytest.raises(ValueError, match="out of range"):
    stax.BatchNorm(axis=4)[0](KEY, (2, 3))
  with pytest.raises(ValueError, match="3 input shapes"):
    stax.parallel(stax.Relu, stax.Relu, stax.Relu)[0](KEY, [(2,), (2,)])


# ----------------------------------------------------------------------------- JAX golden

def f32(values):
  return np.array(values, np.float32)


def assert_summary(array, shape, head, total):
  """Exact float32 head values and the float64 sum of JAX's array (too big to paste)."""
  array = np.asarray(array)
  assert array.shape == shape
  np.testing.assert_array_equal(array.ravel()[:3], f32(head))
  assert float(np.sum(array, dtype=np.float64)) == total


# Parameters JAX 0.10.2 draws for random.PRNGKey(0); they must match bit for bit.

def test_cnn_params_and_output_match_jax():
  init, apply = stax.serial(stax.Conv(4, (3, 3)), stax.Relu, stax.Flatten, stax.Dense(3))
  out_shape, params = init(KEY, (1, 8, 8, 1))
  assert out_shape == (1, 3)
  conv_w, conv_b, dense_w, dense_b = leaves(params)
  assert_summary(conv_w, (3, 3, 1, 4), [0.04547587037086487, -0.17447589337825775,
                                        -0.2791318893432617], -0.20195035263895988)
  np.testing.assert_array_equal(conv_b.ravel(), f32(
      [-1.3356250292417826e-06, -3.5256303476671746e-07, 3.097040348620794e-07,
       -1.0009459856519243e-06]))
  assert_summary(dense_w, (144, 3), [-0.15794965624809265, -0.17828704416751862,
                                     -0.05901443585753441], -0.06847182108322158)
  np.testing.assert_array_equal(dense_b, f32(
      [-0.0008034515776671469, 0.0019184256670996547, 0.0037428629584610462]))
  x = np.arange(64, dtype=np.float32).reshape(1, 8, 8, 1) / 32 - 1
  np.testing.assert_allclose(jaxon.jit(apply)(params, x), f32(
      [[-0.9879589676856995, 0.060581304132938385, -0.7851641774177551]]), rtol=1e-5)


def test_dense_and_batch_norm_params_match_jax():
  _, (W, b) = stax.Dense(3)[0](KEY, (-1, 4))
  np.testing.assert_array_equal(W, f32(
      [0.5720340609550476, -0.5183408856391907, -0.42999786138534546, -0.6620126962661743,
       -0.4988698363304138, 0.3396773040294647, 0.4163306951522827, -0.5837926268577576,
       0.902048647403717, -0.9952700138092041, -0.7232943773269653, 0.07747422158718109]
  ).reshape(4, 3))
  np.testing.assert_array_equal(b, f32(
      [-0.024424556642770767, -0.020356804132461548, 0.0020554421935230494]))
  _, (beta, gamma) = stax.BatchNorm(beta_init=normal(), gamma_init=normal())[0](
      KEY, (2, 4, 4, 3))
  np.testing.assert_array_equal(beta, f32(
      [0.010040142573416233, -0.00906337145715952, -0.0074817221611738205]))
  np.testing.assert_array_equal(gamma, b)  # the same subkey as Dense's bias


def test_conv_transpose_params_and_output_match_jax():
  init, apply = stax.ConvTranspose(2, (2, 2), (2, 2), "SAME")
  out_shape, (W, b) = init(KEY, (-1, 3, 3, 2))
  assert out_shape == (-1, 6, 6, 2)
  np.testing.assert_array_equal(W, f32(
      [0.3783649504184723, -0.3428502678871155, -0.2844168543815613, -0.4378802478313446,
       -0.3299713730812073, 0.22467543184757233, 0.2753768861293793, -0.3861425518989563,
       0.5966491103172302, -0.658309280872345, -0.47841426730155945, 0.051244381815195084,
       -0.4314579367637634, 0.09172683954238892, 0.6201848983764648, 0.19298475980758667]
  ).reshape(2, 2, 2, 2))
  np.testing.assert_array_equal(b.ravel(), f32([-2.442455752316164e-06,
                                                -2.0356806089694146e-06]))
  x = np.arange(18, dtype=np.float32).reshape(1, 3, 3, 2) / 9 - 1
  y = np.asarray(jaxon.jit(apply)((W, b), x))
  np.testing.assert_allclose(y.ravel()[:4], [-0.11981997638940811, -0.26327088475227356,
                                             -0.17139442265033722, 0.6127566695213318],
                             rtol=1e-5)
  np.testing.assert_allclose(y[0, -1, -1], [0.04146645590662956, -0.6558902263641357],
                             rtol=1e-5)


def test_general_conv_and_conv1d_transpose_params_match_jax():
  out_shape, (W, b) = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (2, 2))[0](
      KEY, (-1, 2, 5, 5))
  assert out_shape == (-1, 3, 4, 4) and b.shape == (1, 3, 1, 1)
  assert_summary(W, (3, 2, 2, 2), [0.33841991424560547, -0.30665460228919983,
                                   -0.2543901801109314], -0.24253589659929276)
  np.testing.assert_array_equal(b.ravel(), f32(
      [-2.442455752316164e-06, -2.0356806089694146e-06, 2.055442394066631e-07]))
  out_shape, (W, _) = stax.Conv1DTranspose(2, (3,), (2,))[0](KEY, (-1, 4, 3))
  assert out_shape == (-1, 9, 2)
  assert_summary(W, (3, 3, 2), [0.3907737135887146, -0.3540942966938019,
                                -0.2937445044517517], -0.9005935043096542)


def test_parallel_params_match_jax():
  out_shape, params = stax.parallel(stax.Dense(2), stax.Dense(2))[0](KEY, [(-1, 3), (-1, 3)])
  assert out_shape == ((-1, 2), (-1, 2))
  w0, b0, w1, b1 = leaves(params)
  np.testing.assert_array_equal(w0.ravel(), f32(
      [-0.3924235999584198, 0.5431204438209534, -0.17798574268817902, 0.9395476579666138,
       -0.35794931650161743, -1.1095222234725952]))
  np.testing.assert_array_equal(b0, f32([-0.012574776075780392, -0.004016044083982706]))
  np.testing.assert_array_equal(w1.ravel(), f32(
      [0.1364275962114334, -0.5234276652336121, -0.8373956680297852, -0.2810562551021576,
       -0.6779015064239502, 0.19641567766666412]))
  np.testing.assert_array_equal(b1, f32([-0.013356249779462814, -0.0035256301052868366]))
