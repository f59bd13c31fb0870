"""`JAXSparse`: what every sparse array class shares (shape bookkeeping, printing, the
pytree protocol it must implement, and the operators a format may or may not support)."""
from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxon._src import core


class JAXSparse(abc.ABC):
  """Base class for high-level sparse array objects (BCOO, BCSR, COO, CSR, CSC)."""
  data: Any
  shape: tuple[int, ...]

  __hash__ = None  # type: ignore[assignment]
  # Dense arrays' (NumPy's and jaxon's) binary operators defer to ours.
  __array_ufunc__ = None

  @property
  @abc.abstractmethod
  def dtype(self) -> np.dtype: ...

  @property
  @abc.abstractmethod
  def nse(self) -> int: ...

  def __init__(self, args: tuple[Any, ...], *, shape: Sequence[int]):
    self.shape = tuple(int(s) for s in shape)

  def __len__(self) -> int:
    return self.shape[0]

  @property
  def size(self) -> int:
    return math.prod(self.shape)

  @property
  def ndim(self) -> int:
    return len(self.shape)

  def _repr_extra(self) -> str:
    return ""

  def __repr__(self) -> str:
    name = type(self).__name__
    try:
      text = f"{name}({self.dtype}{list(self.shape)}, nse={self.nse}{self._repr_extra()})"
    except Exception:
      text = f"{name}(<invalid>)"
    if isinstance(self.data, core.Tracer):
      text = f"{type(self.data).__name__}[{text}]"
    return text

  @abc.abstractmethod
  def tree_flatten(self) -> tuple[tuple[Any, ...], Any]: ...

  @classmethod
  @abc.abstractmethod
  def tree_unflatten(cls, aux_data: Any, children: Sequence[Any]) -> JAXSparse: ...

  @abc.abstractmethod
  def transpose(self, axes: Sequence[int] | None = None) -> JAXSparse: ...

  @abc.abstractmethod
  def todense(self) -> Any: ...

  @property
  def T(self) -> JAXSparse:
    return self.transpose()

  def block_until_ready(self) -> JAXSparse:
    for buf in self.tree_flatten()[0]:
      buf.block_until_ready()
    return self

  def _unsupported(self, op: str) -> Any:
    raise NotImplementedError(f"{type(self).__name__}.{op}")

  # Operators a format implements only where it can (see each class).
  def sum(self, *args: Any, **kwargs: Any) -> Any:
    return self._unsupported("sum")

  def __neg__(self) -> Any:
    return self._unsupported("__neg__")

  def __pos__(self) -> Any:
    return self._unsupported("__pos__")

  def __matmul__(self, other: Any) -> Any:
    return self._unsupported("__matmul__")

  def __rmatmul__(self, other: Any) -> Any:
    return self._unsupported("__rmatmul__")

  def __mul__(self, other: Any) -> Any:
    return self._unsupported("__mul__")

  def __rmul__(self, other: Any) -> Any:
    return self._unsupported("__rmul__")

  def __add__(self, other: Any) -> Any:
    return self._unsupported("__add__")

  def __radd__(self, other: Any) -> Any:
    return self._unsupported("__radd__")

  def __sub__(self, other: Any) -> Any:
    return self._unsupported("__sub__")

  def __rsub__(self, other: Any) -> Any:
    return self._unsupported("__rsub__")

  def __getitem__(self, item: Any) -> Any:
    return self._unsupported("__getitem__")
