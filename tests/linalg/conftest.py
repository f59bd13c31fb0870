"""Precision fixtures for the linear-algebra tests.

Switching `jax_enable_x64` clears jaxon's compile caches, and these tests compile many small
programs: so x64 is switched once per module, not once per test.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from tests.conftest import flag_set


class Precision(NamedTuple):
  real: np.dtype
  complex: np.dtype


@pytest.fixture(scope="module", params=[32, 64], ids=["32bit", "64bit"])
def precision(request):
  """The module's tests that use it run in 32-bit types, then all again in 64-bit ones."""
  bits = request.param
  with flag_set("jax_enable_x64", bits == 64):
    yield Precision(np.dtype(f"float{bits}"), np.dtype(f"complex{2 * bits}"))


@pytest.fixture(scope="module")
def x64_module():
  """x64 for a whole module (derivative checks need float64's precision)."""
  with flag_set("jax_enable_x64", True):
    yield
