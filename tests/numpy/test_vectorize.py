"""jnp.vectorize (gufunc signatures, excluded arguments, broadcasting), apply_along_axis
and apply_over_axes against NumPy, under jit and vmap, and differentiated."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from tests.transform_util import check_vmap
from tests.util import check_grads

TOL = dict(rtol=2e-5, atol=2e-5)


def _rand(shape, seed=0):
  return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


def _close(got, want, what):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  np.testing.assert_allclose(got, want, err_msg=what, **TOL)


# (signature, jnp function, NumPy function, argument shapes)
SIGNATURE_CASES = [
    (None, lambda x, y: x * y + 1, lambda x, y: x * y + 1, [(4, 3), (3,)]),
    (None, lambda x, y: x * y + 1, lambda x, y: x * y + 1, [(4, 1), (1, 3)]),
    (None, jnp.sin, np.sin, [(2, 1, 3)]),
    ("(n),(n)->()", jnp.dot, np.dot, [(4, 3), (3,)]),
    ("(n),(n)->()", jnp.dot, np.dot, [(2, 1, 3), (5, 3)]),
    ("(m,n),(n,k)->(m,k)", jnp.matmul, np.matmul, [(2, 1, 3, 4), (5, 4, 2)]),
    ("(n)->(n)", jnp.cumsum, np.cumsum, [(3, 5)]),
    ("(n)->()", jnp.max, np.max, [(1, 1, 4)]),
    ("(n),()->(n)", lambda x, s: x * s, lambda x, s: x * s, [(3, 4), (2, 1)]),
    ("()->(k)", lambda x: jnp.stack([x, 2 * x]), lambda x: np.stack([x, 2 * x]), [(3,)]),
]


@pytest.mark.parametrize("case", range(len(SIGNATURE_CASES)))
def test_vectorize_matches_numpy(case):
  signature, fn, np_fn, shapes = SIGNATURE_CASES[case]
  args = [_rand(s, i) for i, s in enumerate(shapes)]
  want = np.vectorize(np_fn, signature=signature)(*args)
  f = jnp.vectorize(fn, signature=signature)
  _close(f(*args), want, f"vectorize {signature} eager")
  _close(jaxon.jit(f)(*args), want, f"vectorize {signature} jit")


def test_vectorize_multiple_outputs():
  x = _rand((3, 4))
  f = jnp.vectorize(lambda v: (v.sum(), v.max()), signature="(n)->(),()")
  s, m = f(x)
  _close(s, x.sum(1), "first output")
  _close(m, x.max(1), "second output")
  q, r = jnp.vectorize(jnp.divmod)(x, 0.7)
  wq, wr = np.divmod(x, np.float32(0.7))
  _close(q, wq, "divmod quotient")
  _close(r, wr, "divmod remainder")


def test_vectorize_excluded_and_keywords():
  x, w = _rand((3, 4)), _rand((4,), 1)
  power = jnp.vectorize(lambda v, p: v ** p, excluded={1})
  _close(power(x, 2), x ** 2, "excluded position")
  scaled = jnp.vectorize(lambda v, *, scale, shift: v * scale + shift, excluded={"shift"})
  want = np.vectorize(lambda v, *, scale, shift: v * scale + shift,
                      excluded={"shift"})(x, scale=w, shift=1.0)
  _close(scaled(x, scale=w, shift=1.0), want, "keyword vectorized and excluded")
  dot = jnp.vectorize(lambda a, b, transpose: (b @ a) if transpose else (a @ b),
                      signature="(n),(n)->()", excluded={2})
  _close(dot(x, w, True), x @ w, "excluded with signature")
  none_arg = jnp.vectorize(lambda v, extra: v + (0 if extra is None else extra))
  _close(none_arg(x, None), x, "None passed through")


def test_vectorize_errors():
  with pytest.raises(ValueError, match="signature"):
    jnp.vectorize(jnp.dot, signature="(n)(n)->()")
  with pytest.raises(ValueError, match="inconsistent"):
    jnp.vectorize(jnp.dot, signature="(n),(n)->()")(np.ones(3), np.ones(4))
  with pytest.raises(ValueError, match="fewer dimensions"):
    jnp.vectorize(jnp.matmul, signature="(m,n),(n,k)->(m,k)")(np.ones(3), np.ones((3, 2)))
  with pytest.raises(ValueError, match="core dimensions"):
    jnp.vectorize(lambda x: x, signature="(n)->()")(np.ones((2, 3)))
  with pytest.raises(TypeError, match="takes 2"):
    jnp.vectorize(jnp.dot, signature="(n),(n)->()")(np.ones(3))


def test_vectorize_vmap_and_grads():
  f = jnp.vectorize(lambda x, y: jnp.sum(x * jnp.sin(y)), signature="(n),(n)->()")
  x, y = _rand((2, 3)), _rand((3,), 1)
  check_vmap(f, [x, y])
  check_grads(f, (x, y), order=2, modes=("fwd", "rev"))
  g = jnp.vectorize(lambda a: a ** 3)
  check_grads(g, (x,), order=2)


# ----------------------------------------------------------------------------- apply_*

APPLY_CASES = [
    (lambda v: v.sum(), lambda v: v.sum()),
    (jnp.diff, np.diff),
    (lambda v: jnp.outer(v, v[:2]), lambda v: np.outer(v, v[:2])),
    (jnp.sort, np.sort),
]


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("case", range(len(APPLY_CASES)))
def test_apply_along_axis_matches_numpy(case, axis):
  fn, np_fn = APPLY_CASES[case]
  x = _rand((2, 3, 4))
  want = np.apply_along_axis(np_fn, axis, x)
  _close(jnp.apply_along_axis(fn, axis, x), want, f"apply_along_axis axis={axis}")
  _close(jaxon.jit(lambda x: jnp.apply_along_axis(fn, axis, x))(x), want, "under jit")


def test_apply_along_axis_extra_args_and_grads():
  x = _rand((3, 4))
  got = jnp.apply_along_axis(lambda v, p, *, q: v ** p + q, 1, x, 2, q=1.0)
  _close(got, x ** 2 + 1, "extra arguments")
  check_grads(lambda x: jnp.apply_along_axis(lambda v: jnp.cumsum(v * v), 0, x), (x,),
              order=2)
  check_vmap(lambda x: jnp.apply_along_axis(jnp.cumprod, 1, x), [x])


@pytest.mark.parametrize("axes", [0, [0, 2], [-1], (1, 2)])
def test_apply_over_axes_matches_numpy(axes):
  x = _rand((2, 3, 4))
  for fn, np_fn in ((jnp.sum, np.sum), (jnp.cumsum, np.cumsum)):
    _close(jnp.apply_over_axes(fn, x, axes), np.apply_over_axes(np_fn, x, axes),
           f"apply_over_axes {axes}")
  check_grads(lambda x: jnp.apply_over_axes(jnp.mean, x, axes), (x,), order=2)


def test_apply_over_axes_rank_error():
  with pytest.raises(ValueError, match="rank"):
    jnp.apply_over_axes(lambda a, axis: a.sum(), np.ones((2, 3)), [0])
