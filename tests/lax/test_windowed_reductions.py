"""lax.reduce_window against a direct NumPy sliding-window oracle: the sum, max and min
primitives and any computation, over strides, padding names and pairs, and both dilations;
`padtype_to_pads`. Each case runs eagerly and under jit, and the abstract evaluation must
agree with the result."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jaxon
from jaxon import lax
from jaxon._src.lax.windowed_reductions import padtype_to_pads
from tests.lax.test_reductions import highest, lowest, name_of, rand
from tests.util import F32, I32, check

# ----------------------------------------------------------------------------- reduce_window

def window_oracle(x, init, combine, window, strides, padding, base_dilation, window_dilation):
  """A direct sliding-window reduction: dilate the operand (holes hold `init`), pad with
  `init`, then fold each window's dilated taps into `init`."""
  dilated_shape = [0 if d == 0 else (d - 1) * b + 1 for d, b in zip(x.shape, base_dilation)]
  dilated = np.full(dilated_shape, init, x.dtype)
  dilated[tuple(slice(None, None, b) for b in base_dilation)] = x
  padded_shape = [d + lo + hi for d, (lo, hi) in zip(dilated_shape, padding)]
  padded = np.full([max(d, 0) for d in padded_shape], init, x.dtype)
  src = tuple(slice(max(-lo, 0), d - max(-hi, 0)) for d, (lo, hi) in zip(dilated_shape, padding))
  dst = tuple(slice(max(lo, 0), max(lo, 0) + s.stop - s.start)
              for (lo, _), s in zip(padding, src))
  padded[dst] = dilated[src]
  spans = [(w - 1) * d + 1 for w, d in zip(window, window_dilation)]
  out_shape = [0 if p < s else (p - s) // st + 1 for p, s, st in zip(padded.shape, spans, strides)]
  out = np.empty(out_shape, x.dtype)
  for index in itertools.product(*map(range, out_shape)):
    acc = np.array(init, x.dtype)
    for tap in itertools.product(*map(range, window)):
      pos = tuple(i * st + t * d for i, st, t, d in zip(index, strides, tap, window_dilation))
      acc = combine(acc, padded[pos])
    out[index] = acc
  return out


# name: (lax computation, its identity, NumPy combine)
WINDOW_MONOIDS = {"add": (lax.add, lambda dtype: 0, np.add), "max": (lax.max, lowest, np.maximum),
                  "min": (lax.min, highest, np.minimum)}
# (shape, window, strides, padding, base_dilation, window_dilation)
WINDOW_CASES = [
    ((6,), (2,), (2,), "VALID", None, None),
    ((7,), (3,), (1,), "SAME", None, None),
    ((4, 5), (2, 2), (1, 1), "VALID", None, None),
    ((4, 5), (3, 2), (2, 1), "SAME", None, None),
    ((4, 5), (2, 3), (1, 2), ((1, 0), (2, 1)), None, None),
    ((5, 4), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 1), None),
    ((5, 6), (2, 2), (2, 1), ((1, 1), (0, 0)), None, (2, 3)),
    ((3, 4), (2, 2), (1, 1), ((1, -1), (0, 0)), (1, 2), (1, 2)),
    ((2, 3, 4), (1, 2, 2), (1, 2, 1), "SAME", None, None),
    ((0, 3), (1, 2), (1, 1), "VALID", None, None),
    ((), (), (), "VALID", None, None),
]
WINDOW_PARAMS = [(op, dtype, *case) for op in WINDOW_MONOIDS for dtype in (F32, I32)
                 for case in WINDOW_CASES]


def _explicit(shape, window, strides, padding):
  return padtype_to_pads(shape, window, strides, padding) if isinstance(padding, str) \
      else padding


@pytest.mark.parametrize("op,dtype,shape,window,strides,padding,base_dilation,window_dilation",
                         WINDOW_PARAMS, ids=[f"{p[0]}-{name_of(p[1])}-{p[2:]}"
                                             for p in WINDOW_PARAMS])
def test_reduce_window(op, dtype, shape, window, strides, padding, base_dilation,
                       window_dilation):
  lax_op, identity, np_op = WINDOW_MONOIDS[op]
  init = np.array(identity(dtype), dtype)
  x = rand(shape, dtype)
  ones = (1,) * len(shape)
  expected = window_oracle(x, init, np_op, window, strides,
                           _explicit(shape, window, strides, padding),
                           base_dilation or ones, window_dilation or ones)
  fun = lambda x: lax.reduce_window(x, init.item(), lax_op, window, strides, padding,
                                    base_dilation, window_dilation)
  check(f"reduce_window_{op}", fun, [x], expected)
  assert f"reduce_window_{'sum' if op == 'add' else op}" in str(jaxon.make_jaxpr(fun)(x))


def test_reduce_window_generic_computation():
  """A computation that is not a known monoid (or an init that is not its identity) is
  traced into the body of a general `reduce_window`."""
  x = rand((5, 4), F32, seed=1)
  expected = window_oracle(x, np.float32(1), np.multiply, (2, 2), (1, 2), ((1, 0), (0, 0)),
                           (1, 1), (1, 1))
  fun = lambda x: lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 2), ((1, 0), (0, 0)))
  check("reduce_window[mul]", fun, [x], expected)
  assert "reduce_window[" in str(jaxon.make_jaxpr(fun)(x))


def test_reduce_window_variadic():
  x, y = rand((6,), F32, seed=1), rand((6,), I32, seed=2)
  fun = lambda x, y: lax.reduce_window(
      (x, y), (0.0, np.int32(np.iinfo(np.int32).min)),
      lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])), (3,), (1,), "VALID")
  expected = (np.convolve(x, np.ones(3, np.float32), "valid"),
              np.array([y[i:i + 3].max() for i in range(4)], np.int32))
  check("reduce_window[variadic]", fun, [x, y], expected)


PADTYPE_CASES = [
    ((7,), (3,), (1,), "SAME", [(1, 1)]), ((7,), (4,), (1,), "SAME", [(1, 2)]),
    ((7,), (4,), (1,), "SAME_LOWER", [(2, 1)]), ((8, 5), (3, 2), (2, 3), "same",
                                                  [(0, 1), (0, 0)]),
    ((5,), (5,), (2,), "VALID", [(0, 0)]), ((2,), (5,), (1,), "SAME", [(2, 2)]),
]


@pytest.mark.parametrize("shape,window,strides,padding,expected", PADTYPE_CASES,
                         ids=[str(c[:4]) for c in PADTYPE_CASES])
def test_padtype_to_pads(shape, window, strides, padding, expected):
  assert padtype_to_pads(shape, window, strides, padding) == expected


WINDOW_ERRORS = [
    (lambda: lax.reduce_window(np.ones((3, 3), np.float32), 0.0, lax.add, (2,), (1, 1),
                               "VALID"), TypeError,
     r"window_dimensions \(2,\) must have one entry per dimension of the operand"),
    (lambda: lax.reduce_window(np.ones(3, np.float32), 0.0, lax.add, (0,), (1,), "VALID"),
     TypeError, r"window_dimensions must be positive, got \(0,\)"),
    (lambda: lax.reduce_window(np.ones(3, np.float32), 0.0, lax.add, (2,), (0,), "VALID"),
     TypeError, r"window_strides must be positive"),
    (lambda: lax.reduce_window(np.ones(3, np.float32), 0.0, lax.add, (2,), (1,), "FULL"),
     ValueError, "Unrecognized padding type 'FULL'"),
    (lambda: lax.reduce_window(np.ones(3, np.float32), 0.0, lax.add, (2,), (1,), ((-4, 0),)),
     ValueError, "leaves a negative size"),
    (lambda: lax.reduce_window(np.ones(3, np.float32), 0.0, lax.add, (2,), (1,), ((1, 2, 3),)),
     TypeError, r"padding must be \(low, high\) pairs"),
    (lambda: lax.reduce_window(np.ones(3, bool), False, lax.add, (2,), (1,), "VALID"),
     TypeError, "does not accept dtype bool"),
    (lambda: lax.reduce_window(np.ones(3, np.float32), np.int32(1), lax.mul, (2,), (1,),
                               "VALID"), TypeError,
     "init value must be a scalar of its operand's dtype"),
]


@pytest.mark.parametrize("fn,error,match", WINDOW_ERRORS,
                         ids=[m[:30] for _, _, m in WINDOW_ERRORS])
def test_reduce_window_errors(fn, error, match):
  with pytest.raises(error, match=match):
    fn()
