"""Shared fixtures: x64 mode on demand, and NumPy comparison helpers."""
from __future__ import annotations

import numpy as np
import pytest

import jaxon
from jaxon._src.config import config


@pytest.fixture
def x64():
  """Runs the test with 64-bit types enabled, restoring the flag afterwards."""
  previous = config.jax_enable_x64
  config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    config.update("jax_enable_x64", previous)


def tolerance(dtype) -> dict:
  dt = np.dtype(dtype)
  if dt in (np.dtype(np.float16), np.dtype(jaxon.numpy.bfloat16)):
    return dict(rtol=2e-2, atol=2e-2)
  if dt in (np.dtype(np.float32), np.dtype(np.complex64)):
    return dict(rtol=2e-5, atol=2e-6)
  if dt in (np.dtype(np.float64), np.dtype(np.complex128)):
    return dict(rtol=1e-12, atol=1e-14)
  return dict(rtol=0, atol=0)
