"""Dot algorithms: a `precision=` for `dot_general` that names the types a product is
computed in, rather than a speed/accuracy level (`Precision`).

A `DotAlgorithm` says what each operand is rounded to, what the sums accumulate in, and
how many passes emulate a wider type (bfloat16 x3 for float32, say). `DotAlgorithmPreset`
names the combinations some backend supports. The result keeps the dtype `dot_general`
would give without one: the lowering converts the operands to the algorithm's types,
multiplies, and converts the accumulator back. XLA on CPU ignores the algorithm attribute,
so, as JAX does, only the presets CPU computes exactly as named are accepted there.

`AccuracyMode` and `Tolerance` are the `accuracy=` of JAX's transcendental functions
(`exp`, `log`, `tanh`, ...): which implementation to choose by the error it may make.
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxon._src import dtypes
from jaxon._src.interpreters import mlir


class DotAlgorithm(NamedTuple):
  """The types a dot product is computed in.

  Attributes:
    lhs_precision_type, rhs_precision_type: what each operand is rounded to.
    accumulation_type: what the products are summed in.
    lhs_component_count, rhs_component_count, num_primitive_operations: for algorithms
      that split an operand into several narrower parts and multiply them in several
      passes (to emulate a wider type); 1 for a plain product.
    allow_imprecise_accumulation: whether some steps may accumulate in less precision.

  Example: float16 operands summed in float32 is
  `DotAlgorithm(np.float16, np.float16, np.float32)`.
  """

  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False

  def __repr__(self) -> str:  # types by name, as jaxpr params print and read them back
    return "DotAlgorithm(" + ", ".join(
        f"{name}={np.dtype(value).name if name.endswith('_type') else value}"
        for name, value in self._asdict().items()) + ")"

  def hlo_attr(self, lhs_dtype: np.dtype, rhs_dtype: np.dtype) -> Any:
    return hlo.DotAlgorithm.get(
        *(mlir.dtype_to_ir_type(np.dtype(t)) for t in (
            self.lhs_precision_type, self.rhs_precision_type, self.accumulation_type)),
        self.lhs_component_count, self.rhs_component_count, self.num_primitive_operations,
        self.allow_imprecise_accumulation)


_F8 = tuple(np.dtype(t) for t in (
    dtypes.float8_e4m3b11fnuz, dtypes.float8_e4m3fn, dtypes.float8_e4m3fnuz,
    dtypes.float8_e5m2, dtypes.float8_e5m2fnuz, dtypes.float8_e3m4, dtypes.float8_e4m3,
    dtypes.float8_e8m0fnu))
_F16, _BF16, _F32, _F64 = (np.dtype(t) for t in (np.float16, dtypes.bfloat16, np.float32,
                                                 np.float64))


class _PresetSpec(NamedTuple):
  operand_types: tuple[np.dtype, ...] | None  # None: any (the operand's own type)
  accumulation_type: np.dtype | None  # None: the result type decides
  hlo_types: tuple[str, str] | None  # (operand, accumulator) MLIR type names; None: operands'
  passes: int = 1
  fast_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
  """The dot algorithms known to some backend, named `LHS_RHS_ACCUMULATOR`: `_X3`,
  `_X6`, `_X9` emulate a wider type with that many passes, `_FAST_ACCUM` may accumulate
  in less precision, `ANY_F8` takes any float8 operands, and an `ANY` accumulator is the
  result type. DEFAULT lets the backend choose. Names work as `precision=` strings too.
  On CPU, DEFAULT, F16_F16_F16, F32_F32_F32, F64_F64_F64, BF16_BF16_F32 and its _X3 and
  _X6 forms are supported.
  """

  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self) -> str:
    return f"DotAlgorithmPreset.{self.name}"

  def __str__(self) -> str:
    return self.name

  @property
  def _spec(self) -> _PresetSpec:
    return _PRESET_SPECS[self.name]

  @property
  def supported_lhs_types(self) -> tuple[Any, ...] | None:
    """The operand types the algorithm takes as they are (others convert to the
    first); None: any."""
    return self._spec.operand_types

  @property
  def supported_rhs_types(self) -> tuple[Any, ...] | None:
    return self._spec.operand_types

  @property
  def accumulation_type(self) -> Any:
    return self._spec.accumulation_type

  def supported_output_types(self, lhs_dtype: Any, rhs_dtype: Any) -> tuple[Any, ...] | None:
    """The accumulator types it can produce for these operand types (None: any)."""
    if self in (DotAlgorithmPreset.ANY_F8_ANY_F8_F32,
                DotAlgorithmPreset.ANY_F8_ANY_F8_F32_FAST_ACCUM):
      return (_F32, _F16, _BF16, *(np.dtype(t) for t in (
          dtypes.float8_e4m3fn, dtypes.float8_e5m2, dtypes.float8_e5m2fnuz,
          dtypes.float8_e4m3fnuz, dtypes.float8_e4m3b11fnuz)))
    narrow = {DotAlgorithmPreset.F16_F16_F32: _F16, DotAlgorithmPreset.BF16_BF16_F32: _BF16}
    if self in narrow:  # the narrow result only for operands of that narrow type
      same = dtypes.promote_types(lhs_dtype, rhs_dtype) == narrow[self]
      return (_F32, narrow[self]) if same else (_F32,)
    acc = self.accumulation_type
    return None if acc is None else (acc,)

  def hlo_attr(self, lhs_dtype: np.dtype, rhs_dtype: np.dtype) -> Any:
    """The `algorithm` attribute of `stablehlo.dot_general` (None for DEFAULT)."""
    spec = self._spec
    if self is DotAlgorithmPreset.DEFAULT:
      return None
    if spec.hlo_types is None:  # the float8 presets: the operands' own types
      if np.dtype(lhs_dtype) not in _F8 or np.dtype(rhs_dtype) not in _F8:
        raise ValueError(f"The dot algorithm '{self}' requires both inputs to have float8 "
                         f"dtypes. Got {lhs_dtype} and {rhs_dtype} instead.")
      operand_types = [mlir.dtype_to_ir_type(np.dtype(t)) for t in (lhs_dtype, rhs_dtype)]
      acc = ir.F32Type.get()
    else:
      operand = ir.Type.parse(spec.hlo_types[0])
      operand_types, acc = [operand, operand], ir.Type.parse(spec.hlo_types[1])
    return hlo.DotAlgorithm.get(*operand_types, acc, 1, 1, spec.passes,
                                spec.fast_accumulation)


_PRESET_SPECS = {
    "DEFAULT": _PresetSpec(None, None, None),
    "ANY_F8_ANY_F8_F32": _PresetSpec(None, _F32, None),
    "ANY_F8_ANY_F8_F32_FAST_ACCUM": _PresetSpec(None, _F32, None, fast_accumulation=True),
    "ANY_F8_ANY_F8_ANY": _PresetSpec(None, None, None),
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM": _PresetSpec(None, None, None, fast_accumulation=True),
    "F16_F16_F16": _PresetSpec((_F16,), _F16, ("f16", "f16")),
    "F16_F16_F32": _PresetSpec((_F16,), _F32, ("f16", "f32")),
    "BF16_BF16_BF16": _PresetSpec((_BF16, _F32), _BF16, ("bf16", "bf16")),
    "BF16_BF16_F32": _PresetSpec((_BF16, _F32), _F32, ("bf16", "f32")),
    "BF16_BF16_F32_X3": _PresetSpec((_F32,), _F32, ("bf16", "f32"), passes=3),
    "BF16_BF16_F32_X6": _PresetSpec((_F32,), _F32, ("bf16", "f32"), passes=6),
    "BF16_BF16_F32_X9": _PresetSpec((_F32,), _F32, ("bf16", "f32"), passes=9),
    "TF32_TF32_F32": _PresetSpec((_F32,), _F32, ("tf32", "f32")),
    "TF32_TF32_F32_X3": _PresetSpec((_F32,), _F32, ("tf32", "f32"), passes=3),
    "F32_F32_F32": _PresetSpec((_F32,), _F32, ("f32", "f32")),
    "F64_F64_F64": _PresetSpec((_F64,), _F64, ("f64", "f64")),
}

# What XLA's CPU backend computes as named (it ignores the attribute, so any other request
# would silently get a different algorithm).
CPU_PRESETS = frozenset(DotAlgorithmPreset[name] for name in (
    "DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
    "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"))

Algorithm = DotAlgorithm | DotAlgorithmPreset


def compute_types(algorithm: Algorithm, lhs_dtype: np.dtype, rhs_dtype: np.dtype,
                  out_dtype: np.dtype) -> tuple[np.dtype, np.dtype, np.dtype]:
  """The (lhs, rhs, accumulator) types the product is computed in: a type the algorithm
  takes stays, any other converts to the algorithm's first choice."""
  if isinstance(algorithm, DotAlgorithm):
    return tuple(np.dtype(t) for t in (algorithm.lhs_precision_type,
                                       algorithm.rhs_precision_type,
                                       algorithm.accumulation_type))

  def pick(dtype: np.dtype, choices: tuple[Any, ...] | None) -> np.dtype:
    return np.dtype(dtype) if choices is None or np.dtype(dtype) in choices else choices[0]
  lhs = pick(lhs_dtype, algorithm.supported_lhs_types)
  rhs = pick(rhs_dtype, algorithm.supported_rhs_types)
  return lhs, rhs, pick(out_dtype, algorithm.supported_output_types(lhs, rhs))


def check_supported_on_cpu(algorithm: Algorithm) -> None:
  if algorithm not in CPU_PRESETS:
    raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU: "
                     f"use one of {sorted(p.name for p in CPU_PRESETS)} or a Precision.")


# ----------------------------------------------------------------------------- accuracy


class AccuracyMode(enum.Enum):
  """The accuracy a transcendental function's implementation is chosen by: HIGHEST
  (the most accurate) or DEFAULT."""

  HIGHEST = 1
  DEFAULT = 2


class Tolerance:
  """The largest error a transcendental function's implementation may make: an absolute
  `atol`, a relative `rtol` and/or `ulps` units in the last place (at least one set)."""

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol = atol
    self.rtol = rtol
    self.ulps = ulps

  # Equal values make equal params, so a new Tolerance of the same values finds the
  # programs compiled for an earlier one; the repr is how a jaxpr's text reads it back.
  def _values(self) -> tuple[float, float, int]:
    return self.atol, self.rtol, self.ulps

  def __eq__(self, other: object) -> bool:
    return type(other) is Tolerance and self._values() == other._values()

  def __hash__(self) -> int:
    return hash((Tolerance, self._values()))

  def __repr__(self) -> str:
    return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


Accuracy = Tolerance | AccuracyMode


def result_accuracy_attr(accuracy: Accuracy) -> Any:
  """The `result_accuracy` attribute of a StableHLO transcendental op: a mode, or the
  tolerances with mode TOLERANCE."""
  if isinstance(accuracy, AccuracyMode):
    return hlo.ResultAccuracyAttr.get(0.0, 0.0, 0, accuracy.name)
  if isinstance(accuracy, Tolerance):
    return hlo.ResultAccuracyAttr.get(float(accuracy.atol), float(accuracy.rtol),
                                      int(accuracy.ulps), "TOLERANCE")
  raise NotImplementedError(f"accuracy must be a lax.Tolerance or a lax.AccuracyMode, got "
                            f"{accuracy!r}.")
