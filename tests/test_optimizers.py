"""jaxon.example_libraries.optimizers: each update rule against a NumPy transcription over a
few jitted steps on a pytree of parameters, the schedules, the gradient utilities and the
state's pytree and serialization behaviour."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.example_libraries import optimizers as opt

RNG = np.random.default_rng(0)
PARAMS = {"w": RNG.normal(size=(3, 2)).astype(np.float32),
          "b": RNG.normal(size=(2,)).astype(np.float32),
          "t": (np.float32(0.5), RNG.normal(size=(4,)).astype(np.float32))}
GRADS = [jaxon.tree_map(lambda p: RNG.normal(size=np.shape(p)).astype(np.float32), PARAMS)
         for _ in range(3)]
LR = 0.1


# NumPy transcriptions of the update rules: (init state, update) for one array.

def np_sgd():
  return lambda x: x, lambda i, g, x: x - LR * g


def np_momentum(nesterov):
  def update(i, g, s):
    x, v = s
    v = 0.9 * v + g
    return x - LR * (0.9 * v + g if nesterov else v), v
  return lambda x: (x, 0 * x), update


def np_adagrad():
  def update(i, g, s):
    x, g_sq, m = s
    g_sq = g_sq + g * g
    m = 0.1 * g * np.where(g_sq > 0, g_sq ** -0.5, 0) + 0.9 * m
    return x - LR * m, g_sq, m
  return lambda x: (x, 0 * x, 0 * x), update


def np_rmsprop(with_momentum):
  def update(i, g, s):
    x, avg, mom = s
    avg = 0.9 * avg + 0.1 * g * g
    step = LR * g / np.sqrt(avg + 1e-8)
    mom = 0.9 * mom + step if with_momentum else step
    return x - mom, avg, mom
  return lambda x: (x, 0 * x, 0 * x), update


def np_adam():
  def update(i, g, s):
    x, m, v = s
    m = 0.1 * g + 0.9 * m
    v = 0.001 * g * g + 0.999 * v
    mhat, vhat = m / (1 - 0.9 ** (i + 1)), v / (1 - 0.999 ** (i + 1))
    return x - LR * mhat / (np.sqrt(vhat) + 1e-8), m, v
  return lambda x: (x, 0 * x, 0 * x), update


def np_adamax():
  def update(i, g, s):
    x, m, u = s
    m = 0.1 * g + 0.9 * m
    u = np.maximum(0.999 * u, np.abs(g))
    return x - LR / (1 - 0.9 ** (i + 1)) * m / (u + 1e-8), m, u
  return lambda x: (x, 0 * x, 0 * x), update


def np_sm3():
  """Per axis, the max over the other axes of the accumulated squares; a coordinate's sum is
  bounded by the min of the accumulators of its index along each axis."""
  def init(x):
    x1 = np.atleast_1d(x)
    return x, 0 * x1, [np.zeros(n) for n in x1.shape]

  def update(i, g, s):
    x, m, vs = s
    g = np.atleast_1d(g)
    bound = np.full(g.shape, np.inf)
    for idx in np.ndindex(*g.shape):
      bound[idx] = min(v[j] for v, j in zip(vs, idx))
    accum = bound + g * g
    m = 0.1 * g * np.where(accum > 0, accum ** -0.5, 0) + 0.9 * m
    vs = [np.moveaxis(accum, a, 0).reshape(accum.shape[a], -1).max(1) for a in range(g.ndim)]
    return (np.atleast_1d(x) - LR * m).reshape(np.shape(x)), m, vs
  return init, update


CASES = {
    "sgd": (opt.sgd(LR), np_sgd()),
    "momentum": (opt.momentum(LR, 0.9), np_momentum(False)),
    "nesterov": (opt.nesterov(LR, 0.9), np_momentum(True)),
    "adagrad": (opt.adagrad(LR), np_adagrad()),
    "rmsprop": (opt.rmsprop(LR), np_rmsprop(False)),
    "rmsprop_momentum": (opt.rmsprop_momentum(LR), np_rmsprop(True)),
    "adam": (opt.adam(LR), np_adam()),
    "adamax": (opt.adamax(LR), np_adamax()),
    "sm3": (opt.sm3(LR), np_sm3()),
}


def run_steps(optimizer, grads):
  """All the steps and get_params in one jitted function, starting at step 0."""
  init, update, get_params = optimizer

  @jaxon.jit
  def steps(state, grads):
    for i, g in enumerate(grads):
      state = update(i, g, state)
    return get_params(state), state
  return steps(init(PARAMS), grads)


@pytest.mark.parametrize("name", CASES)
def test_optimizer_matches_numpy(name):
  optimizer, (np_init, np_update) = CASES[name]
  got, state = run_steps(optimizer, GRADS)
  assert isinstance(state, opt.OptimizerState)
  flat_params, tree = jaxon.tree_flatten(PARAMS)
  assert jaxon.tree_structure(got) == tree
  for j, x in enumerate(flat_params):
    s = np_init(x.astype(np.float64))
    for i, grads in enumerate(GRADS):
      s = np_update(i, jaxon.tree_leaves(grads)[j].astype(np.float64), s)
    want = s if name == "sgd" else s[0]
    np.testing.assert_allclose(jaxon.tree_leaves(got)[j], want, rtol=2e-5, atol=2e-6,
                               err_msg=f"{name}, leaf {j}")


def test_adam_matches_jax_exactly():
  got, _ = run_steps(opt.adam(LR), GRADS)
  # JAX 0.10.2's jitted adam gives these float32 values after the same three steps.
  np.testing.assert_array_equal(got["b"], np.array([1.4943634271621704, 1.1128071546554565],
                                                   np.float32))
  np.testing.assert_array_equal(got["t"][1], np.array(
      [-0.5261227488517761, -1.1792341470718384, -0.41360408067703247, -0.13388705253601074],
      np.float32))


def test_sm3_get_params_under_jit_and_on_scalars():
  init, update, get_params = opt.sm3(LR)
  state = jaxon.jit(update)(0, jnp.float32(2.0), init(jnp.float32(1.0)))
  np.testing.assert_allclose(jaxon.jit(get_params)(state), 1.0 - LR * 0.1, rtol=1e-6)


def test_step_size_schedule_is_used_per_step():
  schedule = opt.piecewise_constant([0, 1], [0.1, 0.05, 0.01])
  got, _ = run_steps(opt.sgd(schedule), GRADS)
  want = PARAMS["w"] - sum(lr * g["w"] for lr, g in zip([0.1, 0.05, 0.01], GRADS))
  np.testing.assert_allclose(got["w"], want, rtol=1e-6)


# ----------------------------------------------------------------------------- schedules

STEPS = np.array([0, 1, 3, 5, 10])
SCHEDULES = {
    "constant": (opt.constant(0.3), lambda i: 0.3 + 0 * i),
    "exponential_decay": (opt.exponential_decay(0.1, 4, 0.5), lambda i: 0.1 * 0.5 ** (i / 4)),
    "inverse_time_decay": (opt.inverse_time_decay(0.1, 4, 2.0),
                           lambda i: 0.1 / (1 + 2.0 * i / 4)),
    "inverse_time_decay_staircase": (opt.inverse_time_decay(0.1, 4, 2.0, staircase=True),
                                     lambda i: 0.1 / (1 + 2.0 * (i // 4))),
    "polynomial_decay": (opt.polynomial_decay(0.1, 5, 0.01, power=2.0),
                         lambda i: (1 - np.minimum(i, 5) / 5) ** 2 * 0.09 + 0.01),
    "piecewise_constant": (opt.piecewise_constant([1, 4], [1.0, 0.5, 0.25]),
                           lambda i: np.select([i <= 1, i <= 4], [1.0, 0.5], 0.25)),
}


def test_schedules_at_several_steps():
  schedules = [s for s, _ in SCHEDULES.values()]
  traced = jaxon.jit(lambda i: [s(i) for s in schedules])
  for i in STEPS:
    for (name, (_, want)), got in zip(SCHEDULES.items(), traced(i)):
      np.testing.assert_allclose(got, want(i), rtol=1e-6, err_msg=f"{name} at step {i}")
  # Python ints work too, as in a training loop that is not jitted.
  assert opt.exponential_decay(0.1, 4, 0.5)(8) == pytest.approx(0.025)
  assert float(opt.piecewise_constant([1, 4], [1.0, 0.5, 0.25])(2)) == 0.5


def test_make_schedule_and_bad_schedules():
  assert opt.make_schedule(0.5)(7) == 0.5
  schedule = opt.constant(0.2)
  assert opt.make_schedule(schedule) is schedule
  with pytest.raises(TypeError, match="scalar or a schedule"):
    opt.make_schedule(np.ones(2))
  with pytest.raises(ValueError, match="one shorter"):
    opt.piecewise_constant([1, 2], [1.0, 0.5])
  with pytest.raises(ValueError, match="sequences"):
    opt.piecewise_constant(1, [1.0, 0.5])


# ----------------------------------------------------------------------------- utilities

def test_l2_norm_and_clip_grads():
  tree = GRADS[0]
  norm = np.sqrt(sum(np.sum(x.astype(np.float64) ** 2) for x in jaxon.tree_leaves(tree)))
  got_norm, clipped, unclipped = jaxon.jit(lambda t: (
      opt.l2_norm(t), opt.clip_grads(t, 1.0), opt.clip_grads(t, 100.0)))(tree)
  np.testing.assert_allclose(got_norm, norm, rtol=1e-6)
  for c, u, g in zip(*map(jaxon.tree_leaves, (clipped, unclipped, tree))):
    np.testing.assert_allclose(c, g / norm, rtol=1e-5)
    np.testing.assert_array_equal(u, g)
  np.testing.assert_allclose(opt.l2_norm(clipped), 1.0, rtol=1e-6)


# ----------------------------------------------------------------------------- state

def test_optimizer_state_is_a_pytree():
  init, _, get_params = opt.adam(LR)
  state = init(PARAMS)
  leaves, treedef = jaxon.tree_flatten(state)
  assert len(leaves) == 3 * len(jaxon.tree_leaves(PARAMS))  # x, m and v per array
  rebuilt = jaxon.tree_unflatten(treedef, [x + 1 for x in leaves])
  assert isinstance(rebuilt, opt.OptimizerState)
  assert rebuilt.tree_def == state.tree_def and rebuilt.subtree_defs == state.subtree_defs
  np.testing.assert_array_equal(get_params(rebuilt)["w"], PARAMS["w"] + 1)


def test_pack_unpack_round_trip():
  _, update, get_params = opt.momentum(LR, 0.9)
  state = update(0, GRADS[0], opt.momentum(LR, 0.9)[0](PARAMS))
  marked = opt.unpack_optimizer_state(state)
  assert isinstance(marked["w"], opt.JoinPoint)
  x, velocity = marked["w"].subtree
  np.testing.assert_array_equal(velocity, GRADS[0]["w"])
  assert list(marked["w"]) == [marked["w"].subtree]
  packed = opt.pack_optimizer_state(marked)
  assert jaxon.tree_structure(packed) == jaxon.tree_structure(state)
  for a, b in zip(jaxon.tree_leaves(packed), jaxon.tree_leaves(state)):
    np.testing.assert_array_equal(a, b)
  with pytest.raises(TypeError, match="JoinPoint"):
    opt.pack_optimizer_state({"w": 1.0})


def test_update_checks_tree_structures():
  init, update, _ = opt.sgd(LR)
  state = init(PARAMS)
  with pytest.raises(TypeError, match="gradient tree"):
    update(0, {"w": GRADS[0]["w"]}, state)

  @opt.optimizer
  def shape_shifter():
    return (lambda x: (x, x), lambda i, g, s: (s[0],), lambda s: s[0])
  init, update, _ = shape_shifter()
  with pytest.raises(TypeError, match="structure"):
    update(0, GRADS[0], init(PARAMS))


def test_user_optimizer_via_decorator():
  @opt.optimizer
  def signum(step_size):
    """Steps by the sign of the gradient and counts the steps."""
    def init(x0):
      return {"x": x0, "count": jnp.zeros((), jnp.int32)}

    def update(i, g, state):
      return {"x": state["x"] - step_size * jnp.sign(g), "count": state["count"] + 1}
    return init, update, lambda state: state["x"]

  assert signum.__name__ == "signum" and "sign of the gradient" in signum.__doc__
  optimizer = signum(0.5)
  assert isinstance(optimizer, opt.Optimizer)
  got, state = run_steps(optimizer, GRADS)
  want = PARAMS["w"] - 0.5 * sum(np.sign(g["w"]) for g in GRADS)
  np.testing.assert_array_equal(got["w"], want)
  scalar_state, vector_state = opt.unpack_optimizer_state(state)["t"]
  assert int(scalar_state.subtree["count"]) == int(vector_state.subtree["count"]) == 3
