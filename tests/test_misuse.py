"""Bad input, row by row: each misuse raises the exception class JAX 0.10.2 raises for it
(recorded from JAX, so `except` clauses in ported programs keep working), with a message
that names the argument and the shapes and dtypes involved.

Almost every row fails while checking arguments or tracing, before anything compiles, so
the whole table runs in a few seconds. Where jaxon raises a subclass of JAX's class (NumPy's
AxisError, both a ValueError and an IndexError, for axes out of range; the
ConcretizationTypeError family, TypeErrors) the row still asserts JAX's class.

The second half checks Python ints against the dtype they become: JAX reads a Python int
as an int32 (int64 with x64) first, so one outside that range raises OverflowError, while
one inside it wraps around in a narrower dtype (`int8_array + 300`).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import errors, lax, random, tree_util
from jaxon._src.numpy.indexing import NonConcreteBooleanIndexError

_f3, _f4 = jnp.ones(3), jnp.ones(4)
_f23, _f34 = jnp.ones((2, 3)), jnp.ones((3, 4))
_i3 = jnp.ones(3, jnp.int32)
_i8 = jnp.zeros(3, jnp.int8)
_c2 = jnp.ones(2, jnp.complex64)
_key = random.PRNGKey(0)

_leaked: list = []


def _leak(x):
  _leaked.append(x)
  return x


def _use_leaked(transform: Callable, arg, use: Callable) -> Callable:
  """A thunk that runs `transform(_leak)(arg)`, then uses the tracer that escaped."""
  def thunk():
    transform(_leak)(arg)
    return use(_leaked[-1])
  return thunk


def _custom_jvp_with_bad_rule():
  @jaxon.custom_jvp
  def f(x):
    return x

  @f.defjvp
  def f_jvp(primals, tangents):
    return primals[0], jnp.ones(3)
  return jaxon.jvp(f, (1.0,), (1.0,))


def _jit_if(x):
  return x if x > 0 else -x


SHAPES = [
    ("add_shapes", lambda: _f3 + _f4, TypeError, r"add.*\(3,\), \(4,\)"),
    ("multiply_shapes", lambda: jnp.multiply(_f3, _f4), TypeError,
     r"mul got incompatible shapes for broadcasting: \(3,\), \(4,\)"),
    ("multiply_ranks", lambda: jnp.multiply(_f3, jnp.ones((2, 4))), ValueError,
     r"Incompatible shapes for broadcasting: shapes=\[\(3,\), \(2, 4\)\]"),
    ("lax_add_shapes", lambda: lax.add(_f3, _f4), TypeError, r"add.*\(3,\), \(4,\)"),
    ("dot_shapes", lambda: jnp.dot(_f3, _f4), TypeError, r"dot: shapes \(3,\) and \(4,\)"),
    ("matmul_shapes", lambda: _f23 @ _f23, TypeError,
     r"matmul: shapes \(2, 3\) and \(2, 3\) are not aligned"),
    ("matmul_scalar", lambda: jnp.matmul(_f3, 2.0), ValueError,
     r"operand 1 must have ndim at least 1.*jnp\.multiply"),
    ("lax_dot_shapes", lambda: lax.dot(_f23, _f23), ValueError,
     r"dot: got \(2, 3\) and \(2, 3\).*dot_general"),
    ("lax_dot_general_contract",
     lambda: lax.dot_general(_f23, _f23, (((1,), (0,)), ((), ()))), TypeError,
     r"contracting dimensions.*\(3,\) and \(2,\).*f32\[2,3\]"),
    ("reshape_size", lambda: jnp.reshape(_f23, (4,)), TypeError,
     r"new_sizes \(4,\).*shape \(2, 3\)"),
    ("reshape_method_size", lambda: _f23.reshape(5), TypeError, r"\(5,\).*shape \(2, 3\)"),
    ("reshape_two_unknown", lambda: jnp.reshape(_f23, (-1, -1)), TypeError,
     r"one unknown dimension \(-1\), got \(-1, -1\)"),
    ("concatenate_shapes", lambda: jnp.concatenate([_f23, _f34]), TypeError,
     r"dimension 0 for shapes \(2, 3\), \(3, 4\)"),
    ("concatenate_ranks", lambda: jnp.concatenate([_f3, _f23]), TypeError,
     r"different numbers of dimensions: got \(3,\), \(2, 3\)"),
    ("concatenate_nothing", lambda: jnp.concatenate([]), ValueError, r"at least one array"),
    ("stack_shapes", lambda: jnp.stack([_f3, _f4]), ValueError, r"same shape, got \(3,\), \(4,\)"),
    ("broadcast_to", lambda: jnp.broadcast_to(_f3, (4,)), ValueError,
     r"\(3,\) and requested shape \(4,\)"),
    ("broadcast_to_lower_rank", lambda: jnp.broadcast_to(_f23, (3,)), ValueError,
     r"\(2, 3\) and requested shape \(3,\)"),
    ("where_shapes", lambda: jnp.where(_f3 > 0, _f3, _f4), ValueError, r"\(3,\), \(3,\), \(4,\)"),
    ("conv_features", lambda: lax.conv(jnp.ones((1, 2, 5, 5)), jnp.ones((3, 3, 3, 3)), (1, 1),
                                       "SAME"), ValueError,
     r"feature.*2 // 1 != 3.*f32\[1,2,5,5\].*f32\[3,3,3,3\]"),
    ("conv_ranks", lambda: lax.conv(jnp.ones((2, 5, 5)), jnp.ones((3, 2, 3, 3)), (1, 1), "SAME"),
     TypeError, r"ndim to be equal, got shapes \(2, 5, 5\) and \(3, 2, 3, 3\)"),
    ("conv_dimension_numbers", lambda: lax.conv_general_dilated(
        jnp.ones((1, 5, 5, 2)), jnp.ones((3, 3, 2, 4)), (1, 1), "SAME",
        dimension_numbers=("NHWC", "HWIO", "NHWCX")), TypeError, r"'NHWCX'.*same length"),
    ("split_unequal", lambda: jnp.split(jnp.ones(5), 2), ValueError,
     r"equal division: an axis of size 5 into 2 sections"),
    ("repeat_lengths", lambda: jnp.repeat(_f3, jnp.array([1, 2])), ValueError,
     r"length 1 or 3.*got shape \(2,\)"),
    ("zeros_negative_size", lambda: jnp.zeros((-1, 3)), TypeError,
     r"non-negative sizes.*\(-1, 3\)"),
    ("ones_string_shape", lambda: jnp.ones("abc"), TypeError, r"integer type, got 'abc'"),
    ("zeros_float_shape", lambda: jnp.zeros((2.5,)), TypeError, r"integer type, got \(2\.5,\)"),
    ("lax_slice_past_end", lambda: lax.slice(_f3, (0,), (5,)), TypeError,
     r"limit_indices=\(5,\) for operand of shape \(3,\)"),
    ("dynamic_slice_too_big", lambda: lax.dynamic_slice(_f3, (0,), (5,)), TypeError,
     r"slice_sizes=\(5,\) for operand of shape \(3,\)"),
    ("transpose_not_permutation", lambda: jnp.transpose(_f23, (0, 0)), TypeError,
     r"\(0, 0\) is not a permutation.*\(2, 3\)"),
    ("einsum_sizes", lambda: jnp.einsum("ij,jk->ik", _f23, _f23), ValueError,
     r"label 'j' for operand 1 \(3\) does not match previous terms \(2\)"),
    ("inv_not_square", lambda: jnp.linalg.inv(_f23), ValueError, r"square.*shape \(2, 3\)"),
    ("solve_shapes", lambda: jnp.linalg.solve(jnp.eye(3), _f4), ValueError,
     r"b must have shape \(3,\).*\(3, 3\), got \(4, 1\)"),
    ("squeeze_non_unit", lambda: jnp.squeeze(_f23, axis=0), ValueError,
     r"size not equal to one, got shape=\(2, 3\) and dimensions=\(0,\)"),
    ("lax_select_shapes", lambda: lax.select(_f3 > 0, _f3, _f4), TypeError,
     r"same shapes, got \[\(4,\), \(3,\)\]"),
    ("lax_clamp_shapes", lambda: lax.clamp(_f4, _f3, _f3), TypeError,
     r"min shape \(4,\) and operand shape \(3,\)"),
    ("dynamic_update_slice_too_big", lambda: lax.dynamic_update_slice(_f3, _f4, (0,)),
     TypeError, r"update of shape \(4,\) for operand of shape \(3,\)"),
    ("lax_pad_config", lambda: lax.pad(_f3, 0.0, [(1, 1, 0), (1, 1, 0)]), ValueError,
     r"padding_config.*operand shape \(3,\)"),
    ("take_along_axis_ranks", lambda: jnp.take_along_axis(_f23, jnp.zeros(3, int), axis=0),
     ValueError, r"same number of dimensions, got shapes \(3,\) and \(2, 3\)"),
    ("top_k_too_many", lambda: lax.top_k(_f3, 5), ValueError, r"size 3 of axis 0.*f32\[3\].*k=5"),
]

DTYPES = [
    ("bitwise_and_float", lambda: jnp.bitwise_and(_f3, _f3), TypeError,
     r"and does not accept dtype float32.*f32\[3\].*integer, bool"),
    ("invert_float", lambda: ~_f3, TypeError, r"not does not accept dtype float32"),
    ("left_shift_float", lambda: jnp.left_shift(_f3, 1), TypeError,
     r"shift_left does not accept dtype float32"),
    ("gcd_float", lambda: jnp.gcd(_f3, _f3), ValueError, r"jnp\.gcd.*integer.*float32"),
    ("lcm_float", lambda: jnp.lcm(1, 2.0), ValueError, r"jnp\.lcm.*integer.*float32"),
    ("bincount_float", lambda: jnp.bincount(_f3), TypeError, r"bincount.*integer.*float32"),
    ("ones_unknown_dtype_name", lambda: jnp.ones(3, "abc"), TypeError,
     r"data type 'abc' not understood"),
    ("zeros_object_dtype", lambda: jnp.zeros(3, object), TypeError,
     r"'object' is not a valid jaxon array type"),
    ("astype_unknown_dtype", lambda: _f3.astype("notadtype"), TypeError, r"'notadtype'"),
    ("array_of_strings", lambda: jnp.array(["a", "b"]), TypeError,
     r"'str32' is not a valid jaxon array type"),
    ("floor_complex", lambda: jnp.floor(_c2), TypeError,
     r"floor does not accept dtype complex64.*c64\[2\]"),
    ("cbrt_complex", lambda: jnp.cbrt(_c2), TypeError, r"cbrt does not accept dtype complex64"),
    ("fmod_complex", lambda: jnp.fmod(_c2, 1), TypeError, r"rem does not accept dtype complex64"),
    ("lax_add_mixed_dtypes", lambda: lax.add(_f3, _i3), TypeError,
     r"same dtypes, got f32\[3\], i32\[3\].*convert_element_type"),
    ("lax_sin_int", lambda: lax.sin(_i3), TypeError, r"sin does not accept dtype int32.*i32\[3\]"),
    ("lax_rem_bool", lambda: lax.rem(jnp.ones(2, bool), jnp.ones(2, bool)), TypeError,
     r"rem does not accept dtype bool"),
    ("lax_erf_int", lambda: lax.erf(_i3), TypeError, r"erf does not accept dtype int32"),
    ("lax_integer_pow_bool", lambda: lax.integer_pow(jnp.ones(2, bool), 2), TypeError,
     r"integer_pow does not accept dtype bool"),
    ("lax_integer_pow_float_exponent", lambda: lax.integer_pow(_f3, 1.5), TypeError,
     r"exponent y must be a Python int, got 1\.5"),
    ("lax_convert_to_str", lambda: lax.convert_element_type(_f3, np.str_), TypeError,
     r"'str' is not a valid jaxon array type"),
    ("lax_select_float_predicate", lambda: lax.select(_f3, _f3, _f3), TypeError,
     r"`which` must be boolean or int32, got f32\[3\]"),
    ("lax_argmax_float_index", lambda: lax.argmax(_f3, 0, jnp.float32), TypeError,
     r"index_dtype must be an integer type, got float32"),
    ("dynamic_update_slice_dtypes", lambda: lax.dynamic_update_slice(_f3, _i3, (0,)), TypeError,
     r"same dtypes, got f32\[3\], i32\[3\]"),
]

AXES = [
    ("sum_axis", lambda: jnp.sum(_f3, axis=1), ValueError,
     r"jnp\.sum: axis 1 is out of bounds for array of dimension 1"),
    ("sum_negative_axis", lambda: jnp.sum(_f3, axis=-2), ValueError, r"axis -2 is out of bounds"),
    ("sum_float_axis", lambda: jnp.sum(_f3, axis=0.5), TypeError, r"jnp\.sum: axis must be.*0\.5"),
    ("sum_repeated_axis", lambda: jnp.sum(_f23, axis=(1, -1)), ValueError,
     r"duplicate value in 'axis': \(1, -1\)"),
    ("mean_axis", lambda: jnp.mean(_f23, axis=2), IndexError,
     r"jnp\.mean: axis 2 is out of bounds for array of dimension 2"),
    ("var_axis", lambda: jnp.var(_f23, axis=5), IndexError, r"axis 5 is out of bounds"),
    ("argmax_axis", lambda: jnp.argmax(_f23, axis=2), IndexError,
     r"jnp\.argmax: axis 2 is out of bounds"),
    ("argmax_tuple_axis", lambda: jnp.argmax(_f23, axis=(0, 1)), TypeError,
     r"axis must be an int or None, got \(0, 1\)"),
    ("cumsum_axis", lambda: jnp.cumsum(_f3, axis=1), ValueError, r"jnp\.cumsum: axis 1"),
    ("concatenate_axis", lambda: jnp.concatenate([_f3, _f3], axis=1), ValueError,
     r"axis 1 is out of bounds for an array of dimension 1"),
    ("stack_axis", lambda: jnp.stack([_f3, _f3], axis=3), ValueError, r"axis 3 is out of bounds"),
    ("moveaxis_axis", lambda: jnp.moveaxis(_f23, 2, 0), ValueError, r"axis 2 is out of bounds"),
    ("moveaxis_repeated", lambda: jnp.moveaxis(_f23, (0, 0), (0, 1)), TypeError,
     r"moveaxis: repeated axis in \(0, 0\)"),
    ("swapaxes_axis", lambda: jnp.swapaxes(_f23, 0, 2), IndexError, r"axis 2 is out of bounds"),
    ("squeeze_axis", lambda: jnp.squeeze(_f3, axis=2), ValueError, r"axis 2 is out of bounds"),
    ("flip_repeated", lambda: jnp.flip(_f3, (0, 0)), TypeError, r"flip: repeated axis"),
    ("split_axis", lambda: jnp.split(_f4, 2, axis=1), IndexError, r"axis 1 is out of bounds"),
    ("take_axis", lambda: jnp.take(_f3, 0, axis=1), ValueError, r"axis 1 is out of bounds"),
    ("lax_reduce_sum_axes", lambda: lax.reduce_sum(_f3, (1,)), ValueError,
     r"axes \(1,\) are out of bounds for an operand of shape \(3,\)"),
    ("lax_rev_dimension", lambda: lax.rev(_f3, (1,)), TypeError,
     r"rev dimensions.*shape \(3,\).*got \(1,\)"),
    ("lax_dynamic_slice_in_dim_axis", lambda: lax.dynamic_slice_in_dim(_f23, 0, 1, axis=2),
     IndexError, r"axis 2 is out of bounds"),
    ("lax_concatenate_dimension", lambda: lax.concatenate([_f23, _f23], 2), TypeError,
     r"dimension 2 for shapes \(2, 3\), \(2, 3\)"),
    ("lax_cumsum_axis", lambda: lax.cumsum(_f3, axis=1), ValueError,
     r"axis 1 is out of bounds for an operand of shape \(3,\)"),
]

INDICES = [
    ("too_many_indices", lambda: _f3[0, 0], IndexError,
     r"1-dimensional array indexed with 2 regular indices"),
    ("too_many_indices_jit", lambda: jaxon.make_jaxpr(lambda x: x[0, 0])(_f3), IndexError,
     r"Too many indices"),
    ("float_index", lambda: _f3[1.0], TypeError,
     r"integer or boolean type, got indexer with type float64 at position 0"),
    ("float_array_index", lambda: _f3[jnp.ones(1)], TypeError, r"type float32 at position 0"),
    ("string_index", lambda: _f3["a"], TypeError, r"string indexing; got index 'a'"),
    ("boolean_index_jit", lambda: jaxon.make_jaxpr(lambda x: x[x > 0])(_f3),
     NonConcreteBooleanIndexError, r"boolean indices must be concrete; got bool\[3\]"),
    ("boolean_index_vmap", lambda: jaxon.vmap(lambda x: x[x > 0])(_f23),
     NonConcreteBooleanIndexError, r"got bool\[3\]"),
    ("boolean_index_shape", lambda: _f3[jnp.array([True, False])], IndexError,
     r"mask of shape \(2,\), indexed dimensions have shape \(3,\)"),
    ("two_ellipses", lambda: _f23[..., ...], IndexError, r"single ellipsis"),
    ("list_of_slices", lambda: _f23[[slice(None), 0]], TypeError, r"arr\[tuple\(seq\)\]"),
    ("traced_slice_bounds", lambda: jaxon.make_jaxpr(lambda x, i: x[i:i + 1])(_f3, 1),
     IndexError, r"static start/stop/step.*dynamic_slice"),
    ("dynamic_slice_index_count", lambda: lax.dynamic_slice(_f23, (0,), (1, 1)), ValueError,
     r"\(1 vs 2\): operand has shape \(2, 3\)"),
    ("take_mode", lambda: jnp.take(_f3, 0, mode="wrap2"), ValueError, r"invalid mode 'wrap2'"),
]

TRACERS = [
    ("if_on_tracer", lambda: jaxon.jit(_jit_if)(1.0), errors.TracerBoolConversionError,
     r"boolean conversion of traced array with shape bool\[\]"),
    ("int_of_tracer", lambda: jaxon.jit(lambda x: int(x))(1.0), errors.ConcretizationTypeError,
     r"`int` function applied to f32\[\]"),
    ("float_of_tracer", lambda: jaxon.jit(lambda x: float(x))(1.0),
     errors.ConcretizationTypeError, r"`float` function applied to f32\[\]"),
    ("range_of_tracer", lambda: jaxon.jit(lambda n: jnp.zeros(()) + sum(range(n)))(3),
     errors.TracerIntegerConversionError, r"__index__\(\).*i32\[\]"),
    ("numpy_of_tracer", lambda: jaxon.jit(lambda x: np.asarray(x))(1.0),
     errors.TracerArrayConversionError, r"__array__\(\).*f32\[\]"),
    ("item_of_tracer", lambda: jaxon.jit(lambda x: x.item())(1.0),
     errors.ConcretizationTypeError, r"item\(\) method"),
    ("traced_shape", lambda: jaxon.jit(lambda n: jnp.zeros(n))(3), TypeError,
     r"i32\[\].*must be concrete"),
    ("traced_arange", lambda: jaxon.jit(lambda n: jnp.arange(n))(3),
     errors.ConcretizationTypeError, r"jnp\.arange argument 'stop'"),
    ("nonzero_without_size", lambda: jaxon.jit(jnp.nonzero)(_f3), errors.ConcretizationTypeError,
     r"size argument of jnp\.nonzero"),
    ("hash_of_tracer", lambda: jaxon.jit(lambda x: hash(x))(1.0), TypeError, r"unhashable"),
    ("escaped_tracer_jit", _use_leaked(jaxon.make_jaxpr, 1.0, lambda t: t + 1),
     errors.UnexpectedTracerError, r"float32\[\].*DynamicJaxprTracer"),
    ("escaped_tracer_jnp", _use_leaked(jaxon.make_jaxpr, 1.0, jnp.sin),
     errors.UnexpectedTracerError, r"float32\[\]"),
    ("escaped_tracer_grad", _use_leaked(jaxon.grad, 1.0, lambda t: t * 2),
     errors.UnexpectedTracerError, r"JVPTracer"),
    ("escaped_tracer_vmap", _use_leaked(jaxon.vmap, _f3, lambda t: t * 2),
     errors.UnexpectedTracerError, r"BatchTracer"),
]

STATIC_ARGS = [
    ("unhashable_static", lambda: jaxon.jit(lambda x, s: x, static_argnums=1)(1.0, [1, 2]),
     ValueError, r"Non-hashable static arguments.*list"),
    ("array_static", lambda: jaxon.jit(lambda x, s: x, static_argnums=1)(1.0, np.ones(2)),
     ValueError, r"Non-hashable static arguments.*ndarray"),
    ("static_argnums_out_of_range", lambda: jaxon.jit(lambda x: x, static_argnums=3)(1.0),
     ValueError, r"static_argnums=\(3,\), but only accepts 1 positional"),
    ("static_argnames_unknown", lambda: jaxon.jit(lambda x: x, static_argnames="y")(1.0),
     ValueError, r"invalid argnames \{'y'\}"),
    ("donate_argnums_out_of_range", lambda: jaxon.jit(lambda x: x, donate_argnums=3)(_f3),
     ValueError, r"donate_argnums=\(3,\)"),
    ("string_argument", lambda: jaxon.jit(lambda x: x)("a"), TypeError,
     r"'a' of type <class 'str'> is not a valid JAX type.*static_argnums"),
    ("string_result", lambda: jaxon.jit(lambda x: "a")(1.0), TypeError,
     r"'a' of type str is not a valid"),
]

PYTREES = [
    ("vmap_in_axes_length", lambda: jaxon.vmap(lambda x, y: x, in_axes=(0, 0, 0))(_f3, _f3),
     ValueError, r"len\(in_axes\)=3, len\(args\)=2"),
    ("vmap_in_axes_keys", lambda: jaxon.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": _f3}),
     ValueError, r"tree prefix"),
    ("scan_carry_structure", lambda: lax.scan(lambda c, x: ((c, c), x), 0.0, _f3), TypeError,
     r"same pytree structure.*PyTreeDef\(\(\*, \*\)\)"),
    ("scan_carry_dtype", lambda: lax.scan(lambda c, x: (x, x), jnp.int32(0), _f3), TypeError,
     r"int32\[\].*float32\[\]"),
    ("scan_lengths", lambda: lax.scan(lambda c, x: (c, x), 0.0, (_f3, _f4)), ValueError,
     r"different leading axis sizes: 3, 4"),
    ("scan_no_length", lambda: lax.scan(lambda c, x: (c, x), 0.0, None), ValueError,
     r"`length` not provided"),
    ("cond_branch_structures", lambda: lax.cond(True, lambda: 1.0, lambda: (1.0, 2.0)), TypeError,
     r"same type structure"),
    ("cond_branch_dtypes", lambda: lax.cond(True, lambda: jnp.float32(1), lambda: jnp.int32(1)),
     TypeError, r"i32\[\] vs f32\[\]"),
    ("cond_branch_shapes", lambda: lax.cond(True, lambda: _f3, lambda: _f4), TypeError,
     r"f32\[4\] vs f32\[3\]"),
    ("cond_vector_predicate", lambda: lax.cond(jnp.array([True, False]), lambda: 1.0,
                                               lambda: 2.0), TypeError,
     r"Pred must be a scalar.*shape \(2,\).*jnp\.where"),
    ("switch_no_branches", lambda: lax.switch(0, []), ValueError, r"Empty branch sequence"),
    ("while_carry_structure", lambda: lax.while_loop(lambda c: c < 3, lambda c: (c, c), 0),
     TypeError, r"body_fun.*same pytree structure"),
    ("while_float_condition", lambda: lax.while_loop(lambda c: c, lambda c: c - 1, 3.0),
     TypeError, r"boolean scalar.*f32\[\]"),
    ("tree_map_arity", lambda: tree_util.tree_map(lambda a, b: a, (1, 2), (1, 2, 3)), ValueError,
     r"Tuple arity mismatch: 3 != 2"),
    ("tree_map_keys", lambda: tree_util.tree_map(lambda a, b: a, {"a": 1}, {"b": 1}),
     ValueError, r"Dict key mismatch"),
    ("tree_unflatten_leaves", lambda: tree_util.tree_unflatten(
        tree_util.tree_structure((1, 2)), [1]), ValueError, r"expected 2, got 1"),
]

OVERFLOWS = [
    ("array_2_40", lambda: jnp.array(2**40), OverflowError,
     r"Python int 1099511627776 too large to convert to int32"),
    ("asarray_2_40", lambda: jnp.asarray(2**40), OverflowError, r"too large to convert to int32"),
    ("array_list", lambda: jnp.array([1, 2**40]), OverflowError, r"1099511627776"),
    ("array_2_70", lambda: jnp.array(2**70), OverflowError, r"too large to convert to int32"),
    ("array_2_63", lambda: jnp.array(2**63), OverflowError, r"too large to convert to int32"),
    ("array_none", lambda: jnp.array(None), ValueError, r"None is not a valid value"),
    ("array_with_none", lambda: jnp.array([1, None]), ValueError, r"None is not a valid value"),
    ("array_int8_300", lambda: jnp.array(300, jnp.int8), OverflowError,
     r"300 out of bounds for int8"),
    ("int8_300", lambda: jnp.int8(300), OverflowError, r"300 out of bounds for int8"),
    ("uint32_negative", lambda: jnp.uint32(-1), OverflowError, r"-1 out of bounds for uint32"),
    ("int8_array_plus_2_40", lambda: _i8 + 2**40, OverflowError, r"too large to convert to int32"),
    ("float_array_plus_2_40", lambda: _f3 + 2**40, OverflowError, r"1099511627776"),
    ("int_array_times_2_31", lambda: _i3 * 2**31, OverflowError, r"2147483648"),
    ("where_2_40", lambda: jnp.where(_f3 > 0, _i3, 2**40), OverflowError, r"1099511627776"),
    ("maximum_2_40", lambda: jnp.maximum(_i3, 2**40), OverflowError, r"1099511627776"),
    ("left_shift_2_40", lambda: jnp.left_shift(_i3, 2**40), OverflowError, r"1099511627776"),
    ("compare_2_40", lambda: _i3 == 2**40, OverflowError, r"1099511627776"),
    ("index_2_40", lambda: _f3[2**40], OverflowError, r"1099511627776"),
    ("at_set_2_40", lambda: _i8.at[0].set(2**40), OverflowError, r"1099511627776"),
    ("at_add_2_40", lambda: _i3.at[0].add(2**40), OverflowError, r"1099511627776"),
    ("traced_2_40", lambda: jaxon.make_jaxpr(lambda x: x + 2**40)(1), OverflowError,
     r"too large to convert to int32"),
    ("jit_argument_2_40", lambda: jaxon.jit(lambda x: x)(2**40), OverflowError,
     r"1099511627776"),
    ("lax_add_2_33", lambda: lax.add(_i3, 2**33), OverflowError,
     r"8589934592 too large to convert to int32"),
]

PRNG_KEYS = [
    ("normal_key_shape", lambda: random.normal(jnp.ones(3, jnp.uint32), (2,)), TypeError,
     r"normal: `key` must be a PRNG key.*u32\[3\]"),
    ("normal_key_dtype", lambda: random.normal(jnp.ones(2), (2,)), TypeError, r"f32\[2\]"),
    ("normal_int_key", lambda: random.normal(0, (2,)), TypeError, r"PRNG key.*got int"),
    ("split_key_shape", lambda: random.split(jnp.ones(3, jnp.uint32)), TypeError,
     r"split: `key`.*u32\[3\]"),
    ("uniform_int_dtype", lambda: random.uniform(_key, (2,), jnp.int32), ValueError,
     r"`uniform` must be a float dtype, got int32"),
    ("normal_int_dtype", lambda: random.normal(_key, (2,), jnp.int32), ValueError,
     r"`normal` must be a float or complex dtype, got int32"),
    ("randint_float_dtype", lambda: random.randint(_key, (2,), 0, 3, jnp.float32), TypeError,
     r"integer dtypes, got float32"),
    ("bits_float_dtype", lambda: random.bits(_key, (2,), jnp.float32), ValueError,
     r"unsigned int dtype, got float32"),
    ("prngkey_float_seed", lambda: random.PRNGKey(1.5), TypeError,
     r"seed must be an integer.*f(loat)?32"),
    ("prngkey_vector_seed", lambda: random.PRNGKey(jnp.ones(3, jnp.int32)), TypeError,
     r"shape \(3,\)"),
    ("normal_string_shape", lambda: random.normal(_key, "ab"), TypeError,
     r"`shape` must be a sequence of concrete integers, got 'ab'"),
    ("choice_too_many", lambda: random.choice(_key, 3, (5,), replace=False), ValueError,
     r"larger sample \(size 5\) than population \(size 3\)"),
]

VMAP = [
    ("in_axes_out_of_range", lambda: jaxon.vmap(lambda x: x, in_axes=1)(_f3), ValueError,
     r"axis 1.*rank should be at least 2.*shape is \(3,\)"),
    ("in_axes_negative", lambda: jaxon.vmap(lambda x: x, in_axes=-2)(_f3), ValueError,
     r"axis -2.*\(3,\)"),
    ("batch_sizes", lambda: jaxon.vmap(lambda x, y: x + y)(_f3, _f4), ValueError,
     r"inconsistent sizes.*\(3,\).*\(4,\)"),
    ("scalar_argument", lambda: jaxon.vmap(lambda x: x)(1.0), ValueError,
     r"rank should be at least 1.*shape is \(\)"),
    ("nothing_mapped", lambda: jaxon.vmap(lambda x: x, in_axes=None)(_f3), ValueError,
     r"at least one non-None value in in_axes"),
    ("no_arguments", lambda: jaxon.vmap(lambda: 1.0)(), ValueError, r"in_axes"),
    ("mapped_output_out_axes_none", lambda: jaxon.vmap(lambda x: x, out_axes=None)(_f3),
     ValueError, r"mapped output but out_axes is None"),
    ("out_axes_out_of_range", lambda: jaxon.vmap(lambda x: x, out_axes=2)(_f3), ValueError,
     r"axis 2 is out of bounds"),
    ("axis_size_mismatch", lambda: jaxon.vmap(lambda x: x, axis_size=4)(_f3), ValueError,
     r"inconsistent sizes.*axis_size.*4"),
    ("in_axes_float", lambda: jaxon.vmap(lambda x: x, in_axes=0.5), TypeError,
     r"in_axes must be an int, None, or a tuple.*got 0\.5"),
]

AUTODIFF = [
    ("grad_vector_output", lambda: jaxon.grad(lambda x: x)(_f3), TypeError,
     r"scalar-output functions. Output had shape: \(3,\)"),
    ("grad_tuple_output", lambda: jaxon.grad(lambda x: (x, x))(1.0), TypeError,
     r"scalar-output"),
    ("grad_int_input", lambda: jaxon.grad(lambda x: x * 2)(1), TypeError,
     r"argument 0 has dtype int32.*allow_int"),
    ("grad_int_array_input", lambda: jaxon.grad(jnp.sum)(_i3), TypeError, r"dtype int32"),
    ("grad_complex_output", lambda: jaxon.grad(lambda x: x * 1j)(1.0), TypeError,
     r"real-valued outputs.*complex64.*holomorphic=True"),
    ("grad_int_output", lambda: jaxon.grad(lambda x: jnp.int32(1))(1.0), TypeError,
     r"real-valued outputs.*int32"),
    ("grad_argnums_out_of_range", lambda: jaxon.grad(lambda x: x, argnums=2)(1.0), TypeError,
     r"argnums=2 requires at least 3 positional arguments, got 1"),
    ("grad_string_argument", lambda: jaxon.grad(lambda x: x)("a"), TypeError,
     r"'a' of type str is not a valid"),
    ("grad_has_aux_not_pair", lambda: jaxon.grad(lambda x: x, has_aux=True)(1.0), TypeError,
     r"two-element tuple"),
    ("value_and_grad_vector_output", lambda: jaxon.value_and_grad(lambda x: x)(_f3), TypeError,
     r"Output had shape: \(3,\)"),
    ("jacfwd_int_input", lambda: jaxon.jacfwd(lambda x: x)(_i3), TypeError,
     r"jacfwd requires real- or complex-valued inputs.*int32"),
    ("jacrev_int_input", lambda: jaxon.jacrev(lambda x: x)(_i3), TypeError,
     r"jacrev requires.*int32"),
    ("jacfwd_complex_input", lambda: jaxon.jacfwd(jnp.real)(1 + 1j), TypeError,
     r"jacfwd requires real-valued inputs.*complex64.*holomorphic=True"),
    ("linearize_int_tangent", lambda: jaxon.linearize(lambda x: x, 1.0)[1](1), ValueError,
     r"tangent aval int32\[\] for primal aval float32\[\]"),
    ("hessian_int_input", lambda: jaxon.hessian(lambda x: x * x)(2), TypeError, r"int32"),
    ("jvp_tangent_dtype", lambda: jaxon.jvp(lambda x: x, (1.0,), (1,)), TypeError,
     r"primal f32\[\] with tangent i32\[\]"),
    ("jvp_tangent_shape", lambda: jaxon.jvp(lambda x: x, (_f3,), (_f4,)), ValueError,
     r"\(3,\).*\(4,\)"),
    ("jvp_tangent_structure", lambda: jaxon.jvp(lambda x, y: x, (1.0, 2.0), (1.0,)), TypeError,
     r"same tree structure"),
    ("vjp_cotangent_shape", lambda: jaxon.vjp(lambda x: x, _f3)[1](_f4), ValueError,
     r"cotangent.*\(4,\).*\(3,\)"),
    ("vjp_cotangent_dtype", lambda: jaxon.vjp(lambda x: x, _f3)[1](_i3), ValueError,
     r"int32\[3\].*float32\[3\]"),
    ("vjp_cotangent_structure", lambda: jaxon.vjp(lambda x: x, _f3)[1]((_f3, _f3)), ValueError,
     r"tree structure"),
    ("custom_jvp_rule_shape", _custom_jvp_with_bad_rule, TypeError,
     r"Expected float32\[\].*got float32\[3\]"),
]

MISC = [
    ("eye_negative", lambda: jnp.eye(-1), ValueError, r"negative dimensions.*N=-1"),
    ("arange_zero_step", lambda: jnp.arange(0, 3, 0), ZeroDivisionError, r"step must not be zero"),
    ("linspace_negative", lambda: jnp.linspace(0, 1, -1), ValueError,
     r"number of samples, -1, must be non-negative"),
    ("array_ragged", lambda: jnp.array([[1, 2], [3]]), ValueError, r"inhomogeneous shape"),
    ("array_of_object", lambda: jnp.array(object()), TypeError, r"cannot convert object"),
    ("pad_negative_width", lambda: jnp.pad(_f3, -1), ValueError,
     r"pad_width can't contain negative values, got -1"),
    ("pad_unknown_mode", lambda: jnp.pad(_f3, 1, mode="bogus"), NotImplementedError,
     r"mode 'bogus' is not supported; supported modes are constant"),
    ("sort_kind", lambda: jnp.sort(_f3, kind="stable"), TypeError,
     r"'kind' argument to sort.*stable=True"),
    ("argsort_kind", lambda: jnp.argsort(_f3, kind="quicksort"), TypeError,
     r"'kind' argument to argsort"),
    ("ravel_order_k", lambda: jnp.ravel(_f23, order="K"), NotImplementedError, r"order='K'"),
    ("reshape_order", lambda: jnp.reshape(_f23, (3, 2), order="K"), ValueError,
     r"order must be 'C' or 'F', got 'K'"),
    ("round_float_decimals", lambda: jnp.round(_f3, 1.5), TypeError,
     r"decimals must be an int, got 1\.5"),
    ("percentile_method", lambda: jnp.percentile(_f3, 50, method="bogus"), ValueError,
     r"method must be one of.*got 'bogus'"),
    ("einsum_unknown_output", lambda: jnp.einsum("ij->k", _f23), ValueError,
     r"Output character 'k'"),
    ("lax_iota_negative", lambda: lax.iota(jnp.int32, -1), TypeError,
     r"non-negative sizes; the shape of iota is \(-1,\)"),
    ("lax_reduce_window_dimensions", lambda: lax.reduce_window(_f3, 0.0, lax.add, (2, 2), (1,),
                                                               "VALID"), TypeError,
     r"window_dimensions \(2, 2\).*shape is \(3,\)"),
    ("lax_precision_name", lambda: lax.dot_general(
        _f23, _f23, (((1,), (1,)), ((), ())), precision="bad"), ValueError,
     r"precision 'bad' is not one of"),
]

ROWS = SHAPES + DTYPES + AXES + INDICES + TRACERS + STATIC_ARGS + PYTREES + OVERFLOWS + \
    PRNG_KEYS + VMAP + AUTODIFF + MISC


@pytest.mark.parametrize("thunk,error,pattern",
                         [pytest.param(*row[1:], id=row[0]) for row in ROWS])
def test_misuse_raises_jax_error(thunk: Callable, error: type, pattern: str):
  with pytest.raises(error, match="(?s)" + pattern):  # messages span lines
    thunk()


def test_table_is_large_and_unique():
  names = [row[0] for row in ROWS]
  assert len(names) >= 60 and len(set(names)) == len(names)


def test_static_index_out_of_range_is_not_an_error():
  """JAX clamps an out-of-range static index on reads and drops the update on writes."""
  x = jnp.arange(3.0)
  got = jaxon.jit(lambda x: (x[5], x[-4], x.at[5].set(9.0)))(x)
  assert [float(got[0]), float(got[1])] == [2.0, 0.0]
  np.testing.assert_array_equal(got[2], [0.0, 1.0, 2.0])


# ----------------------------------------------------------------------------- Python ints in range

def test_python_ints_within_int32_wrap_around_in_narrow_dtypes():
  """300 fits the int32 a Python int becomes, so with int8 it wraps around (JAX's values)."""
  i8, u8 = jnp.array([1, -2, 100], jnp.int8), jnp.array([1, 2, 200], jnp.uint8)
  got = jaxon.jit(lambda i8, u8: (i8 + 300, u8 + 256, u8 - 1, i8 * -129, i8 - 200,
                                  jnp.full(3, 300, jnp.int8), jnp.full_like(i8, 300),
                                  i8.at[0].set(300)))(i8, u8)
  want = [(np.int8, [45, 42, -112]), (np.uint8, [1, 2, 200]), (np.uint8, [0, 1, 199]),
          (np.int8, [127, 2, -100]), (np.int8, [57, 54, -100]), (np.int8, [44, 44, 44]),
          (np.int8, [44, 44, 44]), (np.int8, [44, -2, 100])]
  for out, (dtype, values) in zip(got, want, strict=True):
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, values)


def test_host_conversions_that_jax_wraps():
  """jnp.full, lax.full and a gather's fill value convert on the host, wrapping (JAX's
  values); a NumPy int64 is converted, not range-checked."""
  assert int(jnp.full((), 2**40)) == 0 and jnp.full((), 2**40).weak_type
  assert int(lax.full((), 300, jnp.int8)) == 44
  assert int(jnp.take(_i8, 5, mode="fill", fill_value=300)) == 44
  assert int(jnp.array(np.int64(2**40))) == 0
  assert jnp.array([1.5, 2**70]).dtype == np.float32


def test_python_int_range_follows_x64(x64):
  assert int(jnp.array(2**40)) == 2**40
  assert int(jnp.zeros((), jnp.int8) + 2**40) == 0
  with pytest.raises(OverflowError, match="too large to convert to int64"):
    jnp.array(2**63)
  with pytest.raises(OverflowError, match="too large to convert to int64"):
    jnp.zeros(3) + 2**64


def test_device_put_to_something_else_than_a_device_or_sharding():
  with pytest.raises(ValueError, match=r"`jax.device_put` only accepts `None`, "
                     r"`jax.sharding.Sharding`, `jax.Device` or a pytree of these values\. "
                     r"Received invalid value: cpu"):
    jaxon.device_put(jnp.ones(2), "cpu")
