"""Host callbacks: `debug.print`, `debug.callback`, `pure_callback`, `io_callback` and
`debug.breakpoint`, eagerly, under `jit`, `vmap`, differentiation and in loop bodies.

Printed lines, callback argument shapes, error messages and jaxpr text are JAX 0.10.2's,
recorded with JAX and pasted here.
"""
from __future__ import annotations

import io
import logging
import sys

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import debug, lax
from jaxon._src.interpreters import partial_eval as pe
from jaxon.experimental import io_callback

F32 = np.float32


def _lines(capsys) -> list[str]:
  return capsys.readouterr().out.splitlines()


def _spec(shape, dtype=F32) -> jaxon.ShapeDtypeStruct:
  return jaxon.ShapeDtypeStruct(shape, dtype)


# ----------------------------------------------------------------------------- debug.print


def _print_formats(x, s):
  debug.print("{x:.3f} {} {s} {v}", x * 2, x=x, s=s, v=jnp.arange(3.0))


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_debug_print_formats_values_as_jax(capsys, how):
  f = _print_formats if how == "eager" else jaxon.jit(_print_formats, static_argnums=1)
  f(jnp.float32(1.23456), "static")
  # a 0-d value formats as a Python float, as NumPy scalars do
  assert _lines(capsys) == ["1.235 2.4691200256347656 static [0. 1. 2.]"]


def test_debug_print_uses_numpy_print_options_of_the_call(capsys):
  f = jaxon.jit(lambda x: debug.print("{}", x))
  x = jnp.array([1 / 3, 2 / 3])
  with np.printoptions(precision=2):
    f(x)
  f(x)  # the options were traced with the call
  debug.print("{}", x)
  assert _lines(capsys) == ["[0.33 0.67]", "[0.33 0.67]", "[0.33333334 0.6666667 ]"]


def test_debug_print_checks_its_format_while_tracing():
  with pytest.raises(ValueError, match=r"Unused positional arguments to `jax.debug.print`: \[2\]"):
    debug.print("{}", 1, 2)
  with pytest.raises(ValueError, match=r"Unused keyword arguments .*\['y'\]. You may be passing"):
    jaxon.jit(lambda x: debug.print("{}", x, y=x))(1.0)
  with pytest.raises(TypeError, match="two-call form"):
    debug.print(ordered=True, x=1)


def test_debug_print_two_call_form(capsys):
  jaxon.jit(lambda x: debug.print(ordered=True)("x={x}", x=x))(jnp.arange(2))
  assert _lines(capsys) == ["x=[0 1]"]


def test_debug_log_logs_from_the_calling_line(caplog):
  with caplog.at_level(logging.INFO):
    jaxon.jit(lambda x: debug.log("x={}", x))(jnp.arange(2))
  (record,) = caplog.records
  assert (record.getMessage(), record.levelno) == ("x=[0 1]", logging.INFO)
  assert record.pathname == __file__


def test_debug_print_under_vmap_prints_each_lane(capsys):
  f = lambda x, y: debug.print("{} {}", x, y)  # noqa: E731
  xs = jnp.arange(3.0)
  jaxon.vmap(f, in_axes=(0, None))(xs, 7)
  jaxon.jit(jaxon.vmap(f, in_axes=(None, 0)))(1, xs)
  assert _lines(capsys) == ["0.0 7", "1.0 7", "2.0 7", "1 0.0", "1 1.0", "1 2.0"]


def _square_and_print(x):
  debug.print("primal {}", x)
  return x * x


def test_debug_print_under_differentiation_sees_primals_once(capsys):
  assert float(jaxon.grad(_square_and_print)(3.0)) == 6.0
  assert _lines(capsys) == ["primal 3.0"]
  y, t = jaxon.jvp(_square_and_print, (2.0,), (1.0,))
  assert (float(y), float(t)) == (4.0, 4.0)
  assert _lines(capsys) == ["primal 2.0"]
  _, pullback = jaxon.vjp(_square_and_print, 5.0)
  assert _lines(capsys) == ["primal 5.0"]
  assert float(pullback(1.0)[0]) == 10.0
  assert _lines(capsys) == []  # the transpose does not print
  assert float(jaxon.jit(jaxon.grad(jaxon.grad(_square_and_print)))(4.0)) == 2.0
  assert _lines(capsys) == ["primal 4.0"]


def test_debug_print_under_checkpoint_prints_again_when_recomputed(capsys):
  # JAX 0.10.2: the rematerialized forward pass prints as well.
  jaxon.grad(jaxon.checkpoint(_square_and_print))(3.0)
  assert _lines(capsys) == ["primal 3.0", "primal 3.0"]


def _scan_printing(xs):
  def body(carry, x):
    debug.print("carry={} x={}", carry, x)
    return carry + x, carry
  return lax.scan(body, 0.0, xs)


@pytest.mark.parametrize("how", ["eager", "jit", "grad"])
def test_debug_print_in_scan_prints_every_iteration_in_order(capsys, how):
  xs = jnp.array([1.0, 2.0, 3.0])
  if how == "grad":
    g = jaxon.grad(lambda xs: _scan_printing(xs)[0])(xs)
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0])
  else:
    carry, _ = (_scan_printing if how == "eager" else jaxon.jit(_scan_printing))(xs)
    assert float(carry) == 6.0
  assert _lines(capsys) == ["carry=0.0 x=1.0", "carry=1.0 x=2.0", "carry=3.0 x=3.0"]


def test_debug_print_in_while_fori_and_cond(capsys):
  def f(n):
    def body(c):
      debug.print("while {}", c)
      return c + 1
    lax.while_loop(lambda c: c < n, body, 0)
    lax.fori_loop(0, n, lambda i, c: (debug.print("fori {}", i), c)[1], 0)
    return lax.cond(n > 1, lambda: debug.print("big {}", n), lambda: debug.print("small"))
  jaxon.jit(f)(2)
  f(1)
  # Program order: stronger than JAX, which leaves unordered prints in any order (0.10.2
  # prints "big 2" first here).
  assert _lines(capsys) == ["while 0", "while 1", "fori 0", "fori 1", "big 2",
                            "while 0", "fori 0", "small"]


# ----------------------------------------------------------------------------- debug.callback


def test_debug_callback_without_outputs_is_kept_under_jit():
  seen = []

  @jaxon.jit
  def f(x):
    debug.callback(lambda v, scale: seen.append(np.asarray(v) * scale), x, scale=10)
    inner = jaxon.jit(lambda y: (debug.callback(lambda: seen.append("inner")), y)[1])
    inner(x)  # its result unused: still runs
    return x + 1

  np.testing.assert_array_equal(f(jnp.arange(2.0)), [1.0, 2.0])
  np.testing.assert_array_equal(seen[0], [0.0, 10.0])
  assert seen[1:] == ["inner"]


def test_debug_callback_receives_arrays_and_static_values():
  seen = []
  debug.callback(lambda a, tag=None: seen.append((type(a), tag)), 1.5, tag="t")
  jaxon.jit(lambda x: debug.callback(lambda a, tag: seen.append((type(a), tag)), x, tag="j"))(
      2.0)
  assert seen == [(jaxon.Array, "t"), (jaxon.Array, "j")]
  with pytest.raises(TypeError, match="first argument to jax.debug.callback must be callable"):
    debug.callback(3, 1)


def test_dce_keeps_effectful_equations_and_drops_unused_pure_ones():
  def f(x):
    debug.callback(lambda v: None, x)
    jaxon.pure_callback(lambda v: v, _spec(()), x)
    lax.scan(lambda c, _: (debug.print("{}", c), (c, None))[1], x, None, length=2)
    return x
  jaxpr = jaxon.make_jaxpr(f)(1.0).jaxpr
  kept, used_inputs = pe.dce_jaxpr(jaxpr, [False])
  assert [e.primitive.name for e in kept.eqns] == ["debug_callback", "scan"]
  assert used_inputs == [True]


# ----------------------------------------------------------------------------- pure_callback


def test_pure_callback_matches_numpy_eager_and_jit():
  def host(x, y, *, power):
    return {"sum": np.asarray(x) + y, "pow": np.asarray(x) ** power}

  def f(x, y):
    shapes = {"sum": _spec((3,)), "pow": _spec((3,))}
    return jaxon.pure_callback(host, shapes, x, y, power=2)

  x = np.array([1.0, 2.0, 3.0], F32)
  for g in (f, jaxon.jit(f)):
    out = g(x, F32(0.5))
    np.testing.assert_allclose(out["sum"], x + 0.5)
    np.testing.assert_allclose(out["pow"], x ** 2)
    assert out["pow"].dtype == F32


# For f(x, y) = pure_callback(x + y) vmapped over x (4 examples) with y unbatched: the
# shapes of (x, y) the callback saw, call by call (JAX 0.10.2).
VMAP_CALLS = {
    "sequential": [((), ())] * 4,
    "sequential_unrolled": [((), ())] * 4,
    "expand_dims": [((4,), (1,))],
    "broadcast_all": [((4,), (4,))],
    "legacy_vectorized": [((4,), ())],
}


@pytest.mark.parametrize("method", list(VMAP_CALLS))
def test_pure_callback_vmap_methods(method):
  calls = []

  def host(x, y):
    calls.append((np.shape(x), np.shape(y)))
    return np.asarray(x) + np.asarray(y)

  def f(x, y):
    return jaxon.pure_callback(host, _spec(np.broadcast_shapes(np.shape(x), np.shape(y))),
                               x, y, vmap_method=method)

  batched = jaxon.vmap(f, in_axes=(0, None))
  for g in (batched, jaxon.jit(batched)):
    calls.clear()
    np.testing.assert_array_equal(g(jnp.arange(4.0), F32(1)), [1.0, 2.0, 3.0, 4.0])
    assert calls == VMAP_CALLS[method]


def test_pure_callback_vmap_method_errors():
  f = lambda x: jaxon.pure_callback(np.sin, _spec(()), x)  # noqa: E731
  with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
    jaxon.vmap(f)(jnp.ones(2))
  with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
    jaxon.pure_callback(np.sin, _spec(()), 1.0, vmap_method="bad")


def test_pure_callback_with_unused_results_is_dropped_under_jit():
  calls = []
  host = lambda x: (calls.append(1), x)[1]  # noqa: E731
  unused = jaxon.jit(lambda x: (jaxon.pure_callback(host, _spec(()), x), x + 1)[1])
  used = jaxon.jit(lambda x: jaxon.pure_callback(host, _spec(()), x) + 1)
  assert float(unused(1.0)) == 2.0 and calls == []
  assert float(used(1.0)) == 2.0 and calls == [1]


def test_pure_callback_cannot_be_differentiated():
  f = lambda x: jaxon.pure_callback(np.sin, _spec(()), x)  # noqa: E731
  message = ("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
             "callbacks while taking gradients.")
  for transform in (jaxon.grad, lambda g: lambda x: jaxon.jvp(g, (x,), (1.0,))):
    with pytest.raises(ValueError) as e:
      transform(f)(1.0)
    assert str(e.value) == message


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_pure_callback_results_are_checked(how):
  def call(host, shapes):
    f = lambda x: jaxon.pure_callback(host, shapes, x)  # noqa: E731
    return (f if how == "eager" else jaxon.jit(f))(jnp.arange(3.0))

  with pytest.raises(RuntimeError, match=r"Incorrect output shape for return value #0: "
                     r"Expected: \(3,\), Actual: \(4,\)") as e:
    call(lambda x: np.zeros(4, F32), _spec((3,)))
  assert type(e.value).__name__ == "JaxRuntimeError"
  with pytest.raises(RuntimeError, match="Incorrect output dtype for return value #0: "
                     "Expected: float32, Actual: int32"):
    call(lambda x: np.zeros(3, np.int32), _spec((3,)))
  with pytest.raises(RuntimeError, match="Mismatched number of outputs from callback. "
                     "Expected: 2, Actual: 1"):
    call(lambda x: x, (_spec((3,)), _spec((3,))))
  # float64 results are narrowed to float32 when x64 is off, as in JAX
  np.testing.assert_array_equal(call(lambda x: np.asarray(x, np.float64), _spec((3,))),
                                [0.0, 1.0, 2.0])


def test_pure_callback_rejects_64_bit_result_types_without_x64():
  with pytest.raises(ValueError, match="cannot specify 64-bit types when `jax_enable_x64` is "
                     "disabled"):
    jaxon.pure_callback(lambda x: x, _spec((), np.float64), 1.0)


# ----------------------------------------------------------------------------- io_callback


def test_ordered_io_callbacks_keep_program_order_within_and_across_calls():
  log = []

  def record(tag):
    def host(x):
      log.append((tag, float(np.sum(x))))
      return np.asarray(x)
    return host

  @jaxon.jit
  def f(x):
    for i in range(6):  # independent of each other: only the order ties them
      y = jnp.sin(x * i) if i % 2 else jnp.exp(-x) @ jnp.ones((16, 16))
      io_callback(record(i), _spec(y.shape), y, ordered=True)
      if i == 3:
        lax.fori_loop(0, 2, lambda j, c: (io_callback(record("loop"), _spec(()), c,
                                                      ordered=True), c)[1], 0.0)
    return x

  x = jnp.ones((16, 16))
  f(x)
  assert [tag for tag, _ in log] == [0, 1, 2, 3, "loop", "loop", 4, 5]
  log.clear()
  jitted = jaxon.jit(lambda s: io_callback(record("jit"), _spec(()), s, ordered=True))
  for step in range(20):  # eager ones in between: one order over all calls
    io_callback(record("eager"), _spec(()), F32(step), ordered=True)
    jitted(F32(step))
  assert log == [(tag, float(step)) for step in range(20) for tag in ("eager", "jit")]


def test_io_callback_runs_even_when_its_results_are_unused():
  calls = []
  f = jaxon.jit(lambda x: (io_callback(lambda v: (calls.append(1), v)[1], _spec(()), x), x)[1])
  f(1.0)
  f(2.0)
  assert calls == [1, 1]


def test_io_callback_under_vmap_and_differentiation():
  calls = []
  host = lambda v: (calls.append(np.shape(v)), np.asarray(v) * 2)[1]  # noqa: E731
  unordered = lambda x: io_callback(host, _spec(()), x)  # noqa: E731
  np.testing.assert_array_equal(jaxon.vmap(unordered)(jnp.arange(3.0)), [0.0, 2.0, 4.0])
  assert calls == [()] * 3
  ordered = lambda x: io_callback(host, _spec(()), x, ordered=True)  # noqa: E731
  with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback."):
    jaxon.vmap(ordered)(jnp.arange(3.0))
  with pytest.raises(ValueError, match=r"^IO callbacks do not support JVP\.(\n|$)"):
    jaxon.grad(unordered)(1.0)


# ----------------------------------------------------------------------------- jaxprs


def _double(a):
  return a * 2


def _show(*args):
  pass


# Printed by JAX 0.10.2's make_jaxpr for `_golden` below (NumPy 2.4's print options).
GOLDEN_JAXPR = """\
{ lambda ; a:f32[2,3]. let
    debug_print[
      fmt={} {s} {x}
      has_placeholders=True
      in_tree=PyTreeDef(((*,), {'s': *, 'x': *}))
      logging_record=None
      np_printoptions=(('edgeitems', 3), ('threshold', 1000), ('floatmode', 'maxprec'), \
('precision', 8), ('suppress', False), ('linewidth', 75), ('nanstr', 'nan'), ('infstr', 'inf'), \
('sign', '-'), ('formatter', None), ('legacy', False), ('override_repr', None))
      ordered=False
      partitioned=False
      static_args=((1, 'hi'),)
    ] a a
    b:f32[2,3] = pure_callback[
      callback=_FlatCallback(callback_func=<function _double at 0xXXXXXXXXXXXX>, \
in_tree=PyTreeDef(((*,), {})))
      result_avals=(ShapedArray(float32[2,3]),)
      sharding=None
      vmap_method=sequential
    ] a
    debug_callback[
      callback=<function debug_callback.<locals>._debug_callback.<locals>._flat_callback \
at 0xXXXXXXXXXXXX>
      effect=OrderedDebug
      partitioned=False
    ] b
    c:i32[2,3] = convert_element_type[new_dtype=int32 weak_type=False] b
    d:i32[2,3] = io_callback[
      callback=_FlatCallback(callback_func=<function _double at 0xXXXXXXXXXXXX>, \
in_tree=PyTreeDef(((*,), {})))
      ordered=True
      result_avals=(ShapedArray(int32[2,3]),)
      sharding=None
    ] c
  in (b, d) }"""


def _golden(x):
  debug.print("{} {s} {x}", x, s="hi", x=x)
  y = jaxon.pure_callback(_double, _spec(x.shape, x.dtype), x, vmap_method="sequential")
  debug.callback(_show, y, ordered=True)
  z = io_callback(_double, _spec((2, 3), np.int32), y.astype(np.int32), ordered=True)
  return y, z


def test_callback_equations_print_as_in_jax():
  with np.printoptions(**np.get_printoptions()):  # the defaults, whatever ran before
    np.set_printoptions(edgeitems=3, threshold=1000, floatmode="maxprec", precision=8,
                        suppress=False, linewidth=75, nanstr="nan", infstr="inf", sign="-",
                        formatter=None, legacy=False, override_repr=None)
    jaxpr = jaxon.make_jaxpr(_golden)(np.ones((2, 3), F32))
  assert str(jaxpr) == GOLDEN_JAXPR


# ----------------------------------------------------------------------------- breakpoint


def _halve_with_breakpoint(x):
  half = x / 2
  debug.breakpoint()
  return half


@pytest.mark.parametrize("how", ["eager", "jit"])
def test_breakpoint_shows_locals_at_run_time(capsys, monkeypatch, how):
  monkeypatch.setattr(sys, "stdin", io.StringIO("p half\npp x + 1\nnope\nu\nc\n"))
  f = _halve_with_breakpoint if how == "eager" else jaxon.jit(_halve_with_breakpoint)
  np.testing.assert_array_equal(f(jnp.array([2.0, 4.0])), [1.0, 2.0])
  out = capsys.readouterr().out
  assert out.startswith("Entering jdb:\n(jdb) Array([1., 2.], dtype=float32)\n"
                        "(jdb) Array([3., 5.], dtype=float32)\n"
                        "(jdb) *** NameError: name 'nope' is not defined\n(jdb) > ")
  assert "->  " in out and "test_callbacks.py" in out  # `u` shows the caller's source


def test_effectful_programs_wait_and_pure_ones_do_not():
  from jaxon._src.xla import executable
  plain = jaxon.jit(lambda x: x + 1)
  printing = jaxon.jit(lambda x: (debug.print("{}", x), x + 1)[1])
  for f, waits in ((plain, False), (printing, True)):
    f(1.0)
    cache = f._jaxon_jit._cache
    exe = cache[next(iter(cache))].executable
    assert isinstance(exe.loaded, executable._CompletingExecutable) == waits
  jaxon.effects_barrier()
