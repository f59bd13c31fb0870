"""The error-function family of `jaxon.scipy.special`: the Faddeeva function `wofz`, the
scaled complementary error function `erfcx`, Dawson's integral `dawsn`, and Owen's T
function `owens_t`.

Each is a fixed approximation (a rational function or a quadrature, no loops) chosen as
JAX 0.10.2 chooses it, so values agree with JAX's to rounding. Their derivatives are
`custom_jvp` rules with the closed forms (w' = -2zw + 2i/sqrt(pi), erfcx' = 2x erfcx -
2/sqrt(pi), dawsn' = 1 - 2x dawsn, and Owen's T partials), not derivatives of the
approximations.

Every `where` between regions feeds the regions it does not select a harmless input, so
no branch computes inf or NaN that could leak into a gradient.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.api import jit
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.numpy.util import promote_args_inexact

_SQRT_PI = math.sqrt(math.pi)


def _const(x: Any, value: Any) -> np.ndarray:
  return np.array(value, dtypes.dtype(x, canonicalize=True))


def _polyval(coeffs: Any, x: Any) -> Any:
  """Horner's rule with the coefficients (highest degree first) in `x`'s dtype."""
  return jnp.polyval(np.asarray(coeffs, dtypes.dtype(x)), x)


def _upcast_half(impl: Any, x: Any) -> Any:
  """`impl(x)`, computed in float32 for 16-bit floats (the coefficients need float32)."""
  if dtypes.dtype(x) in (np.float32, np.float64):
    return impl(x)
  return impl(x.astype(np.float32)).astype(x.dtype)


def _real_only(name: str, *args: Any) -> list[Any]:
  """Float operands of one dtype; complex ones are rejected, as JAX rejects them."""
  args = promote_args_inexact(name, *args)
  if dtypes.issubdtype(dtypes.dtype(args[0]), np.complexfloating):
    raise ValueError(f"jax.scipy.special.{name} does not support complex-valued inputs.")
  return args


# ----------------------------------------------------------------------------- wofz, erfcx

# Weideman's (1994) N = 32 rational approximation of the Faddeeva function in the upper half
# plane: w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)) with Z = (L + iz) / (L - iz);
# p's coefficients are listed highest degree first.
_WOFZ_L = 4.7568284600108841
_WOFZ_P = [
    -1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12,
    -2.1543593557490879e-11, -5.5442449963237932e-11, 1.165824698850374e-10,
    4.1537441121999766e-10, -5.2310202114920615e-10, -3.2080151339721323e-09,
    8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,
    4.4015317312832251e-06, 6.8210319443575151e-06, -2.1409619201999998e-05,
    -0.00013075449254579421, -0.00024532980270038237, 0.00039259136070109705,
    0.0045195411053493093, 0.019006155784845501, 0.057304403529837282,
    0.14060716226893755, 0.29544451071508743, 0.54601397206393376, 0.9019254893648001,
    1.3455441692345449, 1.8256696296324815, 2.2635372999002676, 2.5722534081245696,
]


def _times_i(z: Any) -> Any:
  return lax.complex(lax.neg(lax.imag(z)), lax.real(z))


def _wofz_upper_half_plane(z: Any) -> Any:
  iz = _times_i(z)
  denom = _const(z, _WOFZ_L) - iz
  p = _polyval(_WOFZ_P, (_const(z, _WOFZ_L) + iz) / denom)
  return _const(z, 2) * p / (denom * denom) + _const(z, 1 / _SQRT_PI) / denom


@custom_jvp
@jit
def _wofz(z: Any) -> Any:
  """w in the lower half plane by the reflection w(-z) = 2 exp(-z^2) - w(z)."""
  upper = lax.ge(lax.imag(z), lax.full_like(lax.imag(z), 0))
  z_up = lax.select(upper, z, lax.neg(z))
  w_up = _wofz_upper_half_plane(z_up)
  return lax.select(upper, w_up, _const(z, 2) * transcendental.exp(lax.neg(z * z)) - w_up)


_wofz.defjvps(lambda g, w, z: g * (_const(z, -2) * z * w + _const(z, 2j / _SQRT_PI)))


def wofz(z: Any) -> Any:
  """The Faddeeva function w(z) = exp(-z^2) erfc(-iz), complex for any input; the one
  accurate route to erfc of complex arguments and to the Voigt profile.

  JAX implementation of `scipy.special.wofz`."""
  (z,) = promote_args_inexact("wofz", z)
  if not dtypes.issubdtype(z.dtype, np.complexfloating):
    z = lax.complex(z, lax.full_like(z, 0))
  return _wofz(z)


# Terms of erfcx(x) ~ (1 / (sqrt(pi) x)) sum_k (-1)^k (2k-1)!! / (2x^2)^k, highest first.
_ERFCX_ASYMPTOTIC = [7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625,
                     -1.875, .75, -.5, 1.]


def _erfcx_real(x: Any) -> Any:
  """exp(x^2) erfc(x) directly until exp(x^2) would overflow, then the asymptotic series
  (with enough terms that the first one left out is below the dtype's epsilon there)."""
  n_terms = 9 if dtypes.dtype(x) == np.float64 else 5
  large = lax.gt(x, _const(x, math.sqrt(math.log(np.finfo(dtypes.dtype(x)).max))))
  safe_x = lax.select(large, lax.full_like(x, 1), x)
  direct = transcendental.exp(jnp.square(safe_x)) * transcendental.erfc(safe_x)
  big_x = lax.select(large, x, lax.full_like(x, 10))
  series = _polyval(_ERFCX_ASYMPTOTIC[-n_terms:], _const(x, 1) / jnp.square(big_x))
  return lax.select(large, series / (big_x * _const(x, _SQRT_PI)), direct)


@custom_jvp
@jit
def _erfcx(x: Any) -> Any:
  return _upcast_half(_erfcx_real, x)


_erfcx.defjvps(lambda g, y, x: g * (_const(x, 2) * x * y - _const(x, 2 / _SQRT_PI)))


def erfcx(x: Any) -> Any:
  """The scaled complementary error function exp(x^2) erfc(x): finite where erfc
  underflows and exp(x^2) overflows, so log-probabilities of Gaussian tails stay exact.

  JAX implementation of `scipy.special.erfcx` (complex x through `wofz(ix)`)."""
  (x,) = promote_args_inexact("erfcx", x)
  if dtypes.issubdtype(x.dtype, np.complexfloating):
    return _wofz(_times_i(x))
  return _erfcx(x)


# ----------------------------------------------------------------------------- dawsn

# Cody, Paciorek and Thacher (1970), as in Cephes' dawsn.c: x P(x^2)/Q(x^2) on [0, 3.25),
# and (1/2x) (1 + t P(t)/Q(t)) with t = 1/x^2 on [3.25, 6.25) and [6.25, inf).
_DAWSN_SMALL = (
    [1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
     9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
     -8.50149846724410912031e-4, 4.22618223005546594270e-2, -9.17480371773452345351e-2,
     9.99999999999999994612e-1],
    [2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
     1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
     3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
     5.74918629489320327824e-1, 1.00000000000000000539e0])
_DAWSN_MIDDLE = (
    [5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
     -2.18711255142039025206e-2, 3.66207612329569181322e-3, -4.23209114460388756528e-4,
     3.59641304793896631888e-5, -2.14640351719968974225e-6, 9.10010780076391431042e-8,
     -2.40274520828250956942e-9, 3.59233385440928410398e-11],
    [1.00000000000000000000e0, -6.31839869873368190192e-1, 2.36706788228248691528e-1,
     -5.31806367003223277662e-2, 8.48041718586295374409e-3, -9.47996768486665330168e-4,
     7.81025592944552338085e-5, -4.55875153252442634831e-6, 1.89100358111421846170e-7,
     -4.91324691331920606875e-9, 7.18466403235734541950e-11])
_DAWSN_LARGE = (
    [-5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
     1.64837047825189632310e-2, -4.86827613020462700845e-4],
    [1.00000000000000000000e0, -2.69820057197544900361e0, 1.73270799045947845857e0,
     -3.93708582281939493482e-1, 3.44278924041233391079e-2, -9.73655226040941223894e-4])


def _dawsn_tail(ax: Any, in_region: Any, coeffs: tuple[list, list]) -> Any:
  safe = lax.select(in_region, ax, lax.full_like(ax, 1))
  t = _const(ax, 1) / jnp.square(safe)
  ratio = _polyval(coeffs[0], t) / _polyval(coeffs[1], t)
  return (_const(ax, 0.5) / safe) * (_const(ax, 1) + t * ratio)


def _dawsn_real(x: Any) -> Any:
  ax = lax.abs(x)
  small = lax.lt(ax, _const(x, 3.25))
  middle = lax.lt(ax, _const(x, 6.25))
  safe_small = lax.select(small, ax, lax.full_like(ax, 1))
  x2 = jnp.square(safe_small)
  near = safe_small * _polyval(_DAWSN_SMALL[0], x2) / _polyval(_DAWSN_SMALL[1], x2)
  mid = _dawsn_tail(ax, lax.bitwise_and(lax.bitwise_not(small), middle), _DAWSN_MIDDLE)
  far = _dawsn_tail(ax, lax.bitwise_not(middle), _DAWSN_LARGE)
  return lax.sign(x) * lax.select(small, near, lax.select(middle, mid, far))


@custom_jvp
@jit
def _dawsn(x: Any) -> Any:
  return _upcast_half(_dawsn_real, x)


_dawsn.defjvps(lambda g, y, x: g * (_const(x, 1) - _const(x, 2) * x * y))


def dawsn(x: Any) -> Any:
  """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt, the imaginary part of the Faddeeva
  function on the real line (plasma dispersion, Voigt profiles).

  JAX implementation of `scipy.special.dawsn` (real inputs only)."""
  return _dawsn(*_real_only("dawsn", x))


# ----------------------------------------------------------------------------- owens_t

# Patefield and Tandy's (2000) method T5: a 13-point Gauss rule for
# T(h, a) = a sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2) / (1 + a^2 t_i), the 1/(2 pi) and the
# Jacobian of u^2 = a^2 t folded into the weights. Valid for |a| <= 1; larger |a| goes
# through T(h, a) = (Phi terms) - T(ah, 1/a).
_OWENS_T_NODES = np.array([
    0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
    0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
    0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
    0.99178832974629704])
_OWENS_T_WEIGHTS = np.array([
    0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239,
    0.0038862217010742058, 0.0016793031084546090])


def _owens_t_quadrature(h: Any, a: Any) -> Any:
  r = jnp.square(a)[..., None] * _OWENS_T_NODES.astype(a.dtype)
  integrand = jnp.exp(_const(h, -0.5) * jnp.square(h)[..., None] * (1 + r)) / (1 + r)
  return a * (integrand @ _OWENS_T_WEIGHTS.astype(a.dtype))


@custom_jvp
@jit
def _owens_t(h: Any, a: Any) -> Any:
  h = lax.abs(h)
  abs_a = lax.abs(a)
  big_a = lax.gt(abs_a, _const(a, 1))
  small_a = lax.select(big_a, _const(a, 1) / abs_a, abs_a)
  scaled_h = lax.select(big_a, abs_a * h, h)
  t = _owens_t_quadrature(scaled_h, small_a)
  t = jnp.where(scaled_h == 0, jnp.arctan(small_a) / (2 * np.pi), t)
  root2 = _const(h, math.sqrt(2))
  t = jnp.where(small_a == 1, 0.125 * transcendental.erfc(-scaled_h / root2)
                * transcendental.erfc(scaled_h / root2), t)
  q_h, q_ah = transcendental.erfc(h / root2), transcendental.erfc(abs_a * h / root2)
  reflected = jnp.where(
      abs_a * h <= 0.67,
      0.25 - 0.25 * transcendental.erf(h / root2) * transcendental.erf(abs_a * h / root2) - t,
      0.25 * (q_h + q_ah - q_h * q_ah) - t)
  t = lax.sign(a) * lax.select(big_a, reflected, t)
  return jnp.where(jnp.isnan(a) | jnp.isnan(h), jnp.nan, t)


@_owens_t.defjvp
def _owens_t_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
  h, a = primals
  h_dot, a_dot = tangents
  d_h = (-transcendental.exp(-0.5 * jnp.square(h))
         * transcendental.erf(a * h / _const(h, math.sqrt(2)))
         / _const(h, 2 * math.sqrt(2 * math.pi)))
  one_a2 = jnp.square(a) + 1
  d_a = transcendental.exp(-0.5 * one_a2 * jnp.square(h)) / (_const(a, 2 * math.pi) * one_a2)
  return _owens_t(h, a), d_h * h_dot + d_a * a_dot


def owens_t(h: Any, a: Any) -> Any:
  """Owen's T function (1/2pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx, the
  building block of bivariate normal and skew-normal probabilities.

  JAX implementation of `scipy.special.owens_t`."""
  h, a = jnp.broadcast_arrays(*promote_args_inexact("owens_t", h, a))
  return _owens_t(h, a)
