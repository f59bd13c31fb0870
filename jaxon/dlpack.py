"""jaxon.dlpack: arrays from other libraries through the DLPack protocol (JAX's
`jax.dlpack`). jaxon arrays export it themselves (`__dlpack__`), so `np.from_dlpack(x)`
and other consumers read them directly."""
from jaxon._src.numpy.host import (
    from_dlpack as from_dlpack,
    is_supported_dtype as is_supported_dtype,
)
