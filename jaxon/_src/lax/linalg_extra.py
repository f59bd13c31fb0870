"""Linear-algebra primitives around the factorizations: the rank-1 Cholesky update
(`cholesky_update`), the product by the Q of a compact QR without forming Q (`ormqr`), the
symmetric product α A Aᵀ + β C (`symmetric_product`), and the QDWH polar decomposition
(`qdwh`, an algorithm written with the primitives, not a primitive itself).

They follow `jaxon._src.lax.linalg` (whose helpers they use): leading dimensions are batch
dimensions, which batching moves to the front. `ormqr` calls LAPACK's ormqr/unmqr (CPU);
`cholesky_update` and `symmetric_product` lower as functions of other primitives, as JAX
lowers them on the CPU. JAX defines no derivatives for the three primitives; jaxon gives
each one: the Cholesky tangent of the updated matrix, the product rule, and for `ormqr`
linearity in C (with its transpose) plus the tangent of Q through its reflectors.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax, reductions, shape_ops, slicing, utils
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.linalg_decompositions import _cholesky_tangent, cholesky, qr
from jaxon._src.lax.linalg_helpers import (_H, _T, _batch_rule, _const, _dtype, _identity,
                                           _is_complex, _lapack_call, _matmul, _matrix_aval,
                                           _shape, _tril, _triu)
from jaxon._src.lax.linalg_triangular import triangular_solve


def _check_batch(name: str, *avals: ShapedArray, ranks: Sequence[int]) -> tuple[int, ...]:
  """Checks that operands of the given core ranks share their leading batch dimensions."""
  batches = {a.shape[:a.ndim - r] for a, r in zip(avals, ranks)}
  if any(a.ndim < r for a, r in zip(avals, ranks)) or len(batches) != 1:
    types = ", ".join(a.str_short() for a in avals)
    raise ValueError(f"{name} takes operands of ranks {tuple(ranks)} with equal leading batch "
                     f"dimensions, got {types}.")
  return batches.pop()


def _bcast(v: Any, shape: tuple[int, ...]) -> Any:
  """`v` (the batch dimensions of `shape`) broadcast to `shape`."""
  return lax.broadcast_in_dim(v, shape, tuple(range(len(_shape(v)))))


def _rect_eye(x: Any, rows: int, cols: int) -> Any:
  """Identity matrices (…, rows, cols) with x's batch dimensions and dtype."""
  return _identity((*_shape(x)[:-2], rows, cols), _dtype(x))


# ============================================================================= cholesky_update

def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
  """The Cholesky factor of A + w wᵀ from that of A, in O(n²).

  Args:
    r_matrix: upper-triangular R (…, n, n) with A = Rᵀ R (and a positive diagonal); only
      its upper triangle is read.
    w_vector: w (…, n).

  Returns:
    Upper-triangular R' with R'ᵀ R' = A + w wᵀ.

  Example: `cholesky_update(jnp.eye(2), jnp.array([0., 1.]))` is `[[1, 0], [0, √2]]`.
  """
  return cholesky_update_p.bind(r_matrix, w_vector)


def _cholesky_update_shape(r: ShapedArray, w: ShapedArray) -> tuple[int, ...]:
  utils.check_dtypes("cholesky_update", (np.floating,), r, w)
  utils.check_same_dtypes("cholesky_update", r, w)
  _check_batch("cholesky_update", r, w, ranks=(2, 1))
  if r.shape[-1] != r.shape[-2] or w.shape[-1] != r.shape[-1]:
    raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                     f"vector of the same size as input. Got {r.str_short()} and "
                     f"{w.str_short()} instead.")
  return r.shape


cholesky_update_p = utils.standard_primitive(
    "cholesky_update", _cholesky_update_shape, utils.input_dtype, lambda *avals: False)


def _givens(x: Any, y: Any) -> tuple[Any, Any]:
  """(c, s) with c x - s y = √(x² + y²) and s x + c y = 0, scaled to avoid overflow;
  (1, 0) when y = 0."""
  no_rotation = lax.eq(y, _const(y, 0))
  scale = lax.max(lax.abs(x), lax.abs(y))
  scale = lax.select(no_rotation, lax.full_like(scale, 1), scale)
  xs, ys = lax.div(x, scale), lax.div(y, scale)
  rh = transcendental.rsqrt(lax.add(lax.mul(xs, xs), lax.mul(ys, ys)))
  c = lax.select(no_rotation, lax.full_like(x, 1), lax.mul(xs, rh))
  s = lax.select(no_rotation, lax.full_like(y, 0), lax.neg(lax.mul(ys, rh)))
  return c, s


def _cholesky_update_by_rotations(r: Any, w: Any) -> Any:
  """Row k of R' is row k of R rotated with the current w so that w[k] becomes 0; each row
  is touched once, so the rows are collected and stacked (n is static, the loop unrolled)."""
  axis = len(_shape(r)) - 2
  r = _triu(r)
  rows = []
  for k in range(_shape(r)[-1]):
    row = slicing.index_in_dim(r, k, axis, keepdims=False)
    c, s = _givens(slicing.index_in_dim(row, k, axis, keepdims=False),
                   slicing.index_in_dim(w, k, axis, keepdims=False))
    c, s = _bcast(c, _shape(row)), _bcast(s, _shape(row))
    rows.append(shape_ops.expand_dims(lax.sub(lax.mul(c, row), lax.mul(s, w)), (axis,)))
    w = lax.add(lax.mul(c, w), lax.mul(s, row))
  return shape_ops.concatenate(rows, axis) if rows else r


def _cholesky_update_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
  """With A' = Rᵀ R + w wᵀ = R'ᵀ R', dA' = dRᵀ R + Rᵀ dR + dw wᵀ + w dwᵀ, and R'ᵀ is the
  lower Cholesky factor of A', so dR' is the transposed Cholesky tangent."""
  r, w = primals
  dr, dw = (ad.instantiate_zeros(t) for t in tangents)
  r, dr = _triu(r), _triu(dr)
  r_new = cholesky_update_p.bind(r, w)
  rt_dr = _matmul(_T(r), dr)
  w_col = shape_ops.expand_dims(w, (len(_shape(w)),))
  w_dw = _matmul(w_col, _T(shape_ops.expand_dims(dw, (len(_shape(dw)),))))
  da = lax.add(lax.add(rt_dr, _T(rt_dr)), lax.add(w_dw, _T(w_dw)))
  return r_new, _T(_cholesky_tangent(_T(r_new), da))


mlir.register_lowering(cholesky_update_p, mlir.lower_fun(_cholesky_update_by_rotations,
                                                         multiple_results=False))
ad.primitive_jvps[cholesky_update_p] = _cholesky_update_jvp
batching.primitive_batchers[cholesky_update_p] = _batch_rule(cholesky_update_p)


# ============================================================================= symmetric_product

def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.,
                      beta: float = 0., symmetrize_output: bool = False) -> Any:
  """α A Aᵀ + β C for A (…, m, n) and symmetric C (…, m, m).

  Only the lower triangle of the result is guaranteed on every platform (a GPU kernel fills
  only that one); with `symmetrize_output` the upper triangle is its mirror image.

  Example: `symmetric_product(jnp.array([[1.], [2.]]), jnp.eye(2), beta=1.)` is
  `[[2., 2.], [2., 5.]]`.
  """
  result = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
  if symmetrize_output:
    result = lax.add(_tril(result), _T(_tril(result, -1)))
  return result


def _symmetric_product_shape(a: ShapedArray, c: ShapedArray, **_: Any) -> tuple[int, ...]:
  utils.check_dtypes("symmetric_product", (np.floating,), a, c)
  utils.check_same_dtypes("symmetric_product", a, c)
  _check_batch("symmetric_product", a, c, ranks=(2, 2))
  if c.shape[-1] != c.shape[-2] or a.shape[-2] != c.shape[-1]:
    raise ValueError("symmetric_product expects a rectangular matrix of shape (…, m, n) and a "
                     f"square matrix of shape (…, m, m). Got {a.str_short()} and "
                     f"{c.str_short()}.")
  return c.shape


symmetric_product_p = utils.standard_primitive(
    "symmetric_product", _symmetric_product_shape, utils.input_dtype, lambda *a, **p: False)


def _symmetric_product_value(a: Any, c: Any, *, alpha: float, beta: float) -> Any:
  return lax.add(lax.mul(_const(c, alpha), _matmul(a, _T(a))), lax.mul(_const(c, beta), c))


def _symmetric_product_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, alpha: float,
                           beta: float) -> tuple[Any, Any]:
  """d(α A Aᵀ + β C) = α (dA Aᵀ + A dAᵀ) + β dC."""
  (a, c), (da, dc) = primals, tangents
  out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta)
  tangent = ad.Zero(core.get_aval(out).to_tangent_aval())
  if type(da) is not ad.Zero:
    da_at = _matmul(da, _T(a))
    tangent = lax.mul(_const(c, alpha), lax.add(da_at, _T(da_at)))
  if type(dc) is not ad.Zero:
    tangent = ad.add_tangents(tangent, lax.mul(_const(c, beta), dc))
  return out, tangent


mlir.register_lowering(symmetric_product_p, mlir.lower_fun(_symmetric_product_value,
                                                           multiple_results=False))
ad.primitive_jvps[symmetric_product_p] = _symmetric_product_jvp
batching.primitive_batchers[symmetric_product_p] = _batch_rule(symmetric_product_p)


# ============================================================================= ormqr

def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
  """Q C, Qᴴ C (`transpose`), C Q or C Qᴴ (not `left`) for the Q of a compact QR, without
  forming Q.

  Args:
    a: (…, m, n): Householder reflectors below the diagonal, as `geqrf` leaves them.
    taus: (…, k), k ≤ min(m, n): the reflectors' scales.
    c: (…, m, q) when `left`, (…, p, m) otherwise.

  Returns:
    The product, of c's shape.

  Example: with `h, taus = geqrf(x)`, `ormqr(h, taus, jnp.eye(m))` is the full Q of x.
  """
  return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


def _ormqr_shape(a: ShapedArray, taus: ShapedArray, c: ShapedArray, *, left: bool,
                 transpose: bool) -> tuple[int, ...]:
  _matrix_aval("ormqr", a)
  _matrix_aval("ormqr", c)
  utils.check_same_dtypes("ormqr", a, taus, c)
  _check_batch("ormqr", a, taus, c, ranks=(2, 1, 2))
  m, n = a.shape[-2:]
  if taus.shape[-1] > min(m, n):
    raise ValueError(f"ormqr takes at most min(m, n) = {min(m, n)} reflector scales for a of "
                     f"type {a.str_short()}, got taus of type {taus.str_short()}.")
  rows_or_cols = c.shape[-2] if left else c.shape[-1]
  if rows_or_cols != m:
    side = "rows" if left else "columns"
    raise ValueError(f"ormqr with left={left} expects c to have the same number of {side} as "
                     f"the Householder matrix a has rows. Got a of type {a.str_short()} and c "
                     f"of type {c.str_short()}.")
  return c.shape


ormqr_p = utils.standard_primitive("ormqr", _ormqr_shape, utils.input_dtype,
                                   lambda *a, **p: False)


def _ormqr_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, taus: ir.Value, c: ir.Value,
                    *, left: bool, transpose: bool) -> list[ir.Value]:
  a_aval, taus_aval, c_aval = ctx.avals_in
  if taus_aval.shape[-1] == 0 or 0 in c_aval.shape[-2:]:
    return [c]  # Q is the identity (or there is nothing to multiply)
  return _lapack_call("ormqr", a_aval.dtype, [a, taus, c], ctx.avals_in, ctx.avals_out,
                      left=left, transpose=transpose)


def _householder_q(a: Any, taus: Any) -> Any:
  """Q = H₀ H₁ … H_{k-1} (…, m, m), Hᵢ = I - τᵢ vᵢ vᵢᴴ with vᵢ = eᵢ + (column i of a
  below the diagonal): the definition, used to differentiate Q in its reflectors."""
  *batch, m, _ = _shape(a)
  k = _shape(taus)[-1]
  axis = len(batch)
  reflectors = lax.add(_tril(slicing.slice_in_dim(a, 0, k, axis=axis + 1), -1),
                       _rect_eye(a, m, k))
  q = _rect_eye(a, m, m)
  for i in range(k):
    v = slicing.slice_in_dim(reflectors, i, i + 1, axis=axis + 1)  # (…, m, 1)
    tau = _bcast(slicing.index_in_dim(taus, i, axis, keepdims=False), (*batch, m, 1))
    q = lax.sub(q, _matmul(lax.mul(_matmul(q, v), tau), _H(v)))
  return q


def _ormqr_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, left: bool,
               transpose: bool) -> tuple[Any, Any]:
  """Linear in C; for the reflectors, d(op(Q) C) = op(dQ) C with dQ the tangent of
  `_householder_q`."""
  (a, taus, c), (da, dtaus, dc) = primals, tangents
  out = ormqr_p.bind(a, taus, c, left=left, transpose=transpose)
  tangent = ad.Zero(core.get_aval(out).to_tangent_aval())
  if type(dc) is not ad.Zero:
    tangent = ormqr_p.bind(a, taus, dc, left=left, transpose=transpose)
  if type(da) is not ad.Zero or type(dtaus) is not ad.Zero:
    _, (dq,) = ad.jvp_flat(lambda a, t: [_householder_q(a, t)], [a, taus], [da, dtaus])
    dq = _H(dq) if transpose else dq
    tangent = ad.add_tangents(tangent, _matmul(dq, c) if left else _matmul(c, dq))
  return out, tangent


def _ormqr_transpose(ct: Any, a: Any, taus: Any, c: Any, *, left: bool, transpose: bool
                     ) -> list[Any]:
  """The transpose of C ↦ op(Q) C is C̄ ↦ op(Q)ᵀ C̄ = conj(op(Q)ᴴ conj(C̄)) (likewise on
  the right), and op(Q)ᴴ is op with `transpose` flipped."""
  if ad.is_undefined_primal(a) or ad.is_undefined_primal(taus):
    raise NotImplementedError("ormqr is linear only in c, not in its reflectors a and taus.")
  if type(ct) is ad.Zero:
    return [None, None, ad.Zero(c.aval)]
  conj = lax.conj if _is_complex(ct) else (lambda x: x)
  return [None, None, conj(ormqr_p.bind(a, taus, conj(ct), left=left, transpose=not transpose))]


mlir.register_lowering(ormqr_p, _ormqr_lowering, platform="cpu")
ad.primitive_jvps[ormqr_p] = _ormqr_jvp
ad.primitive_transposes[ormqr_p] = _ormqr_transpose
batching.primitive_batchers[ormqr_p] = _batch_rule(ormqr_p)


# ============================================================================= qdwh
# Nakatsukasa, Bai and Gygi (2010), "Optimizing Halley's iteration for computing the matrix
# polar decomposition": U ← U (a I + b UᴴU)(I + c UᴴU)⁻¹, with weights (a, b, c) chosen from
# a lower bound l on the smallest singular value of U, which the iteration drives to 1.
# While c is large the step is computed through a QR of [√c U; I] (stable without inverting);
# after that through a Cholesky factor of I + c UᴴU (cheaper).

_CHOLESKY_FROM_C = 100.0


def _qdwh_weights(l: float) -> tuple[float, float, float, float]:
  """The optimal weights (a, b, c) for the bound l, and the bound after the step."""
  l2 = l * l
  dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
  sqd = (1 + dd) ** 0.5
  a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
  b = (a - 1) ** 2 / 4
  c = a + b - 1
  return a, b, c, l * (a + b * l2) / (1 + c * l2)


def _qr_step(u: Any, a: float, b: float, c: float) -> Any:
  """U ← (b/c) U + (a - b/c)/√c Q₁ Q₂ᴴ, where [√c U; I] = [Q₁; Q₂] R."""
  m, n = _shape(u)
  stacked = shape_ops.concatenate([lax.mul(u, _const(u, c ** 0.5)), _rect_eye(u, n, n)], 0)
  q, _ = qr(stacked, full_matrices=False)
  q1, q2 = slicing.slice_in_dim(q, 0, m, axis=0), slicing.slice_in_dim(q, m, m + n, axis=0)
  e = b / c
  return lax.add(lax.mul(u, _const(u, e)),
                 lax.mul(_matmul(q1, _H(q2)), _const(u, (a - e) / c ** 0.5)))


def _cholesky_step(u: Any, a: float, b: float, c: float) -> Any:
  """U ← (b/c) U + (a - b/c) U (I + c UᴴU)⁻¹, solving with the Cholesky factor."""
  n = _shape(u)[-1]
  gram = lax.add(lax.mul(_matmul(_H(u), u), _const(u, c)), _rect_eye(u, n, n))
  l = cholesky(gram, symmetrize_input=False)
  solved = triangular_solve(l, u, left_side=False, lower=True, transpose_a=True,
                            conjugate_a=True)
  solved = triangular_solve(l, solved, left_side=False, lower=True)
  e = b / c
  return lax.add(lax.mul(u, _const(u, e)), lax.mul(solved, _const(u, a - e)))


def _frobenius(x: Any) -> Any:
  ax = lax.abs(x)
  return transcendental.sqrt(reductions.reduce_sum(lax.mul(ax, ax), (0, 1)))


def _not_converged(u: Any, u_prev: Any, tol: float) -> Any:
  return lax.gt(_frobenius(lax.sub(u, u_prev)), np.array(tol, _dtype(lax.abs(u))))


def qdwh(x: Any, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None
         ) -> tuple[Any, Any, Any, Any]:
  """The polar decomposition x = u h by the QR-based dynamically weighted Halley iteration.

  Args:
    x: a full-rank matrix (M, N) with M ≥ N.
    is_hermitian: accepted for JAX compatibility (unused, as in JAX).
    max_iterations: the most iterations (default 10).
    eps: the tolerance's unit, the dtype's epsilon by default; the iteration stops when the
      change of u falls below (5 eps)^(1/3).
    dynamic_shape: (m, n): only x[:m, :n] is decomposed, and u and h are zero outside their
      leading (m, n) and (n, n) blocks (static sizes in jaxon).

  Returns:
    (u, h, num_iters, is_converged): u with orthonormal columns, h Hermitian positive
    semidefinite, the number of iterations, and whether they converged.

  Example: `qdwh(jnp.array([[2., 0.], [0., -3.]]))[0]` is `[[1., 0.], [0., -1.]]`.
  """
  del is_hermitian
  x_aval = core.get_aval(x)
  if x_aval.ndim != 2:
    raise ValueError(f"qdwh takes a matrix (M, N), got an operand of type "
                     f"{x_aval.str_short()}.")
  utils.check_dtypes("qdwh", (np.floating, np.complexfloating), x_aval)
  big_m, big_n = x_aval.shape
  if big_m < big_n:
    raise ValueError(f"The input matrix of shape M x N must have M >= N, got {x_aval.shape}.")
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  if dynamic_shape is not None:
    m, n = (int(d) for d in dynamic_shape)
    if not (0 < n <= m and m <= big_m and n <= big_n):
      raise ValueError(f"qdwh: dynamic_shape {dynamic_shape} must satisfy 0 < n <= m within "
                       f"the matrix's shape {x_aval.shape}.")
    u, h, iters, converged = qdwh(slicing.slice(x, (0, 0), (m, n)),
                                  max_iterations=max_iterations, eps=eps)
    zero = np.zeros((), _dtype(u))
    return (shape_ops.pad(u, zero, [(0, big_m - m, 0), (0, big_n - n, 0)]),
            shape_ops.pad(h, zero, [(0, big_n - n, 0), (0, big_n - n, 0)]), iters, converged)
  eps = float(dtypes.finfo(_dtype(lax.abs(x))).eps) if eps is None else float(eps)
  tol_l = 5 * eps
  tol_norm = tol_l ** (1 / 3)

  abs_x = lax.abs(x)
  one_norm = reductions.reduce_max(reductions.reduce_sum(abs_x, (0,)), (0,))
  inf_norm = reductions.reduce_max(reductions.reduce_sum(abs_x, (1,)), (0,))
  scale = lax.mul(transcendental.rsqrt(one_norm), transcendental.rsqrt(inf_norm))
  scale = lax.select(lax.eq(one_norm, _const(one_norm, 0)), lax.full_like(scale, 1), scale)
  u = lax.mul(x, lax.convert_element_type(scale, _dtype(x)))

  # The weights depend only on eps, so the first steps are unrolled with constant weights.
  l, steps, not_converged = eps, 0, np.bool_(True)
  while l + tol_l < 1 and steps < max_iterations:
    a, b, c, l = _qdwh_weights(l)
    steps += 1
    if c > _CHOLESKY_FROM_C:
      u = _qr_step(u, a, b, c)
    else:
      u_prev, u = u, _cholesky_step(u, a, b, c)
      not_converged = _not_converged(u, u_prev, tol_norm)

  # Then Halley's iteration (a, b, c) = (3, 1, 3), the weights' limit, until u settles.
  def keep_going(state: tuple) -> Any:
    k, _, not_converged = state
    return lax.bitwise_and(not_converged, lax.lt(k, np.int32(max_iterations)))

  def halley(state: tuple) -> tuple:
    k, u, _ = state
    u_next = _cholesky_step(u, 3.0, 1.0, 3.0)
    return lax.add(k, np.int32(1)), u_next, _not_converged(u_next, u, tol_norm)

  num_iters, u, not_converged = while_loop(keep_going, halley,
                                           (np.int32(steps), u, not_converged))
  # One Newton–Schulz step, U ← U (3I - UᴴU) / 2, polishes the orthogonality.
  u = lax.sub(lax.mul(u, _const(u, 1.5)), lax.mul(_matmul(u, _matmul(_H(u), u)),
                                                  _const(u, 0.5)))
  h = _matmul(_H(u), x)
  h = lax.mul(lax.add(h, _H(h)), _const(h, 0.5))
  return u, h, num_iters, lax.bitwise_not(not_converged)
