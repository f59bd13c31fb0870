"""The older 2-D sparse formats of jaxon.experimental.sparse (COO, CSR, CSC): dense and
SciPy oracles, finite-difference gradients of the products wrt data and the dense
operand, vmap and jit."""
import numpy as np
import pytest
import scipy.sparse

import jaxon
import jaxon.numpy as jnp
from jaxon.experimental import sparse
from jaxon.test_util import check_grads

M = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
V = np.array([1., -2., 3.], np.float32)
B = np.arange(6., dtype=np.float32).reshape(3, 2)


@pytest.mark.parametrize("cls", [sparse.COO, sparse.CSR, sparse.CSC],
                         ids=lambda c: c.__name__)
def test_round_trip_products_and_constructors(cls):
  m = cls.fromdense(M)
  assert repr(m) == f"{cls.__name__}(float32[2, 3], nse=3)"
  fmt = cls.__name__.lower()
  outs = jaxon.jit(lambda m: [m.todense(), m @ V, m @ B, m.T.todense()])(m)
  for got, expected in zip(outs, [M, M @ V, M @ B, M.T]):
    np.testing.assert_allclose(got, expected, rtol=1e-6)
  np.testing.assert_array_equal(sparse.eye(3, 4, k=1, sparse_format=fmt).todense(),
                                np.eye(3, 4, k=1))
  np.testing.assert_array_equal(sparse.empty((2, 3), sparse_format=fmt).todense(),
                                np.zeros((2, 3)))


def test_buffers_match_scipy():
  sp = scipy.sparse.csr_matrix(M)
  c = sparse.CSR.fromdense(M)
  np.testing.assert_array_equal(c.data, sp.data)
  np.testing.assert_array_equal(c.indices, sp.indices)
  np.testing.assert_array_equal(c.indptr, sp.indptr)
  coo = sparse.COO.fromdense(M)
  np.testing.assert_array_equal(coo.row, sp.tocoo().row)
  np.testing.assert_array_equal(coo.col, sp.tocoo().col)
  padded = sparse.CSR.fromdense(M, nse=5)  # padding stores zeros past the last row
  np.testing.assert_array_equal(padded.todense(), M)
  with pytest.raises(ValueError, match="ndim=2"):
    sparse.COO((jnp.zeros(1), jnp.zeros(1, int), jnp.zeros(1, int)), shape=(2, 2, 2))


CSR_M = sparse.CSR.fromdense(M)
COO_M = sparse.COO.fromdense(M)


def _csr_matvec(data, v):
  return sparse.csr_matvec(sparse.CSR((data, CSR_M.indices, CSR_M.indptr), shape=(2, 3)), v)


def _coo_matmat_t(data, b):
  return sparse.coo_matmat(sparse.COO((data, COO_M.row, COO_M.col), shape=(2, 3)), b,
                           transpose=True)


def _todense_of_fromdense(m):
  return sparse.csr_fromdense(m, nse=6).todense() * sparse.coo_fromdense(m, nse=6).data.sum()


@pytest.mark.parametrize("fun,args", [
    (_csr_matvec, (CSR_M.data, V)),
    (_coo_matmat_t, (COO_M.data, B[:2])),
    (_todense_of_fromdense, (M + 1,)),  # no zeros: the stored pattern is fixed near it
], ids=lambda x: getattr(x, "__name__", ""))
def test_grads_vmap_jit(fun, args):
  check_grads(fun, args, order=1, modes=["fwd", "rev"], atol=2e-2, rtol=2e-2)
  stacked = [np.stack([a, 2 * a]) for a in args]
  expected = np.stack([fun(*[s[i] for s in stacked]) for i in range(2)])
  np.testing.assert_allclose(jaxon.vmap(jaxon.jit(fun))(*stacked), expected, rtol=1e-5)
  str(jaxon.make_jaxpr(fun)(*args))  # read back by the autouse fixture


M3 = ((np.random.RandomState(0).rand(2, 3, 4) > 0.5)
      * np.random.RandomState(1).randn(2, 3, 4)).astype(np.float32)
BCSR_M = sparse.BCSR.fromdense(M)


def test_bcsr_layout_and_ops():
  sp = scipy.sparse.csr_matrix(M)
  np.testing.assert_array_equal(BCSR_M.indices, sp.indices)
  np.testing.assert_array_equal(BCSR_M.indptr, sp.indptr)
  np.testing.assert_array_equal(sparse.BCSR.from_scipy_sparse(sp).todense(), M)
  b3 = sparse.BCSR.fromdense(M3, n_batch=1)
  assert repr(b3) == "BCSR(float32[2, 3, 4], nse=9, n_batch=1)"
  ones = np.ones((2, 4, 2), np.float32)
  outs = jaxon.jit(lambda b: [
      b.todense(),
      sparse.bcsr_dot_general(b, ones, dimension_numbers=(((2,), (1,)), ((0,), (0,)))),
      sparse.bcsr_concatenate([b, b], dimension=1).todense(),
      sparse.bcsr_broadcast_in_dim(b, shape=(2, 2, 3, 4),
                                   broadcast_dimensions=(0, 2, 3)).todense(),
      sparse.bcsr_sum_duplicates(b, nse=9).todense()])(b3)
  expected = [M3, np.einsum("bij,bjk->bik", M3, ones), np.concatenate([M3, M3], 1),
              np.broadcast_to(M3[:, None], (2, 2, 3, 4)), M3]
  for got, want in zip(outs, expected):
    np.testing.assert_allclose(got, want, rtol=1e-6)
  np.testing.assert_array_equal(sparse.eye(3, sparse_format="bcsr").todense(), np.eye(3))


def _bcsr_matvec(data, v):
  return sparse.BCSR((data, BCSR_M.indices, BCSR_M.indptr), shape=(2, 3)) @ v


def _bcsr_round_trip(m):
  b = sparse.bcsr_fromdense(m, nse=6)
  return b.todense() * sparse.bcsr_extract(b.indices, b.indptr, m).sum()


@pytest.mark.parametrize("fun,args", [
    (_bcsr_matvec, (BCSR_M.data, V)),
    (_bcsr_round_trip, (M + 1,)),
], ids=lambda x: getattr(x, "__name__", ""))
def test_bcsr_grads_vmap_jit(fun, args):
  test_grads_vmap_jit(fun, args)


def test_spsolve():
  a = np.array([[4., 1., 0.], [1., 3., 0.], [0., 0., 2.]], np.float32)
  c = sparse.CSR.fromdense(a)
  b = np.array([1., 2., 3.], np.float32)
  solve = jaxon.jit(lambda d, b: sparse.linalg.spsolve(d, c.indices, c.indptr, b))
  np.testing.assert_allclose(solve(c.data, b), np.linalg.solve(a, b), rtol=1e-5)
  check_grads(solve, (c.data, b), order=1, modes=["rev"], atol=2e-2, rtol=2e-2)
  with pytest.raises(ValueError, match="data types do not match"):
    sparse.linalg.spsolve(c.data, c.indices, c.indptr, b.astype(np.int32))
