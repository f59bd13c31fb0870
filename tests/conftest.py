"""Shared fixtures: x64 mode on demand, and NumPy comparison helpers."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import jaxon
from jaxon._src.config import config
from tests.jaxpr_readback import _printed_jaxprs_read_back  # noqa: F401  (autouse fixture)

# The whole test process has 8 CPU devices (the sharding and collective tests need them);
# set before any test starts the backend. Single-device code still runs on device 0.
if config.jax_num_cpu_devices < 0:
  config.update("jax_num_cpu_devices", 8)


@contextlib.contextmanager
def flag_set(name: str, value: Any) -> Iterator[None]:
  """Sets a config flag for the duration, restoring its previous value afterwards."""
  previous = config.read(name)
  config.update(name, value)
  try:
    yield
  finally:
    config.update(name, previous)


@pytest.fixture
def x64():
  """Runs the test with 64-bit types enabled."""
  with flag_set("jax_enable_x64", True):
    yield


def tolerance(dtype) -> dict:
  dt = np.dtype(dtype)
  if dt in (np.dtype(np.float16), np.dtype(jaxon.numpy.bfloat16)):
    return dict(rtol=2e-2, atol=2e-2)
  if dt in (np.dtype(np.float32), np.dtype(np.complex64)):
    return dict(rtol=2e-5, atol=2e-6)
  if dt in (np.dtype(np.float64), np.dtype(np.complex128)):
    return dict(rtol=1e-12, atol=1e-14)
  return dict(rtol=0, atol=0)
