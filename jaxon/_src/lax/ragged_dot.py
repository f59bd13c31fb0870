"""Ragged dot products: `ragged_dot_general`, and `ragged_dot` built on it.

A ragged dot is a `dot_general` in which one dimension of lhs, its *ragged* dimension, is
cut into consecutive groups of the sizes `group_sizes` gives (the sizes need not fill it;
rows past their sum belong to no group). What a group does depends on the kind of the
ragged dimension:

1. a free (non-contracting) dimension `m`: the rows of group g are multiplied by slice g
   of rhs's *group* dimension (a mixture-of-experts layer: tokens sorted by expert);
   `[m, k] x [g, k, n] -> [m, n]`;
2. a contracting dimension `k`: each group's slice of `k` is contracted on its own, giving
   one product per group, stacked in front: `[m, k] x [k, n] -> [g, m, n]`;
3. a batch dimension: a plain batched product (each batch entry is in at most one group).

`group_sizes` is `[g]`, or has one size vector per position of the lhs dimensions that
come before the ragged one (its batch dimensions, and the other dimensions of the ragged
dimension's kind that precede it): `[b..., x..., g]`.

XLA on CPU has no ragged dot instruction, so the lowering (and the transposes) use a dense
formulation: lhs is expanded to `[g, *lhs.shape]`, each slice masked to its group's rows,
and one `dot_general` contracts (mode 1) or keeps (mode 2) the group dimension. That costs
g times the work of the dense product; a backend with a ragged dot kernel would not.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import dot_general as dg
from jaxon._src.lax import lax, reductions, shape_ops, utils
from jaxon._src.lax.sharding_constraint import apply_out_sharding


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
  """The dimensions of a ragged dot.

  Attributes:
    dot_dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`,
      as for `dot_general`.
    lhs_ragged_dimensions: the one lhs dimension cut into groups.
    rhs_group_dimensions: the rhs dimension indexed by group (one when the ragged
      dimension is a free one, none otherwise).
  """

  dot_dimension_numbers: dg.DotDimensionNumbers
  lhs_ragged_dimensions: Sequence[int]
  rhs_group_dimensions: Sequence[int]

  def __post_init__(self) -> None:  # tuples of ints: params must be hashable
    object.__setattr__(self, "dot_dimension_numbers",
                       dg._canonical_dimension_numbers(self.dot_dimension_numbers))
    for name in ("lhs_ragged_dimensions", "rhs_group_dimensions"):
      object.__setattr__(self, name, tuple(int(d) for d in getattr(self, name)))


# ragged_dot's: rows of lhs [m, k] in groups, each multiplied by its rhs[g] of [g, k, n].
_RAGGED_ROWS = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))


# ----------------------------------------------------------------------------- user functions

def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: dg.PrecisionLike = None,
               preferred_element_type: Any = None, group_offset: Any = None,
               out_sharding: Any = None) -> Any:
  """Grouped matrix product: rows `[start_g, start_g + group_sizes[g])` of `lhs` times
  `rhs[g]`.

  Args:
    lhs: `(m, k)` array whose rows are sorted by group.
    rhs: `(g, k, n)` array, one matrix per group.
    group_sizes: `(g,)` integer array of group sizes; rows past their sum give zeros.
    precision, preferred_element_type: as for `dot`.
    group_offset: not supported (JAX supports it on TPU only).

  Returns:
    An `(m, n)` array.

  Example:
    >>> ragged_dot(jnp.ones((3, 2)), jnp.stack([jnp.eye(2), 2 * jnp.eye(2)]),
    ...            jnp.array([1, 2]))
    Array([[1., 1.],
           [2., 2.],
           [2., 2.]], dtype=float32)
  """
  return ragged_dot_general(lhs, rhs, group_sizes, _RAGGED_ROWS, precision,
                            preferred_element_type, group_offset, out_sharding)


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any,
                       ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: dg.PrecisionLike = None, preferred_element_type: Any = None,
                       group_offset: Any = None, out_sharding: Any = None) -> Any:
  """A `dot_general` with one lhs dimension cut into groups (see the module docstring
  for the three kinds of ragged dimension).

  Args:
    lhs, rhs: arrays.
    group_sizes: integer array `[g]` or `[b..., x..., g]`.
    ragged_dot_dimension_numbers: a `RaggedDotDimensionNumbers`.
    precision, preferred_element_type: as for `dot_general`.
    group_offset: not supported (JAX supports it on TPU only).

  Returns:
    The `dot_general` result (rhs's group dimension contracted away), with a leading
    group dimension when the ragged dimension is a contracting one.
  """
  if group_offset is not None:
    raise NotImplementedError("ragged_dot_general(group_offset=...) is not supported: "
                              "JAX implements it only on TPU.")
  if out_sharding is not None:
    return apply_out_sharding(ragged_dot_general(
        lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision,
        preferred_element_type), out_sharding, "ragged_dot_general")
  if not isinstance(ragged_dot_dimension_numbers, RaggedDotDimensionNumbers):
    raise TypeError("ragged_dot_general requires ragged_dot_dimension_numbers to be a "
                    f"lax.RaggedDotDimensionNumbers, got {ragged_dot_dimension_numbers!r}.")
  return ragged_dot_general_p.bind(
      lhs, rhs, group_sizes, ragged_dot_dimension_numbers=ragged_dot_dimension_numbers,
      precision=dg.canonicalize_precision(precision),
      preferred_element_type=dg.canonicalize_preferred_element_type(preferred_element_type),
      group_offset=None, out_sharding=None)


# ----------------------------------------------------------------------------- modes

NONCONTRACTING, CONTRACTING, BATCH = "non-contracting", "contracting", "batch"


def _mode(lhs_ndim: int, dnums: RaggedDotDimensionNumbers) -> tuple[str, int]:
  """The kind of the lhs ragged dimension, and the dimension."""
  if len(dnums.lhs_ragged_dimensions) != 1:
    raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension, got "
                    f"{dnums.lhs_ragged_dimensions}.")
  ragged = dnums.lhs_ragged_dimensions[0]
  _check_in_range(ragged, lhs_ndim, "lhs ragged dimension", "lhs")
  (contract, _), (batch, _) = dnums.dot_dimension_numbers
  return (CONTRACTING if ragged in contract else BATCH if ragged in batch
          else NONCONTRACTING), ragged


def _check_in_range(dim: int, ndim: int, what: str, operand: str) -> None:
  if not 0 <= dim < ndim:
    raise TypeError(f"ragged_dot_general requires {what} numbers to be nonnegative and "
                    f"less than the number of axes of the {operand} value, got {dim} for "
                    f"{operand} of rank {ndim}.")


def _prefix_dims(mode: str, lhs_ndim: int, ragged: int,
                 dnums: RaggedDotDimensionNumbers) -> tuple[int, ...]:
  """The lhs dimensions a `[b..., x..., g]` group_sizes has one size vector per position
  of: the batch dimensions, then those of the ragged dimension's kind before it."""
  (contract, _), (batch, _) = dnums.dot_dimension_numbers
  if mode == BATCH:
    return batch[:batch.index(ragged)]
  same_kind = contract if mode == CONTRACTING else tuple(
      d for d in range(lhs_ndim) if d not in contract + batch)
  return batch + same_kind[:same_kind.index(ragged)]


# ----------------------------------------------------------------------------- the primitive

def _shape_rule(lhs: ShapedArray, rhs: ShapedArray, group_sizes: ShapedArray, *,
                ragged_dot_dimension_numbers: RaggedDotDimensionNumbers, **params: Any
                ) -> tuple[int, ...]:
  dnums = ragged_dot_dimension_numbers
  mode, ragged = _mode(lhs.ndim, dnums)
  if group_sizes.ndim == 0:
    raise TypeError("expected rank of group_sizes to be >=1.")
  num_groups = group_sizes.shape[-1]
  if group_sizes.ndim != 1:
    expected = (*(lhs.shape[d] for d in _prefix_dims(mode, lhs.ndim, ragged, dnums)),
                num_groups)
    if group_sizes.shape != expected:
      raise TypeError(f"expected group_sizes to have shape {expected}, got "
                      f"{group_sizes.shape}.")
  (_, rhs_contract), (_, rhs_batch) = dnums.dot_dimension_numbers
  group_dims = dnums.rhs_group_dimensions
  if mode != NONCONTRACTING and group_dims:
    raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                    "ragged dimension is contracting or batch.")
  if mode == NONCONTRACTING:
    if len(group_dims) != 1:
      raise TypeError("ragged_dot_general requires exactly one rhs group dimension when "
                      "lhs ragged dimension is noncontracting.")
    _check_in_range(group_dims[0], rhs.ndim, "rhs group dimension", "rhs")
    if group_dims[0] in rhs_contract + rhs_batch:
      raise TypeError("ragged_dot_general requires rhs group dimension numbers to be "
                      "distinct from contracting and batch dimensions.")
    if rhs.shape[group_dims[0]] != num_groups:
      raise TypeError(f"expected rhs group dimension size to be {num_groups}, got "
                      f"{rhs.shape[group_dims[0]]}.")
  out = dg._dot_general_shape_rule(lhs, _without_group_dim(rhs, group_dims),
                                   dimension_numbers=_renumbered(dnums))
  return (num_groups, *out) if mode == CONTRACTING else out


def _without_group_dim(rhs: ShapedArray, group_dims: tuple[int, ...]) -> ShapedArray:
  return ShapedArray(tuple(d for i, d in enumerate(rhs.shape) if i not in group_dims),
                     rhs.dtype)


def _renumbered(dnums: RaggedDotDimensionNumbers) -> tuple:
  """The dot dimension numbers with rhs's group dimension (if any) taken out."""
  (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
  if not dnums.rhs_group_dimensions:
    return dnums.dot_dimension_numbers
  g = dnums.rhs_group_dimensions[0]
  shift = lambda dims: tuple(d - (d > g) for d in dims)
  return ((lc, shift(rc)), (lb, shift(rb)))


def _dtype_rule(lhs: ShapedArray, rhs: ShapedArray, group_sizes: ShapedArray, *,
                preferred_element_type: np.dtype | None, **params: Any) -> np.dtype:
  if not dtypes.is_integer(group_sizes.dtype):
    raise TypeError(f"ragged_dot_general requires group_sizes to have an integer dtype, "
                    f"got {group_sizes.str_short()}.")
  return dg._dot_general_dtype_rule(lhs, rhs, preferred_element_type=preferred_element_type)


def _weak_type_rule(lhs: ShapedArray, rhs: ShapedArray, *rest: Any, **params: Any) -> bool:
  return utils.standard_weak_type_rule(lhs, rhs)


ragged_dot_general_p = utils.standard_primitive("ragged_dot_general", _shape_rule,
                                                _dtype_rule, _weak_type_rule)


# ----------------------------------------------------------------------------- dense form

class _DensePlan(NamedTuple):
  """How the dense formulation computes a ragged dot: whether lhs is expanded to
  `[g, *lhs.shape]` with each slice masked to its group, the dimension numbers of the
  `dot_general` that follows, and which dimension of its result holds the groups and
  must move to the front (None: none does)."""
  expand_lhs: bool
  dimension_numbers: tuple
  group_dim_in_product: int | None


def _dense_plan(lhs_ndim: int, dnums: RaggedDotDimensionNumbers) -> _DensePlan:
  mode, _ = _mode(lhs_ndim, dnums)
  (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
  up = lambda dims: tuple(d + 1 for d in dims)
  if mode == BATCH:  # each batch entry is in at most one group: nothing to mask
    return _DensePlan(False, dnums.dot_dimension_numbers, None)
  if mode == NONCONTRACTING:  # the group dimension contracts with rhs's
    return _DensePlan(True, (((*up(lc), 0), (*rc, dnums.rhs_group_dimensions[0])),
                             (up(lb), rb)), None)
  # Contracting: the group dimension is lhs's first free dimension, which the product
  # puts right after the batch dimensions.
  return _DensePlan(True, ((up(lc), rc), (up(lb), rb)), len(lb))


def _groups_first(plan: _DensePlan, ndim: int) -> tuple[int, ...] | None:
  """The permutation of the product that puts its group dimension first."""
  g = plan.group_dim_in_product
  return None if g is None else (g, *range(g), *range(g + 1, ndim))


def _group_mask(group_sizes: Any, shape: tuple[int, ...], ragged: int,
                prefix: tuple[int, ...]) -> Any:
  """bool[g, *shape]: whether each element's index along `ragged` lies in group g."""
  num_groups = group_sizes.shape[-1]
  ends = reductions.cumsum(group_sizes, axis=group_sizes.ndim - 1)
  starts = lax.sub(ends, group_sizes)
  out_shape = (num_groups, *shape)
  # Where each dimension of `[b..., x..., g]` sizes goes in the mask, in increasing order
  # (as broadcast_in_dim takes them): the sizes are transposed to match.
  size_dims = (0,) if group_sizes.ndim == 1 else (*(d + 1 for d in prefix), 0)
  order = tuple(int(i) for i in np.argsort(size_dims))
  if order != tuple(range(len(order))):
    starts, ends = (shape_ops.transpose(x, order) for x in (starts, ends))
  index = lax.broadcasted_iota(group_sizes.dtype, out_shape, ragged + 1)
  starts, ends = (lax.broadcast_in_dim(x, out_shape, sorted(size_dims))
                  for x in (starts, ends))
  return lax.bitwise_and(lax.le(starts, index), lax.lt(index, ends))


def _lhs_mask(lhs_aval: ShapedArray, group_sizes: Any,
              dnums: RaggedDotDimensionNumbers) -> Any:
  mode, ragged = _mode(lhs_aval.ndim, dnums)
  return _group_mask(group_sizes, lhs_aval.shape, ragged,
                     _prefix_dims(mode, lhs_aval.ndim, ragged, dnums))


def _expand(lhs: Any, group_sizes: Any, dnums: RaggedDotDimensionNumbers) -> Any:
  aval = core.get_aval(lhs)
  mask = _lhs_mask(aval, group_sizes, dnums)
  spread = lax.broadcast_in_dim(lhs, mask.shape, range(1, aval.ndim + 1))
  return lax.select(mask, spread, lax.full(mask.shape, 0, aval.dtype))


def _ragged_dot_dense(lhs: Any, rhs: Any, group_sizes: Any, *,
                      ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                      precision: dg.CanonicalPrecision,
                      preferred_element_type: np.dtype | None, **params: Any) -> Any:
  dnums = ragged_dot_dimension_numbers
  plan = _dense_plan(np.ndim(lhs), dnums)
  x = _expand(lhs, group_sizes, dnums) if plan.expand_lhs else lhs
  out = dg.dot_general(x, rhs, plan.dimension_numbers, precision, preferred_element_type)
  perm = _groups_first(plan, np.ndim(out))
  return out if perm is None else shape_ops.transpose(out, perm)


mlir.register_lowering(ragged_dot_general_p,
                       mlir.lower_fun(_ragged_dot_dense, multiple_results=False))


# ----------------------------------------------------------------------------- derivatives

def _transpose_rule(ct: Any, lhs: Any, rhs: Any, group_sizes: Any, *,
                    ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                    precision: dg.CanonicalPrecision, preferred_element_type: np.dtype | None,
                    **params: Any) -> list[Any]:
  """Bilinear in (lhs, rhs): the transposes of the dense formulation's `dot_general`,
  then, for lhs, the masked expansion's transpose (mask, and sum over the groups)."""
  dnums = ragged_dot_dimension_numbers
  lhs_aval = lhs.aval if ad.is_undefined_primal(lhs) else core.get_aval(lhs)
  plan = _dense_plan(lhs_aval.ndim, dnums)
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval.to_tangent_aval()) if ad.is_undefined_primal(x) else None
            for x in (lhs, rhs)] + [None]
  perm = _groups_first(plan, np.ndim(ct))
  if perm is not None:
    ct = shape_ops.transpose(ct, tuple(int(i) for i in np.argsort(perm)))
  dot_params = dict(dimension_numbers=plan.dimension_numbers, precision=precision,
                    preferred_element_type=preferred_element_type, out_sharding=None)
  if ad.is_undefined_primal(lhs):
    if not plan.expand_lhs:
      return [dg._dot_general_transpose(ct, lhs, rhs, **dot_params)[0], None, None]
    num_groups = core.get_aval(group_sizes).shape[-1]
    expanded = ad.UndefinedPrimal(ShapedArray((num_groups, *lhs_aval.shape),
                                              lhs_aval.dtype))
    ct_expanded = dg._dot_general_transpose(ct, expanded, rhs, **dot_params)[0]
    mask = _lhs_mask(lhs_aval, group_sizes, dnums)
    masked = lax.select(mask, ct_expanded, lax.full(mask.shape, 0, lhs_aval.dtype))
    return [reductions.reduce_sum(masked, (0,)), None, None]
  x = _expand(lhs, group_sizes, dnums) if plan.expand_lhs else lhs
  return [None, dg._dot_general_transpose(ct, x, rhs, **dot_params)[1], None]


def _batch_rule(vals: Sequence[Any], dims: Sequence[int | None], *,
                ragged_dot_dimension_numbers: RaggedDotDimensionNumbers, **params: Any
                ) -> tuple[Any, int]:
  """The batch dimension becomes a new leading batch dimension of lhs and rhs (and of
  a `[b..., x..., g]` group_sizes, which a mapped `[g]` one is broadcast to)."""
  lhs, rhs, group_sizes = vals
  lhs_bdim, rhs_bdim, sizes_bdim = dims
  size = next(np.shape(x)[d] for x, d in zip(vals, dims) if d is not batching.not_mapped)
  dnums = ragged_dot_dimension_numbers
  lhs_ndim = np.ndim(lhs) - (lhs_bdim is not batching.not_mapped)
  mode, ragged = _mode(lhs_ndim, dnums)
  old_prefix = _prefix_dims(mode, lhs_ndim, ragged, dnums)
  lhs = batching.bdim_at_front(lhs, lhs_bdim, size)
  rhs = batching.bdim_at_front(rhs, rhs_bdim, size)
  if sizes_bdim is not batching.not_mapped or np.ndim(group_sizes) > 1:
    group_sizes = batching.bdim_at_front(group_sizes, sizes_bdim, size)
    full_shape = (size, *(np.shape(lhs)[d + 1] for d in old_prefix), np.shape(group_sizes)[-1])
    if np.shape(group_sizes) != full_shape:  # a mapped [g]: one vector per prefix position
      group_sizes = lax.broadcast_in_dim(group_sizes, full_shape,
                                         (0, len(full_shape) - 1))
  up = lambda ds: tuple(d + 1 for d in ds)
  (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
  new_dnums = RaggedDotDimensionNumbers(
      ((up(lc), up(rc)), ((0, *up(lb)), (0, *up(rb)))), up(dnums.lhs_ragged_dimensions),
      up(dnums.rhs_group_dimensions))
  out = ragged_dot_general_p.bind(lhs, rhs, group_sizes,
                                  ragged_dot_dimension_numbers=new_dnums, **params)
  return out, 1 if mode == CONTRACTING else 0


ad.defjvp(ragged_dot_general_p,
          lambda g, lhs, rhs, sizes, **params: ragged_dot_general_p.bind(g, rhs, sizes,
                                                                         **params),
          lambda g, lhs, rhs, sizes, **params: ragged_dot_general_p.bind(lhs, g, sizes,
                                                                         **params),
          None)
ad.primitive_transposes[ragged_dot_general_p] = _transpose_rule
batching.primitive_batchers[ragged_dot_general_p] = _batch_rule
