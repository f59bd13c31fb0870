"""The main demo: the MLP of JAX's README (seed 003: `predict` with `jnp.tanh`, a loss, SGD
through `jit(grad(loss))`) trained on scikit-learn's bundled handwritten digits (8x8 images,
1,797 of them, shipped inside the package: no download). Prints the loss and test accuracy
per epoch, then computes per-example gradients with `jit(vmap(grad(loss), in_axes=(None, 0,
0)))` and checks that their mean is the batch gradient.

Run: python examples/digits.py
"""
from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits

import jaxon
import jaxon.numpy as jnp
from jaxon import grad, jit, vmap

LAYER_SIZES = (64, 256, 256, 10)
EPOCHS = 25
BATCH_SIZE = 32
LEARNING_RATE = 0.1


def init_params(rng: np.random.RandomState, sizes=LAYER_SIZES) -> list:
  """Weights scaled by 1/sqrt(fan_in) so tanh units start in their linear range."""
  return [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
           np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, inputs):
  for W, b in params:
    outputs = jnp.dot(inputs, W) + b
    inputs = jnp.tanh(outputs)
  return outputs


def log_softmax(logits):
  shifted = logits - jnp.max(logits, axis=-1, keepdims=True)
  return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True))


def loss(params, inputs, targets):
  """Mean cross-entropy; `targets` are one-hot rows (one row for a single example)."""
  return -jnp.mean(jnp.sum(log_softmax(predict(params, inputs)) * targets, axis=-1))


def accuracy(params, inputs, labels) -> float:
  return float(np.mean(np.argmax(np.asarray(predict(params, inputs)), axis=-1) == labels))


@jit
def sgd_step(params, inputs, targets):
  grads = grad(loss)(params, inputs, targets)
  return [(W - LEARNING_RATE * dW, b - LEARNING_RATE * db)
          for (W, b), (dW, db) in zip(params, grads)]


per_example_grads = jit(vmap(grad(loss), in_axes=(None, 0, 0)))


def load_data(rng: np.random.RandomState):
  digits = load_digits()
  images = (digits.data / 16.0).astype(np.float32)
  labels = digits.target
  order = rng.permutation(len(labels))
  n_test = len(labels) // 5
  test, train = order[:n_test], order[n_test:]
  return images[train], labels[train], images[test], labels[test]


def main() -> None:
  start = time.perf_counter()
  rng = np.random.RandomState(0)
  train_x, train_y, test_x, test_y = load_data(rng)
  train_targets = np.eye(10, dtype=np.float32)[train_y]
  params = init_params(rng)
  print(f"digits: {len(train_y)} training and {len(test_y)} test images; "
        f"MLP {'-'.join(map(str, LAYER_SIZES))} with tanh; devices {jaxon.devices()}")
  steps = len(train_y) // BATCH_SIZE
  for epoch in range(EPOCHS):
    order = rng.permutation(len(train_y))
    for i in range(steps):
      batch = order[i * BATCH_SIZE:(i + 1) * BATCH_SIZE]
      params = sgd_step(params, train_x[batch], train_targets[batch])
    train_loss = float(loss(params, train_x, train_targets))
    print(f"epoch {epoch + 1:2d}  loss {train_loss:.4f}  "
          f"test accuracy {accuracy(params, test_x, test_y):.2%}")

  batch = slice(0, 128)
  example_grads = per_example_grads(params, train_x[batch], train_targets[batch])
  batch_grads = grad(loss)(params, train_x[batch], train_targets[batch])
  shapes = [tuple(w.shape) for w, _ in example_grads]
  mean_matches = all(np.allclose(np.mean(np.asarray(pw), axis=0), np.asarray(bw), atol=1e-5)
                     for (pw, _), (bw, _) in zip(example_grads, batch_grads))
  print(f"per-example gradients of the weights: shapes {shapes}; "
        f"their mean equals the batch gradient: {mean_matches}")
  final = accuracy(params, test_x, test_y)
  print(f"final test accuracy {final:.2%} in {time.perf_counter() - start:.1f} s")
  if final < 0.95 or not mean_matches:
    raise SystemExit("the demo did not reach its targets (95% test accuracy, consistent "
                     "per-example gradients)")


if __name__ == "__main__":
  main()
