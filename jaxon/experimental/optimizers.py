"""`jaxon.experimental.optimizers`: the path seed 003 (JAX 0.1.50) imports `optimizers`
from; JAX has since moved it to `example_libraries`. Both names are the same module."""
import sys

from jaxon.example_libraries import optimizers

sys.modules[__name__] = optimizers
