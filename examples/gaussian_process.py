"""Gaussian-process regression (kernel least squares with a learned kernel), in the spirit
of JAX's `examples/gaussian_process_regression.py`: an RBF kernel's length scale, amplitude
and noise are fitted by gradient ascent on the log marginal likelihood, computed through a
Cholesky factorization (`jnp.linalg.cholesky`, `jax.scipy.linalg.cho_solve`), and the
posterior mean and variance are then predicted on a grid.

Run: python examples/gaussian_process.py [--steps N]
"""
from __future__ import annotations

import argparse

import numpy as np

import jaxon.numpy as jnp
from jaxon import jit, value_and_grad
from jaxon.example_libraries import optimizers
from jaxon.scipy.linalg import cho_solve


def rbf_kernel(x, y, log_length, log_amplitude):
  sq_dist = (x[:, None] - y[None, :]) ** 2
  return jnp.exp(2 * log_amplitude) * jnp.exp(-0.5 * sq_dist / jnp.exp(2 * log_length))


def _cholesky_of_covariance(params, x):
  cov = rbf_kernel(x, x, params["log_length"], params["log_amplitude"])
  cov = cov + (jnp.exp(2 * params["log_noise"]) + 1e-6) * jnp.eye(x.shape[0])
  return jnp.linalg.cholesky(cov)


def log_marginal_likelihood(params, x, y):
  """log N(y | 0, K + noise² I): data fit, complexity penalty and normalizer."""
  chol = _cholesky_of_covariance(params, x)
  alpha = cho_solve((chol, True), y)
  return (-0.5 * jnp.dot(y, alpha) - jnp.sum(jnp.log(jnp.diag(chol)))
          - 0.5 * x.shape[0] * jnp.log(2 * jnp.pi))


@jit
def predict(params, x, y, x_new):
  """Posterior mean and variance of the latent function at `x_new`."""
  chol = _cholesky_of_covariance(params, x)
  cross = rbf_kernel(x, x_new, params["log_length"], params["log_amplitude"])
  mean = cross.T @ cho_solve((chol, True), y)
  v = cho_solve((chol, True), cross)
  prior_var = jnp.exp(2 * params["log_amplitude"])
  return mean, prior_var - jnp.sum(cross * v, axis=0)


def make_data(n: int = 40, seed: int = 0):
  rng = np.random.RandomState(seed)
  x = np.sort(rng.uniform(-3, 3, n)).astype(np.float32)
  y = (np.sin(2 * x) + 0.1 * rng.standard_normal(n)).astype(np.float32)
  return x, y


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=300)
  args = parser.parse_args(argv)
  x, y = make_data()
  params = {"log_length": jnp.float32(0.0), "log_amplitude": jnp.float32(0.0),
            "log_noise": jnp.float32(-1.0)}
  opt_init, opt_update, get_params = optimizers.adam(0.05)

  @jit
  def step(i, opt_state):
    value, grads = value_and_grad(log_marginal_likelihood)(get_params(opt_state), x, y)
    return opt_update(i, {k: -g for k, g in grads.items()}, opt_state), value

  opt_state = opt_init(params)
  first = None
  for i in range(args.steps):
    opt_state, value = step(i, opt_state)
    first = float(value) if first is None else first
  params = get_params(opt_state)
  final = float(log_marginal_likelihood(params, x, y))
  grid = np.linspace(-3, 3, 61, dtype=np.float32)
  mean, var = predict(params, x, y, grid)
  error = float(np.max(np.abs(np.asarray(mean) - np.sin(2 * grid))))
  print(f"log marginal likelihood {first:.2f} -> {final:.2f}; length scale "
        f"{float(jnp.exp(params['log_length'])):.3f}, noise "
        f"{float(jnp.exp(params['log_noise'])):.3f}; largest error of the posterior mean "
        f"against sin(2x) on [-3, 3]: {error:.3f}")
  return {"initial_lml": first, "final_lml": final, "params": params, "mean": mean,
          "var": var, "grid": grid, "max_error": error}


if __name__ == "__main__":
  main()
