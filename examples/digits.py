"""The main demo: a small convnet built with `stax`, trained with `optimizers.adam` under
`jit` on scikit-learn's bundled handwritten digits (1,797 8x8 images shipped inside the
package: nothing is downloaded).

It shows its work: a progress bar over the training steps, the loss and test accuracy per
epoch, per-example gradients with `vmap(grad)`, and a picture (learning curves and a grid
of test digits with their predicted labels, mistakes in red) whose path it prints last.

Run: python examples/digits.py [--epochs N] [--out digits.png]
"""
from __future__ import annotations

import argparse
import itertools
import time

import matplotlib
import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import jaxon
import jaxon.numpy as jnp
from jaxon import grad, jit, random, vmap
from jaxon.example_libraries import optimizers, stax
from jaxon.example_libraries.stax import Conv, Dense, Flatten, LogSoftmax, MaxPool, Relu

matplotlib.use("Agg")  # draws to a file; no display needed
import matplotlib.pyplot as plt  # noqa: E402 (the backend is chosen first)

BATCH_SIZE = 64
STEP_SIZE = 2e-3

init_net, apply_net = stax.serial(
    Conv(32, (3, 3), padding="SAME"), Relu,
    Conv(64, (3, 3), padding="SAME"), Relu,
    MaxPool((2, 2), strides=(2, 2)), Flatten,
    Dense(128), Relu,
    Dense(10), LogSoftmax,
)


def loss(params, images, labels):
  """Mean cross-entropy of the predicted log-probabilities at the true labels."""
  log_probs = apply_net(params, images)
  return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))


@jit
def predict_labels(params, images):
  return jnp.argmax(apply_net(params, images), axis=-1)


def load_data(seed: int = 0):
  """Images scaled to [0, 1] with a channel axis (NHWC), split 80/20 at random."""
  digits = load_digits()
  images = (digits.images / 16.0).astype(np.float32)[..., None]
  labels = digits.target.astype(np.int32)
  order = np.random.RandomState(seed).permutation(len(labels))
  n_test = len(labels) // 5
  test, train = order[:n_test], order[n_test:]
  return images[train], labels[train], images[test], labels[test]


def batches(images, labels, rng: np.random.RandomState):
  """One epoch of shuffled minibatches (the last, short one dropped: one compiled shape)."""
  order = rng.permutation(len(labels))
  for start in range(0, len(order) - BATCH_SIZE + 1, BATCH_SIZE):
    idx = order[start:start + BATCH_SIZE]
    yield images[idx], labels[idx]


def train(epochs: int, train_x, train_y, test_x, test_y):
  """Trains the convnet; returns its parameters and the per-epoch history."""
  opt_init, opt_update, get_params = optimizers.adam(STEP_SIZE)

  @jit
  def update(step, opt_state, images, labels):
    params = get_params(opt_state)
    value, grads = jaxon.value_and_grad(loss)(params, images, labels)
    return opt_update(step, grads, opt_state), value

  _, params = init_net(random.PRNGKey(0), (-1, 8, 8, 1))
  opt_state = opt_init(params)
  rng = np.random.RandomState(1)
  steps_per_epoch = len(train_y) // BATCH_SIZE
  history = {"loss": [], "accuracy": []}
  step = itertools.count()
  with tqdm(total=epochs * steps_per_epoch, unit="step", ncols=80) as bar:
    for epoch in range(1, epochs + 1):
      losses = []
      for images, labels in batches(train_x, train_y, rng):
        opt_state, value = update(next(step), opt_state, images, labels)
        losses.append(value)
        bar.update()
      mean_loss = float(np.mean(jaxon.device_get(losses)))
      accuracy = float(np.mean(np.asarray(predict_labels(get_params(opt_state), test_x))
                               == test_y))
      history["loss"].append(mean_loss)
      history["accuracy"].append(accuracy)
      bar.write(f"epoch {epoch:2d}  loss {mean_loss:.4f}  test accuracy {accuracy:.2%}")
  return get_params(opt_state), history


def check_per_example_gradients(params, images, labels) -> float:
  """Per-example gradients with `vmap(grad)`: their mean must be the batch gradient.
  Returns the largest difference between the two."""
  per_example = jit(vmap(grad(loss), in_axes=(None, 0, 0)))(params, images[:, None],
                                                              labels[:, None])
  batch = jit(grad(loss))(params, images, labels)
  gaps = jaxon.tree.map(lambda p, b: float(jnp.max(jnp.abs(jnp.mean(p, 0) - b))),
                        per_example, batch)
  return max(jaxon.tree.leaves(gaps))


def draw(history, test_x, test_y, predicted, path: str) -> None:
  """Learning curves on the left, 24 test digits with their predictions on the right."""
  fig = plt.figure(figsize=(11, 4.5))
  grid = fig.add_gridspec(4, 10)
  curves = fig.add_subplot(grid[:, :4])
  epochs = np.arange(1, len(history["loss"]) + 1)
  curves.plot(epochs, history["loss"], "o-", color="tab:blue", label="training loss")
  curves.set_xlabel("epoch")
  curves.set_ylabel("training loss", color="tab:blue")
  accuracy_axis = curves.twinx()
  accuracy_axis.plot(epochs, np.array(history["accuracy"]) * 100, "s-", color="tab:green")
  accuracy_axis.set_ylabel("test accuracy (%)", color="tab:green")
  curves.set_title("learning curves")
  wrong = np.flatnonzero(predicted != test_y)
  shown = np.concatenate([wrong, np.flatnonzero(predicted == test_y)])[:24]
  for k, i in enumerate(sorted(shown)):
    ax = fig.add_subplot(grid[k // 6, 4 + k % 6])
    ax.imshow(test_x[i, :, :, 0], cmap="gray_r")
    mistake = predicted[i] != test_y[i]
    ax.set_title(f"{predicted[i]}" + (f" (true {test_y[i]})" if mistake else ""),
                 fontsize=8, color="red" if mistake else "black")
    ax.set_xticks([])
    ax.set_yticks([])
  fig.suptitle(f"stax convnet on the digits: {np.mean(predicted == test_y):.2%} of "
               f"{len(test_y)} test images right ({len(wrong)} mistakes)")
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--epochs", type=int, default=12)
  parser.add_argument("--out", default="digits.png", help="where to write the picture")
  args = parser.parse_args(argv)
  start = time.perf_counter()
  train_x, train_y, test_x, test_y = load_data()
  print(f"digits: {len(train_y)} training and {len(test_y)} test images; "
        f"devices {jaxon.devices()}")
  params, history = train(args.epochs, train_x, train_y, test_x, test_y)
  predicted = np.asarray(predict_labels(params, test_x))
  gap = check_per_example_gradients(params, test_x[:32], test_y[:32])
  print(f"per-example gradients (vmap of grad) average to the batch gradient: "
        f"largest difference {gap:.1e}")
  draw(history, test_x, test_y, predicted, args.out)
  print(f"final test accuracy {history['accuracy'][-1]:.2%} in "
        f"{time.perf_counter() - start:.1f} s; picture written to {args.out}")
  return {"history": history, "gradient_gap": gap}


if __name__ == "__main__":
  main()
