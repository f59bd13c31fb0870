"""The Schur-based matrix functions of jaxon.scipy.linalg (schur, rsf2csf, sqrtm, funm,
hessenberg, solve_sylvester), expm_frechet, eigh_tridiagonal, and the LAPACK primitives of
jaxon.lax.linalg under them (schur, hessenberg, tridiagonal, householder_product,
tridiagonal_solve, geqrf).

Golden values were recorded from JAX 0.10.2 on CPU with jax_enable_x64 (the same LAPACK
kernels, so non-unique factors such as Schur vectors agree to rounding); the rest is checked
against SciPy. The matrices are 3×3, so the whole file compiles a few dozen small programs."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import jaxon
import jaxon.numpy as jnp
import jaxon.scipy.linalg as jsl
from jaxon._src.lax.linalg_lapack import geqrf
from jaxon.lax import linalg as lax_linalg
from tests.linalg.linalg_util import adjoint, eager_and_jit, rand
from tests.transform_util import check_vmap
from tests.util import check_grads

A = np.array([[1., 2., 3.], [1., 4., 2.], [3., 2., 1.]])
B = np.array([[0., 3., 3.], [0., 1., 2.], [2., 0., 1.]])  # a complex eigenvalue pair
E = np.array([[0.5, -1., 0.], [0.25, 0., 1.], [1., 2., -0.5]])

# JAX 0.10.2, x64: jax.scipy.linalg.schur(B)
SCHUR_T = [[3.756321357586716, -1.3826249394090282, 2.1681576992449765],
           [0., -0.878160678793358, 2.369298640870108],
           [0., -0.34868599266425393, -0.878160678793358]]
SCHUR_Z = [[-0.7445896628486459, -0.366673645324005, 0.5577962637054374],
           [-0.3920281863398978, -0.43612852976336697, -0.8100035843386709],
           [-0.5402778313923222, 0.8217921533765401, -0.18099039078017268]]
# jax.scipy.linalg.rsf2csf(*schur(B))[0]
RSF2CSF_T = [[3.756321357586716, -0.7765771705676249 - 1.2908946188179988j,
              -0.4952199573750561 - 2.02431116850855j],
             [0., -0.8781606787933581 + 0.9089231257426896j, -2.0206126482058546],
             [0., 0., -0.8781606787933581 - 0.9089231257426896j]]
# jax.scipy.linalg.sqrtm(A)
SQRTM_A = [[0.9564312762214009 + 0.65996632910744468j, 0.5284323797269381,
            0.9359584378925254 - 0.65996632910744435j],
           [0.23350693237015774 + 0.14142135623730939j, 1.8923897141139288,
            0.5591416372202479 - 0.14142135623730931j],
           [0.9564312762214002 - 0.75424723326565069j, 0.5284323797269367,
            0.9359584378925245 + 0.75424723326565035j]]
# jax.scipy.linalg.funm(B, jnp.sin)
FUNM_SIN_B = [[-1.4397719071997659, 1.1336863690908552, 0.36679262442586846],
              [-0.5112624964433263, -0.2949827061711584, 0.5001596645055753],
              [0.7557909127272384, -0.7668937446649892, -1.061876450836149]]
# jax.scipy.linalg.expm_frechet(B, E)[1]
FRECHET_B_E = [[18.794650528466953, 25.286329491458947, 25.8520312874014],
               [13.390169121957031, 17.42579266624018, 20.44323050073133],
               [16.714564179307896, 23.3810038967893, 24.990513012634587]]
# jax.scipy.linalg.eigh_tridiagonal([1, 2, 3, 4], [.5, -1, 2], eigvals_only=True)
EIGH_TRIDIAGONAL = [0.5875622478550292, 1.16456936961771, 2.5771823752799983,
                    5.670686007247262]
# jax.scipy.linalg.solve_sylvester(A, B, E)
SYLVESTER = [[0.3988837262012689, -0.3382536264732551, -0.8384236174070719],
             [-0.7874688349954663, 1.0129334768812321, 0.3828620806890298],
             [1.1176337262012692, -1.182003626473254, 0.13032638259292878]]
# jax.lax.linalg.tridiagonal(A + A.T)[1:]
TRIDIAGONAL = ([2., 6.399999999999999, 3.599999999999998],
               [-6.708203932499369, 4.799999999999998], [1.4472135954999579, 0.])

GOLD = dict(rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module", autouse=True)
def _x64(x64_module):
  """Golden values and derivative checks need float64."""


# ----------------------------------------------------------------------------- scipy.linalg

def test_schur_matches_jax():
  T, Z = eager_and_jit(jsl.schur, B)
  np.testing.assert_allclose(T, SCHUR_T, **GOLD)
  np.testing.assert_allclose(Z, SCHUR_Z, **GOLD)


def test_complex_schur_is_triangular():
  T, Z = jaxon.jit(lambda b: jsl.schur(b, output="complex"))(B)
  assert T.dtype == np.complex128
  np.testing.assert_allclose(np.tril(T, -1), 0, atol=1e-14)
  np.testing.assert_allclose(Z @ T @ adjoint(Z), B, atol=1e-13)
  gaps = np.abs(np.diag(T)[:, None] - np.linalg.eigvals(B)[None, :])
  np.testing.assert_allclose(gaps.min(axis=1), 0, atol=1e-13)  # T's diagonal: B's eigenvalues


def test_rsf2csf_matches_jax_and_scipy():
  Tc, Zc = eager_and_jit(jsl.rsf2csf, np.array(SCHUR_T), np.array(SCHUR_Z))
  np.testing.assert_allclose(Tc, RSF2CSF_T, **GOLD)
  want_T, want_Z = scipy.linalg.rsf2csf(np.array(SCHUR_T), np.array(SCHUR_Z))
  np.testing.assert_allclose(Tc, want_T, atol=1e-13)
  np.testing.assert_allclose(Zc, want_Z, atol=1e-13)


def test_sqrtm_matches_jax_and_scipy():
  root = eager_and_jit(jsl.sqrtm, A)
  np.testing.assert_allclose(root, SQRTM_A, **GOLD)
  np.testing.assert_allclose(root, scipy.linalg.sqrtm(A), atol=1e-12)


def test_funm_matches_jax_and_scipy():
  f = eager_and_jit(lambda b: jsl.funm(b, jnp.sin), B)
  assert f.dtype == np.complex128
  np.testing.assert_allclose(f, FUNM_SIN_B, atol=1e-12)
  np.testing.assert_allclose(f, scipy.linalg.funm(B, np.sin), atol=1e-12)
  _, err = jaxon.jit(lambda b: jsl.funm(b, jnp.exp, disp=False))(B)
  assert 0 < float(err) < 1e-12


def test_expm_frechet_matches_jax_and_scipy():
  # jit only: eagerly, expm's switch and squaring scan compile many small programs.
  both = lambda b, e: (jsl.expm_frechet(b, e), jsl.expm_frechet(b, e, compute_expm=False))
  (expm_b, frechet), only = jaxon.jit(both)(B, E)
  np.testing.assert_allclose(frechet, FRECHET_B_E, rtol=1e-12)
  want_expm, want_frechet = scipy.linalg.expm_frechet(B, E)
  np.testing.assert_allclose(expm_b, want_expm, rtol=1e-12)
  np.testing.assert_allclose(frechet, want_frechet, rtol=1e-12)
  np.testing.assert_allclose(only, frechet, rtol=1e-14)


def test_hessenberg_matches_scipy():
  h, q = eager_and_jit(lambda b: jsl.hessenberg(b, calc_q=True), B)
  want_h, want_q = scipy.linalg.hessenberg(B, calc_q=True)
  np.testing.assert_allclose(h, want_h, atol=1e-14)
  np.testing.assert_allclose(q, want_q, atol=1e-14)
  np.testing.assert_allclose(jsl.hessenberg(B), want_h, atol=1e-14)


def test_solve_sylvester_matches_jax_and_scipy():
  want = scipy.linalg.solve_sylvester(A, B, E)
  x = eager_and_jit(jsl.solve_sylvester, A, B, E)
  np.testing.assert_allclose(x, SYLVESTER, **GOLD)
  np.testing.assert_allclose(x, want, atol=1e-12)
  np.testing.assert_allclose(jsl.solve_sylvester(A, B, E, method="eigen"), want, atol=1e-12)
  # A + (-A) is singular: no unique solution, so NaN.
  assert np.isnan(jsl.solve_sylvester(A, -A, E)).all()


def test_eigh_tridiagonal_matches_jax_and_scipy():
  d, e = np.array([1., 2., 3., 4.]), np.array([.5, -1., 2.])
  w = eager_and_jit(lambda d, e: jsl.eigh_tridiagonal(d, e, eigvals_only=True), d, e)
  np.testing.assert_allclose(w, EIGH_TRIDIAGONAL, **GOLD)
  np.testing.assert_allclose(w, scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True),
                             atol=1e-13)
  middle = jsl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2))
  np.testing.assert_allclose(middle, w[1:3], atol=1e-14)


def test_vmap_matches_loop():
  mats = np.stack([A, B, A + B])
  for f in (jsl.sqrtm, lambda m: jsl.funm(m, jnp.cos)):
    out = jaxon.jit(jaxon.vmap(f))(mats)
    each = jaxon.jit(f)
    np.testing.assert_allclose(out, np.stack([each(m) for m in mats]), atol=1e-13)


def test_errors():
  with pytest.raises(ValueError, match="'real' or 'complex'"):
    jsl.schur(B, output="quasi")
  with pytest.raises(ValueError, match="same shape"):
    jsl.expm_frechet(B, E[:2, :2])
  with pytest.raises(TypeError, match="same dtype"):
    jsl.eigh_tridiagonal(np.ones(3), np.ones(2, np.float32))
  with pytest.raises(NotImplementedError):
    jsl.sqrtm(A, blocksize=2)
  with pytest.raises(ValueError, match="Incompatible shapes"):
    jsl.solve_sylvester(A, B, E[:2])


# ----------------------------------------------------------------------------- lax.linalg

def test_geqrf_and_householder_product_match_lapack():
  x = rand((4, 3), np.float64)
  r, taus = eager_and_jit(geqrf, x)
  want_h, want_tau = np.linalg.qr(x, mode="raw")
  np.testing.assert_allclose(r, want_h.T, atol=1e-14)
  np.testing.assert_allclose(taus, want_tau, atol=1e-14)
  q = lax_linalg.householder_product(r, taus)
  np.testing.assert_allclose(q, np.linalg.qr(x)[0], atol=1e-14)
  h, tau = jnp.linalg.qr(x, mode="raw")
  np.testing.assert_allclose(h, want_h, atol=1e-14)


def test_tridiagonal_matches_jax():
  _, d, e, taus = eager_and_jit(lax_linalg.tridiagonal, A + A.T)
  for got, want in zip((d, e, taus), TRIDIAGONAL):
    np.testing.assert_allclose(got, want, **GOLD)


def _tridiagonal_system(batch=()):
  dl = rand(batch + (4,), np.float64, 1) * np.array([0, 1, 1, 1])
  du = rand(batch + (4,), np.float64, 2) * np.array([1, 1, 1, 0])
  d = rand(batch + (4,), np.float64, 3) + 4
  return dl, d, du, rand(batch + (4, 2), np.float64, 4)


def test_tridiagonal_solve():
  dl, d, du, b = _tridiagonal_system()
  matrix = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
  x = eager_and_jit(lax_linalg.tridiagonal_solve, dl, d, du, b)
  np.testing.assert_allclose(x, np.linalg.solve(matrix, b), atol=1e-13)
  check_grads(lax_linalg.tridiagonal_solve, (dl, d, du, b), order=1)
  check_vmap(lax_linalg.tridiagonal_solve, _tridiagonal_system((2,)), size=2, axes=(0,))


def test_lax_schur_vmap_and_errors():
  check_vmap(lambda x: lax_linalg.schur(x, compute_schur_vectors=False),
             [np.stack([A, B])], size=2, axes=(0,))
  with pytest.raises(NotImplementedError, match="sort"):
    lax_linalg.schur(B, sort_eig_vals=True)
  with pytest.raises(ValueError, match="square"):
    lax_linalg.schur(np.ones((2, 3)))
