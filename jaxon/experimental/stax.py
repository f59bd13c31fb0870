"""`jaxon.experimental.stax`: the path seed 003 (JAX 0.1.50) imports `stax` from; JAX has
since moved it to `example_libraries`. Both names are the same module."""
import sys

from jaxon.example_libraries import stax

sys.modules[__name__] = stax
