"""The generic rule harness (`check_transforms`: derivatives to order 2 in both modes, jit of
jvp/vjp, vmap along several axes and with unmapped operands) over the shape primitives:
reshape, transpose, squeeze, expand_dims, rev, concatenate, pad, broadcast_in_dim."""
from __future__ import annotations

import numpy as np
import pytest

from jaxon import lax
from tests.transform_util import check_transforms

# (id, function, per-example input shapes). Each function is linear, but composing it with
# a nonlinearity gives the second-order checks something to differentiate.
CASES = [
    ("reshape", lambda x: lax.reshape(x, (3, 2)), [(2, 3)]),
    ("reshape_to_scalar", lambda x: lax.reshape(x, ()), [(1, 1)]),
    ("reshape_from_scalar", lambda x: lax.reshape(x, (1, 1)), [()]),
    ("reshape_dims", lambda x: lax.reshape(x, (4, 6), (2, 0, 1)), [(2, 3, 4)]),
    ("collapse", lambda x: lax.collapse(x, 1), [(2, 3, 4)]),
    ("transpose", lambda x: lax.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    ("squeeze", lambda x: lax.squeeze(x, (0, 2)), [(1, 3, 1)]),
    ("squeeze_negative", lambda x: lax.squeeze(x, (-1,)), [(2, 1)]),
    ("expand_dims", lambda x: lax.expand_dims(x, (0, 2)), [(3, 2)]),
    ("expand_dims_scalar", lambda x: lax.expand_dims(x, (0,)), [()]),
    ("rev", lambda x: lax.rev(x, (0, 2)), [(2, 3, 4)]),
    ("concatenate", lambda x, y: lax.concatenate([x, y], 1), [(2, 3), (2, 1)]),
    ("concatenate3", lambda x, y, z: lax.concatenate([x, y, z], 0), [(1, 2), (2, 2), (1, 2)]),
    ("pad", lambda x, v: lax.pad(x, v, [(1, 2, 0), (0, 1, 1)]), [(2, 3), ()]),
    ("pad_negative", lambda x, v: lax.pad(x, v, [(-1, 1, 1), (2, -1, 0)]), [(3, 3), ()]),
    ("pad_operand_only", lambda x: lax.pad(x, np.asarray(0.5, x.dtype), [(1, 1, 2)]), [(3,)]),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 4, 3), (0, 2)), [(2, 3)]),
    ("broadcast_in_dim_size1", lambda x: lax.broadcast_in_dim(x, (2, 4, 3), (0, 2)),
     [(1, 3)]),
    ("broadcast_in_dim_scalar", lambda x: lax.broadcast_in_dim(x, (2, 3), ()), [()]),
    ("broadcast", lambda x: lax.broadcast(x, (2,)), [(3,)]),
]


def _inputs(shapes: list[tuple[int, ...]], dtype: np.dtype) -> list[np.ndarray]:
  rng = np.random.RandomState(0)
  return [rng.uniform(-2, 2, s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("name,fun,shapes", CASES, ids=[c[0] for c in CASES])
def test_linear(name, fun, shapes):
  check_transforms(fun, _inputs(shapes, np.float32))


@pytest.mark.parametrize("name,fun,shapes", CASES, ids=[c[0] for c in CASES])
def test_composed_with_a_nonlinearity(name, fun, shapes):
  """sin(f(x)) * f(x): nonzero second derivatives through the shape op."""
  def composed(*xs):
    y = fun(*xs)
    return lax.mul(lax.sin(y), y)
  check_transforms(composed, _inputs(shapes, np.float32), vmap_axes=(0,))


@pytest.mark.parametrize("name,fun,shapes", CASES[::3], ids=[c[0] for c in CASES[::3]])
def test_linear_f64(name, fun, shapes, x64):
  check_transforms(fun, _inputs(shapes, np.float64), order=1, vmap_axes=(1,))
