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
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np

from jaxon._src import tree_util
from jaxon._src.core import ShapedArray
from jaxon._src.export import _export, shape_poly
from jaxon._src.jaxpr_lexer import DTYPES_BY_NAME
from jaxon._src.jaxpr_parser import value_from_text

MAGIC = b"JAXONEXP"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sHQ")
T = TypeVar("T")


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


def deserialize(blob: bytes | bytearray) -> _export.Exported:
  """The Exported that `serialize` wrote into `blob`.

  Raises:
    ValueError: `blob` is not a serialized jaxon program, was truncated or corrupted (its
      checksum does not match), or was written in another format version.
  """
  data = bytes(blob)
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

  def piece(span: list[int]) -> bytes:
    return blobs[span[0]:span[0] + span[1]]

  scope = shape_poly.SymbolicScope(header["constraints"])
  consts = tuple(np.frombuffer(piece(c["data"]), DTYPES_BY_NAME[c["dtype"]]).reshape(
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
      mlir_module_serialized=piece(header["mlir_module"]),
      calling_convention_version=header["calling_convention_version"],
      jaxpr_text=header["jaxpr_text"], jaxpr_consts=consts,
      constraints=tuple(header["constraints"]),
      saved_vjps=tuple(deserialize(piece(v)) for v in header["vjps"]),
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


# ----------------------------------------------------------------------------- pytrees
# A tree of tuples, lists, dicts and None is written as jaxlib's PyTreeDef proto (base64).
# A tree with other nodes is written as JSON, each node a list: ["*"] a leaf, ["None"],
# ["tuple", children], ["list", children], ["dict", keys, children], and a registered
# type [serialized name, its auxiliary data (base64 of what its serializer wrote, or
# null for a namedtuple), children]. Types are registered with
# `register_pytree_node_serialization` / `register_namedtuple_serialization`.

class _NodeSerialization(NamedTuple):
  nodetype: type
  serialized_name: str
  serialize_auxdata: Callable[[Any], bytes] | None  # None: a namedtuple
  deserialize_auxdata: Callable[[bytes], Any] | None
  from_children: Callable[[Any, Sequence[Any]], Any] | None


_by_type: dict[type, _NodeSerialization] = {}
_by_name: dict[str, _NodeSerialization] = {}


def _register(entry: _NodeSerialization) -> None:
  if entry.nodetype in _by_type:
    raise ValueError(f"Duplicate serialization registration for type `{entry.nodetype}`. "
                     f"Previous registration was with serialized_name "
                     f"`{_by_type[entry.nodetype].serialized_name}`.")
  if entry.serialized_name in _by_name:
    raise ValueError(f"Duplicate serialization registration for serialized_name "
                     f"`{entry.serialized_name}`. Previous registration was for type "
                     f"`{_by_name[entry.serialized_name].nodetype}`.")
  _by_type[entry.nodetype] = _by_name[entry.serialized_name] = entry


def register_pytree_node_serialization(
    nodetype: type[T], *, serialized_name: str, serialize_auxdata: Callable[[Any], bytes],
    deserialize_auxdata: Callable[[bytes], Any],
    from_children: Callable[[Any, Sequence[Any]], Any] | None = None) -> type[T]:
  """Lets exported programs whose argument or result trees hold `nodetype` nodes (a type
  registered as a pytree node) be serialized: its auxiliary data is written with
  `serialize_auxdata` (to bytes) under `serialized_name`, and read back with
  `deserialize_auxdata`. Returns `nodetype`, so it can decorate the class."""
  if not isinstance(serialized_name, str) or not serialized_name:
    raise ValueError(f"serialized_name must be a non-empty string, got {serialized_name!r}")
  _register(_NodeSerialization(nodetype, serialized_name, serialize_auxdata,
                               deserialize_auxdata, from_children))
  return nodetype


def register_namedtuple_serialization(nodetype: type[T], *, serialized_name: str) -> type[T]:
  """As `register_pytree_node_serialization`, for a namedtuple class (pytree nodes
  already, with no auxiliary data)."""
  if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)
          and hasattr(nodetype, "_fields")):
    raise ValueError(f"Cannot register {nodetype} as a namedtuple for serialization: it is "
                     "not a namedtuple class")
  _register(_NodeSerialization(nodetype, serialized_name, None, None, None))
  return nodetype


_LEAF = tree_util.tree_structure(0)


def _tree_to_json(tree: tree_util.PyTreeDef) -> list[Any]:
  if tree.node_data() is None:
    return ["*"]
  nodetype, aux = tree.node_data()
  children = [_tree_to_json(c) for c in tree.children()]
  if nodetype is type(None):
    return ["None"]
  if nodetype in (tuple, list):
    return [nodetype.__name__, children]
  if nodetype is dict:
    return ["dict", list(aux), children]
  entry = _by_type.get(nodetype)
  if entry is None:
    raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type "
                     f"`{nodetype}`. Use `export.register_pytree_node_serialization` or "
                     "`export.register_namedtuple_serialization`.")
  data = (None if entry.serialize_auxdata is None
          else base64.b64encode(entry.serialize_auxdata(aux)).decode())
  return [entry.serialized_name, data, children]


def _tree_from_json(node: list[Any]) -> tree_util.PyTreeDef:
  kind = node[0]
  if kind == "*":
    return _LEAF
  if kind == "None":
    return tree_util.tree_structure(None)
  children = [_tree_from_json(c) for c in node[-1]]
  if kind in ("tuple", "list"):
    node_data = ({"tuple": tuple, "list": list}[kind], None)
  elif kind == "dict":
    node_data = (dict, node[1])
  else:
    entry = _by_name.get(kind)
    if entry is None:
      raise ValueError(f"Cannot deserialize a PyTreeDef with a node of serialized name "
                       f"`{kind}`: register its type with "
                       "`export.register_pytree_node_serialization` (or "
                       "`register_namedtuple_serialization`) before deserializing.")
    aux = (None if entry.deserialize_auxdata is None
           else entry.deserialize_auxdata(base64.b64decode(node[1])))
    node_data = (entry.nodetype, aux)
  return tree_util.PyTreeDef.from_node_data_and_children(tree_util.registry, node_data,
                                                         children)


def _tree_to_text(tree: tree_util.PyTreeDef, what: str) -> str | list[Any]:
  try:
    return base64.b64encode(tree.serialize_using_proto()).decode()
  except Exception:  # noqa: BLE001  (jaxlib refuses custom nodes; written as JSON then)
    pass
  try:
    return _tree_to_json(tree)
  except ValueError as e:
    raise ValueError(f"Cannot serialize the pytree of the {what}, {tree}: {e}") from None


def _tree_from_text(text: str | list[Any]) -> tree_util.PyTreeDef:
  if isinstance(text, list):
    return _tree_from_json(text)
  return tree_util.PyTreeDef.deserialize_using_proto(tree_util.registry,
                                                     base64.b64decode(text))
