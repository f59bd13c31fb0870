"""lax gather and the scatter family against NumPy, with explicit dimension numbers and
every mode. They are checked against small loop-based NumPy references of XLA's semantics
(`np_gather`, `np_scatter`), which take the same dimension numbers. Each case runs eagerly
and under jit, and the abstract evaluation must agree with the result."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import lax
from tests.util import BF16, BOOL, F16, F32, F64, I32, U8, check, rand

# ----------------------------------------------------------------------------- gather reference

GDN, SDN, Mode = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers, lax.GatherScatterMode


def _window_starts(operand_shape, window, index_vector, index_map, batch, batching_pairs,
                   mode):
  """The window's start in each operand dimension, and whether it is in bounds (after
  clamping when `mode` is CLIP or PROMISE_IN_BOUNDS for a gather)."""
  starts = [0] * len(operand_shape)
  for d, i in zip(index_map, index_vector):
    starts[d] = int(i)
  for o, i in batching_pairs:
    starts[o] = batch[i]
  in_bounds = all(0 <= starts[d] <= operand_shape[d] - window[d] for d in index_map)
  if mode != "drop":
    starts = [min(max(s, 0), n - w) for s, n, w in zip(starts, operand_shape, window)]
  return starts, in_bounds


def np_gather(operand, indices, dn, slice_sizes, mode=Mode.PROMISE_IN_BOUNDS, fill=None):
  batch_shape = indices.shape[:-1]
  out_rank = len(dn.offset_dims) + len(batch_shape)
  dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  window_shape = [s for d, s in enumerate(slice_sizes) if d not in dropped]
  offsets = iter(window_shape)
  out_shape = [next(offsets) if d in dn.offset_dims else 0 for d in range(out_rank)]
  batch_iter = iter(batch_shape)
  out_shape = [s if d in dn.offset_dims else next(batch_iter) for d, s in enumerate(out_shape)]
  out = np.zeros(out_shape, operand.dtype)
  pairs = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
  for b in np.ndindex(*batch_shape):
    starts, ok = _window_starts(operand.shape, slice_sizes, indices[b], dn.start_index_map, b,
                                pairs, "clip")
    window = operand[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]
    window = window.reshape(window_shape)
    if mode == Mode.FILL_OR_DROP and not ok:
      window = np.full(window_shape, fill, operand.dtype)
    b_iter = iter(b)
    out[tuple(slice(None) if d in dn.offset_dims else next(b_iter) for d in range(out_rank))] = \
        window
  return out


GATHER_CASES = {  # name: (operand shape, indices, dimension numbers, slice_sizes)
    "rows": ((5, 3), [[1], [4], [0], [1]], GDN((1,), (0,), (0,)), (1, 3)),
    "points": ((4, 5), [[0, 1], [3, 4], [2, 2]], GDN((), (0, 1), (0, 1)), (1, 1)),
    "windows": ((6, 7), [[1, 2], [4, 5]], GDN((1, 2), (), (0, 1)), (2, 3)),
    "permuted-map": ((4, 5), [[4, 0], [1, 3]], GDN((), (0, 1), (1, 0)), (1, 1)),
    "batch-2d-indices": ((6,), [[[0], [5]], [[2], [3]]], GDN((), (0,), (0,)), (1,)),
    "offset-first": ((3, 5), [[1], [2]], GDN((0,), (1,), (1,)), (3, 1)),
    "batching-dims": ((3, 5), [[[1], [4]], [[0], [0]], [[3], [2]]],
                      GDN((), (1,), (1,), (0,), (0,)), (1, 1)),
    "scalar-operand": ((), np.zeros((2, 0), np.int32), GDN((), (), ()), ()),
    "empty-batch": ((5, 3), np.zeros((0, 1), np.int32), GDN((1,), (0,), (0,)), (1, 3)),
    "out-of-bounds": ((5, 3), [[7], [-1], [2]], GDN((1,), (0,), (0,)), (1, 3)),
    "oob-window": ((6, 7), [[5, 0], [0, 6], [3, 2]], GDN((1, 2), (), (0, 1)), (2, 3)),
}


@pytest.mark.parametrize("mode", [None, "clip", "fill"], ids=str)
@pytest.mark.parametrize("case", GATHER_CASES, ids=str)
def test_gather(case, mode):
  shape, indices, dn, sizes = GATHER_CASES[case]
  x, indices = rand(shape, F32), np.asarray(indices, np.int32)
  parsed = lax.GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else Mode.from_any(mode)
  want = np_gather(x, indices, dn, sizes, parsed, np.nan)
  check(f"gather[{case}, mode={mode}]",
        lambda a, i: lax.gather(a, i, dn, sizes, mode=mode), [x, indices], want)


@pytest.mark.parametrize("dtype", [I32, U8, BOOL, BF16, F16], ids=str)
def test_gather_dtypes_and_fill_values(dtype):
  x, indices = rand((5, 3), dtype), np.array([[7], [1], [-1]], np.int32)
  dn = GATHER_CASES["rows"][2]
  default = {I32: np.iinfo(np.int32).min, U8: 255, BOOL: True}.get(dtype, np.nan)
  check(f"gather[{dtype}, fill default]",
        lambda a, i: lax.gather(a, i, dn, (1, 3), mode="fill"), [x, indices],
        np_gather(x, indices, dn, (1, 3), Mode.FILL_OR_DROP, default))
  check(f"gather[{dtype}, fill_value=1]",
        lambda a, i: lax.gather(a, i, dn, (1, 3), mode="fill", fill_value=1), [x, indices],
        np_gather(x, indices, dn, (1, 3), Mode.FILL_OR_DROP, 1))
  check(f"gather[{dtype}, uint8 indices]",
        lambda a, i: lax.gather(a, i, dn, (1, 3)), [x, np.array([[4], [0]], np.uint8)],
        x[[4, 0]])


def test_gather_x64(x64):
  x = rand((5, 3), F64)
  indices = np.array([[4], [0], [9]], np.int64)
  dn = GATHER_CASES["rows"][2]
  check("gather[float64, int64 indices]", lambda a, i: lax.gather(a, i, dn, (1, 3)),
        [x, indices], np_gather(x, indices, dn, (1, 3)))


def test_gather_jaxpr_params():
  dn = GATHER_CASES["rows"][2]
  text = str(jaxon.make_jaxpr(lambda a, i: lax.gather(a, i, dn, (1, 3), mode="clip"))(
      jnp.zeros((5, 3)), jnp.zeros((2, 1), jnp.int32)))
  assert "gather[" in text and "mode=GatherScatterMode.CLIP" in text, text
  assert "fill_value=None" in text, text


def test_gather_scatter_mode_from_any():
  assert Mode.from_any("clip") is Mode.CLIP
  assert Mode.from_any("fill") is Mode.from_any("drop") is Mode.from_any(None) \
      is Mode.FILL_OR_DROP
  assert Mode.from_any("promise_in_bounds") is Mode.PROMISE_IN_BOUNDS
  assert Mode.from_any(Mode.CLIP) is Mode.CLIP
  with pytest.raises(ValueError, match=r"Unknown gather mode 'wrap'"):
    Mode.from_any("wrap")


GATHER_ERRORS = [  # (operand shape, indices shape/dtype, dnums, slice_sizes, match)
    ((5, 3), ((2, 1), np.float32), GDN((1,), (0,), (0,)), (1, 3), r"integer type"),
    ((5, 3), ((), np.int32), GDN((1,), (0,), (0,)), (1, 3), r"at least one dimension"),
    ((5, 3), ((2, 1), np.int32), GDN((1,), (0,), (0,)), (1, 3, 1), r"slice_sizes"),
    ((5, 3), ((2, 1), np.int32), GDN((1,), (0,), (0,)), (1, 4), r"slice_sizes"),
    ((5, 3), ((2, 1), np.int32), GDN((1,), (0,), (0,)), (2, 3), r"collapse or batch"),
    ((5, 3), ((2, 2), np.int32), GDN((1,), (0,), (0,)), (1, 3), r"start_index_map"),
    ((5, 3), ((2, 1), np.int32), GDN((1,), (0,), (2,)), (1, 3), r"start_index_map"),
    ((5, 3), ((2, 1), np.int32), GDN((2,), (0,), (0,)), (1, 3), r"offset_dims"),
    ((5, 3), ((2, 1), np.int32), GDN((1, 2), (0,), (0,)), (1, 3), r"offset_dims"),
    ((5, 3), ((2, 1), np.int32), GDN((), (0,), (0,)), (1, 3), r"one offset_dim"),
    ((5, 3, 2), ((2, 1), np.int32), GDN((1,), (2, 0), (0,)), (1, 3, 1), r"must be sorted"),
    ((5, 3), ((4, 1), np.int32), GDN((), (1,), (1,), (0,), (0,)), (1, 1), r"pair up"),
]


@pytest.mark.parametrize("shape,indices,dn,sizes,match", GATHER_ERRORS,
                         ids=[e[-1] for e in GATHER_ERRORS])
def test_gather_errors(shape, indices, dn, sizes, match):
  with pytest.raises(TypeError, match=match):
    lax.gather(jnp.zeros(shape), jnp.zeros(*indices), dn, sizes)


def test_gather_rejects_non_dimension_numbers():
  with pytest.raises(TypeError, match=r"must be a GatherDimensionNumbers"):
    lax.gather(jnp.zeros(3), jnp.zeros((1, 1), jnp.int32), ((), (0,), (0,)), (1,))


# ----------------------------------------------------------------------------- scatter

def np_scatter(operand, indices, updates, dn, combine, mode):
  """XLA's scatter, applying updates in order; out-of-bounds windows are dropped unless
  `mode` is CLIP (then clamped)."""
  out = operand.copy()
  dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  window_dims = [d for d in range(operand.ndim) if d not in dropped]
  window = [1] * operand.ndim
  for o, u in zip(window_dims, dn.update_window_dims):
    window[o] = updates.shape[u]
  pairs = list(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims))
  for b in np.ndindex(*indices.shape[:-1]):
    clip = mode == Mode.CLIP
    starts, ok = _window_starts(operand.shape, window, indices[b],
                                dn.scatter_dims_to_operand_dims, b, pairs,
                                "clip" if clip else "drop")
    if not (ok or clip):
      continue
    b_iter = iter(b)
    upd = updates[tuple(slice(None) if d in dn.update_window_dims else next(b_iter)
                        for d in range(updates.ndim))]
    region = tuple(slice(s, s + w) for s, w in zip(starts, window))
    out[region] = combine(out[region], upd.reshape(out[region].shape))
  return out


SCATTERS = {  # name: (lax function, NumPy combiner, dtypes)
    "scatter": (lax.scatter, lambda old, new: new, [F32, BOOL]),
    "scatter_add": (lax.scatter_add, np.add, [F32, I32, BF16]),
    "scatter_sub": (lax.scatter_sub, np.subtract, [F32]),
    "scatter_mul": (lax.scatter_mul, np.multiply, [I32]),
    "scatter_min": (lax.scatter_min, np.minimum, [F32, U8, BOOL]),
    "scatter_max": (lax.scatter_max, np.maximum, [I32]),
}

SCATTER_CASES = {  # name: (operand shape, indices, updates shape, dimension numbers)
    "rows": ((5, 3), [[1], [4], [0]], (3, 3), SDN((1,), (0,), (0,))),
    "points-repeated": ((4, 5), [[0, 1], [3, 4], [0, 1]], (3,), SDN((), (0, 1), (0, 1))),
    "windows": ((6, 7), [[1, 2], [4, 4]], (2, 2, 3), SDN((1, 2), (), (0, 1))),
    "batching-dims": ((3, 5), [[[1], [4]], [[0], [2]], [[3], [3]]], (3, 2),
                      SDN((), (1,), (1,), (0,), (0,))),
    "empty": ((5, 3), np.zeros((0, 1), np.int32), (0, 3), SDN((1,), (0,), (0,))),
    "out-of-bounds": ((5, 3), [[7], [-1], [2]], (3, 3), SDN((1,), (0,), (0,))),
    "oob-window": ((6, 7), [[5, 0], [0, 6], [3, 2]], (3, 2, 3), SDN((1, 2), (), (0, 1))),
}


SCATTER_PARAMS = [  # plain scatter with repeated indices has no defined result
    pytest.param(name, case, dtype, id=f"{name}-{case}-{dtype}")
    for name, (_, _, dts) in SCATTERS.items() for case in SCATTER_CASES for dtype in dts
    if not (name == "scatter" and "repeated" in case)]


@pytest.mark.parametrize("name,case,dtype", SCATTER_PARAMS)
def test_scatter(name, case, dtype):
  fn, combine, _ = SCATTERS[name]
  shape, indices, updates_shape, dn = SCATTER_CASES[case]
  x, indices = rand(shape, dtype), np.asarray(indices, np.int32)
  updates = rand(updates_shape, dtype, seed=3)
  for mode in (None, "clip") if "out-of-bounds" in case or "oob" in case else (None,):
    want = np_scatter(x, indices, updates, dn, combine, Mode.from_any(mode))
    check(f"{name}[{case}, mode={mode}]", lambda a, i, u, m=mode: fn(a, i, u, dn, mode=m),
          [x, indices, updates], want)


def test_scatter_x64(x64):
  x, updates = rand((5, 3), F64), rand((2, 3), F64, seed=1)
  indices = np.array([[4], [4]], np.int64)
  dn = SCATTER_CASES["rows"][3]
  check("scatter_add[float64, int64 indices]",
        lambda a, i, u: lax.scatter_add(a, i, u, dn), [x, indices, updates],
        np_scatter(x, indices, updates, dn, np.add, Mode.FILL_OR_DROP))


def test_scatter_jaxpr_names():
  dn = SCATTER_CASES["rows"][3]
  text = str(jaxon.make_jaxpr(lambda a, i, u: lax.scatter_add(a, i, u, dn, mode="clip"))(
      jnp.zeros((5, 3)), jnp.zeros((2, 1), jnp.int32), jnp.zeros((2, 3))))
  assert "scatter-add[" in text and "mode=GatherScatterMode.CLIP" in text, text


SCATTER_ERRORS = [  # (operand, indices, updates, dnums, match)
    ((5, 3), ((2, 1), np.int32), ((2, 3), np.int32), SDN((1,), (0,), (0,)), r"same dtypes"),
    ((5, 3), ((2, 1), np.float32), ((2, 3), np.float32), SDN((1,), (0,), (0,)),
     r"integer type"),
    ((5, 3), ((2, 1), np.int32), ((3, 3), np.float32), SDN((1,), (0,), (0,)),
     r"index batch shape"),
    ((5, 3), ((2, 1), np.int32), ((2, 4), np.float32), SDN((1,), (0,), (0,)), r"must fit"),
    ((5, 3), ((2, 1), np.int32), ((2, 3), np.float32), SDN((1,), (0,), (0, 1)),
     r"scatter_dims_to_operand_dims"),
    ((5, 3), ((2, 1), np.int32), ((2, 3), np.float32), SDN((1,), (), (0,)),
     r"one update_window_dim"),
    ((5, 3), ((2, 1), np.int32), ((2, 3), np.float32), SDN((2,), (0,), (0,)),
     r"update_window_dims"),
]


@pytest.mark.parametrize("shape,indices,updates,dn,match", SCATTER_ERRORS,
                         ids=[e[-1] for e in SCATTER_ERRORS])
def test_scatter_errors(shape, indices, updates, dn, match):
  with pytest.raises(TypeError, match=match):
    lax.scatter_add(jnp.zeros(shape), jnp.zeros(*indices), jnp.zeros(*updates), dn)


def test_gather_fill_nan_reuses_compiled_program():
  from jaxon._src.xla import deferred
  dn = GATHER_CASES["rows"][2]
  x, i = jnp.zeros((5, 3)), jnp.zeros((2, 1), jnp.int32)
  lax.gather(x, i, dn, (1, 3), mode="fill")
  cached = len(deferred._signatures)
  lax.gather(x, i, dn, (1, 3), mode="fill")
  assert len(deferred._signatures) == cached, "NaN fill_value missed the cache"
