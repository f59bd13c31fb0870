"""`jaxon.Array`: attributes, conversions, printing exactly as JAX prints, pickling, and the
device helpers (`device_put`, `device_get`, `block_until_ready`, `devices`)."""
from __future__ import annotations

import pickle
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import jit

_identity = jit(lambda x: x)

# ----------------------------------------------------------------------------- attributes

ATTRIBUTE_CASES = [
    # (id, value, shape, dtype, weak)
    ("f32_vector", lambda: jnp.ones(3), (3,), np.float32, False),
    ("f32_scalar_weak", lambda: _identity(1.0), (), np.float32, True),
    ("i32_matrix", lambda: jnp.zeros((2, 3), jnp.int32), (2, 3), np.int32, False),
    ("uint8", lambda: jnp.asarray(np.arange(4, dtype=np.uint8)), (4,), np.uint8, False),
    ("bool", lambda: jnp.asarray(np.array([True, False])), (2,), np.bool_, False),
    ("bf16", lambda: jnp.ones(2, jnp.bfloat16), (2,), jnp.bfloat16, False),
    ("f16", lambda: jnp.ones((), jnp.float16), (), np.float16, False),
    ("zero_size", lambda: jnp.zeros((0, 4)), (0, 4), np.float32, False),
]


@pytest.mark.parametrize("name,make,shape,dtype,weak", ATTRIBUTE_CASES,
                         ids=[c[0] for c in ATTRIBUTE_CASES])
def test_attributes(name: str, make: Callable, shape: tuple, dtype: Any, weak: bool):
  x = make()
  assert type(x) is jaxon.Array, name
  assert (x.shape, x.dtype, x.weak_type) == (shape, np.dtype(dtype), weak), name
  assert x.ndim == len(shape) and x.size == int(np.prod(shape)), name
  assert x.itemsize == np.dtype(dtype).itemsize and x.nbytes == x.size * x.itemsize, name
  host = np.asarray(x)
  assert type(host) is np.ndarray and host.shape == shape and host.dtype == dtype, name
  assert np.asarray(x, dtype=np.float64).dtype == np.float64, name
  assert jnp.shape(x) == shape and jnp.ndim(x) == len(shape) and jnp.size(x) == x.size, name


def test_host_copy_is_read_only_view_but_array_copies():
  x = jnp.ones(3)
  assert not np.asarray(x).flags.writeable
  y = np.array(x)
  y[0] = 5.0  # a copy: the Array is unchanged
  np.testing.assert_array_equal(np.asarray(x), np.ones(3))


# ----------------------------------------------------------------------------- conversions


def test_python_scalar_conversions():
  assert float(jnp.array(2.5)) == 2.5 and type(float(jnp.array(2.5))) is float
  assert int(jnp.array(3)) == 3 and int(jnp.array(3.7)) == 3
  assert bool(jnp.array(True)) is True and bool(jnp.zeros(())) is False
  assert complex(jnp.array(1.5)) == 1.5 + 0j
  assert [10, 11, 12][jnp.array(2)] == 12
  assert list(range(jnp.array(3))) == [0, 1, 2]
  assert f"{jnp.array(1.5):.2f}" == "1.50"


@pytest.mark.parametrize("value,expected", [
    (jnp.array(2.0), 2.0), (jnp.array(3), 3), (jnp.array(True), True),
    (jnp.ones((1, 1), jnp.int32), 1)], ids=["float", "int", "bool", "size1"])
def test_item(value, expected):
  item = value.item()
  assert item == expected and type(item) is type(expected)


def test_item_and_tolist():
  with pytest.raises(ValueError, match="size 1"):
    jnp.ones(3).item()
  assert jnp.ones((2, 2), jnp.int32).tolist() == [[1, 1], [1, 1]]
  assert jnp.array(2.0).tolist() == 2.0


def test_len_and_iter():
  x = jnp.zeros((4, 2))
  assert len(x) == 4
  rows = list(x)
  assert len(rows) == 4 and all(type(r) is jaxon.Array and r.shape == (2,) for r in rows)
  assert [float(v) for v in jnp.ones(3)] == [1.0, 1.0, 1.0]
  assert list(jnp.zeros((0, 3))) == []
  with pytest.raises(TypeError, match="iteration over a 0-d array"):
    iter(jnp.float32(1.0))


def test_iteration_unstacks_100_rows_at_a_time():
  """As in JAX: a concrete array's rows come from `unstack`s of 100-row chunks (one
  program per chunk, not one indexing operation per row); a tracer's rows are indexed."""
  values = np.arange(250 * 3, dtype=np.float32).reshape(250, 3)
  rows = list(jnp.asarray(values))
  np.testing.assert_array_equal(np.stack([np.asarray(r) for r in rows]), values)
  weak = list(jnp.asarray([1.0, 2.0]) * 1.0)
  assert [r.weak_type for r in weak] == [jnp.asarray([1.0])[0].weak_type] * 2
  key_rows = list(jaxon.random.split(jaxon.random.key(0), 3))
  assert [r.shape for r in key_rows] == [()] * 3
  eqns = jaxon.make_jaxpr(lambda x: list(x))(np.ones((2, 3), np.float32)).eqns
  assert [e.primitive.name for e in eqns] == ["slice", "squeeze"] * 2


# ----------------------------------------------------------------------------- printing


def _vector(values, dtype) -> jaxon.Array:
  return jnp.asarray(np.array(values, dtype=dtype))


REPR_CASES = [
    ("f32", lambda: _vector([1., 2.], np.float32), "Array([1., 2.], dtype=float32)"),
    ("f32_scalar", lambda: jnp.float32(1.0), "Array(1., dtype=float32)"),
    ("weak_scalar", lambda: _identity(1.0), "Array(1., dtype=float32, weak_type=True)"),
    ("weak_int", lambda: _identity(2), "Array(2, dtype=int32, weak_type=True)"),
    ("i32", lambda: _vector([1, 2], np.int32), "Array([1, 2], dtype=int32)"),
    ("uint8", lambda: _vector([1, 255], np.uint8), "Array([  1, 255], dtype=uint8)"),
    ("bool", lambda: _vector([True, False], np.bool_), "Array([ True, False], dtype=bool)"),
    ("bf16", lambda: jnp.ones(2, jnp.bfloat16) * 2, "Array([2, 2], dtype=bfloat16)"),
    ("f16", lambda: _vector([0.5, 2.5], np.float16), "Array([0.5, 2.5], dtype=float16)"),
    ("empty", lambda: jnp.zeros(0), "Array([], shape=(0,), dtype=float32)"),
    ("empty_2d", lambda: jnp.zeros((2, 0), jnp.int32), "Array([], shape=(2, 0), dtype=int32)"),
    ("matrix", lambda: jnp.ones((2, 3)), textwrap.dedent("""\
        Array([[1., 1., 1.],
               [1., 1., 1.]], dtype=float32)""")),
    ("wraps", lambda: jnp.ones(40), textwrap.dedent("""\
        Array([1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,
               1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,
               1., 1., 1., 1., 1., 1.], dtype=float32)""")),
    # JAX keeps the dtype on the last line even when it does not fit, after a wide gap.
    ("dtype_after_gap", lambda: jnp.ones(34), textwrap.dedent("""\
        Array([1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,
               1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.],      dtype=float32)""")),  # noqa: E501
    ("summarized", lambda: jnp.ones(2000), "Array([1., 1., 1., ..., 1., 1., 1.], dtype=float32)"),
    ("special_values", lambda: _vector([np.nan, -np.inf], np.float32),
     "Array([ nan, -inf], dtype=float32)"),
]


@pytest.mark.parametrize("name,make,expected", REPR_CASES, ids=[c[0] for c in REPR_CASES])
def test_repr(name: str, make: Callable, expected: str):
  assert repr(make()) == expected, name


def test_repr_x64(x64):
  assert repr(jnp.ones(2)) == "Array([1., 1.], dtype=float64)"
  assert repr(_identity(3)) == "Array(3, dtype=int64, weak_type=True)"


@pytest.mark.parametrize("make,expected", [
    (lambda: _vector([1., 2.], np.float32), "[1. 2.]"), (lambda: jnp.array(1.5), "1.5"),
    (lambda: _vector([1, 2], np.int32), "[1 2]"), (lambda: _identity(1.0), "1.0")],
    ids=["vector", "scalar", "int", "weak"])
def test_str(make: Callable, expected: str):
  assert str(make()) == expected


# ----------------------------------------------------------------------------- pickling

PICKLE_CASES = [
    ("f32", lambda: jnp.ones((2, 3))),
    ("weak", lambda: _identity(2.0)),
    ("int", lambda: jnp.zeros(4, jnp.int32)),
    ("bool", lambda: _vector([True, False], np.bool_)),
    ("bf16", lambda: jnp.ones(3, jnp.bfloat16)),
    ("empty", lambda: jnp.zeros((0, 2))),
]


@pytest.mark.parametrize("name,make", PICKLE_CASES, ids=[c[0] for c in PICKLE_CASES])
def test_pickle_round_trip(name: str, make: Callable):
  x = make()
  y = pickle.loads(pickle.dumps(x))
  assert type(y) is jaxon.Array, name
  assert (y.shape, y.dtype, y.weak_type) == (x.shape, x.dtype, x.weak_type), name
  np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


# ----------------------------------------------------------------------------- devices


def test_devices():
  devices = jaxon.devices()
  assert len(devices) == jaxon.device_count() == jaxon.local_device_count() >= 1
  assert devices[0].platform == "cpu" and jaxon.default_backend() == "cpu"
  assert jaxon.local_devices() == devices
  x = jnp.ones(2)
  assert x.devices() == {devices[0]} and x.device == devices[0]


DEVICE_PUT_CASES = [
    # (id, value, dtype, weak)
    ("numpy_f64", np.ones(2), np.float32, False),
    ("numpy_i64", np.arange(3), np.int32, False),
    ("numpy_f32_scalar", np.float32(1.0), np.float32, False),
    ("python_float", 1.0, np.float32, True),
    ("python_int", 1, np.int32, True),
    ("python_bool", True, np.bool_, False),
    ("array", jnp.ones(2, jnp.bfloat16), jnp.bfloat16, False),
]


@pytest.mark.parametrize("name,value,dtype,weak", DEVICE_PUT_CASES,
                         ids=[c[0] for c in DEVICE_PUT_CASES])
def test_device_put(name: str, value: Any, dtype: Any, weak: bool):
  x = jaxon.device_put(value)
  assert type(x) is jaxon.Array, name
  assert (x.dtype, x.weak_type, x.shape) == (np.dtype(dtype), weak, np.shape(value)), name
  np.testing.assert_array_equal(np.asarray(x), np.asarray(value).astype(dtype))


def test_device_put_keeps_arrays_and_trees():
  x = jnp.ones(3)
  assert jaxon.device_put(x) is x
  tree = jaxon.device_put({"a": np.ones(2), "b": [1, (2.0, None)]})
  assert jaxon.tree_structure(tree) == jaxon.tree_structure({"a": 0, "b": [0, (0, None)]})
  assert all(type(leaf) is jaxon.Array for leaf in jaxon.tree_leaves(tree))


def test_device_get_and_block_until_ready():
  tree = {"a": jnp.ones(2), "b": [jnp.array(3), 2.0]}
  host = jaxon.device_get(tree)
  assert type(host["a"]) is np.ndarray and type(host["b"][0]) is np.ndarray
  assert host["b"][1] == 2.0
  assert jaxon.block_until_ready(tree) is tree
  x = jnp.ones(2)
  assert x.block_until_ready() is x and x.is_ready()


def test_delete():
  x = jnp.ones(2)
  x.delete()
  assert x.is_deleted()
  for use in (np.asarray, repr, jnp.sin, jit(lambda y: y * 2.0)):
    with pytest.raises(RuntimeError, match=r"deleted with shape=float32\[2\]"):
      use(x)


# ----------------------------------------------------------------------------- scalar constants
# Eager ops reuse one device copy of each Python scalar operand; the cache must never confuse
# two constants or hand out a deleted one.

SCALAR_OPERAND_CASES = [
    # (id, op, operand, expected dtype, expected weak type)
    ("negative_zero", lambda x: x * -0.0, jnp.ones(3), np.float32, False),
    ("positive_zero", lambda x: x * 0.0, jnp.ones(3), np.float32, False),
    ("int_then_float", lambda x: (x + 1) * 1.0, jnp.arange(3), np.float32, True),
    ("bool", lambda x: x & True, jnp.array([True, False]), np.bool_, False),
    ("nan", lambda x: x + float("nan"), jnp.ones(2), np.float32, False),
    ("keeps_bfloat16", lambda x: x * 3.0, jnp.ones(2, jnp.bfloat16), jnp.bfloat16, False),
    ("int_scalar_to_weak_float", lambda x: x * 2.5, jnp.asarray(np.int32(2)), np.float32,
     True),
    ("complex", lambda x: x * 1j, jnp.ones(2), np.complex64, False),
    ("reflected", lambda x: 2.0 - x, jnp.ones(2), np.float32, False),
]


@pytest.mark.parametrize("name,op,x,dtype,weak", SCALAR_OPERAND_CASES,
                         ids=[c[0] for c in SCALAR_OPERAND_CASES])
def test_python_scalar_operands(name: str, op: Callable, x: Any, dtype: Any, weak: bool):
  """Eager results equal jit's and NumPy's, bit for bit (sign of zero, NaN included)."""
  expected = op(np.asarray(x))
  for run in (op, op, jit(op)):  # twice eagerly: the second time the constant is cached
    got = run(x)
    assert (got.dtype, got.weak_type) == (np.dtype(dtype), weak), name
    np.testing.assert_array_equal(np.signbit(np.asarray(got).real),
                                  np.signbit(np.asarray(expected).real), err_msg=name)
    np.testing.assert_allclose(np.asarray(got, np.complex128), expected, err_msg=name)


def test_deleted_scalar_constant_is_replaced():
  from jaxon._src.xla.array import scalar_constant
  c = scalar_constant(7.0, np.dtype(np.float32), True)
  assert scalar_constant(7.0, np.dtype(np.float32), True) is c
  c.delete()
  fresh = scalar_constant(7.0, np.dtype(np.float32), True)
  assert not fresh.is_deleted() and float(fresh) == 7.0 and fresh.weak_type
  np.testing.assert_allclose(jnp.ones(2) * 7.0, [7.0, 7.0])


# ----------------------------------------------------------------------------- staying on device

ON_DEVICE_CASES = [
    ("operator", lambda x: x + 1.0),
    ("reflected_numpy", lambda x: np.ones(3, np.float32) + x),
    ("numpy_scalar", lambda x: np.float32(2.0) * x),
    ("ufunc", jnp.sin),
    ("reduction", jnp.sum),
    ("jit", jit(lambda x: x * 2.0)),
    ("asarray", jnp.asarray),
]


@pytest.mark.parametrize("name,op", ON_DEVICE_CASES, ids=[c[0] for c in ON_DEVICE_CASES])
def test_results_are_arrays(name: str, op: Callable):
  assert type(op(jnp.ones(3))) is jaxon.Array, name


def test_ndarray_alias():
  assert jnp.ndarray is jaxon.Array and isinstance(jnp.ones(2), jnp.ndarray)


def test_single_device_shard_queries():
  x = jnp.arange(6.0).reshape(2, 3)
  assert x.is_fully_addressable and x.is_fully_replicated
  (shard,) = x.addressable_shards
  assert shard.device == jaxon.devices()[0] and shard.replica_id == 0
  np.testing.assert_array_equal(np.asarray(shard.data)[shard.index], np.asarray(x))
  assert x.global_shards == x.addressable_shards
  assert x.addressable_data(0) is x
  with pytest.raises(IndexError, match="one shard"):
    x.addressable_data(1)
  assert x.on_device_size_in_bytes() >= 24
  assert isinstance(x.unsafe_buffer_pointer(), int)


def test_host_conversion_does_not_try_to_import_jax(monkeypatch):
  """jaxlib's own conversion imports `jax._src.sharding_impls` on every call and, without
  JAX, fails each time (150 µs and more); jaxon reads the buffer through the buffer
  protocol instead, for every dtype NumPy has natively."""
  import builtins

  import ml_dtypes
  values = [jnp.arange(3) + 1, jnp.ones((2, 2), jnp.complex64) * 2, jnp.array([True]) & True]
  attempts = []
  real_import = builtins.__import__

  def watching_import(name, *args, **kwargs):
    if name == "jax" or name.startswith("jax."):
      attempts.append(name)
    return real_import(name, *args, **kwargs)
  jaxon.block_until_ready(values)
  monkeypatch.setattr(builtins, "__import__", watching_import)
  hosts = [np.asarray(v) for v in values]
  assert attempts == []
  np.testing.assert_array_equal(hosts[0], [1, 2, 3])
  assert hosts[1].dtype == np.complex64 and hosts[2].dtype == np.bool_
  assert not hosts[0].flags.writeable
  bf16 = np.asarray(jnp.ones(2, ml_dtypes.bfloat16) * 3)  # not in the buffer protocol
  assert bf16.dtype == ml_dtypes.bfloat16 and (bf16 == 3).all()
