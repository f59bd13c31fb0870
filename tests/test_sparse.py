"""jaxon.experimental.sparse: BCOO arrays and their primitives against dense NumPy
oracles, SciPy round trips, finite-difference gradients (wrt data and dense operands),
vmap and jit. Literal expectations marked "JAX 0.10.2" were recorded from JAX."""
import numpy as np
import pytest
import scipy.sparse

import jaxon
import jaxon.numpy as jnp
from jaxon.experimental import sparse
from jaxon.test_util import check_grads

M = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
RNG = np.random.RandomState(0)
M3 = ((RNG.rand(2, 3, 4) > 0.5) * RNG.randn(2, 3, 4)).astype(np.float32)
LAYOUTS = [(0, 0), (1, 0), (1, 1), (0, 1)]  # (n_batch, n_dense) of M3
# A transpose of each layout that keeps batch, sparse and dense dims in their groups.
PERMS = {(0, 0): (2, 0, 1), (1, 0): (0, 2, 1), (1, 1): (0, 1, 2), (0, 1): (1, 0, 2)}


def _dense(x):
  return np.asarray(x.todense() if isinstance(x, sparse.JAXSparse) else x)


def test_fromdense_layout_matches_jax():
  s = sparse.BCOO.fromdense(M, n_batch=1)  # JAX 0.10.2
  assert repr(s) == "BCOO(float32[2, 3], nse=2, n_batch=1)"
  np.testing.assert_array_equal(s.data, [[2., 0.], [1., 4.]])
  np.testing.assert_array_equal(s.indices, [[[1], [3]], [[0], [2]]])
  s = sparse.BCOO.fromdense(M, nse=4)  # padding: zero data at the out-of-bounds index
  np.testing.assert_array_equal(s.data, [2., 1., 4., 0.])
  np.testing.assert_array_equal(s.indices, [[0, 1], [1, 0], [1, 2], [2, 3]])
  assert s.indices_sorted and s.unique_indices


def _layout_ops(perm):
  """Dense results of a BCOO array's ops, with their NumPy counterparts (one jit)."""
  ops = [
      (lambda x: x.sum(1), lambda m: m.sum(1)),
      (lambda x: x * 2.0, lambda m: 2 * m),
      (lambda x: x * M3, lambda m: m * M3),
      (lambda x: x.update_layout(n_batch=0, n_dense=0), lambda m: m),
      (lambda x: sparse.bcoo_slice(x, start_indices=(1, 1, 1), limit_indices=(2, 3, 3)),
       lambda m: m[1:2, 1:3, 1:3]),
      (lambda x: sparse.bcoo_dynamic_slice(x, (1, jnp.array(1), 5), (1, 2, 2)),
       lambda m: m[1:2, 1:3, 2:4]),  # the start 5 is clamped to 2, as lax does
      (lambda x: sparse.bcoo_rev(x, (0, 1, 2)), lambda m: m[::-1, ::-1, ::-1]),
      (lambda x: sparse.bcoo_concatenate([x, x], dimension=1),
       lambda m: np.concatenate([m, m], 1)),
      (lambda x: sparse.bcoo_reduce_sum(x, axes=(0, 2)), lambda m: m.sum((0, 2))),
      (lambda x: sparse.bcoo_squeeze(sparse.bcoo_broadcast_in_dim(
          x, shape=(1, 2, 3, 4), broadcast_dimensions=(1, 2, 3)), dimensions=(0,)),
       lambda m: m),
      (lambda x: x.transpose(perm), lambda m: m.transpose(perm)),
  ]
  run = jaxon.jit(lambda x: [_dense_traced(op(x)) for op, _ in ops])
  return run, [oracle for _, oracle in ops]


def _dense_traced(x):
  return x.todense() if isinstance(x, sparse.JAXSparse) else x


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_layouts_round_trip_and_ops(n_batch, n_dense):
  s = sparse.BCOO.fromdense(M3, n_batch=n_batch, n_dense=n_dense)
  assert (s.n_batch, s.n_dense) == (n_batch, n_dense)
  run, oracles = _layout_ops(PERMS[n_batch, n_dense])
  for got, oracle in zip(run(s), oracles):
    np.testing.assert_allclose(got, oracle(M3), rtol=1e-6, atol=1e-6)


def test_transpose_matmul_and_reshape():
  s = sparse.BCOO.fromdense(M)
  v = np.array([1., 2., 3.], np.float32)
  cases = [
      (lambda x: x.T, M.T),
      (lambda x: x @ v, M @ v),
      (lambda x: jnp.ones((4, 2)) @ x, np.ones((4, 2)) @ M),
      (lambda x: np.ones((4, 2), np.float32) @ x, np.ones((4, 2)) @ M),
      (lambda x: x.reshape(3, 2), M.reshape(3, 2)),
      (lambda x: x + x, 2 * M),
      (lambda x: x - M, 0 * M),
  ]
  outs = jaxon.jit(lambda x: [_dense_traced(op(x)) for op, _ in cases])(s)
  for got, (_, expected) in zip(outs, cases):
    np.testing.assert_allclose(got, expected, rtol=1e-6)
  np.testing.assert_allclose(_dense(sparse.bcoo_reshape(
      sparse.BCOO.fromdense(M3[0]), new_sizes=(4, 3))), M3[0].reshape(4, 3))
  assert s.astype(np.int32).dtype == np.int32


def test_sparse_sparse_products_match_jax():
  s = sparse.BCOO.fromdense(M)
  p = s @ s.T  # JAX 0.10.2: every pair of stored elements, duplicates summed to nse=4
  assert repr(p) == "BCOO(float32[2, 2], nse=4)"
  np.testing.assert_array_equal(p.data, [4., 0., 0., 17.])
  np.testing.assert_array_equal(p.indices, [[0, 0], [0, 1], [1, 0], [1, 1]])
  np.testing.assert_allclose(_dense(s * s), M * M)
  b = sparse.BCOO.fromdense(M3, n_batch=1)
  out = sparse.bcoo_dot_general(b, b, dimension_numbers=(((2,), (2,)), ((0,), (0,))))
  np.testing.assert_allclose(_dense(out), np.einsum("bij,bkj->bik", M3, M3), rtol=1e-5)


def test_sum_duplicates_sort_and_extract():
  data = jnp.array([1., 2., 3., 4.])
  indices = jnp.array([[1, 0], [0, 1], [1, 0], [2, 3]])
  s = sparse.BCOO((data, indices), shape=(2, 3))
  t = s.sum_duplicates(nse=3)  # JAX 0.10.2 (whose padding slot keeps the dropped 4.)
  np.testing.assert_array_equal(t.data[:2], [2., 4.])
  np.testing.assert_array_equal(t.indices, [[0, 1], [1, 0], [2, 3]])
  np.testing.assert_array_equal(s.sum_duplicates().indices, [[0, 1], [1, 0]])
  u = s.sort_indices()
  np.testing.assert_array_equal(u.indices, [[0, 1], [1, 0], [1, 0], [2, 3]])
  np.testing.assert_array_equal(u.data, [2., 1., 3., 4.])
  dense = jnp.arange(6.).reshape(2, 3)
  np.testing.assert_array_equal(sparse.bcoo_extract(s, dense, assume_unique=True).data,
                                [3., 1., 3., 0.])
  np.testing.assert_array_equal(
      sparse.bcoo_extract(s, dense, assume_unique=False).data, [3., 1., 0., 0.])


def test_scipy_round_trip_and_constructors():
  sp = scipy.sparse.random(5, 4, density=0.4, random_state=1, format="csr",
                           dtype=np.float32)
  s = sparse.BCOO.from_scipy_sparse(sp)
  np.testing.assert_allclose(s.todense(), sp.toarray())
  np.testing.assert_array_equal(sparse.eye(3, k=1).indices, [[0, 1], [1, 2]])  # JAX 0.10.2
  np.testing.assert_array_equal(_dense(sparse.eye(3, 4, k=-1)), np.eye(3, 4, k=-1))
  e = sparse.empty((2, 3), nse=2)
  np.testing.assert_array_equal(e.indices, [[2, 3], [2, 3]])
  np.testing.assert_array_equal(e.todense(), np.zeros((2, 3)))
  with pytest.raises(ValueError, match="sparse_format"):
    sparse.empty((2, 2), sparse_format="nope")
  r = sparse.random_bcoo(jaxon.random.PRNGKey(0), (3, 4), nse=3, n_batch=1)
  assert r.data.shape == (3, 3) and r.indices.shape == (3, 3, 1)


def test_errors():
  with pytest.raises(ValueError, match="data.shape"):
    sparse.BCOO((jnp.zeros(3), jnp.zeros((2, 2), int)), shape=(2, 3))
  with pytest.raises(sparse.SparseEfficiencyError):
    sparse.BCOO.fromdense(M).update_layout(n_batch=1)
  with pytest.raises(NotImplementedError, match="mixes batch, sparse and dense"):
    sparse.BCOO.fromdense(M3, n_batch=1).transpose((1, 0, 2))
  with pytest.raises(jaxon.errors.ConcretizationTypeError):
    jaxon.jit(lambda x: sparse.BCOO.fromdense(x).data)(M)


# ----------------------------------------------------------------------------- transforms

S = sparse.BCOO.fromdense(M)
SB = sparse.BCOO.fromdense(M3, n_batch=1)


def _matvec(data, x):
  return sparse.BCOO((data, S.indices), shape=S.shape) @ x


def _batched_dot(data, x):
  s = sparse.BCOO((data, SB.indices), shape=SB.shape)
  return sparse.bcoo_dot_general(s, x, dimension_numbers=(((2,), (1,)), ((0,), (0,))))


def _todense_transposed(data):
  return sparse.BCOO((data, SB.indices), shape=SB.shape).transpose((0, 2, 1)).todense()


def _sorted_summed(data):
  s = sparse.BCOO((data, jnp.array([[1, 0], [0, 1], [1, 0]])), shape=(2, 3))
  return s.sort_indices().sum_duplicates(nse=2, remove_zeros=False).todense() ** 2


def _fromdense_extract(x):
  s = sparse.BCOO.fromdense(x, nse=6)
  return sparse.bcoo_dot_general_sampled(x, x.T, s.indices,
                                         dimension_numbers=(((1,), (0,)), ((), ()))) * s.data


def _spdot(data):
  s = sparse.BCOO((data, S.indices), shape=S.shape)
  return (s @ s.T).data


@pytest.mark.parametrize("fun,args,order", [
    (_matvec, (S.data, np.array([1., -2., 3.], np.float32)), 2),  # bilinear
    (_batched_dot, (SB.data, RNG.randn(2, 4, 2).astype(np.float32)), 1),
    (_todense_transposed, (SB.data,), 1),
    (_sorted_summed, (np.array([1., 2., 3.], np.float32),), 1),
    (_fromdense_extract, (M + 5,), 1),  # no zeros: the stored pattern is fixed near it
], ids=lambda x: getattr(x, "__name__", ""))
def test_grads_jit_vmap(fun, args, order):
  check_grads(fun, args, order=order, modes=["fwd", "rev"], atol=2e-2, rtol=2e-2)
  jitted = jaxon.jit(fun)
  np.testing.assert_allclose(jitted(*args), fun(*args), rtol=1e-6)
  stacked = [np.stack([a, 2 * a]) for a in args]
  expected = np.stack([fun(*[s[i] for s in stacked]) for i in range(2)])
  np.testing.assert_allclose(jaxon.vmap(fun)(*stacked), expected, rtol=1e-5, atol=1e-6)


def test_spdot_general_forward_mode():
  """JAX defines no transpose for bcoo_spdot_general: forward mode only."""
  check_grads(_spdot, (S.data,), order=1, modes=["fwd"], atol=2e-2, rtol=2e-2)
  np.testing.assert_allclose(jaxon.vmap(_spdot)(np.stack([S.data, -S.data]))[1],
                             _spdot(-S.data), rtol=1e-6)


def test_vmap_over_sparse_and_dense_operands_separately():
  x = RNG.randn(3, 3).astype(np.float32)
  np.testing.assert_allclose(jaxon.vmap(lambda v: S @ v)(x), x @ M.T, rtol=1e-6)
  datas = np.stack([S.data, -S.data])
  np.testing.assert_allclose(jaxon.vmap(lambda d: _matvec(d, x[0]))(datas),
                             np.stack([M @ x[0], -M @ x[0]]), rtol=1e-6)
  np.testing.assert_allclose(jaxon.vmap(lambda d: sparse.BCOO(
      (d, S.indices), shape=(2, 3)).T.todense())(datas), np.stack([M.T, -M.T]))
  mats = np.stack([M, 2 * M])
  out = jaxon.vmap(lambda m: sparse.BCOO.fromdense(m, nse=3).todense())(mats)
  np.testing.assert_array_equal(out, mats)


def test_sparse_grad_api():
  x = np.array([1., 2., 3.], np.float32)
  g = sparse.grad(lambda s, v: (s @ v).sum())(S, x)
  assert isinstance(g, sparse.BCOO)
  np.testing.assert_array_equal(g.indices, S.indices)
  np.testing.assert_allclose(g.data, [2., 1., 3.])  # d/d data[k] = x[col k]
  value, (gs, gx) = sparse.value_and_grad(lambda s, v: (s @ v).sum(), argnums=(0, 1))(S, x)
  np.testing.assert_allclose(value, (M @ x).sum())
  np.testing.assert_allclose(gx, M.sum(0))
  jac = sparse.jacrev(lambda s: s @ x)(S)
  assert isinstance(jac, sparse.BCOO) and jac.shape == (2, 2, 3)
  np.testing.assert_allclose(jac.todense(), np.einsum("ij,k->ijk", np.eye(2), x)
                             * (M != 0), rtol=1e-6)
  np.testing.assert_allclose(sparse.jacfwd(lambda s: s @ x)(S).data, jac.data)
  dense = sparse.todense(S)
  np.testing.assert_array_equal(dense, M)
  np.testing.assert_allclose(jaxon.grad(lambda d: sparse.todense(
      sparse.BCOO((d, S.indices), shape=(2, 3))).sum())(S.data), np.ones(3))


def test_printed_jaxpr_matches_jax():
  f = lambda d: sparse.BCOO((d, S.indices), shape=(2, 3)).T.todense()
  # JAX 0.10.2 prints this jaxpr
  assert str(jaxon.make_jaxpr(f)(S.data)) == """\
{ lambda a:i32[3,2]; b:f32[3]. let
    c:f32[3] d:i32[3,2] = bcoo_transpose[
      permutation=(1, 0)
      spinfo=SparseInfo(shape=(2, 3), indices_sorted=False, unique_indices=False)
    ] b a
    e:f32[3,2] = bcoo_todense[
      spinfo=SparseInfo(shape=(3, 2), indices_sorted=False, unique_indices=False)
    ] c d
  in (e,) }"""
  for fun, args in [(_fromdense_extract, (M,)), (_sorted_summed, (np.ones(3, np.float32),)),
                    (_spdot, (S.data,)), (_batched_dot, (SB.data, np.ones((2, 4, 2))))]:
    str(jaxon.make_jaxpr(fun)(*args))  # read back by the autouse fixture
  # todense's treedef param is documented unreadable (jaxpr_param_readers)
  assert "todense[\n      tree=PyTreeDef(CustomNode(BCOO" in str(jaxon.make_jaxpr(
      lambda d: sparse.todense(sparse.BCOO((d, S.indices), shape=(2, 3))))(S.data))


def test_sparsify():
  x = np.array([1., 2., 3.], np.float32)

  def f(m, v):
    return jnp.sin(m * 2.0).T @ jnp.ones(2) + sparse.todense(m.sum(0) * v)
  expected = f(M, x)
  np.testing.assert_allclose(jaxon.jit(sparse.sparsify(f))(S, x), expected, rtol=1e-6)
  gram = sparse.sparsify(lambda m: m.T @ m)(S)
  assert isinstance(gram, sparse.BCOO)
  np.testing.assert_allclose(gram.todense(), M.T @ M)
  np.testing.assert_allclose(
      sparse.sparsify(lambda m: m.reshape(3, 2)[1:, :])(S).todense(), M.reshape(3, 2)[1:])
  grad = jaxon.grad(lambda d: sparse.sparsify(f)(
      sparse.BCOO((d, S.indices), shape=(2, 3)), x).sum())(S.data)
  np.testing.assert_allclose(grad, jaxon.grad(lambda m: f(m, x).sum())(M)[M != 0], rtol=1e-5)
  with pytest.raises(NotImplementedError, match="sparse rule for exp"):
    sparse.sparsify(jnp.exp)(S)
