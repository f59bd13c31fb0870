"""jaxon.numpy.linalg against NumPy: property-based tests over random shapes (batch axes
broadcast, axes, orders, keepdims) under jit, every function eagerly and under jit on fixed
shapes, vmap against a loop, and the errors. Derivatives are in test_grads.py.

Eager evaluation compiles each primitive separately for every new shape, so the
property-based tests, which draw many shapes, run jitted only."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxon
import jaxon.numpy as jnp
from tests.linalg.linalg_util import adjoint, close, eager_and_jit, hpd, rand
from tests.transform_util import check_vmap
from tests.util import check_grads

F32 = np.dtype(np.float32)
# Each new shape compiles new programs: a few examples per property keep the file fast.
FEW = settings(max_examples=4, deadline=None)


def _check(f, np_f, *args, what="", eager=True):
  """`f(*args)` under jit (and eagerly) equals NumPy's answer (cast to f's dtype)."""
  out = eager_and_jit(f, *args) if eager else jaxon.jit(f)(*args)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    expected = np_f(*args)
  for o, e in zip(jaxon.tree_leaves(out), jaxon.tree_leaves(expected)):
    o = np.asarray(o)
    close(o, np.asarray(e).astype(o.dtype), F32, what)


_SQUARE = rand((3, 3)) + 3 * np.eye(3, dtype=np.float32)
_batch = st.lists(st.integers(1, 2), max_size=2).map(tuple)
_size = st.integers(1, 4)


# ----------------------------------------------------------------------------- properties

@FEW
@given(_batch, _size, st.integers(0, 10**6))
def test_det_slogdet_inv(batch, n, seed):
  a = rand((*batch, n, n), seed=seed) + n * np.eye(n, dtype=np.float32)
  _check(lambda a: (jnp.linalg.det(a), *jnp.linalg.slogdet(a), jnp.linalg.inv(a)),
         lambda a: (np.linalg.det(a), *np.linalg.slogdet(a), np.linalg.inv(a)), a,
         what="det, slogdet, inv", eager=False)


def test_det_slogdet_inv_eager():
  a = _SQUARE  # the vmap tests' shape: eager programs compiled once serve both
  for f, np_f in ((jnp.linalg.det, np.linalg.det), (jnp.linalg.slogdet, np.linalg.slogdet),
                  (jnp.linalg.inv, np.linalg.inv)):
    _check(f, np_f, a, what=f.__name__)


def test_slogdet_of_singular_matrix():
  sign, logdet = jnp.linalg.slogdet(np.ones((2, 2), np.float32))
  assert float(sign) == 0 and float(logdet) == -np.inf


@FEW
@given(_batch, _batch, _size, st.integers(1, 3), st.booleans(), st.integers(0, 10**6))
def test_solve_broadcasts_batch_axes(a_batch, b_batch, n, k, vector, seed):
  a = rand((*a_batch, n, n), seed=seed) + n * np.eye(n, dtype=np.float32)
  b = rand((n,) if vector else (*b_batch, n, k), seed=seed + 1)
  _check(jnp.linalg.solve, np.linalg.solve, a, b, what="solve", eager=False)


def test_solve_permutes_rows_exactly():
  """LU's row permutation moves values as they are: an infinity in one row of b does not
  turn the other rows into NaN (as a product with a permutation matrix would: 0 * inf),
  and -0. stays -0. (NumPy's and JAX's values.)"""
  swap = np.array([[0., 1.], [1., 0.]], np.float32)
  b = np.array([np.inf, 1.], np.float32)
  np.testing.assert_array_equal(jnp.linalg.solve(swap, b), np.linalg.solve(swap, b))
  np.testing.assert_array_equal(jnp.linalg.solve(swap, b), [np.nan, np.inf])
  signed = np.asarray(jnp.linalg.solve(swap, np.array([[-0., 1.], [2., -0.]], np.float32)))
  np.testing.assert_array_equal(np.signbit(signed), [[False, True], [True, False]])


_VECTOR_ORDS = [None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf]
_MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@FEW
@given(st.lists(st.integers(1, 3), min_size=2, max_size=3), st.data())
def test_norm(shape, data):
  x = rand(shape, seed=len(shape))
  ndim = len(shape)
  if data.draw(st.booleans(), "matrix norm"):
    ord = data.draw(st.sampled_from(_MATRIX_ORDS), "ord")
    axis = tuple(data.draw(st.permutations(range(ndim)), "axes")[:2])
  else:
    ord = data.draw(st.sampled_from(_VECTOR_ORDS), "ord")
    axis = data.draw(st.integers(-ndim, ndim - 1), "axis")
  keepdims = data.draw(st.booleans(), "keepdims")
  f = lambda x: jnp.linalg.norm(x, ord, axis, keepdims)
  _check(f, lambda x: np.linalg.norm(x, ord, axis, keepdims), x,
         what=f"norm(ord={ord}, axis={axis}, keepdims={keepdims})", eager=False)


@pytest.mark.parametrize("ord,keepdims", [(None, False), (2, True)])
def test_norm_without_axis(ord, keepdims):
  for x in (rand((4,)), rand((3, 4))):
    _check(lambda x: jnp.linalg.norm(x, ord, keepdims=keepdims),
           lambda x: np.linalg.norm(x, ord, keepdims=keepdims), x, what="norm, axis=None")
  _check(lambda x: jnp.linalg.norm(x, keepdims=keepdims),
         lambda x: np.linalg.norm(x, keepdims=keepdims), rand((2, 3, 2)), what="norm of 3-D")


# ----------------------------------------------------------------------------- decompositions

def test_cholesky():
  a = hpd((2, 3, 3))
  _check(jnp.linalg.cholesky, np.linalg.cholesky, a, what="cholesky")
  _check(lambda a: jnp.linalg.cholesky(a, upper=True), lambda a: adjoint(np.linalg.cholesky(a)),
         a, what="cholesky(upper=True)")


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, mode):
  x = rand(shape)
  out = eager_and_jit(lambda x: jnp.linalg.qr(x, mode), x)
  expected = np.linalg.qr(x, mode)
  if mode == "r":  # R is unique up to the signs of its rows
    close(np.abs(out), np.abs(expected), F32, "qr mode r")
    return
  q, r = map(np.asarray, out)
  close(q.shape, expected.Q.shape, F32, "qr Q shape")
  close(q @ r, x, F32, f"qr mode {mode}: Q R")
  close(np.abs(r), np.abs(expected.R), F32, f"qr mode {mode}: |R|")


@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(full_matrices):
  x = rand((2, 4, 3))
  u, s, vh = map(np.asarray, eager_and_jit(
      lambda x: jnp.linalg.svd(x, full_matrices=full_matrices), x))
  close(s, np.linalg.svd(x, compute_uv=False), F32, "svd S")
  close((u[..., :3] * s[..., None, :]) @ vh[..., :3, :], x, F32, "svd U S Vh")
  close(u.shape, np.linalg.svd(x, full_matrices=full_matrices).U.shape, F32, "svd U shape")
  _check(jnp.linalg.svdvals, np.linalg.svdvals, x, what="svdvals")


@pytest.mark.parametrize("compute_uv", [True, False])
def test_svd_hermitian(compute_uv):
  x = rand((3, 3))
  x = x + x.T
  out = eager_and_jit(lambda x: jnp.linalg.svd(x, compute_uv=compute_uv, hermitian=True), x)
  if not compute_uv:
    close(out, np.linalg.svd(x, compute_uv=False), F32, "svd(hermitian) S")
    return
  u, s, vh = map(np.asarray, out)
  close(s, np.linalg.svd(x, compute_uv=False), F32, "svd(hermitian) S")
  close((u * s) @ vh, x, F32, "svd(hermitian) U S Vh")


@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh(UPLO):
  x = rand((2, 3, 3))
  x = x + np.swapaxes(x, -1, -2)
  w, v = map(np.asarray, eager_and_jit(lambda x: jnp.linalg.eigh(x, UPLO), x))
  close(w, np.linalg.eigvalsh(x), F32, "eigh eigenvalues")
  close(x @ v, v * w[..., None, :], F32, "eigh: A V = V Λ")
  _check(lambda x: jnp.linalg.eigvalsh(x, UPLO), lambda x: np.linalg.eigvalsh(x, UPLO), x,
         what="eigvalsh")


def test_eig_and_eigvals():
  x = rand((2, 3, 3))
  w, v = map(np.asarray, eager_and_jit(jnp.linalg.eig, x))
  close(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(x)), F32, "eig eigenvalues")
  close(x @ v, v * w[..., None, :], F32, "eig: A V = V Λ")
  close(np.sort_complex(np.asarray(jnp.linalg.eigvals(x))), np.sort_complex(w), F32,
        "eigvals")


# ----------------------------------------------------------------------------- the rest

@pytest.mark.parametrize("a_shape,b_shape", [((5, 3), (5, 2)), ((3, 5), (5,))])
def test_lstsq(a_shape, b_shape):
  a, b = rand(a_shape, seed=1), rand(b_shape, seed=2)
  x, resid, rank, s = eager_and_jit(jnp.linalg.lstsq, a[:, :a_shape[1]], b[:a_shape[0]])
  ex, eresid, erank, es = np.linalg.lstsq(a, b[:a_shape[0]])
  close(x, ex.astype(np.float32), F32, "lstsq x")
  close(s, es.astype(np.float32), F32, "lstsq s")
  assert int(rank) == erank
  if eresid.size:
    close(resid, eresid.astype(np.float32), F32, "lstsq residuals")
  _, np_resid, _, _ = jnp.linalg.lstsq(a, b[:a_shape[0]], numpy_resid=True)
  close(np_resid, eresid.astype(np.float32), F32, "lstsq numpy_resid")


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv(hermitian):
  x = rand((2, 3, 3) if hermitian else (2, 4, 3))
  if hermitian:
    x = x + np.swapaxes(x, -1, -2)
  _check(lambda x: jnp.linalg.pinv(x, hermitian=hermitian),
         lambda x: np.linalg.pinv(x, hermitian=hermitian), x, what="pinv")
  rank_deficient = np.outer(np.arange(1., 4.), np.ones(3)).astype(np.float32)
  _check(jnp.linalg.pinv, np.linalg.pinv, rank_deficient, what="pinv of rank 1")


@pytest.mark.parametrize("n", [0, 1, 3, -2])
def test_matrix_power(n):
  a = rand((2, 3, 3)) + 2 * np.eye(3, dtype=np.float32)
  _check(lambda a: jnp.linalg.matrix_power(a, n), lambda a: np.linalg.matrix_power(a, n), a,
         what=f"matrix_power {n}")


def test_matrix_rank():
  x = np.stack([np.ones((3, 3)), np.eye(3), np.diag([1., 1., 0.])]).astype(np.float32)
  _check(jnp.linalg.matrix_rank, np.linalg.matrix_rank, x, what="matrix_rank")
  _check(lambda x: jnp.linalg.matrix_rank(x, tol=1.5),
         lambda x: np.linalg.matrix_rank(x, tol=1.5), x * np.array([1, 2, 1])[:, None, None],
         what="matrix_rank(tol)")


@pytest.mark.parametrize("ends", ["matrices", "vectors"])
def test_multi_dot(ends):
  shapes = [(2, 5), (5, 1), (1, 4), (4, 3)] if ends == "matrices" else [(5,), (5, 2), (2, 3),
                                                                        (3,)]
  arrays = [rand(s, seed=i) for i, s in enumerate(shapes)]
  _check(lambda *xs: jnp.linalg.multi_dot(xs), lambda *xs: np.linalg.multi_dot(xs), *arrays,
         what="multi_dot")


def test_tensorsolve_and_tensorinv():
  a = _SQUARE.reshape(3, 1, 3)
  _check(jnp.linalg.tensorsolve, np.linalg.tensorsolve, a, rand((3,), seed=1),
         what="tensorsolve")
  _check(lambda a: jnp.linalg.tensorsolve(a, np.ones(3, np.float32), axes=(0,)),
         lambda a: np.linalg.tensorsolve(a, np.ones(3, np.float32), axes=(0,)),
         a.transpose(1, 2, 0), what="tensorsolve(axes=...)")
  _check(lambda a: jnp.linalg.tensorinv(a, ind=1), lambda a: np.linalg.tensorinv(a, ind=1), a,
         what="tensorinv")


def test_array_api_functions():
  x, y = rand((2, 4, 3)), rand((2, 4, 3), seed=1)
  cases = [
      ("cross", lambda x, y: jnp.linalg.cross(x, y), np.linalg.cross),
      ("cross axis", lambda x, y: jnp.linalg.cross(x[:, :3], y[:, :3], axis=1),
       lambda x, y: np.linalg.cross(x[:, :3], y[:, :3], axis=1)),
      ("vecdot", lambda x, y: jnp.linalg.vecdot(x, y, axis=1),
       lambda x, y: np.linalg.vecdot(x, y, axis=1)),
      ("outer", lambda x, y: jnp.linalg.outer(x[0, 0], y[0, :, 0]),
       lambda x, y: np.linalg.outer(x[0, 0], y[0, :, 0])),
      ("trace", lambda x, y: jnp.linalg.trace(x, offset=1),
       lambda x, y: np.linalg.trace(x, offset=1)),
      ("diagonal", lambda x, y: jnp.linalg.diagonal(x, offset=-1),
       lambda x, y: np.linalg.diagonal(x, offset=-1)),
      ("matmul", lambda x, y: jnp.linalg.matmul(x, np.swapaxes(y, -1, -2)),
       lambda x, y: np.linalg.matmul(x, np.swapaxes(y, -1, -2))),
      ("matrix_transpose", lambda x, y: jnp.linalg.matrix_transpose(x),
       lambda x, y: np.linalg.matrix_transpose(x)),
      ("tensordot", lambda x, y: jnp.linalg.tensordot(x, y[0].T, axes=1),
       lambda x, y: np.linalg.tensordot(x, y[0].T, axes=1)),
      ("vector_norm", lambda x, y: jnp.linalg.vector_norm(x, axis=(0, 2), ord=3, keepdims=True),
       lambda x, y: np.linalg.vector_norm(x, axis=(0, 2), ord=3, keepdims=True)),
      ("matrix_norm", lambda x, y: jnp.linalg.matrix_norm(x, ord="nuc"),
       lambda x, y: np.linalg.matrix_norm(x, ord="nuc")),
  ]
  for name, f, np_f in cases:  # thin wrappers of jnp functions: jitted only
    _check(f, np_f, x, y, what=name, eager=False)


# ----------------------------------------------------------------------------- vmap

VMAP_CASES = [
    ("det", jnp.linalg.det, (_SQUARE,)),
    ("slogdet", jnp.linalg.slogdet, (_SQUARE,)),
    ("solve", jnp.linalg.solve, (_SQUARE, rand((3, 2), seed=1))),
    ("pinv", jnp.linalg.pinv, (rand((4, 3)),)),
]


@pytest.mark.parametrize("name,f,args", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap(name, f, args):
  check_vmap(f, args, axes=(-1,), tol=dict(rtol=1e-4, atol=1e-4))


# ----------------------------------------------------------------------------- errors

def test_errors():
  with pytest.raises(ValueError, match=r"square matrices .*\(3, 4\)"):
    jnp.linalg.inv(np.ones((3, 4), np.float32))
  with pytest.raises(ValueError, match="b must have shape"):
    jnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones((2, 1), np.float32))
  with pytest.raises(ValueError, match="invalid order 'fro' for a vector norm"):
    jnp.linalg.norm(np.ones(3, np.float32), "fro")
  with pytest.raises(ValueError, match="improper number of axes"):
    jnp.linalg.norm(np.ones((2, 2, 2), np.float32), axis=(0, 1, 2))
  with pytest.raises(ValueError, match="unsupported mode"):
    jnp.linalg.qr(np.eye(2, dtype=np.float32), "economic")
  with pytest.raises(TypeError, match="must be an integer"):
    jnp.linalg.matrix_power(np.eye(2, dtype=np.float32), 1.5)


def test_integer_inputs_are_promoted():
  out = jnp.linalg.det(np.array([[2, 1], [1, 2]], np.int32))
  assert out.dtype == jnp.float32
  close(out, np.float32(3.), F32, "det of int32")


def test_empty_matrices():
  empty = np.zeros((2, 0, 0), np.float32)
  close(jnp.linalg.det(empty), np.ones(2), F32, "det of 0×0 matrices")
  close(jnp.linalg.inv(empty), empty, F32, "inv of 0×0 matrices")
  wide = np.zeros((0, 3), np.float32)
  for full in (True, False):
    for ours, theirs in zip(jnp.linalg.svd(wide, full_matrices=full),
                            np.linalg.svd(wide, full_matrices=full)):
      close(ours, theirs, F32, f"svd of a 0×3 matrix, full_matrices={full}")
    for ours, theirs in zip(jnp.linalg.qr(wide.T, "complete" if full else "reduced"),
                            np.linalg.qr(wide.T, "complete" if full else "reduced")):
      close(ours, theirs, F32, f"qr of a 3×0 matrix, full={full}")


# ----------------------------------------------------------------------------- qr raw, cond
# `cond` is reached in its module until jaxon/numpy/linalg.py re-exports it.


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (1, 1), (3, 1), (0, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_qr_raw_matches_numpy(shape, dtype):
  """LAPACK's compact form is unique given its sign conventions, so it matches exactly."""
  x = rand(shape, dtype)
  h, tau = jaxon.jit(lambda x: jnp.linalg.qr(x, "raw"))(x)  # eagerly: see the next test
  want_h, want_tau = np.linalg.qr(x, "raw")
  assert h.dtype == dtype and tau.dtype == dtype, f"qr raw dtypes {h.dtype}, {tau.dtype}"
  close(h, want_h, F32, f"qr raw h of {shape} {np.dtype(dtype).name}")
  close(tau, want_tau, F32, f"qr raw tau of {shape} {np.dtype(dtype).name}")


def test_qr_raw_of_already_triangular_matrix_keeps_it():
  x = np.diag(np.array([1.0, 0.0, -3.0], np.float32))
  h, tau = eager_and_jit(lambda x: jnp.linalg.qr(x, "raw"), x)
  want_h, want_tau = np.linalg.qr(x, "raw")
  close(h, want_h, F32, "qr raw h of a diagonal matrix")
  close(tau, want_tau, F32, "qr raw tau of a diagonal matrix (no reflections)")


COND_ORDERS = [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.parametrize("p", COND_ORDERS, ids=map(str, COND_ORDERS))
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cond_matches_numpy(p, dtype):
  x = rand((2, 3, 3), dtype) + 2 * np.eye(3, dtype=dtype)
  _check(lambda x: jnp.linalg.cond(x, p), lambda x: np.linalg.cond(x, p), x,
         what=f"cond p={p} {np.dtype(dtype).name}")


@pytest.mark.parametrize("p", [None, -2])
def test_cond_of_rectangular_matrices(p):
  x = rand((2, 3, 5))
  _check(lambda x: jnp.linalg.cond(x, p), lambda x: np.linalg.cond(x, p), x, what=f"cond p={p}")


@pytest.mark.parametrize("p", [1, -1, np.inf, -np.inf, "fro"])
def test_cond_of_singular_and_nan_matrices(p):
  singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
  assert np.isinf(np.asarray(jnp.linalg.cond(singular, p))), f"cond of a singular matrix, p={p}"
  with_nan = np.array([[np.nan, 2.0], [2.0, 4.0]], np.float32)
  assert np.isnan(np.asarray(jnp.linalg.cond(with_nan, p))), f"cond of a NaN matrix, p={p}"


def test_cond_errors_and_integers():
  with pytest.raises(ValueError, match="square matrices"):
    jnp.linalg.cond(np.ones((2, 3), np.float32), 1)
  with pytest.raises(ValueError, match="matrices"):
    jnp.linalg.cond(np.ones(3, np.float32))
  close(jnp.linalg.cond(np.array([[1, 0], [0, 4]])), np.float32(4.0), F32, "cond of int32")


@pytest.mark.parametrize("p", [None, "fro"], ids=str)
def test_cond_grads(x64, p):
  x = rand((3, 3), np.float64) + 3 * np.eye(3)
  check_grads(lambda x: jnp.linalg.cond(x, p), (x,), order=1, modes=("fwd", "rev"))
