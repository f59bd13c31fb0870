"""Seed 003 (the README of JAX 0.1.50) run as a test: each of its programs as written, with
`jax` read as `jaxon` (the seed's `jax.experimental.stax`/`optimizers` paths included), and
what it prints checked: the seed's numbers where it prints them, golden values recorded
from JAX 0.10.2 otherwise. `pmap` comes with the multi-device work.
"""
from __future__ import annotations

from functools import partial

import numpy as onp
import pytest

import jaxon
import jaxon.numpy as np  # the seed's name for jax.numpy
from jaxon import grad, jacfwd, jacrev, jit, vmap


def predict(params, inputs):
  for W, b in params:
    outputs = np.dot(inputs, W) + b
    inputs = np.tanh(outputs)
  return outputs


def logprob_fun(params, inputs, targets):
  preds = predict(params, inputs)
  return np.sum((preds - targets)**2)


def _mlp_params(sizes=(3, 5, 2)):
  rng = onp.random.RandomState(0)
  return [(rng.standard_normal((m, n)).astype(onp.float32),
           rng.standard_normal(n).astype(onp.float32)) for m, n in zip(sizes[:-1], sizes[1:])]


def test_the_opening_mlp_and_its_per_example_gradients():
  grad_fun = jit(grad(logprob_fun))  # compiled gradient evaluation function
  perex_grads = jit(vmap(grad_fun, in_axes=(None, 0, 0)))  # fast per-example grads
  params = _mlp_params()
  rng = onp.random.RandomState(1)
  inputs = rng.standard_normal((4, 3)).astype(onp.float32)
  targets = rng.standard_normal((4, 2)).astype(onp.float32)
  per_example = perex_grads(params, inputs, targets)
  batch = grad_fun(params, inputs, targets)
  for (dW, db), (bW, bb) in zip(per_example, batch):  # the loss is a sum over examples
    onp.testing.assert_allclose(onp.sum(dW, 0), bW, rtol=1e-5, atol=1e-5)
    onp.testing.assert_allclose(onp.sum(db, 0), bb, rtol=1e-5, atol=1e-5)


def test_the_brief_tour_matmul_is_cached_and_repeatable():
  from jaxon import random
  key = random.PRNGKey(0)
  x = random.normal(key, (50, 50))  # the seed's 5000 x 5000, smaller
  first, second = np.dot(x, x.T) / 2, np.dot(x, x.T) / 2
  onp.testing.assert_array_equal(first, second)
  onp.testing.assert_allclose(first, onp.dot(onp.asarray(x), onp.asarray(x).T) / 2, rtol=1e-5,
                              atol=1e-4)


def test_logistic_regression_prints_the_losses(capsys):
  def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.) + 1)

  # Outputs probability of a label being true according to logistic model.
  def logistic_predictions(weights, inputs):
    return sigmoid(np.dot(inputs, weights))

  # Training loss is the negative log-likelihood of the training labels.
  def loss(weights, inputs, targets):
    preds = logistic_predictions(weights, inputs)
    label_logprobs = np.log(preds) * targets + np.log(1 - preds) * (1 - targets)
    return -np.sum(label_logprobs)

  # Build a toy dataset.
  inputs = np.array([[0.52, 1.12,  0.77],
                     [0.88, -1.08, 0.15],
                     [0.52, 0.06, -1.30],
                     [0.74, -2.49, 1.39]])
  targets = np.array([True, True, False, True])

  # Define a compiled function that returns gradients of the training loss
  training_gradient_fun = jit(grad(loss))

  # Optimize weights using gradient descent.
  weights = np.array([0.0, 0.0, 0.0])
  print("Initial loss: {:0.2f}".format(loss(weights, inputs, targets)))  # noqa: UP032 (seed)
  for i in range(100):  # noqa: B007 (as the seed writes it)
    weights -= 0.1 * training_gradient_fun(weights, inputs, targets)

  print("Trained loss: {:0.2f}".format(loss(weights, inputs, targets)))  # noqa: UP032 (seed)
  assert capsys.readouterr().out == "Initial loss: 2.77\nTrained loss: 0.17\n"
  # JAX 0.10.2's weights after the 100 steps
  onp.testing.assert_allclose(weights, [1.7703073, -0.5377116, 3.2104669], rtol=2e-6)


def test_grad_of_tanh_prints_the_seeds_value():
  def tanh(x):  # Define a function
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)

  grad_tanh = grad(tanh)  # Obtain its gradient function
  onp.testing.assert_allclose(grad_tanh(1.0), 0.41997434161402603, rtol=1e-6)


def test_hessian_from_jacfwd_of_jacrev():
  def hessian(fun):
    return jit(jacfwd(jacrev(fun)))

  f = lambda x: np.sum(np.sin(x) * x[0])  # noqa: E731
  x = onp.array([0.3, -1.2, 2.0], onp.float32)
  expected = onp.diag(-onp.sin(x) * x[0])
  expected[0, :] += onp.cos(x)
  expected[:, 0] += onp.cos(x)
  onp.testing.assert_allclose(hessian(f)(x), expected, rtol=1e-5, atol=1e-6)


def test_grad_through_python_control_flow():
  def abs_val(x):
    if x > 0:
      return x
    else:
      return -x

  abs_val_grad = grad(abs_val)
  assert float(abs_val_grad(1.0)) == 1.0   # prints 1.0
  assert float(abs_val_grad(-1.0)) == -1.0  # prints -1.0 (abs_val is re-evaluated)


def test_jit_of_the_fusion_example():
  def slow_f(x):
    # Element-wise ops see a large benefit from fusion
    return x * x + x * 2.0

  x = np.ones((50, 50))  # the seed's 5000 x 5000, smaller
  fast_f = jit(slow_f)
  onp.testing.assert_allclose(fast_f(x), slow_f(x))
  onp.testing.assert_allclose(fast_f(x), onp.full((50, 50), 3.0))


def test_vmap_of_the_single_example_network():
  def predict(params, input_vec):
    assert input_vec.ndim == 1
    for W, b in params:
      output_vec = np.dot(W, input_vec) + b  # `input_vec` on the right-hand side!
      input_vec = np.tanh(output_vec)
    return output_vec

  params = [(W.T, b) for W, b in _mlp_params()]
  input_batch = onp.random.RandomState(2).standard_normal((4, 3)).astype(onp.float32)
  looped = np.stack(list(map(partial(predict, params), input_batch)))
  # A batched product sums in another order than one example's matrix-vector product.
  predictions = vmap(partial(predict, params))(input_batch)
  onp.testing.assert_allclose(predictions, looped, rtol=1e-5, atol=1e-6)
  # or, alternatively
  predictions = vmap(predict, in_axes=(None, 0))(params, input_batch)
  onp.testing.assert_allclose(predictions, looped, rtol=1e-5, atol=1e-6)


def test_per_example_gradients_with_vmap():
  def loss(params, inputs, targets):
    return logprob_fun(params, inputs, targets)

  params = _mlp_params()
  rng = onp.random.RandomState(3)
  inputs = rng.standard_normal((4, 3)).astype(onp.float32)
  targets = rng.standard_normal((4, 2)).astype(onp.float32)
  per_example_gradients = vmap(partial(grad(loss), params))(inputs, targets)
  for i in range(4):
    one = grad(loss)(params, inputs[i], targets[i])
    for got, want in zip(jaxon.tree.leaves(per_example_gradients), jaxon.tree.leaves(one)):
      onp.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-6)


@pytest.fixture
def original_threefry():
  """The seed predates partitionable threefry: its numbers come from the original layout."""
  jaxon.config.update("jax_threefry_partitionable", False)
  yield
  jaxon.config.update("jax_threefry_partitionable", True)


def test_random_numbers_are_the_seeds(original_threefry):
  import jaxon.random as random

  key = random.PRNGKey(0)
  onp.testing.assert_allclose(random.normal(key, shape=(3,)),
                              [1.81608593, -0.48262325, 0.33988902], rtol=1e-6)
  # If we make the same call again with the same key, we get the same values:
  onp.testing.assert_allclose(random.normal(key, shape=(3,)),
                              [1.81608593, -0.48262325, 0.33988902], rtol=1e-6)
  key, subkey = random.split(key)
  onp.testing.assert_allclose(random.normal(subkey, shape=(3,)),
                              [1.1378783, -1.22095478, -0.59153646], rtol=1e-6)
  key, subkey = random.split(key)
  onp.testing.assert_allclose(random.normal(subkey, shape=(3,)),
                              [-0.06607265, 0.16676566, 1.17800343], rtol=1e-5)


def test_the_stax_network_and_the_optimizer_loop():
  from jaxon import random
  from jaxon.experimental import optimizers, stax
  from jaxon.experimental.stax import Conv, Dense, Flatten, LogSoftmax, MaxPool, Relu

  # Use stax to set up network initialization and evaluation functions
  net_init, net_apply = stax.serial(
      Conv(32, (3, 3), padding='SAME'), Relu,
      Conv(64, (3, 3), padding='SAME'), Relu,
      MaxPool((2, 2)), Flatten,
      Dense(128), Relu,
      Dense(10), LogSoftmax,
  )

  # Initialize parameters, not committing to a batch shape
  rng = random.PRNGKey(0)
  in_shape = (-1, 28, 28, 1)
  out_shape, net_params = net_init(rng, in_shape)
  assert out_shape == (-1, 10)

  # Apply network to dummy inputs (the seed's batch of 128, smaller)
  inputs = np.zeros((8, 28, 28, 1))
  predictions = net_apply(net_params, inputs)
  assert predictions.shape == (8, 10)
  onp.testing.assert_allclose(onp.exp(onp.asarray(predictions)).sum(-1), 1.0, rtol=1e-5)

  # Define a simple squared-error loss
  def loss(params, batch):
    inputs, targets = batch
    predictions = net_apply(params, inputs)
    return np.sum((predictions - targets)**2)

  # Use optimizers to set optimizer initialization and update functions
  opt_init, opt_update, get_params = optimizers.momentum(step_size=1e-3, mass=0.9)

  # Define a compiled update step
  @jit
  def step(i, opt_state, batch):
    params = get_params(opt_state)
    g = grad(loss)(params, batch)
    return opt_update(i, g, opt_state)

  # Dummy input data stream
  data_generator = ((np.zeros((8, 28, 28, 1)), np.zeros((8, 10)))
                    for _ in range(10))

  # Optimize parameters in a loop
  opt_state = opt_init(net_params)
  first_loss = loss(net_params, (inputs, np.zeros((8, 10))))
  for i in range(10):
    opt_state = step(i, opt_state, next(data_generator))
  net_params = get_params(opt_state)
  assert float(loss(net_params, (inputs, np.zeros((8, 10))))) < float(first_loss)
