"""The Taylor rules of `jet` (`jet.py`), primitive by primitive.

Each rule maps the plain Taylor coefficients of the operands, `u = [u0, u1, ..., uK]`, to
those of the output. Most nonlinear ones are recurrences from an ODE the function solves:
`exp` satisfies `v' = v u'`, so `v_k = (1/k) sum_j j u_j v_{k-j}` (`jet.integrate_term`),
and a function whose derivative has a rule (erf, atan2) uses `v' = f'(u) u'` with the
series of `f'(u)` from `jet` itself. Products are Cauchy convolutions. Functions with an
exact rewrite in other primitives (`sqrt(x) = x ** 0.5`) are expanded through it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

import jaxon.lax as lax
import jaxon.numpy as jnp
from jaxon._src import caches, core
from jaxon._src import linear_util as lu
from jaxon._src.interpreters import ad
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.jet import (chain_rule_series, def_comp, def_deriv, deflinear, defzero,
                            integrate_term, jet2, jet_fun, jet_rules, jet_subtrace, traceable)
from jaxon._src.pjit import pjit_p, sharding_params
from jaxon._src.sharding_impls import UNSPECIFIED
from jaxon._src.tree_util import tree_flatten, tree_unflatten

Series = list[Any]


def _const(x: Any, value: Any) -> np.ndarray:
  """`value` in `x`'s dtype, strongly typed (as JAX's rules make their constants)."""
  return np.asarray(value, core.get_aval(x).dtype)


# ----------------------------------------------------------------------------- locally constant

for _prim in (lax.le_p, lax.lt_p, lax.gt_p, lax.ge_p, lax.eq_p, lax.ne_p,
              lax.eq_to_p, lax.le_to_p, lax.lt_to_p,
              lax.not_p, lax.and_p, lax.or_p, lax.xor_p, lax.floor_p, lax.ceil_p,
              lax.round_p, lax.sign_p, ad.stop_gradient_p, lax.is_finite_p,
              lax.shift_left_p, lax.shift_right_arithmetic_p, lax.shift_right_logical_p,
              lax.bitcast_convert_type_p, lax.argmax_p, lax.argmin_p,
              lax.population_count_p, lax.clz_p):
  defzero(_prim)


# ----------------------------------------------------------------------------- linear

for _prim in (lax.neg_p, lax.real_p, lax.complex_p, lax.conj_p, lax.imag_p, lax.add_p,
              ad.add_jaxvals_p, lax.sub_p, lax.convert_element_type_p,
              lax.broadcast_in_dim_p, lax.concatenate_p, lax.split_p, lax.stack_p,
              lax.unstack_p, lax.pad_p, lax.reshape_p, lax.squeeze_p, lax.rev_p,
              lax.transpose_p, lax.slice_p, lax.reduce_sum_p, lax.reduce_window_sum_p,
              lax.fft_p, lax.copy_p, lax.device_put_p, lax.cumsum_p, lax.tile_p):
  deflinear(_prim)


def _linear_in_first_operands(prim: core.Primitive, num_linear: int) -> Callable:
  """A rule for `prim`, linear in its first `num_linear` operands; the rest (indices) are
  passed as they are."""
  def rule(primals_in: Sequence[Any], series_in: Sequence[Series], **params: Any
           ) -> tuple[Any, Series]:
    indices = primals_in[num_linear:]
    primal_out = prim.bind(*primals_in, **params)
    series_out = [prim.bind(*terms[:num_linear], *indices, **params)
                  for terms in zip(*series_in)]
    return primal_out, series_out
  return rule


jet_rules[lax.dynamic_slice_p] = _linear_in_first_operands(lax.dynamic_slice_p, 1)
jet_rules[lax.dynamic_update_slice_p] = _linear_in_first_operands(
    lax.dynamic_update_slice_p, 2)
jet_rules[lax.gather_p] = _linear_in_first_operands(lax.gather_p, 1)


def _scatter_add_rule(primals_in: Sequence[Any], series_in: Sequence[Series], **params: Any
                      ) -> tuple[Any, Series]:
  operand, indices, updates = primals_in
  primal_out = lax.scatter_add_p.bind(operand, indices, updates, **params)
  series_out = [lax.scatter_add_p.bind(t_operand, indices, t_updates, **params)
                for t_operand, _, t_updates in zip(*series_in)]
  return primal_out, series_out


jet_rules[lax.scatter_add_p] = _scatter_add_rule


# ----------------------------------------------------------------------------- cumulative


def _cumulative_rule(combine: Callable, primals_in: Sequence[Any],
                     series_in: Sequence[Series], *, axis: int, reverse: bool
                     ) -> tuple[Any, Series]:
  """Through the parallel prefix scan, whose steps are all elementwise `combine`s."""
  scan = partial(lax.associative_scan, combine, axis=axis, reverse=reverse)
  return jet2(scan, primals_in, series_in)


jet_rules[lax.cumprod_p] = partial(_cumulative_rule, lax.mul)
jet_rules[lax.cummax_p] = partial(_cumulative_rule, lax.max)
jet_rules[lax.cummin_p] = partial(_cumulative_rule, lax.min)


# ----------------------------------------------------------------------------- rewrites

def_comp(lax.expm1_p, lambda x: lax.exp(x) - 1)
def_comp(lax.log1p_p, lambda x: lax.log(1 + x))
def_comp(lax.sqrt_p, lambda x: x ** 0.5)
def_comp(lax.square_p, lambda x: x * x)
def_comp(lax.rsqrt_p, lambda x: x ** -0.5)
def_comp(lax.asinh_p, lambda x: lax.log(x + lax.sqrt(lax.square(x) + 1)))
def_comp(lax.acosh_p, lambda x: lax.log(x + lax.sqrt(lax.square(x) - 1)))
def_comp(lax.atanh_p, lambda x: 0.5 * lax.log(lax.div(1 + x, 1 - x)))
def_comp(lax.erfc_p, lambda x: 1 - lax.erf(x))
def_comp(lax.rem_p, lambda x, y: x - y * lax.floor(x / y))
def_comp(lax.clamp_p, lambda lo, x, hi: lax.min(lax.max(lo, x), hi))
def_comp(lax.tan_p, lambda x: lax.sin(x) / lax.cos(x))


# ----------------------------------------------------------------------------- from f'

def_deriv(lax.erf_p, lambda x: lax.mul(_const(x, 2. / np.sqrt(np.pi)),
                                       lax.exp(lax.neg(lax.square(x)))))


def _erf_inv_rule(primals_in: Sequence[Any], series_in: Sequence[Series]
                  ) -> tuple[Any, Series]:
  """`y = erf_inv(x)` has `y' = c x'` with `c = sqrt(pi)/2 exp(y^2)`: the series of `y`,
  `y^2`, `exp(y^2)` and `c` are built together, one coefficient of each per step."""
  (x,), (terms,) = primals_in, series_in
  u = [x, *terms]
  y = [lax.erf_inv(x)]
  y_squared = [lax.square(y[0])]
  exp_y_squared = [lax.exp(y_squared[0])]
  scale = np.sqrt(np.pi) / 2.
  c = [lax.mul(_const(x, scale), exp_y_squared[0])]
  for k in range(1, len(u)):
    y.append(integrate_term(k, c, u))
    if k == len(terms):
      break
    y_squared.append(sum(y[j] * y[k - j] for j in range(k + 1)))
    exp_y_squared.append(integrate_term(k, exp_y_squared, y_squared))
    c.append(scale * exp_y_squared[k])
  return y[0], y[1:]


jet_rules[lax.erf_inv_p] = _erf_inv_rule


def _atan2_rule(primals_in: Sequence[Any], series_in: Sequence[Series]
                ) -> tuple[Any, Series]:
  """`atan2(x, y) = atan(x / y)` locally, and `atan' = 1 / (1 + q^2)`."""
  q0, q_terms = jet2(lax.div, primals_in, series_in)
  one = _const(q0, 1)
  c0, c_terms = jet2(lambda q: lax.div(one, 1 + lax.square(q)), (q0,), (q_terms,))
  return chain_rule_series(lax.atan2(*primals_in), [c0, *c_terms], [q0, *q_terms])


jet_rules[lax.atan2_p] = _atan2_rule


# ----------------------------------------------------------------------------- exp, log, pow


def _exp_rule(primals_in: Sequence[Any], series_in: Sequence[Series], **_: Any
              ) -> tuple[Any, Series]:
  """`v = exp(u)` solves `v' = v u'`."""
  (x,), (terms,) = primals_in, series_in
  u, v = [x, *terms], [lax.exp(x)]
  for k in range(1, len(u)):
    v.append(integrate_term(k, v, u))
  return v[0], v[1:]


jet_rules[lax.exp_p] = _exp_rule


def _log_rule(primals_in: Sequence[Any], series_in: Sequence[Series], **_: Any
              ) -> tuple[Any, Series]:
  """`v = log(u)` solves `u v' = u'`: `k u_0 v_k = k u_k - sum_{j<k} j v_j u_{k-j}`."""
  (x,), (terms,) = primals_in, series_in
  u, v = [x, *terms], [lax.log(x)]
  for k in range(1, len(u)):
    correction = sum(j * v[j] * u[k - j] for j in range(1, k))
    v.append((u[k] - correction / k) / u[0])
  return v[0], v[1:]


jet_rules[lax.log_p] = _log_rule


def _pow_rule(primals_in: Sequence[Any], series_in: Sequence[Series]) -> tuple[Any, Series]:
  """`x ** y = exp(y log x)`, expanded with the exp recurrence from the primal `x ** y`."""
  x, y = primals_in
  w0, w_terms = jet2(lambda x, y: lax.mul(y, lax.log(x)), primals_in, series_in)
  w, v = [w0, *w_terms], [x ** y]
  for k in range(1, len(w)):
    v.append(integrate_term(k, v, w))
  return v[0], v[1:]


jet_rules[lax.pow_p] = _pow_rule


def _power_by_squaring(x: Any, n: int) -> Any:
  if n < 0:
    return _power_by_squaring(1 / x, -n)
  if n == 0:
    return 1
  half = _power_by_squaring(x * x, n // 2)
  return x * half if n % 2 else half


def _integer_pow_rule(primals_in: Sequence[Any], series_in: Sequence[Series], *, y: int
                      ) -> tuple[Any, Series]:
  """Products only: exact where `x ** y` through log would not be (x <= 0)."""
  if y == 0:
    return jet2(jnp.ones_like, primals_in, series_in)
  return jet2(lambda x: _power_by_squaring(x, y), primals_in, series_in)


jet_rules[lax.integer_pow_p] = _integer_pow_rule


# ----------------------------------------------------------------------------- logistic, tanh


def _logistic_rule(primals_in: Sequence[Any], series_in: Sequence[Series], **_: Any
                   ) -> tuple[Any, Series]:
  """`v = logistic(u)` solves `v' = e u'` with `e = v (1 - v)`, whose coefficients follow
  from those of `v` built so far."""
  (x,), (terms,) = primals_in, series_in
  u, v = [x, *terms], [lax.logistic(x)]
  e = [v[0] * (1 - v[0])]
  for k in range(1, len(u)):
    v.append(integrate_term(k, e, u))
    e.append((1 - v[0]) * v[k] - sum(v[j] * v[k - j] for j in range(1, k + 1)))
  return v[0], v[1:]


jet_rules[lax.logistic_p] = _logistic_rule


def _tanh_rule(primals_in: Sequence[Any], series_in: Sequence[Series], **_: Any
               ) -> tuple[Any, Series]:
  """`tanh(x) = 2 logistic(2x) - 1`."""
  (x,), (terms,) = primals_in, series_in
  s0, s_terms = _logistic_rule((2 * x,), ([2 * t for t in terms],))
  return 2 * s0 - 1, [2 * t for t in s_terms]


jet_rules[lax.tanh_p] = _tanh_rule


# ----------------------------------------------------------------------------- sin/cos, sinh/cosh


def _sine_cosine_series(sin: Callable, cos: Callable, sign: int, x: Any, terms: Series
                        ) -> tuple[Series, Series]:
  """`s = sin(u)`, `c = cos(u)` solve `s' = c u'`, `c' = sign s u'` (sign -1: circular,
  +1: hyperbolic), built together."""
  u, s, c = [x, *terms], [sin(x)], [cos(x)]
  for k in range(1, len(u)):
    s.append(integrate_term(k, c, u))
    c.append(integrate_term(k, s, u) * sign)
  return s, c


def _sinusoid_rule(sin: Callable, cos: Callable, sign: int, want_cos: bool,
                   primals_in: Sequence[Any], series_in: Sequence[Series], **_: Any
                   ) -> tuple[Any, Series]:
  s, c = _sine_cosine_series(sin, cos, sign, primals_in[0], series_in[0])
  out = c if want_cos else s
  return out[0], out[1:]


jet_rules[lax.sin_p] = partial(_sinusoid_rule, lax.sin, lax.cos, -1, False)
jet_rules[lax.cos_p] = partial(_sinusoid_rule, lax.sin, lax.cos, -1, True)
jet_rules[lax.sinh_p] = partial(_sinusoid_rule, lax.sinh, lax.cosh, 1, False)
jet_rules[lax.cosh_p] = partial(_sinusoid_rule, lax.sinh, lax.cosh, 1, True)


# ----------------------------------------------------------------------------- products


def _bilinear_rule(prim: core.Primitive, primals_in: Sequence[Any],
                   series_in: Sequence[Series], **params: Any) -> tuple[Any, Series]:
  """The Cauchy product: `v_k = sum_j prim(u_j, w_{k-j})`."""
  (x, y), (x_terms, y_terms) = primals_in, series_in
  u, w = [x, *x_terms], [y, *y_terms]
  v = [sum(prim.bind(u[j], w[k - j], **params) for j in range(k + 1))
       for k in range(len(u))]
  return v[0], v[1:]


def _div_rule(primals_in: Sequence[Any], series_in: Sequence[Series]) -> tuple[Any, Series]:
  """`v = u / w` from `v w = u`: `v_k = (u_k - sum_{j<k} v_j w_{k-j}) / w_0`."""
  (x, y), (x_terms, y_terms) = primals_in, series_in
  u, w = [x, *x_terms], [y, *y_terms]
  v: Series = []
  for k in range(len(u)):
    v.append((u[k] - sum(v[j] * w[k - j] for j in range(k))) / w[0])
  return v[0], v[1:]


for _prim in (lax.mul_p, lax.dot_general_p, lax.conv_general_dilated_p):
  jet_rules[_prim] = partial(_bilinear_rule, _prim)
jet_rules[lax.div_p] = _div_rule


# ----------------------------------------------------------------------------- piecewise


def _abs_rule(primals_in: Sequence[Any], series_in: Sequence[Series]) -> tuple[Any, Series]:
  (x,), (terms,) = primals_in, series_in
  sign = lax.select(lax.lt(x, lax.full_like(x, 0, shape=())), lax.full_like(x, -1),
                    lax.full_like(x, 1))
  return lax.abs(x), [sign * t for t in terms]


jet_rules[lax.abs_p] = _abs_rule


def _select_n_rule(primals_in: Sequence[Any], series_in: Sequence[Series]
                   ) -> tuple[Any, Series]:
  """The predicate's series is ignored: it selects, it is not differentiated."""
  which, *cases = primals_in
  series_out = [lax.select_n(which, *case_terms) for _, *case_terms in zip(*series_in)]
  return lax.select_n(which, *cases), series_out


jet_rules[lax.select_n_p] = _select_n_rule


def _extremum_rule(prefer_first: Callable) -> Callable:
  """max/min: the series of the chosen operand; where the operands tie, their average (the
  symmetric choice `jvp` makes too). Operands broadcast (a scalar bound)."""
  def rule(primals_in: Sequence[Any], series_in: Sequence[Series]) -> tuple[Any, Series]:
    x, y = jnp.broadcast_arrays(*primals_in)
    first, tie = prefer_first(x, y), lax.eq(x, y)

    def choose(x_k: Any, y_k: Any) -> Any:
      x_k, y_k = jnp.broadcast_arrays(x_k, y_k)
      return lax.select(tie, (x_k + y_k) / 2, lax.select(first, x_k, y_k))
    return lax.select(first, x, y), [choose(*terms) for terms in zip(*series_in)]
  return rule


jet_rules[lax.max_p] = _extremum_rule(lax.gt)
jet_rules[lax.min_p] = _extremum_rule(lax.lt)


def _reduce_extremum_rule(prim: core.Primitive) -> Callable:
  """reduce_max/min: each output term averages the terms at the positions that attain the
  extremum."""
  def rule(primals_in: Sequence[Any], series_in: Sequence[Series], *, axes: tuple[int, ...]
           ) -> tuple[Any, Series]:
    (operand,), (terms,) = primals_in, series_in
    primal_out = prim.bind(operand, axes=axes)
    kept_shape = [1 if i in axes else d for i, d in enumerate(core.get_aval(operand).shape)]
    attains = lax.eq(operand, lax.reshape(primal_out, kept_shape))
    weights = lax.convert_element_type(attains, core.get_aval(terms[0]).dtype)
    counts = lax.reduce_sum(weights, axes)
    return primal_out, [lax.div(lax.reduce_sum(lax.mul(t, weights), axes), counts)
                        for t in terms]
  return rule


jet_rules[lax.reduce_max_p] = _reduce_extremum_rule(lax.reduce_max_p)
jet_rules[lax.reduce_min_p] = _reduce_extremum_rule(lax.reduce_min_p)


# ----------------------------------------------------------------------------- jit


@caches.lru_cache(maxsize=1024)
def _jet_jaxpr(jaxpr: core.ClosedJaxpr, order: int, in_avals: tuple[core.ShapedArray, ...],
               in_tree: Any) -> tuple[core.ClosedJaxpr, Any]:
  """`jaxpr` taken through `jet`: flat (primals, series) in, flat (primals, series) out."""
  inner = lu.wrap_init(core.jaxpr_as_fun(jaxpr))
  flat_jet, out_tree = traceable(jet_fun(jet_subtrace(inner), order), in_tree)
  return pe.trace_to_closed_jaxpr(flat_jet.call_wrapped, list(in_avals)), out_tree()


def _pjit_rule(primals_in: Sequence[Any], series_in: Sequence[Series], *,
               jaxpr: core.ClosedJaxpr, name: str, in_shardings: tuple | None = None,
               out_shardings: tuple | None = None) -> tuple[Any, Any]:
  """A jitted function stays one jitted call, of its jet; the terms are left unsharded."""
  order = len(series_in[0])
  flat, in_tree = tree_flatten((list(primals_in), series_in))
  jet_jaxpr, out_tree = _jet_jaxpr(jaxpr, order, tuple(map(core.get_aval, flat)), in_tree)
  n_in, n_out = len(primals_in), len(jaxpr.out_avals)
  ins = (in_shardings or (UNSPECIFIED,) * n_in) + (UNSPECIFIED,) * (n_in * order)
  outs = (out_shardings or (UNSPECIFIED,) * n_out) + (UNSPECIFIED,) * (n_out * order)
  results = pjit_p.bind(*flat, jaxpr=jet_jaxpr, name=name, **sharding_params(ins, outs))
  return tree_unflatten(out_tree, results)


jet_rules[pjit_p] = _pjit_rule
