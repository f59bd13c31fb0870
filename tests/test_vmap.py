"""vmap's API: in_axes/out_axes as ints, negative ints, None and pytrees; axis_size; nesting;
keyword arguments; errors. The oracle is a Python loop over examples, stacked."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon.numpy as jnp
from jaxon import jit, vmap

RNG = np.random.RandomState(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((4, 3)).astype(np.float32)


def f(x, y):
  return jnp.sin(x) * y + jnp.sum(x)


@pytest.mark.parametrize("in_axes,slicer", [
    ((0, 1), lambda k: (X[k], Y[:, k])),
    ((-2, -1), lambda k: (X[k], Y[:, k])),
    ((0, None), lambda k: (X[k], Y[:, 0])),
    ((None, 1), lambda k: (X[0], Y[:, k])),
])
def test_in_axes(in_axes, slicer):
  x = X if in_axes[0] is not None else X[0]
  y = Y if in_axes[1] is not None else Y[:, 0]
  expected = np.stack([f(*slicer(k)) for k in range(3)])
  np.testing.assert_allclose(vmap(f, in_axes=in_axes)(x, y), expected, rtol=1e-6)
  np.testing.assert_allclose(jit(vmap(f, in_axes=in_axes))(x, y), expected, rtol=1e-6)


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_out_axes(out_axes):
  out = vmap(lambda x: x * 2.0, in_axes=0, out_axes=out_axes)(X)
  np.testing.assert_allclose(out, np.moveaxis(X * 2.0, 0, out_axes))


def test_pytree_axes_and_unmapped_outputs():
  def g(d, s):
    return {"sum": d["a"] + d["b"], "const": s}, d["a"]
  d = {"a": X, "b": Y.T}
  out, a = vmap(g, in_axes=({"a": 0, "b": 0}, None), out_axes=({"sum": 1, "const": None}, 0))(
      d, 5.0)
  np.testing.assert_allclose(out["sum"], (X + Y.T).T)
  assert float(out["const"]) == 5.0
  np.testing.assert_allclose(a, X)


def test_unmapped_output_is_broadcast_when_out_axes_asks():
  out = vmap(lambda x: 1.0, in_axes=0)(X)
  np.testing.assert_allclose(out, np.ones(3))


def test_kwargs_are_mapped_along_zero():
  out = vmap(lambda x, scale: x * scale)(X, scale=np.arange(3.0, dtype=np.float32))
  np.testing.assert_allclose(out, X * np.arange(3.0)[:, None])


def test_axis_size_without_mapped_inputs():
  out = vmap(lambda: jnp.ones(2), in_axes=(), axis_size=4)()
  assert out.shape == (4, 2)


def test_nested_vmap_is_an_outer_product():
  outer = vmap(vmap(lambda a, b: a * b, in_axes=(None, 0)), in_axes=(0, None))
  a, b = np.arange(3.0, dtype=np.float32), np.arange(4.0, dtype=np.float32)
  np.testing.assert_allclose(outer(a, b), np.outer(a, b))


def test_vmap_of_matmul_moves_no_data_needlessly():
  batched = vmap(jnp.dot, in_axes=(0, None))
  np.testing.assert_allclose(batched(X, Y), X @ Y, rtol=1e-5)


def test_inconsistent_sizes_raise():
  with pytest.raises(ValueError, match="inconsistent sizes"):
    vmap(f)(X, Y)


def test_axis_out_of_range_names_the_shape():
  with pytest.raises(ValueError, match=r"its shape is \(3, 4\)"):
    vmap(f, in_axes=(2, 0))(X, Y)


def test_in_axes_length_must_match_arguments():
  with pytest.raises(ValueError, match="len\\(in_axes\\)=1, len\\(args\\)=2"):
    vmap(f, in_axes=(0,))(X, Y)


def test_no_mapped_arguments_needs_axis_size():
  with pytest.raises(ValueError, match="at least one non-None"):
    vmap(f, in_axes=(None, None))(X, Y)


def test_mapped_output_with_out_axes_none_raises():
  with pytest.raises(ValueError, match="out_axes is None"):
    vmap(lambda x: x, out_axes=None)(X)
