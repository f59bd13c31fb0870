"""More elementwise functions of jaxon.numpy: `fabs`, `i0`, `spacing`, `nan_to_num`, and
the tests of infinities and complexity (`isposinf`, `iscomplex`, `isrealobj`, `isscalar`,
…). They are built from the lax primitives and the basic ufuncs of ufuncs.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.api import jvp
from jaxon._src.lax import transcendental
from jaxon._src.lax import lax
from jaxon._src.lax.custom_derivatives import custom_jvp
from jaxon._src.lax import special as lax_special
from jaxon._src.numpy import lax_numpy, ufuncs, util
from jaxon._src.xla.array import Array


def _dtype(x: Any) -> np.dtype:
  return dtypes.dtype(x, canonicalize=True)


def _reject_complex(name: str, x: Any) -> None:
  if dtypes.is_complex(_dtype(x)):
    raise TypeError(f"jnp.{name} does not support complex inputs, got dtype "
                    f"{_dtype(x).name}; apply it to the real and imaginary parts.")


def fabs(x: Any, /) -> Any:
  """Elementwise absolute value of real numbers, always as floats (integers convert).

  Example: `jnp.fabs(jnp.array([-2, 3]))` is `[2., 3.]`.
  """
  util.check_arraylike("jnp.fabs", x)
  _reject_complex("fabs", x)
  (x,) = util.promote_args_inexact("jnp.fabs", x)
  return lax.abs(x)


def i0(x: Any) -> Any:
  """The modified Bessel function of the first kind of order 0, as exp(|x|) i0e(x) (i0e
  stays finite where i0 overflows); real inputs only.

  Example: `jnp.i0(0.)` is `1.`.
  """
  util.check_arraylike("jnp.i0", x)
  _reject_complex("i0", x)
  (x,) = util.promote_args_inexact("jnp.i0", x)
  return _i0(x)


@custom_jvp
def _i0(x: Any) -> Any:
  return lax.mul(transcendental.exp(lax.abs(x)), lax_special.bessel_i0e(x))


@_i0.defjvp
def _i0_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
  """i0 is even and smooth: its derivative at 0 is 0, which the |x| in the formula (whose
  derivative at 0 is taken as 1) would get wrong, as JAX's rule says."""
  (x,), (t,) = primals, tangents
  y, dy = jvp(_i0.fun, (x,), (t,))
  return y, lax.select(lax.eq(x, lax._const(x, 0)), lax.full_like(dy, 0), dy)


def _is_signed_inf(name: str, x: Any, sign: float) -> Any:
  util.check_arraylike(f"jnp.{name}", x)
  _reject_complex(name, x)
  if not dtypes.is_inexact(_dtype(x)):
    return lax.full_like(x, False, np.bool_)
  return lax.eq(x, lax._convert_element_type(sign * np.inf, _dtype(x)))


def isposinf(x: Any, /, out: None = None) -> Any:
  """Elementwise test for +inf (False for integers; complex inputs are rejected)."""
  _no_out("isposinf", out)
  return _is_signed_inf("isposinf", x, 1.0)


def isneginf(x: Any, /, out: None = None) -> Any:
  """Elementwise test for -inf (False for integers; complex inputs are rejected)."""
  _no_out("isneginf", out)
  return _is_signed_inf("isneginf", x, -1.0)


def _no_out(name: str, out: Any) -> None:
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported: jaxon "
                              "arrays are immutable; use the returned array instead.")


def iscomplex(x: Any) -> Any:
  """Elementwise test for a nonzero imaginary part (False everywhere for real dtypes)."""
  imag = ufuncs.imag(x)
  return lax.ne(imag, lax.full_like(imag, 0))


def isreal(x: Any) -> Any:
  """Elementwise test for a zero imaginary part (True everywhere for real dtypes)."""
  imag = ufuncs.imag(x)
  return lax.eq(imag, lax.full_like(imag, 0))


def iscomplexobj(x: Any) -> bool:
  """Whether `x` has a complex dtype, whatever its values (a Python bool)."""
  if x is None:
    return False
  dtype = getattr(x, "dtype", None)
  if dtype is None:
    dtype = np.asarray(x).dtype
  return bool(np.issubdtype(dtype, np.complexfloating))


def isrealobj(x: Any) -> bool:
  """Whether `x` does not have a complex dtype (a Python bool)."""
  return not iscomplexobj(x)


def isscalar(element: Any) -> bool:
  """Whether `element` is a scalar: a Python or NumPy scalar, or a 0-d array (jaxon's
  arrays and tracers included, unlike `numpy.isscalar`)."""
  if np.isscalar(element):
    return True
  if isinstance(element, (np.ndarray, Array, core.Tracer)):
    return np.ndim(element) == 0
  return False


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
  """`x` with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (by default the
  largest and the most negative finite values of the dtype); complex numbers have both
  parts replaced. Integers and bools come back unchanged.

  Example: `jnp.nan_to_num(jnp.array([jnp.nan, jnp.inf]))` is `[0., 3.4028235e+38]`.
  """
  del copy  # arrays are immutable
  util.check_arraylike("jnp.nan_to_num", x)
  x = lax_numpy.asarray(x)
  dtype = _dtype(x)
  if not dtypes.is_inexact(dtype):
    return x
  if dtypes.is_complex(dtype):
    parts = [nan_to_num(part, nan=nan, posinf=posinf, neginf=neginf)
             for part in (lax.real(x), lax.imag(x))]
    return lax.complex(*parts)
  info = dtypes.finfo(dtype)  # NumPy's finfo rejects bfloat16 and the float8 types
  replacements = ((ufuncs.isnan(x), nan),
                  (isposinf(x), info.max if posinf is None else posinf),
                  (isneginf(x), info.min if neginf is None else neginf))
  for mask, value in replacements:
    x = ufuncs.where(mask, lax._convert_element_type(value, dtype), x)
  return x


def spacing(x: Any, /) -> Any:
  """The distance from `x` to the next representable number away from zero (negative for
  negative `x`): the size of one unit in the last place. NaN for infinities and NaN.
  (Subnormal results flush to zero where the backend does.)

  Example: `jnp.spacing(jnp.float32(1.))` is `1.1920929e-07`.
  """
  util.check_arraylike("jnp.spacing", x)
  _reject_complex("spacing", x)
  (x,) = util.promote_args_inexact("jnp.spacing", x)
  away = ufuncs.copysign(lax.full_like(x, np.inf), x)
  return lax.sub(lax.nextafter(x, away), x)
