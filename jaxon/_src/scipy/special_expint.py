"""Exponential and trigonometric integrals of `jaxon.scipy.special`: `expi`, `exp1`,
`expn`, `sici` and Spence's dilogarithm `spence`.

The algorithms are Cephes' (ei.c, expn.c, sici.c, spence.c), as JAX 0.10.2 uses them:
rational approximations on fixed intervals, and for E_n a power series or a continued
fraction stepped in a `while_loop` until the term falls below the dtype's epsilon. The
derivatives are `custom_jvp` rules with the closed forms (Ei' = e^x / x, E_n' = -E_{n-1},
Si' = sin x / x, Ci' = cos x / x), which also makes `expn` differentiable in reverse mode
although its loops are `while_loop`s.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

import jaxon.numpy as jnp
from jaxon._src import dtypes
from jaxon._src.api import jit
from jaxon._src.lax.control_flow.while_loop import while_loop
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.scipy.special import gammaln
from jaxon._src.scipy.special_error import _const, _polyval, _real_only

# ----------------------------------------------------------------------------- expi, exp1

# Cephes ei.c: on (0, 2], Ei(x) = gamma + log x + x A(x)/B(x); on the octaves (2, 4], (4, 8],
# ..., (64, inf), Ei(x) = (e^x / x) (1 + w A(w)/B(w)) with w = 1/x. Highest degree first.
_EI_SMALL = (
    [-5.350447357812542947283e0, 2.185049168816613393830e2, -4.176572384826693777058e3,
     5.541176756393557601232e4, -3.313381331178144034309e5, 1.592627163384945414220e6],
    [1.0, -5.250547959112862969197e1, 1.259616186786790571525e3, -1.756549581973534652631e4,
     1.493062117002725991967e5, -7.294949239640527645655e5, 1.592627163384945429726e6])
_EI_OCTAVES = [
    ([1.981808503259689673238e-2, -1.271645625984917501326e0, -2.088160335681228318920e0,
      2.755544509187936721172e0, -4.409507048701600257171e-1, 4.665623805935891391017e-2,
      -1.545042679673485262580e-3, 7.059980605299617478514e-5],
     [1.0, 1.476498670914921440652e0, 5.629177174822436244827e-1, 1.699017897879307263248e-1,
      2.291647179034212017463e-2, 4.450150439728752875043e-3, 1.727439612206521482874e-4,
      3.953167195549672482304e-5]),
    ([-1.373215375871208729803e0, -7.084559133740838761406e-1, 1.580806855547941010501e0,
      -2.601500427425622944234e-1, 2.994674694113713763365e-2, -1.038086040188744005513e-3,
      4.371064420753005429514e-5, 2.141783679522602903795e-6],
     [1.0, 8.585231423622028380768e-1, 4.483285822873995129957e-1, 7.687932158124475434091e-2,
      2.449868241021887685904e-2, 8.832165941927796567926e-4, 4.590952299511353531215e-4,
      -4.729848351866523044863e-6, 2.665195537390710170105e-6]),
    ([-2.106934601691916512584e0, 1.732733869664688041885e0, -2.423619178935841904839e-1,
      2.322724180937565842585e-2, 2.372880440493179832059e-4, -8.343219561192552752335e-5,
      1.363408795605250394881e-5, -3.655412321999253963714e-7, 1.464941733975961318456e-8,
      6.176407863710360207074e-10],
     [1.0, -2.298062239901678075778e-1, 1.105077041474037862347e-1, -1.566542966630792353556e-2,
      2.761106850817352773874e-3, -2.089148012284048449115e-4, 1.708528938807675304186e-5,
      -4.459311796356686423199e-7, 1.394634930353847498145e-8, 6.150865933977338354138e-10]),
    ([-2.458119367674020323359e-1, -1.483382253322077687183e-1, 7.248291795735551591813e-2,
      -1.348315687380940523823e-2, 1.342775069788636972294e-3, -7.942465637159712264564e-5,
      2.644179518984235952241e-6, -4.239473659313765177195e-8],
     [1.0, -1.044225908443871106315e-1, -2.676453128101402655055e-1, 9.695000254621984627876e-2,
      -1.601745692712991078208e-2, 1.496414899205908021882e-3, -8.462452563778485013756e-5,
      2.728938403476726394024e-6, -4.239462431819542051337e-8]),
    ([1.212561118105456670844e-1, -5.823133179043894485122e-1, 2.348887314557016779211e-1,
      -3.040034318113248237280e-2, 1.510082146865190661777e-3, -2.523137095499571377122e-5],
     [1.0, -1.002252150365854016662e0, 2.928709694872224144953e-1, -3.337004338674007801307e-2,
      1.560544881127388842819e-3, -2.523137093603234562648e-5]),
    ([-7.657847078286127362028e-1, 6.886192415566705051750e-1, -2.132598113545206124553e-1,
      3.346107552384193813594e-2, -3.076541477344756050249e-3, 1.747119316454907477380e-4,
      -6.103711682274170530369e-6, 1.218032765428652199087e-7, -1.086076102793290233007e-9],
     [1.0, -1.888802868662308731041e0, 1.066691687211408896850e0, -2.751915982306380647738e-1,
      3.930852688233823569726e-2, -3.414684558602365085394e-3, 1.866844370703555398195e-4,
      -6.345146083130515357861e-6, 1.239754287483206878024e-7, -1.086076102793126632978e-9]),
]


def _ei_small(x: Any) -> Any:
  ratio = _polyval(_EI_SMALL[0], x) / _polyval(_EI_SMALL[1], x)
  return x * ratio + _const(x, np.euler_gamma) + jnp.log(x)


def _ei_octave(coeffs: tuple[list, list], x: Any) -> Any:
  w = _const(x, 1) / x
  ratio = _polyval(coeffs[0], w) / _polyval(coeffs[1], w)
  return jnp.exp(x) * w * (w * ratio + _const(x, 1))


def _ei_positive(x: Any) -> Any:
  conds = [(x > 2 ** i) & (x <= 2 ** (i + 1)) for i in range(1, 6)]
  return jnp.piecewise(x, [(x > 0) & (x <= 2)] + conds,
                       [_ei_small] + [functools.partial(_ei_octave, c) for c in _EI_OCTAVES])


@custom_jvp
@jit
def _expi(x: Any) -> Any:
  return jnp.piecewise(x, [x < 0], [lambda x: -exp1(-x), _ei_positive])


_expi.defjvps(lambda g, y, x: g * jnp.exp(x) / x)


def expi(x: Any) -> Any:
  """The exponential integral Ei(x) = int_{-inf}^x e^t / t dt (principal value for x > 0),
  as used for the logarithmic integral and in radiative transfer.

  JAX implementation of `scipy.special.expi` (real inputs only)."""
  return _expi(*_real_only("expi", x))


def exp1(x: Any) -> Any:
  """The exponential integral E_1(x) = int_x^inf e^-t / t dt, which is `expn(1, x)`.

  JAX implementation of `scipy.special.exp1` (real inputs only)."""
  (x,) = _real_only("exp1", x)
  return expn(1, x)


# ----------------------------------------------------------------------------- expn

def _expn_series(n: Any, x: Any) -> Any:
  """E_n for 0 < x <= 1 (Cephes): (-x)^(n-1) psi(n) / (n-1)! - sum_k (-x)^k / ((k-n+1) k!),
  the k = n-1 term left out of the sum."""
  one = _const(x, 1)
  # psi(n) = -gamma + sum_{i<n} 1/i; n is a float, so a while_loop counts (JAX's
  # fori_loop takes float bounds, jaxon's does not).
  psi = while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + one / c[0]),
                   (one, -_const(x, np.euler_gamma) - jnp.log(x)))[1]
  n_safe = jnp.where(n == 1, _const(n, 2), n)
  eps = np.finfo(dtypes.dtype(x)).eps

  def body(carry: tuple) -> tuple:
    k, term, pk, total, _ = carry
    k, pk = k + one, pk + one
    term = term * (-x / k)
    total = total + jnp.where(pk != 0, term / pk, 0)
    return k, term, pk, total, jnp.where(total != 0, jnp.abs(term / total), one)

  init = (_const(x, 0), one, one - n, jnp.where(n == 1, _const(x, 0), one / (one - n_safe)),
          _const(x, np.inf))
  total = while_loop(lambda c: (x > 0) & (c[4] > eps), body, init)[3]
  return (-x) ** (n - 1) * psi / jnp.exp(gammaln(n)) - total


def _expn_continued_fraction(n: Any, x: Any) -> Any:
  """E_n for x > 1 (Cephes): e^-x times the continued fraction
  1/(x + n/(1 + 1/(x + (n+1)/(1 + 2/(x + ...))))), its convergents rescaled when large."""
  big = _const(x, 1.44115188075855872e17)
  eps = np.finfo(dtypes.dtype(x)).eps
  one = _const(x, 1)

  def body(carry: tuple) -> tuple:
    k, p2, q2, p1, q1, ans, _ = carry
    k = k + 1
    odd = k % 2 == 1
    yk = jnp.where(odd, one, x)
    xk = jnp.where(odd, n + (k - 1) / 2, k / 2)
    pk, qk = p1 * yk + p2 * xk, q1 * yk + q2 * xk
    nonzero = qk != 0
    r = jnp.where(nonzero, pk / qk, ans)
    t = jnp.where(nonzero, jnp.abs((ans - r) / r), one)
    scale = jnp.where(jnp.abs(pk) > big, one / big, one)
    return k, p1 * scale, q1 * scale, pk * scale, qk * scale, r, t

  init = (_const(n, 1), one, x, one, x + n, one / (x + n), _const(x, np.inf))
  ans = while_loop(lambda c: (x > 0) & (c[6] > eps), body, init)[5]
  return ans * jnp.exp(-x)


def _expn_large_n(n: Any, x: Any) -> Any:
  """E_n for n >= 5000: the first terms of the uniform asymptotic expansion in 1/(x+n)^2."""
  xk = x + n
  yk = _const(x, 1) / (xk * xk)
  ans = yk * n * (6 * x * x - 8 * n * x + n * n)
  ans = yk * (ans + n * (n - 2 * x))
  ans = yk * (ans + n)
  return (ans + 1) * jnp.exp(-x) / xk


@jit
@jnp.vectorize
def _expn_scalar(n: Any, x: Any) -> Any:
  conds = [(n < 0) | (x < 0), (x == 0) & (n < 2), (x == 0) & (n >= 2), (n == 0) & (x >= 0),
           n >= 5000, x > 1]
  n_safe = jnp.where(n == 1, n + n, n)
  values = [np.nan, np.inf, _const(x, 1) / n_safe, jnp.exp(-x) / x,
            lambda x, n: _expn_large_n(n, x), lambda x, n: _expn_continued_fraction(n, x),
            lambda x, n: _expn_series(n, x)]
  return jnp.piecewise(x, conds, values, n=n)


@custom_jvp
def _expn(n: Any, x: Any) -> Any:
  return _expn_scalar(n, x)


# JAX makes n a nondiff argument; here it is an argument without a derivative rule (a
# traced nondiff argument leaks its tracer under jaxon's vmap), so its tangent is dropped.
_expn.defjvps(None, lambda g, y, n, x: -g * _expn(n - 1, x))


def expn(n: Any, x: Any) -> Any:
  """The generalized exponential integral E_n(x) = int_1^inf e^(-xt) / t^n dt, which
  appears in radiative transfer and neutron transport. Differentiable in x only.

  JAX implementation of `scipy.special.expn` (real inputs only)."""
  n, x = _real_only("expn", n, x)
  return _expn(n, x)



# ----------------------------------------------------------------------------- sici

# Cephes sici.c. For x <= 4: Si = x SN(x^2)/SD(x^2) and Ci = gamma + log x + x^2 CN/CD.
_SI_SMALL = (
    [-8.39167827910303881427e-11, 4.62591714427012837309e-8, -9.75759303843632795789e-6,
     9.76945438170435310816e-4, -4.13470316229406538752e-2, 1.00000000000000000302e0],
    [2.03269266195951942049e-12, 1.27997891179943299903e-9, 4.41827842801218905784e-7,
     9.96412122043875552487e-5, 1.42085239326149893930e-2, 9.99999999999999996984e-1])
_CI_SMALL = (
    [2.02524002389102268789e-11, -1.35249504915790756375e-8, 3.59325051419993077021e-6,
     -4.74007206873407909465e-4, 2.89159652607555242092e-2, -1.00000000000000000080e0],
    [4.07746040061880559506e-12, 3.06780997581887812692e-9, 1.23210355685883423679e-6,
     3.17442024775032769882e-4, 5.10028056236446052392e-2, 4.00000000000000000080e0])
# For 4 < x <= 1e9 the auxiliary functions f = FN(z)/(x FD(z)) and g = z GN(z)/GD(z) with
# z = 1/x^2, one fit on (4, 8) and one beyond: Si = pi/2 - f cos x - g sin x,
# Ci = f sin x - g cos x.
_SICI_F4 = (
    [4.23612862892216586994e0, 5.45937717161812843388e0, 1.62083287701538329132e0,
     1.67006611831323023771e-1, 6.81020132472518137426e-3, 1.08936580650328664411e-4,
     5.48900223421373614008e-7],
    [1, 8.16496634205391016773e0, 7.30828822505564552187e0, 1.86792257950184183883e0,
     1.78792052963149907262e-1, 7.01710668322789753610e-3, 1.10034357153915731354e-4,
     5.48900252756255700982e-7])
_SICI_G4 = (
    [8.71001698973114191777e-2, 6.11379109952219284151e-1, 3.97180296392337498885e-1,
     7.48527737628469092119e-2, 5.38868681462177273157e-3, 1.61999794598934024525e-4,
     1.97963874140963632189e-6, 7.82579040744090311069e-9],
    [1, 1.64402202413355338886e0, 6.66296701268987968381e-1, 9.88771761277688796203e-2,
     6.22396345441768420760e-3, 1.73221081474177119497e-4, 2.02659182086343991969e-6,
     7.82579218933534490868e-9])
_SICI_F8 = (
    [4.55880873470465315206e-1, 7.13715274100146711374e-1, 1.60300158222319456320e-1,
     1.16064229408124407915e-2, 3.49556442447859055605e-4, 4.86215430826454749482e-6,
     3.20092790091004902806e-8, 9.41779576128512936592e-11, 9.70507110881952024631e-14],
    [1.0, 9.17463611873684053703e-1, 1.78685545332074536321e-1, 1.22253594771971293032e-2,
     3.58696481881851580297e-4, 4.92435064317881464393e-6, 3.21956939101046018377e-8,
     9.43720590350276732376e-11, 9.70507110881952025725e-14])
_SICI_G8 = (
    [6.97359953443276214934e-1, 3.30410979305632063225e-1, 3.84878767649974295920e-2,
     1.71718239052347903558e-3, 3.48941165502279436777e-5, 3.47131167084116673800e-7,
     1.70404452782044526189e-9, 3.85945925430276600453e-12, 3.14040098946363334640e-15],
    [1.0, 1.68548898811011640017e0, 4.87852258695304967486e-1, 4.67913194259625806320e-2,
     1.90284426674399523638e-3, 3.68475504442561108162e-5, 3.57043223443740838771e-7,
     1.72693748966316146736e-9, 3.87830166023954706752e-12, 3.14040098946363335242e-15])


def _ratio(coeffs: tuple[list, list], t: Any) -> Any:
  return _polyval(coeffs[0], t) / _polyval(coeffs[1], t)


def _sici_small(x: Any) -> tuple[Any, Any]:
  t = x * x
  si = jnp.where(x == 0, 0, x * _ratio(_SI_SMALL, t))
  ci = jnp.where(x == 0, -np.inf,
                 _const(x, np.euler_gamma) + jnp.log(x) + t * _ratio(_CI_SMALL, t))
  return si, ci


def _sici_auxiliary(x: Any) -> tuple[Any, Any]:
  z = _const(x, 1) / (x * x)
  below8 = x < 8
  f = jnp.where(below8, _ratio(_SICI_F4, z), _ratio(_SICI_F8, z)) / x
  g = z * jnp.where(below8, _ratio(_SICI_G4, z), _ratio(_SICI_G8, z))
  s, c = jnp.sin(x), jnp.cos(x)
  return _const(x, np.pi / 2) - f * c - g * s, f * s - g * c


def _sici_huge(x: Any) -> tuple[Any, Any]:
  si = jnp.where(jnp.isposinf(x), np.pi / 2, _const(x, np.pi / 2) - jnp.cos(x) / x)
  ci = jnp.where(jnp.isposinf(x), 0, jnp.sin(x) / x)
  return si, ci


@custom_jvp
@jit
def _sici(x: Any) -> tuple[Any, Any]:
  ax = jnp.abs(x)
  small, middle = ax <= 4, (ax > 4) & (ax <= 1e9)
  pieces = [_sici_small(ax), _sici_auxiliary(ax), _sici_huge(ax)]
  si, ci = (jnp.select([small, middle], [p[i] for p in pieces[:2]], pieces[2][i])
            for i in (0, 1))
  return jnp.sign(x) * si, jnp.where(jnp.isneginf(x), np.nan, ci)


@_sici.defjvp
def _sici_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
  (x,), (x_dot,) = primals, tangents
  return _sici(x), (jnp.sinc(x / np.pi) * x_dot, jnp.cos(x) / x * x_dot)


def sici(x: Any) -> tuple[Any, Any]:
  """The sine and cosine integrals Si(x) = int_0^x sin t / t dt and
  Ci(x) = gamma + log x + int_0^x (cos t - 1) / t dt (diffraction, antenna theory).

  JAX implementation of `scipy.special.sici` (real inputs only)."""
  return _sici(*_real_only("sici", x))


# ----------------------------------------------------------------------------- spence

# Cephes spence.c: on [1/2, 3/2] after the reflections, spence = -w A(w)/B(w) with w = x - 1.
_SPENCE = (
    [4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
     8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
     3.29771340985225106936e0, 1.00000000000000000126e0],
    [6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
     1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
     3.54771340985225096217e0, 9.99999999999999998740e-1])


def _spence_positive(x: Any) -> Any:
  """Maps x to [1/2, 3/2] by x -> 1/x (above 2, and the w = 1/x - 1 of (3/2, 2]) or
  x -> 1 - x (below 1/2), then undoes the maps with the dilogarithm's identities."""
  inverted = x > 2
  x = jnp.where(inverted, 1 / x, x)
  above, below = x > 1.5, x < 0.5
  inverted = inverted | above
  w = jnp.where(above, 1 / x - 1, jnp.where(below, -x, x - 1))
  y = -w * _ratio(_SPENCE, w)
  y = jnp.where(below, np.pi ** 2 / 6 - jnp.log(x) * jnp.log(1 - x) - y, y)
  return jnp.where(inverted, -0.5 * jnp.log(x) ** 2 - y, y)


def spence(x: Any) -> Any:
  """Spence's function int_1^x log t / (1 - t) dt, the real dilogarithm Li2(1 - x); NaN
  for x < 0 (SciPy continues it to complex values, JAX does not).

  JAX implementation of `scipy.special.spence` for float32 and float64."""
  x = jnp.asarray(x)
  if x.dtype not in (np.float32, np.float64):
    raise TypeError(f"x.dtype={x.dtype} is not supported by spence; use float32 or float64.")
  return _spence(x)


@jit
def _spence(x: Any) -> Any:
  return jnp.piecewise(x, [x < 0, x == 1, x == 0], [np.nan, 0, np.pi ** 2 / 6, _spence_positive])
