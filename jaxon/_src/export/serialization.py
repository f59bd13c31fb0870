"""The byte format of a serialized `Exported` (jaxon's own; JAX's is a flatbuffer, which
jaxon neither reads nor writes).

    magic    8 bytes   b"JAXONEXP"
    version  u16       FORMAT_VERSION (little-endian, as all integers here)
    length   u64       of the header
    header   JSON      fields of the Exported, and (offset, length) of each blob
    blobs              the StableHLO portable artifact, the constants' bytes, saved VJPs
    crc32    u32       of everything before it

The StableHLO module is a portable artifact for the StableHLO version of
`stablehlo_artifact.target_version()` (12 weeks before jaxlib 0.10.2's 1.17.0: 1.13.7): any
reader at that version or later, for the next two years of StableHLO's compatibility
guarantee, runs it. The jaxpr text is read by the jaxon that reads the bytes: jaxon promises
to read the text of the same FORMAT_VERSION; a file of another version is refused with a
message naming both versions.
"""
from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import numpy as np

from jaxon._src import tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.export import _export, shape_poly
from jaxon._src.jaxpr_lexer import DTYPES_BY_NAME
from jaxon._src.jaxpr_parser import value_from_text

MAGIC = b"JAXONEXP"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sHQ")


def serialize(exp: _export.Exported, vjp_order: int = 0) -> bytearray:
  if vjp_order < 0:
    raise ValueError(f"vjp_order must be >= 0, got {vjp_order}")
  if exp.jaxpr_text is None:
    raise ValueError(f"{exp.fun_name} was exported for its StableHLO module only (as "
                     "jax2tf.convert exports): jaxon serializes programs with their jaxpr; "
                     "export it with `jaxon.export.export`")
  blobs: list[bytes] = []

  def blob(data: bytes) -> list[int]:
    offset = sum(map(len, blobs))
    blobs.append(bytes(data))
    return [offset, len(data)]

  consts = []
  for c in exp.jaxpr_consts:
    c = np.ascontiguousarray(c)
    if c.dtype.name not in DTYPES_BY_NAME:
      raise ValueError(f"Cannot serialize a program with a constant of dtype {c.dtype}")
    consts.append({"dtype": c.dtype.name, "shape": list(c.shape), "data": blob(c.tobytes())})
  vjps = [blob(serialize(exp.vjp(), vjp_order - 1))] if vjp_order else []
  header = {
      "fun_name": exp.fun_name,
      "in_tree": _tree_to_text(exp.in_tree, "inputs"),
      "out_tree": _tree_to_text(exp.out_tree, "outputs"),
      "in_avals": [_aval_to_json(a) for a in exp.in_avals],
      "out_avals": [_aval_to_json(a) for a in exp.out_avals],
      "nr_devices": exp.nr_devices,
      "platforms": list(exp.platforms),
      "disabled_safety_checks": [str(c) for c in exp.disabled_safety_checks],
      "calling_convention_version": exp.calling_convention_version,
      "constraints": list(exp.constraints),
      "jaxpr_text": exp.jaxpr_text,
      "consts": consts,
      "mlir_module": blob(exp.mlir_module_serialized),
      "vjps": vjps,
      # a sharded program's NamedShardings, as they print (absent from unsharded ones)
      "in_shardings": _shardings_to_text(exp._in_named_shardings),
      "out_shardings": _shardings_to_text(exp._out_named_shardings),
  }
  header_bytes = json.dumps(header).encode()
  out = bytearray(_PREFIX.pack(MAGIC, FORMAT_VERSION, len(header_bytes)))
  out += header_bytes
  for b in blobs:
    out += b
  out += struct.pack("<I", zlib.crc32(out))
  return out


def deserialize(data: bytes | bytearray) -> _export.Exported:
  """The Exported that `serialize` wrote into `data`.

  Raises:
    ValueError: `data` is not a serialized jaxon program, was truncated or corrupted (its
      checksum does not match), or was written in another format version.
  """
  data = bytes(data)
  if len(data) < _PREFIX.size + 4 or not data.startswith(MAGIC):
    what = "too short" if data.startswith(MAGIC) else "missing the magic header b'JAXONEXP'"
    raise ValueError(f"Not a serialized jaxon Exported: the data is {what} "
                     f"({len(data)} bytes)")
  _, version, header_length = _PREFIX.unpack_from(data)
  if version != FORMAT_VERSION:
    raise ValueError(f"Serialized jaxon Exported has format version {version}, but this "
                     f"jaxon reads version {FORMAT_VERSION}")
  (crc,) = struct.unpack_from("<I", data, len(data) - 4)
  if zlib.crc32(data[:-4]) != crc:
    raise ValueError(f"Serialized jaxon Exported is corrupted or truncated: its checksum "
                     f"does not match ({len(data)} bytes)")
  start = _PREFIX.size
  header = json.loads(data[start:start + header_length])
  blobs = data[start + header_length:-4]

  def blob(span: list[int]) -> bytes:
    return blobs[span[0]:span[0] + span[1]]

  scope = shape_poly.SymbolicScope(header["constraints"])
  consts = tuple(np.frombuffer(blob(c["data"]), DTYPES_BY_NAME[c["dtype"]]).reshape(
      c["shape"]) for c in header["consts"])
  return _export.Exported(
      fun_name=header["fun_name"],
      in_tree=_tree_from_text(header["in_tree"]),
      in_avals=tuple(_aval_from_json(a, scope) for a in header["in_avals"]),
      out_tree=_tree_from_text(header["out_tree"]),
      out_avals=tuple(_aval_from_json(a, scope) for a in header["out_avals"]),
      in_shardings_hlo=(None,) * len(header["in_avals"]),
      out_shardings_hlo=(None,) * len(header["out_avals"]),
      nr_devices=header["nr_devices"], platforms=tuple(header["platforms"]),
      ordered_effects=(), unordered_effects=(),
      disabled_safety_checks=tuple(_export.DisabledSafetyCheck(c)
                                   for c in header["disabled_safety_checks"]),
      mlir_module_serialized=blob(header["mlir_module"]),
      calling_convention_version=header["calling_convention_version"],
      jaxpr_text=header["jaxpr_text"], jaxpr_consts=consts,
      constraints=tuple(header["constraints"]),
      saved_vjps=tuple(deserialize(blob(v)) for v in header["vjps"]),
      _in_named_shardings=_shardings_from_text(header.get("in_shardings"),
                                               len(header["in_avals"])),
      _out_named_shardings=_shardings_from_text(header.get("out_shardings"),
                                                len(header["out_avals"])))


def _shardings_to_text(shardings: tuple[Any, ...]) -> list[str | None] | None:
  if all(s is None for s in shardings):
    return None
  return [None if s is None else repr(s) for s in shardings]


def _shardings_from_text(texts: list[str | None] | None, n: int) -> tuple[Any, ...]:
  """The shardings `_shardings_to_text` wrote, their meshes over this process's first
  devices (as a saved jaxpr's meshes are read back)."""
  if texts is None:
    return (None,) * n
  return tuple(None if t is None else value_from_text(t) for t in texts)


def _aval_to_json(aval: ShapedArray) -> list[Any]:
  return [aval.dtype.name, [str(d) for d in aval.shape]]


def _aval_from_json(spec: list[Any], scope: shape_poly.SymbolicScope) -> ShapedArray:
  dtype, shape = spec
  return ShapedArray([shape_poly.parse_dim(d, scope) for d in shape], DTYPES_BY_NAME[dtype])


def _tree_to_text(tree: tree_util.PyTreeDef, what: str) -> str:
  try:
    return base64.b64encode(tree.serialize_using_proto()).decode()
  except Exception as e:  # noqa: BLE001  (jaxlib says which node it cannot write)
    raise ValueError(f"Cannot serialize the pytree of the {what}, {tree}: jaxon serializes "
                     f"tuples, lists, dicts and None only ({e})") from None


def _tree_from_text(text: str) -> tree_util.PyTreeDef:
  return tree_util.PyTreeDef.deserialize_using_proto(tree_util.registry,
                                                     base64.b64decode(text))
