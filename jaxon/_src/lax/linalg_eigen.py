"""The eigendecompositions and the SVD: `eigh` (Hermitian, LAPACK's syevd), `svd` (gesdd or
gesvd) and `eig` (general square matrices, geev), with the enums that pick their algorithms.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import core
from jaxon._src.core import ShapedArray
from jaxon._src.interpreters import ad, batching, mlir
from jaxon._src.lax import lax, utils
from jaxon._src.lax.linalg_decompositions import lu, lu_solve, symmetrize
from jaxon._src.lax.linalg_helpers import (_H, _T, _batch_rule, _column_values, _complex_dtype,
                                           _const, _diagonal, _diagonal_mask, _dtype, _emit,
                                           _empty_results, _info_aval, _is_complex, _is_empty,
                                           _lapack_call, _matmul, _matrix_aval, _nan_unless_ok,
                                           _real_dtype, _reciprocal_gaps, _shape, _to_dtype,
                                           _where_mask)


# ============================================================================= algorithm enums

class EigImplementation(enum.Enum):
  """Which library computes `eig`; on the CPU only LAPACK (the default) exists."""
  CUSOLVER = "cusolver"
  MAGMA = "magma"
  LAPACK = "lapack"


class EighImplementation(enum.Enum):
  """Which algorithm computes `eigh`; on the CPU only QR (LAPACK's, the default) exists."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
  """Which algorithm computes `svd`: on the CPU, DEFAULT and DIVIDE_AND_CONQUER are LAPACK's
  gesdd and QR its gesvd; JACOBI and POLAR exist only on accelerators."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"
  DIVIDE_AND_CONQUER = "divide_and_conquer"


def _check_choice(fun_name: str, param: str, value: Any, enum_type: type[enum.Enum],
                  supported: Sequence[Any]) -> None:
  """Raises early when `value` is not a member of `enum_type` or names an algorithm the
  CPU does not have."""
  if value is not None and not isinstance(value, enum_type):
    raise TypeError(f"{fun_name}: {param} must be None or a {enum_type.__name__}, got "
                    f"{value!r}.")
  if value not in (None, *supported):
    raise NotImplementedError(f"{fun_name}: {param}={value} is not supported on the CPU; use "
                              f"one of {[str(s) for s in supported]} or None.")


# ============================================================================= eigh

def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: EighImplementation | None = None) -> tuple[Any, Any]:
  """Eigendecomposition of Hermitian matrices: x v[:, i] = w[i] v[:, i].

  Args:
    x: Hermitian matrices (…, n, n); only the triangle `lower` selects is read unless
      `symmetrize_input`, which factors (x + xᴴ) / 2.
    sort_eigenvalues: LAPACK returns them in ascending order either way.
    implementation: None or `EighImplementation.QR` (the CPU has no other).

  Returns:
    (v, w): orthonormal eigenvectors as the columns of v (…, n, n), and the real eigenvalues
    w (…, n) in ascending order.

  Example: `eigh(jnp.array([[2., 1.], [1., 2.]]))[1]` is `[1., 3.]`.
  """
  if subset_by_index is not None:
    raise NotImplementedError("eigh(subset_by_index=...) is not implemented in jaxon.")
  _check_choice("eigh", "implementation", implementation, EighImplementation,
                [EighImplementation.QR])
  _matrix_aval("eigh", core.get_aval(x), square=True)
  if symmetrize_input:
    x = symmetrize(x)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
  return v, w


def _eigh_abstract_eval(x: ShapedArray, **params: Any) -> list[ShapedArray]:
  shape = _matrix_aval("eigh", x, square=True)
  return [ShapedArray(shape, x.dtype), ShapedArray(shape[:-1], _real_dtype(x.dtype))]


eigh_p = utils.standard_multi_result_primitive("eigh", _eigh_abstract_eval)


def _eigh_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, lower: bool,
                   sort_eigenvalues: bool) -> list[ir.Value]:
  x_aval = ctx.avals_in[0]
  v_aval, w_aval = ctx.avals_out
  info_aval = _info_aval(x_aval.shape)
  v, w, info = _lapack_call("syevd", x_aval.dtype, [x], [x_aval], [v_aval, w_aval, info_aval],
                            in_place=0, uplo="L" if lower else "U", mode="V")
  return _emit(ctx, _nan_unless_ok, [info_aval, v_aval, w_aval], info, v, w)


def _eigh_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any
              ) -> tuple[list[Any], list[Any]]:
  """With C = Vᴴ dA V: dw = Re diag(C) and dV = V (F ∘ C), F[i, j] = 1 / (w[j] - w[i]) off the
  diagonal and 0 on it (Giles 2008, "An extended collection of matrix derivative results")."""
  (x,), (dx,) = primals, tangents
  v, w = eigh_p.bind(x, **params)
  c = _matmul(_matmul(_H(v), dx), v)
  f = _to_dtype(_reciprocal_gaps(w), _dtype(x))
  dv = _matmul(v, lax.mul(f, c))
  dw = _diagonal(c)
  return [v, w], [dv, lax.real(dw) if _is_complex(dw) else dw]


mlir.register_lowering(eigh_p, _eigh_lowering, platform="cpu")
ad.primitive_jvps[eigh_p] = _eigh_jvp
batching.primitive_batchers[eigh_p] = _batch_rule(eigh_p)

# ============================================================================= SVD

def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None,
        algorithm: SvdAlgorithm | None = None) -> Any:
  """Singular value decomposition x = U diag(s) Vᴴ.

  Args:
    x: matrices (…, m, n); k = min(m, n).
    full_matrices: U is (…, m, m) and Vᴴ (…, n, n); otherwise (…, m, k) and (…, k, n).
    compute_uv: when False only s is computed and returned.
    algorithm: None, DEFAULT or DIVIDE_AND_CONQUER (LAPACK's gesdd) or QR (gesvd).

  Returns:
    (u, s, vh), or s: the k real singular values in descending order.

  Example: `svd(jnp.array([[3., 0.], [0., -4.]]), compute_uv=False)` is `[4., 3.]`.
  """
  if subset_by_index is not None:
    raise NotImplementedError("svd(subset_by_index=...) is not implemented in jaxon.")
  _check_choice("svd", "algorithm", algorithm, SvdAlgorithm,
                [SvdAlgorithm.DEFAULT, SvdAlgorithm.QR, SvdAlgorithm.DIVIDE_AND_CONQUER])
  outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                    algorithm=algorithm)
  if compute_uv:
    s, u, vh = outs
    return u, s, vh
  return outs[0]


def _svd_abstract_eval(x: ShapedArray, *, full_matrices: bool, compute_uv: bool,
                       algorithm: SvdAlgorithm | None = None) -> list[ShapedArray]:
  *batch, m, n = _matrix_aval("svd", x)
  k = min(m, n)
  s = ShapedArray((*batch, k), _real_dtype(x.dtype))
  if not compute_uv:
    return [s]
  return [s, ShapedArray((*batch, m, m if full_matrices else k), x.dtype),
          ShapedArray((*batch, n if full_matrices else k, n), x.dtype)]


svd_p = utils.standard_multi_result_primitive("svd", _svd_abstract_eval)


def _svd_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *, full_matrices: bool,
                  compute_uv: bool, algorithm: SvdAlgorithm | None) -> list[ir.Value]:
  """gesdd (divide and conquer) or, for `SvdAlgorithm.QR`, gesvd; without `compute_uv` they
  still want U and Vᴴ buffers."""
  x_aval = ctx.avals_in[0]
  if _is_empty(x_aval):
    return _emit(ctx, lambda: _empty_results(ctx.avals_out), [])
  _, u_aval, vt_aval = _svd_abstract_eval(x_aval, full_matrices=full_matrices,
                                          compute_uv=True)
  info_aval = _info_aval(x_aval.shape)
  mode = ("A" if full_matrices else "S") if compute_uv else "N"
  _, s, u, vt, info = _lapack_call(
      "gesvd" if algorithm == SvdAlgorithm.QR else "gesdd", x_aval.dtype, [x], [x_aval],
      [x_aval, ctx.avals_out[0], u_aval, vt_aval, info_aval], in_place=0, mode=mode)
  outs = [s, u, vt] if compute_uv else [s]
  return _emit(ctx, _nan_unless_ok, [info_aval, *ctx.avals_out], info, *outs)


def _svd_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, full_matrices: bool,
             compute_uv: bool, algorithm: SvdAlgorithm | None) -> tuple[list[Any], list[Any]]:
  """With k = min(m, n), S = diag(s) and C = Uᴴ dA V (k×k): ds = Re diag(C);
  dU = U (F ∘ (C S + S Cᴴ) + D) and dV = V (F ∘ (S C + Cᴴ S)), where
  F[i, j] = 1 / (s[j]² - s[i]²) off the diagonal and D = diag(i Im C) / s fixes the phases;
  the parts of dU (dV) outside U's (V's) span are (I - U Uᴴ) dA V / s ((I - V Vᴴ) dAᴴ U / s)
  (Townsend 2016, "Differentiating the singular value decomposition")."""
  (x,), (dx,) = primals, tangents
  if compute_uv and full_matrices:
    raise NotImplementedError("The derivative of svd(full_matrices=True) is not unique (the "
                              "extra singular vectors are arbitrary); use "
                              "full_matrices=False.")
  s, u, vt = svd_p.bind(x, full_matrices=False, compute_uv=True, algorithm=algorithm)
  v, ut = _H(vt), _H(u)
  c = _matmul(_matmul(ut, dx), v)
  ds = _diagonal(c)
  ds = lax.real(ds) if _is_complex(ds) else ds
  if not compute_uv:
    return [s], [ds]
  dtype = _dtype(x)
  s_cols = _column_values(_to_dtype(s, dtype), _shape(c))
  f = _to_dtype(_reciprocal_gaps(lax.mul(s, s)), dtype)
  c_s, s_c = lax.mul(c, s_cols), lax.mul(_T(s_cols), c)
  du_inner = lax.mul(f, lax.add(c_s, _H(c_s)))
  dv_inner = lax.mul(f, lax.add(s_c, _H(s_c)))
  if _is_complex(c):
    phases = _where_mask(_diagonal_mask(_shape(c)), lax.mul(lax.sub(c, _H(c)), _const(c, 0.5)))
    du_inner = lax.add(du_inner, _divide_columns(phases, s))
  du = _matmul(u, du_inner)
  dv = _matmul(v, dv_inner)
  m, n_cols = _shape(x)[-2:]
  if m > n_cols:
    dx_v = _matmul(dx, v)
    du = lax.add(du, _divide_columns(lax.sub(dx_v, _matmul(u, _matmul(ut, dx_v))), s))
  if n_cols > m:
    dxh_u = _matmul(_H(dx), u)
    dv = lax.add(dv, _divide_columns(lax.sub(dxh_u, _matmul(v, _matmul(vt, dxh_u))), s))
  return [s, u, vt], [ds, du, _H(dv)]


def _divide_columns(x: Any, s: Any) -> Any:
  """x[…, :, j] / s[…, j]."""
  return lax.div(x, _column_values(_to_dtype(s, _dtype(x)), _shape(x)))


mlir.register_lowering(svd_p, _svd_lowering, platform="cpu")
ad.primitive_jvps[svd_p] = _svd_jvp
batching.primitive_batchers[svd_p] = _batch_rule(svd_p)

# ============================================================================= eig

def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: EigImplementation | None = None, use_magma: bool | None = None
        ) -> list[Any]:
  """Eigendecomposition of general square matrices (CPU only, through LAPACK's geev).

  Args:
    x: matrices (…, n, n).
    enable_eigvec_derivs: accepted for JAX compatibility; jaxon differentiates only the
      eigenvalues.
    implementation: None or `EigImplementation.LAPACK` (the CPU has no other).
    use_magma: accepted for JAX compatibility (it picks a GPU algorithm).

  Returns:
    [w, vl, vr] (the eigenvectors only when asked for): complex eigenvalues w (…, n), left
    eigenvectors vl with vlᴴ x = diag(w) vlᴴ, right ones vr with x vr = vr diag(w), each
    column of unit norm.

  Example: `eig(jnp.array([[0., -1.], [1., 0.]]))[0]` is `[1j, -1j]`.
  """
  if implementation is not None and implementation != EigImplementation.LAPACK:
    raise ValueError(f"eig: only the LAPACK implementation is supported on the CPU, got "
                     f"implementation={implementation}.")
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors))


def _eig_abstract_eval(x: ShapedArray, *, compute_left_eigenvectors: bool,
                       compute_right_eigenvectors: bool) -> list[ShapedArray]:
  shape = _matrix_aval("eig", x, square=True)
  dtype = _complex_dtype(x.dtype)
  vectors = ShapedArray(shape, dtype)
  return [ShapedArray(shape[:-1], dtype),
          *[vectors] * (compute_left_eigenvectors + compute_right_eigenvectors)]


eig_p = utils.standard_multi_result_primitive("eig", _eig_abstract_eval)


def _eig_lowering(ctx: mlir.LoweringRuleContext, x: ir.Value, *,
                  compute_left_eigenvectors: bool, compute_right_eigenvectors: bool
                  ) -> list[ir.Value]:
  """geev of a real matrix returns the eigenvalues' real and imaginary parts apart."""
  x_aval = ctx.avals_in[0]
  w_aval = ShapedArray(x_aval.shape[:-1], _complex_dtype(x_aval.dtype))
  v_aval = ShapedArray(x_aval.shape, w_aval.dtype)
  info_aval = _info_aval(x_aval.shape)
  w_parts = [x_aval.update(shape=w_aval.shape)] * 2 if x_aval.dtype.kind == "f" else [w_aval]
  options = dict(compute_left="V" if compute_left_eigenvectors else "N",
                 compute_right="V" if compute_right_eigenvectors else "N")
  *w, vl, vr, info = _lapack_call("geev", x_aval.dtype, [x], [x_aval],
                                  [*w_parts, v_aval, v_aval, info_aval], **options)
  w = hlo.complex(*w) if len(w) == 2 else w[0]
  outs = [w] + [vl] * compute_left_eigenvectors + [vr] * compute_right_eigenvectors
  return _emit(ctx, _nan_unless_ok, [info_aval, *ctx.avals_out], info, *outs)


def _eig_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
             compute_left_eigenvectors: bool, compute_right_eigenvectors: bool
             ) -> tuple[list[Any], list[Any]]:
  """dw = diag(V⁻¹ dA V) for the right eigenvectors V (Boeddeker et al. 2017, "On the
  computation of complex-valued gradients", arXiv:1701.00392, eq. 4.60)."""
  if compute_left_eigenvectors or compute_right_eigenvectors:
    raise NotImplementedError("The derivatives of eigenvectors of eig are not implemented, "
                              "only those of its eigenvalues (compute_left_eigenvectors="
                              "compute_right_eigenvectors=False).")
  (x,), (dx,) = primals, tangents
  w, v = eig_p.bind(x, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
  lu_, _, perm = lu(v)
  dx_v = _matmul(_to_dtype(dx, _dtype(v)), v)
  return [w], [_diagonal(lu_solve(lu_, perm, dx_v))]


mlir.register_lowering(eig_p, _eig_lowering, platform="cpu")
ad.primitive_jvps[eig_p] = _eig_jvp
batching.primitive_batchers[eig_p] = _batch_rule(eig_p)
