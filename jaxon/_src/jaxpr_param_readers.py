"""A param's text, parsed to a tree of small nodes (`Word`, `Call`, tuples, lists, jaxprs),
and the readers that turn such a tree into the param's Python value: driven by the text
where it says its type, else by the extension tables below (which `jaxpr_parser_sharding`
and others fill). Also how symbolic dimensions in params and types are read."""
from __future__ import annotations

import contextvars
import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxon._src import prng_keys, tree_util
from jaxon._src.config import config
from jaxon._src.core import ClosedJaxpr, Jaxpr, ShapedArray
from jaxon._src.export import shape_poly
from jaxon._src.jaxpr_lexer import DTYPES_BY_NAME, PRNG_IMPLS, literal_kind
from jaxon._src.lax import barriers_tokens, convolution, fft, gather_scatter, lax, rng_bits
from jaxon._src.lax import custom_derivatives as cd
from jaxon._src.lax import ragged_dot
from jaxon._src.lax import linalg as lax_linalg
from jaxon._src.lax.control_flow import remat, solves
from jaxon._src.lax.dot_algorithms import AccuracyMode, Tolerance
from jaxon._src.lax.dot_general import DotAlgorithm, DotAlgorithmPreset, Precision

# ----------------------------------------------------------------------------- values
# A param's text parses to a tree of these (and tuples and lists of them); `read_value`
# turns the tree into the param's Python value.


class Word(NamedTuple):
  text: str


class Call(NamedTuple):
  """`Name(a, key=b)`: a named tuple's (or another constructor's) text."""
  name: str
  args: tuple
  kwargs: dict


class Pair(NamedTuple):
  """`key: value` inside a call or braces (`Mesh('x': 4)`, a dict's text)."""
  key: Any
  value: Any


class Braces(NamedTuple):
  """`{a, b}`: a set's (or dict's) text; jaxprs in braces start with `lambda`."""
  items: tuple


class ParsedJaxpr(NamedTuple):
  jaxpr: Jaxpr
  consts: list[Any]


class Unreadable(Exception):
  """A param value the reader cannot turn back into Python (its message says why)."""




# Named tuples (and `Tolerance`) whose text `Name(field=value, ...)` is read back by calling
# them, and enums whose members print as `Name.MEMBER`.
CONSTRUCTORS: dict[str, Callable[..., Any]] = {c.__name__: c for c in (
    gather_scatter.GatherDimensionNumbers, gather_scatter.ScatterDimensionNumbers,
    convolution.ConvDimensionNumbers, solves._SolveJaxprs, DotAlgorithm,
    ragged_dot.RaggedDotDimensionNumbers, Tolerance)}
_ENUMS: dict[str, Any] = {e.__name__: e for e in (
    Precision, gather_scatter.GatherScatterMode, fft.FftType, lax_linalg.SvdAlgorithm,
    barriers_tokens.ArrayCopySemantics, AccuracyMode)}


class Dims:
  """How the text's symbolic dimensions (`f32[b,2*b]`, `shape=(b, 3)`) are read: in a
  scope, and, with `env`, evaluated with values for the dimension variables (so that a
  shape-polymorphic program reads back with concrete shapes)."""

  def __init__(self, scope: shape_poly.SymbolicScope | None,
               env: dict[str, Any] | None = None):
    self.scope = scope if scope is not None else shape_poly.SymbolicScope()
    self.env = env
    self.variables: set[str] = set()  # those the types have shown so far

  def read(self, text: str, in_type: bool) -> Any:
    """A dimension in a type, or in a param (whose variables a type must have shown)."""
    dim = shape_poly.parse_dim(text, self.scope)
    if not shape_poly.is_symbolic_dim(dim):
      return dim
    if in_type:
      self.variables |= dim.variables()
    elif not dim.variables() <= self.variables:
      raise ValueError(f"`{text}` is not a dimension of the jaxpr's types")
    return dim if self.env is None else dim.evaluate(self.env)


current_dims: contextvars.ContextVar[Dims] = contextvars.ContextVar("jaxpr_text_dims")
_DIM_TEXT = re.compile(r"[\w*^ +\-]*[A-Za-z_][\w*^ +\-]*")
_DIM_FUNCTIONS = ("floordiv", "mod", "max", "min")


def _read_dim(text: str) -> Any:
  try:
    return current_dims.get().read(text, in_type=False)
  except (LookupError, ValueError, shape_poly.InconclusiveDimensionOperation) as e:
    raise Unreadable(f"`{text}` is not a value jaxprs can be read back with") from e


def call_text(node: Any) -> str:
  if type(node) is Call:
    return f"{node.name}({', '.join(map(call_text, node.args))})"
  return node.text


def read_value(node: Any) -> Any:
  """A param's value from its parsed text, as far as the text says its type."""
  if type(node) is tuple:
    return tuple(map(read_value, node))
  if type(node) is list:
    return list(map(read_value, node))
  if type(node) is ParsedJaxpr:
    return ClosedJaxpr(node.jaxpr, node.consts)
  if type(node) is Braces:
    return {read_value(item) for item in node.items}
  if type(node) is Call:
    if node.name in _DIM_FUNCTIONS:
      return _read_dim(call_text(node))
    if node.name in CALL_READERS:
      return CALL_READERS[node.name](node)
    constructor = CONSTRUCTORS.get(node.name)
    if constructor is None:
      raise Unreadable(f"`{node.name}(...)` is not a value jaxprs can be read back with")
    return constructor(*map(read_value, node.args),
                       **{k: read_value(v) for k, v in node.kwargs.items()})
  return _read_word(node.text)


def _read_word(text: str) -> Any:
  if text in ("None", "True", "False"):
    return {"None": None, "True": True, "False": False}[text]
  if len(text) >= 2 and text[0] == text[-1] == "'":  # an axis name, `'i'`
    return text[1:-1]
  if text in WORD_VALUES:
    return WORD_VALUES[text]
  kind = literal_kind(text)
  if kind == "i":
    return int(text)
  if kind == "f":
    return float(text)
  enum_name, _, member = text.partition(".")
  if enum_name in _ENUMS and member in _ENUMS[enum_name].__members__:
    return _ENUMS[enum_name][member]
  if text in DTYPES_BY_NAME:
    return DTYPES_BY_NAME[text]
  if " at 0x" in text:
    raise Unreadable(f"{text} is a Python object, which a jaxpr's text shows by name only")
  if _DIM_TEXT.fullmatch(text):
    return _read_dim(text)
  raise Unreadable(f"`{text}` is not a value jaxprs can be read back with")


def read_string(node: Any) -> str:
  if type(node) is not Word:
    raise Unreadable("expected a name")
  return node.text


def _read_open_jaxpr(node: Any) -> Jaxpr:
  if type(node) is not ParsedJaxpr or node.jaxpr.constvars:
    raise Unreadable("expected a jaxpr without constvars")
  return node.jaxpr


def _read_update_jaxpr(node: Any) -> Jaxpr | None:
  """scatter's `update_jaxpr`: None, or scatter_apply's scalar function."""
  return None if type(node) is Word and node.text == "None" else _read_open_jaxpr(node)


def _read_prng_impl(node: Any) -> prng_keys.PRNGImpl:
  impl = PRNG_IMPLS.get(read_string(node))
  if impl is None:
    raise Unreadable(f"unknown PRNG implementation `{node.text}` (known: {list(PRNG_IMPLS)})")
  return impl


_POLICIES: dict[str, Callable[..., bool]] = {
    f.__qualname__: f for f in map(functools.partial(getattr, remat.checkpoint_policies),
                                   vars(remat.checkpoint_policies))
    if inspect.isfunction(f)}
_FUNCTION_TEXT = re.compile(r"<function (\S+) at 0xX+>")


def _read_policy(node: Any) -> Callable[..., bool] | None:
  """`checkpoint`'s policy: None, or one of `checkpoint_policies` (known by its name). Other
  functions, the `save_*_names` policies among them, are closures the text cannot carry."""
  text = read_string(node)
  if text == "None":
    return None
  match = _FUNCTION_TEXT.fullmatch(text)
  policy = _POLICIES.get(match.group(1)) if match else None
  if policy is None:
    raise Unreadable(f"{text} cannot be read back: it is a Python function, and only the "
                      "policies of `checkpoint_policies` that take no arguments are known "
                      "by name")
  return policy


def _read_dot_dimension_numbers(node: Any) -> tuple:
  """`(([1], [0]), ([], []))`: JAX prints the axes as lists; jaxon keeps tuples."""
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = read_value(node)
  return ((tuple(lhs_contract), tuple(rhs_contract)), (tuple(lhs_batch), tuple(rhs_batch)))


def _read_dot_precision(node: Any) -> Any:
  """A dot algorithm preset prints as its bare name (`precision=F32_F32_F32`)."""
  if type(node) is Word and node.text in DotAlgorithmPreset.__members__:
    return DotAlgorithmPreset[node.text]
  return read_value(node)


def _saved_rule_reader(saved: type) -> Callable[[Any], Any]:
  """A custom derivative's rule: a jaxpr where the text was saved with its rules (see
  `cd.save_rules`), else its name (a rule that cannot be run)."""
  def read(node: Any) -> Any:
    if type(node) is ParsedJaxpr:
      return saved(ClosedJaxpr(node.jaxpr, node.consts))
    return cd.UnsavedRule(read_string(node))
  return read


# Readers of calls `Name(...)` that read their own arguments' text (`Mesh('x': 4)`), and
# the values of bare words (`UnspecifiedValue`), by name. Extension points
# (`jaxpr_parser_sharding.py` fills them).
CALL_READERS: dict[str, Callable[[Call], Any]] = {}
WORD_VALUES: dict[str, Any] = {}

# Params that bind axis names for the other params (the jaxpr), by primitive: (param name,
# its value's (name, size) axes). Extension point.
AXIS_BINDING_PARAMS: dict[str, tuple[str, Callable[[Any], Sequence[tuple[Any, int]]]]] = {}

# The comparisons a windowed select (select_and_scatter_add, ...) names by primitive.
_SELECT_PRIMS = {"ge": lax.ge_p, "le": lax.le_p}


def _read_treedef(node: Call) -> Any:
  """`PyTreeDef((*, {'a': *}))` (a composite attribute's structure): `*` marks a leaf;
  tuples, lists, dicts and None nest."""
  leaf = object()

  def build(n: Any) -> Any:
    if type(n) is tuple:
      return tuple(map(build, n))
    if type(n) is list:
      return list(map(build, n))
    if type(n) is Braces and all(type(p) is Pair for p in n.items):
      return {read_value(p.key): build(p.value) for p in n.items}
    if type(n) is Word and n.text == "*":
      return leaf
    if type(n) is Word and n.text == "None":
      return None
    raise Unreadable(f"`PyTreeDef({call_text(node.args[0])})` names a node type the reader "
                     "does not know")
  return tree_util.tree_structure(build(node.args[0]), is_leaf=lambda x: x is leaf)


def _read_hashable_array(node: Call) -> Any:
  """`HashableArray(array([1, 2], dtype=int32))`: a composite's NumPy array attribute."""
  (array,) = node.args
  dtype = array.kwargs.get("dtype")
  return barriers_tokens.HashableArray(np.array(
      read_value(array.args[0]), dtype=None if dtype is None else read_value(dtype)))


CALL_READERS.update(PyTreeDef=_read_treedef, HashableArray=_read_hashable_array)


def _read_shaped_array(node: Call) -> Any:
  """`ShapedArray(float32[2,3])` (an FFI call's result avals): parsed as the dtype's
  word, then the list of dimensions."""
  dtype, dims = node.args
  return ShapedArray(tuple(read_value(dims)), DTYPES_BY_NAME[dtype.text])


def _numpy_scalar_reader(dtype: np.dtype) -> Callable[[Call], Any]:
  """`np.float32(2.0)`: a NumPy scalar (an FFI call's attribute), as NumPy 2 prints it."""
  return lambda node: dtype.type(read_value(node.args[0]))


CALL_READERS.update({f"np.{name}": _numpy_scalar_reader(np.dtype(name))
                     for name in ("int8", "int16", "int32", "int64", "uint8", "uint16",
                                  "uint32", "uint64", "float16", "float32", "float64")})
CALL_READERS["ShapedArray"] = _read_shaped_array
WORD_VALUES.update({"np.True_": np.True_, "np.False_": np.False_})

# Readers of params whose text does not say their type, by (primitive name, param name);
# a None primitive name applies to every primitive. Extension point.
PARAM_READERS: dict[tuple[str | None, str], Callable[[Any], Any]] = {
    (None, "name"): read_string,
    ("dot_general", "dimension_numbers"): _read_dot_dimension_numbers,
    ("dot_general", "precision"): _read_dot_precision,
    ("ragged_dot_general", "precision"): _read_dot_precision,
    ("round", "rounding_method"): lambda node: lax.RoundingMethod(read_value(node)),
    ("rng_bit_generator", "algorithm"): lambda node: rng_bits.RandomAlgorithm[node.text],
    ("select_and_scatter_add", "select_prim"): lambda node: _SELECT_PRIMS[node.text],
    ("select_and_gather_add", "select_prim"): lambda node: _SELECT_PRIMS[node.text],
    ("select_and_scatter", "select_jaxpr"): _read_open_jaxpr,
    ("select_and_scatter", "scatter_jaxpr"): _read_open_jaxpr,
    ("scatter", "update_jaxpr"): _read_update_jaxpr,
    ("random_seed", "impl"): _read_prng_impl,
    ("random_wrap", "impl"): _read_prng_impl,
    ("ffi_call", "target_name"): read_string,
    ("ffi_call", "vmap_method"): lambda node: None if node.text == "None" else node.text,
    ("ffi_call", "legacy_backend_config"): lambda node: (None if node.text == "None"
                                                         else node.text),
    ("remat2", "jaxpr"): _read_open_jaxpr,
    ("remat2", "policy"): _read_policy,
    ("custom_jvp_call", "jvp"): read_string,
    ("custom_vjp_call", "fwd"): read_string,
    ("custom_jvp_call", "jvp_jaxpr_fun"): _saved_rule_reader(cd.SavedJVPRule),
    ("custom_vjp_call", "fwd_jaxpr_thunk"): _saved_rule_reader(cd.SavedFwdRule),
    ("custom_vjp_call", "bwd"): _saved_rule_reader(cd.SavedBwdRule),
}

# Params the printer leaves out, by primitive: their values, made when read. Extension point.
HIDDEN_PARAMS: dict[str, dict[str, Callable[[], Any]]] = {
    "dot_general": {"precision": lambda: None, "preferred_element_type": lambda: None,
                    "out_sharding": lambda: None},
    "random_split": {"partitionable": lambda: config.jax_threefry_partitionable},
    "random_bits": {"partitionable": lambda: config.jax_threefry_partitionable},
    "custom_jvp_call": {"num_consts": lambda: 0,
                        "jvp_jaxpr_fun": lambda: cd.UnsavedRule("the JVP rule")},
    "custom_vjp_call": {"num_consts": lambda: 0,
                        "fwd_jaxpr_thunk": lambda: cd.UnsavedRule("the forward rule")},
}

# Steps that finish an equation's params once all are read, by primitive. Extension point.
PARAM_COMPLETIONS: dict[str, Callable[[dict], dict]] = {
    "custom_jvp_call": cd.complete_saved_rules,
    "custom_vjp_call": cd.complete_saved_rules,
}

# Primitives that cannot be read back, and why. Extension point.
UNREADABLE_PRIMITIVES: dict[str, str] = {
    "custom_lin": "its backward rule is a Python function, which the text names only",
    "custom_vmap_call": "its batching rule is a Python function, which the text names only",
    "linear_call": "its transpose is a Python thunk, which the text names only",
    "pure_callback": "it calls a Python function on the host (a host callback)",
    "io_callback": "it calls a Python function on the host (a host callback)",
    "debug_callback": "it calls a Python function on the host (a host callback)",
    "debug_print": "it prints from the host (a host callback)",
    "check": "checkify's error messages are not in the text",
    "empty_ref": "its `ty` param prints as JAX's bare `float32[2]`, which no reader parses",
    "todense": "sparse.todense's `tree` param is a treedef naming Python classes (BCOO)",
}

