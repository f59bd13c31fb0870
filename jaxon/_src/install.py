"""`install_as_jax`: run code written for `jax` on jaxon without editing it.

Porting a program by renaming its import is not enough once it uses libraries (optax, chex,
…) that import `jax` themselves. After `install_as_jax()`, `import jax` and every
`import jax.x.y` give jaxon's modules: the same module objects (`jax.numpy is jaxon.numpy`),
so arrays, pytrees and registries are shared by both names.

Only the top-level module differs: `jax` is a thin module object of its own, so that
`jax.__version__` can report the JAX API version jaxon follows, which is what libraries
compare against, while `jaxon.__version__` stays jaxon's. Every other attribute is jaxon's:
reads, writes and deletes go through to jaxon, so `mock.patch("jax.jit", …)` behaves as with
JAX.

jaxlib quietly runs `import jax` in a few `ArrayImpl` methods (`_arrays`, and
`disassemble_into_single_device_arrays` on execution results) to install JAX's Python
methods on its arrays. Under the alias that import finds jaxon; jaxlib then reads
`jax.core.ShapedArray` and imports `jax._src.sharding_impls` (both jaxon's) and finds none
of JAX's array methods to install: the buffers come back unchanged, their shards with
jaxlib's own `SingleDeviceSharding` (checked with sharded arrays and `pmap` under the
alias).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

# The JAX release whose API jaxon follows; `jax.__version__` under the alias.
JAX_API_VERSION = "0.10.2"

_ALIAS = "jax"
_TARGET = "jaxon"


class _JaxModule(types.ModuleType):
  """`sys.modules["jax"]`: jaxon under JAX's name. Its `__`-names (`__name__`, `__spec__`,
  `__path__`, `__version__`, …: what importlib and version checks read) are its own; all
  other attributes are jaxon's."""

  # Reads go through __getattribute__, not __getattr__: the fallback path costs a failed
  # module lookup first (about 10 µs here), paid on every `jax.numpy` in a loop.
  def __getattribute__(self, name: str) -> Any:
    if name.startswith("__"):
      if name == "__all__":  # for `from jax import *`, which would read only this __dict__
        return [n for n in dir(sys.modules[_TARGET]) if not n.startswith("_")]
      return types.ModuleType.__getattribute__(self, name)
    jaxon = sys.modules[_TARGET]
    try:
      return getattr(jaxon, name)
    except AttributeError:
      raise AttributeError(f"module 'jax' has no attribute {name!r} ('jax' is jaxon "
                           f"{jaxon.__version__} here, which does not provide it)") from None

  def __setattr__(self, name: str, value: Any) -> None:
    if name.startswith("__"):
      super().__setattr__(name, value)
    else:
      setattr(sys.modules[_TARGET], name, value)

  def __delattr__(self, name: str) -> None:
    if name.startswith("__"):
      super().__delattr__(name)
    else:
      delattr(sys.modules[_TARGET], name)

  def __dir__(self) -> list[str]:
    return sorted(set(dir(sys.modules[_TARGET])) | set(self.__dict__))


class _AliasLoader(importlib.abc.Loader):
  """Loads `jax` as the `_JaxModule` and `jax.x.y` as the module `jaxon.x.y` itself."""

  def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
    # None: importlib makes a throwaway placeholder that `exec_module` replaces in
    # sys.modules, so jaxon's own modules never get the alias's `__spec__` written on them.
    return _jax_module() if spec.name == _ALIAS else None

  def exec_module(self, module: types.ModuleType) -> None:
    if module.__name__ != _ALIAS:
      sys.modules[module.__name__] = importlib.import_module(_target_name(module.__name__))


class _AliasFinder(importlib.abc.MetaPathFinder):
  """First on `sys.meta_path`, so it answers for `jax` even where the real package is
  installed. A `jax.x` that jaxon lacks is not found, and the import fails as JAX's does
  for a module that does not exist: ModuleNotFoundError naming `jax.x`."""

  def find_spec(self, fullname: str, path: Any = None, target: Any = None
                ) -> importlib.machinery.ModuleSpec | None:
    if fullname == _ALIAS:
      return importlib.machinery.ModuleSpec(_ALIAS, _LOADER, is_package=True)
    if not fullname.startswith(_ALIAS + "."):
      return None
    target_spec = importlib.util.find_spec(_target_name(fullname))
    if target_spec is None:
      return None
    return importlib.machinery.ModuleSpec(
        fullname, _LOADER, is_package=target_spec.submodule_search_locations is not None)


_LOADER = _AliasLoader()
_FINDER = _AliasFinder()
_jax_module_instance: _JaxModule | None = None


def _target_name(alias_name: str) -> str:
  return _TARGET + alias_name[len(_ALIAS):]


def _jax_module() -> _JaxModule:
  global _jax_module_instance
  if _jax_module_instance is None:
    jaxon = sys.modules[_TARGET]
    module = _JaxModule(_ALIAS, jaxon.__doc__)
    module.__version__ = JAX_API_VERSION
    module.__version_info__ = tuple(int(part) for part in JAX_API_VERSION.split("."))
    module.__file__ = jaxon.__file__  # tools that locate the package find jaxon's files
    _jax_module_instance = module
  return _jax_module_instance


def install_as_jax() -> types.ModuleType:
  """Makes `import jax` and `import jax.<anything jaxon has>` resolve to jaxon, so that
  programs and libraries written for JAX run on jaxon unchanged. Returns the `jax` module.

  Call it before anything imports the real `jax` (first thing in a script, or run the
  script with `python -m jaxon script.py`). Calling it again does nothing.

  Raises:
    RuntimeError: the real `jax` is already imported; two implementations under one name
      would mix their arrays and tracers.
  """
  existing = sys.modules.get(_ALIAS)
  if existing is not None and existing is not _jax_module_instance:
    where = getattr(existing, "__file__", None) or repr(existing)
    raise RuntimeError(
        f"jaxon.install_as_jax(): a different 'jax' module is already imported (from "
        f"{where}). Call install_as_jax() before anything imports jax, e.g. as the first "
        "lines of the program, or run it with `python -m jaxon script.py`.")
  if _FINDER not in sys.meta_path:
    sys.meta_path.insert(0, _FINDER)
  return importlib.import_module(_ALIAS)
