"""Methods and properties of jaxon arrays (and of tracers, under jit): the set is JAX's
Array's, each method agrees with its jnp function and with NumPy's method, and takes
JAX's arguments."""
from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon._src import core
from jaxon._src.numpy import array_methods
from jaxon.errors import ConcretizationTypeError
from tests.transform_util import check_vmap
from tests.util import check_grads

# The public methods and properties JAX's Array and its tracers share (jax.Array in JAX
# 0.4.3x/0.5: jax/_src/numpy/array_methods.py's method and property tables; byteswap as
# JAX 0.10.2 has it, whose Array alone also has `clone`).
JAX_ARRAY_METHODS = {
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
    "compress", "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot",
    "flatten", "item", "max", "mean", "min", "nonzero", "prod", "ptp", "ravel", "repeat",
    "reshape", "round", "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes", "take",
    "to_device", "tolist", "tobytes", "trace", "transpose", "var", "view", "byteswap",
}
JAX_ARRAY_PROPERTIES = {
    "T", "mT", "at", "dtype", "flat", "imag", "itemsize", "nbytes", "ndim", "real", "shape",
    "size", "weak_type",
}
# NumPy ndarray methods JAX leaves out on purpose (they mutate, or need a host loop).
NUMPY_ONLY = {"fill", "resize", "put", "itemset", "setflags", "partition",
              "setfield", "getfield", "dump", "dumps", "tofile", "newbyteorder"}

F32 = dict(rtol=2e-5, atol=2e-5)


def _rand(shape, seed=0, dtype=np.float32):
  return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def _same(got, want, what, exact=False):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  if exact:
    np.testing.assert_array_equal(got, want, err_msg=what)
  else:
    np.testing.assert_allclose(got, want, err_msg=what, **F32)


# ----------------------------------------------------------------------------- the name set

@pytest.mark.parametrize("cls", [jaxon.Array, core.Tracer], ids=["Array", "Tracer"])
def test_method_set_is_jaxs(cls):
  missing = sorted(n for n in JAX_ARRAY_METHODS | JAX_ARRAY_PROPERTIES if not hasattr(cls, n))
  assert not missing, f"{cls.__name__} lacks JAX Array attributes {missing}"
  extra = sorted(n for n in NUMPY_ONLY if hasattr(cls, n))
  assert not extra, f"{cls.__name__} has NumPy-only methods JAX does not: {extra}"


def test_installed_methods_are_all_jaxs():
  public = {n for n in array_methods._METHODS if not n.startswith("_")}
  assert public <= JAX_ARRAY_METHODS | JAX_ARRAY_PROPERTIES, (
      f"methods JAX's Array does not have: {sorted(public - JAX_ARRAY_METHODS)}")


# The parameters of JAX's methods (after self), in order.
SIGNATURES = {
    "sum": "axis dtype out keepdims initial where promote_integers",
    "prod": "axis dtype out keepdims initial where promote_integers",
    "max": "axis out keepdims initial where", "min": "axis out keepdims initial where",
    "mean": "axis dtype out keepdims where",
    "var": "axis dtype out ddof keepdims where correction",
    "std": "axis dtype out ddof keepdims where correction",
    "all": "axis out keepdims where", "any": "axis out keepdims where",
    "argmax": "axis out keepdims", "argmin": "axis out keepdims",
    "ptp": "axis out keepdims", "cumsum": "axis dtype out", "cumprod": "axis dtype out",
    "round": "decimals out", "clip": "min max",
    "diagonal": "offset axis1 axis2", "trace": "offset axis1 axis2 dtype out",
    "nonzero": "size fill_value", "searchsorted": "v side sorter method",
    "take": "indices axis out mode unique_indices indices_are_sorted fill_value",
    "compress": "condition axis out size fill_value", "choose": "choices out mode",
    "argpartition": "kth axis kind order", "sort": "axis kind order stable descending",
    "argsort": "axis kind order stable descending", "view": "dtype type",
    "to_device": "device stream", "swapaxes": "axis1 axis2", "squeeze": "axis",
    "repeat": "repeats axis total_repeat_length", "dot": "b precision preferred_element_type",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_method_signature(name):
  params = list(inspect.signature(getattr(jaxon.Array, name)).parameters)[1:]
  assert sorted(params) == sorted(SIGNATURES[name].split()), f"x.{name}{tuple(params)}"


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all",
                                  "any", "argmax", "argmin", "ptp", "cumsum", "cumprod",
                                  "round", "trace", "take", "choose"])
def test_out_must_be_none(name):
  x = jnp.asarray(_rand((3, 3)))
  args = {"take": (jnp.array([0]),), "choose": ([x, x],)}.get(name, ())
  if name == "choose":
    x = jnp.zeros((3, 3), jnp.int32)
  with pytest.raises(NotImplementedError, match="out"):
    getattr(x, name)(*args, out=x)


# ----------------------------------------------------------------------------- values

X = _rand((3, 4))
SORTED = np.sort(_rand((6,), 1))
# method, args, kwargs, NumPy's equivalent of x.method(*args, **kwargs)
CASES = [
    ("diagonal", (), {}, lambda x: x.diagonal()),
    ("diagonal", (1,), {}, lambda x: x.diagonal(1)),
    ("diagonal", (), {"offset": -1, "axis1": 1, "axis2": 0},
     lambda x: x.diagonal(-1, 1, 0)),
    ("trace", (), {}, lambda x: x.trace()),
    ("trace", (1,), {}, lambda x: x.trace(1)),
    ("take", (np.array([0, 5, 11]),), {}, lambda x: x.take([0, 5, 11])),
    ("take", (np.array([2, 0]),), {"axis": 1}, lambda x: x.take([2, 0], axis=1)),
    ("compress", (np.array([True, False, True]),), {"axis": 0, "size": 2},
     lambda x: x.compress([True, False, True], axis=0)),
    ("compress", (np.array([False, True]),), {"size": 1},
     lambda x: x.compress([False, True])),
    ("clip", (-0.5, 0.5), {}, lambda x: x.clip(-0.5, 0.5)),
    ("clip", (), {"max": 0.1}, lambda x: x.clip(max=0.1)),
    ("round", (1,), {}, lambda x: x.round(1)),
    ("cumsum", (), {"axis": 1}, lambda x: x.cumsum(axis=1)),
    ("cumprod", (), {}, lambda x: x.cumprod()),
    ("std", (), {"ddof": 1}, lambda x: x.std(ddof=1)),
    ("std", (1,), {"keepdims": True}, lambda x: x.std(1, keepdims=True)),
    ("var", (0,), {"ddof": 1, "keepdims": True}, lambda x: x.var(0, ddof=1, keepdims=True)),
    ("var", (), {"where": X > 0}, lambda x: x.var(where=X > 0)),
    ("sum", (1,), {"keepdims": True, "initial": 2.0}, lambda x: x.sum(1, keepdims=True,
                                                                      initial=2.0)),
    ("mean", (), {"axis": 0, "where": X > 0}, lambda x: x.mean(axis=0, where=X > 0)),
    ("max", (), {"axis": 1, "initial": 0.5}, lambda x: x.max(axis=1, initial=0.5)),
    ("ptp", (0,), {}, lambda x: np.ptp(x, 0)),
    ("dot", (X.T,), {}, lambda x: x.dot(X.T)),
    ("conj", (), {}, lambda x: x.conj()),
    ("copy", (), {}, lambda x: x.copy()),
    ("swapaxes", (0, 1), {}, lambda x: x.swapaxes(0, 1)),
    ("repeat", (2,), {"axis": 0}, lambda x: x.repeat(2, axis=0)),
]


@pytest.mark.parametrize("name,args,kwargs,np_fn", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_method_matches_numpy_eager_and_jit(name, args, kwargs, np_fn):
  want = np_fn(X)
  x = jnp.asarray(X)
  _same(getattr(x, name)(*args, **kwargs), want, f"x.{name} (Array)")
  traced = jaxon.jit(lambda x: getattr(x, name)(*args, **kwargs))(x)
  _same(traced, want, f"x.{name} (Tracer under jit)")


def test_methods_match_jnp_functions():
  x = jnp.asarray(X)
  pairs = [
      (x.diagonal(1), jnp.diagonal(x, 1)), (x.trace(-1), jnp.trace(x, -1)),
      (x.take(jnp.array([1, 3]), axis=1), jnp.take(x, jnp.array([1, 3]), axis=1)),
      (x.compress(jnp.array([True, False, True]), axis=0),
       jnp.compress(jnp.array([True, False, True]), x, axis=0)),
      (x.argpartition(2), jnp.argpartition(x, 2)), (x.std(ddof=1), jnp.std(x, ddof=1)),
  ]
  for got, want in pairs:
    _same(got, want, "method vs jnp function", exact=True)


def test_integer_methods():
  a = np.array([3, 0, 5, 0, 1], np.int32)
  x = jnp.asarray(a)
  for got, want in [(x.nonzero()[0], a.nonzero()[0]),
                    (jnp.asarray(SORTED).searchsorted(jnp.asarray(X[0])),
                     SORTED.searchsorted(X[0])),
                    (jnp.asarray(SORTED).searchsorted(0.1, side="right"),
                     SORTED.searchsorted(0.1, side="right")),
                    (jnp.array([2, 0, 1]).choose([jnp.arange(3), jnp.arange(3) * 10,
                                                  jnp.arange(3) * 100]),
                     np.array([2, 0, 1]).choose([np.arange(3), np.arange(3) * 10,
                                                 np.arange(3) * 100]))]:
    _same(got, want, "integer method", exact=True)
  nz = jaxon.jit(lambda x: x.nonzero(size=4, fill_value=-1))(x)[0]
  _same(nz, [0, 2, 4, -1], "nonzero(size=) under jit", exact=True)


def test_argpartition_partitions():
  x = _rand((4, 7))
  idx = np.asarray(jnp.asarray(x).argpartition(3, axis=1))
  part = np.take_along_axis(x, idx, axis=1)
  assert (part[:, :3].max(1) <= part[:, 3]).all() and (part[:, 3] <= part[:, 4:].min(1)).all()
  with pytest.raises(TypeError, match="kind"):  # JAX's method has no `kind` at all
    jnp.asarray(x).argpartition(3, kind="quicksort")


# ----------------------------------------------------------------------------- view

VIEWS = [(np.float32, np.int32), (np.float32, np.uint8), (np.float32, np.int16),
         (np.int16, np.float32), (np.uint8, np.float32), (np.int32, np.bool_),
         (np.bool_, np.uint8), (np.complex64, np.float32), (np.float32, np.complex64),
         (np.complex64, np.int32), (np.uint8, np.uint8)]


@pytest.mark.parametrize("src,dst", VIEWS, ids=[f"{np.dtype(a).name}-{np.dtype(b).name}"
                                                for a, b in VIEWS])
def test_view_matches_numpy(src, dst):
  if np.dtype(src) == np.bool_:
    a = np.array([[True, False, True, True]])
  elif np.dtype(src).kind == "c":
    a = (_rand((2, 4)) + 1j * _rand((2, 4), 1)).astype(src)
  elif np.dtype(src).kind in "iu":
    a = np.arange(16, dtype=src).reshape(2, 8) * (3 if np.dtype(src).itemsize > 1 else 1)
  else:
    a = _rand((2, 4)).astype(src)
  if np.dtype(dst) == np.bool_:
    a = (a % 2).astype(src)
  want = a.view(dst)
  for how, f in (("eager", lambda x: x.view(dst)), ("jit", jaxon.jit(lambda x: x.view(dst)))):
    got = f(jnp.asarray(a))
    assert got.dtype == want.dtype, f"view {how}: {got.dtype} != {want.dtype}"
    _same(got, want, f"view({np.dtype(dst).name}) {how}", exact=True)


def test_view_errors():
  with pytest.raises(ValueError, match="multiple"):
    jnp.zeros(3, jnp.uint8).view(jnp.float32)
  with pytest.raises(ValueError, match="0-d"):
    jnp.float32(1).view(jnp.uint8)
  with pytest.raises(NotImplementedError, match="type"):
    jnp.zeros(3).view(type=np.ndarray)
  x = jnp.zeros(3)
  assert x.view() is x and x.view(jnp.float32) is x


# ----------------------------------------------------------------------------- host data,
# copies, devices, sizes

def test_host_data_methods():
  a = _rand((2, 3))
  x = jnp.asarray(a)
  assert x.tolist() == a.tolist() and x.tobytes() == a.tobytes()
  assert x[1, 2].item() == a[1, 2].item() and x.item(4) == a.item(4)
  for method in ("item", "tolist", "tobytes"):
    with pytest.raises(ConcretizationTypeError, match=method):
      jaxon.jit(lambda x, m=method: getattr(x, m)())(x)


def test_copies_devices_sizes_round():
  x = jnp.asarray(_rand((2, 3)))
  for y in (x.copy(), copy.copy(x), copy.deepcopy(x), x.to_device(jaxon.devices()[0])):
    _same(y, x, "copy", exact=True)
  with pytest.raises(NotImplementedError, match="stream"):
    x.to_device(jaxon.devices()[0], stream=1)
  assert (x.itemsize, x.nbytes) == (4, 24)
  itemsize, nbytes = jaxon.jit(lambda x: (x.itemsize, x.nbytes))(x)
  assert (int(itemsize), int(nbytes)) == (4, 24)
  assert round(jnp.float32(2.6)) == 3 and round(jnp.float32(2.6)).dtype == np.int32
  np.testing.assert_allclose(round(jnp.float32(2.66), 1), 2.7, rtol=1e-6)
  assert x.__array_namespace__() is jnp
  with pytest.raises(NotImplementedError, match="flat"):
    x.flat  # noqa: B018


# ----------------------------------------------------------------------------- transforms

def test_methods_vmap_like_a_loop():
  x = _rand((3, 4))
  for method in (lambda x: x.diagonal(), lambda x: x.std(ddof=1, keepdims=True),
                 lambda x: x.take(jnp.array([2, 0])), lambda x: x.view(jnp.int32),
                 lambda x: x.compress(jnp.array([True, False, True, True]), size=2)):
    check_vmap(lambda x, m=method: m(jnp.asarray(x)), [x])


@pytest.mark.parametrize("name,fn", [
    ("diagonal", lambda x: x.diagonal(1)), ("trace", lambda x: x.trace()),
    ("std", lambda x: x.std(axis=0, ddof=1)), ("var", lambda x: x.var(keepdims=True)),
    ("take", lambda x: x.take(jnp.array([0, 5]))), ("clip", lambda x: x.clip(-0.5, 0.5)),
    ("compress", lambda x: x.compress(jnp.array([True, False, True]), axis=0, size=2)),
    ("cumprod", lambda x: x.cumprod(axis=1)), ("copy", lambda x: x.copy()),
])
def test_method_grads(name, fn):
  check_grads(lambda x: fn(jnp.asarray(x)), (X,), order=2, modes=("fwd", "rev"),
              atol=2e-2, rtol=2e-2)
