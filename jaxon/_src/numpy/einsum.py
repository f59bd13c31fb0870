"""`einsum`: Einstein summation lowered to one `lax.dot_general` per pairwise contraction.

opt_einsum chooses the order in which the operands are contracted (its `contract_path`);
each step then becomes lax operations:

* an index repeated within one operand (`'ii->i'`) takes that operand's diagonal (a strided
  slice, see `jnp.diagonal`);
* an index found in only one operand and not in the step's result is summed out first;
* a size-1 dimension facing a larger one in the other operand (broadcast ellipsis
  dimensions) is squeezed away, leaving the index to the other operand;
* indices shared by both operands become dot_general batch dimensions when the result
  keeps them, contracting dimensions when it does not;
* the result is transposed to the step's index order.

Operands are promoted to their common dtype first, and every dot_general accumulates in it
(or in `preferred_element_type`); booleans give booleans (sums of products become "or"s of
"and"s), as in NumPy.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import opt_einsum

from jaxon._src import dtypes
from jaxon._src.lax import dot_general as lax_dot
from jaxon._src.lax import lax, reductions, shape_ops
from jaxon._src.numpy import creation, lax_numpy, util

_Names = str  # one character per axis: the operand's einsum indices


def einsum(subscripts: Any, /, *operands: Any, out: None = None, optimize: Any = "auto",
           precision: lax_dot.PrecisionLike = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:
  """Einstein summation: sums products of the operands' elements over the indices that
  `subscripts` leaves out of the result.

  Args:
    subscripts: the index labels, e.g. `'ij,jk->ik'`; `...` stands for broadcast leading
      dimensions; without `->` the result has the indices that occur once, sorted. The
      interleaved form `einsum(x, [0, 1], y, [1, 2], [0, 2])` is accepted too.
    operands: the arrays.
    optimize: how opt_einsum picks the contraction order: 'auto' (default), 'greedy',
      'optimal', 'dp', …, True (= 'optimal'), False (left to right), or an explicit path.
    precision, preferred_element_type: as for `lax.dot_general`; the result has
      `preferred_element_type` when it is given.

  Example: `jnp.einsum('bij,bjk->bik', x, y)` is a batched matrix product and
  `jnp.einsum('ii', m)` a trace.
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.einsum is not supported: jaxon "
                              "arrays are immutable.")
  arrays, spec = _split_operands(subscripts, operands)
  arrays = util.promote_dtypes(*(lax_numpy.asarray(x) for x in arrays))
  if preferred_element_type is None:
    out_dtype, weak = dtypes.result_type(*arrays, return_weak_type_flag=True)
  else:
    out_dtype, weak = dtypes.canonicalize_dtype(preferred_element_type), False
  _, contractions = opt_einsum.contract_path(
      *spec, einsum_call=True, use_blas=True, shapes=True,
      optimize="optimal" if optimize is True else optimize)
  contract = _Contractor(precision, None if preferred_element_type is None else out_dtype)
  result = lax._convert_element_type(contract.path(list(arrays), contractions), out_dtype,
                                     weak)
  return result if out_sharding is None else util.out_sharded(result, out_sharding, "einsum")


def einsum_path(subscripts: Any, /, *operands: Any, optimize: Any = "greedy"
                ) -> tuple[list[tuple[int, ...]], Any]:
  """The contraction order opt_einsum picks for `einsum(subscripts, *operands)`: the
  path (pairs of operand positions) and a printable report of its cost."""
  _, spec = _split_operands(subscripts, operands)
  return opt_einsum.contract_path(*spec, shapes=True,
                                  optimize="optimal" if optimize is True else optimize)


def _split_operands(subscripts: Any, operands: Sequence[Any]
                    ) -> tuple[list[Any], list[Any]]:
  """The arrays, and the einsum specification with each array replaced by its shape
  (normalized by opt_einsum: explicit output, ellipses spelled out as letters)."""
  if isinstance(subscripts, str):
    arrays = list(operands)
    raw = [subscripts, *(_shape(x) for x in arrays)]
  else:  # interleaved: array, sublist, array, sublist, …, [output sublist]
    args = [subscripts, *operands]
    n_arrays = len(args) // 2
    arrays = args[0:2 * n_arrays:2]
    raw = [_shape(a) if i % 2 == 0 and i < 2 * n_arrays else a for i, a in enumerate(args)]
  inputs, output, shapes = opt_einsum.parser.parse_einsum_input(raw, shapes=True)
  if len(inputs.split(",")) != len(arrays):
    raise ValueError(f"jnp.einsum: subscripts {subscripts!r} name "
                     f"{len(inputs.split(','))} operands, but {len(arrays)} were given.")
  return arrays, [f"{inputs}->{output}", *shapes]


def _shape(x: Any) -> tuple[int, ...]:
  util.check_arraylike("einsum", x)
  return np.shape(x)


class _Contractor:
  """Runs opt_einsum's contraction list with lax operations."""

  def __init__(self, precision: lax_dot.PrecisionLike, preferred_element_type: Any):
    self.precision = precision
    self.preferred_element_type = preferred_element_type

  def path(self, operands: list[Any], contractions: Sequence[tuple]) -> Any:
    for positions, _, einsum_str, *_ in contractions:
      terms = [operands.pop(i) for i in positions]
      inputs, result = einsum_str.split("->")
      operands.append(self.step(terms, inputs.split(","), result))
    return operands[0]

  def step(self, terms: list[Any], names: list[_Names], result: _Names) -> Any:
    """One contraction of any number of terms, pair by pair from the left, keeping the
    indices that later terms or the result still need."""
    while len(terms) > 2:
      needed = set(result).union(*names[2:])
      kept = "".join(c for c in dict.fromkeys(names[0] + names[1]) if c in needed)
      terms[:2] = [self.pair(terms[0], names[0], terms[1], names[1], kept)]
      names[:2] = [kept]
    if len(terms) == 2:
      return self.pair(terms[0], names[0], terms[1], names[1], result)
    x, x_names = _sum_out(*_diagonals(terms[0], names[0]), result)
    return _transpose_to(x, x_names, result)

  def pair(self, x: Any, x_names: _Names, y: Any, y_names: _Names, result: _Names) -> Any:
    x, x_names = _diagonals(x, x_names)
    y, y_names = _diagonals(y, y_names)
    x, x_names, y, y_names = _squeeze_broadcast(x, x_names, y, y_names)
    x, x_names = _sum_out(x, x_names, result + y_names)
    y, y_names = _sum_out(y, y_names, result + x_names)
    if _prefer_swapped(x, x_names, y, y_names, result):
      x, x_names, y, y_names = y, y_names, x, x_names
    shared = [c for c in x_names if c in y_names]
    batch = [c for c in shared if c in result]
    summed = [c for c in shared if c not in result]
    dims = (([x_names.index(c) for c in summed], [y_names.index(c) for c in summed]),
            ([x_names.index(c) for c in batch], [y_names.index(c) for c in batch]))
    x, y = util.promote_dtypes(x, y)
    out = lax_dot.dot_general(x, y, dims, precision=self.precision,
                              preferred_element_type=self.preferred_element_type)
    return _transpose_to(out, _pair_names(x_names, y_names, result), result)


def _prefer_swapped(x: Any, x_names: _Names, y: Any, y_names: _Names, result: _Names
                    ) -> bool:
  """Whether `dot_general(y, x)` leaves less to rearrange than `dot_general(x, y)`.
  opt_einsum lists a pair right to left, so the swapped order often fits, as JAX's einsum
  expects; the order is kept on a tie."""
  sizes = {**dict(zip(x_names, x.shape)), **dict(zip(y_names, y.shape))}
  swapped = _rearrangement_cost(_pair_names(y_names, x_names, result), result, sizes)
  return swapped < _rearrangement_cost(_pair_names(x_names, y_names, result), result, sizes)


def _rearrangement_cost(names: _Names, result: _Names, sizes: dict[str, int]) -> int:
  """How much moving the axes of a product indexed `names` into the result's order costs:
  0 nothing; 1 a reshape (only size-1 axes move); 2 a transpose that keeps the last axis,
  which the reductions and products that follow read contiguously (attention's softmax
  over keys); 3 any other transpose."""
  if names == result:
    return 0
  if [c for c in names if sizes[c] != 1] == [c for c in result if sizes[c] != 1]:
    return 1
  return 2 if names[-1:] == result[-1:] else 3


def _pair_names(x_names: _Names, y_names: _Names, result: _Names) -> _Names:
  """The indices of `dot_general(x, y)`: batch (shared and kept), then x's free ones, then
  y's."""
  batch = "".join(c for c in x_names if c in y_names and c in result)
  return batch + "".join(c for c in x_names if c not in y_names) + \
      "".join(c for c in y_names if c not in x_names)


def _diagonals(x: Any, names: _Names) -> tuple[Any, _Names]:
  """Replaces each index repeated within `names` by the diagonal over its axes."""
  for c in dict.fromkeys(names):
    while names.count(c) > 1:
      first = names.index(c)
      second = names.index(c, first + 1)
      x = creation.diagonal(x, 0, first, second)
      names = names[:first] + names[first + 1:second] + names[second + 1:] + c
  return x, names


def _squeeze_broadcast(x: Any, x_names: _Names, y: Any, y_names: _Names
                       ) -> tuple[Any, _Names, Any, _Names]:
  """Drops an index from the operand where it has size 1 and the other has it larger
  (NumPy broadcasting of ellipsis dimensions)."""
  x_shape, y_shape = dict(zip(x_names, x.shape)), dict(zip(y_names, y.shape))
  x_drop = [c for c in x_names if x_shape[c] == 1 and y_shape.get(c, 1) != 1]
  y_drop = [c for c in y_names if y_shape[c] == 1 and x_shape.get(c, 1) != 1]
  return (*_squeeze(x, x_names, x_drop), *_squeeze(y, y_names, y_drop))


def _squeeze(x: Any, names: _Names, drop: Sequence[str]) -> tuple[Any, _Names]:
  if not drop:
    return x, names
  return (shape_ops.squeeze(x, [names.index(c) for c in drop]),
          "".join(c for c in names if c not in drop))


def _sum_out(x: Any, names: _Names, keep: str) -> tuple[Any, _Names]:
  """Sums over the indices not in `keep` ("or" for booleans)."""
  axes = [i for i, c in enumerate(names) if c not in keep]
  if not axes:
    return x, names
  reduce = reductions.reduce_or if dtypes.is_bool(x.dtype) else reductions.reduce_sum
  return reduce(x, axes), "".join(c for c in names if c in keep)


def _transpose_to(x: Any, names: _Names, result: _Names) -> Any:
  """`x` with its axes in the result's order; a reshape where only size-1 axes move (XLA
  does not always see such a transpose moves no data, and copies it)."""
  perm = [names.index(c) for c in result]
  if perm == sorted(perm):
    return x
  if [i for i in perm if x.shape[i] != 1] == [i for i in range(x.ndim) if x.shape[i] != 1]:
    return shape_ops.reshape(x, tuple(x.shape[i] for i in perm))
  return shape_ops.transpose(x, perm)
