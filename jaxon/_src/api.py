"""The user-facing transformations: `make_jaxpr`, autodiff, `vmap`, and `jit` (which lives in
`jit.py`, re-exported here). Device queries and placement are in `devices.py`."""
from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from jaxon._src import caches, core, dtypes, traceback_util, tree_util
from jaxon._src.core import ClosedJaxpr, ShapedArray
from jaxon._src.interpreters import ad, batching
from jaxon._src.interpreters import partial_eval as pe
from jaxon._src.jit import (PjitFunction as PjitFunction, ShapeDtypeStruct as ShapeDtypeStruct,
                            abstractify, flatten_fun, jit as jit)
from jaxon._src.xla import executable
from jaxon._src.xla.array import Array


def clear_caches() -> None:
  """Empties every cache of traced and compiled programs: jitted functions' signatures,
  executables, transformed jaxprs, control-flow bodies and eager operations. The next call
  of anything traces and compiles again."""
  caches.clear_all()


# ----------------------------------------------------------------------------- make_jaxpr


@traceback_util.api_boundary
def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[Hashable, int]] | None = None,
               return_shape: bool = False) -> Callable[..., Any]:
  """A function that returns the jaxpr of `fun` traced at the given arguments.

  Example:
    >>> print(make_jaxpr(jnp.sin)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
  """
  static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def make_jaxpr_f(*args: Any, **kwargs: Any) -> Any:
    try:
      static_vals = {i: args[i] for i in static if i < len(args)}
      dyn_args = tuple(a for i, a in enumerate(args) if i not in static_vals)

      def with_statics(*dyn: Any, **kw: Any) -> Any:
        full = list(dyn)
        for i in sorted(static_vals):
          full.insert(i, static_vals[i])
        return fun(*full, **kw)
      leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
      out_tree_store: list = []
      avals = [abstractify(x) for x in leaves]
      with core.extend_axis_env(axis_env or ()):  # names collectives may refer to
        jaxpr, consts = pe.trace_to_jaxpr(flatten_fun(with_statics, in_tree, out_tree_store),
                                          avals)
      closed = ClosedJaxpr(jaxpr, consts)
      if return_shape:
        shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
        return closed, out_tree_store[0].unflatten(shapes)
      return closed
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return make_jaxpr_f


@traceback_util.api_boundary
def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
  """The shapes and dtypes `fun` would return, computed without running it."""
  closed, shapes = make_jaxpr(fun, return_shape=True)(*args, **kwargs)
  return shapes


# ----------------------------------------------------------------------------- autodiff


def _check_input_dtype(x: Any, argnum: int, holomorphic: bool, allow_int: bool,
                       transform: str) -> None:
  dt = core.get_aval(x).dtype
  if holomorphic and not dtypes.is_complex(dt):
    raise TypeError(f"{transform} with holomorphic=True requires inputs with complex dtype, "
                    f"but argument {argnum} has dtype {dt.name}.")
  if not allow_int and not dtypes.is_inexact(dt):
    raise TypeError(f"{transform} requires real- or complex-valued inputs (input dtype that "
                    f"is a sub-dtype of np.inexact), but argument {argnum} has dtype "
                    f"{dt.name}. If you want to use Boolean- or integer-valued inputs, use "
                    "vjp or set allow_int to True.")


def _check_input_dtype_jacfwd(x: Any, argnum: int, holomorphic: bool) -> None:
  """Forward mode pushes real tangents unless promised holomorphic, so complex inputs are
  refused too (reverse mode accepts them)."""
  dt = core.get_aval(x).dtype
  if not holomorphic and dtypes.is_complex(dt):
    raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                    f"np.floating), but argument {argnum} has dtype {dt.name}. For "
                    "holomorphic differentiation, pass holomorphic=True. For non-holomorphic "
                    "functions of complex inputs, use jvp directly.")
  _check_input_dtype(x, argnum, holomorphic, False, "jacfwd")


def _argnums_partial(fun: Callable, argnums: int | Sequence[int], args: tuple, kwargs: dict,
                     check_leaf: Callable[[Any, int], None]) -> tuple[Callable, tuple]:
  """`fun` as a function of `args[argnums]` only (the other arguments fixed), and those
  arguments; `check_leaf(leaf, argnum)` vets each of their leaves for differentiation."""
  nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
  for n in nums:
    if not -len(args) <= n < len(args):
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at "
                      f"least {n + 1} positional arguments, got {len(args)}")
  nums = tuple(n % len(args) for n in nums)
  dyn = tuple(args[n] for n in nums)
  for n, x in zip(nums, dyn):
    for leaf in tree_util.tree_leaves(x):
      check_leaf(leaf, n)

  def partial_fun(*dyn_args: Any) -> Any:
    full = list(args)
    for n, a in zip(nums, dyn_args):
      full[n] = a
    return fun(*full, **kwargs)
  return partial_fun, dyn


@traceback_util.api_boundary
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> Any:
  """Forward mode: `(fun(*primals), J·tangents)`.

  Example:
    >>> jvp(jnp.sin, (0.0,), (1.0,))
    (Array(0., dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
  """
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("jvp expects primals and tangents to be tuples or lists of arguments, "
                    f"got {type(primals).__name__} and {type(tangents).__name__}")
  flat_primals, in_tree = tree_util.tree_flatten((tuple(primals), {}))
  flat_tangents, tangent_tree = tree_util.tree_flatten((tuple(tangents), {}))
  if in_tree != tangent_tree:
    raise TypeError(f"primal and tangent arguments to jvp must have the same tree structure; "
                    f"primals have tree structure {in_tree} whereas tangents have {tangent_tree}")
  for p, t in zip(flat_primals, flat_tangents):
    p_aval, t_aval = core.get_aval(p), core.get_aval(t)
    if p_aval.to_tangent_aval().dtype != t_aval.dtype:
      raise TypeError(f"primal and tangent arguments to jvp must have matching tangent "
                      f"dtypes; got primal {p_aval.str_short()} with tangent "
                      f"{t_aval.str_short()} (expected tangent dtype "
                      f"{p_aval.to_tangent_aval().dtype.name})")
    if p_aval.shape != t_aval.shape:
      raise ValueError(f"jvp called with different primal and tangent shapes; got primal "
                       f"shape {p_aval.shape} and tangent shape {t_aval.shape}")
  out_tree_store: list = []
  flat_fun = flatten_fun(_checked_aux(fun) if has_aux else fun, in_tree, out_tree_store)
  primal_outs, tangent_outs = ad.jvp_flat(flat_fun, flat_primals, flat_tangents)
  tangent_outs = [ad.instantiate_zeros(t) for t in tangent_outs]
  out_tree = out_tree_store[0]
  if has_aux:
    return _split_aux(out_tree, primal_outs, tangent_outs)
  return out_tree.unflatten(primal_outs), out_tree.unflatten(tangent_outs)


def _checked_aux(fun: Callable) -> Callable:
  """`fun`, checked to return the `(output, aux)` pair that has_aux promises: splitting any
  other output would pair up the wrong leaves."""
  @functools.wraps(fun)
  def fun_with_aux(*args: Any, **kwargs: Any) -> Any:
    out = fun(*args, **kwargs)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"expected function with aux output to return a two-element tuple, "
                      f"but got type {type(out)} with value {out!r}")
    return out
  return fun_with_aux


def _split_aux(out_tree: tree_util.PyTreeDef, primal_outs: list, tangent_outs: list) -> tuple:
  main_tree, aux_tree = out_tree.children()
  n = main_tree.num_leaves
  return (main_tree.unflatten(primal_outs[:n]), main_tree.unflatten(tangent_outs[:n]),
          aux_tree.unflatten(primal_outs[n:]))


@traceback_util.api_boundary
def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
  """`(fun(*primals), f_jvp)` where `f_jvp(*tangents)` evaluates the linearized function."""
  flat_primals, in_tree = tree_util.tree_flatten((primals, {}))
  out_tree_store: list = []
  flat_fun = flatten_fun(_checked_aux(fun) if has_aux else fun, in_tree, out_tree_store)
  primal_outs, jaxpr, residuals, _ = ad.linearize_flat(flat_fun, flat_primals)
  primal_avals = [core.get_aval(p) for p in flat_primals]
  out_tree = out_tree_store[0]
  n_main = out_tree.children()[0].num_leaves if has_aux else len(primal_outs)

  @traceback_util.inline_api_boundary
  def f_jvp(*tangents: Any) -> Any:
    try:
      flat_tangents, tangent_tree = tree_util.tree_flatten((tangents, {}))
      if tangent_tree != in_tree:
        raise TypeError(f"linearized function expected tangents of tree structure {in_tree}, "
                        f"got {tangent_tree}")
      for t, p_aval in zip(flat_tangents, primal_avals):
        t_aval, want = core.get_aval(t), p_aval.to_tangent_aval()
        if (t_aval.shape, t_aval.dtype) != (want.shape, want.dtype):
          raise ValueError("linearized function called on tangent values inconsistent with "
                           f"the original primal values: got tangent aval "
                           f"{t_aval.str_short(short_dtypes=False)} for primal aval "
                           f"{p_aval.str_short(short_dtypes=False)} but expected "
                           f"{want.str_short(short_dtypes=False)}.")
      outs = core.eval_jaxpr(jaxpr, residuals, *flat_tangents)
      return (out_tree.children()[0] if has_aux else out_tree).unflatten(outs[:n_main])
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  if has_aux:
    main_tree, aux_tree = out_tree.children()
    return (main_tree.unflatten(primal_outs[:n_main]), f_jvp,
            aux_tree.unflatten(primal_outs[n_main:]))
  return out_tree.unflatten(primal_outs), f_jvp


@traceback_util.api_boundary
def vjp(fun: Callable, *primals: Any, has_aux: bool = False,
        reduce_axes: Sequence[Hashable] = ()) -> Any:
  """Reverse mode: `(fun(*primals), f_vjp)` where `f_vjp(cotangent)` returns the
  cotangents of `primals` (a tuple)."""
  _refuse_reduce_axes(reduce_axes)
  flat_primals, in_tree = tree_util.tree_flatten((primals, {}))
  out_tree_store: list = []
  flat_fun = flatten_fun(_checked_aux(fun) if has_aux else fun, in_tree, out_tree_store)
  primal_outs, jaxpr, residuals, tangent_avals = ad.linearize_flat(flat_fun, flat_primals)
  out_tree = out_tree_store[0]
  main_tree = out_tree.children()[0] if has_aux else out_tree
  n_main = main_tree.num_leaves
  primal_in_avals = [core.get_aval(p) for p in flat_primals]
  undefined_primals = [ad.UndefinedPrimal(v.aval) for v in jaxpr.invars]

  @traceback_util.inline_api_boundary
  def f_vjp(cotangent: Any) -> tuple:
    try:
      flat_cts, ct_tree = tree_util.tree_flatten(cotangent)
      if ct_tree != main_tree:
        raise ValueError(f"unexpected tree structure of the cotangent passed to the vjp "
                         f"function: got {ct_tree}, but the differentiated function's output "
                         f"has tree structure {main_tree}")
      for ct, aval in zip(flat_cts, tangent_avals):
        ct_aval = core.get_aval(ct)
        if ct_aval.shape != aval.shape:
          raise ValueError(f"Shape of cotangent input to vjp pullback function "
                           f"{ct_aval.shape} must be the same as the shape of corresponding "
                           f"primal input {aval.shape}.")
        # an integer output's cotangent is unused, so any dtype will do there (as in JAX)
        if aval.dtype != dtypes.float0 and ct_aval.dtype != aval.dtype:
          raise ValueError(f"unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                           f"function: got {ct_aval.str_short(short_dtypes=False)}, but "
                           f"expected {aval.str_short(short_dtypes=False)} because the "
                           "corresponding output of the differentiated function had that "
                           "type")
      cts_out = list(flat_cts) + [ad.Zero(a) for a in tangent_avals[n_main:]]
      cts_in = ad.backward_pass(jaxpr, residuals, undefined_primals, cts_out)
      cts_in = [_materialize_cotangent(ct, aval) for ct, aval in zip(cts_in, primal_in_avals)]
      args_cts, _ = in_tree.unflatten(cts_in)
      return args_cts
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  if has_aux:
    aux_tree = out_tree.children()[1]
    return (main_tree.unflatten(primal_outs[:n_main]), f_vjp,
            aux_tree.unflatten(primal_outs[n_main:]))
  return out_tree.unflatten(primal_outs), f_vjp


def _materialize_cotangent(ct: Any, primal_aval: ShapedArray) -> Any:
  """A cotangent as an array of the primal's tangent type. A function that returns an
  input unchanged hands back the seed cotangent itself, a host constant: it becomes an
  Array too, as JAX's."""
  tangent_aval = primal_aval.to_tangent_aval()
  if type(ct) is ad.Zero:
    return ad.zeros_like_aval(tangent_aval)
  if isinstance(ct, (core.Tracer, Array)) or tangent_aval.dtype == dtypes.float0:
    return ct
  if tangent_aval.weak_type:
    return executable.device_put(ct)
  return executable.device_put(np.asarray(ct, tangent_aval.dtype))


@traceback_util.api_boundary
def _vjp_of_argnums(fun: Callable, argnums: int | Sequence[int], args: tuple, kwargs: dict,
                    has_aux: bool, holomorphic: bool, allow_int: bool, transform: str
                    ) -> tuple[Any, Callable, Any, tuple]:
  """`vjp` of `fun` with respect to `args[argnums]` (checked for `transform`): the output,
  the pullback, the aux value (None without `has_aux`) and the differentiated arguments."""
  partial_fun, dyn = _argnums_partial(
      fun, argnums, args, kwargs, functools.partial(
          _check_input_dtype, holomorphic=holomorphic, allow_int=allow_int,
          transform=transform))
  if has_aux:
    out, pullback, aux = vjp(partial_fun, *dyn, has_aux=True)
    return out, pullback, aux, dyn
  out, pullback = vjp(partial_fun, *dyn)
  return out, pullback, None, dyn


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: Sequence[Hashable] = ()) -> Callable:
  """A function returning `(fun(*args), grad of fun w.r.t. args[argnums])`; `fun` must
  return a real scalar (or a complex one with holomorphic=True)."""
  _refuse_reduce_axes(reduce_axes)
  single = isinstance(argnums, int)

  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
    try:
      out, f_vjp, aux, _ = _vjp_of_argnums(fun, argnums, args, kwargs, has_aux, holomorphic,
                                           allow_int, "grad")
      _check_scalar_output(out, holomorphic)
      ones = tree_util.tree_map(_one_like, out)
      grads = f_vjp(ones)
      grads = grads[0] if single else tuple(grads)
      return ((out, aux), grads) if has_aux else (out, grads)
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return value_and_grad_f


def _one_like(x: Any) -> Any:
  """The seed cotangent 1 for a scalar output: a constant (it stages as a literal) with the
  output's dtype and weak type."""
  aval = core.get_aval(x)
  if aval.weak_type:
    return complex(1) if dtypes.is_complex(aval.dtype) else 1.0
  return np.ones((), aval.dtype)


def _check_scalar_output(out: Any, holomorphic: bool) -> None:
  leaves = tree_util.tree_leaves(out)
  if len(leaves) != 1 or core.get_aval(leaves[0]).shape != ():
    shape = core.get_aval(leaves[0]).shape if len(leaves) == 1 else f"a pytree {out!r}"
    raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                    f"{shape}.")
  dt = core.get_aval(leaves[0]).dtype
  if not holomorphic and not dtypes.is_float(dt):
    raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
                    "holomorphic=True. For differentiation of non-holomorphic functions "
                    "involving complex outputs, use jax.vjp directly.")


@traceback_util.api_boundary
def _refuse_reduce_axes(reduce_axes: Sequence[Hashable]) -> None:
  """JAX keeps `reduce_axes` in its signatures only to refuse it (it was removed)."""
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to grad is deprecated")


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False,
         reduce_axes: Sequence[Hashable] = ()) -> Callable:
  """The gradient of scalar-valued `fun` with respect to `args[argnums]`.

  Example:
    >>> grad(jnp.tanh)(1.0)
    Array(0.41997433, dtype=float32, weak_type=True)
  """
  value_and_grad_f = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int,
                                    reduce_axes)

  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def grad_f(*args: Any, **kwargs: Any) -> Any:
    try:
      if has_aux:
        (_, aux), g = value_and_grad_f(*args, **kwargs)
        return g, aux
      _, g = value_and_grad_f(*args, **kwargs)
      return g
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return grad_f


def _std_basis(leaves: Sequence[Any]) -> list[np.ndarray]:
  """The standard basis of the flattened space of `leaves`, one block per leaf: leaf i gets
  an array of shape (N,) + leaf.shape, N the total number of elements."""
  avals = [core.get_aval(x) for x in leaves]
  sizes = [int(np.prod(a.shape)) for a in avals]
  total = sum(sizes)
  blocks, start = [], 0
  for aval, size in zip(avals, sizes):
    block = np.eye(total, size, -start, dtype=aval.to_tangent_aval().dtype)
    blocks.append(block.reshape((total,) + aval.shape))
    start += size
  return blocks


def _split_jacobian_axis(jac: Any, axis: int, avals: Sequence[ShapedArray],
                         like: ShapedArray) -> list[Any]:
  """Splits the flattened axis `axis` of `jac` into one block per aval, each reshaped to the
  aval's shape and cast to the dtype and weak type of `like`: a Jacobian block has the type
  of its example (jacfwd: the output leaf; jacrev: the input), as in JAX, which also drops
  the imaginary part a real example cannot hold."""
  from jaxon._src.lax import lax, shape_ops, slicing
  shape = core.get_aval(jac).shape
  blocks, start = [], 0
  for aval in avals:
    size = int(np.prod(aval.shape))
    block_shape = shape[:axis] + aval.shape + shape[axis + 1:]
    if core.get_aval(jac).dtype == dtypes.float0:  # the derivative of an integer: zero
      blocks.append(ad.zeros_like_aval(ShapedArray(block_shape, like.dtype, like.weak_type)))
    else:
      block = slicing.slice_in_dim(jac, start, start + size, axis=axis)
      blocks.append(lax._convert_element_type(shape_ops.reshape(block, block_shape),
                                              like.dtype, like.weak_type))
    start += size
  return blocks


def _check_output_dtype(x: Any, holomorphic: bool, transform: str) -> None:
  dt = core.get_aval(x).dtype
  if holomorphic and not dtypes.is_complex(dt):
    raise TypeError(f"{transform} with holomorphic=True requires outputs with complex "
                    f"dtype, but got {dt.name}.")
  if not holomorphic and not dtypes.is_float(dt):
    raise TypeError(f"{transform} requires real-valued outputs (output dtype that is a "
                    f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex outputs, use vjp directly.")


@traceback_util.api_boundary
def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
  """The Jacobian of `fun` by forward mode: one JVP per input element, vectorized with
  vmap. Output leaves of shape S get Jacobian blocks of shape S + input shape.

  Example:
    >>> jacfwd(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
  """
  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def jacfwd_f(*args: Any, **kwargs: Any) -> Any:
    try:
      partial_fun, dyn = _argnums_partial(
          fun, argnums, args, kwargs,
          functools.partial(_check_input_dtype_jacfwd, holomorphic=holomorphic))
      flat_dyn, dyn_tree = tree_util.tree_flatten(dyn)

      def push_forward(*flat_tangents: Any) -> Any:
        tangents = dyn_tree.unflatten(flat_tangents)
        return jvp(partial_fun, dyn, tangents, has_aux=has_aux)
      outs = vmap(push_forward, out_axes=(None, -1, None) if has_aux else (None, -1))(
          *_std_basis(flat_dyn))
      y, jac = outs[0], outs[1]
      if holomorphic:
        for leaf in tree_util.tree_leaves(y):
          _check_output_dtype(leaf, holomorphic, "jacfwd")
      in_avals = [core.get_aval(x) for x in flat_dyn]

      def unravel(y_leaf: Any, j: Any) -> Any:
        y_aval = core.get_aval(y_leaf)
        blocks = _split_jacobian_axis(j, y_aval.ndim, in_avals, y_aval)
        return _unflatten_in_tree(blocks, dyn_tree, argnums)
      jac = tree_util.tree_map(unravel, y, jac)
      return (jac, outs[2]) if has_aux else jac
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return jacfwd_f


def _unflatten_in_tree(blocks: list[Any], dyn_tree: tree_util.PyTreeDef,
                       argnums: int | Sequence[int]) -> Any:
  """Jacobian blocks arranged like the differentiated arguments: the argument itself for
  an int `argnums`, a tuple of them otherwise."""
  tree = dyn_tree.unflatten(blocks)
  return tree[0] if isinstance(argnums, int) else tree


@traceback_util.api_boundary
def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
  """The Jacobian of `fun` by reverse mode: one VJP per output element, vectorized with
  vmap. Output leaves of shape S get Jacobian blocks of shape S + input shape.

  Example:
    >>> jacrev(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
  """
  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def jacrev_f(*args: Any, **kwargs: Any) -> Any:
    try:
      y, pullback, aux, dyn = _vjp_of_argnums(fun, argnums, args, kwargs, has_aux,
                                              holomorphic, allow_int, "jacrev")
      flat_y, y_tree = tree_util.tree_flatten(y)
      for leaf in flat_y:
        _check_output_dtype(leaf, holomorphic, "jacrev")

      def pull_back(*flat_cotangents: Any) -> Any:
        return pullback(y_tree.unflatten(flat_cotangents))
      flat_jac_by_input = tree_util.tree_leaves(vmap(pull_back)(*_std_basis(flat_y)))
      y_avals = [core.get_aval(x) for x in flat_y]
      blocks_by_input = [
          _split_jacobian_axis(j, 0, y_avals, core.get_aval(x))
          for j, x in zip(flat_jac_by_input, tree_util.tree_leaves(dyn))]
      dyn_tree = tree_util.tree_structure(dyn)
      jac = y_tree.unflatten([
          _unflatten_in_tree([blocks[i] for blocks in blocks_by_input], dyn_tree, argnums)
          for i in range(len(flat_y))])
      return (jac, aux) if has_aux else jac
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return jacrev_f


def jacobian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
             holomorphic: bool = False, allow_int: bool = False) -> Callable:
  """JAX's name for `jacrev`, the Jacobian by reverse mode (a wrapper, not the same
  object, as in JAX 0.10.2)."""
  return jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)


def typeof(x: Any) -> ShapedArray:
  """The abstract type of an array, tracer, NumPy value or Python scalar: what a
  transformation sees of it (shape, dtype, weak type), without its value.

  Raises:
    TypeError: `x` is not an array-like value (a list, a string, None, ...).
  """
  try:
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type: "
                    "typeof takes an array, a tracer, a NumPy value or a Python "
                    "scalar.") from None


@traceback_util.api_boundary
def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
  """The Hessian of scalar-valued `fun`: `jacfwd(jacrev(fun))` (forward over reverse, the
  efficient order for a dense Hessian).

  Example:
    >>> hessian(lambda x: x @ x)(jnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 2.]], dtype=float32)
  """
  return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


@traceback_util.api_boundary
def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence[Any] = ()
                     ) -> Callable:
  """The transpose of the linear function `fun`, as a function of an output cotangent
  that returns a tuple of input cotangents. `primals` give the input shapes and dtypes.

  Example:
    >>> f_t = linear_transpose(lambda x: 2.0 * x, 1.0)
    >>> f_t(3.0)
    (Array(6., dtype=float32, weak_type=True),)
  """
  flat_primals, in_tree = tree_util.tree_flatten((primals, {}))
  in_avals = [abstractify(x) for x in flat_primals]
  for aval in in_avals:
    if not dtypes.is_inexact(aval.dtype):
      raise TypeError(f"linear_transpose only supports [float or complex] -> [float or "
                      f"complex] functions, but got an input of dtype {aval.dtype.name}")
  out_tree_store: list = []
  jaxpr, consts = pe.trace_to_jaxpr(flatten_fun(fun, in_tree, out_tree_store), in_avals)
  out_tree = out_tree_store[0]
  out_avals = [v.aval for v in jaxpr.outvars]

  @traceback_util.inline_api_boundary
  def transposed(out_cotangent: Any) -> tuple:
    try:
      flat_cts, ct_tree = tree_util.tree_flatten(out_cotangent)
      if ct_tree != out_tree:
        raise TypeError(f"linear_transpose: cotangent tree structure {ct_tree} does not match "
                        f"the function's output structure {out_tree}")
      for ct, aval in zip(flat_cts, out_avals):
        ct_aval = core.get_aval(ct)
        if ct_aval.shape != aval.shape or ct_aval.dtype != aval.dtype:
          raise TypeError(f"linear_transpose: cotangent {ct_aval.str_short()} does not match "
                          f"the function's output {aval.str_short()}")
      cts_in = ad.backward_pass(jaxpr, consts, [ad.UndefinedPrimal(a) for a in in_avals],
                                flat_cts)
      cts_in = [_materialize_cotangent(ct, aval) for ct, aval in zip(cts_in, in_avals)]
      args_cts, _ = in_tree.unflatten(cts_in)
      return args_cts
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return transposed


# ----------------------------------------------------------------------------- vmap


def _mapped_axis_size(leaves: Sequence[Any], dims: Sequence[int | None],
                      axis_size: int | None) -> int:
  """The one size of the mapped axes, which `axis_size`, when given, must agree with."""
  sizes = {core.get_aval(x).shape[d] for x, d in zip(leaves, dims) if d is not None}
  if not sizes and axis_size is None:
    raise ValueError("vmap must have at least one non-None value in in_axes (or pass "
                     "axis_size)")
  if len(sizes | {axis_size} - {None}) > 1:
    detail = ", ".join(f"axis {d} of an argument of shape {core.get_aval(x).shape}"
                       for x, d in zip(leaves, dims) if d is not None)
    given = "" if axis_size is None else f"the `axis_size` argument was {axis_size}; "
    raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped: {given}"
                     f"{detail}")
  return axis_size if axis_size is not None else sizes.pop()


def _broadcast_prefix(prefix: Any, tree: Any, what: str) -> list[Any]:
  """`prefix` (e.g. in_axes) expanded to one entry per leaf of `tree`."""
  leaves_tree = tree_util.tree_structure(tree)
  try:
    out: list[Any] = []
    tree_util.tree_map(lambda p, sub: out.extend([p] * tree_util.tree_structure(sub)
                                                 .num_leaves),
                       prefix, tree, is_leaf=lambda x: x is None)
    return out
  except ValueError as e:
    raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                     f"value, got specification {prefix} for value tree {leaves_tree}.") from e


@traceback_util.api_boundary
def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Hashable | None = None,
         axis_size: int | None = None,
         spmd_axis_name: Hashable | tuple[Hashable, ...] | None = None,
         sum_match: bool = False) -> Callable:
  """Vectorizes `fun` over the axes `in_axes` of its arguments; outputs are stacked along
  `out_axes`. `None` marks an argument or output that is not mapped; with `sum_match`, an
  output that is mapped where `out_axes` says None is summed over the mapped axis instead
  of refused. `spmd_axis_name` names the mesh axes the mapped axis is split over in the
  sharding constraints `fun` makes.

  Example:
    >>> vmap(lambda x, y: x * y, in_axes=(0, None))(jnp.arange(3.0), 2.0)
    Array([0., 2., 4.], dtype=float32)
  """
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  spmd_names = (spmd_axis_name if spmd_axis_name is None or isinstance(spmd_axis_name, tuple)
                else (spmd_axis_name,))
  if not (in_axes is None or isinstance(in_axes, (int, tuple))):
    raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                    f"to the positional arguments passed to the function, but got {in_axes!r}.")

  @traceback_util.inline_api_boundary
  @functools.wraps(fun)
  def vmap_f(*args: Any, **kwargs: Any) -> Any:
    try:
      axes = in_axes if not isinstance(in_axes, (int, type(None))) else (in_axes,) * len(args)
      if isinstance(axes, tuple) and len(axes) != len(args):
        raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                         f"corresponding to the positional arguments passed to the function, "
                         f"but got len(in_axes)={len(axes)}, len(args)={len(args)}")
      leaves, in_tree = tree_util.tree_flatten((args, kwargs))
      dims = _broadcast_prefix((tuple(axes), 0), (args, kwargs), "in_axes")
      dims = [None if d is None else _normalize_axis(d, core.get_aval(x).shape)
              for x, d in zip(leaves, dims)]
      size = _mapped_axis_size(leaves, dims, axis_size)
      out_tree_store: list = []
      flat_fun = flatten_fun(fun, in_tree, out_tree_store)
      outs, out_dims = batching.batch_flat(flat_fun, leaves, dims, size, axis_name,
                                           spmd_name=spmd_names)
      out_tree = out_tree_store[0]
      want = _broadcast_prefix(out_axes, out_tree.unflatten([0] * out_tree.num_leaves),
                               "out_axes")
      outs = [_move_out_axis(o, d, w, size, sum_match) for o, d, w in zip(outs, out_dims, want)]
      return out_tree.unflatten(outs)
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise
  return vmap_f


def _normalize_axis(d: int, shape: tuple[int, ...]) -> int:
  if not isinstance(d, int):
    raise TypeError(f"vmap in_axes must be ints, None, or pytrees of those; got {d!r}")
  ndim = len(shape)
  if not -ndim <= d < ndim:
    raise ValueError(f"vmap was requested to map its argument along axis {d}, which "
                     f"implies that its rank should be at least {max(d + 1, -d)}, but is "
                     f"only {ndim} (its shape is {shape})")
  return d % ndim


def _move_out_axis(x: Any, have: int | None, want: int | None, size: int,
                   sum_match: bool = False) -> Any:
  from jaxon._src.lax import lax
  if want is None:
    if have is not None and sum_match:
      from jaxon._src.lax import reductions
      return reductions.reduce_sum(x, (have,))
    if have is not None:
      raise ValueError("vmap has mapped output but out_axes is None")
    return x
  shape = core.get_aval(x).shape
  ndim = len(shape) + (have is None)
  if not -ndim <= want < ndim:
    raise ValueError(f"axis {want} is out of bounds for array of dimension {ndim}")
  want %= ndim
  if have is None:
    if core.get_aval(x).dtype == dtypes.float0:  # a float0 tangent holds no data to broadcast
      return np.zeros(shape[:want] + (size,) + shape[want:], dtypes.float0)
    x = lax.broadcast(x, (size,))
    have = 0
  return batching.moveaxis(x, have, want)
