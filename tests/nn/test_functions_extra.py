"""jaxon.nn's later additions (identity, log1mexp, logmeanexp, sparse_plus, sparse_sigmoid,
dot_product_attention) against NumPy references, eager and under jit, derivatives to order
2 by finite differences, and vmap against a loop."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
from jaxon import nn
from tests.transform_util import check_vmap
from tests.util import check_grads


def _np_sparse_plus(x):
  return np.where(x <= -1, 0.0, np.where(x >= 1, x, (x + 1) ** 2 / 4))


# (name, jaxon function, NumPy reference, points away from the kinks)
ELEMENTWISE = [
    ("identity", nn.identity, lambda x: x, np.array([[-3.5, -0.2, 0.0, 2.5]])),
    ("sparse_plus", nn.sparse_plus, _np_sparse_plus,
     np.array([[-3.0, -1.5, -0.7, -0.1], [0.3, 0.9, 1.2, 4.0]])),
    ("sparse_sigmoid", nn.sparse_sigmoid, lambda x: np.clip(x + 1, 0, 2) / 2,
     np.array([[-3.0, -1.5, -0.7, -0.1], [0.3, 0.9, 1.2, 4.0]])),
    # Both branches: below and above log 2, and far out where exp(-x) underflows 1.
    ("log1mexp", nn.log1mexp,
     lambda x: np.where(x < 0.5, np.log(-np.expm1(-x)), np.log1p(-np.exp(-x))),
     np.array([[1e-6, 0.01, 0.3, 0.69], [0.7, 1.5, 8.0, 40.0]])),
]
IDS = [c[0] for c in ELEMENTWISE]


@pytest.mark.parametrize("name,fn,np_fn,points", ELEMENTWISE, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_matches_numpy(request, name, fn, np_fn, points, dtype):
  if dtype == np.float64:
    request.getfixturevalue("x64")
  x = points.astype(dtype)
  expected = np_fn(x.astype(np.float64))
  rtol = 2e-6 if dtype == np.float32 else 1e-13
  for mode, f in (("eager", fn), ("jit", jaxon.jit(fn))):
    out = f(x)
    assert out.dtype == dtype, f"{name} ({mode}): dtype {out.dtype}"
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=1e-30,
                               err_msg=f"{name} {np.dtype(dtype).name} ({mode})")


@pytest.mark.parametrize("name,fn,np_fn,points", ELEMENTWISE[1:], ids=IDS[1:])
def test_elementwise_grads(x64, name, fn, np_fn, points):
  x = points[:, 1:] if name == "log1mexp" else points  # finite steps stay above 0
  check_grads(fn, (x,), order=2, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name,fn,np_fn,points", ELEMENTWISE, ids=IDS)
def test_elementwise_vmap(name, fn, np_fn, points):
  check_vmap(fn, (np.abs(points).astype(np.float32) + 0.5,), axes=(0, -1))


def test_elementwise_integer_inputs_and_kinks():
  ints = np.array([-2, 0, 3], np.int32)
  assert nn.identity(ints).dtype == np.int32
  np.testing.assert_array_equal(nn.identity(ints), ints)
  assert nn.sparse_plus(ints).dtype == np.float32
  np.testing.assert_array_equal(nn.sparse_plus(ints), [0.0, 0.25, 3.0])
  assert nn.log1mexp(np.array([1, 2])).dtype == np.float32
  # sparse_plus's derivative is continuous: sparse_sigmoid, also at the joins.
  kinks = np.float32([-1.0, 1.0])
  np.testing.assert_allclose(jaxon.vmap(jaxon.grad(nn.sparse_plus))(kinks), [0.0, 1.0])
  np.testing.assert_allclose(nn.log1mexp(np.float32(0.0)), -np.inf)


# ----------------------------------------------------------------------------- logmeanexp

def _np_logmeanexp(x, axis, where, keepdims):
  weights = np.ones_like(x) if where is None else np.broadcast_to(where, x.shape).astype(float)
  total = osp.logsumexp(x, axis=axis, b=weights, keepdims=keepdims)
  return total - np.log(np.sum(weights, axis=axis, keepdims=keepdims))


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.booleans(), st.booleans(),
       st.data())
def test_logmeanexp_random_axes(shape, keepdims, masked, data):
  ndim = len(shape)
  axis = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                             st.permutations(range(ndim)).map(lambda p: tuple(p[:2]))))
  rng = np.random.RandomState(ndim)
  x = (rng.standard_normal(shape) * 30).astype(np.float32)
  where = None
  if masked:  # a reduced slice with no entry selected is all selected instead
    where = rng.rand(*shape) < 0.6
    where |= ~np.any(where, axis=axis, keepdims=True)

  def f(x):
    return nn.logmeanexp(x, axis=axis, where=where, keepdims=keepdims)
  expected = _np_logmeanexp(x.astype(np.float64), axis, where, keepdims)
  for out in (f(x), jaxon.jit(f)(x)):
    assert out.dtype == np.float32 and out.shape == np.shape(expected)
    np.testing.assert_allclose(out, expected, rtol=2e-6, atol=2e-5)


def test_logmeanexp_grads_vmap_and_values(x64):
  x = np.array([[0.3, -1.2, 2.0], [5.0, 4.5, -0.5]])
  np.testing.assert_allclose(nn.logmeanexp(np.log([1.0, 3.0])), np.log(2.0), rtol=1e-14)
  big = np.array([1000.0, 1000.0])
  np.testing.assert_allclose(nn.logmeanexp(big), 1000.0)
  mask = np.array([True, False, True])
  for kwargs in (dict(axis=0, keepdims=True), dict(axis=1, where=mask)):
    check_grads(lambda x, kw=kwargs: nn.logmeanexp(x, **kw), (x,), order=2)
  check_vmap(lambda x: nn.logmeanexp(x, axis=-1, where=mask), (x,), axes=(0, 1))


# ----------------------------------------------------------------------------- attention

def _np_attention(q, k, v, bias=None, mask=None, scale=None, is_causal=False,
                  q_lengths=None, kv_lengths=None, window=None):
  """Attention with the key/value heads repeated for grouped queries; a query that may
  attend to no key averages all of them (every logit gets the same masked value)."""
  q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
  batch, length, heads, head_size = q.shape
  kv_length = k.shape[1]
  k, v = (np.repeat(a, heads // a.shape[2], axis=2) for a in (k, v))
  scale = 1 / np.sqrt(head_size) if scale is None else scale
  logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
  if bias is not None:
    logits = logits + bias
  t, s = np.arange(length)[:, None], np.arange(kv_length)[None, :]
  allowed = np.ones(logits.shape, bool)
  if mask is not None:
    allowed &= mask
  if is_causal:
    allowed &= s <= t
  if window is not None:
    left, right = (window, window) if isinstance(window, int) else window
    allowed &= (t - s <= left) & (s - t <= right)
  if q_lengths is not None:
    allowed &= t[None, None] < np.asarray(q_lengths)[:, None, None, None]
  if kv_lengths is not None:
    allowed &= s[None, None] < np.asarray(kv_lengths)[:, None, None, None]
  nothing = ~allowed.any(-1, keepdims=True)
  logits = np.where(allowed | nothing, logits, -np.inf)
  logits = np.where(nothing, 0.0, logits)
  out = np.einsum("bnts,bsnh->btnh", osp.softmax(logits, axis=-1), v)
  if q_lengths is not None and kv_lengths is not None:
    out = out * (np.arange(length)[None, :] < np.asarray(q_lengths)[:, None])[..., None, None]
  return out


def _attention_case(seed, batch=2, length=3, kv_length=4, heads=2, kv_heads=2, head_size=3,
                    bias_shape=None, mask_shape=None, **kwargs):
  """(q, k, v, keyword arguments) of one configuration, with random data."""
  rng = np.random.RandomState(seed)
  q = rng.standard_normal((batch, length, heads, head_size)).astype(np.float32)
  k, v = (rng.standard_normal((batch, kv_length, kv_heads, head_size)).astype(np.float32)
          for _ in range(2))
  if bias_shape is not None:
    kwargs["bias"] = rng.standard_normal(bias_shape).astype(np.float32)
  if mask_shape is not None:
    kwargs["mask"] = rng.rand(*mask_shape) < 0.7
  return q, k, v, kwargs


ATTENTION_CASES = {
    "plain": dict(),
    "grouped_query": dict(heads=4, kv_heads=2),
    "multi_query_bias": dict(heads=4, kv_heads=1, bias_shape=(2, 4, 3, 4)),
    "broadcast_bias_scale": dict(bias_shape=(1, 1, 3, 4), scale=0.3),
    "mask_per_batch": dict(mask_shape=(2, 1, 3, 4)),
    "mask_per_head_grouped": dict(heads=4, kv_heads=2, mask_shape=(1, 4, 3, 4)),
    "causal": dict(length=4, kv_length=6, is_causal=True),
    "window_int": dict(length=5, kv_length=5, local_window_size=1),
    "window_pair": dict(length=5, kv_length=5, local_window_size=(2, 0)),
    "query_lengths": dict(query_seq_lengths=np.array([1, 3], np.int32)),
    "both_lengths": dict(query_seq_lengths=np.array([2, 3], np.int32),
                         key_value_seq_lengths=np.array([1, 4], np.int32)),
    "everything": dict(heads=4, kv_heads=2, bias_shape=(2, 1, 3, 4), mask_shape=(1, 4, 3, 4),
                       is_causal=True, local_window_size=(1, 1),
                       key_value_seq_lengths=np.array([3, 2], np.int32)),
    "fully_masked_rows": dict(mask_shape=(2, 2, 3, 4), mask_rows_off=True),
}


def _reference_kwargs(kwargs):
  names = dict(query_seq_lengths="q_lengths", key_value_seq_lengths="kv_lengths",
               local_window_size="window")
  return {names.get(n, n): v for n, v in kwargs.items()}


def _case(name, dtype=np.float32):
  config = dict(ATTENTION_CASES[name])
  rows_off = config.pop("mask_rows_off", False)
  q, k, v, kwargs = _attention_case(len(name), **config)
  if rows_off:
    kwargs["mask"][0, 1, 2] = False
  q, k, v = (a.astype(dtype) for a in (q, k, v))
  if "bias" in kwargs:
    kwargs["bias"] = kwargs["bias"].astype(dtype)
  return q, k, v, kwargs


@pytest.mark.parametrize("name", list(ATTENTION_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_matches_numpy(request, name, dtype):
  if dtype == np.float64:
    request.getfixturevalue("x64")
  q, k, v, kwargs = _case(name, dtype)
  expected = _np_attention(q, k, v, **_reference_kwargs(kwargs))
  jitted = jaxon.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, **kwargs))(q, k, v)
  outputs = [("jit", jitted)]
  if dtype == np.float32:  # eager once: it compiles every operation on its own
    outputs.append(("eager", nn.dot_product_attention(q, k, v, **kwargs)))
    np.testing.assert_allclose(outputs[1][1], jitted, rtol=1e-6, atol=1e-7)
  tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
  for mode, out in outputs:
    assert out.dtype == dtype and out.shape == q.shape, f"{name} ({mode})"
    np.testing.assert_allclose(out, expected, err_msg=f"{name} {mode}", **tol)


def test_attention_without_batch_dimension_and_implementations():
  q, k, v, _ = _attention_case(0, batch=1, heads=4, kv_heads=2)
  expected = _np_attention(q, k, v, is_causal=True)[0]
  for implementation in (None, "xla"):
    out = nn.dot_product_attention(q[0], k[0], v[0], is_causal=True,
                                   implementation=implementation)
    assert out.shape == q.shape[1:]
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["grouped_query", "everything"])
def test_attention_grads(x64, name):
  q, k, v, kwargs = _case(name, np.float64)
  bias = kwargs.pop("bias", np.zeros((1, 1, 1, 1)))
  check_grads(lambda q, k, v, bias: nn.dot_product_attention(q, k, v, bias, **kwargs),
              (q, k, v, bias), order=2, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["everything", "both_lengths"])
def test_attention_vmap(name):
  """vmap (all mapped at 0; or query at -1, keys and values unmapped) against a loop."""
  q, k, v, kwargs = _case(name)
  lengths = {n: kwargs.pop(n) for n in ("query_seq_lengths", "key_value_seq_lengths")
             if n in kwargs}

  def f(q, k, v, *lens):
    return nn.dot_product_attention(q, k, v, **kwargs, **dict(zip(lengths, lens)))
  rng = np.random.RandomState(1)
  batched = [np.stack([a + rng.standard_normal(a.shape).astype(a.dtype) for _ in range(3)])
             for a in (q, k, v)]
  batched_lengths = [np.stack([n, n[::-1], np.minimum(n, 1)]) for n in lengths.values()]
  single = jaxon.jit(f)
  expected = np.stack([single(*(a[i] for a in batched + batched_lengths)) for i in range(3)])
  out = jaxon.jit(jaxon.vmap(f))(*batched, *batched_lengths)
  np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
  in_axes = (-1, None, None) + (0,) * len(lengths)
  expected = np.stack([single(batched[0][i], k, v, *(n[i] for n in batched_lengths))
                       for i in range(3)])
  out = jaxon.vmap(f, in_axes)(np.moveaxis(batched[0], 0, -1), k, v, *batched_lengths)
  np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(implementation="cudnn"), NotImplementedError, "cudnn"),
    (dict(implementation="flash"), ValueError, "unsupported implementation"),
    (dict(mask=np.ones((2, 2, 3, 4), np.int32)), ValueError, "mask dtype should be bool"),
    (dict(mask=np.ones((2, 3, 3, 4), bool)), ValueError, "mask of shape"),
    (dict(bias=np.ones((2, 2, 3, 5), np.float32)), ValueError, "bias of shape"),
    (dict(query_seq_lengths=np.array([1.0, 2.0])), ValueError, "int32"),
    (dict(key_value_seq_lengths=np.array([1], np.int32)), ValueError, r"shape \(2,\)"),
], ids=["cudnn", "unknown_implementation", "int_mask", "mask_heads", "bias_shape",
        "float_lengths", "lengths_shape"])
def test_attention_bad_arguments(kwargs, error, match):
  q, k, v, _ = _attention_case(0)
  with pytest.raises(error, match=match):
    nn.dot_product_attention(q, k, v, **kwargs)


def test_attention_bad_operands():
  q, k, v, _ = _attention_case(0, heads=3)
  with pytest.raises(ValueError, match="multiple of key/value heads"):
    nn.dot_product_attention(q, k, v)
  q, k, v, _ = _attention_case(0)
  with pytest.raises(ValueError, match="query dtype should be float32"):
    nn.dot_product_attention(q.astype(np.float16), k, v)
  with pytest.raises(ValueError, match="value shape"):
    nn.dot_product_attention(q, k, v[:, :2])
  with pytest.raises(ValueError, match="query shape"):
    nn.dot_product_attention(q[..., :2], k, v)
  with pytest.raises(ValueError, match="at most 4 dimensions"):
    nn.dot_product_attention(q[None], k, v)
  with pytest.raises(TypeError, match="floating"):
    nn.dot_product_attention(*(a.astype(np.int32) for a in (q, k, v)))
