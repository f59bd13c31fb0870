"""The type of a mutable array reference, eager refs, and the indexers that address them.

A ref's abstract value `AbstractRef` wraps the aval of the array it holds; jaxprs print it
as `Ref{f32[3]}`. An eager `Ref` owns its current value (an Array) and is updated in place
by the ref primitives' impl rules; under a transformation a ref is a tracer whose aval is
an `AbstractRef`.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import core, dtypes
from jaxon._src.core import ShapedArray


class AbstractRef(core.AbstractValue):
  """The abstract value of a mutable array reference holding values of `inner_aval`."""

  __slots__ = ("inner_aval", "memory_space", "kind")

  def __init__(self, inner_aval: ShapedArray, memory_space: Any = None, kind: Any = None):
    self.inner_aval = inner_aval
    self.memory_space = memory_space
    self.kind = kind

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  ndim = property(lambda self: self.inner_aval.ndim)
  size = property(lambda self: self.inner_aval.size)
  weak_type = property(lambda self: False)

  def update(self, shape: Any = None, dtype: Any = None, weak_type: Any = None) -> AbstractRef:
    """A ref's type is never weak (jaxprs stage closed-over refs through this)."""
    if shape is None and dtype is None:
      return self
    return AbstractRef(self.inner_aval.update(shape, dtype), self.memory_space, self.kind)

  def strip_weak_type(self) -> AbstractRef:
    return self

  def to_tangent_aval(self) -> AbstractRef:
    return AbstractRef(self.inner_aval.to_tangent_aval(), self.memory_space, self.kind)

  def str_short(self, short_dtypes: bool = True) -> str:
    return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

  def __eq__(self, other: object) -> bool:
    return (type(other) is AbstractRef and self.inner_aval == other.inner_aval
            and self.memory_space == other.memory_space and self.kind == other.kind)

  def __hash__(self) -> int:
    return hash((self.inner_aval, self.memory_space, self.kind))

  def __repr__(self) -> str:
    return f"Ref{{{self.inner_aval.str_short(short_dtypes=False)}}}"

  __str__ = __repr__


def is_ref(x: Any) -> bool:
  """Whether `x` (an eager Ref or a tracer) is a mutable array reference."""
  if type(x) is Ref:
    return True
  return isinstance(x, core.Tracer) and type(x.aval) is AbstractRef


class Ref:
  """A mutable array reference made by `new_ref`: `ref[idx]` reads, `ref[idx] = v`
  writes (and `ref[idx] += v` reads then writes), `freeze(ref)` gives its final value.

  Reads and writes go through the ref primitives, so the same code works eagerly, under
  `jit` (the caller's ref is updated when the compiled program returns) and under the
  other transformations."""

  __slots__ = ("_aval", "_value", "__weakref__")

  def __init__(self, aval: AbstractRef, value: Any):
    self._aval = aval
    self._value = value

  aval = property(lambda self: self._aval)
  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  ndim = property(lambda self: self._aval.ndim)
  size = property(lambda self: self._aval.size)
  weak_type = property(lambda self: False)

  def __len__(self) -> int:
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __getitem__(self, idx: Any) -> Any:
    return _ops.get(self, idx)

  def __setitem__(self, idx: Any, value: Any) -> None:
    _ops.set(self, idx, value)

  def get(self, idx: Any = None) -> Any:
    return _ops.get(self, idx)

  def set(self, value: Any, idx: Any = None) -> None:
    _ops.set(self, idx, value)

  def swap(self, value: Any, idx: Any = None) -> Any:
    return _ops.swap(self, idx, value)

  def addupdate(self, value: Any, idx: Any = None) -> None:
    _ops.addupdate(self, idx, value)

  def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
    return np.asarray(self._value, dtype)

  def __repr__(self) -> str:
    return "Ref" + repr(self._value).removeprefix("Array")

  def __hash__(self) -> int:
    return id(self)

  def __eq__(self, other: object) -> bool:
    return self is other


class _RefOps:
  """The read/write functions `Ref` calls, set by `state.primitives` (a module that needs
  lax, which this type module does not import)."""

  get: Any
  set: Any
  swap: Any
  addupdate: Any


_ops = _RefOps()
core.register_aval_handler(Ref, lambda r: r._aval)


# ----------------------------------------------------------------------------- indexers


class Slice(NamedTuple):
  """`ds(start, size, stride)`: `size` elements from `start` (which may be traced),
  `stride` apart. Indexing a ref (or an array) with it reads a window of static size."""

  start: Any
  size: int
  stride: int = 1


def ds(start: Any, size: int | None = None, stride: int | None = None) -> slice | Slice:
  """A dynamic slice: `ds(start, size)` selects `size` elements from `start`; with only
  one argument, `ds(n)` is the first `n` elements. `None` everywhere is the whole axis."""
  if start is None:
    return slice(None, None, stride)
  if size is None:
    start, size = 0, start
  if isinstance(size, core.Tracer):
    raise TypeError("ds: `size` must be a static Python int; a traced size gives a window "
                    "whose shape is unknown when tracing.")
  return Slice(start, int(size), 1 if stride is None else int(stride))


# A normalized indexer is a tuple with one entry per dimension of the ref:
#   ("int",)                a scalar integer index, read from the next index operand;
#   ("slice", start, size, stride)   a window with static bounds;
#   ("dslice", size, stride)         a window whose start is the next index operand.
# The index operands (Python ints stage as literals) follow the ref in the equation.
Indexer = tuple[tuple[Any, ...], ...]


def _static_int(x: Any) -> int | None:
  if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
    return int(x)
  return None


def normalize_index(idx: Any, shape: tuple[int, ...]) -> tuple[Indexer, list[Any]]:
  """(indexer, index operands) for `ref[idx]` on a ref of `shape`; NumPy's basic indexing
  (ints, slices, `...`) plus `ds` windows and scalar integer arrays."""
  if idx is None or idx is Ellipsis:
    idx = ()
  elif not isinstance(idx, tuple):
    idx = (idx,)
  if sum(i is Ellipsis for i in idx) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  if any(i is Ellipsis for i in idx):
    k = next(j for j, i in enumerate(idx) if i is Ellipsis)
    n_fill = len(shape) - (len(idx) - 1)
    idx = (*idx[:k], *[slice(None)] * max(n_fill, 0), *idx[k + 1:])
  if len(idx) > len(shape):
    raise IndexError(f"too many indices for ref: ref is {len(shape)}-dimensional, but "
                     f"{len(idx)} were indexed")
  idx = (*idx, *[slice(None)] * (len(shape) - len(idx)))
  indexer, operands = [], []
  for axis, (i, n) in enumerate(zip(idx, shape)):
    if isinstance(i, slice):
      start, stop, stride = i.indices(n)
      if stride < 1:
        raise NotImplementedError("ref indexing supports only positive slice strides")
      size = max(0, math.ceil((stop - start) / stride))
      indexer.append(("slice", start, size, stride))
    elif isinstance(i, Slice):
      start = _static_int(i.start)
      if i.size > n:
        raise ValueError(f"ds window of size {i.size} does not fit axis {axis} of size {n}")
      if start is not None:
        indexer.append(("slice", start, i.size, i.stride))
      else:
        indexer.append(("dslice", i.size, i.stride))
        operands.append(_index_operand(i.start))
    else:
      static = _static_int(i)
      if static is not None:
        if not -n <= static < n:
          raise IndexError(f"index {static} is out of bounds for axis {axis} with size {n}")
        i = static + n if static < 0 else static
      indexer.append(("int",))
      operands.append(_index_operand(i))
  return tuple(indexer), operands


def _index_operand(i: Any) -> Any:
  if type(i) is int:
    return i
  aval = core.get_aval(i)
  if aval.shape != () or not dtypes.is_integer(aval.dtype):
    raise TypeError(f"ref indices must be integer scalars, slices, `...` or `ds(...)`; got "
                    f"a value of type {aval.str_short()} (indexing a ref with integer "
                    "arrays is not supported)")
  return i


def indexed_shape(indexer: Indexer, shape: tuple[int, ...]) -> tuple[int, ...]:
  if not indexer:
    return shape
  return tuple(e[2] if e[0] == "slice" else e[1] for e in indexer if e[0] != "int")


def jaxpr_uses_refs(jaxpr: core.Jaxpr) -> bool:
  """Whether `jaxpr` (or a jaxpr inside it) takes, makes or reads a ref."""
  for v in (*jaxpr.constvars, *jaxpr.invars):
    if type(v.aval) is AbstractRef:
      return True
  for eqn in jaxpr.eqns:
    if any(type(v.aval) is AbstractRef for v in (*eqn.invars, *eqn.outvars)):
      return True
    if any(jaxpr_uses_refs(j.jaxpr if isinstance(j, core.ClosedJaxpr) else j)
           for j in core.jaxprs_in(eqn.params)):
      return True
  return False
