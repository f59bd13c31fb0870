"""Differentially private SGD (Abadi et al., 2016) on the bundled digits, in the spirit of
JAX's `examples/differentially_private_sgd.py`: each example's gradient, computed with
`vmap(grad)`, is clipped to an L2 norm of at most `--clip`, the clipped gradients are
summed, Gaussian noise of scale `--noise * --clip` is added, and the result is averaged
and applied with SGD. No example can move the parameters by more than the clip norm, which
is what bounds how much the model reveals about any one of them.

Run: python examples/differentially_private_sgd.py [--epochs N] [--noise 1.0] [--clip 1.0]
"""
from __future__ import annotations

import argparse

import numpy as np
from sklearn.datasets import load_digits

import jaxon.numpy as jnp
from jaxon import grad, jit, random, tree, vmap
from jaxon.example_libraries import optimizers, stax
from jaxon.example_libraries.stax import Dense, LogSoftmax, Tanh

BATCH_SIZE = 64

init_net, apply_net = stax.serial(Dense(64), Tanh, Dense(10), LogSoftmax)


def loss(params, images, labels):
  log_probs = apply_net(params, images)
  return -jnp.mean(jnp.take_along_axis(log_probs, labels[..., None], axis=-1))


def private_gradient(params, images, labels, key, clip, noise):
  """The clipped, noised mean of the per-example gradients."""
  per_example = vmap(grad(loss), in_axes=(None, 0, 0))(params, images[:, None],
                                                        labels[:, None])
  norms = vmap(optimizers.l2_norm)(per_example)
  scale = jnp.minimum(1.0, clip / (norms + 1e-12))
  clipped_sum = tree.map(lambda g: jnp.tensordot(scale, g, axes=1), per_example)
  leaves, treedef = tree.flatten(clipped_sum)
  keys = random.split(key, len(leaves))
  noised = [g + noise * clip * random.normal(k, g.shape) for g, k in zip(leaves, keys)]
  return tree.unflatten(treedef, [g / images.shape[0] for g in noised])


def load_data():
  digits = load_digits()
  images = (digits.data / 16.0).astype(np.float32)
  labels = digits.target.astype(np.int32)
  order = np.random.RandomState(0).permutation(len(labels))
  n_test = len(labels) // 5
  return (images[order[n_test:]], labels[order[n_test:]], images[order[:n_test]],
          labels[order[:n_test]])


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--epochs", type=int, default=20)
  parser.add_argument("--noise", type=float, default=1.0, help="noise multiplier")
  parser.add_argument("--clip", type=float, default=1.0, help="per-example L2 clip norm")
  parser.add_argument("--step-size", type=float, default=0.5)
  args = parser.parse_args(argv)
  train_x, train_y, test_x, test_y = load_data()
  key = random.PRNGKey(0)
  init_key, key = random.split(key)
  _, params = init_net(init_key, (-1, 64))
  opt_init, opt_update, get_params = optimizers.sgd(args.step_size)

  @jit
  def update(step, opt_state, images, labels, key):
    g = private_gradient(get_params(opt_state), images, labels, key, args.clip, args.noise)
    return opt_update(step, g, opt_state)

  @jit
  def accuracy(params, images, labels):
    return jnp.mean(jnp.argmax(apply_net(params, images), axis=-1) == labels)

  opt_state = opt_init(params)
  rng = np.random.RandomState(1)
  step = 0
  history = []
  for epoch in range(args.epochs):
    order = rng.permutation(len(train_y))
    for start in range(0, len(order) - BATCH_SIZE + 1, BATCH_SIZE):
      idx = order[start:start + BATCH_SIZE]
      key, subkey = random.split(key)
      opt_state = update(step, opt_state, train_x[idx], train_y[idx], subkey)
      step += 1
    history.append(float(accuracy(get_params(opt_state), test_x, test_y)))
    print(f"epoch {epoch + 1:2d}  test accuracy {history[-1]:.2%}")
  return {"accuracy": history}


if __name__ == "__main__":
  main()
