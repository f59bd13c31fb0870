"""The lax.linalg primitives cholesky_update, ormqr and symmetric_product (values, derivatives
by finite differences, vmap, jaxpr read-back), qdwh, the algorithm enums of eig/eigh/svd, and
jaxon.scipy.linalg's structured matrices and qr_multiply, against SciPy and against values
recorded from JAX 0.10.2 (CPU, jax_enable_x64). The whole module runs in x64: derivative
checks need float64, and one precision keeps the compiled programs few."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.linalg as osp

import jaxon
import jaxon.numpy as jnp
import jaxon.scipy.linalg as jsl
from jaxon._src.lax.linalg_lapack import geqrf
from jaxon.lax import linalg as lax_linalg
from tests.linalg.linalg_util import rand
from tests.util import check_grads

pytestmark = pytest.mark.usefixtures("x64_module")

X = np.array([[1., 2., 0.5], [0.3, -1., 2.], [2., 0.1, 1.], [0.5, 0.5, -0.7]])
# JAX 0.10.2, x64: lax.linalg.qdwh(X) -> (u, h, num_iters=6, is_converged=True)
QDWH_U = [[0.12236891961354915, 0.934712277331495, 0.3330638017703791],
          [-0.04511881952255395, -0.30461834452419767, 0.8449630213285539],
          [0.9326696129204408, -0.16556107119046115, 0.13945079638221647],
          [0.33632950030043307, 0.07816747719719871, -0.3945370349231474]]
# JAX 0.10.2, x64: qr_multiply(X, [1., 2., 3., 4.]) (mode "right", so Qᵀb and R)
QR_MULTIPLY_QTB = [-4.154326295115989, -0.7466432281128528, -0.6194054094844972]
QR_MULTIPLY_R = [[-2.3108440016582685, -0.9303959931770183, -1.1900413866217676],
                 [0., 2.0962736691281867, -1.1244761466703195],
                 [0., 0., 1.7491011673704902]]


def _upper_cholesky(a):
  return np.linalg.cholesky(a).T


# ----------------------------------------------------------------------------- primitives

def test_cholesky_update_values_grads_vmap():
  a = rand((3, 3), np.float64)
  r = _upper_cholesky(a @ a.T + 3 * np.eye(3))
  w = rand((3,), np.float64, seed=1)
  update = jaxon.jit(lax_linalg.cholesky_update)
  np.testing.assert_allclose(update(r, w), _upper_cholesky(r.T @ r + np.outer(w, w)),
                             atol=1e-12)
  check_grads(update, (r, w), order=1, modes=("rev",))  # reverse mode runs the JVP too
  rs, ws = np.stack([r, 2 * r]), np.stack([w, -w])
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(lax_linalg.cholesky_update))(rs, ws),
                             [update(r_, w_) for r_, w_ in zip(rs, ws)], atol=1e-12)


def test_symmetric_product_values_grads_vmap():
  a, c = rand((3, 2), np.float64), rand((3, 3), np.float64, seed=1)
  c = c + c.T
  f = lambda a, c: lax_linalg.symmetric_product(a, c, alpha=2., beta=-0.5)
  np.testing.assert_allclose(jaxon.jit(f)(a, c), 2 * a @ a.T - 0.5 * c, atol=1e-12)
  check_grads(f, (a, c), order=2)
  # JAX 0.10.2: only the lower triangle is guaranteed; symmetrize_output mirrors it.
  out = lax_linalg.symmetric_product(jnp.array([[1., 2.], [3., 4.]]), jnp.eye(2), alpha=2.,
                                     beta=3., symmetrize_output=True)
  np.testing.assert_allclose(out, [[13., 22.], [22., 53.]])
  batched = jaxon.jit(jaxon.vmap(f, in_axes=(0, None)))(np.stack([a, -a, 2 * a]), c)
  np.testing.assert_allclose(batched, [f(a_, c) for a_ in (a, -a, 2 * a)])


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_ormqr_matches_q(shape):
  x = rand(shape, np.float64)
  h, taus = geqrf(x)
  q = osp.qr(x)[0]
  m = shape[0]
  left_c, right_c = rand((m, 2), np.float64, seed=2), rand((2, m), np.float64, seed=3)
  products = jaxon.jit(lambda h, t, l, r: [
      lax_linalg.ormqr(h, t, l), lax_linalg.ormqr(h, t, l, transpose=True),
      lax_linalg.ormqr(h, t, r, left=False), lax_linalg.ormqr(h, t, r, left=False,
                                                              transpose=True)])(
      h, taus, left_c, right_c)
  for got, want in zip(products, [q @ left_c, q.T @ left_c, right_c @ q, right_c @ q.T]):
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_ormqr_complex_and_derivatives():
  x = rand((4, 3), np.complex128)
  h, taus = geqrf(x)
  q = osp.qr(x)[0]
  c = rand((4, 2), np.complex128, seed=1)
  np.testing.assert_allclose(lax_linalg.ormqr(h, taus, c, transpose=True), q.conj().T @ c,
                             atol=1e-12)
  # Linear in c (its transpose rule serves reverse mode); differentiable in the reflectors.
  f = jaxon.jit(functools.partial(lax_linalg.ormqr, left=False, transpose=True))
  check_grads(f, (h, taus, c.T), order=1, modes=("rev",))
  hs, ts, cs = (np.stack([v, 2 * v]) for v in (h, taus, c))
  np.testing.assert_allclose(jaxon.jit(jaxon.vmap(lax_linalg.ormqr))(hs, ts, cs),
                             [osp.qr(x)[0] @ c, lax_linalg.ormqr(2 * h, 2 * taus, 2 * c)],
                             atol=1e-12)


def test_new_primitives_print_and_read_back():
  """The autouse read-back fixture re-parses these jaxprs."""
  a, c = np.ones((3, 2)), np.eye(3)
  text = str(jaxon.make_jaxpr(lambda a, c: (
      lax_linalg.symmetric_product(a, c, alpha=2.),
      lax_linalg.cholesky_update(c, a[:, 0]),
      lax_linalg.ormqr(c, a[:2, 0], c, left=False),
      lax_linalg.svd(c, algorithm=lax_linalg.SvdAlgorithm.QR)))(a, c))
  for piece in ("symmetric_product[alpha=2.0 beta=0.0]", "cholesky_update",
                "ormqr[left=False transpose=False]", "algorithm=SvdAlgorithm.QR"):
    assert piece in text, text


def test_primitive_shape_errors():
  with pytest.raises(ValueError, match="square matrix and a vector"):
    lax_linalg.cholesky_update(np.eye(3), np.ones(2))
  with pytest.raises(ValueError, match="same number of rows"):
    lax_linalg.ormqr(np.ones((3, 2)), np.ones(2), np.ones((2, 2)))
  with pytest.raises(ValueError, match=r"square matrix of shape \(…, m, m\)"):
    lax_linalg.symmetric_product(np.ones((3, 2)), np.ones((2, 2)))
  with pytest.raises(TypeError, match="does not accept dtype int"):
    lax_linalg.symmetric_product(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32))


# ----------------------------------------------------------------------------- qdwh, enums

def test_qdwh_matches_jax_and_scipy():
  """X padded to (5, 5) with dynamic_shape=X.shape: X is decomposed, the padding is 0 (one
  compilation: a QDWH program takes XLA seconds to compile)."""
  qdwh = jaxon.jit(lax_linalg.qdwh, static_argnames="dynamic_shape")
  u, h, iters, converged = qdwh(np.pad(X, ((0, 1), (0, 2))), dynamic_shape=X.shape)
  np.testing.assert_allclose(u[:4, :3], QDWH_U, atol=1e-12)
  np.testing.assert_allclose(h[:3, :3], osp.polar(X)[1], atol=1e-12)
  assert int(iters) == 6 and bool(converged)  # JAX 0.10.2's count
  assert not np.asarray(u)[4:].any() and not np.asarray(h)[3:].any()
  with pytest.raises(ValueError, match="M >= N"):
    lax_linalg.qdwh(X.T)


def test_algorithm_enums():
  assert [m.value for m in lax_linalg.SvdAlgorithm] == [
      "default", "QR", "Jacobi", "polar", "divide_and_conquer"]
  assert [m.value for m in lax_linalg.EighImplementation] == ["qr", "jacobi", "qdwh"]
  assert [m.value for m in lax_linalg.EigImplementation] == ["cusolver", "magma", "lapack"]
  s_qr = lax_linalg.svd(X, compute_uv=False, algorithm=lax_linalg.SvdAlgorithm.QR)
  np.testing.assert_allclose(s_qr, np.linalg.svd(X, compute_uv=False), atol=1e-12)
  sym = X.T @ X
  w = lax_linalg.eigh(sym, implementation=lax_linalg.EighImplementation.QR)[1]
  np.testing.assert_allclose(w, np.linalg.eigvalsh(sym), atol=1e-12)
  with pytest.raises(NotImplementedError, match="POLAR is not supported on the CPU"):
    lax_linalg.svd(X, algorithm=lax_linalg.SvdAlgorithm.POLAR)
  with pytest.raises(NotImplementedError, match="JACOBI is not supported"):
    lax_linalg.eigh(sym, implementation=lax_linalg.EighImplementation.JACOBI)
  with pytest.raises(ValueError, match="only the LAPACK implementation"):
    lax_linalg.eig(sym, implementation=lax_linalg.EigImplementation.MAGMA)
  with pytest.raises(TypeError, match="must be None or a SvdAlgorithm"):
    lax_linalg.svd(X, algorithm="QR")


# ----------------------------------------------------------------------------- scipy.linalg

def test_structured_matrices_match_scipy():
  a = np.array([2., -3., 1., 5., 4.])
  cases = [
      (jsl.convolution_matrix(a, 3), osp.convolution_matrix(a, 3)),
      (jsl.convolution_matrix(a, 7, "same"), osp.convolution_matrix(a, 7, "same")),
      (jsl.convolution_matrix(a, 2, "valid"), osp.convolution_matrix(a, 2, "valid")),
      (jsl.fiedler(a), osp.fiedler(a)),
      (jsl.fiedler_companion(a), osp.fiedler_companion(a)),
      (jsl.fiedler_companion(a[:4]), osp.fiedler_companion(a[:4])),
      (jsl.leslie(a, a[1:]), osp.leslie(a, a[1:])),
      (jsl.dft(6, "sqrtn"), osp.dft(6, "sqrtn")),
      (jsl.hadamard(8), osp.hadamard(8)),
      (jsl.helmert(4, full=True), osp.helmert(4, full=True)),
      (jsl.invhilbert(5), osp.invhilbert(5)),
      (jsl.pascal(4, "upper"), osp.pascal(4, "upper")),
      (jsl.invpascal(5), osp.invpascal(5)),
  ]
  for i, (got, want) in enumerate(cases):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"case {i}")


def test_structured_matrices_dtypes_and_batches():
  # Dtypes as JAX 0.10.2 returns them with x64 (pascal stays float32 there).
  got = [jsl.pascal(3), jsl.invpascal(3), jsl.helmert(3), jsl.hadamard(2), jsl.dft(2),
         jsl.fiedler_companion(jnp.array([1, 2, 3])), jsl.convolution_matrix(jnp.array([1, 2]), 2)]
  assert [str(x.dtype) for x in got] == ["float32", "float64", "float64", "int64",
                                         "complex128", "float64", "int64"]
  f = rand((2, 5), np.float64)
  s = rand((4,), np.float64, seed=1)
  np.testing.assert_allclose(jsl.leslie(f, s), [osp.leslie(f_, s) for f_ in f])
  np.testing.assert_allclose(jsl.convolution_matrix(f, 3), [osp.convolution_matrix(f_, 3)
                                                            for f_ in f])
  with pytest.raises(ValueError, match="power of 2"):
    jsl.hadamard(6)
  with pytest.raises(ValueError, match="one less than the length of f"):
    jsl.leslie(f, f)


def test_qr_multiply():
  qtb, r = jsl.qr_multiply(X, jnp.array([1., 2., 3., 4.]))
  np.testing.assert_allclose(qtb, QR_MULTIPLY_QTB, atol=1e-12)
  np.testing.assert_allclose(r, QR_MULTIPLY_R, atol=1e-12)
  xc = rand((3, 4), np.complex128)
  qr_multiply = jaxon.jit(jsl.qr_multiply, static_argnames=("mode", "conjugate"))
  for mode, c, conjugate in [("left", rand((3, 2), np.complex128, 1), True),
                             ("right", rand((2, 3), np.complex128, 2), False)]:
    got = qr_multiply(xc, c, mode=mode, conjugate=conjugate)
    want = osp.qr_multiply(xc, c, mode, conjugate=conjugate)
    for g, w in zip(got, want):
      np.testing.assert_allclose(g, w, atol=1e-12, err_msg=f"{mode} {conjugate}")
  with pytest.raises(ValueError, match="not compatible for c @ Q"):
    jsl.qr_multiply(X, np.ones(3))


def test_qr_multiply_pivoting_matches_jax():
  """JAX 0.10.2, x64: jax.scipy.linalg.qr_multiply(M, [1., 2., 3., 4.], pivoting=True)."""
  m = np.array([[1, 2, 3], [4, 5, 6.5], [7, 8.5, 9], [1, 0, 2]])
  qtb, r, p = jsl.qr_multiply(m, jnp.array([1., 2., 3., 4.]), pivoting=True)
  np.testing.assert_allclose(qtb, [-4.369199956156816, -2.7107010093880404,
                                   -1.649913024898484], atol=1e-12)
  np.testing.assert_allclose(r, [[-11.672617529928752, -9.852117548196743, -8.053035213308643],
                                 [0., 2.0459178420732744, 1.0560299217715208],
                                 [0., 0., -1.016574964050486]], atol=1e-12)
  np.testing.assert_array_equal(p, [2, 1, 0])
