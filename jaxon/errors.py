"""jaxon.errors: the errors raised when a traced value is used where a concrete one is
needed (JAX's `jax.errors`)."""
from jaxon._src.errors import (
    ConcretizationTypeError,
    JAXIndexError,
    JAXTypeError,
    KeyReuseError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

__all__ = [
    "ConcretizationTypeError",
    "JAXIndexError",
    "JAXTypeError",
    "KeyReuseError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]
