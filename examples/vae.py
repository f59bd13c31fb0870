"""A variational autoencoder (Kingma & Welling, 2014) on the bundled digits, in the spirit
of JAX's `examples/mnist_vae.py`: a stax encoder gives the mean and log-variance of a
Gaussian posterior over a small latent code, a stax decoder gives Bernoulli pixel logits,
and `optimizers.adam` maximizes the evidence lower bound (ELBO) estimated with the
reparameterization trick, one fresh PRNG key per step.

Run: python examples/vae.py [--epochs N]
"""
from __future__ import annotations

import argparse

import numpy as np
from sklearn.datasets import load_digits

import jaxon.numpy as jnp
from jaxon import jit, lax, random, tree, value_and_grad
from jaxon.example_libraries import optimizers, stax
from jaxon.example_libraries.stax import Dense, FanOut, Relu, Softplus

LATENT = 8
BATCH_SIZE = 64

encoder_init, encode = stax.serial(
    Dense(128), Relu,
    FanOut(2), stax.parallel(Dense(LATENT), stax.serial(Dense(LATENT), Softplus)),
)
decoder_init, decode = stax.serial(Dense(128), Relu, Dense(64))


def gaussian_kl(mu, sigma_sq):
  """KL(N(mu, sigma_sq) || N(0, 1)), summed over the latent dimensions."""
  return 0.5 * jnp.sum(mu**2 + sigma_sq - 1.0 - jnp.log(sigma_sq), axis=-1)


def bernoulli_log_likelihood(logits, pixels):
  """log p(pixels | logits), summed over the pixels; stable for large |logits|."""
  return -jnp.sum(jnp.logaddexp(0.0, jnp.where(pixels > 0.5, -logits, logits)), axis=-1)


def elbo(params, key, images):
  """The mean ELBO of a batch, one posterior sample per image."""
  enc_params, dec_params = params
  mu, sigma_sq = encode(enc_params, images)
  z = mu + jnp.sqrt(sigma_sq) * random.normal(key, mu.shape)
  log_likelihood = bernoulli_log_likelihood(decode(dec_params, z), images)
  return jnp.mean(log_likelihood - gaussian_kl(mu, sigma_sq))


def load_binarized_digits() -> tuple[np.ndarray, np.ndarray]:
  pixels = (load_digits().data / 16.0 > 0.5).astype(np.float32)
  order = np.random.RandomState(0).permutation(len(pixels))
  n_test = len(pixels) // 5
  return pixels[order[n_test:]], pixels[order[:n_test]]


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--epochs", type=int, default=30)
  args = parser.parse_args(argv)
  train_x, test_x = load_binarized_digits()
  key = random.PRNGKey(0)
  enc_key, dec_key, key = random.split(key, 3)
  _, enc_params = encoder_init(enc_key, (-1, 64))
  _, dec_params = decoder_init(dec_key, (-1, LATENT))
  opt_init, opt_update, get_params = optimizers.adam(1e-3)

  @jit
  def run_epoch(epoch, opt_state, key, batches):
    """One epoch as a `lax.scan` over the (shuffled) batches: one compiled program."""
    def step(carry, batch):
      opt_state, key, step_number = carry
      key, subkey = random.split(key)
      value, grads = value_and_grad(elbo)(get_params(opt_state), subkey, batch)
      grads = tree.map(lambda g: -g, grads)  # adam minimizes: maximize the ELBO
      return (opt_update(step_number, grads, opt_state), key, step_number + 1), value
    first_step = epoch * batches.shape[0]
    (opt_state, key, _), values = lax.scan(step, (opt_state, key, first_step), batches)
    return opt_state, key, jnp.mean(values)

  test_elbo = jit(elbo)
  opt_state = opt_init((enc_params, dec_params))
  n_batches = len(train_x) // BATCH_SIZE
  rng = np.random.RandomState(1)
  history = []
  for epoch in range(args.epochs):
    order = rng.permutation(len(train_x))[:n_batches * BATCH_SIZE]
    opt_state, key, train_elbo = run_epoch(epoch, opt_state, key,
                                           train_x[order].reshape(n_batches, BATCH_SIZE, 64))
    value = float(test_elbo(get_params(opt_state), random.PRNGKey(epoch), test_x))
    history.append(value)
    print(f"epoch {epoch + 1:2d}  train ELBO {float(train_elbo):8.3f}  test ELBO {value:8.3f}")
  return {"test_elbo": history}


if __name__ == "__main__":
  main()
