"""jaxon.lax.linalg: each decomposition checked by reconstruction and against NumPy/SciPy
(batched, eager and under jit, real and complex, in 32 and 64 bits), vmap against a loop,
the lowering, and the errors. Derivatives are in test_grads.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import jaxon
from jaxon._src.interpreters import mlir
from jaxon.lax import linalg
from tests.linalg.linalg_util import adjoint, close, eager_and_jit, hpd, rand
from tests.transform_util import check_vmap

# (bits, kind, shape): bits selects the `precision` fixture (x64 is switched once per module,
# as it clears the compile caches); each case compiles its own programs, so the cases cover
# every dtype, batched and not, without their full product.
SQUARE_CASES = [(32, "real", (3, 3)), (32, "complex", (2, 1, 3, 3)), (64, "real", (2, 3, 3)),
                (64, "complex", (3, 3))]
RECTANGULAR_CASES = [(32, "real", (5, 3)), (32, "complex", (2, 3, 4)),
                     (64, "real", (2, 1, 3, 4)), (64, "complex", (4, 3))]
CASE_ARGS = dict(argnames="precision,kind,shape", indirect=["precision"])


def _call(f, *args):
  """Eager evaluation: each primitive runs as its own compiled program, lowered as under jit
  (test_jit checks whole jitted functions)."""
  return f(*args)


@pytest.mark.parametrize(argvalues=SQUARE_CASES, **CASE_ARGS)
def test_cholesky(precision, kind, shape):
  dtype = getattr(precision, kind)
  x = hpd(shape, dtype)
  l = np.asarray(_call(linalg.cholesky, x))
  assert l.dtype == dtype
  close(np.triu(l, 1), np.zeros_like(l), dtype, "cholesky: upper triangle")
  close(l @ adjoint(l), x, dtype, "cholesky: L Lᴴ")
  close(l, np.linalg.cholesky(x), dtype, "cholesky vs NumPy")


def test_cholesky_of_indefinite_matrix_is_nan():
  out = np.asarray(linalg.cholesky(np.array([[1., 2.], [2., 1.]], np.float32)))
  assert np.isnan(out[np.tril_indices(2)]).all() and out[0, 1] == 0


def test_cholesky_marks_only_the_indefinite_matrices_of_a_batch():
  batch = np.array([[[1., 2.], [2., 1.]], [[4., 2.], [2., 2.]]], np.float32)
  out = np.asarray(linalg.cholesky(batch))
  assert np.isnan(out[0][np.tril_indices(2)]).all() and out[0, 0, 1] == 0
  np.testing.assert_array_equal(out[1], [[2., 0.], [1., 1.]])


# Each side, triangle, op(a) (a, aᵀ, conj(a), aᴴ) and diagonal kind appears at least once.
@pytest.mark.parametrize("left_side,lower,transpose_a,conjugate_a,unit_diagonal", [
    (True, True, False, False, False), (True, False, True, True, True),
    (False, True, False, True, True), (False, False, True, False, False),
    (True, True, True, False, True), (False, False, False, False, True),
])
def test_triangular_solve(left_side, lower, transpose_a, conjugate_a, unit_diagonal):
  dtype = np.dtype(np.complex64)
  a = rand((2, 3, 3), dtype, 1) + 3 * np.eye(3, dtype=dtype)
  b = rand((2, 3, 2) if left_side else (2, 2, 3), dtype, 2)
  x = _call(lambda a, b: linalg.triangular_solve(
      a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
      conjugate_a=conjugate_a, unit_diagonal=unit_diagonal), a, b)
  op = np.tril(a) if lower else np.triu(a)
  if unit_diagonal:
    op = op - op * np.eye(3) + np.eye(3)
  op = np.swapaxes(op, -1, -2) if transpose_a else op
  op = np.conj(op) if conjugate_a else op
  product = op @ np.asarray(x) if left_side else np.asarray(x) @ op
  close(product, b, dtype, "triangular_solve: op(a) x = b")


@pytest.mark.parametrize(argvalues=SQUARE_CASES[:1] + RECTANGULAR_CASES, **CASE_ARGS)
def test_lu(precision, kind, shape):
  dtype = getattr(precision, kind)
  x = rand(shape, dtype, 2)
  lu, pivots, perm = map(np.asarray, _call(linalg.lu, x))
  m, n = shape[-2:]
  k = min(m, n)
  assert pivots.dtype == perm.dtype == np.int32
  assert pivots.shape == (*shape[:-2], k) and perm.shape == (*shape[:-2], m)
  l = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
  u = np.triu(lu[..., :k, :])
  close(l @ u, np.take_along_axis(x, perm[..., None], axis=-2), dtype, "lu: x[perm] = L U")
  for idx in np.ndindex(shape[:-2]):
    np.testing.assert_array_equal(pivots[idx], scipy.linalg.lu_factor(x[idx])[1])
  np.testing.assert_array_equal(linalg.lu_pivots_to_permutation(pivots, m), perm)


def test_lu_pivots_to_permutation():
  pivots = np.array([[2, 2, 2], [0, 1, 2]], np.int32)
  out = _call(lambda p: linalg.lu_pivots_to_permutation(p, 4), pivots)
  np.testing.assert_array_equal(out, [[2, 0, 1, 3], [0, 1, 2, 3]])


@pytest.mark.parametrize(argvalues=RECTANGULAR_CASES, **CASE_ARGS)
def test_qr_pivoting(precision, kind, shape):
  """x[…, p] = Q R with |R|'s diagonal non-increasing, the permutation SciPy's (LAPACK's)."""
  dtype = getattr(precision, kind)
  x = rand(shape, dtype, 3)
  q, r, p = map(np.asarray, _call(lambda x: linalg.qr(x, pivoting=True), x))
  assert p.dtype == np.int32 and p.shape == shape[:-2] + shape[-1:]
  close(q @ r, np.take_along_axis(x, p[..., None, :], -1), dtype, "qr: Q R = x[…, p]")
  diagonal = np.abs(np.diagonal(r, axis1=-2, axis2=-1))
  assert np.all(diagonal[..., :-1] >= diagonal[..., 1:] * (1 - 1e-5)), diagonal
  for i in np.ndindex(*shape[:-2]):
    np.testing.assert_array_equal(p[i], scipy.linalg.qr(x[i], pivoting=True)[2])


@pytest.mark.parametrize(argvalues=RECTANGULAR_CASES, **CASE_ARGS)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr(precision, kind, shape, full_matrices):
  dtype = getattr(precision, kind)
  x = rand(shape, dtype, 3)
  q, r = map(np.asarray, _call(lambda x: linalg.qr(x, full_matrices=full_matrices), x))
  m, n = shape[-2:]
  k = m if full_matrices else min(m, n)
  assert q.shape == (*shape[:-2], m, k) and r.shape == (*shape[:-2], k, n)
  close(q @ r, x, dtype, "qr: Q R")
  close(adjoint(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype,
        "qr: QᴴQ = I")
  close(np.tril(r, -1), np.zeros_like(r), dtype, "qr: R upper triangular")


@pytest.mark.parametrize(argvalues=RECTANGULAR_CASES, **CASE_ARGS)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(precision, kind, shape, full_matrices):
  dtype = getattr(precision, kind)
  x = rand(shape, dtype, 4)
  u, s, vh = map(np.asarray, _call(
      lambda x: linalg.svd(x, full_matrices=full_matrices), x))
  k = min(shape[-2:])
  assert s.dtype == precision.real
  close(s, np.linalg.svd(x, compute_uv=False), dtype, "svd: singular values")
  close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], x, dtype, "svd: U S Vᴴ")
  for name, m in (("U", u), ("Vh", adjoint(vh))):
    eye = np.broadcast_to(np.eye(m.shape[-1]), m.shape[:-2] + (m.shape[-1],) * 2)
    close(adjoint(m) @ m, eye, dtype, f"svd: {name} orthonormal")
  close(_call(lambda x: linalg.svd(x, compute_uv=False), x), s, dtype,
        "svd(compute_uv=False)")


@pytest.mark.parametrize(argvalues=SQUARE_CASES, **CASE_ARGS)
def test_eigh(precision, kind, shape):
  dtype = getattr(precision, kind)
  x = rand(shape, dtype, 5)
  x = x + adjoint(x)
  v, w = map(np.asarray, _call(linalg.eigh, x))
  assert w.dtype == precision.real
  close(w, np.linalg.eigvalsh(x), dtype, "eigh: eigenvalues")
  close(x @ v, v * w[..., None, :], dtype, "eigh: A V = V Λ")
  close(adjoint(v) @ v, np.broadcast_to(np.eye(3), v.shape), dtype, "eigh: V orthonormal")


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_reads_one_triangle(lower):
  x = rand((3, 3), np.float32, 6)
  sym = np.tril(x) + np.tril(x, -1).T if lower else np.triu(x) + np.triu(x, 1).T
  _, w = linalg.eigh(x, lower=lower, symmetrize_input=False)
  close(w, np.linalg.eigvalsh(sym), np.float32, "eigh of one triangle")


@pytest.mark.parametrize(argvalues=SQUARE_CASES, **CASE_ARGS)
def test_eig(precision, kind, shape):
  dtype = getattr(precision, kind)
  x = rand(shape, dtype, 7)
  w, vl, vr = map(np.asarray, _call(linalg.eig, x))
  assert w.dtype == precision.complex
  close(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(x)), dtype, "eig: eigenvalues")
  close(x @ vr, vr * w[..., None, :], dtype, "eig: A Vr = Vr Λ")
  close(adjoint(vl) @ x, w[..., :, None] * adjoint(vl), dtype, "eig: Vlᴴ A = Λ Vlᴴ")
  w_only = linalg.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
  close(w_only[0], w, dtype, "eig without eigenvectors")


# ----------------------------------------------------------------------------- vmap, jit

VMAP_CASES = [
    ("cholesky", linalg.cholesky, lambda: (hpd((3, 3)),)),
    ("triangular_solve", lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True),
     lambda: (rand((3, 3)) + 4 * np.eye(3, dtype=np.float32), rand((3, 2), seed=1))),
    ("lu", linalg.lu, lambda: (rand((4, 3)),)),
    ("qr", lambda x: linalg.qr(x, full_matrices=False), lambda: (rand((4, 3)),)),
    ("svd", lambda x: linalg.svd(x, compute_uv=False), lambda: (rand((3, 4)),)),
    ("eigh", lambda x: linalg.eigh(x)[1], lambda: (rand((3, 3)),)),
    ("eig", lambda x: linalg.eig(x, compute_left_eigenvectors=False,
                                 compute_right_eigenvectors=False)[0],
     lambda: (rand((3, 3)) + 2 * np.eye(3, dtype=np.float32),)),
]


@pytest.mark.parametrize("name,f,make_args", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap(name, f, make_args):
  check_vmap(f, make_args(), axes=(0, -1), tol=dict(rtol=1e-4, atol=1e-4))


@pytest.mark.parametrize("name,f,make_args", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_jit(name, f, make_args):
  eager_and_jit(f, *make_args())


# ----------------------------------------------------------------------------- lowering, errors

@pytest.mark.parametrize("f,expected", [
    (linalg.cholesky, "lapack_spotrf_ffi"),
    (lambda x: linalg.triangular_solve(x, x, left_side=True), "lapack_strsm_ffi"),
    (linalg.lu, "lapack_sgetrf_ffi"),
    (linalg.qr, "lapack_sorgqr_ffi"),
    (linalg.svd, "lapack_sgesdd_ffi"),
    (linalg.eigh, "lapack_ssyevd_ffi"),
    (linalg.eig, "lapack_sgeev_ffi"),
])
def test_lowering(f, expected):
  """On the CPU, JAX's LAPACK kernels: XLA expands its own cholesky and triangular_solve
  into loops, several times slower."""
  assert expected in jaxon.jit(f).lower(np.eye(3, dtype=np.float32)).as_text()


@pytest.mark.parametrize("f", [linalg.cholesky, lambda x: linalg.triangular_solve(x, x)])
def test_lapack_calls_overwrite_their_operand(f):
  """As JAX's: XLA reuses the operand's buffer, where the kernel would copy it."""
  assert "output_operand_aliases" in jaxon.jit(f).lower(np.eye(3, dtype=np.float32)).as_text()


@pytest.mark.parametrize("platform", [mlir.NATIVE, "cuda"])
@pytest.mark.parametrize("f,expected", [
    (linalg.cholesky, "stablehlo.cholesky"),
    (lambda x: linalg.triangular_solve(x, x, left_side=True), "stablehlo.triangular_solve"),
])
def test_native_lowering(f, expected, platform):
  """For jax2tf (TensorFlow's XLA has no LAPACK kernels) and on a GPU: StableHLO's own ops."""
  with mlir.lowering_platform(platform):
    text = jaxon.jit(f).lower(np.eye(3, dtype=np.float32)).as_text()
  assert expected in text and "lapack" not in text


def test_lowering_follows_the_backend_platform():
  assert mlir.current_platform() == "cpu"
  with mlir.lowering_platform("cuda"):
    assert mlir.current_platform() == "cuda"
    with pytest.raises(NotImplementedError, match="'lu' not found for platform cuda"):
      jaxon.jit(linalg.lu).lower(np.eye(3, dtype=np.float32)).as_text()


@pytest.mark.parametrize("f", [linalg.cholesky, linalg.eigh, linalg.eig])
def test_non_square_is_an_error(f):
  with pytest.raises(ValueError, match=r"square matrices .*f32\[3,4\]"):
    f(np.ones((3, 4), np.float32))


@pytest.mark.parametrize("f", [linalg.lu, linalg.qr, linalg.svd])
def test_vector_is_an_error(f):
  with pytest.raises(ValueError, match="matrices"):
    f(np.ones(3, np.float32))


def test_integer_input_is_an_error():
  with pytest.raises(TypeError, match="does not accept dtype int32"):
    linalg.lu(np.ones((2, 2), np.int32))


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_vectors_and_a_shared_matrix(left_side):
  """A b with one dimension fewer than a is a vector per matrix, as in JAX. Under vmap,
  right-hand sides that share the matrix are one solve (the matrix is not broadcast), at
  any batch axis."""
  a = np.tril(rand((3, 3), np.dtype(np.float32), 1)) + 3 * np.eye(3, dtype=np.float32)
  v = rand((3,), np.dtype(np.float32), 2)
  solve = lambda b: linalg.triangular_solve(a, b, left_side=left_side, lower=True,  # noqa: E731
                                            transpose_a=True)
  x = solve(v)
  close(np.asarray(x) @ a if left_side else a @ np.asarray(x), v, np.float32, "vector")
  bs = rand((4, 3, 2) if left_side else (4, 2, 3), np.dtype(np.float32), 3)
  want = np.stack([np.asarray(solve(b)) for b in bs])
  for axis in (0, 1, 2):
    got = jaxon.jit(jaxon.vmap(solve, in_axes=axis))(np.moveaxis(bs, 0, axis))
    close(got, want, np.float32, f"vmap at {axis}")
  eqns = jaxon.make_jaxpr(jaxon.vmap(solve))(bs).jaxpr.eqns
  solves = [e for e in eqns if e.primitive.name == "triangular_solve"]
  assert len(solves) == 1 and solves[0].invars[0].aval.shape == (3, 3), eqns


def test_triangular_solve_shape_errors():
  a = np.eye(3, dtype=np.float32)
  with pytest.raises(TypeError, match="left_side=True needs b's rows"):
    linalg.triangular_solve(a, np.ones((2, 3), np.float32), left_side=True)
  with pytest.raises(TypeError, match="same batch dimensions"):
    linalg.triangular_solve(a, np.ones((2, 3, 3), np.float32), left_side=True)
