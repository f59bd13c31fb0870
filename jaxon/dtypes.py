"""jaxon.dtypes: the dtype helpers of `jax.dtypes` (float0 for integer tangents, bfloat16,
canonicalization and promotion by JAX's lattice, and the scalar types `extended` and
`prng_key` that key dtypes are subtypes of)."""
from jaxon._src.dtypes import (
    TypePromotionError as TypePromotionError,
    bfloat16 as bfloat16,
    dtype as dtype,
    extended as extended,
    finfo as finfo,
    float0 as float0,
    iinfo as iinfo,
    issubdtype as issubdtype,
    itemsize_bits as itemsize_bits,
    prng_key as prng_key,
    promote_types as promote_types,
    result_type as result_type,
    scalar_type_of as scalar_type_of,
)
from jaxon._src.dtypes import public_canonicalize_dtype as canonicalize_dtype  # noqa: F401 (JAX's name)
