"""The `triangular_solve` primitive: op(a) x = b or x op(a) = b with a triangular, lowered to
LAPACK's trsm on the CPU, as JAX lowers it (XLA expands its own op into loops, 4-6x slower
for small matrices), and to StableHLO's native op elsewhere (for jax2tf: TensorFlow's XLA
has no LAPACK kernels). It is linear in its right-hand side, so it is the one linear-algebra
primitive with a transpose rule of its own.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, shape_ops, utils
from jaxon._src.lax.linalg_helpers import (_T, _batch_rule, _ir_conj, _is_complex,
                                           _lapack_call, _matmul, _matrix_aval, _tril, _triu)


# ============================================================================= triangular_solve

def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
  """Solves op(a) x = b (`left_side`) or x op(a) = b for x, with a triangular.

  Args:
    a: triangular matrices (…, m, m); only the triangle `lower` selects is read (and not its
      diagonal when `unit_diagonal`, which takes it to be ones).
    b: right-hand sides with a's batch dimensions: (…, m, n) when `left_side`, else (…, n, m).
    transpose_a, conjugate_a: op(a) is a, aᵀ, conj(a) or aᴴ.

  Returns:
    x, of b's shape. A b with one dimension fewer than a is one vector per matrix, as in JAX.

  Example: `triangular_solve(jnp.array([[2., 0.], [1., 1.]]), jnp.array([[2.], [3.]]),
  left_side=True, lower=True)` is `[[1.], [2.]]`.
  """
  conjugate_a = bool(conjugate_a) and _is_complex(a)
  vector = np.ndim(b) == np.ndim(a) - 1
  if vector:
    b = shape_ops.expand_dims(b, (np.ndim(b) - (0 if left_side else 1),))
  x = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                              transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                              unit_diagonal=bool(unit_diagonal))
  return shape_ops.squeeze(x, (np.ndim(x) - (1 if left_side else 2),)) if vector else x


def _triangular_solve_shape_rule(a: ShapedArray, b: ShapedArray, *, left_side: bool,
                                 **params: Any) -> tuple[int, ...]:
  _matrix_aval("triangular_solve", a, square=True)
  if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
    raise TypeError(f"triangular_solve needs a and b with the same batch dimensions, got a of "
                    f"type {a.str_short()} and b of type {b.str_short()}.")
  solved = b.shape[-2] if left_side else b.shape[-1]
  if solved != a.shape[-1]:
    side = "rows" if left_side else "columns"
    raise TypeError(f"triangular_solve with left_side={left_side} needs b's {side} to match "
                    f"a's size {a.shape[-1]}, got a of type {a.str_short()} and b of type "
                    f"{b.str_short()}.")
  return b.shape


def _triangular_solve_dtype_rule(a: ShapedArray, b: ShapedArray, **params: Any) -> np.dtype:
  utils.check_same_dtypes("triangular_solve", a, b)
  return b.dtype


triangular_solve_p = utils.standard_primitive(
    "triangular_solve", _triangular_solve_shape_rule, _triangular_solve_dtype_rule,
    lambda *avals, **params: False)


def _triangular_solve_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, b: ir.Value, *,
                               left_side: bool, lower: bool, transpose_a: bool,
                               conjugate_a: bool, unit_diagonal: bool) -> list[ir.Value]:
  """StableHLO has no "conjugate without transposing": that case conjugates `a` first."""
  if conjugate_a and not transpose_a:
    a = _ir_conj(ctx.avals_in[0], a)
  transpose = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
  return [hlo.triangular_solve(a, b, left_side, lower, unit_diagonal,
                               hlo.TransposeAttr.get(transpose))]


def _triangular_solve_cpu_lowering(ctx: mlir.LoweringRuleContext, a: ir.Value, b: ir.Value, *,
                                   left_side: bool, lower: bool, transpose_a: bool,
                                   conjugate_a: bool, unit_diagonal: bool) -> list[ir.Value]:
  """trsm, which has op(a) = conj(a) no more than StableHLO: that case conjugates `a` first.
  Empty operands, which LAPACK rejects, take the native op."""
  a_aval, b_aval = ctx.avals_in
  if b_aval.size == 0:
    return _triangular_solve_lowering(
        ctx, a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  if conjugate_a and not transpose_a:
    a, conjugate_a = _ir_conj(a_aval, a), False
  transpose = ("C" if conjugate_a else "T") if transpose_a else "N"
  return _lapack_call("trsm", a_aval.dtype, [a, b], [a_aval, b_aval], [b_aval], in_place=1,
                      side="L" if left_side else "R", uplo="L" if lower else "U",
                      trans_x=transpose, diag="U" if unit_diagonal else "N")


def _op_a(a: Any, *, lower: bool, transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
          ) -> Any:
  """op(a) as triangular_solve reads it: the selected triangle, transposed/conjugated."""
  a = _tril(a, -int(unit_diagonal)) if lower else _triu(a, int(unit_diagonal))
  a = _T(a) if transpose_a else a
  return lax.conj(a) if conjugate_a else a


def _triangular_solve_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
                          ) -> tuple[Any, Any]:
  """Linear in b; for a, d(op(a)⁻¹ b) = -op(a)⁻¹ op(da) x (x op(da) op(a)⁻¹ on the right)."""
  (a, b), (da, db) = primals, tangents
  x = triangular_solve_p.bind(a, b, **params)
  dx = ad.Zero(core.get_aval(x).to_tangent_aval())
  if type(db) is not ad.Zero:
    dx = triangular_solve_p.bind(a, db, **params)
  if type(da) is not ad.Zero:
    op_da = _op_a(da, lower=params["lower"], transpose_a=params["transpose_a"],
                  conjugate_a=params["conjugate_a"], unit_diagonal=params["unit_diagonal"])
    rhs = _matmul(op_da, x) if params["left_side"] else _matmul(x, op_da)
    dx = ad.add_tangents(dx, triangular_solve_p.bind(a, lax.neg(rhs), **params))
  return x, dx


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                                transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
                                ) -> list[Any]:
  """b ↦ op(a)⁻¹ b is linear; its transpose is ct ↦ op(a)⁻ᵀ ct (transposed, not conjugated)."""
  if ad.is_undefined_primal(a):
    raise NotImplementedError("triangular_solve is not linear in its matrix a")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  return [None, triangular_solve_p.bind(
      a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
      conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


def _triangular_solve_batch(vals: Sequence[Any], dims: Sequence[int | None], *,
                            left_side: bool, **params: Any) -> tuple[Any, int]:
  """Right-hand sides that share one matrix are solved together: the batch joins b's
  columns (`left_side`) or rows, one solve instead of one per example (JAX's rule)."""
  a, b = vals
  a_dim, b_dim = dims
  if a_dim is not batching.not_mapped or b_dim is batching.not_mapped:
    return _batch_rule(triangular_solve_p)(vals, dims, left_side=left_side, **params)
  b = batching.moveaxis(b, b_dim, -1 if left_side else -3)
  shape = b.shape
  joined = (*shape[:-2], shape[-2] * shape[-1]) if left_side else \
      (*shape[:-3], shape[-3] * shape[-2], shape[-1])
  x = triangular_solve_p.bind(a, shape_ops.reshape(b, joined), left_side=left_side, **params)
  return shape_ops.reshape(x, shape), len(shape) - (1 if left_side else 3)


mlir.register_lowering(triangular_solve_p, _triangular_solve_lowering)
mlir.register_lowering(triangular_solve_p, _triangular_solve_cpu_lowering, platform="cpu")
ad.primitive_jvps[triangular_solve_p] = _triangular_solve_jvp
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
batching.primitive_batchers[triangular_solve_p] = _triangular_solve_batch
