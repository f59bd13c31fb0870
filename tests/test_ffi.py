"""`jaxon.ffi`: foreign functions called through XLA's typed FFI.

One test compiles a real handler (C, against the headers `include_dir()` points at) and
runs it eagerly, under jit and under vmap; it is skipped only where no C compiler exists.
The others need no compiler: argument checks, the printed jaxpr and the lowered custom
call (compared with JAX 0.10.2's), and how each `vmap_method` batches."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import jaxon
import jaxon.numpy as jnp
from jaxon import ffi

# y = alpha * x for a float32 buffer x and a float32 attribute alpha, written against
# XLA's FFI C API. A handler answers XLA's metadata query (the FFI version it was built
# for) before it is ever executed.
SCALE_HANDLER = r"""
#include <stddef.h>
#include <stdint.h>
#include "xla/ffi/api/c_api.h"

XLA_FFI_Error* Scale(XLA_FFI_CallFrame* frame) {
  XLA_FFI_Extension_Base* ext = frame->extension_start;
  if (ext != NULL && ext->type == XLA_FFI_Extension_Metadata) {
    XLA_FFI_Metadata* meta = ((XLA_FFI_Metadata_Extension*)ext)->metadata;
    meta->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
    meta->api_version.extension_start = NULL;
    meta->api_version.major_version = XLA_FFI_API_MAJOR;
    meta->api_version.minor_version = XLA_FFI_API_MINOR;
    meta->traits = 0;
    return NULL;
  }
  XLA_FFI_Buffer* x = (XLA_FFI_Buffer*)frame->args.args[0];
  XLA_FFI_Buffer* y = (XLA_FFI_Buffer*)frame->rets.rets[0];
  float alpha = *(float*)((XLA_FFI_Scalar*)frame->attrs.attrs[0])->value;
  int64_t n = 1;
  for (int64_t d = 0; d < x->rank; ++d) n *= x->dims[d];
  for (int64_t i = 0; i < n; ++i) ((float*)y->data)[i] = alpha * ((const float*)x->data)[i];
  return NULL;
}
"""


def _c_compiler() -> str | None:
  return next((c for c in (os.environ.get("CC"), "cc", "gcc", "clang") if c and shutil.which(c)),
              None)


def _scale(x, alpha, vmap_method="expand_dims"):
  return ffi.ffi_call("jaxon_test_scale", jaxon.ShapeDtypeStruct(x.shape, x.dtype),
                      vmap_method=vmap_method)(x, alpha=np.float32(alpha))


def test_a_compiled_handler_runs_eagerly_under_jit_and_vmap(tmp_path):
  compiler = _c_compiler()
  if compiler is None:
    pytest.skip("no C compiler (cc, gcc or clang) on this machine to build an FFI handler")
  source = tmp_path / "scale.c"
  source.write_text(SCALE_HANDLER)
  library = tmp_path / "libscale.so"
  subprocess.run([compiler, "-O1", "-shared", "-fPIC", f"-I{ffi.include_dir()}",
                  str(source), "-o", str(library)], check=True, capture_output=True)
  ffi.register_ffi_target("jaxon_test_scale",
                          ffi.pycapsule(ctypes.cdll.LoadLibrary(str(library)).Scale))
  x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
  expected = 2.0 * np.arange(6.0, dtype=np.float32).reshape(2, 3)
  np.testing.assert_array_equal(_scale(x, 2.0), expected)

  @jaxon.jit
  def batched(x):
    return (jaxon.vmap(lambda r: _scale(r, 2.0))(x),
            jaxon.vmap(lambda r: _scale(r, 2.0, "sequential"))(x), _scale(x, 3.0))
  by_expand_dims, by_sequence, thrice = batched(x)
  np.testing.assert_array_equal(by_expand_dims, expected)
  np.testing.assert_array_equal(by_sequence, expected)
  np.testing.assert_array_equal(thrice, 1.5 * expected)
  with pytest.raises(ValueError, match="cannot be differentiated"):
    jaxon.grad(lambda x: _scale(x, 2.0).sum())(x)


def test_ffi_call_prints_and_lowers_as_jax():
  def f(x):
    return ffi.ffi_call("foo", jaxon.ShapeDtypeStruct(x.shape, x.dtype),
                        vmap_method="expand_dims")(x, alpha=np.float32(2.0), n=3, name="s")
  x = jnp.ones((2, 3))
  # Printed by JAX 0.10.2 for the same call.
  assert str(jaxon.make_jaxpr(f)(x)) == """\
{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = ffi_call[
      attributes=(('alpha', np.float32(2.0)), ('n', 3), ('name', 's'))
      custom_call_api_version=4
      has_side_effect=False
      input_layouts=((1, 0),)
      input_output_aliases=()
      legacy_backend_config=None
      output_layouts=((1, 0),)
      result_avals=(ShapedArray(float32[2,3]),)
      target_name=foo
      vmap_method=expand_dims
    ] a
  in (b,) }"""
  # The custom call of JAX 0.10.2's lowering: typed-FFI attributes in mhlo.backend_config.
  text = jaxon.jit(f).lower(x).as_text()
  assert ('stablehlo.custom_call @foo(%arg0) {backend_config = "", mhlo.backend_config = '
          '{alpha = 2.000000e+00 : f32, n = 3 : i64, name = "s"}, operand_layouts = '
          '[dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[1, 0]> : '
          'tensor<2xindex>]} : (tensor<2x3xf32>) -> tensor<2x3xf32>') in text
  batched = jaxon.make_jaxpr(jaxon.vmap(f))(jnp.ones((4, 2, 3)))
  assert "input_layouts=((2, 1, 0),)" in str(batched)
  assert "result_avals=(ShapedArray(float32[4,2,3]),)" in str(batched)


def test_side_effects_layouts_and_several_results():
  def g(x):
    return ffi.ffi_call("foo", (jaxon.ShapeDtypeStruct(x.shape, x.dtype),
                                jaxon.ShapeDtypeStruct((), jnp.int32)),
                        has_side_effect=True, input_layouts=[(1, 0)],
                        output_layouts=[None, None])(x, cfg={"a": np.int32(1)})

  def discards(x):
    g(x)
    return x
  text = jaxon.jit(discards).lower(jnp.ones((2, 3))).as_text()
  # Kept although its results are unused; input_layouts are major-to-minor: (1, 0) is
  # column-major, minor-to-major [0, 1] for XLA.
  assert "has_side_effect = true" in text and "dense<[0, 1]>" in text
  # A dict attribute (a struct) lowers as a dictionary and prints as JAX 0.10.2 prints it.
  assert "mhlo.backend_config = {cfg = {a = 1 : i32}}" in text
  assert "attributes=(('cfg', FrozenDict({'a': np.int32(1)})),)" in str(
      jaxon.make_jaxpr(g)(jnp.ones((2, 3))))
  out = jaxon.eval_shape(g, jnp.ones((2, 3)))
  assert isinstance(out, tuple) and out[1].shape == () and out[1].dtype == jnp.int32


@pytest.mark.parametrize("method,expected_arg_shape", [
    ("expand_dims", "f32[1,3]"), ("broadcast_all", "f32[4,3]"),
    ("legacy_vectorized", "f32[3]"), ("sequential", "scan")])
def test_vmap_method_decides_how_unbatched_arguments_are_passed(method, expected_arg_shape):
  def f(x, y):
    return ffi.ffi_call("foo", jaxon.ShapeDtypeStruct(x.shape, x.dtype),
                        vmap_method=method)(x, y)
  text = str(jaxon.make_jaxpr(jaxon.vmap(f, in_axes=(0, None)))(jnp.ones((4, 3)),
                                                                  jnp.ones(3)))
  assert expected_arg_shape in text


def test_bad_arguments_raise_early():
  x = jnp.ones(3)
  sds = jaxon.ShapeDtypeStruct((3,), jnp.float32)
  with pytest.raises(ValueError, match="vmap_method must be on of"):
    ffi.ffi_call("foo", sds, vmap_method="vectorized")
  with pytest.raises(ValueError, match="legacy_backend_config"):
    ffi.ffi_call("foo", sds, legacy_backend_config="cfg")
  with pytest.raises(ValueError, match="must have 'shape' and 'dtype'"):
    ffi.ffi_call("foo", [3])
  with pytest.raises(ValueError, match=r"number of input arguments \(1\) must equal"):
    ffi.ffi_call("foo", sds, input_layouts=[None, None])(x)
  with pytest.raises(ValueError, match="different abstract value"):
    ffi.ffi_call("foo", sds, input_output_aliases={0: 0})(jnp.ones(4))
  with pytest.raises(TypeError, match="Non-hashable keyword argument"):
    ffi.ffi_call("foo", sds)(x, cfg=[1, 2])
  with pytest.raises(NotImplementedError, match="vmap_method"):
    jaxon.vmap(ffi.ffi_call("foo", sds))(jnp.ones((2, 3)))
  with pytest.raises(ValueError, match="not supported after jaxlib"):
    ffi.register_ffi_type_id("t", None)
  assert os.path.isfile(os.path.join(ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))
