"""jaxon.numpy: NumPy's API on jaxon arrays, traceable by every transformation."""
from jaxon._src.numpy import array_methods as _array_methods  # noqa: F401  (installs operators)
from jaxon._src.numpy.lax_numpy import (
    array as array,
    asarray as asarray,
    full as full,
    ndim as ndim,
    ones as ones,
    ones_like as ones_like,
    shape as shape,
    size as size,
    zeros as zeros,
    zeros_like as zeros_like,
)

# --- reductions (reductions.py)
from jaxon._src.numpy.reductions import sum as sum

# --- shape manipulation: reshape, transpose, stack, … (lax_numpy.py, shape section)

# --- indexing (indexing.py)

# --- dot, matmul, sort (linear.py, sorting.py)

# --- ufuncs (ufuncs.py)
from jaxon._src.numpy.ufuncs import (
    add as add,
    cos as cos,
    divide as divide,
    exp as exp,
    log as log,
    maximum as maximum,
    minimum as minimum,
    multiply as multiply,
    negative as negative,
    sin as sin,
    subtract as subtract,
    tanh as tanh,
    true_divide as true_divide,
)
from jaxon._src.dtypes import (
    bfloat16 as bfloat16,
    bool_ as bool_,
    complex64 as complex64,
    complex128 as complex128,
    float16 as float16,
    float32 as float32,
    float64 as float64,
    int8 as int8,
    int16 as int16,
    int32 as int32,
    int64 as int64,
    uint8 as uint8,
    uint16 as uint16,
    uint32 as uint32,
    uint64 as uint64,
    promote_types as promote_types,
    result_type as result_type,
)
from jaxon._src.xla.array import Array as ndarray  # noqa: F401
