"""Taylor-mode automatic differentiation: `jet` (JAX's `jax.experimental.jet`).

`jet(f, primals, series)` pushes a truncated Taylor polynomial through `f` in one pass, at
a cost polynomial in its degree K, where K nested `jvp`s cost time exponential in K.
A `JetTracer` holds a value's primal and its higher coefficients; each primitive's rule in
`jet_rules` maps the input polynomials to the output polynomial.

Inside the trace the coefficients are the plain Taylor coefficients (the k-th is the k-th
derivative divided by k!), which makes the rules simple convolutions: a product's k-th
coefficient is `sum(u[j] * w[k - j])`. `jet` converts from and to the factorial-scaled
derivatives users pass (`jet2` takes and returns the plain coefficients).

Symbolic zeros keep constants cheap: a value the inputs do not reach has the series
`zero_series`, and a primitive whose operands all have it runs on its primals alone. The
rules themselves live in `jet_primitive_rules.py`; this module holds the transformation and
the helpers that define families of rules.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jaxon.lax as lax
import jaxon.numpy as jnp
from jaxon._src import core
from jaxon._src import linear_util as lu
from jaxon._src.tree_util import (register_pytree_node, tree_flatten, tree_structure,
                                  tree_unflatten, treedef_is_leaf)
from jaxon._src.util import safe_zip, unzip2


def jet(fun: Callable, primals: Sequence[Any], series: Sequence[Sequence[Any]],
        factorial_scaled: bool = True, **_: Any) -> tuple[Any, Any]:
  r"""Taylor-mode higher-order automatic differentiation.

  Given the Taylor coefficients of a curve ``h`` at a point (``primals`` is ``h(0)``,
  ``series`` its derivatives ``h'(0), h''(0), ...`` along the curve), returns those of
  ``fun(h(t))``: its value and its first ``K`` derivatives, ``K = len(series[i])``. With
  ``series = ((v, 0, ..., 0),)`` the k-th output term is the k-th directional derivative
  of ``fun`` along ``v``.

  Args:
    fun: the function; its arguments are arrays or scalars, its output any pytree of them.
    primals: a tuple or list with one array per positional argument of ``fun``.
    series: a tuple or list with, for each argument, a tuple or list of its ``K`` higher
      terms (arrays of the argument's shape). Every argument has the same ``K``.
    factorial_scaled: if True (the default) the k-th input and output terms are k-th
      derivatives; if False they are plain Taylor coefficients (derivatives over k!).

  Returns:
    ``(primals_out, series_out)``: ``fun(*primals)``, and for each of its output leaves the
    list of its ``K`` terms, both in the structure of ``fun``'s output.

  Raises:
    ValueError: the arguments have series of different lengths, or a primal or a term is a
      container rather than an array.
    NotImplementedError: ``fun`` applies a primitive that has no Taylor rule (loops and
      conditionals among them).

  Example:
    >>> primal, (d1, d2) = jet(jnp.sin, (0.5,), ((1.0, 0.0),))
    >>> print(d1, d2)  # cos(0.5), -sin(0.5), to float32 rounding
    0.87758255 -0.47942567
  """
  if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
    raise TypeError("jet expects primals and series to be tuples or lists (one entry per "
                    f"argument), got {type(primals).__name__} and {type(series).__name__}")
  if len(primals) != len(series):
    raise TypeError(f"jet got {len(primals)} primals but series for {len(series)} "
                    "arguments: give one tuple of terms per primal")
  try:
    order, = set(map(len, series))
  except ValueError:
    raise ValueError("jet terms have inconsistent lengths for different arguments") from None
  for i, (x, terms) in enumerate(zip(primals, series)):
    if not treedef_is_leaf(tree_structure(x)):
      raise ValueError(f"primal value at position {i} is not an array")
    for j, t in enumerate(terms):
      if not treedef_is_leaf(tree_structure(t)):
        raise ValueError(f"term {j} for argument {i} is not an array")

  f, out_tree = _flatten_fun_output(lu.wrap_init(fun))
  if factorial_scaled:
    series = [[t / fact(k + 1) for k, t in enumerate(terms)] for terms in series]
  out_primals, out_terms = jet_fun(jet_subtrace(f), order).call_wrapped(primals, series)
  if factorial_scaled:
    out_terms = [[t * fact(k + 1) for k, t in enumerate(terms)] for terms in out_terms]
  return tree_unflatten(out_tree(), out_primals), tree_unflatten(out_tree(), out_terms)


jet2 = partial(jet, factorial_scaled=False)


def fact(n: Any) -> Any:
  """`n!` as a float, through the gamma function, as JAX computes it (so the scaling of
  `jet`'s terms rounds as JAX's does)."""
  return lax.exp(lax.lgamma(n + 1.))


@lu.transformation_with_aux2
def _flatten_fun_output(f: Callable, store: lu.Store, *args: Any) -> list[Any]:
  leaves, tree = tree_flatten(f(*args))
  store.store(tree)
  return leaves


@lu.transformation2
def jet_fun(f: Callable, order: int, primals: Sequence[Any],
            series: Sequence[Sequence[Any]]) -> tuple[Sequence[Any], list[Any]]:
  """Runs `f` (a `jet_subtrace`) under a fresh tag; outputs the inputs do not reach get
  explicit zero terms."""
  out_primals, out_terms = f(object(), order, primals, series)
  out_terms = [[jnp.zeros_like(p)] * order if s is zero_series else s
               for p, s in zip(out_primals, out_terms)]
  return out_primals, out_terms


@lu.transformation2
def jet_subtrace(f: Callable, tag: object, order: int, primals: Sequence[Any],
                 series: Sequence[Sequence[Any]]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
  """Runs `f` (flat outputs) on `JetTracer`s of a new `JetTrace` over the current trace."""
  trace = JetTrace(tag, core.current_trace(), order)
  in_tracers = [JetTracer(trace, p, list(s)) for p, s in zip(primals, series)]
  try:
    with core.set_current_trace(trace):
      ans = f(*in_tracers)
    return unzip2(map(trace.to_primal_terms_pair, ans))
  finally:
    trace.invalidate()


@lu.transformation_with_aux2
def traceable(f: Callable, store: lu.Store, in_tree_def: Any, *primals_and_series: Any
              ) -> list[Any]:
  """`f(primals, series)` on the flat leaves of `(primals, series)`: how a jaxpr is
  traced through `jet` (the output structure goes to the store)."""
  primals_in, series_in = tree_unflatten(in_tree_def, primals_and_series)
  out_flat, out_tree_def = tree_flatten(f(primals_in, series_in))
  store.store(out_tree_def)
  return out_flat


class ZeroTerm:
  """The type of `zero_term`, one term known to be zero."""


zero_term = ZeroTerm()
register_pytree_node(ZeroTerm, lambda z: ((), None), lambda _, xs: zero_term)


class ZeroSeries:
  """The type of `zero_series`: every term of a value's series is zero (a constant)."""


zero_series = ZeroSeries()
register_pytree_node(ZeroSeries, lambda z: ((), None), lambda _, xs: zero_series)


class JetTracer(core.Tracer):
  """A value inside `jet`: its primal and its higher Taylor coefficients (`terms`, a list,
  or `zero_series`)."""

  __slots__ = ("primal", "terms")

  def __init__(self, trace: JetTrace, primal: Any, terms: Any):
    if not (terms is zero_series or type(terms) in (list, tuple)):
      raise TypeError(f"JetTracer terms must be a list or zero_series, got {terms!r}")
    self._trace = trace
    self.primal = primal
    self.terms = terms

  @property
  def aval(self) -> core.ShapedArray:
    return core.get_aval(self.primal)


class JetTrace(core.Trace):
  """Propagates truncated Taylor series of `order` terms; its tracers are those with its
  `tag`, everything else is a constant (zero series)."""

  def __init__(self, tag: object, parent_trace: core.Trace, order: int):
    super().__init__()
    self.tag = tag
    self.parent_trace = parent_trace
    self.order = order

  def to_primal_terms_pair(self, val: Any) -> tuple[Any, Any]:
    if isinstance(val, JetTracer) and val._trace.tag is self.tag:
      return val.primal, val.terms
    self.check_not_escaped(val)
    return val, zero_series

  def process_primitive(self, primitive: core.Primitive, args: Sequence[Any],
                        params: dict) -> Any:
    primals_in, series_in = unzip2(map(self.to_primal_terms_pair, args))
    if all(s is zero_series for s in series_in):
      return primitive.bind_with_trace(self.parent_trace, primals_in, params)
    rule = jet_rules.get(primitive)
    if rule is None:
      raise NotImplementedError(
          f"Jet rule (Taylor-mode differentiation) for '{primitive.name}' not implemented: "
          "jet supports elementwise math, linear and indexing operations and nested jit, "
          "not control flow; register a rule in jaxon.experimental.jet.jet_rules")
    with core.set_current_trace(self.parent_trace):
      series_in = [self._instantiate_zeros(x, s) for x, s in zip(primals_in, series_in)]
      primal_out, terms_out = rule(primals_in, series_in, **params)
    if primitive.multiple_results:
      return [JetTracer(self, p, ts) for p, ts in zip(primal_out, terms_out)]
    return JetTracer(self, primal_out, terms_out)

  def _instantiate_zeros(self, primal: Any, series: Any) -> list[Any]:
    """The series as `order` arrays: rules see no symbolic zeros. A zero term is typed as
    its primal, weak type included (JAX's terms come out weak where its `jnp` functions,
    jitted, pass weak constants through `convert_element_type`)."""
    if series is zero_series:
      series = [zero_term] * self.order
    return [jnp.zeros_like(primal) if t is zero_term else t for t in series]

  # A function with a custom derivative is expanded through its own definition: a custom
  # rule gives only the first derivative.
  def process_custom_jvp_call(self, primitive: core.Primitive, fun: Callable, jvp: Callable,
                              args: Sequence[Any], symbolic_zeros: bool) -> list[Any]:
    with core.set_current_trace(self):
      return fun(*args)

  def process_custom_vjp_call(self, primitive: core.Primitive, fun: Callable, fwd: Callable,
                              bwd: Callable, args: Sequence[Any], symbolic_zeros: bool
                              ) -> list[Any]:
    with core.set_current_trace(self):
      return fun(*args)


# ----------------------------------------------------------------------------- rule families
# `jet_rules[primitive](primals_in, series_in, **params) -> (primal_out, series_out)`: the
# series are lists of plain Taylor coefficients (no symbolic zeros); a rule may answer
# `zero_series` for an output the perturbation cannot reach.

jet_rules: dict[core.Primitive, Callable] = {}


def defzero(prim: core.Primitive) -> None:
  """`prim`'s output is locally constant in its operands (comparisons, rounding)."""
  jet_rules[prim] = partial(zero_prop, prim)


def zero_prop(prim: core.Primitive, primals_in: Sequence[Any], series_in: Sequence[Any],
              **params: Any) -> tuple[Any, ZeroSeries]:
  return prim.bind(*primals_in, **params), zero_series


def deflinear(prim: core.Primitive) -> None:
  """`prim` is linear in its operands jointly: each coefficient maps on its own."""
  jet_rules[prim] = partial(linear_prop, prim)


def linear_prop(prim: core.Primitive, primals_in: Sequence[Any], series_in: Sequence[Any],
                **params: Any) -> tuple[Any, Any]:
  primal_out = prim.bind(*primals_in, **params)
  series_out = [prim.bind(*terms_in, **params) for terms_in in zip(*series_in)]
  if prim.multiple_results:
    series_out = safe_zip(*series_out)
  return primal_out, series_out


def def_deriv(prim: core.Primitive, deriv: Callable) -> None:
  """The rule of a unary `prim` from its first derivative `deriv` (itself expanded by
  `jet`)."""
  jet_rules[prim] = partial(deriv_prop, prim, deriv)


def deriv_prop(prim: core.Primitive, deriv: Callable, primals_in: Sequence[Any],
               series_in: Sequence[Any]) -> tuple[Any, list[Any]]:
  (x,), (terms,) = primals_in, series_in
  c0, c_terms = jet2(deriv, primals_in, series_in)
  return chain_rule_series(prim.bind(x), [c0, *c_terms], [x, *terms])


def def_comp(prim: core.Primitive, comp: Callable, **kwargs: Any) -> None:
  """The rule of `prim` from `comp`, the same function written with primitives that have
  rules."""
  jet_rules[prim] = partial(jet2, comp, **kwargs)


def chain_rule_series(v0: Any, c: Sequence[Any], u: Sequence[Any]) -> tuple[Any, list[Any]]:
  """The coefficients of `v = f(u)` from `v0 = f(u0)` and those of `c = f'(u)`: from
  `v' = c u'`, `v_k = (1/k) sum_{j=1..k} j u_j c_{k-j}` (only `c_0..c_{K-1}` are read)."""
  v = [v0]
  for k in range(1, len(u)):
    v.append(integrate_term(k, c, u))
  return v[0], v[1:]


def integrate_term(k: int, c: Sequence[Any], u: Sequence[Any]) -> Any:
  """The k-th coefficient of `v` where `v' = c u'` (k >= 1): `c` may be the series being
  built (exp: `c = v`), since only its first k coefficients are read."""
  return sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k


from jaxon._src import jet_primitive_rules as _jet_primitive_rules  # noqa: E402,F401 (registers the rules)
