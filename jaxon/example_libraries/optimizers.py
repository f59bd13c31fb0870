"""First-order optimizers as `(init_fun, update_fun, get_params)` triples of pure functions.

    opt_state = init_fun(params)                   # params: any pytree of arrays
    opt_state = update_fun(step, grads, opt_state)  # grads: a pytree shaped like params
    params = get_params(opt_state)

The state is a pytree (an `OptimizerState`), so a whole training step, gradient and update
together, can be jitted. Each optimizer is written for one array and lifted to pytrees by
the `@optimizer` decorator, which is also how users define their own. A step size is a
number or a schedule, a function of the step index (`exponential_decay`, ...).

Example:

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)

    @jit
    def step(i, opt_state, batch):
      grads = grad(loss)(get_params(opt_state), batch)
      return opt_update(i, grads, opt_state)

The update rules, state layouts and `OptimizerState` pytree follow JAX's
`jax.example_libraries.optimizers`, so ported code behaves the same (see `sm3` for the one
layout difference).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

import jaxon.numpy as jnp
from jaxon import tree_util
from jaxon._src.util import safe_map as safe_map, safe_zip as safe_zip, unzip2 as unzip2

# JAX's module exports its length-checking map and zip under the builtins' names, and its
# code (like this one) uses them.
map = safe_map  # noqa: A001
zip = safe_zip  # noqa: A001

Array = Any
Params = Any  # any pytree of arrays
State = Any  # the per-array state of one optimizer
Updates = Params  # gradients: a pytree shaped like the params
Step = int
Schedule = Callable[[Step], Any]

# The state of every `@optimizer`: the flattened per-array states (one list of leaves per
# parameter array) and the tree structures to rebuild the params and each state from them.
# Keeping it flat makes each update one pass over a list instead of a nested tree map.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# Only the packed arrays are children: the structures are static, so jit specializes on them.
tree_util.register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda structures, children: OptimizerState(children[0], *structures))

InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
  """The triple an optimizer constructor returns; it unpacks as `init, update, get_params`."""
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


def _flatten_each(trees: list[Any]) -> tuple[list[list[Any]], tuple[Any, ...]]:
  flat = [tree_util.tree_flatten(tree) for tree in trees]
  return [leaves for leaves, _ in flat], tuple(treedef for _, treedef in flat)


def _unflatten_each(treedefs: tuple[Any, ...], leaf_lists: list[list[Any]]) -> list[Any]:
  return [tree_util.tree_unflatten(t, leaves) for t, leaves in zip(treedefs, leaf_lists)]


def optimizer(opt_maker: Callable[..., tuple[Callable[[Array], State],
                                             Callable[[Step, Array, State], State],
                                             Callable[[State], Array]]]
              ) -> Callable[..., Optimizer]:
  """Lifts an optimizer written for single arrays to one for pytrees of arrays.

  `opt_maker(*args, **kwargs)` returns `(init, update, get_params)` where `init(x)` makes a
  state (any pytree) for the array `x`, `update(step, g, state)` returns the next state of
  the same structure, and `get_params(state)` returns the array. The decorated constructor
  returns an `Optimizer` whose functions take and give pytrees: each parameter array gets
  its own state, kept in an `OptimizerState`.
  """
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree: Params) -> OptimizerState:
      x0_flat, tree = tree_util.tree_flatten(x0_tree)
      states_flat, subtrees = _flatten_each([init(x0) for x0 in x0_flat])
      return OptimizerState(states_flat, tree, subtrees)

    @functools.wraps(update)
    def tree_update(i: Step, grad_tree: Updates, opt_state: OptimizerState
                    ) -> OptimizerState:
      states_flat, tree, subtrees = opt_state
      grad_flat, grad_tree_def = tree_util.tree_flatten(grad_tree)
      if grad_tree_def != tree:
        raise TypeError(f"optimizer update function was passed a gradient tree that does not "
                        f"match the parameter tree it was initialized with: parameter tree "
                        f"{tree} and gradient tree {grad_tree_def}.")
      states = _unflatten_each(subtrees, states_flat)
      new_states = [update(i, g, state) for g, state in zip(grad_flat, states)]
      new_states_flat, new_subtrees = _flatten_each(new_states)
      for before, after in zip(subtrees, new_subtrees):
        if before != after:
          raise TypeError(f"optimizer update function produced a state whose structure "
                          f"differs from its input's: input {before} and output {after}.")
      return OptimizerState(new_states_flat, tree, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state: OptimizerState) -> Params:
      states_flat, tree, subtrees = opt_state
      params = [get_params(state) for state in _unflatten_each(subtrees, states_flat)]
      return tree_util.tree_unflatten(tree, params)

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


# ----------------------------------------------------------------------------- optimizers

def _first(state: tuple[Any, ...]) -> Any:
  return state[0]


@optimizer
def sgd(step_size: float | Schedule) -> Optimizer:
  """Stochastic gradient descent, x <- x - step_size(i) * g. The state is the params."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> Array:
    return x0

  def update(i: Step, g: Array, x: Array) -> Array:
    return x - step_size(i) * g
  return Optimizer(init, update, lambda x: x)


@optimizer
def momentum(step_size: float | Schedule, mass: float) -> Optimizer:
  """SGD with heavy-ball momentum: v <- mass * v + g, x <- x - step_size(i) * v."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    return x0, jnp.zeros_like(x0)

  def update(i: Step, g: Array, state: State) -> State:
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity
  return Optimizer(init, update, _first)


@optimizer
def nesterov(step_size: float | Schedule, mass: float) -> Optimizer:
  """SGD with Nesterov momentum: like `momentum`, but the step looks ahead along the new
  velocity, x <- x - step_size(i) * (mass * v + g)."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    return x0, jnp.zeros_like(x0)

  def update(i: Step, g: Array, state: State) -> State:
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity
  return Optimizer(init, update, _first)


@optimizer
def adagrad(step_size: float | Schedule, momentum: float = 0.9) -> Optimizer:
  """Adagrad (Duchi et al., 2011), with momentum on the rescaled gradient: each coordinate's
  step is divided by the root of its summed squared gradients (0 while that sum is 0)."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i: Step, g: Array, state: State) -> State:
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
    m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
    return x - step_size(i) * m, g_sq, m
  return Optimizer(init, update, _first)


@optimizer
def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8
            ) -> Optimizer:
  """RMSProp: the step is divided by the root of a decaying (by `gamma`) average of squared
  gradients, plus `eps` under the root."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    return x0, jnp.zeros_like(x0)

  def update(i: Step, g: Array, state: State) -> State:
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
  return Optimizer(init, update, _first)


@optimizer
def rmsprop_momentum(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> Optimizer:
  """RMSProp whose rescaled steps accumulate in a momentum buffer, which is what moves x."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i: Step, g: Array, state: State) -> State:
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom
  return Optimizer(init, update, _first)


def _bias_correction(beta: float, dtype: Any, i: Step) -> Any:
  """1 - beta^(i+1): how far the zero-initialized moving average is from an unbiased one.
  The power is taken in the moments' dtype, as JAX does, so low precision stays low."""
  return 1 - jnp.asarray(beta, dtype) ** (i + 1)


@optimizer
def adam(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
         ) -> Optimizer:
  """Adam (Kingma & Ba, 2015): bias-corrected moving averages of the gradient (decay `b1`)
  and of its square (decay `b2`); the step is mhat / (sqrt(vhat) + eps)."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i: Step, g: Array, state: State) -> State:
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / _bias_correction(b1, m.dtype, i)
    vhat = v / _bias_correction(b2, m.dtype, i)
    return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
  return Optimizer(init, update, _first)


@optimizer
def adamax(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> Optimizer:
  """AdaMax, Adam with the infinity norm: the second moment becomes u <- max(b2 * u, |g|),
  which needs no bias correction."""
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i: Step, g: Array, state: State) -> State:
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    x = x - (step_size(i) / _bias_correction(b1, m.dtype, i)) * m / (u + eps)
    return x, m, u
  return Optimizer(init, update, _first)


@optimizer
def sm3(step_size: float | Schedule, momentum: float = 0.9) -> Optimizer:
  """SM3 (Anil et al., 2019), memory-efficient Adagrad: instead of a squared-gradient sum per
  coordinate it keeps one accumulator vector per axis and bounds each coordinate's sum by
  the minimum over the accumulators covering it.

  Scalars are treated as 1-vectors. Unlike JAX, whose state also holds the original shape
  as Python ints (which jit turns into tracers, so its `get_params` cannot run under jit),
  the state here is `(x, m, accumulators)` with x in its own shape.
  """
  step_size = make_schedule(step_size)

  def init(x0: Array) -> State:
    x0 = jnp.asarray(x0)
    x1 = jnp.atleast_1d(x0)
    return x0, jnp.zeros_like(x1), [jnp.zeros(n, x1.dtype) for n in x1.shape]

  def update(i: Step, g: Array, state: State) -> State:
    x, m, accumulators = state
    g = jnp.atleast_1d(g)
    ndim = g.ndim
    # Accumulator `axis` broadcast against the gradient along its own axis.
    covering = [jnp.expand_dims(v, [d for d in range(ndim) if d != axis])
                for axis, v in enumerate(accumulators)]
    accum = functools.reduce(jnp.minimum, covering) + jnp.square(g)
    accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
    m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
    new_x = jnp.reshape(jnp.atleast_1d(x) - step_size(i) * m, jnp.shape(x))
    accumulators = [jnp.max(accum, axis=tuple(d for d in range(ndim) if d != axis))
                    for axis in range(ndim)]
    return new_x, m, accumulators
  return Optimizer(init, update, _first)


# ----------------------------------------------------------------------------- schedules

def constant(step_size: Any) -> Schedule:
  """The schedule that is `step_size` at every step."""
  def schedule(i: Step) -> Any:
    return step_size
  return schedule


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
  """step_size * decay_rate ** (i / decay_steps): multiplied by `decay_rate` every
  `decay_steps` steps, smoothly in between."""
  def schedule(i: Step) -> Any:
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False) -> Schedule:
  """step_size / (1 + decay_rate * i / decay_steps); with `staircase` the ratio i /
  decay_steps is floored, so the step size changes only every `decay_steps` steps."""
  if staircase:
    def schedule(i: Step) -> Any:
      return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  else:
    def schedule(i: Step) -> Any:
      return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: float = 1.0) -> Schedule:
  """Moves from `step_size` to `final_step_size` over `decay_steps` steps along
  (1 - i / decay_steps) ** power, then stays at `final_step_size`."""
  def schedule(step_num: Step) -> Any:
    step_num = jnp.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
  """values[0] up to and including step boundaries[0], then values[1] up to boundaries[1],
  and so on; `values` has one more entry than `boundaries`."""
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError(f"piecewise_constant: boundaries and values must be sequences (1-D), "
                     f"got shapes {boundaries.shape} and {values.shape}.")
  if boundaries.shape[0] != values.shape[0] - 1:
    raise ValueError(f"piecewise_constant: boundaries length must be one shorter than values "
                     f"length, got {boundaries.shape[0]} boundaries and {values.shape[0]} "
                     f"values.")

  def schedule(i: Step) -> Any:
    return values[jnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
  """A schedule unchanged, a scalar as the `constant` schedule."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(f"a step size must be a scalar or a schedule (a function of the step "
                  f"index), got {type(scalar_or_schedule).__name__} of shape "
                  f"{np.shape(scalar_or_schedule)}.")


# ----------------------------------------------------------------------------- utilities

def l2_norm(tree: Any) -> Array:
  """The l2 norm of all the arrays of a pytree taken together (e.g. for weight decay)."""
  leaves = tree_util.tree_leaves(tree)
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
  """Scales a gradient pytree down to l2 norm `max_norm` when its norm exceeds that."""
  norm = l2_norm(grad_tree)
  return tree_util.tree_map(
      lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


# ----------------------------------------------------------------------------- serialization

class JoinPoint:
  """Wraps the state of one parameter array where the params pytree had the array, marking
  where the outer (params) pytree ends and an inner (state) pytree begins.

  It is a leaf to the pytree functions, so flattening an unpacked state stops at it; it is
  iterable, yielding its subtree, so serializers that walk containers see inside it.
  """

  def __init__(self, subtree: Any) -> None:
    self.subtree = subtree

  def __iter__(self) -> Iterator[Any]:
    yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
  """The state as the params pytree with a `JoinPoint` holding each array's state in place
  of the array: a nested pytree with no treedefs in it, fit for serializing."""
  states_flat, tree_def, subtree_defs = opt_state
  subtrees = _unflatten_each(subtree_defs, states_flat)
  return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
  """The inverse of `unpack_optimizer_state`: rebuilds the `OptimizerState`."""
  sentinels, tree_def = tree_util.tree_flatten(marked_pytree)
  stray = [s for s in sentinels if not isinstance(s, JoinPoint)]
  if stray:
    raise TypeError(f"pack_optimizer_state needs a pytree whose leaves are all JoinPoints (as "
                    f"unpack_optimizer_state makes), got a leaf of type "
                    f"{type(stray[0]).__name__}.")
  states_flat, subtree_defs = _flatten_each([s.subtree for s in sentinels])
  return OptimizerState(states_flat, tree_def, subtree_defs)
