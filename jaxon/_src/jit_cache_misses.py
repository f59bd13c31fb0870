"""`jax_explain_cache_misses`: when a jitted function is traced again, say why — the
difference between this call's signature and the closest one it was traced for, argument
by argument (shape, dtype, weak type, tree structure, static values), as JAX words it."""
from __future__ import annotations

import inspect
import logging
import sys
from typing import Any

from jaxon._src import config as config_mod
from jaxon._src import core, tree_util

logger = logging.getLogger("jaxon._src.jit")


_miss_callsites: set[str] = set()


def explain_miss(fun: Any, key: tuple, args: tuple, statics: tuple) -> None:
  """Logs why `fun` (a `PjitFunction`) is traced again: the difference between this
  call's signature and the closest one it was traced for, argument by argument."""
  if (getattr(fun._fun, "__module__", None) or "").startswith("jaxon."):
    return  # jaxon's own jitted helpers: not the user's business
  code = getattr(inspect.unwrap(fun._fun), "__code__", None)
  frame, _ = core.user_frame(sys._getframe())
  callsite = core.describe_frame(frame) if frame is not None else "<unknown>"
  defined = f" defined at {code.co_filename}:{code.co_firstlineno}" if code else ""
  lines = [f"TRACING CACHE MISS at {callsite}:"]
  if not fun._cache:
    lines.append(f"  never seen function:\n    {fun._name} id={id(fun._fun)}{defined}")
    if callsite in _miss_callsites:
      lines.append("  but seen another function defined on the same line; maybe the "
                   "function is\n  being re-defined repeatedly, preventing caching?")
    _miss_callsites.add(callsite)
  else:
    namer = _ArgNamer(fun, len(args))
    closest = min(_diff_keys(_full_key(key), _full_key(old), namer) for old in list(fun._cache))
    lines += [f"  for {fun._name}{defined}",
              "  all previously seen cache keys differ. For the closest previous key:",
              "  " + closest[2]]
  logger.warning("\n".join(lines))


def _full_key(key: tuple) -> tuple:
  """(in_tree, statics, avals, trace context, axis frames) of a cache key of either form."""
  if len(key) == 3:
    return (tree_util.tree_structure(((0,) * len(key[0]), {})), (), *key)
  return key


def _diff_keys(new: tuple, old: tuple, namer: _ArgNamer) -> tuple[int, int, str]:
  """(severity, number of differences, explanation): the closest key has the least."""
  new_tree, new_statics, new_avals, new_context, new_frames = new
  old_tree, old_statics, old_avals, old_context, old_frames = old
  if new_frames != old_frames:
    return 0, 1, (f"Tracing context doesn't match: the bound axes (name, size) are now "
                  f"{new_frames} and before {old_frames}")
  if new_context != old_context:
    lines = [f"  * {name} differs: now {a} and before {b}" for name, a, b in
             zip(config_mod.trace_context_names(), new_context, old_context) if a != b]
    return 0, len(lines), ("Tracing context doesn't match, e.g. due to config or context "
                           "manager.\n" + "\n".join(lines))
  if new_tree != old_tree:
    lines = _tree_diffs(new_tree, old_tree, namer)
    return 1, len(lines), "different input pytree:\n" + "\n".join(lines)
  if not _same(new_statics, old_statics):
    lines = _static_diffs(dict(new_statics), dict(old_statics), namer)
    return 2, len(lines), "different static arguments:\n" + "\n".join(lines)
  lines, weak = [], False
  for name, a, b in zip(namer.leaf_names(new_tree), new_avals, old_avals):
    if a != b:
      now, before = a.str_short(), b.str_short()
      if a.weak_type != b.weak_type:
        weak = True
        now, before = f"{now}{{weak_type={a.weak_type}}}", f"{before}{{weak_type={b.weak_type}}}"
      lines.append(f"  * at {name}, now {now} and before {before}")
  text = "different input types:\n" + "\n".join(lines)
  if weak:
    text += "\n  (on weak types: https://docs.jax.dev/en/latest/type_promotion.html#weak-types)"
  return 3, len(lines), text


def _same(a: Any, b: Any) -> bool:
  try:
    return bool(a == b)
  except Exception:  # a static value's __eq__ failed: count it as a difference
    return False


def _tree_diffs(new_tree: tree_util.PyTreeDef, old_tree: tree_util.PyTreeDef,
                namer: _ArgNamer) -> list[str]:
  new_args, new_kwargs = new_tree.unflatten(range(new_tree.num_leaves))
  old_args, old_kwargs = old_tree.unflatten(range(old_tree.num_leaves))
  lines = []
  if len(new_args) != len(old_args):
    lines.append(f"  * now {len(new_args)} positional arguments and before {len(old_args)}")
  else:
    lines += [f"  * at {namer.dynamic(i)}, now {a} and before {b}"
              for i, (a, b) in enumerate(zip(map(tree_util.tree_structure, new_args),
                                             map(tree_util.tree_structure, old_args)))
              if a != b]
  if set(new_kwargs) != set(old_kwargs):
    lines.append(f"  * now keyword arguments {sorted(new_kwargs)} and before "
                 f"{sorted(old_kwargs)}")
  else:
    for k in sorted(new_kwargs):
      a, b = tree_util.tree_structure(new_kwargs[k]), tree_util.tree_structure(old_kwargs[k])
      if a != b:
        lines.append(f"  * at {namer.arg(k)}, now {a} and before {b}")
  return lines


def _static_diffs(new: dict, old: dict, namer: _ArgNamer) -> list[str]:
  absent = "not passed"
  lines = []
  for label in sorted(set(new) | set(old), key=str):
    a, b = new.get(label, absent), old.get(label, absent)
    if not _same(a, b):
      lines.append(f"  * at {namer.arg(label)}, now {a!r} and before {b!r}")
  return lines


class _ArgNamer:
  """Names arguments after `fun`'s parameters (`x`, `args[1]`, `kw['z']`), and flat leaves
  after them and their path inside (`params['w']`)."""

  def __init__(self, fun: Any, n_args: int):
    try:
      params = list(inspect.signature(fun._fun).parameters.values())
    except (TypeError, ValueError):
      params = []
    self.positional = [p.name for p in params
                       if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    self.keywords = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                          p.KEYWORD_ONLY)}
    self.varargs = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), "args")
    self.varkw = next((p.name for p in params if p.kind is p.VAR_KEYWORD), "kwargs")
    self.dynamic_positions = [i for i in range(n_args) if i not in fun._static_argnums]

  def arg(self, label: int | str) -> str:
    """The argument at position `label`, or the keyword argument `label`."""
    if isinstance(label, str):
      return label if label in self.keywords else f"{self.varkw}[{label!r}]"
    if label < len(self.positional):
      return self.positional[label]
    return f"{self.varargs}[{label - len(self.positional)}]"

  def dynamic(self, i: int) -> str:
    """The i-th positional argument that is not static."""
    positions = self.dynamic_positions
    return self.arg(positions[i] if i < len(positions) else i)

  def leaf_names(self, in_tree: tree_util.PyTreeDef) -> list[str]:
    args, kwargs = in_tree.unflatten(range(in_tree.num_leaves))
    names = []
    for name, arg in ([(self.dynamic(i), a) for i, a in enumerate(args)]
                      + [(self.arg(k), kwargs[k]) for k in sorted(kwargs)]):
      names += [name + tree_util.keystr(path)
                for path, _ in tree_util.tree_flatten_with_path(arg)[0]]
    return names
