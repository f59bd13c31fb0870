"""jaxon.errors: the errors raised when a traced value is used where a concrete one is
needed, and when a computation fails while running (JAX's `jax.errors`)."""
from jaxon._src.errors import (
    ConcretizationTypeError,
    JAXIndexError,
    JAXTypeError,
    JaxprTypeError,
    JaxRuntimeError,
    KeyReuseError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from jaxon._src.export.shape_poly import InconclusiveDimensionOperation
from jaxon._src.numpy.indexing import NonConcreteBooleanIndexError

__all__ = [
    "ConcretizationTypeError",
    "InconclusiveDimensionOperation",
    "JAXIndexError",
    "JAXTypeError",
    "JaxRuntimeError",
    "JaxprTypeError",
    "KeyReuseError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]

# Printed under its public name, as JAX prints `jax.errors.JaxRuntimeError`.
JaxRuntimeError.__module__ = "jaxon.errors"
