"""The Fresnel integrals S(x) = ∫₀ˣ sin(πt²/2) dt and C(x) = ∫₀ˣ cos(πt²/2) dt
(`jaxon.scipy.special.fresnel`).

The algorithm is Cephes' (fresnl.c; `fresnlf` for float32), as JAX 0.10.2 uses it: a power
series in x⁴ for x² < 2.5625, an asymptotic expansion with auxiliary functions f and g beyond,
and the limits ½ ± cos/sin(πx²/2) / (πx) (float64) or ½ (float32) for huge x. Accuracy is
Cephes' on [-10, 10]. The arguments πx²/2 of sin and cos are reduced modulo 2π exactly
before rounding, which keeps them accurate for large x. 16-bit floats are computed in
float32; complex inputs are rejected, as JAX rejects them. The derivatives are the
integrands, S' = sin(πx²/2) and C' = cos(πx²/2), as a `custom_jvp`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.api import jit
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.numpy.util import promote_args_inexact
from jaxon._src.scipy.special_error import _polyval

# Cephes' coefficients, highest degree first. float32 (fresnlf): polynomials only.
_F32 = {
    "sn": (1.647629463788700e-9, -1.522754752581096e-7, 8.424748808502400e-6,
           -3.120693124703272e-4, 7.244727626597022e-3, -9.228055941124598e-2,
           5.235987735681432e-1),
    "cn": (1.416802502367354e-8, -1.157231412229871e-6, 5.387223446683264e-5,
           -1.604381798862293e-3, 2.818489036795073e-2, -2.467398198317899e-1,
           9.999999760004487e-1),
    "fn": (-1.903009855649792e12, 1.355942388050252e11, -4.158143148511033e9,
           7.343848463587323e7, -8.732356681548485e5, 8.560515466275470e3,
           -1.032877601091159e2, 2.999401847870011e0),
    "gn": (-1.860843997624650e11, 1.278350673393208e10, -3.779387713202229e8,
           6.492611570598858e6, -7.787789623358162e4, 8.602931494734327e2,
           -1.493439396592284e1, 9.999841934744914e-1),
}
# float64 (fresnl): rational functions numerator / denominator.
_F64 = {
    "sn": (-2.99181919401019853726e3, 7.08840045257738576863e5, -6.29741486205862506537e7,
           2.54890880573376359104e9, -4.42979518059697779103e10, 3.18016297876567817986e11),
    "sd": (1.0, 2.81376268889994315696e2, 4.55847810806532581675e4,
           5.17343888770096400730e6, 4.19320245898111231129e8, 2.24411795645340920940e10,
           6.07366389490084639049e11),
    "cn": (-4.98843114573573548651e-8, 9.50428062829859605134e-6, -6.45191435683965050962e-4,
           1.88843319396703850064e-2, -2.05525900955013891793e-1, 9.99999999999999998822e-1),
    "cd": (3.99982968972495980367e-12, 9.15439215774657478799e-10, 1.25001862479598821474e-7,
           1.22262789024179030997e-5, 8.68029542941784300606e-4, 4.12142090722199792936e-2,
           1.00000000000000000118e0),
    "fn": (4.21543555043677546506e-1, 1.43407919780758885261e-1, 1.15220955073585758835e-2,
           3.45017939782574027900e-4, 4.63613749287867322088e-6, 3.05568983790257605827e-8,
           1.02304514164907233465e-10, 1.72010743268161828879e-13, 1.34283276233062758925e-16,
           3.76329711269987889006e-20),
    "fd": (1.0, 7.51586398353378947175e-1, 1.16888925859191382142e-1,
           6.44051526508858611005e-3, 1.55934409164153020873e-4, 1.84627567348930545870e-6,
           1.12699224763999035261e-8, 3.60140029589371370404e-11, 5.88754533621578410010e-14,
           4.52001434074129701496e-17, 1.25443237090011264384e-20),
    "gn": (5.04442073643383265887e-1, 1.97102833525523411709e-1, 1.87648584092575249293e-2,
           6.84079380915393090172e-4, 1.15138826111884280931e-5, 9.82852443688422223854e-8,
           4.45344415861750144738e-10, 1.08268041139020870318e-12, 1.37555460633261799868e-15,
           8.36354435630677421531e-19, 1.86958710162783235106e-22),
    "gd": (1.0, 1.47495759925128324529e0, 3.37748989120019970451e-1,
           2.53603741420338795122e-2, 8.14679107184306179049e-4, 1.27545075667729118702e-5,
           1.04314589657571990585e-7, 4.60680728146520428211e-10, 1.10273215066240270757e-12,
           1.38796531259578871258e-15, 8.39158816283118707363e-19,
           1.86958710162783236342e-22),
}
_SERIES_LIMIT = 2.5625  # x² below which the power series is used
_ASYMPTOTIC_LIMIT = 36974.0  # x above which S and C are their limits (plus one term)


def _sin_cos_half_pi_square(x: Any) -> tuple[Any, Any]:
  """sin(πx²/2) and cos(πx²/2) from r = (x²/2) mod 2, computed exactly: with s = x mod 2,
  x²/2 ≡ s (x - s/2) (mod 2). sin(πr) and cos(πr) are then evaluated at the argument
  nearest 0 of the equivalent ones, where sin is most accurate."""
  x = jnp.abs(x)
  s = jnp.fmod(x, 2.0)
  r = jnp.fmod(s * (x - s / 2), 2.0)
  sin = jnp.where(r < 0.5, jnp.sin(np.pi * r),
                  jnp.where(r > 1.5, jnp.sin(np.pi * (r - 2.0)), -jnp.sin(np.pi * (r - 1.0))))
  cos = jnp.where(r == 0.5, 0.0,
                  jnp.where(r < 1.0, -jnp.sin(np.pi * (r - 0.5)), jnp.sin(np.pi * (r - 1.5))))
  return sin, cos


def _ratio(coeffs: dict[str, tuple], name: str, t: Any) -> Any:
  """Cephes' `name`n(t) / `name`d(t), or the bare polynomial where there is no denominator."""
  numerator = _polyval(coeffs[name + "n"], t)
  denominator = coeffs.get(name + "d")
  return numerator if denominator is None else numerator / _polyval(denominator, t)


def _fresnel_positive(x: Any) -> tuple[Any, Any]:
  """S and C at |x| (x float32 or float64)."""
  double = x.dtype == np.float64
  coeffs = _F64 if double else _F32
  x2 = x * x
  x4 = x2 * x2
  s_series = x * x2 * _ratio(coeffs, "s", x4)
  c_series = x * _ratio(coeffs, "c", x4)
  sin, cos = _sin_cos_half_pi_square(x)
  # Auxiliary functions: C = ½ + (f sin - g cos) / (πx), S = ½ - (f cos + g sin) / (πx).
  t = 1.0 / (np.pi * x2)
  u = t * t
  f = 1.0 - u * _ratio(coeffs, "f", u)
  g = t * _ratio(coeffs, "g", u)
  c_asymptotic = 0.5 + (f * sin - g * cos) / (np.pi * x)
  s_asymptotic = 0.5 - (f * cos + g * sin) / (np.pi * x)
  if double:
    c_huge = 0.5 + sin / (np.pi * x)
    s_huge = 0.5 - cos / (np.pi * x)
  else:
    c_huge = s_huge = 0.5
  series, huge = x2 < _SERIES_LIMIT, x > _ASYMPTOTIC_LIMIT
  s = jnp.where(series, s_series, jnp.where(huge, s_huge, s_asymptotic))
  c = jnp.where(series, c_series, jnp.where(huge, c_huge, c_asymptotic))
  infinite = jnp.isinf(x)
  return jnp.where(infinite, 0.5, s), jnp.where(infinite, 0.5, c)


@custom_jvp
@jit
def _fresnel(x: Any) -> tuple[Any, Any]:
  compute_dtype = np.float64 if x.dtype == np.float64 else np.float32
  s, c = _fresnel_positive(jnp.abs(x).astype(compute_dtype))
  negative = x < 0  # S and C are odd
  s, c = jnp.where(negative, -s, s), jnp.where(negative, -c, c)
  return s.astype(x.dtype), c.astype(x.dtype)


@_fresnel.defjvp
def _fresnel_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
  (x,), (x_dot,) = primals, tangents
  sin, cos = _sin_cos_half_pi_square(x)
  return _fresnel(x), (sin.astype(x.dtype) * x_dot, cos.astype(x.dtype) * x_dot)


def fresnel(x: Any) -> tuple[Any, Any]:
  """The Fresnel integrals (S(x), C(x)) of real `x`, S(x) = ∫₀ˣ sin(πt²/2) dt and
  C(x) = ∫₀ˣ cos(πt²/2) dt; both tend to ±½ as x → ±∞.

  Example: `fresnel(1.)` is `(0.43825915, 0.7798934)`.
  """
  x, = promote_args_inexact("fresnel", x)
  if dtypes.issubdtype(x.dtype, np.complexfloating):
    raise NotImplementedError("jax.scipy.special.fresnel does not support complex-valued "
                              "inputs yet.")
  return _fresnel(x)
