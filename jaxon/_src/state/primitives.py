"""The ref primitives, each with all of its rules: `new_ref`, `empty_ref`, `free_ref`,
`freeze`, and the indexed `get`, `swap` and `addupdate`.

None of them is lowered: a program that uses refs is discharged into a functional one
before compilation (`state.discharge`). Their effect on values is written once, as the
functional `read_window`/`write_window` below, which the eager impls apply to a `Ref`'s
value and the discharge applies to the traced value a ref stands for.

Differentiation: a ref made under `jvp` is a JVP tracer whose tangent is a `TangentCell`,
a mutable holder of the tangent of the ref's whole value. Reads and writes update it with
ordinary (linear) lax ops, so linearization and transposition never see a ref.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src import pretty_printer as pp
from jaxon._src.core import DropVar, JaxprEqn, PrintContext, ShapedArray
from jaxon._src.interpreters import ad, batching
from jaxon._src.interpreters.batching import not_mapped
from jaxon._src.lax import lax, shape_ops, slicing
from jaxon._src.state import types
from jaxon._src.state.types import AbstractRef, Indexer, Ref

new_ref_p = core.Primitive("new_ref")
empty_ref_p = core.Primitive("empty_ref")
free_ref_p = core.Primitive("free_ref")
free_ref_p.multiple_results = True
freeze_p = core.Primitive("freeze")
get_p = core.Primitive("get")
swap_p = core.Primitive("swap")
addupdate_p = core.Primitive("addupdate")
addupdate_p.multiple_results = True
REF_PRIMITIVES = (new_ref_p, empty_ref_p, free_ref_p, freeze_p, get_p, swap_p, addupdate_p)
for _p in REF_PRIMITIVES:
  _p.effectful = True  # the order of reads and writes is the program: DCE keeps them


# ----------------------------------------------------------------------------- values


def _window(indexer: Indexer, shape: Sequence[int], idx: Sequence[Any]
            ) -> tuple[list[Any], list[int], list[int], list[int]]:
  """(start per axis, span per axis, stride per axis, axes indexed by an int)."""
  operands = iter(idx)
  starts, spans, strides, int_axes = [], [], [], []
  for axis, entry in enumerate(indexer or [("slice", 0, n, 1) for n in shape]):
    if entry[0] == "int":
      starts.append(next(operands))
      spans.append(1)
      strides.append(1)
      int_axes.append(axis)
    else:
      start, size, stride = ((entry[1], entry[2], entry[3]) if entry[0] == "slice"
                             else (next(operands), entry[1], entry[2]))
      starts.append(start)
      spans.append((size - 1) * stride + 1 if size else 0)
      strides.append(stride)
  return starts, spans, strides, int_axes


def _start_operands(starts: Sequence[Any]) -> list[Any]:
  return [lax._convert_element_type(s, np.int32) if type(s) is not int else s
          for s in starts]


def read_window(x: Any, indexer: Indexer, idx: Sequence[Any]) -> Any:
  """`x[indexer]`: the value a `get` reads from a ref holding `x`."""
  if not indexer:
    return x
  starts, spans, strides, int_axes = _window(indexer, np.shape(x), idx)
  y = slicing.dynamic_slice(x, _start_operands(starts), spans)
  if any(s != 1 for s in strides):
    y = slicing.slice(y, [0] * len(spans), spans, strides)
  return shape_ops.squeeze(y, int_axes) if int_axes else y


def write_window(x: Any, indexer: Indexer, idx: Sequence[Any], value: Any) -> Any:
  """`x` with `x[indexer]` replaced by `value` (which has the indexed shape)."""
  if not indexer:
    return value
  starts, spans, strides, int_axes = _window(indexer, np.shape(x), idx)
  if any(s != 1 for s in strides):
    raise NotImplementedError("writing to a ref through a strided slice is not supported")
  if int_axes:
    value = shape_ops.expand_dims(value, int_axes)
  return slicing.dynamic_update_slice(x, value, _start_operands(starts))


def _as_ref_value(value: Any, aval: ShapedArray, indexer: Indexer, op: str) -> Any:
  """`value` in the ref's dtype, checked against the indexed shape (JAX's errors)."""
  v_aval = core.get_aval(value)
  expected = types.indexed_shape(indexer, aval.shape)
  if v_aval.shape != expected:
    raise ValueError(f"Invalid shape for `{op}`. Ref shape: {aval.shape}. Expected shape: "
                     f"{expected}. Value shape: {v_aval.shape}.")
  if v_aval.dtype != aval.dtype and not v_aval.weak_type:
    raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {aval.dtype}. Value dtype: "
                     f"{v_aval.dtype}.")
  if v_aval.dtype != aval.dtype or v_aval.weak_type:
    return lax._convert_element_type(value, aval.dtype, False)
  return value


# ----------------------------------------------------------------------------- the API


def _check_ref(ref: Any, fn: str) -> AbstractRef:
  if not types.is_ref(ref):
    raise TypeError(f"{fn} expects a mutable array reference (made by jax.new_ref), got "
                    f"{type(ref).__name__}")
  return core.get_aval(ref)


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
  """A new mutable array reference holding `init_val`."""
  if types.is_ref(init_val):
    raise TypeError("new_ref: the initial value is already a ref; read it with ref[...]")
  return new_ref_p.bind(init_val, memory_space=memory_space, kind=kind)


def empty_ref(ty: Any, memory_space: Any = None) -> Ref:
  """A ref of type `ty` (anything with `shape` and `dtype`) whose contents are unset."""
  aval = ShapedArray(ty.shape, dtypes.canonicalize_dtype(ty.dtype))
  return empty_ref_p.bind(ty=aval, memory_space=memory_space)


def free_ref(ref: Any) -> None:
  """Ends `ref`'s life: a hint that its buffer may be reused."""
  _check_ref(ref, "free_ref")
  free_ref_p.bind(ref)


def freeze(ref: Any) -> Any:
  """The final value of `ref`, as an immutable array; `ref` must not be used after."""
  _check_ref(ref, "freeze")
  return freeze_p.bind(ref)


def get(ref: Any, idx: Any = None) -> Any:
  """`ref[idx]`."""
  aval = _check_ref(ref, "get")
  indexer, operands = types.normalize_index(idx, aval.shape)
  return get_p.bind(ref, *operands, indexer=_trivial(indexer, aval.shape))


def swap(ref: Any, idx: Any, value: Any, _function_name: str = "ref_swap") -> Any:
  """Writes `value` at `ref[idx]` and returns what was there."""
  aval = _check_ref(ref, _function_name)
  indexer, operands = types.normalize_index(idx, aval.shape)
  value = _as_ref_value(value, aval.inner_aval, indexer, "swap")
  return swap_p.bind(ref, *operands, value, indexer=_trivial(indexer, aval.shape))


def set(ref: Any, idx: Any, value: Any) -> None:  # noqa: A001 (JAX's name)
  """`ref[idx] = value`."""
  swap(ref, idx, value, "ref_set")


def addupdate(ref: Any, idx: Any, x: Any) -> None:
  """`ref[idx] += x`, as one operation (linear in `x`)."""
  aval = _check_ref(ref, "addupdate")
  indexer, operands = types.normalize_index(idx, aval.shape)
  x = _as_ref_value(x, aval.inner_aval, indexer, "addupdate")
  addupdate_p.bind(ref, *operands, x, indexer=_trivial(indexer, aval.shape))


def _trivial(indexer: Indexer, shape: Sequence[int]) -> Indexer:
  """The whole-ref indexer is `()` (printed `ref[...]`)."""
  whole = all(e == ("slice", 0, n, 1) for e, n in zip(indexer, shape))
  return () if whole else indexer


types._ops.get, types._ops.set, types._ops.swap = get, set, swap
types._ops.addupdate = addupdate


# ----------------------------------------------------------------------------- impls


def _new_ref_impl(x: Any, *, memory_space: Any, kind: Any) -> Ref:
  aval = _new_ref_abstract_eval(core.get_aval(x), memory_space=memory_space, kind=kind)
  return Ref(aval, lax._convert_element_type(x, aval.dtype, False))


def _empty_ref_impl(*, ty: ShapedArray, memory_space: Any) -> Ref:
  return Ref(AbstractRef(ty, memory_space), lax.full(ty.shape, 0, ty.dtype))


def _get_impl(ref: Ref, *idx: Any, indexer: Indexer) -> Any:
  return read_window(ref._value, indexer, idx)


def _swap_impl(ref: Ref, *args: Any, indexer: Indexer) -> Any:
  *idx, value = args
  old = read_window(ref._value, indexer, idx)
  ref._value = write_window(ref._value, indexer, idx, value)
  return old


def _addupdate_impl(ref: Ref, *args: Any, indexer: Indexer) -> list[Any]:
  *idx, value = args
  new = lax.add(read_window(ref._value, indexer, idx), value)
  ref._value = write_window(ref._value, indexer, idx, new)
  return []


new_ref_p.def_impl(_new_ref_impl)
empty_ref_p.def_impl(_empty_ref_impl)
free_ref_p.def_impl(lambda ref: [])
freeze_p.def_impl(lambda ref: ref._value)
get_p.def_impl(_get_impl)
swap_p.def_impl(_swap_impl)
addupdate_p.def_impl(_addupdate_impl)


# ----------------------------------------------------------------------------- types


def _new_ref_abstract_eval(aval: ShapedArray, *, memory_space: Any, kind: Any
                           ) -> AbstractRef:
  return AbstractRef(ShapedArray(aval.shape, aval.dtype), memory_space, kind)


def _get_abstract_eval(ref: AbstractRef, *idx: ShapedArray, indexer: Indexer
                       ) -> ShapedArray:
  return ShapedArray(types.indexed_shape(indexer, ref.shape), ref.dtype)


new_ref_p.def_abstract_eval(_new_ref_abstract_eval)
empty_ref_p.def_abstract_eval(lambda *, ty, memory_space: AbstractRef(ty, memory_space))
free_ref_p.def_abstract_eval(lambda ref: [])
freeze_p.def_abstract_eval(lambda ref: ref.inner_aval)
get_p.def_abstract_eval(_get_abstract_eval)
swap_p.def_abstract_eval(lambda ref, *args, indexer: _get_abstract_eval(ref, indexer=indexer))
addupdate_p.def_abstract_eval(lambda ref, *args, indexer: [])


# ----------------------------------------------------------------------------- jvp


class TangentCell:
  """The tangent of a differentiated ref's whole value (an `ad.Zero` until written)."""

  __slots__ = ("value",)

  def __init__(self, value: Any):
    self.value = value

  def read(self, indexer: Indexer, idx: Sequence[Any], out_aval: ShapedArray) -> Any:
    if type(self.value) is ad.Zero:
      return ad.Zero(out_aval.to_tangent_aval())
    return read_window(self.value, indexer, idx)

  def write(self, indexer: Indexer, idx: Sequence[Any], tangent: Any) -> None:
    if type(self.value) is ad.Zero and type(tangent) is ad.Zero:
      return
    self.value = write_window(ad.instantiate_zeros(self.value), indexer, idx,
                              ad.instantiate_zeros(tangent))


def _cell(tangent: Any, value_tangent: Any = None) -> TangentCell | None:
  """The tangent cell of a ref operand; None for a ref made outside the differentiated
  function, which may take only values that carry no tangent (JAX's error)."""
  if type(tangent) is TangentCell:
    return tangent
  if value_tangent is not None and type(value_tangent) is not ad.Zero:
    raise Exception("performing a set/swap operation with a differentiated value on a "  # noqa: TRY002
                    "non-differentiated array reference. Move the array reference to be "
                    "an argument of the differentiated function?")
  return None


def _new_ref_hook(primitive: core.Primitive, trace: core.Trace, args: Sequence[Any],
                  params: dict) -> Any:
  """A ref made under `jvp` gets a tangent cell, and one made under `vmap` a batch axis,
  even when its initial value has a zero tangent or is unbatched: later writes may bring
  tangents or per-example values. The traces' shortcuts for operands that carry neither
  must not apply, so this runs before them."""
  if isinstance(trace, batching.BatchTrace):
    value, dim = trace.to_batch_info(args[0])
    with core.set_current_trace(trace.parent):
      ref = primitive.bind(batching.bdim_at_front(value, dim, trace.axis_size), **params)
    return batching.BatchTracer(trace, ref, 0)
  if not isinstance(trace, ad.JVPTrace):
    return trace.process_primitive(primitive, args, params)
  primal, tangent = trace.to_primal_tangent(args[0])
  with core.set_current_trace(trace.parent):
    ref = primitive.bind(primal, **params)
  if not dtypes.is_inexact(core.get_aval(ref).dtype):
    return ref
  return ad.JVPTracer(trace, ref, TangentCell(tangent))


def _get_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, indexer: Indexer
             ) -> tuple[Any, Any]:
  ref, *idx = primals
  out = get_p.bind(ref, *idx, indexer=indexer)
  cell = _cell(tangents[0])
  return out, (cell.read(indexer, idx, core.get_aval(out)) if cell else
               ad.Zero.from_primal_value(out))


def _swap_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, indexer: Indexer
              ) -> tuple[Any, Any]:
  ref, *idx, value = primals
  cell = _cell(tangents[0], tangents[-1])
  old = swap_p.bind(ref, *idx, value, indexer=indexer)
  if cell is None:
    return old, ad.Zero.from_primal_value(old)
  old_tangent = cell.read(indexer, idx, core.get_aval(old))
  cell.write(indexer, idx, tangents[-1])
  return old, old_tangent


def _addupdate_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, indexer: Indexer
                   ) -> tuple[list[Any], list[Any]]:
  ref, *idx, value = primals
  cell = _cell(tangents[0], tangents[-1])
  addupdate_p.bind(ref, *idx, value, indexer=indexer)
  if cell is not None and type(tangents[-1]) is not ad.Zero:
    current = cell.read(indexer, idx, core.get_aval(value))
    cell.write(indexer, idx, ad.add_tangents(current, tangents[-1]))
  return [], []


def _freeze_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
  out = freeze_p.bind(primals[0])
  cell = _cell(tangents[0])
  return out, cell.value if cell else ad.Zero.from_primal_value(out)


new_ref_p.bind_hook = _new_ref_hook
ad.primitive_jvps[get_p] = _get_jvp
ad.primitive_jvps[swap_p] = _swap_jvp
ad.primitive_jvps[addupdate_p] = _addupdate_jvp
ad.primitive_jvps[freeze_p] = _freeze_jvp
ad.primitive_jvps[free_ref_p] = lambda primals, tangents: (free_ref_p.bind(*primals), [])


# ----------------------------------------------------------------------------- batching
# A batched ref holds its batch axis first. Reads and writes of a batched ref address
# every member (a leading whole-axis window); index operands must be unbatched.


def _batched_indexer(indexer: Indexer, ref: Any, size: int) -> Indexer:
  full = indexer or tuple(("slice", 0, n, 1) for n in core.get_aval(ref).shape[1:])
  return (("slice", 0, size, 1), *full)


def _check_unbatched_indices(dims: Sequence[Any], op: str) -> None:
  if any(d is not not_mapped for d in dims):
    raise NotImplementedError(f"vmap of a ref {op} at batched (per-example) indices is "
                              "not supported; index with unbatched values")


def _unbatched_ref_error(op: str) -> Exception:
  return Exception(f"performing a {op} operation with vmapped value on an unbatched array "  # noqa: TRY002
                   "reference. Move the array reference to be an argument to the vmapped "
                   "function?")


def _get_batch(axis_data: batching.AxisData, vals: Sequence[Any], dims: Sequence[Any], *,
               indexer: Indexer) -> tuple[Any, Any]:
  ref, *idx = vals
  _check_unbatched_indices(dims[1:], "read")
  return get_p.bind(ref, *idx, indexer=_batched_indexer(indexer, ref, axis_data.size)), 0


def _swap_batch(axis_data: batching.AxisData, vals: Sequence[Any], dims: Sequence[Any], *,
                indexer: Indexer) -> tuple[Any, Any]:
  ref, *idx, value = vals
  _check_unbatched_indices(dims[1:-1], "write")
  if dims[0] is not_mapped:
    raise _unbatched_ref_error("set/swap")
  value = batching.bdim_at_front(value, dims[-1], axis_data.size)
  return swap_p.bind(ref, *idx, value,
                     indexer=_batched_indexer(indexer, ref, axis_data.size)), 0


def _addupdate_batch(axis_data: batching.AxisData, vals: Sequence[Any], dims: Sequence[Any],
                     *, indexer: Indexer) -> tuple[list[Any], list[Any]]:
  ref, *idx, value = vals
  _check_unbatched_indices(dims[1:-1], "addupdate")
  if dims[0] is not_mapped:
    raise _unbatched_ref_error("addupdate")
  value = batching.bdim_at_front(value, dims[-1], axis_data.size)
  addupdate_p.bind(ref, *idx, value, indexer=_batched_indexer(indexer, ref, axis_data.size))
  return [], []


batching.fancy_primitive_batchers[get_p] = _get_batch
batching.fancy_primitive_batchers[swap_p] = _swap_batch
batching.fancy_primitive_batchers[addupdate_p] = _addupdate_batch
batching.fancy_primitive_batchers[freeze_p] = lambda axis_data, vals, dims: (
    freeze_p.bind(vals[0]), dims[0])
batching.fancy_primitive_batchers[free_ref_p] = lambda axis_data, vals, dims: (
    free_ref_p.bind(vals[0]), [])


# ----------------------------------------------------------------------------- printing
# JAX's forms: `c:f32[3] <- b[1:3,0]`, `b[0] <- v`, `x:f32[], b[0] <- b[0], v`, `b[0] += v`.


def pp_indexer(ref_name: str, indexer: Indexer, shape: Sequence[int], idx: Sequence[str]
               ) -> str:
  if not indexer:
    return f"{ref_name}[...]"
  operands = iter(idx)
  parts = []
  for entry, n in zip(indexer, shape):
    if entry[0] == "int":
      parts.append(next(operands))
    elif entry[0] == "dslice":
      start = next(operands)
      parts.append(f"{start}:{start}+{entry[1]}" + (f":{entry[2]}" if entry[2] != 1 else ""))
    else:
      _, start, size, stride = entry
      stop = start + (size - 1) * stride + 1 if size else start
      text = (str(start) if start else "") + ":" + (str(stop) if stop != n else "")
      parts.append(text + (f":{stride}" if stride != 1 else ""))
  return f"{ref_name}[{','.join(parts)}]"


def _pp_ref_eqn(eqn: JaxprEqn, context: PrintContext) -> pp.Doc:
  eqn_dtypes = [a.aval.dtype for a in (*eqn.invars, *eqn.outvars)
                if type(a) is not core.Literal]
  ref, *rest = [context.atom(a, eqn_dtypes) for a in eqn.invars]
  has_value = eqn.primitive is not get_p
  idx, value = (rest[:-1], rest[-1]) if has_value else (rest, None)
  target = pp_indexer(ref, eqn.params["indexer"], eqn.invars[0].aval.shape, idx)
  if eqn.primitive is addupdate_p:
    return pp.text(f"{target} += {value}")
  if eqn.primitive is get_p:
    return pp.concat([core.pp_binders(eqn.outvars, context), pp.text(f" <- {target}")])
  if isinstance(eqn.outvars[0], DropVar):
    return pp.text(f"{target} <- {value}")
  return pp.concat([core.pp_binders(eqn.outvars, context),
                    pp.text(f", {target} <- {target}, {value}")])


def _pp_empty_ref(eqn: JaxprEqn, context: PrintContext) -> pp.Doc:
  ty = eqn.params["ty"]
  params = {"memory_space": eqn.params["memory_space"],
            "ty": ty.str_short(short_dtypes=False)}
  return pp.concat([core.pp_binders(eqn.outvars, context), pp.text(" = empty_ref"),
                    core.pp_params(params, context), pp.text(" ")])


for _p in (get_p, swap_p, addupdate_p):
  core.pp_eqn_rules[_p] = _pp_ref_eqn
core.pp_eqn_rules[empty_ref_p] = _pp_empty_ref
