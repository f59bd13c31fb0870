"""The rest of the sharding layer: `jaxon.debug.visualize_array_sharding` (pictures from
JAX 0.10.2 with rich 15, character for character), shardings on `pjit` equations through
`grad`/`jvp`/`vmap` (printed params and the layouts of the results, as JAX 0.10.2), and the
spec an eager op's result reads back with. 8 CPU devices (see conftest)."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jaxon.sharding import PartitionSpec as P


@pytest.fixture(scope="module")
def meshes():
  devices = np.array(jaxon.devices())
  return {"4x2": Mesh(devices.reshape(4, 2), ("x", "y")), "8": Mesh(devices, ("x",)),
          "2x4": Mesh(devices.reshape(2, 4), ("x", "y"))}


# name -> (shape, mesh, spec, keyword arguments); None: on device 3 alone.
CASES = {
    "1d_x8": ((8,), "8", P("x"), {}),
    "1d_rep": ((8,), "8", P(), {}),
    "2d_x_none": ((8, 4), "4x2", P("x", None), {}),
    "2d_none_y": ((8, 4), "4x2", P(None, "y"), {}),
    "2d_y_x": ((8, 8), "4x2", P("y", "x"), {}),
    "2d_24": ((4, 16), "2x4", P("x", "y"), {}),  # too wide: cells shrink, labels wrap
    "2d_maxw": ((8, 64), "4x2", P("x", "y"), {"max_width": 40}),
    "2d_minw": ((8, 4), "4x2", P("x", None), {"min_width": 20}),
    "1d_tiny": ((8,), "8", P("x"), {"max_width": 12}),
    "single": ((4, 3), None, None, {}),
}

PICTURES = {
    '1d_x8': (
        '┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┐\n'
        '│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n'
        '└───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┘\n'
    ),
    '1d_rep': (
        '┌───────────────────┐\n'
        '│CPU 0,1,2,3,4,5,6,7│\n'
        '└───────────────────┘\n'
    ),
    '2d_x_none': (
        '┌──────────┐\n'
        '│ CPU 0,1  │\n'
        '├──────────┤\n'
        '│ CPU 2,3  │\n'
        '├──────────┤\n'
        '│ CPU 4,5  │\n'
        '├──────────┤\n'
        '│ CPU 6,7  │\n'
        '└──────────┘\n'
    ),
    '2d_none_y': (
        '┌───────────┬───────────┐\n'
        '│           │           │\n'
        '│           │           │\n'
        '│           │           │\n'
        '│           │           │\n'
        '│CPU 0,2,4,6│CPU 1,3,5,7│\n'
        '│           │           │\n'
        '│           │           │\n'
        '│           │           │\n'
        '│           │           │\n'
        '└───────────┴───────────┘\n'
    ),
    '2d_y_x': (
        '┌───────┬───────┬───────┬───────┐\n'
        '│       │       │       │       │\n'
        '│ CPU 0 │ CPU 2 │ CPU 4 │ CPU 6 │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '├───────┼───────┼───────┼───────┤\n'
        '│       │       │       │       │\n'
        '│ CPU 1 │ CPU 3 │ CPU 5 │ CPU 7 │\n'
        '│       │       │       │       │\n'
        '│       │       │       │       │\n'
        '└───────┴───────┴───────┴───────┘\n'
    ),
    '2d_24': (
        '┌───────────────────┬───────────────────┬───────────────────┬──────────────────┐\n'
        '│                   │                   │                   │                  │\n'
        '│         …         │         …         │         …         │                  │\n'
        '│         0         │         1         │         2         │                  │\n'
        '│                   │                   │                   │                  │\n'
        '│                   │                   │                   │                  │\n'
        '├───────────────────┼───────────────────┼───────────────────┼──────────────────┤\n'
        '│                   │                   │                   │                  │\n'
        '│         …         │         …         │         …         │                  │\n'
        '│         4         │         5         │         6         │                  │\n'
        '│                   │                   │                   │                  │\n'
        '│                   │                   │                   │                  │\n'
        '└───────────────────┴───────────────────┴───────────────────┴──────────────────┘\n'
    ),
    '2d_maxw': (
        '┌───────────────────┬──────────────────┐\n'
        '│                   │                  │\n'
        '├───────────────────┼──────────────────┤\n'
        '│                   │                  │\n'
        '├───────────────────┼──────────────────┤\n'
        '│                   │                  │\n'
        '├───────────────────┼──────────────────┤\n'
        '│                   │                  │\n'
        '└───────────────────┴──────────────────┘\n'
    ),
    '2d_minw': (
        '┌──────────────────┐\n'
        '│     CPU 0,1      │\n'
        '├──────────────────┤\n'
        '│     CPU 2,3      │\n'
        '├──────────────────┤\n'
        '│     CPU 4,5      │\n'
        '├──────────────────┤\n'
        '│     CPU 6,7      │\n'
        '└──────────────────┘\n'
    ),
    '1d_tiny': (
        '┌┬┬─┬┬─┬┬─┬┐\n'
        '│││ ││ ││ ││\n'
        '└┴┴─┴┴─┴┴─┴┘\n'
    ),
    'single': (
        '┌───────────────┐\n'
        '│               │\n'
        '│               │\n'
        '│               │\n'
        '│               │\n'
        '│     CPU 3     │\n'
        '│               │\n'
        '│               │\n'
        '│               │\n'
        '│               │\n'
        '└───────────────┘\n'
    ),
}


def _printed(fun, *args, **kwargs) -> str:
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    fun(*args, **kwargs)
  return out.getvalue()


@pytest.mark.parametrize("name", list(CASES))
def test_visualize_array_sharding_matches_jax(meshes, name):
  shape, mesh, spec, kwargs = CASES[name]
  where = jaxon.devices()[3] if mesh is None else NamedSharding(meshes[mesh], spec)
  x = jaxon.device_put(np.zeros(shape, np.float32), where)
  assert _printed(jaxon.debug.visualize_array_sharding, x, **kwargs) == PICTURES[name]


def test_visualize_colors_errors_and_inspect(meshes):
  from jaxon._src.debugging_sharding import render_sharding
  s = NamedSharding(meshes["4x2"], P("x", "y"))
  colored = render_sharding((8, 4), s, use_color=True, color_map=lambda v: (v, 0.5, 0.2, 1))
  assert colored.count("\x1b[48;2;") == 2 * 12 and "  CPU 5  " in colored  # 4x2 blocks
  assert "┌" not in colored and "│" not in colored
  assert _printed(jaxon.debug.visualize_sharding, (8, 4), s, use_color=False) == \
      render_sharding((8, 4), s, use_color=False)
  with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
    jaxon.debug.visualize_sharding((2, 2, 2), s)
  seen = []
  tree = {"a": jaxon.device_put(np.ones((8, 4)), s), "b": jnp.ones(3)}
  jaxon.debug.inspect_array_sharding(tree, callback=seen.append)
  assert seen == [s, SingleDeviceSharding(jaxon.devices()[0])]
  with pytest.raises(NotImplementedError, match="concrete Arrays only"):
    jaxon.jit(jaxon.debug.visualize_array_sharding)(jnp.ones(3))


A = np.arange(32, dtype=np.float32).reshape(8, 4) / 10


@pytest.fixture(scope="module")
def sharded_f(meshes):
  mesh = meshes["4x2"]
  return jaxon.jit(lambda a, b: jnp.sin(a) * b, in_shardings=(NamedSharding(mesh, P("x", None)),
                                                              None),
                   out_shardings=NamedSharding(mesh, P("y")))


def test_sharded_jit_jaxpr_prints_as_jax(sharded_f):
  # JAX 0.10.2's text, with its `jit` printed under the seeds' name `pjit`.
  assert str(jaxon.make_jaxpr(sharded_f)(A, A)) == """{ lambda ; a:f32[8,4] b:f32[8,4]. let
    c:f32[8,4] = pjit[
      name=<lambda>
      in_shardings=(NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P('x', None), memory_kind=device), UnspecifiedValue)
      jaxpr={ lambda ; a:f32[8,4] b:f32[8,4]. let
          d:f32[8,4] = sin a
          c:f32[8,4] = mul d b
        in (c,) }
      out_shardings=(NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P('y',), memory_kind=device),)
    ] a b
  in (c,) }"""  # noqa: E501


def _pjit_shardings(fun, *args):
  """(in specs, out specs) of each pjit equation of fun's jaxpr; '-' for UnspecifiedValue."""
  spec = lambda s: s.spec if isinstance(s, NamedSharding) else "-"  # noqa: E731
  return [(tuple(map(spec, e.params.get("in_shardings", ()))),
           tuple(map(spec, e.params.get("out_shardings", ()))))
          for e in _eqns(fun, *args) if e.primitive.name == "pjit"]


def _eqns(fun, *args):
  return jaxon.make_jaxpr(fun)(*args).jaxpr.eqns


def test_shardings_follow_transformations_as_jax(sharded_f):
  # JAX 0.10.2: tangents laid out as primals; vmap leaves the batch dim unsplit; the
  # transpose takes the output cotangent as the result was laid out and gives the input's.
  assert _pjit_shardings(lambda a, b: jaxon.jvp(sharded_f, (a, b), (a, b)), A, A) == [
      ((P("x", None), "-", P("x", None), "-"), (P("y"), P("y")))]
  assert _pjit_shardings(jaxon.vmap(sharded_f, in_axes=(0, None)), np.stack([A] * 3), A) == [
      ((P(None, "x"), "-"), (P(None, "y"),))]
  # an unmapped operand beside one mapped at axis 2 sends the batch axis to the front
  assert _pjit_shardings(jaxon.vmap(sharded_f, in_axes=(2, None)), A[..., None], A) == [
      ((P("x"), "-"), (P(None, "y"),))]
  known, unknown = _pjit_shardings(jaxon.grad(lambda a, b: sharded_f(a, b).sum()), A, A)
  assert known[0] == (P("x", None), "-") and known[1][0] == P("y")
  assert set(known[1][1:]) == {"-"}  # residuals are left to XLA
  assert unknown[0][-1] == P("y") and set(unknown[0][:-1]) == {"-"}
  assert unknown[1] == (P("x", None),)
  unsharded = jaxon.jit(lambda a: a * 2)
  assert _pjit_shardings(jaxon.grad(lambda a: unsharded(a).sum()), A) == [((), ())] * 2


def test_transformed_sharded_jit_runs_with_jax_layouts(meshes, sharded_f):
  mesh = meshes["4x2"]
  g = jaxon.grad(lambda a, b: sharded_f(a, b).sum())(A, A)
  np.testing.assert_allclose(np.asarray(g), np.cos(A) * A, rtol=1e-6)
  assert g.sharding == NamedSharding(mesh, P("x", None))
  y, t = jaxon.jvp(sharded_f, (A, A), (A, A))
  np.testing.assert_allclose(np.asarray(t), np.cos(A) * A * A + np.sin(A) * A, rtol=1e-5)
  assert y.sharding.spec == t.sharding.spec == P("y")
  v = jaxon.vmap(sharded_f, in_axes=(0, None))(np.stack([A, 2 * A]), A)
  np.testing.assert_allclose(np.asarray(v), np.stack([np.sin(A) * A, np.sin(2 * A) * A]),
                             rtol=1e-6)
  assert v.sharding.spec == P(None, "y")
  nested = jaxon.jit(lambda a: sharded_f(a, a) + 1)
  np.testing.assert_allclose(np.asarray(nested(A)), np.sin(A) * A + 1, rtol=1e-6)
  assert nested(A).sharding.spec == P("y")
  assert 'sdy.sharding_constraint %arg0 <@mesh, [{"x"}, {}]>' in nested.lower(A).as_text()


def test_eager_results_keep_operand_spec(meshes):
  mesh = meshes["4x2"]
  for spec in (P("x", None), P("x"), P(None, "y"), P(("x", "y"),)):
    x = jaxon.device_put(A, NamedSharding(mesh, spec))
    assert (x + 1).sharding.spec == spec and jnp.sin(x).sharding.spec == spec
  x = jaxon.device_put(A, NamedSharding(mesh, P("x", None)))
  # JAX 0.10.2: a layout no operand has is read back without trailing Nones.
  assert jaxon.jit(lambda a: a.T)(x).sharding.spec == P(None, "x")
  assert jaxon.jit(lambda a: a[None])(x).sharding.spec == P(None, "x")


def test_partition_spec_shardings_need_a_mesh(meshes):
  f = jaxon.jit(lambda a: a * 2, in_shardings=P("x"), out_shardings=P(None, "y"))
  with pytest.raises(RuntimeError, match="jit requires a non-empty mesh in context if you "
                     "are passing `PartitionSpec`s to in_shardings"):
    f(A)
  with meshes["4x2"]:
    out = f(A)
  assert out.sharding == NamedSharding(meshes["4x2"], P(None, "y"))
  np.testing.assert_array_equal(np.asarray(out), 2 * A)
  with pytest.raises(TypeError, match="out_shardings leaf specifications are expected to be "
                     "PartitionSpec instances or None, but got 3"):
    jaxon.jit(lambda a: a, out_shardings=3)


def test_checkify_through_a_sharded_jit_keeps_its_layout(meshes):
  from jaxon.experimental import checkify
  sharding = NamedSharding(meshes["8"], P("x"))
  log = jaxon.jit(jnp.log, in_shardings=sharding, out_shardings=sharding)
  checked = jaxon.jit(checkify.checkify(log, errors=checkify.float_checks))
  err, y = checked(jnp.arange(8.0) - 1)
  assert "nan generated by primitive: log" in err.get()
  err, y = checked(jnp.arange(8.0) + 1)
  assert err.get() is None and y.sharding == sharding
  np.testing.assert_allclose(y, np.log(np.arange(8.0) + 1), rtol=1e-6)


# ----------------------------------------------------------------------------- donation
# What JAX 0.10.2 does on 2 CPU devices: an argument already laid out as the program takes
# it is given up (deleted) when an output can take its buffer; one that must be moved first
# gives up the moved copy and stays valid.


def test_donation_with_shardings():
  mesh = Mesh(np.array(jaxon.devices()[:2]), ("x",))
  rows, replicated = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
  double = jaxon.jit(lambda v: v * 2, in_shardings=rows, donate_argnums=0)
  uncommitted = jnp.arange(4.0)
  np.testing.assert_array_equal(double(uncommitted), [0, 2, 4, 6])
  assert not uncommitted.is_deleted()
  placed = jaxon.device_put(jnp.arange(4.0), rows)
  np.testing.assert_array_equal(double(placed), [0, 2, 4, 6])
  assert placed.is_deleted()
  # A committed argument to a jit given no shardings: XLA pairs it with the output.
  placed = jaxon.device_put(jnp.arange(4.0), rows)
  out = jaxon.jit(lambda v: v + 1, donate_argnums=0)(placed)
  assert placed.is_deleted() and out.sharding == rows
  np.testing.assert_array_equal(out, [1, 2, 3, 4])
  # No output has the argument's per-device block: JAX's warning, and the argument stays.
  placed = jaxon.device_put(jnp.arange(4.0), rows)
  gather = jaxon.jit(lambda v: v * 2, in_shardings=rows, out_shardings=replicated,
                     donate_argnums=0)
  with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[2\]"):
    np.testing.assert_array_equal(gather(placed), [0, 2, 4, 6])
  assert not placed.is_deleted()


def test_pmap_donation():
  step = jaxon.pmap(lambda v, w: v + w, donate_argnums=0)
  x, w = jnp.arange(4.0), jnp.ones(4)
  y = step(x, w)
  assert not x.is_deleted()  # moved onto the devices first: the copy is given up
  z = step(y, w)
  assert y.is_deleted() and not w.is_deleted()
  np.testing.assert_array_equal(z, np.arange(4.0) + 2)


def test_shardings_survive_jaxs_properties_on_the_cpp_base(monkeypatch):
  """Importing the real `jax` beside jaxon (the benchmarks do) puts read-only properties on
  jaxlib's C++ `Sharding`, the base of jaxon's shardings; they must still construct."""
  from jaxlib import _jax
  monkeypatch.setattr(_jax.Sharding, "_device_assignment",
                      property(lambda self: ()), raising=False)
  mesh = Mesh(np.array(jaxon.devices()[:2]), ("x",))
  assert NamedSharding(mesh, P("x"))._device_assignment == tuple(jaxon.devices()[:2])
  device = jaxon.devices()[1]
  assert SingleDeviceSharding(device)._device_assignment == (device,)


def test_key_arrays_placed_over_a_mesh():
  """device_put of a key array lays its buffer out by the key data's rank (a key's words
  in trailing dimensions no sharding splits): its shards, a vmap over it and a second
  device_put work, as with JAX (the buffer's sharding had the keys' rank)."""
  mesh = jaxon.make_mesh((2,), ("x",), devices=jaxon.devices()[:2])
  rows = jaxon.sharding.NamedSharding(mesh, jaxon.sharding.PartitionSpec("x"))
  keys = jaxon.random.split(jaxon.random.key(0), 4)
  placed = jaxon.device_put(keys, rows)
  assert placed.sharding == rows and jaxon.device_put(placed, rows) is placed
  assert [s.data.shape for s in placed.addressable_shards] == [(2,), (2,)]
  np.testing.assert_array_equal(jaxon.random.key_data(placed), jaxon.random.key_data(keys))
  draw = jaxon.vmap(lambda k: jaxon.random.normal(k, ()))
  np.testing.assert_array_equal(draw(placed), draw(keys))


def test_jit_refuses_an_argument_placed_otherwise_than_its_in_sharding():
  """As JAX's jit: an argument committed with another layout than its in_sharding is an
  error (JAX's text); one on the default device is moved, and so is one whose layout is
  the same, replicated, on another device."""
  mesh = jaxon.make_mesh((2,), ("x",), devices=jaxon.devices()[:2])
  rows, replicated = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
  x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
  double = lambda s: jaxon.jit(lambda a: a * 2, in_shardings=s)  # noqa: E731
  for placed, given in [(rows, replicated), (jaxon.devices()[1], rows),
                        (jaxon.devices()[0], rows)]:
    with pytest.raises(ValueError, match=r"Sharding passed to jit does not match the "
                       r"sharding on the respective arg\. Got jit sharding: .*\narg sharding"
                       r": .* for arg type: float32\[4,2\]"):
      double(given)(jaxon.device_put(x, placed))
  assert double(rows)(jnp.asarray(x)).sharding == rows
  on_0 = SingleDeviceSharding(jaxon.devices()[0])
  out = double(on_0)(jaxon.device_put(x, jaxon.devices()[1]))
  assert out.sharding == on_0 and (np.asarray(out) == 2 * x).all()
