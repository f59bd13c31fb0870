"""pytest plugin (`-p pytest_jaxon_as_jax`, with `tools/` on PYTHONPATH): installs jaxon as
`jax` before pytest collects anything, in the main process and in every xdist worker, so a
third-party test suite written for JAX runs on jaxon unedited."""
from __future__ import annotations

import jaxon

jaxon.install_as_jax()
