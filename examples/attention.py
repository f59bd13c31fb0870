"""A small transformer-style model whose layers run as one `lax.scan`: the parameters of
its blocks are stacked on a leading axis, so the depth is a loop in the compiled program
rather than copies of the block (compile time does not grow with the number of layers).
It learns to sort sequences of random digits: position i of the output is the i-th smallest
token of the input, which takes attention comparing every token with every other.

Run: python examples/attention.py [--steps N] [--layers L]
"""
from __future__ import annotations

import argparse

import numpy as np

import jaxon
import jaxon.numpy as jnp
from jaxon import jit, lax, nn, random, value_and_grad
from jaxon.example_libraries import optimizers

VOCAB, LENGTH, WIDTH, HEADS = 10, 8, 32, 4


def init_params(key, layers: int) -> dict:
  """Embeddings and `layers` blocks whose weights are stacked along axis 0."""
  keys = random.split(key, 6)

  def dense(k, *shape):
    return random.normal(k, shape) / np.sqrt(shape[-2])
  return {
      "embed": random.normal(keys[0], (VOCAB, WIDTH)) * 0.1,
      "position": random.normal(keys[1], (LENGTH, WIDTH)) * 0.1,
      "blocks": {
          "qkv": dense(keys[2], layers, WIDTH, 3 * WIDTH),
          "out": dense(keys[3], layers, WIDTH, WIDTH),
          "up": dense(keys[4], layers, WIDTH, 4 * WIDTH),
          "down": dense(keys[5], layers, 4 * WIDTH, WIDTH),
          "norm1": jnp.ones((layers, WIDTH)),
          "norm2": jnp.ones((layers, WIDTH)),
      },
      "unembed": jnp.zeros((WIDTH, VOCAB)),
  }


def layer_norm(x, scale):
  mean = jnp.mean(x, axis=-1, keepdims=True)
  return scale * (x - mean) * lax.rsqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5)


def attention(x, qkv, out):
  """Multi-head self-attention over the sequence axis of x: (length, width)."""
  q, k, v = jnp.split(x @ qkv, 3, axis=-1)
  heads = lambda t: t.reshape(LENGTH, HEADS, WIDTH // HEADS).transpose(1, 0, 2)  # noqa: E731
  q, k, v = heads(q), heads(k), heads(v)
  weights = nn.softmax(q @ k.transpose(0, 2, 1) / np.sqrt(WIDTH // HEADS), axis=-1)
  return (weights @ v).transpose(1, 0, 2).reshape(LENGTH, WIDTH) @ out


def block(x, p):
  """One pre-norm transformer block: the body of the scan over layers."""
  x = x + attention(layer_norm(x, p["norm1"]), p["qkv"], p["out"])
  x = x + nn.gelu(layer_norm(x, p["norm2"]) @ p["up"]) @ p["down"]
  return x, None


def logits(params, tokens):
  x = params["embed"][tokens] + params["position"]
  x, _ = lax.scan(block, x, params["blocks"])
  return x @ params["unembed"]


def loss(params, tokens):
  log_probs = nn.log_softmax(jaxon.vmap(logits, in_axes=(None, 0))(params, tokens))
  targets = jnp.sort(tokens, axis=-1)
  return -jnp.mean(jnp.take_along_axis(log_probs, targets[..., None], axis=-1))


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=600)
  parser.add_argument("--layers", type=int, default=2)
  parser.add_argument("--batch", type=int, default=64)
  args = parser.parse_args(argv)
  key = random.PRNGKey(0)
  init_key, key = random.split(key)
  opt_init, opt_update, get_params = optimizers.adam(3e-3)

  @jit
  def update(i, opt_state, key):
    tokens = random.randint(key, (args.batch, LENGTH), 0, VOCAB)
    value, grads = value_and_grad(loss)(get_params(opt_state), tokens)
    return opt_update(i, grads, opt_state), value

  @jit
  def accuracy(params, tokens):
    predicted = jnp.argmax(jaxon.vmap(logits, in_axes=(None, 0))(params, tokens), axis=-1)
    return jnp.mean(predicted == jnp.sort(tokens, axis=-1))

  opt_state = opt_init(init_params(init_key, args.layers))
  losses = []
  for i in range(args.steps):
    key, subkey = random.split(key)
    opt_state, value = update(i, opt_state, subkey)
    losses.append(value)
    if (i + 1) % max(1, args.steps // 6) == 0:
      print(f"step {i + 1:4d}  loss {float(value):.4f}")
  test_tokens = random.randint(random.PRNGKey(1), (256, LENGTH), 0, VOCAB)
  acc = float(accuracy(get_params(opt_state), test_tokens))
  print(f"{args.layers}-layer model sorts held-out sequences: token accuracy {acc:.2%}")
  return {"losses": [float(v) for v in losses], "accuracy": acc}


if __name__ == "__main__":
  main()
